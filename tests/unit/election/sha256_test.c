/* Unit tests for election/sha256.c: FIPS 180-4 / NIST example vectors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "election/sha256.h"

static void
check(const char *msg, size_t len, const char *want)
{
    char hex[ELECT_SHA256_HEX + 1];
    elect_sha256_hex(msg, len, hex);
    assert_string_equal(hex, want);
}

static void
test_vectors(void **state)
{
    (void)state;
    check("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check(m, strlen(m), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *m2 =
        "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmno"
        "pqklmnopqrlmnopqrsmnopqrstnopqrstu";
    check(m2, strlen(m2), "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

static void
test_million_a_incremental(void **state)
{
    (void)state;
    /* FIPS 180-2 appendix B.3: one million 'a', fed in uneven pieces. */
    char chunk[997];
    memset(chunk, 'a', sizeof(chunk));
    struct elect_sha256 c;
    elect_sha256_init(&c);
    size_t left = 1000000;
    size_t step = 1;
    while (left > 0) {
        size_t n = step < left ? step : left;
        if (n > sizeof(chunk)) {
            n = sizeof(chunk);
        }
        elect_sha256_update(&c, chunk, n);
        left -= n;
        step = step * 3 + 1;
    }
    uint8_t d[ELECT_SHA256_LEN];
    elect_sha256_final(&c, d);
    static const uint8_t want[32] = {0xcd, 0xc7, 0x6e, 0x5c, 0x99, 0x14, 0xfb, 0x92,
                                     0x81, 0xa1, 0xc7, 0xe2, 0x84, 0xd7, 0x3e, 0x67,
                                     0xf1, 0x80, 0x9a, 0x48, 0xa4, 0x97, 0x20, 0x0e,
                                     0x04, 0x6d, 0x39, 0xcc, 0xc7, 0x11, 0x2c, 0xd0};
    assert_memory_equal(d, want, 32);
}

static void
test_block_boundaries(void **state)
{
    (void)state;
    /* Lengths around the padding boundary (55, 56, 63, 64, 65): one-shot == byte by byte. */
    char buf[200];
    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = (char)(i * 7);
    }
    size_t lens[] = {0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 200};
    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
        uint8_t a[32], b[32];
        elect_sha256(buf, lens[k], a);
        struct elect_sha256 c;
        elect_sha256_init(&c);
        for (size_t i = 0; i < lens[k]; i++) {
            elect_sha256_update(&c, buf + i, 1);
        }
        elect_sha256_final(&c, b);
        assert_memory_equal(a, b, 32);
    }
}

static void
test_ct_equal(void **state)
{
    (void)state;
    assert_true(elect_ct_equal("abc", "abc", 3));
    assert_false(elect_ct_equal("abc", "abd", 3));
    assert_true(elect_ct_equal("", "", 0));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_million_a_incremental),
        cmocka_unit_test(test_block_boundaries),
        cmocka_unit_test(test_ct_equal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
