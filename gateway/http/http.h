/*
 * gateway/http/http.h: the HTTP/1.x server (libevent bufferevents + llhttp).
 *
 * Owns listeners, client connections and the per-request context struct
 * gw_req.  Event-loop thread only.  Not evhttp: evhttp buffers whole request
 * bodies (libevent issue #1138); this server streams them with back-pressure.
 *
 * Life of a request:
 *  1. The server reads and parses the head (request line + headers), applying
 *     the limits from gw_config.limits (431/414/400 with an S3 XML error, then
 *     the connection is closed).  Request smuggling shapes are refused
 *     (Content-Length with Transfer-Encoding, repeated or differing
 *     Content-Length, bad chunk syntax, HTTP/0.9 or 2.x, control bytes in
 *     header values, lowercase methods).
 *  2. It calls the server's gw_request_fn with a fresh gw_req.  No body byte
 *     has been read yet, and no "100 Continue" has been sent.
 *  3. The handler may work asynchronously.  When it wants the body it calls
 *     gw_req_body_start() (which sends "100 Continue" if the client asked for
 *     it) and pulls bytes with gw_req_body_read(); the server calls
 *     ops->on_body_ready when more arrive.  The server buffers at most
 *     limits.buffer_bytes of body, and stops reading the socket past that.
 *  4. The handler answers exactly once: gw_resp_start/gw_resp_header/
 *     gw_resp_body_begin/gw_resp_body_write.../gw_resp_end, or gw_resp_simple.
 *     gw_resp_body_write returns ERR_AGAIN once the output buffer passes the
 *     watermark; the server calls ops->on_output_drained when it falls below.
 *  5. After gw_resp_end, if the body was not (completely) read, the server
 *     reads and drops the rest when it fits limits.discard_body_bytes (as S3
 *     reads the body of a request it refuses: a client that did not ask for
 *     100-continue is still sending, and closing under it turns the answer
 *     into EPIPE or a reset), then keeps the connection unless the response
 *     said Connection: close.  A longer body, or one a client waiting for a
 *     100 may never send, closes the connection at once.
 *     Then the next pipelined request is parsed.  The gw_req is freed by the
 *     server after gw_resp_end() once the response is flushed; the handler
 *     must not touch it after gw_resp_end() returns.
 *  If the client hangs up, a timeout fires, or the request body is malformed
 *  before the handler has ended the response, the server calls
 *  ops->on_abort(req, err): the handler must drop every reference to req
 *  (cancel its upstream transfer) before returning; the server then frees req.
 *  If no ops are set yet, the server frees req itself.
 *
 * Memory: header bytes are capped by limits.max_header_bytes; body and
 * output buffers by limits.buffer_bytes (soft watermark, plus one read).
 * A zero in gw_config.limits means the default documented in config.h.
 *
 * Errors the server writes itself (S3 XML, Connection: close):
 *   431 RequestHeaderSectionTooLarge  head (or trailers) past max_header_bytes or max_headers
 *   414 InvalidURI                    target past max_url_bytes
 *   400 InvalidRequest                malformed, smuggling shapes, obs-fold, CTLs, Host missing
 *                                     or repeated (HTTP/1.1), HTTP/0.9, bad chunked framing
 *   501 NotImplemented                Transfer-Encoding other than a lone "chunked" (as S3)
 *   505 HTTPVersionNotSupported       HTTP/1.2+, HTTP/2 preface
 *   405 MethodNotAllowed              CONNECT
 *   400 RequestTimeout                header timeout after a first byte, body timeout,
 *                                     a body slower than limits.min_body_rate over a window
 *   503 ServiceUnavailable            out of memory
 * A connection that never sends a byte, or is idle between requests, is
 * closed silently at its timeout.  Connections close "lingering" (FIN, then
 * input is read and dropped for up to 2 s) so a final error is not lost to a
 * TCP reset.
 *
 * Fair use (DESIGN G10, gateway/http/fair.c): one client address holds at
 * most limits.max_connections_per_client connections (more are closed at
 * accept) and limits.max_transfers_per_client transfers (gw_http_fair_transfer_begin),
 * counted over every server sharing its client-address table (gw_server_opts);
 * at its share of limits.max_connections a server closes its oldest idle
 * connection for a new one; a body slower than limits.min_body_rate over a window is cut like a
 * body timeout (on_abort(ERR_TIMEOUT), 400 RequestTimeout).
 *
 * EOF from the client: while a request body is incomplete, on_abort(ERR_CLOSED);
 * once the body is complete the response is still written (HTTP/1.0 tools
 * half-close) and a write failure then aborts.  An error or reset aborts at once.
 *
 * Room gateway/http/ (this header is its public face; make check-deps lets it
 * include only common/, gateway/base/ and gateway/net/).  Files call down the
 * list, never up (make check-circles):
 *   relay.c / relay.h  a worker loop's control-only request served by the control
 *                 loop's server over a socketpair (gw_relay_request)
 *   listen.c      listeners, accepting, draining, the server's life
 *   server.c      connections, timeouts, the request life
 *   fair.c        per-client shares (connections, transfers), minimum body rate;
 *                 sheds an idle connection through srv->shed (gw_http_conn_free)
 *   gate.c        the accept gate: listeners on or off by the connection count
 *   parse.c       llhttp callbacks: heads, limits, smuggling refusals, bodies
 *   req.c         gw_req_*: what a handler reads (method, target, headers, body)
 *   resp.c        gw_resp_*: what a handler writes; every status counted here
 *   conn_io.c     kick a connection, flush its output, the clock: what the
 *                 parts do to a connection without calling back into server.c
 *   access.c / access.h  the access log: one JSON line per request, written by a
 *                 thread of its own; struct gw_access, what a handler notes for it
 *   tls.c / tls.h the TLS listener (bufferevent_openssl)
 *   heap.c        the process heap under load: glibc's thresholds, the idle trim
 *   internal.h    the structs the files above share, nothing for other rooms
 */
#ifndef GW_HTTP_H
#define GW_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "gateway/net/net.h"

struct bufferevent;
struct event_base;
struct gw_config;
struct gw_server;
struct gw_handout;
struct gw_loopq;
struct gw_req;

/* Handler callbacks for one request; all optional except where noted. */
struct gw_req_ops {
    /* more body bytes (or the end of the body, or a body error) can be read */
    void (*on_body_ready)(struct gw_req *req, void *arg);
    /* the output buffer fell below the low watermark after gw_resp_body_write gave ERR_AGAIN */
    void (*on_output_drained)(struct gw_req *req, void *arg);
    /* the request died before gw_resp_end (err: ERR_CLOSED hang-up, ERR_TIMEOUT, ERR_INVAL
     * bad body framing); drop all references to req before returning. Required. */
    void (*on_abort)(struct gw_req *req, int err, void *arg);
};

/*
 * gw_request_fn - called once per request when its head is complete.
 * req is owned by the server; see the life cycle above.  arg is the one given
 * to gw_server_new.
 */
typedef void gw_request_fn(struct gw_req *req, void *arg);

/*
 * gw_server_new - bind every listener in cfg->listen, then every one in
 * cfg->admin_listen (requests say which: gw_req_listener), and start
 * accepting on base.
 * [in] cfg      borrowed; must outlive the server (or be replaced by gw_server_set_config).
 * [out] errbuf  on failure, what failed (address, TLS file).
 * Returns the server, or NULL (errbuf says why).
 */
struct gw_server *gw_server_new(struct event_base *base, const struct gw_config *cfg,
                                gw_request_fn *on_request, void *arg, char *errbuf, size_t errlen);

/*
 * Options of a server that is one of several, one per event loop, serving the
 * same ports (DESIGN "Worker loops": "Accepting", "Limits across loops").
 * Zeroed (or no options at all: gw_server_new) is a server alone, as before.
 */
struct gw_server_opts {
    /* the client-address table of per-client fair use, shared by the servers
     * (borrowed: the server takes a reference of its own), or NULL for a
     * private table */
    struct gw_fair_table *fair;
    /* servers sharing limits.max_connections: this one admits
     * ceil(max_connections / loops) connections (0 or 1: all of them).  The
     * per-client shares are not split: the shared table counts them. */
    size_t loops;
    /* open the S3 listeners (cfg->listen) with SO_REUSEPORT, so that other
     * servers can bind the same ports: set it on the first server when others
     * will follow (the admin listeners never get it) */
    bool reuseport;
    /* NULL, or the first server (created already, borrowed for this call
     * only: its bound ports never change, so any thread may read them once
     * gw_server_new returned them): bind cfg->listen[i] to
     * gw_server_port(first, i) with SO_REUSEPORT (first needs reuseport set,
     * or the bind fails with "Address in use"), and open no admin listener:
     * those stay on the first server alone */
    const struct gw_server *first;
    /* NULL (every server accepts on its own SO_REUSEPORT sockets), or the
     * connections' hand-out shared by the servers (gw_handout_new, borrowed:
     * it outlives them): the first server (first NULL) is the acceptor, alone
     * on the S3 listeners, and hands each connection to the loop with the
     * fewest; a server with first set binds nothing and takes what it is
     * handed on its loop's queue q (DESIGN "Worker loops", "Accepting") */
    struct gw_handout *handout;
    struct gw_loopq *q;
};

/*
 * The hand-out of accepted connections to the loops (gateway/http/handout.c),
 * config "accept": "acceptor".  One per process; the servers join it when
 * they are created (on the control thread, before the worker threads start)
 * and count their connections into it; the acceptor reads those counts.
 */
/*
 * gw_handout_new - a hand-out for up to loops servers.  ctlq: the acceptor's
 * (control) loop's queue, where the other loops wake it when they free room
 * after it paused at limits.max_connections (borrowed; must outlive every
 * message posted to it).  NULL when out of memory.
 */
struct gw_handout *gw_handout_new(size_t loops, struct gw_loopq *ctlq);

/* gw_handout_free - free h (NULL-safe) once every server that joined it is freed. */
void gw_handout_free(struct gw_handout *h);

/*
 * gw_server_new_opts - gw_server_new for one of several servers on one set of
 * ports (opts borrowed for the call; NULL is gw_server_new).  Each server
 * belongs to the thread of its base, as gw_server_new's does; only the shared
 * table is touched by several threads, under its own lock.
 */
struct gw_server *gw_server_new_opts(struct event_base *base, const struct gw_config *cfg,
                                     gw_request_fn *on_request, void *arg,
                                     const struct gw_server_opts *opts, char *errbuf,
                                     size_t errlen);

/*
 * The client-address table of per-client fair use (DESIGN G10), shared by the
 * servers of several loops so that one address's connections and transfers
 * count across the process (gateway/http/fair.c).  Thread-safe: any thread may
 * call these, and the servers on it count under its mutex.
 */
struct gw_fair_table;

/* gw_fair_table_new - an empty table with one reference (the caller's).  NULL when out of
 * memory. */
struct gw_fair_table *gw_fair_table_new(void);

/* gw_fair_table_ref - take one more reference to t. */
void gw_fair_table_ref(struct gw_fair_table *t);

/* gw_fair_table_unref - drop one reference (NULL-safe).  t is freed when no reference is
 * left and no client entry is held (a transfer outliving every server frees it at its
 * gw_http_fair_transfer_end), so the caller may drop its own right after creating the servers. */
void gw_fair_table_unref(struct gw_fair_table *t);

/* gw_server_set_config - use cfg (borrowed) for requests that start from now on. */
void gw_server_set_config(struct gw_server *srv, const struct gw_config *cfg);

/*
 * gw_server_drain - stop accepting; close idle connections; let requests in
 * flight finish.  done(arg) runs once no connection is left (possibly before
 * this returns).
 */
void gw_server_drain(struct gw_server *srv, void (*done)(void *arg), void *arg);

/* gw_server_free - close everything at once (in-flight requests get on_abort).  NULL-safe. */
void gw_server_free(struct gw_server *srv);

/* gw_server_port - the bound port of listener i (useful when the config said port 0). */
uint16_t gw_server_port(const struct gw_server *srv, size_t i);

/* gw_server_admin_port - the bound port of admin listener i (cfg->admin_listen[i]). */
uint16_t gw_server_admin_port(const struct gw_server *srv, size_t i);

/* ---- the request: everything below is event-loop only, valid until free/abort ---- */

/* gw_req_set_ops - install the handler callbacks and their argument. */
void gw_req_set_ops(struct gw_req *req, const struct gw_req_ops *ops, void *arg);

const char *gw_req_method(const struct gw_req *req); /* "GET", exactly as sent */
const char *gw_req_target(const struct gw_req *req); /* raw request target, e.g. "/b/k%20x?acl" */
const char *gw_req_path(const struct gw_req *req);   /* raw target before '?' (not decoded) */
const char *gw_req_query(const struct gw_req *req);  /* raw target after '?', "" if none */
int gw_req_version_minor(const struct gw_req *req);  /* 0 or 1 (HTTP/1.x) */
const char *gw_req_id(const struct gw_req *req); /* unique request id (hex), for logs and errors */
/* The longest request id gw_req_set_id takes: an audit record's id (64 bytes)
 * and ".<occurrence>" (up to 21). */
#define GW_REQ_ID_MAX 85
/* gw_req_set_id - replace req's id (before its answer): a refusal counted into
 * an audit run answers with "<run's id>.<n>".  Returns 0, or ERR_TOOBIG
 * (longer than GW_REQ_ID_MAX; the id is unchanged). */
int gw_req_set_id(struct gw_req *req, const char *id);
const char *gw_req_peer(const struct gw_req *req); /* client address "ip:port" */
/* gw_req_metrics - req's accounting (gateway/base/metrics.h); valid while req is. */
struct gw_metrics_req *gw_req_metrics(struct gw_req *req);
bool gw_req_is_tls(const struct gw_req *req);
/* gw_req_relayed - whether req is a worker loop's request served on the control
 * loop through gateway/http/relay.h: its worker counted it and logs it. */
bool gw_req_relayed(const struct gw_req *req);

/* Which kind of listener accepted a request (cfg->listen or cfg->admin_listen). */
enum gw_listener {
    GW_LISTENER_S3_ALL = 0, /* an S3 listener of a server without admin listeners: the
                               operator endpoints are served here too (before auth) */
    GW_LISTENER_S3 = 1,     /* an S3 listener; the operator endpoints are on the admin ones */
    GW_LISTENER_ADMIN = 2,  /* an admin listener (admin_listen) */
};
enum gw_listener gw_req_listener(const struct gw_req *req);
const struct gw_config *
gw_req_config(const struct gw_req *req); /* config in force for this request */

/*
 * gw_req_write_begin - req is an object write into bucket: it counts as in
 * flight under its configuration (gateway/base/inflight.h) from now until it
 * is freed, or until gw_req_write_take hands the count over.  Call it in the
 * turn that received the request's head (the router's), so a loop that has
 * moved on to a newer configuration begins nothing under the older one.
 * Once only.
 */
void gw_req_write_begin(struct gw_req *req, const char *bucket);

/*
 * gw_req_write_take - the configuration req's write counts under, taken over
 * by a caller whose work outlives req (a transfer that runs on without its
 * client), and in *slot its bucket's slot; NULL if none.  The caller ends it,
 * on this loop, with gw_inflight_end(cfg->inflight, gw_loopctx_index(), slot).
 */
const struct gw_config *gw_req_write_take(struct gw_req *req, unsigned *slot);

/* gw_req_header - the value of the first header named name (case-insensitive), or NULL. */
const char *gw_req_header(const struct gw_req *req, const char *name);

/* gw_req_header_count / gw_req_header_at - every header in arrival order. */
size_t gw_req_header_count(const struct gw_req *req);
const struct gw_header *gw_req_header_at(const struct gw_req *req, size_t i);

/*
 * gw_req_content_length - the declared body length: >= 0 from Content-Length,
 * -1 for a chunked body (length unknown until its end).  0 for no body.
 */
int64_t gw_req_content_length(const struct gw_req *req);

/* gw_req_trailer - a trailer field of a chunked body (after the body ended), or NULL. */
const char *gw_req_trailer(const struct gw_req *req, const char *name);

/* gw_req_body_start - the handler will read the body: sends "100 Continue" if asked, starts
 * reading. */
void gw_req_body_start(struct gw_req *req);

/*
 * gw_req_body_read - copy up to len decoded body bytes (chunked framing
 * removed) into dst.
 * Starts the body (gw_req_body_start) if the handler has not.
 * Returns >0 bytes copied; 0 at the end of the body (all of it read);
 * ERR_AGAIN when nothing is buffered now (ops->on_body_ready will follow);
 * ERR_INVAL when the body framing was bad; ERR_CLOSED if the client went away.
 */
MUST_USE ssize_t gw_req_body_read(struct gw_req *req, char *dst, size_t len);

/* gw_req_body_done - true once every body byte was received (not necessarily read). */
bool gw_req_body_done(const struct gw_req *req);

/* gw_req_body_received - body bytes received so far (decoded). */
uint64_t gw_req_body_received(const struct gw_req *req);

/* gw_req_set_close - close the connection after this response. */
void gw_req_set_close(struct gw_req *req);

struct gw_client;

/*
 * gw_http_fair_transfer_begin - count one upstream transfer against the address
 * req came from (DESIGN G10: no client holds more than its share of upstream
 * transfers).  Returns the client's entry, a reference the caller owns until
 * it calls gw_http_fair_transfer_end (it may outlive req, its connection and the
 * server), or NULL when that address already has
 * limits.max_transfers_per_client transfers (counted in
 * fencegate_client_transfers_refused, logged at most once a second): answer
 * 503 SlowDown.
 */
MUST_USE struct gw_client *gw_http_fair_transfer_begin(struct gw_req *req);

/* gw_http_fair_transfer_end - the transfer counted by gw_http_fair_transfer_begin is over.
 * NULL-safe. */
void gw_http_fair_transfer_end(struct gw_client *cl);

/* ---- the response ---- */

/* gw_resp_start - begin the response with status (100..599, not 1xx). */
void gw_resp_start(struct gw_req *req, int status);

/*
 * gw_resp_header - add a response header.  Returns 0, or ERR_INVAL if name or
 * value holds CR, LF or NUL (the header is dropped), ERR_TOOBIG once the handler's
 * headers pass 64 KiB.  Hop-by-hop headers
 * (Connection, Keep-Alive, Transfer-Encoding, Content-Length) are managed by
 * the server and ignored here.
 */
MUST_USE int gw_resp_header(struct gw_req *req, const char *name, const char *value);

/*
 * gw_resp_body_begin - end the head.  content_length >= 0 frames the body by
 * length; -1 means unknown (chunked for HTTP/1.1, close-delimited for 1.0).
 * For HEAD requests and 204/304, content_length is sent as the header and no
 * body may follow.
 */
void gw_resp_body_begin(struct gw_req *req, int64_t content_length);

/*
 * gw_resp_body_write - queue len body bytes (copied).
 * Returns 0; ERR_AGAIN when queued but the output buffer is above the
 * watermark (stop producing until on_output_drained); ERR_CLOSED if the
 * client is gone (on_abort follows from the loop, not from inside this call).
 */
MUST_USE int gw_resp_body_write(struct gw_req *req, const void *data, size_t len);

/* gw_resp_end - the response is complete.  req must not be used after this returns. */
void gw_resp_end(struct gw_req *req);

/*
 * gw_resp_abort - end the request by cutting the connection: what was queued
 * is flushed, but a chunked body gets no final chunk and a Content-Length body
 * stays short, so the client sees a broken response, never a complete-looking
 * one (e.g. the upstream failed mid-body).  Before any head was sent it
 * answers 502 instead.  req must not be used after this returns; on_abort is
 * not called.
 */
void gw_resp_abort(struct gw_req *req);

/* gw_resp_simple - a whole response with a body in one call (ends the response). */
void gw_resp_simple(struct gw_req *req, int status, const char *content_type, const void *body,
                    size_t len);

/* gw_resp_started - true once gw_resp_start was called. */
bool gw_resp_started(const struct gw_req *req);

/* ---- the heap under load (heap.c) ---- */

/*
 * gw_http_heap_tune - fix glibc's trim and mmap thresholds, and with more
 * than one event loop ([in] loops: gw_config_workers) one malloc arena for
 * every thread, so the idle trim reaches the worker loops' heaps.  Start-up,
 * once, before any other thread is started: a thread that has allocated
 * keeps the arena it has.
 */
void gw_http_heap_tune(uint32_t loops);

struct gw_http_heap_trim;

/*
 * gw_http_heap_trim_start - every second on base, hand the free heap back
 * (malloc_trim) when gw_http_heap_trim_due says so.  Returns the timer
 * (gw_http_heap_trim_free) or NULL (out of memory).
 */
struct gw_http_heap_trim *gw_http_heap_trim_start(struct event_base *base);

/*
 * gw_http_heap_trim_due - one tick's decision, given the requests parsed so
 * far and those in flight: true when none arrived since the last tick, none
 * is in flight, and some arrived since the heap was last handed back.  A
 * steady load never trims; an idle gateway trims once.
 */
bool gw_http_heap_trim_due(struct gw_http_heap_trim *t, uint64_t requests, uint64_t active);

/* gw_http_heap_trim_free - stop the timer and free.  NULL-safe. */
void gw_http_heap_trim_free(struct gw_http_heap_trim *t);

#endif
