/* Unit tests for common/date.c: calendar arithmetic, RFC 3339 and IMF-fixdate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/date.h"

static void
test_http_date(void **state)
{
    (void)state;
    int64_t ms = 0;
    /* RFC 9110 5.6.7's example. */
    assert_int_equal(date_http_parse("Sun, 06 Nov 1994 08:49:37 GMT", &ms), 0);
    assert_int_equal(ms, 784111777LL * 1000);
    assert_int_equal(date_http_parse("Thu, 01 Jan 1970 00:00:00 GMT", &ms), 0);
    assert_int_equal(ms, 0);
    /* An RGW answer from the integration run. */
    assert_int_equal(date_http_parse("Sat, 21 Nov 2026 22:45:45 GMT", &ms), 0);
    assert_int_equal(ms, 1795301145LL * 1000);
    assert_int_equal(date_http_parse("Tue, 29 Feb 2028 23:59:59 GMT", &ms), 0);
    assert_int_equal(ms, 1835481599LL * 1000);
    assert_int_equal(date_http_parse("Fri, 31 Dec 9999 23:59:59 GMT", &ms), 0);
    assert_int_equal(ms, 253402300799LL * 1000);
    /* A leap second reads as :59. */
    assert_int_equal(date_http_parse("Sat, 31 Dec 2016 23:59:60 GMT", &ms), 0);
    assert_int_equal(ms, 1483228799LL * 1000);

    static const char *const bad[] = {
        NULL,
        "",
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Mon, 06 Nov 1994 08:49:37 GMT", /* wrong weekday */
        "sun, 06 Nov 1994 08:49:37 GMT", /* case */
        "Sun, 06 nov 1994 08:49:37 GMT",
        "Sun, 6 Nov 1994 08:49:37 GMT",   /* one-digit day */
        "Sun, 06 Nov 1994 08:49:37 GMT ", /* trailing space */
        " Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT", /* RFC 850 */
        "Sun Nov  6 08:49:37 1994",       /* asctime */
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 06 Nov 1994 08:49:61 GMT",
        "Thu, 00 Jan 1970 00:00:00 GMT",
        "Sat, 31 Nov 1970 00:00:00 GMT",
        "Sun, 29 Feb 2026 00:00:00 GMT", /* not a leap year */
        "Thu, 29 Feb 2100 00:00:00 GMT", /* nor is 2100 */
        "Wed, 31 Dec 1969 23:59:59 GMT", /* before 1970 */
        "Sun, 06 Nov 1994 08:49:3x GMT",
        "Sun, 06 Nov +994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08-49:37 GMT",
        "Sun; 06 Nov 1994 08:49:37 GMT",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ms = 42;
        assert_int_equal(date_http_parse(bad[i], &ms), ERR_INVAL);
        assert_int_equal(ms, 42);
    }
}

static void
test_http_format(void **state)
{
    (void)state;
    char out[DATE_HTTP_LEN + 1];
    assert_int_equal(date_http_format(784111777, out), 0);
    assert_string_equal(out, "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_int_equal(date_http_format(0, out), 0);
    assert_string_equal(out, "Thu, 01 Jan 1970 00:00:00 GMT");
    assert_int_equal(date_http_format(253402300799, out), 0);
    assert_string_equal(out, "Fri, 31 Dec 9999 23:59:59 GMT");
    assert_int_equal(date_http_format(-1, out), ERR_INVAL);
    assert_int_equal(date_http_format(253402300800, out), ERR_INVAL);
    /* every day of four years round-trips through the parser */
    for (int64_t sec = 1700000000; sec < 1700000000 + 4 * 366 * 86400; sec += 86400 + 3661) {
        int64_t ms = 0;
        assert_int_equal(date_http_format(sec, out), 0);
        assert_int_equal(date_http_parse(out, &ms), 0);
        assert_int_equal(ms, sec * 1000);
    }
}

static void
test_rfc3339(void **state)
{
    (void)state;
    char t[DATE_RFC3339_LEN + 1];
    int64_t ms = 0;
    assert_int_equal(date_rfc3339_format(0, t), 0);
    assert_string_equal(t, "1970-01-01T00:00:00.000Z");
    assert_int_equal(date_rfc3339_parse("2024-02-29T23:59:59.999Z", &ms), 0);
    assert_int_equal(date_rfc3339_format(ms, t), 0);
    assert_string_equal(t, "2024-02-29T23:59:59.999Z");
    assert_int_equal(date_rfc3339_format(DATE_MAX_MS, t), 0);
    assert_string_equal(t, "9999-12-31T23:59:59.999Z");
    assert_int_equal(date_rfc3339_format(-1, t), ERR_INVAL);
    assert_int_equal(date_rfc3339_format(DATE_MAX_MS + 1, t), ERR_INVAL);
    static const char *const bad[] = {
        NULL,
        "",
        "2026-02-29T00:00:00.000Z",
        "2026-11-21T10:15:30Z",
        "2026-11-21t10:15:30.123Z",
        "1969-12-31T23:59:59.999Z",
        "2026-11-21T24:00:00.000Z",
        "2026-13-01T00:00:00.000Z",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ms = 42;
        assert_int_equal(date_rfc3339_parse(bad[i], &ms), ERR_INVAL);
        assert_int_equal(ms, 42);
    }
}

static void
test_civil(void **state)
{
    (void)state;
    for (int64_t days = 0; days < 2932897; days += 997) { /* to 9999-12-31 */
        int64_t y;
        unsigned m;
        unsigned d;
        date_civil_from_days(days, &y, &m, &d);
        assert_true(date_valid_ymd(y, m, d));
        assert_int_equal(date_days_from_civil(y, m, d), days);
    }
    assert_false(date_valid_ymd(2100, 2, 29));
    assert_true(date_valid_ymd(2000, 2, 29));
    assert_false(date_valid_ymd(1969, 12, 31));
    assert_false(date_valid_ymd(10000, 1, 1));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http_date),
        cmocka_unit_test(test_http_format),
        cmocka_unit_test(test_rfc3339),
        cmocka_unit_test(test_civil),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
