/*
 * gateway/proxy/auth.h: inbound authentication (AWS Signature Version 4, and
 * Version 2 when auth.sigv2 allows it: gateway/s3/sigv2.h).
 *
 * gw_auth_check() decides who sent a request and how its body is protected:
 * it parses the Authorization header or the presigned query, finds the
 * principal by access key, verifies the signature over the request head (via
 * gateway/s3/sigv4.h) and reads the payload mode from x-amz-content-sha256.
 * The body itself is checked while it streams, by gateway/proxy/body.h.
 *
 * With no principals configured (anonymous mode, allowed only on loopback or
 * with "allow_anonymous"), no signature is checked, but payload modes are still
 * recognised so aws-chunked bodies are decoded.
 *
 * Event-loop thread only; CPU work only (a few HMACs), nothing blocks.
 */
#ifndef GW_AUTH_H
#define GW_AUTH_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "gateway/s3/refusal.h"
#include "gateway/s3/sigv4.h"

struct gw_config;
struct gw_principal;
struct gw_req;
struct gw_s3req;

/* How the request body is framed and protected (from x-amz-content-sha256). */
enum gw_payload {
    GW_PAYLOAD_NONE = 0,             /* no body, or UNSIGNED-PAYLOAD: passed through */
    GW_PAYLOAD_SHA256,               /* the body's hex SHA-256: checked while streaming */
    GW_PAYLOAD_CHUNKED_SIGNED,       /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD */
    GW_PAYLOAD_CHUNKED_SIGNED_TRL,   /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER */
    GW_PAYLOAD_CHUNKED_UNSIGNED_TRL, /* STREAMING-UNSIGNED-PAYLOAD-TRAILER */
};

/* The outcome of a successful check.  Holds a signing key: gw_auth_cleanup wipes it. */
struct gw_auth {
    const struct gw_principal *principal; /* borrowed from the config; NULL if anonymous */
    enum gw_payload payload;              /* body mode */
    char sha256[GW_SIGV4_HEX_LEN + 1];    /* GW_PAYLOAD_SHA256: the claimed hash (lowercase) */
    uint64_t decoded_length;              /* chunked modes: x-amz-decoded-content-length */
    const char *trailer;                  /* chunked modes: x-amz-trailer value (borrowed from
                                             the request) or NULL */
    bool verified;                        /* v holds a verified signature (signed modes) */
    struct gw_sigv4_verified v;           /* SECRET: the signing key and seed signature */
};

/*
 * gw_auth_check - authenticate req (head complete, body not started).
 * [in]  cfg   the configuration in force (principals; borrowed)
 * [in]  s3    the parsed request (bucket, for the principal's bucket list)
 * [in]  kc    signing-key cache (borrowed)
 * [out] out   on success, the principal and payload mode; call gw_auth_cleanup after
 * [out] fail  on failure, the S3 error to answer with (status 400, 403, 500; code
 *             SignatureDoesNotMatch, InvalidAccessKeyId, ...; neither audited nor counted)
 * Returns 0, ERR_AUTH (refused: see fail), ERR_NOMEM.
 */
MUST_USE int gw_auth_check(struct gw_req *req, const struct gw_config *cfg,
                           const struct gw_s3req *s3, struct gw_sigv4_keycache *kc,
                           struct gw_auth *out, struct gw_refusal *fail);

/*
 * gw_auth_query_strip - the query to forward upstream: query (raw, borrowed)
 * less the parameters that carry a presigned URL's credentials (SigV2
 * AWSAccessKeyId, Signature, Expires; SigV4 X-Amz-Algorithm, -Credential,
 * -Date, -Expires, -SignedHeaders, -Signature, -Security-Token): the upstream
 * request is signed with the gateway's own credentials in a header.  Other
 * parameters keep their order and bytes.
 * [out] out  appended to (empty buffer expected); NUL-terminated
 * Returns 0, ERR_NOMEM, ERR_TOOBIG (out's cap).
 */
MUST_USE int gw_auth_query_strip(const char *query, struct buf *out);

/* gw_auth_cleanup - wipe the secrets in a (possibly zeroed) gw_auth. */
void gw_auth_cleanup(struct gw_auth *a);

#endif
