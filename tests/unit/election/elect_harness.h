/*
 * tests/unit/election/elect_harness.h: the shared harness of the election
 * core's tests (elect_test.c, elect_window_test.c): a pinned clock
 * (set_time, advance firing the elects' timers), the in-memory backend
 * (membackend.h) shared by up to MAXE elects like gateways sharing one
 * bucket, a real store (the election cache) in a temp directory, and
 * call helpers (acquire, renew, release) that run the loop until quiet.
 * Include it once, from a *_test.c only.
 */
#ifndef TESTS_UNIT_ELECTION_ELECT_HARNESS_H
#define TESTS_UNIT_ELECTION_ELECT_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <event2/event.h>
#include <poll.h>

#include "../store/testutil.h"
#include "common/clock.h"
#include "election/elect.h"
#include "election/lease.h"
#include "election/lockfile.h"
#include "membackend.h"
#include "store/store.h"

#define WALL0 INT64_C(1795000000000)
#define MAXE  8

struct env {
    char *dir;
    struct store *store;
    struct event_base *base;
    struct mem_store *ms;
    struct elect *e[MAXE];
    int ne;
    uint64_t now;
};

static void
set_time(struct env *v, uint64_t mono)
{
    v->now = mono;
    clock_pin(mono, WALL0 + (int64_t)mono);
}

/* Run backend callbacks and store completions until both are quiet. */
static void
run(struct env *v)
{
    for (int spins = 0; spins < 100000; spins++) {
        size_t n = mem_run(v->ms);
        if (v->store != NULL) {
            n += store_dispatch_completions(v->store);
            if (n == 0) {
                struct store_stats st;
                store_stats_get(v->store, &st);
                struct pollfd p = {.fd = store_completion_fd(v->store), .events = POLLIN};
                int w = poll(&p, 1, st.queue_depth > 0 ? 100 : 1);
                if (w > 0) {
                    n += store_dispatch_completions(v->store);
                } else if (st.queue_depth > 0) {
                    continue; /* a commit (fsync) slower than 100 ms on a busy machine */
                }
            }
        }
        if (n == 0) {
            return;
        }
    }
    fail_msg("run: no quiescence");
}

/* Move the pinned clock forward in steps, firing the elects' timers. */
static void
advance(struct env *v, uint64_t ms, uint64_t step)
{
    uint64_t end = v->now + ms;
    while (v->now < end) {
        uint64_t next = v->now + step < end ? v->now + step : end;
        set_time(v, next);
        for (int i = 0; i < v->ne; i++) {
            if (v->e[i] != NULL) {
                elect_on_timer(v->e[i]);
            }
        }
        run(v);
    }
}

/* The options new_elect uses: 1 s leases allowed, commit margin 50 ms, id gw-<n>. */
static void
env_opts(struct env *v, struct elect_opts *o, char *gb, size_t gblen)
{
    elect_opts_init(o);
    o->base = v->base;
    o->store = v->store;
    o->prefix = "fg/";
    (void)snprintf(gb, gblen, "gw-%d", v->ne);
    o->granted_by = gb;
    o->min_lease_ms = 100;
    o->commit_margin_ms = 50; /* leases of 1 s in these tests */
}

/* An elect over the shared objects with options o (its backend is made here). */
static struct elect *
new_elect_o(struct env *v, struct elect_opts *o, bool expect_ready)
{
    assert_true(v->ne < MAXE);
    o->backend = mem_backend_new(v->ms);
    struct elect *e = NULL;
    assert_int_equal(elect_new(o, &e), 0);
    assert_int_equal(elect_start(e), 0);
    run(v);
    const char *why = NULL;
    assert_int_equal(elect_ready(e, &why), expect_ready);
    v->e[v->ne++] = e;
    return e;
}

static struct elect *
new_elect(struct env *v, uint32_t keep, bool expect_ready)
{
    struct elect_opts o;
    char gb[16];
    env_opts(v, &o, gb, sizeof(gb));
    o.keep_epochs = keep;
    return new_elect_o(v, &o, expect_ready);
}

static int
setup(void **state)
{
    struct env *v = calloc(1, sizeof(*v));
    set_time(v, 1000);
    v->dir = tl_dir_new("store");
    v->store = tu_open(v->dir, false);
    v->base = event_base_new();
    v->ms = mem_store_new();
    *state = v;
    return 0;
}

static int
teardown(void **state)
{
    struct env *v = *state;
    for (int i = 0; i < v->ne; i++) {
        elect_free(v->e[i]);
    }
    store_close(v->store);
    mem_store_free(v->ms);
    event_base_free(v->base);
    tl_dir_free(v->dir);
    clock_unpin();
    free(v);
    return 0;
}

struct res {
    int calls;
    int err;
    struct elect_info info;
    uint64_t at;          /* mono ms of the answer */
    uint64_t cache_epoch; /* election cache when the answer came (R7) */
    struct store *store;
};

static void
on_done(void *arg, int err, const struct elect_info *info)
{
    struct res *r = arg;
    r->calls++;
    r->err = err;
    r->info = *info;
    r->at = clock_mono_ms();
    r->cache_epoch = 0;
    if (r->store != NULL) {
        struct store_elect se;
        if (store_elect_get(r->store, info->lock, &se) == 0) {
            r->cache_epoch = se.epoch;
        }
    }
}

static void
acquire(struct env *v, struct elect *e, const char *lock, const char *holder, uint32_t lease,
        uint32_t wait, struct res *r)
{
    memset(r, 0, sizeof(*r));
    r->store = v->store;
    assert_int_equal(elect_acquire(e, lock, holder, lease, wait, on_done, r, NULL), 0);
    assert_int_equal(r->calls, 0); /* never before the call returns */
}

static void
acquire_ok(struct env *v, struct elect *e, const char *lock, const char *holder, uint32_t lease,
           struct res *r)
{
    acquire(v, e, lock, holder, lease, 0, r);
    run(v);
    assert_int_equal(r->calls, 1);
    assert_int_equal(r->err, 0);
    assert_int_equal(strlen(r->info.lease_id), ELECT_LEASE_ID_HEX);
}

static int
renew(struct env *v, struct elect *e, const char *lock, uint64_t token, const char *id,
      struct res *r)
{
    memset(r, 0, sizeof(*r));
    assert_int_equal(elect_renew(e, lock, token, id, on_done, r, NULL), 0);
    run(v);
    assert_int_equal(r->calls, 1);
    return r->err;
}

static int
release(struct env *v, struct elect *e, const char *lock, uint64_t token, const char *id,
        struct res *r)
{
    memset(r, 0, sizeof(*r));
    assert_int_equal(elect_release(e, lock, token, id, on_done, r, NULL), 0);
    run(v);
    assert_int_equal(r->calls, 1);
    return r->err;
}

/* The key of lock's epoch file under the tests' prefix. */
static void
ekey(const char *lock, uint64_t epoch, char *key, size_t len)
{
    assert_int_equal(elect_lockfile_key("fg/", lock, epoch, key, len), 0);
}

/* Whether lock's epoch file exists; if so and lf is not NULL, its decoded contents. */
__attribute__((unused)) static bool
lockfile_at(struct env *v, const char *lock, uint64_t epoch, struct elect_lockfile *lf)
{
    char key[ELECT_KEY_MAX + 1];
    ekey(lock, epoch, key, sizeof(key));
    struct mem_obj *o = mem_find(v->ms, key);
    if (o == NULL) {
        return false;
    }
    if (lf != NULL) {
        assert_int_equal(elect_lockfile_decode(o->body, o->len, lf), 0);
    }
    return true;
}

/* Advance in steps of 10 ms until cond holds (at most max_ms); fails if it never does. */
#define advance_until(v, cond, max_ms)                                                             \
    do {                                                                                           \
        uint64_t end_ = (v)->now + (max_ms);                                                       \
        while (!(cond)) {                                                                          \
            assert_true((v)->now < end_);                                                          \
            advance((v), 10, 10);                                                                  \
        }                                                                                          \
    } while (0)

struct check_res {
    int calls;
    int err;
    bool granted;
};

/* elect_check_fn */
static void
on_check(void *arg, int err, bool granted)
{
    struct check_res *c = arg;
    c->calls++;
    c->err = err;
    c->granted = granted;
}

struct win_res {
    int calls;
    int err;
    struct elect_window w;
};

/* elect_window_fn */
static void
on_win(void *arg, int err, const struct elect_window *w)
{
    struct win_res *r = arg;
    r->calls++;
    r->err = err;
    r->w = *w;
}

/* elect_window_read of lock/epoch on e, run to its answer. */
__attribute__((unused)) static void
window_read(struct env *v, struct elect *e, const char *lock, uint64_t epoch, struct win_res *r)
{
    memset(r, 0, sizeof(*r));
    assert_int_equal(elect_window_read(e, lock, epoch, on_win, r), 0);
    assert_int_equal(r->calls, 0);
    run(v);
    assert_int_equal(r->calls, 1);
}

#endif
