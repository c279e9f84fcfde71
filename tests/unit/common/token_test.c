/* Unit tests for common/token.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/token.h"

/* Every byte against RFC 9110 section 5.6.2's grammar, written out apart from the table. */
static void
test_every_byte(void **state)
{
    (void)state;
    const char *punct = "!#$%&'*+-.^_`|~";
    for (int c = 0; c < 256; c++) {
        bool want = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c != 0 && strchr(punct, c) != NULL);
        if (http_is_tchar((unsigned char)c) != want) {
            fail_msg("byte 0x%02x: table says %d", c, !want);
        }
    }
}

static void
test_tokens(void **state)
{
    (void)state;
    assert_true(http_is_token("x-amz-date", 10));
    assert_true(http_is_token("Content-Length: 5", 14)); /* the name only */
    assert_false(http_is_token("Content-Length: 5", 15));
    assert_false(http_is_token("", 0));
    assert_false(http_is_token("a b", 3));
    assert_false(http_is_token("a\0b", 3));
    assert_false(http_is_token("caf\xc3\xa9", 5));
    assert_false(http_is_token("a\"", 2));
    assert_false(http_is_token("(x)", 3));
}

/* One odd byte at every place of words and tails, against the byte rule. */
static void
test_value_clean_every_byte_everywhere(void **state)
{
    (void)state;
    char v[19];
    for (int c = 0; c < 256; c++) {
        bool want = (c >= 0x20 || c == '\t') && c != 0x7f;
        for (size_t len = 1; len <= sizeof(v); len++) {
            for (size_t at = 0; at < len; at++) {
                memset(v, 'a', sizeof(v));
                v[at] = (char)c;
                if (http_value_clean(v, len) != want) {
                    fail_msg("byte 0x%02x at %zu of %zu", c, at, len);
                }
            }
        }
    }
}

/* Bytes next to the word's thresholds (0x1f/0x20, 0x7e/0x7f/0x80, 0xff) in
 * random mixes, eight to a word: no borrow from a clean byte flags a word. */
static void
test_value_clean_mixes(void **state)
{
    (void)state;
    static const unsigned char edge[] = {0x00, 0x09, 0x0a, 0x1f, 0x20, 0x21, 0x7e,
                                         0x7f, 0x80, 0x81, 0xa0, 0xfe, 0xff, 'a'};
    uint32_t seed = 12345;
    char v[24];
    for (int round = 0; round < 200000; round++) {
        bool want = true;
        for (size_t i = 0; i < sizeof(v); i++) {
            seed = seed * 1103515245u + 12345u;
            unsigned char c = edge[(seed >> 16) % sizeof(edge)];
            v[i] = (char)c;
            want = want && (c >= 0x20 || c == '\t') && c != 0x7f;
        }
        if (http_value_clean(v, sizeof(v)) != want) {
            fail_msg("round %d", round);
        }
    }
    assert_true(http_value_clean("", 0));
}

static void
test_name_is(void **state)
{
    (void)state;
    assert_true(HTTP_NAME_IS("Content-Length", 14, "content-length"));
    assert_false(HTTP_NAME_IS("Content-Length", 14, "content-lengt"));
    assert_false(HTTP_NAME_IS("Content-Lengths", 15, "content-length"));
    assert_false(HTTP_NAME_IS("Content-Lenhth", 14, "content-length"));
    assert_true(HTTP_NAME_IS("TE", 2, "te"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_byte),
        cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_value_clean_every_byte_everywhere),
        cmocka_unit_test(test_value_clean_mixes),
        cmocka_unit_test(test_name_is),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
