/*
 * gateway/http/relay.h: a worker loop hands a request only the control loop
 * may serve (the JSON API under /_fencegate/, /healthz /readyz /metrics, the
 * status page, CreateBucket's probe) to the control loop's HTTP server, and
 * passes the answer back to its client (DESIGN "Control-only requests: the
 * relay").
 *
 * The worker reads the request body whole (at most GW_RELAY_BODY_MAX, else
 * 413), writes the head again from its gw_req (request line with the raw
 * target, every header in received order; hop-by-hop and framing headers
 * dropped, Content-Length of the buffered body and "Connection: close"
 * added), and posts head and body to the control loop.  There an AF_UNIX
 * socketpair's one end becomes a relayed connection of the control server
 * (gw_http_conn_relay: the client's peer address, listener kind and TLS flag,
 * the worker request's id; no second access-log line, no second count); the
 * hub writes the bytes to the other end and reads the answer until EOF
 * (at most GW_RELAY_ANSWER_MAX, else 502), then posts it back, addressed to an
 * endpoint of the worker's queue opened for this request.  The worker parses
 * it (llhttp, HTTP_RESPONSE) and answers with its own framing, so its
 * client's keep-alive goes on.  No timeout of the relay's own: the control
 * server's apply (an API long poll may take 60 s).
 *
 * A client that leaves mid-relay: its endpoint is closed (an answer on its
 * way is cancelled and freed) and a cancel crosses to the control loop,
 * which closes its end of the pair; the relayed connection takes that EOF
 * as a hang-up and aborts its request (a long poll's election call is
 * cancelled).
 */
#ifndef GW_RELAY_H
#define GW_RELAY_H

#include "common/err.h"

struct gw_loopq;
struct gw_req;
struct gw_server;
struct gw_relay_hub;

#define GW_RELAY_BODY_MAX   ((size_t)8 << 20)  /* request body relayed, at most (else 413) */
#define GW_RELAY_ANSWER_MAX ((size_t)64 << 20) /* answer bytes, at most (else 502) */

/*
 * gw_relay_hub_new - the control side (control thread).
 * [in] srv   the control loop's server (borrowed; must outlive the hub)
 * [in] ctlq  the control loop's queue (borrowed): requests arrive there;
 *            close it before gw_relay_hub_free, so no request runs after.
 * Returns the hub, or NULL (out of memory).
 */
struct gw_relay_hub *gw_relay_hub_new(struct gw_server *srv, struct gw_loopq *ctlq);

/*
 * gw_relay_hub_free - close every relay in flight (their relayed requests see
 * a hang-up; their workers get no answer) and free the hub (control thread,
 * after gw_loopq_close(ctlq)).  NULL-safe.
 */
void gw_relay_hub_free(struct gw_relay_hub *h);

/*
 * gw_relay_request - take req over and have the control loop serve it
 * (worker loop thread: gw_loopctx_here != NULL; the answer comes back on
 * gw_loopctx_here->q).  On 0 the relay answers req (the control server's
 * answer, or 413 past GW_RELAY_BODY_MAX, 502 past GW_RELAY_ANSWER_MAX or on a
 * broken answer, 503 when the control loop is gone) and handles its abort.
 * Returns 0, ERR_INVAL (not on a worker loop) or ERR_NOMEM: req untouched,
 * still the caller's.
 */
MUST_USE int gw_relay_request(struct gw_relay_hub *h, struct gw_req *req);

#endif
