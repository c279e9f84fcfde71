/*
 * gateway/cli/workers.c: the worker loops (workers.h).
 *
 * A worker is a thread running its own event loop.  Everything it owns is
 * made on the control thread before the thread starts and freed on the
 * worker's own thread when its loop ends (its server's requests release
 * their tickets and close their endpoints then), except the loop, its queue
 * and its fence handle, which the control thread frees after the join.  The
 * control loop talks to a worker only by messages on the worker's queue;
 * a worker tells the control loop it has ended by a message on the
 * control's queue (so serve exits only after every worker has: a worker's
 * fenced writes need the control loop until their last release).
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#define LOG_MODULE  "workers"
#include "gateway/cli/workers.h"

#include <event2/event.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "gateway/base/config.h"
#include "gateway/base/inflight.h"
#include "gateway/base/metrics.h"
#include "gateway/fence/remote.h"
#include "gateway/http/access.h"
#include "gateway/http/http.h"
#include "gateway/net/loopctx.h"
#include "gateway/net/loopmsg.h"
#include "gateway/proxy/cond.h"
#include "gateway/proxy/proxy.h"
#include "gateway/proxy/router.h"
#include "gateway/s3/sigv4.h"
#include "gateway/s3client/s3client.h"
#include "gateway/upstream/upstream.h"

/* One worker loop and what it owns. */
struct worker {
    struct gw_workers *ws;        /* the set */
    pthread_t th;                 /* its thread */
    bool started;                 /* th runs (joined by gw_workers_free) */
    struct event_base *base;      /* owned; its loop (freed after the join) */
    struct gw_loopq *q;           /* owned; the control loop's messages to it */
    struct gw_loopctx ctx;        /* the thread's gw_loopctx_here */
    struct gw_metrics_set mset;   /* its counters (gw_metrics_attach on its thread) */
    struct gw_upstream *up;       /* owned; the proxy's */
    struct gw_upstream *up_s3;    /* owned; the S3 client's (libcurl), or up */
    struct gw_s3client *s3c;      /* owned; signs what its proxy forwards */
    struct gw_proxy *proxy;       /* owned */
    struct gw_sigv4_keycache *kc; /* owned; its inbound signing keys */
    struct gw_router router;      /* embedded; the control's, loop-owned parts replaced */
    struct gw_server *srv;        /* owned */
    const struct gw_config *cfg;  /* the configuration it serves (its thread) */
    struct gw_loopmsg drain;      /* embedded: drain, then end the loop */
    struct gw_loopmsg stop;       /* embedded: end the loop now */
    bool drain_posted;            /* control thread: each embedded message is posted once */
    bool stop_posted;
};

struct gw_workers {
    struct gw_workers_opts o; /* copied */
    uint32_t n;               /* workers */
    uint32_t nexited;         /* control thread: worker loops that have ended */
    struct worker *w;         /* w[0..n) */
};

/* A control-loop setting on its way to one worker. */
enum wkind { W_CONFIG, W_TRAILERS, W_COND_CAPS };
struct wmsg {
    struct gw_loopmsg m; /* first */
    struct worker *w;
    enum wkind kind;
    const struct gw_config *cfg; /* W_CONFIG */
    bool on;                     /* W_TRAILERS */
    struct gw_cond_caps caps;    /* W_COND_CAPS */
};

uint32_t
gw_config_workers(const struct gw_config *cfg)
{
    if (cfg->workers != 0) {
        return cfg->workers;
    }
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        return 1;
    }
    int n = CPU_COUNT(&set);
    return n < 1 ? 1 : n > GW_CONFIG_MAX_WORKERS ? GW_CONFIG_MAX_WORKERS : (uint32_t)n;
}

/* gw_proxy_drain's done: no write runs on without its client either. */
static void
on_worker_writes_ended(void *arg)
{
    struct worker *w = arg;
    (void)event_base_loopexit(w->base, NULL);
}

/* gw_server_drain's done: the last connection is gone.  The loop still ends
 * only after its fenced writes whose clients left (DESIGN "The crossings"). */
static void
on_worker_drained(void *arg)
{
    struct worker *w = arg;
    gw_proxy_drain(w->proxy, on_worker_writes_ended, w);
}

static void
on_drain(struct gw_loopmsg *m)
{
    struct worker *w = GW_LOOPMSG_OWNER(m, struct worker, drain);
    gw_server_drain(w->srv, on_worker_drained, w);
}

static void
on_stop(struct gw_loopmsg *m)
{
    struct worker *w = GW_LOOPMSG_OWNER(m, struct worker, stop);
    (void)event_base_loopbreak(w->base);
}

/* To the control loop: a worker loop has ended.  On the heap: the control
 * loop may have ended first, and its queue then cancels it after the set is
 * freed. */
struct exited_msg {
    struct gw_loopmsg m; /* first */
    struct gw_workers *ws;
};

static void
on_exited(struct gw_loopmsg *m)
{
    struct gw_workers *ws = ((struct exited_msg *)m)->ws; /* alive while the control loop runs */
    free(m);
    ws->nexited++;
    if (ws->nexited == ws->n && ws->o.exited != NULL) {
        ws->o.exited(ws->o.arg);
    }
}

static void
on_cancel_exited(struct gw_loopmsg *m, int why)
{
    (void)why;
    free(m);
}

/* gw_loopmsg_cancel_fn of the embedded messages: nothing to release. */
static void
on_cancel_embedded(struct gw_loopmsg *m, int why)
{
    (void)m;
    (void)why;
}

static void
on_setting(struct gw_loopmsg *m)
{
    struct wmsg *wm = (struct wmsg *)m;
    struct worker *w = wm->w;
    switch (wm->kind) {
    case W_CONFIG:
        gw_server_set_config(w->srv, wm->cfg);
        /* nothing is classified under the previous one here from now on */
        gw_inflight_moved_on(w->cfg->inflight, w->ctx.index);
        w->cfg = wm->cfg;
        gw_proxy_set_config(w->proxy, wm->cfg);
        if (gw_s3client_set_config(w->s3c, wm->cfg) != 0) {
            log_warn("worker %u: requests to the upstream keep being signed with the previous "
                     "upstream settings",
                     w->ctx.index);
        }
        break;
    case W_TRAILERS:
        gw_proxy_set_trailers(w->proxy, wm->on);
        break;
    case W_COND_CAPS:
        gw_proxy_set_cond_caps(w->proxy, &wm->caps);
        break;
    }
    free(wm);
}

/* A setting the loop will never run: it has ended, so it classifies nothing
 * under a configuration it never took (a reload's hold must not wait for it). */
static void
on_cancel_setting(struct gw_loopmsg *m, int why)
{
    struct wmsg *wm = (struct wmsg *)m;
    (void)why;
    if (wm->kind == W_CONFIG) {
        gw_inflight_moved_on(wm->cfg->inflight, wm->w->ctx.index);
    }
    free(m);
}

/* Posts a copy of tmpl to every worker that still takes messages. */
static void
broadcast(struct gw_workers *ws, const struct wmsg *tmpl)
{
    for (uint32_t i = 0; ws != NULL && i < ws->n; i++) {
        struct wmsg *wm = malloc(sizeof(*wm));
        if (wm == NULL) {
            log_error("out of memory: worker %u keeps its previous settings", i + 1);
            continue;
        }
        *wm = *tmpl;
        wm->m = (struct gw_loopmsg){.run = on_setting, .cancel = on_cancel_setting};
        wm->w = &ws->w[i];
        if (gw_loopq_post(ws->w[i].q, &wm->m) != 0) {
            on_cancel_setting(&wm->m, 0); /* that loop has ended */
        }
    }
}

void
gw_workers_set_config(struct gw_workers *ws, const struct gw_config *cfg)
{
    broadcast(ws, &(struct wmsg){.kind = W_CONFIG, .cfg = cfg});
}

void
gw_workers_set_trailers(struct gw_workers *ws, bool on)
{
    broadcast(ws, &(struct wmsg){.kind = W_TRAILERS, .on = on});
}

void
gw_workers_set_cond_caps(struct gw_workers *ws, const struct gw_cond_caps *caps)
{
    broadcast(ws, &(struct wmsg){.kind = W_COND_CAPS, .caps = *caps});
}

int
gw_loop_upstreams_open(struct event_base *base, const struct gw_config *cfg,
                       const struct gw_loop_up *lu, struct gw_upstream **up,
                       struct gw_upstream **up_s3)
{
    uint32_t max = cfg->upstream.max_connections;
    uint32_t loops = lu->loops > 0 ? lu->loops : 1;
    bool lean = cfg->upstream.client != GW_UPSTREAM_CLIENT_CURL;
    struct gw_upstream_opts uo = {
        .engine = lean ? GW_UPSTREAM_LEAN : GW_UPSTREAM_CURL,
        .connect_timeout_ms = cfg->upstream.connect_timeout_ms,
        .timeout_ms = cfg->upstream.timeout_ms,
        /* upstream.max_connections is the process's: the cap's, or each loop its share */
        .max_connections = max == 0 ? 0 : (max + loops - 1) / loops,
        .ca_file = cfg->upstream.ca_file,
        .tls_verify = cfg->upstream.tls_verify,
        .streak = lu->reach,
    };
    if (lean && lu->cap != NULL) {
        uo.max_connections = max;
        uo.cap = lu->cap;
        uo.q = lu->q;
    }
    *up_s3 = NULL;
    *up = gw_upstream_new(base, &uo);
    if (*up == NULL) {
        return ERR_NOMEM;
    }
    uo.engine = GW_UPSTREAM_CURL;
    uo.max_connections = max == 0 ? 0 : (max + loops - 1) / loops;
    uo.cap = NULL;
    uo.q = NULL;
    uo.streak = NULL; /* the S3 client's own calls are not the proxy's reachability */
    *up_s3 = !lean ? *up : gw_upstream_new(base, &uo);
    if (*up_s3 == NULL) {
        gw_upstream_free(*up);
        *up = NULL;
        return ERR_NOMEM;
    }
    return 0;
}

/* Frees what the worker's requests use, on its thread, in dependency order. */
static void
worker_release(struct worker *w)
{
    gw_server_free(w->srv); /* aborts requests: tickets released, endpoints closed */
    w->srv = NULL;
    gw_proxy_free(w->proxy); /* writes still running without their client */
    w->proxy = NULL;
    gw_s3client_free(w->s3c);
    w->s3c = NULL;
    if (w->up_s3 != w->up) {
        gw_upstream_free(w->up_s3);
    }
    gw_upstream_free(w->up);
    w->up = w->up_s3 = NULL;
    gw_sigv4_keycache_free(w->kc);
    w->kc = NULL;
}

static void *
worker_main(void *arg)
{
    struct worker *w = arg;
    gw_loopctx_here = &w->ctx;
    if (gw_metrics_attach(&w->mset) != 0) {
        log_error("worker %u: counting into the main set (too many loops)", w->ctx.index);
    }
    (void)event_base_dispatch(w->base);
    worker_release(w);
    /* its requests are gone: a reload's hold waits for nothing more here */
    gw_inflight_moved_on(w->cfg->inflight, w->ctx.index);
    gw_loopq_close(w->q); /* answers still on their way are cancelled (freed) */
    gw_access_thread_done();
    gw_metrics_detach();
    gw_loopctx_here = NULL;
    struct exited_msg *em = malloc(sizeof(*em));
    if (em == NULL) {
        log_error("worker %u: out of memory: the control loop waits for its drain's end",
                  w->ctx.index);
        return NULL;
    }
    *em = (struct exited_msg){.m = {.run = on_exited, .cancel = on_cancel_exited}, .ws = w->ws};
    if (gw_loopq_post(w->ws->o.ctlq, &em->m) != 0) {
        free(em); /* the control loop has ended first */
    }
    return NULL;
}

/* The loop-owned parts of a worker, made on the control thread. */
static int
worker_init(struct worker *w, struct gw_workers *ws, uint32_t index, char *errbuf, size_t errlen)
{
    const struct gw_workers_opts *o = &ws->o;
    w->ws = ws;
    w->drain = (struct gw_loopmsg){.run = on_drain, .cancel = on_cancel_embedded};
    w->stop = (struct gw_loopmsg){.run = on_stop, .cancel = on_cancel_embedded};
    struct event_config *ec = event_config_new();
    if (ec != NULL) {
        (void)event_config_set_flag(ec, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
        w->base = event_base_new_with_config(ec);
        event_config_free(ec);
    }
    if (w->base == NULL || (w->q = gw_loopq_new(w->base)) == NULL) {
        (void)snprintf(errbuf, errlen, "cannot create worker loop %u", index);
        return ERR_NOMEM;
    }
    w->ctx = (struct gw_loopctx){.base = w->base, .q = w->q, .ctl = o->ctlq, .index = index};
    if (o->hub != NULL && (w->ctx.fence = gw_fence_remote_new(o->hub, w->q)) == NULL) {
        (void)snprintf(errbuf, errlen, "out of memory");
        return ERR_NOMEM;
    }
    struct gw_loop_up lu = {.loops = ws->n + 1, .reach = o->reach, .cap = o->cap, .q = w->q};
    if (gw_loop_upstreams_open(w->base, o->cfg, &lu, &w->up, &w->up_s3) != 0 ||
        (w->kc = gw_sigv4_keycache_new()) == NULL) {
        (void)snprintf(errbuf, errlen, "out of memory");
        return ERR_NOMEM;
    }
    w->s3c = gw_s3client_new(w->up_s3, o->cfg, errbuf, errlen);
    if (w->s3c == NULL) {
        return ERR_INVAL;
    }
    w->proxy = gw_proxy_new(o->cfg, w->up, w->s3c, errbuf, errlen);
    if (w->proxy == NULL) {
        return ERR_INVAL;
    }
    gw_proxy_copy_settings(w->proxy, o->tmpl->proxy);
    w->router = *o->tmpl;
    w->router.proxy = w->proxy;
    w->router.upstream = w->up;
    w->router.kc = w->kc;
    w->router.elect = NULL; /* the election's requests are relayed (o->relay) */
    w->router.probe = NULL;
    w->router.relay = o->relay;
    struct gw_server_opts so = {.fair = o->fair,
                                .loops = ws->n + 1,
                                .reuseport = true,
                                .first = o->ctl_srv,
                                .handout = o->handout,
                                .q = w->q};
    w->cfg = o->cfg;
    w->srv =
        gw_server_new_opts(w->base, o->cfg, gw_router_on_request, &w->router, &so, errbuf, errlen);
    return w->srv != NULL ? 0 : ERR_IO;
}

/* The control thread's share of a worker's cleanup (after the join, or unstarted). */
static void
worker_cleanup(struct worker *w)
{
    worker_release(w); /* unstarted: what worker_init made */
    gw_fence_remote_free(w->ctx.fence);
    w->ctx.fence = NULL;
}

/* The worker's queue and loop: last, since the store's late completions may still hop there. */
static void
worker_free_loop(struct worker *w)
{
    gw_loopq_free(w->q);
    if (w->base != NULL) {
        event_base_free(w->base);
    }
}

struct gw_workers *
gw_workers_start(const struct gw_workers_opts *o, char *errbuf, size_t errlen)
{
    struct gw_workers *ws = calloc(1, sizeof(*ws));
    if (ws == NULL || (ws->w = calloc(o->n, sizeof(*ws->w))) == NULL) {
        free(ws);
        (void)snprintf(errbuf, errlen, "out of memory");
        return NULL;
    }
    ws->o = *o;
    ws->n = o->n;
    for (uint32_t i = 0; i < ws->n; i++) {
        if (worker_init(&ws->w[i], ws, i + 1, errbuf, errlen) != 0) {
            goto fail;
        }
    }
    for (uint32_t i = 0; i < ws->n; i++) {
        if (pthread_create(&ws->w[i].th, NULL, worker_main, &ws->w[i]) != 0) {
            (void)snprintf(errbuf, errlen, "cannot start worker thread %u", i + 1);
            goto fail;
        }
        ws->w[i].started = true;
    }
    return ws;
fail:
    gw_workers_stop(ws);
    gw_workers_free(ws);
    return NULL;
}

void
gw_workers_drain(struct gw_workers *ws)
{
    for (uint32_t i = 0; ws != NULL && i < ws->n; i++) {
        struct worker *w = &ws->w[i];
        if (w->q != NULL && !w->drain_posted) {
            w->drain_posted = true;
            if (gw_loopq_post(w->q, &w->drain) != 0) {
                log_debug("worker %u has ended already", i + 1);
            }
        }
    }
}

void
gw_workers_stop(struct gw_workers *ws)
{
    for (uint32_t i = 0; ws != NULL && i < ws->n; i++) {
        struct worker *w = &ws->w[i];
        if (w->q != NULL && !w->stop_posted) {
            w->stop_posted = true;
            if (gw_loopq_post(w->q, &w->stop) != 0) {
                log_debug("worker %u has ended already", i + 1);
            }
        }
    }
}

void
gw_workers_join(struct gw_workers *ws)
{
    for (uint32_t i = 0; ws != NULL && i < ws->n; i++) {
        if (ws->w[i].started) {
            (void)pthread_join(ws->w[i].th, NULL);
            ws->w[i].started = false;
        }
        worker_cleanup(&ws->w[i]);
    }
}

void
gw_workers_free(struct gw_workers *ws)
{
    if (ws == NULL) {
        return;
    }
    gw_workers_join(ws);
    for (uint32_t i = 0; i < ws->n; i++) {
        worker_free_loop(&ws->w[i]);
    }
    free(ws->w);
    free(ws);
}
