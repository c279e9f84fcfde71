/*
 * gateway/upstream/bucket_probe.h: does a bucket exist for the upstream credentials?
 *
 * A HEAD of the bucket, signed with the upstream credentials, in the
 * background.  The router uses it to answer a CreateBucket of a bucket that
 * already exists as S3 does (200) while bucket-level writes stay disabled
 * (DESIGN "Request classification": clients such as rclone "ensure" their
 * bucket before every upload).
 *
 * Event-loop thread only.  The upstream and configuration are borrowed and
 * must outlive the object (the configuration until the next
 * gw_bucket_probe_set_config).
 */
#ifndef GW_BUCKET_PROBE_H
#define GW_BUCKET_PROBE_H

#include <stddef.h>

#include "common/err.h"

struct gw_bucket_probe;
struct gw_bucket_probe_op;
struct gw_config;
struct gw_upstream;

/*
 * gw_bucket_probe_fn - the answer of one probe: err 0 and the upstream's
 * status (200: the bucket exists and the credentials may use it; 404: no
 * such bucket; 403: not theirs), or err != 0 (the upstream could not be
 * asked; status 0).  The op is freed when this returns.
 */
typedef void gw_bucket_probe_fn(void *arg, int err, int status);

/*
 * gw_bucket_probe_new - probes through up, signed per cfg's upstream settings.
 * [out] errbuf  on failure one line (errlen bytes)
 * Returns the object (owned: gw_bucket_probe_free) or NULL.
 */
struct gw_bucket_probe *gw_bucket_probe_new(struct gw_upstream *up, const struct gw_config *cfg,
                                            char *errbuf, size_t errlen);

/* gw_bucket_probe_set_config - sign per cfg (borrowed) from now on.  Returns 0 or ERR_INVAL. */
MUST_USE int gw_bucket_probe_set_config(struct gw_bucket_probe *bp, const struct gw_config *cfg);

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
