/*
 * gateway/proxy/create_bucket.h: CreateBucket while bucket-level writes are
 * off (fencing.allow_bucket_writes false), answered as S3 answers it.
 *
 * S3 in us-east-1 and RGW answer a CreateBucket of a bucket that already
 * exists for the caller with 200, and clients that "ensure" their bucket
 * before each upload (rclone's default) rely on it.  A plain CreateBucket (no
 * body, no header that would configure the bucket) is checked with a HEAD of
 * the bucket through the upstream and answered 200 when it exists; nothing
 * is forwarded.  Anything else is a bucket write and refused, 403
 * AccessDenied, audited.  Event-loop thread only.
 */
#ifndef GW_PROXY_CREATE_BUCKET_H
#define GW_PROXY_CREATE_BUCKET_H

struct gw_bucket_probe;
struct gw_req;
struct gw_s3req;
struct store;

/*
 * gw_create_bucket_start - answer a CreateBucket (s3->op) when bucket writes
 * are off: 200 if it only ensures a bucket that exists, else refused.  Ends
 * req's response, now or once the HEAD is answered (a client that leaves
 * meanwhile cancels it).
 * [in] probe      the HEAD-of-a-bucket client (borrowed; NULL: every
 *                 CreateBucket is refused)
 * [in] audit      the store for refusals' records (borrowed; NULL: none)
 * [in] principal  the principal's name for the audit ("" for anonymous)
 */
void gw_create_bucket_start(struct gw_bucket_probe *probe, struct store *audit, struct gw_req *req,
                            const struct gw_s3req *s3, const char *principal);

/* gw_create_bucket_refuse - refuse a bucket-level write: 403 AccessDenied, audited. */
void gw_create_bucket_refuse(struct store *audit, struct gw_req *req, const struct gw_s3req *s3,
                             const char *principal);

#endif
