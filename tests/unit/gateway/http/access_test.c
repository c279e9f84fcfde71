/*
 * Unit tests for gateway/http/access.c: the access-log line (every key, in
 * order, valid JSON whatever the request held) and its sink (lines written in
 * batches by the writer thread, never waited for, reopened after a rename).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/jsonstr.h"
#include "gateway/base/metrics.h"
#include "gateway/http/access.h"
#include "gateway/http/internal.h"
#include "tests/unit/testlib.h"

static const char *const keys[] = {
    "time",     "request_id", "client",      "principal",       "method",      "operation",
    "bucket",   "key",        "lock",        "token",           "status",      "error_code",
    "bytes_in", "bytes_out",  "duration_ms", "upstream_status", "upstream_ms", "trace_id",
};

static void
test_line_keys_and_values(void **state)
{
    (void)state;
    struct gw_access a;
    gw_access_init(&a, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", 1000000000u);
    a.principal = strdup("worker");
    a.operation = "PutObject"; /* static, as the classifier's */
    a.bucket = strdup("data");
    a.key = strdup("we\"ird\n\x01key\xff");
    a.lock = strdup("orders");
    a.token = 41;
    a.upstream_status = 200;
    a.upstream_ms_x1000 = 1500;
    (void)snprintf(a.error_code, sizeof(a.error_code), "%s", "");
    struct buf out;
    buf_init(&out, GW_ACCESS_LINE_MAX);
    assert_int_equal(gw_access_format(&out, &a, "0123456789abcdef", "127.0.0.1:5", "PUT", 200, 10,
                                      0, a.start_ns + 2345000),
                     0);
    assert_true(out.len > 0 && out.data[out.len - 1] == '\n');
    assert_null(memchr(out.data, '\n', out.len - 1)); /* one line */
    json_error_t err;
    json_t *o = json_loads(out.data, 0, &err);
    assert_non_null(o);
    /* exactly these keys, in this order */
    assert_int_equal(json_object_size(o), sizeof(keys) / sizeof(keys[0]));
    const char *prev = out.data;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        char q[40];
        (void)snprintf(q, sizeof(q), "\"%s\":", keys[i]);
        const char *at = strstr(out.data, q);
        assert_non_null(at);
        assert_true(at >= prev);
        prev = at;
    }
    assert_string_equal(json_string_value(json_object_get(o, "key")),
                        "we\"ird\n\x01key\xef\xbf\xbd");
    assert_int_equal(json_integer_value(json_object_get(o, "token")), 41);
    assert_true(json_is_null(json_object_get(o, "error_code")));
    assert_float_equal(json_real_value(json_object_get(o, "duration_ms")), 2.345, 1e-9);
    assert_float_equal(json_real_value(json_object_get(o, "upstream_ms")), 1.5, 1e-9);
    assert_string_equal(json_string_value(json_object_get(o, "trace_id")),
                        "4bf92f3577b34da6a3ce929d0e0e4736");
    json_decref(o);
    gw_access_cleanup(&a);

    /* unknowns are null, never "" */
    gw_access_init(&a, NULL, 1000000000u);
    assert_int_equal(gw_access_format(&out, &a, "x", "c", NULL, 499, 0, 0, a.start_ns), 0);
    o = json_loads(out.data, 0, &err);
    assert_non_null(o);
    assert_true(json_is_null(json_object_get(o, "method")));
    assert_true(json_is_null(json_object_get(o, "token")));
    assert_true(json_is_null(json_object_get(o, "upstream_status")));
    assert_true(json_is_null(json_object_get(o, "trace_id")));
    json_decref(o);
    buf_cleanup(&out);
}

static void
test_traceparent_counted(void **state)
{
    (void)state;
    uint64_t before = gw_metrics.traceparent_invalid_total;
    struct gw_access a;
    gw_access_init(&a, "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", 1000000000u);
    assert_string_equal(a.trace_id, "");
    assert_int_equal(gw_metrics.traceparent_invalid_total, before + 1);
    gw_access_init(&a, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", 1000000000u);
    assert_int_equal(gw_metrics.traceparent_invalid_total, before + 1);
    gw_access_init(&a, NULL, 1000000000u); /* no header: nothing counted */
    assert_int_equal(gw_metrics.traceparent_invalid_total, before + 1);
}

/* ---- the line against printf's: the formatting before the hand-written digits ---- */

/* ref_*: the line as gw_access_format wrote it with buf_printf, kept here as
 * the oracle: any difference in a digit, a padding or an escape fails. */
static void
ref_time(struct buf *out, int64_t ms)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    (void)gmtime_r(&s, &tm);
    assert_int_equal(buf_printf(out, "\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"", tm.tm_year + 1900,
                                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                                (int)(ms % 1000)),
                     0);
}

static void
ref_str(struct buf *out, const char *name, const char *v)
{
    assert_int_equal(buf_printf(out, ",\"%s\":", name), 0);
    assert_int_equal(jsonstr_append_cstr(out, v), 0);
}

static void
ref_num(struct buf *out, const char *name, bool have, uint64_t v)
{
    int rc = have ? buf_printf(out, ",\"%s\":%llu", name, (unsigned long long)v)
                  : buf_printf(out, ",\"%s\":null", name);
    assert_int_equal(rc, 0);
}

static void
ref_ms(struct buf *out, const char *name, bool have, uint64_t us)
{
    int rc = have ? buf_printf(out, ",\"%s\":%llu.%03u", name, (unsigned long long)(us / 1000),
                               (unsigned)(us % 1000))
                  : buf_printf(out, ",\"%s\":null", name);
    assert_int_equal(rc, 0);
}

static void
ref_format(struct buf *out, const struct gw_access *a, const char *request_id, const char *client,
           const char *method, int status, uint64_t bytes_in, uint64_t bytes_out, uint64_t end_ns)
{
    buf_reset(out);
    uint64_t dur_us = end_ns > a->start_ns ? (end_ns - a->start_ns) / 1000u : 0;
    assert_int_equal(buf_append_str(out, "{\"time\":"), 0);
    ref_time(out, a->start_wall_ms);
    ref_str(out, "request_id", request_id);
    ref_str(out, "client", client);
    ref_str(out, "principal", a->principal);
    ref_str(out, "method", method);
    ref_str(out, "operation", a->operation);
    ref_str(out, "bucket", a->bucket);
    ref_str(out, "key", a->key);
    ref_str(out, "lock", a->lock);
    ref_num(out, "token", a->token != 0, a->token);
    ref_num(out, "status", true, (uint64_t)status);
    ref_str(out, "error_code", a->error_code[0] != '\0' ? a->error_code : NULL);
    ref_num(out, "bytes_in", true, bytes_in);
    ref_num(out, "bytes_out", true, bytes_out);
    ref_ms(out, "duration_ms", true, dur_us);
    ref_num(out, "upstream_status", a->upstream_status != 0, (uint64_t)a->upstream_status);
    ref_ms(out, "upstream_ms", a->upstream_ms_x1000 >= 0, (uint64_t)a->upstream_ms_x1000);
    ref_str(out, "trace_id", a->trace_id[0] != '\0' ? a->trace_id : NULL);
    assert_int_equal(buf_append_str(out, "}\n"), 0);
}

static void
test_line_same_as_printf(void **state)
{
    (void)state;
    /* wall times: the epoch, each digit's carry, a second crossed and come
     * back to (the per-second cache), leap days, the year 9999's last ms, one
     * past it (five-digit year), and before 1970 */
    static const int64_t walls[] = {
        0,
        1,
        9,
        10,
        99,
        100,
        999,
        1000,
        1001,
        59999,
        60000,
        3599999,
        3600000,
        86399999,
        86400000,
        951782400000 /* 2000-02-29 */,
        1795256130123,
        1795256130999,
        1795256131000,
        1795256130500,
        253402300799999 /* 9999-12-31T23:59:59.999 */,
        253402300800000,
        -1,
        -999,
        -1000,
        -1001,
        -86400001,
    };
    static const uint64_t nums[] = {0,
                                    1,
                                    9,
                                    10,
                                    99,
                                    100,
                                    12345,
                                    4294967295u,
                                    4294967296u,
                                    9999999999999999999u,
                                    10000000000000000000u,
                                    UINT64_MAX};
    static const int64_t ups[] = {-1, 0, 1, 999, 1000, 1001, 99999, 123456789, INT64_MAX};
    static const int statuses[] = {0, 1, 200, 499, 999, 65535, -1, INT32_MAX, INT32_MIN};
    /* strings: null, empty, plain, every escape, valid and invalid UTF-8,
     * and plain ones of 255, 256 and 257 bytes and 1,500 (copied, or escaped
     * by common/jsonstr.c, on either side of the line's own cut-off) */
    static char p255[256], p256[257], p257[258], p1500[1501];
    memset(p255, 'a', 255);
    memset(p256, 'b', 256);
    memset(p257, 'c', 257);
    memset(p1500, 'd', 1500);
    const char *const strs[] = {
        NULL,
        "",
        "plain",
        "q\"uo\\te",
        "ctl\x01\x1f\x7f\n\r\t",
        "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
        "bad\xff\xc0\xaf\xed\xa0\x80utf8",
        "</script>",
        p255,
        p256,
        p257,
        p1500,
        "~ !#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}",
        "only\"quote",
        "only\\backslash",
        "only\x7f"
        "del",
        "only\x1f",
        "only\x80",
    };
    size_t nw = sizeof(walls) / sizeof(walls[0]), nn = sizeof(nums) / sizeof(nums[0]);
    size_t nu = sizeof(ups) / sizeof(ups[0]), ns = sizeof(strs) / sizeof(strs[0]);
    size_t nst = sizeof(statuses) / sizeof(statuses[0]);
    struct buf got, want;
    buf_init(&got, GW_ACCESS_LINE_MAX);
    buf_init(&want, GW_ACCESS_LINE_MAX);
    size_t lines = 0;
    for (size_t i = 0; i < 600; i++) {
        struct gw_access a;
        gw_access_init(
            &a, i % 3 == 0 ? "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" : NULL,
            i % 5 == 0 ? 0 : 1000000000u + i);
        a.start_wall_ms = walls[i % nw];
        a.principal = (char *)strs[i % ns];
        a.operation = strs[(i + 1) % ns];
        a.bucket = (char *)strs[(i + 2) % ns];
        a.key = (char *)strs[(i + 3) % ns];
        a.lock = (char *)strs[(i + 4) % ns];
        a.token = nums[i % nn];
        a.upstream_status = statuses[(i + 1) % nst];
        a.upstream_ms_x1000 = ups[i % nu];
        if (i % 4 == 1) {
            (void)snprintf(a.error_code, sizeof(a.error_code), "%s",
                           strs[(i + 5) % ns] != NULL ? strs[(i + 5) % ns] : "");
        }
        /* durations: none (end before start), zero, under 1 µs, and every size */
        uint64_t end = i % 7 == 0   ? a.start_ns - (a.start_ns > 0 ? 1 : 0)
                       : i % 7 == 1 ? a.start_ns
                       : i % 7 == 2 ? a.start_ns + 999
                                    : a.start_ns + nums[i % nn] / (i % 7 == 3 ? 1 : 1000);
        if (end < a.start_ns && i % 7 != 0) {
            end = UINT64_MAX; /* a start + duration past 2^64: the longest */
        }
        const char *method = strs[(i + 6) % ns];
        int st = statuses[i % nst];
        uint64_t in = nums[(i + 3) % nn], out = nums[(i + 7) % nn];
        ref_format(&want, &a, strs[(i + 2) % ns], strs[(i + 1) % ns], method, st, in, out, end);
        assert_int_equal(gw_access_format(&got, &a, strs[(i + 2) % ns], strs[(i + 1) % ns], method,
                                          st, in, out, end),
                         0);
        if (got.len != want.len || memcmp(got.data, want.data, got.len) != 0) {
            print_error("line %zu:\n got  %s want %s", i, got.data, want.data);
            fail();
        }
        lines++;
    }
    assert_int_equal(lines, 600);
    buf_cleanup(&got);
    buf_cleanup(&want);
}

static char *dir; /* the group's temporary directory, removed by teardown */

static int
setup(void **state)
{
    (void)state;
    dir = tl_dir_new("access");
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    gw_access_close();
    tl_dir_free(dir);
    dir = NULL;
    return 0;
}

static off_t
size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

static void
sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    (void)nanosleep(&ts, NULL);
}

/* Wait up to 2 s for path to hold want bytes. */
static bool
wait_size(const char *path, off_t want)
{
    for (int i = 0; i < 200; i++) {
        if (size_of(path) == want) {
            return true;
        }
        sleep_ms(10);
    }
    return false;
}

static void
test_batched_not_synchronous(void **state)
{
    (void)state;
    char path[128], err[256];
    (void)snprintf(path, sizeof(path), "%s/batch.log", dir);
    assert_int_equal(gw_access_open(path, err, sizeof(err)), 0);
    sleep_ms(20); /* the writer is in its wait */
    static const char line[] = "{\"a\":1}\n";
    assert_int_equal(gw_access_append(line, sizeof(line) - 1), 0);
    /* not written by the caller: it arrives with the writer's next batch */
    assert_int_equal(size_of(path), 0);
    assert_true(wait_size(path, (off_t)sizeof(line) - 1));
    /* past GW_ACCESS_FLUSH_BYTES the writer is woken at once */
    char big[1024];
    memset(big, 'x', sizeof(big));
    big[sizeof(big) - 1] = '\n';
    for (size_t i = 0; i < GW_ACCESS_FLUSH_BYTES / sizeof(big) + 1; i++) {
        assert_int_equal(gw_access_append(big, sizeof(big)), 0);
    }
    gw_access_close(); /* writes what is queued */
    assert_int_equal(
        size_of(path),
        (off_t)(sizeof(line) - 1 + sizeof(big) * (GW_ACCESS_FLUSH_BYTES / sizeof(big) + 1)));
    assert_false(gw_access_enabled());
}

static void
test_reopen_after_rename(void **state)
{
    (void)state;
    char path[128], old[128], err[256];
    (void)snprintf(path, sizeof(path), "%s/rot.log", dir);
    (void)snprintf(old, sizeof(old), "%s/rot.log.1", dir);
    assert_int_equal(gw_access_open(path, err, sizeof(err)), 0);
    assert_int_equal(gw_access_append("one\n", 4), 0);
    assert_int_equal(rename(path, old), 0);                      /* logrotate */
    assert_int_equal(gw_access_open(path, err, sizeof(err)), 0); /* SIGHUP */
    assert_int_equal(gw_access_append("two\n", 4), 0);
    gw_access_close();
    assert_int_equal(size_of(old), 4); /* queued before the reopen: the old file */
    assert_int_equal(size_of(path), 4);
    /* "off" accepts nothing; a path that cannot be opened fails and keeps the sink */
    assert_int_equal(gw_access_open("off", err, sizeof(err)), 0);
    assert_false(gw_access_enabled());
    assert_int_equal(gw_access_open("/nonexistent/dir/x.log", err, sizeof(err)), ERR_IO);
    assert_non_null(strstr(err, "/nonexistent/dir/x.log"));
    gw_access_close();
}

/* true when p lies in a's own names buffer (no heap copy) */
static bool
in_names(const struct gw_access *a, const char *p)
{
    return p != NULL && (uintptr_t)p - (uintptr_t)a->names < sizeof(a->names);
}

/* The names as the handlers note them (gw_access_note_*: copied into the
 * request's names buffer while it has room, then to the heap; a second note
 * replaces, NULL or "" keeps) give the line printf's formatting gives the
 * strings themselves. */
static void
test_notes_same_as_printf(void **state)
{
    (void)state;
    char path[128], err[256];
    (void)snprintf(path, sizeof(path), "%s/notes.log", dir);
    assert_int_equal(gw_access_open(path, err, sizeof(err)), 0); /* notes are kept only while on */
    static char p100[101], p200[201], p255[256];
    memset(p100, 'e', 100);
    memset(p200, 'f', 200);
    memset(p255, 'g', 255);
    const char *const strs[] = {
        NULL, "",   "data",   "obj/key with spaces", "we\"ird\n\x01key\xff", "worker", p100,
        p200, p255, "orders", "\xc3\xa9t\xc3\xa9",
    };
    size_t ns = sizeof(strs) / sizeof(strs[0]);
    struct buf got, want;
    buf_init(&got, GW_ACCESS_LINE_MAX);
    buf_init(&want, GW_ACCESS_LINE_MAX);
    size_t inline_lines = 0, heap_lines = 0;
    for (size_t i = 0; i < ns * ns * 3; i++) {
        struct gw_req *req = calloc(1, sizeof(*req));
        assert_non_null(req);
        memset(req->access.names, 'Z', sizeof(req->access.names)); /* not cleared by init */
        gw_access_init(&req->access, NULL, 1000000000u);
        req->access.start_wall_ms = 1795256130123;
        const char *bucket = strs[i % ns], *key = strs[(i / ns) % ns];
        const char *principal = strs[(i + 3) % ns], *lock1 = strs[(i + 5) % ns];
        const char *lock2 = strs[(i / ns + i) % ns];
        gw_access_note_s3(req, "PutObject", bucket, key);
        gw_access_note_principal(req, principal);
        gw_access_note_fence(req, lock1, 7);
        if (i % 3 != 0) {
            gw_access_note_fence(req, lock2, 9); /* a second note replaces the first */
        }
        struct gw_access exp = req->access; /* what the notes should hold */
        exp.bucket = bucket != NULL && bucket[0] != '\0' ? (char *)bucket : NULL;
        exp.key = key != NULL && key[0] != '\0' ? (char *)key : NULL;
        exp.principal = principal != NULL && principal[0] != '\0' ? (char *)principal : NULL;
        exp.lock = lock1 != NULL && lock1[0] != '\0' ? (char *)lock1 : NULL;
        if (i % 3 != 0 && lock2 != NULL && lock2[0] != '\0') {
            exp.lock = (char *)lock2;
        }
        ref_format(&want, &exp, "0123456789abcdef", "127.0.0.1:5", "PUT", 200, 1, 2,
                   req->access.start_ns + 1000);
        assert_int_equal(gw_access_format(&got, &req->access, "0123456789abcdef", "127.0.0.1:5",
                                          "PUT", 200, 1, 2, req->access.start_ns + 1000),
                         0);
        if (got.len != want.len || memcmp(got.data, want.data, got.len) != 0) {
            print_error("notes %zu:\n got  %s want %s", i, got.data, want.data);
            fail();
        }
        /* short names stay in the request: no malloc per name */
        if (exp.bucket != NULL && strlen(exp.bucket) < 100 && exp.key != NULL &&
            strlen(exp.key) < 100) {
            assert_true(in_names(&req->access, req->access.bucket));
            assert_true(in_names(&req->access, req->access.key));
            inline_lines++;
        }
        if ((exp.key != NULL && !in_names(&req->access, req->access.key)) ||
            (exp.lock != NULL && !in_names(&req->access, req->access.lock))) {
            heap_lines++;
        }
        gw_access_cleanup(&req->access); /* frees the heap copies only */
        free(req);
    }
    assert_true(inline_lines > 0);
    assert_true(heap_lines > 0); /* both sides of the buffer's end were tried */
    buf_cleanup(&got);
    buf_cleanup(&want);
    gw_access_close();
}

static int drain_fd = -1;

/* pthread_create: read the FIFO until its writer closes it. */
static void *
drain(void *arg)
{
    (void)arg;
    int fl = fcntl(drain_fd, F_GETFL);
    (void)fcntl(drain_fd, F_SETFL, fl & ~O_NONBLOCK);
    char b[65536];
    while (read(drain_fd, b, sizeof(b)) > 0) {
    }
    return NULL;
}

static void
test_stuck_sink_never_blocks(void **state)
{
    (void)state;
    char path[128], err[256];
    (void)snprintf(path, sizeof(path), "%s/stuck.fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    drain_fd = open(path, O_RDONLY | O_NONBLOCK); /* a reader that does not read yet */
    assert_true(drain_fd >= 0);
    assert_int_equal(gw_access_open(path, err, sizeof(err)), 0);
    (void)alarm(20); /* a blocking append would hang here: fail instead */
    uint64_t dropped = gw_metrics.access_log_dropped_total;
    char line[4096];
    memset(line, 'y', sizeof(line));
    line[sizeof(line) - 1] = '\n';
    struct timespec t0, t1;
    (void)clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t n = 2 * GW_ACCESS_MAX_PENDING / sizeof(line) + 64;
    size_t refused = 0;
    for (size_t i = 0; i < n; i++) {
        if (gw_access_append(line, sizeof(line)) != 0) {
            refused++;
        }
    }
    (void)clock_gettime(CLOCK_MONOTONIC, &t1);
    (void)alarm(0);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(s < 5.0);
    assert_true(refused > 0); /* the sink is stuck: lines beyond the bound are dropped... */
    assert_int_equal(gw_metrics.access_log_dropped_total, dropped + refused); /* ...and counted */
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, drain, NULL), 0);
    gw_access_close();
    assert_int_equal(pthread_join(th, NULL), 0);
    (void)close(drain_fd);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_keys_and_values), cmocka_unit_test(test_traceparent_counted),
        cmocka_unit_test(test_line_same_as_printf),  cmocka_unit_test(test_batched_not_synchronous),
        cmocka_unit_test(test_reopen_after_rename),  cmocka_unit_test(test_stuck_sink_never_blocks),
        cmocka_unit_test(test_notes_same_as_printf),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
