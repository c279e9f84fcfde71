/*
 * gateway/fence/internal.h: what the fence's files share inside the room.
 *
 * The reload holds (hold.c): the locks a reload widened, each hold with the
 * configuration generation it was made for and, once the writes it waits for
 * have ended, the instant it lifts.  fence.c owns one set and asks it about
 * each waiting write (gw_fence_reload_hold, DESIGN "The reload hold").  A hold
 * knows nothing of tickets or locks in flight: it answers for a lock name and
 * a generation at an instant.  Event-loop thread only, as the fence.
 */
#ifndef GW_FENCE_INTERNAL_H
#define GW_FENCE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/fence/fence.h"

struct gw_fence_hold {
    uint32_t gen;     /* writes claimed under this generation or a later one wait */
    char **locks;     /* owned; the locks held */
    size_t nlocks;    /* their number */
    bool ended;       /* every older write has ended (gw_fence_holds_end) */
    uint64_t lift_at; /* ended: mono ms the hold lifts */
};

struct gw_fence_holds {
    struct gw_fence_hold h[GW_FENCE_HOLDS_MAX]; /* not lifted yet (some may be, until asked) */
    size_t n;                                   /* their number */
};

/* gw_fence_holds_add - a hold on locks[0..n) (copied) for gen.  0, ERR_NOMEM, ERR_AGAIN (full). */
int gw_fence_holds_add(struct gw_fence_holds *hs, uint32_t gen, const char *const *locks, size_t n);

/*
 * gw_fence_holds_end - gen's hold lifts at lift_at; each(arg, lock) is called
 * for each of its locks (to judge their writes again then).
 */
void gw_fence_holds_end(struct gw_fence_holds *hs, uint32_t gen, uint64_t lift_at,
                        void (*each)(void *arg, const char *lock), void *arg);

/* gw_fence_holds_pending - whether a hold has not lifted by now. */
bool gw_fence_holds_pending(const struct gw_fence_holds *hs, uint64_t now);

/*
 * gw_fence_holds_keep - whether a hold keeps waiting a write of lock claimed
 * under gen at now.  Holds lifted by now are dropped on the way.  *wake: ms
 * until the first of those keeping it that lifts at a known time (0: none).
 */
bool gw_fence_holds_keep(struct gw_fence_holds *hs, const char *lock, uint32_t gen, uint64_t now,
                         uint64_t *wake);

/* gw_fence_holds_clear - drop every hold. */
void gw_fence_holds_clear(struct gw_fence_holds *hs);

#endif
