/*
 * tests/unit/gateway/http_test.c: the HTTP/1.x server, driven through real
 * loopback sockets in the test's own event_base.  Includes gateway/http.c to
 * look at a connection's buffers (bounded-memory checks).
 */
#include "../../../gateway/http.c"

#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/ssl.h>

/* ---- the test's handler ---- */

enum mode {
    MODE_SIMPLE,     /* answer "METHOD TARGET" at once, body unread */
    MODE_ECHO,       /* read the whole body, answer with it (+ x-trailer) */
    MODE_DEFER_ECHO, /* as ECHO, but the test calls gw_req_body_start */
    MODE_SLOW,       /* start the body, the test reads it */
    MODE_STREAM_OUT, /* answer with a large chunked body, honouring ERR_AGAIN */
};

struct th {
    enum mode mode;
    struct gw_req *req; /* the request in progress (ECHO/SLOW/STREAM) */
    int requests;
    int aborts;
    int abort_err;
    struct buf body;  /* body read so far */
    size_t out_total; /* STREAM_OUT: bytes to send */
    size_t out_sent;  /* STREAM_OUT: bytes sent */
    int agains;       /* STREAM_OUT: ERR_AGAIN seen */
    int drained;      /* STREAM_OUT: on_output_drained calls */
    char last_id[GW_HTTP_ID_LEN + 1];
};

static struct th th;
static struct event_base *base;
static struct gw_server *srv;
static struct gw_config cfg;
static char host[] = "127.0.0.1";

static void
respond_echo(struct gw_req *req)
{
    gw_resp_start(req, 200);
    const char *t = gw_req_trailer(req, "x-trailer");
    if (t != NULL) {
        assert_int_equal(gw_resp_header(req, "x-trailer", t), 0);
    }
    gw_resp_body_begin(req, (int64_t)th.body.len);
    int rc = gw_resp_body_write(req, th.body.data, th.body.len);
    assert_true(rc == 0 || rc == ERR_AGAIN);
    gw_resp_end(req);
    th.req = NULL;
}

/* gw_req_ops.on_body_ready */
static void
on_body_ready(struct gw_req *req, void *arg)
{
    (void)arg;
    if (th.mode == MODE_SLOW) {
        return;
    }
    char tmp[1000];
    for (;;) {
        ssize_t n = gw_req_body_read(req, tmp, sizeof(tmp));
        if (n > 0) {
            assert_int_equal(buf_append(&th.body, tmp, (size_t)n), 0);
            continue;
        }
        if (n == 0) {
            respond_echo(req);
        }
        return;
    }
}

static void
stream_more(struct gw_req *req)
{
    char chunk[3000];
    while (th.out_sent < th.out_total) {
        size_t n =
            th.out_total - th.out_sent < sizeof(chunk) ? th.out_total - th.out_sent : sizeof(chunk);
        for (size_t i = 0; i < n; i++) {
            chunk[i] = (char)((th.out_sent + i) % 251);
        }
        int rc = gw_resp_body_write(req, chunk, n);
        th.out_sent += n;
        if (rc == ERR_AGAIN) {
            th.agains++;
            return;
        }
        assert_int_equal(rc, 0);
    }
    gw_resp_end(req);
    th.req = NULL;
}

/* gw_req_ops.on_output_drained */
static void
on_output_drained(struct gw_req *req, void *arg)
{
    (void)arg;
    th.drained++;
    stream_more(req);
}

/* gw_req_ops.on_abort */
static void
on_abort(struct gw_req *req, int err, void *arg)
{
    (void)arg;
    assert_ptr_equal(req, th.req);
    th.aborts++;
    th.abort_err = err;
    th.req = NULL;
}

static const struct gw_req_ops ops = {
    .on_body_ready = on_body_ready,
    .on_output_drained = on_output_drained,
    .on_abort = on_abort,
};

/* gw_request_fn */
static void
on_request(struct gw_req *req, void *arg)
{
    (void)arg;
    th.requests++;
    (void)snprintf(th.last_id, sizeof(th.last_id), "%s", gw_req_id(req));
    buf_reset(&th.body);
    switch (th.mode) {
    case MODE_SIMPLE: {
        char text[512];
        int n = snprintf(text, sizeof(text), "%s %s|%s|%s", gw_req_method(req), gw_req_target(req),
                         gw_req_path(req), gw_req_query(req));
        gw_resp_simple(req, 200, "text/plain", text, (size_t)n);
        break;
    }
    case MODE_ECHO:
    case MODE_SLOW:
        th.req = req;
        gw_req_set_ops(req, &ops, NULL);
        gw_req_body_start(req);
        break;
    case MODE_DEFER_ECHO:
        th.req = req;
        gw_req_set_ops(req, &ops, NULL);
        break;
    case MODE_STREAM_OUT:
        th.req = req;
        gw_req_set_ops(req, &ops, NULL);
        gw_resp_start(req, 200);
        gw_resp_body_begin(req, -1);
        stream_more(req);
        break;
    default:
        fail();
    }
}

/* ---- a raw client ---- */

struct client {
    int fd;
    struct buf in; /* everything received */
    bool eof;      /* EOF or reset */
};

static int cl_rcvbuf; /* SO_RCVBUF for the next cl_open, 0 for the default */

static uint64_t
now_ms(void)
{
    return clock_mono_ms();
}

static void
cl_open(struct client *cl)
{
    memset(cl, 0, sizeof(*cl));
    buf_init(&cl->in, 64 << 20);
    cl->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(cl->fd >= 0);
    if (cl_rcvbuf > 0) {
        assert_int_equal(setsockopt(cl->fd, SOL_SOCKET, SO_RCVBUF, &cl_rcvbuf, sizeof(cl_rcvbuf)),
                         0);
    }
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons(gw_server_port(srv, 0));
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(cl->fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(fcntl(cl->fd, F_SETFL, O_NONBLOCK), 0);
}

static void
cl_close(struct client *cl)
{
    if (cl->fd >= 0) {
        (void)close(cl->fd);
        cl->fd = -1;
    }
    buf_cleanup(&cl->in);
}

static void
cl_read(struct client *cl)
{
    char tmp[65536];
    while (cl->fd >= 0 && !cl->eof) {
        ssize_t n = recv(cl->fd, tmp, sizeof(tmp), 0);
        if (n > 0) {
            assert_int_equal(buf_append(&cl->in, tmp, (size_t)n), 0);
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            cl->eof = true;
        } else {
            break;
        }
    }
}

static void
pump(struct client *cl)
{
    (void)event_base_loop(base, EVLOOP_NONBLOCK);
    if (cl != NULL) {
        cl_read(cl);
    }
    struct pollfd p = {.fd = cl != NULL ? cl->fd : -1, .events = POLLIN};
    (void)poll(&p, 1, 1);
}

static void
pump_ms(struct client *cl, int ms)
{
    uint64_t end = now_ms() + (uint64_t)ms;
    while (now_ms() < end) {
        pump(cl);
    }
}

/* Send everything, running the server meanwhile. */
static void
cl_send(struct client *cl, const void *data, size_t len)
{
    const char *p = data;
    uint64_t end = now_ms() + 5000;
    while (len > 0 && now_ms() < end) {
        ssize_t n = send(cl->fd, p, len, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n < 0 && errno != EAGAIN) {
            break;
        }
        pump(cl);
    }
}

static void
cl_sends(struct client *cl, const char *s)
{
    cl_send(cl, s, strlen(s));
}

static const char *
find_mem(const char *d, size_t len, const char *pat, size_t plen)
{
    for (size_t i = 0; i + plen <= len; i++) {
        if (memcmp(d + i, pat, plen) == 0) {
            return d + i;
        }
    }
    return NULL;
}

struct resp {
    int status;
    char head[8192]; /* the head, NUL-terminated */
    struct buf body; /* decoded */
};

static bool
hdr(const struct resp *r, const char *name, char *out, size_t outlen)
{
    size_t nlen = strlen(name);
    const char *line = strstr(r->head, "\r\n");
    while (line != NULL && line[2] != '\0') {
        line += 2;
        const char *end = strstr(line, "\r\n");
        if (end == NULL) {
            break;
        }
        if ((size_t)(end - line) > nlen && strncasecmp(line, name, nlen) == 0 &&
            line[nlen] == ':') {
            const char *v = line + nlen + 1;
            while (*v == ' ') {
                v++;
            }
            (void)snprintf(out, outlen, "%.*s", (int)(end - v), v);
            return true;
        }
        line = end;
    }
    return false;
}

/*
 * Parse the response at d[0..len).  Returns the bytes it takes, 0 if incomplete.
 * no_body: the request was HEAD.
 */
static size_t
parse_resp(const char *d, size_t len, bool eof, bool no_body, struct resp *r)
{
    const char *end = find_mem(d, len, "\r\n\r\n", 4);
    if (end == NULL) {
        return 0;
    }
    size_t hlen = (size_t)(end - d) + 4;
    assert_true(hlen < sizeof(r->head));
    memcpy(r->head, d, hlen);
    r->head[hlen] = '\0';
    assert_true(hlen > 12 && memcmp(d, "HTTP/1.1 ", 9) == 0);
    uint64_t st;
    assert_int_equal(parse_u64n(d + 9, 3, 100, 599, &st), 0);
    r->status = (int)st;
    buf_init(&r->body, 64 << 20);
    char v[64];
    if (no_body || r->status < 200 || r->status == 204 || r->status == 304) {
        return hlen;
    }
    if (hdr(r, "content-length", v, sizeof(v))) {
        uint64_t cl;
        assert_int_equal(parse_u64n(v, strlen(v), 0, UINT32_MAX, &cl), 0);
        if (len - hlen < cl) {
            return 0;
        }
        assert_int_equal(buf_append(&r->body, d + hlen, cl), 0);
        return hlen + cl;
    }
    if (hdr(r, "transfer-encoding", v, sizeof(v))) {
        assert_string_equal(v, "chunked");
        size_t off = hlen;
        for (;;) {
            const char *le = find_mem(d + off, len - off, "\r\n", 2);
            if (le == NULL) {
                buf_cleanup(&r->body);
                return 0;
            }
            uint64_t n;
            assert_int_equal(parse_hex_u64n(d + off, (size_t)(le - (d + off)), &n), 0);
            off = (size_t)(le - d) + 2;
            if (len - off < n + 2) {
                buf_cleanup(&r->body);
                return 0;
            }
            if (n == 0) {
                assert_memory_equal(d + off, "\r\n", 2);
                return off + 2;
            }
            assert_int_equal(buf_append(&r->body, d + off, n), 0);
            assert_memory_equal(d + off + n, "\r\n", 2);
            off += n + 2;
        }
    }
    if (!eof) {
        return 0;
    }
    assert_int_equal(buf_append(&r->body, d + hlen, len - hlen), 0);
    return len;
}

/* Wait for the n-th response (0-based) after skip bytes; fills r.  Returns its end offset. */
static size_t
wait_resp(struct client *cl, size_t skip, bool no_body, struct resp *r, int timeout_ms)
{
    uint64_t end = now_ms() + (uint64_t)timeout_ms;
    size_t seen = 0;
    bool seen_eof = false;
    for (;;) {
        size_t n = 0;
        if (cl->in.len > skip && (cl->in.len != seen || cl->eof != seen_eof)) {
            seen = cl->in.len;
            seen_eof = cl->eof;
            n = parse_resp(cl->in.data + skip, cl->in.len - skip, cl->eof, no_body, r);
        }
        if (n > 0) {
            return skip + n;
        }
        if (now_ms() > end || (cl->eof && cl->in.len == skip)) {
            fail_msg("no response (have %zu bytes, eof %d)", cl->in.len, cl->eof);
        }
        pump(cl);
    }
}

static void
wait_eof(struct client *cl, int timeout_ms)
{
    uint64_t end = now_ms() + (uint64_t)timeout_ms;
    while (!cl->eof && now_ms() < end) {
        pump(cl);
    }
    assert_true(cl->eof);
}

static void
resp_cleanup(struct resp *r)
{
    buf_cleanup(&r->body);
}

static void
check_id(const struct resp *r)
{
    char v[64];
    assert_true(hdr(r, "x-amz-request-id", v, sizeof(v)));
    assert_int_equal(strlen(v), GW_HTTP_ID_LEN);
    assert_true(hdr(r, "server", v, sizeof(v)));
    assert_string_equal(v, "fencegate");
    assert_true(hdr(r, "date", v, sizeof(v)));
}

/* One request on a fresh connection, expecting an error and a close. */
static void
expect_refused(const char *raw, int status, const char *code)
{
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, raw);
    struct resp r;
    (void)wait_resp(&cl, 0, false, &r, 3000);
    assert_int_equal(r.status, status);
    check_id(&r);
    char v[64];
    assert_true(hdr(&r, "content-type", v, sizeof(v)));
    assert_string_equal(v, "application/xml");
    assert_true(hdr(&r, "connection", v, sizeof(v)));
    assert_string_equal(v, "close");
    char want[128];
    (void)snprintf(want, sizeof(want), "<Code>%s</Code>", code);
    assert_non_null(strstr(buf_cstr(&r.body), want));
    assert_non_null(strstr(buf_cstr(&r.body), "<RequestId>"));
    wait_eof(&cl, 3000);
    resp_cleanup(&r);
    cl_close(&cl);
}

/* The server still answers a plain GET on a new connection. */
static void
expect_serving(void)
{
    enum mode m = th.mode;
    th.mode = MODE_SIMPLE;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "GET /still HTTP/1.1\r\nHost: x\r\n\r\n");
    struct resp r;
    (void)wait_resp(&cl, 0, false, &r, 3000);
    assert_int_equal(r.status, 200);
    assert_string_equal(buf_cstr(&r.body), "GET /still|/still|");
    resp_cleanup(&r);
    cl_close(&cl);
    th.mode = m;
}

/* ---- fixtures ---- */

static int
setup(void **state)
{
    (void)state;
    memset(&th, 0, sizeof(th));
    buf_init(&th.body, 64 << 20);
    memset(&cfg, 0, sizeof(cfg));
    cfg.nlisten = 1;
    cfg.listen[0].host = host;
    cfg.limits.max_header_bytes = 4096;
    cfg.limits.max_headers = 20;
    cfg.limits.max_url_bytes = 256;
    cfg.limits.buffer_bytes = 8192;
    base = event_base_new();
    assert_non_null(base);
    char err[256];
    srv = gw_server_new(base, &cfg, on_request, NULL, err, sizeof(err));
    assert_non_null(srv);
    assert_true(gw_server_port(srv, 0) != 0);
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    gw_server_free(srv);
    srv = NULL;
    event_base_free(base);
    buf_cleanup(&th.body);
    return 0;
}

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
    th.out_total = 8u << 20;
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
    (void)wait_resp(&cl, 0, false, &r, 10000);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body.len, th.out_total);
    for (size_t i = 0; i < r.body.len; i++) {
        if ((unsigned char)r.body.data[i] != i % 251) {
            fail_msg("byte %zu differs", i);
        }
    }
    assert_true(th.drained > 0);
    resp_cleanup(&r);
    cl_close(&cl);
}

static void
test_smuggling_refused(void **state)
{
    (void)state;
    static const struct {
        const char *raw;
        int status;
        const char *code;
    } cases[] = {
        {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
         "0\r\n\r\n",
         400, "InvalidRequest"},
        {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"
         "0\r\n\r\n",
         400, "InvalidRequest"},
        {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 400,
         "InvalidRequest"},
        {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400,
         "InvalidRequest"},
        {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\nabc", 400, "InvalidRequest"},
        {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400, "InvalidRequest"},
        {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501,
         "NotImplemented"},
        {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "NotImplemented"},
        {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
         "chunked\r\n\r\n0\r\n\r\n",
         501, "NotImplemented"},
        {"get / HTTP/1.1\r\nHost: x\r\n\r\n", 400, "InvalidRequest"},
        {"GET /\r\n\r\n", 400, "InvalidRequest"},
        {"GET / HTTP/1.2\r\nHost: x\r\n\r\n", 505, "HTTPVersionNotSupported"},
        {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, "HTTPVersionNotSupported"},
        {"GET / HTTP/1.1\r\nHost: x\r\nX-C: a\001b\r\n\r\n", 400, "InvalidRequest"},
        {"GET / HTTP/1.1\r\nHost: x\r\nX-C: a\177b\r\n\r\n", 400, "InvalidRequest"},
        {"GET / HTTP/1.1\r\nHost: x\r\nX-C: a\r\n folded\r\n\r\n", 400, "InvalidRequest"},
        {"GET / HTTP/1.1\r\nX-C: a\r\n\r\n", 400, "InvalidRequest"},
        {"GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400, "InvalidRequest"},
        {"GET / HTTP/1.1\nHost: x\n\n", 400, "InvalidRequest"},
        {"GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400, "InvalidRequest"},
        {"CONNECT x:443 HTTP/1.1\r\nHost: x\r\n\r\n", 405, "MethodNotAllowed"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        print_message("case %zu\n", i);
        expect_refused(cases[i].raw, cases[i].status, cases[i].code);
        expect_serving();
    }
    assert_int_equal(th.aborts, 0);
}

static void
test_bad_chunk_mid_body(void **state)
{
    (void)state;
    th.mode = MODE_ECHO;
    expect_refused("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "3\r\nabc\r\nzz\r\nxx\r\n0\r\n\r\n",
                   400, "InvalidRequest");
    assert_int_equal(th.aborts, 1);
    assert_int_equal(th.abort_err, ERR_INVAL);
    expect_serving();
}

static void
test_limits(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 1 << 20);
    /* header bytes */
    assert_int_equal(buf_append_str(&b, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: "), 0);
    for (int i = 0; i < 8000; i++) {
        assert_int_equal(buf_append(&b, "a", 1), 0);
    }
    assert_int_equal(buf_append_str(&b, "\r\n\r\n"), 0);
    expect_refused(buf_cstr(&b), 431, "RequestHeaderSectionTooLarge");
    expect_serving();
    /* header count */
    buf_reset(&b);
    assert_int_equal(buf_append_str(&b, "GET / HTTP/1.1\r\nHost: x\r\n"), 0);
    for (int i = 0; i < 30; i++) {
        assert_int_equal(buf_printf(&b, "X-H%d: v\r\n", i), 0);
    }
    assert_int_equal(buf_append_str(&b, "\r\n"), 0);
    expect_refused(buf_cstr(&b), 431, "RequestHeaderSectionTooLarge");
    expect_serving();
    /* exactly max_headers is fine */
    buf_reset(&b);
    assert_int_equal(buf_append_str(&b, "GET /ok HTTP/1.1\r\nHost: x\r\n"), 0);
    for (int i = 0; i < 19; i++) {
        assert_int_equal(buf_printf(&b, "X-H%d: v\r\n", i), 0);
    }
    assert_int_equal(buf_append_str(&b, "\r\n"), 0);
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, buf_cstr(&b));
    struct resp r;
    (void)wait_resp(&cl, 0, false, &r, 3000);
    assert_int_equal(r.status, 200);
    resp_cleanup(&r);
    cl_close(&cl);
    /* URL */
    buf_reset(&b);
    assert_int_equal(buf_append_str(&b, "GET /"), 0);
    for (int i = 0; i < 300; i++) {
        assert_int_equal(buf_append(&b, "u", 1), 0);
    }
    assert_int_equal(buf_append_str(&b, " HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
    expect_refused(buf_cstr(&b), 414, "InvalidURI");
    expect_serving();
    buf_cleanup(&b);
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

static void
test_header_timeout(void **state)
{
    (void)state;
    cfg.limits.header_timeout_ms = 150;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "GET / HTTP/1.1\r\nHost: x\r\n");
    uint64_t t0 = now_ms();
    struct resp r;
    (void)wait_resp(&cl, 0, false, &r, 3000);
    assert_true(now_ms() - t0 >= 100);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(buf_cstr(&r.body), "<Code>RequestTimeout</Code>"));
    wait_eof(&cl, 3000);
    resp_cleanup(&r);
    cl_close(&cl);
    /* a connection that never sends a byte is closed silently */
    cl_open(&cl);
    wait_eof(&cl, 3000);
    assert_int_equal(cl.in.len, 0);
    cl_close(&cl);
    expect_serving();
}

static void
test_body_timeout(void **state)
{
    (void)state;
    cfg.limits.body_timeout_ms = 150;
    th.mode = MODE_ECHO;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "PUT /k HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n012");
    struct resp r;
    (void)wait_resp(&cl, 0, false, &r, 3000);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(buf_cstr(&r.body), "<Code>RequestTimeout</Code>"));
    assert_int_equal(th.aborts, 1);
    assert_int_equal(th.abort_err, ERR_TIMEOUT);
    wait_eof(&cl, 3000);
    resp_cleanup(&r);
    cl_close(&cl);
}

static void
test_idle_timeout(void **state)
{
    (void)state;
    cfg.limits.idle_timeout_ms = 100;
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    struct resp r;
    size_t off = wait_resp(&cl, 0, false, &r, 3000);
    resp_cleanup(&r);
    wait_eof(&cl, 3000);
    assert_int_equal(cl.in.len, off); /* closed silently */
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

    /* a large one: the connection closes instead */
    cl_open(&cl);
    cl_sends(&cl, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n");
    (void)wait_resp(&cl, 0, false, &r, 3000);
    char v[32];
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
test_max_connections(void **state)
{
    (void)state;
    cfg.limits.max_connections = 2;
    struct client a, b, c;
    cl_open(&a);
    cl_open(&b);
    pump_ms(&a, 30);
    assert_int_equal(srv->nconns, 2);
    assert_true(srv->accepting_paused);
    cl_open(&c); /* completes in the kernel backlog; not accepted yet */
    cl_sends(&c, "GET /c HTTP/1.1\r\nHost: x\r\n\r\n");
    pump_ms(&c, 50);
    assert_int_equal(c.in.len, 0);
    assert_int_equal(srv->nconns, 2);
    cl_close(&a);
    struct resp r;
    (void)wait_resp(&c, 0, false, &r, 3000);
    assert_string_equal(buf_cstr(&r.body), "GET /c|/c|");
    resp_cleanup(&r);
    cl_close(&b);
    cl_close(&c);
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
        cmocka_unit_test_setup_teardown(test_headers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keepalive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipelined, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipelined_waits_for_response, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expect_continue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expect_refused_closes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chunked_trailer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_body_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_pipelined, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_out_backpressure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_smuggling_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_chunk_mid_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hangup_mid_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hangup_waiting_for_handler, setup, teardown),
        cmocka_unit_test_setup_teardown(test_header_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http10, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connection_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handler_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unread_body_discarded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_head_response, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_connections, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_aborts_in_flight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls, setup, teardown),
        cmocka_unit_test(test_request_ids_unique),
    };
    return cmocka_run_group_tests_name("gateway/http", tests, NULL, NULL);
}
