/* tests/unit/store/record_test.c: store/record.c encoders and decoders. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store/record.h"

static void
test_fence_roundtrip(void **state)
{
    (void)state;
    struct store_fence f = {.token = 42, .advanced_ms = 1795256130123};
    memcpy(f.request_id, "req-1", 6);
    memcpy(f.principal, "worker", 7);
    uint8_t buf[STORE_REC_FENCE_MAX];
    size_t len = 0;
    assert_int_equal(store_rec_fence_encode(&f, buf, sizeof(buf), &len), 0);
    struct store_fence g;
    assert_int_equal(store_rec_fence_decode(buf, len, &g), 0);
    assert_int_equal(g.token, 42);
    assert_int_equal(g.advanced_ms, 1795256130123);
    assert_string_equal(g.request_id, "req-1");
    assert_string_equal(g.principal, "worker");
    /* too small an output */
    assert_int_equal(store_rec_fence_encode(&f, buf, len - 1, &len), ERR_TOOBIG);
}

static void
test_fence_damaged(void **state)
{
    (void)state;
    struct store_fence f = {.token = 7, .advanced_ms = 1};
    memcpy(f.request_id, "r", 2);
    uint8_t buf[STORE_REC_FENCE_MAX + 1];
    size_t len = 0;
    assert_int_equal(store_rec_fence_encode(&f, buf, sizeof(buf), &len), 0);
    struct store_fence g = {.token = 99};
    for (size_t i = 0; i < len; i++) {
        assert_int_equal(store_rec_fence_decode(buf, i, &g), ERR_INVAL); /* every truncation */
    }
    assert_int_equal(g.token, 99); /* untouched on failure */
    buf[len] = 0;
    assert_int_equal(store_rec_fence_decode(buf, len + 1, &g), ERR_INVAL); /* trailing byte */
    uint8_t b2[STORE_REC_FENCE_MAX];
    memcpy(b2, buf, len);
    b2[0] = 'E';
    assert_int_equal(store_rec_fence_decode(b2, len, &g), ERR_INVAL); /* wrong tag */
    memcpy(b2, buf, len);
    b2[1] = 2;
    assert_int_equal(store_rec_fence_decode(b2, len, &g), ERR_VERSION); /* newer */
    b2[1] = 0;
    assert_int_equal(store_rec_fence_decode(b2, len, &g), ERR_INVAL);
    memcpy(b2, buf, len);
    b2[2 + 16 + 2] = '\0'; /* NUL inside the request id */
    assert_int_equal(store_rec_fence_decode(b2, len, &g), ERR_INVAL);
    memcpy(b2, buf, len);
    b2[2 + 16] = 0xff; /* string length beyond the cap */
    assert_int_equal(store_rec_fence_decode(b2, len, &g), ERR_INVAL);
    struct store_fence z = {.token = 0};
    assert_int_equal(store_rec_fence_encode(&z, buf, sizeof(buf), &len), 0);
    assert_int_equal(store_rec_fence_decode(buf, len, &g), ERR_INVAL); /* token 0 */
    assert_int_equal(store_rec_fence_decode(NULL, 0, &g), ERR_INVAL);
}

static void
test_elect_roundtrip(void **state)
{
    (void)state;
    struct store_elect e = {.epoch = UINT64_MAX, .learned_ms = -5};
    uint8_t buf[STORE_REC_ELECT_MAX];
    size_t len = 0;
    assert_int_equal(store_rec_elect_encode(&e, buf, sizeof(buf), &len), 0);
    assert_int_equal(len, STORE_REC_ELECT_MAX);
    struct store_elect g;
    assert_int_equal(store_rec_elect_decode(buf, len, &g), 0);
    assert_true(g.epoch == UINT64_MAX);
    assert_int_equal(g.learned_ms, -5);
    for (size_t i = 0; i < len; i++) {
        assert_int_equal(store_rec_elect_decode(buf, i, &g), ERR_INVAL);
    }
    buf[1] = 9;
    assert_int_equal(store_rec_elect_decode(buf, len, &g), ERR_VERSION);
    assert_int_equal(store_rec_elect_encode(&e, buf, 3, &len), ERR_TOOBIG);
}

static void
test_audit_roundtrip(void **state)
{
    (void)state;
    struct store_audit_rec r = {.time_ms = 1000,
                                .kind = STORE_AUDIT_CUT,
                                .token = 3,
                                .current = 4,
                                .lock = "orders",
                                .principal = "w",
                                .client = "127.0.0.1:1",
                                .method = "PUT",
                                .bucket = "data",
                                .key = "orders/x",
                                .operation = "PutObject",
                                .request_id = "rid",
                                .user_agent = NULL};
    uint8_t buf[STORE_REC_AUDIT_MAX];
    size_t len = 0;
    assert_int_equal(store_rec_audit_encode(&r, buf, sizeof(buf), &len), 0);
    struct store_audit_rec g;
    struct store_rec_scratch sc;
    assert_int_equal(store_rec_audit_decode(buf, len, &g, &sc), 0);
    assert_int_equal(g.time_ms, 1000);
    assert_int_equal(g.kind, STORE_AUDIT_CUT);
    assert_int_equal(g.token, 3);
    assert_int_equal(g.current, 4);
    assert_string_equal(g.lock, "orders");
    assert_string_equal(g.key, "orders/x");
    assert_string_equal(g.user_agent, "");
    assert_string_equal(g.request_id, "rid");
    for (size_t i = 0; i < len; i++) {
        assert_int_equal(store_rec_audit_decode(buf, i, &g, &sc), ERR_INVAL);
    }
    buf[10] = 0; /* kind byte: 0 is out of range */
    assert_int_equal(store_rec_audit_decode(buf, len, &g, &sc), ERR_INVAL);
    buf[10] = STORE_AUDIT_KIND_MAX + 1;
    assert_int_equal(store_rec_audit_decode(buf, len, &g, &sc), ERR_INVAL);
    r.kind = (enum store_audit_kind)0;
    assert_int_equal(store_rec_audit_encode(&r, buf, sizeof(buf), &len), ERR_INVAL);
    r.kind = STORE_AUDIT_STALE;
    assert_int_equal(store_rec_audit_encode(&r, buf, 10, &len), ERR_TOOBIG);
}

/* An audit record as fencegate wrote it before trace ids
 * (tests/fuzz/corpus/store_record/audit_stale): still read, byte for byte the
 * same when written again without a trace id; with one it is version 2. */
static const uint8_t v1_record[] = {
    0x41, 0x01, 0x4b, 0x9a, 0x9a, 0xfd, 0xa1, 0x01, 0x00, 0x00, 0x01, 0x29, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06, 0x00, 0x6f, 0x72, 0x64,
    0x65, 0x72, 0x73, 0x06, 0x00, 0x77, 0x6f, 0x72, 0x6b, 0x65, 0x72, 0x0f, 0x00, 0x31, 0x39, 0x32,
    0x2e, 0x30, 0x2e, 0x32, 0x2e, 0x37, 0x3a, 0x35, 0x31, 0x32, 0x33, 0x34, 0x03, 0x00, 0x50, 0x55,
    0x54, 0x04, 0x00, 0x64, 0x61, 0x74, 0x61, 0x08, 0x00, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x73, 0x2f,
    0x31, 0x09, 0x00, 0x50, 0x75, 0x74, 0x4f, 0x62, 0x6a, 0x65, 0x63, 0x74, 0x10, 0x00, 0x30, 0x31,
    0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x0e, 0x00,
    0x61, 0x77, 0x73, 0x2d, 0x63, 0x6c, 0x69, 0x2f, 0x32, 0x2e, 0x31, 0x33, 0x2e, 0x30};

static void
test_audit_trace_id_versions(void **state)
{
    (void)state;
    struct store_audit_rec g;
    struct store_rec_scratch sc;
    assert_int_equal(store_rec_audit_decode(v1_record, sizeof(v1_record), &g, &sc), 0);
    assert_string_equal(g.lock, "orders");
    assert_string_equal(g.trace_id, "");
    uint8_t buf[STORE_REC_AUDIT_MAX];
    size_t len = 0;
    assert_int_equal(store_rec_audit_encode(&g, buf, sizeof(buf), &len), 0);
    assert_int_equal(len, sizeof(v1_record));
    assert_memory_equal(buf, v1_record, len); /* no trace id: version 1, unchanged */

    struct store_audit_rec r = g;
    r.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    assert_int_equal(store_rec_audit_encode(&r, buf, sizeof(buf), &len), 0);
    assert_int_equal(buf[1], STORE_REC_AUDIT_VERSION);
    assert_int_equal(len, sizeof(v1_record) + 2 + 32);
    assert_int_equal(store_rec_audit_decode(buf, len, &g, &sc), 0);
    assert_string_equal(g.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_string_equal(g.user_agent, "aws-cli/2.13.0");
    for (size_t i = 0; i < len; i++) {
        assert_int_equal(store_rec_audit_decode(buf, i, &g, &sc), ERR_INVAL);
    }
    /* version 2 with an empty trace id is not canonical: refused */
    uint8_t odd[sizeof(v1_record) + 2];
    memcpy(odd, v1_record, sizeof(v1_record));
    odd[1] = STORE_REC_AUDIT_VERSION;
    odd[sizeof(v1_record)] = 0;
    odd[sizeof(v1_record) + 1] = 0;
    assert_int_equal(store_rec_audit_decode(odd, sizeof(odd), &g, &sc), ERR_INVAL);
    /* a version 1 record followed by a trace id is not one either */
    memcpy(odd, v1_record, sizeof(v1_record));
    assert_int_equal(store_rec_audit_decode(odd, sizeof(odd), &g, &sc), ERR_INVAL);
    /* a later version is a newer fencegate's */
    odd[1] = STORE_REC_AUDIT_RUN + 1;
    assert_int_equal(store_rec_audit_decode(odd, sizeof(v1_record), &g, &sc), ERR_VERSION);
}

/* A record that coalesced repeats is version 3 (count, last_ms after the trace
 * id, which may be empty); one that never repeated reads as count 1. */
static void
test_audit_run_version(void **state)
{
    (void)state;
    struct store_audit_rec g;
    struct store_rec_scratch sc;
    assert_int_equal(store_rec_audit_decode(v1_record, sizeof(v1_record), &g, &sc), 0);
    assert_int_equal(g.count, 1); /* a record from before coalescing */
    assert_int_equal(g.last_ms, g.time_ms);
    struct store_audit_rec r = g;
    r.count = 1000000;
    r.last_ms = g.time_ms + 59000;
    uint8_t buf[STORE_REC_AUDIT_MAX];
    size_t len = 0;
    assert_int_equal(store_rec_audit_encode(&r, buf, sizeof(buf), &len), 0);
    assert_int_equal(buf[1], STORE_REC_AUDIT_RUN);
    assert_int_equal(len, sizeof(v1_record) + 2 + 16); /* an empty trace id, count, last */
    assert_int_equal(store_rec_audit_decode(buf, len, &g, &sc), 0);
    assert_int_equal(g.count, 1000000);
    assert_int_equal(g.last_ms, r.time_ms + 59000);
    assert_string_equal(g.trace_id, "");
    assert_string_equal(g.user_agent, "aws-cli/2.13.0");
    for (size_t i = 0; i < len; i++) {
        assert_int_equal(store_rec_audit_decode(buf, i, &g, &sc), ERR_INVAL);
    }
    /* with a trace id too */
    r.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    assert_int_equal(store_rec_audit_encode(&r, buf, sizeof(buf), &len), 0);
    assert_int_equal(store_rec_audit_decode(buf, len, &g, &sc), 0);
    assert_string_equal(g.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_int_equal(g.count, 1000000);
    /* version 3 with count 1 is not canonical: refused */
    r.count = 2;
    assert_int_equal(store_rec_audit_encode(&r, buf, sizeof(buf), &len), 0);
    buf[len - 16] = 1; /* count's low byte: 2 -> 1 */
    assert_int_equal(store_rec_audit_decode(buf, len, &g, &sc), ERR_INVAL);
    /* count 1 (or 0, unset) encodes as before */
    r.count = 0;
    r.trace_id = NULL;
    assert_int_equal(store_rec_audit_encode(&r, buf, sizeof(buf), &len), 0);
    assert_int_equal(len, sizeof(v1_record));
    assert_memory_equal(buf, v1_record, len);
}

/* BASE.n: the form of a repeat's request id. */
static void
test_reqid_split(void **state)
{
    (void)state;
    static const struct {
        const char *id;
        bool ok;
        size_t base;
        uint64_t n;
    } cases[] = {
        {"0123456789abcdef.2", true, 16, 2},
        {"a.18446744073709551615", true, 1, UINT64_MAX},
        {"a.b.3", true, 3, 3},
        {"a.1", false, 0, 0}, /* the first occurrence has the plain id */
        {"a.0", false, 0, 0},
        {"a.02", false, 0, 0}, /* leading zero: one spelling per occurrence */
        {"a.", false, 0, 0},
        {".5", false, 0, 0},
        {"abc", false, 0, 0},
        {"a.2x", false, 0, 0},
        {"a.18446744073709551616", false, 0, 0},
        {"", false, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t base = 0;
        uint64_t n = 0;
        bool ok = store_audit_reqid_split(cases[i].id, strlen(cases[i].id), &base, &n);
        if (ok != cases[i].ok || (ok && (base != cases[i].base || n != cases[i].n))) {
            fail_msg("%s: %d %zu %llu", cases[i].id, ok, base, (unsigned long long)n);
        }
    }
}

static void
test_audit_caps(void **state)
{
    (void)state;
    char *key = malloc(5000);
    memset(key, 'k', 4999);
    key[4999] = '\0';
    char ua[600];
    /* 'a' then 2-byte sequences (U+00E9): the cut must not split one. */
    ua[0] = 'a';
    for (size_t i = 1; i + 1 < sizeof(ua) - 1; i += 2) {
        ua[i] = (char)0xC3;
        ua[i + 1] = (char)0xA9;
    }
    ua[sizeof(ua) - 1] = '\0';
    struct store_audit_rec r = {.kind = STORE_AUDIT_STALE, .key = key, .user_agent = ua};
    uint8_t buf[STORE_REC_AUDIT_MAX];
    size_t len = 0;
    assert_int_equal(store_rec_audit_encode(&r, buf, sizeof(buf), &len), 0);
    struct store_audit_rec g;
    struct store_rec_scratch sc;
    assert_int_equal(store_rec_audit_decode(buf, len, &g, &sc), 0);
    assert_int_equal(strlen(g.key), STORE_KEY_MAX);
    size_t ualen = strlen(g.user_agent);
    assert_true(ualen <= STORE_UA_MAX);
    assert_int_equal(ualen % 2, 1); /* 'a' + whole 2-byte sequences */
    assert_int_equal(store_rec_trunc_len("abc", 10), 3);
    assert_int_equal(store_rec_trunc_len("abc", 2), 2);
    assert_int_equal(store_rec_trunc_len("\xe2\x82\xac", 2), 0); /* euro sign, 3 bytes */
    free(key);
}

static void
test_keys(void **state)
{
    (void)state;
    uint8_t a[STORE_KEY_AUDIT_LEN];
    uint8_t b[STORE_KEY_AUDIT_LEN];
    store_rec_audit_key(5, 9, a);
    store_rec_audit_key(6, 1, b);
    assert_true(memcmp(a, b, sizeof(a)) < 0); /* time orders first */
    int64_t t;
    uint64_t seq;
    assert_int_equal(store_rec_audit_key_decode(a, sizeof(a), &t, &seq), 0);
    assert_int_equal(t, 5);
    assert_int_equal(seq, 9);
    assert_int_equal(store_rec_audit_key_decode(a, 15, &t, &seq), ERR_INVAL);
    store_rec_audit_key(-3, 1, a);
    assert_int_equal(store_rec_audit_key_decode(a, sizeof(a), &t, &seq), 0);
    assert_int_equal(t, 0); /* negative times clamp to 0 */
    memset(a, 0xff, sizeof(a));
    assert_int_equal(store_rec_audit_key_decode(a, sizeof(a), &t, &seq), ERR_INVAL);

    uint8_t ik[STORE_KEY_INDEX_MAX];
    size_t n = store_rec_index_key("orders", 7, 8, ik);
    assert_int_equal(n, 1 + 6 + 16);
    size_t ll;
    assert_int_equal(store_rec_index_key_decode(ik, n, &ll, &t, &seq), 0);
    assert_int_equal(ll, 6);
    assert_memory_equal(ik + 1, "orders", 6);
    assert_int_equal(t, 7);
    assert_int_equal(seq, 8);
    assert_int_equal(store_rec_index_key_decode(ik, n - 1, &ll, &t, &seq), ERR_INVAL);
    ik[0] = 200;
    assert_int_equal(store_rec_index_key_decode(ik, n, &ll, &t, &seq), ERR_INVAL);
    assert_int_equal(store_rec_index_key(NULL, 1, 1, ik), 17);
}

/* Random bytes and random mutations of valid records: errors, never crashes. */
static void
test_garbage(void **state)
{
    (void)state;
    srand(1234);
    uint8_t buf[STORE_REC_AUDIT_MAX];
    struct store_audit_rec r = {.kind = STORE_AUDIT_STALE, .lock = "l", .key = "k"};
    size_t len = 0;
    assert_int_equal(store_rec_audit_encode(&r, buf, sizeof(buf), &len), 0);
    for (int i = 0; i < 20000; i++) {
        uint8_t m[STORE_REC_AUDIT_MAX];
        memcpy(m, buf, len);
        m[(size_t)rand() % len] = (uint8_t)rand();
        size_t ml = (size_t)rand() % (len + 1);
        struct store_audit_rec g;
        struct store_rec_scratch sc;
        struct store_fence f;
        struct store_elect e;
        int err = store_rec_audit_decode(m, ml, &g, &sc);
        assert_true(err == 0 || err == ERR_INVAL || err == ERR_VERSION);
        assert_true(store_rec_fence_decode(m, ml, &f) != 0);
        assert_true(store_rec_elect_decode(m, ml, &e) != 0);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fence_roundtrip),
        cmocka_unit_test(test_fence_damaged),
        cmocka_unit_test(test_elect_roundtrip),
        cmocka_unit_test(test_audit_roundtrip),
        cmocka_unit_test(test_audit_caps),
        cmocka_unit_test(test_audit_trace_id_versions),
        cmocka_unit_test(test_audit_run_version),
        cmocka_unit_test(test_reqid_split),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_garbage),
    };
    return cmocka_run_group_tests_name("store_record", tests, NULL, NULL);
}
