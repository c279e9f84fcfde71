/*
 * gateway/cli/workers.h: the worker loops beside the control loop (DESIGN
 * "Worker loops").
 *
 * `workers: N` runs N event loops that serve clients: the control loop (the
 * thread that runs serve, which keeps the fence, the election, the store's
 * completions, the probes and the admin listeners) and N - 1 worker loops,
 * each on its own thread with its own HTTP server on the same ports
 * (SO_REUSEPORT), upstream pools, S3 client, proxy and signing-key cache.
 * A worker loop's fenced writes reach the fence through its crossings
 * (gateway/fence/remote.h, port.h); its control-only requests (the JSON
 * API, the status page, the operator endpoints, CreateBucket's probe) are
 * served by the control loop through the relay (gateway/http/relay.h).
 *
 * Control thread only: every function here.
 */
#ifndef GW_CLI_WORKERS_H
#define GW_CLI_WORKERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct gw_config;
struct gw_upstream;
struct gw_upstream_streak;
struct gw_cond_caps;
struct gw_fair_table;
struct gw_fence_hub;
struct gw_loopq;
struct gw_relay_hub;
struct gw_router;
struct gw_server;
struct gw_workers;

/* What the worker loops share with the control loop (all borrowed; they must outlive the set). */
struct gw_workers_opts {
    const struct gw_config *cfg;  /* the configuration in force */
    const struct gw_router *tmpl; /* the control loop's router: copied, loop-owned parts replaced */
    struct gw_server *ctl_srv;    /* the control loop's server: the ports its workers bind */
    struct gw_fair_table *fair;   /* the client-address table every loop's server shares */
    struct gw_handout *handout;   /* the acceptor's hand-out (every loop joins it), or NULL */
    struct gw_loopq *ctlq;        /* the control loop's queue */
    struct gw_fence_hub *hub;     /* the fence's control side, or NULL (nothing fenced) */
    struct gw_relay_hub *relay;   /* the control side of the relay */
    uint32_t n;                   /* worker loops to start (>= 1) */
    void (*exited)(void *arg);    /* every worker loop has ended (on the control loop) */
    void *arg;
    /* the unreachable streak every loop's proxy client feeds (/readyz reads it) */
    struct gw_upstream_streak *reach;
    /* the cap on upstream connections every loop's lean proxy client shares, or NULL */
    struct gw_upstream_cap *cap;
};

/*
 * gw_workers_start - start o->n worker loops.
 * Returns the set or NULL (errbuf says why; nothing is left running).
 */
struct gw_workers *gw_workers_start(const struct gw_workers_opts *o, char *errbuf, size_t errlen);

/* gw_workers_set_config - every worker loop uses cfg (borrowed; kept until exit) from now on. */
void gw_workers_set_config(struct gw_workers *ws, const struct gw_config *cfg);

/* gw_workers_set_trailers - gw_proxy_set_trailers on every worker loop. */
void gw_workers_set_trailers(struct gw_workers *ws, bool on);

/* gw_workers_set_cond_caps - gw_proxy_set_cond_caps on every worker loop (copied). */
void gw_workers_set_cond_caps(struct gw_workers *ws, const struct gw_cond_caps *caps);

/* gw_workers_drain - every worker drains its server and ends its loop when empty (then exited). */
void gw_workers_drain(struct gw_workers *ws);

/* gw_workers_stop - every worker ends its loop now (their requests are aborted).  NULL-safe. */
void gw_workers_stop(struct gw_workers *ws);

/*
 * gw_workers_join - wait for every worker's loop to end (after drain or
 * stop) and free what its requests used.  Their messages to the control loop
 * may still be queued there: close its queue after this.  NULL-safe.
 */
void gw_workers_join(struct gw_workers *ws);

/*
 * gw_workers_free - join (if not done) and free the rest: the workers'
 * queues (closed: a store completion that hops to one after its loop ended
 * is cancelled, not lost in freed memory) and loops.  Call it after the
 * store is closed.  NULL-safe.
 */
void gw_workers_free(struct gw_workers *ws);

/* What one loop's upstream clients share with the other loops'. */
struct gw_loop_up {
    uint32_t loops;                   /* event loops serving clients (>= 1) */
    struct gw_upstream_streak *reach; /* the unreachable streak, or NULL: the client's own */
    struct gw_upstream_cap *cap;      /* the lean proxy clients' cap, or NULL: a share each */
    struct gw_loopq *q;               /* this loop's queue (the cap's wake-ups) */
};

/*
 * gw_loop_upstreams_open - one loop's upstream clients on base: the proxy's
 * (upstream.client) and the internal S3 client's (libcurl; the same one when
 * that is curl too).  The proxy's client feeds lu->reach (borrowed, outlives
 * the clients; NULL: a streak of its own), the unreachable streak every
 * loop's proxy client shares; a separate S3 client keeps its own, as with one
 * loop.  upstream.max_connections: a lean proxy client with lu->cap shares
 * the process's cap (DESIGN "The upstream pool across loops"); every other
 * client takes its share among lu->loops, rounded up.
 * Returns 0 or ERR_NOMEM (nothing left open).
 */
int gw_loop_upstreams_open(struct event_base *base, const struct gw_config *cfg,
                           const struct gw_loop_up *lu, struct gw_upstream **up,
                           struct gw_upstream **up_s3);

/* gw_config_workers - the loops `workers` asks for (0: the CPUs this process may use). */
uint32_t gw_config_workers(const struct gw_config *cfg);

#endif
