/*
 * election/elect_seq.c: the backend sequences of one lock (at most one in
 * flight per lock, lk->busy): refresh, create (acquire) and rewrite
 * (renew/release).  Each ends by clearing busy and handing the lock back to
 * the pump (e->pump, elect.c's elect_pump): nothing here calls elect.c.
 * Backend callbacks get the lock or the call as arg; both outlive every
 * backend operation (elect_free frees the backend, cancelling them, first).
 */
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "election/elect_int.h"
#include "election/sha256.h"
#include "store/store.h"

#define LOG_MODULE "election"
#include "common/log.h"
#include "common/rand.h"

static bool
ambiguous(int err)
{
    return err == ERR_UPSTREAM || err == ERR_TIMEOUT;
}

/* Decode a lock file read from key lock/epoch and check it is that epoch's. */
static int
decode_for(const char *lock, uint64_t epoch, const char *body, size_t len,
           struct elect_lockfile *out)
{
    int err = elect_lockfile_decode(body, len, out);
    if (err != 0) {
        log_error("lock %s epoch %llu: lock file unreadable: %s", lock, (unsigned long long)epoch,
                  err_str(err));
        return err;
    }
    if (strcmp(out->lock, lock) != 0 || out->epoch != epoch) {
        log_error("lock %s epoch %llu: lock file names lock %s epoch %llu", lock,
                  (unsigned long long)epoch, out->lock, (unsigned long long)out->epoch);
        return ERR_INVAL;
    }
    return 0;
}

/* ---- refresh: LIST start-after the latest known epoch, then GET the newest ---- */

static void
refresh_done(struct elect_lock *lk, int err)
{
    struct elect *e = lk->e;
    lk->busy = false;
    lk->refreshing = false;
    if (err == 0) {
        lk->known = true;
        lk->valid_from = lk->refresh_start;
        /* A newer epoch learnt while this refresh was in flight (a G4 lookup or a
         * window read) was not in its LIST: what it listed is not the latest, so it
         * frees nothing; the next read starts after that epoch (item 7). */
        lk->just_listed = lk->latest <= lk->refresh_newest;
        elect_cache_note(e, lk, lk->latest);
    } else {
        log_warn("lock %s: reading the latest epoch on %s failed: %s", lk->name,
                 elect_backend_name(e->be), err_str(err));
        /* Answer the calls this refresh was for; later ones try again.
         * Pumps from their callbacks wait until this loop is done. */
        lk->pumping = true;
        struct elect_call *c = TAILQ_FIRST(&lk->queue);
        while (c != NULL) {
            struct elect_call *next = TAILQ_NEXT(c, link);
            bool covered = c->kind == CALL_ACQUIRE || c->kind == CALL_GET || c->superseded;
            if (covered && c->step == STEP_NONE && c->seq <= lk->refresh_seq) {
                elect_call_complete(c, err, false);
                /* callbacks may have cancelled others: rescan */
                next = TAILQ_FIRST(&lk->queue);
            }
            c = next;
        }
        lk->pumping = false;
    }
    e->pump(e, lk);
}

/* elect_be_get_fn, registered by on_refresh_list */
static void
on_refresh_get(void *arg, int err, const char *body, size_t len, const struct elect_obj_meta *meta)
{
    struct elect_lock *lk = arg;
    uint64_t now = clock_mono_ms();
    uint64_t newest = lk->refresh_newest;
    if (err == ERR_NOTFOUND) {
        /* The newest file is gone (deleted by hand): nothing to judge, and
         * the next grant is newest+1 all the same. */
        lk->have = false;
        elect_latest_raise(lk, newest);
        refresh_done(lk, 0);
        return;
    }
    if (err != 0) {
        refresh_done(lk, err);
        return;
    }
    struct elect_lockfile rec;
    err = decode_for(lk->name, newest, body, len, &rec);
    if (err != 0) {
        refresh_done(lk, err);
        return;
    }
    elect_observe(lk, &rec, meta->etag, meta, lk->refresh_get_sent, now);
    refresh_done(lk, 0);
}

static void
refresh_get(struct elect_lock *lk)
{
    char key[ELECT_KEY_MAX + 1];
    int err = elect_lockfile_key(lk->e->prefix, lk->name, lk->refresh_newest, key, sizeof(key));
    if (err == 0) {
        lk->refresh_get_sent = clock_mono_ms();
        err = elect_backend_get(lk->e->be, key, on_refresh_get, lk);
    }
    if (err != 0) {
        refresh_done(lk, err);
    }
}

/* elect_be_list_fn, registered by elect_seq_refresh and itself */
static void
on_refresh_list(void *arg, int err, const char *const *keys, size_t n, bool truncated)
{
    struct elect_lock *lk = arg;
    struct elect *e = lk->e;
    if (err != 0) {
        refresh_done(lk, err);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t ep;
        if (elect_lockfile_key_epoch(e->prefix, lk->name, keys[i], &ep) == 0 &&
            ep > lk->refresh_newest) {
            lk->refresh_newest = ep;
        }
    }
    if (truncated && n > 0) {
        /* More keys: go on after the last one (the backend copies it now). */
        char dir[ELECT_KEY_MAX + 1];
        err = elect_lockfile_dir(e->prefix, lk->name, dir, sizeof(dir));
        if (err == 0) {
            err = elect_backend_list(e->be, dir, keys[n - 1], ELECT_LIST_MAX, on_refresh_list, lk);
        }
        if (err != 0) {
            refresh_done(lk, err);
        }
        return;
    }
    if (lk->refresh_newest == 0) {
        lk->have = false;
        refresh_done(lk, 0);
        return;
    }
    refresh_get(lk);
}

void
elect_seq_refresh(struct elect *e, struct elect_lock *lk)
{
    uint64_t now = clock_mono_ms();
    lk->busy = true;
    lk->refreshing = true;
    lk->refresh_start = now;
    lk->refresh_seq = e->call_seq;
    lk->last_read = now;
    lk->refresh_from = lk->latest;
    lk->refresh_newest = lk->latest;
    char dir[ELECT_KEY_MAX + 1];
    char after[ELECT_KEY_MAX + 1];
    int err = elect_lockfile_dir(e->prefix, lk->name, dir, sizeof(dir));
    if (err == 0 && lk->latest > 0) {
        err = elect_lockfile_key(e->prefix, lk->name, lk->latest, after, sizeof(after));
    }
    if (err == 0) {
        err = elect_backend_list(e->be, dir, lk->latest > 0 ? after : NULL, ELECT_LIST_MAX,
                                 on_refresh_list, lk);
    }
    if (err != 0) {
        refresh_done(lk, err);
    }
}

/* ---- ends of call sequences ---- */

void
elect_seq_end(struct elect_call *c, int err, bool answer)
{
    struct elect_lock *lk = c->lk;
    struct elect *e = c->e;
    lk->busy = false;
    c->step = STEP_NONE;
    if (answer || c->done) {
        elect_call_complete(c, err, false);
    }
    e->pump(e, lk);
}

/* ---- create: acquire's create-if-absent of epoch latest+1 ---- */

static void do_create(struct elect_call *c);
static void do_expire(struct elect_call *c);

/* The state changed under us (a newer epoch, a lost race): forget the
 * freshness so the call at the head re-reads and decides again. */
static void
invalidate(struct elect_lock *lk)
{
    lk->known = false;
    lk->valid_from = 0;
}

/* elect_be_list_fn, registered by elect_seq_create (the guard LIST) */
static void
on_guard_list(void *arg, int err, const char *const *keys, size_t n, bool truncated)
{
    struct elect_call *c = arg;
    (void)keys;
    (void)truncated;
    if (err != 0) {
        elect_seq_end(c, err, true);
        return;
    }
    if (n > 0) {
        invalidate(c->lk); /* someone is ahead: re-read, then decide */
        elect_seq_end(c, 0, false);
        return;
    }
    do_create(c);
}

/*
 * Guard: never create epoch c->token on a view that was not just listed (a
 * much newer epoch could exist, and c->token could have been granted and
 * collected since).  Lists the lock's files after c->token - 1: any there
 * means someone is ahead (on_guard_list), none that creating is safe.
 */
static void
guard_create(struct elect_call *c)
{
    struct elect_lock *lk = c->lk;
    struct elect *e = c->e;
    char dir[ELECT_KEY_MAX + 1];
    char after[ELECT_KEY_MAX + 1];
    uint64_t below = c->token - 1;
    c->step = STEP_GUARD_LIST;
    int err = elect_lockfile_dir(e->prefix, lk->name, dir, sizeof(dir));
    if (err == 0 && below > 0) {
        err = elect_lockfile_key(e->prefix, lk->name, below, after, sizeof(after));
    }
    if (err == 0) {
        err = elect_backend_list(e->be, dir, below > 0 ? after : NULL, 1, on_guard_list, c);
    }
    if (err != 0) {
        elect_seq_end(c, err, true);
    }
}

void
elect_seq_create(struct elect_call *c)
{
    struct elect_lock *lk = c->lk;
    lk->busy = true;
    c->token = lk->latest + 1;
    c->attempts = 0;
    int err = rand_hex(c->lease_id, ELECT_LEASE_ID_HEX / 2);
    if (err == 0) {
        err = rand_hex(c->grant_id, ELECT_GRANT_ID_HEX / 2);
    }
    if (err != 0) {
        elect_seq_end(c, err, true);
        return;
    }
    if (lk->have && lk->rec.epoch == lk->latest && !lk->rec.expired) {
        do_expire(c); /* a lease that ran out: take it over by compare-and-swap first */
        return;
    }
    if (lk->just_listed) {
        do_create(c); /* the LIST that found `latest` just completed */
        return;
    }
    guard_create(c);
}

/* elect_be_write_fn, registered by do_expire */
static void
on_expire(void *arg, int err, const struct elect_obj_meta *meta)
{
    struct elect_call *c = arg;
    struct elect_lock *lk = c->lk;
    if (err == 0) {
        uint64_t now = clock_mono_ms();
        elect_observe(lk, &c->rec, meta->etag, NULL, c->sent, now);
        lk->expired_by_us = true;
        c->took_over = true;
        if (c->e->lease_obs != NULL) {
            c->e->lease_obs(c->e->lease_obs_arg, lk->name, ELECT_EV_EXPIRE, c->rec.epoch, 0);
        }
        log_info("lock %s: epoch %llu expired (its lease ran out) before granting the next",
                 lk->name, (unsigned long long)c->rec.epoch);
        /* It was the latest and unexpired until our If-Match landed, so no newer epoch
         * exists: every creator expires (or finds released) the previous one first. */
        do_create(c);
        return;
    }
    if ((err == ERR_CONFLICT || err == ERR_NOTFOUND || ambiguous(err)) &&
        ++c->expire_attempts < ELECT_MAX_ATTEMPTS * 4) {
        /* renewed or released meanwhile, or unknown: read again and decide again */
        invalidate(lk);
        elect_seq_end(c, 0, false);
        return;
    }
    if (err == ERR_CONFLICT) {
        /* a store that keeps refusing a rewrite of a record that does not change */
        log_error("lock %s: taking over epoch %llu failed %d times; giving up this acquire",
                  lk->name, (unsigned long long)c->rec.epoch, c->expire_attempts);
        err = ERR_UPSTREAM;
    }
    elect_seq_end(c, err, true);
}

/*
 * The latest epoch's lease ran out (its record unchanged for lease_ms on our
 * clock, or by the store's own clock): rewrite it expired:true with If-Match
 * on the version we judged.  A renewal that landed first makes this fail (and
 * we wait again); one that comes later fails on its If-Match.  So a renewal
 * answered 200 always means no newer epoch exists (DESIGN rule 4).
 */
static void
do_expire(struct elect_call *c)
{
    struct elect *e = c->e;
    struct elect_lock *lk = c->lk;
    c->rec = lk->rec;
    c->rec.expired = true;
    c->rec.renewals++;
    int64_t wall = clock_wall_ms();
    c->rec.renewed_at_ms = wall > c->rec.renewed_at_ms ? wall : c->rec.renewed_at_ms;
    char key[ELECT_KEY_MAX + 1];
    int err = elect_lockfile_encode(&c->rec, c->body, sizeof(c->body), &c->body_len);
    if (err == 0) {
        err = elect_lockfile_key(e->prefix, lk->name, lk->rec.epoch, key, sizeof(key));
    }
    if (err == 0) {
        c->step = STEP_EXPIRE;
        c->sent = clock_mono_ms();
        err = elect_backend_replace(e->be, key, lk->etag, e->form, c->body, c->body_len, on_expire,
                                    c);
    }
    if (err != 0) {
        elect_seq_end(c, err, true);
    }
}

static void on_create(void *arg, int err, const struct elect_obj_meta *meta);
static void on_readback(void *arg, int err, const char *body, size_t len,
                        const struct elect_obj_meta *meta);

static void
do_create(struct elect_call *c)
{
    struct elect *e = c->e;
    struct elect_lock *lk = c->lk;
    int64_t wall = clock_wall_ms();
    struct elect_lockfile *r = &c->rec;
    memset(r, 0, sizeof(*r));
    r->epoch = c->token;
    str_copy(r->lock, sizeof(r->lock), lk->name);
    str_copy(r->holder, sizeof(r->holder), c->holder);
    r->lease_ms = c->lease_ms;
    r->acquired_at_ms = wall;
    r->renewed_at_ms = wall;
    r->expired = false;
    elect_sha256_hex(c->lease_id, strlen(c->lease_id), r->lease_sha256);
    str_copy(r->granted_by, sizeof(r->granted_by), e->granted_by);
    /* The same grant_id on every attempt for this epoch: a read-back that
     * finds it proves one of our attempts landed. */
    str_copy(r->grant_id, sizeof(r->grant_id), c->grant_id);
    r->renewals = 0;
    char key[ELECT_KEY_MAX + 1];
    int err = elect_lockfile_encode(r, c->body, sizeof(c->body), &c->body_len);
    if (err == 0) {
        err = elect_lockfile_key(e->prefix, lk->name, c->token, key, sizeof(key));
    }
    if (err == 0) {
        if (c->attempts == 0) {
            c->sent = clock_mono_ms(); /* the earliest attempt: the window counts from it */
        }
        c->attempts++;
        c->step = STEP_CREATE;
        err = elect_backend_create(e->be, key, c->body, c->body_len, on_create, c);
    }
    if (err != 0) {
        elect_seq_end(c, err, true);
    }
}

static void
read_back(struct elect_call *c)
{
    char key[ELECT_KEY_MAX + 1];
    int err = elect_lockfile_key(c->e->prefix, c->lk->name, c->token, key, sizeof(key));
    if (err == 0) {
        c->step = STEP_READBACK;
        c->read_sent = clock_mono_ms();
        err = elect_backend_get(c->e->be, key, on_readback, c);
    }
    if (err != 0) {
        elect_seq_end(c, err, true);
    }
}

static void grant_done(struct elect_call *c, int err);

/* Our create landed (etag known): commit the epoch to the election cache
 * before anything answers with it (STYLE R7). */
static void
granted(struct elect_call *c, const char *etag)
{
    struct elect *e = c->e;
    str_copy(c->etag, sizeof(c->etag), etag);
    c->step = STEP_STORE;
    if (e->store == NULL) {
        grant_done(c, 0);
        return;
    }
    int err = elect_cache_advance(e, c->lk, c->token, grant_done, c, NULL, NULL);
    if (err != 0) {
        grant_done(c, err);
    }
}

/* elect_granted_fn, passed to elect_cache_advance by granted (and called by it directly) */
static void
grant_done(struct elect_call *c, int err)
{
    struct elect_lock *lk = c->lk;
    struct elect *e = c->e;
    uint64_t now = clock_mono_ms();
    /* The grant exists in the backend either way: record what we wrote. */
    elect_observe(lk, &c->rec, c->etag, NULL, c->sent, now);
    lk->known = true;
    lk->valid_from = now;
    if (err != 0) {
        /* Nobody receives the lease_id: the epoch simply expires. */
        log_error("lock %s: epoch %llu granted on %s but not recorded: %s", lk->name,
                  (unsigned long long)c->token, elect_backend_name(e->be), err_str(err));
    } else {
        log_info("lock %s: epoch %llu granted to %s (lease %u ms)", lk->name,
                 (unsigned long long)c->token, c->holder, c->lease_ms);
    }
    elect_gc_want(e, lk, now);
    lk->busy = false;
    c->step = STEP_NONE;
    elect_call_complete(c, err, err == 0);
    e->pump(e, lk);
}

/* elect_be_write_fn, registered by do_create */
static void
on_create(void *arg, int err, const struct elect_obj_meta *meta)
{
    struct elect_call *c = arg;
    if (err == 0) {
        granted(c, meta->etag);
        return;
    }
    if (err == ERR_EXISTS || err == ERR_CONFLICT || ambiguous(err)) {
        /* 412: someone won, or an earlier attempt of ours landed; 5xx or a
         * timeout: unknown (RGW answers some losing conditional PUTs with
         * 500).  Read the file back and compare grant_id. */
        read_back(c);
        return;
    }
    elect_seq_end(c, err, true);
}

/* elect_be_get_fn, registered by read_back */
static void
on_readback(void *arg, int err, const char *body, size_t len, const struct elect_obj_meta *meta)
{
    struct elect_call *c = arg;
    struct elect_lock *lk = c->lk;
    if (err == ERR_NOTFOUND) {
        if (c->attempts < ELECT_MAX_ATTEMPTS) {
            /* Not there: it did not land, or it landed and was collected after
             * newer epochs were granted (an answer lost for longer than
             * keep_epochs grants).  List first, then try again, same grant_id. */
            guard_create(c);
            return;
        }
        elect_seq_end(c, ERR_UPSTREAM, true);
        return;
    }
    if (err != 0) {
        elect_seq_end(c, err, true);
        return;
    }
    struct elect_lockfile rec;
    err = decode_for(lk->name, c->token, body, len, &rec);
    if (err != 0) {
        elect_seq_end(c, err, true);
        return;
    }
    if (strcmp(rec.grant_id, c->grant_id) == 0) {
        granted(c, meta->etag);
        return;
    }
    /* Another contender has this epoch: it is the state now.  The call
     * stays at the head and is decided again (held, wait, or next epoch). */
    uint64_t now = clock_mono_ms();
    elect_observe(lk, &rec, meta->etag, meta, c->read_sent, now);
    lk->known = true;
    lk->valid_from = now;
    elect_cache_note(c->e, lk, rec.epoch);
    elect_seq_end(c, 0, false);
}

/* ---- rewrite: renew / release of epoch c->token ---- */

static void w_check(struct elect_call *c);
static void w_get(struct elect_call *c);

/* The epoch's file is gone: superseded if a newer epoch is known, else unknown. */
static void
w_gone(struct elect_call *c)
{
    if (c->lk->latest > c->token) {
        elect_seq_end(c, ERR_CONFLICT, true);
        return;
    }
    elect_seq_end(c, ERR_NOTFOUND, true);
}

/* elect_be_get_fn, registered by w_get */
static void
on_w_get(void *arg, int err, const char *body, size_t len, const struct elect_obj_meta *meta)
{
    struct elect_call *c = arg;
    struct elect_lock *lk = c->lk;
    if (err == ERR_NOTFOUND) {
        w_gone(c);
        return;
    }
    if (err != 0) {
        elect_seq_end(c, err, true);
        return;
    }
    err = decode_for(lk->name, c->token, body, len, &c->rec);
    if (err != 0) {
        elect_seq_end(c, err, true);
        return;
    }
    str_copy(c->etag, sizeof(c->etag), meta->etag);
    if (c->token >= lk->latest) {
        elect_observe(lk, &c->rec, meta->etag, meta, c->read_sent, clock_mono_ms());
    }
    c->read_fresh = true;
    w_check(c);
}

static void
w_get(struct elect_call *c)
{
    char key[ELECT_KEY_MAX + 1];
    int err = elect_lockfile_key(c->e->prefix, c->lk->name, c->token, key, sizeof(key));
    if (err == 0) {
        c->step = STEP_W_GET;
        c->read_sent = clock_mono_ms();
        err = elect_backend_get(c->e->be, key, on_w_get, c);
    }
    if (err != 0) {
        elect_seq_end(c, err, true);
    }
}

void
elect_seq_rewrite(struct elect_call *c)
{
    struct elect_lock *lk = c->lk;
    lk->busy = true;
    c->attempts = 0;
    c->read_fresh = false;
    if (lk->have && lk->rec.epoch == c->token && lk->etag[0] != '\0') {
        c->rec = lk->rec;
        str_copy(c->etag, sizeof(c->etag), lk->etag);
        w_check(c);
        return;
    }
    w_get(c);
}

static void on_w_list(void *arg, int err, const char *const *keys, size_t n, bool truncated);

/* Whether the renewal of c->token may be written now (window_left >= commit margin). */
static bool
window_left(const struct elect_call *c)
{
    const struct elect_lock *lk = c->lk;
    if (!lk->have || lk->rec.epoch != c->token) {
        return false;
    }
    return lk->win_until >= clock_mono_ms() + c->e->opts.commit_margin_ms;
}

/* The record of epoch c->token is in c->rec: check the holder, then look for a newer epoch. */
static void
w_check(struct elect_call *c)
{
    struct elect *e = c->e;
    struct elect_lock *lk = c->lk;
    char presented[ELECT_SHA256_HEX + 1];
    elect_sha256_hex(c->lease_id, strlen(c->lease_id), presented);
    bool holder =
        c->lease_id[0] != '\0' && elect_ct_equal(presented, c->rec.lease_sha256, ELECT_SHA256_HEX);
    if (!holder && !c->revoke) {
        elect_seq_end(c, ERR_DENIED, true); /* G5: only the holder (or an admin's revoke) */
        return;
    }
    if (lk->latest > c->token) {
        c->superseded = true;
        elect_seq_end(c, 0, false);
        return;
    }
    if (!c->rec.expired && c->kind == CALL_RENEW && !window_left(c)) {
        if (!c->read_fresh) {
            w_get(c); /* the window we know is short: the file may say more */
            return;
        }
        /* DESIGN rule 3: a renewal is written only inside the window, so it never
         * revives a lease other gateways already judge ended. */
        log_info("lock %s: renewal of epoch %llu refused: its lease has run out", lk->name,
                 (unsigned long long)c->token);
        elect_seq_end(c, ERR_CONFLICT, true);
        return;
    }
    char dir[ELECT_KEY_MAX + 1];
    char after[ELECT_KEY_MAX + 1];
    int err = elect_lockfile_dir(e->prefix, lk->name, dir, sizeof(dir));
    if (err == 0) {
        err = elect_lockfile_key(e->prefix, lk->name, c->token, after, sizeof(after));
    }
    if (err == 0) {
        c->step = STEP_W_LIST;
        err = elect_backend_list(e->be, dir, after, 1, on_w_list, c);
    }
    if (err != 0) {
        elect_seq_end(c, err, true);
    }
}

static void on_w_put(void *arg, int err, const struct elect_obj_meta *meta);

/* elect_be_list_fn, registered by w_check */
static void
on_w_list(void *arg, int err, const char *const *keys, size_t n, bool truncated)
{
    struct elect_call *c = arg;
    struct elect *e = c->e;
    struct elect_lock *lk = c->lk;
    (void)truncated;
    if (err != 0) {
        elect_seq_end(c, err, true);
        return;
    }
    uint64_t ep;
    if (n > 0 && elect_lockfile_key_epoch(e->prefix, lk->name, keys[0], &ep) == 0 &&
        ep > c->token) {
        /* Superseded: answer 409 with the current holder after a refresh. */
        elect_latest_raise(lk, ep);
        invalidate(lk);
        c->superseded = true;
        elect_seq_end(c, 0, false);
        return;
    }
    if (c->rec.expired) {
        /* Released (or expired by a takeover whose create has not landed yet):
         * releasing again is done; renewing is too late. */
        elect_seq_end(c, c->kind == CALL_RELEASE ? 0 : ERR_CONFLICT, true);
        return;
    }
    struct elect_lockfile next = c->rec;
    /* Every rewrite changes the body (renewals, renewed_at), so the ETag
     * always changes: no ABA on If-Match (DESIGN "The election"). */
    next.renewals++;
    int64_t wall = clock_wall_ms();
    next.renewed_at_ms = wall > next.acquired_at_ms ? wall : next.acquired_at_ms;
    if (c->kind == CALL_RELEASE) {
        next.expired = true;
    }
    char key[ELECT_KEY_MAX + 1];
    err = elect_lockfile_encode(&next, c->body, sizeof(c->body), &c->body_len);
    if (err == 0) {
        err = elect_lockfile_key(e->prefix, lk->name, c->token, key, sizeof(key));
    }
    if (err == 0) {
        c->rec = next;
        c->attempts++;
        c->step = STEP_W_PUT;
        c->sent = clock_mono_ms();
        err =
            elect_backend_replace(e->be, key, c->etag, e->form, c->body, c->body_len, on_w_put, c);
    }
    if (err != 0) {
        elect_seq_end(c, err, true);
    }
}

static void
w_wrote(struct elect_call *c, const char *etag)
{
    struct elect_lock *lk = c->lk;
    uint64_t now = clock_mono_ms();
    if (c->token >= lk->latest) {
        elect_observe(lk, &c->rec, etag, NULL, c->sent, now);
        lk->known = true;
        lk->valid_from = now;
    }
    elect_seq_end(c, 0, true);
}

static void on_w_verify(void *arg, int err, const char *body, size_t len,
                        const struct elect_obj_meta *meta);

/* elect_be_write_fn, registered by on_w_list */
static void
on_w_put(void *arg, int err, const struct elect_obj_meta *meta)
{
    struct elect_call *c = arg;
    if (err == 0) {
        w_wrote(c, meta->etag);
        return;
    }
    if (err == ERR_NOTFOUND) {
        w_gone(c);
        return;
    }
    if (err == ERR_CONFLICT || ambiguous(err)) {
        if (c->attempts >= ELECT_MAX_ATTEMPTS) {
            elect_seq_end(c, err, true);
            return;
        }
        /* Changed under us (the holder renewed through another gateway, or
         * released), or unknown: read it back; identical to what we wrote
         * means ours landed, else check and try again. */
        char key[ELECT_KEY_MAX + 1];
        err = elect_lockfile_key(c->e->prefix, c->lk->name, c->token, key, sizeof(key));
        if (err == 0) {
            c->step = STEP_W_CHECK;
            err = elect_backend_get(c->e->be, key, on_w_verify, c);
        }
        if (err != 0) {
            elect_seq_end(c, err, true);
        }
        return;
    }
    elect_seq_end(c, err, true);
}

/* elect_be_get_fn, registered by on_w_put */
static void
on_w_verify(void *arg, int err, const char *body, size_t len, const struct elect_obj_meta *meta)
{
    struct elect_call *c = arg;
    if (err == 0 && len == c->body_len && memcmp(body, c->body, len) == 0) {
        w_wrote(c, meta->etag);
        return;
    }
    if (err == 0) {
        /* Someone else's version: take it as the record and check again. */
        on_w_get(c, 0, body, len, meta);
        return;
    }
    on_w_get(c, err, NULL, 0, NULL);
}
