/*
 * tests/unit/common/num_test.c: the hot path's number formatting (fmt_u64,
 * fmt_hex_u64, fmt_u64_zpad) against snprintf, at the edges and across the range.
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

static void
expect_zpad(uint64_t v, size_t width)
{
    char want[32];
    char got[24];
    memset(got, '#', sizeof(got));
    (void)snprintf(want, sizeof(want), "%0*llu", (int)width, (unsigned long long)v);
    fmt_u64_zpad(v, width, got);
    assert_int_equal(strlen(want), width);
    assert_memory_equal(got, want, width);
    assert_int_equal(got[width], '#'); /* exactly width characters, no NUL */
}

/* fmt_u64_zpad is snprintf("%0*llu") for every v below 10^width */
static void
test_zpad(void **state)
{
    (void)state;
    uint64_t limit = 1; /* 10^width */
    for (size_t width = 1; width <= 19; width++) {
        limit *= 10;
        expect_zpad(0, width);
        expect_zpad(1, width);
        expect_zpad(limit - 1, width);
        expect_zpad(limit / 10, width);
        expect_zpad(limit / 10 - 1, width);
        uint64_t v = width;
        for (int i = 0; i < 2000; i++) {
            v = v * 6364136223846793005ULL + 1442695040888963407ULL;
            expect_zpad(v % limit, width);
            expect_zpad((v >> 40) % limit, width); /* small values: many leading zeros */
        }
    }
    for (uint64_t v = 0; v < 10000; v++) { /* every year, every two-digit field */
        expect_zpad(v, 4);
        if (v < 100) {
            expect_zpad(v, 2);
        }
    }
    expect_zpad(UINT64_MAX, 20);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fmt),
        cmocka_unit_test(test_zpad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
