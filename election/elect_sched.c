/*
 * election/elect_sched.c: when the election's one timer fires next: the
 * earliest of the self-test's retry, each waiting lock's deadline, poll,
 * lease end and hand-over, and the GC's next run (elect_reschedule).  It
 * reads the state and arms elect_timer; it calls nothing above it, so the
 * queues, the self-test and the GC all reschedule through it.
 */
#include <stdint.h>

#include "common/clock.h"
#include "election/elect_int.h"

uint64_t
elect_poll_interval(struct elect *e, struct elect_lock *lk)
{
    uint64_t lease = lk->have ? lk->rec.lease_ms : e->opts.default_lease_ms;
    uint64_t p = lease / 4;
    if (p < 50) {
        p = 50;
    }
    if (p > e->opts.poll_ms) {
        p = e->opts.poll_ms;
    }
    return p;
}

/* When lk's waiting calls next need attention (UINT64_MAX: never). */
static uint64_t
lock_wake(struct elect *e, struct elect_lock *lk, uint64_t now)
{
    uint64_t at = UINT64_MAX;
    struct elect_call *c;
    for (c = TAILQ_FIRST(&lk->waiting); c != NULL; c = TAILQ_NEXT(c, link)) {
        if (c->deadline < at) {
            at = c->deadline;
        }
    }
    if (TAILQ_EMPTY(&lk->waiting)) {
        return at;
    }
    uint64_t poll = lk->last_read + elect_poll_interval(e, lk);
    if (poll < at) {
        at = poll;
    }
    uint64_t rem;
    if (lk->have && elect_lease_live(&lk->obs, now, &rem) && now + rem < at) {
        at = now + rem;
    }
    uint64_t handover = elect_free_at(lk);
    if (handover > now && handover < at) {
        at = handover;
    }
    return at;
}

void
elect_reschedule(struct elect *e)
{
    uint64_t now = clock_mono_ms();
    uint64_t at = UINT64_MAX;
    if (e->probe == PROBE_WAIT) {
        at = e->probe_at;
    }
    struct elect_lock *lk;
    for (lk = LIST_FIRST(&e->wait_locks); lk != NULL; lk = LIST_NEXT(lk, wait_link)) {
        uint64_t w = lock_wake(e, lk, now);
        if (w < at) {
            at = w;
        }
    }
    if (!e->gc_running) {
        for (lk = LIST_FIRST(&e->gc_list); lk != NULL; lk = LIST_NEXT(lk, gc_link)) {
            if (lk->gc_at < at) {
                at = lk->gc_at;
            }
        }
    }
    if (at == UINT64_MAX) {
        if (e->timer_at != 0) {
            elect_timer_clear(e->timer);
            e->timer_at = 0;
        }
        return;
    }
    if (at == e->timer_at) {
        return;
    }
    e->timer_at = at;
    elect_timer_set(e->timer, at > now ? at - now : 0);
}
