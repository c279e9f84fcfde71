/*
 * gateway/proxy/delete_objects.c: a fenced DeleteObjects' document read,
 * parsed and handed on (delete_objects.h).
 */
#define LOG_MODULE "router"
#include "gateway/proxy/delete_objects.h"

#include <stdlib.h>

#include "common/buf.h"
#include "gateway/base/config.h"
#include "gateway/http/http.h"
#include "gateway/proxy/auth.h"
#include "gateway/proxy/body.h"
#include "gateway/proxy/refuse.h"
#include "gateway/s3/s3req.h"
#include "gateway/s3/s3xml.h"

static const char *
principal_name(const struct gw_auth *auth)
{
    return auth->principal != NULL ? auth->principal->name : "";
}

/* Cap on a DeleteObjects document (S3 allows 1000 keys; 1 MiB holds them). */
#define DELOBJ_MAX_BYTES ((size_t)1024 * 1024)
#define DELOBJ_MAX_KEYS  1000

/* A DeleteObjects whose body is being read before the fence can judge it. */
struct delobj {
    struct store *audit;          /* borrowed; refusals' records */
    gw_delete_objects_fn *judged; /* the caller, once the keys are known */
    void *arg;                    /* ... and its argument */
    struct gw_req *req;           /* the request (owned by the server) */
    struct gw_s3req s3;           /* its parse */
    struct gw_auth auth;          /* its authentication (holds a signing key: wiped) */
    struct gw_body *body;         /* the body filter (hash, aws-chunked) */
    struct buf xml;               /* the document so far (cap DELOBJ_MAX_BYTES) */
};

static void
delobj_free(struct delobj *d)
{
    gw_body_free(d->body);
    gw_auth_cleanup(&d->auth);
    gw_s3req_cleanup(&d->s3);
    buf_cleanup(&d->xml);
    free(d);
}

/* Ops of a DeleteObjects no longer reading its body (answered or handed on). */
static const struct gw_req_ops delobj_idle_ops = {0};

static void
delobj_refuse(struct delobj *d, int status, const char *code, const char *message)
{
    gw_req_set_ops(d->req, &delobj_idle_ops, NULL);
    gw_req_set_close(d->req); /* the rest of the body is not read */
    gw_refuse_reply(d->req, status, code, message);
    delobj_free(d);
}

/* A document the gateway cannot read exactly (or too big to): a G9 refusal, audited. */
static void
delobj_malformed(struct delobj *d, const char *message)
{
    gw_req_set_ops(d->req, &delobj_idle_ops, NULL);
    gw_req_set_close(d->req); /* the rest of the body may not have been read */
    gw_refuse_classified(d->audit, d->req, &d->s3, principal_name(&d->auth), NULL, 400,
                         "MalformedXML", message);
    delobj_free(d);
}

/* The whole document is here: find its keys, then hand them on. */
static void
delobj_judge(struct delobj *d)
{
    struct gw_req *req = d->req;
    gw_req_set_ops(req, &delobj_idle_ops, NULL);
    struct gw_s3xml *x = gw_s3xml_new(DELOBJ_MAX_KEYS, DELOBJ_MAX_BYTES);
    if (x == NULL) {
        gw_refuse_err(req, ERR_NOMEM, "Out of memory.");
        delobj_free(d);
        return;
    }
    int rc = gw_s3xml_feed(x, d->xml.data, d->xml.len);
    if (rc == 0) {
        rc = gw_s3xml_finish(x);
    }
    size_t n = 0;
    const char *const *keys = gw_s3xml_keys(x, &n);
    if (rc == ERR_NOMEM) {
        gw_refuse_err(req, ERR_NOMEM, "Out of memory.");
    } else if (rc != 0 || gw_s3xml_root(x) != GW_S3XML_ROOT_DELETE || n == 0) {
        delobj_malformed(d,
                         "The XML you provided was not well-formed or did not validate against "
                         "the DeleteObjects schema (1 to 1000 keys; exactly Delete, Object, Key, "
                         "VersionId and Quiet, without prefixes).");
        d = NULL; /* freed */
    } else {
        d->judged(d->arg, req, &d->s3, &d->auth, keys, n, &d->xml);
    }
    if (d != NULL) {
        delobj_free(d);
    }
    gw_s3xml_free(x);
}

/* Reads what the client has sent; judges the document at its end. */
static void
delobj_pump(struct delobj *d)
{
    char chunk[16384];
    for (;;) {
        ssize_t n = gw_body_read(d->body, chunk, sizeof(chunk));
        if (n == ERR_AGAIN) {
            return; /* on_delobj_body_ready follows */
        }
        if (n == 0) {
            delobj_judge(d);
            return;
        }
        if (n < 0) {
            struct gw_refusal bf;
            if (gw_body_fail(d->body, &bf)) {
                delobj_refuse(d, bf.status, bf.code, bf.message);
            } else {
                gw_req_set_ops(d->req, &delobj_idle_ops, NULL);
                gw_req_set_close(d->req);
                gw_refuse_err(d->req, (int)n, "The request body could not be read.");
                delobj_free(d);
            }
            return;
        }
        int rc = buf_append(&d->xml, chunk, (size_t)n);
        if (rc == ERR_NOMEM) {
            gw_req_set_ops(d->req, &delobj_idle_ops, NULL);
            gw_refuse_err(d->req, ERR_NOMEM, "Out of memory.");
            delobj_free(d);
            return;
        }
        if (rc != 0) {
            delobj_malformed(d, "The DeleteObjects document is larger than this gateway accepts "
                                "(1 MiB).");
            return;
        }
    }
}

/* gw_req_ops.on_body_ready: more of the DeleteObjects document arrived. */
static void
on_delobj_body_ready(struct gw_req *req, void *arg)
{
    struct delobj *d = arg;
    (void)req;
    delobj_pump(d);
}

/* gw_req_ops.on_abort: the client left while its document was being read. */
static void
on_delobj_abort(struct gw_req *req, int err, void *arg)
{
    struct delobj *d = arg;
    (void)req;
    (void)err;
    delobj_free(d);
}

static const struct gw_req_ops delobj_ops = {
    .on_body_ready = on_delobj_body_ready,
    .on_abort = on_delobj_abort,
};

void
gw_delete_objects_start(struct gw_req *req, const struct gw_s3req *s3, const struct gw_auth *auth,
                        struct store *audit, gw_delete_objects_fn *judged, void *arg)
{
    struct delobj *d = calloc(1, sizeof(*d));
    if (d == NULL) {
        gw_refuse_err(req, ERR_NOMEM, "Out of memory.");
        return;
    }
    d->audit = audit;
    d->judged = judged;
    d->arg = arg;
    d->req = req;
    d->s3 = *s3;
    d->auth = *auth;
    buf_init(&d->xml, DELOBJ_MAX_BYTES);
    d->body = gw_body_new(req, auth, false); /* read into memory here */
    if (d->body == NULL) {
        gw_refuse_err(req, ERR_NOMEM, "Out of memory.");
        delobj_free(d);
        return;
    }
    int64_t len = gw_body_upstream_length(d->body);
    if (len > (int64_t)DELOBJ_MAX_BYTES) {
        delobj_malformed(d,
                         "The DeleteObjects document is larger than this gateway accepts (1 MiB).");
        return;
    }
    gw_req_set_ops(req, &delobj_ops, d);
    gw_req_body_start(req);
    delobj_pump(d);
}
