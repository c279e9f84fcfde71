/*
 * election/elect_call.c: a call's end: what the caller is told (the lock's
 * state as elect_info, the lease observer's event), its leaving the lock's
 * lists, and its freeing.  Shared by the queues (elect.c) and the backend
 * sequences (elect_seq.c); calls nothing back in either.
 */
#define LOG_MODULE "election"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "election/elect_int.h"

void
elect_call_free(struct elect_call *c)
{
    /* lease_id is a secret: wipe it before the memory goes back. */
    volatile char *p = c->lease_id;
    for (size_t i = 0; i < sizeof(c->lease_id); i++) {
        p[i] = 0;
    }
    free(c);
}

void
elect_info_fill(struct elect *e, struct elect_lock *lk, uint64_t now, struct elect_info *info)
{
    memset(info, 0, sizeof(*info));
    str_copy(info->lock, sizeof(info->lock), lk->name);
    info->token = lk->latest;
    if (!lk->have || lk->rec.epoch != lk->latest) {
        return;
    }
    info->known = true;
    const struct elect_lockfile *r = &lk->rec;
    str_copy(info->holder, sizeof(info->holder), r->holder);
    str_copy(info->granted_by, sizeof(info->granted_by), r->granted_by);
    info->lease_ms = r->lease_ms;
    info->released = r->expired;
    info->acquired_at_ms = r->acquired_at_ms;
    info->renewed_at_ms = r->renewed_at_ms;
    info->renewals = r->renewals;
    uint64_t rem = 0;
    info->live = elect_lease_live(&lk->obs, now, &rem);
    if (info->live) {
        info->expires_in_ms = rem;
        info->expires_at_ms = clock_wall_ms() + (int64_t)rem;
    }
    (void)e;
}

void
elect_call_unlink(struct elect_call *c)
{
    struct elect_lock *lk = c->lk;
    if (c->waiting) {
        TAILQ_REMOVE(&lk->waiting, c, link);
        c->waiting = false;
        if (TAILQ_EMPTY(&lk->waiting) && lk->wait_listed) {
            LIST_REMOVE(lk, wait_link);
            lk->wait_listed = false;
        }
    } else {
        TAILQ_REMOVE(&lk->queue, c, link);
    }
}

/* Tell the lease observer what call c, answered 0, did (elect_lease_fn). */
static void
lease_event(const struct elect_call *c, const struct elect_info *info, uint64_t now, bool granted)
{
    elect_lease_fn *obs = c->e->lease_obs;
    if (obs == NULL) {
        return;
    }
    void *arg = c->e->lease_obs_arg;
    uint64_t until = info->live ? now + info->expires_in_ms : 0;
    switch (c->kind) {
    case CALL_ACQUIRE:
        if (granted) {
            obs(arg, info->lock, ELECT_EV_GRANT, c->token, until);
            if (c->took_over) {
                obs(arg, info->lock, ELECT_EV_TAKEOVER, c->token, until);
            }
        }
        break;
    case CALL_RENEW:
        obs(arg, info->lock, ELECT_EV_RENEW, c->token, until);
        break;
    case CALL_RELEASE:
        obs(arg, info->lock, ELECT_EV_RELEASE, c->token, 0);
        break;
    case CALL_GET:
    default:
        break;
    }
}

/*
 * Answer a call and free it.  It leaves its list before its callback runs,
 * so a callback that starts new calls (and so pumps this lock) never meets it.
 */
void
elect_call_complete(struct elect_call *c, int err, bool with_lease)
{
    if (err == 0 && with_lease && c->lk->latest != c->token) {
        /* A newer epoch became known while this call recorded its own (another
         * gateway's takeover, seen by a window read while the election cache
         * committed): the answer would name the newer epoch with this call's
         * lease_id.  The lease goes to nobody (G1); its epoch simply ends. */
        log_warn("lock %s: epoch %llu superseded by %llu before its answer: not handed out",
                 c->lk->name, (unsigned long long)c->token, (unsigned long long)c->lk->latest);
        err = ERR_CONFLICT;
        with_lease = false;
    }
    elect_call_unlink(c);
    elect_done_fn *cb = c->done ? NULL : c->cb;
    c->done = true;
    c->cb = NULL;
    if (cb != NULL || (err == 0 && c->e->lease_obs != NULL)) {
        struct elect_info info;
        uint64_t now = clock_mono_ms();
        elect_info_fill(c->e, c->lk, now, &info);
        if (err == 0) {
            lease_event(c, &info, now, with_lease);
        }
        if (cb == NULL) {
            elect_call_free(c);
            return;
        }
        if (with_lease) {
            str_copy(info.lease_id, sizeof(info.lease_id), c->lease_id);
        }
        cb(c->arg, err, &info);
        volatile char *p = info.lease_id;
        for (size_t i = 0; i < sizeof(info.lease_id); i++) {
            p[i] = 0;
        }
    }
    elect_call_free(c);
}

void
elect_call_finish(struct elect_call *c)
{
    elect_call_unlink(c);
    elect_call_free(c);
}
