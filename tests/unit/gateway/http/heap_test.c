/*
 * tests/unit/gateway/http/heap_test.c: the idle trim's decision
 * (gw_http_heap_trim_due): a steady load never trims, an idle gateway trims
 * once per quiet spell, and a request in flight holds it off.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <event2/event.h>

#include "gateway/http/http.h"

static void
test_trim_due(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    assert_non_null(base);
    struct gw_http_heap_trim *t = gw_http_heap_trim_start(base);
    assert_non_null(t);
    assert_false(gw_http_heap_trim_due(t, 0, 0)); /* never served: nothing to give back */
    assert_false(gw_http_heap_trim_due(t, 5, 0)); /* requests arrived this tick: busy */
    assert_false(gw_http_heap_trim_due(t, 9, 1)); /* still arriving */
    assert_false(gw_http_heap_trim_due(t, 9, 1)); /* quiet, but one is in flight */
    assert_true(gw_http_heap_trim_due(t, 9, 0));  /* quiet and none in flight: trim */
    assert_false(gw_http_heap_trim_due(t, 9, 0)); /* once per quiet spell */
    assert_false(gw_http_heap_trim_due(t, 9, 0));
    assert_false(gw_http_heap_trim_due(t, 10, 0)); /* load again */
    assert_true(gw_http_heap_trim_due(t, 10, 0));  /* and quiet again: trim again */
    for (uint64_t n = 11; n < 20; n++) {
        assert_false(gw_http_heap_trim_due(t, n, 0)); /* a steady load never trims */
    }
    gw_http_heap_trim_free(t);
    gw_http_heap_trim_free(NULL);
    event_base_free(base);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trim_due),
    };
    return cmocka_run_group_tests_name("http_heap", tests, NULL, NULL);
}
