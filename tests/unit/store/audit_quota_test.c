/* tests/unit/store/audit_quota_test.c: store/audit_quota.c: the per-lock
 * audit quota keeps a lock's first and newest records and counts the rest;
 * other locks' records are untouched; retention by age and count still
 * applies and keeps the counters right; a store from before the quota is
 * counted on open. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/clock.h"
#include "store/store_int.h"
#include "testutil.h"

static struct store *
open_q(const char *dir, uint64_t per_lock, uint64_t max_records, uint64_t max_age_ms)
{
    return tu_open_retention(dir, max_records, max_age_ms, &per_lock);
}

static void
refuse(struct store *s, int64_t t, const char *lock, uint64_t token, const char *rid)
{
    struct store_audit_rec r = {.time_ms = t,
                                .kind = STORE_AUDIT_STALE,
                                .token = token,
                                .current = token + 1,
                                .lock = lock,
                                .principal = "zombie",
                                .key = "k",
                                .request_id = rid};
    assert_int_equal(store_audit_append_sync(s, &r, NULL), 0);
}

/* The request ids of a lock's records, comma-separated, oldest first. */
struct ids {
    char s[8192];
    int n;
};

static int
on_rec(void *arg, const struct store_audit_rec *r)
{
    struct ids *a = arg;
    size_t used = strlen(a->s);
    (void)snprintf(a->s + used, sizeof(a->s) - used, "%s,", r->request_id);
    a->n++;
    return 0;
}

static void
ids_of(struct store *s, const char *lock, struct ids *a)
{
    memset(a, 0, sizeof(*a));
    struct store_audit_query q = {.lock = lock, .limit = 1000};
    assert_int_equal(store_audit_query(s, &q, on_rec, a, NULL), 0);
}

/* A flood on one lock keeps its first record and its newest quota - 1. */
static void
test_first_and_newest_kept(void **state)
{
    struct store *s = open_q(*state, 4, 0, 0);
    refuse(s, 1000, "quiet", 1, "q1");
    for (int i = 1; i <= 10; i++) {
        char rid[16];
        (void)snprintf(rid, sizeof(rid), "z%d", i);
        refuse(s, 2000 + i, "flood", 7, rid);
    }
    refuse(s, 3000, "quiet", 2, "q2");
    struct ids a;
    ids_of(s, "flood", &a);
    assert_string_equal(a.s, "z1,z8,z9,z10,");
    ids_of(s, "quiet", &a);
    assert_string_equal(a.s, "q1,q2,");
    uint64_t kept = 0, dropped = 0;
    assert_int_equal(store_audit_lock_stats(s, "flood", &kept, &dropped), 0);
    assert_int_equal(kept, 4);
    assert_int_equal(dropped, 6);
    assert_int_equal(store_audit_lock_stats(s, "quiet", &kept, &dropped), 0);
    assert_int_equal(kept, 2);
    assert_int_equal(dropped, 0);
    assert_int_equal(store_audit_lock_stats(s, "never", &kept, &dropped), 0);
    assert_int_equal(kept + dropped, 0);
    uint64_t n = 0;
    assert_int_equal(store_audit_count(s, &n), 0);
    assert_int_equal(n, 6);
    store_close(s);
}

/* The global count bound alone would let the flood push the quiet lock out;
 * with the quota it cannot. */
static void
test_quiet_lock_survives_count_bound(void **state)
{
    struct store *s = open_q(*state, 5, 8, 0);
    refuse(s, 1000, "quiet", 1, "q1");
    for (int i = 1; i <= 200; i++) {
        char rid[16];
        (void)snprintf(rid, sizeof(rid), "z%d", i);
        refuse(s, 2000 + i, "flood", 7, rid);
    }
    struct ids a;
    ids_of(s, "quiet", &a);
    assert_string_equal(a.s, "q1,");
    ids_of(s, "flood", &a);
    assert_string_equal(a.s, "z1,z197,z198,z199,z200,");
    store_close(s);
}

/* Retention by age deletes whole history, flood or not, and uncounts it. */
static void
test_age_retention_and_counters(void **state)
{
    struct store *s = open_q(*state, 3, 0, 10000);
    for (int i = 1; i <= 6; i++) {
        char rid[16];
        (void)snprintf(rid, sizeof(rid), "z%d", i);
        refuse(s, 1000 + i, "flood", 7, rid);
    }
    refuse(s, 50000, "flood", 7, "late");
    uint64_t deleted = 0;
    bool more = true;
    assert_int_equal(store_audit_prune_sync(s, 20000, 100, &deleted, &more), 0);
    assert_int_equal(deleted, 2); /* of the early ones only z1 (first) and z6 were left */
    uint64_t kept = 0, dropped = 0;
    assert_int_equal(store_audit_lock_stats(s, "flood", &kept, &dropped), 0);
    struct ids a;
    ids_of(s, "flood", &a);
    assert_int_equal((uint64_t)a.n, kept);
    assert_int_equal(dropped, 4);
    store_close(s);
}

/* What a completion callback checks: its record is there when it runs. */
struct probe {
    struct store *s; /* the store */
    char rid[16];    /* the record's request id */
    int *done;       /* callbacks run */
    int *missing;    /* callbacks whose record was already gone */
};

static void
on_committed(void *arg, int err, uint64_t seq)
{
    struct probe *p = arg;
    struct ids a;
    char want[20];
    (void)seq;
    assert_int_equal(err, 0);
    ids_of(p->s, "flood", &a);
    (void)snprintf(want, sizeof(want), "%s,", p->rid);
    if (strstr(a.s, want) == NULL) {
        (*p->missing)++;
    }
    (*p->done)++;
}

/* Records committed by one transaction are never dropped by it: G7 answers
 * after the commit, so the id the client gets is there when it is answered. */
static void
test_same_transaction_protected(void **state)
{
    struct store *s = open_q(*state, 2, 0, 0);
    refuse(s, 1000, "flood", 7, "z0");
    int done = 0;
    int missing = 0;
    struct probe p[10];
    for (int i = 0; i < 10; i++) {
        p[i] = (struct probe){.s = s, .done = &done, .missing = &missing};
        (void)snprintf(p[i].rid, sizeof(p[i].rid), "z%d", i + 1);
        struct store_audit_rec r = {.time_ms = 1001 + i,
                                    .kind = STORE_AUDIT_STALE,
                                    .token = 7,
                                    .lock = "flood",
                                    .request_id = p[i].rid};
        assert_int_equal(store_audit_append(s, &r, on_committed, &p[i]), 0);
    }
    tu_wait(s, &done, 10);
    assert_int_equal(done, 10);
    assert_int_equal(missing, 0);
    struct ids a;
    ids_of(s, "flood", &a);
    assert_true(strstr(a.s, "z0,") == a.s); /* the first occurrence */
    assert_non_null(strstr(a.s, "z10,"));   /* the last */
    uint64_t kept = 0, dropped = 0;
    assert_int_equal(store_audit_lock_stats(s, "flood", &kept, &dropped), 0);
    assert_int_equal(kept, (uint64_t)a.n);
    assert_int_equal(kept + dropped, 11);
    /* the next transaction brings the lock back towards its quota */
    refuse(s, 2000, "flood", 7, "z11");
    assert_int_equal(store_audit_lock_stats(s, "flood", &kept, &dropped), 0);
    assert_true(kept < 11);
    store_close(s);
}

/* A store whose quota table is missing (from before it) is counted on open. */
static void
test_rebuild_counts(void **state)
{
    struct store *s = open_q(*state, 0, 0, 0); /* no quota: nothing dropped */
    for (int i = 1; i <= 5; i++) {
        refuse(s, 1000 + i, "a", 1, "r");
    }
    refuse(s, 2000, "b", 1, "r");
    uint64_t kept = 0, dropped = 0;
    assert_int_equal(store_audit_lock_stats(s, "a", &kept, &dropped), 0);
    assert_int_equal(kept, 5);
    /* make it a store from before the quota: drop its table */
    MDB_txn *txn = NULL;
    assert_int_equal(mdb_txn_begin(s->env, NULL, 0, &txn), 0);
    assert_int_equal(mdb_drop(txn, s->dbi_quota, 1), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    store_close(s);
    s = open_q(*state, 3, 0, 0);
    refuse(s, 3000, "a", 1, "r");
    assert_int_equal(store_audit_lock_stats(s, "a", &kept, &dropped), 0);
    assert_int_equal(kept, 3);
    assert_int_equal(dropped, 3);
    assert_int_equal(store_audit_lock_stats(s, "b", &kept, &dropped), 0);
    assert_int_equal(kept, 1);
    store_close(s);
}

static void
test_bad_options(void **state)
{
    struct store_opts o;
    store_opts_init(&o);
    o.data_dir = *state;
    o.audit_max_per_lock = 1; /* cannot keep both the first and the last */
    struct store *s = NULL;
    assert_int_equal(store_open(&o, &s, NULL, 0), ERR_INVAL);
}

int
main(void)
{
    log_threshold = LOG_WARN;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_first_and_newest_kept, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_quiet_lock_survives_count_bound, tu_dir_setup,
                                        tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_age_retention_and_counters, tu_dir_setup,
                                        tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_same_transaction_protected, tu_dir_setup,
                                        tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_rebuild_counts, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_bad_options, tu_dir_setup, tu_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
