/* Unit tests for common/rand.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/rand.h"

static void
test_rand_hex(void **state)
{
    (void)state;
    char a[2 * 40 + 1];
    char b[2 * 40 + 1];
    memset(a, 'X', sizeof(a));
    assert_int_equal(rand_hex(a, 40), 0); /* more than one 32-byte block */
    assert_int_equal(strlen(a), 80);
    assert_int_equal(strspn(a, "0123456789abcdef"), 80);
    assert_int_equal(rand_hex(b, 40), 0);
    assert_string_not_equal(a, b);
    char z[1];
    assert_int_equal(rand_hex(z, 0), 0);
    assert_int_equal(z[0], '\0');
}

static void
test_rand_bytes(void **state)
{
    (void)state;
    unsigned char buf[4096];
    memset(buf, 0, sizeof(buf));
    assert_int_equal(rand_bytes(buf, sizeof(buf)), 0);
    size_t zeros = 0;
    for (size_t i = 0; i < sizeof(buf); i++) {
        zeros += buf[i] == 0;
    }
    assert_true(zeros < 64); /* about 16 expected; all-zero means nothing was written */
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rand_hex),
        cmocka_unit_test(test_rand_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
