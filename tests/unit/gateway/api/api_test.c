/*
 * tests/unit/gateway/api/api_test.c: the role rule of gateway/api/api.c
 * (DESIGN.md "Roles"): who sees which lock (gw_api_may_see) and who may use
 * the admin API (gw_api_is_admin).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gateway/api/api.h"
#include "gateway/base/config.h"

static void
test_may_see(void **state)
{
    (void)state;
    char l1[] = "orders", l2[] = "orders.eu";
    char *orders[] = {l1, l2, NULL};
    char *none[] = {NULL};
    struct gw_principal bounded = {.locks = orders};
    struct gw_principal nothing = {.locks = none};
    struct gw_principal unbounded = {.locks = NULL};
    struct gw_principal admin = {.locks = none, .admin = true};

    /* anonymous mode (loopback, no principals) sees everything */
    assert_true(gw_api_may_see(NULL, "orders"));
    assert_true(gw_api_may_see(NULL, ""));
    /* a "locks" list bounds reads as it bounds writes, byte for byte */
    assert_true(gw_api_may_see(&bounded, "orders"));
    assert_true(gw_api_may_see(&bounded, "orders.eu"));
    assert_false(gw_api_may_see(&bounded, "billing"));
    assert_false(gw_api_may_see(&bounded, "Orders"));
    assert_false(gw_api_may_see(&bounded, "orders.e"));
    assert_false(gw_api_may_see(&bounded, "")); /* a record under no lock */
    assert_false(gw_api_may_see(&nothing, "orders"));
    /* no "locks": it may write under every lock, so it reads every lock */
    assert_true(gw_api_may_see(&unbounded, "billing"));
    assert_true(gw_api_may_see(&unbounded, ""));
    /* an admin sees everything, whatever its own "locks" say */
    assert_true(gw_api_may_see(&admin, "billing"));
    assert_true(gw_api_may_see(&admin, ""));
}

static void
test_is_admin(void **state)
{
    (void)state;
    struct gw_principal worker = {.admin = false};
    struct gw_principal admin = {.admin = true};
    assert_true(gw_api_is_admin(NULL)); /* anonymous mode: no principals to tell apart */
    assert_false(gw_api_is_admin(&worker));
    assert_true(gw_api_is_admin(&admin));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_may_see),
        cmocka_unit_test(test_is_admin),
    };
    return cmocka_run_group_tests_name("api", tests, NULL, NULL);
}
