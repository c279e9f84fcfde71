/*
 * gateway/s3/sigv4.h: AWS Signature Version 4, S3 rules, one signer for both
 * directions.
 *
 * Outbound, the proxy signs each upstream request with gw_sigv4_sign().
 * Inbound, the authenticator parses the client's Authorization header
 * (gw_sigv4_authz_parse) or presigned query (gw_sigv4_presigned_parse), looks
 * the access key up, and calls gw_sigv4_verify(), which rebuilds the canonical
 * request with the same code the signer uses.  Streaming uploads are decoded
 * and checked chunk by chunk by struct gw_sigv4_chunked.
 *
 * Sources: "Authenticating Requests (AWS Signature Version 4)" in the Amazon S3
 * API Reference (sig-v4-header-based-auth, sigv4-streaming,
 * sigv4-query-string-auth) and the AWS SigV4 test suite.
 *
 * S3 rules, which differ from other AWS services:
 *  - the canonical URI is the wire path decoded once and re-encoded once; dot
 *    segments and "//" are kept (gw_sigv4_canonical_uri);
 *  - in the query string a raw '+' means a space (form encoding, as AWS and
 *    MinIO read it): "a+b" and "a%20b" canonicalise to "a%20b"; a literal plus
 *    must be sent as %2B.  To avoid any doubt upstream, the proxy should forward
 *    the canonical query string as the wire query it signs.
 *
 * Threading: no global state; a keycache or decoder belongs to one thread.
 * Memory: every output is written to caller storage or to a struct buf the
 * caller owns; nothing returned points into library state unless stated.
 * Secrets (secret keys, signing keys) are wiped with OPENSSL_cleanse before
 * the memory that held them is released.
 *
 * Errors: 0, or a negative ERR_* (common/err.h).  ERR_INVAL means malformed
 * input (including inputs over the limits below), ERR_AUTH a signature that
 * does not match, ERR_NOMEM an allocation failure, ERR_TOOBIG a buffer cap.
 */
#ifndef GW_SIGV4_H
#define GW_SIGV4_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"

#define GW_SIGV4_ALGORITHM       "AWS4-HMAC-SHA256"
#define GW_SIGV4_UNSIGNED        "UNSIGNED-PAYLOAD"
#define GW_SIGV4_STREAMING       "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
#define GW_SIGV4_STREAMING_TRL   "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
#define GW_SIGV4_STREAMING_UTRL  "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
#define GW_SIGV4_EMPTY_SHA256    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define GW_SIGV4_KEY_LEN         32   /* bytes in a signing key (HMAC-SHA256 output) */
#define GW_SIGV4_HEX_LEN         64   /* hex digits in a signature or SHA-256 */
#define GW_SIGV4_AMZ_DATE_LEN    16   /* "20150830T123600Z" */
#define GW_SIGV4_MAX_ACCESS_KEY  128  /* longest access key id accepted */
#define GW_SIGV4_MAX_REGION      64   /* longest region in a scope */
#define GW_SIGV4_MAX_SERVICE     32   /* longest service in a scope */
#define GW_SIGV4_MAX_SIGNED_HDRS 2048 /* longest SignedHeaders list */
#define GW_SIGV4_MAX_SCOPE       (8 + 1 + GW_SIGV4_MAX_REGION + 1 + GW_SIGV4_MAX_SERVICE + 13)
#define GW_SIGV4_MAX_AUTHZ       4096      /* longest Authorization value parsed or produced */
#define GW_SIGV4_MAX_CREQ        (1 << 20) /* cap on a canonical request */
#define GW_SIGV4_MAX_EXPIRES     604800    /* presigned URLs: at most 7 days (S3) */
#define GW_SIGV4_MAX_SKEW_S      900       /* S3's clock-skew window: 15 minutes */

/* Credentials.  All borrowed by the functions that take them. */
struct gw_sigv4_creds {
    const char *access_key;    /* access key id */
    const char *secret_key;    /* secret access key */
    const char *session_token; /* STS session token, or NULL if none */
};

/* One request header as received or to be sent; name in any case. */
struct gw_sigv4_header {
    const char *name;  /* header name, NUL-terminated */
    const char *value; /* header value, NUL-terminated, untrimmed */
};

/* A request to canonicalise.  Every pointer is borrowed for the call. */
struct gw_sigv4_input {
    const char *method;                    /* "GET", "PUT", ... */
    const char *path;                      /* raw path as on the wire (percent-encoded, not
                                              normalised), starting with '/' */
    const char *query;                     /* raw query as on the wire, without '?'; "" or NULL
                                              if none */
    const struct gw_sigv4_header *headers; /* all request headers, repeated names allowed */
    size_t nheaders;                       /* entries in headers */
    const char *payload_hash;              /* hex SHA-256 of the body, UNSIGNED-PAYLOAD or a
                                              STREAMING-* value; NULL means UNSIGNED-PAYLOAD */
};

/* Flags for gw_sigv4_canonical_uri/_query/_request. */
enum gw_sigv4_flags {
    GW_SIGV4_F_NONE = 0,
    /* Non-S3 services only: remove dot segments and squash "//" (RFC 3986 5.2.4). */
    GW_SIGV4_F_NORMALIZE_PATH = 1 << 0,
    /* Presigned requests: leave X-Amz-Signature out of the canonical query. */
    GW_SIGV4_F_SKIP_SIGNATURE = 1 << 1,
};

/* ---- signing keys ---- */

/*
 * struct gw_sigv4_keycache - a few derived signing keys (16), one per
 * (secret, date, region, service), each with its HMAC pads already hashed
 * (gw_digest_hmac), so that a key is derived once a day rather than once a
 * request and each signature costs two SHA-256 blocks fewer.  Entries are
 * told apart by the whole secret, which the cache holds a copy of: a secret
 * rotated on reload (even in the same memory) or another day, region or
 * service is a miss, never an old key; nothing needs flushing.  Every entry
 * is wiped when it is replaced and when the cache is freed.  Opaque; one
 * thread.
 */
struct gw_sigv4_keycache;

/* gw_sigv4_keycache_new - an empty cache.  Returns it (owned: free with _free), or NULL on OOM. */
struct gw_sigv4_keycache *gw_sigv4_keycache_new(void);

/* gw_sigv4_keycache_free - wipe and free the cache.  NULL is a no-op. */
void gw_sigv4_keycache_free(struct gw_sigv4_keycache *kc);

/*
 * gw_sigv4_signing_key - derive kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" secret,
 * date), region), service), "aws4_request") (SigV4 "Derive a signing key").
 * [in]  kc       cache to look in and fill, or NULL to derive every time
 * [in]  secret   secret access key (borrowed)
 * [in]  date     "YYYYMMDD" (exactly 8 digits)
 * [in]  region, service  scope parts (non-empty, at most GW_SIGV4_MAX_REGION/_SERVICE)
 * [out] key      the key, a secret: wipe it with gw_sigv4_wipe when done
 * Returns 0, ERR_INVAL (bad date or scope part, empty secret or one over 1024
 * bytes), ERR_NOMEM.
 */
MUST_USE int gw_sigv4_signing_key(struct gw_sigv4_keycache *kc, const char *secret,
                                  const char *date, const char *region, const char *service,
                                  unsigned char key[GW_SIGV4_KEY_LEN]);

/* gw_sigv4_wipe - overwrite n bytes at p so the compiler cannot skip it (OPENSSL_cleanse). */
void gw_sigv4_wipe(void *p, size_t n);

/* ---- primitives ---- */

/*
 * gw_sigv4_hmac_hex - lowercase hex HMAC-SHA256 of msg under key.
 * [out] hex  65 bytes: 64 digits and a NUL.
 * Returns 0 or ERR_NOMEM (OpenSSL failure).
 */
MUST_USE int gw_sigv4_hmac_hex(const unsigned char *key, size_t keylen, const void *msg, size_t len,
                               char hex[GW_SIGV4_HEX_LEN + 1]);

/* gw_sigv4_sha256_hex - lowercase hex SHA-256 of len bytes at p into hex[65].  Returns 0 or
 * ERR_NOMEM. */
MUST_USE int gw_sigv4_sha256_hex(const void *p, size_t len, char hex[GW_SIGV4_HEX_LEN + 1]);

/*
 * gw_sigv4_amz_date_parse - "YYYYMMDDTHHMMSSZ" (ISO 8601 basic, UTC) to seconds
 * since the Unix epoch.  Strict: 16 characters, valid calendar date and time.
 * Returns 0 or ERR_INVAL.
 */
MUST_USE int gw_sigv4_amz_date_parse(const char *s, int64_t *out);

/*
 * gw_sigv4_amz_date_format - seconds since the epoch to "YYYYMMDDTHHMMSSZ".
 * [out] out  17 bytes.  Returns 0 or ERR_INVAL (before 1970 or after 9999).
 */
MUST_USE int gw_sigv4_amz_date_format(int64_t t, char out[GW_SIGV4_AMZ_DATE_LEN + 1]);

/* ---- canonical request pieces (each appends to out, a buffer the caller owns) ---- */

/*
 * gw_sigv4_canonical_uri - the canonical URI of an S3 request: the wire path
 * decoded once (a valid %XX gives its byte) and every byte except the
 * unreserved ones (A-Z a-z 0-9 - . _ ~) and '/' encoded as %XX (uppercase hex).
 * So "%2F" becomes '/', "%7E" becomes '~', "$" becomes "%24".  No dot-segment
 * removal or "//" squashing unless flags has GW_SIGV4_F_NORMALIZE_PATH.
 * [in] path, len  the raw path (need not be NUL-terminated); empty means "/"
 * Returns 0, ERR_INVAL (bad % escape, no leading '/'), ERR_TOOBIG, ERR_NOMEM.
 */
MUST_USE int gw_sigv4_canonical_uri(const char *path, size_t len, unsigned flags, struct buf *out);

/*
 * gw_sigv4_canonical_query - the canonical query string: the raw query split
 * on '&' (empty pieces ignored), each piece split at its first '=', key and
 * value decoded ('+' as space, %XX as its byte) and re-encoded (all bytes but
 * unreserved as %XX), sorted by encoded key then encoded value (byte order),
 * and joined as k=v with '&'.  A valueless key ("acl") becomes "acl=".
 * [in] query  raw query without '?', or NULL/"" for none (appends nothing)
 * [in] flags  GW_SIGV4_F_SKIP_SIGNATURE drops X-Amz-Signature (presigned)
 * Returns 0, ERR_INVAL (bad % escape, more than 1024 parameters), ERR_TOOBIG, ERR_NOMEM.
 */
MUST_USE int gw_sigv4_canonical_query(const char *query, unsigned flags, struct buf *out);

/*
 * gw_sigv4_signed_headers_check - is s a valid SignedHeaders list: non-empty,
 * ';'-separated, each name non-empty lowercase RFC 9110 token characters,
 * strictly increasing (sorted, no repeats), at most GW_SIGV4_MAX_SIGNED_HDRS bytes.
 * Returns 0 or ERR_INVAL.
 */
MUST_USE int gw_sigv4_signed_headers_check(const char *s);

/*
 * gw_sigv4_canonical_headers - one "name:value\n" line per name in
 * signed_headers: the values of every header with that name (any case), in
 * arrival order, each trimmed of SP/HTAB and with inner runs of SP/HTAB made one
 * space (the AWS suite collapses inside quotes too: get-header-value-trim),
 * joined with ','.
 * [in] token  if a signed x-amz-security-token is not among headers, this value
 *             is used (the signer adds the header); may be NULL
 * Returns 0, ERR_INVAL (bad signed_headers, a signed header missing), ERR_TOOBIG, ERR_NOMEM.
 */
MUST_USE int gw_sigv4_canonical_headers(const struct gw_sigv4_header *headers, size_t n,
                                        const char *signed_headers, const char *token,
                                        struct buf *out);

/*
 * gw_sigv4_canonical_request - method \n URI \n query \n headers \n
 * signed_headers \n payload hash (SigV4 "Create a canonical request").
 * Arguments as for the pieces above.  Returns as they do.
 */
MUST_USE int gw_sigv4_canonical_request(const struct gw_sigv4_input *in, const char *signed_headers,
                                        unsigned flags, const char *token, struct buf *out);

/*
 * gw_sigv4_scope - "date/region/service/aws4_request" into out[outlen].
 * Returns 0, ERR_INVAL (bad part), ERR_TOOBIG (outlen too small; out is then "").
 */
MUST_USE int gw_sigv4_scope(const char *date, const char *region, const char *service, char *out,
                            size_t outlen);

/*
 * gw_sigv4_string_to_sign - "AWS4-HMAC-SHA256\n" amz_date "\n" scope "\n"
 * hex(SHA-256(creq)), appended to out.  Returns 0, ERR_INVAL, ERR_TOOBIG, ERR_NOMEM.
 */
MUST_USE int gw_sigv4_string_to_sign(const char *amz_date, const char *scope, const void *creq,
                                     size_t creqlen, struct buf *out);

/* ---- signing (outbound) ---- */

/*
 * gw_sigv4_sign - sign a request and write the whole Authorization value:
 * "AWS4-HMAC-SHA256 Credential=AK/scope, SignedHeaders=..., Signature=hex".
 * [in]  kc             key cache or NULL
 * [in]  c              credentials; if c->session_token is set, the caller sends
 *                      it as X-Amz-Security-Token and normally lists
 *                      x-amz-security-token in signed_headers (its value is taken
 *                      from c when the header is not in in->headers)
 * [in]  region, service, amz_date ("20150830T123600Z"; the request's X-Amz-Date)
 * [in]  in             the request as it will be sent
 * [in]  signed_headers sorted ';'-joined lowercase names, each present in in->headers
 * [out] authz_out      authz_len bytes; NUL-terminated on success
 * Returns 0, ERR_INVAL (bad input), ERR_TOOBIG (authz_len too small or canonical
 * request over GW_SIGV4_MAX_CREQ), ERR_NOMEM.
 */
MUST_USE int gw_sigv4_sign(struct gw_sigv4_keycache *kc, const struct gw_sigv4_creds *c,
                           const char *region, const char *service, const char *amz_date,
                           const struct gw_sigv4_input *in, const char *signed_headers,
                           char authz_out[], size_t authz_len);

/*
 * gw_sigv4_signature - the lower layer of gw_sigv4_sign: the hex signature of
 * a request (S3 path rules unless flags say otherwise), and optionally the
 * canonical request and string to sign it used.
 * [out] sig        65 bytes
 * [out] creq, sts  buffers to append the canonical request / string to sign to, or NULL
 * Returns as gw_sigv4_sign.
 */
MUST_USE int gw_sigv4_signature(struct gw_sigv4_keycache *kc, const char *secret, const char *token,
                                const char *region, const char *service, const char *amz_date,
                                const struct gw_sigv4_input *in, const char *signed_headers,
                                unsigned flags, char sig[GW_SIGV4_HEX_LEN + 1], struct buf *creq,
                                struct buf *sts);

/* ---- parsing and verifying (inbound) ---- */

/* A parsed Authorization header or presigned query.  All fields are copies. */
struct gw_sigv4_authz {
    char access_key[GW_SIGV4_MAX_ACCESS_KEY + 1];      /* Credential's access key id */
    char date[9];                                      /* Credential's date, YYYYMMDD */
    char region[GW_SIGV4_MAX_REGION + 1];              /* Credential's region */
    char service[GW_SIGV4_MAX_SERVICE + 1];            /* Credential's service */
    char scope[GW_SIGV4_MAX_SCOPE + 1];                /* "date/region/service/aws4_request" */
    char signed_headers[GW_SIGV4_MAX_SIGNED_HDRS + 1]; /* validated SignedHeaders */
    unsigned char signature[32];                       /* the claimed signature, decoded */
    int presigned;                                     /* 1 for a presigned query, else 0 */
    char amz_date[GW_SIGV4_AMZ_DATE_LEN + 1];          /* presigned: X-Amz-Date ("" otherwise) */
    uint64_t expires;                          /* presigned: X-Amz-Expires seconds, else 0 */
    int has_token;                             /* presigned: X-Amz-Security-Token present */
    char content_sha256[GW_SIGV4_HEX_LEN + 1]; /* presigned: X-Amz-Content-Sha256, or "" */
};

/*
 * gw_sigv4_authz_parse - parse an Authorization header value:
 * "AWS4-HMAC-SHA256 Credential=AK/YYYYMMDD/region/service/aws4_request,
 * SignedHeaders=a;b, Signature=<64 hex>".  Components in any order, each
 * exactly once, separated by ',' with optional spaces after it (s3cmd and the
 * AWS docs send none).  Strict otherwise: no unknown components, no empty parts.
 * [in]  value  the header value (borrowed), at most GW_SIGV4_MAX_AUTHZ bytes
 * [out] out    filled on success, zeroed on failure
 * Returns 0, or ERR_INVAL (malformed; ERR_UNSUPPORTED for another algorithm
 * such as AWS V2 "AWS AK:sig" or AWS4-ECDSA-P256-SHA256).
 */
MUST_USE int gw_sigv4_authz_parse(const char *value, struct gw_sigv4_authz *out);

/*
 * gw_sigv4_presigned_parse - parse the X-Amz-* parameters of a presigned URL
 * from a raw query (any order; other parameters are ignored): X-Amz-Algorithm,
 * X-Amz-Credential, X-Amz-Date, X-Amz-Expires (1..604800), X-Amz-SignedHeaders,
 * X-Amz-Signature are required, each once; X-Amz-Security-Token and
 * X-Amz-Content-Sha256 (a payload hash the URL was signed with) optional.
 * Returns 0, ERR_NOTFOUND if the query has no X-Amz-Signature and no
 * X-Amz-Algorithm (not a presigned request), ERR_UNSUPPORTED (another
 * algorithm), ERR_INVAL (malformed).  out is zeroed on failure.
 */
MUST_USE int gw_sigv4_presigned_parse(const char *query, struct gw_sigv4_authz *out);

/* Why a verification failed; each maps to one S3 error code (gw_sigv4_fail_s3code). */
enum gw_sigv4_fail {
    GW_SIGV4_FAIL_NONE = 0,  /* verified */
    GW_SIGV4_FAIL_MALFORMED, /* AuthorizationHeaderMalformed: bad date, scope or header list */
    GW_SIGV4_FAIL_QUERY,     /* AuthorizationQueryParametersError: presigned form */
    GW_SIGV4_FAIL_SKEW,      /* RequestTimeTooSkewed */
    GW_SIGV4_FAIL_EXPIRED,   /* AccessDenied ("Request has expired"): presigned */
    GW_SIGV4_FAIL_MISMATCH,  /* SignatureDoesNotMatch */
    GW_SIGV4_FAIL_INTERNAL,  /* InternalError (out of memory) */
};

/* gw_sigv4_fail_s3code - the S3 <Code> for a failure (static string; "" for NONE). */
const char *gw_sigv4_fail_s3code(enum gw_sigv4_fail f);

/* What a successful verification hands on to a streaming decoder. */
struct gw_sigv4_verified {
    unsigned char key[GW_SIGV4_KEY_LEN];  /* signing key: SECRET, wipe with gw_sigv4_wipe */
    char signature[GW_SIGV4_HEX_LEN + 1]; /* the request's signature: the seed of a chunk chain */
    char amz_date[GW_SIGV4_AMZ_DATE_LEN + 1]; /* the request time */
    char scope[GW_SIGV4_MAX_SCOPE + 1];       /* credential scope */
    int64_t time_s;                           /* the request time, Unix seconds */
};

/* Expectations and the clock for gw_sigv4_verify. */
struct gw_sigv4_verify_opts {
    const char *region;  /* required region, or NULL to accept any */
    const char *service; /* required service ("s3"), or NULL to accept any */
    int64_t now_ms;      /* the current time (clock_wall_ms()) */
    int64_t skew_s; /* allowed clock skew; 0 means GW_SIGV4_MAX_SKEW_S; <0 turns the check off */
    unsigned flags; /* GW_SIGV4_F_NORMALIZE_PATH for non-S3 services */
};

/*
 * gw_sigv4_verify - check a request's signature against secret.
 * The request time is X-Amz-Date: for the header form the x-amz-date header,
 * which must be present and signed; for presigned URLs the query parameter.
 * Its day must be the scope's.  The header form must be within skew of now; a
 * presigned URL is valid from X-Amz-Date minus skew to X-Amz-Date + expires.
 * "host" must be signed.  Signatures are compared with CRYPTO_memcmp.
 * [in]  kc      key cache or NULL
 * [in]  secret  the principal's secret key (borrowed)
 * [in]  a       the parsed authorization (gw_sigv4_authz_parse or _presigned_parse)
 * [in]  in      the request as received; for a presigned URL in->query is the
 *               whole raw query (X-Amz-Signature is skipped) and payload_hash
 *               NULL (then a->content_sha256 or "UNSIGNED-PAYLOAD", never the
 *               x-amz-content-sha256 header, as S3 and MinIO do); for the
 *               header form payload_hash NULL takes the x-amz-content-sha256
 *               header, which must be there (S3 requires it)
 * [out] v       on success, what a chunk decoder needs (may be NULL); wiped on failure
 * [out] why     the failure reason (may be NULL)
 * Returns 0, ERR_AUTH (mismatch), ERR_TIMEOUT (skew or expired), ERR_INVAL
 * (malformed), ERR_NOMEM.
 */
MUST_USE int gw_sigv4_verify(struct gw_sigv4_keycache *kc, const char *secret,
                             const struct gw_sigv4_authz *a, const struct gw_sigv4_input *in,
                             const struct gw_sigv4_verify_opts *opts, struct gw_sigv4_verified *v,
                             enum gw_sigv4_fail *why);

/* ---- streaming payloads (aws-chunked) ---- */

/*
 * gw_sigv4_chunk_signature - the signature of one chunk of a
 * STREAMING-AWS4-HMAC-SHA256-PAYLOAD body: HMAC(key, "AWS4-HMAC-SHA256-PAYLOAD\n"
 * amz_date "\n" scope "\n" prev_sig "\n" hex(SHA-256("")) "\n" data_sha256).
 * [in]  prev_sig     the seed signature for the first chunk, then the previous chunk's
 * [in]  data_sha256  hex SHA-256 of the chunk's data
 * [out] sig          65 bytes
 * Returns 0, ERR_INVAL, ERR_NOMEM.
 */
MUST_USE int gw_sigv4_chunk_signature(const unsigned char key[GW_SIGV4_KEY_LEN],
                                      const char *amz_date, const char *scope, const char *prev_sig,
                                      const char *data_sha256, char sig[GW_SIGV4_HEX_LEN + 1]);

/*
 * gw_sigv4_trailer_signature - the x-amz-trailer-signature of a
 * *-PAYLOAD-TRAILER body: HMAC(key, "AWS4-HMAC-SHA256-TRAILER\n" amz_date "\n"
 * scope "\n" prev_sig "\n" hex(SHA-256(trailers))), where trailers is the
 * canonical trailer block "name:value\n"... (len bytes).
 * Returns 0, ERR_INVAL, ERR_NOMEM.
 */
MUST_USE int gw_sigv4_trailer_signature(const unsigned char key[GW_SIGV4_KEY_LEN],
                                        const char *amz_date, const char *scope,
                                        const char *prev_sig, const void *trailers, size_t len,
                                        char sig[GW_SIGV4_HEX_LEN + 1]);

/* Body framing of a streaming upload, from x-amz-content-sha256. */
enum gw_sigv4_chunked_mode {
    GW_SIGV4_CHUNKED_SIGNED,          /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD */
    GW_SIGV4_CHUNKED_SIGNED_TRAILER,  /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER */
    GW_SIGV4_CHUNKED_UNSIGNED_TRAILER /* STREAMING-UNSIGNED-PAYLOAD-TRAILER */
};

#define GW_SIGV4_CHUNKED_MAX_LINE     256  /* longest chunk-size or trailer line, CRLF included */
#define GW_SIGV4_CHUNKED_MAX_TRAILERS 1024 /* bytes of trailer lines in all */

/* Why a decoder stopped (gw_sigv4_chunked_fail). */
enum gw_sigv4_chunked_fail {
    GW_SIGV4_CHUNKED_OK = 0,     /* no failure */
    GW_SIGV4_CHUNKED_FRAMING,    /* bad framing or over a limit: IncompleteBody/400 */
    GW_SIGV4_CHUNKED_SIGNATURE,  /* a chunk or trailer signature did not match */
    GW_SIGV4_CHUNKED_CHECKSUM,   /* the trailer checksum did not match: BadDigest */
    GW_SIGV4_CHUNKED_LENGTH,     /* decoded length differs from x-amz-decoded-content-length */
    GW_SIGV4_CHUNKED_INCOMPLETE, /* the body ended early */
    GW_SIGV4_CHUNKED_INTERNAL,   /* out of memory */
};

/*
 * gw_sigv4_chunked_data_fn - receives decoded payload bytes (borrowed, valid
 * during the call; usually a slice of the fed buffer, no copy).  Return 0 to
 * go on, or a negative ERR_* to stop: gw_sigv4_chunked_feed returns it.
 */
typedef int gw_sigv4_chunked_data_fn(void *arg, const char *p, size_t n);

/*
 * struct gw_sigv4_chunked - incremental aws-chunked decoder: fed any split of
 * the wire body, it checks the framing, verifies each chunk signature in chain
 * (signed modes), reads trailers, checks the trailer checksum and trailer
 * signature, and emits the decoded bytes.
 *
 * Data is emitted before the signature of its chunk can be checked.  To keep
 * an unverified body from being committed upstream, the decoder holds back
 * the last byte of the payload (it knows it from decoded_len) and emits it only
 * when the whole body, final chunk, trailers and checksum included, has
 * verified; gw_sigv4_chunked_feed then returns 1.  Opaque; one thread.
 */
struct gw_sigv4_chunked;

/*
 * gw_sigv4_chunked_new - a decoder.
 * [in] mode         framing (from x-amz-content-sha256)
 * [in] v            signed modes: the verified request (key, seed signature, date,
 *                   scope; copied, the copy is wiped on free); NULL for the unsigned mode
 * [in] decoded_len  x-amz-decoded-content-length, or UINT64_MAX if unknown (then
 *                   no hold-back and no length check)
 * [in] trailer      the x-amz-trailer header value (the one trailer expected, e.g.
 *                   "x-amz-checksum-crc32"), or NULL for none; its checksum is
 *                   computed over the decoded data and compared
 * Returns the decoder (owned, free with _free), or NULL on bad arguments
 * (mode needs v; unknown trailer) or OOM.
 */
struct gw_sigv4_chunked *gw_sigv4_chunked_new(enum gw_sigv4_chunked_mode mode,
                                              const struct gw_sigv4_verified *v,
                                              uint64_t decoded_len, const char *trailer);

/* gw_sigv4_chunked_free - wipe and free.  NULL is a no-op. */
void gw_sigv4_chunked_free(struct gw_sigv4_chunked *d);

/*
 * gw_sigv4_chunked_feed - decode n more wire bytes at p (borrowed), calling
 * on_data (synchronously, zero or more times) with decoded bytes.
 * Returns 0 (more input wanted), 1 (the body is complete and verified; the last
 * byte has been emitted), ERR_INVAL (framing, length or checksum), ERR_AUTH
 * (a signature), ERR_NOMEM, or on_data's error.  After an error or after 1,
 * further calls fail with ERR_INVAL (bytes after the end are framing errors).
 */
MUST_USE int gw_sigv4_chunked_feed(struct gw_sigv4_chunked *d, const void *p, size_t n,
                                   gw_sigv4_chunked_data_fn *on_data, void *arg);

/*
 * gw_sigv4_chunked_finish - the wire body ended.  Returns 0 if the decoder had
 * returned 1, else ERR_INVAL (reason GW_SIGV4_CHUNKED_INCOMPLETE).
 */
MUST_USE int gw_sigv4_chunked_finish(struct gw_sigv4_chunked *d);

/* gw_sigv4_chunked_fail - why the decoder stopped (GW_SIGV4_CHUNKED_OK if it has not). */
enum gw_sigv4_chunked_fail gw_sigv4_chunked_fail(const struct gw_sigv4_chunked *d);

/*
 * gw_sigv4_chunked_checksum - the checksum trailer received (after feed returned 1).
 * [out] name, value  NUL-terminated strings owned by d, valid until _free;
 *                    set to NULL when there was none
 */
void gw_sigv4_chunked_checksum(const struct gw_sigv4_chunked *d, const char **name,
                               const char **value);

/* gw_sigv4_chunked_decoded - payload bytes decoded so far (held-back byte included). */
uint64_t gw_sigv4_chunked_decoded(const struct gw_sigv4_chunked *d);

#endif
