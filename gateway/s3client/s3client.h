/*
 * gateway/s3client/s3client.h: the one internal S3 client: every request the
 * gateway makes to its upstream on its own behalf, and the one signer.
 *
 * Room gateway/s3client/ (the gateway's own S3 calls, on the upstream
 * client of gateway/upstream/):
 *   s3client.h / .c      the client: the one signer (the proxy re-signs with
 *                        it), one reload, requests and their answers
 *   elect_s3.h / .c      the s3 election backend, on the S3 client
 *   bucket_probe.h / .c  does a bucket exist (CreateBucket answered 200)
 *   trailer_probe.h / .c does the store take checksum trailers (start-up)
 * (The multipart aborts, gw_s3client_abort_upload, are called by
 * gateway/proxy/upload.c.)
 *
 * A struct gw_s3client holds the upstream settings (endpoint, region, path or
 * virtual-hosted addressing, credentials) and the SigV4 signing-key cache, and
 * is reconfigured in one place (gw_s3client_set_config, on SIGHUP).  Its users
 * borrow it:
 *   - the proxy re-signs each forwarded client request with gw_s3client_sign
 *     and streams it itself (gateway/proxy/proxy_fwd.c, proxy_xfer.c);
 *   - the gateway's own calls go through gw_s3client_start (request building,
 *     signing and a transfer on the borrowed struct gw_upstream, with a
 *     completion callback): the s3 election backend's conditional PUT, GET,
 *     LIST and DELETE (elect_s3.c), multipart aborts (gw_s3client_abort_upload,
 *     gateway/proxy/upload.c), the bucket probe (bucket_probe.c) and the
 *     checksum-trailer probe (trailer_probe.c).
 * So a reload is seen by all of them at once, for requests signed after it.
 *
 * Signing.  From a method, a bucket, a raw (already percent-encoded) key, a
 * raw query and the caller's extra headers, gw_s3client_sign produces the URL
 * and the "Name: value" header lines that gw_upstream_xfer_start()
 * (gateway/upstream/upstream.h) sends as they are:
 *
 *   Host, x-amz-date, x-amz-content-sha256, [x-amz-security-token],
 *   the extra headers in the caller's order, Authorization
 *
 * signed with AWS Signature Version 4 (gateway/s3/sigv4.h) for service "s3".
 * The signed headers are host, every x-amz-* header, and the extra headers
 * (all of them, or only the S3 ones: see enum gw_s3client_policy).
 *
 * Addressing (gw_config.upstream.addressing):
 *   path     scheme://endpoint-host/bucket/key?query
 *   virtual  scheme://bucket.endpoint-host/key?query
 * The key is put on the path byte for byte: no dot-segment removal, no "//"
 * squashing, no re-encoding (DESIGN.md "One key, one meaning"); the upstream
 * client sends it as is (CURLOPT_PATH_AS_IS).  Use gw_s3client_encode() to
 * turn a plain key or query value into its raw form.
 *
 * Ownership.  struct gw_s3client is owned by its creator (gw_s3client_new /
 * gw_s3client_free); it borrows the upstream client and the configuration it
 * was given (until gw_s3client_set_config or free).  A signed request lives in
 * a struct gw_s3client_msg that the caller embeds (gw_s3client_msg_init /
 * gw_s3client_msg_cleanup): it owns one capped buffer with the URL and every
 * header line (GW_S3CLIENT_MAX_BYTES) and the arrays pointing into it;
 * everything it hands out is valid until the next gw_s3client_sign into it or
 * gw_s3client_msg_cleanup.  gw_upstream_xfer_start copies what it needs, so a message
 * can be cleaned up as soon as it returns.  A call (struct gw_s3client_op)
 * owns a copy of its request body and is freed when its on_done returns or by
 * gw_s3client_cancel.
 *
 * Threads: event-loop thread only (the upstream's loop); the signing-key
 * cache is not locked.  The time comes from clock_wall_ms() (common/clock.h),
 * so tests pin it.  Secrets: the Authorization value is in the message buffer
 * (it is not a secret: it is sent in the clear), the session token too (it is
 * sent as a header); the buffer is wiped on cleanup anyway because of the
 * token.  Never log the lines (STYLE R8).
 */
#ifndef GW_S3CLIENT_H
#define GW_S3CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "gateway/s3/sigv4.h"

struct gw_config;
struct gw_header;
struct gw_upstream;
struct gw_xfer_req;

/* Cap on the bytes of one signed request: URL, header lines and signer scratch. */
#define GW_S3CLIENT_MAX_BYTES ((size_t)256 * 1024)
/* Cap on the extra headers of one request. */
#define GW_S3CLIENT_MAX_EXTRA 256
/* Longest endpoint host[:port] accepted. */
#define GW_S3CLIENT_MAX_HOST 256
/* Longest bucket name (S3 allows 63, path-style legacy buckets 255). */
#define GW_S3CLIENT_MAX_BUCKET 255

struct gw_s3client;
struct gw_s3client_op;

/* Which extra headers are signed. */
enum gw_s3client_policy {
    /* Every extra header is signed (requests the gateway makes itself). */
    GW_S3CLIENT_SIGN_ALL = 0,
    /* Only x-amz-*, Content-MD5, Content-Type and Content-Encoding (and Host)
     * are signed (what S3 stores or checks); other
     * extras are sent unsigned (forwarded client headers such as User-Agent). */
    GW_S3CLIENT_SIGN_S3 = 1,
};

/* What to sign.  Every pointer is borrowed for the call to gw_s3client_sign. */
struct gw_s3client_sign_req {
    const char *method; /* "GET", "PUT", ... sent and signed as given */
    const char *bucket; /* bucket name, or NULL/"" for a service-level request (ListBuckets) */
    const char *key;    /* raw (percent-encoded) key, without a leading '/'; NULL for a
                           bucket-level request ("/bucket"); "" gives "/bucket/" */
    const char *query;  /* raw query without '?', or NULL/"" for none; sent as given, and
                           signed in its canonical form (gateway/s3/sigv4.h) */
    const struct gw_sigv4_header *extra; /* extra headers (If-Match, Content-Type, Range, ...) */
    size_t nextra;                       /* entries in extra, at most GW_S3CLIENT_MAX_EXTRA */
    const char *payload_hash;            /* lowercase hex SHA-256 of the body (gw_sigv4_sha256_hex;
                                            GW_SIGV4_EMPTY_SHA256 for none), GW_SIGV4_UNSIGNED,
                                            or GW_SIGV4_STREAMING_UTRL (an aws-chunked body
                                            with a trailer, the caller's framing headers);
                                            NULL means GW_SIGV4_UNSIGNED */
    enum gw_s3client_policy policy;      /* which extras are signed */
};

/* A signed request, ready for gw_upstream_xfer_start.  Embedded by the caller. */
struct gw_s3client_msg {
    struct buf data;            /* owned: URL, host, then "name\0Name: value\0" per header */
    const char *url;            /* into data; "scheme://host/path[?query]" */
    const char *const *lines;   /* "Name: value" lines, NULL-terminated; into data */
    size_t nlines;              /* entries in lines (the NULL not counted) */
    const char **line_ptrs;     /* storage behind lines, in sh's allocation */
    struct gw_sigv4_header *sh; /* owned scratch: the signer's view of the headers; one
                                   allocation with offs and line_ptrs after it */
    size_t *offs;               /* scratch, in sh's allocation: per header, offsets of
                                   name and line */
    size_t slots;               /* capacity of line_ptrs/sh (headers), offs has 2x */
};

/*
 * gw_s3client_new - the client for cfg->upstream, sending through up.
 * [in]  up      the gateway's upstream client; borrowed, must outlive this
 *               (may be NULL for a client that only signs)
 * [in]  cfg     borrowed until gw_s3client_set_config or gw_s3client_free;
 *               uses upstream.endpoint, region, addressing, access_key,
 *               secret_key, session_token
 * [out] errbuf  on failure one line naming the problem (errlen bytes)
 * Returns the client (owned: gw_s3client_free), or NULL (bad endpoint, no
 * credentials, out of memory).
 */
struct gw_s3client *gw_s3client_new(struct gw_upstream *up, const struct gw_config *cfg,
                                    char *errbuf, size_t errlen);

/*
 * gw_s3client_probe_bucket - the bucket the gateway's start-up probes
 * (trailers, conditional writes) write in: the s3 election backend's, else
 * the first fence rule's; NULL when there is none.  Borrowed from cfg.
 */
const char *gw_s3client_probe_bucket(const struct gw_config *cfg);

/*
 * gw_s3client_set_config - switch to a new configuration (SIGHUP) for every
 * request signed from now on, by every user of c (the one reload path).
 * [in] cfg  borrowed as for gw_s3client_new
 * Returns 0, or ERR_INVAL (bad endpoint or credentials: the old configuration
 * stays, and it must then stay alive; logged).
 */
MUST_USE int gw_s3client_set_config(struct gw_s3client *c, const struct gw_config *cfg);

/*
 * gw_s3client_free - cancel the calls still pending (no callback runs), wipe
 * the key cache and free.  Free the users first.  NULL is a no-op.
 */
void gw_s3client_free(struct gw_s3client *c);

/* gw_s3client_msg_init - an empty message (no allocation). */
void gw_s3client_msg_init(struct gw_s3client_msg *m);

/* gw_s3client_msg_cleanup - wipe and free the storage; m is empty and reusable.  NULL-safe. */
void gw_s3client_msg_cleanup(struct gw_s3client_msg *m);

/*
 * gw_s3client_sign - build and sign one request into m (whatever m held before
 * is dropped).
 * [in]  c   the client
 * [in]  rq  what to send (borrowed for the call)
 * [out] m   URL and header lines, valid until the next sign into m or cleanup
 * Returns 0; ERR_INVAL (no method, a bucket with characters other than
 * [A-Za-z0-9._-], a key or query with bytes outside printable ASCII, an extra
 * header with a bad name or a CR/LF/NUL/control byte in its value, or an extra
 * the builder writes itself: Host, Authorization, Content-Length,
 * X-Amz-Date, X-Amz-Content-Sha256, X-Amz-Security-Token); ERR_TOOBIG (more
 * than GW_S3CLIENT_MAX_EXTRA extras, or past GW_S3CLIENT_MAX_BYTES or a signer
 * limit); ERR_NOMEM.  On failure m is left empty.
 */
MUST_USE int gw_s3client_sign(struct gw_s3client *c, const struct gw_s3client_sign_req *rq,
                              struct gw_s3client_msg *m);

/*
 * gw_s3client_msg_xfer_req - fill a gw_xfer_req from a signed message.
 * [in]  m            a message signed by gw_s3client_sign (borrowed by out)
 * [in]  method       the method given to the signer
 * [in]  body_length  -1 for no body, else the exact body length (its hash was signed)
 * [out] out          points into m: valid while m is
 */
void gw_s3client_msg_xfer_req(const struct gw_s3client_msg *m, const char *method,
                              int64_t body_length, struct gw_xfer_req *out);

/*
 * gw_s3client_encode - append s percent-encoded for S3: every byte except the
 * unreserved A-Z a-z 0-9 - . _ ~ as %XX (uppercase hex), and also '/' kept
 * when keep_slash (for keys on a path; not for query values).
 * [in]  s    NUL-terminated plain text (borrowed)
 * [out] out  appended to
 * Returns 0, ERR_TOOBIG (out's cap), ERR_NOMEM; on failure out is unchanged.
 */
MUST_USE int gw_s3client_encode(const char *s, bool keep_slash, struct buf *out);

/* ---- the gateway's own calls ---- */

/* Error documents kept for their Code (the rest of a larger one is dropped). */
#define GW_S3CLIENT_ERR_BODY_MAX ((size_t)16 * 1024)

/* One call.  Every pointer is borrowed for the call to gw_s3client_start. */
struct gw_s3client_call {
    const char *method; /* "PUT", "GET", "HEAD", "DELETE", ... */
    const char *bucket; /* the bucket ([A-Za-z0-9._-]) */
    const char *key;    /* PLAIN key (percent-encoded here, '/' kept); NULL: bucket-level */
    const char *query;  /* raw query without '?', or NULL (encode values with
                           gw_s3client_encode) */
    const struct gw_sigv4_header *extra; /* extra headers, all signed (If-Match, ...) */
    size_t nextra;                       /* entries in extra */
    const char *body;                    /* request body (copied), or NULL with has_body false */
    size_t body_len;                     /* its length */
    bool has_body;                       /* send a body (of body_len bytes, maybe 0) */
    const char *payload_hash;            /* x-amz-content-sha256; NULL: the body's SHA-256 */
};

/* What a call reports; arg is the one given to gw_s3client_start. */
struct gw_s3client_cbs {
    /* The final response head (borrowed for the call).  May be NULL.  Return 0,
     * or a negative ERR_* to abort (on_done follows with it). */
    int (*on_head)(void *arg, int status, const struct gw_header *headers, size_t n);
    /* Body bytes of a 2xx answer (borrowed for the call).  May be NULL (dropped).
     * Return 0 or a negative ERR_* to abort.  A non-2xx answer's body is the
     * error document: the client keeps it and passes its Code to on_done. */
    int (*on_body)(void *arg, const char *data, size_t len);
    /* The call is over: err 0 and the answer's status with code the error
     * document's Code (non-2xx; NULL if none), or err != 0 (no complete answer:
     * ERR_UPSTREAM, ERR_TIMEOUT, or what a callback returned; status is what
     * was seen, 0 before a head).  The op is freed right after this returns;
     * this may free the caller's objects and cancel its other calls. */
    void (*on_done)(void *arg, int err, int status, const char *code);
};

/*
 * gw_s3client_start - build, sign and start one call.
 * [in]  call  what to send (borrowed for the call; the body is copied)
 * [in]  cbs   borrowed until on_done returns or the op is cancelled (static)
 * [out] out   the op, for gw_s3client_cancel until on_done runs; may be NULL
 * Returns 0 (on_done follows, never before this returns), ERR_INVAL (no
 * upstream, a bad argument: see gw_s3client_sign), ERR_TOOBIG, ERR_NOMEM.  On
 * failure no callback runs.
 */
MUST_USE int gw_s3client_start(struct gw_s3client *c, const struct gw_s3client_call *call,
                               const struct gw_s3client_cbs *cbs, void *arg,
                               struct gw_s3client_op **out);

/*
 * gw_s3client_abort_upload - AbortMultipartUpload: DELETE /bucket/key?uploadId=id.
 * [in] bucket, key, upload_id  plain text (key and id encoded here)
 * Otherwise as gw_s3client_start.
 */
MUST_USE int gw_s3client_abort_upload(struct gw_s3client *c, const char *bucket, const char *key,
                                      const char *upload_id, const struct gw_s3client_cbs *cbs,
                                      void *arg, struct gw_s3client_op **out);

/*
 * gw_s3client_cancel - stop op now and free it; no callback runs.  A request
 * body not completely sent is cut before its last byte (never committed).
 * NULL-safe.
 */
void gw_s3client_cancel(struct gw_s3client_op *op);

/* gw_s3client_pending - calls started and not yet ended or cancelled. */
size_t gw_s3client_pending(const struct gw_s3client *c);

#endif
