/*
 * gateway/upstream/lean.c: the lean engine: HTTP/1.1 on libevent
 * bufferevents, responses parsed by llhttp (gateway/upstream/lean_conn.c),
 * TLS by bufferevent_openssl (gateway/upstream/lean_tls.c).  This file keeps
 * the transfers (start, cancel, resume, end, report), the connection pool,
 * the wait queue under max_connections and the timers; it feeds the
 * unreachable streak (gateway/upstream/upstream.c).  The contract is gateway/upstream/upstream.h's;
 * the re-entrancy rule is in gateway/upstream/lean.h.
 *
 * Pool.  Idle connections are kept per origin (scheme, host, port), newest
 * first, at most max(max_connections, LEAN_IDLE_MIN) of them; an idle one
 * keeps reading, so a peer's close (or a stray byte) drops it at once.  A
 * connection goes back to the pool only when its response was complete, the
 * whole request body was sent, nothing followed the response, the response
 * allows keep-alive and the caller did not ask for no_reuse.
 *
 * Retry.  A request on a reused connection can still meet the peer's close
 * of that connection (it closed while we were sending).  Such a request is
 * sent once more on a new connection, but only a read (GET or HEAD) that
 * failed before any response byte: a body cannot be replayed (it is streamed
 * from the client and gone), and a write must not be sent twice, even a
 * body-less one (a DELETE).  The fence counted the write as sent when its
 * head went out; a second copy sent later could land after a newer epoch's
 * write that the barrier let through meanwhile.  A write that meets a dead
 * pooled connection ends in ERR_UPSTREAM (502), and its client retries
 * through the fence.  (libcurl, the other engine, also resends body-less
 * writes; the proxy runs on this one.)
 *
 * Timeouts.  connect_timeout_ms bounds each connect (TCP, DNS and TLS), in
 * lean_conn.c.  opts.timeout_ms is an inactivity timeout: every byte moved
 * stamps x->last_progress_ms and x->timer checks the stamp lazily.  The
 * clock stops while we have paused either direction (the upstream is waiting
 * for our client then, not the other way round) and restarts from zero on
 * resume.  It runs from gw_upstream_xfer_start, so it also bounds the wait
 * for a connection when max_connections are all busy.
 */
#define LOG_MODULE "upstream"
#include "gateway/upstream/lean.h"

#include <event2/buffer.h>
#include <event2/dns.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/mem.h"

GW_UPSTREAM_OPS_DECL(lean);

#define LEAN_MAX_REQ_HEAD ((size_t)256 * 1024) /* request head bytes */
#define LEAN_IDLE_MIN     32                   /* idle connections kept, at least */
#define LEAN_HEAD_LINES   64                   /* header lengths build_head keeps, at most */

/* ---- targets and request heads ---- */

/* Parse "scheme://host[:port]" of url into t; *path = the rest ("" for none). */
static int
parse_target(const char *url, struct lean_target *t, const char **path)
{
    t->tls = strncasecmp(url, "https://", 8) == 0;
    const char *a = url + (t->tls ? 8 : 7);
    size_t alen = strcspn(a, "/?");
    *path = a + alen;
    const char *h = a;
    size_t hlen;
    const char *port = NULL;
    if (memchr(a, '@', alen) != NULL) {
        return ERR_INVAL; /* no user info: credentials go in headers */
    }
    if (*a == '[') {
        const char *close = memchr(a, ']', alen);
        if (close == NULL) {
            return ERR_INVAL;
        }
        h = a + 1;
        hlen = (size_t)(close - h);
        if (close + 1 < a + alen) {
            if (close[1] != ':') {
                return ERR_INVAL;
            }
            port = close + 2;
        }
    } else {
        const char *colon = memchr(a, ':', alen);
        hlen = colon != NULL ? (size_t)(colon - a) : alen;
        port = colon != NULL ? colon + 1 : NULL;
    }
    t->port = t->tls ? 443 : 80;
    if (port != NULL) {
        unsigned long v = 0;
        const char *p = port;
        for (; p < a + alen && *p >= '0' && *p <= '9' && v <= 65535; p++) {
            v = v * 10 + (unsigned long)(*p - '0');
        }
        if (p == port || p != a + alen || v == 0 || v > 65535) {
            return ERR_INVAL;
        }
        t->port = (uint16_t)v;
    }
    if (hlen == 0 || hlen >= sizeof(t->host)) {
        return ERR_INVAL;
    }
    memcpy(t->host, h, hlen);
    t->host[hlen] = '\0';
    return 0;
}

static bool
target_eq(const struct lean_target *a, const struct lean_target *b)
{
    return a->tls == b->tls && a->port == b->port && strcasecmp(a->host, b->host) == 0;
}

/* Append s to x->req; false when it does not fit (or on no memory). */
static bool
req_add(struct gw_lean_xfer *x, const char *s, size_t n)
{
    return buf_append(&x->req, s, n) == 0;
}

/*
 * The request head: the request line with the path byte for byte, the
 * caller's headers as given and in order, then only what framing needs:
 * Host (first) when the caller gave none, Content-Length when there is a
 * body and the caller did not give it.
 */
static int
build_head(struct gw_lean_xfer *x, const struct gw_xfer_req *rq, const char *path)
{
    bool has_host = false, has_cl = false;
    size_t hlen[LEAN_HEAD_LINES] = {0};
    size_t total = 0; /* of the caller's header lines, each with its CRLF */
    for (size_t i = 0; i < rq->nheaders; i++) {
        const char *h = rq->headers[i];
        bool empty = false;
        enum gw_upmsg_req_hdr kind = GW_UPMSG_REQ_HDR_OTHER;
        if (h == NULL || gw_upmsg_req_header_check(h, rq->body_length, &kind, &empty) != 0) {
            return ERR_INVAL;
        }
        has_cl = has_cl || kind == GW_UPMSG_REQ_HDR_CL;
        has_host = has_host || strncasecmp(h, "Host:", 5) == 0;
        size_t n = strlen(h);
        if (i < LEAN_HEAD_LINES) {
            hlen[i] = n;
        }
        total += n + 2; /* past LEAN_MAX_REQ_HEAD the reservation fails, as the appends would */
    }
    const char *slash = *path == '/' ? "" : "/"; /* "" or "?q": the origin form needs a '/' */
    size_t mlen = strlen(rq->method);
    size_t plen = strlen(path);
    bool ok = buf_reserve(&x->req, mlen + plen + total + 16) == 0 && req_add(x, rq->method, mlen) &&
              req_add(x, " ", 1) && req_add(x, slash, strlen(slash)) && req_add(x, path, plen) &&
              req_add(x, " HTTP/1.1\r\n", 11);
    if (ok && !has_host) {
        bool v6 = strchr(x->t.host, ':') != NULL;
        bool dflt = x->t.port == (x->t.tls ? 443 : 80);
        char port[8] = "";
        if (!dflt) {
            (void)snprintf(port, sizeof(port), ":%u", x->t.port);
        }
        ok = buf_printf(&x->req, "Host: %s%s%s%s\r\n", v6 ? "[" : "", x->t.host, v6 ? "]" : "",
                        port) == 0;
    }
    for (size_t i = 0; ok && i < rq->nheaders; i++) {
        size_t n = i < LEAN_HEAD_LINES ? hlen[i] : strlen(rq->headers[i]);
        ok = req_add(x, rq->headers[i], n) && req_add(x, "\r\n", 2);
    }
    if (ok && rq->body_length >= 0 && !has_cl) {
        ok = buf_printf(&x->req, "Content-Length: %" PRId64 "\r\n", rq->body_length) == 0;
    }
    ok = ok && req_add(x, "\r\n", 2);
    return ok ? 0 : ERR_INVAL;
}

/* ---- transfer objects ---- */

static void on_timer(evutil_socket_t fd, short what, void *arg);
static void on_kick(evutil_socket_t fd, short what, void *arg);
static void unwait(struct gw_lean_xfer *x);

void
lean_xfer_touch(struct gw_lean_xfer *x)
{
    x->last_progress_ms = clock_coarse_ms();
}

static void
arm_timer(struct gw_lean_xfer *x, uint64_t ms)
{
    if (x->up->pub.opts.timeout_ms == 0) {
        return;
    }
    struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
    if (evtimer_add(x->timer, &tv) != 0) {
        log_error("evtimer_add failed; transfer has no inactivity timeout");
    }
}

void
lean_kick(struct gw_lean_xfer *x)
{
    event_active(x->kick, EV_TIMEOUT, 1);
}

/*
 * A zeroed transfer with its two events in the same allocation (libevent
 * sizes its struct event at run time): a request allocates once, not thrice.
 */
static struct gw_lean_xfer *
xfer_new(struct event_base *base)
{
    size_t at = (sizeof(struct gw_lean_xfer) + 15) & ~(size_t)15;
    size_t ev = (event_get_struct_event_size() + 15) & ~(size_t)15;
    struct gw_lean_xfer *x = mem_zalloc(at + 2 * ev);
    if (x == NULL) {
        return NULL;
    }
    x->timer = (struct event *)(void *)((char *)x + at);
    x->kick = (struct event *)(void *)((char *)x + at + ev);
    if (evtimer_assign(x->timer, base, on_timer, x) != 0 ||
        event_assign(x->kick, base, -1, 0, on_kick, x) != 0) {
        free(x);
        return NULL;
    }
    return x;
}

static void
xfer_free(struct gw_lean_xfer *x)
{
    if (x == NULL) {
        return;
    }
    if (x->timer != NULL) {
        (void)event_del(x->timer); /* in x's allocation (xfer_new): no event_free */
    }
    if (x->kick != NULL) {
        (void)event_del(x->kick);
    }
    gw_upmsg_head_cleanup(&x->head);
    buf_cleanup(&x->req);
    free(x);
}

/* Off every list and timer; the connection (if any) closed. */
static void
xfer_detach(struct gw_lean_xfer *x)
{
    struct gw_lean *up = x->up;
    if (x->c != NULL) {
        lean_conn_close(x->c); /* unsent bytes are dropped: an unfinished body never completes */
    }
    if (x->waiting) {
        unwait(x);
    }
    (void)event_del(x->timer);
    (void)event_del(x->kick);
    TAILQ_REMOVE(&up->active, x, link);
}

void
lean_xfer_end(struct gw_lean_xfer *x, int err, bool connect_failed)
{
    if (x->ended) {
        return;
    }
    x->ended = true;
    x->end_err = err;
    x->connect_failed = connect_failed;
}

/* ---- the pool ---- */

static void dispatch(struct gw_lean *up);

/* Slots handed to this loop that it will not use go back to the cap. */
static void
give_spare(struct gw_lean *up)
{
    for (; up->spare > 0; up->spare--) {
        gw_upstream_cap_give(up->cap);
    }
}

/* With a cap: publish this loop's idle count, which other loops read to ask for a shed. */
static void
idle_changed(struct gw_lean *up)
{
    if (up->cap != NULL) {
        gw_upstream_cap_idle(up->cap, up->cap_slot, up->nidle);
    }
}

/*
 * Reserve a slot for one more connection: under max_connections, the
 * process's with a cap, where a slot another loop handed over comes first.
 */
static bool
slot_take(struct gw_lean *up)
{
    if (up->cap != NULL) {
        if (up->spare > 0) {
            up->spare--;
            return true;
        }
        return gw_upstream_cap_take(up->cap);
    }
    return up->pub.opts.max_connections == 0 || up->nconns < up->pub.opts.max_connections;
}

void
lean_slot_give(struct gw_lean *up)
{
    if (up->cap != NULL && !up->handing) {
        gw_upstream_cap_give(up->cap);
    }
}

/* With a cap: publish how many connections this loop holds (hand-overs favour loops with none). */
static void
conns_changed(struct gw_lean *up)
{
    if (up->cap != NULL) {
        gw_upstream_cap_held(up->cap, up->cap_slot, up->nconns);
    }
}

void
lean_conn_gone(struct lean_conn *c)
{
    struct gw_lean *up = c->up;
    if (c->idle) {
        TAILQ_REMOVE(&up->idle, c, link);
        c->idle = false;
        up->nidle--;
        idle_changed(up);
    }
    up->nconns--;
    conns_changed(up);
    lean_slot_give(up);
}

/*
 * Close c and hand its slot to another loop whose transfers wait (one that
 * holds no connection, with to_empty_only).  False, c untouched: none waits.
 */
static bool
close_for_other(struct gw_lean *up, struct lean_conn *c, bool to_empty_only)
{
    if (!gw_upstream_cap_waiting(up->cap, up->cap_slot, to_empty_only)) {
        return false;
    }
    up->handing = true; /* the slot stays counted: it is the other loop's next */
    lean_conn_close(c); /* the socket closes before the other loop may open one */
    up->handing = false;
    if (!gw_upstream_cap_hand_over(up->cap, up->cap_slot, to_empty_only)) {
        gw_upstream_cap_give(up->cap); /* the waiter went meanwhile: the slot goes back */
    }
    return true;
}

static struct lean_conn *
pool_take(struct gw_lean *up, const struct lean_target *t)
{
    struct lean_conn *c;
    TAILQ_FOREACH (c, &up->idle, link) {
        if (target_eq(&c->t, t)) {
            TAILQ_REMOVE(&up->idle, c, link);
            c->idle = false;
            up->nidle--;
            idle_changed(up);
            return c;
        }
    }
    return NULL;
}

/*
 * Keep c for reuse, newest first.  With a cap and another loop waiting for a
 * slot, c closes instead and its slot goes to that loop, when none of this
 * loop's transfers waits for c, or when some do but this loop holds more
 * than its share or the other loop holds nothing (cap.c: no loop starves
 * another at the cap).  Published before the wait is read (cap.c): a loop
 * that starts waiting meanwhile sees c idle and asks a shed.
 */
static void
pool_put(struct gw_lean *up, struct lean_conn *c)
{
    size_t max =
        up->pub.opts.max_connections > LEAN_IDLE_MIN ? up->pub.opts.max_connections : LEAN_IDLE_MIN;
    if (up->nidle >= max) {
        lean_conn_close(TAILQ_LAST(&up->idle, lean_conn_list));
    }
    lean_conn_park(c);
    TAILQ_INSERT_HEAD(&up->idle, c, link);
    c->idle = true;
    up->nidle++;
    idle_changed(up);
    if (up->cap != NULL && gw_upstream_cap_wanted(up->cap, up->cap_slot)) {
        bool over = up->nconns > gw_upstream_cap_share(up->cap);
        (void)close_for_other(up, c, !TAILQ_EMPTY(&up->waiting) && !over);
    }
}

/*
 * A connection to t: a pooled one (unless fresh), else a new one in a free
 * slot, closing idle connections (another origin's, or the oldest) to free
 * one.  NULL with *wait: no slot is free; NULL alone: it could not be opened.
 */
static struct lean_conn *
conn_for(struct gw_lean *up, const struct lean_target *t, bool fresh, bool *wait)
{
    *wait = false;
    struct lean_conn *c = fresh ? NULL : pool_take(up, t);
    if (c != NULL) {
        return c;
    }
    while (!slot_take(up)) {
        if (TAILQ_EMPTY(&up->idle)) {
            *wait = true;
            return NULL;
        }
        /* with a cap another loop may take the slot first: then the next one */
        lean_conn_close(TAILQ_LAST(&up->idle, lean_conn_list));
    }
    c = lean_conn_open(up, t);
    conns_changed(up);
    return c;
}

/* x waits for a slot, last in line; with a cap the other loops hear of it. */
static void
wait_for_slot(struct gw_lean_xfer *x)
{
    struct gw_lean *up = x->up;
    x->waiting = true;
    TAILQ_INSERT_TAIL(&up->waiting, x, wait_link);
    if (up->cap != NULL) {
        gw_upstream_cap_wait(up->cap, up->cap_slot);
    }
}

/* x leaves the line (it got a connection, or it ended). */
static void
unwait(struct gw_lean_xfer *x)
{
    struct gw_lean *up = x->up;
    TAILQ_REMOVE(&up->waiting, x, wait_link);
    x->waiting = false;
    if (up->cap != NULL && TAILQ_EMPTY(&up->waiting)) {
        gw_upstream_cap_wait_done(up->cap, up->cap_slot);
    }
}

/* Put x on connection c, or report that none could be opened. */
static void
start_on(struct gw_lean_xfer *x, struct lean_conn *c)
{
    if (c == NULL) {
        lean_xfer_end(x, ERR_UPSTREAM, true);
        lean_kick(x); /* reported from the loop: no callback inside the caller's call */
        return;
    }
    lean_conn_attach(c, x);
}

/* Give x a connection: a pooled one (unless fresh), a new one, or a place in the line. */
static void
acquire(struct gw_lean_xfer *x, bool fresh)
{
    bool wait;
    struct lean_conn *c = conn_for(x->up, &x->t, fresh, &wait);
    if (wait) {
        wait_for_slot(x);
        return;
    }
    start_on(x, c);
}

/* Hand free connection slots to waiting transfers, first come first served. */
static void
dispatch(struct gw_lean *up)
{
    struct gw_lean_xfer *x;
    while ((x = TAILQ_FIRST(&up->waiting)) != NULL) {
        bool wait;
        struct lean_conn *c = conn_for(up, &x->t, false, &wait);
        if (wait) {
            if (up->cap != NULL) {
                gw_upstream_cap_wait(up->cap, up->cap_slot); /* the slot went to another loop */
            }
            return;
        }
        unwait(x);
        start_on(x, c);
    }
}

/*
 * A wake-up from the cap, on this loop: close the idle connections other
 * loops asked for while one of them still waits, oldest first, then give
 * freed slots to this loop's own waiting transfers.
 */
static void
on_cap(void *arg)
{
    struct gw_lean *up = arg;
    for (uint32_t n = gw_upstream_cap_shed_asked(up->cap, up->cap_slot);
         n > 0 && !TAILQ_EMPTY(&up->idle) &&
         close_for_other(up, TAILQ_LAST(&up->idle, lean_conn_list), false);
         n--) {
    }
    up->spare += gw_upstream_cap_granted(up->cap, up->cap_slot);
    dispatch(up);
    if (TAILQ_EMPTY(&up->waiting)) {
        give_spare(up); /* handed over after its transfers were served: for the others */
    }
}

/* ---- ending transfers ---- */

static bool
may_retry(const struct gw_lean_xfer *x)
{
    return x->read_only && x->end_err == ERR_UPSTREAM && x->c != NULL && x->c->reused &&
           !x->connect_failed && !x->got_bytes && x->body_sent == 0 && !x->retried && !x->head_done;
}

/* Send x again on a new connection (see "Retry" at the top). */
static void
retry(struct gw_lean_xfer *x)
{
    log_info("%s:%u: pooled connection closed under a request; sending it on a new one", x->t.host,
             x->t.port);
    lean_conn_close(x->c);
    x->retried = true;
    x->ended = false;
    x->end_err = 0;
    x->head_sent = false;
    x->body_done = false;
    x->got_bytes = false;
    gw_upmsg_head_reset(&x->head, 0);
    acquire(x, true);
}

/* The connection of a finished x: back to the pool if it can serve another request. */
static void
release_conn(struct gw_lean_xfer *x)
{
    struct lean_conn *c = x->c;
    if (c == NULL) {
        return;
    }
    bool reusable = x->end_err == 0 && x->complete && x->body_done && c->keep_alive &&
                    !x->no_reuse && !c->eof && !c->write_failed &&
                    evbuffer_get_length(bufferevent_get_input(c->bev)) == 0 &&
                    evbuffer_get_length(bufferevent_get_output(c->bev)) == 0;
    if (!reusable) {
        lean_conn_close(c);
        return;
    }
    x->c = NULL;
    pool_put(x->up, c);
}

void
lean_xfer_settle(struct gw_lean_xfer *x)
{
    struct gw_lean *up = x->up;
    if (x->busy > 0 || x->finishing) {
        return;
    }
    if (x->cancelled) {
        xfer_detach(x);
        xfer_free(x);
        dispatch(up);
        return;
    }
    if (!x->ended) {
        return;
    }
    if (may_retry(x)) {
        retry(x);
        return;
    }
    if (x->connect_failed) {
        gw_upstream_note_connect_failed(&up->pub);
    }
    release_conn(x);
    xfer_detach(x);
    x->finishing = true;
    x->cbs.on_done(x->arg, x->end_err);
    xfer_free(x);
    dispatch(up);
}

/* ---- timers (entry points) ---- */

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct gw_lean_xfer *x = arg;
    (void)fd;
    (void)what;
    if ((x->send_paused && !x->body_done) || x->recv_paused) {
        return; /* the clock stands still while we hold either side; resume re-arms it */
    }
    uint64_t idle = clock_coarse_ms() - x->last_progress_ms;
    uint64_t limit = x->up->pub.opts.timeout_ms;
    if (idle < limit) {
        arm_timer(x, limit - idle);
        return;
    }
    x->busy++;
    bool connecting = x->c != NULL && !x->c->connected;
    if (connecting) {
        gw_upstream_note_connect_err(&x->up->pub, "%s:%u: connect timed out", x->t.host, x->t.port);
    }
    log_warn("%s:%u: no progress for %llu ms%s -> %s", x->t.host, x->t.port,
             (unsigned long long)idle, x->c == NULL ? " (waiting for a connection)" : "",
             err_str(ERR_TIMEOUT));
    lean_xfer_end(x, ERR_TIMEOUT, connecting);
    x->busy--;
    lean_xfer_settle(x);
}

static void
on_kick(evutil_socket_t fd, short what, void *arg)
{
    struct gw_lean_xfer *x = arg;
    (void)fd;
    (void)what;
    x->busy++;
    if (x->c != NULL) {
        lean_conn_pump(x);
        lean_conn_input(x);
    }
    x->busy--;
    lean_xfer_settle(x);
}

/* ---- the API ---- */

static struct gw_lean *
lean_new(struct event_base *base, const struct gw_upstream_opts *opts)
{
    struct gw_lean *up = gw_upstream_alloc(sizeof(*up), &lean_ops, base, opts);
    if (up == NULL) {
        return NULL;
    }
    TAILQ_INIT(&up->active);
    TAILQ_INIT(&up->waiting);
    TAILQ_INIT(&up->idle);
    up->ssl_ctx = lean_tls_new_ctx(up->pub.ca_file, opts->tls_verify);
    if (up->ssl_ctx == NULL) {
        goto fail;
    }
    if (opts->cap != NULL &&
        gw_upstream_cap_join(opts->cap, opts->q, on_cap, up, &up->cap_slot) != 0) {
        goto fail;
    }
    up->cap = opts->cap;
    return up;
fail:
    gw_lean_free(up);
    return NULL;
}

void
gw_lean_free(struct gw_lean *up)
{
    if (up == NULL) {
        return;
    }
    if (up->cap != NULL) {
        gw_upstream_cap_leave(up->cap, up->cap_slot); /* first: no wake-up finds it half freed */
        give_spare(up);
    }
    struct gw_lean_xfer *x;
    struct gw_lean_xfer *next;
    for (x = TAILQ_FIRST(&up->active); x != NULL; x = next) {
        next = TAILQ_NEXT(x, link); /* read before x goes */
        xfer_detach(x);
        xfer_free(x);
    }
    while (!TAILQ_EMPTY(&up->idle)) {
        lean_conn_close(TAILQ_FIRST(&up->idle));
    }
    if (up->dns != NULL) {
        /* fail, not drop, pending lookups: each holds a reference on its connection's
         * bufferevent (libevent 2.1's bufferevent_free does not cancel a lookup), which
         * only the lookup's callback gives back, from the loop's next turn */
        evdns_base_free(up->dns, 1);
    }
    lean_tls_free_ctx(up->ssl_ctx);
    gw_upstream_dealloc(&up->pub);
}

int
gw_lean_xfer_start(struct gw_lean *up, const struct gw_xfer_req *rq, const struct gw_xfer_cbs *cbs,
                   void *arg, struct gw_lean_xfer **out)
{
    /* rq and cbs were checked by gw_upstream_xfer_start */
    bool head = strcmp(rq->method, "HEAD") == 0;
    struct gw_lean_xfer *x = xfer_new(up->pub.base);
    if (x == NULL) {
        return ERR_NOMEM;
    }
    x->pub.ops = &lean_ops;
    x->up = up;
    gw_upmsg_head_init(&x->head);
    buf_init(&x->req, LEAN_MAX_REQ_HEAD);
    const char *path = NULL;
    int err = parse_target(rq->url, &x->t, &path);
    if (err == 0) {
        err = build_head(x, rq, path);
    }
    if (err != 0) {
        xfer_free(x);
        return err;
    }
    x->cbs = *cbs;
    x->arg = arg;
    x->body_length = rq->body_length;
    x->read_only = rq->body_length < 0 && (head || strcmp(rq->method, "GET") == 0);
    x->is_head = head;
    x->no_reuse = rq->no_reuse;
    TAILQ_INSERT_TAIL(&up->active, x, link);
    lean_xfer_touch(x);
    arm_timer(x, up->pub.opts.timeout_ms);
    acquire(x, false); /* no callback runs here: the connection's work starts from x->kick */
    *out = x;
    return 0;
}

void
gw_lean_resume_send(struct gw_lean_xfer *x)
{
    if (x == NULL || x->cancelled || x->finishing || !x->send_paused) {
        return;
    }
    x->send_paused = false;
    lean_xfer_touch(x);
    arm_timer(x, x->up->pub.opts.timeout_ms);
    lean_kick(x);
}

void
gw_lean_resume_recv(struct gw_lean_xfer *x)
{
    if (x == NULL || x->cancelled || x->finishing || !x->recv_paused) {
        return;
    }
    x->recv_paused = false;
    if (x->c != NULL) {
        lean_conn_reading(x->c, true);
    }
    lean_xfer_touch(x);
    arm_timer(x, x->up->pub.opts.timeout_ms);
    lean_kick(x);
}

void
gw_lean_xfer_cancel(struct gw_lean_xfer *x)
{
    if (x == NULL || x->cancelled || x->finishing) {
        return;
    }
    x->cancelled = true;
    lean_xfer_settle(x); /* now, or when the entry point running x's callback unwinds */
}

uint64_t
gw_lean_body_sent(const struct gw_lean_xfer *x)
{
    return x != NULL ? x->body_sent : 0;
}

void
gw_lean_conns(const struct gw_lean *up, uint64_t *open, uint64_t *idle)
{
    if (up->cap != NULL) {
        gw_upstream_cap_conns(up->cap, open, idle); /* the process's, every loop's pool */
        return;
    }
    *open = up->nconns;
    *idle = up->nidle;
}

/* ---- the operations table (gateway/upstream/engine.h) ---- */

GW_UPSTREAM_ENGINE(lean, gw_lean, gw_lean_xfer)
