/*
 * tests/unit/gateway/upstream/faults_test.c: gateway/upstream/upstream.c when things
 * go wrong: cancellation (mid-upload, from on_head, during a resume),
 * timeouts, refused and non-HTTP peers, oversized heads, errors from the
 * caller's callbacks, short request bodies, rejected input and freeing the
 * client with transfers in flight.  Uses upstream_harness.h, and the few
 * steps below that several tests share.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "gateway/upstream/upstream.h"

#include "tests/unit/gateway/upstream_harness.h"

/* ---- steps several tests share, on upstream_harness.h's fixture ---- */

/* Starts method path on f->c and runs the loop until it is done (3 s at most). */
static void
run_xfer(struct fx *f, const char *method, const char *path, int64_t body_len)
{
    assert_int_equal(start(&f->c, method, path, body_len), 0);
    assert_true(run_until(f->base, &f->c.dones, 1, 3000));
}

/* A GET of the whole url on f->c, run until it is done (ms at most). */
static void
run_get_url(struct fx *f, const char *url, int ms)
{
    struct gw_xfer_req rq = {.method = "GET", .url = url, .body_length = -1};
    assert_int_equal(gw_upstream_xfer_start(f->up, &rq, &cbs, &f->c, &f->c.x), 0);
    assert_true(run_until(f->base, &f->c.dones, 1, ms));
}

/* Into url: http://127.0.0.1:<port>/b/k on a port that refuses (bound, never listened). */
static void
refused_url(char *url, size_t size)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = 0};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    socklen_t len = sizeof(sin);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    close(fd);
    (void)snprintf(url, size, "http://127.0.0.1:%u/b/k", ntohs(sin.sin_port));
}

/* Replaces f->up by a client with these limits (0 max_connections: no cap). */
static void
use_limits(struct fx *f, uint32_t connect_timeout_ms, uint32_t timeout_ms, uint32_t max_connections)
{
    gw_upstream_free(f->up);
    struct gw_upstream_opts o = {.engine = harness_engine,
                                 .connect_timeout_ms = connect_timeout_ms,
                                 .timeout_ms = timeout_ms,
                                 .max_connections = max_connections,
                                 .tls_verify = true};
    f->up = gw_upstream_new(f->base, &o);
    assert_non_null(f->up);
    f->c.up = f->up;
}

/* Starts a PUT of total bytes on f->c whose body stops after n; waits until the origin has n. */
static void
upload_until(struct fx *f, uint64_t total, uint64_t n)
{
    f->c.stop_at = n;
    assert_int_equal(start(&f->c, "PUT", "/b/k", (int64_t)total), 0);
    bool expired = false;
    uint64_t t0 = clock_mono_ms();
    while (f->srv.live_got < n && !expired) {
        run_for(f->base, 10);
        expired = clock_mono_ms() - t0 > 5000;
    }
    assert_int_equal(f->srv.live_got, n);
}

/* Cancels f->c's upload: the connection closes short, no request completes, no on_done. */
static void
cancel_upload(struct fx *f)
{
    f->c.cancelled = true;
    gw_upstream_xfer_cancel(f->c.x);
    assert_true(run_until(f->base, &f->srv.closed, 1, 3000));
    assert_int_equal(f->srv.eofs_early, 1);
    assert_int_equal(f->srv.requests, 0);
    run_for(f->base, 50);
    assert_int_equal(f->c.dones, 0);
}

/* A GET that leaves its connection pooled, then an origin that drops it at the next head. */
static void
pool_then_drop(struct fx *f)
{
    f->srv.resp_len = 100;
    run_xfer(f, "GET", "/b/k", -1);
    assert_int_equal(f->c.err, 0);
    f->srv.drop_after = 1;
    cli_init(&f->c, f);
}

/* ---- tests ---- */

static void
test_cancel_mid_upload(void **state)
{
    struct fx *f = *state;
    upload_until(f, 10 * MIB, 1 * MIB);
    assert_int_equal(gw_xfer_body_sent(f->c.x), 1 * MIB);
    cancel_upload(f);
}

static void
test_cancel_in_on_head(void **state)
{
    struct fx *f = *state;
    f->srv.resp_len = 4 * MIB;
    f->c.cancel_in_head = 1;
    assert_int_equal(start(&f->c, "GET", "/b/k", -1), 0);
    assert_true(run_until(f->base, &f->srv.closed, 1, 3000));
    assert_int_equal(f->c.heads, 1);
    assert_int_equal(f->c.bodies, 0);
    assert_int_equal(f->c.dones, 0);
    /* the client keeps working */
    cli_init(&f->c, f);
    f->srv.resp_len = 10;
    run_xfer(f, "GET", "/b/k2", -1);
    assert_int_equal(f->c.err, 0);
    assert_int_equal(f->c.body_got, 10);
}

/*
 * Cancel and fail from on_body while curl_easy_pause hands over bytes libcurl
 * held back (pausing on every call makes the next ones come from inside it).
 */
static void
test_cancel_and_fail_during_resume(void **state)
{
    struct fx *f = *state;
    f->srv.mode = M_CHUNKED;
    f->srv.resp_len = 4 * MIB;
    f->c.recv_pause_every = 1;
    f->c.cancel_at_body = 3;
    assert_int_equal(start(&f->c, "GET", "/b/k", -1), 0);
    assert_true(run_until(f->base, &f->srv.closed, 1, 3000));
    assert_int_equal(f->c.bodies, 3);
    run_for(f->base, 30);
    assert_int_equal(f->c.dones, 0);

    cli_init(&f->c, f);
    f->c.recv_pause_every = 1;
    f->c.body_err = ERR_CLOSED;
    f->c.body_err_at = 3;
    run_xfer(f, "GET", "/b/k", -1);
    assert_int_equal(f->c.err, ERR_CLOSED);
    assert_int_equal(f->c.bodies, 3);
    assert_true(run_until(f->base, &f->srv.closed, 2, 3000));
    run_for(f->base, 30);
    assert_int_equal(f->c.dones, 1);
}

/* TLS to a peer that answers in plain text: the handshake fails -> ERR_UPSTREAM. */
static void
test_https_to_plain_server(void **state)
{
    struct fx *f = *state;
    f->srv.mode = M_GARBAGE;
    char url[64];
    (void)snprintf(url, sizeof(url), "https://127.0.0.1:%u/b/k", f->srv.port);
    run_get_url(f, url, 5000);
    assert_int_equal(f->c.err, ERR_UPSTREAM);
    assert_int_equal(f->c.heads, 0);
}

/* A TLS handshake that never completes is bounded by connect_timeout_ms -> ERR_TIMEOUT. */
static void
test_connect_timeout(void **state)
{
    struct fx *f = *state;
    use_limits(f, 300, 10000, 0);
    f->srv.mode = M_SILENT; /* waits for a blank line a ClientHello never has */
    char url[64];
    (void)snprintf(url, sizeof(url), "https://127.0.0.1:%u/b/k", f->srv.port);
    uint64_t t0 = clock_mono_ms();
    run_get_url(f, url, 5000);
    uint64_t took = clock_mono_ms() - t0;
    assert_int_equal(f->c.err, ERR_TIMEOUT);
    assert_true(took >= 250 && took < 2000);
}

static void
test_refused(void **state)
{
    struct fx *f = *state;
    char url[64];
    refused_url(url, sizeof(url));
    run_get_url(f, url, 3000);
    assert_int_equal(f->c.err, ERR_UPSTREAM);
    assert_int_equal(f->c.heads, 0);
}

static void
test_silent_upstream_times_out(void **state)
{
    struct fx *f = *state;
    use_timeout(f, 200);
    f->srv.mode = M_SILENT;
    uint64_t t0 = clock_mono_ms();
    run_xfer(f, "GET", "/b/k", -1);
    uint64_t took = clock_mono_ms() - t0;
    assert_int_equal(f->c.err, ERR_TIMEOUT);
    assert_true(took >= 190 && took < 1500);
    assert_int_equal(f->c.heads, 0);
    assert_true(run_until(f->base, &f->srv.closed, 1, 3000));
}

/*
 * Transfers that time out while queued for a connection (max_connections
 * reached) leave nothing behind: more of them than the free list holds, then
 * a normal transfer still works.  libcurl 7.88 allocates a transfer's receive
 * buffer before it asks for a connection and frees it only when the transfer
 * is done on one, so a queued transfer's easy handle refused
 * CURLOPT_BUFFERSIZE on its next use, and every such handle went back to the
 * head of the free list: after 32 of them no transfer could start.
 */
static void
test_queued_timeouts_leave_pool_healthy(void **state)
{
    struct fx *f = *state;
    use_limits(f, 2000, 200, 1);
    /* the one connection: an upload paused after its first byte (a paused transfer's clock
     * stops, so it holds the connection while the others wait) */
    cli_init(&f->c, f);
    f->c.stop_at = 1;
    assert_int_equal(start(&f->c, "PUT", "/b/hold", 100), 0);
    assert_true(run_until(f->base, &f->srv.accepts, 1, 3000));
    enum { NQUEUED = 40 };
    struct cli *q = calloc(NQUEUED, sizeof(*q));
    assert_non_null(q);
    int dones = 0;
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < NQUEUED; i++) {
            cli_init(&q[i], f);
            assert_int_equal(start(&q[i], "GET", "/b/queued", -1), 0);
        }
        for (int i = 0; i < NQUEUED; i++) {
            assert_true(run_until(f->base, &q[i].dones, 1, 3000));
            assert_int_equal(q[i].err, ERR_TIMEOUT);
            dones++;
        }
    }
    assert_int_equal(dones, 2 * NQUEUED);
    assert_int_equal(f->c.dones, 0);
    f->c.cancelled = true;
    gw_upstream_xfer_cancel(f->c.x);
    /* the pool works again by itself, for transfers one after another and together */
    f->srv.resp_len = 10;
    for (int i = 0; i < 3; i++) {
        cli_init(&q[i], f);
        assert_int_equal(start(&q[i], "GET", "/b/k", -1), 0);
        assert_true(run_until(f->base, &q[i].dones, 1, 3000));
        assert_int_equal(q[i].err, 0);
        assert_int_equal(q[i].status, 200);
        assert_int_equal(q[i].body_got, 10);
    }
    for (int i = 0; i < NQUEUED; i++) {
        cli_init(&q[i], f);
        assert_int_equal(start(&q[i], "GET", "/b/k", -1), 0);
    }
    for (int i = 0; i < NQUEUED; i++) {
        assert_true(run_until(f->base, &q[i].dones, 1, 5000));
        assert_int_equal(q[i].err, 0);
        assert_int_equal(q[i].status, 200);
    }
    free(q);
}

static void
test_head_too_big(void **state)
{
    struct fx *f = *state;
    f->srv.mode = M_BIGHEAD;
    run_xfer(f, "GET", "/b/k", -1);
    assert_int_equal(f->c.err, ERR_UPSTREAM);
    assert_int_equal(f->c.heads, 0);
}

static void
test_callback_errors_pass_through(void **state)
{
    struct fx *f = *state;
    f->srv.resp_len = 1 * MIB;
    f->c.body_err = ERR_CLOSED;
    run_xfer(f, "GET", "/b/k", -1);
    assert_int_equal(f->c.err, ERR_CLOSED);
    assert_int_equal(f->c.bodies, 1);

    cli_init(&f->c, f);
    f->c.stop_at = 300000;
    f->c.read_err = ERR_IO;
    run_xfer(f, "PUT", "/b/k", 1 * MIB);
    assert_int_equal(f->c.err, ERR_IO);
    assert_int_equal(f->c.heads, 0);
    assert_true(run_until(f->base, &f->srv.eofs_early, 1, 3000));
    assert_int_equal(f->srv.requests, 1); /* only the GET */
}

/* read_body ends before body_length: the upstream must not get a complete request. */
static void
test_short_body_aborts(void **state)
{
    struct fx *f = *state;
    f->c.stop_at = 70000;
    f->c.short_body = true;
    run_xfer(f, "PUT", "/b/k", 100000);
    assert_int_equal(f->c.err, ERR_INVAL);
    assert_int_equal(f->c.sent_at_done, 70000);
    /* the connection closes (libcurl has sent part of the body by then; the lean engine
     * drops it unsent, all of it still queued) and the request never completes */
    assert_true(run_until(f->base, &f->srv.closed, 1, 3000));
    run_for(f->base, 50);
    assert_int_equal(f->srv.requests, 0);
}

static void
test_start_rejects_bad_input(void **state)
{
    struct fx *f = *state;
    static const char *const crlf[] = {"X-A: b\r\nX-Evil: 1", NULL};
    static const char *const te[] = {"Transfer-Encoding: chunked", NULL};
    static const char *const cl[] = {"Content-Length: 9", NULL};
    static const char *const noname[] = {": x", NULL};
    static const char *const sp[] = {"X A: x", NULL};
    struct gw_xfer *x = NULL;
    const char *urls[] = {"ftp://127.0.0.1/x", "http://127.0.0.1/a b", "http://127.0.0.1/a#b",
                          "http:///x",         "127.0.0.1/x",          "http://127.0.0.1/\x80"};
    for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
        struct gw_xfer_req rq = {.method = "GET", .url = urls[i], .body_length = -1};
        assert_int_equal(gw_upstream_xfer_start(f->up, &rq, &cbs, &f->c, &x), ERR_INVAL);
    }
    const char *const *bad[] = {crlf, te, cl, noname, sp};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct gw_xfer_req rq = {.method = "PUT",
                                 .url = "http://127.0.0.1/x",
                                 .headers = bad[i],
                                 .nheaders = 1,
                                 .body_length = 5};
        assert_int_equal(gw_upstream_xfer_start(f->up, &rq, &cbs, &f->c, &x), ERR_INVAL);
    }
    struct gw_xfer_req rq = {.method = "HEAD", .url = "http://127.0.0.1/x", .body_length = 5};
    assert_int_equal(gw_upstream_xfer_start(f->up, &rq, &cbs, &f->c, &x), ERR_INVAL);
    rq.method = "G T";
    rq.body_length = -1;
    assert_int_equal(gw_upstream_xfer_start(f->up, &rq, &cbs, &f->c, &x), ERR_INVAL);
    rq.method = "PUT";
    rq.body_length = 5;
    struct gw_xfer_cbs nord = cbs;
    nord.read_body = NULL;
    assert_int_equal(gw_upstream_xfer_start(f->up, &rq, &nord, &f->c, &x), ERR_INVAL);
    run_for(f->base, 20);
    assert_int_equal(f->c.dones, 0);
    assert_int_equal(f->srv.accepts, 0);
}

static void
test_free_with_transfers_in_flight(void **state)
{
    struct fx *f = *state;
    f->srv.mode = M_SILENT;
    assert_int_equal(start(&f->c, "PUT", "/b/k", 10 * MIB), 0);
    run_for(f->base, 50);
    gw_upstream_free(f->up);
    f->up = NULL;
    assert_true(run_until(f->base, &f->srv.closed, 1, 3000));
    assert_int_equal(f->c.dones, 0);
    f->up = new_upstream(f->base, 5000);
}

/* The origin closes a pooled connection as a GET arrives on it: sent again on a new one. */
static void
test_stale_pooled_get_retried(void **state)
{
    struct fx *f = *state;
    pool_then_drop(f);
    run_xfer(f, "GET", "/b/k2", -1);
    assert_int_equal(f->c.err, 0);
    assert_int_equal(f->c.body_got, 100);
    assert_int_equal(f->srv.dropped, 1);
    assert_int_equal(f->srv.accepts, 2);
    assert_int_equal(f->srv.requests, 2);
}

/*
 * The same for a PUT whose body read_body already handed over: the body
 * cannot be replayed, so ERR_UPSTREAM and no second send.
 */
static void
test_stale_pooled_put_not_resent(void **state)
{
    struct fx *f = *state;
    pool_then_drop(f);
    run_xfer(f, "PUT", "/b/k2", 100000);
    assert_int_equal(f->c.err, ERR_UPSTREAM);
    assert_true(f->c.sent_at_done > 0);
    run_for(f->base, 100);
    assert_int_equal(f->srv.dropped, 1);
    assert_int_equal(f->srv.heads, 2);    /* the GET and the PUT, once */
    assert_int_equal(f->srv.requests, 1); /* the GET only */
}

/*
 * A body-less write (DELETE) on a pooled connection the origin closed: the
 * lean engine never sends a write twice (a copy sent later could land after
 * a newer epoch's write); libcurl resends it.
 */
static void
test_stale_pooled_delete_not_resent(void **state)
{
    struct fx *f = *state;
    pool_then_drop(f);
    run_xfer(f, "DELETE", "/b/k2", -1);
    run_for(f->base, 100);
    assert_int_equal(f->srv.dropped, 1);
    if (harness_engine == GW_UPSTREAM_LEAN) {
        assert_int_equal(f->c.err, ERR_UPSTREAM);
        assert_int_equal(f->srv.heads, 2);    /* the GET and the DELETE, once */
        assert_int_equal(f->srv.requests, 1); /* the GET only */
    } else {
        assert_int_equal(f->srv.requests, 2); /* libcurl sent it again */
    }
}

/* Cancelled with every body byte but the last handed over: the origin never gets it whole. */
static void
test_cancel_one_byte_short(void **state)
{
    struct fx *f = *state;
    upload_until(f, 200000, 200000 - 1);
    cancel_upload(f);
}

/* GW_UPSTREAM_DOWN_AFTER refused connects in a row: unreachable, until a response comes. */
static void
test_refused_streak_unreachable(void **state)
{
    struct fx *f = *state;
    char url[64];
    refused_url(url, sizeof(url));
    char why[GW_UPSTREAM_WHY_MAX] = "";
    for (int i = 0; i < GW_UPSTREAM_DOWN_AFTER; i++) {
        assert_false(gw_upstream_unreachable(f->up, why, sizeof(why)));
        cli_init(&f->c, f);
        run_get_url(f, url, 3000);
        assert_int_equal(f->c.err, ERR_UPSTREAM);
    }
    assert_true(gw_upstream_unreachable(f->up, why, sizeof(why)));
    assert_true(strlen(why) > 0);
    print_message("unreachable: %s\n", why);
    cli_init(&f->c, f);
    run_xfer(f, "GET", "/b/k", -1);
    assert_int_equal(f->c.err, 0);
    assert_false(gw_upstream_unreachable(f->up, why, sizeof(why)));
}

/*
 * The origin answers a PUT at its head (403, Connection: close) and stops
 * listening to the body: the caller gets that answer, and the body is never
 * completed at the origin.
 */
static void
test_early_answer_to_upload(void **state)
{
    struct fx *f = *state;
    f->srv.mode = M_EARLY;
    assert_int_equal(start(&f->c, "PUT", "/b/k", 50 * MIB), 0);
    assert_true(run_until(f->base, &f->c.dones, 1, 5000));
    assert_int_equal(f->c.heads, 1);
    assert_int_equal(f->c.status, 403);
    assert_int_equal(f->c.err, 0);
    assert_true(f->c.sent_at_done < 50 * MIB);
    assert_int_equal(f->srv.requests, 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cancel_mid_upload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_in_on_head, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_and_fail_during_resume, setup, teardown),
        cmocka_unit_test_setup_teardown(test_https_to_plain_server, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connect_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_silent_upstream_times_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queued_timeouts_leave_pool_healthy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_head_too_big, setup, teardown),
        cmocka_unit_test_setup_teardown(test_callback_errors_pass_through, setup, teardown),
        cmocka_unit_test_setup_teardown(test_short_body_aborts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_start_rejects_bad_input, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_with_transfers_in_flight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_pooled_get_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_pooled_put_not_resent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_pooled_delete_not_resent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_one_byte_short, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_streak_unreachable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_early_answer_to_upload, setup, teardown),
    };
    return run_both_engines("upstream_faults", tests, sizeof(tests) / sizeof(tests[0]));
}
