/*
 * tests/unit/gateway/base/metrics_lock_mt_test.c: the per-lock series
 * (gateway/base/metrics_lock.c) written from two threads at once (a worker
 * loop's refusals and the control loop's fence and election) while a third
 * renders /metrics (DESIGN "Worker loops").  Every refusal and lease event
 * is counted exactly once, new locks appear mid-render, and the bound holds;
 * make SAN=thread unit runs it under ThreadSanitizer, which fails it if the
 * table's mutex is missing.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "gateway/base/metrics.h"

#define ROUNDS 4000 /* events per writer */
#define LOCKS  300  /* distinct locks per writer (over the bound of 200 below) */

static atomic_int writers_done;
static char name_a[] = "wa", name_b[] = "wb";

/* A worker loop's refusals: fence refusals on its own locks and a shared one. */
static void *
refusing(void *arg)
{
    const char *who = arg;
    char lock[32];
    for (int i = 0; i < ROUNDS; i++) {
        (void)snprintf(lock, sizeof(lock), "%s-%d", who, i % LOCKS);
        gw_metrics_fence_refusal(lock, "StaleFencingToken");
        gw_metrics_fence_refusal("shared", "FencingLeaseExpired");
    }
    atomic_fetch_add(&writers_done, 1);
    return NULL;
}

/* The control loop: the election's lease events and epochs. */
static void *
electing(void *arg)
{
    (void)arg;
    char lock[32];
    for (int i = 0; i < ROUNDS; i++) {
        (void)snprintf(lock, sizeof(lock), "elect-%d", i % LOCKS);
        gw_metrics_lease(lock, GW_LEASE_GRANT, (uint64_t)i + 1, 0);
        gw_metrics_lock_epoch("shared", (uint64_t)i + 1);
        gw_metrics_fence_refusal("shared", "FencingLeaseExpired");
    }
    atomic_fetch_add(&writers_done, 1);
    return NULL;
}

static const char *
op_name(unsigned op)
{
    (void)op;
    return NULL;
}

static void
render_once(void)
{
    struct buf b;
    buf_init(&b, (size_t)64 * 1024 * 1024);
    const struct gw_metrics_live live = {.op_name = op_name, .ready = true};
    assert_int_equal(gw_metrics_render(&b, &live), 0);
    buf_cleanup(&b);
}

static void
test_two_writers_and_a_scrape(void **state)
{
    (void)state;
    gw_metrics_reset();
    gw_metrics_locks_free();
    assert_int_equal(gw_metrics_locks_init(200), 0);
    assert_int_equal(gw_metrics_lock_pin("shared"), 0);
    atomic_store(&writers_done, 0);
    pthread_t a, b, c;
    assert_int_equal(pthread_create(&a, NULL, refusing, name_a), 0);
    assert_int_equal(pthread_create(&b, NULL, refusing, name_b), 0);
    assert_int_equal(pthread_create(&c, NULL, electing, NULL), 0);
    int renders = 0;
    while (atomic_load(&writers_done) < 3 || renders == 0) {
        render_once(); /* the /metrics loop, meanwhile */
        renders++;
    }
    assert_int_equal(pthread_join(a, NULL), 0);
    assert_int_equal(pthread_join(b, NULL), 0);
    assert_int_equal(pthread_join(c, NULL), 0);
    /* each refusal counted once, whichever series it landed in */
    assert_int_equal(gw_metrics_fence_refusals(), (uint64_t)5 * ROUNDS);
    /* shared (pinned), _other, _none, and at most 200 others */
    assert_true(gw_metrics_lock_series() <= 3 + 200);
    render_once();
    gw_metrics_locks_free();
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_writers_and_a_scrape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
