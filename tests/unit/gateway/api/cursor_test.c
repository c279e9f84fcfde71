/* tests/unit/gateway/api/cursor_test.c: gateway/api/cursor.c: the opaque
 * cursors of GET /locks and GET /fences: round trips, and every tampered or
 * foreign cursor refused (ERR_INVAL, the API's 400 bad_cursor), never a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/api/cursor.h"

static void
test_round_trip(void **state)
{
    (void)state;
    static const char *const names[] = {"a", "orders", "lock-00001", "A.b_c-9", "..x"};
    char longest[LOCK_NAME_MAX + 1];
    memset(longest, 'z', LOCK_NAME_MAX);
    longest[LOCK_NAME_MAX] = '\0';
    for (size_t i = 0; i <= sizeof(names) / sizeof(names[0]); i++) {
        const char *n = i < sizeof(names) / sizeof(names[0]) ? names[i] : longest;
        char c[GW_CURSOR_MAX + 1];
        char back[LOCK_NAME_MAX + 1] = "";
        assert_int_equal(gw_cursor_format(GW_CURSOR_LOCKS, n, c), 0);
        assert_true(strlen(c) <= GW_CURSOR_MAX);
        assert_int_equal(gw_cursor_parse(GW_CURSOR_LOCKS, c, strlen(c), back), 0);
        assert_string_equal(back, n);
        assert_int_equal(gw_cursor_format(GW_CURSOR_FENCES, n, c), 0);
        assert_int_equal(gw_cursor_parse(GW_CURSOR_FENCES, c, strlen(c), back), 0);
        assert_string_equal(back, n);
    }
}

static void
test_format_refuses_non_names(void **state)
{
    (void)state;
    char c[GW_CURSOR_MAX + 1];
    assert_int_equal(gw_cursor_format(GW_CURSOR_LOCKS, "", c), ERR_INVAL);
    assert_int_equal(gw_cursor_format(GW_CURSOR_LOCKS, "a/b", c), ERR_INVAL);
    assert_int_equal(gw_cursor_format(GW_CURSOR_LOCKS, ".", c), ERR_INVAL);
}

/* Every one-character change of a valid cursor is refused or names the same lock. */
static void
test_tampered(void **state)
{
    (void)state;
    char c[GW_CURSOR_MAX + 1];
    assert_int_equal(gw_cursor_format(GW_CURSOR_LOCKS, "orders-17", c), 0);
    size_t len = strlen(c);
    static const char subst[] = "0123456789abcdefABCDEF.-xlf\x01\xff";
    for (size_t i = 0; i < len; i++) {
        for (size_t j = 0; j < sizeof(subst) - 1; j++) {
            char t[GW_CURSOR_MAX + 1];
            memcpy(t, c, len + 1);
            if (t[i] == subst[j]) {
                continue;
            }
            t[i] = subst[j];
            char back[LOCK_NAME_MAX + 1] = "";
            int rc = gw_cursor_parse(GW_CURSOR_LOCKS, t, len, back);
            /* hex digits in either case decode alike: same lock, else refused */
            assert_true(rc == ERR_INVAL || strcmp(back, "orders-17") == 0);
        }
    }
    /* truncations and extensions */
    for (size_t n = 0; n < len; n++) {
        char back[LOCK_NAME_MAX + 1];
        assert_int_equal(gw_cursor_parse(GW_CURSOR_LOCKS, c, n, back), ERR_INVAL);
    }
    char ext[GW_CURSOR_MAX + 8];
    (void)snprintf(ext, sizeof(ext), "%s0", c);
    char back[LOCK_NAME_MAX + 1];
    assert_int_equal(gw_cursor_parse(GW_CURSOR_LOCKS, ext, strlen(ext), back), ERR_INVAL);
}

static void
test_foreign_and_garbage(void **state)
{
    (void)state;
    char c[GW_CURSOR_MAX + 1];
    char back[LOCK_NAME_MAX + 1];
    assert_int_equal(gw_cursor_format(GW_CURSOR_FENCES, "orders", c), 0);
    /* a /fences cursor on /locks */
    assert_int_equal(gw_cursor_parse(GW_CURSOR_LOCKS, c, strlen(c), back), ERR_INVAL);
    /* the same name with the kind letter swapped still fails its check */
    c[0] = 'l';
    assert_int_equal(gw_cursor_parse(GW_CURSOR_LOCKS, c, strlen(c), back), ERR_INVAL);
    static const char *const junk[] = {
        "",
        "l",
        "l1",
        "l1.00000000",
        "l2"
        "6f"
        ".00000000",
        "1700000000000.42", /* an audit cursor */
        "l16f.zzzzzzzz",
        "l16.00000000",  /* odd hex */
        "l100.00000000", /* a NUL in the name */
        "l12f.00000000", /* "/": not a lock name */
        "l1 6f.00000000",
    };
    for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
        assert_int_equal(gw_cursor_parse(GW_CURSOR_LOCKS, junk[i], strlen(junk[i]), back),
                         ERR_INVAL);
    }
    /* too long */
    char big[GW_CURSOR_MAX + 16];
    memset(big, 'a', sizeof(big) - 1);
    big[0] = 'l';
    big[1] = '1';
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(gw_cursor_parse(GW_CURSOR_LOCKS, big, strlen(big), back), ERR_INVAL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_format_refuses_non_names),
        cmocka_unit_test(test_tampered),
        cmocka_unit_test(test_foreign_and_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
