/*
 * tests/unit/gateway/upstream/upmsg_test.c: the response-head collector and
 * the request checks of gateway/upstream/upmsg.c, including the negative cases.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "gateway/upstream/upmsg.h"

static int
feed(struct gw_upmsg_head *h, const char *line)
{
    return gw_upmsg_head_line(h, line, strlen(line));
}

static void
test_head_basic(void **state)
{
    (void)state;
    struct gw_upmsg_head h;
    gw_upmsg_head_init(&h);
    assert_int_equal(feed(&h, "HTTP/1.1 200 OK\r\n"), 0);
    assert_int_equal(feed(&h, "ETag:  \"abc\" \t\r\n"), 0);
    assert_int_equal(feed(&h, "x-amz-meta-Empty:\r\n"), 0);
    assert_int_equal(feed(&h, "Content-Length: 5\r\n"), 0);
    assert_int_equal(feed(&h, "\r\n"), 1);
    assert_int_equal(h.status, 200);
    assert_int_equal(h.n, 3);
    assert_string_equal(h.hdrs[0].name, "ETag");
    assert_string_equal(h.hdrs[0].value, "\"abc\"");
    assert_int_equal(h.hdrs[0].value_len, 5);
    assert_string_equal(h.hdrs[1].name, "x-amz-meta-Empty");
    assert_string_equal(h.hdrs[1].value, "");
    assert_int_equal(h.hdrs[1].value_len, 0);
    assert_string_equal(h.hdrs[2].value, "5");
    gw_upmsg_head_cleanup(&h);
}

static void
test_head_interim_dropped(void **state)
{
    (void)state;
    struct gw_upmsg_head h;
    gw_upmsg_head_init(&h);
    assert_int_equal(feed(&h, "HTTP/1.1 100 Continue\r\n"), 0);
    assert_int_equal(feed(&h, "\r\n"), 0);
    assert_int_equal(feed(&h, "HTTP/1.1 103 Early Hints\r\n"), 0);
    assert_int_equal(feed(&h, "Link: </a>\r\n"), 0);
    assert_int_equal(feed(&h, "\r\n"), 0);
    assert_int_equal(feed(&h, "HTTP/1.1 204\r\n"), 0); /* no reason phrase */
    assert_int_equal(feed(&h, "X-A: 1\r\n"), 0);
    assert_int_equal(feed(&h, "\r\n"), 1);
    assert_int_equal(h.status, 204);
    assert_int_equal(h.n, 1);
    assert_string_equal(h.hdrs[0].name, "X-A");
    /* reused for the next response */
    gw_upmsg_head_reset(&h, 0);
    assert_int_equal(feed(&h, "HTTP/2 404\r\n"), 0);
    assert_int_equal(feed(&h, "\r\n"), 1);
    assert_int_equal(h.status, 404);
    assert_int_equal(h.n, 0);
    gw_upmsg_head_cleanup(&h);
}

static void
test_head_obs_fold(void **state)
{
    (void)state;
    struct gw_upmsg_head h;
    gw_upmsg_head_init(&h);
    assert_int_equal(feed(&h, "HTTP/1.1 200 OK\r\n"), 0);
    assert_int_equal(feed(&h, "X-Long: a\r\n"), 0);
    assert_int_equal(feed(&h, " \t b c \r\n"), 0);
    assert_int_equal(feed(&h, "X-Next: n\r\n"), 0);
    assert_int_equal(feed(&h, "\r\n"), 1);
    assert_int_equal(h.n, 2);
    assert_string_equal(h.hdrs[0].value, "a b c");
    assert_int_equal(h.hdrs[0].value_len, 5);
    assert_string_equal(h.hdrs[1].value, "n");
    gw_upmsg_head_cleanup(&h);
}

static void
test_head_malformed(void **state)
{
    (void)state;
    static const char *const bad_status[] = {
        "HTTP/1.1 20 OK\r\n", "HTTP/1.1 2000\r\n", "HTTP/1.1 099 x\r\n", "HTTP/1.1 600 x\r\n",
        "HTTP/1.1\r\n",       "HTTP/1.1 2x0\r\n",  "HTTP/1.1 -20\r\n",
    };
    for (size_t i = 0; i < sizeof(bad_status) / sizeof(bad_status[0]); i++) {
        struct gw_upmsg_head h;
        gw_upmsg_head_init(&h);
        assert_int_equal(feed(&h, bad_status[i]), ERR_UPSTREAM);
        gw_upmsg_head_cleanup(&h);
    }
    static const char *const bad_field[] = {"NoColon\r\n", "Bad Name: x\r\n", "Name : x\r\n",
                                            ": x\r\n", " fold-first\r\n"};
    for (size_t i = 0; i < sizeof(bad_field) / sizeof(bad_field[0]); i++) {
        struct gw_upmsg_head h;
        gw_upmsg_head_init(&h);
        assert_int_equal(feed(&h, "HTTP/1.1 200 OK\r\n"), 0);
        assert_int_equal(feed(&h, bad_field[i]), ERR_UPSTREAM);
        gw_upmsg_head_cleanup(&h);
    }
    struct gw_upmsg_head h;
    gw_upmsg_head_init(&h);
    assert_int_equal(feed(&h, "X-Before: status\r\n"), ERR_UPSTREAM);
    gw_upmsg_head_cleanup(&h);
    gw_upmsg_head_init(&h);
    assert_int_equal(feed(&h, "\r\n"), ERR_UPSTREAM);
    gw_upmsg_head_cleanup(&h);
}

static void
test_head_cap(void **state)
{
    (void)state;
    struct gw_upmsg_head h;
    gw_upmsg_head_init(&h);
    char line[1024];
    memset(line, 'v', sizeof(line));
    memcpy(line, "X-Pad: ", 7);
    line[sizeof(line) - 2] = '\r';
    line[sizeof(line) - 1] = '\n';
    assert_int_equal(feed(&h, "HTTP/1.1 100 Continue\r\n"), 0);
    int rc = 0;
    size_t total = 23;
    while (rc == 0) {
        rc = gw_upmsg_head_line(&h, line, sizeof(line));
        total += sizeof(line);
        assert_true(total <= GW_UPMSG_HEAD_MAX_BYTES + sizeof(line));
    }
    assert_int_equal(rc, ERR_TOOBIG);
    /* interim heads count too: a final head cannot start over */
    assert_int_equal(gw_upmsg_head_line(&h, line, sizeof(line)), ERR_TOOBIG);
    gw_upmsg_head_cleanup(&h);
    gw_upmsg_head_cleanup(NULL);
}

static void
test_url_and_method(void **state)
{
    (void)state;
    assert_true(gw_upmsg_req_url_ok("http://127.0.0.1:9000/b/a/../k//x?list-type=2"));
    assert_true(gw_upmsg_req_url_ok("HTTPS://s3.example.com/b/k%20x"));
    assert_true(gw_upmsg_req_url_ok("http://h"));
    assert_false(gw_upmsg_req_url_ok("ftp://h/x"));
    assert_false(gw_upmsg_req_url_ok("http:///x"));
    assert_false(gw_upmsg_req_url_ok("http://?x"));
    assert_false(gw_upmsg_req_url_ok("http://"));
    assert_false(gw_upmsg_req_url_ok("h/x"));
    assert_false(gw_upmsg_req_url_ok("http://h/a b"));
    assert_false(gw_upmsg_req_url_ok("http://h/a#b"));
    assert_false(gw_upmsg_req_url_ok("http://h/a\tb"));
    assert_false(gw_upmsg_req_url_ok("http://h/\xc3\xa9"));
    assert_false(gw_upmsg_req_url_ok("http://h/\x7f"));
    assert_true(gw_upmsg_req_method_ok("GET"));
    assert_true(gw_upmsg_req_method_ok("M-SEARCH"));
    assert_false(gw_upmsg_req_method_ok(""));
    assert_false(gw_upmsg_req_method_ok("G T"));
    assert_false(gw_upmsg_req_method_ok("GET\r\n"));
}

static void
test_header_check(void **state)
{
    (void)state;
    enum gw_upmsg_req_hdr kind;
    bool empty;
    assert_int_equal(gw_upmsg_req_header_check("Host: h", 5, &kind, &empty), 0);
    assert_int_equal(kind, GW_UPMSG_REQ_HDR_OTHER);
    assert_false(empty);
    assert_int_equal(gw_upmsg_req_header_check("x-amz-meta-e: \t", -1, &kind, &empty), 0);
    assert_true(empty);
    assert_int_equal(gw_upmsg_req_header_check("accept: */*", -1, &kind, &empty), 0);
    assert_int_equal(kind, GW_UPMSG_REQ_HDR_ACCEPT);
    assert_int_equal(gw_upmsg_req_header_check("Expect: 100-continue", 5, &kind, &empty), 0);
    assert_int_equal(kind, GW_UPMSG_REQ_HDR_EXPECT);
    assert_int_equal(gw_upmsg_req_header_check("Content-Length: 5", 5, &kind, &empty), 0);
    assert_int_equal(kind, GW_UPMSG_REQ_HDR_CL);
    assert_int_equal(gw_upmsg_req_header_check("Content-Length: 0", -1, &kind, &empty), 0);
    assert_int_equal(gw_upmsg_req_header_check("X-V: caf\xc3\xa9", -1, &kind, &empty), 0);
    /* the refused ones */
    assert_int_equal(gw_upmsg_req_header_check("Content-Length: 6", 5, &kind, &empty), ERR_INVAL);
    assert_int_equal(gw_upmsg_req_header_check("Content-Length: 5", -1, &kind, &empty), ERR_INVAL);
    assert_int_equal(gw_upmsg_req_header_check("Content-Length: +5", 5, &kind, &empty), ERR_INVAL);
    assert_int_equal(gw_upmsg_req_header_check("Transfer-Encoding: chunked", 5, &kind, &empty),
                     ERR_INVAL);
    assert_int_equal(gw_upmsg_req_header_check("X-A: b\r\nX-B: c", -1, &kind, &empty), ERR_INVAL);
    assert_int_equal(gw_upmsg_req_header_check("X-A: b\n", -1, &kind, &empty), ERR_INVAL);
    assert_int_equal(gw_upmsg_req_header_check("X-A: \x01", -1, &kind, &empty), ERR_INVAL);
    assert_int_equal(gw_upmsg_req_header_check("X A: b", -1, &kind, &empty), ERR_INVAL);
    assert_int_equal(gw_upmsg_req_header_check(": b", -1, &kind, &empty), ERR_INVAL);
    assert_int_equal(gw_upmsg_req_header_check("NoColon", -1, &kind, &empty), ERR_INVAL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_head_basic),    cmocka_unit_test(test_head_interim_dropped),
        cmocka_unit_test(test_head_obs_fold), cmocka_unit_test(test_head_malformed),
        cmocka_unit_test(test_head_cap),      cmocka_unit_test(test_url_and_method),
        cmocka_unit_test(test_header_check),
    };
    return cmocka_run_group_tests_name("upstream_msg", tests, NULL, NULL);
}
