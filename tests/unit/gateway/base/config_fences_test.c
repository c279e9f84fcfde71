/*
 * tests/unit/gateway/base/config_fences_test.c: the configuration's fence
 * rules: which rule a key falls under (first match wins), the locks and
 * bucket slots a reload widens, the warning for a rule that never matches,
 * and the fences' digest.  The rest of the loader is config_test.c's; both
 * use tests/unit/gateway/config_harness.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "gateway/base/config.h"
#include "gateway/base/inflight.h"
#include "tests/unit/gateway/config_harness.h"

static void
test_fence_rule_lookup(void **state)
{
    (void)state;
    struct gw_config *cfg = load_ok(
        MIN_PREFIX ",\"fences\":[{\"bucket\":\"data\",\"prefix\":\"orders/\",\"lock\":\"orders\"},"
                   "{\"bucket\":\"data\",\"prefix\":\"orders/eu/\",\"lock\":\"eu\"},"
                   "{\"bucket\":\"data\",\"lock\":\"rest\"},"
                   "{\"bucket\":\"other\",\"prefix\":\"a\",\"lock\":\"o\"}]}");
    assert_ptr_equal(gw_config_fence_rule(cfg, "data", "orders/1"), &cfg->fences[0]);
    /* first match wins, even when a later rule is more specific */
    assert_ptr_equal(gw_config_fence_rule(cfg, "data", "orders/eu/1"), &cfg->fences[0]);
    assert_ptr_equal(gw_config_fence_rule(cfg, "data", "orders"), &cfg->fences[2]);
    assert_ptr_equal(gw_config_fence_rule(cfg, "data", ""), &cfg->fences[2]);
    assert_ptr_equal(gw_config_fence_rule(cfg, "other", "abc"), &cfg->fences[3]);
    assert_null(gw_config_fence_rule(cfg, "other", "b"));
    assert_null(gw_config_fence_rule(cfg, "other", ""));
    assert_null(gw_config_fence_rule(cfg, "Data", "orders/1"));
    /* keys are compared byte for byte, never normalised */
    assert_null(gw_config_fence_rule(cfg, "other", "/a"));
    gw_config_free(cfg);
}

/* The locks gw_config_locks_widened names going from the rules a to the rules b
 * (JSON arrays), as "l1,l2," in b's order, and the buckets whose slots
 * gw_config_buckets_widened gives, as "b1,b2," (any order). */
static void
expect_widened(const char *a, const char *b, const char *want, const char *want_buckets)
{
    char json[1024];
    (void)snprintf(json, sizeof(json), MIN_PREFIX ",\"fences\":%s}", a);
    struct gw_config *from = load_ok(json);
    (void)snprintf(json, sizeof(json), MIN_PREFIX ",\"fences\":%s}", b);
    struct gw_config *to = load_ok(json);
    const char *locks[8];
    size_t n = gw_config_locks_widened(from, to, locks, 8);
    char got[256] = "";
    for (size_t i = 0; i < n && i < 8; i++) {
        (void)strncat(got, locks[i], sizeof(got) - strlen(got) - 2);
        (void)strncat(got, ",", sizeof(got) - strlen(got) - 1);
    }
    if (strcmp(got, want) != 0) {
        fail_msg("%s -> %s: widened \"%s\", want \"%s\"", a, b, got, want);
    }
    assert_int_equal(gw_config_locks_widened(from, to, NULL, 0), n); /* counted without room */
    uint64_t mask = 0;
    char names[256];
    str_copy(names, sizeof(names), want_buckets);
    char *save = NULL;
    for (char *t = strtok_r(names, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        mask |= (uint64_t)1 << gw_inflight_slot(t);
    }
    uint64_t got_mask = gw_config_buckets_widened(from, to);
    if (got_mask != mask) {
        fail_msg("%s -> %s: bucket slots %016llx, want %016llx (%s)", a, b,
                 (unsigned long long)got_mask, (unsigned long long)mask, want_buckets);
    }
    assert_int_equal(n == 0, mask == 0); /* a lock widened where, and only where, a bucket is */
    gw_config_free(from);
    gw_config_free(to);
}

#define RULE(b, p, l) "{\"bucket\":\"" b "\",\"prefix\":\"" p "\",\"lock\":\"" l "\"}"

static void
test_locks_widened_by_a_reload(void **state)
{
    (void)state;
    /* the same rules: nothing (a logrotate SIGHUP holds no write) */
    expect_widened("[" RULE("b", "x/", "A") "]", "[" RULE("b", "x/", "A") "]", "", "");
    expect_widened("[]", "[]", "", "");
    /* a new prefix fenced: its lock, and every lock of that bucket; not another bucket's */
    expect_widened("[" RULE("b", "x/", "A") "," RULE("c", "", "C") "]",
                   "[" RULE("b", "x/", "A") "," RULE("b", "data/", "B") "," RULE("c", "", "C") "]",
                   "A,B,", "b,");
    /* a narrower rule removed: the wider one takes its keys */
    expect_widened("[" RULE("b", "d/x/", "X") "," RULE("b", "d/", "A") "]",
                   "[" RULE("b", "d/", "A") "]", "A,", "b,");
    /* the order changed (first match wins) */
    expect_widened("[" RULE("b", "d/", "A") "," RULE("b", "d/x/", "X") "]",
                   "[" RULE("b", "d/x/", "X") "," RULE("b", "d/", "A") "]", "X,A,", "b,");
    /* a lock renamed; a rule's token now required */
    expect_widened("[" RULE("b", "", "A") "]", "[" RULE("b", "", "B") "]", "B,", "b,");
    expect_widened("[{\"bucket\":\"b\",\"lock\":\"A\",\"require_token\":false}]",
                   "[{\"bucket\":\"b\",\"lock\":\"A\",\"require_token\":true}]", "A,", "b,");
    /* a reorder of prefixes that never match one key, or a rule added that never
     * matches (behind one whose prefix starts it): no key changes its lock */
    expect_widened("[" RULE("b", "x/", "A") "," RULE("b", "y/", "B") "]",
                   "[" RULE("b", "y/", "B") "," RULE("b", "x/", "A") "]", "", "");
    expect_widened("[" RULE("b", "d/", "A") "]",
                   "[" RULE("b", "d/", "A") "," RULE("b", "d/x/", "X") "]", "", "");
    expect_widened("[" RULE("b", "d/", "A") "]",
                   "[" RULE("b", "d/", "A") "," RULE("b", "d/", "X") "]", "", "");
    /* every rule of a bucket removed: no lock gains a key */
    expect_widened("[" RULE("b", "", "A") "," RULE("c", "", "C") "]", "[" RULE("c", "", "C") "]",
                   "", "");
    /* one lock named by rules of two changed buckets: once; both buckets */
    expect_widened("[]", "[" RULE("b", "", "A") "," RULE("c", "", "A") "]", "A,", "b,c,");
    /* a bucket fenced that had no rule, beside an unchanged one */
    expect_widened("[" RULE("c", "", "C") "]", "[" RULE("c", "", "C") "," RULE("d", "", "D") "]",
                   "D,", "d,");
}

/* gw_config_warn_fn: the warnings, one a line */
static void
collect_warning(void *arg, const char *text)
{
    char *out = arg;
    (void)strncat(out, text, 1023 - strlen(out));
    (void)strncat(out, "\n", 1023 - strlen(out));
}

static void
test_rules_that_never_match_are_warned_about(void **state)
{
    (void)state;
    struct gw_config *cfg =
        load_ok(MIN_PREFIX ",\"fences\":[" RULE("b", "d/", "A") "," RULE("c", "d/x/", "C") "," RULE(
            "b", "d/x/", "X") "," RULE("b", "e/", "E") "," RULE("b", "d/", "Z") "]}");
    assert_int_equal(gw_config_fence_shadowed(cfg, 0), SIZE_MAX);
    assert_int_equal(gw_config_fence_shadowed(cfg, 1), SIZE_MAX); /* another bucket */
    assert_int_equal(gw_config_fence_shadowed(cfg, 2), 0);
    assert_int_equal(gw_config_fence_shadowed(cfg, 3), SIZE_MAX);
    assert_int_equal(gw_config_fence_shadowed(cfg, 4), 0); /* the same prefix again */
    char got[1024] = "";
    gw_config_warnings(cfg, collect_warning, got);
    assert_string_equal(got, "fences[2] (bucket \"b\", prefix \"d/x/\") never matches: fences[0] "
                             "(prefix \"d/\") comes first and takes its keys (first match wins)\n"
                             "fences[4] (bucket \"b\", prefix \"d/\") never matches: fences[0] "
                             "(prefix \"d/\") comes first and takes its keys (first match wins)\n");
    gw_config_free(cfg);
    cfg = load_ok(MIN_PREFIX ",\"fences\":[" RULE("b", "d/x/", "X") "," RULE("b", "d/", "A") "]}");
    got[0] = '\0';
    gw_config_warnings(cfg, collect_warning, got);
    assert_string_equal(got, ""); /* the longer first: both match keys */
    gw_config_free(cfg);
}

/* The fences' digest of a config with the rules r (a JSON array) and extra top-level keys. */
static void
digest_of(const char *r, const char *extra, char out[GW_CONFIG_DIGEST_LEN + 1])
{
    char json[1024];
    (void)snprintf(json, sizeof(json), MIN_PREFIX ",\"fences\":%s%s}", r, extra);
    struct gw_config *cfg = load_ok(json);
    assert_int_equal(strlen(cfg->fences_digest), GW_CONFIG_DIGEST_LEN);
    assert_int_equal(strspn(cfg->fences_digest, "0123456789abcdef"), GW_CONFIG_DIGEST_LEN);
    char again[GW_CONFIG_DIGEST_LEN + 1];
    gw_config_fences_digest(cfg, again);
    assert_string_equal(again, cfg->fences_digest);
    (void)snprintf(out, GW_CONFIG_DIGEST_LEN + 1, "%s", cfg->fences_digest);
    gw_config_free(cfg);
}

static void
expect_digests(const char *a, const char *b, bool equal)
{
    char da[GW_CONFIG_DIGEST_LEN + 1];
    char db[GW_CONFIG_DIGEST_LEN + 1];
    digest_of(a, "", da);
    digest_of(b, "", db);
    if ((strcmp(da, db) == 0) != equal) {
        fail_msg("%s (%s) and %s (%s): want them %s", a, da, b, db, equal ? "equal" : "different");
    }
}

static void
test_fences_digest(void **state)
{
    (void)state;
    const char *base = "[" RULE("b", "x/", "A") "," RULE("b", "", "B") "," RULE("c", "", "C") "]";
    expect_digests(base, base, true);
    /* what is not a rule does not count */
    char d1[GW_CONFIG_DIGEST_LEN + 1];
    char d2[GW_CONFIG_DIGEST_LEN + 1];
    digest_of(base, "", d1);
    digest_of(base, ",\"workers\":3,\"limits\":{\"max_connections\":77}", d2);
    assert_string_equal(d1, d2);
    /* the order of different buckets' rules does not decide anything */
    expect_digests(base, "[" RULE("c", "", "C") "," RULE("b", "x/", "A") "," RULE("b", "", "B") "]",
                   true);
    expect_digests(base, "[" RULE("b", "x/", "A") "," RULE("c", "", "C") "," RULE("b", "", "B") "]",
                   true);
    /* within a bucket the first match wins: the order counts where one prefix starts
     * another (here "x/" comes to nothing behind "") */
    expect_digests(base, "[" RULE("b", "", "B") "," RULE("b", "x/", "A") "," RULE("c", "", "C") "]",
                   false);
    expect_digests("[" RULE("b", "", "B") "]", "[" RULE("b", "", "B") "," RULE("b", "x/", "A") "]",
                   true);
    expect_digests("[" RULE("b", "x/", "A") "]",
                   "[" RULE("b", "x/", "A") "," RULE("b", "x/", "Z") "]", true);
    /* and nowhere else: prefixes that never match one key, in either order */
    expect_digests("[" RULE("b", "x/", "A") "," RULE("b", "y/", "B") "," RULE("b", "", "C") "]",
                   "[" RULE("b", "y/", "B") "," RULE("b", "x/", "A") "," RULE("b", "", "C") "]",
                   true);
    expect_digests("[" RULE("b", "x/", "A") "," RULE("b", "y/", "B") "]",
                   "[" RULE("b", "x/", "A") "," RULE("b", "", "C") "," RULE("b", "y/", "B") "]",
                   false);
    /* a rule's fields count within their bucket only: two buckets' rules swapped */
    expect_digests("[" RULE("b", "x/", "A") "," RULE("c", "y/", "B") "]",
                   "[" RULE("b", "y/", "B") "," RULE("c", "x/", "A") "]", false);
    /* each field of a rule counts */
    expect_digests(base, "[" RULE("b", "y/", "A") "," RULE("b", "", "B") "," RULE("c", "", "C") "]",
                   false);
    expect_digests(base, "[" RULE("b", "x/", "Z") "," RULE("b", "", "B") "," RULE("c", "", "C") "]",
                   false);
    expect_digests(base, "[" RULE("b", "x/", "A") "," RULE("b", "", "B") "," RULE("d", "", "C") "]",
                   false);
    expect_digests("[{\"bucket\":\"b\",\"lock\":\"A\",\"require_token\":true}]",
                   "[{\"bucket\":\"b\",\"lock\":\"A\",\"require_token\":false}]", false);
    expect_digests("[{\"bucket\":\"b\",\"lock\":\"A\"}]",
                   "[{\"bucket\":\"b\",\"lock\":\"A\",\"conditional_writes\":\"off\"}]", false);
    /* the strings' ends count: "ab"+"c" is not "a"+"bc" */
    expect_digests("[" RULE("b", "ab", "c") "]", "[" RULE("b", "a", "bc") "]", false);
    /* a rule added or removed */
    expect_digests(base, "[" RULE("b", "x/", "A") "," RULE("b", "", "B") "]", false);
    expect_digests("[]", "[" RULE("b", "", "B") "]", false);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_fence_rule_lookup, clean_env),
        cmocka_unit_test_setup(test_locks_widened_by_a_reload, clean_env),
        cmocka_unit_test_setup(test_rules_that_never_match_are_warned_about, clean_env),
        cmocka_unit_test_setup(test_fences_digest, clean_env),
    };
    return cmocka_run_group_tests_name("config_fences", tests, NULL, NULL);
}
