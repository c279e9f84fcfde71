/*
 * tests/unit/gateway/http_harness.h: the shared harness for the HTTP/1.x
 * server tests (http_test.c, http_limits_test.c, http_flow_test.c): a test
 * handler with several modes, a raw non-blocking loopback client, a response
 * parser, and the setup/teardown fixtures that run a gw_server in the test's
 * own event_base.
 *
 * It #includes gateway/http/server.c so that tests can look at a connection's
 * internals (srv->nconns, a connection's buffers).  Each test binary is
 * compiled from its one .c file, so each gets its own copy; the Makefile
 * links against the archive, which then does not pull http.o.  Include this
 * header once, first, from a *_test.c only.
 */
#ifndef TESTS_UNIT_GATEWAY_HTTP_HARNESS_H
#define TESTS_UNIT_GATEWAY_HTTP_HARNESS_H

#include "gateway/http/server.c"

#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

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

static inline void
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
static inline void
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

static inline void
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
static inline void
on_output_drained(struct gw_req *req, void *arg)
{
    (void)arg;
    th.drained++;
    stream_more(req);
}

/* gw_req_ops.on_abort */
static inline void
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
static inline void
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

static inline uint64_t
now_ms(void)
{
    return clock_mono_ms();
}

static inline void
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

static inline void
cl_close(struct client *cl)
{
    if (cl->fd >= 0) {
        (void)close(cl->fd);
        cl->fd = -1;
    }
    buf_cleanup(&cl->in);
}

static inline void
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

static inline void
pump(struct client *cl)
{
    (void)event_base_loop(base, EVLOOP_NONBLOCK);
    if (cl != NULL) {
        cl_read(cl);
    }
    struct pollfd p = {.fd = cl != NULL ? cl->fd : -1, .events = POLLIN};
    (void)poll(&p, 1, 1);
}

static inline void
pump_ms(struct client *cl, int ms)
{
    uint64_t end = now_ms() + (uint64_t)ms;
    while (now_ms() < end) {
        pump(cl);
    }
}

/* Send everything, running the server meanwhile. */
static inline void
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

static inline void
cl_sends(struct client *cl, const char *s)
{
    cl_send(cl, s, strlen(s));
}

static inline const char *
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

static inline bool
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
static inline size_t
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
static inline size_t
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

static inline void
wait_eof(struct client *cl, int timeout_ms)
{
    uint64_t end = now_ms() + (uint64_t)timeout_ms;
    while (!cl->eof && now_ms() < end) {
        pump(cl);
    }
    assert_true(cl->eof);
}

static inline void
resp_cleanup(struct resp *r)
{
    buf_cleanup(&r->body);
}

static inline void
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
static inline void
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
static inline void
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

/*
 * The tests' configuration in c: one listener on 127.0.0.1 (an ephemeral
 * port), small head limits and 8 KiB connection buffers; everything else zero
 * (the defaults).  upstream_endpoint NULL: no upstream section; otherwise the
 * upstream's endpoint, region and keys (all borrowed: they must outlive c).
 */
static inline void
th_config_init(struct gw_config *c, char *upstream_endpoint, char *region, char *access_key,
               char *secret_key)
{
    memset(c, 0, sizeof(*c));
    c->nlisten = 1;
    c->listen[0].host = host;
    c->limits.max_header_bytes = 4096;
    c->limits.max_headers = 20;
    c->limits.max_url_bytes = 256;
    c->limits.buffer_bytes = 8192;
    c->upstream.endpoint = upstream_endpoint;
    if (upstream_endpoint != NULL) {
        c->upstream.region = region;
        c->upstream.access_key = access_key;
        c->upstream.secret_key = secret_key;
    }
}

static inline int
setup(void **state)
{
    (void)state;
    memset(&th, 0, sizeof(th));
    buf_init(&th.body, 64 << 20);
    th_config_init(&cfg, NULL, NULL, NULL, NULL);
    cfg.limits.discard_body_bytes = 1u << 20;
    base = event_base_new();
    assert_non_null(base);
    char err[256];
    srv = gw_server_new(base, &cfg, on_request, NULL, err, sizeof(err));
    assert_non_null(srv);
    assert_true(gw_server_port(srv, 0) != 0);
    return 0;
}

static inline int
teardown(void **state)
{
    (void)state;
    gw_server_free(srv);
    srv = NULL;
    event_base_free(base);
    buf_cleanup(&th.body);
    return 0;
}

#endif /* TESTS_UNIT_GATEWAY_HTTP_HARNESS_H */
