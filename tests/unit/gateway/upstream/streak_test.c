/*
 * tests/unit/gateway/upstream/streak_test.c: the unreachable streak
 * (gateway/upstream/streak.c) shared by the upstream clients of several
 * loops (DESIGN "Worker loops"): connect failures on two loops' clients add
 * up, a response on either ends the streak, the hold runs from the last
 * failure on any loop, and a client given no streak keeps its own.  The last
 * test feeds one streak from two threads while a third reads it, as the
 * loops and /readyz do; make SAN=thread unit runs it under ThreadSanitizer,
 * which fails it if the count, the time or the text is touched unguarded.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "gateway/upstream/engine.h"
#include "gateway/upstream/upstream.h"

#define T0 5000000 /* the pinned monotonic clock, ms */

/* Two loops, each with its own base and proxy client, feeding one streak. */
struct two_loops {
    struct gw_upstream_streak *streak;
    struct event_base *base[2];
    struct gw_upstream *up[2];
};

static int
setup(void **state)
{
    struct two_loops *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    t->streak = gw_upstream_streak_new();
    assert_non_null(t->streak);
    struct gw_upstream_opts o = {.engine = GW_UPSTREAM_LEAN,
                                 .connect_timeout_ms = 1000,
                                 .timeout_ms = 1000,
                                 .streak = t->streak};
    for (int i = 0; i < 2; i++) {
        t->base[i] = event_base_new();
        assert_non_null(t->base[i]);
        t->up[i] = gw_upstream_new(t->base[i], &o);
        assert_non_null(t->up[i]);
    }
    clock_pin(T0, 1700000000000);
    *state = t;
    return 0;
}

static int
teardown(void **state)
{
    struct two_loops *t = *state;
    clock_unpin();
    for (int i = 0; i < 2; i++) {
        gw_upstream_free(t->up[i]);
        event_base_free(t->base[i]);
    }
    gw_upstream_streak_free(t->streak);
    free(t);
    return 0;
}

/* One transfer on loop i that could not connect, as an engine records it. */
static void
fail_on(struct two_loops *t, int i, const char *text)
{
    gw_upstream_note_connect_err(t->up[i], "%s", text);
    gw_upstream_note_connect_failed(t->up[i]);
}

/* Every loop's client answers alike: /readyz may read any of them. */
static bool
unreachable_all(struct two_loops *t, char *why, size_t len)
{
    bool u0 = gw_upstream_unreachable(t->up[0], why, len);
    bool u1 = gw_upstream_unreachable(t->up[1], NULL, 0);
    bool us = gw_upstream_streak_unreachable(t->streak, NULL, 0);
    assert_true(u0 == u1 && u1 == us);
    return u0;
}

/* The streak's count now (what the loops have recorded). */
static unsigned
fails(struct two_loops *t)
{
    return (unsigned)atomic_load(&t->streak->fails);
}

static void
test_failures_on_two_loops_add_up(void **state)
{
    struct two_loops *t = *state;
    char why[GW_UPSTREAM_WHY_MAX] = "untouched";
    _Static_assert(GW_UPSTREAM_DOWN_AFTER == 3, "the interleaving below is for 3");
    fail_on(t, 0, "a: refused");
    assert_false(unreachable_all(t, why, sizeof(why)));
    fail_on(t, 1, "b: refused");
    assert_false(unreachable_all(t, why, sizeof(why)));
    assert_string_equal(why, "untouched"); /* left alone while reachable */
    fail_on(t, 0, "a: refused again");
    assert_int_equal(fails(t), 3);
    assert_true(unreachable_all(t, why, sizeof(why)));
    assert_string_equal(why, "a: refused again"); /* the last failure, whichever loop */
    fail_on(t, 1, "b: timed out");
    assert_true(unreachable_all(t, why, sizeof(why)));
    assert_string_equal(why, "b: timed out");
    /* each loop's own text stays its own (its logs) */
    assert_string_equal(t->up[0]->connect_err, "a: refused again");
    assert_string_equal(t->up[1]->connect_err, "b: timed out");
}

static void
test_a_response_on_one_loop_ends_it(void **state)
{
    struct two_loops *t = *state;
    char why[GW_UPSTREAM_WHY_MAX];
    for (int i = 0; i < GW_UPSTREAM_DOWN_AFTER; i++) {
        fail_on(t, 0, "a: refused");
    }
    assert_true(unreachable_all(t, why, sizeof(why)));
    gw_upstream_note_reached(t->up[1]); /* the other loop got an answer */
    assert_int_equal(fails(t), 0);
    assert_false(unreachable_all(t, why, sizeof(why)));
    /* a new streak starts from nothing, on either loop */
    fail_on(t, 1, "b: refused");
    fail_on(t, 0, "a: refused");
    assert_false(unreachable_all(t, why, sizeof(why)));
    gw_upstream_note_reached(t->up[0]);
    fail_on(t, 1, "b: refused");
    fail_on(t, 1, "b: refused");
    assert_false(unreachable_all(t, why, sizeof(why))); /* 2 since the answer */
    fail_on(t, 0, "a: refused");
    assert_true(unreachable_all(t, why, sizeof(why)));
    gw_upstream_note_reached(t->up[0]);
    assert_false(unreachable_all(t, why, sizeof(why)));
}

static void
test_hold_runs_from_the_last_failure_on_any_loop(void **state)
{
    struct two_loops *t = *state;
    char why[GW_UPSTREAM_WHY_MAX];
    for (int i = 0; i < GW_UPSTREAM_DOWN_AFTER; i++) {
        fail_on(t, 0, "a: refused");
    }
    clock_pin(T0 + GW_UPSTREAM_DOWN_HOLD_MS - 1, 1700000000000);
    fail_on(t, 1, "b: refused"); /* renews the hold for both */
    clock_pin(T0 + GW_UPSTREAM_DOWN_HOLD_MS + 5, 1700000000000);
    assert_true(unreachable_all(t, why, sizeof(why)));
    clock_pin(T0 + 2 * GW_UPSTREAM_DOWN_HOLD_MS - 2, 1700000000000);
    assert_true(unreachable_all(t, why, sizeof(why)));
    clock_pin(T0 + 2 * GW_UPSTREAM_DOWN_HOLD_MS - 1, 1700000000000);
    assert_false(unreachable_all(t, why, sizeof(why))); /* quiet for the hold: try again */
}

/* A client given no streak (one loop, the S3 client's own) keeps its own. */
static void
test_no_streak_given_is_its_own(void **state)
{
    struct two_loops *t = *state;
    struct gw_upstream_opts o = {.engine = GW_UPSTREAM_CURL, .connect_timeout_ms = 1000};
    struct gw_upstream *alone = gw_upstream_new(t->base[0], &o);
    assert_non_null(alone);
    char why[GW_UPSTREAM_WHY_MAX];
    for (int i = 0; i < GW_UPSTREAM_DOWN_AFTER; i++) {
        gw_upstream_note_connect_err(alone, "alone: refused");
        gw_upstream_note_connect_failed(alone);
    }
    assert_true(gw_upstream_unreachable(alone, why, sizeof(why)));
    assert_string_equal(why, "alone: refused");
    assert_int_equal(fails(t), 0); /* the shared one saw none of it */
    assert_false(unreachable_all(t, why, sizeof(why)));
    gw_upstream_note_reached(t->up[0]); /* nor does its end reach the lone client */
    assert_true(gw_upstream_unreachable(alone, why, sizeof(why)));
    gw_upstream_free(alone);
}

/* ---- two loops' threads at once, and /readyz reading ---- */

/* Failures per thread.  The threads must meet on the count often enough that
 * an increment that is not one atomic add loses some: at 1000000 a normal
 * build lost thousands in every run on two idle cores (at 20000, none), but on
 * a loaded machine, where the two seldom run at once, it may lose none.  Under
 * ThreadSanitizer, ~10x slower, 100003 lose some in every run (its atomics are
 * calls: a wider window; a load and a store each atomic are no race to it),
 * and what it reports itself, the count, time or text touched unguarded,
 * needs no more.  Each is 1 mod 7: see the _Static_assert below. */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifdef UNDER_TSAN
#define ROUNDS 100003
#else
#define ROUNDS 1000000
#endif

struct feeder {
    struct two_loops *t;
    int loop;          /* which client it feeds through */
    bool answers;      /* also records a response every 7th round */
    atomic_bool *go;   /* both start together, once both threads run */
    atomic_bool *done; /* set when it has finished */
};

static void *
feeding(void *arg)
{
    struct feeder *fd = arg;
    char text[32];
    (void)snprintf(text, sizeof(text), "loop %d: refused", fd->loop);
    while (!atomic_load(fd->go)) {
        /* spin: a thread that ran alone would meet no other */
    }
    for (int i = 0; i < ROUNDS; i++) {
        /* a text now and then, the count every time: the threads meet on the
         * count often enough that an increment that is not one add loses some */
        if (i % 16 == 0) {
            gw_upstream_note_connect_err(fd->t->up[fd->loop], "%s", text);
        }
        gw_upstream_note_connect_failed(fd->t->up[fd->loop]);
        if (fd->answers && i % 7 == 6) {
            gw_upstream_note_reached(fd->t->up[fd->loop]);
        }
    }
    atomic_store(fd->done, true);
    return NULL;
}

/* Reads as /readyz does until both feeders are done; every text is whole. */
static void
read_until_done(struct two_loops *t, atomic_bool *done0, atomic_bool *done1)
{
    char why[GW_UPSTREAM_WHY_MAX];
    int reads = 0;
    while (!atomic_load(done0) || !atomic_load(done1) || reads == 0) {
        why[0] = '\0';
        if (gw_upstream_unreachable(t->up[reads % 2], why, sizeof(why))) {
            assert_true(strcmp(why, "loop 0: refused") == 0 || strcmp(why, "loop 1: refused") == 0);
        }
        reads++;
    }
}

static void
run_two_feeders(struct two_loops *t, bool answers)
{
    atomic_bool go = false, done0 = false, done1 = false;
    struct feeder f0 = {.t = t, .loop = 0, .answers = answers, .go = &go, .done = &done0};
    struct feeder f1 = {.t = t, .loop = 1, .answers = answers, .go = &go, .done = &done1};
    pthread_t a, b;
    assert_int_equal(pthread_create(&a, NULL, feeding, &f0), 0);
    assert_int_equal(pthread_create(&b, NULL, feeding, &f1), 0);
    atomic_store(&go, true);
    read_until_done(t, &done0, &done1);
    assert_int_equal(pthread_join(a, NULL), 0);
    assert_int_equal(pthread_join(b, NULL), 0);
}

static void
test_two_threads_feed_one_streak(void **state)
{
    struct two_loops *t = *state;
    char why[GW_UPSTREAM_WHY_MAX];
    clock_unpin(); /* the real clock: the threads read it as they go */
    /* failures only: not one is lost */
    run_two_feeders(t, false);
    assert_int_equal(fails(t), 2 * ROUNDS);
    assert_true(unreachable_all(t, why, sizeof(why)));
    /* failures and answers interleaved: each thread's last answer comes one
     * failure before its end (its next-to-last round), so whatever the
     * interleaving at most those two last failures remain; one answer ends it */
    _Static_assert(ROUNDS % 7 == 1, "each thread's last answer is its next-to-last round");
    gw_upstream_note_reached(t->up[0]);
    run_two_feeders(t, true);
    assert_true(fails(t) <= 2);
    gw_upstream_note_reached(t->up[1]);
    assert_int_equal(fails(t), 0);
    assert_false(unreachable_all(t, why, sizeof(why)));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_failures_on_two_loops_add_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_response_on_one_loop_ends_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hold_runs_from_the_last_failure_on_any_loop, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_no_streak_given_is_its_own, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_threads_feed_one_streak, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
