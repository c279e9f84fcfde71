/* Unit tests for common/log.c: the json format (one object per line, the request id lifted
 * from the house prefix "req <id>: ", hostile bytes escaped) and the text format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <string.h>
#include <unistd.h>

#define LOG_MODULE "unit"
#include "common/err.h"
#include "common/log.h"

/* What one log line wrote to stderr (captured through a pipe). */
static char out[16384];

static void
capture_begin(int fds[2], int *saved)
{
    assert_int_equal(pipe(fds), 0);
    *saved = dup(STDERR_FILENO);
    assert_true(dup2(fds[1], STDERR_FILENO) >= 0);
}

static const char *
capture_end(int fds[2], int saved)
{
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    (void)close(saved);
    (void)close(fds[1]);
    ssize_t n = read(fds[0], out, sizeof(out) - 1);
    (void)close(fds[0]);
    out[n > 0 ? n : 0] = '\0';
    return out;
}

static void
test_json_lines(void **state)
{
    (void)state;
    assert_int_equal(log_set_format("json"), 0);
    int fds[2], saved;
    capture_begin(fds, &saved);
    log_info("req %s: key %s refused", "0123456789abcdef", "a\"b\\c\n\x01\xff");
    const char *line = capture_end(fds, saved);
    size_t len = strlen(line);
    assert_true(len > 0 && line[len - 1] == '\n');
    assert_null(memchr(line, '\n', len - 1));
    json_error_t err;
    json_t *o = json_loads(line, 0, &err);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "level")), "info");
    assert_string_equal(json_string_value(json_object_get(o, "module")), "unit");
    assert_string_equal(json_string_value(json_object_get(o, "request_id")), "0123456789abcdef");
    assert_string_equal(json_string_value(json_object_get(o, "msg")),
                        "key a\"b\\c\n\x01\xef\xbf\xbd refused");
    assert_non_null(json_object_get(o, "time"));
    json_decref(o);

    /* no house prefix: no request_id key */
    capture_begin(fds, &saved);
    log_warn("plain %d", 7);
    line = capture_end(fds, saved);
    o = json_loads(line, 0, &err);
    assert_non_null(o);
    assert_null(json_object_get(o, "request_id"));
    assert_string_equal(json_string_value(json_object_get(o, "msg")), "plain 7");
    json_decref(o);
    assert_int_equal(log_set_format("yaml"), ERR_INVAL);
}

static void
test_text_lines(void **state)
{
    (void)state;
    assert_int_equal(log_set_format("text"), 0);
    int fds[2], saved;
    capture_begin(fds, &saved);
    log_info("req %s: hello", "0123456789abcdef");
    const char *line = capture_end(fds, saved);
    assert_non_null(strstr(line, " info unit test_text_lines: req 0123456789abcdef: hello\n"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_lines),
        cmocka_unit_test(test_text_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
