/*
 * gateway/proxy/body.h: the request-body filter between the client and the upstream.
 *
 * Pulls the client's body (gw_req_body_read) and hands the upstream exactly
 * the bytes S3 must store, checking on the way what the signature promised:
 *  - GW_PAYLOAD_NONE: passed through.
 *  - GW_PAYLOAD_SHA256: hashed while streaming; the last byte is held back
 *    until the hash matched, so a mismatched body never reaches the upstream's
 *    last byte and nothing is committed (XAmzContentSHA256Mismatch).
 *  - chunked modes: aws-chunked framing decoded (gateway/s3/sigv4.h decoder,
 *    which verifies each chunk signature in chain and the trailer checksum,
 *    holding back the last byte likewise); the upstream gets the plain body,
 *    or, when the client sent a checksum trailer and the upstream takes
 *    trailers, the body re-framed as STREAMING-UNSIGNED-PAYLOAD-TRAILER with
 *    that checksum as its trailer (gateway/s3/chunk_enc.h).
 * Memory is bounded: one staging buffer of GW_BODY_STAGE bytes.
 * Event-loop thread only.
 */
#ifndef GW_BODY_H
#define GW_BODY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "gateway/proxy/auth.h"

#define GW_BODY_STAGE 16384 /* bytes of wire body staged for the aws-chunked decoder */

struct gw_body;
struct gw_req;

/*
 * gw_body_new - a filter for req's body as auth describes it.
 * [in] req   borrowed; must outlive the filter
 * [in] auth  read during the call (the signing key is copied into the decoder)
 * [in] trailers_upstream  the upstream takes aws-chunked trailers: a checksum
 *            trailer of an aws-chunked body is passed on as one (re-framed)
 * Returns the filter (owned: gw_body_free), or NULL on OOM.
 */
struct gw_body *gw_body_new(struct gw_req *req, const struct gw_auth *auth, bool trailers_upstream);

/* gw_body_free - wipe and free.  NULL-safe. */
void gw_body_free(struct gw_body *b);

/*
 * gw_body_upstream_length - the length of the body the upstream will get:
 * the re-framed length when re-framing, the decoded length for aws-chunked
 * bodies, else the client's Content-Length
 * (-1 if the client sent a chunked body of unknown length).
 */
int64_t gw_body_upstream_length(const struct gw_body *b);

/*
 * gw_body_upstream_trailer - the checksum trailer the upstream body ends with
 * ("x-amz-checksum-crc32", static), or NULL when the upstream gets a plain
 * body.  With one, the upstream request is STREAMING-UNSIGNED-PAYLOAD-TRAILER
 * with Content-Encoding: aws-chunked, x-amz-decoded-content-length and
 * x-amz-trailer.
 */
const char *gw_body_upstream_trailer(const struct gw_body *b);

/*
 * gw_body_read - up to len bytes for the upstream.
 * Returns >0 bytes; 0 at the end (everything verified); ERR_AGAIN when the
 * client has sent nothing new (the request's on_body_ready follows); or a
 * negative ERR_* when the body is refused (see gw_body_fail).
 */
MUST_USE ssize_t gw_body_read(struct gw_body *b, char *dst, size_t len);

/* gw_body_fail - after a failed read: the S3 error to answer with; false if there is none. */
bool gw_body_fail(const struct gw_body *b, struct gw_refusal *out);

#endif
