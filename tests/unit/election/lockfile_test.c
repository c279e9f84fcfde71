/* Unit tests for election/lockfile.c (and the ETag helper of election/backend.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/date.h"
#include "election/backend.h"
#include "election/lockfile.h"

static const char SHA[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

static void
sample(struct elect_lockfile *lf)
{
    memset(lf, 0, sizeof(*lf));
    lf->epoch = 42;
    (void)snprintf(lf->lock, sizeof(lf->lock), "orders");
    (void)snprintf(lf->holder, sizeof(lf->holder), "w1");
    lf->lease_ms = 15000;
    assert_int_equal(date_rfc3339_parse("2026-11-21T10:15:30.123Z", &lf->acquired_at_ms), 0);
    assert_int_equal(date_rfc3339_parse("2026-11-21T10:15:35.120Z", &lf->renewed_at_ms), 0);
    (void)snprintf(lf->lease_sha256, sizeof(lf->lease_sha256), "%s", SHA);
    (void)snprintf(lf->granted_by, sizeof(lf->granted_by), "gw-1");
    (void)snprintf(lf->grant_id, sizeof(lf->grant_id), "00112233445566778899aabbccddeeff");
    lf->renewals = 3;
}

static const char GOLDEN[] =
    "{\"version\":1,\"lock\":\"orders\",\"epoch\":42,\"holder\":\"w1\",\"lease_ms\":15000,"
    "\"acquired_at\":\"2026-11-21T10:15:30.123Z\",\"renewed_at\":\"2026-11-21T10:15:35.120Z\","
    "\"expired\":false,\"lease_sha256\":\"0123456789abcdef0123456789abcdef0123456789abcdef"
    "0123456789abcdef\",\"granted_by\":\"gw-1\",\"grant_id\":\"00112233445566778899aabbccddeeff\","
    "\"renewals\":3}";

static void
test_encode_golden_and_roundtrip(void **state)
{
    (void)state;
    struct elect_lockfile lf, back;
    sample(&lf);
    char buf[ELECT_LOCKFILE_MAX + 1];
    size_t n = 0;
    assert_int_equal(elect_lockfile_encode(&lf, buf, sizeof(buf), &n), 0);
    assert_string_equal(buf, GOLDEN);
    assert_int_equal(n, strlen(GOLDEN));
    assert_int_equal(elect_lockfile_decode(buf, n, &back), 0);
    assert_memory_equal(&lf, &back, sizeof(lf));
    /* too small an output buffer */
    assert_int_equal(elect_lockfile_encode(&lf, buf, 10, &n), ERR_TOOBIG);
}

static void
test_encode_at_caps(void **state)
{
    (void)state;
    struct elect_lockfile lf, back;
    sample(&lf);
    memset(lf.lock, 'L', ELECT_LOCK_MAX);
    lf.lock[ELECT_LOCK_MAX] = '\0';
    /* worst case for JSON: every holder byte escaped ("\"" -> 2 bytes) */
    memset(lf.holder, '"', ELECT_HOLDER_MAX);
    lf.holder[ELECT_HOLDER_MAX] = '\0';
    memset(lf.granted_by, '\\', ELECT_GRANTED_BY_MAX);
    lf.granted_by[ELECT_GRANTED_BY_MAX] = '\0';
    lf.epoch = (uint64_t)ELECT_EPOCH_MAX;
    lf.renewals = (uint64_t)INT64_MAX;
    lf.lease_ms = ELECT_LEASE_MS_MAX;
    assert_int_equal(date_rfc3339_parse("9999-12-31T23:59:59.999Z", &lf.renewed_at_ms), 0);
    char buf[ELECT_LOCKFILE_MAX + 1];
    size_t n = 0;
    assert_int_equal(elect_lockfile_encode(&lf, buf, sizeof(buf), &n), 0);
    assert_int_equal(elect_lockfile_decode(buf, n, &back), 0);
    assert_memory_equal(&lf, &back, sizeof(lf));
}

static void
test_encode_refuses_bad_fields(void **state)
{
    (void)state;
    struct elect_lockfile lf;
    char buf[ELECT_LOCKFILE_MAX + 1];
    size_t n;
    sample(&lf);
    lf.epoch = 0;
    assert_int_equal(elect_lockfile_encode(&lf, buf, sizeof(buf), &n), ERR_INVAL);
    sample(&lf);
    lf.holder[0] = '\0';
    assert_int_equal(elect_lockfile_encode(&lf, buf, sizeof(buf), &n), ERR_INVAL);
    sample(&lf);
    lf.holder[0] = '\n';
    assert_int_equal(elect_lockfile_encode(&lf, buf, sizeof(buf), &n), ERR_INVAL);
    sample(&lf);
    lf.holder[0] = (char)0xff; /* not UTF-8 */
    assert_int_equal(elect_lockfile_encode(&lf, buf, sizeof(buf), &n), ERR_INVAL);
    sample(&lf);
    lf.lease_sha256[3] = 'A'; /* uppercase hex */
    assert_int_equal(elect_lockfile_encode(&lf, buf, sizeof(buf), &n), ERR_INVAL);
    sample(&lf);
    (void)snprintf(lf.lock, sizeof(lf.lock), "a/b");
    assert_int_equal(elect_lockfile_encode(&lf, buf, sizeof(buf), &n), ERR_INVAL);
    sample(&lf);
    lf.lease_ms = 0;
    assert_int_equal(elect_lockfile_encode(&lf, buf, sizeof(buf), &n), ERR_INVAL);
}

/* Decode GOLDEN with the first occurrence of from replaced by to. */
static int
decode_edit(const char *from, const char *to)
{
    char buf[4096];
    const char *p = strstr(GOLDEN, from);
    assert_non_null(p);
    int n = snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(p - GOLDEN), GOLDEN, to, p + strlen(from));
    assert_true(n > 0 && (size_t)n < sizeof(buf));
    struct elect_lockfile lf;
    memset(&lf, 0x5a, sizeof(lf));
    struct elect_lockfile before = lf;
    int err = elect_lockfile_decode(buf, (size_t)n, &lf);
    if (err != 0) {
        assert_memory_equal(&lf, &before, sizeof(lf)); /* untouched on failure */
    }
    return err;
}

static void
test_decode_strict(void **state)
{
    (void)state;
    assert_int_equal(decode_edit("\"version\":1", "\"version\":2"), ERR_VERSION);
    assert_int_equal(decode_edit("\"version\":1", "\"version\":0"), ERR_VERSION);
    assert_int_equal(decode_edit("\"version\":1", "\"version\":\"1\""), ERR_INVAL);
    assert_int_equal(decode_edit("\"version\":1,", ""), ERR_INVAL);
    assert_int_equal(decode_edit("\"epoch\":42", "\"epoch\":0"), ERR_INVAL);
    assert_int_equal(decode_edit("\"epoch\":42", "\"epoch\":-1"), ERR_INVAL);
    assert_int_equal(decode_edit("\"epoch\":42", "\"epoch\":42.0"), ERR_INVAL);
    assert_int_equal(decode_edit("\"epoch\":42", "\"epoch\":99999999999999999999"), ERR_INVAL);
    assert_int_equal(decode_edit("\"lock\":\"orders\"", "\"lock\":\"or/ders\""), ERR_INVAL);
    assert_int_equal(decode_edit("\"lock\":\"orders\"", "\"lock\":\"..\""), ERR_INVAL);
    assert_int_equal(decode_edit("\"holder\":\"w1\"", "\"holder\":\"\""), ERR_INVAL);
    assert_int_equal(decode_edit("\"holder\":\"w1\"", "\"holder\":\"w\\u0000\""), ERR_INVAL);
    assert_int_equal(decode_edit("\"holder\":\"w1\"", "\"holder\":\"w\\u0001\""), ERR_INVAL);
    assert_int_equal(decode_edit("\"lease_ms\":15000", "\"lease_ms\":0"), ERR_INVAL);
    assert_int_equal(decode_edit("\"lease_ms\":15000", "\"lease_ms\":86400001"), ERR_INVAL);
    assert_int_equal(decode_edit(".123Z", ".123"), ERR_INVAL);
    assert_int_equal(decode_edit("2026-11-21T10:15:30", "2026-02-30T10:15:30"), ERR_INVAL);
    assert_int_equal(decode_edit("\"expired\":false", "\"expired\":0"), ERR_INVAL);
    assert_int_equal(decode_edit("\"expired\":false", "\"expired\":true"), 0);
    assert_int_equal(decode_edit("\"granted_by\":\"gw-1\"", "\"granted_by\":null"), ERR_INVAL);
    assert_int_equal(decode_edit("\"grant_id\":\"00", "\"grant_id\":\"0"), ERR_INVAL);
    assert_int_equal(decode_edit("\"renewals\":3", "\"renewals\":-3"), ERR_INVAL);
    assert_int_equal(decode_edit("\"renewals\":3", "\"renewals\":3,\"extra\":1"), ERR_INVAL);
    assert_int_equal(decode_edit("\"renewals\":3", "\"renewals\":3,\"renewals\":4"), ERR_INVAL);
    assert_int_equal(decode_edit("{", "["), ERR_INVAL);
    struct elect_lockfile lf;
    assert_int_equal(elect_lockfile_decode("", 0, &lf), ERR_INVAL);
    assert_int_equal(elect_lockfile_decode("[1]", 3, &lf), ERR_INVAL);
    assert_int_equal(elect_lockfile_decode("{\"version\":1}", 13, &lf), ERR_INVAL);
    assert_int_equal(elect_lockfile_decode("{\"version\":7}", 13, &lf), ERR_VERSION);
    /* trailing garbage and truncation */
    char buf[sizeof(GOLDEN) + 4];
    (void)snprintf(buf, sizeof(buf), "%sxx", GOLDEN);
    assert_int_equal(elect_lockfile_decode(buf, strlen(buf), &lf), ERR_INVAL);
    assert_int_equal(elect_lockfile_decode(GOLDEN, strlen(GOLDEN) - 1, &lf), ERR_INVAL);
    assert_int_equal(elect_lockfile_decode(GOLDEN, ELECT_OBJ_MAX + 1, &lf), ERR_TOOBIG);
}

static void
test_keys(void **state)
{
    (void)state;
    char key[ELECT_KEY_MAX + 1];
    assert_int_equal(elect_lockfile_key("fencegate/", "orders", 42, key, sizeof(key)), 0);
    assert_string_equal(key, "fencegate/orders/epoch-00000000000000000042.json");
    uint64_t ep = 0;
    assert_int_equal(elect_lockfile_key_epoch("fencegate/", "orders", key, &ep), 0);
    assert_int_equal(ep, 42);
    assert_int_equal(elect_lockfile_key("", "a", UINT64_C(9223372036854775807), key, sizeof(key)),
                     0);
    assert_string_equal(key, "a/epoch-09223372036854775807.json");
    assert_int_equal(elect_lockfile_key_epoch("", "a", key, &ep), 0);
    assert_int_equal(ep, UINT64_C(9223372036854775807));
    /* lexical order is numeric order */
    char k9[ELECT_KEY_MAX + 1], k10[ELECT_KEY_MAX + 1];
    assert_int_equal(elect_lockfile_key("p/", "l", 9, k9, sizeof(k9)), 0);
    assert_int_equal(elect_lockfile_key("p/", "l", 10, k10, sizeof(k10)), 0);
    assert_true(strcmp(k9, k10) < 0);
    assert_int_equal(elect_lockfile_dir("p/", "l", key, sizeof(key)), 0);
    assert_string_equal(key, "p/l/");
    /* refusals */
    assert_int_equal(elect_lockfile_key("p/", "l", 0, key, sizeof(key)), ERR_INVAL);
    assert_int_equal(elect_lockfile_key("p/", "l/x", 1, key, sizeof(key)), ERR_INVAL);
    assert_int_equal(elect_lockfile_key("p/", "l", 1, key, 10), ERR_TOOBIG);
    const char *bad[] = {
        "p/l/epoch-00000000000000000000.json", /* epoch 0 */
        "p/l/epoch-0000000000000000042.json",  /* 19 digits */
        "p/l/epoch-00000000000000000042.jso",
        "p/l/epoch-0000000000000000004x.json",
        "p/m/epoch-00000000000000000042.json",
        "q/l/epoch-00000000000000000042.json",
        "p/l/x/epoch-00000000000000000042.json",
        "p/l/epoch-18446744073709551615.json", /* beyond int64 */
        "p/l/",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ep = 7;
        assert_int_equal(elect_lockfile_key_epoch("p/", "l", bad[i], &ep), ERR_INVAL);
        assert_int_equal(ep, 7);
    }
}

static void
test_times(void **state)
{
    (void)state;
    char t[DATE_RFC3339_LEN + 1];
    assert_int_equal(date_rfc3339_format(0, t), 0);
    assert_string_equal(t, "1970-01-01T00:00:00.000Z");
    int64_t ms;
    assert_int_equal(date_rfc3339_parse("2026-11-21T10:15:30.123Z", &ms), 0);
    assert_int_equal(ms, INT64_C(1795256130123));
    assert_int_equal(date_rfc3339_format(ms, t), 0);
    assert_string_equal(t, "2026-11-21T10:15:30.123Z");
    assert_int_equal(date_rfc3339_parse("2024-02-29T23:59:59.999Z", &ms), 0);
    assert_int_equal(date_rfc3339_format(ms, t), 0);
    assert_string_equal(t, "2024-02-29T23:59:59.999Z");
    const char *bad[] = {"2023-02-29T00:00:00.000Z", "2026-13-01T00:00:00.000Z",
                         "2026-11-21T24:00:00.000Z", "2026-11-21T10:60:00.000Z",
                         "2026-11-21 10:15:30.123Z", "2026-11-21T10:15:30Z",
                         "1969-12-31T23:59:59.999Z", "2026-11-21T10:15:30.123+00:00",
                         "+026-11-21T10:15:30.123Z", "2026-00-21T10:15:30.123Z"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(date_rfc3339_parse(bad[i], &ms), ERR_INVAL);
    }
    assert_int_equal(date_rfc3339_format(-1, t), ERR_INVAL);
    assert_int_equal(date_rfc3339_format(INT64_C(253402300800000), t), ERR_INVAL);
}

static void
test_etag_bare(void **state)
{
    (void)state;
    char out[ELECT_ETAG_MAX + 1];
    assert_int_equal(elect_etag_bare("\"abc\"", out, sizeof(out)), 0);
    assert_string_equal(out, "abc");
    assert_int_equal(elect_etag_bare(" W/\"abc-2\" ", out, sizeof(out)), 0);
    assert_string_equal(out, "abc-2");
    assert_int_equal(elect_etag_bare("abc", out, sizeof(out)), 0);
    assert_string_equal(out, "abc");
    assert_int_equal(elect_etag_bare("\"abc", out, sizeof(out)), ERR_INVAL);
    assert_int_equal(elect_etag_bare("\"\"", out, sizeof(out)), ERR_INVAL);
    assert_int_equal(elect_etag_bare("", out, sizeof(out)), ERR_INVAL);
    assert_int_equal(elect_etag_bare("a\"b", out, sizeof(out)), ERR_INVAL);
    assert_int_equal(elect_etag_bare("abcdef", out, 4), ERR_TOOBIG);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode_golden_and_roundtrip),
        cmocka_unit_test(test_encode_at_caps),
        cmocka_unit_test(test_encode_refuses_bad_fields),
        cmocka_unit_test(test_decode_strict),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_times),
        cmocka_unit_test(test_etag_bare),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
