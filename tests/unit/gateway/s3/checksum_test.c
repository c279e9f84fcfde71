/*
 * tests/unit/gateway/s3/checksum_test.c: CRC-32, CRC-32C, SHA-1, SHA-256
 * as S3 checksum values (base64 of the big-endian digest).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/s3/checksum.h"

/* Bit-at-a-time reference CRC (reflected), to check the sliced tables. */
static uint32_t
crc_ref(uint32_t poly, const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) {
            c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
        }
    }
    return ~c;
}

static void
expect_b64(enum gw_checksum_alg alg, const char *data, const char *want)
{
    char out[GW_CHECKSUM_B64_MAX];
    assert_int_equal(gw_checksum_b64(alg, data, strlen(data), out, sizeof(out)), 0);
    assert_string_equal(out, want);
}

static void
test_known_values(void **state)
{
    (void)state;
    /* The check values of the CRC catalogue ("123456789") and FIPS 180 "abc". */
    assert_int_equal(gw_checksum_crc32_update(0, "123456789", 9), 0xcbf43926u);
    assert_int_equal(gw_checksum_crc32c_update(0, "123456789", 9), 0xe3069283u);
    expect_b64(GW_CHECKSUM_CRC32, "123456789", "y/Q5Jg==");
    expect_b64(GW_CHECKSUM_CRC32C, "123456789", "4waSgw==");
    /* The botocore capture's trailer: x-amz-checksum-crc32:poTHxg== for "0123456789". */
    expect_b64(GW_CHECKSUM_CRC32, "0123456789", "poTHxg==");
    expect_b64(GW_CHECKSUM_CRC32, "", "AAAAAA==");
    expect_b64(GW_CHECKSUM_SHA1, "abc", "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=");
    expect_b64(GW_CHECKSUM_SHA256, "abc", "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
    expect_b64(GW_CHECKSUM_SHA256, "", "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
}

static void
test_incremental(void **state)
{
    (void)state;
    enum { N = 10007 };
    unsigned char *data = malloc(N);
    assert_non_null(data);
    uint32_t x = 12345;
    for (size_t i = 0; i < N; i++) {
        x = x * 1103515245u + 12345u;
        data[i] = (unsigned char)(x >> 16);
    }
    assert_int_equal(gw_checksum_crc32_update(0, data, N), crc_ref(0xedb88320u, data, N));
    assert_int_equal(gw_checksum_crc32c_update(0, data, N), crc_ref(0x82f63b78u, data, N));
    enum gw_checksum_alg algs[] = {GW_CHECKSUM_CRC32, GW_CHECKSUM_CRC32C, GW_CHECKSUM_SHA1,
                                   GW_CHECKSUM_SHA256};
    for (size_t a = 0; a < 4; a++) {
        char whole[GW_CHECKSUM_B64_MAX];
        char parts[GW_CHECKSUM_B64_MAX];
        assert_int_equal(gw_checksum_b64(algs[a], data, N, whole, sizeof(whole)), 0);
        struct gw_checksum c;
        assert_int_equal(gw_checksum_init(&c, algs[a]), 0);
        size_t off = 0;
        size_t step = 1;
        while (off < N) {
            size_t n = N - off < step ? N - off : step;
            assert_int_equal(gw_checksum_update(&c, data + off, n), 0);
            off += n;
            step = step * 3 + 1;
        }
        assert_int_equal(gw_checksum_final_b64(&c, parts, sizeof(parts)), 0);
        gw_checksum_cleanup(&c);
        assert_string_equal(whole, parts);
    }
    free(data);
}

static void
test_names_and_errors(void **state)
{
    (void)state;
    enum gw_checksum_alg alg;
    assert_int_equal(gw_checksum_alg_from_header("x-amz-checksum-crc32", &alg), 0);
    assert_int_equal(alg, GW_CHECKSUM_CRC32);
    assert_int_equal(gw_checksum_alg_from_header("X-Amz-Checksum-CRC32C", &alg), 0);
    assert_int_equal(alg, GW_CHECKSUM_CRC32C);
    assert_int_equal(gw_checksum_alg_from_header("x-amz-checksum-sha1", &alg), 0);
    assert_int_equal(alg, GW_CHECKSUM_SHA1);
    assert_int_equal(gw_checksum_alg_from_header("x-amz-checksum-sha256", &alg), 0);
    assert_int_equal(alg, GW_CHECKSUM_SHA256);
    assert_int_equal(gw_checksum_alg_from_header("x-amz-checksum-crc64nvme", &alg), ERR_NOTFOUND);
    assert_int_equal(gw_checksum_alg_from_header("x-amz-checksum-crc3", &alg), ERR_NOTFOUND);
    assert_string_equal(gw_checksum_header_name(GW_CHECKSUM_SHA256), "x-amz-checksum-sha256");
    assert_string_equal(gw_checksum_header_name(GW_CHECKSUM_NONE), "");

    struct gw_checksum c;
    assert_int_equal(gw_checksum_init(&c, GW_CHECKSUM_NONE), ERR_INVAL);
    gw_checksum_cleanup(&c);
    char small[9]; /* "xxxxxx==" and the NUL */
    assert_int_equal(gw_checksum_b64(GW_CHECKSUM_CRC32, "a", 1, small, sizeof(small)), 0);
    assert_int_equal(gw_checksum_b64(GW_CHECKSUM_SHA1, "a", 1, small, sizeof(small)), ERR_TOOBIG);
    assert_int_equal(gw_checksum_b64(GW_CHECKSUM_CRC32, "a", 1, small, 8), ERR_TOOBIG);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_values),
        cmocka_unit_test(test_incremental),
        cmocka_unit_test(test_names_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
