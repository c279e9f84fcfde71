/*
 * gateway/s3/sigv2.h: AWS Signature Version 2 for S3, inbound only.
 *
 * Common clients still sign with SigV2 by default (boto3's presigned URLs
 * with region us-east-1, `s3cmd signurl`, aws cli v1 `presign`), so the
 * authenticator accepts it for principals (config auth.sigv2).  The gateway
 * never signs with it: every forwarded request is signed with SigV4.
 *
 * Two forms: the header "Authorization: AWS <access key>:<base64 HMAC-SHA1>",
 * and the presigned query (AWSAccessKeyId, Signature, Expires).  The string to
 * sign (Amazon S3 Developer Guide, "Signing and authenticating REST requests",
 * as botocore's HmacV1Auth and s3cmd build it):
 *
 *   Method "\n" Content-MD5 "\n" Content-Type "\n" Date-or-Expires "\n"
 *   CanonicalizedAmzHeaders CanonicalizedResource
 *
 *  - Date: the Date header, or "" when an x-amz-date header is present
 *    (which then is the request time); for presigned URLs the Expires text;
 *  - CanonicalizedAmzHeaders: each x-amz-* header, name lowercased, values
 *    trimmed and joined with ',' for repeated names, sorted by name, one
 *    "name:value\n" each; a presigned URL's x-amz-* query parameters count as
 *    headers (botocore moves signed headers there), as do its content-md5 and
 *    content-type parameters when the header is absent;
 *  - CanonicalizedResource: "/bucket" for a virtual-hosted request, then the
 *    wire path as sent, then the sub-resources of the query (GW_SIGV2
 *    sub-resource list: acl, uploadId, partNumber, versionId, response-*, ...)
 *    sorted by name, values percent-decoded, "?"/"&"-joined, each as sent
 *    ("uploads" or "uploads=").
 *
 * Signatures are compared with CRYPTO_memcmp.  No global state; any thread.
 */
#ifndef GW_SIGV2_H
#define GW_SIGV2_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "gateway/s3/sigv4.h"

#define GW_SIGV2_SIG_LEN 20 /* bytes in an HMAC-SHA1 */
#define GW_SIGV2_B64_LEN 28 /* its base64, padding included */

/* A parsed SigV2 header or presigned query.  All fields are copies. */
struct gw_sigv2_authz {
    char access_key[GW_SIGV4_MAX_ACCESS_KEY + 1]; /* the access key id */
    unsigned char signature[GW_SIGV2_SIG_LEN];    /* the claimed signature, decoded */
    int presigned;                                /* 1 for the query form, else 0 */
    char expires[21];                             /* presigned: Expires as sent (digits) */
    int64_t expires_s;                            /* presigned: Expires, Unix seconds */
};

/* The request as received.  Every pointer is borrowed for the call. */
struct gw_sigv2_input {
    const char *method;                    /* "GET", "PUT", ... */
    const char *path;                      /* raw path as on the wire, starting with '/' */
    const char *query;                     /* raw query without '?'; "" or NULL if none */
    const struct gw_sigv4_header *headers; /* all request headers, repeated names allowed */
    size_t nheaders;                       /* entries in headers */
    const char *vhost_bucket;              /* virtual-hosted style: the bucket the Host
                                              named (prefixed to the resource); else NULL */
};

/* Why a verification failed. */
enum gw_sigv2_fail {
    GW_SIGV2_FAIL_NONE = 0, /* verified */
    GW_SIGV2_FAIL_NODATE,   /* header form without a valid Date or x-amz-date: AccessDenied */
    GW_SIGV2_FAIL_SKEW,     /* RequestTimeTooSkewed (header form, over 15 minutes) */
    GW_SIGV2_FAIL_EXPIRED,  /* AccessDenied "Request has expired" (presigned) */
    GW_SIGV2_FAIL_MISMATCH, /* SignatureDoesNotMatch */
    GW_SIGV2_FAIL_INTERNAL, /* out of memory, or a request too large to canonicalise */
};

/*
 * gw_sigv2_authz_parse - parse an Authorization value "AWS AK:base64sig".
 * [out] out  filled on success, zeroed on failure
 * Returns 0, ERR_NOTFOUND (not a SigV2 value: no "AWS " prefix), ERR_INVAL
 * (malformed: no ':', an empty or too long key, a signature that is not the
 * base64 of 20 bytes).
 */
MUST_USE int gw_sigv2_authz_parse(const char *value, struct gw_sigv2_authz *out);

/*
 * gw_sigv2_presigned_parse - parse AWSAccessKeyId, Signature and Expires from
 * a raw query (any order, each once; values percent-decoded, a '+' taken
 * literally).
 * Returns 0, ERR_NOTFOUND (none of the three present), ERR_INVAL (some
 * missing, repeated or malformed: Expires must be decimal seconds).
 */
MUST_USE int gw_sigv2_presigned_parse(const char *query, struct gw_sigv2_authz *out);

/*
 * gw_sigv2_string_to_sign - append the string to sign of in (as described
 * at the top) to out.  a says which form (header or presigned) and carries
 * Expires.  Returns 0, ERR_NOMEM, ERR_TOOBIG (out's cap).
 */
MUST_USE int gw_sigv2_string_to_sign(const struct gw_sigv2_input *in,
                                     const struct gw_sigv2_authz *a, struct buf *out);

/*
 * gw_sigv2_sign - base64 HMAC-SHA1 of len bytes at sts under secret.
 * [out] out  GW_SIGV2_B64_LEN + 1 bytes, NUL-terminated
 * Returns 0, ERR_NOMEM (OpenSSL failure).
 */
MUST_USE int gw_sigv2_sign(const char *secret, const void *sts, size_t len,
                           char out[GW_SIGV2_B64_LEN + 1]);

/*
 * gw_sigv2_verify - check a request's SigV2 signature against secret.
 * Header form: the request time is x-amz-date if present, else Date (IMF-fixdate,
 * "GMT" or "+0000"; x-amz-date may also be ISO 8601 basic "20150830T123600Z"),
 * and must be within GW_SIGV4_MAX_SKEW_S of now.  Presigned: now must not be
 * past Expires.
 * [in]  secret  the principal's secret (borrowed)
 * [in]  now_ms  the current time (clock_wall_ms())
 * [out] why     the failure reason (may be NULL)
 * Returns 0, ERR_AUTH (mismatch), ERR_TIMEOUT (skew or expired), ERR_INVAL (no
 * date), ERR_NOMEM.
 */
MUST_USE int gw_sigv2_verify(const char *secret, const struct gw_sigv2_authz *a,
                             const struct gw_sigv2_input *in, int64_t now_ms,
                             enum gw_sigv2_fail *why);

#endif
