/*
 * gateway/api/cursor.h: the opaque cursors of the paged listings
 * (GET /_fencegate/v1/locks and /fences; DESIGN.md "Paged listings").
 *
 * A cursor names the last entry of the page it ends, so the next page is a
 * range scan from there whatever the total.  Its text is
 *
 *     <kind> "1" <hex of the lock name> "." <8 hex digits of a check>
 *
 * kind 'l' (locks) or 'f' (fences), "1" the format version, the check an
 * FNV-1a over kind, version and name.  Clients must treat it as opaque: the
 * check catches truncation, typing and a cursor of the other listing
 * (foreign), not forgery; a forged cursor that passes only names another
 * position in the same public list, which reveals nothing.
 * Pure functions, any thread; no allocation.
 */
#ifndef GW_API_CURSOR_H
#define GW_API_CURSOR_H

#include <stddef.h>

#include "common/err.h"
#include "common/lockname.h"

/* The longest cursor text, not counting the NUL. */
#define GW_CURSOR_MAX (2 + 2 * LOCK_NAME_MAX + 1 + 8)

/* Which listing a cursor belongs to. */
enum gw_cursor_kind {
    GW_CURSOR_LOCKS = 'l',  /* GET /_fencegate/v1/locks */
    GW_CURSOR_FENCES = 'f', /* GET /_fencegate/v1/fences */
};

/*
 * gw_cursor_format - the cursor after lock in the listing kind.
 * [in]  lock  a valid lock name (borrowed)
 * [out] out   GW_CURSOR_MAX + 1 bytes, NUL-terminated on 0
 * Returns 0 or ERR_INVAL (not a lock name).
 */
MUST_USE int gw_cursor_format(enum gw_cursor_kind kind, const char *lock,
                              char out[GW_CURSOR_MAX + 1]);

/*
 * gw_cursor_parse - the lock name a cursor of the listing kind names.
 * [in]  s     the cursor text (len bytes; need not be NUL-terminated)
 * [out] lock  LOCK_NAME_MAX + 1 bytes; written only on 0
 * Returns 0, or ERR_INVAL for anything else: too long or short, another
 * kind or version, bad hex, a failed check, or a name that is not a lock
 * name (the API answers 400 "bad_cursor").
 */
MUST_USE int gw_cursor_parse(enum gw_cursor_kind kind, const char *s, size_t len,
                             char lock[LOCK_NAME_MAX + 1]);

#endif
