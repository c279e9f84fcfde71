/*
 * tests/unit/common/mem_test.c: mem_zalloc's blocks are zeroed, a block
 * reused from the allocator's cache included, and an array size that
 * overflows is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/mem.h"

static void
assert_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(p[i], 0);
    }
}

static void
test_zeroed_when_reused(void **state)
{
    (void)state;
    static const size_t sizes[] = {1, 24, 100, 352, 1000, 1032, 4096, 70000};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i];
        /* dirty a block of the size, give it back: the allocator's cache
           hands the same block out next, dirty */
        unsigned char *p = malloc(n);
        assert_non_null(p);
        memset(p, 0xa5, n);
        free(p);
        unsigned char *z = mem_zalloc(n);
        assert_non_null(z);
        assert_zero(z, n);
        free(z);
        z = mem_zalloc_array(n, 3);
        assert_non_null(z);
        assert_zero(z, 3 * n);
        free(z);
    }
}

static void
test_array_overflow_refused(void **state)
{
    (void)state;
    assert_null(mem_zalloc_array(SIZE_MAX / 2 + 1, 2));
    assert_null(mem_zalloc_array(SIZE_MAX, SIZE_MAX));
    unsigned char *p = mem_zalloc_array(7, 1);
    assert_non_null(p);
    assert_zero(p, 7);
    free(p);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zeroed_when_reused),
        cmocka_unit_test(test_array_overflow_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
