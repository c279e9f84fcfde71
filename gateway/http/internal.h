/*
 * gateway/http/internal.h: internals of the HTTP server, shared by the room's
 * files (gateway/http/http.h lists them in the order they call each other).
 * Not for other modules: they use gateway/http/http.h.  Event-loop thread only.
 *
 * Ownership: a gw_server owns its listeners and connections; a gw_conn owns
 * its bufferevent, timers, parser, the header text of the request being
 * parsed, and at most one gw_req (the request in progress).  A gw_req borrows
 * its header strings from its gw_conn and owns its body buffer and its
 * response head.
 */
#ifndef GW_HTTP_INT_H
#define GW_HTTP_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <llhttp.h>

#include "common/buf.h"
#include "gateway/base/config.h"
#include "gateway/base/metrics.h"

#include "gateway/http/access.h"
#include "gateway/http/http.h"
#include "gateway/net/loopmsg.h"

struct bufferevent;
struct event;
struct event_base;
struct evbuffer;
struct evconnlistener;
struct gw_tls;

#define GW_HTTP_READ_MAX     16384         /* unparsed input kept per connection (read watermark) */
#define GW_HTTP_RESP_HEAD    65536         /* cap on one response head built by a handler */
#define GW_HTTP_LINGER_MS    2000          /* lingering close: keep reading this long after FIN */
#define GW_HTTP_LINGER_BYTES (1 << 20)     /* lingering close: or this many bytes */
#define GW_HTTP_ID_LEN       16            /* request id: hex digits */
#define GW_HTTP_ID_MAX       GW_REQ_ID_MAX /* a request id set by gw_req_set_id, at most */
#define GW_HTTP_ROUNDS       16            /* state-machine steps per callback (bounded work) */
#define GW_HTTP_BODY_READ    65536         /* direct socket read for a request body (plain only) */

/* Limits with their defaults applied (a zero in gw_config.limits means "default"). */
struct gw_http_limits {
    size_t max_header_bytes;     /* request line + headers (and, separately, trailers) */
    size_t max_headers;          /* header (and trailer) count */
    size_t max_url_bytes;        /* request target */
    uint32_t header_timeout_ms;  /* whole head, from its first byte (first request: from accept) */
    uint32_t body_timeout_ms;    /* no body progress while the server waits for the client */
    uint32_t idle_timeout_ms;    /* keep-alive idle between requests */
    uint32_t write_timeout_ms;   /* no output progress */
    size_t max_connections;      /* open client connections */
    size_t buffer_bytes;         /* request body buffer cap and output watermark */
    uint64_t discard_body_bytes; /* unread body read and dropped after the response */
    size_t max_conns_per_client; /* open connections from one client address */
    size_t max_xfers_per_client; /* forwarded requests in flight from one client address */
    uint32_t min_body_rate;      /* body bytes/s over each window while waiting; 0 = off */
    uint32_t min_body_rate_window_ms; /* that window */
};

#define GW_HTTP_CLIENT_BUCKETS 4096 /* hash buckets of the client-address table */

/*
 * One client address (the host part of the peer, without the port), shared
 * by its connections and by the upstream transfers it started; freed when the
 * last of them lets go.  Per-client fair use (DESIGN G10) counts here.
 * next, refs, nconns and nxfers are guarded by table->mu; addr and table never
 * change.
 */
struct gw_client {
    struct gw_fair_table *table; /* its table; kept alive by this entry */
    struct gw_client *next;      /* hash chain in table->buckets */
    size_t refs;                 /* connections + transfers holding it */
    size_t nconns;               /* open connections (of every server on the table) */
    size_t nxfers;               /* transfers counted by gw_http_fair_transfer_begin */
    char addr[64];               /* "ip" (the peer without its port), "ip6/64" for IPv6 */
};

/*
 * The client-address table (gateway/http/fair.c), one per server or shared by
 * the servers of several loops.  mu guards everything below it; held only for
 * a lookup and a count change.  Freed when refs and nclients are both zero.
 */
struct gw_fair_table {
    pthread_mutex_t mu;
    struct gw_client **buckets; /* owned; GW_HTTP_CLIENT_BUCKETS chains */
    size_t refs;                /* owners: its creator's, each server's */
    size_t nclients;            /* entries linked in buckets (each one held) */
};

/* A warning logged at most once a second, with the count of those not logged. */
struct gw_ratelog {
    uint64_t last_ms;      /* when the last line was logged */
    unsigned long skipped; /* occurrences since then */
};

/* Text and offsets of one header block (the head, or the trailers). */
struct gw_hdr_off {
    size_t name;      /* offset of the name in text */
    size_t name_len;  /* its length */
    size_t value;     /* offset of the value in text */
    size_t value_len; /* its length (trimmed) */
};

struct gw_hdr_list {
    struct buf text;        /* NUL-separated names and values; capped */
    struct gw_hdr_off *off; /* owned; off[0..n) */
    size_t n;               /* headers so far */
    size_t alloc;           /* entries allocated in off and view */
    struct gw_header *view; /* owned; pointers into text, built when the block ends */
    bool in_value;          /* the last callback was a value of off[n-1] */
    bool have_value;        /* the value of off[n-1] has started */
};

enum gw_resp_state {
    GW_RESP_NONE = 0,    /* nothing sent */
    GW_RESP_STARTED = 1, /* gw_resp_start called, head being built */
    GW_RESP_BODY = 2,    /* head written; body being written */
    GW_RESP_ENDED = 3,   /* complete (queued, maybe not flushed) */
};

enum gw_tkind {
    GW_TK_NONE = 0,   /* no timer */
    GW_TK_IDLE = 1,   /* waiting for the first byte of a request */
    GW_TK_HEAD = 2,   /* waiting for the rest of a head */
    GW_TK_BODY = 3,   /* waiting for request body bytes */
    GW_TK_LINGER = 4, /* lingering close */
};

#define GW_HTTP_MAX_LISTEN ((size_t)2 * GW_CONFIG_MAX_LISTEN) /* listen + admin_listen */

struct gw_conn;

/* gw_http_conn_fn - an operation on one connection (gw_server's shed). */
typedef void gw_http_conn_fn(struct gw_conn *c);

struct gw_server {
    struct event_base *base;     /* borrowed */
    const struct gw_config *cfg; /* borrowed; for requests that start from now on */
    gw_request_fn *on_request;   /* the handler */
    void *arg;                   /* its argument */
    struct evconnlistener *lev[GW_HTTP_MAX_LISTEN]; /* owned listeners (NULL once drained):
                                                       cfg->listen's, then cfg->admin_listen's */
    struct gw_tls *tls[GW_HTTP_MAX_LISTEN];         /* owned TLS contexts, NULL for plain */
    uint16_t port[GW_HTTP_MAX_LISTEN];              /* bound ports */
    size_t nlisten;                                 /* listeners in use */
    size_t ns3;                                     /* lev[0..ns3) are S3 listeners, the rest
                                                       admin listeners */
    bool accepting_paused;                          /* listeners disabled by max_connections */
    size_t loops;               /* servers sharing limits.max_connections (>= 1) */
    struct gw_fair_table *fair; /* one reference; the client-address table (maybe shared) */
    TAILQ_HEAD(gw_idle_list, gw_conn) idle; /* connections with nothing in progress, oldest first */
    struct gw_ratelog log_conns;            /* connections refused: one client over its share */
    struct gw_ratelog log_xfers;            /* transfers refused: one client over its share */
    struct gw_ratelog log_shed;             /* idle connections closed at the connection limit */
    struct gw_ratelog log_slow;             /* bodies cut under limits.min_body_rate */
    bool draining;                          /* gw_server_drain was called */
    void (*drain_done)(void *arg);          /* called once when the last connection closes */
    void *drain_arg;                        /* its argument */
    TAILQ_HEAD(gw_conn_list, gw_conn) conns; /* every open connection */
    size_t nconns;                           /* length of conns */
    size_t nrelayed;       /* of them, relayed (gw_http_conn_relay): the drain waits for them, but
                              they count in no limit (their client's connection does, on its loop) */
    gw_http_conn_fn *shed; /* gw_http_conn_free, installed by gw_server_new: fair.c closes
                              an idle connection through it, not by calling up into server.c */
    /* listen.c's admission and attach of an accepted socket, installed by gw_server_new:
     * the hand-out (gate.c) serves a connection through it on the loop it chose */
    void (*attach)(struct gw_server *srv, int fd, const char *peer, size_t idx);
    int64_t date_sec; /* second of the cached Date value */
    char date[40];    /* cached IMF-fixdate for the Date header */
    char *rbuf;       /* owned; GW_HTTP_BODY_READ bytes for direct body reads, or NULL until used */
    struct gw_handout *handout;     /* borrowed: "accept": "acceptor" (handout.c), or NULL */
    struct gw_handout_slot *slot;   /* this server's slot in it */
    struct gw_handoff *parked;      /* the acceptor's: accepted while no loop had room, oldest
                                       first (its listeners are paused meanwhile) */
    struct gw_handoff *parked_last; /* the newest of them (NULL when none) */
    size_t nparked;                 /* their count */
    struct event *flush;            /* the acceptor's: owned; its turn, run from its loop */
};

/* An accepted connection the acceptor parked, or handed to another loop (gate.c). */
struct gw_handoff {
    struct gw_loopmsg m;          /* posted to the chosen loop's queue */
    struct gw_handoff *next;      /* in the acceptor's parked list */
    struct gw_handout_slot *slot; /* the loop it was handed to */
    int fd;                       /* owned */
    size_t idx;                   /* its listener */
    char peer[64];                /* "ip:port" */
};

/*
 * One loop's slot in the hand-out (gateway/http/handout.c).  The loop's own
 * thread stores open and idle (gw_http_accept_gate, whenever they change);
 * the acceptor adds to pending when it hands a connection over and the loop
 * takes it off when it has taken the connection in (counted in open by then)
 * or dropped it.  One cache line each: the loops write their own only.
 */
struct gw_handout_slot {
    struct gw_server *srv;        /* its server (its loop's thread only) */
    struct gw_loopq *q;           /* its loop's queue: where the acceptor posts connections */
    _Atomic size_t open;          /* srv->nconns */
    _Atomic uint64_t oldest_idle; /* idle_at of the first in srv->idle; UINT64_MAX: none idle */
    _Atomic size_t pending;       /* handed over, not yet taken in */
} __attribute__((aligned(64)));

struct gw_handout {
    struct gw_handout_slot *slot; /* slot[0..n): slot 0 the acceptor's */
    size_t cap;                   /* slots allocated */
    size_t n;                     /* servers joined (the control thread, before the loops run) */
    size_t next;                  /* the acceptor's: where the next tie-break starts */
    struct gw_loopq *ctlq;        /* the acceptor's loop's queue */
    atomic_bool paused;           /* the acceptor paused its listeners: no loop had room */
    /* the process's order of connections going idle (gw_http_handout_idle_seq), on a line
     * of its own: the loops' clocks tick too coarsely to order them */
    _Atomic uint64_t idle_seq __attribute__((aligned(64)));
};

/* gw_http_handout_idle_seq - the next place in the order connections went idle on any
 * loop of h (from 1; a relaxed fetch-and-add, once a connection goes idle). */
uint64_t gw_http_handout_idle_seq(struct gw_handout *h);

/*
 * gw_http_handout_join - srv (created on the control thread, before the loops
 * run) takes the next slot of h, for connections posted to q.
 * Returns 0, or ERR_NOMEM (more servers than gw_handout_new's loops).
 */
MUST_USE int gw_http_handout_join(struct gw_handout *h, struct gw_server *srv, struct gw_loopq *q);

/*
 * gw_http_handout_pick - the acceptor's choice for the next connection: of
 * the slots below share (open + pending < share), the one with the fewest
 * (ties taken in turn); else the one whose oldest idle connection is the
 * oldest of all (it sheds that one, so the process sheds its idle
 * connections oldest first, as one loop does); else NULL: no loop has room.
 * Acceptor's thread.
 */
struct gw_handout_slot *gw_http_handout_pick(struct gw_handout *h, size_t share);

struct gw_conn {
    struct gw_server *srv;          /* owner */
    TAILQ_ENTRY(gw_conn) link;      /* in srv->conns */
    TAILQ_ENTRY(gw_conn) idle_link; /* in srv->idle while is_idle */
    bool is_idle;                /* in srv->idle: nothing in progress, or lingering: may be shed */
    bool idle_linger;            /* in srv->idle as a lingering connection (at its head) */
    uint64_t idle_at;            /* its place in the order it joined srv->idle, across loops
                                    (gw_http_handout_idle_seq; 0 lingering: shed first) */
    struct gw_client *client;    /* its address's entry (one reference), or NULL */
    uint64_t rate_since;         /* start of the current min_body_rate window (mono ms) */
    uint64_t rate_bytes;         /* req->body_received at rate_since */
    struct bufferevent *bev;     /* owned; closes the socket on free */
    struct event *timer;         /* owned; idle/head/body/linger deadline */
    struct event *kick;          /* owned; runs the state machine from the loop */
    struct event *rev;           /* owned; reads a direct connection (bevio.c), else NULL */
    llhttp_t parser;             /* request parser (strict: no lenient flags) */
    const char *exec_base;       /* start of the bytes given to the current llhttp_execute */
    const char *exec_end;        /* and its end */
    const char *val_end;         /* end of the last header value span in this execute */
    bool val_tail;               /* that span ended at the end of its execute's bytes */
    struct gw_hdr_list head;     /* headers of the request being parsed */
    struct gw_hdr_list trail;    /* trailers of a chunked body */
    size_t url_off;              /* offset of the target in head.text */
    size_t url_len;              /* its length */
    size_t head_bytes;           /* bytes of the current head consumed so far */
    struct gw_http_limits lim;   /* limits for the current request */
    const struct gw_config *cfg; /* config for the current request */
    struct gw_req *req;          /* the request in progress, or NULL */
    int perr;                    /* last llhttp_execute result */
    int err_status;              /* a refusal decided in a parser callback: status */
    const char *err_code;        /* and its S3 code */
    const char *err_msg;         /* and its message */
    bool paused;                 /* llhttp returned HPE_PAUSED: resume before feeding */
    bool head_ready;             /* paused at on_headers_complete: deliver the request */
    bool in_body;                /* the head of the current message is complete */
    bool head_started;           /* a byte of the next head has arrived */
    bool closing;                /* no more requests: close once the output is flushed */
    bool dead;                   /* free at the end of the current callback */
    bool peer_eof;               /* the client half-closed (EOF) */
    bool eof_pending;            /* EOF seen, not yet acted on */
    bool lingering;              /* FIN sent; discarding input before closing */
    bool in_process;             /* inside conn_process (re-entrancy guard) */
    bool is_tls;                 /* accepted on a TLS listener */
    enum gw_listener listener;   /* which kind of listener accepted it */
    bool direct;                 /* a plain socket: read by rev, written by gw_http_flush */
    enum gw_tkind tkind;         /* what the timer is armed for */
    uint64_t deadline;           /* when (mono ms), 0 if not armed */
    uint64_t since;              /* start of the current wait (mono ms) */
    uint64_t lingered;           /* bytes discarded while lingering */
    unsigned long nrequests;     /* requests completed on this connection */
    char peer[64];               /* "ip:port" */
    bool relayed;                /* a worker loop's request served through gateway/http/relay.c:
                                    never idle (never shed), holds no connection count of its
                                    address, writes no access-log line and counts no request
                                    (the worker's request is the one logged and counted), and
                                    its EOF is a hang-up (the relay never half-closes) */
    char relay_id[GW_HTTP_ID_MAX + 1]; /* relayed: the worker's request id, its request's id */
};

struct gw_req {
    struct gw_conn *conn;              /* the connection; outlives the req */
    const struct gw_config *cfg;       /* config in force for this request (borrowed) */
    const struct gw_config *write_cfg; /* gw_req_write_begin's: counted in flight under it */
    unsigned write_slot;               /* ... in this slot (gw_inflight_slot of its bucket) */
    const struct gw_req_ops *ops;      /* handler callbacks, NULL until set */
    void *ops_arg;                     /* their argument */
    char id[GW_HTTP_ID_MAX + 1];       /* request id (gw_http_new_id's, or gw_req_set_id's) */
    const char *method;                /* into conn->head.text */
    const char *target;                /* into conn->head.text */
    const char *path;                  /* into conn->head.text */
    const char *query;                 /* into conn->head.text */
    int version_minor;                 /* 0 or 1 */
    bool keep_alive;                   /* the client allows another request on this connection */
    bool expect_continue;              /* Expect: 100-continue */
    bool sent_100;                     /* "100 Continue" was queued */
    bool is_head;                      /* method HEAD */
    bool want_close;                   /* gw_req_set_close or a server decision */
    int64_t content_length;            /* -1 chunked, else the declared length */
    bool body_started;                 /* gw_req_body_start was called */
    bool body_done;                    /* on_message_complete: every body byte received */
    bool body_news;                    /* on_body_ready is due */
    int body_err;                      /* ERR_INVAL after bad framing, else 0 */
    bool aborted;                      /* on_abort was called: the handler is gone */
    struct evbuffer *body;             /* owned; decoded body bytes not yet read */
    uint64_t body_received;            /* decoded body bytes received */
    uint64_t discarded;                /* input bytes discarded after the response ended */
    enum gw_resp_state resp;           /* response progress */
    int status;                        /* response status */
    struct buf resp_head;              /* status line + handler headers, until body_begin */
    bool has_id_hdr;                   /* the handler set x-amz-request-id */
    bool has_server_hdr;               /* the handler set Server */
    bool has_date_hdr;                 /* the handler set Date */
    bool resp_chunked;                 /* body framed with chunked coding */
    bool resp_no_body;                 /* HEAD, 204 or 304: no body bytes */
    int64_t resp_length;               /* declared Content-Length, -1 if none */
    uint64_t resp_sent;                /* body bytes queued */
    bool want_drain;                   /* on_output_drained is due once below half the cap */
    struct gw_metrics_req acct;        /* its metrics accounting, all of it (base/metrics.h) */

    struct gw_access access; /* what its access-log line says (gateway/http/access.h) */
};

/* ---- gateway/http/access.c ---- */

/* gw_http_access_request - queue req's access-log line (the request is ending). */
void gw_http_access_request(struct gw_req *req);

/* gw_http_access_refused - the line of a head refused before a request existed. */
void gw_http_access_refused(struct gw_conn *c, const char *id, int status, const char *code);

/* ---- gateway/http/server.c ---- */

/*
 * gw_http_body_discardable - after its response, the unread body of req can be
 * read and dropped within limits.discard_body_bytes, so the client finishes
 * sending and reads the response (S3 reads a refused body too), and the
 * connection may even stay open.  False when the client waits for a 100 it
 * will not get (it may never send the body), when the declared length is past
 * the bound, or when the body is already complete.
 */
bool gw_http_body_discardable(const struct gw_req *req);

/* gw_http_conn_kick - run the connection's state machine from the event loop soon (conn_io.c). */
void gw_http_conn_kick(struct gw_conn *c);

/* gw_http_conn_free - close c now and free it (its request gets on_abort); c must not be
 * inside its own state machine (a callback of another connection or the listener). */
void gw_http_conn_free(struct gw_conn *c);

/* gw_http_resume_accepting - enable the listeners paused at limits.max_connections (gate.c). */
void gw_http_resume_accepting(struct gw_server *srv);

/* gw_http_pause_accepting - disable the listeners (gate.c). */
void gw_http_pause_accepting(struct gw_server *srv);

/*
 * gw_http_accept_gate - accept while there is room: below srv's share of limits.max_connections,
 * or an idle connection to shed for the next one.  Otherwise pause the listeners
 * (new connections wait in the kernel's backlog) until a connection closes or
 * turns idle.  In gate.c, which calls only gw_http_server_limits in the room.
 */
void gw_http_accept_gate(struct gw_server *srv);

/* gw_http_handout_start - the acceptor's (srv in slot 0 of its hand-out) turn event;
 * nothing for the other loops.  Returns 0 or ERR_NOMEM. */
MUST_USE int gw_http_handout_start(struct gw_server *srv);

/*
 * gw_http_handout_give - the acceptor accepted fd (owned) from peer on its S3
 * listener idx (from its listener's callback): hand it to the loop with room
 * and the fewest connections (gw_http_handout_pick), serving it here if that
 * is this loop, or park it until a loop has room; then pause or resume the
 * listeners (gate.c).
 */
void gw_http_handout_give(struct gw_server *srv, int fd, const char *peer, size_t idx);

/* gw_http_handout_stop - close the acceptor's parked connections and free its turn event
 * (drain, free; any server). */
void gw_http_handout_stop(struct gw_server *srv);

/* gw_http_now_ms - the coarse monotonic clock in ms, for the connections' timeouts (conn_io.c). */
uint64_t gw_http_now_ms(void);

/*
 * gw_http_conn_adopt - serve HTTP on bev (owned from now on: freed with the
 * connection), as if accepted (fair-use admission included); used by the fuzz
 * target and tests.
 * [in] peer  "ip:port" (copied).  Returns 0, or (bev freed) ERR_NOMEM,
 * ERR_DENIED (peer's address over limits.max_connections_per_client) or
 * ERR_AGAIN (at limits.max_connections with no idle connection to shed).
 */
MUST_USE int gw_http_conn_adopt(struct gw_server *srv, struct bufferevent *bev, const char *peer,
                                bool is_tls);

/* gw_http_clients_open - srv's client connections, for limits.max_connections
 * and the hand-out: its connections less the relayed ones. */
static inline size_t
gw_http_clients_open(const struct gw_server *srv)
{
    return srv->nconns - srv->nrelayed;
}

/*
 * gw_http_conn_attach - serve bev (owned) for the client cl (its reference and
 * connection count, owned), admitted already (gateway/http/listen.c's accept,
 * gw_http_conn_adopt).  Returns 0, or ERR_NOMEM with bev freed and cl put.
 */
MUST_USE int gw_http_conn_attach(struct gw_server *srv, struct bufferevent *bev, const char *peer,
                                 bool is_tls, enum gw_listener listener, struct gw_client *cl);

/*
 * gw_http_conn_relay - serve bev (owned) as a relayed connection (gw_conn's
 * relayed) for a request a worker loop took from its client: peer, is_tls,
 * listener and id are that client's and request's (copied).  No admission:
 * the client was admitted on its worker; the connection holds a reference to
 * its address's entry (transfers count there) but no connection count.
 * Returns 0, or ERR_NOMEM with bev freed.
 */
MUST_USE int gw_http_conn_relay(struct gw_server *srv, struct bufferevent *bev, const char *peer,
                                bool is_tls, enum gw_listener listener, const char *id);

/* ---- gateway/http/fair.c: per-client shares, idle shedding, minimum body rate ---- */

/* gw_http_fair_init / _cleanup - srv's idle list and client-address table: shared (a
 * reference taken on it) or, with shared NULL, a private one.  Cleanup drops srv's reference:
 * entries still held by transfers keep the table until they are released.  init returns 0
 * or ERR_NOMEM. */
MUST_USE int gw_http_fair_init(struct gw_server *srv, struct gw_fair_table *shared);
void gw_http_fair_cleanup(struct gw_server *srv);

/*
 * gw_http_fair_admit - a connection from peer ("ip:port") was accepted: make
 * room for it.  Returns the client entry (a reference and a connection
 * counted, given back by gw_http_fair_conn_end), or NULL to refuse it (its
 * address already holds limits.max_connections_per_client on every server
 * of the table, or out of memory; counted and logged).  At lim->max_connections
 * (this server's share: gw_http_server_limits) the oldest idle connection is
 * closed first (counted, logged); with none, NULL as well.
 * [out] full  true when refused for the global limit (the caller pauses accepting).
 */
struct gw_client *gw_http_fair_admit(struct gw_server *srv, const char *peer,
                                     const struct gw_http_limits *lim, bool *full);

/* gw_http_fair_conn_end - the connection admitted with cl closed: uncount it and drop its
 * reference (NULL-safe; any thread). */
void gw_http_fair_conn_end(struct gw_client *cl);

/* gw_http_fair_relay_client - peer's entry (one reference, and one connection counted until
 * gw_http_fair_relay_attached; no limit applied: see gw_http_conn_relay), or NULL (out of
 * memory). */
struct gw_client *gw_http_fair_relay_client(struct gw_server *srv, const char *peer);

/* gw_http_fair_relay_attached - the relayed connection of cl is attached: it counts no
 * connection from now on (any thread). */
void gw_http_fair_relay_attached(struct gw_client *cl);

/* gw_http_fair_relay_end - a relayed connection closed: drop its reference (NULL-safe; any
 * thread). */
void gw_http_fair_relay_end(struct gw_client *cl);

/* gw_http_fair_idle - keep c's place in the idle list in step with its state. */
void gw_http_fair_idle(struct gw_conn *c);

/*
 * gw_http_fair_rate_check - the min_body_rate window of c's request ended
 * (now >= rate_since + window): true if the client sent enough in it (a new
 * window starts), false if it must be cut (counted and logged).
 */
bool gw_http_fair_rate_check(struct gw_conn *c, uint64_t now);

/* ---- gateway/http/parse.c ---- */

/* The llhttp callbacks; parser.data is the gw_conn. */
extern const llhttp_settings_t gw_http_settings;

/* gw_http_limits_from - cfg's limits with defaults for zeros. */
void gw_http_limits_from(struct gw_http_limits *l, const struct gw_config *cfg);

/* gw_http_server_limits - srv's limits: gw_http_limits_from(srv->cfg) with max_connections
 * split among srv->loops servers (rounded up); the per-client shares stay process-wide. */
void gw_http_server_limits(struct gw_http_limits *l, const struct gw_server *srv);

/* gw_http_hdr_list_init / _cleanup - an empty header list capped at cap bytes of text. */
void gw_http_hdr_list_init(struct gw_hdr_list *h, size_t cap);
void gw_http_hdr_list_cleanup(struct gw_hdr_list *h);

/*
 * gw_http_refuse - record a refusal (first one wins) for the error response.
 * Returns HPE_USER, for a parser callback to return.
 */
int gw_http_refuse(struct gw_conn *c, int status, const char *code, const char *msg);

/*
 * gw_http_feed - feed at most max bytes of the connection's input to llhttp,
 * stopping at a pause or an error.  Returns the bytes consumed (drained from
 * the input); c->perr holds llhttp's result, c->paused is set on HPE_PAUSED.
 */
size_t gw_http_feed(struct gw_conn *c, size_t max);

/*
 * gw_http_feed_mem - feed data[0..len) (bytes read from the socket, not via
 * the bufferevent) to a parser that is not paused, stopping at a pause or an
 * error.  Returns the bytes consumed; the caller keeps the rest as input.
 * c->perr as for gw_http_feed.
 */
size_t gw_http_feed_mem(struct gw_conn *c, const char *data, size_t len);

/*
 * gw_http_req_new - a request for the head just parsed (paused at
 * on_headers_complete).  Returns it (owned by c), or NULL when out of memory.
 */
struct gw_req *gw_http_req_new(struct gw_conn *c);

/* gw_http_req_free - free req and its buffers.  NULL-safe. */
void gw_http_req_free(struct gw_req *req);

/* ---- gateway/http/resp.c ---- */

/*
 * gw_http_send_error - queue a whole S3-style XML error response that ends
 * the connection (Connection: close) and mark the connection closing.
 * req may be NULL (errors before a request exists); if not, its response is
 * marked ended.  Only if no response byte was queued for req.
 */
void gw_http_send_error(struct gw_conn *c, struct gw_req *req, int status, const char *code,
                        const char *msg);

/* gw_http_send_continue - queue "HTTP/1.1 100 Continue". */
void gw_http_send_continue(struct gw_req *req);

/*
 * gw_http_new_id - write a fresh request id (GW_HTTP_ID_LEN hex digits + NUL)
 * into id.  Any thread: ids are distinct across all the process's loops.
 */
void gw_http_new_id(char id[GW_HTTP_ID_LEN + 1]);

/* gw_http_output_len - bytes queued on the connection's output (conn_io.c). */
size_t gw_http_output_len(const struct gw_conn *c);

/*
 * gw_http_flush (conn_io.c) - write c's queued output to its socket now (plain
 * connections; on TLS ones the bufferevent writes).  Returns true when there
 * was output and all of it left.  Calls nothing back: a write error is
 * reported later, through on_event.
 */
bool gw_http_flush(struct gw_conn *c);

#endif
