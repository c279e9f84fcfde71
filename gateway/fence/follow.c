/*
 * gateway/fence/follow.c: the fence following an election
 * (gw_fence_follow_election): the G4 lookup, the write windows' peek and
 * read, and every epoch the election learns, each a thin adapter from the
 * fence's hooks to the election's calls.
 */
#include "gateway/fence/fence.h"

#include <stdlib.h>

#include "election/elect.h"
#include "gateway/base/metrics.h"

/* elect_check_fn: the asynchronous end of lookup. */
struct lookup {
    gw_fence_granted_done_fn *done; /* the fence's callback */
    void *arg;                      /* and its argument */
};

static void
on_epoch_checked(void *arg, int err, bool granted)
{
    struct lookup *lu = arg;
    lu->done(lu->arg, err, granted);
    free(lu);
}

/* gw_fence_granted_fn: G4 through the election (cache, then the epoch file). */
static int
lookup(void *arg, const char *lock, uint64_t epoch, gw_fence_granted_done_fn *done, void *done_arg)
{
    struct elect *e = arg;
    struct lookup *lu = malloc(sizeof(*lu));
    if (lu == NULL) {
        return ERR_NOMEM;
    }
    lu->done = done;
    lu->arg = done_arg;
    int rc = elect_epoch_check(e, lock, epoch, on_epoch_checked, lu);
    if (rc != 0) {
        free(lu); /* decided now (1), or an error: no callback */
    }
    return rc;
}

/* gw_fence_windows.peek */
static int
window_peek(void *arg, const char *lock, uint64_t epoch, uint64_t now, struct elect_window *w)
{
    return elect_window_peek(arg, lock, epoch, now, w);
}

/* gw_fence_windows.read */
static int
window_read(void *arg, const char *lock, uint64_t epoch, elect_window_fn *cb, void *cb_arg)
{
    return elect_window_read(arg, lock, epoch, cb, cb_arg);
}

/* elect_learn_fn: the fence learns every epoch the election learns. */
static void
on_epoch_learned(void *arg, const char *lock, uint64_t epoch)
{
    gw_fence_learn(arg, lock, epoch);
    gw_metrics_lock_epoch(lock, epoch); /* fencegate_lock_epoch: as this gateway knows it */
}

void
gw_fence_follow_election(struct gw_fence *f, struct elect *e, uint32_t commit_margin_ms,
                         uint32_t complete_margin_ms)
{
    gw_fence_set_lookup(f, lookup, e);
    const struct gw_fence_windows win = {
        .peek = window_peek,
        .read = window_read,
        .arg = e,
        .commit_margin_ms = commit_margin_ms,
        .complete_margin_ms = complete_margin_ms,
    };
    gw_fence_set_windows(f, &win);
    elect_set_learn(e, on_epoch_learned, f);
}
