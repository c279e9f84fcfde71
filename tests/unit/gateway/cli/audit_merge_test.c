/* tests/unit/gateway/cli/audit_merge_test.c: gateway/cli/audit_merge.c, the
 * merged listing of several stores behind `fencegate audit --data-dir A
 * --data-dir B` (whose CLI tests are in cmd_audit_test.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gateway/cli/audit_merge.h"
#include "tests/unit/store/testutil.h"

#define T0 1795256130000 /* 2026-11-21T10:15:30.000Z */

/* Per-record log of the merge API. */
struct seen {
    size_t n;           /* records seen */
    int64_t time[300];  /* their times */
    uint64_t seq[300];  /* seqs */
    size_t source[300]; /* and sources */
};

/* gw_audit_merge_each_fn */
static int
on_seen(void *arg, size_t source, const struct store_audit_rec *r)
{
    struct seen *s = arg;
    assert_true(s->n < 300);
    s->time[s->n] = r->time_ms;
    s->seq[s->n] = r->seq;
    s->source[s->n] = source;
    s->n++;
    return 0;
}

/* More records than one page of the merge, two per millisecond: store 0
 * holds the even milliseconds, store 1 the odd ones, 100 records each. */
static void
test_merge_pages(void **state)
{
    (void)state;
    char *dirs[2] = {tl_dir_new("store"), tl_dir_new("store")};
    struct store *st[2];
    for (int i = 0; i < 2; i++) {
        st[i] = tu_open(dirs[i], false);
        for (int k = 0; k < 100; k++) {
            struct store_audit_rec rec = {.time_ms = T0 + 2 * (k / 2) + i, .kind = STORE_AUDIT_CUT};
            assert_int_equal(store_audit_append_sync(st[i], &rec, NULL), 0);
        }
    }
    struct seen *s = calloc(1, sizeof(*s));
    /* 149 ends the first page between two records of one millisecond */
    struct store_audit_query q = {.limit = 149};
    struct gw_audit_merge_cursor next;
    assert_int_equal(gw_audit_merge_query(st, 2, &q, NULL, on_seen, s, &next), 0);
    assert_int_equal(s->n, 149);
    assert_true(next.set);
    q.limit = 1000;
    assert_int_equal(gw_audit_merge_query(st, 2, &q, &next, on_seen, s, &next), 0);
    assert_int_equal(s->n, 200);
    assert_false(next.set);
    for (size_t i = 0; i < s->n; i++) {
        size_t g = i / 4;         /* two ms: a pair from store 0, then one from store 1 */
        size_t src = (i % 4) / 2; /* which store */
        size_t k = 2 * g + i % 2; /* the record's index in its store */
        assert_int_equal(s->time[i], T0 + (int64_t)(2 * g + src));
        assert_int_equal(s->source[i], src);
        assert_int_equal(s->seq[i], k + 1);
    }
    /* bad arguments */
    assert_int_equal(gw_audit_merge_query(st, 0, &q, NULL, on_seen, s, NULL), ERR_INVAL);
    q.limit = 0;
    assert_int_equal(gw_audit_merge_query(st, 2, &q, NULL, on_seen, s, NULL), ERR_INVAL);
    q.limit = 1;
    struct gw_audit_merge_cursor bad = {.set = true, .source = 2};
    assert_int_equal(gw_audit_merge_query(st, 2, &q, &bad, on_seen, s, NULL), ERR_INVAL);
    free(s);
    for (int i = 0; i < 2; i++) {
        store_close(st[i]);
        tl_dir_free(dirs[i]);
    }
}

static void
test_merge_cursor(void **state)
{
    (void)state;
    struct gw_audit_merge_cursor c = {.set = true, .time_ms = 1795256130000, .seq = 7, .source = 1};
    char out[GW_AUDIT_MERGE_CURSOR_LEN];
    assert_int_equal(gw_audit_merge_cursor_format(&c, out, sizeof(out)), 0);
    assert_string_equal(out, "1795256130000.7.2");
    struct gw_audit_merge_cursor p = {.set = false};
    assert_int_equal(gw_audit_merge_cursor_parse(out, 2, &p), 0);
    assert_true(p.set);
    assert_int_equal(p.time_ms, c.time_ms);
    assert_int_equal(p.seq, c.seq);
    assert_int_equal(p.source, c.source);
    const char *bad[] = {"", "1.2", "1.2.0", "1.2.3", "1..1", ".2.1", "1.2.1.", "-1.2.1", "1.2.x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        p.set = false;
        assert_int_equal(gw_audit_merge_cursor_parse(bad[i], 2, &p), ERR_INVAL);
        assert_false(p.set);
    }
    assert_int_equal(gw_audit_merge_cursor_format(&c, out, 8), ERR_TOOBIG);
}

int
main(void)
{
    log_threshold = LOG_WARN;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_pages),
        cmocka_unit_test(test_merge_cursor),
    };
    return cmocka_run_group_tests_name("cmd_audit_merge", tests, NULL, NULL);
}
