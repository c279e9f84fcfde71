/*
 * tests/unit/gateway/base/inflight_test.c: object writes in flight per
 * configuration and loop (gateway/base/inflight.c), what a reload's hold
 * waits on: ended only once every loop has moved on and every write it began
 * has ended, also while another thread counts.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gateway/base/inflight.h"

static void
test_ended_once_every_loop_moved_on_and_drained(void **state)
{
    (void)state;
    struct gw_inflight *in = gw_inflight_new(3);
    assert_non_null(in);
    uint64_t pending = 99;
    assert_false(gw_inflight_ended(in, &pending)); /* every loop may still begin writes */
    assert_int_equal(pending, 0);
    gw_inflight_begin(in, 1);
    gw_inflight_begin(in, 1);
    gw_inflight_begin(in, 2);
    gw_inflight_end(in, 1);
    gw_inflight_moved_on(in, 0);
    gw_inflight_moved_on(in, 1);
    assert_false(gw_inflight_ended(in, &pending)); /* loop 2 has not moved on */
    assert_int_equal(pending, 1);                  /* loop 1's second write */
    gw_inflight_moved_on(in, 2);
    assert_false(gw_inflight_ended(in, &pending));
    assert_int_equal(pending, 2);
    gw_inflight_end(in, 2);
    gw_inflight_end(in, 1);
    assert_true(gw_inflight_ended(in, &pending));
    assert_int_equal(pending, 0);
    /* a loop out of range counts nothing; NULL is a configuration outside serve */
    gw_inflight_begin(in, 3);
    assert_true(gw_inflight_ended(in, NULL));
    gw_inflight_begin(NULL, 0);
    gw_inflight_end(NULL, 0);
    gw_inflight_moved_on(NULL, 0);
    assert_true(gw_inflight_ended(NULL, NULL));
    gw_inflight_free(in);
    gw_inflight_free(NULL);
}

/* A loop's thread: writes begun and ended one after the other, the last one left
 * open until told, then moved on. */
struct loop_run {
    struct gw_inflight *in;
    _Atomic bool finish;   /* end the last write */
    _Atomic bool moved_on; /* it moved on (the last write still open) */
};

static void *
loop_thread(void *arg)
{
    struct loop_run *r = arg;
    for (int i = 0; i < 200000; i++) {
        gw_inflight_begin(r->in, 1);
        gw_inflight_end(r->in, 1);
    }
    gw_inflight_begin(r->in, 1);
    gw_inflight_moved_on(r->in, 1);
    atomic_store(&r->moved_on, true);
    while (!atomic_load(&r->finish)) {
    }
    gw_inflight_end(r->in, 1);
    return NULL;
}

static void
test_ended_read_while_another_thread_counts(void **state)
{
    (void)state;
    struct loop_run r = {.in = gw_inflight_new(2)};
    assert_non_null(r.in);
    gw_inflight_moved_on(r.in, 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, loop_thread, &r), 0);
    /* never ended while the loop has not moved on, nor while its last write runs */
    while (!atomic_load(&r.moved_on)) {
        assert_false(gw_inflight_ended(r.in, NULL));
    }
    for (int i = 0; i < 1000; i++) {
        assert_false(gw_inflight_ended(r.in, NULL));
    }
    atomic_store(&r.finish, true);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_true(gw_inflight_ended(r.in, NULL));
    gw_inflight_free(r.in);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ended_once_every_loop_moved_on_and_drained),
        cmocka_unit_test(test_ended_read_while_another_thread_counts),
    };
    return cmocka_run_group_tests_name("inflight", tests, NULL, NULL);
}
