/*
 * Unit tests for the write windows of gateway/fence/fence.c (DESIGN "Write
 * windows", G1-G3): admission, one read per lock at a time, the start gate,
 * the last byte, the fence learning epochs, and aborts of superseded uploads.
 *
 * A fake election answers the window hooks: peek from memory the test sets,
 * read from the loop (event_base_once), or only when the test releases it.
 * The store is real LMDB in a temporary directory.  The fence's clock is
 * pinned (clock_pin), so windows and margins are exact; libevent's timers
 * (the fence's retries) run on real time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "common/clock.h"
#include "common/err.h"
#include "election/elect.h"
#include "gateway/fence/fence.h"
#include "gateway/proxy/upload.h"
#include "store/store.h"
#include "tests/unit/testlib.h"

#define BASE_MS     1000000 /* the pinned monotonic clock when the fence is made */
#define PAST_GATE   10000   /* ms after BASE_MS: well past any start gate */
#define COMMIT_MS   300     /* fencing.commit_margin_ms */
#define COMPLETE_MS 500     /* fencing.complete_margin_ms */
#define READS_MAX   64      /* reads the fake keeps track of */

static int64_t wall0; /* the pinned wall clock (real, taken once) */

/* ---- the gw_upload double ---- */

/* What the fence asked of the upload bookkeeping (its on-advance hook). */
static struct {
    int calls;
    void *arg;
    char lock[GW_FENCE_LOCK_MAX + 1];
    uint64_t highest;
} aborts;

/* gw_fence_advance_fn, installed by gw_fence_set_advance_hook */
static void
on_advance(void *arg, const char *lock, uint64_t highest)
{
    aborts.calls++;
    aborts.arg = arg;
    (void)snprintf(aborts.lock, sizeof(aborts.lock), "%s", lock);
    aborts.highest = highest;
}

/* ---- the fake election ---- */

struct fake;

struct read_call {
    struct fake *fk;
    elect_window_fn *cb;
    void *cb_arg;
    bool waiting; /* held: not yet scheduled */
};

struct fake {
    struct event_base *base;
    int peek_rc;                /* 0: answer peek_w; else this (ERR_NOTFOUND: read) */
    struct elect_window peek_w; /* OPEN with until <= now is answered ERR_NOTFOUND, as
                                   elect_window_peek does */
    bool keep;                  /* a read's answer becomes what peek says (the election
                                   keeps what it learns) */
    int start_rc;               /* non-zero: read refuses to start with this */
    int read_err;               /* a read's answer: err */
    struct elect_window read_w; /* and window, taken when the answer is delivered */
    bool hold;                  /* reads wait for fake_release() */
    int peeks, reads;           /* calls (reads: every call, started or not) */
    int inflight, max_inflight; /* reads started and not yet answered */
    uint64_t read_epoch;        /* the last epoch read */
    struct read_call calls[READS_MAX];
};

static int
fake_peek(void *arg, const char *lock, uint64_t epoch, uint64_t now, struct elect_window *w)
{
    struct fake *fk = arg;
    (void)lock;
    (void)epoch;
    fk->peeks++;
    if (fk->peek_rc != 0) {
        return fk->peek_rc;
    }
    if (fk->peek_w.state == ELECT_WIN_OPEN && fk->peek_w.until <= now) {
        return ERR_NOTFOUND;
    }
    *w = fk->peek_w;
    return 0;
}

/* event_base_once from fake_read / fake_release: the read answers. */
static void
on_read_answer(evutil_socket_t fd, short what, void *arg)
{
    struct read_call *c = arg;
    struct fake *fk = c->fk;
    (void)fd;
    (void)what;
    fk->inflight--;
    struct elect_window w = fk->read_w;
    if (fk->keep && fk->read_err == 0) {
        fk->peek_rc = 0;
        fk->peek_w = w;
    }
    c->cb(c->cb_arg, fk->read_err, &w);
}

static void
schedule(struct read_call *c)
{
    static const struct timeval now = {0, 0};
    c->waiting = false;
    assert_int_equal(event_base_once(c->fk->base, -1, EV_TIMEOUT, on_read_answer, c, &now), 0);
}

static int
fake_read(void *arg, const char *lock, uint64_t epoch, elect_window_fn *cb, void *cb_arg)
{
    struct fake *fk = arg;
    (void)lock;
    if (fk->reads >= READS_MAX) {
        return ERR_NOMEM;
    }
    struct read_call *c = &fk->calls[fk->reads++];
    fk->read_epoch = epoch;
    if (fk->start_rc != 0) {
        return fk->start_rc;
    }
    c->fk = fk;
    c->cb = cb;
    c->cb_arg = cb_arg;
    fk->inflight++;
    if (fk->inflight > fk->max_inflight) {
        fk->max_inflight = fk->inflight;
    }
    if (fk->hold) {
        c->waiting = true;
    } else {
        schedule(c);
    }
    return 0;
}

/* Lets every held read answer (from the loop). */
static void
fake_release(struct fake *fk)
{
    fk->hold = false;
    for (int i = 0; i < fk->reads; i++) {
        if (fk->calls[i].waiting) {
            schedule(&fk->calls[i]);
        }
    }
}

static struct elect_window
win(enum elect_window_state state, uint64_t until_rel, uint64_t latest)
{
    struct elect_window w = {state, until_rel == 0 ? 0 : BASE_MS + until_rel, latest};
    return w;
}

/* ---- environment ---- */

struct env {
    char *dir;
    struct event_base *base;
    struct store *st;
    struct event *ev;
    struct gw_fence *f;
    struct fake fk;
};

/* One write's view of the fence. */
struct w {
    int verdicts;     /* how many verdicts arrived */
    int err;          /* the verdict */
    uint64_t current; /* its current token */
    int cuts;         /* how many cuts */
    int cut_err;
    uint64_t cut_current;
    int resumes;        /* resume callbacks */
    int resumes_inside; /* ... that ran inside gw_fence_ticket_may_finish */
    bool at_once;       /* admitted by gw_fence_admit itself (GW_FENCE_ADMITTED) */
    struct gw_fence_ticket *t;
};

static bool inside_may_finish;

static void
on_completion(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)store_dispatch_completions(arg);
}

/* Pins the fence's clock at BASE_MS + rel. */
static void
at(uint64_t rel)
{
    clock_pin(BASE_MS + rel, wall0);
}

static void
use_windows(struct env *e, uint32_t commit, uint32_t complete)
{
    struct gw_fence_windows wn = {
        .peek = fake_peek,
        .read = fake_read,
        .arg = &e->fk,
        .commit_margin_ms = commit,
        .complete_margin_ms = complete,
    };
    gw_fence_set_windows(e->f, &wn);
}

/* The fake's default: nothing in memory, a read answers OPEN for a minute. */
static void
fake_reset(struct env *e)
{
    memset(&e->fk, 0, sizeof(e->fk));
    e->fk.base = e->base;
    e->fk.peek_rc = ERR_NOTFOUND;
    e->fk.keep = true;
    e->fk.read_w = win(ELECT_WIN_OPEN, PAST_GATE + 60000, 0);
}

static int
setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    e->dir = tl_dir_new("fence-window");
    e->base = event_base_new();
    assert_non_null(e->base);
    struct timespec ts;
    (void)clock_gettime(CLOCK_REALTIME, &ts);
    wall0 = (int64_t)ts.tv_sec * 1000;
    at(0); /* the fence is made at BASE_MS */

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
    fake_reset(e);
    use_windows(e, COMMIT_MS, COMPLETE_MS);
    memset(&aborts, 0, sizeof(aborts));
    *state = e;
    return 0;
}

static int
teardown(void **state)
{
    struct env *e = *state;
    /* Let queued fence advances (gw_fence_learn's) call back first: store_close
     * runs what is still queued, and the fence must outlive those callbacks. */
    for (int i = 0; i < 50; i++) {
        (void)event_base_loop(e->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        usleep(1000);
    }
    gw_fence_free(e->f);
    event_free(e->ev);
    store_close(e->st);
    event_base_free(e->base);
    clock_unpin();
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
    w->cuts++;
    w->cut_err = err;
    w->cut_current = current;
    w->t = NULL;
}

static void
on_resume(void *arg)
{
    struct w *w = arg;
    w->resumes++;
    if (inside_may_finish) {
        w->resumes_inside++;
    }
}

static void
admit_claim(struct env *e, const char *lock, uint64_t token, bool complete, struct w *w)
{
    struct gw_fence_claim c = {.fenced = true, .token = token, .complete = complete};
    (void)snprintf(c.lock, sizeof(c.lock), "%s", lock);
    memset(w, 0, sizeof(*w));
    int rc = gw_fence_admit(e->f, &c, "req", "tester", on_verdict, on_cut, w, &w->t);
    assert_true(rc == 0 || rc == GW_FENCE_ADMITTED);
    assert_int_equal(w->verdicts, 0); /* never before the call returns */
    if (rc == GW_FENCE_ADMITTED) {
        w->at_once = true;
        on_verdict(w, 0, token); /* what the caller does: the verdict, as the loop would give it */
    }
    gw_fence_ticket_rebind(w->t, on_cut, on_resume, w);
}

static void
admit(struct env *e, const char *lock, uint64_t token, struct w *w)
{
    admit_claim(e, lock, token, false, w);
}

static bool
may_finish(struct w *w)
{
    inside_may_finish = true;
    bool ok = gw_fence_ticket_may_finish(w->t);
    inside_may_finish = false;
    return ok;
}

static void
release(struct w *w)
{
    gw_fence_ticket_release(w->t);
    w->t = NULL;
}

/* Runs the loop until cond holds (bounded, about two seconds). */
#define RUN_UNTIL(e, cond) TL_RUN_UNTIL((e)->base, NULL, cond, 1000)

/* Runs the loop for about ms of real time. */
static void
spin(struct env *e, int ms)
{
    for (int i = 0; i < ms; i++) {
        (void)event_base_loop(e->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        usleep(1000);
    }
}

static uint64_t
highest(struct env *e, const char *lock)
{
    uint64_t cur = 0;
    assert_int_equal(gw_fence_current(e->f, lock, &cur), 0);
    return cur;
}

static uint64_t
durable(struct env *e, const char *lock)
{
    struct store_fence sf;
    int rc = store_fence_get(e->st, lock, &sf, NULL);
    if (rc == ERR_NOTFOUND) {
        return 0;
    }
    assert_int_equal(rc, 0);
    return sf.token;
}

/* Admits one write of token on lock through an open window, and leaves the
 * fake as it was. */
static void
admitted(struct env *e, const char *lock, uint64_t token, struct w *w)
{
    struct fake saved = e->fk;
    e->fk.peek_rc = 0;
    e->fk.peek_w = win(ELECT_WIN_OPEN, PAST_GATE + 60000, token);
    admit(e, lock, token, w);
    RUN_UNTIL(e, w->verdicts == 1);
    assert_int_equal(w->err, 0);
    int peeks = e->fk.peeks;
    e->fk = saved;
    e->fk.peeks = peeks;
}

/* ---- 1. admission ---- */

/* OPEN with until >= now + margin admits (advancing the highest durably); a
 * window too short for the margin admits nothing until a re-read extends it. */
static void
test_open_window_admits_only_with_the_margin(void **state)
{
    struct env *e = *state;
    struct w a, b, c;
    at(PAST_GATE);
    e->fk.read_w = win(ELECT_WIN_OPEN, PAST_GATE + COMMIT_MS + 1, 5);
    admit(e, "l", 5, &a);
    RUN_UNTIL(e, a.verdicts == 1);
    assert_int_equal(a.err, 0);
    assert_int_equal(a.current, 5);
    assert_int_equal(e->fk.reads, 1);
    assert_int_equal(e->fk.read_epoch, 5);
    RUN_UNTIL(e, durable(e, "l") == 5); /* G2: advanced in the store */
    assert_int_equal(highest(e, "l"), 5);

    admit(e, "l", 5, &b); /* the window the read left in memory serves */
    RUN_UNTIL(e, b.verdicts == 1);
    assert_int_equal(b.err, 0);
    assert_int_equal(e->fk.reads, 1);

    at(PAST_GATE + 2); /* until is now 1 ms short of now + margin */
    admit(e, "l", 5, &c);
    spin(e, 100);
    assert_int_equal(c.verdicts, 0);
    assert_true(e->fk.reads >= 2); /* it read again */
    e->fk.read_w = win(ELECT_WIN_OPEN, PAST_GATE + 5000, 5);
    RUN_UNTIL(e, c.verdicts == 1);
    assert_int_equal(c.err, 0);
    release(&a);
    release(&b);
    release(&c);
}

/*
 * A write the loop's next judgement would admit first is admitted by
 * gw_fence_admit itself, with nothing read; any other is left to the loop:
 * a window short of the margin, the start gate, a token above the highest
 * (durable first, G2), a write already waiting before it (first come, first
 * judged), an older write in flight (the barrier, G3), a refusal.
 */
static void
test_admitted_at_once_only_as_the_loop_would(void **state)
{
    struct env *e = *state;
    struct w a, b, c, d, g, s, x;
    at(PAST_GATE);
    admitted(e, "n", 5, &a); /* the advance to 5 goes by the loop */
    assert_false(a.at_once);
    RUN_UNTIL(e, durable(e, "n") == 5);
    e->fk.peek_rc = 0;
    e->fk.peek_w = win(ELECT_WIN_OPEN, PAST_GATE + 60000, 5);
    int reads = e->fk.reads;
    admit(e, "n", 5, &b);
    assert_true(b.at_once);
    assert_int_equal(b.verdicts, 1);
    assert_int_equal(b.err, 0);
    assert_int_equal(e->fk.reads, reads);
    assert_true(may_finish(&b)); /* admitted as the loop admits: its last byte may go */

    e->fk.peek_w = win(ELECT_WIN_OPEN, PAST_GATE + COMMIT_MS - 1, 5); /* short of the margin */
    e->fk.hold = true;
    admit(e, "n", 5, &c);
    assert_false(c.at_once);
    spin(e, 20);
    assert_int_equal(c.verdicts, 0); /* it waits for a read */
    e->fk.peek_w = win(ELECT_WIN_OPEN, PAST_GATE + 60000, 5);
    admit(e, "n", 5, &d); /* the window would cover it, but c came first */
    assert_false(d.at_once);
    e->fk.read_w = e->fk.peek_w;
    fake_release(&e->fk);
    RUN_UNTIL(e, c.verdicts == 1 && d.verdicts == 1);
    assert_int_equal(c.err, 0);
    assert_int_equal(d.err, 0);

    gw_fence_ticket_sent(a.t);
    gw_fence_ticket_sent(b.t);
    gw_fence_learn(e->f, "n", 6);
    RUN_UNTIL(e, durable(e, "n") == 6 && c.cuts + d.cuts == 2); /* unsent epoch-5 writes cut */
    e->fk.peek_w = win(ELECT_WIN_OPEN, PAST_GATE + 60000, 6);
    admit(e, "n", 5, &s); /* below the highest: refused by the loop */
    assert_false(s.at_once);
    RUN_UNTIL(e, s.verdicts == 1);
    assert_int_equal(s.err, ERR_FENCED);
    admit(e, "n", 6, &g); /* the sent epoch-5 writes a and b are awaited: the barrier */
    assert_false(g.at_once);
    spin(e, 20);
    assert_int_equal(g.verdicts, 0);
    release(&a);
    release(&b);
    RUN_UNTIL(e, g.verdicts == 1);
    assert_int_equal(g.err, 0);

    admit(e, "n", 7, &x); /* above the highest: the advance is durable first (G2) */
    assert_false(x.at_once);
    RUN_UNTIL(e, x.verdicts == 1 && g.cuts == 1);
    assert_int_equal(x.err, 0);
    assert_int_equal(durable(e, "n"), 7);
    release(&x);
}

/* The start gate: nothing is admitted at once while it is closed. */
static void
test_not_at_once_before_the_gate(void **state)
{
    struct env *e = *state;
    struct w a;
    /* an earlier life's highest */
    assert_int_equal(store_fence_advance_sync(e->st, "g", 3, NULL, NULL, NULL), 0);
    at(COMPLETE_MS - 1);
    e->fk.peek_rc = 0;
    e->fk.peek_w = win(ELECT_WIN_OPEN, PAST_GATE + 60000, 3);
    admit(e, "g", 3, &a); /* the highest, a window: only the gate stands */
    assert_false(a.at_once);
    spin(e, 20);
    assert_int_equal(a.verdicts, 0);
    at(PAST_GATE);
    RUN_UNTIL(e, a.verdicts == 1);
    assert_int_equal(a.err, 0);
    release(&a);
}

/* A live lease whose window is too short waits (re-reading) and ends with
 * FencingLeaseExpired when the read says the lease ended. */
static void
test_short_window_waits_until_it_ends(void **state)
{
    struct env *e = *state;
    struct w a;
    at(PAST_GATE);
    e->fk.read_w = win(ELECT_WIN_OPEN, PAST_GATE + 100, 4);
    admit(e, "s", 4, &a);
    spin(e, 700);
    assert_int_equal(a.verdicts, 0);
    assert_true(e->fk.reads >= 2); /* looked again (FENCE_RETRY_MS) */
    assert_int_equal(e->fk.max_inflight, 1);
    e->fk.read_w = win(ELECT_WIN_ENDED, 0, 4);
    e->fk.keep = false;
    e->fk.peek_rc = ERR_NOTFOUND;
    RUN_UNTIL(e, a.verdicts == 1);
    assert_int_equal(a.err, ERR_EXPIRED);
    assert_int_equal(highest(e, "s"), 0); /* nothing advanced */
}

struct refusal {
    const char *lock;
    int start_rc;               /* the read refuses to start */
    int read_err;               /* the read answers an error */
    struct elect_window read_w; /* else this */
    int want;                   /* the verdict */
};

/* Every final answer of a read: ended, never granted, foreign, errors. */
static void
test_read_answers_refuse(void **state)
{
    struct env *e = *state;
    const struct refusal rows[] = {
        {"ended", 0, 0, {ELECT_WIN_ENDED, 0, 3}, ERR_EXPIRED},
        {"notgranted", 0, 0, {ELECT_WIN_NOT_GRANTED, 0, 2}, ERR_DENIED},
        {"foreign", 0, 0, {ELECT_WIN_FOREIGN, 0, 3}, ERR_CONFLICT},
        {"upstream", 0, ERR_UPSTREAM, {ELECT_WIN_ENDED, 0, 0}, ERR_IO},
        {"timeout", 0, ERR_TIMEOUT, {ELECT_WIN_ENDED, 0, 0}, ERR_IO},
        /* elect.h: ERR_INVAL from a read (a malformed epoch file) is unknown, 503 */
        {"malformed", 0, ERR_INVAL, {ELECT_WIN_ENDED, 0, 0}, ERR_IO},
        {"nostart", ERR_NOMEM, 0, {ELECT_WIN_OPEN, 0, 0}, ERR_IO},
    };
    at(PAST_GATE);
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct refusal *r = &rows[i];
        struct w a;
        fake_reset(e);
        e->fk.start_rc = r->start_rc;
        e->fk.read_err = r->read_err;
        e->fk.read_w = r->read_w;
        admit(e, r->lock, 3, &a);
        RUN_UNTIL(e, a.verdicts == 1);
        assert_int_equal(a.err, r->want);
        assert_int_equal(e->fk.reads, 1);
        assert_int_equal(a.current, r->read_w.latest);
        assert_int_equal(highest(e, r->lock), 0);
        assert_int_equal(durable(e, r->lock), 0);
    }
}

/* A newer epoch, from memory or from a read: StaleFencingToken with the
 * newer epoch as current, and the fence advances to it durably. */
static void
test_superseded_advances_the_fence(void **state)
{
    struct env *e = *state;
    struct w a, b;
    at(PAST_GATE);
    e->fk.peek_rc = 0; /* the election already knows epoch 9 */
    e->fk.peek_w = win(ELECT_WIN_SUPERSEDED, 0, 9);
    admit(e, "p", 4, &a);
    RUN_UNTIL(e, a.verdicts == 1);
    assert_int_equal(a.err, ERR_FENCED);
    assert_int_equal(a.current, 9);
    assert_int_equal(e->fk.reads, 0);
    RUN_UNTIL(e, highest(e, "p") == 9);
    assert_int_equal(durable(e, "p"), 9);

    fake_reset(e); /* a read finds epoch 12 */
    e->fk.read_w = win(ELECT_WIN_SUPERSEDED, 0, 12);
    admit(e, "q", 4, &b);
    RUN_UNTIL(e, b.verdicts == 1);
    assert_int_equal(b.err, ERR_FENCED);
    assert_int_equal(b.current, 12);
    RUN_UNTIL(e, highest(e, "q") == 12);
    assert_int_equal(durable(e, "q"), 12);
}

/* CompleteMultipartUpload needs fencing.complete_margin_ms of window, other
 * writes commit_margin_ms; at admission and at the last byte. */
static void
test_complete_claims_use_the_complete_margin(void **state)
{
    struct env *e = *state;
    struct w plain, complete;
    use_windows(e, COMMIT_MS, 2000);
    at(PAST_GATE);
    e->fk.read_w = win(ELECT_WIN_OPEN, PAST_GATE + 1000, 6);
    admit_claim(e, "c", 6, true, &complete);
    admit(e, "c", 6, &plain);
    RUN_UNTIL(e, plain.verdicts == 1);
    assert_int_equal(plain.err, 0);
    assert_true(may_finish(&plain));
    spin(e, 100);
    assert_int_equal(complete.verdicts, 0); /* 1000 ms of window < 2000 ms of margin */
    e->fk.read_w = win(ELECT_WIN_OPEN, PAST_GATE + 2001, 6);
    RUN_UNTIL(e, complete.verdicts == 1);
    assert_int_equal(complete.err, 0);
    assert_true(may_finish(&complete));
    at(PAST_GATE + 2);
    assert_true(may_finish(&plain));
    assert_false(may_finish(&complete)); /* 1 ms short now */
    release(&plain);
    release(&complete);
}

/* ---- 2. one read at a time per lock ---- */

#define MANY 50

/* Fifty writes of the current epoch that all need a window: one read, and
 * its one answer admits all of them in the pass it completes in. */
static void
test_one_read_for_many_writes(void **state)
{
    struct env *e = *state;
    struct w first, ws[MANY];
    at(PAST_GATE);
    admitted(e, "m", 7, &first); /* highest 7, from a window in memory */
    release(&first);
    at(PAST_GATE + 70000); /* that window has lapsed */
    e->fk.keep = false;    /* and memory never learns: only the read can tell */
    e->fk.hold = true;
    e->fk.read_w = win(ELECT_WIN_OPEN, PAST_GATE + 80000, 7);
    for (int i = 0; i < MANY; i++) {
        admit(e, "m", 7, &ws[i]);
    }
    RUN_UNTIL(e, e->fk.reads == 1);
    spin(e, 400); /* past a retry */
    assert_int_equal(e->fk.reads, 1);
    assert_int_equal(e->fk.inflight, 1);
    for (int i = 0; i < MANY; i++) {
        assert_int_equal(ws[i].verdicts, 0);
    }
    fake_release(&e->fk);
    RUN_UNTIL(e, e->fk.inflight == 0);
    for (int i = 0; i < MANY; i++) {
        assert_int_equal(ws[i].verdicts, 1);
        assert_int_equal(ws[i].err, 0);
    }
    assert_int_equal(e->fk.reads, 1);
    assert_int_equal(e->fk.max_inflight, 1);
    for (int i = 0; i < MANY; i++) {
        release(&ws[i]);
    }
}

/* ---- 3. the start gate ---- */

/* No fenced write is admitted before the larger margin (500 ms) has passed
 * since gw_fence_new, even through an open window. */
static void
test_start_gate_is_the_larger_margin(void **state)
{
    struct env *e = *state;
    struct w a, b, c;
    e->fk.peek_rc = 0;
    e->fk.peek_w = win(ELECT_WIN_OPEN, PAST_GATE + 60000, 2);
    at(0);
    admit(e, "g", 2, &a);
    spin(e, 50);
    assert_int_equal(a.verdicts, 0);
    at(COMMIT_MS); /* the smaller margin is not enough */
    admit(e, "g", 2, &b);
    spin(e, 50);
    assert_int_equal(a.verdicts, 0);
    assert_int_equal(b.verdicts, 0);
    at(COMPLETE_MS - 1);
    admit(e, "g", 2, &c);
    spin(e, 50);
    assert_int_equal(a.verdicts + b.verdicts + c.verdicts, 0);
    assert_int_equal(e->fk.reads, 0);
    at(COMPLETE_MS);
    RUN_UNTIL(e, a.verdicts == 1 && b.verdicts == 1 && c.verdicts == 1); /* by the gate's timer */
    assert_int_equal(a.err, 0);
    assert_int_equal(b.err, 0);
    assert_int_equal(c.err, 0);
    release(&a);
    release(&b);
    release(&c);
}

/* ---- 4. the last byte ---- */

/* Admitted at PAST_GATE with a window to PAST_GATE + 600; the test then moves
 * the clock to where the last byte no longer fits. */
static void
admitted_short(struct env *e, const char *lock, uint64_t token, struct w *w)
{
    at(PAST_GATE);
    e->fk.read_w = win(ELECT_WIN_OPEN, PAST_GATE + 600, token);
    admit(e, lock, token, w);
    RUN_UNTIL(e, w->verdicts == 1);
    assert_int_equal(w->err, 0);
    assert_true(may_finish(w)); /* inside the window: at once */
    assert_int_equal(e->fk.reads, 1);
}

/* Outside the window the last byte is held; a read that opens it resumes the
 * write from the loop, and then the last byte may go. */
static void
test_last_byte_held_then_resumed(void **state)
{
    struct env *e = *state;
    struct w a;
    admitted_short(e, "r", 3, &a);
    at(PAST_GATE + 301); /* 600 < 301 + 300 */
    e->fk.read_w = win(ELECT_WIN_OPEN, PAST_GATE + 5000, 3);
    assert_false(may_finish(&a));
    assert_int_equal(a.resumes, 0);
    RUN_UNTIL(e, a.resumes == 1);
    assert_int_equal(a.resumes_inside, 0);
    assert_int_equal(a.cuts, 0);
    assert_int_equal(e->fk.reads, 2);
    assert_true(may_finish(&a));
    spin(e, 50);
    assert_int_equal(a.resumes, 1);
    release(&a);
}

/* A held last byte whose read says the lease ended is cut (FencingLeaseExpired). */
static void
test_last_byte_cut_when_ended(void **state)
{
    struct env *e = *state;
    struct w a;
    admitted_short(e, "x", 3, &a);
    at(PAST_GATE + 400);
    e->fk.read_w = win(ELECT_WIN_ENDED, 0, 3);
    e->fk.keep = false;
    assert_false(may_finish(&a));
    RUN_UNTIL(e, a.cuts == 1);
    assert_int_equal(a.cut_err, ERR_EXPIRED);
    assert_int_equal(a.cut_current, 3);
    assert_int_equal(a.resumes, 0);
}

/* A held last byte whose read finds a newer epoch is cut (StaleFencingToken),
 * and the fence learns the newer epoch. */
static void
test_last_byte_cut_when_superseded(void **state)
{
    struct env *e = *state;
    struct w a;
    admitted_short(e, "y", 3, &a);
    at(PAST_GATE + 400);
    e->fk.read_w = win(ELECT_WIN_SUPERSEDED, 0, 4);
    e->fk.keep = false;
    assert_false(may_finish(&a));
    RUN_UNTIL(e, a.cuts == 1);
    assert_int_equal(a.cut_err, ERR_FENCED);
    assert_int_equal(a.cut_current, 4);
    assert_int_equal(a.resumes, 0);
    RUN_UNTIL(e, highest(e, "y") == 4);
    assert_int_equal(durable(e, "y"), 4);
}

/* Asking again while held (the window meanwhile open in memory) neither
 * resumes from inside the call nor both says yes and resumes later. */
static void
test_resume_never_inside_may_finish(void **state)
{
    struct env *e = *state;
    struct w a;
    admitted_short(e, "z", 3, &a);
    at(PAST_GATE + 400);
    e->fk.hold = true;
    e->fk.read_w = win(ELECT_WIN_OPEN, PAST_GATE + 5000, 3);
    assert_false(may_finish(&a));
    RUN_UNTIL(e, e->fk.reads == 2);
    e->fk.peek_rc = 0; /* the election learned a renewal meanwhile */
    e->fk.peek_w = win(ELECT_WIN_OPEN, PAST_GATE + 5000, 3);
    bool again = may_finish(&a);
    assert_int_equal(a.resumes_inside, 0);
    fake_release(&e->fk);
    if (again) {
        spin(e, 100);
        assert_int_equal(a.resumes, 0);
    } else {
        RUN_UNTIL(e, a.resumes >= 1);
        spin(e, 50);
        assert_int_equal(a.resumes, 1); /* one hold, one resume */
    }
    assert_int_equal(a.resumes_inside, 0);
    assert_int_equal(a.cuts, 0);
    release(&a);
}

/* ---- 5. the fence learns epochs ---- */

/* gw_fence_learn(e+1): durable; cuts token-e writes not completely sent
 * (one of them holding its last byte); awaits the sent one: no token e+1
 * write is admitted until it is released. */
static void
test_learn_cuts_unsent_and_awaits_sent(void **state)
{
    struct env *e = *state;
    struct w unsent, sent, held, next;
    at(PAST_GATE);
    admitted(e, "e", 5, &unsent);
    admitted(e, "e", 5, &sent);
    admitted(e, "e", 5, &held);
    gw_fence_ticket_sent(sent.t);
    at(PAST_GATE + 70000); /* held's window lapsed: its read never answers */
    e->fk.hold = true;
    assert_false(may_finish(&held));
    spin(e, 20);

    gw_fence_learn(e->f, "e", 6);
    RUN_UNTIL(e, unsent.cuts == 1 && held.cuts == 1);
    assert_int_equal(unsent.cut_err, ERR_FENCED);
    assert_int_equal(unsent.cut_current, 6);
    assert_int_equal(held.cut_err, ERR_FENCED);
    assert_int_equal(held.resumes, 0);
    assert_int_equal(durable(e, "e"), 6); /* G2: before anything acts on it */
    assert_int_equal(highest(e, "e"), 6);

    gw_fence_learn(e->f, "e", 4); /* never back */
    e->fk.hold = false;
    e->fk.peek_rc = 0;
    e->fk.peek_w = win(ELECT_WIN_OPEN, PAST_GATE + 90000, 6);
    admit(e, "e", 6, &next);
    spin(e, 100);
    assert_int_equal(sent.cuts, 0);
    assert_int_equal(next.verdicts, 0); /* G3: the sent epoch-5 write first */
    assert_int_equal(highest(e, "e"), 6);
    release(&sent);
    RUN_UNTIL(e, next.verdicts == 1);
    assert_int_equal(next.err, 0);
    release(&next);
}

/* ---- 6. aborts of superseded uploads ---- */

/* The fence asks for aborts below a new highest only once no older write of
 * that lock is in flight here (an abort overtaking a sent part would fail it). */
static void
test_aborts_wait_for_older_writes(void **state)
{
    struct env *e = *state;
    static int marker;
    struct w sent;
    gw_fence_set_advance_hook(e->f, on_advance, &marker);
    at(PAST_GATE);
    admitted(e, "u", 5, &sent);
    RUN_UNTIL(e, aborts.calls == 1); /* the advance to 5 itself; nothing older in flight */
    assert_int_equal(aborts.highest, 5);
    gw_fence_ticket_sent(sent.t);

    gw_fence_learn(e->f, "u", 6);
    RUN_UNTIL(e, durable(e, "u") == 6);
    spin(e, 100);
    assert_int_equal(aborts.calls, 1); /* the sent epoch-5 write is still in flight */
    release(&sent);
    assert_int_equal(aborts.calls, 2);
    assert_ptr_equal(aborts.arg, &marker);
    assert_string_equal(aborts.lock, "u");
    assert_int_equal(aborts.highest, 6);

    gw_fence_learn(e->f, "u", 7); /* nothing in flight: at once */
    RUN_UNTIL(e, aborts.calls == 3);
    assert_int_equal(aborts.highest, 7);
}

/* ---- regressions ---- */

/* A read that could not start refuses that write only: a later write of the
 * same epoch, while the lock stays busy, reads again (a2c43eb). */
static void
test_failed_read_start_is_not_remembered(void **state)
{
    struct env *e = *state;
    struct w busy, a, b;
    at(PAST_GATE);
    admitted(e, "f", 3, &busy); /* keeps the lock in memory */
    at(PAST_GATE + 70000);
    e->fk.start_rc = ERR_NOMEM;
    admit(e, "f", 3, &a);
    RUN_UNTIL(e, a.verdicts == 1);
    assert_int_equal(a.err, ERR_IO);
    assert_int_equal(e->fk.reads, 1);
    e->fk.start_rc = 0;
    e->fk.read_w = win(ELECT_WIN_OPEN, PAST_GATE + 80000, 3);
    admit(e, "f", 3, &b);
    RUN_UNTIL(e, b.verdicts == 1);
    assert_int_equal(b.err, 0);
    assert_int_equal(e->fk.reads, 2);
    release(&b);
    release(&busy);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_window_admits_only_with_the_margin, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_admitted_at_once_only_as_the_loop_would, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_not_at_once_before_the_gate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_short_window_waits_until_it_ends, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_answers_refuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_superseded_advances_the_fence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_complete_claims_use_the_complete_margin, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_one_read_for_many_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_start_gate_is_the_larger_margin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_last_byte_held_then_resumed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_last_byte_cut_when_ended, setup, teardown),
        cmocka_unit_test_setup_teardown(test_last_byte_cut_when_superseded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resume_never_inside_may_finish, setup, teardown),
        cmocka_unit_test_setup_teardown(test_learn_cuts_unsent_and_awaits_sent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aborts_wait_for_older_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_read_start_is_not_remembered, setup, teardown),
    };
    return cmocka_run_group_tests_name("fence_window", tests, NULL, NULL);
}
