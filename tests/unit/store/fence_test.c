/* tests/unit/store/fence_test.c: store/fence.c: the fence table and the
 * election cache, synchronous and asynchronous, under concurrency. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>

#include "common/clock.h"
#include "common/num.h"
#include "testutil.h"

static void
test_get_check_advance(void **state)
{
    struct store *s = tu_open(*state, false);
    struct store_fence f;
    assert_int_equal(store_fence_get(s, "orders", &f, NULL), ERR_NOTFOUND);
    enum store_fence_verdict v;
    uint64_t hi = 99;
    assert_int_equal(store_fence_check(s, "orders", 1, &v, &hi), 0);
    assert_int_equal(v, STORE_FENCE_ADVANCE);
    assert_int_equal(hi, 0);

    clock_pin(1, 1795256130123);
    assert_int_equal(store_fence_advance_sync(s, "orders", 7, "req-7", "alice", &hi), 0);
    clock_unpin();
    assert_int_equal(hi, 7);
    bool durable = false;
    assert_int_equal(store_fence_get(s, "orders", &f, &durable), 0);
    assert_true(durable);
    assert_int_equal(f.token, 7);
    assert_int_equal(f.advanced_ms, 1795256130123);
    assert_string_equal(f.request_id, "req-7");
    assert_string_equal(f.principal, "alice");

    assert_int_equal(store_fence_check(s, "orders", 7, &v, &hi), 0);
    assert_int_equal(v, STORE_FENCE_ACCEPT);
    assert_int_equal(store_fence_check(s, "orders", 6, &v, &hi), 0);
    assert_int_equal(v, STORE_FENCE_STALE);
    assert_int_equal(hi, 7);
    assert_int_equal(store_fence_check(s, "orders", 8, &v, NULL), 0);
    assert_int_equal(v, STORE_FENCE_ADVANCE);

    /* equal: success, entry unchanged; lower: ERR_FENCED, never lowered */
    assert_int_equal(store_fence_advance_sync(s, "orders", 7, "other", "bob", &hi), 0);
    assert_int_equal(store_fence_advance_sync(s, "orders", 3, "old", "zombie", &hi), ERR_FENCED);
    assert_int_equal(hi, 7);
    assert_int_equal(store_fence_get(s, "orders", &f, NULL), 0);
    assert_int_equal(f.token, 7);
    assert_string_equal(f.request_id, "req-7");

    /* bad arguments */
    assert_int_equal(store_fence_advance_sync(s, "orders", 0, NULL, NULL, NULL), ERR_INVAL);
    assert_int_equal(store_fence_advance_sync(s, "", 1, NULL, NULL, NULL), ERR_INVAL);
    assert_int_equal(store_fence_get(s, "bad\nlock", &f, NULL), ERR_INVAL);
    assert_int_equal(store_fence_check(s, "orders", 0, &v, NULL), ERR_INVAL);

    /* long request ids and principals are truncated, not refused */
    char big[300];
    memset(big, 'p', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(store_fence_advance_sync(s, "long", 1, big, big, NULL), 0);
    assert_int_equal(store_fence_get(s, "long", &f, NULL), 0);
    assert_int_equal(strlen(f.request_id), STORE_REQID_MAX);
    assert_int_equal(strlen(f.principal), STORE_PRINCIPAL_MAX);
    store_close(s);
}

struct list_acc {
    int n;           /* entries seen */
    char locks[512]; /* their names, comma-separated */
    uint64_t sum;    /* sum of tokens / epochs */
    int stop_after;  /* return 1 after this many (0 = never) */
};

static int
on_fence(void *arg, const char *lock, const struct store_fence *f)
{
    struct list_acc *a = arg;
    a->n++;
    size_t used = strlen(a->locks);
    (void)snprintf(a->locks + used, sizeof(a->locks) - used, "%s,", lock);
    a->sum += f->token;
    return a->stop_after != 0 && a->n >= a->stop_after ? 1 : 0;
}

static int
on_elect(void *arg, const char *lock, const struct store_elect *e)
{
    struct list_acc *a = arg;
    a->n++;
    (void)lock;
    a->sum += e->epoch;
    return a->stop_after != 0 && a->n >= a->stop_after ? ERR_INVAL : 0;
}

static void
test_list(void **state)
{
    struct store *s = tu_open(*state, false);
    struct list_acc a = {0};
    assert_int_equal(store_fence_list(s, on_fence, &a), 0);
    assert_int_equal(a.n, 0);
    assert_int_equal(store_fence_advance_sync(s, "b", 2, NULL, NULL, NULL), 0);
    assert_int_equal(store_fence_advance_sync(s, "a", 1, NULL, NULL, NULL), 0);
    assert_int_equal(store_fence_advance_sync(s, "c", 3, NULL, NULL, NULL), 0);
    assert_int_equal(store_fence_list(s, on_fence, &a), 0);
    assert_int_equal(a.n, 3);
    assert_string_equal(a.locks, "a,b,c,");
    assert_int_equal(a.sum, 6);
    struct list_acc b = {.stop_after = 2};
    assert_int_equal(store_fence_list(s, on_fence, &b), 0);
    assert_int_equal(b.n, 2);

    assert_int_equal(store_elect_advance_sync(s, "x", 4, NULL), 0);
    assert_int_equal(store_elect_advance_sync(s, "y", 5, NULL), 0);
    struct list_acc c = {0};
    assert_int_equal(store_elect_list(s, on_elect, &c), 0);
    assert_int_equal(c.n, 2);
    assert_int_equal(c.sum, 9);
    struct list_acc d = {.stop_after = 1};
    assert_int_equal(store_elect_list(s, on_elect, &d), ERR_INVAL); /* negative propagates */
    store_close(s);
}

/* Collects a page: names in order. */
struct page_acc {
    int n;          /* names this page */
    char last[160]; /* the last name */
    int *seen;      /* per lock index: times delivered */
    bool ordered;   /* each name sorted after the one before */
};

static int
on_page_elect(void *arg, const char *lock, const struct store_elect *e)
{
    struct page_acc *a = arg;
    (void)e;
    if (a->last[0] != '\0' && strcmp(lock, a->last) <= 0) {
        a->ordered = false;
    }
    (void)snprintf(a->last, sizeof(a->last), "%s", lock);
    uint64_t idx = 0;
    if (lock[0] == 'L' && parse_u64(lock + 1, 0, 1499, &idx) == 0) {
        a->seen[idx]++;
    }
    a->n++;
    return 0;
}

static void
elect_done_count(void *arg, int err, uint64_t epoch)
{
    int *done = arg;
    (void)err;
    (void)epoch;
    (*done)++;
}

/* Pages of every size deliver every entry exactly once, in order; a cursor
 * that names a missing lock starts after where it would sort. */
static void
test_page(void **state)
{
    struct store *s = tu_open(*state, false);
    int done = 0;
    for (int i = 0; i < 1500; i++) {
        char name[32];
        (void)snprintf(name, sizeof(name), "L%05d", i);
        assert_int_equal(store_elect_advance(s, name, 1 + (uint64_t)i, elect_done_count, &done), 0);
    }
    tu_wait(s, &done, 1500);
    static const uint32_t limits[] = {1, 7, 100, 1499, 1500, 10000};
    for (size_t li = 0; li < sizeof(limits) / sizeof(limits[0]); li++) {
        int *seen = calloc(1500, sizeof(int));
        char after[160] = "";
        int pages = 0;
        bool more = true;
        while (more) {
            struct page_acc a = {.seen = seen, .ordered = true};
            assert_int_equal(store_elect_page(s, after, limits[li], on_page_elect, &a, &more), 0);
            assert_true(a.ordered);
            assert_true((uint32_t)a.n <= limits[li]);
            if (more) {
                assert_int_equal((uint32_t)a.n, limits[li]);
            }
            (void)snprintf(after, sizeof(after), "%s", a.last);
            pages++;
        }
        for (int i = 0; i < 1500; i++) {
            assert_int_equal(seen[i], 1);
        }
        assert_int_equal(pages, (1500 + (int)limits[li] - 1) / (int)limits[li]);
        free(seen);
    }
    /* after a name that does not exist: from where it would sort */
    int *seen = calloc(1500, sizeof(int));
    struct page_acc a = {.seen = seen, .ordered = true};
    bool more = false;
    assert_int_equal(store_elect_page(s, "L00999x", 10, on_page_elect, &a, &more), 0);
    assert_int_equal(a.n, 10);
    assert_int_equal(seen[999], 0);
    assert_int_equal(seen[1000], 1);
    assert_true(more);
    free(seen);
    /* bad arguments */
    assert_int_equal(store_elect_page(s, NULL, 0, on_page_elect, &a, &more), ERR_INVAL);
    assert_int_equal(store_elect_page(s, NULL, STORE_PAGE_MAX + 1, on_page_elect, &a, &more),
                     ERR_INVAL);
    assert_int_equal(store_elect_page(s, "a/b", 1, on_page_elect, &a, &more), ERR_INVAL);
    assert_int_equal(store_elect_page(s, NULL, 1, on_page_elect, &a, NULL), ERR_INVAL);

    /* the fence table pages alike */
    assert_int_equal(store_fence_advance_sync(s, "b", 2, NULL, NULL, NULL), 0);
    assert_int_equal(store_fence_advance_sync(s, "a", 1, NULL, NULL, NULL), 0);
    assert_int_equal(store_fence_advance_sync(s, "c", 3, NULL, NULL, NULL), 0);
    struct list_acc f = {0};
    assert_int_equal(store_fence_page(s, NULL, 2, on_fence, &f, &more), 0);
    assert_string_equal(f.locks, "a,b,");
    assert_true(more);
    assert_int_equal(store_fence_page(s, "b", 2, on_fence, &f, &more), 0);
    assert_string_equal(f.locks, "a,b,c,");
    assert_false(more);
    store_close(s);
}

static void
test_elect(void **state)
{
    struct store *s = tu_open(*state, false);
    struct store_elect e;
    assert_int_equal(store_elect_get(s, "orders", &e), ERR_NOTFOUND);
    uint64_t now = 0;
    assert_int_equal(store_elect_advance_sync(s, "orders", 10, &now), 0);
    assert_int_equal(now, 10);
    assert_int_equal(store_elect_advance_sync(s, "orders", 4, &now), 0); /* never lowers */
    assert_int_equal(now, 10);
    assert_int_equal(store_elect_get(s, "orders", &e), 0);
    assert_int_equal(e.epoch, 10);
    assert_true(e.learned_ms > 0);
    assert_int_equal(store_elect_advance_sync(s, "orders", 0, NULL), ERR_INVAL);
    assert_int_equal(store_elect_get(s, "", &e), ERR_INVAL);
    store_close(s);
}

struct cb_state {
    int done;       /* callbacks run */
    int err;        /* last err */
    uint64_t value; /* last highest / epoch */
};

static void
on_fence_done(void *arg, int err, uint64_t highest)
{
    struct cb_state *c = arg;
    c->done++;
    c->err = err;
    c->value = highest;
}

static void
on_elect_done(void *arg, int err, uint64_t epoch)
{
    on_fence_done(arg, err, epoch);
}

static void
test_async_advance(void **state)
{
    struct store *s = tu_open(*state, false);
    struct cb_state c = {0};
    assert_int_equal(store_fence_advance(s, "orders", 5, "r", "p", on_fence_done, &c), 0);
    assert_int_equal(c.done, 0); /* never before the call returns */
    tu_wait(s, &c.done, 1);
    assert_int_equal(c.done, 1);
    assert_int_equal(c.err, 0);
    assert_int_equal(c.value, 5);
    struct cb_state z = {0};
    assert_int_equal(store_fence_advance(s, "orders", 2, "r", "p", on_fence_done, &z), 0);
    tu_wait(s, &z.done, 1);
    assert_int_equal(z.err, ERR_FENCED);
    assert_int_equal(z.value, 5);
    struct cb_state e = {0};
    assert_int_equal(store_elect_advance(s, "orders", 6, on_elect_done, &e), 0);
    tu_wait(s, &e.done, 1);
    assert_int_equal(e.err, 0);
    assert_int_equal(e.value, 6);
    assert_int_equal(store_fence_advance(s, "orders", 6, NULL, NULL, NULL, NULL), ERR_INVAL);
    assert_int_equal(store_elect_advance(s, "orders", 6, NULL, NULL), ERR_INVAL);
    assert_int_equal(store_fence_advance(s, "", 6, NULL, NULL, on_fence_done, &c), ERR_INVAL);
    store_close(s);
}

/* ---- concurrency: the highest never lowers, whatever the interleaving ---- */

#define NTHREADS   4
#define PER_THREAD 150

struct race {
    struct store *s;               /* shared store */
    int id;                        /* thread number */
    _Atomic uint64_t *max_ok;      /* largest token whose advance succeeded */
    _Atomic int *stop;             /* readers stop when set */
    int bad;                       /* violations seen */
    int bad_err;                   /* the last violation: error (0: a value) */
    uint64_t bad_seen, bad_before; /* the last violation: value seen, and before it */
};

static void *
advancer(void *arg)
{
    struct race *r = arg;
    /* each thread climbs its own interleaved sequence, with some stale ones */
    for (int i = 1; i <= PER_THREAD; i++) {
        uint64_t t = (uint64_t)(i * NTHREADS + r->id);
        if (i % 7 == 0) {
            t /= 2; /* a zombie */
        }
        uint64_t hi = 0;
        int err = store_fence_advance_sync(r->s, "race", t, NULL, NULL, &hi);
        if (err == 0) {
            uint64_t cur = atomic_load(r->max_ok);
            while (cur < t && !atomic_compare_exchange_weak(r->max_ok, &cur, t)) {
            }
        } else if (err != ERR_FENCED || hi <= t) {
            r->bad++;
            r->bad_err = err;
            r->bad_seen = hi;
            r->bad_before = t;
        }
    }
    return NULL;
}

static void *
reader(void *arg)
{
    struct race *r = arg;
    uint64_t last = 0;
    while (!atomic_load(r->stop)) {
        struct store_fence f;
        int err = store_fence_get(r->s, "race", &f, NULL);
        if (err == 0) {
            if (f.token < last) {
                r->bad++; /* went back */
                r->bad_err = 0;
                r->bad_seen = f.token;
                r->bad_before = last;
            }
            last = f.token;
        } else if (err != ERR_NOTFOUND) {
            r->bad++;
            r->bad_err = err;
        }
    }
    return NULL;
}

static void
test_never_lowers_threads(void **state)
{
    struct store *s = tu_open(*state, false);
    _Atomic uint64_t max_ok = 0;
    _Atomic int stop = 0;
    struct race rs[NTHREADS + 2];
    pthread_t th[NTHREADS + 2];
    for (int i = 0; i < NTHREADS + 2; i++) {
        rs[i] = (struct race){.s = s, .id = i, .max_ok = &max_ok, .stop = &stop};
        assert_int_equal(pthread_create(&th[i], NULL, i < NTHREADS ? advancer : reader, &rs[i]), 0);
    }
    /* the loop thread interleaves async advances too */
    struct cb_state cs[50];
    memset(cs, 0, sizeof(cs));
    int done = 0;
    for (int i = 0; i < 50; i++) {
        assert_int_equal(store_fence_advance(s, "race", (uint64_t)(i * 12 + 1), NULL, NULL,
                                             on_fence_done, &cs[i]),
                         0);
    }
    while (done < 50) {
        (void)store_dispatch_completions(s);
        done = 0;
        for (int i = 0; i < 50; i++) {
            done += cs[i].done;
        }
    }
    for (int i = 0; i < 50; i++) {
        uint64_t t = (uint64_t)(i * 12 + 1);
        assert_true(cs[i].err == 0 || cs[i].err == ERR_FENCED);
        assert_true(cs[i].err == 0 ? cs[i].value == t : cs[i].value > t);
        if (cs[i].err == 0) {
            uint64_t cur = atomic_load(&max_ok);
            while (cur < t && !atomic_compare_exchange_weak(&max_ok, &cur, t)) {
            }
        }
    }
    for (int i = 0; i < NTHREADS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
    }
    atomic_store(&stop, 1);
    for (int i = NTHREADS; i < NTHREADS + 2; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
    }
    for (int i = 0; i < NTHREADS + 2; i++) {
        if (rs[i].bad != 0) {
            fail_msg("thread %d (%s): %d violations, the last: %s, %" PRIu64 " after %" PRIu64, i,
                     i < NTHREADS ? "advancer" : "reader", rs[i].bad, err_str(rs[i].bad_err),
                     rs[i].bad_seen, rs[i].bad_before);
        }
    }
    struct store_fence f;
    assert_int_equal(store_fence_get(s, "race", &f, NULL), 0);
    assert_int_equal(f.token, atomic_load(&max_ok)); /* the largest success wins */
    assert_int_equal(f.token, (uint64_t)(PER_THREAD * NTHREADS + NTHREADS - 1));
    store_close(s);
    /* and it survives a reopen */
    s = tu_open(*state, false);
    assert_int_equal(store_fence_get(s, "race", &f, NULL), 0);
    assert_int_equal(f.token, (uint64_t)(PER_THREAD * NTHREADS + NTHREADS - 1));
    store_close(s);
}

int
main(void)
{
    log_threshold = LOG_WARN;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_get_check_advance, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_list, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_page, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_elect, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_async_advance, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_never_lowers_threads, tu_dir_setup, tu_dir_teardown),
    };
    return cmocka_run_group_tests_name("store_fence", tests, NULL, NULL);
}
