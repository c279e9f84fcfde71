/*
 * gateway/proxy/router.h: the first stop of every request.
 *
 * Answers the gateway's own endpoints (/healthz, /readyz, /metrics, the
 * /_fencegate/ API) and hands S3 requests, once parsed and classified, to the
 * proxy.  Event-loop thread only.
 */
#ifndef GW_ROUTER_H
#define GW_ROUTER_H

#include <stdbool.h>

struct elect;
struct gw_bucket_probe;
struct gw_fence;
struct gw_proxy;
struct gw_req;
struct gw_sigv4_keycache;
struct gw_upload;
struct gw_upstream;
struct store;

struct gw_relay_hub;

struct gw_router {
    struct gw_proxy *proxy;        /* borrowed */
    struct gw_sigv4_keycache *kc;  /* borrowed; signing keys of inbound principals */
    struct gw_fence *fence;        /* borrowed; NULL: nothing is fenced (tests only) */
    struct store *store;           /* borrowed; the JSON API, refusals' audit records */
    struct elect *elect;           /* borrowed; NULL when no election is configured */
    struct gw_upstream *upstream;  /* borrowed; for /readyz; NULL: not checked (tests) */
    struct gw_bucket_probe *probe; /* borrowed; CreateBucket of an existing bucket; may be NULL */
    struct gw_upload *uploads;     /* borrowed; multipart bookkeeping; may be NULL */
    struct gw_relay_hub *relay;    /* borrowed; a worker loop's way to the control loop's
                                      server for what only it serves; NULL on the control loop */
    bool ready;                    /* /readyz answers 200 only when true */
    const char *not_ready;         /* static text: why not ready, or NULL */
};

/* gw_router_on_request - the gw_request_fn given to gw_server_new; arg is a struct gw_router. */
void gw_router_on_request(struct gw_req *req, void *arg);

#endif
