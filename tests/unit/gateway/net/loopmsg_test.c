/*
 * tests/unit/gateway/net/loopmsg_test.c: messages between event loops
 * (gateway/net/loopmsg.c): per-sender order across threads, nothing run
 * inside a post, at most GW_LOOPQ_BATCH per turn, a queue closed with
 * messages pending (each cancelled once, none leaked: ASan), posts racing a
 * close, messages to a closed endpoint or a reused slot, and a client freed
 * while its answer crosses from another loop.  make SAN=thread unit runs
 * these under ThreadSanitizer.
 */
#include "gateway/net/loopmsg.h"

#include <event2/event.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define NSENDERS   3
#define PER_SENDER 20000

/* A test message: who sent it, its number, and the counters it reports to. */
struct tmsg {
    struct gw_loopmsg m; /* embedded */
    int sender;          /* sending thread's index */
    int seq;             /* 1, 2, ... per sender */
    struct tally *tally; /* the owner's counters */
};

/* The owner's counters (owner thread only, except posted/refused: atomics). */
struct tally {
    int ran;                   /* run callbacks */
    int cancelled;             /* cancel callbacks */
    int last[NSENDERS];        /* the last seq run per sender */
    int order_errors;          /* a seq that did not follow the sender's last */
    int last_cancelled;        /* the seq of the last cancelled message (sender 0) */
    int cancel_order_errors;   /* cancels out of order */
    atomic_int refused;        /* posts that returned ERR_CLOSED */
    struct gw_loopq *close_on; /* run: close this queue (test_close_from_callback) */
};

static struct tmsg *
tmsg_new(struct tally *t, int sender, int seq, gw_loopmsg_run_fn *run, gw_loopmsg_cancel_fn *cancel,
         uint64_t target)
{
    struct tmsg *x = calloc(1, sizeof(*x));
    assert_non_null(x);
    x->m.run = run;
    x->m.cancel = cancel;
    x->m.target = target;
    x->sender = sender;
    x->seq = seq;
    x->tally = t;
    return x;
}

/* gw_loopmsg_run_fn */
static void
on_run(struct gw_loopmsg *m)
{
    struct tmsg *x = (struct tmsg *)((char *)m - offsetof(struct tmsg, m));
    struct tally *t = x->tally;
    if (x->seq != t->last[x->sender] + 1) {
        t->order_errors++;
    }
    t->last[x->sender] = x->seq;
    t->ran++;
    if (t->close_on != NULL) {
        struct gw_loopq *q = t->close_on;
        t->close_on = NULL;
        gw_loopq_close(q);
    }
    free(x);
}

/* gw_loopmsg_cancel_fn */
static void
on_cancel(struct gw_loopmsg *m, int why)
{
    struct tmsg *x = (struct tmsg *)((char *)m - offsetof(struct tmsg, m));
    struct tally *t = x->tally;
    assert_int_equal(why, ERR_CLOSED);
    if (x->sender == 0 && x->seq <= t->last_cancelled) {
        t->cancel_order_errors++;
    }
    if (x->sender == 0) {
        t->last_cancelled = x->seq;
    }
    t->cancelled++;
    free(x);
}

/* Turn base until cond holds or about 20 s pass (a lost wake-up fails, never hangs). */
#define RUN_UNTIL(base, cond)                                                                      \
    do {                                                                                           \
        time_t until_ = time(NULL) + 20;                                                           \
        while (!(cond) && time(NULL) < until_) {                                                   \
            (void)event_base_loop((base), EVLOOP_ONCE | EVLOOP_NONBLOCK);                          \
            if (!(cond)) {                                                                         \
                (void)usleep(100);                                                                 \
            }                                                                                      \
        }                                                                                          \
        assert_true(cond);                                                                         \
    } while (0)

struct sender {
    struct gw_loopq *q;
    struct tally *t;
    int index;
    int n; /* messages to post */
};

static void *
sender_main(void *arg)
{
    struct sender *s = arg;
    for (int i = 1; i <= s->n; i++) {
        struct tmsg *x = tmsg_new(s->t, s->index, i, on_run, on_cancel, 0);
        if (gw_loopq_post(s->q, &x->m) != 0) {
            free(x); /* refused: still ours */
            atomic_fetch_add(&s->t->refused, 1);
        }
    }
    return NULL;
}

/* NSENDERS threads, each posting PER_SENDER messages to q. */
static void
start_senders(struct gw_loopq *q, struct tally *t, pthread_t *th, struct sender *s)
{
    for (int i = 0; i < NSENDERS; i++) {
        s[i] = (struct sender){.q = q, .t = t, .index = i, .n = PER_SENDER};
        assert_int_equal(pthread_create(&th[i], NULL, sender_main, &s[i]), 0);
    }
}

/* Three threads post at once: every message runs once, each sender's in its order. */
static void
test_order_across_threads(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    struct gw_loopq *q = gw_loopq_new(base);
    assert_non_null(q);
    struct tally t = {0};
    pthread_t th[NSENDERS];
    struct sender s[NSENDERS];
    start_senders(q, &t, th, s);
    RUN_UNTIL(base, t.ran == NSENDERS * PER_SENDER);
    for (int i = 0; i < NSENDERS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(t.last[i], PER_SENDER);
    }
    assert_int_equal(t.order_errors, 0);
    assert_int_equal(t.cancelled, 0);
    gw_loopq_free(q);
    event_base_free(base);
}

/* The owner's own posts run later, from the loop, in order, GW_LOOPQ_BATCH per turn. */
static void
test_owner_posts_batched(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    struct gw_loopq *q = gw_loopq_new(base);
    struct tally t = {0};
    int n = 3 * GW_LOOPQ_BATCH + 5;
    for (int i = 1; i <= n; i++) {
        struct tmsg *x = tmsg_new(&t, 0, i, on_run, on_cancel, 0);
        assert_int_equal(gw_loopq_post(q, &x->m), 0);
    }
    assert_int_equal(t.ran, 0); /* never inside a post */
    (void)event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    assert_int_equal(t.ran, GW_LOOPQ_BATCH); /* bounded work per turn */
    RUN_UNTIL(base, t.ran == n);
    assert_int_equal(t.order_errors, 0);
    gw_loopq_free(q);
    event_base_free(base);
}

/* Closed with messages pending: each is cancelled once, in order, none runs;
 * a later post is refused and stays the sender's.  ASan finds any leak. */
static void
test_close_with_pending(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    struct gw_loopq *q = gw_loopq_new(base);
    struct tally t = {0};
    for (int i = 1; i <= 10; i++) {
        struct tmsg *x = tmsg_new(&t, 0, i, on_run, on_cancel, 0);
        assert_int_equal(gw_loopq_post(q, &x->m), 0);
    }
    gw_loopq_close(q);
    assert_int_equal(t.cancelled, 10);
    assert_int_equal(t.cancel_order_errors, 0);
    struct tmsg *late = tmsg_new(&t, 0, 11, on_run, on_cancel, 0);
    assert_int_equal(gw_loopq_post(q, &late->m), ERR_CLOSED);
    free(late);
    (void)event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    assert_int_equal(t.ran, 0);
    gw_loopq_close(q); /* idempotent */
    gw_loopq_free(q);
    assert_int_equal(t.cancelled, 10);
    event_base_free(base);
}

/* A run callback closes the queue: what was taken with it is cancelled, not run. */
static void
test_close_from_callback(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    struct gw_loopq *q = gw_loopq_new(base);
    struct tally t = {0};
    t.close_on = q;
    for (int i = 1; i <= 5; i++) {
        struct tmsg *x = tmsg_new(&t, 0, i, on_run, on_cancel, 0);
        assert_int_equal(gw_loopq_post(q, &x->m), 0);
    }
    RUN_UNTIL(base, t.ran + t.cancelled == 5);
    assert_int_equal(t.ran, 1);
    assert_int_equal(t.cancelled, 4);
    gw_loopq_free(q);
    event_base_free(base);
}

/* Senders race a close: every message is run, cancelled or refused, exactly once. */
static void
test_posts_racing_close(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    struct gw_loopq *q = gw_loopq_new(base);
    struct tally t = {0};
    pthread_t th[NSENDERS];
    struct sender s[NSENDERS];
    start_senders(q, &t, th, s);
    RUN_UNTIL(base, t.ran >= 1000);
    gw_loopq_close(q);
    for (int i = 0; i < NSENDERS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
    }
    (void)event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    assert_int_equal(t.ran + t.cancelled + atomic_load(&t.refused), NSENDERS * PER_SENDER);
    assert_int_equal(t.order_errors, 0);
    gw_loopq_free(q);
    event_base_free(base);
}

/* Messages to a closed endpoint, pending or later, are cancelled; its slot's
 * next endpoint gets a new id and only its own messages. */
static void
test_endpoint_closed_and_reused(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    struct gw_loopq *q = gw_loopq_new(base);
    struct tally t = {0};
    uint64_t a = 0;
    uint64_t b = 0;
    assert_int_equal(gw_loopq_ep_open(q, &a), 0);
    assert_true(a != 0);
    struct tmsg *m1 = tmsg_new(&t, 0, 1, on_run, on_cancel, a);
    assert_int_equal(gw_loopq_post(q, &m1->m), 0);
    gw_loopq_ep_close(q, a); /* the client is freed while m1 is on its way */
    assert_int_equal(gw_loopq_ep_open(q, &b), 0);
    assert_true(b != a);
    assert_int_equal(b & 0xffffffffu, a & 0xffffffffu);         /* the same slot, reused */
    struct tmsg *m2 = tmsg_new(&t, 0, 2, on_run, on_cancel, a); /* stale id */
    struct tmsg *m3 = tmsg_new(&t, 1, 1, on_run, on_cancel, b);
    assert_int_equal(gw_loopq_post(q, &m2->m), 0);
    assert_int_equal(gw_loopq_post(q, &m3->m), 0);
    RUN_UNTIL(base, t.ran + t.cancelled == 3);
    assert_int_equal(t.cancelled, 2);
    assert_int_equal(t.ran, 1);
    assert_int_equal(t.last[1], 1);
    gw_loopq_ep_close(q, a); /* stale: ignored */
    gw_loopq_ep_close(q, 0);
    gw_loopq_ep_close(q, b);
    gw_loopq_free(q);
    event_base_free(base);
}

/*
 * A client freed while its admission is in flight, across two threads: the
 * worker (this thread) registers the client, posts an admission to the
 * control loop (another thread), and frees the client before the answer
 * arrives; the control loop's answer is cancelled on the worker, not run.  A
 * second client that stays gets its answer.
 */
struct control {
    struct event_base *base;
    struct gw_loopq *q;
};

/* The control loop's stop message. */
struct stopmsg {
    struct gw_loopmsg m; /* embedded */
    struct control *c;   /* the loop to break */
};

struct admit {
    struct gw_loopmsg m;     /* the request, on the control queue */
    struct gw_loopmsg reply; /* the answer, on the worker queue */
    struct gw_loopq *worker; /* where to answer */
    int *answered;           /* worker thread: answers run */
    int *dropped;            /* worker thread: answers cancelled */
};

static void
on_reply(struct gw_loopmsg *m)
{
    struct admit *a = (struct admit *)((char *)m - offsetof(struct admit, reply));
    (*a->answered)++;
    free(a);
}

static void
on_reply_cancel(struct gw_loopmsg *m, int why)
{
    struct admit *a = (struct admit *)((char *)m - offsetof(struct admit, reply));
    assert_int_equal(why, ERR_CLOSED);
    (*a->dropped)++;
    free(a);
}

/* control thread: answer the admission on the worker's queue */
static void
on_admit(struct gw_loopmsg *m)
{
    struct admit *a = (struct admit *)((char *)m - offsetof(struct admit, m));
    if (gw_loopq_post(a->worker, &a->reply) != 0) {
        free(a);
    }
}

static void
on_admit_cancel(struct gw_loopmsg *m, int why)
{
    (void)why;
    free((char *)m - offsetof(struct admit, m));
}

static void
on_stop(struct gw_loopmsg *m)
{
    struct stopmsg *s = (struct stopmsg *)((char *)m - offsetof(struct stopmsg, m));
    (void)event_base_loopbreak(s->c->base);
}

static void
on_stop_cancel(struct gw_loopmsg *m, int why)
{
    (void)m;
    (void)why;
}

static void *
control_main(void *arg)
{
    struct control *c = arg;
    (void)event_base_dispatch(c->base);
    return NULL;
}

static void
test_client_freed_while_admission_in_flight(void **state)
{
    (void)state;
    struct event_base *wbase = event_base_new();
    struct gw_loopq *wq = gw_loopq_new(wbase);
    struct control c = {.base = event_base_new()};
    c.q = gw_loopq_new(c.base);
    assert_non_null(c.q);
    int answered = 0;
    int dropped = 0;
    uint64_t gone = 0;
    uint64_t stays = 0;
    assert_int_equal(gw_loopq_ep_open(wq, &gone), 0);
    assert_int_equal(gw_loopq_ep_open(wq, &stays), 0);
    uint64_t ids[2] = {gone, stays};
    for (int i = 0; i < 2; i++) {
        struct admit *a = calloc(1, sizeof(*a));
        assert_non_null(a);
        a->m = (struct gw_loopmsg){.run = on_admit, .cancel = on_admit_cancel};
        a->reply =
            (struct gw_loopmsg){.run = on_reply, .cancel = on_reply_cancel, .target = ids[i]};
        a->worker = wq;
        a->answered = &answered;
        a->dropped = &dropped;
        assert_int_equal(gw_loopq_post(c.q, &a->m), 0);
    }
    /* the client hangs up while both admissions wait on the control loop */
    gw_loopq_ep_close(wq, gone);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, control_main, &c), 0);
    RUN_UNTIL(wbase, answered + dropped == 2);
    assert_int_equal(answered, 1);
    assert_int_equal(dropped, 1);
    struct stopmsg stop = {{.run = on_stop, .cancel = on_stop_cancel}, &c};
    assert_int_equal(gw_loopq_post(c.q, &stop.m), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    gw_loopq_ep_close(wq, stays);
    gw_loopq_free(c.q);
    event_base_free(c.base);
    gw_loopq_free(wq);
    event_base_free(wbase);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_across_threads),
        cmocka_unit_test(test_owner_posts_batched),
        cmocka_unit_test(test_close_with_pending),
        cmocka_unit_test(test_close_from_callback),
        cmocka_unit_test(test_posts_racing_close),
        cmocka_unit_test(test_endpoint_closed_and_reused),
        cmocka_unit_test(test_client_freed_while_admission_in_flight),
    };
    return cmocka_run_group_tests_name("net_loopmsg", tests, NULL, NULL);
}
