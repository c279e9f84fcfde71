/* tests/unit/store/worker_test.c: store/worker.c: the completion fd,
 * dispatch, back-pressure, grouping, draining on close. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <poll.h>
#include <time.h>

#include "testutil.h"

static uint64_t
now_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

struct ctx {
    struct store *s; /* for re-queuing callbacks */
    int done;        /* callbacks run */
    int err;         /* last error */
    int requeue;     /* queue this many more advances from the callback */
};

static void
on_done(void *arg, int err, uint64_t v)
{
    struct ctx *c = arg;
    (void)v;
    c->done++;
    c->err = err;
    if (c->requeue > 0) {
        c->requeue--;
        assert_int_equal(
            store_fence_advance(c->s, "re", (uint64_t)c->done + 1, NULL, NULL, on_done, c), 0);
    }
}

/* store_audit_done_fn: counts into a struct ctx like on_done */
static void
on_audit_done(void *arg, int err, const struct store_audit_done *d)
{
    struct ctx *c = arg;
    (void)d;
    c->done++;
    c->err = err;
}

static void
test_completion_fd(void **state)
{
    struct store *s = tu_open(*state, false);
    int fd = store_completion_fd(s);
    assert_true(fd >= 0);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 0), 0); /* nothing yet */
    assert_int_equal(store_dispatch_completions(s), 0);
    struct ctx c = {.s = s};
    assert_int_equal(store_fence_advance(s, "a", 1, NULL, NULL, on_done, &c), 0);
    assert_int_equal(poll(&p, 1, 5000), 1); /* readable once durable */
    assert_int_equal(c.done, 0);            /* only dispatch runs callbacks */
    assert_int_equal(store_dispatch_completions(s), 1);
    assert_int_equal(c.done, 1);
    assert_int_equal(c.err, 0);
    assert_int_equal(poll(&p, 1, 0), 0); /* drained */

    /* a callback can queue more work */
    c.requeue = 5;
    assert_int_equal(store_fence_advance(s, "re", 1, NULL, NULL, on_done, &c), 0);
    tu_wait(s, &c.done, 7);
    assert_int_equal(c.done, 7);
    store_close(s);
}

static void
test_fence_not_delayed_by_audit_flush(void **state)
{
    struct store_opts o;
    store_opts_init(&o);
    o.data_dir = *state;
    o.audit_flush_ms = 10;
    struct store *s = NULL;
    assert_int_equal(store_open(&o, &s, NULL, 0), 0);
    /* audit records alone wait up to audit_flush_ms, then commit */
    struct ctx a = {.s = s};
    struct store_audit_rec r = {.kind = STORE_AUDIT_STALE, .lock = "x"};
    uint64_t t0 = now_ms();
    assert_int_equal(store_audit_append(s, &r, on_audit_done, &a), 0);
    tu_wait(s, &a.done, 1);
    assert_int_equal(a.done, 1);
    uint64_t waited = now_ms() - t0;
    assert_true(waited >= 9);   /* it lingered for companions */
    assert_true(waited < 1000); /* but committed soon after */
    /* a fence advance takes the queued audit records along at once */
    struct ctx f = {.s = s};
    a.done = 0;
    for (int i = 0; i < 20; i++) {
        assert_int_equal(store_audit_append(s, &r, on_audit_done, &a), 0);
    }
    assert_int_equal(store_fence_advance(s, "x", 3, NULL, NULL, on_done, &f), 0);
    tu_wait(s, &f.done, 1);
    tu_wait(s, &a.done, 20);
    assert_int_equal(f.done, 1);
    assert_int_equal(a.done, 20);
    store_close(s);
}

static void
test_queue_full(void **state)
{
    struct store_opts o;
    store_opts_init(&o);
    o.data_dir = *state;
    o.queue_max = 4;
    o.audit_flush_ms = 10;
    struct store *s = NULL;
    assert_int_equal(store_open(&o, &s, NULL, 0), 0);
    struct store_audit_rec r = {.kind = STORE_AUDIT_STALE};
    int accepted = 0;
    int again = 0;
    for (int i = 0; i < 50; i++) {
        int err = store_audit_append(s, &r, NULL, NULL);
        if (err == 0) {
            accepted++;
        } else {
            assert_int_equal(err, ERR_AGAIN);
            again++;
        }
    }
    assert_true(accepted >= 4);
    assert_true(again > 0);
    struct store_stats st;
    store_stats_get(s, &st);
    assert_int_equal(st.queue_rejected, (uint64_t)again);
    assert_true(st.queue_depth <= 4);
    store_close(s);
    s = tu_open(*state, true);
    uint64_t n = 0;
    assert_int_equal(store_audit_count(s, &n), 0);
    assert_int_equal(n, (uint64_t)accepted); /* every accepted record was kept */
    store_close(s);
}

static void
test_close_drains(void **state)
{
    struct store *s = tu_open(*state, false);
    struct ctx c = {.s = s};
    for (uint64_t t = 1; t <= 100; t++) {
        assert_int_equal(store_fence_advance(s, "d", t, NULL, NULL, on_done, &c), 0);
    }
    store_close(s); /* commits all, runs their callbacks here */
    assert_int_equal(c.done, 100);
    assert_int_equal(c.err, 0);
    s = tu_open(*state, true);
    struct store_fence f;
    assert_int_equal(store_fence_get(s, "d", &f, NULL), 0);
    assert_int_equal(f.token, 100);
    store_close(s);
}

static void
test_read_only_async(void **state)
{
    struct store *w = tu_open(*state, false);
    store_close(w);
    struct store *s = tu_open(*state, true);
    struct ctx c = {.s = s};
    assert_int_equal(store_completion_fd(s), -1);
    assert_int_equal(store_dispatch_completions(s), 0);
    assert_int_equal(store_fence_advance(s, "a", 1, NULL, NULL, on_done, &c), ERR_CLOSED);
    assert_int_equal(store_elect_advance(s, "a", 1, (store_elect_done_fn *)on_done, &c),
                     ERR_CLOSED);
    struct store_audit_rec r = {.kind = STORE_AUDIT_STALE};
    assert_int_equal(store_audit_append(s, &r, NULL, NULL), ERR_CLOSED);
    assert_int_equal(store_audit_prune_sync(s, 1, 1, NULL, NULL), ERR_CLOSED);
    assert_int_equal(c.done, 0);
    store_close(s);
}

/* Many advances queued at once share few fsyncs (group commit). */
static void
test_group_commit(void **state)
{
    struct store *s = tu_open(*state, false);
    struct store_stats st0;
    store_stats_get(s, &st0);
    struct ctx c = {.s = s};
    char lock[16];
    for (int i = 0; i < 2000; i++) {
        (void)snprintf(lock, sizeof(lock), "l%d", i % 64);
        assert_int_equal(store_fence_advance(s, lock, (uint64_t)i + 1, NULL, NULL, on_done, &c), 0);
    }
    tu_wait(s, &c.done, 2000);
    assert_int_equal(c.done, 2000);
    struct store_stats st;
    store_stats_get(s, &st);
    assert_int_equal(st.fence_advances - st0.fence_advances, 2000);
    assert_true(st.commits - st0.commits < 1000);
    store_close(s);
}

int
main(void)
{
    log_threshold = LOG_WARN;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_completion_fd, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_fence_not_delayed_by_audit_flush, tu_dir_setup,
                                        tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_queue_full, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_close_drains, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_read_only_async, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_group_commit, tu_dir_setup, tu_dir_teardown),
    };
    return cmocka_run_group_tests_name("store_worker", tests, NULL, NULL);
}
