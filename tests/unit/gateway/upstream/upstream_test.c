/*
 * tests/unit/gateway/upstream/upstream_test.c: gateway/upstream/upstream.c doing its job:
 * requests and responses (exact heads, paths, HEAD, interim responses),
 * streaming both ways with send/receive pauses, connection reuse and the
 * connection cap, and transfers started from callbacks.  Failures are in
 * upstream_faults_test.c; the test server and fixture in upstream_harness.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "common/clock.h"
#include "gateway/upstream/lean.h"
#include "gateway/upstream/upstream.h"

#include "tests/unit/gateway/upstream_harness.h"

static void
test_get_streams_body(void **state)
{
    struct fx *f = *state;
    f->srv.resp_len = 3 * MIB + 17;
    assert_int_equal(start(&f->c, "GET", "/b/k", -1), 0);
    assert_int_equal(f->c.heads, 0); /* nothing runs inside gw_upstream_xfer_start */
    assert_true(run_until(f->base, &f->c.dones, 1, 5000));
    assert_int_equal(f->c.err, 0);
    assert_int_equal(f->c.heads, 1);
    assert_int_equal(f->c.status, 200);
    assert_string_equal(f->c.reply, "yes");
    assert_true(f->c.empty_hdr);
    assert_string_equal(f->c.cl, "3145745");
    assert_int_equal(f->c.body_got, 3 * MIB + 17);
    assert_false(f->c.body_bad);
    assert_false(f->c.body_early);
    assert_true(strncmp(f->srv.head, "GET /b/k HTTP/1.1\r\n", 19) == 0);
}

static void
test_put_10mib_with_pauses(void **state)
{
    struct fx *f = *state;
    f->c.send_pause_every = 5;
    f->c.send_pause_ms = 1;
    assert_int_equal(start(&f->c, "PUT", "/b/big", 10 * MIB), 0);
    assert_true(run_until(f->base, &f->c.dones, 1, 20000));
    assert_int_equal(f->c.err, 0);
    assert_int_equal(f->c.status, 200);
    assert_true(f->c.send_pauses > 10);
    assert_int_equal(f->srv.requests, 1);
    assert_int_equal(f->srv.cl, 10 * MIB);
    assert_int_equal(f->srv.live_got, 10 * MIB);
    assert_true(f->srv.body_ok);
    assert_int_equal(f->c.sent_at_done, 10 * MIB);
    assert_false(has_ci(f->srv.head, "Transfer-Encoding"));
    assert_false(has_ci(f->srv.head, "Expect"));
}

static void
test_recv_pause_resume(void **state)
{
    struct fx *f = *state;
    use_timeout(f, 300); /* paused for 900 ms: the inactivity clock must stop */
    f->srv.resp_len = 32 * MIB;
    f->c.recv_pause_every = 4;
    f->c.recv_pause_first_ms = 900;
    f->c.recv_pause_ms = 0;
    assert_int_equal(start(&f->c, "GET", "/b/k", -1), 0);
    assert_true(run_until(f->base, &f->c.dones, 1, 30000));
    assert_int_equal(f->c.err, 0);
    assert_int_equal(f->c.body_got, 32 * MIB);
    assert_false(f->c.body_bad);
    assert_true(f->c.recv_pauses > 3);
    /* while paused libcurl stopped reading: only socket buffers filled up */
    print_message("server pushed %llu bytes before the first resume\n",
                  (unsigned long long)f->c.pushed_at_resume);
    assert_true(f->c.pushed_at_resume > 0);
    assert_true(f->c.pushed_at_resume < 20 * MIB);
}

static void
test_recv_pause_chunked(void **state)
{
    struct fx *f = *state;
    f->srv.mode = M_CHUNKED;
    f->srv.resp_len = 5 * MIB + 3;
    f->c.recv_pause_every = 3;
    f->c.recv_pause_ms = 0;
    assert_int_equal(start(&f->c, "GET", "/b/k", -1), 0);
    assert_true(run_until(f->base, &f->c.dones, 1, 30000));
    assert_int_equal(f->c.err, 0);
    assert_int_equal(f->c.body_got, 5 * MIB + 3);
    assert_false(f->c.body_bad);
    assert_true(f->c.recv_pauses > 10);
}

static void
test_send_pause_longer_than_timeout(void **state)
{
    struct fx *f = *state;
    use_timeout(f, 300);
    f->c.send_pause_every = 8;
    f->c.send_pause_ms = 900;
    assert_int_equal(start(&f->c, "PUT", "/b/k", 200000), 0);
    assert_true(run_until(f->base, &f->c.dones, 1, 5000));
    assert_int_equal(f->c.err, 0);
    assert_true(f->c.send_pauses >= 1);
    assert_true(f->srv.body_ok);
}

static void
test_head(void **state)
{
    struct fx *f = *state;
    f->srv.resp_len = 12345; /* announced, never sent */
    uint64_t t0 = clock_mono_ms();
    assert_int_equal(start(&f->c, "HEAD", "/b/k", -1), 0);
    assert_true(run_until(f->base, &f->c.dones, 1, 3000));
    assert_true(clock_mono_ms() - t0 < 1000);
    assert_int_equal(f->c.err, 0);
    assert_int_equal(f->c.heads, 1);
    assert_int_equal(f->c.status, 200);
    assert_string_equal(f->c.cl, "12345");
    assert_int_equal(f->c.bodies, 0);
    assert_true(strncmp(f->srv.head, "HEAD /b/k HTTP/1.1\r\n", 20) == 0);
}

/*
 * The lean engine's plain connection (the active transfer's, else the idle
 * one) is written at once and read by its own event (gateway/net/bevio.c):
 * the bufferevent's events stay off, so a request costs no epoll_ctl.  True
 * for the curl engine, which has no such thing.
 */
static bool
lean_conn_events_off(struct gw_upstream *pub)
{
    if (harness_engine != GW_UPSTREAM_LEAN) {
        return true;
    }
    struct gw_lean *up = (struct gw_lean *)pub;
    struct gw_lean_xfer *x = TAILQ_FIRST(&up->active);
    struct lean_conn *c = x != NULL ? x->c : TAILQ_FIRST(&up->idle);
    return c != NULL && c->rev != NULL && event_pending(c->rev, EV_READ, NULL) &&
           (bufferevent_get_enabled(c->bev) & (EV_READ | EV_WRITE)) == 0;
}

static void
test_connection_reuse(void **state)
{
    struct fx *f = *state;
    f->srv.resp_len = 1000;
    const char *const methods[] = {"GET", "PUT", "HEAD", "DELETE", "GET"};
    for (int i = 0; i < 5; i++) {
        cli_init(&f->c, f);
        assert_int_equal(start(&f->c, methods[i], "/b/k", i == 1 ? 4096 : -1), 0);
        if (i > 0) {
            assert_true(lean_conn_events_off(f->up)); /* reused: no write event asked for */
        }
        assert_true(run_until(f->base, &f->c.dones, 1, 5000));
        assert_int_equal(f->c.err, 0);
        assert_int_equal(f->c.status, 200);
        assert_int_equal(f->c.body_got, i == 2 ? 0 : 1000);
    }
    assert_int_equal(f->srv.requests, 5);
    assert_int_equal(f->srv.accepts, 1);
    assert_true(lean_conn_events_off(f->up));
}

static void
test_connection_cap(void **state)
{
    struct fx *f = *state;
    gw_upstream_free(f->up);
    struct gw_upstream_opts o = {.engine = harness_engine,
                                 .connect_timeout_ms = 2000,
                                 .timeout_ms = 5000,
                                 .max_connections = 1,
                                 .tls_verify = true};
    f->up = gw_upstream_new(f->base, &o);
    assert_non_null(f->up);
    f->srv.resp_len = 300000;
    struct cli c[3];
    for (int i = 0; i < 3; i++) {
        cli_init(&c[i], f);
        assert_int_equal(start(&c[i], i == 1 ? "PUT" : "GET", "/b/k", i == 1 ? 100000 : -1), 0);
    }
    for (int i = 0; i < 3; i++) {
        assert_true(run_until(f->base, &c[i].dones, 1, 5000));
        assert_int_equal(c[i].err, 0);
        assert_int_equal(c[i].body_got, 300000);
        assert_false(c[i].body_bad);
    }
    assert_int_equal(f->srv.requests, 3);
    assert_int_equal(f->srv.accepts, 1);
}

static void
test_empty_body_put(void **state)
{
    struct fx *f = *state;
    assert_int_equal(start(&f->c, "PUT", "/b/empty", 0), 0);
    assert_true(run_until(f->base, &f->c.dones, 1, 3000));
    assert_int_equal(f->c.err, 0);
    assert_int_equal(f->srv.cl, 0);
    assert_int_equal(f->srv.requests, 1);
}

static void
test_path_sent_as_is(void **state)
{
    struct fx *f = *state;
    const char *path = "/b/a/../x//y/./z%2F..%2e/?list-type=2&prefix=a/../b";
    assert_int_equal(start(&f->c, "GET", path, -1), 0);
    assert_true(run_until(f->base, &f->c.dones, 1, 3000));
    assert_int_equal(f->c.err, 0);
    char want[256];
    (void)snprintf(want, sizeof(want), "GET %s HTTP/1.1\r\n", path);
    assert_true(strncmp(f->srv.head, want, strlen(want)) == 0);
}

static void
test_exact_headers(void **state)
{
    struct fx *f = *state;
    static const char *const hdrs[] = {"Host: example.com", "X-Test: 1", "x-amz-meta-empty:",
                                       "x-amz-content-sha256: UNSIGNED-PAYLOAD", NULL};
    assert_int_equal(start_h(&f->c, "PUT", "/b/k", 5, hdrs, 4), 0);
    assert_true(run_until(f->base, &f->c.dones, 1, 3000));
    assert_int_equal(f->c.err, 0);
    assert_string_equal(f->srv.head, "PUT /b/k HTTP/1.1\r\n"
                                     "Host: example.com\r\n"
                                     "X-Test: 1\r\n"
                                     "x-amz-meta-empty:\r\n"
                                     "x-amz-content-sha256: UNSIGNED-PAYLOAD\r\n"
                                     "Content-Length: 5\r\n\r\n");
    /* and a GET without a body carries no framing headers at all */
    cli_init(&f->c, f);
    assert_int_equal(start_h(&f->c, "GET", "/b/k", -1, hdrs, 1), 0);
    assert_true(run_until(f->base, &f->c.dones, 1, 3000));
    assert_string_equal(f->srv.head, "GET /b/k HTTP/1.1\r\nHost: example.com\r\n\r\n");
}

static void
test_interim_responses_skipped(void **state)
{
    struct fx *f = *state;
    f->srv.mode = M_CONTINUE;
    f->srv.resp_len = 100;
    assert_int_equal(start(&f->c, "PUT", "/b/k", 100000), 0);
    assert_true(run_until(f->base, &f->c.dones, 1, 3000));
    assert_int_equal(f->c.err, 0);
    assert_int_equal(f->c.heads, 1);
    assert_int_equal(f->c.status, 200);
    assert_false(f->c.saw_link);
    assert_string_equal(f->c.reply, "yes");
    assert_int_equal(f->c.body_got, 100);
}

/* The answer's head in pieces of 1, 7 and 64 bytes a millisecond, and whole:
 * lines across reads, an interim head before the final one, the body right
 * behind the head; with a 6,000-byte line, one across the input buffer's
 * extents too (libevent adds an extent past 4 KiB buffered). */
static void
test_head_in_pieces(void **state)
{
    struct fx *f = *state;
    static char big[8192];
    (void)snprintf(big, sizeof(big),
                   "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"
                   "Content-Length: 5\r\nX-Reply: yes\r\nX-Big: %06000d\r\n\r\nhello",
                   7);
    static const struct {
        size_t step;
        const char *text;
    } runs[] = {
        {1, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
            "X-Reply: yes\r\n\r\nhello"},
        {7, "HTTP/1.1 200 OK\r\nX-Reply: yes\r\nContent-Length: 5\r\n\r\nhello"},
        {64, big},
        {0, big},
    };
    f->srv.mode = M_TRICKLE;
    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        f->srv.trickle_step = runs[i].step;
        f->srv.trickle_text = runs[i].text;
        cli_init(&f->c, f);
        assert_int_equal(start(&f->c, "GET", "/b/k", -1), 0);
        assert_true(run_until(f->base, &f->c.dones, 1, 5000));
        assert_int_equal(f->c.err, 0);
        assert_int_equal(f->c.heads, 1);
        assert_int_equal(f->c.status, 200);
        assert_string_equal(f->c.reply, "yes");
        assert_int_equal(f->c.body_got, 5);
    }
    /* and a connection that closes inside the head fails the transfer */
    f->srv.trickle_step = 7;
    f->srv.trickle_text = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Rep";
    f->srv.trickle_close = true;
    cli_init(&f->c, f);
    assert_int_equal(start(&f->c, "GET", "/b/k", -1), 0);
    assert_true(run_until(f->base, &f->c.dones, 1, 5000));
    assert_int_not_equal(f->c.err, 0);
    assert_int_equal(f->c.heads, 0);
}

/* A head that llhttp ends before upmsg does ("\r\r\n" ends it at the CR for
 * llhttp, at the LF for upmsg) is refused, whole (the lines in one llhttp
 * call) and a byte at a time (a call per line): the body bytes llhttp would
 * take from the head (on_body before the head), a message without a body that
 * ends a byte early (Content-Length: 0, 304), or a chunk size it cannot read.
 * Nothing reaches on_head.  And the same heads with "\r\n" pass. */
static void
test_head_ending_elsewhere_for_llhttp_refused(void **state)
{
    struct fx *f = *state;
    static const char *const bad[] = {
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\r\nabc",
        "HTTP/1.1 200 OK\r\nX-Reply: yes\r\nContent-Length: 0\r\n\r\r\n",
        "HTTP/1.1 304 Not Modified\r\nX-Reply: yes\r\n\r\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\r\n0\r\n\r\n",
    };
    static const char *const good[] = {
        "HTTP/1.1 200 OK\r\nX-Reply: yes\r\nContent-Length: 3\r\n\r\nabc",
        "HTTP/1.1 200 OK\r\nX-Reply: yes\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 304 Not Modified\r\nX-Reply: yes\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-Reply: yes\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    };
    static const size_t steps[] = {0, 1};
    if (harness_engine != GW_UPSTREAM_LEAN) {
        return; /* two parsers of one head are the lean engine's */
    }
    f->srv.mode = M_TRICKLE;
    for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
        f->srv.trickle_step = steps[s];
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            f->srv.trickle_text = bad[i];
            cli_init(&f->c, f);
            assert_int_equal(start(&f->c, "GET", "/b/k", -1), 0);
            assert_true(run_until(f->base, &f->c.dones, 1, 5000));
            if (f->c.err == 0 || f->c.heads != 0) {
                fail_msg("step %zu, answer %zu: err %d, heads %d", steps[s], i, f->c.err,
                         f->c.heads);
            }
            f->srv.trickle_text = good[i];
            cli_init(&f->c, f);
            assert_int_equal(start(&f->c, "GET", "/b/k", -1), 0);
            assert_true(run_until(f->base, &f->c.dones, 1, 5000));
            assert_int_equal(f->c.err, 0);
            assert_int_equal(f->c.heads, 1);
            assert_string_equal(f->c.reply, "yes");
        }
    }
}

static void
test_start_from_callbacks(void **state)
{
    struct fx *f = *state;
    struct cli second, third;
    f->srv.resp_len = 2000;
    cli_init(&second, f);
    cli_init(&third, f);
    f->c.next = &second; /* started from on_done */
    second.next = &third;
    second.start_next_in_head = true; /* started from inside libcurl: deferred add */
    assert_int_equal(start(&f->c, "GET", "/b/k", -1), 0);
    assert_true(run_until(f->base, &third.dones, 1, 5000));
    assert_true(run_until(f->base, &second.dones, 1, 5000));
    assert_int_equal(f->c.err, 0);
    assert_int_equal(second.err, 0);
    assert_int_equal(third.err, 0);
    assert_int_equal(third.body_got, 2000);
    assert_int_equal(f->srv.requests, 3);
}

/* A body ended by the origin's close; the connection is not reused after it. */
static void
test_close_delimited(void **state)
{
    struct fx *f = *state;
    f->srv.mode = M_CLOSE_DELIM;
    f->srv.resp_len = 1 * MIB + 5;
    assert_int_equal(start(&f->c, "GET", "/b/k", -1), 0);
    assert_true(run_until(f->base, &f->c.dones, 1, 5000));
    assert_int_equal(f->c.err, 0);
    assert_string_equal(f->c.reply, "yes");
    assert_int_equal(f->c.body_got, 1 * MIB + 5);
    assert_false(f->c.body_bad);
    f->srv.mode = M_OK;
    f->srv.resp_len = 10;
    cli_init(&f->c, f);
    assert_int_equal(start(&f->c, "GET", "/b/k", -1), 0);
    assert_true(run_until(f->base, &f->c.dones, 1, 3000));
    assert_int_equal(f->c.err, 0);
    assert_int_equal(f->c.body_got, 10);
    assert_int_equal(f->srv.accepts, 2);
}

/*
 * on_body pauses at every call, so also at the one with the last body byte
 * (Content-Length framing: nothing follows it on the wire): the response
 * still completes after the resume, again and again on the reused connection.
 */
static void
test_pause_at_last_body_byte(void **state)
{
    struct fx *f = *state;
    f->srv.resp_len = 1 * MIB + 3;
    for (int i = 0; i < 3; i++) {
        cli_init(&f->c, f);
        f->c.recv_pause_every = 1;
        f->c.recv_pause_ms = 0;
        assert_int_equal(start(&f->c, "GET", "/b/k", -1), 0);
        assert_true(run_until(f->base, &f->c.dones, 1, 3000));
        assert_int_equal(f->c.err, 0);
        assert_int_equal(f->c.body_got, 1 * MIB + 3);
        assert_false(f->c.body_bad);
    }
    assert_int_equal(f->srv.accepts, 1);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_get_streams_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_10mib_with_pauses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recv_pause_resume, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recv_pause_chunked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_send_pause_longer_than_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_head, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connection_reuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connection_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_body_put, setup, teardown),
        cmocka_unit_test_setup_teardown(test_path_sent_as_is, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exact_headers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_head_in_pieces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_head_ending_elsewhere_for_llhttp_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_interim_responses_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_start_from_callbacks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_delimited, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pause_at_last_body_byte, setup, teardown),
    };
    return run_both_engines("upstream", tests, sizeof(tests) / sizeof(tests[0]));
}
