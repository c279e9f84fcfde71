/*
 * tests/unit/gateway/control_harness.h: a control loop on a thread of its
 * own, for the tests whose own thread plays the worker loops (DESIGN
 * "Worker loops"; http/relay_test.c, fence/remote_test.c).
 *
 *   struct ct_loop     the control loop: its event_base and gw_loopq, which
 *                      the test makes (and frees) itself, and the thread
 *   ct_start(c)        runs c->base on a new thread until ct_stop; the
 *                      objects on that loop are the thread's from here on
 *   ct_call(c, fn, arg, pump)
 *                      runs fn(arg) on the control loop (a message on c->q)
 *                      and waits for it, about 5 s at most, turning the
 *                      worker loop pump meanwhile (NULL: no loop runs)
 *   ct_stop(c, pump)   breaks the control loop from inside and joins its
 *                      thread; its objects are the test thread's again
 *
 * Include it from a *_test.c only; everything here is static inline.
 */
#ifndef TESTS_UNIT_GATEWAY_CONTROL_HARNESS_H
#define TESTS_UNIT_GATEWAY_CONTROL_HARNESS_H

#include <event2/event.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gateway/net/loopmsg.h"
#include "tests/unit/testlib.h"

struct ct_loop {
    struct event_base *base; /* the control loop (the test's: made before ct_start) */
    struct gw_loopq *q;      /* its queue, on base: ct_call posts here */
    pthread_t th;            /* the thread running base */
    bool running;            /* between ct_start and ct_stop */
};

/* pthread_create: the control thread, which runs its loop until broken. */
static inline void *
ct_main(void *arg)
{
    struct ct_loop *c = arg;
    (void)event_base_loop(c->base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

static inline void
ct_start(struct ct_loop *c)
{
    assert_int_equal(pthread_create(&c->th, NULL, ct_main, c), 0);
    c->running = true;
}

/* A call run on the control loop, waited for by the test's thread. */
struct ct_call {
    struct gw_loopmsg m; /* first: the message is the call */
    void (*fn)(void *arg);
    void *arg;
    atomic_int done; /* fn has run, or the message was cancelled */
};

/* gw_loopmsg run, on the control thread */
static inline void
ct_call_run(struct gw_loopmsg *m)
{
    struct ct_call *call = (struct ct_call *)m;
    call->fn(call->arg);
    atomic_store(&call->done, 1);
}

/* gw_loopmsg cancel: the control queue closed first */
static inline void
ct_call_cancel(struct gw_loopmsg *m, int why)
{
    (void)why;
    atomic_store(&((struct ct_call *)m)->done, 1);
}

static inline void
ct_call(struct ct_loop *c, void (*fn)(void *), void *arg, struct event_base *pump)
{
    struct ct_call call = {
        .m = {.run = ct_call_run, .cancel = ct_call_cancel}, .fn = fn, .arg = arg};
    assert_int_equal(gw_loopq_post(c->q, &call.m), 0);
    for (int i = 0; i < 10000 && !atomic_load(&call.done); i++) {
        tl_turn(pump, NULL); /* the worker keeps running (pump != NULL); half a millisecond */
    }
    assert_true(atomic_load(&call.done));
}

static inline void
ct_break(void *arg)
{
    (void)event_base_loopbreak(arg);
}

static inline void
ct_stop(struct ct_loop *c, struct event_base *pump)
{
    ct_call(c, ct_break, c->base, pump);
    assert_int_equal(pthread_join(c->th, NULL), 0);
    c->running = false;
}

#endif /* TESTS_UNIT_GATEWAY_CONTROL_HARNESS_H */
