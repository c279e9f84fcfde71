/*
 * gateway/base/metrics_lock.c: the per-lock series (metrics.h "lock").
 *
 * Bounded cardinality: a lock gets series of its own when a fences rule
 * names it (pinned, always) or while fewer than metrics.max_locks other
 * locks have them; every later lock counts under "_other".  A request with
 * no valid lock counts under "_none".  A lock literally named "_other" or
 * "_none" shares that series, so no two series ever have the same labels.
 * Entries are never removed (counters must not go back); the table is
 * touched by refusals and election events only, never by a request that
 * passes, and allocates only for a lock's first series.
 *
 * Threads (DESIGN "Worker loops"): the fence and the election write it on
 * the control loop, a refusal on whichever loop refuses, and /metrics reads
 * it on its loop; one mutex (mu) guards the whole table, held for one
 * update (a lookup, maybe an allocation) or for the render of the lock
 * series into the scrape's buffer (gw_metrics_locks_hold), never across a
 * call out of this file.  Uncontended it costs an atomic pair per refusal or
 * lease event; a request that passes never takes it.
 */
#include "gateway/base/metrics.h"
#include "gateway/base/metrics_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/lockname.h"

#define NBUCKETS 4096 /* hash chains */

/* The fence's codes, in fencegate_fence_refusals_total's closed set; the last is "other". */
static const char *const fence_codes[GW_METRICS_FENCE_CODES] = {
    "StaleFencingToken",   "FencingTokenNotGranted", "FencingLeaseExpired", "MissingFencingToken",
    "FencingLockMismatch", "InvalidFencingToken",    "ServiceUnavailable",  "other",
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* guards everything below */
static struct gw_metrics_lock *buckets[NBUCKETS];
static struct gw_metrics_lock *first; /* every entry, oldest first (render order) */
static struct gw_metrics_lock *last;
static struct gw_metrics_lock *other; /* "_other" */
static struct gw_metrics_lock *none;  /* "_none" */
static uint32_t max_others = GW_METRICS_MAX_LOCKS_DEFAULT;
static uint32_t n_others; /* unpinned entries with series of their own */
static size_t n_entries;

static uint32_t
hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s != '\0'; s++) {
        h = (h ^ (unsigned char)*s) * 16777619u;
    }
    return h;
}

static struct gw_metrics_lock *
find(const char *name, uint32_t h)
{
    for (struct gw_metrics_lock *e = buckets[h % NBUCKETS]; e != NULL; e = e->next) {
        if (strcmp(e->name, name) == 0) {
            return e;
        }
    }
    return NULL;
}

static struct gw_metrics_lock *
add(const char *name, uint32_t h, bool special)
{
    size_t n = strlen(name);
    struct gw_metrics_lock *e = calloc(1, sizeof(*e) + n + 1);
    if (e == NULL) {
        return NULL;
    }
    memcpy(e->name, name, n + 1);
    e->special = special;
    e->next = buckets[h % NBUCKETS];
    buckets[h % NBUCKETS] = e;
    if (last != NULL) {
        last->order = e;
    } else {
        first = e;
    }
    last = e;
    n_entries++;
    return e;
}

void
gw_metrics_locks_hold(void)
{
    (void)pthread_mutex_lock(&mu);
}

void
gw_metrics_locks_release(void)
{
    (void)pthread_mutex_unlock(&mu);
}

/* gw_metrics_locks_init with mu held. */
static int
init_locked(uint32_t max_locks)
{
    max_others = max_locks;
    if (other == NULL) {
        other = add("_other", hash("_other"), true);
    }
    if (none == NULL) {
        none = add("_none", hash("_none"), true);
    }
    return other != NULL && none != NULL ? 0 : ERR_NOMEM;
}

int
gw_metrics_locks_init(uint32_t max_locks)
{
    gw_metrics_locks_hold();
    int rc = init_locked(max_locks);
    gw_metrics_locks_release();
    return rc;
}

void
gw_metrics_locks_free(void)
{
    gw_metrics_locks_hold();
    struct gw_metrics_lock *e = first;
    while (e != NULL) {
        struct gw_metrics_lock *next = e->order;
        free(e);
        e = next;
    }
    memset(buckets, 0, sizeof(buckets));
    first = last = other = none = NULL;
    n_others = 0;
    n_entries = 0;
    max_others = GW_METRICS_MAX_LOCKS_DEFAULT;
    gw_metrics_locks_release();
}

/* The entry lock's events count in; NULL only when out of memory at init.  mu held. */
static struct gw_metrics_lock *
entry(const char *lock)
{
    if (other == NULL && init_locked(max_others) != 0) {
        return NULL;
    }
    if (lock == NULL || !lock_name_valid(lock)) {
        return none;
    }
    uint32_t h = hash(lock);
    struct gw_metrics_lock *e = find(lock, h);
    if (e != NULL) {
        return e;
    }
    if (n_others >= max_others) {
        return other;
    }
    e = add(lock, h, false);
    if (e == NULL) {
        return other; /* counted, under the shared series */
    }
    n_others++;
    return e;
}

/* gw_metrics_lock_pin with mu held. */
static int
pin_locked(const char *lock)
{
    if (other == NULL && init_locked(max_others) != 0) {
        return ERR_NOMEM;
    }
    uint32_t h = hash(lock);
    struct gw_metrics_lock *e = find(lock, h);
    if (e == NULL) {
        e = add(lock, h, false);
        if (e == NULL) {
            return ERR_NOMEM;
        }
    } else if (!e->pinned && !e->special) {
        n_others--; /* no longer counts against the bound */
    }
    if (!e->special) {
        e->pinned = true;
    }
    return 0;
}

int
gw_metrics_lock_pin(const char *lock)
{
    if (!lock_name_valid(lock)) {
        return ERR_INVAL;
    }
    gw_metrics_locks_hold();
    int rc = pin_locked(lock);
    gw_metrics_locks_release();
    return rc;
}

void
gw_metrics_fence_refusal(const char *lock, const char *code)
{
    unsigned i = 0;
    while (i + 1 < GW_METRICS_FENCE_CODES && (code == NULL || strcmp(code, fence_codes[i]) != 0)) {
        i++;
    }
    gw_metrics_locks_hold();
    struct gw_metrics_lock *e = entry(lock);
    if (e != NULL) {
        e->refusals[i]++;
    }
    gw_metrics_locks_release();
}

void
gw_metrics_lock_expire_check(struct gw_metrics_lock *e, uint64_t now_ms)
{
    if (e->until_ms != 0 && now_ms >= e->until_ms) {
        e->until_ms = 0;
        e->events[GW_LEASE_EXPIRE]++;
        e->expired_epoch = e->epoch;
    }
}

/* gw_metrics_lease with mu held. */
static void
lease_locked(const char *lock, enum gw_metrics_lease_event ev, uint64_t epoch, uint64_t until_ms)
{
    struct gw_metrics_lock *e = entry(lock);
    if (e == NULL || (unsigned)ev >= GW_LEASE_EVENTS) {
        return;
    }
    gw_metrics_lock_expire_check(e, clock_mono_ms());
    switch (ev) {
    case GW_LEASE_GRANT:
    case GW_LEASE_RENEW:
        e->until_ms = until_ms;
        e->events[ev]++;
        break;
    case GW_LEASE_RELEASE:
        e->until_ms = 0;
        e->events[ev]++;
        break;
    case GW_LEASE_EXPIRE:
        /* the election judged epoch's lease run out: once per epoch, known or not */
        if (epoch > e->expired_epoch) {
            e->events[ev]++;
            e->expired_epoch = epoch;
            if (epoch == e->epoch) {
                e->until_ms = 0;
            }
        }
        break;
    case GW_LEASE_TAKEOVER:
    default:
        e->events[ev]++;
        break;
    }
    if (epoch > e->epoch) {
        e->epoch = epoch;
    }
}

void
gw_metrics_lease(const char *lock, enum gw_metrics_lease_event ev, uint64_t epoch,
                 uint64_t until_ms)
{
    gw_metrics_locks_hold();
    lease_locked(lock, ev, epoch, until_ms);
    gw_metrics_locks_release();
}

void
gw_metrics_lock_epoch(const char *lock, uint64_t epoch)
{
    gw_metrics_locks_hold();
    struct gw_metrics_lock *e = entry(lock);
    if (e != NULL && !e->special && epoch > e->epoch) {
        e->epoch = epoch;
    }
    gw_metrics_locks_release();
}

size_t
gw_metrics_lock_series(void)
{
    gw_metrics_locks_hold();
    size_t n = n_entries;
    gw_metrics_locks_release();
    return n;
}

struct gw_metrics_lock *
gw_metrics_lock_first(void)
{
    return first;
}

const char *
gw_metrics_fence_code(unsigned i)
{
    return i < GW_METRICS_FENCE_CODES ? fence_codes[i] : NULL;
}

uint64_t
gw_metrics_fence_refusals(void)
{
    uint64_t n = 0;
    gw_metrics_locks_hold();
    for (const struct gw_metrics_lock *e = first; e != NULL; e = e->order) {
        for (unsigned c = 0; c < GW_METRICS_FENCE_CODES; c++) {
            n += e->refusals[c];
        }
    }
    gw_metrics_locks_release();
    return n;
}
