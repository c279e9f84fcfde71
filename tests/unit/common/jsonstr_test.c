/* Unit tests for common/jsonstr.c: JSON string literals from hostile bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/jsonstr.h"

/* s[0..len) as a JSON literal, in a static buffer. */
static const char *
lit(const char *s, size_t len)
{
    static struct buf b;
    buf_cleanup(&b);
    buf_init(&b, 4096);
    assert_int_equal(jsonstr_append(&b, s, len), 0);
    return buf_cstr(&b);
}

#define LIT(s) lit((s), sizeof(s) - 1)

static void
test_plain_and_utf8_pass(void **state)
{
    (void)state;
    assert_string_equal(LIT(""), "\"\"");
    assert_string_equal(LIT("photos/2024/a.jpg"), "\"photos/2024/a.jpg\"");
    /* é, €, 𝄞: two, three and four bytes, unchanged */
    assert_string_equal(LIT("\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e"),
                        "\"\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e\"");
}

static void
test_quotes_backslash_controls(void **state)
{
    (void)state;
    assert_string_equal(LIT("a\"b\\c"), "\"a\\\"b\\\\c\"");
    assert_string_equal(LIT("\n\r\t"), "\"\\u000a\\u000d\\u0009\"");
    assert_string_equal(LIT("\x01\x1f\x7f"), "\"\\u0001\\u001f\\u007f\"");
    assert_string_equal(LIT("a\0b"), "\"a\\u0000b\"");
}

static void
test_invalid_utf8_replaced(void **state)
{
    (void)state;
    /* a lone continuation byte, C0/C1 overlongs, F5+, a truncated sequence */
    assert_string_equal(LIT("\x80"), "\"\\ufffd\"");
    assert_string_equal(LIT("\xc0\xaf"), "\"\\ufffd\\ufffd\"");
    assert_string_equal(LIT("\xff"), "\"\\ufffd\"");
    assert_string_equal(LIT("a\xe2\x82"), "\"a\\ufffd\\ufffd\"");
    /* overlong three bytes, a UTF-16 surrogate, above U+10FFFF */
    assert_string_equal(LIT("\xe0\x80\xaf"), "\"\\ufffd\\ufffd\\ufffd\"");
    assert_string_equal(LIT("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");
    assert_string_equal(LIT("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
    /* the good bytes after a bad one survive */
    assert_string_equal(LIT("\xff\xc3\xa9z"), "\"\\ufffd\xc3\xa9z\"");
}

static void
test_utf8_len_bounds(void **state)
{
    (void)state;
    assert_int_equal(jsonstr_utf8_len((const unsigned char *)"\xf0\x9d\x84\x9e", 4), 4);
    assert_int_equal(jsonstr_utf8_len((const unsigned char *)"\xf0\x9d\x84\x9e", 3), 0);
    assert_int_equal(jsonstr_utf8_len((const unsigned char *)"\xef\xbf\xbf", 3), 3);
    assert_int_equal(jsonstr_utf8_len((const unsigned char *)"\xc2\x80", 2), 2);
    assert_int_equal(jsonstr_utf8_len((const unsigned char *)"", 0), 0);
}

static void
test_null_and_cap(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 8);
    assert_int_equal(jsonstr_append_cstr(&b, NULL), 0);
    assert_string_equal(buf_cstr(&b), "null");
    buf_reset(&b);
    /* a cap too small for the escaped form fails, never overruns */
    assert_int_not_equal(jsonstr_append_cstr(&b, "\x01\x02"), 0);
    buf_cleanup(&b);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_and_utf8_pass),
        cmocka_unit_test(test_quotes_backslash_controls),
        cmocka_unit_test(test_invalid_utf8_replaced),
        cmocka_unit_test(test_utf8_len_bounds),
        cmocka_unit_test(test_null_and_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
