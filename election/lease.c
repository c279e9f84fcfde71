/* election/lease.c: lease judgement (G6); see lease.h for the rules. */
#include "election/lease.h"

#include <stddef.h>

bool
elect_lease_live(const struct elect_obs *o, uint64_t now, uint64_t *remaining_ms)
{
    if (remaining_ms != NULL) {
        *remaining_ms = 0;
    }
    if (o->released) {
        return false;
    }
    /* Observer rule: own clock only. */
    uint64_t seen_for = now > o->changed_mono ? now - o->changed_mono : 0;
    if (seen_for >= o->lease_ms) {
        return false;
    }
    uint64_t left = o->lease_ms - seen_for;
    /* Store rule: the store's two times, compared with each other only. */
    if (o->store_age_ms >= 0) {
        uint64_t need = (uint64_t)o->lease_ms + (o->store_whole_sec ? 1000u : 0u);
        uint64_t age = (uint64_t)o->store_age_ms;
        if (age >= need) {
            return false;
        }
        /* Estimate only (durations on two clocks): when to look again. */
        uint64_t since_read = now > o->read_mono ? now - o->read_mono : 0;
        uint64_t store_left = need - age > since_read ? need - age - since_read : 0;
        if (store_left < left) {
            left = store_left;
        }
    }
    if (remaining_ms != NULL) {
        *remaining_ms = left;
    }
    return true;
}
