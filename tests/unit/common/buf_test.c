/* Unit tests for common/buf.c, common/num.c, common/err.c, common/clock.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/num.h"

static void
test_buf_append_and_cap(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 10);
    assert_string_equal(buf_cstr(&b), "");
    assert_int_equal(buf_append(&b, "hello", 5), 0);
    assert_int_equal(buf_append_str(&b, "world"), 0);
    assert_int_equal(b.len, 10);
    assert_string_equal(buf_cstr(&b), "helloworld");
    /* one byte past the cap fails and leaves the contents unchanged */
    assert_int_equal(buf_append(&b, "!", 1), ERR_TOOBIG);
    assert_int_equal(b.len, 10);
    assert_string_equal(buf_cstr(&b), "helloworld");
    buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(buf_cstr(&b), "");
    assert_int_equal(buf_printf(&b, "%d-%s", 42, "x"), 0);
    assert_string_equal(buf_cstr(&b), "42-x");
    assert_int_equal(buf_printf(&b, "%s", "0123456789"), ERR_TOOBIG);
    assert_string_equal(buf_cstr(&b), "42-x");
    buf_cleanse(&b);
    assert_null(b.data);
    buf_cleanup(&b);
    buf_cleanup(NULL);
}

/* buf_printf formats into the spare room when the text fits, and grows when not */
static void
test_buf_printf_room_and_growth(void **state)
{
    (void)state;
    struct buf b;
    char want[4096];
    size_t wlen = 0;
    buf_init(&b, 1 << 20);
    for (int i = 0; i < 300; i++) {
        /* 9 to 11 characters each: some fit the spare room, some need growth */
        assert_int_equal(buf_printf(&b, "<%d:%s>", i, i % 2 != 0 ? "ab" : "abcd"), 0);
        wlen += (size_t)snprintf(want + wlen, sizeof(want) - wlen, "<%d:%s>", i,
                                 i % 2 != 0 ? "ab" : "abcd");
        assert_int_equal(b.len, wlen);
        assert_string_equal(buf_cstr(&b), want);
    }
    buf_cleanup(&b);
    buf_init(&b, 8);
    assert_int_equal(buf_printf(&b, "%s", "abc"), 0);
    /* too long for the room left and for the cap: contents and NUL as they were */
    assert_int_equal(buf_printf(&b, "%s", "defghi"), ERR_TOOBIG);
    assert_int_equal(b.len, 3);
    assert_string_equal(buf_cstr(&b), "abc");
    assert_int_equal(buf_printf(&b, "%s", "defgh"), 0); /* exactly the cap */
    assert_string_equal(buf_cstr(&b), "abcdefgh");
    assert_int_equal(buf_printf(&b, "%s", ""), 0);
    assert_int_equal(buf_printf(&b, "%s", "i"), ERR_TOOBIG);
    assert_string_equal(buf_cstr(&b), "abcdefgh");
    buf_cleanup(&b);
}

static void
test_buf_binary_and_growth(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 1 << 20);
    char chunk[1000];
    for (size_t i = 0; i < sizeof(chunk); i++) {
        chunk[i] = (char)i; /* includes NUL bytes */
    }
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(buf_append(&b, chunk, sizeof(chunk)), 0);
    }
    assert_int_equal(b.len, 1000000);
    assert_memory_equal(b.data + 999000, chunk, sizeof(chunk));
    assert_int_equal(b.data[b.len], '\0');
    /* size arithmetic that would overflow is refused, not wrapped */
    assert_int_equal(buf_append(&b, chunk, (size_t)-1), ERR_TOOBIG);
    buf_cleanup(&b);
}

/* buf_reserve allocates now: appends within the reserved room move nothing */
static void
test_buf_reserve(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 100000);
    assert_int_equal(buf_reserve(&b, 70000), 0);
    assert_true(b.alloc > 70000);
    assert_int_equal(b.len, 0);
    assert_string_equal(buf_cstr(&b), "");
    const char *at = b.data;
    char chunk[1000];
    memset(chunk, 'r', sizeof(chunk));
    for (int i = 0; i < 70; i++) {
        assert_int_equal(buf_append(&b, chunk, sizeof(chunk)), 0);
    }
    assert_ptr_equal(b.data, at);                                      /* no reallocation */
    assert_int_equal(buf_reserve(&b, 100000 - 70000 + 1), ERR_TOOBIG); /* past the cap */
    assert_int_equal(b.len, 70000);
    buf_cleanup(&b);
}

/* buf_init_local keeps the bytes in the caller's storage while they fit, then moves them */
static void
test_buf_local(void **state)
{
    (void)state;
    struct buf b;
    char local[16];
    buf_init_local(&b, 1000, local, sizeof(local));
    assert_ptr_equal(b.data, local);
    assert_string_equal(buf_cstr(&b), "");
    assert_int_equal(buf_append(&b, "0123456789", 10), 0);
    assert_int_equal(buf_printf(&b, "%s", "abcde"), 0); /* 15 bytes and the NUL: still local */
    assert_ptr_equal(b.data, local);
    assert_string_equal(local, "0123456789abcde");
    assert_int_equal(buf_append(&b, "f", 1), 0); /* one more: to the heap, contents kept */
    assert_ptr_not_equal(b.data, local);
    assert_string_equal(buf_cstr(&b), "0123456789abcdef");
    assert_int_equal(buf_append_strs(&b, "-", "gh", (const char *)NULL), 0);
    assert_string_equal(buf_cstr(&b), "0123456789abcdef-gh");
    buf_cleanup(&b); /* frees the heap copy: reusable, on its storage again */
    assert_ptr_equal(b.data, local);
    assert_int_equal(b.len, 0);
    assert_string_equal(buf_cstr(&b), "");
    assert_int_equal(buf_printf(&b, "%d", 42), 0);
    assert_ptr_equal(b.data, local);
    assert_string_equal(buf_cstr(&b), "42");
    buf_cleanse(&b); /* wipes the local bytes too */
    assert_int_equal(local[1], '\0');
    assert_int_equal(local[0], '\0');
    buf_cleanup(&b);

    /* the cap holds below the storage's size */
    buf_init_local(&b, 4, local, sizeof(local));
    assert_int_equal(buf_append(&b, "abcd", 4), 0);
    assert_int_equal(buf_append(&b, "e", 1), ERR_TOOBIG);
    assert_int_equal(buf_printf(&b, "%s", "e"), ERR_TOOBIG);
    assert_string_equal(buf_cstr(&b), "abcd");
    assert_ptr_equal(b.data, local);
    buf_cleanup(&b);

    /* a reservation past the storage moves the bytes at once */
    buf_init_local(&b, 1000, local, sizeof(local));
    assert_int_equal(buf_append(&b, "xy", 2), 0);
    assert_int_equal(buf_reserve(&b, 100), 0);
    assert_ptr_not_equal(b.data, local);
    assert_true(b.alloc > 102);
    assert_string_equal(buf_cstr(&b), "xy");
    buf_cleanup(&b);
}

static void
test_parse_u64(void **state)
{
    (void)state;
    uint64_t v = 7;
    assert_int_equal(parse_u64("0", 0, 10, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(parse_u64("18446744073709551615", 0, UINT64_MAX, &v), 0);
    assert_true(v == UINT64_MAX);
    v = 7;
    assert_int_equal(parse_u64("18446744073709551616", 0, UINT64_MAX, &v), ERR_INVAL);
    assert_int_equal(parse_u64("", 0, 10, &v), ERR_INVAL);
    assert_int_equal(parse_u64("-1", 0, 10, &v), ERR_INVAL);
    assert_int_equal(parse_u64("+1", 0, 10, &v), ERR_INVAL);
    assert_int_equal(parse_u64(" 1", 0, 10, &v), ERR_INVAL);
    assert_int_equal(parse_u64("1 ", 0, 10, &v), ERR_INVAL);
    assert_int_equal(parse_u64("11", 0, 10, &v), ERR_INVAL);
    assert_int_equal(parse_u64("4", 5, 10, &v), ERR_INVAL);
    assert_int_equal(parse_u64("000000000000000000001", 0, 10, &v), ERR_INVAL); /* 21 digits */
    assert_int_equal(v, 7); /* untouched on failure */
    assert_int_equal(parse_u64n("123abc", 3, 0, 1000, &v), 0);
    assert_int_equal(v, 123);
}

static void
test_parse_hex(void **state)
{
    (void)state;
    uint64_t v = 0;
    assert_int_equal(parse_hex_u64n("10000", 5, &v), 0);
    assert_int_equal(v, 65536);
    assert_int_equal(parse_hex_u64n("fFfF", 4, &v), 0);
    assert_int_equal(v, 65535);
    assert_int_equal(parse_hex_u64n("ffffffffffffffff", 16, &v), 0);
    assert_true(v == UINT64_MAX);
    assert_int_equal(parse_hex_u64n("10000000000000000", 17, &v), ERR_INVAL);
    assert_int_equal(parse_hex_u64n("", 0, &v), ERR_INVAL);
    assert_int_equal(parse_hex_u64n("0x1", 3, &v), ERR_INVAL);
    assert_int_equal(parse_hex_u64n("g", 1, &v), ERR_INVAL);
}

/* buf_append_strs appends what buf_printf("%s%s...") would, all or nothing */
static void
test_buf_append_strs(void **state)
{
    (void)state;
    static const char *const parts[] = {
        "",     "a", "bc", "\n", "AWS4-HMAC-SHA256", "/", "20150830/us-east-1/s3/aws4_request",
        "x y;z"};
    const size_t np = sizeof(parts) / sizeof(parts[0]);
    struct buf got;
    struct buf want;
    buf_init(&got, 1 << 16);
    buf_init(&want, 1 << 16);
    for (size_t i = 0; i < np; i++) {
        for (size_t j = 0; j < np; j++) {
            for (size_t k = 0; k < np; k++) {
                assert_int_equal(
                    buf_append_strs(&got, parts[i], parts[j], parts[k], "|", (const char *)NULL),
                    0);
                assert_int_equal(buf_printf(&want, "%s%s%s|", parts[i], parts[j], parts[k]), 0);
            }
        }
    }
    assert_int_equal(got.len, want.len);
    assert_string_equal(buf_cstr(&got), buf_cstr(&want));
    buf_cleanup(&got);
    buf_cleanup(&want);

    /* the cap: exactly full fits; one past it fails and changes nothing */
    buf_init(&got, 8);
    assert_int_equal(buf_append_strs(&got, (const char *)NULL), 0);
    assert_string_equal(buf_cstr(&got), "");
    assert_int_equal(buf_append_strs(&got, "abc", "de", (const char *)NULL), 0);
    assert_int_equal(buf_append_strs(&got, "fgh", "i", (const char *)NULL), ERR_TOOBIG);
    assert_int_equal(got.len, 5);
    assert_string_equal(buf_cstr(&got), "abcde");
    assert_int_equal(buf_append_strs(&got, "f", "gh", (const char *)NULL), 0);
    assert_string_equal(buf_cstr(&got), "abcdefgh");
    buf_cleanup(&got);
}

/* str_concat writes what snprintf("%s%s%s") would when it fits, and "" (never a prefix) when not */
static void
test_str_concat(void **state)
{
    (void)state;
    static const char *const parts[] = {"", "k", "AKIDEXAMPLE", "/20150830/", "us-east-1"};
    const size_t np = sizeof(parts) / sizeof(parts[0]);
    for (size_t i = 0; i < np; i++) {
        for (size_t j = 0; j < np; j++) {
            for (size_t k = 0; k < np; k++) {
                char want[64];
                int wn = snprintf(want, sizeof(want), "%s%s%s", parts[i], parts[j], parts[k]);
                for (size_t outlen = 0; outlen <= (size_t)wn + 2; outlen++) {
                    char got[64];
                    memset(got, '#', sizeof(got));
                    int rc =
                        str_concat(got, outlen, parts[i], parts[j], parts[k], (const char *)NULL);
                    if (outlen > (size_t)wn) {
                        assert_int_equal(rc, 0);
                        assert_string_equal(got, want);
                    } else {
                        assert_int_equal(rc, ERR_TOOBIG);
                        assert_true(outlen == 0 ? got[0] == '#' : got[0] == '\0');
                    }
                    assert_int_equal(got[outlen], '#'); /* nothing past outlen */
                }
            }
        }
    }
}

/* str_caseeq agrees with strcasecmp(a, b) == 0 (C locale: ASCII folding only) */
static void
test_str_caseeq(void **state)
{
    (void)state;
    static const char *const names[] = {
        "",     "h",     "H",          "host",       "Host",       "HOST",
        "hosT", "hostx", "x-amz-date", "X-Amz-Date", "X-AMZ-DATE", "@ost",
        "`ost", "[",     "{",          "\xc4st",     "\xe4st",     "content-length",
    };
    const size_t n = sizeof(names) / sizeof(names[0]);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            assert_int_equal(str_caseeq(names[i], names[j]), strcasecmp(names[i], names[j]) == 0);
        }
    }
    assert_true(str_caseeq("Host", "hOST"));
    assert_false(str_caseeq("\xc4", "\xe4")); /* not ASCII: never folded */
}

static void
test_err_str_and_clock(void **state)
{
    (void)state;
    for (int e = 0; e >= ERR_UNSUPPORTED; e--) {
        assert_string_not_equal(err_str(e), "unknown error");
    }
    assert_string_equal(err_str(12345), "unknown error");
    clock_pin(1000, 1700000000000);
    assert_int_equal(clock_mono_ms(), 1000);
    assert_true(clock_wall_ms() == 1700000000000);
    clock_unpin();
    uint64_t a = clock_mono_ms();
    uint64_t b = clock_mono_ms();
    assert_true(b >= a);
    assert_true(clock_wall_ms() > 1700000000000);
}

static void
test_str_copy(void **state)
{
    (void)state;
    char out[5];
    memset(out, 'X', sizeof(out));
    str_copy(out, sizeof(out), "abc");
    assert_string_equal(out, "abc");
    str_copy(out, sizeof(out), "abcd");
    assert_string_equal(out, "abcd");
    str_copy(out, sizeof(out), "abcdefgh"); /* cut to fit, as snprintf */
    assert_string_equal(out, "abcd");
    str_copy(out, 1, "abc");
    assert_string_equal(out, "");
    str_copy(out, sizeof(out), "abc");
    str_copy(out, sizeof(out), NULL); /* as "", where snprintf wrote "(null)" */
    assert_string_equal(out, "");
    out[0] = 'Y';
    str_copy(out, 0, "abc"); /* no room: nothing written */
    assert_int_equal(out[0], 'Y');
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_str_copy),
        cmocka_unit_test(test_buf_append_and_cap),
        cmocka_unit_test(test_buf_printf_room_and_growth),
        cmocka_unit_test(test_buf_binary_and_growth),
        cmocka_unit_test(test_buf_reserve),
        cmocka_unit_test(test_buf_local),
        cmocka_unit_test(test_buf_append_strs),
        cmocka_unit_test(test_str_concat),
        cmocka_unit_test(test_str_caseeq),
        cmocka_unit_test(test_parse_u64),
        cmocka_unit_test(test_parse_hex),
        cmocka_unit_test(test_err_str_and_clock),
    };
    return cmocka_run_group_tests_name("common", tests, NULL, NULL);
}
