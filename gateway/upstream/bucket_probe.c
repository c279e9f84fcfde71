#define LOG_MODULE "bucket"
#include "gateway/upstream/bucket_probe.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "gateway/s3/sigv4.h"
#include "gateway/upstream/s3sign.h"
#include "gateway/upstream/upstream.h"

struct gw_bucket_probe {
    struct gw_upstream *up;     /* borrowed */
    struct gw_s3signer *signer; /* owned */
};

/* One HEAD in flight. */
struct gw_bucket_probe_op {
    struct gw_xfer *x;      /* the HEAD; NULL before start */
    int status;             /* the upstream's status (0: none yet) */
    gw_bucket_probe_fn *cb; /* the caller's callback */
    void *arg;              /* its argument */
};

struct gw_bucket_probe *
gw_bucket_probe_new(struct gw_upstream *up, const struct gw_config *cfg, char *errbuf,
                    size_t errlen)
{
    struct gw_bucket_probe *bp = calloc(1, sizeof(*bp));
    if (bp == NULL) {
        (void)snprintf(errbuf, errlen, "out of memory");
        return NULL;
    }
    bp->up = up;
    bp->signer = gw_s3signer_new(cfg, errbuf, errlen);
    if (bp->signer == NULL) {
        free(bp);
        return NULL;
    }
    return bp;
}

int
gw_bucket_probe_set_config(struct gw_bucket_probe *bp, const struct gw_config *cfg)
{
    return gw_s3signer_set_config(bp->signer, cfg);
}

void
gw_bucket_probe_free(struct gw_bucket_probe *bp)
{
    if (bp == NULL) {
        return;
    }
    gw_s3signer_free(bp->signer);
    free(bp);
}

/* gw_xfer_cbs.on_head */
static int
on_probe_head(void *arg, int status, const struct gw_header *headers, size_t n)
{
    struct gw_bucket_probe_op *op = arg;
    (void)headers;
    (void)n;
    op->status = status;
    return 0;
}

/* gw_xfer_cbs.on_body: a HEAD has none; an error body is not needed */
static int
on_probe_body(void *arg, const char *data, size_t len)
{
    (void)arg;
    (void)data;
    (void)len;
    return 0;
}

/* gw_xfer_cbs.on_done */
static void
on_probe_done(void *arg, int err)
{
    struct gw_bucket_probe_op *op = arg;
    op->x = NULL;
    op->cb(op->arg, err, err == 0 ? op->status : 0);
    free(op);
}

static const struct gw_xfer_cbs probe_cbs = {
    .on_head = on_probe_head,
    .on_body = on_probe_body,
    .on_done = on_probe_done,
};

int
gw_bucket_probe_head(struct gw_bucket_probe *bp, const char *bucket, gw_bucket_probe_fn *cb,
                     void *arg, struct gw_bucket_probe_op **out)
{
    struct gw_bucket_probe_op *op = calloc(1, sizeof(*op));
    if (op == NULL) {
        return ERR_NOMEM;
    }
    op->cb = cb;
    op->arg = arg;
    struct gw_s3msg m;
    gw_s3msg_init(&m);
    struct gw_s3sign_req rq = {
        .method = "HEAD",
        .bucket = bucket,
        .key = NULL,
        .query = NULL,
        .payload_hash = GW_SIGV4_EMPTY_SHA256,
        .policy = GW_S3SIGN_SIGN_ALL,
    };
    int rc = gw_s3signer_sign(bp->signer, &rq, &m);
    if (rc == 0) {
        struct gw_xfer_req xr;
        gw_s3msg_xfer_req(&m, "HEAD", -1, &xr);
        rc = gw_xfer_start(bp->up, &xr, &probe_cbs, op, &op->x);
    }
    gw_s3msg_cleanup(&m);
    if (rc != 0) {
        log_warn("HEAD of bucket %s not started: %s", bucket, err_str(rc));
        free(op);
        return rc;
    }
    *out = op;
    return 0;
}

void
gw_bucket_probe_cancel(struct gw_bucket_probe_op *op)
{
    if (op == NULL) {
        return;
    }
    gw_xfer_cancel(op->x);
    free(op);
}
