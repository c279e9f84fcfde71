/*
 * gateway/http/resp.c: the response side of gateway/http/http.h, and the error
 * responses the server itself produces (S3 XML).  Event-loop thread only,
 * except gw_http_new_id, which any thread may call.
 *
 * The head is built in req->resp_head until gw_resp_body_begin, which adds
 * the headers the server manages (Server, Date, x-amz-request-id unless the
 * handler set them; framing; Connection) and queues it.  Body bytes go
 * straight to the bufferevent's output; the caller is told to stop producing
 * (ERR_AGAIN) once that passes limits.buffer_bytes.
 */
#include "gateway/http/http.h"

#define LOG_MODULE "http"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/date.h"
#include "common/log.h"
#include "common/num.h"
#include "common/rand.h"
#include "common/token.h"
#include "gateway/base/metrics.h"
#include "gateway/http/internal.h"

static const char *
reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 206:
        return "Partial Content";
    case 301:
        return "Moved Permanently";
    case 302:
        return "Found";
    case 304:
        return "Not Modified";
    case 307:
        return "Temporary Redirect";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 411:
        return "Length Required";
    case 412:
        return "Precondition Failed";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 416:
        return "Range Not Satisfiable";
    case 428:
        return "Precondition Required";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Unknown";
    }
}

/* The Date header value (RFC 9110 section 5.6.7 IMF-fixdate), cached per second. */
static const char *
date_now(struct gw_server *srv)
{
    int64_t sec = clock_wall_ms() / 1000;
    if (sec != srv->date_sec || srv->date[0] == '\0') {
        if (date_http_format(sec, srv->date) != 0) {
            (void)snprintf(srv->date, sizeof(srv->date), "Thu, 01 Jan 1970 00:00:00 GMT");
        }
        srv->date_sec = sec;
    }
    return srv->date;
}

/*
 * Request ids: one salt for the process, drawn once, and one counter shared
 * by every event loop, from which each thread takes a block of ID_BLOCK
 * numbers at a time with a relaxed fetch_add (nothing else is published with
 * it), then counts through its block in thread-local storage: no locked
 * instruction and no cache line shared between loops on the per-request
 * path.  Blocks never overlap, and splitmix64's finaliser is a bijection,
 * so distinct counters give distinct ids on every thread.
 */
#define ID_BLOCK 65536

static pthread_once_t id_once = PTHREAD_ONCE_INIT;
static uint64_t id_salt;               /* written once under id_once, read-only after */
static atomic_uint_fast64_t id_blocks; /* the next block's first counter */
static _Thread_local uint64_t id_next; /* this thread's next counter */
static _Thread_local uint64_t id_end;  /* the end of this thread's block */

/* pthread_once callback, from gw_http_new_id */
static void
on_id_once(void)
{
    if (rand_bytes(&id_salt, sizeof(id_salt)) != 0) {
        id_salt = (uint64_t)clock_wall_ms() ^ ((uint64_t)getpid() << 32);
    }
}

void
gw_http_new_id(char id[GW_HTTP_ID_LEN + 1])
{
    if (id_next == id_end) {
        (void)pthread_once(&id_once, on_id_once);
        id_next = (uint64_t)atomic_fetch_add_explicit(&id_blocks, ID_BLOCK, memory_order_relaxed);
        id_end = id_next + ID_BLOCK;
    }
    uint64_t x = id_salt + id_next++;
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    for (int i = GW_HTTP_ID_LEN - 1; i >= 0; i--) {
        id[i] = "0123456789abcdef"[x & 0xf];
        x >>= 4;
    }
    id[GW_HTTP_ID_LEN] = '\0';
}

bool
gw_http_body_discardable(const struct gw_req *req)
{
    const struct gw_conn *c = req->conn;
    if (req->body_done || (req->expect_continue && !req->sent_100)) {
        return false;
    }
    return req->content_length < 0 ||
           (uint64_t)req->content_length - req->body_received <= c->lim.discard_body_bytes;
}

void
gw_http_send_continue(struct gw_req *req)
{
    static const char line[] = "HTTP/1.1 100 Continue\r\n\r\n";
    struct evbuffer *out = bufferevent_get_output(req->conn->bev);
    if (evbuffer_add(out, line, sizeof(line) - 1) == 0) {
        req->sent_100 = true;
    }
}

void
gw_http_send_error(struct gw_conn *c, struct gw_req *req, int status, const char *code,
                   const char *msg)
{
    char idbuf[GW_HTTP_ID_LEN + 1];
    const char *id = idbuf;
    if (req != NULL) {
        id = req->id;
        if (req->resp == GW_RESP_NONE) {
            req->status = status;
            gw_access_note_error(req, code);
        }
        req->resp = GW_RESP_ENDED;
        req->want_close = true;
    } else {
        gw_http_new_id(idbuf);
        gw_http_access_refused(c, idbuf, status, code);
    }
    c->closing = true;
    /* code and msg are our own constants: nothing to escape */
    char body[512];
    int blen = snprintf(body, sizeof(body),
                        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                        "<Error><Code>%s</Code><Message>%s</Message>"
                        "<RequestId>%s</RequestId></Error>",
                        code, msg, id);
    if (blen < 0 || (size_t)blen >= sizeof(body)) {
        blen = 0;
    }
    struct evbuffer *out = bufferevent_get_output(c->bev);
    int rc = evbuffer_add_printf(out,
                                 "HTTP/1.1 %d %s\r\nServer: fencegate\r\nDate: %s\r\n"
                                 "x-amz-request-id: %s\r\nContent-Type: application/xml\r\n"
                                 "Content-Length: %d\r\nConnection: close\r\n\r\n",
                                 status, reason(status), date_now(c->srv), id, blen);
    if (req != NULL) { /* the server's own 400/408/411/414/431/505 too */
        gw_metrics_req_status(&req->acct, status);
    } else {
        gw_metrics_count_unparsed(status);
    }
    if (rc < 0 || (!(req != NULL && req->is_head) && evbuffer_add(out, body, (size_t)blen) != 0)) {
        c->dead = true;
    }
}

void
gw_resp_start(struct gw_req *req, int status)
{
    if (req->resp != GW_RESP_NONE || req->aborted) {
        log_warn("%s: response already started", req->id);
        return;
    }
    if (status < 200 || status > 599) {
        log_warn("%s: bad status %d, sending 500", req->id, status);
        status = 500;
    }
    req->status = status;
    req->resp = GW_RESP_STARTED;
    buf_reset(&req->resp_head);
}

/* n bytes of s at d (a line's piece, not a string: the buffer ends it); returns d + n. */
static char *
put(char *d, const char *s, size_t n)
{
    memcpy(d, s, n);
    return d + n;
}

int
gw_resp_header(struct gw_req *req, const char *name, const char *value)
{
    if (req->resp != GW_RESP_STARTED) {
        return ERR_INVAL;
    }
    size_t nlen = strlen(name);
    if (!http_is_token(name, nlen) || strpbrk(value, "\r\n") != NULL) {
        return ERR_INVAL;
    }
    if (HTTP_NAME_IS(name, nlen, "connection") || HTTP_NAME_IS(name, nlen, "keep-alive") ||
        HTTP_NAME_IS(name, nlen, "transfer-encoding") ||
        HTTP_NAME_IS(name, nlen, "content-length")) {
        return 0; /* hop-by-hop: the server's business */
    }
    if (HTTP_NAME_IS(name, nlen, "x-amz-request-id")) {
        req->has_id_hdr = true;
    } else if (HTTP_NAME_IS(name, nlen, "server")) {
        req->has_server_hdr = true;
    } else if (HTTP_NAME_IS(name, nlen, "date")) {
        req->has_date_hdr = true;
    }
    size_t vlen = strlen(value);
    if (nlen > SIZE_MAX / 4 || vlen > SIZE_MAX / 4) {
        return ERR_TOOBIG;
    }
    struct buf *b = &req->resp_head;
    int rc = buf_reserve(b, nlen + vlen + 4); /* then plain copies */
    if (rc != 0) {
        return rc;
    }
    char *d = put(b->data + b->len, name, nlen);
    d = put(d, ": ", 2);
    d = put(d, value, vlen);
    (void)put(d, "\r\n", 2);
    b->len += nlen + vlen + 4;
    b->data[b->len] = '\0'; /* the buffer's own NUL after its bytes */
    return 0;
}

/* A response head's server-made lines, staged on the stack; len past sizeof(b) marks overflow. */
struct head_stage {
    char b[256];
    size_t len;
};

static void
stage(struct head_stage *st, const char *p, size_t n)
{
    if (st->len + n <= sizeof(st->b)) {
        memcpy(st->b + st->len, p, n);
    }
    st->len += n; /* past the end: the caller sees the overflow */
}

/* stage() of a string literal */
#define STAGE_LIT(st, lit) stage((st), (lit), sizeof(lit) - 1)

static void
stage_str(struct head_stage *st, const char *s)
{
    stage(st, s, strlen(s));
}

/* Whether the connection must close after this response. */
static bool
must_close(const struct gw_req *req, int64_t content_length, bool no_body)
{
    const struct gw_conn *c = req->conn;
    if (c->closing || req->want_close || !req->keep_alive || c->srv->draining) {
        return true;
    }
    if (!no_body && content_length < 0 && req->version_minor == 0) {
        return true; /* HTTP/1.0: the body ends at the close */
    }
    if (!req->body_done) {
        /* the client waits for a 100 we will not send: it may or may not send
         * the body, so the next bytes cannot be trusted as a request head */
        if (!gw_http_body_discardable(req)) {
            return true;
        }
    }
    return false;
}

void
gw_resp_body_begin(struct gw_req *req, int64_t content_length)
{
    if (req->resp != GW_RESP_STARTED) {
        log_warn("%s: gw_resp_body_begin without gw_resp_start", req->id);
        return;
    }
    struct gw_conn *c = req->conn;
    bool no_body = req->is_head || req->status == 204 || req->status == 304;
    bool close = must_close(req, content_length, no_body);
    if (close) {
        req->want_close = true;
    }
    struct evbuffer *out = bufferevent_get_output(c->bev);
    gw_metrics_req_status(&req->acct, req->status); /* counted when req is freed */
    /* the head in three pieces, copied, not formatted: the server's lines before
     * the handler's, then the framing (RFC 9110 section 8.6: for HEAD and 304
     * Content-Length is the length a GET would have) */
    struct head_stage pre = {.len = 0};
    char code[4] = {(char)('0' + req->status / 100), (char)('0' + req->status / 10 % 10),
                    (char)('0' + req->status % 10), ' '};
    STAGE_LIT(&pre, "HTTP/1.1 ");
    stage(&pre, code, 4);
    stage_str(&pre, reason(req->status));
    STAGE_LIT(&pre, "\r\n");
    if (!req->has_server_hdr) {
        STAGE_LIT(&pre, "Server: fencegate\r\n");
    }
    if (!req->has_date_hdr) {
        STAGE_LIT(&pre, "Date: ");
        stage_str(&pre, date_now(c->srv));
        STAGE_LIT(&pre, "\r\n");
    }
    if (!req->has_id_hdr) {
        STAGE_LIT(&pre, "x-amz-request-id: ");
        stage_str(&pre, req->id);
        STAGE_LIT(&pre, "\r\n");
    } else {
        /* the store's id is passed on; ours still names the request in the
         * gateway's logs, access log and audit records */
        STAGE_LIT(&pre, "x-fencegate-request-id: ");
        stage_str(&pre, req->id);
        STAGE_LIT(&pre, "\r\n");
    }
    struct head_stage post = {.len = 0};
    req->resp_length = -1;
    if (req->status != 204 && content_length >= 0) {
        char num[20];
        STAGE_LIT(&post, "Content-Length: ");
        stage(&post, num, fmt_u64((uint64_t)content_length, num));
        STAGE_LIT(&post, "\r\n");
        if (!no_body) {
            req->resp_length = content_length;
        }
    } else if (!no_body && req->version_minor == 1) {
        STAGE_LIT(&post, "Transfer-Encoding: chunked\r\n");
        req->resp_chunked = true;
    }
    if (close) {
        STAGE_LIT(&post, "Connection: close\r\n");
    } else if (req->version_minor == 0) {
        STAGE_LIT(&post, "Connection: keep-alive\r\n");
    }
    STAGE_LIT(&post, "\r\n");
    int rc = pre.len <= sizeof(pre.b) && post.len <= sizeof(post.b) ? 0 : -1;
    if (rc == 0) {
        rc = evbuffer_add(out, pre.b, pre.len);
    }
    if (rc == 0 && req->resp_head.len > 0) {
        rc = evbuffer_add(out, req->resp_head.data, req->resp_head.len);
    }
    if (rc == 0) {
        rc = evbuffer_add(out, post.b, post.len);
    }
    if (rc < 0) {
        c->dead = true;
        gw_http_conn_kick(c);
    }
    req->resp_no_body = no_body;
    req->resp = GW_RESP_BODY;
    buf_cleanup(&req->resp_head);
}

int
gw_resp_body_write(struct gw_req *req, const void *data, size_t len)
{
    struct gw_conn *c = req->conn;
    if (req->aborted || c->dead) {
        return ERR_CLOSED;
    }
    if (req->resp != GW_RESP_BODY) {
        return ERR_INVAL;
    }
    if (req->resp_no_body || len == 0) {
        return 0;
    }
    if (req->resp_length >= 0 && req->resp_sent + len > (uint64_t)req->resp_length) {
        log_warn("%s: body longer than its Content-Length", req->id);
        return ERR_INVAL;
    }
    struct evbuffer *out = bufferevent_get_output(c->bev);
    int rc = 0;
    if (req->resp_chunked) {
        char line[18];
        size_t n = fmt_hex_u64(len, line);
        line[n++] = '\r';
        line[n++] = '\n';
        rc = evbuffer_add(out, line, n);
    }
    if (rc >= 0) {
        rc = evbuffer_add(out, data, len);
    }
    if (rc >= 0 && req->resp_chunked) {
        rc = evbuffer_add(out, "\r\n", 2);
    }
    if (rc < 0) {
        c->dead = true;
        gw_http_conn_kick(c);
        return ERR_CLOSED;
    }
    req->resp_sent += len;
    (void)gw_http_flush(c);
    if (evbuffer_get_length(out) > c->lim.buffer_bytes) {
        req->want_drain = true;
        return ERR_AGAIN;
    }
    return 0;
}

void
gw_resp_end(struct gw_req *req)
{
    struct gw_conn *c = req->conn;
    if (req->resp == GW_RESP_ENDED || req->aborted) {
        return;
    }
    if (req->resp == GW_RESP_NONE) {
        log_warn("%s: gw_resp_end without a response", req->id);
        gw_http_send_error(c, req, 500, "InternalError",
                           "We encountered an internal error. Please try again.");
        gw_http_conn_kick(c);
        return;
    }
    if (req->resp == GW_RESP_STARTED) {
        gw_resp_body_begin(req, 0);
    }
    struct evbuffer *out = bufferevent_get_output(c->bev);
    if (req->resp_chunked && evbuffer_add(out, "0\r\n\r\n", 5) != 0) {
        c->dead = true;
    }
    if (req->resp_length >= 0 && req->resp_sent < (uint64_t)req->resp_length) {
        /* the client sees a short body; only closing tells it so */
        log_warn("%s: response ended %" PRIu64 " bytes short", req->id,
                 (uint64_t)req->resp_length - req->resp_sent);
        c->closing = true;
    }
    if (req->want_close && !req->body_done && !gw_http_body_discardable(req)) {
        c->closing = true; /* the rest of the body will not come, or is too long to read */
    }
    req->resp = GW_RESP_ENDED;
    req->want_drain = false;
    (void)gw_http_flush(c);
    gw_http_conn_kick(c);
}

void
gw_resp_abort(struct gw_req *req)
{
    struct gw_conn *c = req->conn;
    if (req->resp == GW_RESP_ENDED || req->aborted) {
        return;
    }
    if (req->resp == GW_RESP_NONE) {
        gw_http_send_error(c, req, 502, "BadGateway", "The upstream response broke off.");
        gw_http_conn_kick(c);
        return;
    }
    /* No final chunk, and a Content-Length body stays short: what was queued
     * is flushed, then the connection closes, so the client sees an
     * incomplete response rather than a complete-looking one. */
    log_info("%s: response aborted after %" PRIu64 " body bytes", req->id, req->resp_sent);
    c->closing = true;
    req->resp = GW_RESP_ENDED;
    req->want_drain = false;
    gw_http_conn_kick(c);
}

void
gw_resp_simple(struct gw_req *req, int status, const char *content_type, const void *body,
               size_t len)
{
    gw_resp_start(req, status);
    if (content_type != NULL && gw_resp_header(req, "Content-Type", content_type) != 0) {
        log_warn("%s: bad Content-Type dropped", req->id);
    }
    gw_resp_body_begin(req, (int64_t)len);
    int rc = gw_resp_body_write(req, body, len);
    if (rc != 0 && rc != ERR_AGAIN) { /* ERR_AGAIN: queued anyway */
        log_debug("%s: %s", req->id, err_str(rc));
    }
    gw_resp_end(req);
}

bool
gw_resp_started(const struct gw_req *req)
{
    return req->resp != GW_RESP_NONE;
}
