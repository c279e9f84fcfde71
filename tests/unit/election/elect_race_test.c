/*
 * Unit tests for election/elect_seq.c and elect_window.c under races: a
 * takeover of a run-out lease against renewals landing before and after it
 * (compare-and-swap on the epoch file, issue item 8), and reads of an older
 * epoch that return after a newer one was learnt (issue item 7).  Pinned
 * clock, in-memory backend that holds and reorders operations, real store;
 * the harness is elect_harness.h.
 */
#include "elect_harness.h"

/* ---- takeover by compare-and-swap (issue item 8) ---- */

#define KEY1 "T/epoch-00000000000000000001"

/* g1 grants A epoch 1 (lease 1 s); g2 has B waiting for it.  Returns A's grant time. */
static uint64_t
takeover_setup(struct env *v, struct elect **g1, struct elect **g2, struct res *a, struct res *b)
{
    *g1 = new_elect(v, 5, true);
    *g2 = new_elect(v, 5, true);
    acquire_ok(v, *g1, "T", "A", 1000, a);
    uint64_t t0 = v->now;
    acquire(v, *g2, "T", "B", 1000, 10000, b);
    run(v);
    assert_int_equal(b->calls, 0);
    return t0;
}

static void
test_takeover_expires_before_create(void **state)
{
    struct env *v = *state;
    struct elect *g1, *g2;
    struct res a, b, q;
    (void)takeover_setup(v, &g1, &g2, &a, &b);
    /* A stops renewing; B's expiry of epoch 1 is held on its way to the store */
    mem_hold(v->ms, MEM_OP_REPLACE, KEY1, 1, false);
    advance_until(v, v->ms->nheld == 1, 3000);
    struct elect_lockfile lf;
    assert_true(lockfile_at(v, "T", 1, &lf));
    assert_false(lf.expired);
    /* nothing is created before the expiry has landed */
    advance(v, 500, 10);
    assert_false(lockfile_at(v, "T", 2, NULL));
    assert_int_equal(b.calls, 0);
    mem_land(v->ms, 0);
    run(v);
    assert_int_equal(b.calls, 1);
    assert_int_equal(b.err, 0);
    assert_int_equal(b.info.token, 2);
    /* epoch 1 was rewritten expired:true (a new version), then epoch 2 created */
    assert_true(lockfile_at(v, "T", 1, &lf));
    assert_true(lf.expired);
    assert_int_equal(lf.renewals, 1);
    assert_string_equal(lf.holder, "A");
    assert_true(lockfile_at(v, "T", 2, &lf));
    assert_string_equal(lf.holder, "B");
    assert_int_equal(renew(v, g1, "T", 1, a.info.lease_id, &q), ERR_CONFLICT);
}

static void
test_takeover_loses_to_renewal_landing_first(void **state)
{
    struct env *v = *state;
    struct elect *g1, *g2;
    struct res a, b, q;
    uint64_t t0 = takeover_setup(v, &g1, &g2, &a, &b);
    /* A renews at t0 + 900, inside its window; the write is slow to reach the store */
    advance(v, 900, 10);
    mem_hold(v->ms, MEM_OP_REPLACE, KEY1, 1, false);
    memset(&q, 0, sizeof(q));
    assert_int_equal(elect_renew(g1, "T", 1, a.info.lease_id, on_done, &q, NULL), 0);
    run(v);
    assert_int_equal(v->ms->nheld, 1);
    assert_int_equal(q.calls, 0);
    /* B sees epoch 1 unchanged for its lease, judges it run out and sends its expiry */
    mem_hold(v->ms, MEM_OP_REPLACE, KEY1, 1, false);
    advance_until(v, v->ms->nheld == 2, 3000);
    assert_true(v->now >= t0 + 1000);
    /* A's renewal lands between B's judgement and B's expiry */
    mem_land(v->ms, 0);
    mem_land(v->ms, 0);
    uint64_t landed = v->now;
    run(v);
    assert_int_equal(q.calls, 1);
    assert_int_equal(q.err, 0); /* renewed ... */
    struct elect_lockfile lf;
    assert_true(lockfile_at(v, "T", 1, &lf));
    assert_false(lf.expired); /* ... B's expiry failed on its If-Match ... */
    assert_int_equal(lf.renewals, 1);
    assert_false(lockfile_at(v, "T", 2, NULL)); /* ... and B created nothing: it waits again */
    assert_int_equal(b.calls, 0);
    advance(v, 500, 10);
    assert_false(lockfile_at(v, "T", 2, NULL));
    assert_int_equal(b.calls, 0);
    /* A stops: B takes over once the renewed lease has run out on its clock */
    advance(v, 3000, 10);
    assert_int_equal(b.calls, 1);
    assert_int_equal(b.err, 0);
    assert_int_equal(b.info.token, 2);
    assert_true(b.at >= landed + 1000);
}

static void
test_renewal_landing_after_takeover_refused(void **state)
{
    struct env *v = *state;
    struct elect *g1, *g2;
    struct res a, b, q;
    (void)takeover_setup(v, &g1, &g2, &a, &b);
    advance(v, 900, 10);
    mem_hold(v->ms, MEM_OP_REPLACE, KEY1, 1, false);
    memset(&q, 0, sizeof(q));
    assert_int_equal(elect_renew(g1, "T", 1, a.info.lease_id, on_done, &q, NULL), 0);
    run(v);
    assert_int_equal(v->ms->nheld, 1);
    /* B's expiry lands first and B creates epoch 2 */
    advance_until(v, b.calls == 1, 3000);
    assert_int_equal(b.err, 0);
    assert_int_equal(b.info.token, 2);
    /* A's renewal, sent inside its window, reaches the store only now: refused */
    mem_land(v->ms, 0);
    run(v);
    assert_int_equal(q.calls, 1);
    assert_int_equal(q.err, ERR_CONFLICT);
    assert_int_equal(q.info.token, 2);
    assert_string_equal(q.info.holder, "B");
    struct elect_lockfile lf;
    assert_true(lockfile_at(v, "T", 1, &lf));
    assert_true(lf.expired); /* not revived */
}

/* ---- decisions only on the latest record (issue item 7) ---- */

/* X (store, shared) and Y (no store of its own here, shared): two gateways. */
static void
two_gateways(struct env *v, uint32_t keep_x, struct elect **x, struct elect **y)
{
    struct elect_opts o;
    char gb[16];
    env_opts(v, &o, gb, sizeof(gb));
    o.keep_epochs = keep_x;
    o.shared = true;
    *x = new_elect_o(v, &o, true);
    env_opts(v, &o, gb, sizeof(gb));
    o.store = NULL; /* its own election cache would not know X's grants either */
    o.shared = true;
    *y = new_elect_o(v, &o, true);
}

/*
 * X grants epoch 1 and releases it; Y's acquire reads epoch 1 (released) and
 * the answer (answer_late) or the request itself is held; X grants epoch 2.
 * Returns with Y's read still held.
 */
static void
stale_read_setup(struct env *v, struct elect *x, struct elect *y, bool answer_late, struct res *c,
                 struct res *b)
{
    struct res a, q;
    acquire_ok(v, x, "S", "A", 60000, &a);
    assert_int_equal(release(v, x, "S", 1, a.info.lease_id, &q), 0);
    mem_hold(v->ms, MEM_OP_GET, "S/epoch-00000000000000000001", 1, answer_late);
    acquire(v, y, "S", "C", 60000, 0, c);
    run(v);
    assert_int_equal(v->ms->nheld, 1);
    assert_int_equal(c->calls, 0);
    acquire(v, x, "S", "B", 60000, 10000, b);
    advance_until(v, b->calls == 1, 10000); /* the shared hand-over wait */
    assert_int_equal(b->err, 0);
    assert_int_equal(b->info.token, 2);
}

/* Y's stale read finally returns: Y must not create epoch 3 over B's live lease. */
static void
stale_read_land(struct env *v, struct res *c)
{
    mem_land(v->ms, 0);
    run(v);
    assert_int_equal(c->calls, 1);
    assert_int_equal(c->err, ERR_CONFLICT);
    assert_int_equal(c->info.token, 2);
    assert_string_equal(c->info.holder, "B");
    assert_false(lockfile_at(v, "S", 3, NULL));
}

static void
test_stale_read_after_g4_lookup_ignored(void **state)
{
    struct env *v = *state;
    struct elect *x, *y;
    struct res b, c;
    two_gateways(v, 5, &x, &y);
    stale_read_setup(v, x, y, true, &c, &b);
    /* a write carrying epoch 2 reaches Y: its G4 lookup reads epoch 2 */
    struct check_res ck = {0};
    assert_int_equal(elect_epoch_check(y, "S", 2, on_check, &ck), 0);
    run(v);
    assert_true(ck.granted);
    struct elect_window w;
    assert_int_equal(elect_window_peek(y, "S", 2, v->now, &w), 0);
    assert_int_equal(w.state, ELECT_WIN_OPEN);
    uint64_t until = w.until;
    advance(v, 100, 10); /* a re-read now would give a later window */
    unsigned long gets = v->ms->n_get;
    stale_read_land(v, &c);
    assert_int_equal(v->ms->n_get, gets); /* no re-read was needed */
    /* the older record was ignored: epoch 2's record and window are intact */
    assert_int_equal(elect_window_peek(y, "S", 2, v->now, &w), 0);
    assert_int_equal(w.state, ELECT_WIN_OPEN);
    assert_int_equal(w.until, until);
    struct elect_info info;
    assert_int_equal(elect_peek(y, "S", &info), 0);
    assert_int_equal(info.token, 2);
    assert_string_equal(info.holder, "B");
}

static void
test_stale_read_after_window_list_not_free(void **state)
{
    struct env *v = *state;
    struct elect *x, *y;
    struct res b, c;
    two_gateways(v, 1, &x, &y); /* X keeps only the latest epoch file */
    stale_read_setup(v, x, y, true, &c, &b);
    advance_until(v, !lockfile_at(v, "S", 1, NULL), 5000); /* X's GC */
    /* a write carrying epoch 1 reaches Y: the file is gone, the LIST finds epoch 2 */
    struct win_res r;
    window_read(v, y, "S", 1, &r);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.w.state, ELECT_WIN_SUPERSEDED);
    assert_int_equal(r.w.latest, 2);
    stale_read_land(v, &c);
}

static void
test_stale_read_gone_after_g4_lookup_not_free(void **state)
{
    struct env *v = *state;
    struct elect *x, *y;
    struct res b, c;
    two_gateways(v, 1, &x, &y);
    stale_read_setup(v, x, y, false, &c, &b); /* Y's GET of epoch 1 reaches the store late */
    advance_until(v, !lockfile_at(v, "S", 1, NULL), 5000);
    struct check_res ck = {0};
    assert_int_equal(elect_epoch_check(y, "S", 2, on_check, &ck), 0);
    run(v);
    assert_true(ck.granted);
    stale_read_land(v, &c); /* its GET finds epoch 1 gone */
}

/* ---- renewals racing takeovers, in random orders ---- */

struct race {
    struct env *v;
    char lock[16];
    int started;
    int ok;
    int conflict;
    uint64_t last_ok; /* mono ms of the last renewal answered 0 (it landed then) */
};

/* elect_done_fn for the race's renewals: a renewal answered 0 is never superseded */
static void
on_race_renewed(void *arg, int err, const struct elect_info *info)
{
    struct race *r = arg;
    (void)info;
    if (err == 0) {
        struct elect_lockfile lf;
        assert_true(lockfile_at(r->v, r->lock, 1, &lf));
        assert_false(lf.expired);
        assert_false(lockfile_at(r->v, r->lock, 2, NULL));
        r->ok++;
        r->last_ok = clock_mono_ms();
    } else {
        assert_int_equal(err, ERR_CONFLICT);
        r->conflict++;
    }
}

static uint32_t
lcg(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 16) & 0x7fff;
}

static void
test_renewals_race_takeover_random(void **state)
{
    struct env *v = *state;
    struct elect *g[2] = {new_elect(v, 5, true), new_elect(v, 5, true)};
    int oks = 0, conflicts = 0;
    for (uint32_t seed = 1; seed <= 20; seed++) {
        uint32_t s = seed;
        struct race r = {.v = v};
        (void)snprintf(r.lock, sizeof(r.lock), "race%u", seed);
        char key[ELECT_KEY_MAX + 1];
        ekey(r.lock, 1, key, sizeof(key));
        struct res a, b;
        acquire_ok(v, g[lcg(&s) % 2], r.lock, "A", 1000, &a);
        acquire(v, g[lcg(&s) % 2], r.lock, "B", 1000, 20000, &b);
        run(v);
        uint64_t stop = v->now + 3000; /* A renews until then, B waits */
        while (b.calls == 0) {
            assert_true(v->now < stop + 10000);
            uint32_t dice = lcg(&s) % 100;
            if (v->now < stop && r.started == r.ok + r.conflict && dice < 12) {
                if (lcg(&s) % 2 == 0) {
                    /* the next one or two writes of epoch 1 (renewals, B's expiry) are slow */
                    mem_hold(v->ms, MEM_OP_REPLACE, key, 1 + (int)(lcg(&s) % 2), false);
                }
                r.started++;
                assert_int_equal(elect_renew(g[lcg(&s) % 2], r.lock, 1, a.info.lease_id,
                                             on_race_renewed, &r, NULL),
                                 0);
            } else if (v->ms->nheld > 0 && dice < 30) {
                mem_land(v->ms, lcg(&s) % v->ms->nheld);
            }
            run(v);
            advance(v, 5 + lcg(&s) % 120, 10);
        }
        v->ms->hold_n = 0;
        while (v->ms->nheld > 0) {
            mem_land(v->ms, 0);
            run(v);
        }
        advance(v, 100, 10);
        assert_int_equal(r.started, r.ok + r.conflict);
        assert_int_equal(b.err, 0);
        assert_int_equal(b.info.token, 2);
        struct elect_lockfile lf;
        assert_true(lockfile_at(v, r.lock, 1, &lf));
        assert_true(lf.expired);                            /* taken over by compare-and-swap */
        assert_true(r.ok == 0 || b.at >= r.last_ok + 1000); /* never inside a renewed lease */
        oks += r.ok;
        conflicts += r.conflict;
    }
    assert_true(oks > 0 && conflicts > 0); /* both outcomes were seen */
}

int
main(void)
{
    (void)log_set_level(getenv("FENCEGATE_TEST_LOG") != NULL ? getenv("FENCEGATE_TEST_LOG")
                                                             : "error");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_takeover_expires_before_create, setup, teardown),
        cmocka_unit_test_setup_teardown(test_takeover_loses_to_renewal_landing_first, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_renewal_landing_after_takeover_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_stale_read_after_g4_lookup_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_read_after_window_list_not_free, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_stale_read_gone_after_g4_lookup_not_free, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_renewals_race_takeover_random, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
