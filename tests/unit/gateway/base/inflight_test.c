/*
 * tests/unit/gateway/base/inflight_test.c: object writes in flight per
 * configuration and loop (gateway/base/inflight.c), what a reload's hold
 * waits on: ended only once every loop has moved on and every write it began
 * into the slots asked about has ended, also while another thread counts;
 * writes into other slots are not waited for.
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

#define ALL UINT64_MAX /* every slot */

static void
test_ended_once_every_loop_moved_on_and_drained(void **state)
{
    (void)state;
    struct gw_inflight *in = gw_inflight_new(3);
    assert_non_null(in);
    uint64_t pending = 99;
    assert_false(gw_inflight_ended(in, ALL, &pending)); /* every loop may still begin writes */
    assert_int_equal(pending, 0);
    gw_inflight_begin(in, 1, 5);
    gw_inflight_begin(in, 1, 5);
    gw_inflight_begin(in, 2, 5);
    gw_inflight_end(in, 1, 5);
    gw_inflight_moved_on(in, 0);
    gw_inflight_moved_on(in, 1);
    assert_false(gw_inflight_ended(in, ALL, &pending)); /* loop 2 has not moved on */
    assert_int_equal(pending, 1);                       /* loop 1's second write */
    gw_inflight_moved_on(in, 2);
    assert_false(gw_inflight_ended(in, ALL, &pending));
    assert_int_equal(pending, 2);
    gw_inflight_end(in, 2, 5);
    gw_inflight_end(in, 1, 5);
    assert_true(gw_inflight_ended(in, ALL, &pending));
    assert_int_equal(pending, 0);
    /* a loop or slot out of range counts nothing; NULL is a configuration outside serve */
    gw_inflight_begin(in, 3, 0);
    gw_inflight_begin(in, 0, GW_INFLIGHT_SLOTS);
    assert_true(gw_inflight_ended(in, ALL, NULL));
    gw_inflight_begin(NULL, 0, 0);
    gw_inflight_end(NULL, 0, 0);
    gw_inflight_moved_on(NULL, 0);
    assert_true(gw_inflight_ended(NULL, ALL, NULL));
    gw_inflight_free(in);
    gw_inflight_free(NULL);
}

/* Writes into a slot outside the mask are not waited for; a write into one inside
 * is, whichever loop began it; a moved-on loop is still waited for in any mask. */
static void
test_only_the_slots_asked_about_are_waited_for(void **state)
{
    (void)state;
    struct gw_inflight *in = gw_inflight_new(2);
    assert_non_null(in);
    unsigned a = gw_inflight_slot("orders");
    unsigned b = gw_inflight_slot("logs");
    assert_int_not_equal(a, b);
    assert_true(a < GW_INFLIGHT_SLOTS && b < GW_INFLIGHT_SLOTS);
    assert_int_equal(gw_inflight_slot("orders"), a); /* the same bucket, the same slot */
    uint64_t ma = (uint64_t)1 << a;
    uint64_t mb = (uint64_t)1 << b;
    gw_inflight_begin(in, 0, b); /* a long write into logs */
    gw_inflight_moved_on(in, 0);
    assert_false(gw_inflight_ended(in, ma, NULL)); /* loop 1 may still begin one into orders */
    gw_inflight_moved_on(in, 1);
    uint64_t pending = 99;
    assert_true(gw_inflight_ended(in, ma, &pending)); /* orders: nothing in flight */
    assert_int_equal(pending, 0);
    assert_false(gw_inflight_ended(in, mb, &pending));
    assert_int_equal(pending, 1);
    assert_false(gw_inflight_ended(in, ma | mb, NULL));
    assert_true(gw_inflight_ended(in, 0, NULL)); /* no bucket changed: only moving on counts */
    gw_inflight_end(in, 0, b);
    assert_true(gw_inflight_ended(in, ma | mb, NULL));
    gw_inflight_free(in);
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
        gw_inflight_begin(r->in, 1, 7);
        gw_inflight_end(r->in, 1, 7);
    }
    gw_inflight_begin(r->in, 1, 7);
    gw_inflight_moved_on(r->in, 1);
    atomic_store(&r->moved_on, true);
    while (!atomic_load(&r->finish)) {
    }
    gw_inflight_end(r->in, 1, 7);
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
        assert_false(gw_inflight_ended(r.in, ALL, NULL));
    }
    for (int i = 0; i < 1000; i++) {
        assert_false(gw_inflight_ended(r.in, ALL, NULL));
    }
    atomic_store(&r.finish, true);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_true(gw_inflight_ended(r.in, ALL, NULL));
    gw_inflight_free(r.in);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ended_once_every_loop_moved_on_and_drained),
        cmocka_unit_test(test_only_the_slots_asked_about_are_waited_for),
        cmocka_unit_test(test_ended_read_while_another_thread_counts),
    };
    return cmocka_run_group_tests_name("inflight", tests, NULL, NULL);
}
