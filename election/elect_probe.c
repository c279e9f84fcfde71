/*
 * election/elect_probe.c: the backend precondition self-test (elect_start),
 * background GC of old epoch files, and G4 lookups (elect_epoch_check).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "election/elect_int.h"
#include "store/store.h"

#define LOG_MODULE "election"
#include "common/lockname.h"
#include "common/log.h"
#include "common/rand.h"

/* ---- self-test ---- */

static const char PROBE_BODY1[] = "fencegate precondition probe 1";
static const char PROBE_BODY2[] = "fencegate precondition probe 2";
static const char PROBE_BODY3[] = "fencegate precondition probe 3";
static const char PROBE_BODY4[] = "fencegate precondition probe 4";

static void probe_step(struct elect *e);

/* elect_be_del_fn, registered by probe_cleanup */
static void
on_probe_deleted(void *arg, int err)
{
    (void)arg;
    if (err != 0) {
        log_warn("self-test: deleting the probe object failed: %s", err_str(err));
    }
}

static void
probe_cleanup(struct elect *e)
{
    if (e->probe_key[0] != '\0') {
        int err = elect_backend_del(e->be, e->probe_key, on_probe_deleted, NULL);
        if (err != 0) {
            log_warn("self-test: deleting the probe object failed: %s", err_str(err));
        }
    }
}

static void
probe_refuse(struct elect *e, const char *why)
{
    e->probe = PROBE_REFUSED;
    str_copy(e->reason, sizeof(e->reason), why);
    log_error("election backend %s refused: %s; no leases will be granted on it",
              elect_backend_name(e->be), why);
    probe_cleanup(e);
}

static void
probe_retry(struct elect *e, const char *what, int err)
{
    e->probe = PROBE_WAIT;
    if (e->probe_backoff == 0) {
        e->probe_backoff = ELECT_PROBE_MIN_MS;
    }
    e->probe_at = clock_mono_ms() + e->probe_backoff;
    (void)snprintf(e->reason, sizeof(e->reason), "self-test failed (retrying in %u ms): %s: %s",
                   e->probe_backoff, what, err_str(err));
    log_warn("election backend %s: %s", elect_backend_name(e->be), e->reason);
    e->probe_backoff *= 2;
    if (e->probe_backoff > ELECT_PROBE_MAX_MS) {
        e->probe_backoff = ELECT_PROBE_MAX_MS;
    }
    probe_cleanup(e);
    elect_reschedule(e);
}

/* elect_be_write_fn for the probe writes, registered by probe_step */
static void
on_probe_write(void *arg, int err, const struct elect_obj_meta *meta)
{
    struct elect *e = arg;
    switch (e->probe_step) {
    case 1: /* first create: must succeed */
        if (err != 0) {
            probe_retry(e, "creating the probe object", err);
            return;
        }
        str_copy(e->probe_etag, sizeof(e->probe_etag), meta->etag);
        e->probe_step = 2;
        break;
    case 2: /* second create of the same key: must be refused */
        if (err == 0) {
            probe_refuse(e, "backend ignores If-None-Match (a second create of the probe key "
                            "succeeded)");
            return;
        }
        if (err != ERR_EXISTS) {
            probe_retry(e, "second create of the probe object", err);
            return;
        }
        e->probe_step = 3;
        break;
    case 3: /* If-Match, quoted */
    case 4: /* If-Match, unquoted */
        if (err == 0) {
            e->form = e->probe_step == 3 ? ELECT_ETAG_QUOTED : ELECT_ETAG_UNQUOTED;
            if (strcmp(meta->etag, e->probe_etag) == 0) {
                probe_refuse(e, "the ETag did not change when the probe object was rewritten");
                return;
            }
            memcpy(e->probe_stale, e->probe_etag, sizeof(e->probe_stale));
            str_copy(e->probe_etag, sizeof(e->probe_etag), meta->etag);
            e->probe_step = 5;
            break;
        }
        if (err == ERR_CONFLICT && e->probe_step == 3) {
            e->probe_step = 4;
            break;
        }
        if (err == ERR_CONFLICT) {
            probe_refuse(e, "If-Match with the object's own ETag was refused, quoted and "
                            "unquoted");
            return;
        }
        probe_retry(e, "rewriting the probe object with If-Match", err);
        return;
    case 5: /* If-Match with the stale ETag: must be refused */
        if (err == 0) {
            probe_refuse(e, "backend ignores If-Match (a stale ETag was accepted)");
            return;
        }
        if (err != ERR_CONFLICT) {
            probe_retry(e, "rewriting the probe object with a stale ETag", err);
            return;
        }
        e->probe_step = 6;
        break;
    default:
        return;
    }
    probe_step(e);
}

/* elect_be_get_fn, registered by probe_step */
static void
on_probe_read(void *arg, int err, const char *body, size_t len, const struct elect_obj_meta *meta)
{
    struct elect *e = arg;
    if (err != 0) {
        probe_retry(e, "reading the probe object back", err);
        return;
    }
    if (len != strlen(PROBE_BODY3) || memcmp(body, PROBE_BODY3, len) != 0 ||
        strcmp(meta->etag, e->probe_etag) != 0) {
        probe_refuse(e, "the probe object read back differs from what was written");
        return;
    }
    probe_cleanup(e);
    e->probe = PROBE_OK;
    e->reason[0] = '\0';
    log_info("election backend %s: preconditions honoured (If-Match form: %s)",
             elect_backend_name(e->be), e->form == ELECT_ETAG_QUOTED ? "quoted" : "unquoted");
}

static void
probe_step(struct elect *e)
{
    int err = 0;
    switch (e->probe_step) {
    case 1:
        err = elect_backend_create(e->be, e->probe_key, PROBE_BODY1, strlen(PROBE_BODY1),
                                   on_probe_write, e);
        break;
    case 2:
        err = elect_backend_create(e->be, e->probe_key, PROBE_BODY2, strlen(PROBE_BODY2),
                                   on_probe_write, e);
        break;
    case 3:
    case 4:
        err = elect_backend_replace(e->be, e->probe_key, e->probe_etag,
                                    e->probe_step == 3 ? ELECT_ETAG_QUOTED : ELECT_ETAG_UNQUOTED,
                                    PROBE_BODY3, strlen(PROBE_BODY3), on_probe_write, e);
        break;
    case 5:
        err = elect_backend_replace(e->be, e->probe_key, e->probe_stale, e->form, PROBE_BODY4,
                                    strlen(PROBE_BODY4), on_probe_write, e);
        break;
    case 6:
        err = elect_backend_get(e->be, e->probe_key, on_probe_read, e);
        break;
    default:
        return;
    }
    if (err != 0) {
        probe_retry(e, "starting a probe request", err);
    }
}

void
elect_probe_run(struct elect *e)
{
    char id[33];
    int err = rand_hex(id, 16);
    e->probe = PROBE_RUNNING;
    (void)snprintf(e->reason, sizeof(e->reason), "self-test running");
    if (err != 0) {
        e->probe_key[0] = '\0';
        probe_retry(e, "random probe key", err);
        return;
    }
    /* '~' cannot appear in a lock name, so the probe never meets a lock's files. */
    int n = snprintf(e->probe_key, sizeof(e->probe_key), "%s~probe/%s.json", e->prefix, id);
    if (n < 0 || (size_t)n >= sizeof(e->probe_key)) {
        e->probe_key[0] = '\0';
        probe_refuse(e, "prefix too long for the probe key");
        return;
    }
    e->probe_step = 1;
    probe_step(e);
}

/* ---- GC ---- */

void
elect_gc_want(struct elect *e, struct elect_lock *lk, uint64_t now)
{
    if (lk->latest <= e->opts.keep_epochs || lk->gc_wanted) {
        return;
    }
    lk->gc_wanted = true;
    lk->gc_at = now + e->opts.gc_delay_ms;
    LIST_INSERT_HEAD(&e->gc_list, lk, gc_link);
}

static void gc_next_delete(struct elect *e);

static void
gc_end(struct elect *e)
{
    e->gc_running = false;
    e->gc_lock = NULL;
    elect_reschedule(e);
}

/* elect_be_del_fn, registered by gc_next_delete */
static void
on_gc_deleted(void *arg, int err)
{
    struct elect *e = arg;
    if (err != 0) {
        log_warn("GC: deleting %s: %s", e->gc_keys[e->gc_i], err_str(err));
    }
    e->gc_i++;
    gc_next_delete(e);
}

static void
gc_next_delete(struct elect *e)
{
    while (e->gc_i < e->gc_n) {
        int err = elect_backend_del(e->be, e->gc_keys[e->gc_i], on_gc_deleted, e);
        if (err == 0) {
            return;
        }
        log_warn("GC: deleting %s: %s", e->gc_keys[e->gc_i], err_str(err));
        e->gc_i++;
    }
    if (e->gc_n == ELECT_GC_BATCH) {
        elect_gc_want(e, e->gc_lock, clock_mono_ms()); /* maybe more: another run */
    }
    gc_end(e);
}

/* elect_be_list_fn, registered by elect_gc_run */
static void
on_gc_list(void *arg, int err, const char *const *keys, size_t n, bool truncated)
{
    struct elect *e = arg;
    struct elect_lock *lk = e->gc_lock;
    (void)truncated;
    if (err != 0) {
        log_warn("GC: listing lock %s: %s", lk->name, err_str(err));
        gc_end(e);
        return;
    }
    e->gc_n = 0;
    e->gc_i = 0;
    for (size_t i = 0; i < n && e->gc_n < ELECT_GC_BATCH; i++) {
        uint64_t ep;
        /* Only epoch files, only old ones: never the latest, never anything
         * newer than the floor.  The fence table is never touched. */
        if (elect_lockfile_key_epoch(e->prefix, lk->name, keys[i], &ep) != 0 || ep > e->gc_floor ||
            ep >= lk->latest) {
            continue;
        }
        str_copy(e->gc_keys[e->gc_n], sizeof(e->gc_keys[0]), keys[i]);
        e->gc_n++;
    }
    gc_next_delete(e);
}

void
elect_gc_run(struct elect *e, uint64_t now)
{
    if (e->gc_running) {
        return;
    }
    struct elect_lock *lk;
    for (lk = LIST_FIRST(&e->gc_list); lk != NULL; lk = LIST_NEXT(lk, gc_link)) {
        if (lk->gc_at <= now) {
            break;
        }
    }
    if (lk == NULL) {
        return;
    }
    LIST_REMOVE(lk, gc_link);
    lk->gc_wanted = false;
    if (lk->latest <= e->opts.keep_epochs) {
        return;
    }
    e->gc_floor = lk->latest - e->opts.keep_epochs;
    char dir[ELECT_KEY_MAX + 1];
    int err = elect_lockfile_dir(e->prefix, lk->name, dir, sizeof(dir));
    if (err == 0) {
        e->gc_running = true;
        e->gc_lock = lk;
        /* Oldest first: the first page holds what may go. */
        err = elect_backend_list(e->be, dir, NULL, ELECT_GC_BATCH, on_gc_list, e);
    }
    if (err != 0) {
        log_warn("GC: listing lock %s: %s", lk->name, err_str(err));
        e->gc_running = false;
        e->gc_lock = NULL;
    }
}

/* ---- G4 lookups ---- */

void
elect_checks_free(struct elect *e)
{
    struct elect_check *k;
    while ((k = LIST_FIRST(&e->checks)) != NULL) {
        LIST_REMOVE(k, link);
        free(k);
    }
}

/* elect_be_get_fn, registered by elect_epoch_check */
static void
on_check_get(void *arg, int err, const char *body, size_t len, const struct elect_obj_meta *meta)
{
    struct elect_check *k = arg;
    struct elect *e = k->e;
    LIST_REMOVE(k, link);
    elect_check_fn *cb = k->cb;
    void *cbarg = k->arg;
    (void)meta;
    if (err == ERR_NOTFOUND) {
        free(k);
        cb(cbarg, 0, false);
        return;
    }
    struct elect_lockfile rec;
    if (err == 0) {
        err = elect_lockfile_decode(body, len, &rec);
        if (err == 0 && (strcmp(rec.lock, k->lock) != 0 || rec.epoch != k->epoch)) {
            err = ERR_INVAL;
        }
    }
    if (err != 0) {
        log_warn("lock %s: looking up epoch %llu: %s", k->lock, (unsigned long long)k->epoch,
                 err_str(err));
        free(k);
        cb(cbarg, err, false);
        return;
    }
    struct elect_lock *lk = elect_lock_find(e, k->lock, true);
    if (lk == NULL) {
        free(k);
        cb(cbarg, ERR_NOMEM, false);
        return;
    }
    if (rec.epoch > lk->latest) {
        lk->known = false; /* a refresh is due before the election decides on it */
    }
    elect_observe(lk, &rec, meta->etag, meta, k->sent, clock_mono_ms());
    free(k);
    if (e->store == NULL || rec.epoch <= lk->cached) {
        cb(cbarg, 0, true);
        return;
    }
    /* Granted: in the election cache before we say so (R7). */
    err = elect_cache_advance(e, lk, rec.epoch, NULL, NULL, cb, cbarg);
    if (err != 0) {
        cb(cbarg, err, false);
    }
}

/* Starts the GET of lock's epoch file for a G4 lookup (cb) or a window read (wcb). */
static int
check_start(struct elect *e, const char *lock, uint64_t epoch, elect_check_fn *cb,
            elect_window_fn *wcb, void *arg, elect_be_get_fn *on_get)
{
    struct elect_check *k = calloc(1, sizeof(*k));
    if (k == NULL) {
        return ERR_NOMEM;
    }
    k->e = e;
    str_copy(k->lock, sizeof(k->lock), lock);
    k->epoch = epoch;
    k->cb = cb;
    k->wcb = wcb;
    k->arg = arg;
    char key[ELECT_KEY_MAX + 1];
    int err = elect_lockfile_key(e->prefix, lock, epoch, key, sizeof(key));
    if (err == 0) {
        k->sent = clock_mono_ms();
        err = elect_backend_get(e->be, key, on_get, k);
    }
    if (err != 0) {
        free(k);
        return err;
    }
    LIST_INSERT_HEAD(&e->checks, k, link);
    return 0;
}

int
elect_epoch_check(struct elect *e, const char *lock, uint64_t epoch, elect_check_fn *cb, void *arg)
{
    if (!lock_name_valid(lock) || epoch == 0 || epoch > (uint64_t)ELECT_EPOCH_MAX || cb == NULL) {
        return ERR_INVAL;
    }
    struct elect_lock *lk = elect_lock_find(e, lock, false);
    if (lk != NULL && lk->latest >= epoch) {
        return 1;
    }
    if (e->store != NULL) {
        struct store_elect se;
        int err = store_elect_get(e->store, lock, &se);
        if (err == 0 && se.epoch >= epoch) {
            return 1;
        }
        if (err != 0 && err != ERR_NOTFOUND) {
            return ERR_IO;
        }
    }
    return check_start(e, lock, epoch, cb, NULL, arg, on_check_get);
}

/* ---- window reads (elect_window_read) ---- */

static void
window_answer(struct elect_check *k, int err, enum elect_window_state state, uint64_t until,
              uint64_t latest)
{
    elect_window_fn *cb = k->wcb;
    void *arg = k->arg;
    struct elect_window w = {state, until, latest};
    free(k);
    cb(arg, err, &w);
}

/* elect_be_list_fn, registered by on_window_get: is there an epoch after k->epoch? */
static void
on_window_list(void *arg, int err, const char *const *keys, size_t n, bool truncated)
{
    struct elect_check *k = arg;
    struct elect *e = k->e;
    (void)truncated;
    LIST_REMOVE(k, link);
    if (err != 0) {
        window_answer(k, err, ELECT_WIN_ENDED, 0, 0);
        return;
    }
    struct elect_lock *lk = elect_lock_find(e, k->lock, true);
    if (lk == NULL) {
        window_answer(k, ERR_NOMEM, ELECT_WIN_ENDED, 0, 0);
        return;
    }
    uint64_t ep;
    if (n > 0 && elect_lockfile_key_epoch(e->prefix, k->lock, keys[0], &ep) == 0 && ep > k->epoch) {
        lk->known = false;
        elect_latest_raise(lk, ep);
        elect_cache_note(e, lk, ep);
        window_answer(k, 0, ELECT_WIN_SUPERSEDED, 0, lk->latest);
        return;
    }
    window_answer(k, 0, ELECT_WIN_NOT_GRANTED, 0, lk->latest);
}

/*
 * Has the lease of the record o observed surely run out, by the store's
 * clock, before the read?  Its age at the least (Date - Last-Modified, less
 * the second either may have been cut by) is the lease or more.  A renewal
 * is written only inside the holder's window (DESIGN "Write windows" rule
 * 3), which ends a lease after the record's last write, so none lands
 * after such a read; a younger age only bounds the window, it proves no end.
 */
static bool
ran_out_surely(const struct elect_obs *o, uint32_t lease_ms)
{
    int64_t least = o->store_age_ms - (o->store_whole_sec ? 1000 : 0);
    return o->store_age_ms >= 0 && least >= (int64_t)lease_ms;
}

/* elect_be_get_fn, registered by elect_window_read */
static void
on_window_get(void *arg, int err, const char *body, size_t len, const struct elect_obj_meta *meta)
{
    struct elect_check *k = arg;
    struct elect *e = k->e;
    uint64_t now = clock_mono_ms();
    struct elect_lock *lk = elect_lock_find(e, k->lock, true);
    if (lk == NULL) {
        LIST_REMOVE(k, link);
        window_answer(k, ERR_NOMEM, ELECT_WIN_ENDED, 0, 0);
        return;
    }
    if (err == ERR_NOTFOUND && lk->latest <= k->epoch) {
        /* Never granted, or collected because a newer epoch exists (GC never
         * deletes the latest): one LIST tells which. */
        char dir[ELECT_KEY_MAX + 1];
        char after[ELECT_KEY_MAX + 1];
        err = elect_lockfile_dir(e->prefix, k->lock, dir, sizeof(dir));
        if (err == 0) {
            err = elect_lockfile_key(e->prefix, k->lock, k->epoch, after, sizeof(after));
        }
        if (err == 0) {
            err = elect_backend_list(e->be, dir, after, 1, on_window_list, k);
        }
        if (err == 0) {
            return; /* k stays listed */
        }
    }
    LIST_REMOVE(k, link);
    struct elect_lockfile rec;
    if (err == 0) {
        err = elect_lockfile_decode(body, len, &rec);
        if (err == 0 && (strcmp(rec.lock, k->lock) != 0 || rec.epoch != k->epoch)) {
            err = ERR_INVAL;
        }
    }
    if (err != 0 && !(err == ERR_NOTFOUND && lk->latest > k->epoch)) {
        log_warn("lock %s: reading epoch %llu for a write window: %s", k->lock,
                 (unsigned long long)k->epoch, err_str(err));
        window_answer(k, err, ELECT_WIN_ENDED, 0, lk->latest);
        return;
    }
    if (err == 0) {
        if (rec.epoch > lk->latest) {
            lk->known = false;
        }
        elect_observe(lk, &rec, meta->etag, meta, k->sent, now);
        elect_cache_note(e, lk, lk->latest);
    }
    struct elect_window w;
    if (elect_window_peek(e, k->lock, k->epoch, now, &w) == 0) {
        window_answer(k, 0, w.state, w.until, w.latest);
        return;
    }
    if (err == 0 && lk->obs.store_age_ms < 0) {
        /* live by the record, but the store gave no Date/Last-Modified to bound
         * its age: unknown (503), not a verdict on the lease */
        log_warn("lock %s: epoch %llu read without store times: no write window", k->lock,
                 (unsigned long long)k->epoch);
        window_answer(k, ERR_UPSTREAM, ELECT_WIN_ENDED, 0, lk->latest);
        return;
    }
    if (err == 0 && ran_out_surely(&lk->obs, lk->rec.lease_ms)) {
        /* live by the record, but its lease has run out by the store's clock, and no
         * renewal can land any more: remembered (elect_window_peek) */
        lk->ran_out = true;
        window_answer(k, 0, ELECT_WIN_ENDED, 0, lk->latest);
        return;
    }
    /* Live by the record, its window closed, yet the lease may still be running (the
     * bound's one-second slack, a slow read, the shared cap): a renewal sent inside the
     * holder's window may land yet.  Not a verdict: "live, too short", read again. */
    window_answer(k, 0, ELECT_WIN_OPEN, lk->win_until, lk->latest);
}

int
elect_window_read(struct elect *e, const char *lock, uint64_t epoch, elect_window_fn *cb, void *arg)
{
    if (!lock_name_valid(lock) || epoch == 0 || epoch > (uint64_t)ELECT_EPOCH_MAX || cb == NULL) {
        return ERR_INVAL;
    }
    return check_start(e, lock, epoch, NULL, cb, arg, on_window_get);
}
