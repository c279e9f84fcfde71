/*
 * tests/unit/gateway/fence/remote_test.c: the fence seen from worker loops
 * (gateway/fence/remote.c).  The real fence, store and hub run on a control
 * loop in a thread of their own; the test's thread runs two worker loops.
 * Verdicts and cuts arrive on the worker's thread; a write whose last byte
 * the control side allowed is awaited by the barrier, never cut, while a
 * newer epoch's write on another loop waits for it; a write not yet allowed
 * is cut; a client gone while its admission crosses leaves no ticket; queues
 * closed with answers pending free everything (ASan), and the hub releases
 * what workers still held at shutdown.  make SAN=thread unit runs these
 * under ThreadSanitizer.
 */
#include "gateway/fence/remote.h"

#include <event2/event.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/err.h"
#include "gateway/net/loopmsg.h"
#include "store/store.h"
#include "tests/unit/gateway/control_harness.h"
#include "tests/unit/testlib.h"

/* The control loop: everything the fence needs, on its own thread. */
struct control {
    char *dir;
    struct ct_loop loop;          /* base (NULL once stopped), queue and thread */
    struct event_base *base_done; /* ... and then here, until teardown */
    struct store *st;
    struct event *ev;
    struct gw_fence *f;
    struct gw_fence_hub *hub;
};

/* A worker loop, run by the test's thread. */
struct worker {
    struct event_base *base;
    struct gw_loopq *q;
    struct gw_fence_remote *r;
};

static struct control ctl;
static struct worker wa, wb;
static pthread_t test_thread;

/* One write's view, as the proxy keeps it. */
struct w {
    int verdicts;
    int err;
    uint64_t current;
    int cuts;
    int cut_err;
    uint64_t cut_current;
    int resumes;
    int judged;
    int judged_err;
    uint64_t judged_current;
    int wrong_thread; /* a callback ran off the worker's thread */
    struct gw_fence_rticket *t;
};

static void
on_completion(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)store_dispatch_completions(arg);
}

/* Runs fn(arg) on the control loop and waits for it; the worker loops do not run meanwhile. */
static void
on_control(void (*fn)(void *), void *arg)
{
    ct_call(&ctl.loop, fn, arg, NULL);
}

struct learn {
    const char *lock;
    uint64_t epoch;
};

static void
do_learn(void *arg)
{
    struct learn *l = arg;
    gw_fence_learn(ctl.f, l->lock, l->epoch);
}

static void
do_count(void *arg)
{
    *(uint64_t *)arg = gw_fence_hub_tickets(ctl.hub);
}

static void
do_current(void *arg)
{
    uint64_t *v = arg;
    if (gw_fence_current(ctl.f, "orders", v) != 0) {
        *v = 0;
    }
}

/* The fence's highest token of "orders" now. */
static uint64_t
highest(void)
{
    uint64_t v = 0;
    on_control(do_current, &v);
    return v;
}

static uint64_t
hub_tickets(void)
{
    uint64_t n = UINT64_MAX;
    on_control(do_count, &n);
    return n;
}

/* Pumps both worker loops until cond holds (about 5 s at most). */
#define PUMP_UNTIL(cond)                                                                           \
    do {                                                                                           \
        for (int pump_i = 0; pump_i < 10000 && !(cond); pump_i++) {                                \
            tl_turn(wa.base, NULL);                                                                \
            tl_turn(wb.base, NULL);                                                                \
        }                                                                                          \
        assert_true(cond);                                                                         \
    } while (0)

/* Pumps both worker loops for about ms milliseconds. */
static void
pump_for(int ms)
{
    for (int i = 0; i < ms * 2; i++) {
        tl_turn(wa.base, NULL);
        tl_turn(wb.base, NULL);
    }
}

static void
on_verdict(void *arg, int err, uint64_t current)
{
    struct w *w = arg;
    w->wrong_thread += !pthread_equal(pthread_self(), test_thread);
    w->verdicts++;
    w->err = err;
    w->current = current;
    if (err != 0) {
        w->t = NULL; /* freed */
    }
}

static void
on_cut(void *arg, int err, uint64_t current)
{
    struct w *w = arg;
    w->wrong_thread += !pthread_equal(pthread_self(), test_thread);
    w->cuts++;
    w->cut_err = err;
    w->cut_current = current;
    w->t = NULL; /* freed */
}

static void
on_resume(void *arg)
{
    struct w *w = arg;
    w->wrong_thread += !pthread_equal(pthread_self(), test_thread);
    w->resumes++;
}

static void
on_judged(void *arg, int err, uint64_t current)
{
    struct w *w = arg;
    w->wrong_thread += !pthread_equal(pthread_self(), test_thread);
    w->judged++;
    w->judged_err = err;
    w->judged_current = current;
}

static void
admit(struct worker *k, const char *lock, uint64_t token, struct w *w)
{
    struct gw_fence_claim c = {.fenced = true, .token = token};
    (void)snprintf(c.lock, sizeof(c.lock), "%s", lock);
    memset(w, 0, sizeof(*w));
    assert_int_equal(gw_fence_remote_admit(k->r, &c, "req", "tester", on_verdict, on_cut, w, &w->t),
                     0);
    gw_fence_rticket_rebind(w->t, on_cut, on_resume, w);
    assert_int_equal(w->verdicts, 0); /* never before the call returns */
}

static void
grant(const char *lock, uint64_t epoch)
{
    assert_int_equal(store_elect_advance_sync(ctl.st, lock, epoch, NULL), 0);
}

static void
worker_open(struct worker *k)
{
    k->base = event_base_new();
    assert_non_null(k->base);
    k->q = gw_loopq_new(k->base);
    assert_non_null(k->q);
    k->r = gw_fence_remote_new(ctl.hub, k->q);
    assert_non_null(k->r);
}

static void
worker_close(struct worker *k)
{
    gw_loopq_close(k->q);
    gw_fence_remote_free(k->r);
    gw_loopq_free(k->q);
    event_base_free(k->base);
}

static int
setup(void **state)
{
    (void)state;
    test_thread = pthread_self();
    memset(&ctl, 0, sizeof(ctl));
    ctl.dir = tl_dir_new("remote");
    ctl.loop.base = event_base_new();
    struct store_opts o;
    char errbuf[256];
    store_opts_init(&o);
    o.data_dir = ctl.dir;
    assert_int_equal(store_open(&o, &ctl.st, errbuf, sizeof(errbuf)), 0);
    ctl.ev = event_new(ctl.loop.base, store_completion_fd(ctl.st), EV_READ | EV_PERSIST,
                       on_completion, ctl.st);
    assert_int_equal(event_add(ctl.ev, NULL), 0);
    ctl.f = gw_fence_new(ctl.loop.base, ctl.st);
    ctl.loop.q = gw_loopq_new(ctl.loop.base);
    ctl.hub = gw_fence_hub_new(ctl.f, ctl.loop.q);
    assert_non_null(ctl.f);
    assert_non_null(ctl.loop.q);
    assert_non_null(ctl.hub);
    worker_open(&wa);
    worker_open(&wb);
    /* the control objects are the control thread's from here on */
    ct_start(&ctl.loop);
    return 0;
}

/* Stops the control loop's thread; its objects are the test thread's from here on. */
static void
control_halt(void)
{
    ct_stop(&ctl.loop, NULL);
}

/* Shuts the halted control side down: its queue closed (pending messages cancelled). */
static void
control_finish(void)
{
    gw_loopq_close(ctl.loop.q);
    gw_fence_hub_free(ctl.hub);
    gw_fence_free(ctl.f);
    event_free(
        ctl.ev); /* ctl.loop.q stays allocated for the workers' late posts (teardown frees it) */
    store_close(ctl.st);
    ctl.base_done = ctl.loop.base;
    ctl.loop.base = NULL;
}

static void
control_stop(void)
{
    if (ctl.loop.base == NULL) {
        return;
    }
    if (ctl.loop.running) {
        control_halt();
    }
    control_finish();
}

static int
teardown(void **state)
{
    (void)state;
    control_stop();
    worker_close(&wa);
    worker_close(&wb);
    gw_loopq_free(ctl.loop.q); /* no worker posts any more */
    event_base_free(ctl.base_done);
    tl_dir_free(ctl.dir);
    return 0;
}

static void
test_verdicts_cross_to_the_worker(void **state)
{
    (void)state;
    struct w a, b;
    grant("orders", 5);
    admit(&wa, "orders", 5, &a);
    PUMP_UNTIL(a.verdicts == 1);
    assert_int_equal(a.err, 0);
    assert_int_equal(a.current, 5);
    admit(&wb, "orders", 4, &b); /* stale, from the other loop */
    PUMP_UNTIL(b.verdicts == 1);
    assert_int_equal(b.err, ERR_FENCED);
    assert_int_equal(b.current, 5);
    assert_null(b.t);
    assert_int_equal(a.wrong_thread + b.wrong_thread, 0);
    gw_fence_rticket_release(a.t);
    /* the refusal ended its control half by itself; the release ended a's */
    PUMP_UNTIL(hub_tickets() == 0);
    /* the highest with nothing in flight: the control loop admits it at once
     * (GW_FENCE_ADMITTED), and the verdict still crosses to the worker */
    struct w c;
    admit(&wb, "orders", 5, &c);
    PUMP_UNTIL(c.verdicts == 1);
    assert_int_equal(c.err, 0);
    assert_int_equal(c.current, 5);
    assert_int_equal(c.wrong_thread, 0);
    gw_fence_rticket_release(c.t);
    PUMP_UNTIL(hub_tickets() == 0);
}

static void
test_unsent_write_is_cut_across_loops(void **state)
{
    (void)state;
    struct w a, b;
    grant("orders", 5);
    admit(&wa, "orders", 5, &a);
    PUMP_UNTIL(a.verdicts == 1 && a.err == 0);
    /* the body is streaming: its last byte asked, not yet allowed */
    grant("orders", 6);
    admit(&wb, "orders", 6, &b); /* a newer epoch's write on the other loop */
    PUMP_UNTIL(a.cuts == 1 && b.verdicts == 1);
    assert_int_equal(a.cut_err, ERR_FENCED);
    assert_int_equal(a.cut_current, 6);
    assert_null(a.t);
    assert_int_equal(b.err, 0);
    /* the election learning a newer epoch cuts the same way */
    struct learn l = {"orders", 7};
    on_control(do_learn, &l);
    PUMP_UNTIL(b.cuts == 1);
    assert_int_equal(b.cut_current, 7);
    assert_int_equal(a.wrong_thread + b.wrong_thread, 0);
    PUMP_UNTIL(hub_tickets() == 0);
}

static void
test_allowed_last_byte_is_awaited_not_cut(void **state)
{
    (void)state;
    struct w a, b;
    grant("orders", 5);
    admit(&wa, "orders", 5, &a);
    PUMP_UNTIL(a.verdicts == 1 && a.err == 0);
    /* the last byte: held until the control side says yes */
    assert_false(gw_fence_rticket_may_finish(a.t));
    assert_false(gw_fence_rticket_may_finish(a.t)); /* asked once, not twice */
    PUMP_UNTIL(a.resumes == 1);
    assert_true(gw_fence_rticket_may_finish(a.t));
    gw_fence_rticket_sent(a.t);
    /* a newer epoch's write on another loop now waits for a, which is not cut */
    grant("orders", 6);
    admit(&wb, "orders", 6, &b);
    pump_for(300);
    assert_int_equal(a.cuts, 0);
    assert_int_equal(b.verdicts, 0);
    /* a ends (its answer came): the barrier opens for b */
    gw_fence_rticket_release(a.t);
    PUMP_UNTIL(b.verdicts == 1);
    assert_int_equal(b.err, 0);
    assert_int_equal(a.cuts, 0);
    gw_fence_rticket_release(b.t);
    assert_int_equal(a.wrong_thread + b.wrong_thread, 0);
    PUMP_UNTIL(hub_tickets() == 0);
}

/* A sent write, then the store's 412 to its condition: the control side judges. */
static void
send_all(struct w *a)
{
    PUMP_UNTIL(a->verdicts == 1 && a->err == 0);
    assert_false(gw_fence_rticket_may_finish(a->t));
    PUMP_UNTIL(a->resumes == 1);
    assert_true(gw_fence_rticket_may_finish(a->t));
}

static void
test_judged_current_then_superseded(void **state)
{
    (void)state;
    struct w a, b;
    grant("orders", 5);
    admit(&wa, "orders", 5, &a);
    send_all(&a);
    /* nothing newer: the token is current, the store's 412 is a changed key */
    gw_fence_rticket_judge(a.t, on_judged);
    assert_int_equal(a.judged, 0); /* never before the call returns */
    PUMP_UNTIL(a.judged == 1);
    assert_int_equal(a.judged_err, 0);
    gw_fence_rticket_release(a.t);
    /* b sent; then epoch 6 learned while b's answer is awaited: superseded, not "current" */
    admit(&wb, "orders", 5, &b);
    send_all(&b);
    struct learn l = {"orders", 6};
    grant("orders", 6);
    on_control(do_learn, &l);
    PUMP_UNTIL(highest() == 6); /* the advance is durable first */
    gw_fence_rticket_judge(b.t, on_judged);
    PUMP_UNTIL(b.judged == 1);
    assert_int_equal(b.judged_err, ERR_FENCED);
    assert_int_equal(b.judged_current, 6);
    assert_int_equal(b.cuts, 0); /* sent: awaited, never cut */
    gw_fence_rticket_release(b.t);
    assert_int_equal(a.wrong_thread + b.wrong_thread, 0);
    PUMP_UNTIL(hub_tickets() == 0);
}

/* A judgement asked of a ticket released before its answer is never delivered. */
static void
test_judgement_after_release_is_dropped(void **state)
{
    (void)state;
    struct w a;
    grant("orders", 5);
    admit(&wa, "orders", 5, &a);
    send_all(&a);
    gw_fence_rticket_judge(a.t, on_judged);
    gw_fence_rticket_release(a.t);
    pump_for(200);
    assert_int_equal(a.judged, 0);
    PUMP_UNTIL(hub_tickets() == 0);
}

static void
test_client_gone_while_admission_crosses(void **state)
{
    (void)state;
    struct w a, b;
    grant("orders", 5);
    admit(&wa, "orders", 5, &a);
    gw_fence_rticket_release(a.t); /* before any answer: the client hung up */
    pump_for(200);
    assert_int_equal(a.verdicts, 0); /* its answer was dropped with its endpoint */
    PUMP_UNTIL(hub_tickets() == 0);
    /* nothing of a stays behind to hold the lock's barrier */
    grant("orders", 6);
    admit(&wb, "orders", 6, &b);
    PUMP_UNTIL(b.verdicts == 1);
    assert_int_equal(b.err, 0);
    /* and a write let finish, gone before its yes arrived */
    assert_false(gw_fence_rticket_may_finish(b.t));
    gw_fence_rticket_release(b.t);
    pump_for(100);
    assert_int_equal(b.resumes, 0);
    PUMP_UNTIL(hub_tickets() == 0);
}

static void
test_queues_closed_with_answers_pending(void **state)
{
    (void)state;
    struct w a, b;
    grant("orders", 5);
    admit(&wa, "orders", 5, &a);
    /* the verdict reaches wa's queue, which its loop has not run yet */
    PUMP_UNTIL(hub_tickets() == 1);
    for (int i = 0; i < 20; i++) {
        tl_turn(wb.base, NULL); /* wb only */
    }
    gw_loopq_close(wa.q); /* wa shuts down: its pending verdict is cancelled */
    assert_int_equal(a.verdicts, 0);
    gw_fence_rticket_release(a.t);
    PUMP_UNTIL(hub_tickets() == 0);
    /* the control loop stops while wb still holds a ticket (the hub releases it,
     * else gw_fence_free would find it) and another's admission is pending
     * (cancelled with the queue: its control half is freed) */
    struct w pending;
    admit(&wb, "orders", 5, &b);
    PUMP_UNTIL(b.verdicts == 1 && b.err == 0);
    control_halt();
    admit(&wb, "orders", 5, &pending);
    control_finish();
    gw_fence_rticket_release(b.t); /* its release finds the control queue closed */
    gw_fence_rticket_release(pending.t);
    pump_for(20);
    assert_int_equal(pending.verdicts, 0);
    struct gw_fence_claim c = {.fenced = true, .token = 5};
    (void)snprintf(c.lock, sizeof(c.lock), "orders");
    struct gw_fence_rticket *t = NULL;
    assert_int_equal(gw_fence_remote_admit(wb.r, &c, "req", "p", on_verdict, on_cut, &b, &t),
                     ERR_CLOSED);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_verdicts_cross_to_the_worker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsent_write_is_cut_across_loops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allowed_last_byte_is_awaited_not_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_judged_current_then_superseded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_judgement_after_release_is_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_gone_while_admission_crosses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queues_closed_with_answers_pending, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
