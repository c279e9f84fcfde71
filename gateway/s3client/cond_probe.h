/*
 * gateway/s3client/cond_probe.h: which conditional writes does the upstream honour?
 *
 * fencing.conditional_writes (DESIGN "Conditional writes") needs to know,
 * per operation, whether the store refuses a write whose condition fails,
 * and how it spells If-Match.  The probe asks the store itself, once, at
 * start-up, through the internal S3 client, in a bucket the gateway writes to
 * anyway (the s3 election's, else the first fence rule's), on one object
 * <prefix>~probe/cond-<random>:
 *
 *   1. PUT it (plain): its ETag;
 *   2. PUT If-None-Match: * (it exists): 412 wanted;
 *   3. PUT If-Match: <an ETag it never had>: 412 wanted;
 *   4. PUT If-Match: "<ETag>" (quoted, RFC 9110), else <ETag> (bare): 2xx
 *      wanted; the form taken is the form used (AWS: quoted; RGW 16: bare);
 *   5. CopyObject onto itself (x-amz-metadata-directive: REPLACE) with
 *      If-None-Match: *: 412 means CopyObject honours conditions;
 *   6. CreateMultipartUpload on the same key, one part, then
 *      CompleteMultipartUpload with If-None-Match: * (the key exists): 412
 *      means CompleteMultipartUpload honours conditions; the upload is then
 *      aborted (best effort; a 404 after a completed one);
 *   7. DELETE If-Match: <an ETag it never had>: 412 means DeleteObject
 *      honours them (a 2xx deleted it: not honoured);
 *   8. DELETE it (best effort).
 *
 * PutObject honours conditions when 2, 3 and 4 all went as wanted (else the
 * probe ends there: nothing else matters).  A step answered otherwise than
 * 2xx or 412 (no answer, 5xx, 403, a missing bucket) says nothing: the probe
 * starts over with a backoff from 1 s to 5 min; until it answers,
 * conditional writes stay off.  The multipart steps are the exception: a
 * store without multipart (or an error there) only means Complete is
 * reported not honoured, and the probe goes on to step 7.
 *
 * Event-loop thread only.  Free the probe (which cancels its calls without
 * callbacks) before the client.
 */
#ifndef GW_COND_PROBE_H
#define GW_COND_PROBE_H

#include <stdbool.h>

#include "common/err.h"

struct event_base;
struct gw_s3client;
struct gw_cond_probe;

/* What the store honours. */
struct gw_cond_caps {
    bool put;      /* PutObject: If-None-Match: * and If-Match */
    bool quoted;   /* If-Match takes the quoted ETag (else the bare one) */
    bool copy;     /* CopyObject (the destination) */
    bool complete; /* CompleteMultipartUpload */
    bool del;      /* DeleteObject If-Match */
};

/* gw_cond_probe_done_fn - the answer (borrowed for the call). */
typedef void gw_cond_probe_done_fn(void *arg, const struct gw_cond_caps *caps);

/*
 * gw_cond_probe_start - probe through the internal S3 client.
 * [in] base    the loop (retry timer)
 * [in] s3c     the gateway's S3 client; borrowed, see above
 * [in] bucket  the bucket the probe object goes in; copied
 * [in] prefix  key prefix (the election's); copied
 * [in] done    called once with the answer (never before this returns)
 * Returns the probe (owned: gw_cond_probe_free), or NULL (out of memory).
 */
struct gw_cond_probe *gw_cond_probe_start(struct event_base *base, struct gw_s3client *s3c,
                                          const char *bucket, const char *prefix,
                                          gw_cond_probe_done_fn *done, void *arg);

/* gw_cond_probe_free - stop and free.  NULL-safe. */
void gw_cond_probe_free(struct gw_cond_probe *p);

#endif
