/*
 * tests/unit/gateway/http/relay_test.c: control-only requests relayed from a
 * worker loop (gateway/http/relay.c).  A control loop runs its own gw_server
 * and the hub in a thread of its own; the test's thread runs a worker loop
 * whose server relays every request, and a real client socket talks to the
 * worker.  Status, headers, fixed-length and chunked bodies, HEAD, the
 * client's peer address, keep-alive, a body past the cap (413), a client
 * that hangs up mid-relay (the control request is aborted), one request
 * counted in the metrics (not two), and shutdown with a relay in flight
 * (ASan: nothing leaks).  make SAN=thread unit runs these under
 * ThreadSanitizer.
 */
#include "gateway/http/relay.h"

#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/err.h"
#include "gateway/base/config.h"
#include "gateway/base/metrics.h"
#include "gateway/http/http.h"
#include "gateway/net/loopctx.h"
#include "gateway/net/loopmsg.h"
#include "tests/unit/gateway/control_harness.h"

static char host[] = "127.0.0.1";

/* ---- the control loop, on its own thread ---- */

struct control {
    struct ct_loop loop; /* its base, queue and thread */
    struct gw_server *srv;
    struct gw_relay_hub *hub;
    struct gw_config cfg;
    atomic_int requests; /* requests its handler got */
    atomic_int aborts;   /* on_abort of a held request */
    struct gw_req *held; /* "/hang": never answered (control thread only) */
    struct buf body;     /* the request body (control thread only) */
};

static struct control ctl;

/* The worker loop, on the test's thread. */
static struct event_base *wbase;
static struct gw_loopq *wq;
static struct gw_server *wsrv;
static struct gw_config wcfg;
static struct gw_loopctx wctx;

static void
held_abort(struct gw_req *req, int err, void *arg)
{
    (void)err;
    (void)arg;
    assert_ptr_equal(req, ctl.held);
    ctl.held = NULL;
    atomic_fetch_add(&ctl.aborts, 1);
}

static void ctl_body_ready(struct gw_req *req, void *arg);

static const struct gw_req_ops held_ops = {.on_abort = held_abort};
static const struct gw_req_ops ctl_ops = {.on_body_ready = ctl_body_ready, .on_abort = held_abort};

/* The control handler's answer: what it saw, so the client can check it. */
static void
ctl_answer(struct gw_req *req)
{
    bool chunked = strstr(gw_req_target(req), "chunk") != NULL;
    char out[512];
    int n = snprintf(out, sizeof(out), "%s %s|", gw_req_method(req), gw_req_target(req));
    assert_true(n > 0);
    struct buf b;
    buf_init(&b, 1 << 20);
    assert_int_equal(buf_append(&b, out, (size_t)n), 0);
    assert_int_equal(buf_append(&b, ctl.body.data, ctl.body.len), 0);
    gw_resp_start(req, 201);
    assert_int_equal(gw_resp_header(req, "x-peer", gw_req_peer(req)), 0);
    char lst[16];
    (void)snprintf(lst, sizeof(lst), "%d", (int)gw_req_listener(req));
    assert_int_equal(gw_resp_header(req, "x-listener", lst), 0);
    assert_int_equal(gw_resp_header(req, "x-id", gw_req_id(req)), 0);
    const char *h = gw_req_header(req, "x-client");
    assert_int_equal(gw_resp_header(req, "x-client-echo", h != NULL ? h : "-"), 0);
    gw_resp_body_begin(req, chunked ? -1 : (int64_t)b.len);
    if (chunked) {
        for (size_t i = 0; i < b.len; i += 3) { /* several chunks */
            size_t k = b.len - i < 3 ? b.len - i : 3;
            assert_true(gw_resp_body_write(req, b.data + i, k) >= ERR_AGAIN);
        }
    } else {
        assert_true(gw_resp_body_write(req, b.data, b.len) >= ERR_AGAIN);
    }
    gw_resp_end(req);
    ctl.held = NULL;
    buf_cleanup(&b);
}

static void
ctl_body_ready(struct gw_req *req, void *arg)
{
    (void)arg;
    char tmp[4096];
    for (;;) {
        ssize_t n = gw_req_body_read(req, tmp, sizeof(tmp));
        if (n > 0) {
            assert_int_equal(buf_append(&ctl.body, tmp, (size_t)n), 0);
            continue;
        }
        if (n == 0) {
            ctl_answer(req);
        }
        return;
    }
}

static void
ctl_on_request(struct gw_req *req, void *arg)
{
    (void)arg;
    atomic_fetch_add(&ctl.requests, 1);
    ctl.held = req;
    if (strcmp(gw_req_path(req), "/hang") == 0) {
        gw_req_set_ops(req, &held_ops, NULL); /* a long poll: never answered */
        return;
    }
    buf_reset(&ctl.body);
    gw_req_set_ops(req, &ctl_ops, NULL);
    ctl_body_ready(req, NULL);
}

/* ---- the worker's handler: relay everything ---- */

static void
w_on_request(struct gw_req *req, void *arg)
{
    (void)arg;
    assert_int_equal(gw_relay_request(ctl.hub, req), 0);
}

/* Stops the control side: loop, queue, hub, server (as the process's shutdown does). */
static void
control_stop(void)
{
    if (!ctl.loop.running) {
        return;
    }
    ct_stop(&ctl.loop, wbase); /* the worker keeps running */
    gw_loopq_close(ctl.loop.q);
    gw_relay_hub_free(ctl.hub);
    ctl.hub = NULL;
    gw_server_free(ctl.srv);
    ctl.srv = NULL;
}

static void
config_init(struct gw_config *c)
{
    memset(c, 0, sizeof(*c));
    c->nlisten = 1;
    c->listen[0].host = host;
    c->limits.discard_body_bytes = 1u << 20;
}

static int
setup(void **state)
{
    (void)state;
    memset(&ctl, 0, sizeof(ctl));
    buf_init(&ctl.body, 16 << 20);
    config_init(&ctl.cfg);
    config_init(&wcfg);
    char err[256];
    ctl.loop.base = event_base_new();
    ctl.loop.q = gw_loopq_new(ctl.loop.base);
    ctl.srv = gw_server_new(ctl.loop.base, &ctl.cfg, ctl_on_request, NULL, err, sizeof(err));
    assert_non_null(ctl.srv);
    ctl.hub = gw_relay_hub_new(ctl.srv, ctl.loop.q);
    assert_non_null(ctl.hub);
    wbase = event_base_new();
    wq = gw_loopq_new(wbase);
    assert_non_null(wq);
    wsrv = gw_server_new(wbase, &wcfg, w_on_request, NULL, err, sizeof(err));
    assert_non_null(wsrv);
    wctx = (struct gw_loopctx){.base = wbase, .q = wq, .ctl = ctl.loop.q, .index = 1};
    gw_loopctx_here = &wctx;
    ct_start(&ctl.loop);
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    control_stop();
    gw_server_free(wsrv);
    gw_loopq_free(wq);
    gw_loopctx_here = NULL;
    event_base_free(wbase);
    gw_loopq_free(ctl.loop.q);
    event_base_free(ctl.loop.base);
    buf_cleanup(&ctl.body);
    return 0;
}

/* ---- the client ---- */

static int
cl_open(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons(gw_server_port(wsrv, 0)),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
    assert_true(rc == 0 || errno == EINPROGRESS);
    return fd;
}

static void
pump(void)
{
    (void)event_base_loop(wbase, EVLOOP_NONBLOCK);
    (void)usleep(200);
}

static void
cl_send(int fd, const char *data, size_t len)
{
    size_t off = 0;
    for (int i = 0; i < 50000 && off < len; i++) {
        ssize_t n = send(fd, data + off, len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
        } else {
            pump();
        }
    }
    assert_int_equal(off, len);
}

/* The client's port, as "127.0.0.1:port". */
static void
cl_name(int fd, char *out, size_t len)
{
    struct sockaddr_in a;
    socklen_t al = sizeof(a);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    (void)snprintf(out, len, "127.0.0.1:%u", (unsigned)ntohs(a.sin_port));
}

struct resp {
    int status;
    char head[4096];
    char body[65536];
    size_t body_len;
};

/* Reads one response (head; a Content-Length or chunked body unless no_body). */
static void
cl_recv(int fd, bool no_body, struct resp *r)
{
    static char in[1 << 20];
    size_t have = 0;
    in[0] = '\0';
    memset(r, 0, sizeof(*r));
    for (int i = 0; i < 50000; i++) {
        ssize_t n = recv(fd, in + have, sizeof(in) - 1 - have, 0);
        if (n > 0) {
            have += (size_t)n;
            in[have] = '\0';
        } else if (n == 0) {
            break;
        } else {
            pump();
        }
        char *end = strstr(in, "\r\n\r\n");
        if (end == NULL) {
            continue;
        }
        size_t hl = (size_t)(end - in) + 4;
        assert_true(hl < sizeof(r->head));
        memcpy(r->head, in, hl);
        r->head[hl] = '\0';
        r->status = (int)strtol(in + 9, NULL, 10);
        if (no_body) {
            return;
        }
        const char *cl = strcasestr(r->head, "\r\ncontent-length:");
        if (cl != NULL) {
            size_t want = strtoul(cl + 17, NULL, 10);
            if (have - hl >= want) {
                memcpy(r->body, in + hl, want);
                r->body_len = want;
                return;
            }
        } else if (strcasestr(r->head, "transfer-encoding: chunked") != NULL) {
            if (have >= 5 && memcmp(in + have - 5, "0\r\n\r\n", 5) == 0) {
                const char *p = in + hl;
                for (;;) { /* de-chunk */
                    size_t k = strtoul(p, NULL, 16);
                    p = strstr(p, "\r\n") + 2;
                    if (k == 0) {
                        return;
                    }
                    memcpy(r->body + r->body_len, p, k);
                    r->body_len += k;
                    p += k + 2;
                }
            }
        }
    }
    fail_msg("no whole response (%zu bytes: %.200s)", have, in);
}

/* The value of header name in r's head, or "" (into out). */
static const char *
hdr(const struct resp *r, const char *name, char *out, size_t len)
{
    char pat[64];
    (void)snprintf(pat, sizeof(pat), "\r\n%s: ", name);
    const char *p = strcasestr(r->head, pat);
    if (p == NULL) {
        out[0] = '\0';
        return out;
    }
    p += strlen(pat);
    size_t k = strcspn(p, "\r");
    (void)snprintf(out, len, "%.*s", (int)k, p);
    return out;
}

/* ---- tests ---- */

static void
test_answer_passes_through(void **state)
{
    (void)state;
    int fd = cl_open();
    char me[64], v[256];
    const char rq[] = "PUT /_fencegate/x?y=1 HTTP/1.1\r\nHost: h\r\nx-client: abc\r\n"
                      "Content-Length: 5\r\n\r\nhello";
    cl_send(fd, rq, sizeof(rq) - 1);
    struct resp r;
    cl_recv(fd, false, &r);
    cl_name(fd, me, sizeof(me));
    assert_int_equal(r.status, 201);
    assert_string_equal(hdr(&r, "x-peer", v, sizeof(v)), me); /* the client, not the pair */
    assert_string_equal(hdr(&r, "x-client-echo", v, sizeof(v)), "abc");
    assert_string_equal(hdr(&r, "x-listener", v, sizeof(v)), "0");
    char id[64];
    (void)hdr(&r, "x-amz-request-id", id, sizeof(id));
    assert_string_equal(hdr(&r, "x-id", v, sizeof(v)), id); /* one id on both loops */
    assert_null(strcasestr(r.head, "connection: close"));   /* the client's connection stays */
    assert_int_equal(r.body_len, strlen("PUT /_fencegate/x?y=1|hello"));
    assert_memory_equal(r.body, "PUT /_fencegate/x?y=1|hello", r.body_len);
    /* keep-alive: a second request, a chunked inner answer */
    const char rq2[] = "GET /chunked HTTP/1.1\r\nHost: h\r\n\r\n";
    cl_send(fd, rq2, sizeof(rq2) - 1);
    cl_recv(fd, false, &r);
    assert_int_equal(r.status, 201);
    assert_int_equal(r.body_len, strlen("GET /chunked|"));
    assert_memory_equal(r.body, "GET /chunked|", r.body_len);
    /* HEAD: the length, no body; then another request still parses */
    const char rq3[] = "HEAD /h HTTP/1.1\r\nHost: h\r\n\r\n";
    cl_send(fd, rq3, sizeof(rq3) - 1);
    cl_recv(fd, true, &r);
    assert_int_equal(r.status, 201);
    assert_string_equal(hdr(&r, "content-length", v, sizeof(v)), "8"); /* "HEAD /h|" */
    const char rq4[] = "GET /after HTTP/1.1\r\nHost: h\r\n\r\n";
    cl_send(fd, rq4, sizeof(rq4) - 1);
    cl_recv(fd, false, &r);
    assert_int_equal(r.body_len, strlen("GET /after|"));
    assert_memory_equal(r.body, "GET /after|", r.body_len);
    assert_int_equal(atomic_load(&ctl.requests), 4);
    (void)close(fd);
}

static void
test_chunked_request_body(void **state)
{
    (void)state;
    int fd = cl_open();
    const char rq[] = "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
    cl_send(fd, rq, sizeof(rq) - 1);
    struct resp r;
    cl_recv(fd, false, &r);
    assert_int_equal(r.status, 201);
    assert_int_equal(r.body_len, strlen("POST /p|abcde"));
    assert_memory_equal(r.body, "POST /p|abcde", r.body_len);
    (void)close(fd);
}

static void
test_counted_once(void **state)
{
    (void)state;
    uint64_t before = gw_metrics_requests_of_class(2);
    int fd = cl_open();
    const char rq[] = "GET /m HTTP/1.1\r\nHost: h\r\n\r\n";
    cl_send(fd, rq, sizeof(rq) - 1);
    struct resp r;
    cl_recv(fd, false, &r);
    assert_int_equal(r.status, 201);
    (void)close(fd);
    for (int i = 0; i < 500; i++) {
        pump(); /* the worker's request is counted when freed */
    }
    assert_int_equal(gw_metrics_requests_of_class(2) - before, 1);
}

static void
test_body_too_large(void **state)
{
    (void)state;
    int fd = cl_open();
    char rq[256];
    int n = snprintf(rq, sizeof(rq), "PUT /big HTTP/1.1\r\nHost: h\r\nContent-Length: %zu\r\n\r\n",
                     GW_RELAY_BODY_MAX + 1);
    cl_send(fd, rq, (size_t)n);
    struct resp r;
    cl_recv(fd, false, &r);
    assert_int_equal(r.status, 413);
    assert_non_null(strstr(r.body, "<Code>EntityTooLarge</Code>"));
    assert_int_equal(atomic_load(&ctl.requests), 0);
    (void)close(fd);
}

static void
wait_ctl_requests(int n)
{
    for (int i = 0; i < 25000 && atomic_load(&ctl.requests) < n; i++) {
        pump();
    }
    assert_int_equal(atomic_load(&ctl.requests), n);
}

static void
test_client_gone_aborts_control(void **state)
{
    (void)state;
    int fd = cl_open();
    const char rq[] = "GET /hang HTTP/1.1\r\nHost: h\r\n\r\n";
    cl_send(fd, rq, sizeof(rq) - 1);
    wait_ctl_requests(1);
    /* the client hangs up mid-relay with a reset (a clean FIN after a whole
     * request is a half-close: the server still answers it, http.h) */
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
    (void)close(fd);
    for (int i = 0; i < 25000 && atomic_load(&ctl.aborts) == 0; i++) {
        pump();
    }
    assert_int_equal(atomic_load(&ctl.aborts), 1);
}

static void
test_shutdown_with_relay_in_flight(void **state)
{
    (void)state;
    int fd = cl_open();
    const char rq[] = "GET /hang HTTP/1.1\r\nHost: h\r\n\r\n";
    cl_send(fd, rq, sizeof(rq) - 1);
    wait_ctl_requests(1);
    control_stop(); /* the hub closes the pair: the worker answers 503 */
    struct resp r;
    cl_recv(fd, false, &r);
    assert_int_equal(r.status, 503);
    (void)close(fd);
}

static void
test_shutdown_worker_first(void **state)
{
    (void)state;
    int fd = cl_open();
    const char rq[] = "GET /hang HTTP/1.1\r\nHost: h\r\n\r\n";
    cl_send(fd, rq, sizeof(rq) - 1);
    wait_ctl_requests(1);
    gw_loopq_close(wq); /* the worker goes first: its server aborts the relay */
    gw_server_free(wsrv);
    wsrv = NULL;
    (void)close(fd);
    for (int i = 0; i < 25000 && atomic_load(&ctl.aborts) == 0; i++) {
        (void)usleep(200);
    }
    assert_int_equal(atomic_load(&ctl.aborts), 1);
}

static void
test_hub_gone_then_client_leaves(void **state)
{
    (void)state;
    int fd = cl_open();
    const char rq[] = "GET /hang HTTP/1.1\r\nHost: h\r\n\r\n";
    cl_send(fd, rq, sizeof(rq) - 1);
    wait_ctl_requests(1);
    gw_loopq_close(wq); /* the hub's 503 never arrives */
    control_stop();     /* the hub is freed with the relay waiting on the worker */
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
    (void)close(fd);
    for (int i = 0; i < 500; i++) {
        pump(); /* the hang-up: its cancel finds the control queue closed (ASan: no use of the hub)
                 */
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_answer_passes_through, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chunked_request_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_counted_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_too_large, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_gone_aborts_control, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_with_relay_in_flight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_worker_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hub_gone_then_client_leaves, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
