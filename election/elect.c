/*
 * election/elect.c: the election's API, per-lock call queues, waiting calls,
 * the pump and the timer's callback: the top of the room (elect_int.h lists
 * the files below it).  Backend sequences are in elect_seq.c; self-test, GC
 * and G4 lookups in elect_probe.c; a call's answer in elect_call.c; the lock
 * table and the election cache in elect_lock.c; the timer's next deadline in
 * elect_sched.c.
 */
#include "election/elect.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "election/elect_int.h"
#include "election/sha256.h"
#include "store/store.h"

#define LOG_MODULE "election"
#include "common/lockname.h"
#include "common/log.h"

void
elect_opts_init(struct elect_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->default_lease_ms = 15000;
    o->min_lease_ms = 1000;
    o->max_lease_ms = 300000;
    o->keep_epochs = 5;
    o->max_wait_ms = 60000;
    o->poll_ms = 1000;
    o->gc_delay_ms = 1000;
    o->shared = false;
    o->shared_window_ms = 5000;
    o->commit_margin_ms = 1000;
}

/* elect_timer callback, registered by elect_new */
static void
on_elect_timer(void *arg)
{
    struct elect *e = arg;
    e->timer_at = 0;
    elect_on_timer(e);
}

static bool
text_ok(const char *s, size_t max)
{
    if (s == NULL) {
        return false;
    }
    size_t n = strlen(s);
    if (n == 0 || n > max) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f) {
            return false;
        }
    }
    return true;
}

int
elect_new(const struct elect_opts *o, struct elect **out)
{
    *out = NULL;
    if (o == NULL || o->backend == NULL) {
        return ERR_INVAL;
    }
    struct elect *e = NULL;
    int err = ERR_INVAL;
    if (o->base == NULL || o->prefix == NULL || strlen(o->prefix) > 512 ||
        !text_ok(o->granted_by, ELECT_GRANTED_BY_MAX) || o->min_lease_ms == 0 ||
        o->min_lease_ms > o->default_lease_ms || o->default_lease_ms > o->max_lease_ms ||
        o->max_lease_ms > ELECT_LEASE_MS_MAX || o->keep_epochs == 0 || o->poll_ms == 0 ||
        (o->shared && o->shared_window_ms == 0)) {
        goto fail;
    }
    err = ERR_NOMEM;
    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        goto fail;
    }
    e->be = o->backend;
    e->opts = *o;
    e->base = o->base;
    e->store = o->store;
    e->prefix = strdup(o->prefix);
    e->granted_by = strdup(o->granted_by);
    e->pump = elect_pump;
    e->timer = elect_timer_new(o->base, on_elect_timer, e);
    if (e->prefix == NULL || e->granted_by == NULL || e->timer == NULL) {
        goto fail;
    }
    e->opts.prefix = e->prefix;
    e->opts.granted_by = e->granted_by;
    e->opts.backend = NULL;
    LIST_INIT(&e->gc_list);
    LIST_INIT(&e->wait_locks);
    LIST_INIT(&e->tickets);
    LIST_INIT(&e->checks);
    e->form = ELECT_ETAG_QUOTED;
    e->started = clock_mono_ms();
    e->probe = PROBE_IDLE;
    (void)snprintf(e->reason, sizeof(e->reason), "self-test not started");
    *out = e;
    return 0;
fail:
    if (e != NULL) {
        elect_free(e);
    } else {
        elect_backend_free(o->backend);
    }
    return err;
}

static void
free_calls(struct elect_call_list *l)
{
    struct elect_call *c;
    while ((c = TAILQ_FIRST(l)) != NULL) {
        TAILQ_REMOVE(l, c, link);
        elect_call_free(c);
    }
}

void
elect_free(struct elect *e)
{
    if (e == NULL) {
        return;
    }
    /* The backend first: after this no backend callback can run. */
    elect_backend_free(e->be);
    e->be = NULL;
    struct elect_ticket *t;
    while ((t = LIST_FIRST(&e->tickets)) != NULL) {
        LIST_REMOVE(t, link);
        t->e = NULL; /* the store callback frees it */
        t->granted = NULL;
        t->call = NULL;
        t->check_cb = NULL;
    }
    elect_checks_free(e);
    for (size_t i = 0; i < ELECT_NBUCKETS; i++) {
        struct elect_lock *lk = e->table[i];
        while (lk != NULL) {
            struct elect_lock *next = lk->next;
            free_calls(&lk->queue);
            free_calls(&lk->waiting);
            free(lk);
            lk = next;
        }
    }
    elect_timer_free(e->timer);
    free(e->prefix);
    free(e->granted_by);
    free(e);
}

int
elect_start(struct elect *e)
{
    if (e->probe != PROBE_IDLE) {
        return 0;
    }
    elect_probe_run(e);
    return 0;
}

bool
elect_ready(const struct elect *e, const char **reason)
{
    bool ok = e->probe == PROBE_OK;
    if (reason != NULL) {
        *reason = ok ? "" : e->reason;
    }
    return ok;
}

enum elect_etag_form
elect_etag_form_used(const struct elect *e)
{
    return e->form;
}

/* ---- observations: elect_observe and the write windows are in elect_window.c ---- */

/*
 * elect_lock_free_now - may an acquire create the next epoch now?  A
 * released record is final; a lease that ran out by time only counts right
 * after a fresh read (just_listed), since a renewal we have not seen would
 * otherwise be missed.  *need_read asks for that read.
 */
bool
elect_lock_free_now(struct elect_lock *lk, uint64_t now, bool *need_read)
{
    *need_read = false;
    if (!lk->have) {
        if (lk->latest == 0 || lk->just_listed) {
            return true;
        }
        *need_read = true;
        return false;
    }
    if (lk->rec.epoch != lk->latest) {
        *need_read = true;
        return false;
    }
    if (lk->rec.expired) {
        return now >= elect_free_at(lk);
    }
    if (elect_lease_live(&lk->obs, now, NULL)) {
        return false;
    }
    if (lk->just_listed) {
        return true;
    }
    *need_read = true;
    return false;
}

/* ---- calls ---- */

static void
waiting_add(struct elect *e, struct elect_call *c)
{
    struct elect_lock *lk = c->lk;
    TAILQ_REMOVE(&lk->queue, c, link);
    TAILQ_INSERT_TAIL(&lk->waiting, c, link);
    c->waiting = true;
    if (!lk->wait_listed) {
        LIST_INSERT_HEAD(&e->wait_locks, lk, wait_link);
        lk->wait_listed = true;
    }
}

static int
call_new(struct elect *e, const char *lock, enum call_kind kind, elect_done_fn *cb, void *arg,
         struct elect_call **out)
{
    if (!lock_name_valid(lock) || cb == NULL) {
        return ERR_INVAL;
    }
    struct elect_lock *lk = elect_lock_find(e, lock, true);
    if (lk == NULL) {
        return ERR_NOMEM;
    }
    struct elect_call *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return ERR_NOMEM;
    }
    c->e = e;
    c->lk = lk;
    c->kind = kind;
    c->cb = cb;
    c->arg = arg;
    c->arrived = clock_mono_ms();
    c->seq = ++e->call_seq;
    c->deadline = c->arrived;
    *out = c;
    return 0;
}

static void
call_submit(struct elect_call *c, struct elect_call **callp)
{
    TAILQ_INSERT_TAIL(&c->lk->queue, c, link);
    if (callp != NULL) {
        *callp = c;
    }
    elect_pump(c->e, c->lk);
}

static uint64_t
wait_deadline(struct elect *e, uint64_t arrived, uint32_t wait_ms)
{
    if (wait_ms > e->opts.max_wait_ms) {
        wait_ms = e->opts.max_wait_ms;
    }
    return arrived + wait_ms;
}

int
elect_acquire(struct elect *e, const char *lock, const char *holder, uint32_t lease_ms,
              uint32_t wait_ms, elect_done_fn *cb, void *arg, struct elect_call **callp)
{
    if (!text_ok(holder, ELECT_HOLDER_MAX)) {
        return ERR_INVAL;
    }
    if (lease_ms == 0) {
        lease_ms = e->opts.default_lease_ms;
    }
    if (lease_ms < e->opts.min_lease_ms || lease_ms > e->opts.max_lease_ms) {
        return ERR_INVAL;
    }
    if (e->probe != PROBE_OK) {
        return ERR_AGAIN;
    }
    struct elect_call *c;
    int err = call_new(e, lock, CALL_ACQUIRE, cb, arg, &c);
    if (err != 0) {
        return err;
    }
    str_copy(c->holder, sizeof(c->holder), holder);
    c->lease_ms = lease_ms;
    c->deadline = wait_deadline(e, c->arrived, wait_ms);
    call_submit(c, callp);
    return 0;
}

static bool
lease_id_ok(const char *id)
{
    if (id == NULL || strlen(id) != ELECT_LEASE_ID_HEX) {
        return false;
    }
    for (size_t i = 0; i < ELECT_LEASE_ID_HEX; i++) {
        char ch = id[i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) {
            return false;
        }
    }
    return true;
}

static int
rewrite_call(struct elect *e, const char *lock, uint64_t token, const char *lease_id,
             enum call_kind kind, elect_done_fn *cb, void *arg, struct elect_call **callp)
{
    if (token == 0 || token > (uint64_t)ELECT_EPOCH_MAX || lease_id == NULL) {
        return ERR_INVAL;
    }
    if (e->probe != PROBE_OK) {
        return ERR_AGAIN;
    }
    struct elect_call *c;
    int err = call_new(e, lock, kind, cb, arg, &c);
    if (err != 0) {
        return err;
    }
    c->token = token;
    /* A malformed lease_id cannot match: it is kept and refused as ERR_DENIED
     * after the record is read, like any other wrong one (G5). */
    if (lease_id_ok(lease_id)) {
        str_copy(c->lease_id, sizeof(c->lease_id), lease_id);
    }
    call_submit(c, callp);
    return 0;
}

int
elect_renew(struct elect *e, const char *lock, uint64_t token, const char *lease_id,
            elect_done_fn *cb, void *arg, struct elect_call **callp)
{
    return rewrite_call(e, lock, token, lease_id, CALL_RENEW, cb, arg, callp);
}

int
elect_release(struct elect *e, const char *lock, uint64_t token, const char *lease_id,
              elect_done_fn *cb, void *arg, struct elect_call **callp)
{
    return rewrite_call(e, lock, token, lease_id, CALL_RELEASE, cb, arg, callp);
}

int
elect_revoke(struct elect *e, const char *lock, elect_done_fn *cb, void *arg,
             struct elect_call **callp)
{
    if (e->probe != PROBE_OK) {
        return ERR_AGAIN;
    }
    struct elect_call *c;
    int err = call_new(e, lock, CALL_RELEASE, cb, arg, &c);
    if (err != 0) {
        return err;
    }
    c->revoke = true; /* c->token stays 0 until a fresh read names the latest epoch */
    call_submit(c, callp);
    return 0;
}

int
elect_get(struct elect *e, const char *lock, uint64_t after, uint32_t wait_ms, elect_done_fn *cb,
          void *arg, struct elect_call **callp)
{
    struct elect_call *c;
    int err = call_new(e, lock, CALL_GET, cb, arg, &c);
    if (err != 0) {
        return err;
    }
    c->after = after;
    c->deadline = after > 0 ? wait_deadline(e, c->arrived, wait_ms) : c->arrived;
    call_submit(c, callp);
    return 0;
}

int
elect_peek(struct elect *e, const char *lock, struct elect_info *info)
{
    if (!lock_name_valid(lock) || info == NULL) {
        return ERR_INVAL;
    }
    struct elect_lock *lk = elect_lock_find(e, lock, false);
    if (lk != NULL && lk->latest > 0) {
        elect_info_fill(e, lk, clock_mono_ms(), info);
        return 0;
    }
    memset(info, 0, sizeof(*info));
    str_copy(info->lock, sizeof(info->lock), lock);
    if (e->store != NULL) {
        struct store_elect se;
        int err = store_elect_get(e->store, lock, &se);
        if (err == 0) {
            info->token = se.epoch;
            return 0;
        }
        if (err != ERR_NOTFOUND) {
            return err;
        }
    }
    return ERR_NOTFOUND;
}

void
elect_call_cancel(struct elect *e, struct elect_call *c)
{
    (void)e;
    if (c == NULL || c->done) {
        return;
    }
    c->cb = NULL;
    c->done = true;
    if (c->step != STEP_NONE) {
        return; /* its backend sequence finishes and frees it */
    }
    struct elect_lock *lk = c->lk;
    elect_call_finish(c);
    elect_reschedule(e);
    (void)lk;
}

/* ---- the per-lock pump ---- */

/* Whether a waiting get's condition holds: a newer epoch, or epoch `after` not live. */
static bool
get_condition(struct elect_lock *lk, uint64_t after, uint64_t now)
{
    if (lk->latest > after) {
        return true;
    }
    if (lk->latest < after) {
        return false;
    }
    return !lk->have || !elect_lease_live(&lk->obs, now, NULL);
}

/*
 * One step for the call at the head of the queue: answer it, park it as
 * waiting, or start a backend sequence (lk->busy).  Never leaves it at the
 * head without one of those, so the pump always makes progress.
 */
static void
step(struct elect *e, struct elect_lock *lk, struct elect_call *c, uint64_t now)
{
    if (c->done) {
        elect_call_finish(c);
        return;
    }
    bool fresh = lk->known && lk->valid_from >= c->arrived;
    switch (c->kind) {
    case CALL_RENEW:
    case CALL_RELEASE:
        if (c->revoke && c->token == 0) {
            /* a revoke ends the latest epoch: learn which from a fresh read */
            if (!fresh) {
                elect_seq_refresh(e, lk);
                return;
            }
            if (lk->latest == 0) {
                elect_call_complete(c, ERR_NOTFOUND, false);
                return;
            }
            c->token = lk->latest;
        }
        if (c->superseded) {
            if (!fresh) {
                elect_seq_refresh(e, lk);
                return;
            }
            elect_call_complete(c, ERR_CONFLICT, false);
            return;
        }
        elect_seq_rewrite(c);
        return;
    case CALL_GET:
        if (!fresh) {
            elect_seq_refresh(e, lk);
            return;
        }
        if (c->after == 0 || c->deadline <= now || get_condition(lk, c->after, now)) {
            elect_call_complete(c, 0, false);
            return;
        }
        waiting_add(e, c);
        return;
    case CALL_ACQUIRE: {
        if (!fresh) {
            elect_seq_refresh(e, lk);
            return;
        }
        bool need_read;
        if (elect_lock_free_now(lk, now, &need_read)) {
            elect_seq_create(c);
            return;
        }
        if (need_read) {
            elect_seq_refresh(e, lk);
            return;
        }
        uint64_t handover = elect_free_at(lk);
        if (handover > c->deadline) {
            c->deadline = handover; /* released: the hand-over is a short wait, not "held" */
        }
        if (c->deadline <= now) {
            elect_call_complete(c, ERR_CONFLICT, false);
            return;
        }
        waiting_add(e, c);
        return;
    }
    default:
        elect_call_complete(c, ERR_INVAL, false);
        return;
    }
}

/*
 * Settle waiting calls against the current state: answer the ones whose
 * condition holds or whose wait ended; move the oldest acquire that may
 * create to the head of the queue.  Returns true if it queued one.  Restarts
 * its scan after every callback (which may cancel other calls).
 */
static bool
wake_waiters(struct elect_lock *lk, uint64_t now)
{
    for (;;) {
        struct elect_call *hit = NULL;
        int err = 0;
        bool create = false;
        struct elect_call *c;
        for (c = TAILQ_FIRST(&lk->waiting); c != NULL; c = TAILQ_NEXT(c, link)) {
            if (c->kind == CALL_GET) {
                if (c->deadline <= now || get_condition(lk, c->after, now)) {
                    hit = c;
                    break;
                }
                continue;
            }
            bool need_read;
            if (elect_lock_free_now(lk, now, &need_read)) {
                hit = c;
                create = true;
                break;
            }
            if (need_read) {
                lk->poll_due = true;
            }
            if (c->deadline <= now) {
                hit = c;
                err = ERR_CONFLICT;
                break;
            }
        }
        if (hit == NULL) {
            return false;
        }
        if (create) {
            elect_call_unlink(hit);
            TAILQ_INSERT_HEAD(&lk->queue, hit, link);
            return true;
        }
        elect_call_complete(hit, err, false);
    }
}

void
elect_pump(struct elect *e, struct elect_lock *lk)
{
    if (lk->pumping) {
        lk->repump = true;
        return;
    }
    lk->pumping = true;
    do {
        lk->repump = false;
        for (;;) {
            uint64_t now = clock_mono_ms();
            if (lk->busy) {
                break;
            }
            struct elect_call *c = TAILQ_FIRST(&lk->queue);
            if (c != NULL) {
                step(e, lk, c, now);
                continue;
            }
            if (wake_waiters(lk, now)) {
                continue;
            }
            if (lk->poll_due && !TAILQ_EMPTY(&lk->waiting)) {
                lk->poll_due = false;
                elect_seq_refresh(e, lk);
                continue;
            }
            lk->poll_due = false;
            break;
        }
    } while (lk->repump);
    lk->just_listed = false;
    lk->pumping = false;
    elect_reschedule(e);
}

void
elect_on_timer(struct elect *e)
{
    uint64_t now = clock_mono_ms();
    if (e->probe == PROBE_WAIT && now >= e->probe_at) {
        elect_probe_run(e);
    }
    /* Lock states live until elect_free, so walking the table is safe even
     * if callbacks cancel calls of other locks. */
    for (size_t i = 0; i < ELECT_NBUCKETS; i++) {
        for (struct elect_lock *lk = e->table[i]; lk != NULL; lk = lk->next) {
            if (TAILQ_EMPTY(&lk->waiting)) {
                continue;
            }
            if (now >= lk->last_read + elect_poll_interval(e, lk)) {
                lk->poll_due = true;
            }
            elect_pump(e, lk);
        }
    }
    elect_gc_run(e, now);
    elect_reschedule(e);
}
