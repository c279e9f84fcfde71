/* tests/unit/gateway/cli/audit_test.c: gateway/cli/audit.c and
 * gateway/api/json_audit.c (`fencegate audit`), kept beside the store tests it
 * depends on; the merge itself also has cmd_audit_merge_test.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <fcntl.h>

#include "gateway/api/json_audit.h"
#include "gateway/cli/audit.h"
#include "gateway/cli/audit_merge.h"
#include "tests/unit/store/testutil.h"

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
    char *dir = tl_dir_new("store");
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
                                    .user_agent = "aws-cli/2",
                                    .trace_id = i == 2 ? "4bf92f3577b34da6a3ce929d0e0e4736" : NULL};
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
    tl_dir_free(*state);
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
    /* the trace id, in its column, on its record's line only; "-" on the others */
    assert_non_null(strstr(r->out, " TRACE-ID "));
    const char *traced = strstr(r->out, "4bf92f3577b34da6a3ce929d0e0e4736 data/orders/1 \n");
    assert_non_null(traced);
    assert_null(strstr(traced + 1, "4bf92f3577b34da6a3ce929d0e0e4736"));
    assert_non_null(
        strstr(r->out, " req              -                                data/orders/1 \n"));
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

/* --request-id finds a refusal's record (a repeat's "<id>.<n>" its run's,
 * with COUNT), --principal lists one principal's or origin's records. */
static void
test_request_id_and_principal(void **state)
{
    struct store_opts o;
    store_opts_init(&o);
    o.data_dir = *state;
    o.audit_coalesce_ms = 60000;
    struct store *s = tu_open_opts(&o);
    static const char *const who[] = {"alice", "alice", "alice", "bob", ""};
    static const char *const ids[] = {"run0", "x", "y", "bob1", "anon1"};
    for (int i = 0; i < 5; i++) {
        struct store_audit_rec rec = {.time_ms = 1795256200000 + i,
                                      .kind = STORE_AUDIT_STALE,
                                      .token = 3,
                                      .lock = "jobs",
                                      .principal = who[i],
                                      .client = "192.0.2.9:1234",
                                      .key = "k",
                                      .request_id = ids[i]};
        assert_int_equal(store_audit_append_sync(s, &rec, NULL), 0);
    }
    store_close(s);
    struct run *r = calloc(1, sizeof(*r));
    const char *a[] = {"--data-dir", *state, "--request-id", "run0.3", "--json", NULL};
    run_cmd(r, a);
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "\"request_id\":\"run0\""));
    assert_non_null(strstr(r->out, "\"count\":3,"));
    assert_null(strstr(r->out, "bob1"));
    const char *b[] = {"--data-dir", *state, "--request-id", "run0.4", NULL};
    run_cmd(r, b);
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "# no matching records"));
    const char *c[] = {"--data-dir", *state, "--request-id", "bob1", NULL};
    run_cmd(r, c);
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, " COUNT "));
    assert_non_null(strstr(r->out, "bob1"));
    const char *d[] = {"--data-dir", *state, "--principal", "@192.0.2.9", "--json", NULL};
    run_cmd(r, d);
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "anon1"));
    assert_null(strstr(r->out, "bob1"));
    assert_null(strstr(r->out, "run0"));
    const char *e[] = {"--data-dir", *state, "--principal", "alice", "--lock", "jobs", NULL};
    run_cmd(r, e);
    assert_int_equal(r->status, 2);
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

/* ---- several data dirs ---- */

#define T0 1795256130000 /* 2026-11-21T10:15:30.000Z */

/* Two stores of two gateways side by side. */
struct two {
    char *a; /* data dir of gateway A */
    char *b; /* data dir of gateway B */
};

/* One record of the interleaved fixture; the principal names it. */
struct fix {
    int64_t dt;            /* ms after T0 */
    const char *lock;      /* its lock */
    const char *principal; /* "w-<store><n>": '-' never occurs in a mkdtemp name */
};

static void
append_all(const char *dir, const struct fix *f, size_t n)
{
    struct store *s = tu_open(dir, false);
    for (size_t i = 0; i < n; i++) {
        struct store_audit_rec r = {.time_ms = T0 + f[i].dt,
                                    .kind = STORE_AUDIT_STALE,
                                    .token = i + 1,
                                    .current = 9,
                                    .lock = f[i].lock,
                                    .principal = f[i].principal,
                                    .method = "PUT",
                                    .bucket = "data",
                                    .key = "k",
                                    .operation = "PutObject"};
        assert_int_equal(store_audit_append_sync(s, &r, NULL), 0);
    }
    store_close(s);
}

/* Merged order: w-a1 w-b1 w-a2 w-b2 w-b3 w-a3 w-b4 w-a4.  w-a2 and w-b2 share a
 * millisecond, and w-b2 is appended first, so its seq (1) is lower than w-a2's
 * (2): the data dir order, not the seq, must put w-a2 first. */
static int
setup_two(void **state)
{
    struct two *t = calloc(1, sizeof(*t));
    t->a = tl_dir_new("store");
    t->b = tl_dir_new("store");
    const struct fix a[] = {{0, "orders", "w-a1"},
                            {1000, "billing", "w-a2"},
                            {2000, "orders", "w-a3"},
                            {3000, "billing", "w-a4"}};
    const struct fix b[] = {{1000, "orders", "w-b2"},
                            {500, "billing", "w-b1"},
                            {1500, "billing", "w-b3"},
                            {2500, "orders", "w-b4"}};
    append_all(t->a, a, 4);
    append_all(t->b, b, 4);
    *state = t;
    return 0;
}

static int
teardown_two(void **state)
{
    struct two *t = *state;
    tl_dir_free(t->a);
    tl_dir_free(t->b);
    free(t);
    return 0;
}

/* The principals named in out, in order of appearance, space-separated. */
static void
principals(const char *out, char *dst, size_t cap)
{
    size_t n = 0;
    dst[0] = '\0';
    for (const char *p = strstr(out, "w-"); p != NULL; p = strstr(p + 2, "w-")) {
        int w = snprintf(dst + n, cap - n, "%s%.4s", n > 0 ? " " : "", p);
        assert_true(w > 0 && (size_t)w < cap - n);
        n += (size_t)w;
    }
}

static void
test_merged_table(void **state)
{
    struct two *t = *state;
    struct run *r = calloc(1, sizeof(*r));
    const char *a[] = {"--data-dir", t->a, "--data-dir", t->b, NULL};
    run_cmd(r, a);
    assert_int_equal(r->status, 0);
    assert_true(strncmp(r->out, "TIME                     SOURCE ", 32) == 0);
    char got[256];
    principals(r->out, got, sizeof(got));
    assert_string_equal(got, "w-a1 w-b1 w-a2 w-b2 w-b3 w-a3 w-b4 w-a4");
    /* the source column names each record's data dir */
    char line[256];
    (void)snprintf(line, sizeof(line), "\n2026-11-21T10:15:31.000Z %s stale ", t->a);
    char *at = strstr(r->out, line);
    assert_non_null(at);
    assert_non_null(strstr(at + 1, "\n2026-11-21T10:15:31.000Z "));
    (void)snprintf(line, sizeof(line), "\n2026-11-21T10:15:31.000Z %s stale ", t->b);
    assert_non_null(strstr(at + 1, line)); /* after A's record of the same ms */
    (void)snprintf(line, sizeof(line), "\n2026-11-21T10:15:30.500Z %s stale ", t->b);
    assert_non_null(strstr(r->out, line));
    assert_null(strstr(r->out, "# more"));

    /* the given order of data dirs decides ties */
    const char *b[] = {"--data-dir", t->b, "--data-dir", t->a, NULL};
    run_cmd(r, b);
    assert_int_equal(r->status, 0);
    principals(r->out, got, sizeof(got));
    assert_string_equal(got, "w-a1 w-b1 w-b2 w-a2 w-b3 w-a3 w-b4 w-a4");
    free(r);
}

static void
test_merged_limit(void **state)
{
    struct two *t = *state;
    struct run *r = calloc(1, sizeof(*r));
    /* the limit bounds the merged listing, not each store */
    const char *a[] = {"--data-dir", t->a, "--data-dir", t->b, "--limit", "3", NULL};
    run_cmd(r, a);
    assert_int_equal(r->status, 0);
    char got[256];
    principals(r->out, got, sizeof(got));
    assert_string_equal(got, "w-a1 w-b1 w-a2");
    /* page on with the cursors it prints: every record once, in order */
    char all[512] = "";
    char cursor[GW_AUDIT_MERGE_CURSOR_LEN] = "";
    for (int page = 0; page < 10; page++) {
        const char *p[] = {"--data-dir", t->a,      "--data-dir", t->b,
                           "--limit=3",  "--after", cursor,       NULL};
        if (page == 0) {
            p[5] = NULL;
        }
        run_cmd(r, p);
        assert_int_equal(r->status, 0);
        principals(r->out, got, sizeof(got));
        size_t n = strlen(all);
        int w = snprintf(all + n, sizeof(all) - n, "%s%s", n > 0 ? " " : "", got);
        assert_true(w >= 0 && (size_t)w < sizeof(all) - n);
        char *more = strstr(r->out, "# more records: --after ");
        if (more == NULL) {
            break;
        }
        (void)snprintf(cursor, sizeof(cursor), "%s", more + strlen("# more records: --after "));
        cursor[strcspn(cursor, "\n")] = '\0';
    }
    assert_string_equal(all, "w-a1 w-b1 w-a2 w-b2 w-b3 w-a3 w-b4 w-a4");
    /* a page that ends in the second store, at a millisecond the first shares */
    const char *b[] = {"--data-dir",        t->a, "--data-dir", t->b, "--after",
                       "1795256131000.1.2", NULL};
    run_cmd(r, b);
    assert_int_equal(r->status, 0);
    principals(r->out, got, sizeof(got));
    assert_string_equal(got, "w-b3 w-a3 w-b4 w-a4");
    /* and one that ends in the first: the second's record of that ms follows */
    const char *c[] = {"--data-dir",        t->a, "--data-dir", t->b, "--after",
                       "1795256131000.2.1", NULL};
    run_cmd(r, c);
    assert_int_equal(r->status, 0);
    principals(r->out, got, sizeof(got));
    assert_string_equal(got, "w-b2 w-b3 w-a3 w-b4 w-a4");
    /* exactly at the end: no cursor */
    const char *e[] = {"--data-dir", t->a, "--data-dir", t->b, "--limit", "8", NULL};
    run_cmd(r, e);
    assert_null(strstr(r->out, "# more"));
    const char *f[] = {"--data-dir", t->a, "--data-dir", t->b, "--limit", "7", NULL};
    run_cmd(r, f);
    assert_non_null(strstr(r->out, "# more records: --after 1795256132500.4.2\n"));
    free(r);
}

static void
test_merged_filters(void **state)
{
    struct two *t = *state;
    struct run *r = calloc(1, sizeof(*r));
    const char *a[] = {"--data-dir", t->a,      "--data-dir",    t->b,      "--lock",
                       "billing",    "--since", "1795256130500", "--until", "2026-11-21T10:15:33Z",
                       NULL};
    run_cmd(r, a);
    assert_int_equal(r->status, 0);
    char got[256];
    principals(r->out, got, sizeof(got));
    assert_string_equal(got, "w-b1 w-a2 w-b3"); /* w-a4 is at --until (exclusive) */
    const char *b[] = {"--data-dir", t->a, "--data-dir", t->b, "--lock", "nobody", NULL};
    run_cmd(r, b);
    assert_int_equal(r->status, 0);
    assert_non_null(strstr(r->out, "# no matching records\n"));
    free(r);
}

static void
test_merged_json(void **state)
{
    struct two *t = *state;
    struct run *r = calloc(1, sizeof(*r));
    const char *a[] = {"--data-dir", t->a, "--data-dir", t->b, "--json", "--limit", "4", NULL};
    run_cmd(r, a);
    assert_int_equal(r->status, 0);
    char got[256];
    principals(r->out, got, sizeof(got));
    assert_string_equal(got, "w-a1 w-b1 w-a2 w-b2");
    char want[512];
    (void)snprintf(want, sizeof(want),
                   "{\"records\":[{\"source\":\"%s\",\"time\":\"2026-11-21T10:15:30.000Z\","
                   "\"time_ms\":1795256130000,\"seq\":1,",
                   t->a);
    assert_true(strncmp(r->out, want, strlen(want)) == 0);
    (void)snprintf(want, sizeof(want),
                   "},{\"source\":\"%s\",\"time\":\"2026-11-21T10:15:30.500Z\","
                   "\"time_ms\":1795256130500,\"seq\":2,",
                   t->b);
    assert_non_null(strstr(r->out, want));
    assert_non_null(strstr(r->out, "],\"next\":\"1795256131000.1.2\"}\n"));
    /* one "source" per record, in every record */
    size_t n = 0;
    for (const char *p = strstr(r->out, "{\"source\":\""); p != NULL;
         p = strstr(p + 1, "{\"source\":\"")) {
        n++;
    }
    assert_int_equal(n, 4);
    free(r);
}

static void
test_merged_errors(void **state)
{
    struct two *t = *state;
    struct run *r = calloc(1, sizeof(*r));
    /* a data dir that cannot be opened fails the run, naming it */
    const char *missing[] = {"--data-dir", t->a, "--data-dir", "/tmp/definitely/not/here", NULL};
    run_cmd(r, missing);
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "/tmp/definitely/not/here"));
    assert_non_null(strstr(r->err, "no fencegate store"));
    assert_string_equal(r->out, ""); /* no partial listing */
    const char *first[] = {"--data-dir", "/tmp/definitely/not/here", "--data-dir", t->a, NULL};
    run_cmd(r, first);
    assert_int_equal(r->status, 1);
    assert_non_null(strstr(r->err, "/tmp/definitely/not/here"));
    /* the same store twice, by another path */
    char again[4096];
    (void)snprintf(again, sizeof(again), "%s/.", t->a);
    const char *twice[] = {"--data-dir", t->a, "--data-dir", again, NULL};
    run_cmd(r, twice);
    assert_int_equal(r->status, 2);
    assert_non_null(strstr(r->err, "are the same"));
    /* a one-store cursor means nothing across stores, and the reverse */
    const char *one[] = {"--data-dir",      t->a, "--data-dir", t->b, "--after",
                         "1795256131000.2", NULL};
    run_cmd(r, one);
    assert_int_equal(r->status, 2);
    const char *merged[] = {"--data-dir", t->a, "--after", "1795256131000.2.1", NULL};
    run_cmd(r, merged);
    assert_int_equal(r->status, 2);
    const char *range[] = {"--data-dir",        t->a, "--data-dir", t->b, "--after",
                           "1795256131000.2.3", NULL};
    run_cmd(r, range);
    assert_int_equal(r->status, 2);
    free(r);
}

int
main(void)
{
    log_threshold = LOG_WARN;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_request_id_and_principal, tu_dir_setup,
                                        tu_dir_teardown),
        cmocka_unit_test(test_time_parse_format),
        cmocka_unit_test(test_json_escape),
        cmocka_unit_test_setup_teardown(test_merged_table, setup_two, teardown_two),
        cmocka_unit_test_setup_teardown(test_merged_limit, setup_two, teardown_two),
        cmocka_unit_test_setup_teardown(test_merged_filters, setup_two, teardown_two),
        cmocka_unit_test_setup_teardown(test_merged_json, setup_two, teardown_two),
        cmocka_unit_test_setup_teardown(test_merged_errors, setup_two, teardown_two),
    };
    return cmocka_run_group_tests_name("cmd_audit", tests, NULL, NULL);
}
