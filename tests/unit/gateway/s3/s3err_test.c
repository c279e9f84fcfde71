/*
 * tests/unit/gateway/s3/s3err_test.c: the ERR_* -> status map and the XML error
 * builder.  s3err.c is included (STYLE R12) to reach its statics.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/s3/s3err.c"

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

/* gw_s3err_build: the document, or the bare one when it cannot be built. */
static void
test_build(void **state)
{
    (void)state;
    struct buf b;
    char bare[GW_S3ERR_BARE_MAX];
    size_t len = 0;
    buf_init(&b, GW_S3ERR_MAX_BODY);
    const char *doc =
        gw_s3err_build(&b, bare, &len, "NoSuchKey", "gone", "/data/a&b", "req-1", NULL, 0);
    assert_ptr_equal(doc, b.data);
    assert_int_equal(len, strlen(doc));
    assert_memory_equal(doc,
                        XML_DECL "<Error><Code>NoSuchKey</Code><Message>gone</Message>"
                                 "<Resource>/data/a&amp;b</Resource><RequestId>req-1</RequestId>"
                                 "</Error>",
                        len);
    buf_cleanup(&b);
    /* a resource longer than the cap: the bare document */
    static char longpath[GW_S3ERR_MAX_BODY + 100];
    memset(longpath, 'a', sizeof(longpath) - 1);
    buf_init(&b, GW_S3ERR_MAX_BODY);
    doc = gw_s3err_build(&b, bare, &len, "KeyTooLongError", "long", longpath, "r", NULL, 0);
    assert_ptr_equal(doc, bare);
    assert_string_equal(doc, XML_DECL "<Error><Code>KeyTooLongError</Code><Message></Message>"
                                      "</Error>");
    assert_int_equal(len, strlen(doc));
    buf_cleanup(&b);
    /* a code that would need escaping is not copied into the bare document */
    buf_init(&b, GW_S3ERR_MAX_BODY);
    doc = gw_s3err_build(&b, bare, &len, "Bad<Code>", "long", longpath, "r", NULL, 0);
    assert_string_equal(doc, XML_DECL "<Error><Code>InternalError</Code><Message></Message>"
                                      "</Error>");
    buf_cleanup(&b);
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
        cmocka_unit_test(test_build),
    };
    return cmocka_run_group_tests_name("s3err", tests, NULL, NULL);
}
