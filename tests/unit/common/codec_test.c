/* Unit tests for common/codec.c: hex and percent codecs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/codec.h"

static void
test_hex(void **state)
{
    (void)state;
    assert_int_equal(hex_digit('0'), 0);
    assert_int_equal(hex_digit('f'), 15);
    assert_int_equal(hex_digit('F'), 15);
    assert_int_equal(hex_digit('g'), -1);
    assert_int_equal(hex_digit('/'), -1);
    assert_int_equal(hex_digit(0xC3), -1);
    unsigned char in[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
    char hex[2 * sizeof(in) + 1];
    hex_encode(in, sizeof(in), hex);
    assert_string_equal(hex, "00017f80abff");
    unsigned char out[sizeof(in)];
    assert_int_equal(hex_decode("00017F80ABff", 12, out, sizeof(out)), 0);
    assert_memory_equal(out, in, sizeof(in));
    assert_int_equal(hex_decode("00017f80abf", 11, out, sizeof(out)), ERR_INVAL);
    assert_int_equal(hex_decode("00017f80abfg", 12, out, sizeof(out)), ERR_INVAL);
}

/* hex_digit against the definition, for every byte and past both ends. */
static void
test_hex_digit_every_byte(void **state)
{
    (void)state;
    for (int c = -2; c < 258; c++) {
        int want = -1;
        if (c >= '0' && c <= '9') {
            want = c - '0';
        } else if (c >= 'a' && c <= 'f') {
            want = c - 'a' + 10;
        } else if (c >= 'A' && c <= 'F') {
            want = c - 'A' + 10;
        }
        assert_int_equal(hex_digit(c), want);
        if (c >= 0 && c < 256) {
            char two[2] = {'0', (char)c};
            unsigned char v = 0;
            assert_int_equal(hex_decode(two, 2, &v, 1), want < 0 ? ERR_INVAL : 0);
        }
    }
}

/* decode s strictly into a 16-byte buffer; returns the status, *got the text */
static int
pct(const char *s, bool plus, char got[17], size_t *len)
{
    return pct_decode(s, strlen(s), plus, got, 16, len);
}

static void
test_pct_decode(void **state)
{
    (void)state;
    char got[17];
    size_t len = 0;
    assert_int_equal(pct("a%2Fb+c", false, got, &len), 0);
    assert_string_equal(got, "a/b+c"); /* in a path '+' is a plus */
    assert_int_equal(pct("a%2fb+c", true, got, &len), 0);
    assert_string_equal(got, "a/b c"); /* in a query it is a space */
    assert_int_equal(len, 5);
    assert_int_equal(pct("delete%3D", true, got, &len), 0);
    assert_string_equal(got, "delete=");
    assert_int_equal(pct("", true, got, &len), 0);
    assert_int_equal(len, 0);
    static const char *const bad[] = {"%", "%4", "a%4", "%4g", "%%41", "%00", "a%00b"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(pct(bad[i], true, got, &len), ERR_INVAL);
    }
    assert_int_equal(pct("0123456789abcdef", true, got, &len), 0); /* exactly cap */
    assert_int_equal(pct("0123456789abcdefg", true, got, &len), ERR_TOOBIG);
    /* the cap where a run that is copied whole meets a decoded byte, both ways */
    assert_int_equal(pct("0123456789abcde%41", true, got, &len), 0);
    assert_string_equal(got, "0123456789abcdeA");
    assert_int_equal(pct("0123456789abcdef%41", true, got, &len), ERR_TOOBIG);
    assert_int_equal(pct("%410123456789abcdef", true, got, &len), ERR_TOOBIG);
    assert_int_equal(pct("+%41+b++", false, got, &len), 0);
    assert_string_equal(got, "+A+b++");
    assert_int_equal(pct("+%41+b++", true, got, &len), 0);
    assert_string_equal(got, " A b  ");
    /* NULL out measures */
    assert_int_equal(pct_decode("%41%42", 6, true, NULL, SIZE_MAX, &len), 0);
    assert_int_equal(len, 2);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hex),
        cmocka_unit_test(test_hex_digit_every_byte),
        cmocka_unit_test(test_pct_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
