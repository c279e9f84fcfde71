/* Unit tests for common/lockname.c: the one lock-name rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/lockname.h"

static void
test_valid_names(void **state)
{
    (void)state;
    static const char *const good[] = {"orders", "A-z_0.9", ".hidden", "...", "orders.v2-x_y", "a"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        assert_true(lock_name_valid(good[i]));
    }
    char max[LOCK_NAME_MAX + 2];
    memset(max, 'x', LOCK_NAME_MAX);
    max[LOCK_NAME_MAX] = '\0';
    assert_true(lock_name_valid(max));
}

static void
test_invalid_names(void **state)
{
    (void)state;
    /* "." and ".." would be path components of the epoch files' keys */
    static const char *const bad[] = {"",  ".",   "..",    "a/b", "a b", "a~",
                                      "é", "a\n", "a\x7f", "a*",  "a:b", "a\\b"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_false(lock_name_valid(bad[i]));
    }
    assert_false(lock_name_valid(NULL));
    char big[LOCK_NAME_MAX + 2];
    memset(big, 'x', LOCK_NAME_MAX + 1);
    big[LOCK_NAME_MAX + 1] = '\0';
    assert_false(lock_name_valid(big));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_names),
        cmocka_unit_test(test_invalid_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
