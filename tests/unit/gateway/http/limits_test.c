/*
 * tests/unit/gateway/http/limits_test.c: what the HTTP/1.x server refuses or
 * cuts off (harness in http_harness.h): request smuggling and malformed
 * requests, a bad chunk mid-body, header/URL size limits, the header, body
 * and idle timeouts, and max_connections.
 */
#include "tests/unit/gateway/http_harness.h"

/* ---- tests ---- */

static void
test_smuggling_refused(void **state)
{
    (void)state;
    static const struct {
        const char *raw;
        int status;
        const char *code;
    } cases[] = {
        {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
         "0\r\n\r\n",
         400, "InvalidRequest"},
        {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"
         "0\r\n\r\n",
         400, "InvalidRequest"},
        {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 400,
         "InvalidRequest"},
        {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400,
         "InvalidRequest"},
        {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\nabc", 400, "InvalidRequest"},
        {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400, "InvalidRequest"},
        {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501,
         "NotImplemented"},
        {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "NotImplemented"},
        {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
         "chunked\r\n\r\n0\r\n\r\n",
         501, "NotImplemented"},
        {"get / HTTP/1.1\r\nHost: x\r\n\r\n", 400, "InvalidRequest"},
        {"GET /\r\n\r\n", 400, "InvalidRequest"},
        {"GET / HTTP/1.2\r\nHost: x\r\n\r\n", 505, "HTTPVersionNotSupported"},
        {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, "HTTPVersionNotSupported"},
        {"GET / HTTP/1.1\r\nHost: x\r\nX-C: a\001b\r\n\r\n", 400, "InvalidRequest"},
        {"GET / HTTP/1.1\r\nHost: x\r\nX-C: a\177b\r\n\r\n", 400, "InvalidRequest"},
        {"GET / HTTP/1.1\r\nHost: x\r\nX-C: a\r\n folded\r\n\r\n", 400, "InvalidRequest"},
        {"GET / HTTP/1.1\r\nX-C: a\r\n\r\n", 400, "InvalidRequest"},
        {"GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400, "InvalidRequest"},
        {"GET / HTTP/1.1\nHost: x\n\n", 400, "InvalidRequest"},
        {"GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400, "InvalidRequest"},
        {"CONNECT x:443 HTTP/1.1\r\nHost: x\r\n\r\n", 405, "MethodNotAllowed"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        print_message("case %zu\n", i);
        expect_refused(cases[i].raw, cases[i].status, cases[i].code);
        expect_serving();
    }
    assert_int_equal(th.aborts, 0);
}

static void
test_bad_chunk_mid_body(void **state)
{
    (void)state;
    th.mode = MODE_ECHO;
    expect_refused("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "3\r\nabc\r\nzz\r\nxx\r\n0\r\n\r\n",
                   400, "InvalidRequest");
    assert_int_equal(th.aborts, 1);
    assert_int_equal(th.abort_err, ERR_INVAL);
    expect_serving();
}

static void
test_limits(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 1 << 20);
    /* header bytes */
    assert_int_equal(buf_append_str(&b, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: "), 0);
    for (int i = 0; i < 8000; i++) {
        assert_int_equal(buf_append(&b, "a", 1), 0);
    }
    assert_int_equal(buf_append_str(&b, "\r\n\r\n"), 0);
    expect_refused(buf_cstr(&b), 431, "RequestHeaderSectionTooLarge");
    expect_serving();
    /* header count */
    buf_reset(&b);
    assert_int_equal(buf_append_str(&b, "GET / HTTP/1.1\r\nHost: x\r\n"), 0);
    for (int i = 0; i < 30; i++) {
        assert_int_equal(buf_printf(&b, "X-H%d: v\r\n", i), 0);
    }
    assert_int_equal(buf_append_str(&b, "\r\n"), 0);
    expect_refused(buf_cstr(&b), 431, "RequestHeaderSectionTooLarge");
    expect_serving();
    /* exactly max_headers is fine */
    buf_reset(&b);
    assert_int_equal(buf_append_str(&b, "GET /ok HTTP/1.1\r\nHost: x\r\n"), 0);
    for (int i = 0; i < 19; i++) {
        assert_int_equal(buf_printf(&b, "X-H%d: v\r\n", i), 0);
    }
    assert_int_equal(buf_append_str(&b, "\r\n"), 0);
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, buf_cstr(&b));
    struct resp r;
    (void)wait_resp(&cl, 0, false, &r, 3000);
    assert_int_equal(r.status, 200);
    resp_cleanup(&r);
    cl_close(&cl);
    /* URL */
    buf_reset(&b);
    assert_int_equal(buf_append_str(&b, "GET /"), 0);
    for (int i = 0; i < 300; i++) {
        assert_int_equal(buf_append(&b, "u", 1), 0);
    }
    assert_int_equal(buf_append_str(&b, " HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
    expect_refused(buf_cstr(&b), 414, "InvalidURI");
    expect_serving();
    buf_cleanup(&b);
}

static void
test_header_timeout(void **state)
{
    (void)state;
    cfg.limits.header_timeout_ms = 150;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "GET / HTTP/1.1\r\nHost: x\r\n");
    uint64_t t0 = now_ms();
    struct resp r;
    (void)wait_resp(&cl, 0, false, &r, 3000);
    assert_true(now_ms() - t0 >= 100);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(buf_cstr(&r.body), "<Code>RequestTimeout</Code>"));
    wait_eof(&cl, 3000);
    resp_cleanup(&r);
    cl_close(&cl);
    /* a connection that never sends a byte is closed silently */
    cl_open(&cl);
    wait_eof(&cl, 3000);
    assert_int_equal(cl.in.len, 0);
    cl_close(&cl);
    expect_serving();
}

/*
 * A request line without a version ("GET /x\r\n" and nothing more) is
 * HTTP/0.9 to llhttp, which only says so once the next byte arrives.  It is
 * refused at once, not held open until the header timeout.
 */
static void
test_http09_refused_at_once(void **state)
{
    (void)state;
    cfg.limits.header_timeout_ms = 30000;
    static const char *const raw[] = {"GET /x\r\n", "GET /x\n", "GET /x?a=1\r", "GET /\r\n"};
    for (size_t i = 0; i < sizeof(raw) / sizeof(raw[0]); i++) {
        print_message("case %zu\n", i);
        uint64_t t0 = now_ms();
        struct client cl;
        cl_open(&cl);
        cl_sends(&cl, raw[i]);
        struct resp r;
        (void)wait_resp(&cl, 0, false, &r, 2000);
        assert_int_equal(r.status, 400);
        assert_non_null(strstr(buf_cstr(&r.body), "<Code>InvalidRequest</Code>"));
        wait_eof(&cl, 2000);
        assert_true(now_ms() - t0 < 2000);
        resp_cleanup(&r);
        cl_close(&cl);
    }
    /* the line end in a later read than the URL */
    uint64_t t0 = now_ms();
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "GET /x");
    pump_ms(&cl, 50);
    cl_sends(&cl, "\r\n");
    struct resp r;
    (void)wait_resp(&cl, 0, false, &r, 2000);
    assert_int_equal(r.status, 400);
    wait_eof(&cl, 2000);
    assert_true(now_ms() - t0 < 2000);
    resp_cleanup(&r);
    cl_close(&cl);
    assert_int_equal(th.requests, 0);
    expect_serving();
}

static void
test_body_timeout(void **state)
{
    (void)state;
    cfg.limits.body_timeout_ms = 150;
    th.mode = MODE_ECHO;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "PUT /k HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n012");
    struct resp r;
    (void)wait_resp(&cl, 0, false, &r, 3000);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(buf_cstr(&r.body), "<Code>RequestTimeout</Code>"));
    assert_int_equal(th.aborts, 1);
    assert_int_equal(th.abort_err, ERR_TIMEOUT);
    wait_eof(&cl, 3000);
    resp_cleanup(&r);
    cl_close(&cl);
}

static void
test_idle_timeout(void **state)
{
    (void)state;
    cfg.limits.idle_timeout_ms = 100;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    struct resp r;
    size_t off = wait_resp(&cl, 0, false, &r, 3000);
    resp_cleanup(&r);
    wait_eof(&cl, 3000);
    assert_int_equal(cl.in.len, off); /* closed silently */
    cl_close(&cl);
}

static void
test_max_connections(void **state)
{
    (void)state;
    cfg.limits.max_connections = 2;
    cfg.limits.max_connections_per_client = 3;
    struct client a, b, c;
    cl_open(&a);
    cl_open(&b);
    /* heads in progress: nothing idle to shed (http_fair_test.c sheds) */
    cl_sends(&a, "GET /a HTTP/1.1\r\n");
    cl_sends(&b, "GET /b HTTP/1.1\r\n");
    pump_ms(&a, 30);
    assert_int_equal(srv->nconns, 2);
    assert_true(srv->accepting_paused);
    cl_open(&c); /* completes in the kernel backlog; not accepted yet */
    cl_sends(&c, "GET /c HTTP/1.1\r\nHost: x\r\n\r\n");
    pump_ms(&c, 50);
    assert_int_equal(c.in.len, 0);
    assert_int_equal(srv->nconns, 2);
    cl_close(&a);
    struct resp r;
    (void)wait_resp(&c, 0, false, &r, 3000);
    assert_string_equal(buf_cstr(&r.body), "GET /c|/c|");
    resp_cleanup(&r);
    cl_close(&b);
    cl_close(&c);
}

int
main(void)
{
    log_threshold = LOG_NONE;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_smuggling_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_chunk_mid_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_header_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http09_refused_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_connections, setup, teardown),
    };
    return cmocka_run_group_tests_name("http_limits", tests, NULL, NULL);
}
