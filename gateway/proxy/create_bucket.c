/*
 * gateway/proxy/create_bucket.c: CreateBucket of a bucket that exists,
 * answered as S3 does (create_bucket.h).
 */
#define LOG_MODULE "router"
#include "gateway/proxy/create_bucket.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/log.h"
#include "gateway/http/http.h"
#include "gateway/proxy/refuse.h"
#include "gateway/s3/s3req.h"
#include "gateway/s3client/bucket_probe.h"

/* A CreateBucket waiting for the HEAD of its bucket. */
struct mkbucket {
    struct store *audit;           /* borrowed; refusals' records */
    struct gw_req *req;            /* the request (owned by the server) */
    struct gw_bucket_probe_op *op; /* the HEAD in flight */
    struct gw_s3req s3;            /* its parse (bucket, for the log and the audit) */
    char principal[128];           /* its principal's name, for the audit */
};

/* Ops of a CreateBucket no longer waiting. */
static const struct gw_req_ops mkbucket_idle_ops = {0};

void
gw_create_bucket_refuse(struct store *audit, struct gw_req *req, const struct gw_s3req *s3,
                        const char *principal)
{
    gw_refuse_classified(audit, req, s3, principal, NULL, 403, "AccessDenied",
                         "Bucket-level writes are disabled on this gateway "
                         "(fencing.allow_bucket_writes).");
}

/* gw_bucket_probe_fn: the bucket exists for the upstream credentials, or not. */
static void
on_mkbucket_probed(void *arg, int err, int status)
{
    struct mkbucket *mb = arg;
    struct gw_req *req = mb->req;
    gw_req_set_ops(req, &mkbucket_idle_ops, NULL);
    if (err == 0 && status == 200) {
        /* us-east-1 (and RGW) answer a CreateBucket of one's own bucket with 200 */
        log_info("req %s: CreateBucket of existing bucket %s answered 200", gw_req_id(req),
                 mb->s3.bucket);
        char location[GW_S3_MAX_BUCKET + 2];
        (void)snprintf(location, sizeof(location), "/%s", mb->s3.bucket);
        gw_resp_start(req, 200);
        if (gw_resp_header(req, "Location", location) != 0) {
            log_debug("req %s: Location header not added", gw_req_id(req));
        }
        gw_resp_body_begin(req, 0);
        gw_resp_end(req);
    } else if (err != 0 || status >= 500) {
        gw_refuse_reply(req, 503, "ServiceUnavailable",
                        "Whether the bucket exists could not be checked; retry later.");
    } else {
        /* no such bucket, or not the upstream credentials' */
        gw_create_bucket_refuse(mb->audit, req, &mb->s3, mb->principal);
    }
    free(mb);
}

/* gw_req_ops.on_abort: the client left while its bucket was probed. */
static void
on_mkbucket_abort(struct gw_req *req, int err, void *arg)
{
    struct mkbucket *mb = arg;
    (void)req;
    (void)err;
    gw_bucket_probe_cancel(mb->op);
    free(mb);
}

static const struct gw_req_ops mkbucket_ops = {
    .on_abort = on_mkbucket_abort,
};

/*
 * Whether a CreateBucket only "ensures" its bucket: no body (no
 * LocationConstraint) and no header that would configure the bucket (ACLs
 * other than the default "private", which rclone sends; object lock,
 * ownership).  Nothing is forwarded: the existing bucket is left as it is.
 */
static bool
mkbucket_plain(struct gw_req *req)
{
    const char *cl = gw_req_header(req, "content-length");
    if ((cl != NULL && strcmp(cl, "0") != 0) || gw_req_header(req, "transfer-encoding") != NULL) {
        return false;
    }
    const char *acl = gw_req_header(req, "x-amz-acl");
    if (acl != NULL && strcmp(acl, "private") != 0) {
        return false;
    }
    static const char *const configuring[] = {
        "x-amz-grant-full-control", "x-amz-grant-read",      "x-amz-grant-read-acp",
        "x-amz-grant-write",        "x-amz-grant-write-acp", "x-amz-bucket-object-lock-enabled",
        "x-amz-object-ownership",
    };
    for (size_t i = 0; i < sizeof(configuring) / sizeof(configuring[0]); i++) {
        if (gw_req_header(req, configuring[i]) != NULL) {
            return false;
        }
    }
    return true;
}

void
gw_create_bucket_start(struct gw_bucket_probe *probe, struct store *audit, struct gw_req *req,
                       const struct gw_s3req *s3, const char *principal)
{
    if (probe == NULL || !mkbucket_plain(req) || s3->bucket[0] == '\0') {
        gw_create_bucket_refuse(audit, req, s3, principal);
        return;
    }
    struct mkbucket *mb = calloc(1, sizeof(*mb));
    if (mb == NULL) {
        gw_refuse_err(req, ERR_NOMEM, "Out of memory.");
        return;
    }
    mb->audit = audit;
    mb->req = req;
    mb->s3 = *s3;
    str_copy(mb->principal, sizeof(mb->principal), principal);
    int rc = gw_bucket_probe_head(probe, s3->bucket, on_mkbucket_probed, mb, &mb->op);
    if (rc != 0) {
        free(mb);
        gw_refuse_reply(req, 503, "ServiceUnavailable",
                        "Whether the bucket exists could not be checked; retry later.");
        return;
    }
    gw_req_set_ops(req, &mkbucket_ops, mb);
}
