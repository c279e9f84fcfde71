/*
 * gateway/api/api.h: the gateway's JSON API under /_fencegate/v1/ (DESIGN.md
 * "The election"): fences and audit here; the election endpoints plug in
 * beside them.  Requests reach it authenticated, like every S3 request.
 * Event-loop thread only; reads are bounded LMDB read transactions.
 *
 * Room gateway/api/ (make check-deps: no upstream/ or proxy/):
 *   api.h / api.c              routing under /_fencegate/v1/, fences, audit
 *   locks.h / locks.c          the election endpoints (acquire, renew, release,
 *                              show and long-poll)
 *   json_audit.h / json_audit.c audit records as JSON (also for `fencegate audit`)
 *   status_page.h / status_page.c GET /_fencegate/: the HTML status page
 *   cursor.h / cursor.c        the opaque cursors of the paged listings
 */
#ifndef GW_API_H
#define GW_API_H

#include <stdbool.h>

struct gw_principal;
/* Entries per page of GET /locks and GET /fences: by default, and at most. */
#define GW_LIST_DEFAULT 1000
#define GW_LIST_MAX     10000

struct gw_req;
struct store;

/*
 * gw_api_may_see - the role rule for reads (DESIGN.md "Roles"): whether
 * principal may see lock (its record, its fence, its audit records).  Every
 * handler that lists or shows locks asks this, once per lock.
 * [in] principal  borrowed; NULL is anonymous mode (loopback): sees everything
 * [in] lock       a lock name; "" (a record under no lock) is seen only by
 *                 principals that see every lock
 * Returns true for anonymous mode, an admin ("admin": true), a principal
 * without a "locks" list (it may write under any lock, so it reads them all),
 * or one whose "locks" names lock.
 */
bool gw_api_may_see(const struct gw_principal *principal, const char *lock);

/*
 * gw_api_is_admin - whether principal may use the admin API (revoke):
 * "admin": true, or anonymous mode (NULL: no principals are configured, and
 * the listener is loopback or allow_anonymous was given).
 */
bool gw_api_is_admin(const struct gw_principal *principal);

/*
 * gw_api_is_admin_path - whether path (raw, before '?') is the admin API
 * (POST /_fencegate/v1/locks/{lock}/revoke) or the status page
 * (/_fencegate/): served on the admin listeners when admin_listen is set,
 * else on the S3 listeners.
 */
bool gw_api_is_admin_path(const char *path);

/*
 * gw_api_handle - answer a request whose path starts with /_fencegate.
 * [in] st         the open store (borrowed), or NULL (then 503)
 * [in] principal  the authenticated principal (borrowed), or NULL in
 *                 anonymous mode: fences and audit records are filtered by
 *                 gw_api_may_see
 * Always answers req (403 for an audit query of a lock it may not see, 404
 * for unknown paths, 405 for wrong methods).
 */
void gw_api_handle(struct gw_req *req, struct store *st, const struct gw_principal *principal);

#endif
