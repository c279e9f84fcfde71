/*
 * gateway/upstream/lean_conn.c: one connection of the lean engine: connect
 * (IP literals directly, host names through evdns, TLS through
 * gateway/upstream/lean_tls.c) bounded by connect_timeout_ms, the request
 * out (head and the first body bytes queued together, so they leave in one
 * writev; more body as the send window drains) and the response in.  On a
 * plain connection, once connected, the request is written at once, not from
 * the bufferevent's write event (gateway/net/bevio.c: two epoll_ctl calls
 * and a loop turn fewer per request); the write event runs only while the
 * send buffer is full.
 *
 * The response is parsed by llhttp in HTTP_RESPONSE mode, with our own
 * line-by-line pass over the head: each head line goes to
 * gateway/upstream/upmsg.c (the same head checks and collector the curl
 * engine uses) and to llhttp (the lines that came in one read in one call),
 * and the two must agree on where the final head ends.  Body
 * bytes go to llhttp in whole buffer extents; its on_body hands them to the
 * caller without a copy.  llhttp knows the framing: Content-Length, chunked,
 * close-delimited (ended by llhttp_finish at EOF), and no body for 1xx, 204,
 * 304 and, because on_headers_complete says so, a HEAD request.  A pause of
 * on_body or the end of a message pauses llhttp, so nothing after it is
 * parsed for this transfer; the caller's pause also stops reading, and the
 * read high-water mark bounds what waits in the input buffer.
 *
 * Reads.  libevent 2.1's evbuffer_read reads at most 4 KiB per call, so a
 * bufferevent costs a readv, an ioctl and a wake-up per 4 KiB (a 1 MiB GET
 * cost 3.5 ms of CPU against libcurl's 1 ms: make bench-proxy, short run,
 * BENCH_SYSCALLS).  On a plain TCP connection, once connected, the
 * bufferevent only writes: c->rev reads up to LEAN_IO_MAX per recv into the
 * bufferevent's input buffer, and stops at LEAN_READ_HIGH bytes buffered or
 * while the caller has paused receiving.  TLS connections read through
 * bufferevent_openssl (records are 16 KiB at most anyway).
 *
 * The re-entrancy rule (gateway/upstream/lean.h): our bufferevent and timer
 * callbacks are entry points; they hold x->busy around their work and call
 * lean_xfer_settle at the end, which may free x and close this connection.
 * Nothing touches c or x after that.
 */
#define LOG_MODULE "upstream"
#include "gateway/upstream/lean.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/dns.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "common/log.h"
#include "gateway/net/net.h"

/* ---- llhttp callbacks (parser.data is the connection) ---- */

static int
on_headers_complete(llhttp_t *p)
{
    struct lean_conn *c = p->data;
    if (p->status_code >= 200) {
        c->final_head = true;
        if (c->x != NULL && c->x->is_head) {
            return 1; /* a HEAD's answer has no body, whatever Content-Length says */
        }
    }
    return 0;
}

static int
on_body(llhttp_t *p, const char *at, size_t len)
{
    struct lean_conn *c = p->data;
    struct gw_lean_xfer *x = c->x;
    if (!x->head_done) {
        return -1; /* llhttp ended the head before upmsg did: head_lines calls it a mismatch */
    }
    if (len == 0) {
        return 0; /* llhttp flushing an empty span (a run on no input) */
    }
    lean_xfer_touch(x);
    int rc = x->cbs.on_body != NULL ? x->cbs.on_body(x->arg, at, len) : 0;
    if (x->cancelled) {
        return -1;
    }
    if (rc == ERR_AGAIN) {
        x->recv_paused = true; /* these bytes are consumed; nothing more until resumed */
        c->parse_owed = true;  /* the end of the message may be right here */
        lean_conn_reading(c, false);
        return HPE_PAUSED;
    }
    if (rc < 0) {
        lean_xfer_end(x, rc, false);
        return -1;
    }
    return 0;
}

static int
on_message_complete(llhttp_t *p)
{
    struct lean_conn *c = p->data;
    if (p->status_code < 200) {
        return 0; /* an interim response: the final one follows */
    }
    c->keep_alive = llhttp_should_keep_alive(p) != 0;
    c->x->complete = true;
    return HPE_PAUSED; /* nothing after it belongs to this transfer */
}

static const llhttp_settings_t lean_settings = {
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* ---- the response ---- */

static void
origin_warn(const struct gw_lean_xfer *x, const char *what, int err)
{
    log_warn("%s://%s:%u: %s -> %s", x->t.tls ? "https" : "http", x->t.host, x->t.port, what,
             err_str(err));
}

/* Fail x on a protocol error llhttp reported as e. */
static void
parse_failed(struct gw_lean_xfer *x, llhttp_errno_t e)
{
    char what[160];
    const char *reason = llhttp_get_error_reason(&x->c->parser);
    (void)snprintf(what, sizeof(what), "bad response (%s: %s)", llhttp_errno_name(e),
                   reason != NULL ? reason : "-");
    origin_warn(x, what, ERR_UPSTREAM);
    lean_xfer_end(x, ERR_UPSTREAM, false);
}

/* What one line of the response head came to; acted on once it is drained. */
enum line_out {
    LINE_MORE,     /* more head to come */
    LINE_FINAL,    /* the final response's head is complete */
    LINE_BAD_HEAD, /* gw_upmsg_head_line refused it (rc says why) */
    LINE_BAD_HTTP, /* llhttp refused it (e says why) */
    LINE_MISMATCH, /* the two parsers disagree on where the head ends */
};

/*
 * The head's next n bytes, whole lines that upmsg read (rc: what it said of
 * the last), through llhttp, and what they came to.  The two parsers must
 * agree on where the final head ends: llhttp must end a final head exactly
 * where upmsg did, and no other.  A head that ended earlier for llhttp shows
 * as body bytes before head_done (on_body fails: HPE_USER), a message paused
 * before the last byte, or final_head set while upmsg's head goes on.
 */
static enum line_out
head_parse(struct gw_lean_xfer *x, const char *at, size_t n, int rc, llhttp_errno_t *e)
{
    struct lean_conn *c = x->c;
    enum line_out o = rc == 1 ? LINE_FINAL : LINE_MORE;
    *e = llhttp_execute(&c->parser, at, n);
    if (*e == HPE_PAUSED) {
        /* the end of a message without a body: upmsg's final head must end there too */
        if (llhttp_get_error_pos(&c->parser) != at + n) {
            o = LINE_MISMATCH;
        }
        llhttp_resume(&c->parser);
    } else if (*e == HPE_USER) {
        return LINE_MISMATCH;
    } else if (*e != HPE_OK) {
        return LINE_BAD_HTTP;
    }
    return (rc == 1) != c->final_head ? LINE_MISMATCH : o;
}

/* The line's n bytes (its LF included) through both parsers. */
static enum line_out
line_parse(struct gw_lean_xfer *x, const char *line, size_t n, int *rc, llhttp_errno_t *e)
{
    *rc = gw_upmsg_head_line(&x->head, line, n);
    *e = HPE_OK;
    if (*rc < 0) {
        return LINE_BAD_HEAD;
    }
    return head_parse(x, line, n, *rc, e);
}

/* Acts on a drained line's outcome (which may end x).  Returns true to go on. */
static bool
line_act(struct gw_lean_xfer *x, enum line_out o, int rc, llhttp_errno_t e)
{
    switch (o) {
    case LINE_MORE:
        return true;
    case LINE_BAD_HEAD:
        origin_warn(x, rc == ERR_TOOBIG ? "response head too big" : "malformed response head",
                    ERR_UPSTREAM);
        lean_xfer_end(x, rc == ERR_NOMEM ? ERR_NOMEM : ERR_UPSTREAM, false);
        return false;
    case LINE_BAD_HTTP:
        parse_failed(x, e);
        return false;
    case LINE_MISMATCH:
        origin_warn(x, "response head ends elsewhere for llhttp", ERR_UPSTREAM);
        lean_xfer_end(x, ERR_UPSTREAM, false);
        return false;
    case LINE_FINAL:
        break;
    }
    x->head_done = true;
    gw_upstream_note_reached(&x->up->pub);
    int hr = x->cbs.on_head == NULL
                 ? 0
                 : x->cbs.on_head(x->arg, x->head.status, x->head.hdrs, x->head.n);
    if (x->cancelled) {
        return false;
    }
    if (hr < 0) {
        lean_xfer_end(x, hr, false);
        return false;
    }
    return true;
}

/* One line of the response head that may lie across the buffer's extents.
 * Returns true to go on, false to stop. */
static bool
head_line(struct gw_lean_xfer *x, struct evbuffer *in)
{
    struct lean_conn *c = x->c;
    size_t eol_len = 0;
    struct evbuffer_ptr eol = evbuffer_search_eol(in, NULL, &eol_len, EVBUFFER_EOL_LF);
    if (eol.pos < 0) {
        if (evbuffer_get_length(in) > GW_UPMSG_HEAD_MAX_BYTES) {
            origin_warn(x, "response head too big", ERR_UPSTREAM);
            lean_xfer_end(x, ERR_UPSTREAM, false);
        } else if (c->eof) {
            origin_warn(x, "connection closed inside the response head", ERR_UPSTREAM);
            lean_xfer_end(x, ERR_UPSTREAM, false);
        }
        return false;
    }
    size_t n = (size_t)eol.pos + eol_len;
    const char *line = (const char *)evbuffer_pullup(in, (ev_ssize_t)n);
    if (line == NULL) {
        lean_xfer_end(x, ERR_NOMEM, false);
        return false;
    }
    int rc = 0;
    llhttp_errno_t e = HPE_OK;
    enum line_out o = line_parse(x, line, n, &rc, &e);
    (void)evbuffer_drain(in, n);
    return line_act(x, o, rc, e);
}

/*
 * The response head's lines that lie whole in the buffer's first extent (a
 * head usually comes in one read): each line through upmsg up to the end of
 * the final head, then all of them through llhttp in one call (a call per
 * line cost a tenth of a small request's parsing), drained at once, and the
 * outcome acted on only then, since acting may end x and free the buffer.
 * A line across extents, or none yet, goes to head_line.  Returns true to go
 * on, false to stop.
 */
static bool
head_lines(struct gw_lean_xfer *x, struct evbuffer *in)
{
    struct evbuffer_iovec v;
    if (evbuffer_peek(in, -1, NULL, &v, 1) < 1) {
        return false;
    }
    const char *base = v.iov_base;
    size_t used = 0;
    int rc = 0;
    for (;;) {
        const char *nl = memchr(base + used, '\n', v.iov_len - used);
        if (nl == NULL) {
            break;
        }
        size_t n = (size_t)(nl - (base + used)) + 1;
        rc = gw_upmsg_head_line(&x->head, base + used, n);
        if (rc < 0) {
            (void)evbuffer_drain(in, used + n);
            return line_act(x, LINE_BAD_HEAD, rc, HPE_OK);
        }
        used += n;
        if (rc == 1) {
            break;
        }
    }
    if (used == 0) {
        return head_line(x, in);
    }
    llhttp_errno_t e = HPE_OK;
    enum line_out o = head_parse(x, base, used, rc, &e);
    (void)evbuffer_drain(in, used);
    return line_act(x, o, rc, e);
}

/*
 * The first buffered extent of body bytes through llhttp (and on_body); with
 * nothing buffered, llhttp runs on no input: a pause in on_body at the last
 * body byte leaves the end of the message (on_message_complete) owed, and no
 * byte may ever come to run it.
 */
static void
body_bytes(struct gw_lean_xfer *x, struct evbuffer *in)
{
    struct lean_conn *c = x->c;
    struct evbuffer_iovec v = {.iov_base = (void *)"", .iov_len = 0};
    c->parse_owed = false;
    if (evbuffer_get_length(in) > 0 && evbuffer_peek(in, -1, NULL, &v, 1) < 1) {
        return;
    }
    const char *base = v.iov_base;
    llhttp_errno_t e = llhttp_execute(&c->parser, base, v.iov_len);
    size_t used = v.iov_len;
    if (e != HPE_OK) {
        const char *pos = llhttp_get_error_pos(&c->parser);
        if (pos != NULL && pos >= base && pos <= base + v.iov_len) {
            used = (size_t)(pos - base);
        }
    }
    (void)evbuffer_drain(in, used);
    if (e == HPE_PAUSED) {
        llhttp_resume(&c->parser); /* our flags (recv_paused, complete) stop the loop */
    } else if (e != HPE_OK && e != HPE_USER) {
        parse_failed(x, e); /* HPE_USER: a callback ended or cancelled x already */
    }
}

/* The input ran out and the peer closed: a close-delimited body ends here, anything else fails. */
static void
input_eof(struct gw_lean_xfer *x)
{
    struct lean_conn *c = x->c;
    if (x->head_done && (c->err_what & BEV_EVENT_ERROR) == 0 &&
        llhttp_message_needs_eof(&c->parser) != 0) {
        llhttp_errno_t e = llhttp_finish(&c->parser);
        if ((e == HPE_OK || e == HPE_PAUSED) && x->complete) {
            c->keep_alive = false;
            return;
        }
    }
    origin_warn(x,
                x->head_done ? "connection closed inside the response body"
                             : "connection closed before a response",
                ERR_UPSTREAM);
    lean_xfer_end(x, ERR_UPSTREAM, false);
}

void
lean_conn_input(struct gw_lean_xfer *x)
{
    struct lean_conn *c = x->c;
    if (c == NULL) {
        return;
    }
    struct evbuffer *in = bufferevent_get_input(c->bev);
    while (!x->ended && !x->cancelled && !x->complete && !x->recv_paused) {
        if (evbuffer_get_length(in) == 0) {
            if (x->head_done && c->parse_owed) {
                body_bytes(x, in);
                continue;
            }
            if (c->eof) {
                input_eof(x);
            }
            break;
        }
        x->got_bytes = true;
        lean_xfer_touch(x);
        if (!x->head_done) {
            if (!head_lines(x, in)) {
                break;
            }
        } else {
            body_bytes(x, in);
        }
    }
    if (c->rev != NULL && !x->recv_paused && !c->eof && !x->ended && !x->cancelled &&
        evbuffer_get_length(in) < LEAN_READ_HIGH) {
        (void)event_add(c->rev, NULL); /* no-op unless conn_raw_read stopped at the mark */
    }
    if (x->complete && !x->ended && !x->cancelled) {
        if (evbuffer_get_length(in) > 0) {
            c->keep_alive = false; /* bytes nobody asked for: the framing is off */
        }
        lean_xfer_end(x, 0, false);
    }
}

/* ---- the request ---- */

/* Queue the head and as much body as the send window takes. */
static void
pump_fill(struct gw_lean_xfer *x)
{
    struct lean_conn *c = x->c;
    if (c == NULL || x->ended || x->cancelled) {
        return;
    }
    if (c->write_failed) {
        return; /* nothing more can be sent; the answer (or the close) decides */
    }
    struct evbuffer *out = bufferevent_get_output(c->bev);
    if (!x->head_sent) {
        if (evbuffer_add(out, x->req.data, x->req.len) != 0) {
            lean_xfer_end(x, ERR_NOMEM, false);
            return;
        }
        x->head_sent = true;
        x->body_done = x->body_length <= 0;
    }
    while (!x->body_done && !x->send_paused && evbuffer_get_length(out) < LEAN_SEND_WINDOW) {
        uint64_t left = (uint64_t)x->body_length - x->body_sent;
        size_t want = left < LEAN_PULL_MAX ? (size_t)left : LEAN_PULL_MAX;
        struct evbuffer_iovec v;
        if (evbuffer_reserve_space(out, (ev_ssize_t)want, &v, 1) != 1) {
            lean_xfer_end(x, ERR_NOMEM, false);
            return;
        }
        if (v.iov_len > want) {
            v.iov_len = want; /* never more than the declared Content-Length */
        }
        ssize_t n = x->cbs.read_body(x->arg, v.iov_base, v.iov_len);
        if (x->cancelled) {
            (void)evbuffer_commit_space(out, NULL, 0);
            return;
        }
        if (n > 0 && (size_t)n <= v.iov_len) {
            v.iov_len = (size_t)n;
            (void)evbuffer_commit_space(out, &v, 1);
            x->body_sent += (uint64_t)n;
            x->body_done = x->body_sent == (uint64_t)x->body_length;
            lean_xfer_touch(x);
            continue;
        }
        (void)evbuffer_commit_space(out, NULL, 0);
        if (n == ERR_AGAIN) {
            x->send_paused = true;
            return;
        }
        if (n >= 0) {
            /* a body of the wrong length must not complete at the upstream: settle closes */
            log_warn("read_body gave %zd bytes at %llu of %lld (room for %zu) -> %s", n,
                     (unsigned long long)x->body_sent, (long long)x->body_length, v.iov_len,
                     err_str(ERR_INVAL));
            lean_xfer_end(x, ERR_INVAL, false);
        } else {
            lean_xfer_end(x, (int)n, false);
        }
        return;
    }
}

void
lean_conn_pump(struct gw_lean_xfer *x)
{
    for (;;) {
        pump_fill(x);
        struct lean_conn *c = x->c;
        if (c == NULL || c->rev == NULL || x->ended || x->cancelled) {
            return; /* connecting, or TLS: the bufferevent writes */
        }
        /* plain and connected: written now (gateway/net/bevio.c); when the
         * send buffer fills, the write event takes over and conn_write pumps */
        if (!gw_bevio_flush(c->bev) || x->body_done || x->send_paused || c->write_failed) {
            return;
        }
    }
}

/* ---- bufferevent and timer callbacks (entry points) ---- */

static void
conn_read(struct bufferevent *bev, void *arg)
{
    struct lean_conn *c = arg;
    (void)bev;
    struct gw_lean_xfer *x = c->x;
    if (x == NULL) {
        lean_conn_close(c); /* bytes on an idle connection: nothing can follow them safely */
        return;
    }
    x->busy++;
    lean_conn_input(x);
    x->busy--;
    lean_xfer_settle(x);
}

static void
conn_write(struct bufferevent *bev, void *arg)
{
    struct lean_conn *c = arg;
    if (c->rev != NULL) {
        gw_bevio_written(bev); /* all of it left: the next bytes go by gw_bevio_flush */
    }
    struct gw_lean_xfer *x = c->x;
    if (x == NULL || x->body_done) {
        return;
    }
    x->busy++;
    lean_conn_pump(x);
    x->busy--;
    lean_xfer_settle(x);
}

/* The text for a connection that never came up, into the unreachable streak's. */
static void
connect_error(struct lean_conn *c, int sock_err)
{
    char tmp[LEAN_HOST_MAX + 200]; /* cut to the streak's length where it is kept */
    const char *why;
    int dns = bufferevent_socket_get_dns_error(c->bev);
    if (dns != 0) {
        (void)snprintf(tmp, sizeof(tmp), "could not resolve %s: %s", c->t.host,
                       evutil_gai_strerror(dns));
        why = tmp;
    } else if (c->t.tls && (why = lean_tls_error(c->bev, tmp, sizeof(tmp))) != NULL) {
        /* the handshake failed */
    } else {
        (void)snprintf(tmp, sizeof(tmp), "connect failed: %s",
                       sock_err != 0 ? strerror(sock_err) : "closed");
        why = tmp;
    }
    gw_upstream_note_connect_err(&c->up->pub, "%s:%u: %s", c->t.host, c->t.port, why);
}

static void conn_event(struct bufferevent *bev, short what, void *arg);

/* c->rev: the socket is readable (plain TCP, connected).  See "Reads" at the top. */
static void
conn_raw_read(evutil_socket_t fd, short what, void *arg)
{
    struct lean_conn *c = arg;
    (void)what;
    (void)fd;
    short ev = gw_bevio_read(c->bev, LEAN_READ_HIGH, LEAN_IO_MAX);
    if (ev != 0) {
        (void)event_del(c->rev);
        conn_event(c->bev, ev, c);
        return; /* c may be gone */
    }
    struct evbuffer *in = bufferevent_get_input(c->bev);
    if (evbuffer_get_length(in) >= LEAN_READ_HIGH) {
        (void)event_del(c->rev); /* lean_conn_input adds it back once drained */
    }
    conn_read(c->bev, c);
}

void
lean_conn_reading(struct lean_conn *c, bool on)
{
    if (c->rev == NULL) {
        if (on) {
            (void)bufferevent_enable(c->bev, EV_READ);
        } else {
            (void)bufferevent_disable(c->bev, EV_READ);
        }
    } else if (on && !c->eof) {
        (void)event_add(c->rev, NULL);
    } else {
        (void)event_del(c->rev);
    }
}

static void
conn_connected(struct lean_conn *c)
{
    c->connected = true;
    (void)event_del(c->ctimer);
    evutil_socket_t fd = bufferevent_getfd(c->bev);
    int one = 1;
    if (fd >= 0) {
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    }
    if (!c->t.tls && fd >= 0) {
        c->rev = event_new(c->up->pub.base, fd, EV_READ | EV_PERSIST, conn_raw_read, c);
        if (c->rev != NULL) {
            (void)bufferevent_disable(c->bev, EV_READ); /* from here c->rev reads */
            (void)event_add(c->rev, NULL);
        } /* else the bufferevent keeps reading, 4 KiB at a time */
    }
}

static void
conn_event(struct bufferevent *bev, short what, void *arg)
{
    struct lean_conn *c = arg;
    int sock_err = errno;
    (void)bev;
    if ((what & BEV_EVENT_CONNECTED) != 0) {
        conn_connected(c);
        return; /* bytes queued before the connect leave now */
    }
    struct gw_lean_xfer *x = c->x;
    if (x == NULL) {
        lean_conn_close(c); /* an idle connection the peer closed */
        return;
    }
    x->busy++;
    if (c->connected && (what & BEV_EVENT_WRITING) != 0 && (what & BEV_EVENT_EOF) == 0) {
        /* the peer stopped reading the request (an early answer, then a close): read on,
         * the answer may be there; the body is never completed, so the request is not */
        c->write_failed = true;
        lean_conn_input(x);
        x->busy--;
        lean_xfer_settle(x);
        return;
    }
    c->eof = true;
    c->err_what = what;
    if (!c->connected) {
        connect_error(c, sock_err);
        log_warn("%s -> %s", c->up->pub.connect_err, err_str(ERR_UPSTREAM));
        lean_xfer_end(x, ERR_UPSTREAM, true);
    } else {
        lean_conn_input(x); /* what the peer sent before it closed, then the EOF */
    }
    x->busy--;
    lean_xfer_settle(x);
}

static void
conn_connect_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct lean_conn *c = arg;
    (void)fd;
    (void)what;
    struct gw_lean_xfer *x = c->x;
    if (x == NULL || c->connected) {
        return;
    }
    if (bufferevent_getfd(c->bev) < 0) {
        /* no socket yet: it comes with the address, so the name was never resolved */
        gw_upstream_note_connect_err(&c->up->pub, "%s:%u: could not resolve %s: timed out",
                                     c->t.host, c->t.port, c->t.host);
    } else {
        gw_upstream_note_connect_err(&c->up->pub, "%s:%u: connect timed out", c->t.host, c->t.port);
    }
    log_warn("%s -> %s", c->up->pub.connect_err, err_str(ERR_TIMEOUT));
    x->busy++;
    lean_xfer_end(x, ERR_TIMEOUT, true);
    x->busy--;
    lean_xfer_settle(x);
}

/* ---- open, attach, park, close ---- */

/*
 * "localhost" and every name under ".localhost" (RFC 6761 section 6.3; RGW
 * answers virtual-hosted requests for bucket.localhost): the loopback
 * address, without asking DNS, as libcurl does.
 */
static bool
is_localhost(const char *host)
{
    size_t n = strlen(host);
    return strcasecmp(host, "localhost") == 0 ||
           (n > 10 && strcasecmp(host + n - 10, ".localhost") == 0);
}

/* Start the TCP connect of c: IP literals directly, names through evdns. */
static int
conn_connect(struct lean_conn *c)
{
    struct gw_lean *up = c->up;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    if (is_localhost(c->t.host)) {
        (void)inet_pton(AF_INET, "127.0.0.1", &s4->sin_addr);
        s4->sin_family = AF_INET;
        s4->sin_port = htons(c->t.port);
        return bufferevent_socket_connect(c->bev, (struct sockaddr *)s4, sizeof(*s4));
    }
    if (inet_pton(AF_INET, c->t.host, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons(c->t.port);
        return bufferevent_socket_connect(c->bev, (struct sockaddr *)s4, sizeof(*s4));
    }
    if (inet_pton(AF_INET6, c->t.host, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(c->t.port);
        return bufferevent_socket_connect(c->bev, (struct sockaddr *)s6, sizeof(*s6));
    }
    if (up->dns == NULL) {
        up->dns = evdns_base_new(up->pub.base, EVDNS_BASE_INITIALIZE_NAMESERVERS);
        if (up->dns == NULL) {
            log_error("evdns_base_new failed (no /etc/resolv.conf?)");
            return -1;
        }
    }
    return bufferevent_socket_connect_hostname(c->bev, up->dns, AF_UNSPEC, c->t.host, c->t.port);
}

struct lean_conn *
lean_conn_open(struct gw_lean *up, const struct lean_target *t)
{
    struct lean_conn *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        log_error("out of memory for a connection");
        lean_slot_give(up);
        return NULL;
    }
    c->up = up;
    c->t = *t;
    c->bev = t->tls ? lean_tls_bev(up->ssl_ctx, up->pub.base, t->host, up->pub.opts.tls_verify)
                    : bufferevent_socket_new(up->pub.base, -1, 0); /* lean_bev_close closes it */
    c->ctimer = evtimer_new(up->pub.base, conn_connect_timeout, c);
    if (c->bev == NULL || c->ctimer == NULL) {
        log_error("cannot set up a connection to %s:%u", t->host, t->port);
        goto fail;
    }
    up->nconns++; /* from here lean_conn_close undoes it */
    bufferevent_setcb(c->bev, conn_read, conn_write, conn_event, c);
    bufferevent_setwatermark(c->bev, EV_READ, 0, LEAN_READ_HIGH);
    /* libevent moves at most 16 KiB per write call by default (and its evbuffer_read,
     * 2.1, at most 4 KiB per read whatever this says) */
    (void)bufferevent_set_max_single_read(c->bev, LEAN_IO_MAX);
    (void)bufferevent_set_max_single_write(c->bev, LEAN_IO_MAX);
    bufferevent_setwatermark(c->bev, EV_WRITE, LEAN_SEND_LOW, 0);
    if (up->pub.opts.connect_timeout_ms != 0) {
        uint32_t ms = up->pub.opts.connect_timeout_ms;
        struct timeval tv = {.tv_sec = (time_t)(ms / 1000),
                             .tv_usec = (suseconds_t)(ms % 1000) * 1000};
        (void)evtimer_add(c->ctimer, &tv);
    }
    if (bufferevent_enable(c->bev, EV_READ | EV_WRITE) != 0 || conn_connect(c) != 0) {
        /* the bufferevent reports most failures as events; these are immediate */
        gw_upstream_note_connect_err(&up->pub, "%s:%u: cannot connect: %s", t->host, t->port,
                                     strerror(errno));
        log_warn("%s", up->pub.connect_err);
        lean_conn_close(c);
        return NULL;
    }
    return c;
fail:
    if (c->bev != NULL) {
        lean_bev_close(c->bev, t->tls);
    }
    if (c->ctimer != NULL) {
        event_free(c->ctimer);
    }
    free(c);
    lean_slot_give(up);
    return NULL;
}

void
lean_conn_close(struct lean_conn *c)
{
    if (c == NULL) {
        return;
    }
    if (c->x != NULL) {
        c->x->c = NULL;
    }
    if (c->rev != NULL) {
        event_free(c->rev); /* before the socket closes with the bufferevent */
    }
    lean_bev_close(c->bev, c->t.tls); /* the socket closes: bytes still queued never leave */
    /* then the slot goes back: another loop may open a connection at once, and
     * the process must never hold more than upstream.max_connections */
    lean_conn_gone(c);
    event_free(c->ctimer);
    free(c);
}

void
lean_conn_attach(struct lean_conn *c, struct gw_lean_xfer *x)
{
    c->x = x;
    x->c = c;
    llhttp_init(&c->parser, HTTP_RESPONSE, &lean_settings);
    c->parser.data = c;
    c->final_head = false;
    c->keep_alive = false;
    c->parse_owed = false;
    if (c->rev == NULL) {
        (void)bufferevent_enable(c->bev, EV_WRITE); /* else lean_conn_pump writes at once */
    }
    lean_conn_reading(c, true);
    lean_kick(x);
}

void
lean_conn_park(struct lean_conn *c)
{
    c->x = NULL;
    c->reused = true;
    lean_conn_reading(c, true); /* an EOF or stray byte closes it */
}
