/*
 * gateway/upstream/curl.h: the curl engine's internals, shared by
 * gateway/upstream/curl.c (the libcurl multi handle on libevent: socket and
 * timer glue, deferred work, transfer objects and their lifecycle, the
 * engine's operations table) and gateway/upstream/curl_xfer.c (per-transfer
 * libcurl callbacks, request setup, pause/resume).  Not for other modules:
 * they use gateway/upstream/upstream.h.
 *
 * Event-loop thread only.  The re-entrancy and timeout rules are described at
 * the top of gateway/upstream/curl.c; in short, nothing here that touches the multi
 * handle may run while up->depth > 0: such work is queued on up->pending and
 * applied by gw_curl_after().  Every pointer is borrowed; struct
 * gw_xfer objects are owned by their struct gw_curl.
 */
#ifndef GW_UPSTREAM_CURL_H
#define GW_UPSTREAM_CURL_H

#include <curl/curl.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "common/buf.h"
#include "common/clock.h"
#include "gateway/upstream/engine.h"
#include "gateway/upstream/upmsg.h"
#include "gateway/upstream/upstream.h"

struct sock; /* one socket libcurl asked us to watch (gateway/upstream/curl.c) */

struct gw_curl_xfer {
    struct gw_xfer pub;                     /* first: the engine tag, base, opts (engine.h) */
    struct gw_curl *up;                     /* owner */
    CURL *easy;                             /* kept across uses if reusable; CURLOPT_PRIVATE here */
    struct event *idle_ev;                  /* inactivity timer (opts.timeout_ms) */
    TAILQ_ENTRY(gw_curl_xfer) link;         /* in up->active or up->idle */
    TAILQ_ENTRY(gw_curl_xfer) pending_link; /* in up->pending while deferred work waits */
    struct gw_xfer_cbs cbs;                 /* copied at start */
    void *arg;                              /* the caller's argument for cbs */
    int64_t body_length;                    /* request body bytes, -1 for none */
    uint64_t body_sent;                     /* bytes read_body handed to libcurl */
    uint64_t last_progress_ms;              /* clock_mono_ms() when a byte last moved */
    int cb_err;                             /* error from a callback (or our parser) ending it */
    int fail_err;                           /* deferred failure to report through on_done */
    bool in_multi;                          /* added to up->multi */
    bool send_paused;                       /* we paused sending (read_body said ERR_AGAIN) */
    bool recv_paused;                       /* we paused receiving (on_body said ERR_AGAIN) */
    bool pause_dirty;                       /* pause state changed inside libcurl: apply later */
    bool add_pending;                       /* started inside libcurl: add to the multi later */
    bool cancelled;               /* gw_upstream_xfer_cancel ran; no callback may follow */
    bool pending;                 /* on up->pending */
    bool head_done;               /* on_head was called */
    bool finishing;               /* on_done is running */
    bool reusable;                /* libcurl completed it (CURLE_OK): easy may be parked */
    struct gw_upmsg_head head;    /* the response head being collected */
    struct buf rqbuf;             /* request header strings, NUL-separated */
    struct curl_slist *slist;     /* nodes pointing into rqbuf, for CURLOPT_HTTPHEADER */
    size_t slist_cap;             /* nodes allocated */
    char errbuf[CURL_ERROR_SIZE]; /* CURLOPT_ERRORBUFFER */
};

TAILQ_HEAD(xfer_list, gw_curl_xfer);

struct gw_curl {
    struct gw_upstream pub;           /* first: the engine tag, base, opts (engine.h) */
    CURLM *multi;                     /* owns the connection cache */
    struct event *timer;              /* CURLMOPT_TIMERFUNCTION's timer */
    bool curl_inited;                 /* curl_global_init succeeded */
    struct xfer_list active;          /* started, not yet finished or cancelled */
    struct xfer_list idle;            /* parked for reuse */
    struct xfer_list pending;         /* deferred work for after_curl */
    size_t nidle;                     /* entries in idle */
    size_t idle_max;                  /* park no more than this many */
    LIST_HEAD(sock_list, sock) socks; /* sockets being watched */
    int depth;                        /* nesting of libcurl calls that may run callbacks */
    bool settling;                    /* after_curl is running */
};

/* x->last_progress_ms = now: a byte moved. */
static inline void
gw_curl_xfer_touch(struct gw_curl_xfer *x)
{
    x->last_progress_ms = clock_mono_ms();
}

/* x's pause state as curl_easy_pause bits. */
static inline long
gw_curl_xfer_pause_bits(const struct gw_curl_xfer *x)
{
    return (x->send_paused ? CURLPAUSE_SEND : 0) | (x->recv_paused ? CURLPAUSE_RECV : 0);
}

/* Put x on up->pending (once) for gw_curl_after(). */
static inline void
gw_curl_xfer_queue_pending(struct gw_curl_xfer *x)
{
    if (!x->pending) {
        x->pending = true;
        TAILQ_INSERT_TAIL(&x->up->pending, x, pending_link);
    }
}

/*
 * gw_curl_after - once the outermost libcurl call has returned:
 * apply deferred work, then report every finished transfer.  Callers'
 * callbacks (on_done) run from here.  A no-op while up->depth > 0 or while it
 * is already running.  (gateway/upstream/curl.c)
 */
void gw_curl_after(struct gw_curl *up);

/*
 * gw_curl_xfer_arm_idle - (re)arm x's inactivity timer to fire in ms (nothing when
 * opts.timeout_ms is 0); logs if it cannot.  (gateway/upstream/curl.c)
 */
void gw_curl_xfer_arm_idle(struct gw_curl_xfer *x, uint64_t ms);

/*
 * gw_curl_xfer_result - the ERR_* (or 0) for a transfer libcurl finished with rc;
 * logs once if libcurl failed it.  (gateway/upstream/curl.c)
 */
int gw_curl_xfer_result(struct gw_curl_xfer *x, CURLcode rc);

/*
 * gw_curl_xfer_setup - build x's request headers from rq and set every option of
 * x->easy (callbacks, timeouts, TLS).  rq's strings are copied or read before
 * the transfer starts, except rq->url and rq->method, which libcurl copies.
 * Returns 0, ERR_NOMEM or ERR_INVAL (logged where libcurl refused).
 * (gateway/upstream/curl_xfer.c)
 */
int gw_curl_xfer_setup(struct gw_curl_xfer *x, const struct gw_xfer_req *rq);

/*
 * gw_curl_xfer_sync_pause - apply x's pause state to libcurl now, or queue it for
 * after the current libcurl call returns; may run x's callbacks and
 * gw_curl_after().  (gateway/upstream/curl_xfer.c)
 */
void gw_curl_xfer_sync_pause(struct gw_curl_xfer *x);

/* The engine's side of upstream.h's calls (its operations table, curl.c). */
MUST_USE int gw_curl_xfer_start(struct gw_curl *up, const struct gw_xfer_req *rq,
                                const struct gw_xfer_cbs *cbs, void *arg,
                                struct gw_curl_xfer **out);
void gw_curl_xfer_cancel(struct gw_curl_xfer *x);
void gw_curl_free(struct gw_curl *up);
void gw_curl_resume_send(struct gw_curl_xfer *x);         /* curl_xfer.c */
void gw_curl_resume_recv(struct gw_curl_xfer *x);         /* curl_xfer.c */
uint64_t gw_curl_body_sent(const struct gw_curl_xfer *x); /* curl_xfer.c */
/* the sockets libcurl has this client watch, as open; idle unknown (0) */
void gw_curl_conns(const struct gw_curl *up, uint64_t *open, uint64_t *idle);

#endif
