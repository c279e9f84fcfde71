/*
 * gateway/proxy/etag_map.h: the ETag each key had after this gateway's last
 * fenced write of it (DESIGN "Conditional writes").
 *
 * A fenced overwrite goes to the store with a condition on the version the
 * gateway knows: If-Match with the key's ETag, or If-None-Match: * when the
 * key is known to be absent.  This map is where the gateway knows it from:
 * filled from its own fenced writes' answers (and from the HEAD it sends on
 * a miss), keyed by bucket and key, each entry tagged with the lock and the
 * epoch (token) it was learned under.  A lookup under another lock or epoch
 * misses and drops the entry: an epoch advance forgets the lock's entries,
 * since writes of the older epoch elsewhere may have changed them.
 *
 * Bounded: at most `max` entries (fencing.etag_cache_entries, default 65536,
 * about 300 bytes each with a short key: ~20 MiB at the default); past it the
 * least recently used entry goes.  A miss costs one HEAD, never correctness.
 *
 * Event-loop thread only.  Strings are copied in; lookups copy out.
 */
#ifndef GW_ETAG_MAP_H
#define GW_ETAG_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define GW_ETAG_MAX 128 /* longest ETag kept (bare, without quotes) */

struct gw_etag_map;

/* gw_etag_map_new - an empty map of at most max (>= 1) entries.  NULL: out of memory. */
struct gw_etag_map *gw_etag_map_new(size_t max);

/* gw_etag_map_free - free every entry and the map.  NULL-safe. */
void gw_etag_map_free(struct gw_etag_map *m);

/* gw_etag_map_set_max - a new bound (>= 1; SIGHUP); entries past it go now, oldest first. */
void gw_etag_map_set_max(struct gw_etag_map *m, size_t max);

/* gw_etag_map_count - entries held. */
size_t gw_etag_map_count(const struct gw_etag_map *m);

/*
 * gw_etag_map_get - what the map knows of bucket/key under lock at epoch.
 * [out] etag    the bare ETag (etaglen >= GW_ETAG_MAX + 1), "" when absent
 * [out] absent  true: the key is known not to exist
 * Returns 0 (known; the entry becomes the most recently used), or
 * ERR_NOTFOUND (unknown, or learned under another lock or epoch: dropped).
 */
MUST_USE int gw_etag_map_get(struct gw_etag_map *m, const char *lock, uint64_t epoch,
                             const char *bucket, const char *key, char *etag, size_t etaglen,
                             bool *absent);

/*
 * gw_etag_map_put - bucket/key has ETag etag (bare or quoted: quotes are
 * removed) under lock at epoch, or is absent (etag NULL).  Replaces what was
 * known.  Returns 0, ERR_INVAL (an ETag too long or with a quote inside: not
 * kept, and what was known is dropped), ERR_NOMEM (dropped as well).
 */
MUST_USE int gw_etag_map_put(struct gw_etag_map *m, const char *lock, uint64_t epoch,
                             const char *bucket, const char *key, const char *etag);

/* gw_etag_map_forget - drop what is known of bucket/key (no-op if nothing). */
void gw_etag_map_forget(struct gw_etag_map *m, const char *bucket, const char *key);

/* gw_etag_map_bare - copy etag without its surrounding quotes (and a W/ prefix) into out.
 * Returns 0 or ERR_INVAL (empty, too long, a quote or control byte inside). */
MUST_USE int gw_etag_map_bare(const char *etag, char *out, size_t outlen);

#endif
