/*
 * gateway/upstream/curl.c: the curl engine: libcurl multi on libevent.
 *
 * The shape is curl's hiperfifo.c without its exits: CURLMOPT_SOCKETFUNCTION
 * keeps one libevent event per socket (stored with curl_multi_assign),
 * CURLMOPT_TIMERFUNCTION (re)arms one evtimer and never calls libcurl itself,
 * and both event callbacks call curl_multi_socket_action and then drain
 * curl_multi_info_read.
 *
 * Re-entrancy.  libcurl runs our transfer callbacks from inside
 * curl_multi_socket_action and curl_easy_pause, and while it does, it refuses
 * (or mishandles) curl_multi_add_handle / curl_multi_remove_handle and pausing
 * other handles.  So up->depth counts how deep we are inside libcurl: a cancel,
 * resume or start requested while depth > 0 is recorded on the transfer and
 * put on up->pending; gw_curl_after() applies it once the outermost libcurl call
 * has returned.  A cancelled transfer's callbacks return "abort" to libcurl
 * and never reach the caller again.
 *
 * Timeouts.  CURLOPT_CONNECTTIMEOUT_MS bounds the connect (TCP + TLS).
 * opts.timeout_ms is an inactivity timeout kept by us, not by libcurl's
 * low-speed check (whole seconds only, and it would count the time a transfer
 * sits paused on the send side): every callback that moves a byte stamps
 * x->last_progress_ms; a per-transfer evtimer checks the stamp lazily.  The
 * clock stops while we have paused either direction, because then the
 * upstream is waiting for our client, not the other way round; the client's
 * own slowness is bounded by the HTTP server's read/write timeouts.  It
 * restarts from zero on resume.
 *
 * The timer runs from gw_upstream_xfer_start, so it also bounds the wait for a free
 * connection when opts.max_connections are all busy.
 *
 * Callers' callbacks may call gw_upstream_xfer_start, gw_xfer_resume_* and
 * gw_upstream_xfer_cancel (on any transfer, their own included), but not
 * gw_upstream_free.
 *
 * Memory.  struct gw_curl_xfer and its easy handle, timer and buffers are kept on
 * a small free list (curl_easy_reset between uses); the multi handle keeps the
 * connection cache.  Only a transfer libcurl completed is parked: one that
 * was cancelled, timed out, failed or never started is freed with its easy
 * handle, because curl_easy_reset does not return every handle to a fresh
 * state.  libcurl 7.88 allocates the receive buffer before it asks for a
 * connection (Curl_preconnect) and frees it only when a transfer is done on
 * one (multi_done); a transfer removed while queued for a connection keeps
 * it, and CURLOPT_BUFFERSIZE is refused on a handle that has one.
 *
 * Request headers are copied once into x->rqbuf and handed to libcurl as a
 * curl_slist built in place, without curl_slist_append.  Body bytes are never
 * copied by us.
 *
 * This file keeps the multi handle and its libevent glue, the deferred work,
 * the transfer objects' lifecycle, the engine's constructor, start, cancel and
 * free (its operations table, gateway/upstream/engine.h); the per-transfer libcurl callbacks,
 * request setup and pause/resume are in gateway/upstream/curl_xfer.c, the structs they share in
 * gateway/upstream/curl.h.
 */
#define LOG_MODULE "upstream"
#include "gateway/upstream/upstream.h"

#include <curl/curl.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "gateway/upstream/curl.h"
#include "gateway/upstream/upmsg.h"

GW_UPSTREAM_OPS_DECL(curl);

#define GW_UPSTREAM_MAX_REQ_HEAD ((size_t)256 * 1024) /* request header bytes we copy */
#define GW_UPSTREAM_IDLE_XFERS   32                   /* parked transfers, at least ... */
#define GW_UPSTREAM_IDLE_MAX     256                  /* ... at most (max_connections between) */
#define GW_UPSTREAM_KEEP_BYTES   ((size_t)16 * 1024)  /* parked transfers drop bigger buffers */

/* One socket libcurl asked us to watch. */
struct sock {
    struct event *ev;      /* persistent read/write event, re-assigned on each change */
    LIST_ENTRY(sock) link; /* in up->socks, so gw_upstream_free can drop leftovers */
};

/* ---- small helpers ---- */

void
gw_curl_xfer_arm_idle(struct gw_curl_xfer *x, uint64_t ms)
{
    if (x->up->pub.opts.timeout_ms == 0) {
        return;
    }
    struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
    if (evtimer_add(x->idle_ev, &tv) != 0) {
        log_error("evtimer_add failed; transfer has no inactivity timeout");
    }
}

/* The "scheme://host:port" part of url, for logs (the path and query may hold secrets). */
static int
origin_len(const char *url)
{
    const char *p = strstr(url, "://");
    p = p != NULL ? p + 3 : url;
    return (int)(p - url) + (int)strcspn(p, "/?");
}

/* ---- transfer objects and the free list ---- */

static void on_idle(evutil_socket_t fd, short what, void *arg);

static void
xfer_free(struct gw_curl_xfer *x)
{
    if (x == NULL) {
        return;
    }
    if (x->easy != NULL) {
        curl_easy_cleanup(x->easy);
    }
    if (x->idle_ev != NULL) {
        event_free(x->idle_ev);
    }
    gw_upmsg_head_cleanup(&x->head);
    buf_cleanup(&x->rqbuf);
    free(x->slist);
    free(x);
}

static struct gw_curl_xfer *
xfer_get(struct gw_curl *up)
{
    struct gw_curl_xfer *x = TAILQ_FIRST(&up->idle);
    if (x != NULL) {
        TAILQ_REMOVE(&up->idle, x, link);
        up->nidle--;
        return x;
    }
    x = calloc(1, sizeof(*x));
    if (x == NULL) {
        goto fail;
    }
    x->pub.ops = &curl_ops;
    x->up = up;
    gw_upmsg_head_init(&x->head);
    buf_init(&x->rqbuf, GW_UPSTREAM_MAX_REQ_HEAD);
    x->easy = curl_easy_init();
    x->idle_ev = evtimer_new(up->pub.base, on_idle, x);
    if (x->easy == NULL || x->idle_ev == NULL) {
        goto fail;
    }
    return x;
fail:
    log_error("out of memory for a transfer");
    xfer_free(x);
    return NULL;
}

/* Park x (already detached from the multi and from every list) or free it. */
static void
xfer_put(struct gw_curl_xfer *x)
{
    struct gw_curl *up = x->up;
    if (!x->reusable || up->nidle >= up->idle_max) {
        xfer_free(x);
        return;
    }
    curl_easy_reset(x->easy); /* drops our slist, callbacks and PRIVATE */
    if (x->rqbuf.alloc > GW_UPSTREAM_KEEP_BYTES) {
        buf_cleanup(&x->rqbuf);
    }
    gw_upmsg_head_reset(&x->head, GW_UPSTREAM_KEEP_BYTES);
    buf_reset(&x->rqbuf);
    memset(&x->cbs, 0, sizeof(x->cbs));
    x->arg = NULL;
    x->body_length = -1;
    x->body_sent = 0;
    x->cb_err = 0;
    x->fail_err = 0;
    x->send_paused = false;
    x->recv_paused = false;
    x->pause_dirty = false;
    x->add_pending = false;
    x->cancelled = false;
    x->head_done = false;
    x->finishing = false;
    x->reusable = false;
    x->errbuf[0] = '\0';
    TAILQ_INSERT_HEAD(&up->idle, x, link);
    up->nidle++;
}

/* Detach x from libcurl, its timer and our lists, then park or free it.  Never inside libcurl. */
static void
xfer_release(struct gw_curl_xfer *x)
{
    struct gw_curl *up = x->up;
    if (x->in_multi) {
        /*
         * Removing a transfer that is not complete makes libcurl close its
         * connection ("Removed with partial response"), so a request body
         * cut short never reaches its last byte at the upstream.
         */
        CURLMcode mc = curl_multi_remove_handle(up->multi, x->easy);
        if (mc != CURLM_OK) {
            log_error("curl_multi_remove_handle: %s", curl_multi_strerror(mc));
        }
        x->in_multi = false;
    }
    (void)event_del(x->idle_ev);
    if (x->pending) {
        TAILQ_REMOVE(&up->pending, x, pending_link);
        x->pending = false;
    }
    TAILQ_REMOVE(&up->active, x, link);
    xfer_put(x);
}

/* End x: detach, tell the caller (once), free.  Never inside libcurl. */
static void
xfer_finish(struct gw_curl_xfer *x, int err)
{
    if (x->in_multi) {
        CURLMcode mc = curl_multi_remove_handle(x->up->multi, x->easy);
        if (mc != CURLM_OK) {
            log_error("curl_multi_remove_handle: %s", curl_multi_strerror(mc));
        }
        x->in_multi = false;
    }
    (void)event_del(x->idle_ev);
    x->finishing = true;
    x->cbs.on_done(x->arg, err);
    xfer_release(x);
}

/* Convert the result of a finished transfer; log once if libcurl failed it. */
int
gw_curl_xfer_result(struct gw_curl_xfer *x, CURLcode rc)
{
    if (x->cb_err != 0) {
        return x->cb_err; /* logged (if at all) by whoever returned it */
    }
    if (rc == CURLE_OK) {
        if (!x->head_done) {
            log_warn("transfer ended without a response head");
            return ERR_UPSTREAM;
        }
        return 0;
    }
    int err;
    switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
        err = ERR_TIMEOUT;
        break;
    case CURLE_OUT_OF_MEMORY:
        err = ERR_NOMEM;
        break;
    case CURLE_URL_MALFORMAT:
        err = ERR_INVAL; /* ours: the URL is built here */
        break;
    default:
        err = ERR_UPSTREAM;
        break;
    }
    char *url = NULL;
    if (curl_easy_getinfo(x->easy, CURLINFO_EFFECTIVE_URL, &url) != CURLE_OK || url == NULL) {
        url = (char *)"?";
    }
    log_warn("%.*s: %s (%s) -> %s", origin_len(url), url, curl_easy_strerror(rc),
             x->errbuf[0] != '\0' ? x->errbuf : "-", err_str(err));
    return err;
}

/* ---- driving libcurl ---- */

/* Feeds the connect-failure streak gw_upstream_unreachable reads (streak.c). */
static void
note_reach(struct gw_curl *up, struct gw_curl_xfer *x, CURLcode rc)
{
    if (x->head_done || rc == CURLE_OK) {
        gw_upstream_note_reached(&up->pub);
        return;
    }
    curl_off_t connected = 0;
    bool no_connect =
        rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
        rc == CURLE_SSL_CONNECT_ERROR ||
        (rc == CURLE_OPERATION_TIMEDOUT &&
         curl_easy_getinfo(x->easy, CURLINFO_CONNECT_TIME_T, &connected) == CURLE_OK &&
         connected == 0);
    if (!no_connect) {
        return; /* connected, then broke: not a reachability question */
    }
    gw_upstream_note_connect_failed(&up->pub);
    gw_upstream_note_connect_err(&up->pub, "%s%s%s", curl_easy_strerror(rc),
                                 x->errbuf[0] != '\0' ? ": " : "", x->errbuf);
}

static void
run_pending(struct gw_curl_xfer *x)
{
    struct gw_curl *up = x->up;
    TAILQ_REMOVE(&up->pending, x, pending_link);
    x->pending = false;
    if (x->cancelled) {
        xfer_release(x);
        return;
    }
    if (x->fail_err != 0) {
        xfer_finish(x, x->fail_err);
        return;
    }
    if (x->add_pending) {
        x->add_pending = false;
        CURLMcode mc = curl_multi_add_handle(up->multi, x->easy);
        if (mc != CURLM_OK) {
            log_error("curl_multi_add_handle: %s", curl_multi_strerror(mc));
            xfer_finish(x, mc == CURLM_OUT_OF_MEMORY ? ERR_NOMEM : ERR_UPSTREAM);
            return;
        }
        x->in_multi = true;
    }
    if (x->pause_dirty) {
        gw_curl_xfer_sync_pause(x);
    }
}

/*
 * Once the outermost libcurl call has returned: apply deferred work, then
 * report every finished transfer.  Callers' callbacks run from here (on_done),
 * and may start, resume or cancel transfers; those take effect at once.
 */
void
gw_curl_after(struct gw_curl *up)
{
    if (up->depth > 0 || up->settling) {
        return;
    }
    up->settling = true;
    for (;;) {
        struct gw_curl_xfer *x = TAILQ_FIRST(&up->pending);
        if (x != NULL) {
            run_pending(x);
            continue;
        }
        int left = 0;
        CURLMsg *m = curl_multi_info_read(up->multi, &left);
        if (m == NULL) {
            break;
        }
        if (m->msg != CURLMSG_DONE) {
            continue;
        }
        CURLcode rc = m->data.result; /* m dies with the next libcurl call */
        char *priv = NULL;
        if (curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv) != CURLE_OK ||
            priv == NULL) {
            log_error("finished transfer without its context");
            continue;
        }
        x = (struct gw_curl_xfer *)(void *)priv;
        x->reusable = rc == CURLE_OK;
        note_reach(up, x, rc);
        if (x->cancelled) {
            xfer_release(x);
        } else {
            xfer_finish(x, gw_curl_xfer_result(x, rc));
        }
    }
    up->settling = false;
}

static void
drive(struct gw_curl *up, curl_socket_t fd, int ev_bitmask)
{
    int running = 0;
    up->depth++;
    CURLMcode mc = curl_multi_socket_action(up->multi, fd, ev_bitmask, &running);
    up->depth--;
    if (mc != CURLM_OK) {
        log_error("curl_multi_socket_action: %s", curl_multi_strerror(mc));
    }
    gw_curl_after(up);
}

/* libevent: a watched socket is ready (event made in on_socket) */
static void
on_sock_ready(evutil_socket_t fd, short what, void *arg)
{
    struct gw_curl *up = arg;
    int action = ((what & EV_READ) != 0 ? CURL_CSELECT_IN : 0) |
                 ((what & EV_WRITE) != 0 ? CURL_CSELECT_OUT : 0);
    drive(up, fd, action);
}

/* libevent: the multi timer set by on_multi_timer expired */
static void
on_multi_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct gw_curl *up = arg;
    (void)fd;
    (void)what;
    drive(up, CURL_SOCKET_TIMEOUT, 0);
}

/* CURLMOPT_TIMERFUNCTION: only (re)arms or deletes the timer; never calls libcurl */
static int
on_multi_timer(CURLM *multi, long timeout_ms, void *userp)
{
    struct gw_curl *up = userp;
    (void)multi;
    if (timeout_ms < 0) {
        (void)evtimer_del(up->timer);
        return 0;
    }
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    if (evtimer_add(up->timer, &tv) != 0) {
        log_error("evtimer_add failed");
        return -1;
    }
    return 0;
}

static void
sock_free(struct sock *s)
{
    LIST_REMOVE(s, link);
    event_free(s->ev);
    free(s);
}

/* CURLMOPT_SOCKETFUNCTION: create, update or drop the event of one socket */
static int
on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    struct gw_curl *up = userp;
    struct sock *s = socketp;
    (void)easy;
    if (what == CURL_POLL_REMOVE) {
        if (s != NULL) {
            sock_free(s);
        }
        return 0;
    }
    short kind = EV_PERSIST | ((what & CURL_POLL_IN) != 0 ? EV_READ : 0) |
                 ((what & CURL_POLL_OUT) != 0 ? EV_WRITE : 0);
    if (s == NULL) {
        s = calloc(1, sizeof(*s));
        if (s == NULL) {
            log_error("out of memory for a socket event");
            return -1;
        }
        s->ev = event_new(up->pub.base, fd, kind, on_sock_ready, up);
        if (s->ev == NULL) {
            log_error("event_new failed");
            free(s);
            return -1;
        }
        LIST_INSERT_HEAD(&up->socks, s, link);
        CURLMcode mc = curl_multi_assign(up->multi, fd, s);
        if (mc != CURLM_OK) {
            log_error("curl_multi_assign: %s", curl_multi_strerror(mc));
            sock_free(s);
            return -1;
        }
    } else {
        (void)event_del(s->ev);
        if (event_assign(s->ev, up->pub.base, fd, kind, on_sock_ready, up) != 0) {
            log_error("event_assign failed");
            return -1;
        }
    }
    if (event_add(s->ev, NULL) != 0) {
        log_error("event_add failed");
        return -1;
    }
    return 0;
}

/* libevent: the inactivity timer of x (armed by arm_idle) */
static void
on_idle(evutil_socket_t fd, short what, void *arg)
{
    struct gw_curl_xfer *x = arg;
    (void)fd;
    (void)what;
    if (x->cancelled || x->finishing || x->send_paused || x->recv_paused) {
        return; /* a paused transfer's clock stops; resume re-arms */
    }
    struct gw_curl *up = x->up;
    uint64_t idle = clock_mono_ms() - x->last_progress_ms;
    if (idle < up->pub.opts.timeout_ms) {
        gw_curl_xfer_arm_idle(x, up->pub.opts.timeout_ms - idle);
        return;
    }
    log_warn("no upstream progress for %llu ms -> %s", (unsigned long long)idle,
             err_str(ERR_TIMEOUT));
    xfer_finish(x, ERR_TIMEOUT);
    gw_curl_after(up);
}

/* ---- the API ---- */

static struct gw_curl *
curl_new(struct event_base *base, const struct gw_upstream_opts *opts)
{
    struct gw_curl *up = gw_upstream_alloc(sizeof(*up), &curl_ops, base, opts);
    if (up == NULL) {
        return NULL;
    }
    TAILQ_INIT(&up->active);
    TAILQ_INIT(&up->idle);
    TAILQ_INIT(&up->pending);
    LIST_INIT(&up->socks);
    /* as many parked as may be in flight at once: below that, every transfer over
     * the count pays curl_easy_init and curl_easy_cleanup */
    up->idle_max = opts->max_connections < GW_UPSTREAM_IDLE_XFERS ? GW_UPSTREAM_IDLE_XFERS
                   : opts->max_connections > GW_UPSTREAM_IDLE_MAX ? GW_UPSTREAM_IDLE_MAX
                                                                  : opts->max_connections;
    CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
        log_error("curl_global_init: %s", curl_easy_strerror(rc));
        goto fail;
    }
    up->curl_inited = true;
    up->multi = curl_multi_init();
    up->timer = evtimer_new(base, on_multi_timeout, up);
    if (up->multi == NULL || up->timer == NULL) {
        log_error("curl_multi_init or evtimer_new failed");
        goto fail;
    }
    CURLMcode mc = curl_multi_setopt(up->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    if (mc == CURLM_OK) {
        mc = curl_multi_setopt(up->multi, CURLMOPT_SOCKETDATA, up);
    }
    if (mc == CURLM_OK) {
        mc = curl_multi_setopt(up->multi, CURLMOPT_TIMERFUNCTION, on_multi_timer);
    }
    if (mc == CURLM_OK) {
        mc = curl_multi_setopt(up->multi, CURLMOPT_TIMERDATA, up);
    }
    if (mc == CURLM_OK && opts->max_connections != 0) {
        mc = curl_multi_setopt(up->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
                               (long)opts->max_connections);
        if (mc == CURLM_OK) {
            /* keep as many idle connections as we may open, for reuse */
            mc = curl_multi_setopt(up->multi, CURLMOPT_MAXCONNECTS, (long)opts->max_connections);
        }
    }
    if (mc != CURLM_OK) {
        log_error("curl_multi_setopt: %s", curl_multi_strerror(mc));
        goto fail;
    }
    return up;
fail:
    gw_curl_free(up);
    return NULL;
}

void
gw_curl_free(struct gw_curl *up)
{
    if (up == NULL) {
        return;
    }
    /* xfer_release touches only its own transfer (and frees it): next stays valid */
    struct gw_curl_xfer *x = TAILQ_FIRST(&up->active);
    while (x != NULL) {
        struct gw_curl_xfer *next = TAILQ_NEXT(x, link);
        x->cancelled = true;
        xfer_release(x);
        x = next;
    }
    while ((x = TAILQ_FIRST(&up->idle)) != NULL) {
        TAILQ_REMOVE(&up->idle, x, link);
        xfer_free(x);
    }
    if (up->multi != NULL) {
        CURLMcode mc = curl_multi_cleanup(up->multi); /* closes cached connections */
        if (mc != CURLM_OK) {
            log_error("curl_multi_cleanup: %s", curl_multi_strerror(mc));
        }
    }
    /* sockets libcurl did not report removed; the whole list goes, so no unlinking */
    struct sock *s = LIST_FIRST(&up->socks);
    while (s != NULL) {
        struct sock *next = LIST_NEXT(s, link);
        event_free(s->ev);
        free(s);
        s = next;
    }
    LIST_INIT(&up->socks);
    if (up->timer != NULL) {
        event_free(up->timer);
    }
    if (up->curl_inited) {
        curl_global_cleanup();
    }
    gw_upstream_dealloc(&up->pub);
}

int
gw_curl_xfer_start(struct gw_curl *up, const struct gw_xfer_req *rq, const struct gw_xfer_cbs *cbs,
                   void *arg, struct gw_curl_xfer **out)
{
    /* rq and cbs were checked by gw_upstream_xfer_start */
    struct gw_curl_xfer *x = xfer_get(up);
    if (x == NULL) {
        return ERR_NOMEM;
    }
    int err = gw_curl_xfer_setup(x, rq);
    if (err != 0) {
        goto fail;
    }
    x->cbs = *cbs;
    x->arg = arg;
    x->body_length = rq->body_length;
    TAILQ_INSERT_TAIL(&up->active, x, link);
    if (up->depth > 0) {
        /* inside a libcurl callback: the multi refuses new handles until it returns */
        x->add_pending = true;
        gw_curl_xfer_queue_pending(x);
    } else {
        /* calls on_multi_timer only; no transfer callback runs before we return */
        CURLMcode mc = curl_multi_add_handle(up->multi, x->easy);
        if (mc != CURLM_OK) {
            log_error("curl_multi_add_handle: %s", curl_multi_strerror(mc));
            TAILQ_REMOVE(&up->active, x, link);
            err = mc == CURLM_OUT_OF_MEMORY ? ERR_NOMEM : ERR_UPSTREAM;
            goto fail;
        }
        x->in_multi = true;
    }
    gw_curl_xfer_touch(x);
    gw_curl_xfer_arm_idle(x, up->pub.opts.timeout_ms);
    *out = x;
    return 0;
fail:
    xfer_free(x); /* never parked: a handle libcurl refused an option may refuse it again */
    return err;
}

void
gw_curl_xfer_cancel(struct gw_curl_xfer *x)
{
    if (x == NULL || x->cancelled || x->finishing) {
        return;
    }
    x->cancelled = true;
    (void)event_del(x->idle_ev);
    if (x->up->depth > 0) {
        /* inside libcurl: x's callbacks now abort; detach once libcurl returns */
        gw_curl_xfer_queue_pending(x);
        return;
    }
    xfer_release(x);
}

void
gw_curl_conns(const struct gw_curl *up, uint64_t *open, uint64_t *idle)
{
    uint64_t n = 0;
    const struct sock *s;
    LIST_FOREACH (s, &up->socks, link) {
        n++;
    }
    *open = n;
    *idle = 0; /* libcurl keeps its connection cache to itself */
}

/* ---- the operations table (gateway/upstream/engine.h) ---- */

GW_UPSTREAM_ENGINE(curl, gw_curl, gw_curl_xfer)
