/* tests/unit/store/audit_quota_test.c: store/audit_quota.c: the per-lock
 * and per-principal audit quotas keep a lock's (a client's) first and newest
 * records and count the rest; other locks' and clients' records are
 * untouched; retention by age and count still applies and keeps the
 * counters right; a store from before either quota is counted on open. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/clock.h"
#include "store/store_int.h"
#include "testutil.h"

static struct store *
open_pq(const char *dir, uint64_t per_lock, uint64_t per_who, uint64_t max_records,
        uint64_t max_age_ms)
{
    struct store_opts o;
    store_opts_init(&o);
    o.data_dir = dir;
    o.audit_max_per_lock = per_lock;
    o.audit_max_per_principal = per_who;
    o.audit_max_records = max_records;
    o.audit_max_age_ms = max_age_ms;
    o.retention_interval_ms = 3600 * 1000; /* the tests prune by hand */
    return tu_open_opts(&o);
}

static struct store *
open_q(const char *dir, uint64_t per_lock, uint64_t max_records, uint64_t max_age_ms)
{
    return open_pq(dir, per_lock, 0, max_records, max_age_ms);
}

/* One refusal of principal (or, when "", of client) on lock. */
static void
refuse_as(struct store *s, int64_t t, const char *lock, const char *principal, const char *client,
          const char *rid)
{
    struct store_audit_rec r = {.time_ms = t,
                                .kind = STORE_AUDIT_NOT_GRANTED,
                                .token = 9,
                                .lock = lock,
                                .principal = principal,
                                .client = client,
                                .key = "k",
                                .request_id = rid};
    assert_int_equal(store_audit_append_sync(s, &r, NULL), 0);
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

/* The same, for the records of one principal or origin. */
static void
ids_of_who(struct store *s, const char *who, struct ids *a)
{
    memset(a, 0, sizeof(*a));
    struct store_audit_query q = {.who = who, .limit = 1000};
    assert_int_equal(store_audit_query(s, &q, on_rec, a, NULL), 0);
}

static void
assert_who_stats(struct store *s, const char *who, uint64_t kept, uint64_t dropped)
{
    uint64_t k = 0, d = 0;
    assert_int_equal(store_audit_who_stats(s, who, &k, &d), 0);
    assert_int_equal(k, kept);
    assert_int_equal(d, dropped);
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
    const char *who; /* NULL: look it up by lock "flood"; else by this principal */
};

static void
on_committed(void *arg, int err, const struct store_audit_done *d)
{
    struct probe *p = arg;
    struct ids a;
    char want[20];
    (void)d;
    assert_int_equal(err, 0);
    if (p->who != NULL) {
        ids_of_who(p->s, p->who, &a);
    } else {
        ids_of(p->s, "flood", &a);
    }
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

/* One client refused once on each of many locks (no lock past its quota) in a
 * log bounded at 30 records: the per-principal quota keeps its first and
 * newest 4 and counts the rest, and the quiet principal's records from
 * before and after the flood survive the count bound. */
static void
test_principal_flood_over_many_locks(void **state)
{
    struct store *s = open_pq(*state, 100, 5, 30, 0);
    refuse_as(s, 1000, "orders", "quiet", "10.0.0.9:4000", "q1");
    for (int i = 0; i < 100; i++) {
        char lock[16], rid[16];
        (void)snprintf(lock, sizeof(lock), "L%03d", i);
        (void)snprintf(rid, sizeof(rid), "z%d", i);
        refuse_as(s, 2000 + i, lock, "zombie", "10.0.0.1:4000", rid);
    }
    refuse_as(s, 3000, "orders", "quiet", "10.0.0.9:4000", "q2");
    struct ids a;
    ids_of_who(s, "quiet", &a);
    assert_string_equal(a.s, "q1,q2,");
    ids_of_who(s, "zombie", &a);
    assert_string_equal(a.s, "z0,z96,z97,z98,z99,");
    assert_who_stats(s, "zombie", 5, 95);
    assert_who_stats(s, "quiet", 2, 0);
    /* the dropped records left their locks' indexes and counts too */
    ids_of(s, "L050", &a);
    assert_int_equal(a.n, 0);
    uint64_t kept = 9, dropped = 0;
    assert_int_equal(store_audit_lock_stats(s, "L050", &kept, &dropped), 0);
    assert_int_equal(kept, 0);
    assert_int_equal(dropped, 1);
    ids_of(s, "L099", &a);
    assert_string_equal(a.s, "z99,");
    uint64_t n = 0;
    assert_int_equal(store_audit_count(s, &n), 0);
    assert_int_equal(n, 7);
    store_close(s);
}

/* A refusal of lock stamped by the store at wall-clock time wall. */
static void
refuse_at_clock(struct store *s, int64_t wall, const char *lock, const char *rid)
{
    clock_pin(1000, wall);
    refuse(s, 0, lock, 7, rid);
    clock_unpin();
}

/* The wall clock stepped back (an NTP step, a VM restored): the records
 * stamped after it are filed no earlier than the newest, so the quota keeps
 * the flood's real first record.  Filed by their stamps, they sorted before
 * it, and once the clock had caught up it was a middle record, dropped. */
static void
test_first_kept_when_the_clock_steps_back(void **state)
{
    struct store *s = open_q(*state, 4, 0, 0);
    refuse_at_clock(s, 100000, "flood", "first");
    for (int i = 1; i <= 6; i++) {
        char rid[16];
        (void)snprintf(rid, sizeof(rid), "b%d", i);
        refuse_at_clock(s, 50000 + i, "flood", rid); /* the clock went back 50 s */
    }
    for (int i = 1; i <= 6; i++) {
        char rid[16];
        (void)snprintf(rid, sizeof(rid), "c%d", i);
        refuse_at_clock(s, 200000 + i, "flood", rid); /* and caught up */
    }
    struct ids a;
    ids_of(s, "flood", &a);
    assert_string_equal(a.s, "first,c4,c5,c6,");
    store_close(s);
}

/* Records under no lock (the classifier's refusals) count against their
 * principal's quota only: one client's flood of them leaves another's whole.
 * Bounded as the lock "", they shared one quota, and the flood pushed out
 * all of the other client's but its first. */
static void
test_lockless_flood_leaves_others_records(void **state)
{
    struct store *s = open_pq(*state, 4, 5, 0, 0);
    refuse_as(s, 1000, NULL, "quiet", "10.0.0.9:4000", "q1");
    refuse_as(s, 1001, NULL, "quiet", "10.0.0.9:4000", "q2");
    refuse_as(s, 1002, NULL, "quiet", "10.0.0.9:4000", "q3");
    for (int i = 0; i < 20; i++) {
        char rid[16];
        (void)snprintf(rid, sizeof(rid), "z%d", i);
        refuse_as(s, 2000 + i, NULL, "zombie", "10.0.0.1:4000", rid);
    }
    struct ids a;
    ids_of_who(s, "quiet", &a);
    assert_string_equal(a.s, "q1,q2,q3,");
    ids_of_who(s, "zombie", &a);
    assert_string_equal(a.s, "z0,z16,z17,z18,z19,"); /* the flooder's own quota */
    assert_who_stats(s, "quiet", 3, 0);
    assert_who_stats(s, "zombie", 5, 15);
    uint64_t n = 0;
    assert_int_equal(store_audit_count(s, &n), 0);
    assert_int_equal(n, 8);
    store_close(s);
}

/* Without a principal, the client's address (any port) is who is counted. */
static void
test_origin_quota(void **state)
{
    struct store *s = open_pq(*state, 0, 3, 0, 0);
    refuse_as(s, 1000, "a", "", "192.0.2.9:7", "other");
    for (int i = 0; i < 10; i++) {
        char client[32], rid[16], lock[16];
        (void)snprintf(client, sizeof(client), "192.0.2.7:%d", 40000 + i);
        (void)snprintf(rid, sizeof(rid), "o%d", i);
        (void)snprintf(lock, sizeof(lock), "l%d", i);
        refuse_as(s, 2000 + i, lock, NULL, client, rid);
    }
    struct ids a;
    ids_of_who(s, "@192.0.2.7", &a);
    assert_string_equal(a.s, "o0,o8,o9,");
    assert_who_stats(s, "@192.0.2.7", 3, 7);
    ids_of_who(s, "@192.0.2.9", &a);
    assert_string_equal(a.s, "other,");
    store_close(s);
}

static void
who_is(const char *principal, const char *client, const char *want)
{
    char out[STORE_WHO_MAX + 1];
    memset(out, 'x', sizeof(out));
    store_audit_who(principal, client, out);
    assert_string_equal(out, want);
}

static void
test_who_names(void **state)
{
    (void)state;
    who_is("worker", "192.0.2.7:51234", "worker");
    who_is("", "192.0.2.7:51234", "@192.0.2.7");
    who_is(NULL, "[2001:db8::1]:443", "@[2001:db8::1]");
    who_is("", "2001:db8::1", "@2001:db8::1"); /* no port to drop */
    who_is("", "host:", "@host:");
    who_is("", ":80", "@");
    who_is(NULL, NULL, "@");
    char longp[300];
    memset(longp, 'p', sizeof(longp) - 1);
    longp[sizeof(longp) - 1] = '\0';
    char out[STORE_WHO_MAX + 1];
    store_audit_who(longp, NULL, out);
    assert_int_equal(strlen(out), STORE_WHO_MAX);
}

/* Age retention removes a principal's old records and uncounts them (not as
 * dropped); a per-lock eviction counts as dropped for its principal too. */
static void
test_principal_age_retention(void **state)
{
    struct store *s = open_pq(*state, 3, 4, 0, 10000);
    for (int i = 0; i < 6; i++) {
        char rid[16], lock[16];
        (void)snprintf(rid, sizeof(rid), "z%d", i);
        (void)snprintf(lock, sizeof(lock), "m%d", i);
        refuse_as(s, 1000 + i, lock, "zombie", NULL, rid);
    }
    assert_who_stats(s, "zombie", 4, 2);
    for (int i = 0; i < 3; i++) {
        refuse_as(s, 50000 + i, "one", "late", NULL, "l");
    }
    refuse_as(s, 50100, "one", "other", NULL, "x"); /* "one" past 3: evicts a record of "late" */
    assert_who_stats(s, "late", 2, 1);
    uint64_t deleted = 0;
    bool more = true;
    assert_int_equal(store_audit_prune_sync(s, 20000, 100, &deleted, &more), 0);
    assert_int_equal(deleted, 4);
    assert_who_stats(s, "zombie", 0, 2);
    struct ids a;
    ids_of_who(s, "zombie", &a);
    assert_int_equal(a.n, 0);
    ids_of_who(s, "other", &a);
    assert_string_equal(a.s, "x,");
    store_close(s);
}

/* G7 with the per-principal quota: a record is never dropped by the
 * transaction that wrote it, so each callback finds its own. */
static void
test_principal_same_transaction_protected(void **state)
{
    struct store *s = open_pq(*state, 0, 2, 0, 0);
    refuse_as(s, 1000, "first", "zombie", NULL, "z0");
    int done = 0;
    int missing = 0;
    struct probe p[10];
    char locks[10][8];
    for (int i = 0; i < 10; i++) {
        p[i] = (struct probe){.s = s, .done = &done, .missing = &missing, .who = "zombie"};
        (void)snprintf(p[i].rid, sizeof(p[i].rid), "z%d", i + 1);
        (void)snprintf(locks[i], sizeof(locks[i]), "k%d", i);
        struct store_audit_rec r = {.time_ms = 1001 + i,
                                    .kind = STORE_AUDIT_STALE,
                                    .token = 7,
                                    .lock = locks[i],
                                    .principal = "zombie",
                                    .request_id = p[i].rid};
        assert_int_equal(store_audit_append(s, &r, on_committed, &p[i]), 0);
    }
    tu_wait(s, &done, 10);
    assert_int_equal(done, 10);
    assert_int_equal(missing, 0);
    struct ids a;
    ids_of_who(s, "zombie", &a);
    assert_true(strstr(a.s, "z0,") == a.s);
    assert_non_null(strstr(a.s, "z10,"));
    uint64_t kept = 0, dropped = 0;
    assert_int_equal(store_audit_who_stats(s, "zombie", &kept, &dropped), 0);
    assert_int_equal(kept, (uint64_t)a.n);
    assert_int_equal(kept + dropped, 11);
    store_close(s);
}

/* A store from before the per-principal quota (no "audit_who") is indexed
 * and counted on open, and the quota applies from the next append. */
static void
test_who_rebuild(void **state)
{
    struct store *s = open_pq(*state, 0, 0, 0, 0);
    for (int i = 1; i <= 5; i++) {
        refuse_as(s, 1000 + i, "a", "zombie", NULL, "r");
    }
    refuse_as(s, 2000, "b", "", "192.0.2.1:9", "o");
    MDB_txn *txn = NULL;
    assert_int_equal(mdb_txn_begin(s->env, NULL, 0, &txn), 0);
    assert_int_equal(mdb_drop(txn, s->dbi_who, 1), 0);
    assert_int_equal(mdb_drop(txn, s->dbi_quota, 1), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    store_close(s);
    s = open_pq(*state, 0, 3, 0, 0);
    assert_who_stats(s, "zombie", 5, 0);
    assert_who_stats(s, "@192.0.2.1", 1, 0);
    refuse_as(s, 3000, "c", "zombie", NULL, "last");
    assert_who_stats(s, "zombie", 3, 3);
    struct ids a;
    ids_of_who(s, "zombie", &a);
    assert_string_equal(a.s, "r,r,last,");
    store_close(s);
    /* only the counters lost (the table dropped): recounted from the index */
    s = open_pq(*state, 0, 3, 0, 0);
    assert_int_equal(mdb_txn_begin(s->env, NULL, 0, &txn), 0);
    assert_int_equal(mdb_drop(txn, s->dbi_quota, 1), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    store_close(s);
    s = open_pq(*state, 0, 3, 0, 0);
    assert_who_stats(s, "zombie", 3, 0);
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
    o.audit_max_per_lock = 0;
    o.audit_max_per_principal = 1;
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
        cmocka_unit_test_setup_teardown(test_principal_flood_over_many_locks, tu_dir_setup,
                                        tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_lockless_flood_leaves_others_records, tu_dir_setup,
                                        tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_first_kept_when_the_clock_steps_back, tu_dir_setup,
                                        tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_origin_quota, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test(test_who_names),
        cmocka_unit_test_setup_teardown(test_principal_age_retention, tu_dir_setup,
                                        tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_principal_same_transaction_protected, tu_dir_setup,
                                        tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_who_rebuild, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_bad_options, tu_dir_setup, tu_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
