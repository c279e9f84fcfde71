/*
 * gateway/api/api.h: the gateway's JSON API under /_fencegate/v1/ (DESIGN.md
 * "Election API"): fences and audit here; the election endpoints plug in
 * beside them.  Requests reach it authenticated, like every S3 request.
 * Event-loop thread only; reads are bounded LMDB read transactions.
 *
 * Room gateway/api/ (make check-deps: no upstream/ or proxy/):
 *   api.h / api.c              routing under /_fencegate/v1/, fences, audit
 *   locks.h / locks.c          the election endpoints (acquire, renew, release,
 *                              show and long-poll)
 *   json_audit.h / json_audit.c audit records as JSON (also for `fencegate audit`)
 *   cursor.h / cursor.c        the opaque cursors of the paged listings
 */
#ifndef GW_API_H
#define GW_API_H

/* Entries per page of GET /locks and GET /fences: by default, and at most. */
#define GW_LIST_DEFAULT 1000
#define GW_LIST_MAX     10000

struct gw_req;
struct store;

/*
 * gw_api_handle - answer a request whose path starts with /_fencegate.
 * [in] st  the open store (borrowed), or NULL (then 503)
 * Always answers req (404 for unknown paths, 405 for wrong methods).
 */
void gw_api_handle(struct gw_req *req, struct store *st);

#endif
