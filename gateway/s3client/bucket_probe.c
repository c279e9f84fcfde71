/* gateway/s3client/bucket_probe.c: HEAD bucket through the internal S3 client (see bucket_probe.h).
 */
#define LOG_MODULE "bucket"
#include "gateway/s3client/bucket_probe.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "gateway/s3client/s3client.h"

struct gw_bucket_probe {
    struct gw_s3client *s3c; /* borrowed */
};

/* One HEAD in flight. */
struct gw_bucket_probe_op {
    struct gw_s3client_op *call; /* the HEAD */
    gw_bucket_probe_fn *cb;      /* the caller's callback */
    void *arg;                   /* its argument */
};

struct gw_bucket_probe *
gw_bucket_probe_new(struct gw_s3client *s3c)
{
    struct gw_bucket_probe *bp = calloc(1, sizeof(*bp));
    if (bp == NULL) {
        return NULL;
    }
    bp->s3c = s3c;
    return bp;
}

void
gw_bucket_probe_free(struct gw_bucket_probe *bp)
{
    free(bp);
}

/* gw_s3client_cbs.on_done */
static void
on_probe_done(void *arg, int err, int status, const char *code)
{
    struct gw_bucket_probe_op *op = arg;
    (void)code;
    op->cb(op->arg, err, err == 0 ? status : 0);
    free(op);
}

static const struct gw_s3client_cbs probe_cbs = {
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
    const struct gw_s3client_call call = {.method = "HEAD", .bucket = bucket};
    int rc = gw_s3client_start(bp->s3c, &call, &probe_cbs, op, &op->call);
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
    gw_s3client_cancel(op->call);
    free(op);
}
