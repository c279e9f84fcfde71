/*
 * tests/unit/common/num_test.c: the hot path's number formatting (fmt_u64,
 * fmt_hex_u64) against snprintf, at the edges and across the range.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/num.h"

static void
expect_both(uint64_t v)
{
    char want[32];
    char got[24];
    size_t n = fmt_u64(v, got);
    (void)snprintf(want, sizeof(want), "%llu", (unsigned long long)v);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(got, want, n);
    n = fmt_hex_u64(v, got);
    (void)snprintf(want, sizeof(want), "%llx", (unsigned long long)v);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(got, want, n);
}

static void
test_fmt(void **state)
{
    (void)state;
    static const uint64_t edges[] = {0,
                                     1,
                                     9,
                                     10,
                                     15,
                                     16,
                                     99,
                                     100,
                                     255,
                                     256,
                                     1023,
                                     1024,
                                     UINT32_MAX,
                                     (uint64_t)UINT32_MAX + 1,
                                     UINT64_MAX - 1,
                                     UINT64_MAX};
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
        expect_both(edges[i]);
    }
    uint64_t v = 1;
    for (int i = 0; i < 200; i++) {
        expect_both(v);
        v = v * 3 + 7; /* wraps: covers every length */
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fmt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
