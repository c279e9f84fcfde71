/*
 * gateway/api/status_page.h: GET /_fencegate/, the status page for people.
 *
 * Plain HTML, one page, no external assets and no script; it refreshes itself
 * every GW_STATUS_PAGE_REFRESH_S seconds (<meta http-equiv="refresh">).  It
 * shows the gateway's readiness and the upstream's state, every lock of the
 * election cache with what the election reads of it now (holder, epoch, lease
 * remaining, last renewal, granting gateway), the fence table and the last
 * GW_STATUS_PAGE_REFUSALS refusals of the audit log.  Every string from
 * outside (lock names, holders, keys, principals) is HTML-escaped; bytes that
 * are not UTF-8 are shown as U+FFFD.  Requests reach it authenticated, like
 * the JSON API.  Event-loop thread only.
 */
#ifndef GW_STATUS_PAGE_H
#define GW_STATUS_PAGE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"

struct elect;
struct gw_req;
struct store;

#define GW_STATUS_PAGE_REFRESH_S 5   /* the page reloads itself this often */
#define GW_STATUS_PAGE_REFUSALS  20  /* refusals shown, newest first */
#define GW_STATUS_PAGE_LOCKS     256 /* locks shown at most (the rest are counted) */

/* What the router knows and this room cannot see (api/ does not include upstream/). */
struct gw_status_ready {
    bool ready;           /* /readyz would answer 200 */
    const char *why;      /* why not ("" when ready); borrowed during the call */
    const char *upstream; /* the upstream endpoint; borrowed during the call */
    bool upstream_ok;     /* the last transfers could connect */
    const char *gateway;  /* this gateway's id; borrowed during the call */
};

/*
 * gw_status_page_handle - answer GET (or HEAD) /_fencegate/ on req: reads
 * each known lock from the election (asynchronously, all at once), then
 * answers 200 text/html.  Other methods: 405.
 * [in] el  the election, or NULL (locks then show the cache only)
 * [in] st  the store, or NULL (503)
 * Always answers req, unless its client leaves first (the reads are then
 * cancelled).
 */
void gw_status_page_handle(struct gw_req *req, struct elect *el, struct store *st,
                           const struct gw_status_ready *rd);

/* gw_status_page_escape - append s as HTML text (&, <, >, ", ' as entities, bad UTF-8 and
 * control bytes as U+FFFD).  NULL appends nothing.  Returns 0 or a buf error. */
MUST_USE int gw_status_page_escape(struct buf *b, const char *s);

#endif
