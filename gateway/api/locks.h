/*
 * gateway/api/locks.h: the election API (DESIGN.md "The election"):
 *
 *   POST /_fencegate/v1/locks/{lock}/acquire  {"holder","lease_ms","wait_ms"}
 *   POST /_fencegate/v1/locks/{lock}/renew    {"token","lease_id"}
 *   POST /_fencegate/v1/locks/{lock}/release  {"token","lease_id"}
 *   GET  /_fencegate/v1/locks/{lock}[?wait_ms=&after=]   (long-poll)
 *   GET  /_fencegate/v1/locks
 *
 * Answers are JSON; errors are {"error":code,"message":text} with 400 (bad
 * JSON or fields, with the reason), 403 (wrong lease_id, or a principal not
 * allowed this lock), 404, 409 (held / superseded, with holder and token),
 * 503 (election not ready, backend unreachable) or 504.  Long-polls hold no
 * thread: the request waits in the election's waiter list.  Requests arrive
 * authenticated (router).  Event-loop thread only.
 */
#ifndef GW_JSON_LOCKS_H
#define GW_JSON_LOCKS_H

struct elect;
struct gw_principal;
struct gw_req;
struct store;

/*
 * gw_api_locks_handle - answer a request under /_fencegate/v1/locks.
 * [in] e          the election, or NULL when none is configured (503)
 * [in] st         the store (the election cache lists the known locks)
 * [in] principal  the authenticated principal (borrowed from the config), or
 *                 NULL in anonymous mode; its "locks" list limits what it may
 *                 acquire, renew and release
 * Always answers req, possibly later (long-polls, backend round trips).
 */
void gw_api_locks_handle(struct gw_req *req, struct elect *e, struct store *st,
                         const struct gw_principal *principal);

#endif
