/*
 * gateway/base/metrics.h: process-wide counters, exported as Prometheus text.
 *
 * Plain integers bumped on the event-loop thread only (no atomics needed);
 * gw_metrics_render() formats them for GET /metrics.
 */
#ifndef GW_METRICS_H
#define GW_METRICS_H

#include <stdint.h>

#include "common/buf.h"

struct gw_metrics {
    uint64_t requests;        /* requests whose head was parsed */
    uint64_t requests_active; /* requests not yet answered */
    uint64_t proxied;         /* requests forwarded upstream */
    uint64_t writes;          /* forwarded requests classified as writes */
    uint64_t responses_2xx;   /* responses by class */
    uint64_t responses_3xx;
    uint64_t responses_4xx;
    uint64_t responses_5xx;
    uint64_t upstream_errors;             /* transfers that failed to connect or broke */
    uint64_t upstream_timeouts;           /* transfers that timed out */
    uint64_t internal_errors;             /* requests failed by a step of our own (500) */
    uint64_t client_aborts;               /* clients that hung up before their response ended */
    uint64_t bytes_in;                    /* request-body bytes handed upstream */
    uint64_t bytes_out;                   /* response-body bytes handed to clients */
    uint64_t fence_rejections;            /* writes refused by the fence */
    uint64_t audit_failures;              /* refusals answered 503: record not queued */
    uint64_t classify_refusals;           /* requests refused as not classified exactly (G9) */
    uint64_t window_reads;                /* epoch files read to open a write window */
    uint64_t window_holds;                /* last bytes held for a write window */
    uint64_t window_cuts;                 /* writes cut before their last byte: no window */
    uint64_t checksum_trailers_forwarded; /* 1: client checksum trailers go upstream */
    uint64_t client_conns_refused;        /* connections refused: address over its share */
    uint64_t client_transfers_refused;    /* requests answered 503: address over its share */
    uint64_t idle_shed;                   /* idle connections closed at the connection limit */
    uint64_t slow_bodies_cut;             /* bodies cut under limits.min_body_rate */
    uint64_t conditional_writes;          /* 1: fenced overwrites go as conditional writes */
    uint64_t cond_heads;                  /* HEADs for a key's ETag (the map missed) */
    uint64_t cond_slowdowns;              /* our condition failed, token still highest: 503 */
    uint64_t cond_store_refused;          /* our condition failed, token superseded: 409 */
};

/* The one instance. */
extern struct gw_metrics gw_metrics;

/* gw_metrics_count_status - bump the class counter for an HTTP status. */
void gw_metrics_count_status(int status);

/* gw_metrics_render - append the Prometheus text exposition to out. Returns 0 or a buf error. */
MUST_USE int gw_metrics_render(struct buf *out);

#endif
