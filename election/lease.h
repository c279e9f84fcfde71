/*
 * election/lease.h: lease judgement (G6), pure functions.
 *
 * A lease is judged on one clock at a time, never by comparing this
 * gateway's clock with a timestamp another machine wrote:
 *   - the observer rule (Kubernetes' leader election): the lease has run out
 *     when this process has seen the record unchanged for lease_ms on its own
 *     monotonic clock, counting from the moment it first saw the current
 *     version (ETag) of the record.  A record seen for the first time counts
 *     as just changed, so a fresh observer waits a whole lease: safe.
 *   - the store rule: the store's Last-Modified of the object against the
 *     store's Date of a fresh response.  HTTP dates have 1 s resolution, both
 *     truncated, so the age may be understated by up to 1 s: when both
 *     values are whole seconds, 1000 ms of slack is added.  An old
 *     observation only understates the age: also safe.
 * The lease has run out when either rule says so; each alone is sound.
 * No state, no allocation; any thread.
 */
#ifndef ELECTION_LEASE_H
#define ELECTION_LEASE_H

#include <stdbool.h>
#include <stdint.h>

/* What an observer knows about the latest version of one epoch's record. */
struct elect_obs {
    uint32_t lease_ms;     /* the record's lease_ms */
    bool released;         /* the record says expired:true */
    uint64_t changed_mono; /* own monotonic ms when this version was first seen (or written) */
    int64_t store_age_ms;  /* store Date - Last-Modified at the last read; -1 unknown */
    bool store_whole_sec;  /* both store times were whole seconds: 1 s resolution */
    uint64_t read_mono;    /* own monotonic ms of that read (for estimates only) */
};

/*
 * elect_lease_live - whether the lease is still held at now.
 * [in]  o             the observation
 * [in]  now           own monotonic ms (>= o->changed_mono in practice)
 * [out] remaining_ms  may be NULL; when live: an estimate of how long until
 *                     the earliest rule can say it ran out (for timers and
 *                     expires_in_ms); 0 when not live
 * Returns true while held (not released and neither rule says run out).
 */
bool elect_lease_live(const struct elect_obs *o, uint64_t now, uint64_t *remaining_ms);

#endif
