/*
 * gateway/upstream/s3sign.h: build a signed request for the upstream S3.
 *
 * One builder for every request the gateway makes to its upstream on its own
 * behalf (the s3 election backend today; the proxy is meant to switch to it):
 * from the upstream configuration (endpoint, region, path or virtual-hosted
 * addressing, credentials), a method, a bucket, a raw (already
 * percent-encoded) key, a raw query and the caller's extra headers, it
 * produces the URL and the "Name: value" header lines that gw_xfer_start()
 * (gateway/upstream/upstream.h) sends as they are:
 *
 *   Host, x-amz-date, x-amz-content-sha256, [x-amz-security-token],
 *   the extra headers in the caller's order, Authorization
 *
 * signed with AWS Signature Version 4 (gateway/s3/sigv4.h) for service "s3".
 * The signed headers are host, every x-amz-* header, and the extra headers
 * (all of them, or only the S3 ones: see enum gw_s3sign_policy).
 *
 * Addressing (gw_config.upstream.addressing):
 *   path     scheme://endpoint-host/bucket/key?query
 *   virtual  scheme://bucket.endpoint-host/key?query
 * The key is put on the path byte for byte: no dot-segment removal, no "//"
 * squashing, no re-encoding (DESIGN.md "One key, one meaning"); the upstream
 * client sends it as is (CURLOPT_PATH_AS_IS).  Use gw_s3sign_encode() to
 * turn a plain key or query value into its raw form.
 *
 * Ownership.  struct gw_s3signer is owned by its creator (gw_s3signer_new /
 * gw_s3signer_free) and borrows the configuration it was given until
 * gw_s3signer_set_config or free.  A signed request lives in a struct
 * gw_s3msg that the caller embeds (gw_s3msg_init / gw_s3msg_cleanup): it owns
 * one capped buffer with the URL and every header line (GW_S3SIGN_MAX_BYTES)
 * and the arrays pointing into it; everything it hands out is valid until the
 * next gw_s3signer_sign into it or gw_s3msg_cleanup.  gw_xfer_start copies
 * what it needs, so a gw_s3msg can be cleaned up as soon as it returns.
 *
 * Threads: a signer belongs to one thread (its signing-key cache is not
 * locked); no event loop is needed.  The time comes from clock_wall_ms()
 * (common/clock.h), so tests pin it.  Secrets: the Authorization value is in
 * the message buffer (it is not a secret: it is sent in the clear), the
 * session token too (it is sent as a header); the buffer is wiped on cleanup
 * anyway because of the token.  Never log the lines (STYLE R8).
 */
#ifndef GW_S3SIGN_H
#define GW_S3SIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "gateway/s3/sigv4.h"

struct gw_config;
struct gw_xfer_req;

/* Cap on the bytes of one signed request: URL, header lines and signer scratch. */
#define GW_S3SIGN_MAX_BYTES ((size_t)256 * 1024)
/* Cap on the extra headers of one request. */
#define GW_S3SIGN_MAX_EXTRA 256
/* Longest endpoint host[:port] accepted. */
#define GW_S3SIGN_MAX_HOST 256
/* Longest bucket name (S3 allows 63, path-style legacy buckets 255). */
#define GW_S3SIGN_MAX_BUCKET 255

struct gw_s3signer;

/* Which extra headers are signed. */
enum gw_s3sign_policy {
    /* Every extra header is signed (requests the gateway makes itself). */
    GW_S3SIGN_SIGN_ALL = 0,
    /* Only x-amz-*, Content-MD5, Content-Type and Content-Encoding (and Host)
     * are signed (what S3 stores or checks); other
     * extras are sent unsigned (forwarded client headers such as User-Agent). */
    GW_S3SIGN_SIGN_S3 = 1,
};

/* What to sign.  Every pointer is borrowed for the call to gw_s3signer_sign. */
struct gw_s3sign_req {
    const char *method; /* "GET", "PUT", ... sent and signed as given */
    const char *bucket; /* bucket name, or NULL/"" for a service-level request (ListBuckets) */
    const char *key;    /* raw (percent-encoded) key, without a leading '/'; NULL for a
                           bucket-level request ("/bucket"); "" gives "/bucket/" */
    const char *query;  /* raw query without '?', or NULL/"" for none; sent as given, and
                           signed in its canonical form (gateway/s3/sigv4.h) */
    const struct gw_sigv4_header *extra; /* extra headers (If-Match, Content-Type, Range, ...) */
    size_t nextra;                       /* entries in extra, at most GW_S3SIGN_MAX_EXTRA */
    const char *payload_hash;            /* lowercase hex SHA-256 of the body (gw_sigv4_sha256_hex;
                                            GW_SIGV4_EMPTY_SHA256 for none), GW_SIGV4_UNSIGNED,
                                            or GW_SIGV4_STREAMING_UTRL (an aws-chunked body
                                            with a trailer, the caller's framing headers);
                                            NULL means GW_SIGV4_UNSIGNED */
    enum gw_s3sign_policy policy;        /* which extras are signed */
};

/* A signed request, ready for gw_xfer_start.  Embedded by the caller. */
struct gw_s3msg {
    struct buf data;            /* owned: URL, host, then "name\0Name: value\0" per header */
    const char *url;            /* into data; "scheme://host/path[?query]" */
    const char *const *lines;   /* "Name: value" lines, NULL-terminated; into data */
    size_t nlines;              /* entries in lines (the NULL not counted) */
    const char **line_ptrs;     /* owned storage behind lines */
    struct gw_sigv4_header *sh; /* owned scratch: the signer's view of the headers */
    size_t *offs;               /* owned scratch: per header, offsets of name and line */
    size_t slots;               /* capacity of line_ptrs/sh (headers), offs has 2x */
};

/*
 * gw_s3signer_new - a signer for cfg->upstream.
 * [in]  cfg     borrowed until gw_s3signer_set_config or gw_s3signer_free;
 *               uses upstream.endpoint, region, addressing, access_key,
 *               secret_key, session_token
 * [out] errbuf  on failure one line naming the problem (errlen bytes)
 * Returns the signer (owned: gw_s3signer_free), or NULL (bad endpoint, no
 * credentials, out of memory).
 */
struct gw_s3signer *gw_s3signer_new(const struct gw_config *cfg, char *errbuf, size_t errlen);

/*
 * gw_s3signer_set_config - switch to a new configuration (SIGHUP) for the
 * requests signed from now on.
 * [in] cfg  borrowed as for gw_s3signer_new
 * Returns 0, or ERR_INVAL (bad endpoint or credentials: the old configuration
 * stays, and it must then stay alive; logged).
 */
MUST_USE int gw_s3signer_set_config(struct gw_s3signer *s, const struct gw_config *cfg);

/* gw_s3signer_free - wipe the key cache and free.  NULL is a no-op. */
void gw_s3signer_free(struct gw_s3signer *s);

/* gw_s3msg_init - an empty message (no allocation). */
void gw_s3msg_init(struct gw_s3msg *m);

/* gw_s3msg_cleanup - wipe and free the storage; m is empty and reusable.  NULL-safe. */
void gw_s3msg_cleanup(struct gw_s3msg *m);

/*
 * gw_s3signer_sign - build and sign one request into m (whatever m held before
 * is dropped).
 * [in]  s   the signer
 * [in]  rq  what to send (borrowed for the call)
 * [out] m   URL and header lines, valid until the next sign into m or cleanup
 * Returns 0; ERR_INVAL (no method, a bucket with characters other than
 * [A-Za-z0-9._-], a key or query with bytes outside printable ASCII, an extra
 * header with a bad name or a CR/LF/NUL/control byte in its value, or an extra
 * the builder writes itself: Host, Authorization, Content-Length,
 * X-Amz-Date, X-Amz-Content-Sha256, X-Amz-Security-Token); ERR_TOOBIG (more
 * than GW_S3SIGN_MAX_EXTRA extras, or past GW_S3SIGN_MAX_BYTES or a signer
 * limit); ERR_NOMEM.  On failure m is left empty.
 */
MUST_USE int gw_s3signer_sign(struct gw_s3signer *s, const struct gw_s3sign_req *rq,
                              struct gw_s3msg *m);

/*
 * gw_s3msg_xfer_req - fill a gw_xfer_req from a signed message.
 * [in]  m            a message signed by gw_s3signer_sign (borrowed by out)
 * [in]  method       the method given to the signer
 * [in]  body_length  -1 for no body, else the exact body length (its hash was signed)
 * [out] out          points into m: valid while m is
 */
void gw_s3msg_xfer_req(const struct gw_s3msg *m, const char *method, int64_t body_length,
                       struct gw_xfer_req *out);

/*
 * gw_s3sign_encode - append s percent-encoded for S3: every byte except the
 * unreserved A-Z a-z 0-9 - . _ ~ as %XX (uppercase hex), and also '/' kept
 * when keep_slash (for keys on a path; not for query values).
 * [in]  s    NUL-terminated plain text (borrowed)
 * [out] out  appended to
 * Returns 0, ERR_TOOBIG (out's cap), ERR_NOMEM; on failure out is unchanged.
 */
MUST_USE int gw_s3sign_encode(const char *s, bool keep_slash, struct buf *out);

#endif
