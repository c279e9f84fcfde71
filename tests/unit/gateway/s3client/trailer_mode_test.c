/*
 * tests/unit/gateway/s3client/trailer_mode_test.c: the trailer decision
 * (gw_trailer_probe_forwards) over every setting and probe state, and the
 * bucket the start-up probes write in (gw_s3client_probe_bucket).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gateway/base/config.h"
#include "gateway/s3client/s3client.h"
#include "gateway/s3client/trailer_probe.h"

/* "forward" always forwards, "verify" never, "auto" only once the probe said yes. */
static void
test_forwards(void **state)
{
    (void)state;
    for (int probed = 0; probed < 2; probed++) {
        for (int supported = 0; supported < 2; supported++) {
            assert_true(gw_trailer_probe_forwards(GW_TRAILERS_FORWARD, probed, supported));
            assert_false(gw_trailer_probe_forwards(GW_TRAILERS_VERIFY, probed, supported));
            assert_int_equal(gw_trailer_probe_forwards(GW_TRAILERS_AUTO, probed, supported),
                             probed && supported);
        }
    }
}

/* The s3 election's bucket first, else the first fence rule's, else none. */
static void
test_probe_bucket(void **state)
{
    (void)state;
    char first[] = "first", second[] = "second", elect[] = "elect";
    struct gw_fence_rule rules[2] = {{.bucket = first}, {.bucket = second}};
    struct gw_config cfg = {0};
    cfg.election.backend = GW_ELECT_DIR;
    assert_null(gw_s3client_probe_bucket(&cfg));
    cfg.fences = rules;
    cfg.nfences = 2;
    assert_string_equal(gw_s3client_probe_bucket(&cfg), "first");
    cfg.election.backend = GW_ELECT_S3;
    cfg.election.bucket = elect;
    assert_string_equal(gw_s3client_probe_bucket(&cfg), "elect");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forwards),
        cmocka_unit_test(test_probe_bucket),
    };
    return cmocka_run_group_tests_name("trailer_mode", tests, NULL, NULL);
}
