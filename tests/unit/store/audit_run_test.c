/* tests/unit/store/audit_run_test.c: store/audit_run.c: identical refusals
 * within the window coalesce into their run's record (count, first and last
 * time); any other identity field, or a closed window, starts a new record;
 * a refusal is found by its request id, a repeat by "<run's id>.<n>" up to
 * the count and not beyond; retention by age, by count and by quota removes
 * the index entries with the record; a store from before coalescing reads
 * (count 1), is found by a scan read-only, and is indexed on a writable open. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "store/store_int.h"
#include "testutil.h"

#define WINDOW 60000

static struct store *
open_c(const char *dir, uint64_t window, uint64_t max_records, uint64_t max_age_ms,
       uint64_t per_lock)
{
    struct store_opts o;
    store_opts_init(&o);
    o.data_dir = dir;
    o.audit_coalesce_ms = window;
    o.audit_max_records = max_records;
    o.audit_max_age_ms = max_age_ms;
    o.audit_max_per_lock = per_lock;
    o.retention_interval_ms = 3600 * 1000; /* the tests prune by hand */
    return tu_open_opts(&o);
}

/* The refusal the tests repeat; each test changes one field of a copy. */
static struct store_audit_rec
base_rec(int64_t t, const char *rid)
{
    return (struct store_audit_rec){.time_ms = t,
                                    .kind = STORE_AUDIT_STALE,
                                    .token = 5,
                                    .current = 7,
                                    .lock = "jobs",
                                    .principal = "zombie",
                                    .client = "192.0.2.7:4000",
                                    .method = "PUT",
                                    .bucket = "data",
                                    .key = "k",
                                    .operation = "PutObject",
                                    .request_id = rid,
                                    .user_agent = "ua/1"};
}

static uint64_t
append(struct store *s, const struct store_audit_rec *r)
{
    uint64_t seq = 0;
    assert_int_equal(store_audit_append_sync(s, r, &seq), 0);
    return seq;
}

/* What the log holds: each record's id, count, times. */
struct seen {
    int n;
    char ids[1024];
    uint64_t count[16];
    int64_t first[16], last[16];
};

static int
on_rec(void *arg, const struct store_audit_rec *r)
{
    struct seen *a = arg;
    size_t used = strlen(a->ids);
    (void)snprintf(a->ids + used, sizeof(a->ids) - used, "%s,", r->request_id);
    if (a->n < 16) {
        a->count[a->n] = r->count;
        a->first[a->n] = r->time_ms;
        a->last[a->n] = r->last_ms;
    }
    a->n++;
    return 0;
}

static void
all(struct store *s, struct seen *a)
{
    memset(a, 0, sizeof(*a));
    struct store_audit_query q = {.limit = 1000};
    assert_int_equal(store_audit_query(s, &q, on_rec, a, NULL), 0);
}

/* store_audit_find of id: ERR_NOTFOUND, or 0 with *a the record and *occ its occurrence. */
static int
find(struct store *s, const char *id, struct seen *a, uint64_t *occ)
{
    memset(a, 0, sizeof(*a));
    return store_audit_find(s, id, on_rec, a, occ);
}

/* Entries of one of the store's tables. */
static uint64_t
entries(struct store *s, MDB_dbi dbi)
{
    MDB_txn *txn = NULL;
    assert_int_equal(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn), 0);
    MDB_stat st;
    assert_int_equal(mdb_stat(txn, dbi, &st), 0);
    mdb_txn_abort(txn);
    return st.ms_entries;
}

struct done {
    int n;
    uint64_t occ[8];
    char run[8][64];
};

static void
on_done(void *arg, int err, const struct store_audit_done *d)
{
    struct done *c = arg;
    assert_int_equal(err, 0);
    c->occ[c->n] = d->occurrence;
    (void)snprintf(c->run[c->n], sizeof(c->run[c->n]), "%s", d->run_request_id);
    c->n++;
}

/* Five identical refusals: one record, count 5, first and last time; each
 * completion says which occurrence it was and of which run. */
static void
test_identical_coalesce(void **state)
{
    struct store *s = open_c(*state, WINDOW, 0, 0, 0);
    static const char *const rids[] = {"r1", "r2", "r3", "r4", "r5"};
    struct done c = {0};
    for (int i = 0; i < 5; i++) {
        struct store_audit_rec r = base_rec(1000 + i, rids[i]);
        r.current = 7 + (uint64_t)i; /* not part of the identity */
        r.user_agent = i % 2 ? "ua/2" : "ua/1";
        assert_int_equal(store_audit_append(s, &r, on_done, &c), 0);
        tu_wait(s, &c.n, i + 1); /* one at a time: the order is the occurrence */
    }
    assert_int_equal(c.n, 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(c.occ[i], (uint64_t)i + 1);
        assert_string_equal(c.run[i], i == 0 ? "" : "r1");
    }
    struct seen a;
    all(s, &a);
    assert_int_equal(a.n, 1);
    assert_string_equal(a.ids, "r1,");
    assert_int_equal(a.count[0], 5);
    assert_int_equal(a.first[0], 1000);
    assert_int_equal(a.last[0], 1004);
    /* a repeat never counts against the quotas: one record kept */
    uint64_t kept = 0, dropped = 0;
    assert_int_equal(store_audit_lock_stats(s, "jobs", &kept, &dropped), 0);
    assert_int_equal(kept, 1);
    store_close(s);
}

/* A different token, key, principal, kind, lock, bucket, method, operation or origin
 * is another refusal: a record of its own.  The same origin from another
 * port is the same client (store_audit_who). */
static void
test_identity_fields(void **state)
{
    struct store *s = open_c(*state, WINDOW, 0, 0, 0);
    struct store_audit_rec r = base_rec(1000, "b");
    uint64_t first = append(s, &r);
    struct store_audit_rec v[10];
    for (int i = 0; i < 10; i++) {
        v[i] = base_rec(1001 + i, "x");
    }
    v[0].token = 6;
    v[1].key = "k2";
    v[2].principal = "other";
    v[3].kind = STORE_AUDIT_NOT_GRANTED;
    v[4].lock = "jobs2";
    v[5].bucket = "data2";
    v[6].operation = "DeleteObject";
    v[7].principal = ""; /* its origin, @192.0.2.7, is not the principal "zombie" */
    v[8].principal = NULL;
    v[8].client = "192.0.2.8:4000";
    v[9].method = "MOVE"; /* the same operation name, another request */
    for (int i = 0; i < 10; i++) {
        assert_int_not_equal(append(s, &v[i]), first);
    }
    /* now repeats of each coalesce into its own run */
    for (int i = 0; i < 10; i++) {
        append(s, &v[i]);
    }
    struct store_audit_rec port = v[7];
    port.client = "192.0.2.7:5999";
    append(s, &port);
    assert_int_equal(append(s, &r), first);
    struct seen a;
    all(s, &a);
    assert_int_equal(a.n, 11);
    assert_int_equal(a.count[0], 2);
    for (int i = 1; i < 11; i++) {
        assert_int_equal(a.count[i], i == 8 ? 3 : 2);
    }
    store_close(s);
}

/* The run stays open while its last occurrence is at most the window old;
 * past it a new record starts; window 0 never coalesces. */
static void
test_window_closes(void **state)
{
    struct store *s = open_c(*state, WINDOW, 0, 0, 0);
    struct store_audit_rec r = base_rec(1000, "a");
    uint64_t a1 = append(s, &r);
    r.time_ms = 1000 + WINDOW; /* exactly the window: still open */
    r.request_id = "b";
    assert_int_equal(append(s, &r), a1);
    r.time_ms = 1000 + 2 * WINDOW; /* the window runs from the last occurrence */
    assert_int_equal(append(s, &r), a1);
    r.time_ms = 1000 + 3 * WINDOW + 1; /* closed */
    r.request_id = "c";
    uint64_t c1 = append(s, &r);
    assert_int_not_equal(c1, a1);
    r.time_ms += 10;
    r.request_id = "d";
    assert_int_equal(append(s, &r), c1); /* the new run is open */
    struct seen a;
    all(s, &a);
    assert_string_equal(a.ids, "a,c,");
    assert_int_equal(a.count[0], 3);
    assert_int_equal(a.last[0], 1000 + 2 * WINDOW);
    assert_int_equal(a.count[1], 2);
    store_close(s);

    s = open_c(*state, 0, 0, 0, 0); /* off */
    r.time_ms += 1;
    r.request_id = "e";
    append(s, &r);
    all(s, &a);
    assert_string_equal(a.ids, "a,c,e,");
    assert_int_equal(a.count[2], 1);
    store_close(s);
}

/* Plain ids through the index; BASE.n for 2 <= n <= count, not beyond. */
static void
test_find_by_id(void **state)
{
    struct store *s = open_c(*state, WINDOW, 0, 0, 0);
    struct store_audit_rec r = base_rec(1000, "run");
    for (int i = 0; i < 4; i++) {
        r.time_ms = 1000 + i;
        r.request_id = i == 0 ? "run" : "repeat";
        append(s, &r);
    }
    struct store_audit_rec o = base_rec(2000, "solo");
    o.token = 1;
    append(s, &o);
    struct seen a;
    uint64_t occ = 0;
    assert_int_equal(find(s, "run", &a, &occ), 0);
    assert_int_equal(occ, 1);
    assert_string_equal(a.ids, "run,");
    assert_int_equal(a.count[0], 4);
    for (int n = 2; n <= 4; n++) {
        char id[32];
        (void)snprintf(id, sizeof(id), "run.%d", n);
        assert_int_equal(find(s, id, &a, &occ), 0);
        assert_int_equal(occ, (uint64_t)n);
        assert_string_equal(a.ids, "run,");
    }
    assert_int_equal(find(s, "run.5", &a, &occ), ERR_NOTFOUND);
    assert_int_equal(find(s, "run.1", &a, &occ), ERR_NOTFOUND);
    assert_int_equal(find(s, "run.02", &a, &occ), ERR_NOTFOUND);
    assert_int_equal(find(s, "repeat", &a, &occ), ERR_NOTFOUND); /* ids of repeats are BASE.n */
    assert_int_equal(find(s, "solo", &a, &occ), 0);
    assert_int_equal(a.count[0], 1);
    assert_int_equal(find(s, "solo.2", &a, &occ), ERR_NOTFOUND);
    assert_int_equal(find(s, "nobody", &a, &occ), ERR_NOTFOUND);
    assert_int_equal(find(s, "", &a, &occ), ERR_INVAL);
    store_close(s);
}

/* Age, count and quota retention delete a record's index entries with it. */
static void
test_delete_removes_index(void **state)
{
    struct store *s = open_c(*state, WINDOW, 0, 10000, 0);
    struct store_audit_rec r = base_rec(1000, "old");
    append(s, &r);
    r.time_ms = 1001;
    r.request_id = "x";
    append(s, &r); /* old.2 */
    struct store_audit_rec n = base_rec(50000, "new");
    n.token = 9;
    append(s, &n);
    assert_int_equal(entries(s, s->dbi_reqid), 2);
    assert_int_equal(entries(s, s->dbi_run), 2);
    uint64_t deleted = 0;
    assert_int_equal(store_audit_prune_sync(s, 20000, 100, &deleted, NULL), 0);
    assert_int_equal(deleted, 1);
    struct seen a;
    assert_int_equal(find(s, "old", &a, NULL), ERR_NOTFOUND);
    assert_int_equal(find(s, "old.2", &a, NULL), ERR_NOTFOUND);
    assert_int_equal(find(s, "new", &a, NULL), 0);
    assert_int_equal(entries(s, s->dbi_reqid), 1);
    assert_int_equal(entries(s, s->dbi_run), 1);
    /* the deleted run is closed: its identity starts a new record */
    r.time_ms = 50001;
    r.request_id = "again";
    append(s, &r);
    all(s, &a);
    assert_string_equal(a.ids, "new,again,");
    store_close(s);

    /* by count: the log keeps 2 records */
    s = open_c(*state, WINDOW, 2, 0, 0);
    struct store_audit_rec c = base_rec(60000, "c3");
    c.token = 3;
    append(s, &c);
    all(s, &a);
    assert_string_equal(a.ids, "again,c3,");
    assert_int_equal(find(s, "new", &a, NULL), ERR_NOTFOUND);
    assert_int_equal(entries(s, s->dbi_reqid), 2);
    assert_int_equal(entries(s, s->dbi_run), 2);
    store_close(s);

    /* by quota: lock "q" keeps 2, its second-oldest goes */
    s = open_c(*state, WINDOW, 0, 0, 2);
    for (int i = 0; i < 3; i++) {
        struct store_audit_rec q = base_rec(70000 + i, i == 0 ? "q0" : i == 1 ? "q1" : "q2");
        q.lock = "q";
        q.token = 100 + (uint64_t)i;
        append(s, &q);
    }
    assert_int_equal(find(s, "q1", &a, NULL), ERR_NOTFOUND);
    assert_int_equal(find(s, "q0", &a, NULL), 0);
    assert_int_equal(find(s, "q2", &a, NULL), 0);
    assert_int_equal(entries(s, s->dbi_reqid), 4);
    assert_int_equal(entries(s, s->dbi_run), 4);
    store_close(s);
}

/* A run's record that a repeat was counted into is not deleted by the same
 * transaction (a distinct refusal's quota eviction or count retention): the
 * repeat's id is findable when its commit returns (G7).  A later transaction
 * may drop it by the rule. */
static void
test_joined_run_not_dropped_by_its_txn(void **state)
{
    struct store_opts o;
    store_opts_init(&o);
    o.data_dir = *state;
    o.audit_coalesce_ms = WINDOW;
    o.audit_max_per_lock = 2;
    o.audit_flush_ms = 10; /* both appends below commit in one group */
    o.retention_interval_ms = 3600 * 1000;
    struct store *s = tu_open_opts(&o);
    struct store_audit_rec a = base_rec(1000, "first");
    a.token = 1;
    append(s, &a);
    struct store_audit_rec r = base_rec(1001, "run");
    append(s, &r); /* lock "jobs": first, run (at its quota) */
    struct store_stats st0;
    struct store_stats st1;
    store_stats_get(s, &st0);
    struct done c = {0};
    r.time_ms = 1002;
    r.request_id = "again";
    assert_int_equal(store_audit_append(s, &r, on_done, &c), 0); /* run.2 */
    struct store_audit_rec d = base_rec(1003, "distinct");
    d.token = 3;
    assert_int_equal(store_audit_append(s, &d, on_done, &c), 0); /* evicts the 2nd-oldest */
    tu_wait(s, &c.n, 2);
    store_stats_get(s, &st1);
    assert_int_equal(st1.commits - st0.commits, 1); /* one transaction */
    assert_int_equal(c.occ[0], 2);
    struct seen f;
    uint64_t occ = 0;
    assert_int_equal(find(s, "run.2", &f, &occ), 0);
    assert_int_equal(f.count[0], 2);
    /* the next distinct refusal, in a transaction of its own, may drop it */
    struct store_audit_rec e = base_rec(1004, "later");
    e.token = 4;
    append(s, &e);
    assert_int_equal(find(s, "run.2", &f, &occ), ERR_NOTFOUND);
    all(s, &f);
    assert_string_equal(f.ids, "first,later,");
    store_close(s);
}

/* A store from before coalescing: no "audit_run", no "audit_reqid". */
static void
test_old_store(void **state)
{
    struct store *s = open_c(*state, 0, 0, 0, 0);
    struct store_audit_rec r = base_rec(1000, "o1");
    append(s, &r);
    r.time_ms = 1001;
    r.request_id = "o2";
    append(s, &r);
    MDB_txn *txn = NULL;
    assert_int_equal(mdb_txn_begin(s->env, NULL, 0, &txn), 0);
    assert_int_equal(mdb_drop(txn, s->dbi_run, 1), 0);
    assert_int_equal(mdb_drop(txn, s->dbi_reqid, 1), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    store_close(s);
    /* read-only: records read with count 1, ids found by a scan */
    s = tu_open(*state, true);
    assert_false(s->has_reqid);
    struct seen a;
    all(s, &a);
    assert_string_equal(a.ids, "o1,o2,");
    assert_int_equal(a.count[0], 1);
    assert_int_equal(a.last[1], 1001);
    assert_int_equal(find(s, "o2", &a, NULL), 0);
    assert_int_equal(find(s, "o3", &a, NULL), ERR_NOTFOUND);
    store_close(s);
    /* writable: indexed once on open */
    s = open_c(*state, WINDOW, 0, 0, 0);
    assert_true(s->has_reqid);
    assert_int_equal(entries(s, s->dbi_reqid), 2);
    assert_int_equal(find(s, "o1", &a, NULL), 0);
    assert_string_equal(a.ids, "o1,");
    /* old records open no run: the next identical refusal is a new record */
    r.time_ms = 1002;
    r.request_id = "o3";
    append(s, &r);
    r.time_ms = 1003;
    r.request_id = "o4";
    append(s, &r);
    all(s, &a);
    assert_string_equal(a.ids, "o1,o2,o3,");
    assert_int_equal(find(s, "o3.2", &a, NULL), 0);
    store_close(s);
}

int
main(void)
{
    log_threshold = LOG_NONE;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_identical_coalesce, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_identity_fields, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_window_closes, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_find_by_id, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_delete_removes_index, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_old_store, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_joined_run_not_dropped_by_its_txn, tu_dir_setup,
                                        tu_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
