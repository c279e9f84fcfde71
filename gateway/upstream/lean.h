/*
 * gateway/upstream/lean.h: internals shared by the lean engine's files:
 * gateway/upstream/lean.c (transfers, the connection pool, the wait queue,
 * timers, the API), gateway/upstream/lean_conn.c (one connection: connect,
 * request out, response in through llhttp) and gateway/upstream/lean_tls.c
 * (the OpenSSL context and TLS bufferevents).  Not for other modules: they
 * use gateway/upstream/upstream.h.
 *
 * Event-loop thread only.  The re-entrancy rule: the caller's callbacks run
 * only from an entry point of ours (a bufferevent, timer or kick callback)
 * with x->busy set; whatever ends a transfer there only records it
 * (lean_xfer_end), and lean_xfer_settle, called when the entry point
 * unwinds, reports it and frees.  Resumes and starts never run a callback
 * themselves: they activate x->kick.  So the caller's callbacks never nest,
 * and a struct is never freed under a frame that still uses it.
 */
#ifndef GW_UPSTREAM_LEAN_H
#define GW_UPSTREAM_LEAN_H

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <llhttp.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "common/buf.h"
#include "gateway/upstream/engine.h"
#include "gateway/upstream/upmsg.h"

struct evdns_base;

#define LEAN_SEND_WINDOW ((size_t)256 * 1024) /* request bytes queued on a connection, at most */
#define LEAN_SEND_LOW    ((size_t)64 * 1024)  /* pull more request body below this */
#define LEAN_READ_HIGH   ((size_t)256 * 1024) /* response bytes read ahead, at most */
#define LEAN_PULL_MAX    ((size_t)64 * 1024)  /* bytes asked of read_body per call */
#define LEAN_IO_MAX      ((size_t)128 * 1024) /* bytes per read or write system call, at most */

/* Where a transfer goes: the pool's key (scheme, host, port). */
#define LEAN_HOST_MAX 256 /* a host name (253 at most in DNS) or address, NUL included */

struct lean_target {
    char host[LEAN_HOST_MAX]; /* an IPv6 literal without its brackets */
    uint16_t port;
    bool tls;
};

/* One connection to an origin. */
struct lean_conn {
    struct gw_lean *up;          /* owner */
    struct bufferevent *bev;     /* the socket (a TLS filter over it for https) */
    struct event *ctimer;        /* connect_timeout_ms, until connected */
    struct event *rev;           /* plain TCP, once connected: our reads (see lean_conn.c) */
    struct lean_target t;        /* its origin */
    llhttp_t parser;             /* the response being read (data = this conn) */
    struct gw_lean_xfer *x;      /* the transfer on it; NULL while idle */
    TAILQ_ENTRY(lean_conn) link; /* in up->idle while idle */
    int err_what;                /* BEV_EVENT_* flags of a failure seen, 0 if none */
    bool connected;              /* TCP (and TLS) are up */
    bool reused;                 /* a transfer completed on it before */
    bool idle;                   /* on up->idle */
    bool eof;                    /* the peer closed (or failed); input may still hold bytes */
    bool write_failed;           /* sending failed; the answer may still be read */
    bool keep_alive;             /* the last response allows another on this connection */
    bool final_head;             /* llhttp completed a final (>= 200) head */
    bool parse_owed;             /* on_body paused llhttp: run it once more, even on no input */
};

/* One transfer (the caller's struct gw_xfer). */
struct gw_lean_xfer {
    struct gw_xfer pub;                  /* first: the engine tag */
    struct gw_lean *up;                  /* owner */
    struct lean_conn *c;                 /* its connection; NULL while it waits for one */
    TAILQ_ENTRY(gw_lean_xfer) link;      /* in up->active */
    TAILQ_ENTRY(gw_lean_xfer) wait_link; /* in up->waiting while waiting */
    struct gw_xfer_cbs cbs;              /* copied at start */
    void *arg;                           /* the caller's argument for cbs */
    struct lean_target t;                /* where it goes */
    struct buf req;                      /* the request head, ready to send */
    struct gw_upmsg_head head;           /* the response head being collected */
    struct event *timer;                 /* inactivity (opts.timeout_ms); in x's allocation */
    struct event *kick;                  /* deferred work: send, buffered input, settle; the same */
    int64_t body_length;                 /* request body bytes, -1 for none */
    uint64_t body_sent;                  /* bytes read_body handed over */
    uint64_t last_progress_ms;           /* clock_coarse_ms() when a byte last moved */
    int busy;                            /* inside one of our entry points */
    int end_err;                         /* how it ended (valid when ended) */
    bool ended;                          /* lean_xfer_end ran: report at settle */
    bool connect_failed;                 /* it ended because its connection never came up */
    bool waiting;                        /* on up->waiting */
    bool head_sent;                      /* the request head is on the connection */
    bool body_done;                      /* every body byte is on the connection */
    bool send_paused;                    /* read_body said ERR_AGAIN */
    bool recv_paused;                    /* on_body said ERR_AGAIN */
    bool head_done;                      /* on_head was called */
    bool complete;                       /* the whole response was read */
    bool got_bytes;                      /* a response byte arrived on this connection */
    bool retried;                        /* already moved to a new connection once */
    bool read_only;                      /* GET or HEAD: may be sent again (see lean.c "Retry") */
    bool is_head;                        /* a HEAD request: the response has no body */
    bool no_reuse;                       /* close the connection afterwards */
    bool cancelled;                      /* gw_upstream_xfer_cancel ran: no callback may follow */
    bool finishing;                      /* on_done is running */
};

TAILQ_HEAD(lean_xfer_list, gw_lean_xfer);
TAILQ_HEAD(lean_conn_list, lean_conn);

struct gw_lean {
    struct gw_upstream pub;        /* first: the engine tag, base, opts */
    struct evdns_base *dns;        /* for host names; made on first use */
    void *ssl_ctx;                 /* SSL_CTX * (lean_tls.c) */
    struct lean_xfer_list active;  /* started, not yet reported or cancelled */
    struct lean_xfer_list waiting; /* waiting for a connection (max_connections) */
    struct lean_conn_list idle;    /* open, no transfer; newest first */
    size_t nconns;                 /* open connections, idle ones included */
    size_t nidle;                  /* entries in idle */
    struct gw_upstream_cap *cap;   /* opts.cap: max_connections for the process, or NULL */
    uint32_t cap_slot;             /* this client's member number in cap */
    uint32_t spare;                /* slots other loops handed to this one, not yet used */
    bool handing;                  /* a closing connection's slot goes to another loop */
};

/* ---- lean.c ---- */

/* x->last_progress_ms = now: a byte moved. */
void lean_xfer_touch(struct gw_lean_xfer *x);

/*
 * lean_xfer_end - record that x is over with err (0: complete response);
 * the first call counts.  connect_failed: its connection never came up
 * (for the unreachable streak).  Reported by lean_xfer_settle.
 */
void lean_xfer_end(struct gw_lean_xfer *x, int err, bool connect_failed);

/*
 * lean_xfer_settle - once an entry point's work on x is done (x->busy back
 * to 0): free a cancelled x, retry or report an ended one (on_done runs
 * here), and hand freed connections to waiting transfers.
 */
void lean_xfer_settle(struct gw_lean_xfer *x);

/* lean_kick - run x's deferred work (send, buffered input, settle) from the loop, soon. */
void lean_kick(struct gw_lean_xfer *x);

/*
 * lean_slot_give - the slot taken for a connection that was never opened
 * goes back (lean_conn_open's early failures; lean_conn_gone for the rest).
 */
void lean_slot_give(struct gw_lean *up);

/* lean_conn_gone - c is being freed: forget it in the pool (lean.c keeps the counts). */
void lean_conn_gone(struct lean_conn *c);

/* ---- lean_conn.c ---- */

/*
 * lean_conn_open - start connecting to t (a copy is kept), in a slot the
 * caller took (lean.c's slot_take).  Returns the connection (its outcome
 * arrives through its events; closing it gives the slot back), or NULL
 * (logged; the slot given back).
 */
struct lean_conn *lean_conn_open(struct gw_lean *up, const struct lean_target *t);

/* lean_conn_close - close c now (unsent bytes are dropped) and free it.  NULL-safe. */
void lean_conn_close(struct lean_conn *c);

/* lean_conn_attach - put x on c (idle or new) and reset c's parser for x's response. */
void lean_conn_attach(struct lean_conn *c, struct gw_lean_xfer *x);

/* lean_conn_reading - read c's socket (on) or stop (off: the caller paused receiving). */
void lean_conn_reading(struct lean_conn *c, bool on);

/* lean_conn_park - c's transfer is done and c may serve another: watch it while idle. */
void lean_conn_park(struct lean_conn *c);

/*
 * lean_conn_pump - queue x's request head (once) and as much body as the
 * send window takes; calls read_body.  Inside an entry point only.
 */
void lean_conn_pump(struct gw_lean_xfer *x);

/*
 * lean_conn_input - parse buffered response bytes for x until they run out,
 * x pauses or x ends; calls on_head and on_body.  Inside an entry point only.
 */
void lean_conn_input(struct gw_lean_xfer *x);

/* ---- lean_tls.c ---- */

/*
 * lean_tls_new_ctx - the client context: peer verification against ca_file
 * (NULL: the system's CAs) when verify.  Returns it (SSL_CTX *) or NULL (logged).
 */
void *lean_tls_new_ctx(const char *ca_file, bool verify);

/* lean_tls_free_ctx - free a context from lean_tls_new_ctx.  NULL-safe. */
void lean_tls_free_ctx(void *ctx);

/*
 * lean_tls_bev - a TLS bufferevent (client, connecting) on a new socket for
 * host: SNI and, when verify, the host name (or IP address) checked against
 * the certificate.  Returns it or NULL (logged).
 */
struct bufferevent *lean_tls_bev(void *ctx, struct event_base *base, const char *host, bool verify);

/*
 * lean_bev_close - free a connection's bufferevent (from lean_tls_bev when
 * tls, else a socket bufferevent made without BEV_OPT_CLOSE_ON_FREE) and
 * close its socket before returning.  libevent 2.1 would close it in a
 * finalizer, a turn of the loop later, after the caller gave its slot in the
 * process's cap to another loop (DESIGN "The upstream pool across loops").
 */
void lean_bev_close(struct bufferevent *bev, bool tls);

/* lean_tls_error - text for the TLS failure queued on bev, in tmp; NULL if none is queued. */
const char *lean_tls_error(struct bufferevent *bev, char *tmp, size_t len);

/* The engine's side of upstream.h's calls (its operations table, lean.c). */
MUST_USE int gw_lean_xfer_start(struct gw_lean *up, const struct gw_xfer_req *rq,
                                const struct gw_xfer_cbs *cbs, void *arg,
                                struct gw_lean_xfer **out);
void gw_lean_resume_send(struct gw_lean_xfer *x);
void gw_lean_resume_recv(struct gw_lean_xfer *x);
void gw_lean_xfer_cancel(struct gw_lean_xfer *x);
uint64_t gw_lean_body_sent(const struct gw_lean_xfer *x);
void gw_lean_conns(const struct gw_lean *up, uint64_t *open, uint64_t *idle);
void gw_lean_free(struct gw_lean *up);

#endif
