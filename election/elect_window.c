/*
 * election/elect_window.c: what an observation of a lock's latest record
 * tells (elect_observe): the latest epoch (and the learn observer), the lease
 * inputs, the write window (elect.h "Write windows") and when a released lock
 * may be handed over; and the window as memory alone knows it
 * (elect_window_peek).  The reads that open windows are in elect_probe.c.
 */
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "common/lockname.h"
#include "election/elect_int.h"

void
elect_latest_raise(struct elect_lock *lk, uint64_t epoch)
{
    if (epoch <= lk->latest) {
        return;
    }
    lk->latest = epoch;
    if (lk->have && lk->rec.epoch < epoch) {
        /* the record we hold is no longer the latest: nothing is decided on it */
        lk->have = false;
        lk->win_until = 0;
        lk->ran_out = false;
    }
    struct elect *e = lk->e;
    if (e->learn != NULL) {
        e->learn(e->learn_arg, lk->name, epoch);
    }
}

/* The window one observation of a live record gives (elect.h "Write windows"). */
static uint64_t
window_of(const struct elect *e, const struct elect_lockfile *rec, const struct elect_obs *o,
          bool own_write, uint64_t sent)
{
    uint64_t w = 0;
    uint64_t top = sent + rec->lease_ms;
    if (own_write) {
        w = top; /* our write landed after sent: no one saw it unchanged before then */
    } else if (o->store_age_ms >= 0) {
        uint64_t age = (uint64_t)o->store_age_ms + (o->store_whole_sec ? 1000u : 0u);
        w = top > age ? top - age : 0;
    }
    if (e->opts.shared && w > sent + e->opts.shared_window_ms) {
        w = sent + e->opts.shared_window_ms;
    }
    return w;
}

void
elect_observe(struct elect_lock *lk, const struct elect_lockfile *rec, const char *etag,
              const struct elect_obj_meta *meta, uint64_t sent, uint64_t now)
{
    if (rec->epoch < lk->latest) {
        return; /* an older epoch's record: decisions are taken only on the latest (item 7) */
    }
    elect_latest_raise(lk, rec->epoch);
    bool new_epoch = !lk->have || lk->rec.epoch != rec->epoch;
    bool changed = new_epoch || strcmp(lk->etag, etag) != 0;
    if (changed) {
        /* G6 observer rule: a version seen for the first time counts as just changed. */
        lk->obs.changed_mono = now;
        lk->ran_out = false;
        lk->expired_by_us = false;
    }
    if (new_epoch) {
        lk->win_until = 0;
    }
    lk->rec = *rec;
    str_copy(lk->etag, sizeof(lk->etag), etag);
    lk->have = true;
    lk->obs.lease_ms = rec->lease_ms;
    lk->obs.released = rec->expired;
    lk->obs.read_mono = now;
    lk->obs.store_age_ms = -1;
    lk->obs.store_whole_sec = false;
    if (meta != NULL && meta->date_ms >= 0 && meta->last_modified_ms >= 0) {
        int64_t age = meta->date_ms - meta->last_modified_ms;
        lk->obs.store_age_ms = age > 0 ? age : 0;
        lk->obs.store_whole_sec = meta->date_ms % 1000 == 0 && meta->last_modified_ms % 1000 == 0;
    }
    if (rec->expired) {
        lk->win_until = 0; /* released or expired: no write of this epoch any more */
        return;
    }
    /* Each observation's bound stays true: keep the furthest. */
    uint64_t w = window_of(lk->e, rec, &lk->obs, meta == NULL, sent);
    if (w > lk->win_until) {
        lk->win_until = w;
    }
}

uint64_t
elect_free_at(const struct elect_lock *lk)
{
    const struct elect *e = lk->e;
    if (!lk->have || !lk->rec.expired || lk->expired_by_us || !e->opts.shared) {
        return 0;
    }
    /* A release: every other gateway's window (capped at shared_window_ms from a read
     * that saw the epoch live, so sent before the release landed) has closed, and what
     * was sent inside it has committed, by then. */
    return lk->obs.changed_mono + e->opts.shared_window_ms + e->opts.commit_margin_ms;
}

void
elect_set_lease_observer(struct elect *e, elect_lease_fn *fn, void *arg)
{
    e->lease_obs = fn;
    e->lease_obs_arg = arg;
}

void
elect_set_learn(struct elect *e, elect_learn_fn *fn, void *arg)
{
    e->learn = fn;
    e->learn_arg = arg;
}

int
elect_window_peek(struct elect *e, const char *lock, uint64_t epoch, uint64_t now,
                  struct elect_window *w)
{
    if (!lock_name_valid(lock) || epoch == 0) {
        return ERR_INVAL;
    }
    struct elect_lock *lk = elect_lock_find(e, lock, false);
    if (epoch > ELECT_EPOCH_MAX) {
        /* no epoch file can hold it: never granted, a verdict (G4), not an error */
        memset(w, 0, sizeof(*w));
        w->latest = lk != NULL ? lk->latest : 0;
        w->state = ELECT_WIN_NOT_GRANTED;
        return 0;
    }
    if (lk == NULL) {
        return ERR_NOTFOUND;
    }
    memset(w, 0, sizeof(*w));
    w->latest = lk->latest;
    if (lk->latest > epoch) {
        w->state = ELECT_WIN_SUPERSEDED;
        return 0;
    }
    if (!lk->have || lk->rec.epoch != epoch) {
        return ERR_NOTFOUND;
    }
    if (!e->opts.shared && strcmp(lk->rec.granted_by, e->granted_by) != 0) {
        w->state = ELECT_WIN_FOREIGN;
        return 0;
    }
    if (lk->rec.expired || (lk->ran_out && lk->win_until <= now)) {
        w->state = ELECT_WIN_ENDED;
        return 0;
    }
    if (lk->win_until > now) {
        w->state = ELECT_WIN_OPEN;
        w->until = lk->win_until;
        return 0;
    }
    return ERR_NOTFOUND;
}
