/*
 * Unit tests for the write windows of election/elect*.c (elect.h "Write
 * windows", DESIGN.md "Write windows" rules 3 and 4): the window each
 * observation gives, what elect_window_peek and elect_window_read say, the
 * shared release hand-over, renewals only inside the window, and the learn
 * observer.  Same harness as elect_test.c (elect_harness.h); leases are
 * whole milliseconds on the pinned clock, so the windows are checked exactly.
 */
#include "elect_harness.h"

/* An elect with the harness defaults, shared or not, with that shared_window_ms. */
static struct elect *
new_elect_w(struct env *v, bool shared, uint32_t shared_window_ms, struct store *store,
            uint32_t keep)
{
    struct elect_opts o;
    char gb[16];
    env_opts(v, &o, gb, sizeof(gb));
    o.shared = shared;
    o.shared_window_ms = shared_window_ms;
    o.store = store;
    o.keep_epochs = keep;
    return new_elect_o(v, &o, true);
}

/* elect_window_peek that must decide (0). */
static struct elect_window
peek(struct env *v, struct elect *e, const char *lock, uint64_t epoch)
{
    struct elect_window w;
    memset(&w, 0, sizeof(w));
    assert_int_equal(elect_window_peek(e, lock, epoch, v->now, &w), 0);
    return w;
}

/* ---- the window of each observation ---- */

static void
test_window_own_grant_and_renewal(void **state)
{
    struct env *v = *state;
    struct elect *e = new_elect_w(v, false, 5000, v->store, 5);
    struct res a, q;
    /* the create is sent at t0; its answer comes 200 ms later */
    uint64_t t0 = v->now;
    mem_hold(v->ms, MEM_OP_CREATE, "O/epoch-", 1, true);
    acquire(v, e, "O", "A", 3000, 0, &a);
    run(v);
    assert_int_equal(v->ms->nheld, 1);
    advance(v, 200, 10);
    mem_land(v->ms, 0);
    run(v);
    assert_int_equal(a.err, 0);
    struct elect_window w = peek(v, e, "O", 1);
    assert_int_equal(w.state, ELECT_WIN_OPEN);
    assert_int_equal(w.until, t0 + 3000); /* send time + lease */
    assert_int_equal(w.latest, 1);
    /* a renewal sent at t1 moves it to t1 + lease */
    advance(v, 800, 10);
    uint64_t t1 = v->now;
    assert_int_equal(renew(v, e, "O", 1, a.info.lease_id, &q), 0);
    w = peek(v, e, "O", 1);
    assert_int_equal(w.state, ELECT_WIN_OPEN);
    assert_int_equal(w.until, t1 + 3000);
    /* past it, memory alone cannot decide */
    set_time(v, t1 + 3000);
    struct elect_window w2;
    assert_int_equal(elect_window_peek(e, "O", 1, v->now, &w2), ERR_NOTFOUND);
}

static void
test_window_read_store_clock(void **state)
{
    struct env *v = *state;
    struct elect *g0 = new_elect_w(v, true, 300000, v->store, 5);
    struct elect *g1 = new_elect_w(v, true, 300000, NULL, 5);
    struct res a, b;
    /* store times in ms (not whole seconds): no slack */
    set_time(v, 1234);
    acquire_ok(v, g0, "R", "A", 10000, &a);
    set_time(v, 2734);
    struct win_res r;
    memset(&r, 0, sizeof(r));
    assert_int_equal(elect_window_read(g1, "R", 1, on_win, &r), 0);
    set_time(v, 3000); /* the answer comes later: the window counts from the send */
    run(v);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.w.state, ELECT_WIN_OPEN);
    assert_int_equal(r.w.until, 2734 + 10000 - 1500); /* send + lease - (Date - Last-Modified) */
    assert_int_equal(peek(v, g1, "R", 1).until, r.w.until);
    /* both times whole seconds: 1000 ms of slack */
    set_time(v, 4000);
    acquire_ok(v, g0, "R2", "B", 10000, &b);
    set_time(v, 6000);
    window_read(v, g1, "R2", 1, &r);
    assert_int_equal(r.w.state, ELECT_WIN_OPEN);
    assert_int_equal(r.w.until, 6000 + 10000 - 2000 - 1000);
    /* a later read gives more (ms times: no slack) ... */
    set_time(v, 6500);
    window_read(v, g1, "R2", 1, &r);
    assert_int_equal(r.w.until, 6500 + 10000 - 2500);
    /* ... a shorter bound (whole seconds again) never lowers it */
    set_time(v, 7000);
    window_read(v, g1, "R2", 1, &r);
    assert_int_equal(r.w.until, 6500 + 10000 - 2500);
    assert_int_equal(peek(v, g1, "R2", 1).until, 6500 + 10000 - 2500);
}

static void
test_window_shared_cap(void **state)
{
    struct env *v = *state;
    struct elect *g0 = new_elect_w(v, true, 2000, v->store, 5);
    struct elect *g1 = new_elect_w(v, true, 2000, NULL, 5);
    struct res a;
    set_time(v, 1234);
    acquire_ok(v, g0, "C", "A", 10000, &a);
    assert_int_equal(peek(v, g0, "C", 1).until, 1234 + 2000);
    set_time(v, 1734);
    struct win_res r;
    window_read(v, g1, "C", 1, &r);
    assert_int_equal(r.w.state, ELECT_WIN_OPEN);
    assert_int_equal(r.w.until, 1734 + 2000);
}

static void
test_window_released_superseded(void **state)
{
    struct env *v = *state;
    struct elect *e = new_elect_w(v, false, 5000, v->store, 5);
    struct res a, q;
    acquire_ok(v, e, "E", "A", 60000, &a);
    assert_int_equal(peek(v, e, "E", 1).state, ELECT_WIN_OPEN);
    assert_int_equal(release(v, e, "E", 1, a.info.lease_id, &q), 0);
    assert_int_equal(peek(v, e, "E", 1).state, ELECT_WIN_ENDED); /* a release closes it */
    acquire_ok(v, e, "E", "B", 60000, &a);
    struct elect_window w = peek(v, e, "E", 1);
    assert_int_equal(w.state, ELECT_WIN_SUPERSEDED);
    assert_int_equal(w.latest, 2);
    assert_int_equal(peek(v, e, "E", 2).state, ELECT_WIN_OPEN);
    /* a reader of epoch 1's file sees it released; once it knows epoch 2, superseded */
    struct elect *g1 = new_elect_w(v, true, 5000, NULL, 5);
    struct win_res r;
    window_read(v, g1, "E", 1, &r);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.w.state, ELECT_WIN_ENDED);
    window_read(v, g1, "E", 2, &r);
    assert_int_equal(r.w.state, ELECT_WIN_OPEN);
    assert_int_equal(peek(v, g1, "E", 1).state, ELECT_WIN_SUPERSEDED);
}

static void
test_window_read_missing_file(void **state)
{
    struct env *v = *state;
    struct elect *g0 = new_elect_w(v, false, 5000, v->store, 1); /* GC keeps only the latest */
    struct elect *g1 = new_elect_w(v, false, 5000, NULL, 5);
    struct win_res r;
    window_read(v, g1, "M", 7, &r);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.w.state, ELECT_WIN_NOT_GRANTED);
    struct res a, q;
    acquire_ok(v, g0, "M", "A", 60000, &a);
    assert_int_equal(release(v, g0, "M", 1, a.info.lease_id, &q), 0);
    acquire_ok(v, g0, "M", "B", 60000, &a);
    advance_until(v, !lockfile_at(v, "M", 1, NULL), 5000);
    assert_int_equal(mem_count_prefix(v->ms, "fg/M/"), 1);
    /* epoch 1's file is gone, epoch 2's is there: superseded, not "never granted" */
    struct elect *g2 = new_elect_w(v, false, 5000, NULL, 5);
    window_read(v, g2, "M", 1, &r);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.w.state, ELECT_WIN_SUPERSEDED);
    assert_int_equal(r.w.latest, 2);
    assert_int_equal(peek(v, g2, "M", 1).state, ELECT_WIN_SUPERSEDED); /* kept */
    /* a forged token beyond the latest: never granted */
    window_read(v, g2, "M", 3, &r);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.w.state, ELECT_WIN_NOT_GRANTED);
    assert_int_equal(r.w.latest, 2);
}

static void
test_window_ran_out_by_store_clock(void **state)
{
    struct env *v = *state;
    struct elect *g0 = new_elect_w(v, true, 300000, v->store, 5);
    struct elect *g1 = new_elect_w(v, true, 300000, NULL, 5);
    struct res a;
    set_time(v, 1234);
    acquire_ok(v, g0, "X", "A", 1000, &a);
    set_time(v, 2334); /* 1100 ms on the store's clock: run out, though g1 never saw it before */
    struct win_res r;
    window_read(v, g1, "X", 1, &r);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.w.state, ELECT_WIN_ENDED);
    assert_int_equal(peek(v, g1, "X", 1).state, ELECT_WIN_ENDED); /* remembered */
    /* still live by the store's clock: open */
    set_time(v, 3234);
    acquire_ok(v, g0, "Y", "A", 1000, &a);
    set_time(v, 3834);
    window_read(v, g1, "Y", 1, &r);
    assert_int_equal(r.w.state, ELECT_WIN_OPEN);
    assert_int_equal(r.w.until, 3834 + 1000 - 600);
}

/* A read that closes the window only by the bound's slack proves no end: the
 * holder's gateway may still renew, and a read after that renewal opens the
 * window again.  Remembering "run out" refused the live holder's writes at
 * this gateway, with no further read, until a newer epoch came. */
static void
test_window_closed_by_the_slack_is_no_verdict(void **state)
{
    struct env *v = *state;
    struct elect *g0 = new_elect_w(v, true, 300000, v->store, 5);
    struct elect *g1 = new_elect_w(v, true, 300000, NULL, 5);
    struct res a, q;
    set_time(v, 4000);
    acquire_ok(v, g0, "S", "A", 2000, &a);
    /* whole seconds: 1000 ms of age and 1000 of slack close the window at the read */
    set_time(v, 5000);
    struct win_res r;
    window_read(v, g1, "S", 1, &r);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.w.state, ELECT_WIN_OPEN); /* live, too short: not ENDED */
    assert_true(r.w.until <= 5000);
    struct elect_window w;
    assert_int_equal(elect_window_peek(g1, "S", 1, v->now, &w), ERR_NOTFOUND); /* read again */
    /* the holder's gateway renews inside its own window (4000 + 2000) */
    assert_int_equal(renew(v, g0, "S", 1, a.info.lease_id, &q), 0);
    set_time(v, 5400);
    window_read(v, g1, "S", 1, &r);
    assert_int_equal(r.w.state, ELECT_WIN_OPEN);
    assert_true(r.w.until > 5400);
    /* once the age, less the slack, reaches the lease, the end is sure: ENDED, remembered */
    set_time(v, 8000);
    window_read(v, g1, "S", 1, &r);
    assert_int_equal(r.w.state, ELECT_WIN_ENDED);
    assert_int_equal(peek(v, g1, "S", 1).state, ELECT_WIN_ENDED);
}

static void
test_window_foreign_when_not_shared(void **state)
{
    struct env *v = *state;
    struct elect *g0 = new_elect_w(v, false, 5000, v->store, 5);
    struct elect *g1 = new_elect_w(v, false, 5000, NULL, 5);
    struct res a;
    acquire_ok(v, g0, "F", "A", 60000, &a);
    assert_int_equal(peek(v, g0, "F", 1).state, ELECT_WIN_OPEN);
    struct win_res r;
    window_read(v, g1, "F", 1, &r);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.w.state, ELECT_WIN_FOREIGN); /* written by gw-0, read by gw-1 */
    assert_int_equal(peek(v, g1, "F", 1).state, ELECT_WIN_FOREIGN);
}

/* ---- the release hand-over (DESIGN "Write windows" rule 4) ---- */

static void
test_handover_shared_waits_window_and_margin(void **state)
{
    struct env *v = *state;
    struct elect *g0 = new_elect_w(v, true, 2000, v->store, 5);
    struct elect *g1 = new_elect_w(v, true, 2000, NULL, 5);
    struct res a, b, c, q;
    acquire_ok(v, g0, "H", "A", 60000, &a);
    assert_int_equal(release(v, g0, "H", 1, a.info.lease_id, &q), 0);
    uint64_t t = v->now;
    acquire(v, g0, "H", "B", 60000, 0, &b); /* wait_ms 0 included */
    run(v);
    assert_int_equal(b.calls, 0);
    advance_until(v, b.calls == 1, 5000);
    assert_int_equal(b.err, 0);
    assert_int_equal(b.info.token, 2);
    assert_int_equal(b.at, t + 2000 + 50); /* shared_window_ms + commit_margin_ms */
    /* another gateway counts from when it saw the release */
    assert_int_equal(release(v, g0, "H", 2, b.info.lease_id, &q), 0);
    advance(v, 300, 10);
    t = v->now;
    acquire(v, g1, "H", "C", 60000, 0, &c);
    run(v);
    assert_int_equal(c.calls, 0);
    advance_until(v, c.calls == 1, 5000);
    assert_int_equal(c.err, 0);
    assert_int_equal(c.info.token, 3);
    assert_int_equal(c.at, t + 2050);
}

static void
test_handover_not_shared_at_once(void **state)
{
    struct env *v = *state;
    struct elect *g0 = new_elect(v, 5, true); /* the defaults: not shared */
    struct res a, b, q;
    acquire_ok(v, g0, "H", "A", 60000, &a);
    assert_int_equal(release(v, g0, "H", 1, a.info.lease_id, &q), 0);
    acquire_ok(v, g0, "H", "B", 60000, &b);
    assert_int_equal(b.info.token, 2);
}

static int
revoke_run(struct env *v, struct elect *e, const char *lock, struct res *r)
{
    memset(r, 0, sizeof(*r));
    assert_int_equal(elect_revoke(e, lock, on_done, r, NULL), 0);
    assert_int_equal(r->calls, 0); /* never before the call returns */
    run(v);
    assert_int_equal(r->calls, 1);
    return r->err;
}

/* An admin's revoke: the latest epoch rewritten expired:true, whoever holds it. */
static void
test_revoke_ends_lease(void **state)
{
    struct env *v = *state;
    struct elect *g0 = new_elect_w(v, true, 2000, v->store, 5);
    struct elect *g1 = new_elect_w(v, true, 2000, NULL, 5);
    struct res a, b, q;
    assert_int_equal(revoke_run(v, g0, "R", &q), ERR_NOTFOUND); /* never granted */
    acquire_ok(v, g0, "R", "A", 60000, &a);
    /* g1 reads epoch 1: its window is open (capped at shared_window_ms) */
    struct win_res wr;
    window_read(v, g1, "R", 1, &wr);
    assert_int_equal(wr.w.state, ELECT_WIN_OPEN);
    uint64_t g1_until = wr.w.until;

    assert_int_equal(revoke_run(v, g0, "R", &q), 0);
    assert_int_equal(q.info.token, 1);
    assert_string_equal(q.info.holder, "A");
    assert_true(q.info.released);
    assert_false(q.info.live);
    assert_string_equal(q.info.lease_id, "");
    struct elect_lockfile lf;
    assert_true(lockfile_at(v, "R", 1, &lf));
    assert_true(lf.expired);
    assert_string_equal(lf.holder, "A");
    /* here: ended at once (the fence refuses epoch 1 with FencingLeaseExpired) */
    assert_int_equal(peek(v, g0, "R", 1).state, ELECT_WIN_ENDED);
    /* the holder's renew fails as after a release; revoking again is 0 */
    assert_int_equal(renew(v, g0, "R", 1, a.info.lease_id, &q), ERR_CONFLICT);
    assert_int_equal(revoke_run(v, g0, "R", &q), 0);
    /* g1 keeps what it knew until its (capped) window ends, then reads the file */
    assert_true(g1_until <= v->now + 2000);
    advance(v, g1_until > v->now ? g1_until - v->now : 0, 10);
    window_read(v, g1, "R", 1, &wr);
    assert_int_equal(wr.w.state, ELECT_WIN_ENDED);
    /* the next acquire: after the shared hand-over, epoch 2 */
    uint64_t t = v->now;
    acquire(v, g0, "R", "B", 60000, 10000, &b);
    advance_until(v, b.calls == 1, 5000);
    assert_int_equal(b.err, 0);
    assert_int_equal(b.info.token, 2);
    assert_true(b.at <= t + 2000 + 50);
}

static void
test_handover_after_own_takeover_at_once(void **state)
{
    struct env *v = *state;
    struct elect *g0 = new_elect_w(v, true, 2000, v->store, 5);
    struct res a, b, c;
    acquire_ok(v, g0, "K", "A", 1000, &a);
    acquire(v, g0, "K", "B", 1000, 10000, &b);
    /* A stops renewing; B's takeover expires epoch 1, then every create is lost */
    v->ms->fault = MEM_FAULT_LOST_TIMEOUT;
    v->ms->fault_n = 3;
    advance_until(v, b.calls == 1, 3000);
    assert_int_equal(b.err, ERR_UPSTREAM);
    struct elect_lockfile lf;
    assert_true(lockfile_at(v, "K", 1, &lf));
    assert_true(lf.expired);
    assert_false(lockfile_at(v, "K", 2, NULL));
    /* expired by us after its lease ran out: no hand-over wait */
    uint64_t t = v->now;
    acquire(v, g0, "K", "C", 1000, 0, &c);
    run(v);
    assert_int_equal(c.calls, 1);
    assert_int_equal(c.err, 0);
    assert_int_equal(c.info.token, 2);
    assert_int_equal(c.at, t);
}

/* ---- renewals only inside the window (rule 3) ---- */

static void
test_renew_needs_commit_margin_of_window(void **state)
{
    struct env *v = *state;
    struct elect *g0 = new_elect_w(v, false, 5000, v->store, 5);
    struct elect *g1 = new_elect_w(v, false, 5000, NULL, 5); /* only reads the record */
    struct res a, q;
    char key[ELECT_KEY_MAX + 1];
    /* 100 ms of window left through g1 (grant at 1234, read at 2134): renewed */
    set_time(v, 1234);
    acquire_ok(v, g0, "N1", "A", 1000, &a);
    set_time(v, 2134);
    assert_int_equal(renew(v, g1, "N1", 1, a.info.lease_id, &q), 0);
    /* 40 ms left (< commit_margin_ms 50): refused, nothing written */
    set_time(v, 3234);
    acquire_ok(v, g0, "N2", "A", 1000, &a);
    ekey("N2", 1, key, sizeof(key));
    char etag[32];
    (void)snprintf(etag, sizeof(etag), "%s", mem_find(v->ms, key)->etag);
    unsigned long puts = v->ms->n_replace;
    set_time(v, 4194);
    assert_int_equal(renew(v, g1, "N2", 1, a.info.lease_id, &q), ERR_CONFLICT);
    assert_int_equal(v->ms->n_replace, puts);
    assert_string_equal(mem_find(v->ms, key)->etag, etag);
    /* the holder's own gateway: its window (grant + lease) has 40 ms left too */
    assert_int_equal(renew(v, g0, "N2", 1, a.info.lease_id, &q), ERR_CONFLICT);
    assert_int_equal(v->ms->n_replace, puts);
}

static void
test_renew_after_lease_ran_out_by_store_clock(void **state)
{
    struct env *v = *state;
    struct elect *g0 = new_elect_w(v, false, 5000, v->store, 5);
    struct elect *g1 = new_elect_w(v, false, 5000, NULL, 5);
    struct res a, q;
    set_time(v, 1234);
    acquire_ok(v, g0, "Z", "A", 1000, &a);
    unsigned long puts = v->ms->n_replace;
    set_time(v, 2734);
    assert_int_equal(renew(v, g1, "Z", 1, a.info.lease_id, &q), ERR_CONFLICT);
    assert_int_equal(renew(v, g0, "Z", 1, a.info.lease_id, &q), ERR_CONFLICT);
    assert_int_equal(v->ms->n_replace, puts);
    struct elect_lockfile lf;
    assert_true(lockfile_at(v, "Z", 1, &lf));
    assert_int_equal(lf.renewals, 0);
    assert_false(lf.expired);
}

/* ---- the learn observer ---- */

struct learn_log {
    int n;
    uint64_t epochs[16];
};

/* elect_learn_fn */
static void
on_learn(void *arg, const char *lock, uint64_t epoch)
{
    struct learn_log *l = arg;
    assert_string_equal(lock, "L");
    assert_true(l->n < 16);
    l->epochs[l->n++] = epoch;
}

/* the observer of l was told exactly of the epochs ... (n of them), in that order */
#define assert_learnt(l, n, ...) assert_learnt_at(l, n, (uint64_t[]){__VA_ARGS__}, __LINE__)

static void
assert_learnt_at(const struct learn_log *l, int n, const uint64_t *epochs, int line)
{
    if (l->n != n) {
        fail_msg("line %d: learnt %d epochs, expected %d", line, l->n, n);
    }
    for (int i = 0; i < n; i++) {
        assert_int_equal(l->epochs[i], epochs[i]);
    }
}

/* elect_get of lock "L" through e: a fresh read of the latest epoch. */
static void
get_now(struct env *v, struct elect *e)
{
    struct res g;
    memset(&g, 0, sizeof(g));
    advance(v, 10, 10); /* a read started in the same ms as the call would count as fresh */
    assert_int_equal(elect_get(e, "L", 0, 0, on_done, &g, NULL), 0);
    run(v);
    assert_int_equal(g.err, 0);
}

static void
test_learn_once_per_rise(void **state)
{
    struct env *v = *state;
    struct elect *g0 = new_elect_w(v, false, 5000, v->store, 1);
    struct elect *g1 = new_elect_w(v, false, 5000, NULL, 5);
    struct elect *g2 = new_elect_w(v, false, 5000, NULL, 5);
    struct learn_log l0 = {0}, l1 = {0}, l2 = {0};
    elect_set_learn(g0, on_learn, &l0);
    elect_set_learn(g1, on_learn, &l1);
    elect_set_learn(g2, on_learn, &l2);
    struct res a, q;
    /* own grant; renewals and the release are no rise */
    acquire_ok(v, g0, "L", "A", 60000, &a);
    assert_learnt(&l0, 1, 1);
    assert_int_equal(renew(v, g0, "L", 1, a.info.lease_id, &q), 0);
    assert_int_equal(renew(v, g0, "L", 1, a.info.lease_id, &q), 0);
    assert_int_equal(release(v, g0, "L", 1, a.info.lease_id, &q), 0);
    assert_learnt(&l0, 1, 1);
    acquire_ok(v, g0, "L", "B", 60000, &a);
    assert_learnt(&l0, 2, 1, 2);
    /* a read that finds a newer epoch, once */
    get_now(v, g1);
    assert_learnt(&l1, 1, 2);
    get_now(v, g1);
    struct check_res ck = {0};
    assert_int_equal(elect_epoch_check(g1, "L", 2, on_check, &ck), 1);
    assert_learnt(&l1, 1, 2);
    assert_int_equal(release(v, g0, "L", 2, a.info.lease_id, &q), 0);
    acquire_ok(v, g0, "L", "C", 60000, &a);
    get_now(v, g1);
    assert_learnt(&l1, 2, 2, 3);
    assert_learnt(&l0, 3, 1, 2, 3);
    /* elect_window_read's LIST finding a newer epoch (epoch 2's file collected) */
    advance_until(v, !lockfile_at(v, "L", 2, NULL), 5000);
    struct win_res r;
    window_read(v, g2, "L", 2, &r);
    assert_int_equal(r.w.state, ELECT_WIN_SUPERSEDED);
    assert_learnt(&l2, 1, 3);
    window_read(v, g2, "L", 3, &r);
    assert_learnt(&l2, 1, 3);
}

int
main(void)
{
    (void)log_set_level(getenv("FENCEGATE_TEST_LOG") != NULL ? getenv("FENCEGATE_TEST_LOG")
                                                             : "error");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_window_own_grant_and_renewal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_window_read_store_clock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_window_shared_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_window_released_superseded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_window_read_missing_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_window_ran_out_by_store_clock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_window_closed_by_the_slack_is_no_verdict, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_window_foreign_when_not_shared, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handover_shared_waits_window_and_margin, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_handover_not_shared_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_revoke_ends_lease, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handover_after_own_takeover_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_renew_needs_commit_margin_of_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_renew_after_lease_ran_out_by_store_clock, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_learn_once_per_rise, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
