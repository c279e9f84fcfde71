/* Unit tests for common/traceparent.c: W3C Trace Context section 3.2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/traceparent.h"

#define GOOD "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static int
parse(const char *v, char out[TRACEPARENT_ID_LEN + 1])
{
    return traceparent_parse(v, strlen(v), out);
}

static void
test_valid(void **state)
{
    (void)state;
    char t[TRACEPARENT_ID_LEN + 1] = "";
    assert_int_equal(parse(GOOD, t), 0);
    assert_string_equal(t, "4bf92f3577b34da6a3ce929d0e0e4736");
    /* flags are not interpreted; a later version may append "-..." (section 3.2.4) */
    assert_int_equal(parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff", t), 0);
    assert_int_equal(parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", t), 0);
    assert_int_equal(parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what", t), 0);
}

static void
test_invalid(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "00",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",      /* no flags */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   /* uppercase */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   /* zero trace */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   /* zero parent */
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   /* version ff */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", /* 00 with more */
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",  /* later, no dash */
        "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   /* version not hex */
        "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",   /* trace not hex */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bz-01",   /* parent not hex */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0Z",   /* flags not hex */
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   /* wrong separator */
        "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e47-3600f067aa0ba902b7-01", /* dash misplaced */
        " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char t[TRACEPARENT_ID_LEN + 1] = "unchanged";
        assert_int_equal(parse(bad[i], t), ERR_INVAL);
        assert_string_equal(t, "unchanged");
    }
    char t[TRACEPARENT_ID_LEN + 1];
    assert_int_equal(traceparent_parse(NULL, 0, t), ERR_INVAL);
    /* a length shorter than the string is honoured */
    assert_int_equal(traceparent_parse(GOOD, strlen(GOOD) - 1, t), ERR_INVAL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
