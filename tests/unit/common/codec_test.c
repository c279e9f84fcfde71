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

/* The definition, a byte at a time: what pct_decode's word-at-a-time scan
 * must agree with.  Returns the status as pct_decode does, without a cap. */
static int
pct_reference(const char *s, size_t n, bool plus, char *out, size_t *len)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            if (n - i < 3) {
                return ERR_INVAL;
            }
            int hi = hex_digit((unsigned char)s[i + 1]);
            int lo = hex_digit((unsigned char)s[i + 2]);
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                return ERR_INVAL;
            }
            c = (char)(hi << 4 | lo);
            i += 2;
        } else if (c == '+' && plus) {
            c = ' ';
        }
        out[o++] = c;
    }
    out[o] = '\0';
    *len = o;
    return 0;
}

/* Random strings rich in '%', '+', hex digits and bytes with the high bit
 * (a '%' or '+' at every place in and across the scan's eight-byte words). */
static void
test_pct_decode_against_reference(void **state)
{
    (void)state;
    static const char alphabet[] = {'a',        'Z',        '%',        '+', '4', '1', '0', 'f',
                                    (char)0xa5, (char)0xab, (char)0xc3, '-', '.', '~', '/', '='};
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    for (int round = 0; round < 20000; round++) {
        char in[48];
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        size_t n = (size_t)(seed >> 33) % sizeof(in);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            unsigned pick = (unsigned)(seed >> 33) % 64;
            in[i] = pick < sizeof(alphabet) ? alphabet[pick] : 'x'; /* long plain runs too */
        }
        for (int plus = 0; plus < 2; plus++) {
            char want[sizeof(in) + 1];
            char got[sizeof(in) + 1];
            size_t wlen = 0;
            size_t glen = 0;
            int wrc = pct_reference(in, n, plus, want, &wlen);
            int grc = pct_decode(in, n, plus, got, sizeof(got) - 1, &glen);
            assert_int_equal(grc, wrc);
            if (wrc == 0) {
                assert_int_equal(glen, wlen);
                assert_memory_equal(got, want, wlen);
            }
        }
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hex),
        cmocka_unit_test(test_hex_digit_every_byte),
        cmocka_unit_test(test_pct_decode),
        cmocka_unit_test(test_pct_decode_against_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
