/*
 * tests/unit/gateway/s3/s3err_test.c: the ERR_* -> status map and the XML error
 * builder.  s3err.c is included (STYLE R12) and the three gateway/http/http.h
 * functions it calls are stubbed here, so the test links without the server.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/s3/s3err.c"

/* ---- stubs for gateway/http/http.h: record what would be sent ---- */

struct gw_req {
    const char *path;
    const char *id;
    int status;
    char ctype[64];
    char body[GW_S3ERR_MAX_BODY + 1];
    size_t len;
    int calls;
};

const char *
gw_req_path(const struct gw_req *req)
{
    return req->path;
}

const char *
gw_req_id(const struct gw_req *req)
{
    return req->id;
}

void
gw_resp_simple(struct gw_req *req, int status, const char *content_type, const void *body,
               size_t len)
{
    req->calls++;
    req->status = status;
    (void)snprintf(req->ctype, sizeof(req->ctype), "%s", content_type);
    assert_true(len <= GW_S3ERR_MAX_BODY);
    memcpy(req->body, body, len);
    req->body[len] = '\0';
    req->len = len;
}

#define XML_DECL "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

static void
test_status_map(void **state)
{
    (void)state;
    static const struct {
        int err;
        int status;
        const char *code;
    } cases[] = {
        {ERR_OK, 200, "InternalError"},
        {ERR_INVAL, 400, "InvalidRequest"},
        {ERR_AUTH, 403, "AccessDenied"},
        {ERR_DENIED, 403, "AccessDenied"},
        {ERR_NOTFOUND, 404, "NotFound"},
        {ERR_FENCED, 409, "StaleFencingToken"},
        {ERR_CONFLICT, 409, "OperationAborted"},
        {ERR_EXISTS, 409, "AlreadyExists"},
        {ERR_TOOBIG, 413, "EntityTooLarge"},
        {ERR_UNSUPPORTED, 501, "NotImplemented"},
        {ERR_UPSTREAM, 502, "BadGateway"},
        {ERR_NOMEM, 503, "ServiceUnavailable"},
        {ERR_AGAIN, 503, "ServiceUnavailable"},
        {ERR_TIMEOUT, 504, "GatewayTimeout"},
        {ERR_IO, 500, "InternalError"},
        {ERR_VERSION, 500, "InternalError"},
        {ERR_CLOSED, 500, "InternalError"},
        {-999, 500, "InternalError"},
        {7, 500, "InternalError"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(gw_s3err_status_from_err(cases[i].err), cases[i].status);
        assert_string_equal(gw_s3err_code_from_err(cases[i].err), cases[i].code);
    }
}

static void
test_format_basic(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 4096);
    assert_int_equal(gw_s3err_format(&b, "NoSuchKey", "The specified key does not exist.",
                                     "/bucket/key", "0123abcd", NULL, 0),
                     0);
    assert_string_equal(buf_cstr(&b), XML_DECL "<Error><Code>NoSuchKey</Code>"
                                               "<Message>The specified key does not exist."
                                               "</Message><Resource>/bucket/key</Resource>"
                                               "<RequestId>0123abcd</RequestId></Error>");
    buf_cleanup(&b);
}

static void
test_format_optional_parts(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 4096);
    assert_int_equal(gw_s3err_format(&b, "InternalError", NULL, NULL, NULL, NULL, 0), 0);
    assert_string_equal(buf_cstr(&b),
                        XML_DECL "<Error><Code>InternalError</Code><Message></Message></Error>");
    buf_cleanup(&b);
}

static void
test_format_extra(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 4096);
    const struct gw_s3err_extra extra[] = {
        {"Lock", "orders"},
        {"Token", "41"},
        {"CurrentToken", "42"},
    };
    assert_int_equal(
        gw_s3err_format(&b, "StaleFencingToken", "stale", "/data/orders/x", "r1", extra, 3), 0);
    assert_string_equal(buf_cstr(&b), XML_DECL
                        "<Error><Code>StaleFencingToken</Code><Message>stale</Message>"
                        "<Resource>/data/orders/x</Resource><RequestId>r1</RequestId>"
                        "<Lock>orders</Lock><Token>41</Token><CurrentToken>42</CurrentToken>"
                        "</Error>");
    buf_cleanup(&b);
}

static void
test_format_escaping(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 4096);
    const struct gw_s3err_extra extra[] = {{"Lock", "a<b>&\"c'"}};
    assert_int_equal(
        gw_s3err_format(&b, "A&B", "x < y > z & \"q\" 'r'", "/b/k?x=1&y=2", "id", extra, 1), 0);
    assert_string_equal(buf_cstr(&b), XML_DECL "<Error><Code>A&amp;B</Code>"
                                               "<Message>x &lt; y &gt; z &amp; &quot;q&quot; "
                                               "&apos;r&apos;</Message>"
                                               "<Resource>/b/k?x=1&amp;y=2</Resource>"
                                               "<RequestId>id</RequestId>"
                                               "<Lock>a&lt;b&gt;&amp;&quot;c&apos;</Lock></Error>");
    buf_cleanup(&b);
}

static void
test_format_control_and_utf8(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 4096);
    /* TAB/LF/CR as references; other controls, DEL and bad UTF-8 as U+FFFD; good UTF-8 kept */
    assert_int_equal(gw_s3err_format(&b, "C",
                                     "a\tb\nc\rd\x01"
                                     "e\x7f"
                                     "f\x1b",
                                     NULL, NULL, NULL, 0),
                     0);
    assert_string_equal(buf_cstr(&b), XML_DECL "<Error><Code>C</Code><Message>"
                                               "a&#9;b&#10;c&#13;d\xef\xbf\xbd"
                                               "e\xef\xbf\xbd"
                                               "f\xef\xbf\xbd</Message></Error>");
    buf_reset(&b);
    /* valid: e-acute, euro, U+1F600; invalid: lone continuation, overlong '/', surrogate,
     * truncated sequence, > U+10FFFF, U+FFFE */
    assert_int_equal(gw_s3err_format(&b, "C",
                                     "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80|\x80|\xc0\xaf|"
                                     "\xed\xa0\x80|\xe2\x82|\xf4\x90\x80\x80|\xef\xbf\xbe",
                                     NULL, NULL, NULL, 0),
                     0);
    assert_string_equal(buf_cstr(&b),
                        XML_DECL "<Error><Code>C</Code><Message>"
                                 "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80|\xef\xbf\xbd|"
                                 "\xef\xbf\xbd\xef\xbf\xbd|"
                                 "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd|"
                                 "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|"
                                 "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                                 "</Message></Error>");
    buf_cleanup(&b);
}

static void
test_format_invalid(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 4096);
    assert_int_equal(gw_s3err_format(&b, NULL, "m", NULL, NULL, NULL, 0), ERR_INVAL);
    assert_int_equal(gw_s3err_format(&b, "", "m", NULL, NULL, NULL, 0), ERR_INVAL);
    static const char *const bad_names[] = {"",         "1Lock", "Lo ck", "a<b",
                                            "xmlThing", "XMLx",  "Lock>", "-x"};
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
        const struct gw_s3err_extra extra[] = {{bad_names[i], "v"}};
        assert_int_equal(gw_s3err_format(&b, "C", "m", NULL, NULL, extra, 1), ERR_INVAL);
    }
    const struct gw_s3err_extra null_name[] = {{NULL, "v"}};
    assert_int_equal(gw_s3err_format(&b, "C", "m", NULL, NULL, null_name, 1), ERR_INVAL);
    const struct gw_s3err_extra null_value[] = {{"Lock", NULL}};
    assert_int_equal(gw_s3err_format(&b, "C", "m", NULL, NULL, null_value, 1), ERR_INVAL);
    const struct gw_s3err_extra good[] = {{"_a.b-c9", "v"}};
    assert_int_equal(gw_s3err_format(&b, "C", "m", NULL, NULL, good, 1), 0);
    buf_cleanup(&b);
}

static void
test_format_cap(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 64);
    assert_int_equal(gw_s3err_format(&b, "InternalError", "a message that is too long to fit",
                                     "/b/k", "id", NULL, 0),
                     ERR_TOOBIG);
    buf_cleanup(&b);
}

static void
test_send(void **state)
{
    (void)state;
    struct gw_req req = {.path = "/data/a&b", .id = "req-1"};
    gw_s3err_send(&req, 404, "NoSuchKey", "gone");
    assert_int_equal(req.calls, 1);
    assert_int_equal(req.status, 404);
    assert_string_equal(req.ctype, "application/xml");
    assert_string_equal(req.body, XML_DECL "<Error><Code>NoSuchKey</Code><Message>gone</Message>"
                                           "<Resource>/data/a&amp;b</Resource>"
                                           "<RequestId>req-1</RequestId></Error>");
}

static void
test_send_err(void **state)
{
    (void)state;
    struct gw_req req = {.path = "/b", .id = "r"};
    gw_s3err_send_err(&req, ERR_TIMEOUT, NULL);
    assert_int_equal(req.status, 504);
    assert_string_equal(req.body, XML_DECL "<Error><Code>GatewayTimeout</Code>"
                                           "<Message>timed out</Message><Resource>/b</Resource>"
                                           "<RequestId>r</RequestId></Error>");
    struct gw_req req2 = {.path = "/b", .id = "r"};
    gw_s3err_send_err(&req2, ERR_UPSTREAM, "upstream unreachable");
    assert_int_equal(req2.status, 502);
    assert_non_null(strstr(req2.body, "<Code>BadGateway</Code>"));
    assert_non_null(strstr(req2.body, "<Message>upstream unreachable</Message>"));
}

static void
test_send_fallback(void **state)
{
    (void)state;
    /* a path longer than the body cap: the minimal document still goes out */
    static char longpath[GW_S3ERR_MAX_BODY + 100];
    memset(longpath, 'a', sizeof(longpath) - 1);
    longpath[0] = '/';
    struct gw_req req = {.path = longpath, .id = "r"};
    gw_s3err_send(&req, 400, "KeyTooLongError", "long");
    assert_int_equal(req.calls, 1);
    assert_int_equal(req.status, 400);
    assert_string_equal(req.body, XML_DECL "<Error><Code>KeyTooLongError</Code>"
                                           "<Message></Message></Error>");
    /* a code that would need escaping is not copied into the fallback */
    struct gw_req req2 = {.path = longpath, .id = "r"};
    gw_s3err_send(&req2, 400, "Bad<Code>", "long");
    assert_string_equal(req2.body, XML_DECL "<Error><Code>InternalError</Code>"
                                            "<Message></Message></Error>");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_map),
        cmocka_unit_test(test_format_basic),
        cmocka_unit_test(test_format_optional_parts),
        cmocka_unit_test(test_format_extra),
        cmocka_unit_test(test_format_escaping),
        cmocka_unit_test(test_format_control_and_utf8),
        cmocka_unit_test(test_format_invalid),
        cmocka_unit_test(test_format_cap),
        cmocka_unit_test(test_send),
        cmocka_unit_test(test_send_err),
        cmocka_unit_test(test_send_fallback),
    };
    return cmocka_run_group_tests_name("s3err", tests, NULL, NULL);
}
