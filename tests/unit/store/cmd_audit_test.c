/* tests/unit/store/cmd_audit_test.c: gateway/cmd_audit.c and
 * gateway/json_audit.c (`fencegate audit`), kept beside the store tests it
 * depends on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <fcntl.h>

#include "gateway/cmd_audit.h"
#include "gateway/json_audit.h"
#include "testutil.h"

/* Output of one gw_cmd_audit run. */
struct run {
    int status;      /* exit status */
    char out[65536]; /* stdout */
    char err[4096];  /* stderr */
};

static void
slurp(int fd, char *dst, size_t cap)
{
    (void)lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, dst, cap - 1);
    dst[n > 0 ? n : 0] = '\0';
}

/* Run gw_cmd_audit with NULL-terminated args, capturing stdout and stderr. */
static void
run_cmd(struct run *r, const char *const *args)
{
    char *argv[32];
    int argc = 0;
    argv[argc++] = (char *)"audit";
    for (; args[argc - 1] != NULL; argc++) {
        argv[argc] = (char *)args[argc - 1];
    }
    argv[argc] = NULL;
    char o[] = "/tmp/fg-audit-out-XXXXXX";
    char e[] = "/tmp/fg-audit-err-XXXXXX";
    int ofd = mkstemp(o);
    int efd = mkstemp(e);
    assert_true(ofd >= 0 && efd >= 0);
    (void)fflush(stdout);
    (void)fflush(stderr);
    int so = dup(1);
    int se = dup(2);
    (void)dup2(ofd, 1);
    (void)dup2(efd, 2);
    r->status = gw_cmd_audit(argc, argv);
    (void)fflush(stdout);
    (void)fflush(stderr);
    (void)dup2(so, 1);
    (void)dup2(se, 2);
    (void)close(so);
    (void)close(se);
    slurp(ofd, r->out, sizeof(r->out));
    slurp(efd, r->err, sizeof(r->err));
    (void)close(ofd);
    (void)close(efd);
    (void)unlink(o);
    (void)unlink(e);
}

static int
setup(void **state)
{
    char *dir = tu_dir_new();
    struct store *s = tu_open(dir, false);
    for (int i = 0; i < 5; i++) {
        struct store_audit_rec r = {.time_ms = 1795256130000 + i * 1000,
                                    .kind = i == 4 ? STORE_AUDIT_CUT : STORE_AUDIT_STALE,
                                    .token = (uint64_t)i + 1,
                                    .current = 9,
                                    .lock = i % 2 ? "billing" : "orders",
                                    .principal = "worker",
                                    .client = "192.0.2.7:5000",
                                    .method = "PUT",
                                    .bucket = "data",
                                    .key = i == 3 ? "evil\x1b[2J\"key\xff" : "orders/1",
                                    .operation = "PutObject",
                                    .request_id = "req",
                                    .user_agent = "aws-cli/2"};
        assert_int_equal(store_audit_append_sync(s, &r, NULL), 0);
    }
    /* the CLI reads while this writer stays open */
    *state = dir;
    store_close(s);
    return 0;
}

static int
teardown(void **state)
{
    tu_dir_free(*state);
    return 0;
}

static void
test_table(void **state)
{
    struct run *r = calloc(1, sizeof(*r));
    struct store *w = tu_open(*state, false); /* a gateway is running */
    const char *a[] = {"--data-dir", *state, NULL};
    run_cmd(r, a);
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "TIME"));
    assert_non_null(strstr(r->out, "2026-11-21T10:15:30.000Z"));
    assert_non_null(strstr(r->out, "stale"));
    assert_non_null(strstr(r->out, "cut"));
    assert_non_null(strstr(r->out, "data/orders/1"));
    assert_null(strchr(r->out, '\x1b')); /* control bytes never reach the terminal */
    assert_null(strstr(r->out, "# more"));
    store_close(w);

    const char *b[] = {"--data-dir", *state, "--lock", "billing", "--limit=1", NULL};
    run_cmd(r, b);
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "billing"));
    assert_null(strstr(r->out, " orders "));
    char *more = strstr(r->out, "# more records: --after ");
    assert_non_null(more);
    char cursor[64];
    (void)snprintf(cursor, sizeof(cursor), "%s", more + strlen("# more records: --after "));
    cursor[strcspn(cursor, "\n")] = '\0';
    const char *c[] = {"--data-dir", *state, "--lock", "billing", "--after", cursor, NULL};
    run_cmd(r, c);
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "evil?[2J")); /* the second billing record */
    free(r);
}

static void
test_json(void **state)
{
    struct run *r = calloc(1, sizeof(*r));
    const char *a[] = {"--data-dir",           *state,    "--json",        "--since",
                       "2026-11-21T10:15:31Z", "--until", "1795256134000", NULL};
    run_cmd(r, a);
    assert_int_equal(r->status, 0);
    assert_true(strncmp(r->out, "{\"records\":[{\"time\":\"", 21) == 0);
    assert_non_null(strstr(r->out, "\"next\":null}"));
    assert_non_null(strstr(r->out, "\"token\":2,"));
    assert_non_null(strstr(r->out, "\"token\":4,"));
    assert_null(strstr(r->out, "\"token\":1,")); /* before --since */
    assert_null(strstr(r->out, "\"token\":5,")); /* at --until (exclusive) */
    assert_non_null(strstr(r->out, "\"key\":\"evil\\u001b[2J\\\"key\\ufffd\""));
    assert_non_null(strstr(r->out, "\"kind\":\"stale\""));
    free(r);
}

static void
test_errors(void **state)
{
    struct run *r = calloc(1, sizeof(*r));
    const char *none[] = {NULL};
    run_cmd(r, none);
    assert_int_equal(r->status, 2);
    assert_non_null(strstr(r->err, "--data-dir is required"));
    const char *bad[][5] = {
        {"--data-dir", *state, "--limit", "0", NULL},
        {"--data-dir", *state, "--since", "yesterday", NULL},
        {"--data-dir", *state, "--after", "x", NULL},
        {"--data-dir", *state, "--bogus", NULL, NULL},
        {"--data-dir", *state, "--lock", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        run_cmd(r, bad[i]);
        assert_int_equal(r->status, 2);
    }
    const char *missing[] = {"--data-dir", "/tmp/definitely/not/here", NULL};
    run_cmd(r, missing);
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "no fencegate store"));
    const char *help[] = {"--help", NULL};
    run_cmd(r, help);
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "usage"));
    free(r);
}

static void
test_time_parse_format(void **state)
{
    (void)state;
    int64_t ms = 0;
    assert_int_equal(gw_json_audit_time_parse("2026-11-21T10:00:00Z", &ms), 0);
    assert_int_equal(ms, 1795255200000);
    assert_int_equal(gw_json_audit_time_parse("1970-01-01T00:00:00.5Z", &ms), 0);
    assert_int_equal(ms, 500);
    assert_int_equal(gw_json_audit_time_parse("2024-02-29T23:59:59.123456Z", &ms), 0);
    assert_int_equal(ms % 1000, 123);
    assert_int_equal(gw_json_audit_time_parse("1795255200000", &ms), 0);
    assert_int_equal(ms, 1795255200000);
    const char *bad[] = {"",
                         "2026-11-21T10:00:00",
                         "2026-11-21T10:00:00+01:00",
                         "2026-13-21T10:00:00Z",
                         "2026-02-29T10:00:00Z",
                         "2026-11-21T24:00:00Z",
                         "2026-11-21T10:00:00.Z",
                         "2026-11-21T10:00:00ZZ",
                         "-5",
                         "99999999999999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ms = 7;
        assert_int_equal(gw_json_audit_time_parse(bad[i], &ms), ERR_INVAL);
        assert_int_equal(ms, 7);
    }
    char t[GW_AUDIT_TIME_LEN];
    gw_json_audit_time_format(1795255200123, t);
    assert_string_equal(t, "2026-11-21T10:00:00.123Z");
    gw_json_audit_time_format(-1, t);
    assert_string_equal(t, "1970-01-01T00:00:00.000Z");
}

static void
test_json_escape(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 4096);
    assert_int_equal(gw_json_audit_str_append(&b,
                                              "a\"b\\c\n\x01\x7f caf\xc3\xa9 \xe2\x82\xac "
                                              "\xf0\x9f\x98\x80 \xc0\xaf \xed\xa0\x80 \xe2\x82"),
                     0);
    assert_string_equal(buf_cstr(&b), "\"a\\\"b\\\\c\\u000a\\u0001\\u007f caf\xc3\xa9 \xe2\x82\xac "
                                      "\xf0\x9f\x98\x80 \\ufffd\\ufffd \\ufffd\\ufffd\\ufffd "
                                      "\\ufffd\\ufffd\"");
    buf_reset(&b);
    assert_int_equal(gw_json_audit_str_append(&b, NULL), 0);
    assert_string_equal(buf_cstr(&b), "\"\"");
    buf_reset(&b);
    struct store_audit_rec r = {.time_ms = 0, .seq = 3, .kind = STORE_AUDIT_NOT_GRANTED};
    assert_int_equal(gw_json_audit_rec_append(&b, &r), 0);
    assert_non_null(strstr(buf_cstr(&b), "\"token\":null,\"current_token\":null"));
    assert_non_null(strstr(buf_cstr(&b), "\"kind\":\"not_granted\""));
    buf_cleanup(&b);
    buf_init(&b, 8);
    assert_int_equal(gw_json_audit_rec_append(&b, &r), ERR_TOOBIG);
    buf_cleanup(&b);
}

int
main(void)
{
    log_threshold = LOG_WARN;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test(test_time_parse_format),
        cmocka_unit_test(test_json_escape),
    };
    return cmocka_run_group_tests_name("cmd_audit", tests, NULL, NULL);
}
