/*
 * tests/unit/gateway/proxy/etag_map_test.c: the key -> ETag map of
 * conditional writes: lookups, the LRU bound, forgetting on an epoch advance
 * or another lock, quotes, and bad ETags.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/proxy/etag_map.h"

static void
test_put_get(void **state)
{
    (void)state;
    struct gw_etag_map *m = gw_etag_map_new(8);
    assert_non_null(m);
    char etag[GW_ETAG_MAX + 1];
    bool absent = true;
    assert_int_equal(gw_etag_map_get(m, "L", 3, "b", "k", etag, sizeof(etag), &absent),
                     ERR_NOTFOUND);
    assert_int_equal(gw_etag_map_put(m, "L", 3, "b", "k", "\"abc\""), 0);
    assert_int_equal(gw_etag_map_get(m, "L", 3, "b", "k", etag, sizeof(etag), &absent), 0);
    assert_string_equal(etag, "abc");
    assert_false(absent);
    /* bucket and key are not confused across the separator */
    assert_int_equal(gw_etag_map_get(m, "L", 3, "bk", "", etag, sizeof(etag), &absent),
                     ERR_NOTFOUND);
    assert_int_equal(gw_etag_map_put(m, "L", 3, "b", "gone", NULL), 0);
    assert_int_equal(gw_etag_map_get(m, "L", 3, "b", "gone", etag, sizeof(etag), &absent), 0);
    assert_true(absent);
    assert_string_equal(etag, "");
    /* replaced, not duplicated */
    assert_int_equal(gw_etag_map_put(m, "L", 3, "b", "k", "def"), 0);
    assert_int_equal(gw_etag_map_count(m), 2);
    assert_int_equal(gw_etag_map_get(m, "L", 3, "b", "k", etag, sizeof(etag), &absent), 0);
    assert_string_equal(etag, "def");
    gw_etag_map_forget(m, "b", "k");
    assert_int_equal(gw_etag_map_get(m, "L", 3, "b", "k", etag, sizeof(etag), &absent),
                     ERR_NOTFOUND);
    gw_etag_map_forget(m, "b", "never");
    assert_int_equal(gw_etag_map_count(m), 1);
    gw_etag_map_free(m);
    gw_etag_map_free(NULL);
}

/* An epoch advance (or another lock) forgets what was learned before it. */
static void
test_epoch_invalidates(void **state)
{
    (void)state;
    struct gw_etag_map *m = gw_etag_map_new(8);
    char etag[GW_ETAG_MAX + 1];
    bool absent;
    assert_int_equal(gw_etag_map_put(m, "L", 3, "b", "k", "abc"), 0);
    assert_int_equal(gw_etag_map_get(m, "L", 4, "b", "k", etag, sizeof(etag), &absent),
                     ERR_NOTFOUND);
    assert_int_equal(gw_etag_map_count(m), 0); /* dropped, not kept for epoch 3 */
    assert_int_equal(gw_etag_map_get(m, "L", 3, "b", "k", etag, sizeof(etag), &absent),
                     ERR_NOTFOUND);
    assert_int_equal(gw_etag_map_put(m, "L", 3, "b", "k", "abc"), 0);
    assert_int_equal(gw_etag_map_get(m, "M", 3, "b", "k", etag, sizeof(etag), &absent),
                     ERR_NOTFOUND);
    assert_int_equal(gw_etag_map_count(m), 0);
    gw_etag_map_free(m);
}

/* The bound: the least recently used entry goes first; a lookup refreshes. */
static void
test_lru_bound(void **state)
{
    (void)state;
    struct gw_etag_map *m = gw_etag_map_new(3);
    char etag[GW_ETAG_MAX + 1];
    bool absent;
    assert_int_equal(gw_etag_map_put(m, "L", 1, "b", "k1", "e1"), 0);
    assert_int_equal(gw_etag_map_put(m, "L", 1, "b", "k2", "e2"), 0);
    assert_int_equal(gw_etag_map_put(m, "L", 1, "b", "k3", "e3"), 0);
    assert_int_equal(gw_etag_map_get(m, "L", 1, "b", "k1", etag, sizeof(etag), &absent), 0);
    assert_int_equal(gw_etag_map_put(m, "L", 1, "b", "k4", "e4"), 0);
    assert_int_equal(gw_etag_map_count(m), 3);
    assert_int_equal(gw_etag_map_get(m, "L", 1, "b", "k2", etag, sizeof(etag), &absent),
                     ERR_NOTFOUND); /* the oldest unused */
    assert_int_equal(gw_etag_map_get(m, "L", 1, "b", "k1", etag, sizeof(etag), &absent), 0);
    assert_int_equal(gw_etag_map_get(m, "L", 1, "b", "k4", etag, sizeof(etag), &absent), 0);
    /* many more than the bound: never above it */
    for (int i = 0; i < 1000; i++) {
        char key[32];
        (void)snprintf(key, sizeof(key), "x%d", i);
        assert_int_equal(gw_etag_map_put(m, "L", 1, "b", key, "e"), 0);
        assert_true(gw_etag_map_count(m) <= 3);
    }
    assert_int_equal(gw_etag_map_get(m, "L", 1, "b", "x999", etag, sizeof(etag), &absent), 0);
    /* a lower bound drops the oldest now; a higher one grows the table */
    gw_etag_map_set_max(m, 1);
    assert_int_equal(gw_etag_map_count(m), 1);
    assert_int_equal(gw_etag_map_get(m, "L", 1, "b", "x999", etag, sizeof(etag), &absent), 0);
    gw_etag_map_set_max(m, 5000);
    for (int i = 0; i < 5000; i++) {
        char key[32];
        (void)snprintf(key, sizeof(key), "y%d", i);
        assert_int_equal(gw_etag_map_put(m, "L", 1, "b", key, "e"), 0);
    }
    assert_int_equal(gw_etag_map_count(m), 5000);
    assert_int_equal(gw_etag_map_get(m, "L", 1, "b", "y0", etag, sizeof(etag), &absent), 0);
    gw_etag_map_free(m);
}

/* ETags that cannot go in a header as they are: refused, and what was known dropped. */
static void
test_bad_etags(void **state)
{
    (void)state;
    struct gw_etag_map *m = gw_etag_map_new(4);
    char etag[GW_ETAG_MAX + 1];
    bool absent;
    char big[GW_ETAG_MAX + 8];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    const char *bad[] = {"", "\"\"", "a\"b", "a b", "a\r\nX: y", big};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(gw_etag_map_put(m, "L", 1, "b", "k", "good"), 0);
        assert_int_equal(gw_etag_map_put(m, "L", 1, "b", "k", bad[i]), ERR_INVAL);
        assert_int_equal(gw_etag_map_get(m, "L", 1, "b", "k", etag, sizeof(etag), &absent),
                         ERR_NOTFOUND);
    }
    assert_int_equal(gw_etag_map_bare("W/\"x-1\"", etag, sizeof(etag)), 0);
    assert_string_equal(etag, "x-1");
    assert_int_equal(gw_etag_map_bare("abc", etag, 3), ERR_INVAL);
    gw_etag_map_free(m);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get),
        cmocka_unit_test(test_epoch_invalidates),
        cmocka_unit_test(test_lru_bound),
        cmocka_unit_test(test_bad_etags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
