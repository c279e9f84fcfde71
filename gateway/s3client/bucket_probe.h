/*
 * gateway/s3client/bucket_probe.h: does a bucket exist for the upstream credentials?
 *
 * A HEAD of the bucket, a call of the internal S3 client
 * (gateway/s3client/s3client.h: the upstream credentials), in the
 * background.  The router uses it to answer a CreateBucket of a bucket that
 * already exists as S3 does (200) while bucket-level writes stay disabled
 * (DESIGN "Request classification": clients such as rclone "ensure" their
 * bucket before every upload).
 *
 * Event-loop thread only.  The S3 client is borrowed and must outlive the
 * object.
 */
#ifndef GW_BUCKET_PROBE_H
#define GW_BUCKET_PROBE_H

#include <stddef.h>

#include "common/err.h"

struct gw_bucket_probe;
struct gw_bucket_probe_op;
struct gw_s3client;

/*
 * gw_bucket_probe_fn - the answer of one probe: err 0 and the upstream's
 * status (200: the bucket exists and the credentials may use it; 404: no
 * such bucket; 403: not theirs), or err != 0 (the upstream could not be
 * asked; status 0).  The op is freed when this returns.
 */
typedef void gw_bucket_probe_fn(void *arg, int err, int status);

/*
 * gw_bucket_probe_new - probes through s3c (borrowed).
 * Returns the object (owned: gw_bucket_probe_free) or NULL (out of memory).
 */
struct gw_bucket_probe *gw_bucket_probe_new(struct gw_s3client *s3c);

/* gw_bucket_probe_free - free; every op must have ended or been cancelled.  NULL-safe. */
void gw_bucket_probe_free(struct gw_bucket_probe *bp);

/*
 * gw_bucket_probe_head - HEAD bucket at the upstream.
 * [in]  bucket  the bucket (copied)
 * [in]  cb      runs once with the answer, never before this returns
 * [out] out     the op, for gw_bucket_probe_cancel until cb runs
 * Returns 0 (started) or ERR_* (no callback will run).
 */
MUST_USE int gw_bucket_probe_head(struct gw_bucket_probe *bp, const char *bucket,
                                  gw_bucket_probe_fn *cb, void *arg,
                                  struct gw_bucket_probe_op **out);

/* gw_bucket_probe_cancel - stop op; its callback never runs.  NULL-safe. */
void gw_bucket_probe_cancel(struct gw_bucket_probe_op *op);

#endif
