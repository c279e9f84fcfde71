/*
 * tests/unit/gateway/s3/digest_test.c: SHA-256 and HMAC-SHA256 on the
 * algorithms fetched once: RFC 4231's vectors (short, long and over-block
 * keys) and agreement with OpenSSL's own HMAC() for every key length from 0
 * to 200 and messages of several lengths; the streaming forms (SHA-256 and
 * HMAC of a message added in pieces, and a state forked after a common
 * prefix) against the one-shot ones at every split.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/hmac.h>

#include "gateway/s3/digest.h"

static void
hex(const unsigned char *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        (void)snprintf(out + 2 * i, 3, "%02x", p[i]);
    }
}

static void
expect_hmac(const unsigned char *key, size_t keylen, const char *msg, const char *want)
{
    unsigned char mac[GW_DIGEST_SHA256_LEN];
    char got[2 * GW_DIGEST_SHA256_LEN + 1];
    assert_int_equal(gw_digest_hmac_sha256(key, keylen, msg, strlen(msg), mac), 0);
    hex(mac, sizeof(mac), got);
    assert_string_equal(got, want);
}

static void
test_rfc4231(void **state)
{
    (void)state;
    unsigned char k[131];
    memset(k, 0x0b, 20); /* test case 1 */
    expect_hmac(k, 20, "Hi There",
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    expect_hmac((const unsigned char *)"Jefe", 4, "what do ya want for nothing?", /* case 2 */
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    memset(k, 0xaa, sizeof(k)); /* test case 6: a key over the block size is hashed first */
    expect_hmac(k, 131, "Test Using Larger Than Block-Size Key - Hash Key First",
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

static void
test_sha256(void **state)
{
    (void)state;
    unsigned char md[GW_DIGEST_SHA256_LEN];
    char got[2 * GW_DIGEST_SHA256_LEN + 1];
    assert_int_equal(gw_digest_sha256("abc", 3, md), 0);
    hex(md, sizeof(md), got);
    assert_string_equal(got, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert_int_equal(gw_digest_sha256(NULL, 0, md), 0);
    hex(md, sizeof(md), got);
    assert_string_equal(got, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert_non_null(gw_digest_md_sha256());
    assert_int_equal(EVP_MD_get_size(gw_digest_md_sha1()), 20);
}

/* Every key length around the block size, against OpenSSL's HMAC(); out may alias key. */
static void
test_matches_openssl(void **state)
{
    (void)state;
    unsigned char key[200];
    unsigned char msg[300];
    for (size_t i = 0; i < sizeof(key); i++) {
        key[i] = (unsigned char)(i * 37 + 11);
    }
    for (size_t i = 0; i < sizeof(msg); i++) {
        msg[i] = (unsigned char)(i * 101 + 7);
    }
    static const size_t mlens[] = {0, 1, 55, 56, 63, 64, 65, 300};
    for (size_t kl = 0; kl <= sizeof(key); kl++) {
        for (size_t m = 0; m < sizeof(mlens) / sizeof(mlens[0]); m++) {
            unsigned char want[EVP_MAX_MD_SIZE];
            unsigned int wlen = 0;
            unsigned char got[GW_DIGEST_SHA256_LEN];
            assert_non_null(HMAC(EVP_sha256(), key, (int)kl, msg, mlens[m], want, &wlen));
            assert_int_equal(wlen, GW_DIGEST_SHA256_LEN);
            assert_int_equal(gw_digest_hmac_sha256(key, kl, msg, mlens[m], got), 0);
            assert_memory_equal(got, want, GW_DIGEST_SHA256_LEN);
        }
    }
    /* a prepared key serves many messages, each as HMAC() computes it */
    struct gw_digest_hmac h;
    assert_int_equal(gw_digest_hmac_init(&h, key, 100), 0);
    for (size_t m = 0; m < sizeof(mlens) / sizeof(mlens[0]); m++) {
        unsigned char want[EVP_MAX_MD_SIZE];
        unsigned int wlen = 0;
        unsigned char got[GW_DIGEST_SHA256_LEN];
        assert_non_null(HMAC(EVP_sha256(), key, 100, msg, mlens[m], want, &wlen));
        assert_int_equal(gw_digest_hmac_final(&h, msg, mlens[m], got), 0);
        assert_memory_equal(got, want, GW_DIGEST_SHA256_LEN);
    }
    gw_digest_hmac_cleanse(&h);
    unsigned char k32[GW_DIGEST_SHA256_LEN];
    unsigned char want[EVP_MAX_MD_SIZE];
    unsigned int wlen = 0;
    memcpy(k32, key, sizeof(k32));
    assert_non_null(HMAC(EVP_sha256(), k32, (int)sizeof(k32), msg, 10, want, &wlen));
    assert_int_equal(gw_digest_hmac_sha256(k32, sizeof(k32), msg, 10, k32), 0); /* aliased */
    assert_memory_equal(k32, want, GW_DIGEST_SHA256_LEN);
}

/* A message added in two pieces at every split, and a forked state, hash as in one piece. */
static void
test_streaming(void **state)
{
    (void)state;
    unsigned char msg[300];
    unsigned char key[GW_DIGEST_SHA256_LEN];
    for (size_t i = 0; i < sizeof(msg); i++) {
        msg[i] = (unsigned char)(i * 29 + 3);
    }
    for (size_t i = 0; i < sizeof(key); i++) {
        key[i] = (unsigned char)(i * 13 + 1);
    }
    struct gw_digest_hmac h;
    assert_int_equal(gw_digest_hmac_init(&h, key, sizeof(key)), 0);
    for (size_t n = 0; n <= sizeof(msg); n += 37) {
        unsigned char want_md[GW_DIGEST_SHA256_LEN];
        unsigned char want_mac[EVP_MAX_MD_SIZE];
        unsigned int wlen = 0;
        assert_int_equal(gw_digest_sha256(msg, n, want_md), 0);
        assert_non_null(HMAC(EVP_sha256(), key, (int)sizeof(key), msg, n, want_mac, &wlen));
        for (size_t cut = 0; cut <= n; cut++) {
            struct gw_digest_sha256 s;
            struct gw_digest_sha256 m;
            unsigned char got[GW_DIGEST_SHA256_LEN];
            assert_int_equal(gw_digest_sha256_init(&s), 0);
            assert_int_equal(gw_digest_sha256_update(&s, msg, cut), 0);
            struct gw_digest_sha256 fork = s; /* a copy after the prefix goes on alone */
            assert_int_equal(gw_digest_sha256_update(&fork, "x", 1), 0);
            assert_int_equal(gw_digest_sha256_update(&s, msg + cut, n - cut), 0);
            assert_int_equal(gw_digest_sha256_final(&s, got), 0);
            assert_memory_equal(got, want_md, GW_DIGEST_SHA256_LEN);
            assert_int_equal(gw_digest_sha256_final(&fork, got), 0);

            gw_digest_hmac_begin(&h, &m);
            assert_int_equal(gw_digest_sha256_update(&m, msg, cut), 0);
            struct gw_digest_sha256 mfork = m;
            for (int k = 0; k < 2; k++) { /* the prefix's state serves two messages */
                struct gw_digest_sha256 each = mfork;
                assert_int_equal(gw_digest_sha256_update(&each, msg + cut, n - cut), 0);
                assert_int_equal(gw_digest_hmac_end(&h, &each, got), 0);
                assert_memory_equal(got, want_mac, GW_DIGEST_SHA256_LEN);
            }
            assert_int_equal(gw_digest_sha256_update(&m, msg + cut, n - cut), 0);
            assert_int_equal(gw_digest_hmac_end(&h, &m, got), 0);
            assert_memory_equal(got, want_mac, GW_DIGEST_SHA256_LEN);
        }
    }
    gw_digest_hmac_cleanse(&h);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc4231),
        cmocka_unit_test(test_sha256),
        cmocka_unit_test(test_matches_openssl),
        cmocka_unit_test(test_streaming),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
