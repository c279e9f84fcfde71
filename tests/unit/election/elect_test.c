/*
 * Unit tests for election/elect*.c and election/lease.c: the election state
 * machine on a pinned clock (common/clock.h) over an in-memory backend
 * (membackend.h) and a real store (the election cache) in a temp directory.
 * The harness is elect_harness.h; write windows are in elect_window_test.c,
 * takeovers racing renewals and stale reads (issue items 7, 8) in elect_race_test.c.
 */
#include "elect_harness.h"
#include "election/elect_int.h" /* elect_lock_find, elect_latest_raise: what a window read does */

/* ---- lease judgement (pure) ---- */

static void
test_lease_rules(void **state)
{
    (void)state;
    struct elect_obs o = {.lease_ms = 1000, .changed_mono = 5000, .store_age_ms = -1};
    uint64_t rem;
    assert_true(elect_lease_live(&o, 5000, &rem));
    assert_int_equal(rem, 1000);
    assert_true(elect_lease_live(&o, 5999, &rem));
    assert_false(elect_lease_live(&o, 6000, &rem));
    assert_int_equal(rem, 0);
    /* the store's clock says it is old: run out even though just seen */
    o.changed_mono = 9000;
    o.read_mono = 9000;
    o.store_age_ms = 1000;
    assert_false(elect_lease_live(&o, 9000, NULL));
    o.store_age_ms = 400;
    assert_true(elect_lease_live(&o, 9000, &rem));
    assert_int_equal(rem, 600); /* estimate: the store rule comes first */
    /* whole-second store times get 1 s of slack */
    o.store_whole_sec = true;
    o.store_age_ms = 1000;
    assert_true(elect_lease_live(&o, 9000, NULL));
    o.store_age_ms = 2000;
    assert_false(elect_lease_live(&o, 9000, NULL));
    o.store_age_ms = -1;
    o.released = true;
    assert_false(elect_lease_live(&o, 9000, NULL));
}

/* ---- self-test ---- */

static void
test_selftest_forms(void **state)
{
    struct env *v = *state;
    struct elect *a = new_elect(v, 5, true);
    assert_int_equal(elect_etag_form_used(a), ELECT_ETAG_QUOTED);
    v->ms->form_only = ELECT_ETAG_UNQUOTED; /* RGW */
    struct elect *b = new_elect(v, 5, true);
    assert_int_equal(elect_etag_form_used(b), ELECT_ETAG_UNQUOTED);
    v->ms->form_only = ELECT_ETAG_QUOTED; /* AWS */
    struct elect *c = new_elect(v, 5, true);
    assert_int_equal(elect_etag_form_used(c), ELECT_ETAG_QUOTED);
    /* the probe objects are cleaned up */
    assert_int_equal(mem_count_prefix(v->ms, "fg/~probe/"), 0);
    /* renew works with the chosen form */
    struct res r, q;
    v->ms->form_only = ELECT_ETAG_UNQUOTED; /* back to "RGW" for b */
    acquire_ok(v, b, "formlock", "w", 1000, &r);
    assert_int_equal(renew(v, b, "formlock", r.info.token, r.info.lease_id, &q), 0);
}

static void
test_selftest_refuses_ignored_if_none_match(void **state)
{
    struct env *v = *state;
    v->ms->ignore_if_none_match = true;
    struct elect *e = new_elect(v, 5, false);
    const char *why = NULL;
    assert_false(elect_ready(e, &why));
    assert_non_null(strstr(why, "If-None-Match"));
    struct res r;
    assert_int_equal(elect_acquire(e, "x", "w", 0, 0, on_done, &r, NULL), ERR_AGAIN);
    assert_int_equal(elect_renew(e, "x", 1, "00", on_done, &r, NULL), ERR_AGAIN);
    /* refused for good: the timer does not retry */
    v->ms->ignore_if_none_match = false;
    advance(v, 60000, 1000);
    assert_false(elect_ready(e, NULL));
}

static void
test_selftest_refuses_ignored_if_match(void **state)
{
    struct env *v = *state;
    v->ms->ignore_if_match = true;
    struct elect *e = new_elect(v, 5, false);
    const char *why = NULL;
    assert_false(elect_ready(e, &why));
    assert_non_null(strstr(why, "If-Match"));
}

static void
test_selftest_retries_transient(void **state)
{
    struct env *v = *state;
    v->ms->probe_fail_n = 2;
    struct elect *e = new_elect(v, 5, false);
    const char *why = NULL;
    assert_false(elect_ready(e, &why));
    assert_non_null(strstr(why, "retrying"));
    advance(v, 1000, 100); /* first retry after 1 s: fails again */
    assert_false(elect_ready(e, NULL));
    advance(v, 2000, 100); /* then 2 s: succeeds */
    assert_true(elect_ready(e, &why));
    assert_string_equal(why, "");
}

/* ---- contention ---- */

#define NCONT 32

static void
contend_rounds(struct env *v, struct elect **es, int nes, int rounds)
{
    static struct res r[NCONT];
    char holders[NCONT][16];
    for (int i = 0; i < NCONT; i++) {
        (void)snprintf(holders[i], sizeof(holders[i]), "w%d", i);
    }
    uint64_t expect = 1;
    for (int round = 0; round < rounds; round++) {
        /* all at the same moment, spread over the instances */
        for (int i = 0; i < NCONT; i++) {
            acquire(v, es[i % nes], "hot", holders[i], 5000, 0, &r[i]);
        }
        run(v);
        int winner = -1;
        for (int i = 0; i < NCONT; i++) {
            assert_int_equal(r[i].calls, 1);
            if (r[i].err == 0) {
                assert_int_equal(winner, -1); /* exactly one */
                winner = i;
            } else {
                assert_int_equal(r[i].err, ERR_CONFLICT);
            }
        }
        assert_true(winner >= 0);
        assert_int_equal(r[winner].info.token, expect);
        assert_true(r[winner].cache_epoch >= expect); /* R7: recorded before the answer */
        for (int i = 0; i < NCONT; i++) {
            if (i != winner) {
                /* "held", with the winner */
                assert_int_equal(r[i].info.token, expect);
                assert_string_equal(r[i].info.holder, holders[winner]);
                assert_true(r[i].info.live);
                assert_true(r[i].info.expires_in_ms > 0);
            }
        }
        struct res q;
        assert_int_equal(release(v, es[winner % nes], "hot", expect, r[winner].info.lease_id, &q),
                         0);
        expect++;
        set_time(v, v->now + 1);
    }
}

static void
test_32_contenders_one_gateway(void **state)
{
    struct env *v = *state;
    struct elect *e = new_elect(v, 5, true);
    contend_rounds(v, &e, 1, 20);
}

static void
test_32_contenders_four_gateways(void **state)
{
    struct env *v = *state;
    struct elect *es[4];
    for (int i = 0; i < 4; i++) {
        es[i] = new_elect(v, 5, true);
    }
    contend_rounds(v, es, 4, 20);
}

/* ---- lease expiry and waiting ---- */

static void
test_stopped_holder_replaced_same_gateway(void **state)
{
    struct env *v = *state;
    struct elect *e = new_elect(v, 5, true);
    struct res a, b, q;
    acquire_ok(v, e, "L", "A", 1000, &a);
    acquire(v, e, "L", "B", 1000, 10000, &b);
    run(v);
    assert_int_equal(b.calls, 0); /* waiting */
    advance(v, 300, 10);
    assert_int_equal(renew(v, e, "L", a.info.token, a.info.lease_id, &q), 0);
    uint64_t last_renewal = v->now;
    advance(v, 300, 10);
    assert_int_equal(renew(v, e, "L", a.info.token, a.info.lease_id, &q), 0);
    last_renewal = v->now;
    assert_int_equal(b.calls, 0);
    /* A stops renewing */
    advance(v, 3000, 10);
    assert_int_equal(b.calls, 1);
    assert_int_equal(b.err, 0);
    assert_int_equal(b.info.token, a.info.token + 1);
    uint64_t expiry = last_renewal + 1000;
    assert_true(b.at >= expiry);
    assert_true(b.at <= expiry + 250);
    /* A's renew of the superseded epoch: conflict, with the current holder */
    assert_int_equal(renew(v, e, "L", a.info.token, a.info.lease_id, &q), ERR_CONFLICT);
    assert_string_equal(q.info.holder, "B");
    assert_int_equal(q.info.token, b.info.token);
    /* and release of it too */
    assert_int_equal(release(v, e, "L", a.info.token, a.info.lease_id, &q), ERR_CONFLICT);
}

static void
test_stopped_holder_replaced_other_gateway(void **state)
{
    struct env *v = *state;
    struct elect *g1 = new_elect(v, 5, true);
    struct elect *g2 = new_elect(v, 5, true);
    struct res a, b, q;
    acquire_ok(v, g1, "L", "A", 1000, &a);
    acquire(v, g2, "L", "B", 1000, 10000, &b);
    run(v);
    assert_int_equal(b.calls, 0);
    uint64_t last_renewal = v->now;
    for (int i = 0; i < 5; i++) {
        advance(v, 330, 10);
        assert_int_equal(renew(v, g1, "L", a.info.token, a.info.lease_id, &q), 0);
        last_renewal = v->now;
        assert_int_equal(b.calls, 0); /* a renewing holder is never replaced */
    }
    advance(v, 3000, 10);
    assert_int_equal(b.calls, 1);
    assert_int_equal(b.err, 0);
    uint64_t expiry = last_renewal + 1000;
    assert_true(b.at >= expiry);
    assert_true(b.at <= expiry + 250);
    /* superseded on the other gateway too */
    assert_int_equal(renew(v, g1, "L", a.info.token, a.info.lease_id, &q), ERR_CONFLICT);
    assert_string_equal(q.info.holder, "B");
}

static void
test_observer_rule_without_store_times(void **state)
{
    struct env *v = *state;
    v->ms->times = false; /* no Last-Modified/Date: only the observer's own clock */
    struct elect *g1 = new_elect(v, 5, true);
    struct elect *g2 = new_elect(v, 5, true);
    struct res a, b;
    acquire_ok(v, g1, "L", "A", 1000, &a);
    uint64_t t0 = v->now;
    /* a fresh observer counts the record as just changed: held for a whole lease from now */
    advance(v, 900, 10);
    acquire(v, g2, "L", "B", 1000, 0, &b);
    run(v);
    assert_int_equal(b.err, ERR_CONFLICT);
    acquire(v, g2, "L", "B", 1000, 5000, &b);
    advance(v, 3000, 10);
    assert_int_equal(b.err, 0);
    assert_true(b.at >= t0 + 900 + 1000); /* never earlier than own observation + lease */
    assert_true(b.at <= t0 + 900 + 1000 + 250);
}

static void
test_wait_times_out_held(void **state)
{
    struct env *v = *state;
    struct elect *e = new_elect(v, 5, true);
    struct res a, b, q;
    acquire_ok(v, e, "L", "A", 1000, &a);
    acquire(v, e, "L", "B", 1000, 500, &b);
    uint64_t t0 = v->now;
    for (int i = 0; i < 10; i++) {
        advance(v, 100, 10);
        assert_int_equal(renew(v, e, "L", a.info.token, a.info.lease_id, &q), 0);
    }
    assert_int_equal(b.calls, 1);
    assert_int_equal(b.err, ERR_CONFLICT);
    assert_string_equal(b.info.holder, "A");
    assert_true(b.at >= t0 + 500 && b.at <= t0 + 520);
}

static void
test_cancel_waiting(void **state)
{
    struct env *v = *state;
    struct elect *e = new_elect(v, 5, true);
    struct res a, b, q;
    acquire_ok(v, e, "L", "A", 1000, &a);
    memset(&b, 0, sizeof(b));
    struct elect_call *call = NULL;
    assert_int_equal(elect_acquire(e, "L", "B", 1000, 5000, on_done, &b, &call), 0);
    run(v);
    elect_call_cancel(e, call);
    assert_int_equal(release(v, e, "L", a.info.token, a.info.lease_id, &q), 0);
    advance(v, 6000, 100);
    assert_int_equal(b.calls, 0);
    /* the lock was not granted to the cancelled waiter */
    struct elect_info info;
    assert_int_equal(elect_peek(e, "L", &info), 0);
    assert_int_equal(info.token, a.info.token);
    assert_true(info.released);
}

/* ---- the metrics hooks: lease events and backend call timing ---- */

struct lease_log {
    int n;
    enum elect_lease_event ev[16];
    uint64_t epoch[16];
    uint64_t until[16];
};

/* elect_lease_fn */
static void
on_lease(void *arg, const char *lock, enum elect_lease_event ev, uint64_t epoch, uint64_t until_ms)
{
    struct lease_log *l = arg;
    assert_string_equal(lock, "L");
    assert_true(l->n < 16);
    l->ev[l->n] = ev;
    l->epoch[l->n] = epoch;
    l->until[l->n] = until_ms;
    l->n++;
}

/* elect_be_timing_fn */
static void
on_timing(void *arg, enum elect_be_op op, uint64_t ns)
{
    unsigned *counts = arg;
    (void)ns;
    assert_true((unsigned)op <= ELECT_BE_DEL);
    counts[op]++;
}

static void
test_lease_observer_and_backend_timing(void **state)
{
    struct env *v = *state;
    struct elect_opts o;
    char gb[16];
    env_opts(v, &o, gb, sizeof(gb));
    o.backend = mem_backend_new(v->ms);
    unsigned counts[ELECT_BE_DEL + 1] = {0};
    elect_backend_set_timing(o.backend, on_timing, counts);
    struct elect *e = NULL;
    assert_int_equal(elect_new(&o, &e), 0);
    v->e[v->ne++] = e;
    assert_int_equal(elect_start(e), 0);
    run(v);
    assert_true(elect_ready(e, NULL));
    assert_true(counts[ELECT_BE_CREATE] >= 2); /* the self-test's creates were timed */
    struct lease_log l = {0};
    elect_set_lease_observer(e, on_lease, &l);
    struct res a, b, q;
    acquire_ok(v, e, "L", "A", 1000, &a);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.ev[0], ELECT_EV_GRANT);
    assert_int_equal(l.epoch[0], a.info.token);
    assert_true(l.until[0] > v->now && l.until[0] <= v->now + 1000);
    advance(v, 300, 10);
    assert_int_equal(renew(v, e, "L", a.info.token, a.info.lease_id, &q), 0);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.ev[1], ELECT_EV_RENEW);
    assert_true(l.until[1] > l.until[0]);
    /* a failed renewal is no event */
    assert_int_equal(renew(v, e, "L", a.info.token, "00", &q), ERR_DENIED);
    assert_int_equal(l.n, 2);
    advance(v, 3000, 10); /* A stops renewing: B takes over */
    acquire_ok(v, e, "L", "B", 1000, &b);
    assert_int_equal(l.n, 5);
    assert_int_equal(l.ev[2], ELECT_EV_EXPIRE);
    assert_int_equal(l.epoch[2], a.info.token);
    assert_int_equal(l.ev[3], ELECT_EV_GRANT);
    assert_int_equal(l.ev[4], ELECT_EV_TAKEOVER);
    assert_int_equal(l.epoch[4], b.info.token);
    assert_int_equal(release(v, e, "L", b.info.token, b.info.lease_id, &q), 0);
    assert_int_equal(l.n, 6);
    assert_int_equal(l.ev[5], ELECT_EV_RELEASE);
    assert_int_equal(l.until[5], 0);
    /* an acquire after a release is a grant, not a takeover */
    struct res c;
    acquire_ok(v, e, "L", "C", 1000, &c);
    assert_int_equal(l.n, 7);
    assert_int_equal(l.ev[6], ELECT_EV_GRANT);
    assert_true(counts[ELECT_BE_REPLACE] >= 3 && counts[ELECT_BE_GET] >= 1 &&
                counts[ELECT_BE_LIST] >= 1);
    /* calls still in flight when the election is freed (teardown): nothing leaks */
    struct res d;
    acquire(v, e, "M", "D", 1000, 0, &d);
}

/* ---- renew / release ---- */

static void
test_release_then_acquire_next_epoch_at_once(void **state)
{
    struct env *v = *state;
    struct elect *e = new_elect(v, 5, true);
    struct res a, b, c, q;
    acquire_ok(v, e, "L", "A", 60000, &a);
    acquire(v, e, "L", "W", 60000, 30000, &c); /* a waiter */
    run(v);
    assert_int_equal(c.calls, 0);
    assert_int_equal(release(v, e, "L", a.info.token, a.info.lease_id, &q), 0);
    /* no time passes: the waiter has it at once */
    assert_int_equal(c.calls, 1);
    assert_int_equal(c.err, 0);
    assert_int_equal(c.info.token, a.info.token + 1);
    assert_int_equal(release(v, e, "L", c.info.token, c.info.lease_id, &q), 0);
    assert_int_equal(release(v, e, "L", c.info.token, c.info.lease_id, &q), 0); /* idempotent */
    acquire_ok(v, e, "L", "B", 60000, &b);
    assert_int_equal(b.info.token, a.info.token + 2);
    /* renewing a released epoch is a conflict */
    assert_int_equal(renew(v, e, "L", c.info.token, c.info.lease_id, &q), ERR_CONFLICT);
}

static void
test_wrong_lease_id_denied(void **state)
{
    struct env *v = *state;
    struct elect *e = new_elect(v, 5, true);
    struct res a, q;
    acquire_ok(v, e, "L", "A", 60000, &a);
    char wrong[ELECT_LEASE_ID_HEX + 1];
    memcpy(wrong, a.info.lease_id, sizeof(wrong));
    wrong[0] = wrong[0] == 'a' ? 'b' : 'a';
    assert_int_equal(renew(v, e, "L", a.info.token, wrong, &q), ERR_DENIED);
    assert_int_equal(release(v, e, "L", a.info.token, wrong, &q), ERR_DENIED);
    assert_int_equal(renew(v, e, "L", a.info.token, "short", &q), ERR_DENIED);
    assert_int_equal(renew(v, e, "L", a.info.token, "", &q), ERR_DENIED);
    /* the lease is intact */
    assert_int_equal(renew(v, e, "L", a.info.token, a.info.lease_id, &q), 0);
    assert_true(q.info.live);
    /* the secret is not stored: only its SHA-256 */
    for (size_t i = 0; i < v->ms->nobjs; i++) {
        assert_null(strstr(v->ms->objs[i].body, a.info.lease_id));
    }
    /* unknown epoch */
    assert_int_equal(renew(v, e, "L", a.info.token + 5, a.info.lease_id, &q), ERR_NOTFOUND);
}

static void
test_renew_changes_body_and_etag(void **state)
{
    struct env *v = *state;
    struct elect *e = new_elect(v, 5, true);
    struct res a, q;
    acquire_ok(v, e, "L", "A", 60000, &a);
    char key[ELECT_KEY_MAX + 1];
    assert_int_equal(elect_lockfile_key("fg/", "L", a.info.token, key, sizeof(key)), 0);
    char prev[32];
    (void)snprintf(prev, sizeof(prev), "%s", mem_find(v->ms, key)->etag);
    for (int i = 1; i <= 5; i++) {
        /* even with the clock standing still: the counter changes the body */
        assert_int_equal(renew(v, e, "L", a.info.token, a.info.lease_id, &q), 0);
        struct mem_obj *o = mem_find(v->ms, key);
        assert_string_not_equal(o->etag, prev);
        (void)snprintf(prev, sizeof(prev), "%s", o->etag);
        struct elect_lockfile lf;
        assert_int_equal(elect_lockfile_decode(o->body, o->len, &lf), 0);
        assert_int_equal(lf.renewals, (uint64_t)i);
        assert_int_equal(q.info.renewals, (uint64_t)i);
    }
}

static void
test_renew_through_other_gateway(void **state)
{
    struct env *v = *state;
    struct elect *g1 = new_elect(v, 5, true);
    struct elect *g2 = new_elect(v, 5, true);
    struct res a, q;
    acquire_ok(v, g1, "L", "A", 60000, &a);
    /* alternate gateways: each one's cached ETag goes stale and is re-read */
    for (int i = 0; i < 4; i++) {
        assert_int_equal(renew(v, i % 2 ? g1 : g2, "L", a.info.token, a.info.lease_id, &q), 0);
    }
    assert_int_equal(release(v, g1, "L", a.info.token, a.info.lease_id, &q), 0);
}

/* ---- ambiguous creates: grant_id read-back ---- */

static void
test_grant_id_readback(void **state)
{
    struct env *v = *state;
    struct elect *e = new_elect(v, 5, true);
    struct res a, b, q;
    /* the create lands but the answer is a 500: read back, ours */
    v->ms->fault = MEM_FAULT_LAND_THEN_500;
    v->ms->fault_n = 1;
    acquire_ok(v, e, "L", "A", 1000, &a);
    assert_int_equal(a.info.token, 1);
    assert_int_equal(renew(v, e, "L", 1, a.info.lease_id, &q), 0); /* the lease works */
    assert_int_equal(release(v, e, "L", 1, a.info.lease_id, &q), 0);
    /* the create is lost with a timeout: read back finds nothing, created again */
    v->ms->fault = MEM_FAULT_LOST_TIMEOUT;
    v->ms->fault_n = 1;
    acquire_ok(v, e, "L", "B", 1000, &b);
    assert_int_equal(b.info.token, 2);
    assert_int_equal(release(v, e, "L", 2, b.info.lease_id, &q), 0);
    /* always lost: gives up with an error, nothing granted */
    v->ms->fault_n = 10;
    acquire(v, e, "L", "C", 1000, 0, &q);
    run(v);
    assert_int_equal(q.err, ERR_UPSTREAM);
    v->ms->fault_n = 0;
}

/* A create that landed but whose answer (a 500) came only after newer epochs
 * were granted elsewhere and it was collected: the read-back finds nothing,
 * and creating it again would put epoch 1 back below epoch 3 and grant it.
 * The guard LIST first finds the newer epochs: no grant, no file. */
static void
test_readback_absent_after_collection_creates_nothing(void **state)
{
    struct env *v = *state;
    struct elect *g1 = new_elect(v, 1, true);
    struct elect *g2 = new_elect(v, 1, true);
    struct res a, b, c, q;
    char key[ELECT_KEY_MAX + 1];
    ekey("L", 1, key, sizeof(key));
    v->ms->fault = MEM_FAULT_LAND_THEN_500;
    v->ms->fault_n = 1;
    mem_hold(v->ms, MEM_OP_CREATE, key, 1, true); /* it lands; its answer waits */
    acquire(v, g1, "L", "A", 1000, 0, &a);
    run(v);
    assert_int_equal(v->ms->nheld, 1);
    assert_int_equal(a.calls, 0);
    /* g2 sees epoch 1 unchanged for its lease, takes over, then grants again */
    acquire(v, g2, "L", "B", 1000, 10000, &b);
    advance(v, 3000, 10);
    assert_int_equal(b.err, 0);
    assert_int_equal(b.info.token, 2);
    assert_int_equal(release(v, g2, "L", 2, b.info.lease_id, &q), 0);
    acquire_ok(v, g2, "L", "C", 60000, &c);
    assert_int_equal(c.info.token, 3);
    advance(v, 1000, 10);
    assert_false(lockfile_at(v, "L", 1, NULL)); /* collected (keep_epochs 1) */
    /* now the 500 arrives */
    mem_land(v->ms, 0);
    run(v);
    assert_int_equal(a.calls, 1);
    assert_true(a.err != 0 || a.info.token != 1);
    assert_false(lockfile_at(v, "L", 1, NULL));
}

static void
test_losing_create_answered_500(void **state)
{
    struct env *v = *state;
    struct elect *g1 = new_elect(v, 5, true);
    struct elect *g2 = new_elect(v, 5, true);
    struct res a, b;
    /* both see the lock free, g1 wins; g2's create answers 500 (RGW): read back = held */
    acquire(v, g1, "L", "A", 5000, 0, &a);
    acquire(v, g2, "L", "B", 5000, 0, &b);
    v->ms->fault = MEM_FAULT_EXISTS_AS_500;
    v->ms->fault_n = 2;
    run(v);
    assert_int_equal(a.err, 0);
    assert_int_equal(b.err, ERR_CONFLICT);
    assert_string_equal(b.info.holder, "A");
    assert_int_equal(b.info.token, a.info.token);
}

/* ---- restart, GC, G4 ---- */

static void
test_restart_continues(void **state)
{
    struct env *v = *state;
    struct elect *e = new_elect(v, 5, true);
    struct res a, b, q;
    acquire_ok(v, e, "L", "A", 1000, &a);
    assert_int_equal(release(v, e, "L", a.info.token, a.info.lease_id, &q), 0);
    /* 3 s: a window read through another instance loses 1 s to whole-second store times */
    acquire_ok(v, e, "L", "B", 3000, &b);
    assert_int_equal(b.info.token, 2);
    /* "restart": a new instance over the same objects and store */
    elect_free(e);
    v->e[0] = NULL;
    struct elect *e2 = new_elect(v, 5, true);
    struct res c;
    acquire(v, e2, "L", "C", 1000, 0, &c);
    run(v);
    assert_int_equal(c.err, ERR_CONFLICT); /* B's lease is still on */
    assert_string_equal(c.info.holder, "B");
    /* B renews through the new instance with the lease_id it got before */
    assert_int_equal(renew(v, e2, "L", 2, b.info.lease_id, &q), 0);
    assert_int_equal(release(v, e2, "L", 2, b.info.lease_id, &q), 0);
    acquire_ok(v, e2, "L", "C", 1000, &c);
    assert_int_equal(c.info.token, 3);
    /* the LIST started after the cached epoch: cost does not grow with history */
    struct elect_info info;
    assert_int_equal(elect_peek(e2, "L", &info), 0);
    assert_int_equal(info.token, 3);
}

static void
test_gc_keeps_latest_never_lowers_fence(void **state)
{
    struct env *v = *state;
    struct elect *e = new_elect(v, 3, true);
    uint64_t highest = 0;
    assert_int_equal(store_fence_advance_sync(v->store, "G", 12, NULL, NULL, &highest), 0);
    struct res a, q;
    for (int i = 0; i < 10; i++) {
        acquire_ok(v, e, "G", "w", 1000, &a);
        assert_int_equal(release(v, e, "G", a.info.token, a.info.lease_id, &q), 0);
    }
    assert_int_equal(a.info.token, 10);
    advance(v, 5000, 100); /* GC runs */
    assert_int_equal(mem_count_prefix(v->ms, "fg/G/"), 3);
    char key[ELECT_KEY_MAX + 1];
    for (uint64_t ep = 8; ep <= 10; ep++) {
        assert_int_equal(elect_lockfile_key("fg/", "G", ep, key, sizeof(key)), 0);
        assert_non_null(mem_find(v->ms, key));
    }
    /* keep_epochs = 1: only the latest stays */
    struct elect *e1 = new_elect(v, 1, true);
    acquire_ok(v, e1, "G", "w", 1000, &a);
    assert_int_equal(a.info.token, 11);
    advance(v, 5000, 100);
    assert_int_equal(mem_count_prefix(v->ms, "fg/G/"), 1);
    assert_int_equal(elect_lockfile_key("fg/", "G", 11, key, sizeof(key)), 0);
    assert_non_null(mem_find(v->ms, key));
    /* the fence table is untouched */
    struct store_fence f;
    assert_int_equal(store_fence_get(v->store, "G", &f, NULL), 0);
    assert_int_equal(f.token, 12);
    /* and the next epoch continues */
    assert_int_equal(release(v, e1, "G", 11, a.info.lease_id, &q), 0);
    acquire_ok(v, e, "G", "w", 1000, &a);
    assert_int_equal(a.info.token, 12);
}

/* A newer epoch learned while the grant's epoch is being recorded in the
 * election cache (a window read of another gateway's takeover, after a slow
 * commit): the answer would name the newer epoch with this call's lease_id.
 * It goes to nobody: 409, no lease_id (G1). */
static void
test_grant_superseded_while_recorded_goes_to_nobody(void **state)
{
    struct env *v = *state;
    struct elect *e = new_elect(v, 5, true);
    struct res a;
    acquire(v, e, "S", "w", 1000, 0, &a);
    while (mem_run(v->ms) > 0) {
        /* the create lands; the election cache's commit is left undispatched */
    }
    assert_int_equal(a.calls, 0);
    struct elect_lock *lk = elect_lock_find(e, "S", false);
    assert_non_null(lk);
    elect_latest_raise(lk, 2);
    run(v);
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.err, ERR_CONFLICT);
    assert_int_equal(a.info.lease_id[0], '\0');
    assert_int_equal(a.info.token, 2); /* the 409 names the latest, and no lease of it */
}

static void
test_epoch_check_g4(void **state)
{
    struct env *v = *state;
    struct elect *g1 = new_elect(v, 5, true);
    struct elect *g2 = new_elect(v, 5, true);
    struct res a, q;
    acquire_ok(v, g1, "K", "w", 60000, &a);
    struct check_res c = {0};
    assert_int_equal(elect_epoch_check(g1, "K", 1, on_check, &c), 1);
    /* a token never granted: looked up once, refused */
    assert_int_equal(elect_epoch_check(g1, "K", 2, on_check, &c), 0);
    assert_int_equal(c.calls, 0);
    run(v);
    assert_int_equal(c.calls, 1);
    assert_int_equal(c.err, 0);
    assert_false(c.granted);
    /* an epoch granted by another gateway: found, recorded, then granted */
    assert_int_equal(release(v, g1, "K", 1, a.info.lease_id, &q), 0);
    acquire_ok(v, g2, "K", "w", 60000, &a);
    assert_int_equal(a.info.token, 2);
    assert_int_equal(release(v, g2, "K", 2, a.info.lease_id, &q), 0);
    acquire_ok(v, g2, "K", "w", 60000, &a);
    assert_int_equal(a.info.token, 3);
    memset(&c, 0, sizeof(c));
    /* g1's memory says 1, but the election cache (shared here) says 3: */
    assert_int_equal(elect_epoch_check(g1, "K", 3, on_check, &c), 1);
    assert_int_equal(elect_epoch_check(g1, "K", 0, on_check, &c), ERR_INVAL);
    assert_int_equal(elect_epoch_check(g1, "bad/", 1, on_check, &c), ERR_INVAL);
}

static void
test_epoch_check_reads_file_and_records(void **state)
{
    struct env *v = *state;
    /* g_nostore has no store: grants by it are not in the cache */
    struct elect_opts o;
    elect_opts_init(&o);
    o.base = v->base;
    o.backend = mem_backend_new(v->ms);
    o.prefix = "fg/";
    o.granted_by = "nostore";
    struct elect *g0 = NULL;
    assert_int_equal(elect_new(&o, &g0), 0);
    v->e[v->ne++] = g0;
    assert_int_equal(elect_start(g0), 0);
    run(v);
    assert_true(elect_ready(g0, NULL));
    struct res a;
    acquire_ok(v, g0, "M", "w", 60000, &a);
    struct elect *g1 = new_elect(v, 5, true);
    struct check_res c = {0};
    assert_int_equal(elect_epoch_check(g1, "M", 1, on_check, &c), 0);
    run(v);
    assert_int_equal(c.calls, 1);
    assert_true(c.granted);
    struct store_elect se;
    assert_int_equal(store_elect_get(v->store, "M", &se), 0);
    assert_int_equal(se.epoch, 1); /* recorded before "granted" was said */
}

/* ---- get / long-poll ---- */

static void
test_get_and_long_poll(void **state)
{
    struct env *v = *state;
    struct elect *e = new_elect(v, 5, true);
    struct res g, a, q;
    memset(&g, 0, sizeof(g));
    assert_int_equal(elect_get(e, "P", 0, 0, on_done, &g, NULL), 0);
    run(v);
    assert_int_equal(g.err, 0);
    assert_int_equal(g.info.token, 0);
    acquire_ok(v, e, "P", "A", 60000, &a);
    memset(&g, 0, sizeof(g));
    assert_int_equal(elect_get(e, "P", 0, 0, on_done, &g, NULL), 0);
    run(v);
    assert_int_equal(g.info.token, 1);
    assert_string_equal(g.info.holder, "A");
    assert_true(g.info.live);
    assert_string_equal(g.info.lease_id, ""); /* never in a get */
    /* long-poll after=1: woken by the release at once */
    memset(&g, 0, sizeof(g));
    assert_int_equal(elect_get(e, "P", 1, 30000, on_done, &g, NULL), 0);
    run(v);
    advance(v, 200, 10);
    assert_int_equal(g.calls, 0);
    uint64_t t = v->now;
    assert_int_equal(release(v, e, "P", 1, a.info.lease_id, &q), 0);
    assert_int_equal(g.calls, 1);
    assert_int_equal(g.at, t);
    assert_true(g.info.released);
    /* long-poll ends at wait_ms with the unchanged record */
    acquire_ok(v, e, "P", "B", 60000, &a);
    memset(&g, 0, sizeof(g));
    assert_int_equal(elect_get(e, "P", 2, 300, on_done, &g, NULL), 0);
    run(v);
    t = v->now;
    advance(v, 1000, 10);
    assert_int_equal(g.calls, 1);
    assert_true(g.at >= t + 300 && g.at <= t + 310);
    assert_int_equal(g.info.token, 2);
    /* a change made through another gateway is seen within the poll interval */
    struct elect *g2 = new_elect(v, 5, true);
    memset(&g, 0, sizeof(g));
    assert_int_equal(elect_get(g2, "P", 2, 30000, on_done, &g, NULL), 0);
    run(v);
    t = v->now;
    assert_int_equal(release(v, e, "P", 2, a.info.lease_id, &q), 0);
    advance(v, 2000, 10);
    assert_int_equal(g.calls, 1);
    assert_true(g.at <= t + 1000 + 10);
}

/* Callbacks that start new calls on the same lock (the HTTP layer may). */
struct chain {
    struct elect *e;
    int grants;
    int releases;
    uint64_t last;
    struct res other; /* the competing acquires */
};

static void on_chain_acquired(void *arg, int err, const struct elect_info *info);

static void
on_chain_released(void *arg, int err, const struct elect_info *info)
{
    struct chain *ch = arg;
    (void)info;
    assert_int_equal(err, 0);
    ch->releases++;
    if (ch->grants < 10) {
        assert_int_equal(elect_acquire(ch->e, "R", "w", 1000, 0, on_chain_acquired, ch, NULL), 0);
    }
}

static void
on_chain_acquired(void *arg, int err, const struct elect_info *info)
{
    struct chain *ch = arg;
    assert_int_equal(err, 0);
    assert_int_equal(info->token, ch->last + 1);
    ch->last = info->token;
    ch->grants++;
    /* a second, competing acquire queued from inside the callback: held */
    assert_int_equal(elect_acquire(ch->e, "R", "x", 1000, 0, on_done, &ch->other, NULL), 0);
    assert_int_equal(
        elect_release(ch->e, "R", info->token, info->lease_id, on_chain_released, ch, NULL), 0);
}

static void
test_reentrant_callbacks(void **state)
{
    struct env *v = *state;
    struct chain ch = {.e = new_elect(v, 5, true)};
    assert_int_equal(elect_acquire(ch.e, "R", "w", 1000, 0, on_chain_acquired, &ch, NULL), 0);
    run(v);
    assert_int_equal(ch.grants, 10);
    assert_int_equal(ch.releases, 10);
    assert_int_equal(ch.other.calls, 10);
    assert_int_equal(ch.other.err, ERR_CONFLICT);
}

static void
test_bad_arguments(void **state)
{
    struct env *v = *state;
    struct elect *e = new_elect(v, 5, true);
    struct res r;
    assert_int_equal(elect_acquire(e, "a/b", "w", 0, 0, on_done, &r, NULL), ERR_INVAL);
    assert_int_equal(elect_acquire(e, "", "w", 0, 0, on_done, &r, NULL), ERR_INVAL);
    assert_int_equal(elect_acquire(e, "ok", "", 0, 0, on_done, &r, NULL), ERR_INVAL);
    assert_int_equal(elect_acquire(e, "ok", "w\n", 0, 0, on_done, &r, NULL), ERR_INVAL);
    assert_int_equal(elect_acquire(e, "ok", "w", 10, 0, on_done, &r, NULL), ERR_INVAL);
    assert_int_equal(elect_acquire(e, "ok", "w", 300001, 0, on_done, &r, NULL), ERR_INVAL);
    assert_int_equal(elect_acquire(e, "ok", "w", 0, 0, NULL, &r, NULL), ERR_INVAL);
    assert_int_equal(elect_renew(e, "ok", 0, "x", on_done, &r, NULL), ERR_INVAL);
    assert_int_equal(elect_get(e, "..", 0, 0, on_done, &r, NULL), ERR_INVAL);
    struct elect_info info;
    assert_int_equal(elect_peek(e, "never", &info), ERR_NOTFOUND);
}

static void
test_unreadable_lock_file_refused(void **state)
{
    struct env *v = *state;
    struct elect *e = new_elect(v, 5, true);
    struct res a, q;
    acquire_ok(v, e, "U", "A", 1000, &a);
    assert_int_equal(release(v, e, "U", 1, a.info.lease_id, &q), 0);
    /* a newer gateway wrote epoch 2 in a format this build does not know */
    char key[ELECT_KEY_MAX + 1];
    assert_int_equal(elect_lockfile_key("fg/", "U", 2, key, sizeof(key)), 0);
    const char *body = "{\"version\":2,\"lock\":\"U\",\"epoch\":2}";
    mem_put(v->ms, NULL, key, body, strlen(body));
    struct elect *e2 = new_elect(v, 5, true);
    acquire(v, e2, "U", "B", 1000, 0, &q);
    run(v);
    assert_int_equal(q.err, ERR_VERSION); /* nothing is granted over it */
}

int
main(void)
{
    (void)log_set_level(getenv("FENCEGATE_TEST_LOG") != NULL ? getenv("FENCEGATE_TEST_LOG")
                                                             : "error");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lease_rules),
        cmocka_unit_test_setup_teardown(test_lease_observer_and_backend_timing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_selftest_forms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_selftest_refuses_ignored_if_none_match, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_selftest_refuses_ignored_if_match, setup, teardown),
        cmocka_unit_test_setup_teardown(test_selftest_retries_transient, setup, teardown),
        cmocka_unit_test_setup_teardown(test_32_contenders_one_gateway, setup, teardown),
        cmocka_unit_test_setup_teardown(test_32_contenders_four_gateways, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stopped_holder_replaced_same_gateway, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stopped_holder_replaced_other_gateway, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_observer_rule_without_store_times, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_times_out_held, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_waiting, setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_then_acquire_next_epoch_at_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_wrong_lease_id_denied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_renew_changes_body_and_etag, setup, teardown),
        cmocka_unit_test_setup_teardown(test_renew_through_other_gateway, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grant_id_readback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_readback_absent_after_collection_creates_nothing,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_losing_create_answered_500, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_continues, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gc_keeps_latest_never_lowers_fence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grant_superseded_while_recorded_goes_to_nobody, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_epoch_check_g4, setup, teardown),
        cmocka_unit_test_setup_teardown(test_epoch_check_reads_file_and_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_and_long_poll, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reentrant_callbacks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreadable_lock_file_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
