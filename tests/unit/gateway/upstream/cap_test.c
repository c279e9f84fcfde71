/*
 * tests/unit/gateway/upstream/cap_test.c: the cap on upstream connections
 * that several loops' lean clients share (gateway/upstream/cap.c; DESIGN
 * "The upstream pool across loops"): slots are taken up to max and no
 * further, a slot given back wakes every member that waits (on its own loop,
 * once however often it is poked), a wait asks the member with the most idle
 * connections to shed one, a member that left is not called, a slot handed
 * over stays counted and goes to one waiting member (one holding nothing,
 * when asked), the counts /metrics reads are the process's.  The last test takes and gives slots
 * from four threads, each with its own loop, while they wait and wake each
 * other: never more than max held at once, and every waiter woken once a
 * slot is free; make SAN=thread unit runs it under ThreadSanitizer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "gateway/net/loopmsg.h"
#include "gateway/upstream/engine.h"
#include "gateway/upstream/upstream.h"

#define NLOOPS 3

/* One member: its loop, its queue, how often its look ran. */
struct member {
    struct event_base *base;
    struct gw_loopq *q;
    uint32_t slot;
    int looks;
};

struct fixture {
    struct gw_upstream_cap *cap;
    struct member m[NLOOPS];
};

static void
on_look(void *arg)
{
    struct member *m = arg;
    m->looks++;
}

static struct fixture *
fixture_new(uint32_t max)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->cap = gw_upstream_cap_new(max, NLOOPS);
    assert_non_null(f->cap);
    for (int i = 0; i < NLOOPS; i++) {
        f->m[i].base = event_base_new();
        assert_non_null(f->m[i].base);
        f->m[i].q = gw_loopq_new(f->m[i].base);
        assert_non_null(f->m[i].q);
        assert_int_equal(gw_upstream_cap_join(f->cap, f->m[i].q, on_look, &f->m[i], &f->m[i].slot),
                         0);
        assert_int_equal(f->m[i].slot, (uint32_t)i);
    }
    return f;
}

static void
fixture_free(struct fixture *f)
{
    for (int i = 0; i < NLOOPS; i++) {
        gw_loopq_free(f->m[i].q);
        event_base_free(f->m[i].base);
    }
    gw_upstream_cap_free(f->cap);
    free(f);
}

/* Run every member's loop until nothing is left to run. */
static void
run_all(struct fixture *f)
{
    for (int i = 0; i < NLOOPS; i++) {
        (void)event_base_loop(f->m[i].base, EVLOOP_NONBLOCK);
    }
}

static void
test_take_up_to_max(void **state)
{
    (void)state;
    struct fixture *f = fixture_new(2);
    uint64_t open = 9;
    uint64_t idle = 9;
    assert_true(gw_upstream_cap_take(f->cap));
    assert_true(gw_upstream_cap_take(f->cap));
    assert_false(gw_upstream_cap_take(f->cap));
    gw_upstream_cap_conns(f->cap, &open, &idle);
    assert_int_equal(open, 2);
    assert_int_equal(idle, 0);
    gw_upstream_cap_give(f->cap);
    assert_true(gw_upstream_cap_take(f->cap));
    assert_false(gw_upstream_cap_take(f->cap));
    /* a fourth member is refused: the cap was made for three loops */
    uint32_t slot = 0;
    assert_int_equal(gw_upstream_cap_join(f->cap, f->m[0].q, on_look, &f->m[0], &slot), ERR_INVAL);
    fixture_free(f);
}

static void
test_no_max_only_counts(void **state)
{
    (void)state;
    struct fixture *f = fixture_new(0);
    for (int i = 0; i < 1000; i++) {
        assert_true(gw_upstream_cap_take(f->cap));
    }
    gw_upstream_cap_idle(f->cap, 0, 7);
    gw_upstream_cap_idle(f->cap, 2, 5);
    uint64_t open = 0;
    uint64_t idle = 0;
    gw_upstream_cap_conns(f->cap, &open, &idle);
    assert_int_equal(open, 1000);
    assert_int_equal(idle, 12);
    fixture_free(f);
}

static void
test_give_wakes_every_waiter_once(void **state)
{
    (void)state;
    struct fixture *f = fixture_new(1);
    assert_true(gw_upstream_cap_take(f->cap));
    gw_upstream_cap_wait(f->cap, 1);
    gw_upstream_cap_wait(f->cap, 2);
    run_all(f);
    /* nothing idle anywhere, no slot free: nobody is woken */
    assert_int_equal(f->m[0].looks + f->m[1].looks + f->m[2].looks, 0);
    assert_true(gw_upstream_cap_wanted(f->cap, 0));
    assert_true(gw_upstream_cap_wanted(f->cap, 1)); /* 2 waits too */
    gw_upstream_cap_give(f->cap);
    assert_true(gw_upstream_cap_take(f->cap));
    gw_upstream_cap_give(f->cap); /* poked twice before their loops ran: one wake-up each */
    run_all(f);
    assert_int_equal(f->m[0].looks, 0);
    assert_int_equal(f->m[1].looks, 1);
    assert_int_equal(f->m[2].looks, 1);
    /* 1 is served; only 2 waits now, so 2 wants nobody else's */
    gw_upstream_cap_wait_done(f->cap, 1);
    assert_false(gw_upstream_cap_wanted(f->cap, 2));
    assert_true(gw_upstream_cap_wanted(f->cap, 1));
    gw_upstream_cap_wait_done(f->cap, 2);
    gw_upstream_cap_wait_done(f->cap, 2); /* twice: still counted once */
    assert_false(gw_upstream_cap_wanted(f->cap, 0));
    assert_true(gw_upstream_cap_take(f->cap));
    gw_upstream_cap_give(f->cap);
    run_all(f);
    assert_int_equal(f->m[1].looks + f->m[2].looks, 2); /* nobody waits: nobody woken */
    fixture_free(f);
}

static void
test_wait_asks_the_most_idle_to_shed(void **state)
{
    (void)state;
    struct fixture *f = fixture_new(2);
    assert_true(gw_upstream_cap_take(f->cap));
    assert_true(gw_upstream_cap_take(f->cap));
    gw_upstream_cap_idle(f->cap, 1, 1);
    gw_upstream_cap_idle(f->cap, 2, 1);
    gw_upstream_cap_idle(f->cap, 0, 9); /* the waiter's own never counts */
    gw_upstream_cap_idle(f->cap, 2, 2);
    gw_upstream_cap_wait(f->cap, 0);
    gw_upstream_cap_wait(f->cap, 0); /* two transfers wait: two sheds asked */
    assert_int_equal(gw_upstream_cap_shed_asked(f->cap, 1), 0);
    assert_int_equal(gw_upstream_cap_shed_asked(f->cap, 2), 2);
    assert_int_equal(gw_upstream_cap_shed_asked(f->cap, 2), 0); /* taken once */
    run_all(f);
    assert_int_equal(f->m[2].looks, 1);
    assert_int_equal(f->m[1].looks, 0);
    assert_int_equal(f->m[0].looks, 0); /* no slot free: the waiter is not woken */
    fixture_free(f);
}

static void
test_wait_sees_a_slot_freed_before_it(void **state)
{
    (void)state;
    struct fixture *f = fixture_new(1);
    /* the slot came free before the want went up (the give woke nobody):
     * the wait itself wakes its member */
    gw_upstream_cap_wait(f->cap, 1);
    run_all(f);
    assert_int_equal(f->m[1].looks, 1);
    fixture_free(f);
}

static void
test_a_member_that_left_is_not_called(void **state)
{
    (void)state;
    struct fixture *f = fixture_new(1);
    assert_true(gw_upstream_cap_take(f->cap));
    gw_upstream_cap_idle(f->cap, 2, 3);
    gw_upstream_cap_wait(f->cap, 1);
    gw_upstream_cap_give(f->cap); /* 1 poked */
    gw_upstream_cap_leave(f->cap, 1);
    gw_upstream_cap_leave(f->cap, 2); /* 2 was asked to shed, then left */
    run_all(f);
    assert_int_equal(f->m[1].looks, 0);
    assert_int_equal(f->m[2].looks, 0);
    assert_false(gw_upstream_cap_wanted(f->cap, 0)); /* its want went with it */
    uint64_t open = 0;
    uint64_t idle = 0;
    gw_upstream_cap_conns(f->cap, &open, &idle);
    assert_int_equal(idle, 0);
    fixture_free(f);
}

static void
test_a_closed_queue_takes_no_wake_up(void **state)
{
    (void)state;
    struct fixture *f = fixture_new(1);
    assert_true(gw_upstream_cap_take(f->cap));
    gw_upstream_cap_wait(f->cap, 1);
    gw_loopq_close(f->m[1].q); /* its loop ended: a poke fails and is forgotten */
    gw_upstream_cap_give(f->cap);
    assert_true(gw_upstream_cap_take(f->cap));
    gw_upstream_cap_give(f->cap);
    run_all(f);
    assert_int_equal(f->m[1].looks, 0);
    fixture_free(f);
}

static void
test_hand_over_to_a_waiting_member(void **state)
{
    (void)state;
    struct fixture *f = fixture_new(4);
    assert_int_equal(gw_upstream_cap_share(f->cap), 2); /* 4 among 3 loops, rounded up */
    for (int i = 0; i < 4; i++) {
        assert_true(gw_upstream_cap_take(f->cap));
    }
    /* nobody waits: nothing to hand over, the caller gives the slot back itself */
    assert_false(gw_upstream_cap_hand_over(f->cap, 0, false));
    gw_upstream_cap_held(f->cap, 0, 3);
    gw_upstream_cap_held(f->cap, 1, 1);
    gw_upstream_cap_wait(f->cap, 1);
    gw_upstream_cap_wait(f->cap, 0); /* the hander's own want never counts */
    /* only to a member holding nothing: 1 holds one */
    assert_false(gw_upstream_cap_hand_over(f->cap, 0, true));
    assert_true(gw_upstream_cap_hand_over(f->cap, 0, false));
    run_all(f);
    assert_int_equal(f->m[1].looks, 1);
    assert_int_equal(gw_upstream_cap_granted(f->cap, 1), 1);
    assert_int_equal(gw_upstream_cap_granted(f->cap, 1), 0); /* taken once */
    assert_int_equal(gw_upstream_cap_granted(f->cap, 0), 0);
    /* the slot stayed counted: it is 1's now, none is free */
    assert_false(gw_upstream_cap_take(f->cap));
    gw_upstream_cap_held(f->cap, 2, 0);
    gw_upstream_cap_wait(f->cap, 2);
    assert_true(gw_upstream_cap_hand_over(f->cap, 0, true)); /* 2 holds nothing */
    assert_int_equal(gw_upstream_cap_granted(f->cap, 2), 1);
    assert_int_equal(gw_upstream_cap_granted(f->cap, 1), 0);
    /* a member that leaves gives back what was handed to it and not taken */
    assert_true(gw_upstream_cap_hand_over(f->cap, 0, true));
    gw_upstream_cap_leave(f->cap, 2);
    assert_true(gw_upstream_cap_take(f->cap));
    assert_false(gw_upstream_cap_take(f->cap));
    fixture_free(f);
}

/* ---- four loops on four threads ---- */

#define MT_LOOPS  4
#define MT_MAX    3
#define MT_ROUNDS 20000

struct mt {
    struct gw_upstream_cap *cap;
    atomic_int held;    /* slots held now, by the test's count */
    atomic_int most;    /* the most ever held at once */
    atomic_int running; /* threads not finished */
};

struct mt_loop {
    struct mt *mt;
    struct event_base *base;
    struct gw_loopq *q;
    uint32_t slot;
    bool waiting;
    int got;
    int waits; /* takes that had to wait */
};

static void
mt_hold(struct mt *mt)
{
    int now = atomic_fetch_add(&mt->held, 1) + 1;
    int most = atomic_load(&mt->most);
    while (now > most && !atomic_compare_exchange_weak(&mt->most, &most, now)) {
    }
}

/* Take a slot, or wait for one (woken by mt_look). */
static void
mt_try(struct mt_loop *l)
{
    if (gw_upstream_cap_take(l->mt->cap)) {
        mt_hold(l->mt);
        l->got++;
        l->waiting = false;
        gw_upstream_cap_wait_done(l->mt->cap, l->slot);
        atomic_fetch_sub(&l->mt->held, 1);
        gw_upstream_cap_give(l->mt->cap);
        return;
    }
    l->waits += l->waiting ? 0 : 1;
    l->waiting = true;
    gw_upstream_cap_wait(l->mt->cap, l->slot);
}

static void
mt_look(void *arg)
{
    struct mt_loop *l = arg;
    if (l->waiting) {
        mt_try(l);
    }
}

static void *
mt_main(void *arg)
{
    struct mt_loop *l = arg;
    while (l->got < MT_ROUNDS) {
        if (!l->waiting) {
            mt_try(l);
        }
        (void)event_base_loop(l->base, l->waiting ? EVLOOP_ONCE : EVLOOP_NONBLOCK);
    }
    atomic_fetch_sub(&l->mt->running, 1);
    /* keep answering: another loop may still count on a wake-up from this one */
    while (atomic_load(&l->mt->running) > 0) {
        (void)event_base_loop(l->base, EVLOOP_NONBLOCK);
    }
    return NULL;
}

static void
test_threads_never_hold_more_than_max(void **state)
{
    (void)state;
    struct mt mt = {.cap = gw_upstream_cap_new(MT_MAX, MT_LOOPS)};
    assert_non_null(mt.cap);
    atomic_init(&mt.held, 0);
    atomic_init(&mt.most, 0);
    atomic_init(&mt.running, MT_LOOPS);
    /* the slots but one held outside the loops: they contend for one */
    for (int i = 0; i < MT_MAX - 1; i++) {
        assert_true(gw_upstream_cap_take(mt.cap));
        mt_hold(&mt);
    }
    struct mt_loop l[MT_LOOPS] = {0};
    pthread_t th[MT_LOOPS];
    for (int i = 0; i < MT_LOOPS; i++) {
        l[i].mt = &mt;
        l[i].base = event_base_new();
        assert_non_null(l[i].base);
        l[i].q = gw_loopq_new(l[i].base);
        assert_non_null(l[i].q);
        assert_int_equal(gw_upstream_cap_join(mt.cap, l[i].q, mt_look, &l[i], &l[i].slot), 0);
    }
    for (int i = 0; i < MT_LOOPS; i++) {
        assert_int_equal(pthread_create(&th[i], NULL, mt_main, &l[i]), 0);
    }
    for (int i = 0; i < MT_LOOPS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
    }
    assert_true(atomic_load(&mt.most) <= MT_MAX);
    int waits = 0;
    for (int i = 0; i < MT_LOOPS; i++) {
        waits += l[i].waits;
    }
    print_message("%d takes, %d of them waited, at most %d slots held\n", MT_LOOPS * MT_ROUNDS,
                  waits, atomic_load(&mt.most));
    for (int i = 0; i < MT_LOOPS; i++) {
        assert_int_equal(l[i].got, MT_ROUNDS);
        gw_upstream_cap_leave(mt.cap, l[i].slot);
        gw_loopq_free(l[i].q);
        event_base_free(l[i].base);
    }
    uint64_t open = 0;
    uint64_t idle = 0;
    gw_upstream_cap_conns(mt.cap, &open, &idle);
    assert_int_equal(open, MT_MAX - 1);
    gw_upstream_cap_free(mt.cap);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_take_up_to_max),
        cmocka_unit_test(test_no_max_only_counts),
        cmocka_unit_test(test_give_wakes_every_waiter_once),
        cmocka_unit_test(test_wait_asks_the_most_idle_to_shed),
        cmocka_unit_test(test_wait_sees_a_slot_freed_before_it),
        cmocka_unit_test(test_a_member_that_left_is_not_called),
        cmocka_unit_test(test_a_closed_queue_takes_no_wake_up),
        cmocka_unit_test(test_hand_over_to_a_waiting_member),
        cmocka_unit_test(test_threads_never_hold_more_than_max),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
