/*
 * gateway/base/metrics_int.h: what metrics_lock.c shares with
 * metrics_render.c.  Not for use outside gateway/base/metrics*.c.
 */
#ifndef GW_METRICS_INT_H
#define GW_METRICS_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "gateway/base/metrics.h"

/* One lock's series. */
struct gw_metrics_lock {
    struct gw_metrics_lock *next;              /* hash chain */
    struct gw_metrics_lock *order;             /* next entry in creation order */
    bool pinned;                               /* named by a fences rule */
    bool special;                              /* "_other" or "_none" */
    uint64_t epoch;                            /* highest epoch seen in an event */
    uint64_t until_ms;                         /* known lease end (mono ms); 0 = none open */
    uint64_t expired_epoch;                    /* last epoch counted as expired */
    uint64_t events[GW_LEASE_EVENTS];          /* lease events by kind */
    uint64_t refusals[GW_METRICS_FENCE_CODES]; /* fence refusals by code */
    char name[];                               /* the label value */
};

/*
 * gw_metrics_locks_hold / gw_metrics_locks_release - take and give back the
 * table's mutex (metrics_lock.c): the render holds it while it walks the
 * entries and writes their series into its buffer, and calls nothing of this
 * file's public API meanwhile (they take it too).
 */
void gw_metrics_locks_hold(void);
void gw_metrics_locks_release(void);

/* gw_metrics_lock_first - the oldest entry; walk with ->order (held: gw_metrics_locks_hold). */
struct gw_metrics_lock *gw_metrics_lock_first(void);

/* gw_metrics_lock_expire_check - count e's known lease as expired if it ended by now_ms (held). */
void gw_metrics_lock_expire_check(struct gw_metrics_lock *e, uint64_t now_ms);

/* gw_metrics_fence_code - the label of fence code slot i. */
const char *gw_metrics_fence_code(unsigned i);

#endif
