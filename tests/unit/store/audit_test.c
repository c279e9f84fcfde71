/* tests/unit/store/audit_test.c: store/audit.c: append, query, pagination,
 * retention, cursors, kinds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/clock.h"
#include "testutil.h"

static int
teardown(void **state)
{
    clock_unpin();
    return tu_dir_teardown(state);
}

static void
append_at(struct store *s, int64_t t, const char *lock, uint64_t token, uint64_t *seq)
{
    char key[64];
    (void)snprintf(key, sizeof(key), "k-%llu", (unsigned long long)token);
    struct store_audit_rec r = {.time_ms = t,
                                .kind = STORE_AUDIT_STALE,
                                .token = token,
                                .current = token + 1,
                                .lock = lock,
                                .principal = "w",
                                .client = "192.0.2.7:5",
                                .method = "PUT",
                                .bucket = "data",
                                .key = key,
                                .operation = "PutObject",
                                .request_id = "rid",
                                .user_agent = "ua"};
    assert_int_equal(store_audit_append_sync(s, &r, seq), 0);
}

/* Collects what a query delivers. */
struct got {
    int n;                 /* records */
    uint64_t tokens[4096]; /* their tokens, in order */
    int64_t times[4096];   /* their times */
    int stop_at;           /* return 1 when n reaches it (0 = never) */
};

static int
on_rec(void *arg, const struct store_audit_rec *r)
{
    struct got *g = arg;
    if (g->n < 4096) {
        g->tokens[g->n] = r->token;
        g->times[g->n] = r->time_ms;
    }
    g->n++;
    return g->stop_at != 0 && g->n >= g->stop_at ? 1 : 0;
}

static void
test_append_and_query(void **state)
{
    struct store *s = tu_open_retention(*state, 0, 0, NULL);
    uint64_t seq1 = 0;
    uint64_t seq2 = 0;
    append_at(s, 1000, "orders", 1, &seq1);
    append_at(s, 1000, "billing", 2, &seq2);
    assert_true(seq2 > seq1);
    append_at(s, 2000, "orders", 3, NULL);
    append_at(s, 500, "orders", 4, NULL); /* the clock stepped back: still kept, in time order */
    struct store_audit_query q = {.limit = 100};
    struct got *g = calloc(1, sizeof(*g));
    struct store_audit_cursor next;
    assert_int_equal(store_audit_query(s, &q, on_rec, g, &next), 0);
    assert_false(next.set);
    assert_int_equal(g->n, 4);
    assert_int_equal(g->tokens[0], 4);
    assert_int_equal(g->tokens[1], 1);
    assert_int_equal(g->tokens[2], 2);
    assert_int_equal(g->tokens[3], 3);

    memset(g, 0, sizeof(*g));
    q.lock = "orders";
    assert_int_equal(store_audit_query(s, &q, on_rec, g, NULL), 0);
    assert_int_equal(g->n, 3);
    assert_int_equal(g->tokens[0], 4);
    assert_int_equal(g->tokens[2], 3);

    memset(g, 0, sizeof(*g));
    q.since_ms = 1000;
    q.until_ms = 2000;
    assert_int_equal(store_audit_query(s, &q, on_rec, g, NULL), 0);
    assert_int_equal(g->n, 1);
    assert_int_equal(g->tokens[0], 1);

    memset(g, 0, sizeof(*g));
    q.lock = "nope";
    q.since_ms = 0;
    q.until_ms = 0;
    assert_int_equal(store_audit_query(s, &q, on_rec, g, NULL), 0);
    assert_int_equal(g->n, 0);
    q.lock = "orde"; /* a prefix of a lock is not that lock */
    assert_int_equal(store_audit_query(s, &q, on_rec, g, NULL), 0);
    assert_int_equal(g->n, 0);

    /* bad queries */
    q.lock = NULL;
    q.limit = 0;
    assert_int_equal(store_audit_query(s, &q, on_rec, g, NULL), ERR_INVAL);
    q.limit = STORE_AUDIT_LIMIT_MAX + 1;
    assert_int_equal(store_audit_query(s, &q, on_rec, g, NULL), ERR_INVAL);
    struct store_audit_rec bad = {.kind = (enum store_audit_kind)99};
    assert_int_equal(store_audit_append_sync(s, &bad, NULL), ERR_INVAL);
    uint64_t n = 0;
    assert_int_equal(store_audit_count(s, &n), 0);
    assert_int_equal(n, 4);
    free(g);
    store_close(s);
}

static void
test_record_fields(void **state)
{
    struct store *s = tu_open_retention(*state, 0, 0, NULL);
    clock_pin(1, 1795256130123);
    struct store_audit_rec r = {.kind = STORE_AUDIT_MISSING_TOKEN, .lock = "orders"};
    assert_int_equal(store_audit_append_sync(s, &r, NULL), 0); /* time 0 = now; NULL strings */
    clock_unpin();
    struct got *g = calloc(1, sizeof(*g));
    struct store_audit_query q = {.limit = 1};
    assert_int_equal(store_audit_query(s, &q, on_rec, g, NULL), 0);
    assert_int_equal(g->n, 1);
    assert_int_equal(g->times[0], 1795256130123);
    free(g);
    store_close(s);
}

/* Many records in the same milliseconds: every page boundary still works. */
static void
test_pagination_exactly_once(void **state)
{
    struct store *s = tu_open_retention(*state, 0, 0, NULL);
    const int total = 1000;
    for (int i = 0; i < total; i++) {
        append_at(s, 5000 + i / 37, (i % 3) == 0 ? "a" : "b", (uint64_t)i + 1, NULL);
    }
    for (int pass = 0; pass < 2; pass++) {
        const char *lock = pass == 0 ? NULL : "a";
        int want = pass == 0 ? total : (total + 2) / 3;
        static int seen[1001];
        memset(seen, 0, sizeof(seen));
        struct store_audit_query q = {.lock = lock, .limit = 7};
        int pages = 0;
        int count = 0;
        for (;;) {
            struct got *g = calloc(1, sizeof(*g));
            struct store_audit_cursor next;
            assert_int_equal(store_audit_query(s, &q, on_rec, g, &next), 0);
            for (int i = 0; i < g->n; i++) {
                seen[g->tokens[i]]++;
            }
            count += g->n;
            pages++;
            free(g);
            if (!next.set) {
                break;
            }
            q.after = next;
        }
        assert_int_equal(count, want);
        for (int t = 1; t <= total; t++) {
            int expect = (lock == NULL || ((t - 1) % 3) == 0) ? 1 : 0;
            assert_int_equal(seen[t], expect);
        }
        assert_int_equal(pages, (want + 6) / 7); /* no empty trailing page */
    }
    /* a callback that stops early leaves a cursor to resume from */
    struct got *g = calloc(1, sizeof(*g));
    g->stop_at = 3;
    struct store_audit_query q = {.limit = 10};
    struct store_audit_cursor next;
    assert_int_equal(store_audit_query(s, &q, on_rec, g, &next), 0);
    assert_int_equal(g->n, 3);
    assert_true(next.set);
    memset(g, 0, sizeof(*g));
    q.after = next;
    q.limit = 1;
    assert_int_equal(store_audit_query(s, &q, on_rec, g, &next), 0);
    assert_int_equal(g->tokens[0], 4);
    free(g);
    store_close(s);
}

static void
test_retention_count(void **state)
{
    struct store *s = tu_open_retention(*state, 50, 0, NULL);
    for (int i = 0; i < 120; i++) {
        append_at(s, 1000 + i, "l", (uint64_t)i + 1, NULL); /* count cap applied on append */
    }
    uint64_t n = 0;
    assert_int_equal(store_audit_count(s, &n), 0);
    assert_int_equal(n, 50);
    struct got *g = calloc(1, sizeof(*g));
    struct store_audit_query q = {.limit = 100};
    assert_int_equal(store_audit_query(s, &q, on_rec, g, NULL), 0);
    assert_int_equal(g->n, 50);
    assert_int_equal(g->tokens[0], 71); /* the oldest went first */
    assert_int_equal(g->tokens[49], 120);
    memset(g, 0, sizeof(*g));
    q.lock = "l"; /* the index was pruned too */
    assert_int_equal(store_audit_query(s, &q, on_rec, g, NULL), 0);
    assert_int_equal(g->n, 50);
    free(g);
    store_close(s);
}

static void
test_retention_age(void **state)
{
    struct store *s = tu_open_retention(*state, 0, 10000, NULL);
    for (int i = 0; i < 30; i++) {
        append_at(s, 1000 * (i + 1), i % 2 ? "x" : "y", (uint64_t)i + 1, NULL);
    }
    uint64_t deleted = 0;
    bool more = true;
    /* now = 20500: cutoff 10500 keeps times >= 10500 (records 11..30) */
    assert_int_equal(store_audit_prune_sync(s, 20500, 4, &deleted, &more), 0);
    assert_int_equal(deleted, 4);
    assert_true(more);
    assert_int_equal(store_audit_prune_sync(s, 20500, 100, &deleted, &more), 0);
    assert_int_equal(deleted, 6);
    assert_false(more);
    uint64_t n = 0;
    assert_int_equal(store_audit_count(s, &n), 0);
    assert_int_equal(n, 20);
    struct got *g = calloc(1, sizeof(*g));
    struct store_audit_query q = {.limit = 100, .lock = "y"};
    assert_int_equal(store_audit_query(s, &q, on_rec, g, NULL), 0);
    assert_int_equal(g->n, 10);
    assert_int_equal(g->tokens[0], 11);
    free(g);
    assert_int_equal(store_audit_prune_sync(s, 20500, 0, NULL, NULL), ERR_INVAL);
    assert_int_equal(store_audit_prune_sync(s, 20500, 10, NULL, NULL), 0);
    store_close(s);
}

/* The worker prunes by age in the background. */
static void
test_retention_background(void **state)
{
    struct store_opts o;
    store_opts_init(&o);
    o.data_dir = *state;
    o.audit_max_age_ms = 60000; /* "new" must stay young on a slow, loaded machine */
    o.retention_interval_ms = 5;
    struct store *s = NULL;
    assert_int_equal(store_open(&o, &s, NULL, 0), 0);
    int64_t now = clock_wall_ms();
    for (int i = 0; i < 2500; i++) {
        append_at(s, now - 100000 + i, "old", (uint64_t)i + 1, NULL);
    }
    append_at(s, now, "new", 99999, NULL);
    uint64_t n = 0;
    for (int i = 0; i < 400; i++) {
        assert_int_equal(store_audit_count(s, &n), 0);
        if (n == 1) {
            break;
        }
        (void)usleep(5000);
    }
    assert_int_equal(n, 1);
    struct store_stats st;
    store_stats_get(s, &st);
    assert_true(st.audit_pruned >= 2500);
    store_close(s);
}

static void
done_cb(void *arg, int err, const struct store_audit_done *d0)
{
    int *d = arg;
    assert_int_equal(err, 0);
    assert_true(d0->seq > 0);
    assert_int_equal(d0->occurrence, 1); /* coalescing is off by default */
    (*d)++;
}

static void
test_async_grouped(void **state)
{
    struct store *s = tu_open_retention(*state, 0, 0, NULL);
    struct store_stats st0;
    store_stats_get(s, &st0);
    int done = 0;
    const int n = 500;
    for (int i = 0; i < n; i++) {
        struct store_audit_rec r = {.kind = STORE_AUDIT_CUT, .lock = "g", .token = (uint64_t)i};
        assert_int_equal(store_audit_append(s, &r, i % 2 ? done_cb : NULL, &done), 0);
    }
    tu_wait(s, &done, n / 2);
    assert_int_equal(done, n / 2);
    struct store_stats st;
    store_stats_get(s, &st);
    assert_true(st.audit_appended - st0.audit_appended >= (uint64_t)n / 2);
    assert_true(st.commits - st0.commits < (uint64_t)n / 10); /* grouped, not one fsync each */
    store_close(s);                                           /* drains the fire-and-forget ones */
    s = tu_open_retention(*state, 0, 0, NULL);
    uint64_t c = 0;
    assert_int_equal(store_audit_count(s, &c), 0);
    assert_int_equal(c, (uint64_t)n);
    store_close(s);
}

static void
test_kinds_and_cursors(void **state)
{
    (void)state;
    for (int k = 1; k <= STORE_AUDIT_KIND_MAX; k++) {
        enum store_audit_kind back;
        const char *name = store_audit_kind_name((enum store_audit_kind)k);
        assert_int_equal(store_audit_kind_parse(name, &back), 0);
        assert_int_equal(back, k);
    }
    assert_string_equal(store_audit_kind_name(STORE_AUDIT_STALE), "stale");
    assert_string_equal(store_audit_kind_name(STORE_AUDIT_LOCK_MISMATCH), "lock_mismatch");
    assert_string_equal(store_audit_kind_name((enum store_audit_kind)0), "unknown");
    enum store_audit_kind k;
    assert_int_equal(store_audit_kind_parse("nope", &k), ERR_INVAL);

    struct store_audit_cursor c = {.set = true, .time_ms = 1795256130123, .seq = 42};
    char buf[48];
    assert_int_equal(store_audit_cursor_format(&c, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "1795256130123.42");
    struct store_audit_cursor d = {0};
    assert_int_equal(store_audit_cursor_parse(buf, &d), 0);
    assert_true(d.set);
    assert_int_equal(d.time_ms, c.time_ms);
    assert_int_equal(d.seq, 42);
    assert_int_equal(store_audit_cursor_format(&c, buf, 5), ERR_TOOBIG);
    const char *bad[] = {
        "", ".", "1.", ".1", "a.1", "1.a", "1.2.3", "-1.2", "99999999999999999999.1", "1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(store_audit_cursor_parse(bad[i], &d), ERR_INVAL);
    }
}

int
main(void)
{
    log_threshold = LOG_WARN;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_append_and_query, tu_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_record_fields, tu_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_pagination_exactly_once, tu_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_count, tu_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_age, tu_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_background, tu_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_async_grouped, tu_dir_setup, teardown),
        cmocka_unit_test_setup_teardown(test_kinds_and_cursors, tu_dir_setup, teardown),
    };
    return cmocka_run_group_tests_name("store_audit", tests, NULL, NULL);
}
