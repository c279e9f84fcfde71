/*
 * tests/unit/gateway/proxy/proxy_test.c: gateway/proxy/proxy_fwd.c's answers when a request
 * cannot be forwarded.  A gw_server from proxy_harness.h hands each request to
 * gw_proxy_forward_body with a gw_auth the test chooses; the upstream is never
 * reached.  A failure of one of the gateway's own steps (here: the signer
 * refusing the payload hash it was given) must be 500 InternalError, counted
 * and logged (DESIGN G8); a genuine client error stays 4xx.
 */
#include "tests/unit/gateway/proxy_harness.h"

#include "gateway/base/metrics.h"

static char endpoint[] = "http://127.0.0.1:9";
static char region[] = "us-east-1";
static char akey[] = "AKIDEXAMPLE";
static char skey[] = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

static int
px_setup(void **state)
{
    (void)state;
    px_base_init();
    th_config_init(&cfg, endpoint, region, akey, skey);
    px_with_body = true;
    px_open(px_on_request, 1000, 1000);
    return 0;
}

static int
px_teardown(void **state)
{
    px_close();
    return teardown(state);
}

/* One request; returns the status and checks the S3 <Code>. */
static int
ask(const char *raw, const char *code)
{
    struct resp r;
    px_ask(raw, &r);
    char want[128];
    (void)snprintf(want, sizeof(want), "<Code>%s</Code>", code != NULL ? code : "");
    if (code != NULL && strstr(buf_cstr(&r.body), want) == NULL) {
        fail_msg("status %d, body %s; wanted %s", r.status, buf_cstr(&r.body), code);
    }
    int status = r.status;
    resp_cleanup(&r);
    return status;
}

/* The signer refuses what the gateway handed it: our failure, 500, never 400. */
static void
test_own_signing_failure_is_500(void **state)
{
    (void)state;
    px_auth.payload = GW_PAYLOAD_SHA256;
    (void)snprintf(px_auth.sha256, sizeof(px_auth.sha256), "%s", "not-a-hash");
    uint64_t internal = gw_metrics.internal_errors;
    uint64_t r5xx = gw_metrics_requests_of_class(5);
    uint64_t r4xx = gw_metrics_requests_of_class(4);
    assert_int_equal(ask("GET /b/k HTTP/1.1\r\nHost: x\r\n\r\n", "InternalError"), 500);
    assert_int_equal(th.requests, 1);
    assert_int_equal(gw_metrics.internal_errors, internal + 1);
    assert_int_equal(gw_metrics_requests_of_class(5), r5xx + 1);
    assert_int_equal(gw_metrics_requests_of_class(4), r4xx);
}

/* A request the client got wrong is still the client's 4xx. */
static void
test_client_error_stays_4xx(void **state)
{
    (void)state;
    px_auth.payload = GW_PAYLOAD_CHUNKED_SIGNED;
    uint64_t internal = gw_metrics.internal_errors;
    assert_int_equal(ask("PUT /b/k HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                         "Content-Encoding: a\r\nContent-Encoding: b\r\nContent-Encoding: c\r\n"
                         "Content-Encoding: d\r\nContent-Encoding: e\r\n\r\n",
                         "InvalidRequest"),
                     400);
    assert_int_equal(gw_metrics.internal_errors, internal);
}

/* Every response is counted once (when its request ends), the server's own
 * refusals included (a 505 never reaches the router). */
static void
test_every_status_counted_once(void **state)
{
    (void)state;
    uint64_t r4xx = gw_metrics_requests_of_class(4);
    uint64_t r5xx = gw_metrics_requests_of_class(5);
    assert_int_equal(ask("GET /b/k HTTP/2.0\r\nHost: x\r\n\r\n", "HTTPVersionNotSupported"), 505);
    assert_int_equal(gw_metrics_requests_of_class(5), r5xx + 1);
    assert_int_equal(ask("GET /b/k HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n"
                         "Content-Length: 2\r\n\r\n",
                         NULL),
                     400);
    assert_int_equal(gw_metrics_requests_of_class(4), r4xx + 1);
    assert_int_equal(gw_metrics_requests_of_class(5), r5xx + 1);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_own_signing_failure_is_500, px_setup, px_teardown),
        cmocka_unit_test_setup_teardown(test_client_error_stays_4xx, px_setup, px_teardown),
        cmocka_unit_test_setup_teardown(test_every_status_counted_once, px_setup, px_teardown),
    };
    return cmocka_run_group_tests_name("proxy", tests, NULL, NULL);
}
