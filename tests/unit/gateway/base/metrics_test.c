/*
 * tests/unit/gateway/base/metrics_test.c: the counters' pieces (metrics.c),
 * the per-lock series and their bound (metrics_lock.c) and the text
 * (metrics_render.c): histogram buckets, the closed code set, one count per
 * request, label escaping, "_other" and "_none", lease expiries counted once,
 * and an exposition that stays bounded under 10,000 invented lock names and
 * passes `promtool check metrics` when Debian's prometheus is installed;
 * loops that count into sets of their own while a scrape sums them, and
 * whose counts stay in the sum after they detach (race-free under
 * `make SAN=thread unit`).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/lockname.h"
#include "gateway/base/metrics.h"

static int
reset(void **state)
{
    (void)state;
    gw_metrics_reset();
    gw_metrics_locks_free();
    clock_pin(1000000, 1700000000000);
    return 0;
}

static int
cleanup(void **state)
{
    (void)state;
    gw_metrics_locks_free();
    return 0;
}

static const char *
op_name(unsigned op)
{
    return op == 3 ? "GetObject" : op == 4 ? "PutObject" : NULL;
}

/* The exposition as a NUL-terminated string (caller frees). */
static char *
render(void)
{
    struct buf b;
    buf_init(&b, (size_t)64 * 1024 * 1024);
    const struct gw_metrics_live live = {.op_name = op_name, .ready = true};
    assert_int_equal(gw_metrics_render(&b, &live), 0);
    char *s = strndup(b.data, b.len);
    buf_cleanup(&b);
    assert_non_null(s);
    return s;
}

/* The value of the sample line that starts with exactly `series ` (-1: none). */
static long long
sample(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p != NULL && *p != '\0';) {
        if (strncmp(p, series, n) == 0 && p[n] == ' ') {
            return strtoll(p + n + 1, NULL, 10);
        }
        p = strchr(p, '\n');
        p = p != NULL ? p + 1 : NULL;
    }
    return -1;
}

static size_t
count_lines_with(const char *text, const char *prefix)
{
    size_t n = 0, pl = strlen(prefix);
    for (const char *p = text; p != NULL && *p != '\0';) {
        n += strncmp(p, prefix, pl) == 0;
        p = strchr(p, '\n');
        p = p != NULL ? p + 1 : NULL;
    }
    return n;
}

static void
test_histogram_buckets(void **state)
{
    (void)state;
    struct gw_histo h = {0};
    gw_histo_observe(&h, 0);
    gw_histo_observe(&h, 500000);         /* exactly 0.5 ms: le is inclusive */
    gw_histo_observe(&h, 500001);         /* just over: the 1 ms bucket */
    gw_histo_observe(&h, 60000000000ULL); /* 60 s: the last finite bucket */
    gw_histo_observe(&h, 60000000001ULL); /* beyond: +Inf */
    assert_int_equal(h.counts[0], 2);
    assert_int_equal(h.counts[1], 1);
    assert_int_equal(h.counts[GW_METRICS_BUCKETS - 1], 1);
    assert_int_equal(h.counts[GW_METRICS_BUCKETS], 1);
    assert_int_equal(h.count, 5);
    assert_true(h.sum_ns == 500000ULL + 500001ULL + 60000000000ULL + 60000000001ULL);
    assert_int_equal(gw_metrics_bucket_bound_ns(0), 500000);
    assert_true(gw_metrics_bucket_bound_ns(GW_METRICS_BUCKETS - 1) == 60000000000ULL);
}

static void
test_code_labels_are_a_closed_set(void **state)
{
    (void)state;
    assert_string_equal(gw_metrics_code_label(gw_metrics_code_slot(200)), "200");
    assert_string_equal(gw_metrics_code_label(gw_metrics_code_slot(409)), "409");
    assert_string_equal(gw_metrics_code_label(gw_metrics_code_slot(428)), "428");
    assert_string_equal(gw_metrics_code_label(gw_metrics_code_slot(418)), "4xx");
    assert_string_equal(gw_metrics_code_label(gw_metrics_code_slot(599)), "5xx");
    assert_string_equal(gw_metrics_code_label(gw_metrics_code_slot(0)), "499");
    assert_string_equal(gw_metrics_code_label(gw_metrics_code_slot(99)), "other");
    assert_string_equal(gw_metrics_code_label(gw_metrics_code_slot(1000)), "other");
    /* every status maps into the table */
    for (int s = -5; s < 1200; s++) {
        assert_non_null(gw_metrics_code_label(gw_metrics_code_slot(s)));
    }
}

static void
test_request_counted_once(void **state)
{
    (void)state;
    struct gw_metrics_req m = {0};
    gw_metrics_req_end(&m); /* never begun: nothing */
    assert_int_equal(gw_metrics_requests_of_class(4), 0);
    gw_metrics_req_begin(&m);
    gw_metrics_req_set_op(&m, 4);
    gw_metrics_req_status(&m, 409);
    gw_metrics_req_status(&m, 500); /* the first head is what the client saw */
    gw_metrics_req_end(&m);
    gw_metrics_req_end(&m);
    assert_int_equal(gw_metrics.requests_by[4][gw_metrics_code_slot(409)], 1);
    assert_int_equal(gw_metrics.request_seconds[4].count, 1);
    assert_int_equal(gw_metrics_requests_of_class(5), 0);

    struct gw_metrics_req gone = {0}; /* the client left before any head */
    gw_metrics_req_begin(&gone);
    gw_metrics_req_set_op(&gone, 9999); /* out of range: "none" */
    gw_metrics_req_end(&gone);
    assert_int_equal(gw_metrics.requests_by[GW_METRICS_OP_NONE][gw_metrics_code_slot(499)], 1);

    char *t = render();
    assert_int_equal(sample(t, "fencegate_requests_total{operation=\"PutObject\",code=\"409\"}"),
                     1);
    assert_int_equal(sample(t, "fencegate_requests_total{operation=\"none\",code=\"499\"}"), 1);
    assert_int_equal(sample(t, "fencegate_request_duration_seconds_count{operation=\"PutObject\"}"),
                     1);
    assert_int_equal(
        sample(t, "fencegate_request_duration_seconds_bucket{operation=\"PutObject\",le=\"+Inf\"}"),
        1);
    free(t);
}

static void
test_label_escaping(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 1024);
    assert_int_equal(gw_metrics_escape(&b, "a\\b\"c\nd"), 0);
    assert_int_equal(buf_append(&b, "", 1), 0);
    assert_string_equal(b.data, "a\\\\b\\\"c\\nd");
    buf_cleanup(&b);
}

static void
test_lock_bound_and_other(void **state)
{
    (void)state;
    assert_int_equal(gw_metrics_locks_init(2), 0);
    assert_int_equal(gw_metrics_lock_pin("ruled"), 0);
    assert_int_equal(gw_metrics_lock_pin("bad name"), ERR_INVAL);
    gw_metrics_fence_refusal("a", "StaleFencingToken");
    gw_metrics_fence_refusal("b", "StaleFencingToken");
    gw_metrics_fence_refusal("c", "StaleFencingToken");       /* over the bound */
    gw_metrics_fence_refusal("d", "FencingLeaseExpired");     /* likewise */
    gw_metrics_fence_refusal("ruled", "MissingFencingToken"); /* pinned: never _other */
    gw_metrics_fence_refusal("_other", "StaleFencingToken");  /* the name itself: shared */
    gw_metrics_fence_refusal(NULL, "InvalidFencingToken");
    gw_metrics_fence_refusal("no/such lock", "InvalidFencingToken");
    gw_metrics_fence_refusal("a", "SomethingNew"); /* unknown code: "other" */
    assert_int_equal(gw_metrics_fence_refusals(), 9);
    char *t = render();
    const char *F = "fencegate_fence_refusals_total";
    char s[256];
    (void)snprintf(s, sizeof(s), "%s{lock=\"a\",code=\"StaleFencingToken\"}", F);
    assert_int_equal(sample(t, s), 1);
    (void)snprintf(s, sizeof(s), "%s{lock=\"a\",code=\"other\"}", F);
    assert_int_equal(sample(t, s), 1);
    (void)snprintf(s, sizeof(s), "%s{lock=\"_other\",code=\"StaleFencingToken\"}", F);
    assert_int_equal(sample(t, s), 2);
    (void)snprintf(s, sizeof(s), "%s{lock=\"_other\",code=\"FencingLeaseExpired\"}", F);
    assert_int_equal(sample(t, s), 1);
    (void)snprintf(s, sizeof(s), "%s{lock=\"ruled\",code=\"MissingFencingToken\"}", F);
    assert_int_equal(sample(t, s), 1);
    (void)snprintf(s, sizeof(s), "%s{lock=\"_none\",code=\"InvalidFencingToken\"}", F);
    assert_int_equal(sample(t, s), 2);
    (void)snprintf(s, sizeof(s), "%s{lock=\"c\"", F);
    assert_int_equal(count_lines_with(t, s), 0);
    free(t);
    /* a rule added on reload is labelled from then on, over the bound */
    assert_int_equal(gw_metrics_lock_pin("later"), 0);
    gw_metrics_fence_refusal("later", "StaleFencingToken");
    t = render();
    assert_int_equal(
        sample(t, "fencegate_fence_refusals_total{lock=\"later\",code=\"StaleFencingToken\"}"), 1);
    free(t);
}

static void
test_lease_events_and_expiry(void **state)
{
    (void)state;
    assert_int_equal(gw_metrics_locks_init(10), 0);
    uint64_t now = clock_mono_ms();
    gw_metrics_lease("jobs", GW_LEASE_GRANT, 1, now + 5000);
    gw_metrics_lease("jobs", GW_LEASE_RENEW, 1, now + 8000);
    char *t = render();
    assert_int_equal(sample(t, "fencegate_lock_epoch{lock=\"jobs\"}"), 1);
    assert_non_null(
        strstr(t, "fencegate_lock_lease_remaining_seconds{lock=\"jobs\"} 8.000000000\n"));
    assert_int_equal(sample(t, "fencegate_lease_expiries_total{lock=\"jobs\"}"), 0);
    free(t);
    clock_pin(now + 8000, 1700000008000); /* the renewed lease runs out unreleased */
    t = render();
    assert_int_equal(sample(t, "fencegate_lease_expiries_total{lock=\"jobs\"}"), 1);
    assert_non_null(
        strstr(t, "fencegate_lock_lease_remaining_seconds{lock=\"jobs\"} 0.000000000\n"));
    free(t);
    /* the election then rewrites it expired (a takeover): the same expiry, not a second */
    gw_metrics_lease("jobs", GW_LEASE_EXPIRE, 1, 0);
    gw_metrics_lease("jobs", GW_LEASE_GRANT, 2, now + 20000);
    gw_metrics_lease("jobs", GW_LEASE_TAKEOVER, 2, now + 20000);
    gw_metrics_lease("jobs", GW_LEASE_RELEASE, 2, 0);
    clock_pin(now + 60000, 1700000060000); /* released: never an expiry */
    /* another gateway's lease, expired by this one: counted once per epoch */
    gw_metrics_lease("other-gw", GW_LEASE_EXPIRE, 7, 0);
    gw_metrics_lease("other-gw", GW_LEASE_EXPIRE, 7, 0);
    t = render();
    assert_int_equal(sample(t, "fencegate_lease_grants_total{lock=\"jobs\"}"), 2);
    assert_int_equal(sample(t, "fencegate_lease_renewals_total{lock=\"jobs\"}"), 1);
    assert_int_equal(sample(t, "fencegate_lease_releases_total{lock=\"jobs\"}"), 1);
    assert_int_equal(sample(t, "fencegate_lease_expiries_total{lock=\"jobs\"}"), 1);
    assert_int_equal(sample(t, "fencegate_lease_takeovers_total{lock=\"jobs\"}"), 1);
    assert_int_equal(sample(t, "fencegate_lock_epoch{lock=\"jobs\"}"), 2);
    assert_int_equal(sample(t, "fencegate_lease_expiries_total{lock=\"other-gw\"}"), 1);
    free(t);
    /* an epoch learned from the files (another gateway's grant) raises the gauge, never lowers it
     */
    gw_metrics_lock_epoch("jobs", 9);
    gw_metrics_lock_epoch("jobs", 4);
    t = render();
    assert_int_equal(sample(t, "fencegate_lock_epoch{lock=\"jobs\"}"), 9);
    assert_int_equal(sample(t, "fencegate_lease_grants_total{lock=\"jobs\"}"), 2);
    free(t);
}

/* 10,000 invented lock names: the exposition stays the same size once the bound is met. */
static void
test_ten_thousand_locks_stay_bounded(void **state)
{
    (void)state;
    assert_int_equal(gw_metrics_locks_init(100), 0);
    assert_int_equal(gw_metrics_lock_pin("ruled"), 0);
    char name[32];
    for (int i = 0; i < 200; i++) {
        (void)snprintf(name, sizeof(name), "inv-%d", i);
        gw_metrics_fence_refusal(name, "StaleFencingToken");
        gw_metrics_lease(name, GW_LEASE_GRANT, (uint64_t)i + 1, 0);
    }
    char *t = render();
    size_t size200 = strlen(t);
    free(t);
    for (int i = 200; i < 10000; i++) {
        (void)snprintf(name, sizeof(name), "inv-%d", i);
        gw_metrics_fence_refusal(name, "StaleFencingToken");
        gw_metrics_lease(name, GW_LEASE_GRANT, (uint64_t)i + 1, 0);
    }
    gw_metrics_fence_refusal("ruled", "StaleFencingToken");
    t = render();
    /* 100 own locks + ruled + _other + _none */
    assert_int_equal(gw_metrics_lock_series(), 103);
    assert_int_equal(count_lines_with(t, "fencegate_lease_grants_total{"), 102);
    assert_int_equal(count_lines_with(t, "fencegate_fence_refusals_total{"), 102);
    assert_int_equal(
        sample(t, "fencegate_fence_refusals_total{lock=\"_other\",code=\"StaleFencingToken\"}"),
        9900);
    assert_int_equal(sample(t, "fencegate_lease_grants_total{lock=\"_other\"}"), 9900);
    assert_true(strlen(t) < size200 + 4096); /* only the ruled lock's lines and digits grew */
    free(t);
}

/* The worst the default bound allows: 1000 locks with every refusal code and every lease
 * event, then 10,000 more names; the text stays within what /metrics sizes its buffer for. */
static void
test_default_bound_worst_size(void **state)
{
    (void)state;
    assert_int_equal(gw_metrics_locks_init(GW_METRICS_MAX_LOCKS_DEFAULT), 0);
    static const char *const codes[] = {"StaleFencingToken",   "FencingTokenNotGranted",
                                        "FencingLeaseExpired", "MissingFencingToken",
                                        "FencingLockMismatch", "InvalidFencingToken",
                                        "ServiceUnavailable",  "Other"};
    char name[LOCK_NAME_MAX + 1];
    for (int i = 0; i < 11000; i++) {
        /* the longest names a client may send */
        (void)snprintf(name, sizeof(name), "%0*d", LOCK_NAME_MAX, i);
        for (size_t c = 0; c < sizeof(codes) / sizeof(codes[0]); c++) {
            gw_metrics_fence_refusal(name, codes[c]);
        }
        for (int ev = 0; ev < GW_LEASE_EVENTS; ev++) {
            gw_metrics_lease(name, (enum gw_metrics_lease_event)ev, (uint64_t)i + 1000000000000,
                             clock_mono_ms() + 1000);
        }
    }
    char *t = render();
    size_t len = strlen(t);
    print_message("exposition with %d locks of %d bytes, all codes and events: %zu bytes\n",
                  GW_METRICS_MAX_LOCKS_DEFAULT, LOCK_NAME_MAX, len);
    assert_true(len < GW_METRICS_RENDER_BASE +
                          (size_t)GW_METRICS_MAX_LOCKS_DEFAULT * GW_METRICS_RENDER_PER_LOCK);
    free(t);
}

/* The text is what Prometheus reads: checked by promtool when it is installed. */
/* A worker loop's thread: its own set, LOOP_COUNTS requests and histogram observations. */
#define LOOP_COUNTS 200000
#define LOOPS       3

static pthread_barrier_t loops_started;
static pthread_barrier_t loops_counted;

static void *
loop_thread(void *arg)
{
    struct gw_metrics_set *set = arg;
    if (gw_metrics_attach(set) != 0) {
        return (void *)1;
    }
    (void)pthread_barrier_wait(&loops_started);
    for (unsigned i = 0; i < LOOP_COUNTS; i++) {
        GW_COUNT(requests);
        GW_COUNT_ADD(bytes_in, 2);
        GW_COUNT(client_conns_open);
        GW_GAUGE_DEC(client_conns_open);
        gw_histo_observe(&gw_metrics.fence_hold_seconds, 1000);
    }
    /* counted: the main thread checks the sum while this set is still attached */
    (void)pthread_barrier_wait(&loops_counted);
    (void)pthread_barrier_wait(&loops_counted);
    gw_metrics_detach();
    return gw_metrics_here == set ? (void *)1 : NULL;
}

static void
test_loops_count_apart_and_sum(void **state)
{
    (void)state;
    static struct gw_metrics_set sets[LOOPS];
    pthread_t th[LOOPS];
    assert_int_equal(pthread_barrier_init(&loops_started, NULL, LOOPS + 1), 0);
    assert_int_equal(pthread_barrier_init(&loops_counted, NULL, LOOPS + 1), 0);
    GW_COUNT(requests); /* the main set counts too */
    for (int i = 0; i < LOOPS; i++) {
        assert_int_equal(pthread_create(&th[i], NULL, loop_thread, &sets[i]), 0);
    }
    (void)pthread_barrier_wait(&loops_started);
    /* scrapes while the loops count: every counter only rises, the gauge stays sane */
    struct gw_metrics_set *sum = malloc(sizeof(*sum));
    assert_non_null(sum);
    uint64_t last = 0;
    for (int k = 0; k < 200; k++) {
        gw_metrics_sum(sum);
        assert_true(sum->requests >= last);
        assert_true(sum->fence_hold_seconds.count <= (uint64_t)LOOPS * LOOP_COUNTS);
        last = sum->requests;
    }
    (void)pthread_barrier_wait(&loops_counted);
    gw_metrics_sum(sum);
    assert_int_equal(sum->requests, (uint64_t)LOOPS * LOOP_COUNTS + 1);
    assert_int_equal(sum->bytes_in, (uint64_t)LOOPS * LOOP_COUNTS * 2);
    assert_int_equal(sum->client_conns_open, 0);
    assert_int_equal(sum->fence_hold_seconds.count, (uint64_t)LOOPS * LOOP_COUNTS);
    assert_int_equal(GW_METRICS_TOTAL(requests), (uint64_t)LOOPS * LOOP_COUNTS + 1);
    assert_int_equal(gw_metrics.requests, 1); /* this thread's own set: the main one */
    (void)pthread_barrier_wait(&loops_counted);
    for (int i = 0; i < LOOPS; i++) {
        void *ret = NULL;
        assert_int_equal(pthread_join(th[i], &ret), 0);
        assert_null(ret);
    }
    /* detached: their counts stay in the sum, and in the text */
    gw_metrics_sum(sum);
    assert_int_equal(sum->requests, (uint64_t)LOOPS * LOOP_COUNTS + 1);
    assert_int_equal(sum->fence_hold_seconds.count, (uint64_t)LOOPS * LOOP_COUNTS);
    free(sum);
    char want[96];
    (void)snprintf(want, sizeof(want), "\nfencegate_requests_received_total %llu\n",
                   (unsigned long long)LOOPS * LOOP_COUNTS + 1);
    char *text = render();
    assert_non_null(strstr(text, want));
    free(text);
    (void)pthread_barrier_destroy(&loops_started);
    (void)pthread_barrier_destroy(&loops_counted);
}

static void
test_promtool_accepts_the_text(void **state)
{
    (void)state;
    if (access("/usr/bin/promtool", X_OK) != 0) {
        skip();
    }
    assert_int_equal(gw_metrics_locks_init(10), 0);
    gw_metrics_fence_refusal("jobs", "StaleFencingToken");
    gw_metrics_lease("jobs", GW_LEASE_GRANT, 3, clock_mono_ms() + 1000);
    struct gw_metrics_req m = {0};
    gw_metrics_req_begin(&m);
    gw_metrics_req_set_op(&m, 3);
    gw_metrics_req_status(&m, 200);
    gw_metrics_req_end(&m);
    gw_histo_observe(&gw_metrics.backend_seconds[GW_BEOP_GET], 1234567);
    char *t = render();
    char path[] = "/tmp/metrics-test-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t len = strlen(t);
    assert_int_equal(write(fd, t, len), (ssize_t)len);
    (void)close(fd);
    char cmd[128];
    (void)snprintf(cmd, sizeof(cmd), "/usr/bin/promtool check metrics < %s", path);
    int rc = system(cmd);
    (void)unlink(path);
    free(t);
    assert_int_equal(rc, 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_histogram_buckets, reset, cleanup),
        cmocka_unit_test_setup_teardown(test_code_labels_are_a_closed_set, reset, cleanup),
        cmocka_unit_test_setup_teardown(test_request_counted_once, reset, cleanup),
        cmocka_unit_test_setup_teardown(test_label_escaping, reset, cleanup),
        cmocka_unit_test_setup_teardown(test_lock_bound_and_other, reset, cleanup),
        cmocka_unit_test_setup_teardown(test_lease_events_and_expiry, reset, cleanup),
        cmocka_unit_test_setup_teardown(test_ten_thousand_locks_stay_bounded, reset, cleanup),
        cmocka_unit_test_setup_teardown(test_default_bound_worst_size, reset, cleanup),
        cmocka_unit_test_setup_teardown(test_promtool_accepts_the_text, reset, cleanup),
        cmocka_unit_test_setup_teardown(test_loops_count_apart_and_sum, reset, cleanup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
