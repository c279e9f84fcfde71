/*
 * gateway/upstream/upstream.h: the upstream HTTP(S) client, two engines behind one API.
 *
 * One struct gw_upstream per event loop, made with one engine
 * (gw_upstream_opts.engine): GW_UPSTREAM_LEAN, HTTP/1.1 on libevent
 * bufferevents with llhttp parsing the responses and OpenSSL through
 * bufferevent_openssl (the proxy's data path), or GW_UPSTREAM_CURL, a CURLM
 * driven by the loop (curl's hiperfifo pattern, without its exits; the
 * internal S3 client's engine, and the proxy's fallback, upstream.client).
 * Both keep connections for reuse.  Each transfer (struct gw_xfer) streams
 * its request body from a pull callback and its response body to a push
 * callback, pausing either side on request, so memory per transfer is
 * bounded whatever the object size.  The contract below holds for both.
 *
 * Event-loop thread only, except the unreachable streak (gw_upstream_streak_*,
 * gw_upstream_unreachable), which any thread may feed and read, and the cap,
 * which any loop's client may share.  No callback
 * runs before gw_upstream_xfer_start returns.
 * <curl/curl.h> is included only by gateway/upstream/curl*.c (STYLE R1).
 *
 * Room gateway/upstream/ (the gateway's side of the store; the only room with
 * libcurl, make check-deps):
 *   upstream.c           the API below, each call handed to the engine a client
 *                        was made by through its operations table, and the
 *                        request checks both engines rely on
 *   engine.h / engine.c  the engine family: the operations table, the headers
 *                        each engine's structs start with, the constructors /
 *                        the set-up every constructor shares
 *   streak.c             the unreachable streak both engines feed, one per
 *                        process when the loops' clients share it
 *   cap.c                the cap on open connections the loops' lean clients
 *                        share (upstream.max_connections for the process)
 *   curl.c / curl_xfer.c the curl engine: the multi handle on the loop /
 *                        one transfer's libcurl callbacks; curl.h its structs
 *   lean.c / lean_conn.c the lean engine: transfers, the pool, the wait queue /
 *                        one connection (request out, response in through llhttp)
 *   lean_tls.c / lean.h  its TLS set-up (the room's only OpenSSL) / its structs
 *   upmsg.h / upmsg.c    upstream response heads, request sanity checks (both engines)
 * The gateway's own S3 calls on this client are the room gateway/s3client/.
 */
#ifndef GW_UPSTREAM_H
#define GW_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "gateway/net/net.h"

struct event_base;
struct gw_upstream;
struct gw_upstream_cap;
struct gw_upstream_streak;
struct gw_loopq;
struct gw_xfer;

enum gw_upstream_engine {
    GW_UPSTREAM_CURL = 0, /* libcurl multi */
    GW_UPSTREAM_LEAN = 1, /* bufferevents + llhttp */
};

struct gw_upstream_opts {
    enum gw_upstream_engine engine; /* which client (0 = libcurl) */
    uint32_t connect_timeout_ms;    /* TCP + TLS connect; ERR_TIMEOUT past it */
    uint32_t timeout_ms;      /* no progress either way for this long: ERR_TIMEOUT (0 = none) */
    uint32_t max_connections; /* cap on open connections (0 = no cap); transfers over it
                                 wait for one, bounded by timeout_ms */
    const char *ca_file;      /* borrowed during gw_upstream_new; NULL = system CAs */
    bool tls_verify;          /* verify peer certificate and host name */
    struct gw_upstream_streak *streak; /* borrowed, outlives the client: the unreachable
                                          streak it feeds and gw_upstream_unreachable reads,
                                          shared with other loops' clients; NULL: its own */
    struct gw_upstream_cap *cap;       /* borrowed, outlives the client: the process's cap on open
                                          connections shared with other loops' clients, which then
                                          stands for max_connections (the lean engine only; the
                                          curl engine keeps max_connections its own); NULL: none */
    struct gw_loopq *q;                /* with cap: the queue of the client's loop (its wake-ups);
                                          it must outlive the client and stay allocated until no
                                          loop sharing cap runs any more */
};

/* What to send.  Every pointer is borrowed only until gw_upstream_xfer_start returns. */
struct gw_xfer_req {
    const char *method;         /* sent exactly as given */
    const char *url;            /* scheme://host[:port]/path?query; the path is sent byte for byte
                                   (no dot-segment squashing) */
    const char *const *headers; /* "Name: value" strings, NULL-terminated; sent as given, in
                                   order, and nothing else is added (no Accept, no Expect,
                                   no Content-Type); a Host header here replaces the one
                                   made from the URL */
    size_t nheaders;            /* number of entries in headers (the NULL not counted) */
    int64_t body_length;        /* -1: no request body; >= 0: a body of exactly this many
                                   bytes, sent with Content-Length */
    bool no_reuse;              /* close the connection after this transfer: its answer's
                                   framing cannot be trusted (RGW answers HEAD ?acl with a
                                   body; the next answer on that connection would be read
                                   from the middle of it) */
};

/* Callbacks for one transfer; arg is the one given to gw_upstream_xfer_start. */
struct gw_xfer_cbs {
    /*
     * Pull request-body bytes into dst (at most len).  Return >0 bytes, 0 at
     * the end of the body, ERR_AGAIN to pause sending (resume with
     * gw_xfer_resume_send), or another negative ERR_* to abort the transfer
     * before its last byte (on_done follows with that error).  Required when
     * body_length >= 0.
     */
    ssize_t (*read_body)(void *arg, char *dst, size_t len);
    /*
     * The final response head (1xx responses are skipped): status and headers
     * as received (borrowed for the call).  Return 0, or a negative ERR_* to
     * abort.  Called once, before any on_body.
     */
    int (*on_head)(void *arg, int status, const struct gw_header *headers, size_t n);
    /*
     * Response-body bytes (borrowed for the call; always consumed).  Return 0,
     * ERR_AGAIN to pause receiving after these bytes (resume with
     * gw_xfer_resume_recv), or another negative ERR_* to abort.
     */
    int (*on_body)(void *arg, const char *data, size_t len);
    /*
     * The transfer is over: err 0 (complete response received), ERR_UPSTREAM
     * (connect/protocol failure), ERR_TIMEOUT, or the error a callback
     * returned.  The xfer is freed right after this returns; never called
     * after gw_upstream_xfer_cancel.
     */
    void (*on_done)(void *arg, int err);
};

/*
 * gw_upstream_new - a client on base.
 * Returns the client, or NULL (out of memory, unknown engine, libcurl init or
 * TLS set-up failure, e.g. an unreadable ca_file; logged).
 */
struct gw_upstream *gw_upstream_new(struct event_base *base, const struct gw_upstream_opts *opts);

#define GW_UPSTREAM_DOWN_AFTER   3     /* connect failures in a row: unreachable */
#define GW_UPSTREAM_DOWN_HOLD_MS 10000 /* for this long after the last of them */
#define GW_UPSTREAM_WHY_MAX      160   /* the text for a connect failure, NUL included */

/*
 * The unreachable streak: the transfers that failed to connect (refused,
 * unresolvable, TLS handshake failed, or timed out before connecting) since
 * the last one that got a response.  A client feeds the streak named by its
 * options, or one of its own.  With `workers: N` every loop's proxy client
 * feeds one streak, so the upstream's reachability is the process's (DESIGN
 * "Worker loops"): "in a row" is in the order the loops record their
 * outcomes, whatever loop each came from.  Failures on different loops add
 * up, a response on any loop ends the streak, and the text and the hold run
 * from the last failure on any loop.  Outcomes that end at the same moment
 * on two loops are recorded in some order, each whole.  Any thread may feed
 * and read a streak.
 */

/* gw_upstream_streak_new - an empty streak to share (gw_upstream_opts.streak); NULL: no memory. */
struct gw_upstream_streak *gw_upstream_streak_new(void);

/* gw_upstream_streak_free - free s, after every client that feeds it.  NULL-safe. */
void gw_upstream_streak_free(struct gw_upstream_streak *s);

/*
 * gw_upstream_streak_unreachable - whether the upstream looks unreachable:
 * the last GW_UPSTREAM_DOWN_AFTER transfers recorded in s failed to connect,
 * no transfer recorded in s got a response since, and the last failure is
 * younger than GW_UPSTREAM_DOWN_HOLD_MS.  It clears by itself: at the first
 * transfer that gets a response, or when no failure came for the hold time
 * (the next forwarded request tries again).  For /readyz (DESIGN G10).
 * [out] why  when true and len > 0: the text for the last failure, copied
 *            (cut to fit, NUL-terminated); else untouched.  May be NULL when len is 0.
 */
bool gw_upstream_streak_unreachable(struct gw_upstream_streak *s, char *why, size_t len);

/* gw_upstream_unreachable - gw_upstream_streak_unreachable on the streak up feeds. */
bool gw_upstream_unreachable(const struct gw_upstream *up, char *why, size_t len);

/*
 * The cap on open upstream connections for the process (upstream.max_connections
 * with `workers: N`; cap.c, DESIGN "Worker loops"): every loop's lean client
 * that names it opens a connection only while the process holds fewer than
 * max, idle ones included.  A loop whose transfer finds none free waits for
 * one: a slot another loop gives back, or an idle connection another loop
 * closes for it (the one holding the most idle closes its oldest, and a loop
 * that would keep a finished connection idle closes it instead while another
 * loop waits), so no loop waits while the process has a free or idle
 * connection; and a loop whose own transfers wait hands a connection it
 * finishes to a waiting loop while it holds more than its share of max or
 * that loop holds none, so no loop starves another at the cap.  Any thread
 * may share a cap; each client uses it from its loop.
 */

/*
 * gw_upstream_cap_new - a cap of max connections (0: no cap, the connections
 * only counted) for at most loops clients.  NULL: no memory.
 */
struct gw_upstream_cap *gw_upstream_cap_new(uint32_t max, uint32_t loops);

/* gw_upstream_cap_free - free c, after every client that shares it.  NULL-safe. */
void gw_upstream_cap_free(struct gw_upstream_cap *c);

/*
 * gw_upstream_cap_conns - the connections open under c on every loop, and
 * those idle (each loop's count as it last published it), for /metrics: what
 * gw_upstream_conns gives for a client that shares c.
 */
void gw_upstream_cap_conns(struct gw_upstream_cap *c, uint64_t *open, uint64_t *idle);

/*
 * gw_upstream_conns - the connections open now (busy and idle) and those idle
 * in the pool, for /metrics: a lean client that shares a cap counts every
 * loop's (gw_upstream_cap_conns).  The curl engine counts the sockets it
 * watches as open and knows no idle ones (libcurl keeps its cache to itself).
 * NULL: 0, 0.
 */
void gw_upstream_conns(const struct gw_upstream *up, uint64_t *open, uint64_t *idle);

/* gw_upstream_free - cancel every transfer (no on_done) and free.  NULL-safe. */
void gw_upstream_free(struct gw_upstream *up);

/*
 * gw_upstream_xfer_start - start a transfer.
 * [out] out  the transfer handle, valid until on_done returns or gw_upstream_xfer_cancel.
 * Returns 0, ERR_NOMEM, or ERR_INVAL (bad URL or header).  On failure no
 * callback runs.
 */
MUST_USE int gw_upstream_xfer_start(struct gw_upstream *up, const struct gw_xfer_req *rq,
                                    const struct gw_xfer_cbs *cbs, void *arg, struct gw_xfer **out);

/* gw_xfer_resume_send - read_body has data again after ERR_AGAIN. */
void gw_xfer_resume_send(struct gw_xfer *x);

/* gw_xfer_resume_recv - on_body may be called again after ERR_AGAIN. */
void gw_xfer_resume_recv(struct gw_xfer *x);

/*
 * gw_upstream_xfer_cancel - stop now and free x; no callback runs afterwards.  If the
 * request body was not completely sent, the connection is closed before its
 * last byte, so the upstream never sees a complete request.  NULL-safe.
 */
void gw_upstream_xfer_cancel(struct gw_xfer *x);

/* gw_xfer_body_sent - bytes of request body handed to the connection so far. */
uint64_t gw_xfer_body_sent(const struct gw_xfer *x);

#endif
