/* Unit tests for gateway/fence/fence.c: admission, G4, the epoch barrier, on a real
 * LMDB store in a temporary directory and a real event loop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "common/clock.h"
#include "common/err.h"
#include "gateway/fence/fence.h"
#include "store/store.h"
#include "tests/unit/testlib.h"

struct env {
    char *dir;
    struct event_base *base;
    struct store *st;
    struct event *ev;
    struct gw_fence *f;
};

/* One write's view of the fence. */
struct w {
    int verdicts;     /* how many verdicts arrived */
    int err;          /* the verdict */
    uint64_t current; /* its current token */
    int cuts;         /* how many cuts */
    uint64_t cut_current;
    bool at_once; /* admitted by gw_fence_admit itself (GW_FENCE_ADMITTED) */
    struct gw_fence_ticket *t;
};

static void
on_completion(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)store_dispatch_completions(arg);
}

static void
env_open(struct env *e)
{
    struct store_opts o;
    char errbuf[256];
    store_opts_init(&o);
    o.data_dir = e->dir;
    assert_int_equal(store_open(&o, &e->st, errbuf, sizeof(errbuf)), 0);
    e->ev =
        event_new(e->base, store_completion_fd(e->st), EV_READ | EV_PERSIST, on_completion, e->st);
    assert_non_null(e->ev);
    assert_int_equal(event_add(e->ev, NULL), 0);
    e->f = gw_fence_new(e->base, e->st);
    assert_non_null(e->f);
}

static void
env_close(struct env *e)
{
    gw_fence_free(e->f);
    event_free(e->ev);
    store_close(e->st);
}

static int
setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    e->dir = tl_dir_new("fence");
    e->base = event_base_new();
    env_open(e);
    *state = e;
    return 0;
}

static int
teardown(void **state)
{
    struct env *e = *state;
    env_close(e);
    event_base_free(e->base);
    tl_dir_free(e->dir);
    e->dir = NULL;
    free(e);
    return 0;
}

static void
on_verdict(void *arg, int err, uint64_t current)
{
    struct w *w = arg;
    w->verdicts++;
    w->err = err;
    w->current = current;
    if (err != 0) {
        w->t = NULL; /* freed by the fence */
    }
}

static void
on_cut(void *arg, int err, uint64_t current)
{
    struct w *w = arg;
    (void)err;
    w->cuts++;
    w->cut_current = current;
    w->t = NULL;
}

static void
admit_gen(struct env *e, const char *lock, uint64_t token, uint32_t gen, struct w *w)
{
    struct gw_fence_claim c = {.fenced = true, .token = token, .gen = gen};
    (void)snprintf(c.lock, sizeof(c.lock), "%s", lock);
    memset(w, 0, sizeof(*w));
    int rc = gw_fence_admit(e->f, &c, "req", "tester", on_verdict, on_cut, w, &w->t);
    assert_true(rc == 0 || rc == GW_FENCE_ADMITTED);
    assert_int_equal(w->verdicts, 0); /* never before the call returns */
    if (rc == GW_FENCE_ADMITTED) {
        w->at_once = true;
        on_verdict(w, 0, token); /* what the caller does: the verdict, as the loop would give it */
    }
}

static void
admit(struct env *e, const char *lock, uint64_t token, struct w *w)
{
    admit_gen(e, lock, token, 0, w);
}

/* Runs the loop until cond holds (bounded). */
#define RUN_UNTIL(e, cond) TL_RUN_UNTIL((e)->base, NULL, cond, 1000)

static void
grant(struct env *e, const char *lock, uint64_t epoch)
{
    assert_int_equal(store_elect_advance_sync(e->st, lock, epoch, NULL), 0);
}

static void
test_not_granted_and_stale(void **state)
{
    struct env *e = *state;
    struct w a, b, c;
    admit(e, "orders", 7, &a); /* nothing granted yet: G4 refuses */
    RUN_UNTIL(e, a.verdicts == 1);
    assert_int_equal(a.err, ERR_DENIED);

    grant(e, "orders", 3);
    admit(e, "orders", 3, &b);
    RUN_UNTIL(e, b.verdicts == 1);
    assert_int_equal(b.err, 0);
    assert_int_equal(b.current, 3);
    uint64_t cur = 0;
    assert_int_equal(gw_fence_current(e->f, "orders", &cur), 0);
    assert_int_equal(cur, 3);
    gw_fence_ticket_release(b.t);

    admit(e, "orders", 2, &c); /* lower than the highest: stale */
    RUN_UNTIL(e, c.verdicts == 1);
    assert_int_equal(c.err, ERR_FENCED);
    assert_int_equal(c.current, 3);

    admit(e, "orders", 4, &c); /* above the latest granted epoch: refused, fence unmoved */
    RUN_UNTIL(e, c.verdicts == 1);
    assert_int_equal(c.err, ERR_DENIED);
    assert_int_equal(gw_fence_current(e->f, "orders", &cur), 0);
    assert_int_equal(cur, 3);
}

/*
 * A lock with nothing in flight stays in memory, up to GW_FENCE_IDLE_MAX of
 * them, the one unused longest forgotten first; a forgotten lock's highest
 * comes back from the store.
 */
static void
test_idle_locks_kept_up_to_a_bound(void **state)
{
    struct env *e = *state;
    struct w a, b;
    grant(e, "first", 5);
    admit(e, "first", 5, &a);
    RUN_UNTIL(e, a.verdicts == 1);
    assert_int_equal(a.err, 0);
    assert_int_equal(gw_fence_idle_locks(e->f), 0); /* in flight */
    gw_fence_ticket_release(a.t);
    assert_int_equal(gw_fence_idle_locks(e->f), 1);
    admit(e, "first", 5, &a); /* kept: the verdict at once, as the loop's would be */
    assert_true(a.at_once);
    assert_int_equal(gw_fence_idle_locks(e->f), 0);
    gw_fence_ticket_release(a.t);

    char name[32];
    for (int i = 0; i < GW_FENCE_IDLE_MAX + 8; i++) {
        (void)snprintf(name, sizeof(name), "other-%d", i);
        admit(e, name, 1, &b); /* never granted: refused (G4), the lock then idle */
        RUN_UNTIL(e, b.verdicts == 1);
        assert_int_equal(b.err, ERR_DENIED);
    }
    assert_int_equal(gw_fence_idle_locks(e->f), GW_FENCE_IDLE_MAX);
    admit(e, "first", 4, &a); /* forgotten first: read again, and still refuses what it did */
    assert_false(a.at_once);
    RUN_UNTIL(e, a.verdicts == 1);
    assert_int_equal(a.err, ERR_FENCED);
    assert_int_equal(a.current, 5);
    admit(e, "first", 5, &a);
    RUN_UNTIL(e, a.verdicts == 1);
    assert_int_equal(a.err, 0);
    gw_fence_ticket_release(a.t);
}

static int lookups;

static void
lookup_done_later(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    void **pair = arg;
    gw_fence_granted_done_fn *done = (gw_fence_granted_done_fn *)(uintptr_t)pair[0];
    done(pair[1], 0, (uintptr_t)pair[2] != 0);
    free(pair);
}

/* A G4 lookup hook that grants only epoch 10. */
static int
lookup(void *arg, const char *lock, uint64_t epoch, gw_fence_granted_done_fn *done, void *done_arg)
{
    struct env *e = arg;
    (void)lock;
    lookups++;
    void **pair = calloc(3, sizeof(void *));
    pair[0] = (void *)(uintptr_t)done;
    pair[1] = done_arg;
    pair[2] = (void *)(uintptr_t)(epoch == 10);
    static const struct timeval now = {0, 0};
    return event_base_once(e->base, -1, EV_TIMEOUT, lookup_done_later, pair, &now);
}

static void
test_lookup_hook(void **state)
{
    struct env *e = *state;
    struct w a, b;
    gw_fence_set_lookup(e->f, lookup, e);
    lookups = 0;
    admit(e, "l", 9, &a);
    RUN_UNTIL(e, a.verdicts == 1);
    assert_int_equal(a.err, ERR_DENIED);
    admit(e, "l", 10, &b);
    RUN_UNTIL(e, b.verdicts == 1);
    assert_int_equal(b.err, 0);
    assert_int_equal(lookups, 2);
    gw_fence_ticket_release(b.t);
}

static void
test_barrier_cuts_unsent_older_writes(void **state)
{
    struct env *e = *state;
    struct w old_unsent, old_sent, newer;
    grant(e, "b", 2);
    admit(e, "b", 1, &old_unsent);
    admit(e, "b", 1, &old_sent);
    RUN_UNTIL(e, old_unsent.verdicts == 1 && old_sent.verdicts == 1);
    assert_int_equal(old_unsent.err, 0);
    assert_int_equal(old_sent.err, 0);
    gw_fence_ticket_sent(old_sent.t);

    admit(e, "b", 2, &newer);
    /* the unsent epoch-1 write is cut as soon as epoch 2 is durable */
    RUN_UNTIL(e, old_unsent.cuts == 1);
    assert_int_equal(old_unsent.cut_current, 2);
    /* the completely sent one is awaited: epoch 2 is not admitted yet */
    for (int i = 0; i < 50; i++) {
        (void)event_base_loop(e->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        usleep(1000);
    }
    assert_int_equal(newer.verdicts, 0);
    assert_int_equal(old_sent.cuts, 0);
    gw_fence_ticket_release(old_sent.t); /* it ended at S3 */
    RUN_UNTIL(e, newer.verdicts == 1);
    assert_int_equal(newer.err, 0);
    gw_fence_ticket_release(newer.t);
}

static void
test_release_while_waiting(void **state)
{
    struct env *e = *state;
    struct w a;
    grant(e, "c", 1);
    admit(e, "c", 1, &a);
    gw_fence_ticket_release(a.t); /* the client left before the verdict */
    for (int i = 0; i < 50; i++) {
        (void)event_base_loop(e->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        usleep(1000);
    }
    assert_int_equal(a.verdicts, 0);
    uint64_t cur = 0;
    assert_int_equal(gw_fence_current(e->f, "c", &cur), 0);
    assert_true(cur <= 1);
}

static void
test_highest_survives_reopen(void **state)
{
    struct env *e = *state;
    struct w a, b;
    grant(e, "d", 5);
    admit(e, "d", 5, &a);
    RUN_UNTIL(e, a.verdicts == 1);
    assert_int_equal(a.err, 0);
    gw_fence_ticket_release(a.t);
    env_close(e);
    env_open(e);
    admit(e, "d", 4, &b);
    RUN_UNTIL(e, b.verdicts == 1);
    assert_int_equal(b.err, ERR_FENCED);
    assert_int_equal(b.current, 5);
}

static bool
all_decided(const struct w *ws, int n)
{
    for (int i = 0; i < n; i++) {
        if (ws[i].verdicts == 0) {
            return false;
        }
    }
    return true;
}

static void
test_many_concurrent_advances_leave_the_largest(void **state)
{
    struct env *e = *state;
    struct w ws[16];
    grant(e, "m", 16);
    for (int i = 0; i < 16; i++) {
        admit(e, "m", (uint64_t)(i % 2 == 0 ? 16 - i : i + 1), &ws[i]);
    }
    RUN_UNTIL(e, all_decided(ws, 16));
    uint64_t cur = 0;
    assert_int_equal(gw_fence_current(e->f, "m", &cur), 0);
    assert_int_equal(cur, 16);
    for (int i = 0; i < 16; i++) {
        if (ws[i].err == 0 && ws[i].cuts == 0) {
            assert_int_equal(ws[i].current, 16); /* only the highest epoch is ever admitted last */
            gw_fence_ticket_release(ws[i].t);
        }
    }
}

/* Turns the loop for about ms milliseconds. */
static void
spin(struct env *e, int ms)
{
    for (int i = 0; i < ms; i++) {
        (void)event_base_loop(e->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        usleep(1000);
    }
}

static void
test_reload_hold_waits_for_older_writes(void **state)
{
    struct env *e = *state;
    struct w newer, later, older, other, stale;
    grant(e, "r", 2);
    grant(e, "o", 1);
    const char *locks[] = {"r"};
    assert_int_equal(gw_fence_reload_hold(e->f, 1, locks, 1), 0);
    assert_true(gw_fence_reload_holding(e->f));
    /* claimed under the reload (and a later one): held, before any advance */
    admit_gen(e, "r", 2, 1, &newer);
    admit_gen(e, "r", 2, 2, &later);
    /* claimed under the older configuration, after them: admitted, never queued behind
     * the held ones (the hold waits for exactly these) */
    admit_gen(e, "r", 2, 0, &older);
    /* another lock; and a stale token, refused at once, held or not */
    admit_gen(e, "o", 1, 1, &other);
    admit_gen(e, "r", 1, 1, &stale);
    RUN_UNTIL(e, older.verdicts == 1 && other.verdicts == 1 && stale.verdicts == 1);
    assert_int_equal(older.err, 0);
    assert_int_equal(other.err, 0);
    assert_int_equal(stale.err, ERR_FENCED);
    spin(e, 50);
    assert_int_equal(newer.verdicts, 0);
    assert_int_equal(later.verdicts, 0);
    gw_fence_ticket_release(older.t); /* the older write ended */
    spin(e, 20);
    assert_int_equal(newer.verdicts, 0); /* its end is the wiring's to report */
    gw_fence_reload_ended(e->f, 2);      /* another reload's: not this one */
    spin(e, 20);
    assert_int_equal(newer.verdicts, 0);
    gw_fence_reload_ended(e->f, 1);
    RUN_UNTIL(e, newer.verdicts == 1 && later.verdicts == 1);
    assert_int_equal(newer.err, 0);
    assert_int_equal(later.err, 0);
    assert_false(gw_fence_reload_holding(e->f));
    gw_fence_ticket_release(newer.t);
    gw_fence_ticket_release(later.t);
    gw_fence_ticket_release(other.t);
    /* with the hold lifted, a write is admitted at once again */
    struct w again;
    admit_gen(e, "r", 2, 1, &again);
    RUN_UNTIL(e, again.verdicts == 1);
    assert_int_equal(again.err, 0);
    gw_fence_ticket_release(again.t);
    const char *many[] = {"x"};
    for (int i = 0; i < GW_FENCE_HOLDS_MAX; i++) {
        assert_int_equal(gw_fence_reload_hold(e->f, 10 + (uint32_t)i, many, 1), 0);
    }
    assert_int_equal(gw_fence_reload_hold(e->f, 99, many, 1), ERR_AGAIN);
    assert_int_equal(gw_fence_reload_hold(e->f, 99, many, 0), 0); /* nothing widened */
}

/* Windows that are always open (peek), so the margins alone are tested. */
static int
open_peek(void *arg, const char *lock, uint64_t epoch, uint64_t now, struct elect_window *w)
{
    (void)arg;
    (void)lock;
    (void)epoch;
    *w = (struct elect_window){.state = ELECT_WIN_OPEN, .until = now + 600000, .latest = epoch};
    return 0;
}

static int
no_read(void *arg, const char *lock, uint64_t epoch, elect_window_fn *cb, void *cb_arg)
{
    (void)arg;
    (void)lock;
    (void)epoch;
    (void)cb;
    (void)cb_arg;
    return ERR_IO; /* never needed: peek always answers */
}

#define HOLD_COMMIT_MS   300
#define HOLD_COMPLETE_MS 500

/* A reload's hold lifts the larger margin after the wiring reports the older writes
 * ended: what the store may still commit of a request cut after its last byte.  A
 * judgement before then keeps the write waiting (the clock pinned). */
static void
test_reload_hold_lifts_the_larger_margin_after(void **state)
{
    struct env *e = *state;
    struct gw_fence_windows wn = {.peek = open_peek,
                                  .read = no_read,
                                  .commit_margin_ms = HOLD_COMMIT_MS,
                                  .complete_margin_ms = HOLD_COMPLETE_MS};
    gw_fence_set_windows(e->f, &wn);
    uint64_t t0 = clock_mono_ms() + 10000; /* past the start gate */
    clock_pin(t0, 1700000000000);
    grant(e, "h", 2);
    const char *locks[] = {"h"};
    assert_int_equal(gw_fence_reload_hold(e->f, 1, locks, 1), 0);
    struct w held, older;
    admit_gen(e, "h", 2, 1, &held);
    spin(e, 50);
    assert_int_equal(held.verdicts, 0);
    gw_fence_reload_ended(e->f, 1);
    clock_pin(t0 + HOLD_COMPLETE_MS - 1, 1700000000000);
    admit(e, "h", 2, &older); /* an older configuration's write: judged, and h with it */
    RUN_UNTIL(e, older.verdicts == 1);
    assert_int_equal(older.err, 0);
    assert_int_equal(held.verdicts, 0);
    assert_true(gw_fence_reload_holding(e->f));
    gw_fence_ticket_release(older.t);
    clock_pin(t0 + HOLD_COMPLETE_MS, 1700000000000);
    RUN_UNTIL(e, held.verdicts == 1); /* by the timer reload_ended armed */
    assert_int_equal(held.err, 0);
    assert_false(gw_fence_reload_holding(e->f));
    gw_fence_ticket_release(held.t);
    clock_unpin();
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_not_granted_and_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_locks_kept_up_to_a_bound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lookup_hook, setup, teardown),
        cmocka_unit_test_setup_teardown(test_barrier_cuts_unsent_older_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_while_waiting, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reload_hold_waits_for_older_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reload_hold_lifts_the_larger_margin_after, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_highest_survives_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_concurrent_advances_leave_the_largest, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("fence", tests, NULL, NULL);
}
