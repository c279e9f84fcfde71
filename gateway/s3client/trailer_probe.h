/*
 * gateway/s3client/trailer_probe.h: does the upstream take aws-chunked checksum trailers?
 *
 * upstream.checksum_trailers "auto" asks the upstream itself, once, at start-up,
 * through the internal S3 client (gateway/s3client/s3client.h), in a bucket
 * the gateway writes to anyway (the caller picks it: the s3 election
 * backend's, else the first fence rule's), whatever the election backend:
 *
 *   1. PUT <prefix>~probe/trailers-<random> as STREAMING-UNSIGNED-PAYLOAD-TRAILER
 *      (Content-Encoding: aws-chunked, x-amz-decoded-content-length,
 *      x-amz-trailer: x-amz-checksum-crc32), framed by gateway/s3/chunk_enc.h,
 *      exactly as a forwarded upload would be;
 *   2. GET it back: the upstream must have stored the payload, not the framing;
 *   3. DELETE it (best effort).
 *
 * Outcomes: 2xx and the payload read back: supported.  A 4xx or 501 to the
 * PUT (RGW 16 answers 400 XAmzContentSHA256Mismatch), or the framing read
 * back: not supported, final.  Anything else (no answer, 5xx, 403, a missing
 * bucket) says nothing: retried with a backoff from 1 s to 5 min, and until an
 * answer the gateway verifies trailers without forwarding them (safe: nothing
 * is refused because of the probe).  The result is reported once.
 *
 * Event-loop thread only.  The probe borrows the S3 client: free the probe
 * (which cancels its calls without callbacks) before the client.
 */
#ifndef GW_TRAILER_PROBE_H
#define GW_TRAILER_PROBE_H

#include <stdbool.h>

#include "common/err.h"
#include "gateway/base/config.h"

struct event_base;
struct gw_s3client;
struct gw_trailer_probe;

/* gw_trailer_probe_done_fn - the answer: the upstream takes checksum trailers or not. */
typedef void gw_trailer_probe_done_fn(void *arg, bool supported);

/*
 * gw_trailer_probe_start - probe through the internal S3 client.
 * [in] base    the loop (retry timer)
 * [in] s3c     the gateway's S3 client; borrowed, see above
 * [in] bucket  the bucket the probe object goes in; copied
 * [in] prefix  key prefix (the election's); copied
 * [in] done    called once with the answer (never before this returns)
 * Returns the probe (owned: gw_trailer_probe_free), or NULL (out of memory).
 */
struct gw_trailer_probe *gw_trailer_probe_start(struct event_base *base, struct gw_s3client *s3c,
                                                const char *bucket, const char *prefix,
                                                gw_trailer_probe_done_fn *done, void *arg);

/* gw_trailer_probe_free - stop retrying and free.  NULL-safe. */
void gw_trailer_probe_free(struct gw_trailer_probe *p);

/*
 * gw_trailer_probe_forwards - the trailer decision: whether client checksum
 * trailers are forwarded upstream as trailers (else verified here and
 * dropped).  "forward": yes; "verify": no; "auto": only once the probe has
 * answered (probed) that the upstream takes them (supported).
 */
bool gw_trailer_probe_forwards(enum gw_trailers setting, bool probed, bool supported);

#endif
