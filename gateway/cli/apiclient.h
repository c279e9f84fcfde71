/*
 * gateway/cli/apiclient.h: a small blocking HTTP client for the command line
 * (`fencegate lock ...`), on libcurl's easy interface.
 *
 * This is NOT for the daemon: it blocks the calling thread for the whole
 * request (the daemon's event loop uses gateway/upstream/upstream.h).  It does what a
 * worker-side CLI needs and no more: one request at a time, a response body
 * kept in memory under a hard cap (GW_APICLIENT_MAX_BODY), a connect timeout, a
 * total timeout per request, connection reuse between requests of one
 * client, and a way to abandon a request early (a flag set by a signal
 * handler).  Requests are optionally signed with AWS Signature Version 4
 * (gateway/s3/sigv4.h, service "s3") so that gateways with principals accept
 * them; with no credentials they are sent unsigned (anonymous gateways).
 *
 * URLs are sent as given (CURLOPT_PATH_AS_IS) so the path signed is the path
 * sent.  Proxies from the environment are not used (as in the daemon's
 * upstream client): the gateway is always reached directly.  Redirects are
 * not followed.  Sockets are close-on-exec, so a child started by
 * `lock run` does not inherit the connection to the gateway.
 *
 * Threads: a struct gw_apiclient belongs to one thread.  Errors: 0 or a negative
 * ERR_* (common/err.h); CURLcode never leaves upstream_cli.c, its text is
 * logged there (log_warn).  Secrets: the secret key is borrowed and never
 * copied except into the signer's wiped key cache; nothing here logs headers.
 */
#ifndef GW_UPSTREAM_CLI_H
#define GW_UPSTREAM_CLI_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "gateway/s3/sigv4.h"

#define GW_APICLIENT_MAX_BODY     ((size_t)1 << 20) /* cap on a response body */
#define GW_APICLIENT_MAX_HEADERS  16                /* header lines one request may carry */
#define GW_APICLIENT_CONNECT_MS   5000              /* connect timeout */
#define GW_APICLIENT_MAX_URL      4096              /* longest URL accepted */
#define GW_APICLIENT_MAX_HOST     256               /* longest host[:port] of a base URL */
#define GW_APICLIENT_HEADER_BYTES 8192              /* cap on the signed header lines */

struct gw_apiclient;

/* One request.  Every pointer is borrowed for the call to gw_apiclient_perform. */
struct gw_apiclient_req {
    const char *method;                 /* "GET", "POST", ... */
    const char *url;                    /* absolute http(s) URL, sent as is */
    const char *const *headers;         /* "Name: value" lines, or NULL */
    size_t nheaders;                    /* entries in headers (<= GW_APICLIENT_MAX_HEADERS) */
    const void *body;                   /* request body, or NULL for none */
    size_t body_len;                    /* bytes at body */
    uint64_t timeout_ms;                /* the whole request, connect included; >= 1 */
    const volatile sig_atomic_t *abort; /* non-NULL: the request is abandoned (within about
                                           a second) once *abort is non-zero */
};

/* A response.  Embedded by the caller: gw_apiclient_resp_init / _cleanup. */
struct gw_apiclient_resp {
    long status;     /* HTTP status, 0 until a response head arrived */
    struct buf body; /* the body (owned), at most GW_APICLIENT_MAX_BODY bytes */
};

/* gw_apiclient_resp_init - an empty response. */
void gw_apiclient_resp_init(struct gw_apiclient_resp *r);

/* gw_apiclient_resp_cleanup - free the body; r may be reused after gw_apiclient_resp_init. */
void gw_apiclient_resp_cleanup(struct gw_apiclient_resp *r);

/*
 * gw_apiclient_new - a client (one libcurl easy handle, kept for connection reuse).
 * Calls curl_global_init the first time (process start-up, one thread).
 * Returns the client (owned: gw_apiclient_free), or NULL when libcurl cannot
 * start (logged).
 */
struct gw_apiclient *gw_apiclient_new(void);

/* gw_apiclient_free - close connections and free.  NULL is a no-op. */
void gw_apiclient_free(struct gw_apiclient *c);

/*
 * gw_apiclient_perform - send one request and wait for the whole response.
 * [in]  c    the client
 * [in]  req  what to send
 * [out] out  status and body (initialised by the caller; reset first)
 * Returns 0 when a complete response arrived, whatever its status;
 * ERR_INVAL (bad request fields), ERR_TIMEOUT (connect or total timeout),
 * ERR_UPSTREAM (could not connect, connection broken, bad HTTP),
 * ERR_TOOBIG (body over the cap), ERR_CLOSED (abandoned through req->abort),
 * ERR_NOMEM.  On failure out->status may still hold a status that arrived.
 */
MUST_USE int gw_apiclient_perform(struct gw_apiclient *c, const struct gw_apiclient_req *req,
                                  struct gw_apiclient_resp *out);

/* ---- requests to a gateway ---- */

/*
 * gw_apiclient_set_target - where gw_apiclient_call sends requests, and how it signs.
 * [in] base_url  "http[s]://host[:port][/prefix]" (see gw_apiclient_base_parse); copied
 * [in] region    signing region (non-empty); borrowed until gw_apiclient_free
 * [in] creds     credentials, borrowed (with their strings) until gw_apiclient_free,
 *                or NULL: requests are sent unsigned
 * Returns 0, ERR_INVAL (bad URL or region), ERR_NOMEM (no key cache).
 */
MUST_USE int gw_apiclient_set_target(struct gw_apiclient *c, const char *base_url,
                                     const char *region, const struct gw_sigv4_creds *creds);

/*
 * gw_apiclient_call - one request to the target: base URL + prefix + path (+ "?"
 * query), with the header lines of gw_apiclient_sign (signed when the target has
 * credentials, a fresh X-Amz-Date from clock_wall_ms()).
 * [in]  path          starting with '/', already percent-encoded
 * [in]  query         raw query without '?', or NULL
 * [in]  content_type  the body's type, or NULL when there is no body
 * [in]  body, len     the body (borrowed), or NULL/0
 * [in]  timeout_ms, abort  as in struct gw_apiclient_req
 * [out] out           as gw_apiclient_perform
 * Returns as gw_apiclient_perform; ERR_INVAL also when no target was set,
 * ERR_TOOBIG for a URL over GW_APICLIENT_MAX_URL.
 */
MUST_USE int gw_apiclient_call(struct gw_apiclient *c, const char *method, const char *path,
                               const char *query, const char *content_type, const void *body,
                               size_t len, uint64_t timeout_ms, const volatile sig_atomic_t *abort,
                               struct gw_apiclient_resp *out);

/* ---- SigV4 for the CLI (the pieces under gw_apiclient_call) ---- */

/* A split base URL: scheme://host[:port][/prefix]. */
struct gw_apiclient_base {
    char url[GW_APICLIENT_MAX_URL];       /* scheme://host[:port] (no trailing '/') */
    char host[GW_APICLIENT_MAX_HOST + 1]; /* host[:port] as written: the Host header */
    char prefix[GW_APICLIENT_MAX_URL];    /* path prefix without trailing '/', or "" */
};

/*
 * gw_apiclient_base_parse - split a gateway URL such as "http://127.0.0.1:9000"
 * or "https://gw.example/fg/".  Only http and https; no user info, query or
 * fragment; a non-empty host.
 * [in]  s    the URL (borrowed)
 * [out] out  filled on success
 * Returns 0 or ERR_INVAL.
 */
MUST_USE int gw_apiclient_base_parse(const char *s, struct gw_apiclient_base *out);

/*
 * gw_apiclient_sign - the header lines of a signed (or, with creds NULL,
 * unsigned) request to the gateway:
 *   Host, X-Amz-Date, X-Amz-Content-Sha256 (hex SHA-256 of the body),
 *   [Content-Type], [X-Amz-Security-Token], [Authorization]
 * signed with SigV4 for service "s3" over host, x-amz-date,
 * x-amz-content-sha256, content-type (when given) and the session token.
 * [in]  kc            signing-key cache, or NULL
 * [in]  creds         credentials (borrowed), or NULL for an unsigned request
 * [in]  region        the signing region (non-empty)
 * [in]  now_ms        wall-clock time to sign with (clock_wall_ms())
 * [in]  method, host  the method, and the Host header value
 * [in]  path, query   the path as sent (starting with '/'), the raw query or NULL
 * [in]  content_type  Content-Type value, or NULL (no body type)
 * [in]  body, len     the body, or NULL/0
 * [out] lines         filled with "Name: value" strings pointing into store
 * [out] nlines        entries written (at most GW_APICLIENT_MAX_HEADERS)
 * [out] store         buffer the caller owns (init with cap GW_APICLIENT_HEADER_BYTES);
 *                     the lines are valid until it changes; holds no secret key
 *                     but the session token: clean it with buf_cleanse
 * Returns 0, ERR_INVAL, ERR_TOOBIG, ERR_NOMEM.
 */
MUST_USE int gw_apiclient_sign(struct gw_sigv4_keycache *kc, const struct gw_sigv4_creds *creds,
                               const char *region, int64_t now_ms, const char *method,
                               const char *host, const char *path, const char *query,
                               const char *content_type, const void *body, size_t len,
                               const char *lines[GW_APICLIENT_MAX_HEADERS], size_t *nlines,
                               struct buf *store);

#endif
