/*
 * tests/unit/gateway/http/server_test.c: the HTTP/1.x server's protocol handling,
 * driven through real loopback sockets (harness in http_harness.h): simple
 * requests and header access, keep-alive, pipelining, 100-continue, chunked
 * bodies with trailers, HTTP/1.0, Connection: close, unread bodies, HEAD,
 * TLS and request ids.
 */
#include "tests/unit/gateway/http_harness.h"

#include <openssl/ssl.h>

/* ---- tests ---- */

static void
test_simple_get(void **state)
{
    (void)state;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "GET /b/k%20x?acl HTTP/1.1\r\nHost: x\r\nX-A:  padded \t\r\n\r\n");
    struct resp r;
    size_t end = wait_resp(&cl, 0, false, &r, 3000);
    assert_int_equal(end, cl.in.len);
    assert_int_equal(r.status, 200);
    assert_string_equal(buf_cstr(&r.body), "GET /b/k%20x?acl|/b/k%20x|acl");
    check_id(&r);
    char v[64];
    assert_true(hdr(&r, "x-amz-request-id", v, sizeof(v)));
    assert_string_equal(v, th.last_id);
    assert_false(hdr(&r, "connection", v, sizeof(v)));
    pump_ms(&cl, 50);
    assert_false(cl.eof);
    resp_cleanup(&r);
    cl_close(&cl);
}

/* gw_request_fn that checks header accessors */
static void
on_request_headers(struct gw_req *req, void *arg)
{
    (void)arg;
    assert_string_equal(gw_req_header(req, "x-a"), "padded");
    assert_string_equal(gw_req_header(req, "X-EMPTY"), "");
    assert_null(gw_req_header(req, "x-none"));
    assert_int_equal(gw_req_header_count(req), 3);
    const struct gw_header *h = gw_req_header_at(req, 1);
    assert_string_equal(h->name, "X-A");
    assert_int_equal(h->value_len, 6);
    assert_null(gw_req_header_at(req, 3));
    assert_int_equal(gw_req_version_minor(req), 1);
    assert_int_equal(gw_req_content_length(req), 0);
    assert_false(gw_req_is_tls(req));
    assert_ptr_equal(gw_req_config(req), &cfg);
    assert_non_null(strstr(gw_req_peer(req), "127.0.0.1:"));
    th.requests++;
    gw_resp_simple(req, 204, NULL, NULL, 0);
}

static void
test_headers(void **state)
{
    (void)state;
    srv->on_request = on_request_headers;
    struct client cl;
    cl_open(&cl);
    /* the value arrives in two writes: spans across executes are one value */
    cl_sends(&cl, "GET / HTTP/1.1\r\nHost: x\r\nX-A:  pad");
    pump_ms(&cl, 20);
    cl_sends(&cl, "ded \t\r\nX-Empty:\r\n\r\n");
    struct resp r;
    (void)wait_resp(&cl, 0, false, &r, 3000);
    assert_int_equal(r.status, 204);
    assert_int_equal(th.requests, 1);
    resp_cleanup(&r);
    cl_close(&cl);
}

static void
test_keepalive(void **state)
{
    (void)state;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "GET /1 HTTP/1.1\r\nHost: x\r\n\r\n");
    struct resp r1, r2;
    size_t off = wait_resp(&cl, 0, false, &r1, 3000);
    char id1[64], id2[64];
    assert_true(hdr(&r1, "x-amz-request-id", id1, sizeof(id1)));
    cl_sends(&cl, "GET /2 HTTP/1.1\r\nHost: x\r\n\r\n");
    (void)wait_resp(&cl, off, false, &r2, 3000);
    assert_string_equal(buf_cstr(&r2.body), "GET /2|/2|");
    assert_true(hdr(&r2, "x-amz-request-id", id2, sizeof(id2)));
    assert_string_not_equal(id1, id2);
    assert_int_equal(th.requests, 2);
    /* a plain connection is read by its own event and written at once
     * (gateway/net/bevio.c): the bufferevent's events stay off, so a request
     * costs no epoll_ctl */
    struct gw_conn *c = TAILQ_FIRST(&srv->conns);
    assert_non_null(c);
    assert_true(c->direct);
    assert_int_equal(bufferevent_get_enabled(c->bev) & (EV_READ | EV_WRITE), 0);
    assert_true(event_pending(c->rev, EV_READ, NULL));
    resp_cleanup(&r1);
    resp_cleanup(&r2);
    cl_close(&cl);
}

static void
test_pipelined(void **state)
{
    (void)state;
    th.mode = MODE_ECHO;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nonePOST /2 "
                  "HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n"
                  "POST /3 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nthree");
    struct resp r[3];
    size_t off = 0;
    const char *want[] = {"one", "two", "three"};
    for (int i = 0; i < 3; i++) {
        off = wait_resp(&cl, off, false, &r[i], 3000);
        assert_int_equal(r[i].status, 200);
        assert_string_equal(buf_cstr(&r[i].body), want[i]);
        resp_cleanup(&r[i]);
    }
    assert_int_equal(th.requests, 3);
    assert_int_equal(off, cl.in.len);
    cl_close(&cl);
}

static void
test_pipelined_waits_for_response(void **state)
{
    (void)state;
    th.mode = MODE_DEFER_ECHO;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n");
    pump_ms(&cl, 50);
    /* the second head is not parsed while the first response is pending */
    assert_int_equal(th.requests, 1);
    assert_int_equal(cl.in.len, 0);
    assert_non_null(th.req);
    gw_req_body_start(th.req); /* no body: ends at once */
    struct resp r;
    size_t off = wait_resp(&cl, 0, false, &r, 3000);
    resp_cleanup(&r);
    pump_ms(&cl, 30);
    assert_int_equal(th.requests, 2);
    gw_req_body_start(th.req);
    (void)wait_resp(&cl, off, false, &r, 3000);
    assert_int_equal(r.status, 200);
    resp_cleanup(&r);
    cl_close(&cl);
}

static void
test_expect_continue(void **state)
{
    (void)state;
    th.mode = MODE_DEFER_ECHO;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl,
             "PUT /k HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
    pump_ms(&cl, 100);
    assert_int_equal(th.requests, 1);
    assert_int_equal(cl.in.len, 0); /* no 100 before gw_req_body_start */
    gw_req_body_start(th.req);
    struct resp r;
    size_t off = wait_resp(&cl, 0, false, &r, 3000);
    assert_int_equal(r.status, 100);
    resp_cleanup(&r);
    cl_sends(&cl, "hello");
    (void)wait_resp(&cl, off, false, &r, 3000);
    assert_int_equal(r.status, 200);
    assert_string_equal(buf_cstr(&r.body), "hello");
    resp_cleanup(&r);
    cl_close(&cl);
}

static void
test_expect_refused_closes(void **state)
{
    (void)state;
    /* a final answer without the 100: the body may never come, so close */
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl,
             "PUT /k HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
    struct resp r;
    (void)wait_resp(&cl, 0, false, &r, 3000);
    assert_int_equal(r.status, 200);
    assert_memory_equal(cl.in.data, "HTTP/1.1 200", 12);
    char v[32];
    assert_true(hdr(&r, "connection", v, sizeof(v)));
    assert_string_equal(v, "close");
    wait_eof(&cl, 3000);
    resp_cleanup(&r);
    cl_close(&cl);
}

static void
test_chunked_trailer(void **state)
{
    (void)state;
    th.mode = MODE_ECHO;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: yes\r\n\r\n");
    struct resp r;
    (void)wait_resp(&cl, 0, false, &r, 3000);
    assert_int_equal(r.status, 200);
    assert_string_equal(buf_cstr(&r.body), "hello world");
    char v[32];
    assert_true(hdr(&r, "x-trailer", v, sizeof(v)));
    assert_string_equal(v, "yes");
    resp_cleanup(&r);
    cl_close(&cl);
}

static void
test_http10(void **state)
{
    (void)state;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "GET /a HTTP/1.0\r\n\r\n");
    struct resp r;
    (void)wait_resp(&cl, 0, false, &r, 3000);
    char v[32];
    assert_true(hdr(&r, "connection", v, sizeof(v)));
    assert_string_equal(v, "close");
    wait_eof(&cl, 3000);
    resp_cleanup(&r);
    cl_close(&cl);

    cl_open(&cl);
    cl_sends(&cl, "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    size_t off = wait_resp(&cl, 0, false, &r, 3000);
    assert_true(hdr(&r, "connection", v, sizeof(v)));
    assert_string_equal(v, "keep-alive");
    resp_cleanup(&r);
    cl_sends(&cl, "GET /b HTTP/1.0\r\n\r\n");
    (void)wait_resp(&cl, off, false, &r, 3000);
    assert_string_equal(buf_cstr(&r.body), "GET /b|/b|");
    wait_eof(&cl, 3000);
    resp_cleanup(&r);
    cl_close(&cl);
}

static void
test_connection_close(void **state)
{
    (void)state;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /2 HTTP/1.1\r\n");
    struct resp r;
    size_t off = wait_resp(&cl, 0, false, &r, 3000);
    char v[32];
    assert_true(hdr(&r, "connection", v, sizeof(v)));
    assert_string_equal(v, "close");
    wait_eof(&cl, 3000);
    assert_int_equal(cl.in.len, off);
    assert_int_equal(th.requests, 1);
    resp_cleanup(&r);
    cl_close(&cl);
}

/* gw_request_fn: answers with Connection: close wanted by the handler */
static void
on_request_close(struct gw_req *req, void *arg)
{
    (void)arg;
    gw_req_set_close(req);
    gw_resp_simple(req, 200, NULL, "x", 1);
}

static void
test_handler_close(void **state)
{
    (void)state;
    srv->on_request = on_request_close;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    struct resp r;
    (void)wait_resp(&cl, 0, false, &r, 3000);
    char v[32];
    assert_true(hdr(&r, "connection", v, sizeof(v)));
    assert_string_equal(v, "close");
    wait_eof(&cl, 3000);
    resp_cleanup(&r);
    cl_close(&cl);
}

static void
test_unread_body_discarded(void **state)
{
    (void)state;
    /* small unread body: discarded, the connection is kept */
    char v[32];
    struct client cl;
    cl_open(&cl);
    char body[2000];
    memset(body, 'b', sizeof(body));
    cl_sends(&cl, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n");
    cl_send(&cl, body, sizeof(body));
    struct resp r;
    size_t off = wait_resp(&cl, 0, false, &r, 3000);
    assert_int_equal(r.status, 200);
    resp_cleanup(&r);
    cl_sends(&cl, "GET /b HTTP/1.1\r\nHost: x\r\n\r\n");
    (void)wait_resp(&cl, off, false, &r, 3000);
    assert_string_equal(buf_cstr(&r.body), "GET /b|/b|");
    resp_cleanup(&r);
    cl_close(&cl);

    /* one the client sends whole without asking for 100-continue: read to its
     * end (limits.discard_body_bytes, 1 MiB here), so the client's send
     * completes and the connection is kept */
    static char mid[600 * 1024];
    memset(mid, 'm', sizeof(mid));
    cl_open(&cl);
    cl_sends(&cl, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 614400\r\n\r\n");
    cl_send(&cl, mid, sizeof(mid));
    off = wait_resp(&cl, 0, false, &r, 3000);
    assert_int_equal(r.status, 200);
    assert_false(hdr(&r, "connection", v, sizeof(v)));
    resp_cleanup(&r);
    cl_sends(&cl, "GET /b HTTP/1.1\r\nHost: x\r\n\r\n");
    (void)wait_resp(&cl, off, false, &r, 3000);
    assert_string_equal(buf_cstr(&r.body), "GET /b|/b|");
    resp_cleanup(&r);
    cl_close(&cl);

    /* past the bound: the connection closes instead */
    cl_open(&cl);
    cl_sends(&cl, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n");
    (void)wait_resp(&cl, 0, false, &r, 3000);
    assert_true(hdr(&r, "connection", v, sizeof(v)));
    assert_string_equal(v, "close");
    wait_eof(&cl, 3000);
    resp_cleanup(&r);
    cl_close(&cl);
}

static void
test_head_response(void **state)
{
    (void)state;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "HEAD /h HTTP/1.1\r\nHost: x\r\n\r\nGET /g HTTP/1.1\r\nHost: x\r\n\r\n");
    struct resp r;
    size_t off = wait_resp(&cl, 0, true, &r, 3000);
    char v[32];
    assert_true(hdr(&r, "content-length", v, sizeof(v)));
    assert_string_equal(v, "11"); /* "HEAD /h|/h|" */
    resp_cleanup(&r);
    (void)wait_resp(&cl, off, false, &r, 3000);
    assert_string_equal(buf_cstr(&r.body), "GET /g|/g|");
    resp_cleanup(&r);
    cl_close(&cl);
}

static void
test_tls(void **state)
{
    (void)state;
    char dir[] = "/tmp/http_test_tlsXXXXXX";
    assert_non_null(mkdtemp(dir));
    char cert[128], key[128], cmd[512];
    (void)snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
    (void)snprintf(key, sizeof(key), "%s/key.pem", dir);
    (void)snprintf(cmd, sizeof(cmd),
                   "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
                   "-keyout %s -out %s -days 1 -subj /CN=localhost >/dev/null 2>&1",
                   key, cert);
    if (system(cmd) != 0) {
        skip();
    }
    struct gw_config tcfg = cfg;
    tcfg.listen[0].tls_cert = cert;
    tcfg.listen[0].tls_key = key;
    char err[256];
    struct gw_server *tsrv = gw_server_new(base, &tcfg, on_request, NULL, err, sizeof(err));
    assert_non_null(tsrv);
    struct gw_server *plain = srv;
    srv = tsrv; /* cl_open connects to srv */
    struct client cl;
    cl_open(&cl);
    srv = plain;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    assert_non_null(ctx);
    SSL *ssl = SSL_new(ctx);
    assert_non_null(ssl);
    assert_int_equal(SSL_set_fd(ssl, cl.fd), 1);
    uint64_t end = now_ms() + 5000;
    int rc;
    while ((rc = SSL_connect(ssl)) != 1 && now_ms() < end) {
        int e = SSL_get_error(ssl, rc);
        assert_true(e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE);
        (void)event_base_loop(base, EVLOOP_NONBLOCK);
        usleep(1000);
    }
    assert_int_equal(rc, 1);
    static const char req[] = "GET /tls HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(SSL_write(ssl, req, (int)sizeof(req) - 1), (int)sizeof(req) - 1);
    struct buf in;
    buf_init(&in, 1 << 20);
    while (strstr(buf_cstr(&in), "GET /tls|/tls|") == NULL && now_ms() < end) {
        (void)event_base_loop(base, EVLOOP_NONBLOCK);
        char tmp[4096];
        int n = SSL_read(ssl, tmp, sizeof(tmp));
        if (n > 0) {
            assert_int_equal(buf_append(&in, tmp, (size_t)n), 0);
        } else {
            usleep(1000);
        }
    }
    assert_memory_equal(buf_cstr(&in), "HTTP/1.1 200 OK\r\n", 17);
    assert_non_null(strstr(buf_cstr(&in), "GET /tls|/tls|"));
    buf_cleanup(&in);
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    cl_close(&cl);
    gw_server_free(tsrv);
    /* a missing key file fails with a message naming it */
    tcfg.listen[0].tls_key = cmd;
    (void)snprintf(cmd, sizeof(cmd), "%s/missing.pem", dir);
    assert_null(gw_server_new(base, &tcfg, on_request, NULL, err, sizeof(err)));
    assert_non_null(strstr(err, "missing.pem"));
    (void)unlink(cert);
    (void)unlink(key);
    (void)rmdir(dir);
}

/* gw_request_fn: a 201 with a header of its own and 5 body bytes, then a chunked 200 */
static void
on_request_exact(struct gw_req *req, void *arg)
{
    (void)arg;
    if (strcmp(gw_req_path(req), "/chunked") == 0) {
        gw_resp_start(req, 200);
        gw_resp_body_begin(req, -1);
        assert_int_equal(gw_resp_body_write(req, "abcdefghijklmnopqrstuvwxyz", 26), 0);
        gw_resp_end(req);
        return;
    }
    gw_resp_start(req, 201);
    assert_int_equal(gw_resp_header(req, "X-Custom", "v a"), 0);
    gw_resp_body_begin(req, 5);
    assert_int_equal(gw_resp_body_write(req, "hello", 5), 0);
    gw_resp_end(req);
}

/* The response head byte for byte: status line, the server's lines, the handler's, framing. */
static void
test_response_head_bytes(void **state)
{
    (void)state;
    srv->on_request = on_request_exact;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
    struct resp r;
    size_t off = wait_resp(&cl, 0, false, &r, 3000);
    const char *in = cl.in.data;
    static const char line1[] = "HTTP/1.1 201 Created\r\nServer: fencegate\r\nDate: ";
    assert_memory_equal(in, line1, sizeof(line1) - 1);
    const char *p = in + sizeof(line1) - 1 + 29; /* IMF-fixdate is 29 characters */
    assert_memory_equal(p, "\r\nx-amz-request-id: ", 20);
    p += 20;
    for (int i = 0; i < 16; i++) {
        assert_non_null(strchr("0123456789abcdef", p[i]));
    }
    p += 16;
    static const char rest[] = "\r\nX-Custom: v a\r\nContent-Length: 5\r\n\r\nhello";
    assert_int_equal((size_t)(in + off - p), sizeof(rest) - 1);
    assert_memory_equal(p, rest, sizeof(rest) - 1);
    resp_cleanup(&r);
    cl_sends(&cl, "GET /chunked HTTP/1.1\r\nHost: x\r\n\r\n");
    (void)wait_resp(&cl, off, false, &r, 3000);
    assert_string_equal(buf_cstr(&r.body), "abcdefghijklmnopqrstuvwxyz");
    assert_non_null(strstr(buf_cstr(&cl.in) + off, "Transfer-Encoding: chunked\r\n\r\n1a\r\n"
                                                   "abcdefghijklmnopqrstuvwxyz\r\n0\r\n"));
    resp_cleanup(&r);
    cl_close(&cl);
}

static void
test_request_ids_unique(void **state)
{
    (void)state;
    char a[GW_HTTP_ID_LEN + 1], b[GW_HTTP_ID_LEN + 1];
    gw_http_new_id(a);
    for (int i = 0; i < 1000; i++) {
        gw_http_new_id(b);
        assert_string_not_equal(a, b);
        assert_int_equal(strspn(b, "0123456789abcdef"), GW_HTTP_ID_LEN);
    }
}

int
main(void)
{
    log_threshold = LOG_NONE;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_simple_get, setup, teardown),
        cmocka_unit_test_setup_teardown(test_response_head_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_headers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keepalive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipelined, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipelined_waits_for_response, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expect_continue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expect_refused_closes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chunked_trailer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http10, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connection_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handler_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unread_body_discarded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_head_response, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls, setup, teardown),
        cmocka_unit_test(test_request_ids_unique),
    };
    return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
