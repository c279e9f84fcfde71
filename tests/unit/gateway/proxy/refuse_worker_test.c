/*
 * tests/unit/gateway/proxy/refuse_worker_test.c: an audited refusal made on
 * a worker loop (DESIGN "Worker loops").  The store's completions run on a
 * control thread of their own; the test's thread is the worker (its
 * gw_loopctx_here set, its own metrics set).  The answer goes out on the
 * worker's thread only, and only after the record committed (G7); a client
 * gone before the commit frees everything; a worker queue closed with the
 * hop pending cuts and frees it; one closed before the commit frees it on
 * the control side.  refuse.c is included (STYLE R12) with the http.h and
 * access.h functions stubbed (tests/unit/gateway/refuse_harness.h, as in
 * refuse_test.c); make SAN=thread unit runs it under ThreadSanitizer,
 * make SAN=address,undefined under ASan (leaks).
 */
#include <event2/event.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gateway/net/loopctx.h"
#include "gateway/net/loopmsg.h"
#include "gateway/proxy/refuse.c"
#include "tests/unit/gateway/refuse_harness.h"
#include "tests/unit/testlib.h"

/* ---- the control thread (the store's completions) and the worker (this thread) ---- */

static struct {
    char *dir;
    struct store *st;
    pthread_t th;
    atomic_bool stop;
    atomic_ulong dispatched; /* completions run so far */
} ctl;

static struct {
    struct event_base *base;
    struct gw_loopq *q;
    struct gw_loopctx ctx;
    struct gw_metrics_set metrics;
} wk;

static void *
control_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&ctl.stop)) {
        size_t n = store_dispatch_completions(ctl.st);
        if (n == 0) {
            (void)usleep(200);
        }
        atomic_fetch_add(&ctl.dispatched, n);
    }
    return NULL;
}

static int
setup(void **state)
{
    (void)state;
    ctl.dir = tl_dir_new("refuse_worker");
    struct store_opts o;
    char errbuf[256];
    store_opts_init(&o);
    o.data_dir = ctl.dir;
    assert_int_equal(store_open(&o, &ctl.st, errbuf, sizeof(errbuf)), 0);
    rf_bind(ctl.st); /* this thread is the worker */
    atomic_store(&ctl.stop, false);
    atomic_store(&ctl.dispatched, 0);
    wk.base = event_base_new();
    wk.q = gw_loopq_new(wk.base);
    assert_non_null(wk.q);
    wk.ctx = (struct gw_loopctx){.base = wk.base, .q = wk.q, .ctl = NULL, .index = 1};
    gw_loopctx_here = &wk.ctx;
    assert_int_equal(gw_metrics_attach(&wk.metrics), 0);
    assert_int_equal(pthread_create(&ctl.th, NULL, control_main, NULL), 0);
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    atomic_store(&ctl.stop, true);
    assert_int_equal(pthread_join(ctl.th, NULL), 0);
    gw_loopq_free(wk.q); /* closes it: a hop still pending is cancelled here */
    gw_metrics_detach();
    gw_loopctx_here = NULL;
    event_base_free(wk.base);
    store_close(ctl.st);
    rf_bind(NULL);
    tl_dir_free(ctl.dir);
    gw_metrics_locks_free();
    return 0;
}

static struct gw_s3req s3 = {.name = "PutObject", .bucket = "data", .key = "k"};

static struct gw_refusal
stale(void)
{
    return (struct gw_refusal){
        .status = 409,
        .code = "StaleFencingToken",
        .message = "stale",
        .audit = STORE_AUDIT_STALE,
        .count = GW_REFUSAL_FENCE,
        .tokens = true,
        .lock = "orders",
        .token = 4,
        .current = 5,
    };
}

/* Runs the worker's loop for about ms milliseconds. */
static void
pump_for(int ms)
{
    for (int i = 0; i < ms * 2; i++) {
        tl_turn(wk.base, NULL);
    }
}

/* Waits (without running the worker's loop) until the control side ran n completions. */
static void
wait_dispatched(unsigned long n)
{
    for (int i = 0; i < 20000 && atomic_load(&ctl.dispatched) < n; i++) {
        (void)usleep(250);
    }
    assert_true(atomic_load(&ctl.dispatched) >= n);
}

/* The answer goes out on the worker's thread, once, after the commit. */
static void
test_answered_on_the_worker_after_commit(void **state)
{
    (void)state;
    struct gw_req req = {.path = "/data/k", .id = "r1"};
    const struct gw_refusal r = stale();
    gw_refuse(ctl.st, &req, &s3, "alice", &r);
    assert_int_equal(req.calls, 0);
    assert_non_null(req.ops);
    TL_RUN_UNTIL(wk.base, NULL, req.calls + req.aborts > 0, 5000);
    assert_int_equal(req.calls, 1);
    assert_int_equal(req.status, 409);
    assert_int_equal(req.committed_at_end, 1); /* G7 */
    assert_int_equal(req.wrong_thread, 0);
    assert_null(req.ops);
    /* measured on the worker: its own set has the observation */
    assert_int_equal(wk.metrics.audit_commit_seconds.count, 1);
}

/* A client gone before the commit: no answer; the hop frees the wait (ASan: no leak). */
static void
test_client_gone_before_commit(void **state)
{
    (void)state;
    struct gw_req req = {.path = "/data/k", .id = "r2"};
    const struct gw_refusal r = stale();
    gw_refuse(ctl.st, &req, &s3, "alice", &r);
    req.ops->on_abort(&req, ERR_CLOSED, req.ops_arg); /* the server forgets req */
    wait_dispatched(1);
    pump_for(50);
    assert_int_equal(req.calls, 0);
    assert_int_equal(req.aborts, 0);
    assert_int_equal(req.wrong_thread, 0);
    assert_int_equal(rf_committed(), 1);
}

/* The worker's queue closed with the hop pending: the waiting request is cut, the wait freed. */
static void
test_queue_closed_with_hop_pending(void **state)
{
    (void)state;
    struct gw_req req = {.path = "/data/k", .id = "r3"};
    const struct gw_refusal r = stale();
    gw_refuse(ctl.st, &req, &s3, "alice", &r);
    wait_dispatched(1); /* posted to the worker's queue, not run: its loop did not turn */
    assert_int_equal(req.calls + req.aborts, 0);
    gw_loopq_close(wk.q);
    assert_int_equal(req.calls, 0);
    assert_int_equal(req.aborts, 1);
    assert_int_equal(req.wrong_thread, 0);
}

/* The worker stopped (its requests gone, its queue closed) before the commit: freed there. */
static void
test_queue_closed_before_commit(void **state)
{
    (void)state;
    struct gw_req req = {.path = "/data/k", .id = "r4"};
    const struct gw_refusal r = stale();
    gw_refuse(ctl.st, &req, &s3, "alice", &r);
    req.ops->on_abort(&req, ERR_CLOSED, req.ops_arg);
    gw_loopq_close(wk.q);
    wait_dispatched(1);
    assert_int_equal(req.calls + req.aborts, 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_answered_on_the_worker_after_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_gone_before_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_closed_with_hop_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_closed_before_commit, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
