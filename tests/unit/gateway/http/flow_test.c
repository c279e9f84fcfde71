/*
 * tests/unit/gateway/http/flow_test.c: the HTTP/1.x server's data flow and
 * connection lifecycle (harness in http_harness.h): bounded memory for large
 * request bodies, large pipelined bodies, response backpressure, the write
 * timeout, client hang-ups, draining and freeing the server with requests in flight.
 */
#include "tests/unit/gateway/http_harness.h"

/* ---- tests ---- */

static size_t
server_buffered(void)
{
    struct gw_conn *c = TAILQ_FIRST(&srv->conns);
    if (c == NULL) {
        return 0;
    }
    size_t n = evbuffer_get_length(bufferevent_get_input(c->bev));
    if (c->req != NULL) {
        n += evbuffer_get_length(c->req->body);
    }
    return n;
}

static void
test_large_body_bounded(void **state)
{
    (void)state;
    th.mode = MODE_SLOW;
    const size_t total = 2u << 20;
    char *body = malloc(total);
    assert_non_null(body);
    for (size_t i = 0; i < total; i++) {
        body[i] = (char)(i % 251);
    }
    struct client cl;
    cl_open(&cl);
    char head[128];
    (void)snprintf(head, sizeof(head),
                   "PUT /big HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", total);
    cl_sends(&cl, head);
    size_t sent = 0, got = 0, peak = 0;
    uint64_t end = now_ms() + 20000;
    char tmp[3000];
    while (got < total && now_ms() < end) {
        if (sent < total) {
            ssize_t n = send(cl.fd, body + sent, total - sent, MSG_NOSIGNAL);
            if (n > 0) {
                sent += (size_t)n;
            }
        }
        pump(&cl);
        size_t b = server_buffered();
        peak = b > peak ? b : peak;
        assert_true(b <= cfg.limits.buffer_bytes + GW_HTTP_READ_MAX);
        /* a slow consumer: a little per turn */
        assert_non_null(th.req);
        ssize_t n = gw_req_body_read(th.req, tmp, sizeof(tmp));
        if (n > 0) {
            assert_memory_equal(tmp, body + got, (size_t)n);
            got += (size_t)n;
        } else {
            assert_true(n == ERR_AGAIN);
        }
    }
    assert_int_equal(got, total);
    assert_int_equal(gw_req_body_read(th.req, tmp, sizeof(tmp)), 0);
    assert_true(gw_req_body_done(th.req));
    assert_int_equal(gw_req_body_received(th.req), total);
    assert_true(peak > 0);
    gw_resp_simple(th.req, 200, NULL, "ok", 2);
    th.req = NULL;
    struct resp r;
    (void)wait_resp(&cl, 0, false, &r, 3000);
    assert_int_equal(r.status, 200);
    resp_cleanup(&r);
    free(body);
    cl_close(&cl);
}

/* Bodies larger than one direct socket read, pipelined: every byte kept in order. */
static void
test_large_pipelined(void **state)
{
    (void)state;
    th.mode = MODE_ECHO;
    cfg.limits.buffer_bytes = 1u << 20; /* room for 64 KiB reads */
    const size_t big = 300000;
    const size_t chunk = 100000;
    struct buf req;
    buf_init(&req, 1u << 20);
    char head[160];
    (void)snprintf(head, sizeof(head), "PUT /1 HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n",
                   big);
    assert_int_equal(buf_append(&req, head, strlen(head)), 0);
    for (size_t i = 0; i < big; i++) {
        char b = (char)(i % 251);
        assert_int_equal(buf_append(&req, &b, 1), 0);
    }
    const char *h2 = "PUT /2 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_int_equal(buf_append(&req, h2, strlen(h2)), 0);
    for (int k = 0; k < 3; k++) {
        (void)snprintf(head, sizeof(head), "%zx\r\n", chunk);
        assert_int_equal(buf_append(&req, head, strlen(head)), 0);
        for (size_t i = 0; i < chunk; i++) {
            char b = (char)((k * chunk + i) % 239);
            assert_int_equal(buf_append(&req, &b, 1), 0);
        }
        assert_int_equal(buf_append(&req, "\r\n", 2), 0);
    }
    const char *tail = "0\r\n\r\nPOST /3 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nthree";
    assert_int_equal(buf_append(&req, tail, strlen(tail)), 0);
    struct client cl;
    cl_open(&cl);
    cl_send(&cl, req.data, req.len);
    struct resp r;
    size_t off = wait_resp(&cl, 0, false, &r, 5000);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body.len, big);
    for (size_t i = 0; i < big; i++) {
        assert_int_equal((unsigned char)r.body.data[i], i % 251);
    }
    resp_cleanup(&r);
    off = wait_resp(&cl, off, false, &r, 5000);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body.len, 3 * chunk);
    for (size_t i = 0; i < 3 * chunk; i++) {
        assert_int_equal((unsigned char)r.body.data[i], i % 239);
    }
    resp_cleanup(&r);
    off = wait_resp(&cl, off, false, &r, 5000);
    assert_int_equal(r.status, 200);
    assert_string_equal(buf_cstr(&r.body), "three");
    resp_cleanup(&r);
    assert_int_equal(th.requests, 3);
    assert_int_equal(off, cl.in.len);
    buf_cleanup(&req);
    cl_close(&cl);
}

static void
test_stream_out_backpressure(void **state)
{
    (void)state;
    th.mode = MODE_STREAM_OUT;
    /* more than the kernel may buffer between the two sockets (tcp_wmem's and
     * tcp_rmem's maxima, 4 + 32 MiB here), however it tunes them: written at
     * once, without the bufferevent's 16 KiB per turn, 8 MiB could all fit */
    th.out_total = 48u << 20;
    struct client cl;
    cl_rcvbuf = 65536; /* before connect, so the window is sized from it */
    cl_open(&cl);
    cl_rcvbuf = 0;
    /* do not read for a while: the output passes the watermark */
    cl_sends(&cl, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
    for (int i = 0; i < 50; i++) {
        (void)event_base_loop(base, EVLOOP_NONBLOCK);
        usleep(1000);
    }
    assert_true(th.agains > 0);
    assert_true(th.out_sent < th.out_total);
    struct resp r;
    /* a bound, not a speed: 48 MiB through a 64 KiB window takes 10 s and more
     * under ThreadSanitizer on a busy machine */
    (void)wait_resp(&cl, 0, false, &r, 60000);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body.len, th.out_total);
    for (size_t i = 0; i < r.body.len; i++) {
        if ((unsigned char)r.body.data[i] != i % 251) {
            fail_msg("byte %zu differs", i);
        }
    }
    assert_true(th.drained > 0);
    /* the bufferevent wrote while the window was full, then handed the
     * output back: the next response is written at once again (bevio.c) */
    pump_ms(&cl, 20);
    struct gw_conn *c = TAILQ_FIRST(&srv->conns);
    assert_non_null(c);
    assert_true(c->direct);
    assert_int_equal(bufferevent_get_enabled(c->bev) & EV_WRITE, 0);
    resp_cleanup(&r);
    cl_close(&cl);
}

/* A client that stops reading a response is cut at limits.write_timeout_ms. */
static void
test_write_timeout(void **state)
{
    (void)state;
    th.mode = MODE_STREAM_OUT;
    th.out_total = 64u << 20;
    cfg.limits.write_timeout_ms = 200; /* read when the connection is accepted */
    struct client cl;
    cl_rcvbuf = 65536;
    cl_open(&cl);
    cl_rcvbuf = 0;
    cl_sends(&cl, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
    uint64_t end = now_ms() + 5000;
    while (th.aborts == 0 && now_ms() < end) {
        pump(NULL); /* never read */
    }
    assert_int_equal(th.aborts, 1);
    assert_int_equal(th.abort_err, ERR_TIMEOUT);
    assert_true(th.out_sent < th.out_total);
    pump_ms(NULL, 20);
    assert_int_equal(srv->nconns, 0);
    cl_close(&cl);
}

static void
test_hangup_mid_body(void **state)
{
    (void)state;
    th.mode = MODE_ECHO;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "PUT /k HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n0123456789");
    pump_ms(&cl, 50);
    assert_int_equal(th.requests, 1);
    assert_int_equal(th.body.len, 10);
    (void)close(cl.fd);
    cl.fd = -1;
    pump_ms(NULL, 100);
    assert_int_equal(th.aborts, 1);
    assert_int_equal(th.abort_err, ERR_CLOSED);
    assert_int_equal(srv->nconns, 0);
    cl_close(&cl);
    expect_serving();
    assert_int_equal(th.aborts, 1);
}

static void
test_hangup_waiting_for_handler(void **state)
{
    (void)state;
    /* body not started, client resets: the handler hears about it */
    th.mode = MODE_DEFER_ECHO;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "PUT /k HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n01234");
    pump_ms(&cl, 50);
    assert_non_null(th.req);
    struct linger lg = {1, 0};
    assert_int_equal(setsockopt(cl.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
    (void)close(cl.fd);
    cl.fd = -1;
    pump_ms(NULL, 100);
    assert_int_equal(th.aborts, 1);
    assert_int_equal(srv->nconns, 0);
    cl_close(&cl);
}

static int drain_calls;

static void
on_drained(void *arg)
{
    (void)arg;
    drain_calls++;
}

static void
test_drain(void **state)
{
    (void)state;
    th.mode = MODE_DEFER_ECHO;
    struct client idle, busy;
    cl_open(&idle);
    cl_open(&busy);
    cl_sends(&busy, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    pump_ms(&idle, 30);
    assert_non_null(th.req);
    drain_calls = 0;
    gw_server_drain(srv, on_drained, NULL);
    wait_eof(&idle, 3000);
    assert_int_equal(drain_calls, 0);
    gw_resp_simple(th.req, 200, NULL, "done", 4);
    th.req = NULL;
    struct resp r;
    (void)wait_resp(&busy, 0, false, &r, 3000);
    char v[32];
    assert_true(hdr(&r, "connection", v, sizeof(v)));
    assert_string_equal(v, "close");
    wait_eof(&busy, 3000);
    assert_int_equal(drain_calls, 0); /* lingering until the client closes */
    (void)close(busy.fd);
    busy.fd = -1;
    uint64_t end = now_ms() + 3000;
    while (drain_calls == 0 && now_ms() < end) {
        pump(NULL);
    }
    assert_int_equal(drain_calls, 1);
    resp_cleanup(&r);
    cl_close(&idle);
    cl_close(&busy);
}

static void
test_free_aborts_in_flight(void **state)
{
    (void)state;
    th.mode = MODE_DEFER_ECHO;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    pump_ms(&cl, 30);
    assert_non_null(th.req);
    gw_server_free(srv);
    srv = NULL;
    assert_int_equal(th.aborts, 1);
    assert_int_equal(th.abort_err, ERR_CLOSED);
    cl_close(&cl);
}

int
main(void)
{
    log_threshold = LOG_NONE;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_large_body_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_pipelined, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_out_backpressure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hangup_mid_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hangup_waiting_for_handler, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_aborts_in_flight, setup, teardown),
    };
    return cmocka_run_group_tests_name("http_flow", tests, NULL, NULL);
}
