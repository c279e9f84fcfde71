/*
 * tests/unit/gateway/upstream_harness.h: the shared harness of the
 * gateway/upstream/upstream.c tests (upstream_test.c, upstream_faults_test.c).
 *
 * A tiny HTTP/1.1 server on 127.0.0.1 driven by the same event_base as the
 * client (bufferevents, so the test controls every byte, framing and
 * timing; struct srv, enum srv_mode), a recording client whose gw_xfer
 * callbacks count, check and optionally pause, fail or cancel (struct cli,
 * cbs, start, start_h), loop helpers (run_until, run_for) and the cmocka
 * fixture (struct fx, setup, teardown, use_timeout).
 *
 * Each test binary is built from one .c file, so everything here is
 * static inline (no -Wunused-function for what an includer does not use).
 */
#ifndef TESTS_UNIT_GATEWAY_UPSTREAM_HARNESS_H
#define TESTS_UNIT_GATEWAY_UPSTREAM_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "gateway/http/tls.h"
#include "gateway/upstream/upstream.h"

#define MIB (1024u * 1024u)

/* The engine the tests run against; run_both_engines runs a group with each. */
static enum gw_upstream_engine harness_engine = GW_UPSTREAM_CURL;

static inline unsigned char
pat(uint64_t i)
{
    return (unsigned char)((i * 131u) ^ (i >> 11));
}

static inline bool
has_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay != '\0'; hay++) {
        if (strncasecmp(hay, needle, n) == 0) {
            return true;
        }
    }
    return false;
}

/* ---- the test server ---- */

enum srv_mode {
    M_OK,          /* 200 with a Content-Length body of resp_len pattern bytes (none for HEAD) */
    M_CHUNKED,     /* 200 with a chunked body of resp_len pattern bytes, odd chunk sizes */
    M_SILENT,      /* read the request, never answer */
    M_CONTINUE,    /* 100 Continue and 103 Early Hints right after the head, then as M_OK */
    M_BIGHEAD,     /* a 200 whose head is about 70 KiB */
    M_GARBAGE,     /* answer the first bytes of anything with a plain-text 400 */
    M_CLOSE_DELIM, /* 200 without Content-Length: resp_len pattern bytes, then close */
    M_EARLY,       /* at the head: 403 and Connection: close, then half-close; the body
                      is read and dropped (a lingering close, as servers do) */
    M_TRICKLE,     /* trickle_text (a head and its body), trickle_step bytes a
                      millisecond (0: all in one write), so lines lie across reads */
};

enum conn_state { S_HEAD, S_BODY, S_DEAD };

struct srv;

struct sconn {
    struct srv *srv;
    struct bufferevent *bev;
    LIST_ENTRY(sconn) link;
    enum conn_state state;
    uint64_t cl;     /* declared request body length */
    uint64_t got;    /* request body bytes received */
    bool pattern_ok; /* every body byte matched pat() */
    bool chunked;    /* response is chunked */
    uint64_t resp_left, resp_off;
    uint64_t fed;          /* response bytes queued to the bufferevent */
    int served;            /* requests answered on this connection */
    bool close_done;       /* M_CLOSE_DELIM: close once the output is flushed */
    bool half_close;       /* M_EARLY: shut the write side once the output is flushed */
    struct event *trickle; /* M_TRICKLE: the timer that writes the next piece */
    size_t trickle_off;    /* bytes of TRICKLE_TEXT written */
};

struct srv {
    struct event_base *base;
    struct evconnlistener *lis;
    uint16_t port;
    LIST_HEAD(sconn_list, sconn) conns;
    enum srv_mode mode;
    uint64_t resp_len;
    const char *xml;          /* M_OK: if set, the body is this text instead (an S3 answer) */
    int accepts;              /* TCP connections accepted */
    int requests;             /* complete requests (head and whole body) */
    int closed;               /* connections the client closed */
    int eofs_early;           /* connections closed before their declared body ended */
    char head[16384];         /* the last request head, NUL-terminated */
    uint64_t cl;              /* its Content-Length (UINT64_MAX: none) */
    uint64_t live_got;        /* body bytes of the current request so far */
    bool body_ok;             /* the last complete body matched pat() */
    uint64_t pushed;          /* response bytes the kernel took (fed minus still queued) */
    int drop_after;           /* > 0: a connection that served this many closes at the next head */
    int dropped;              /* connections closed so */
    int heads;                /* request heads received */
    size_t trickle_step;      /* M_TRICKLE: bytes a millisecond, 0 all at once */
    const char *trickle_text; /* M_TRICKLE: the whole answer, as it goes on the wire */
    bool trickle_close;       /* M_TRICKLE: close once it is sent */
    struct gw_tls *tls;       /* set: connections are TLS (gateway/http/tls.h) */
};

static inline void
sconn_free(struct sconn *c)
{
    LIST_REMOVE(c, link);
    if (c->trickle != NULL) {
        event_free(c->trickle);
    }
    bufferevent_free(c->bev);
    free(c);
}

/* M_TRICKLE's timer: the next piece of the answer. */
static inline void
srv_trickle(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct sconn *c = arg;
    const char *text = c->srv->trickle_text;
    size_t total = strlen(text);
    size_t step = c->srv->trickle_step == 0 ? total : c->srv->trickle_step;
    size_t n = total - c->trickle_off < step ? total - c->trickle_off : step;
    evbuffer_add(bufferevent_get_output(c->bev), text + c->trickle_off, n);
    c->trickle_off += n;
    if (c->trickle_off < total) {
        struct timeval ms = {0, 1000};
        evtimer_add(c->trickle, &ms);
    } else if (c->srv->trickle_close) {
        c->close_done = true; /* srv_write closes once it is flushed */
        bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
    }
}

static inline void
srv_feed(struct sconn *c)
{
    static unsigned char tmp[70000];
    struct evbuffer *out = bufferevent_get_output(c->bev);
    while (c->resp_left > 0 && evbuffer_get_length(out) < 256 * 1024) {
        size_t n = c->chunked ? 1 + (size_t)((c->resp_off * 7919u) % 60000u) : 65536;
        if (n > c->resp_left) {
            n = (size_t)c->resp_left;
        }
        for (size_t i = 0; i < n; i++) {
            tmp[i] = pat(c->resp_off + i);
        }
        if (c->chunked) {
            evbuffer_add_printf(out, "%zx\r\n", n);
        }
        evbuffer_add(out, tmp, n);
        if (c->chunked) {
            evbuffer_add(out, "\r\n", 2);
        }
        c->resp_off += n;
        c->resp_left -= n;
        c->fed += n;
        if (c->resp_left == 0 && c->chunked) {
            evbuffer_add(out, "0\r\n\r\n", 5);
        }
        if (c->resp_left == 0 && c->srv->mode == M_CLOSE_DELIM) {
            c->close_done = true;
            bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
        }
    }
    c->srv->pushed = c->fed - evbuffer_get_length(out);
}

static inline void
srv_respond(struct sconn *c, bool head_req)
{
    struct srv *s = c->srv;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    c->fed = 0;
    switch (s->mode) {
    case M_SILENT:
        c->state = S_DEAD;
        return;
    case M_TRICKLE:
        if (c->trickle == NULL) {
            c->trickle = evtimer_new(s->base, srv_trickle, c);
            assert_non_null(c->trickle);
        }
        c->trickle_off = 0;
        srv_trickle(-1, 0, c);
        return;
    case M_BIGHEAD:
        evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\n");
        for (int i = 0; i < 70; i++) {
            char pad[1001];
            memset(pad, 'a', 1000);
            pad[1000] = '\0';
            evbuffer_add_printf(out, "X-Pad-%d: %s\r\n", i, pad);
        }
        evbuffer_add_printf(out, "Content-Length: 0\r\n\r\n");
        return;
    case M_CLOSE_DELIM:
        evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nX-Reply: yes\r\n\r\n");
        c->chunked = false;
        break;
    case M_CHUNKED:
        evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        c->chunked = true;
        break;
    case M_OK:
        if (s->xml != NULL) {
            evbuffer_add_printf(out,
                                "HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\n"
                                "Content-Length: %zu\r\n\r\n%s",
                                strlen(s->xml), head_req ? "" : s->xml);
            return;
        }
        /* fall through */
    case M_CONTINUE:
    default:
        evbuffer_add_printf(out,
                            "HTTP/1.1 200 OK\r\nContent-Length: %llu\r\nX-Reply:  yes \r\n"
                            "X-Empty:\r\n\r\n",
                            (unsigned long long)s->resp_len);
        c->chunked = false;
        break;
    }
    if (!head_req) {
        c->resp_left = s->resp_len;
        c->resp_off = 0;
        srv_feed(c);
    }
}

/* Content-Length of a request head, UINT64_MAX if absent. */
static inline uint64_t
head_cl(const char *head)
{
    const char *p = head;
    while ((p = strstr(p, "\r\n")) != NULL) {
        p += 2;
        if (strncasecmp(p, "Content-Length:", 15) == 0) {
            return strtoull(p + 15, NULL, 10);
        }
    }
    return UINT64_MAX;
}

static inline void
srv_read(struct bufferevent *bev, void *arg)
{
    struct sconn *c = arg;
    struct srv *s = c->srv;
    struct evbuffer *in = bufferevent_get_input(bev);
    static unsigned char tmp[65536];
    for (;;) {
        if (c->state == S_DEAD) {
            evbuffer_drain(in, evbuffer_get_length(in));
            return;
        }
        if (s->mode == M_GARBAGE) {
            evbuffer_add_printf(bufferevent_get_output(bev), "HTTP/1.1 400 Bad\r\n\r\n");
            c->state = S_DEAD;
            continue;
        }
        if (c->state == S_HEAD) {
            struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
            if (end.pos < 0) {
                return;
            }
            size_t hl = (size_t)end.pos + 4;
            assert_true(hl < sizeof(s->head));
            evbuffer_remove(in, s->head, hl);
            s->head[hl] = '\0';
            s->heads++;
            if (s->mode == M_EARLY) {
                evbuffer_add_printf(bufferevent_get_output(bev),
                                    "HTTP/1.1 403 Forbidden\r\nContent-Length: 6\r\n"
                                    "Connection: close\r\n\r\ndenied");
                c->state = S_DEAD;
                c->half_close = true;
                bufferevent_setwatermark(bev, EV_WRITE, 0, 0);
                continue;
            }
            if (s->drop_after > 0 && c->served >= s->drop_after) {
                s->dropped++; /* as if it closed while the request was on its way */
                sconn_free(c);
                return;
            }
            s->cl = head_cl(s->head);
            c->cl = s->cl == UINT64_MAX ? 0 : s->cl;
            c->got = 0;
            s->live_got = 0;
            c->pattern_ok = true;
            c->state = S_BODY;
            if (s->mode == M_CONTINUE) {
                evbuffer_add_printf(bufferevent_get_output(bev),
                                    "HTTP/1.1 100 Continue\r\n\r\n"
                                    "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n");
            }
        }
        size_t avail = evbuffer_get_length(in);
        while (c->got < c->cl && avail > 0) {
            size_t n = avail < sizeof(tmp) ? avail : sizeof(tmp);
            if (n > c->cl - c->got) {
                n = (size_t)(c->cl - c->got);
            }
            evbuffer_remove(in, tmp, n);
            for (size_t i = 0; i < n; i++) {
                if (tmp[i] != pat(c->got + i)) {
                    c->pattern_ok = false;
                }
            }
            c->got += n;
            s->live_got = c->got;
            avail -= n;
        }
        if (c->got < c->cl) {
            return;
        }
        s->requests++;
        c->served++;
        s->body_ok = c->pattern_ok;
        c->state = S_HEAD;
        srv_respond(c, strncmp(s->head, "HEAD ", 5) == 0);
    }
}

static inline void
srv_write(struct bufferevent *bev, void *arg)
{
    struct sconn *c = arg;
    srv_feed(c);
    if (c->half_close && evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
        (void)shutdown(bufferevent_getfd(bev), SHUT_WR);
        c->half_close = false;
    }
    if (c->close_done && evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
        sconn_free(c); /* the end of a close-delimited body */
    }
}

static inline void
srv_event(struct bufferevent *bev, short what, void *arg)
{
    struct sconn *c = arg;
    struct srv *s = c->srv;
    (void)bev;
    if ((what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) != 0) {
        if (c->state == S_BODY && c->got < c->cl) {
            s->eofs_early++;
        }
        s->closed++;
        sconn_free(c);
    }
}

static inline void
srv_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa, int salen,
           void *arg)
{
    struct srv *s = arg;
    (void)lis;
    (void)sa;
    (void)salen;
    struct sconn *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    c->srv = s;
    c->bev = s->tls != NULL ? gw_tls_bev_new(s->tls, s->base, fd)
                            : bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    assert_non_null(c->bev);
    bufferevent_setcb(c->bev, srv_read, srv_write, srv_event, c);
    bufferevent_setwatermark(c->bev, EV_WRITE, 64 * 1024, 0);
    assert_int_equal(bufferevent_enable(c->bev, EV_READ | EV_WRITE), 0);
    LIST_INSERT_HEAD(&s->conns, c, link);
    s->accepts++;
}

static inline void
srv_init(struct srv *s, struct event_base *base)
{
    memset(s, 0, sizeof(*s));
    s->base = base;
    LIST_INIT(&s->conns);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = 0};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->lis = evconnlistener_new_bind(base, srv_accept, s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
                                     16, (struct sockaddr *)&sin, sizeof(sin));
    assert_non_null(s->lis);
    struct sockaddr_in got;
    socklen_t len = sizeof(got);
    assert_int_equal(getsockname(evconnlistener_get_fd(s->lis), (struct sockaddr *)&got, &len), 0);
    s->port = ntohs(got.sin_port);
}

static inline void
srv_cleanup(struct srv *s)
{
    while (!LIST_EMPTY(&s->conns)) {
        sconn_free(LIST_FIRST(&s->conns));
    }
    evconnlistener_free(s->lis);
}

/* ---- the client side ---- */

struct cli {
    struct event_base *base;
    struct gw_upstream *up;
    struct gw_xfer *x;
    bool cancelled; /* the test cancelled x */
    int heads, dones, err, status;
    char reply[64];        /* value of X-Reply */
    bool empty_hdr;        /* X-Empty came with an empty value */
    bool saw_link;         /* a header of an interim response leaked */
    char cl[32];           /* value of Content-Length */
    uint64_t body_got;     /* response body bytes */
    bool body_bad;         /* a response byte did not match pat() */
    bool body_early;       /* body before head */
    uint64_t sent_at_done; /* gw_xfer_body_sent in on_done */
    /* request body */
    uint64_t up_len, up_off;
    uint64_t stop_at; /* read_body says ERR_AGAIN for good from here */
    int reads;
    int send_pause_every; /* every Nth read_body call pauses */
    int send_pause_ms;
    int send_pauses;
    int read_err;    /* read_body returns this at stop_at */
    bool short_body; /* read_body says 0 (end) at stop_at */
    /* response body */
    int recv_pause_every;
    int recv_pause_ms;
    int recv_pause_first_ms; /* the first recv pause lasts this long */
    int recv_pauses;
    int bodies;
    int body_err;              /* on_body returns this on call number body_err_at */
    int body_err_at;           /* 0: the first call */
    int cancel_at_body;        /* gw_upstream_xfer_cancel from this on_body call (0: never) */
    uint64_t pushed_at_resume; /* server pushed bytes when the first recv pause ended */
    int cancel_in_head;        /* gw_upstream_xfer_cancel from on_head */
    /* chaining */
    struct cli *next; /* started from on_done (or on_head) */
    bool start_next_in_head;
    struct srv *srv;
};

static inline void
later(struct cli *c, int ms, event_callback_fn fn)
{
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    assert_int_equal(event_base_once(c->base, -1, EV_TIMEOUT, fn, c, &tv), 0);
}

static inline void
resume_send_cb(evutil_socket_t fd, short what, void *arg)
{
    struct cli *c = arg;
    (void)fd;
    (void)what;
    if (c->dones == 0 && !c->cancelled) {
        gw_xfer_resume_send(c->x);
    }
}

static inline void
resume_recv_cb(evutil_socket_t fd, short what, void *arg)
{
    struct cli *c = arg;
    (void)fd;
    (void)what;
    if (c->dones == 0 && !c->cancelled) {
        if (c->recv_pauses == 1 && c->srv != NULL) {
            c->pushed_at_resume = c->srv->pushed;
        }
        gw_xfer_resume_recv(c->x);
    }
}

static inline ssize_t
cb_read(void *arg, char *dst, size_t len)
{
    struct cli *c = arg;
    c->reads++;
    if (c->up_off >= c->stop_at) {
        if (c->short_body) {
            return 0;
        }
        return c->read_err != 0 ? c->read_err : ERR_AGAIN;
    }
    if (c->send_pause_every > 0 && c->reads % c->send_pause_every == 0) {
        c->send_pauses++;
        later(c, c->send_pause_ms, resume_send_cb);
        return ERR_AGAIN;
    }
    size_t n = 1000 + (size_t)((c->reads * 7919u) % 30000u);
    if (n > len) {
        n = len;
    }
    if (n > c->up_len - c->up_off) {
        n = (size_t)(c->up_len - c->up_off);
    }
    if (n > c->stop_at - c->up_off) {
        n = (size_t)(c->stop_at - c->up_off);
    }
    for (size_t i = 0; i < n; i++) {
        dst[i] = (char)pat(c->up_off + i);
    }
    c->up_off += n;
    return (ssize_t)n;
}

static inline int start(struct cli *c, const char *method, const char *path, int64_t body_len);

static inline int
cb_head(void *arg, int status, const struct gw_header *h, size_t n)
{
    struct cli *c = arg;
    c->heads++;
    c->status = status;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(strlen(h[i].name), h[i].name_len);
        assert_int_equal(strlen(h[i].value), h[i].value_len);
        if (strcasecmp(h[i].name, "X-Reply") == 0) {
            (void)snprintf(c->reply, sizeof(c->reply), "%s", h[i].value);
        } else if (strcasecmp(h[i].name, "Content-Length") == 0) {
            (void)snprintf(c->cl, sizeof(c->cl), "%s", h[i].value);
        } else if (strcasecmp(h[i].name, "X-Empty") == 0) {
            c->empty_hdr = h[i].value_len == 0;
        } else if (strcasecmp(h[i].name, "Link") == 0) {
            c->saw_link = true;
        }
    }
    if (c->cancel_in_head) {
        c->cancelled = true;
        gw_upstream_xfer_cancel(c->x);
    }
    if (c->start_next_in_head && c->next != NULL) {
        assert_int_equal(start(c->next, "GET", "/next", -1), 0);
    }
    return 0;
}

static inline int
cb_body(void *arg, const char *data, size_t len)
{
    struct cli *c = arg;
    if (c->heads == 0) {
        c->body_early = true;
    }
    c->bodies++;
    if (c->body_err != 0 && c->bodies >= c->body_err_at) {
        return c->body_err;
    }
    if (c->cancel_at_body != 0 && c->bodies == c->cancel_at_body) {
        c->cancelled = true;
        gw_upstream_xfer_cancel(c->x);
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)data[i] != pat(c->body_got + i)) {
            c->body_bad = true;
        }
    }
    c->body_got += len;
    if (c->recv_pause_every > 0 && c->bodies % c->recv_pause_every == 0) {
        c->recv_pauses++;
        later(c, c->recv_pauses == 1 ? c->recv_pause_first_ms : c->recv_pause_ms, resume_recv_cb);
        return ERR_AGAIN;
    }
    return 0;
}

static inline void
cb_done(void *arg, int err)
{
    struct cli *c = arg;
    c->dones++;
    c->err = err;
    c->sent_at_done = gw_xfer_body_sent(c->x);
    if (c->next != NULL && !c->start_next_in_head) {
        assert_int_equal(start(c->next, "GET", "/next", -1), 0);
    }
}

static const struct gw_xfer_cbs cbs = {
    .read_body = cb_read,
    .on_head = cb_head,
    .on_body = cb_body,
    .on_done = cb_done,
};

static inline int
start_h(struct cli *c, const char *method, const char *path, int64_t body_len,
        const char *const *headers, size_t nheaders)
{
    char url[512];
    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", c->srv->port, path);
    struct gw_xfer_req rq = {
        .method = method,
        .url = url,
        .headers = headers,
        .nheaders = nheaders,
        .body_length = body_len,
    };
    if (body_len >= 0) {
        c->up_len = (uint64_t)body_len;
        if (c->stop_at == 0) {
            c->stop_at = UINT64_MAX;
        }
    }
    return gw_upstream_xfer_start(c->up, &rq, &cbs, c, &c->x);
}

static inline int
start(struct cli *c, const char *method, const char *path, int64_t body_len)
{
    static const char *const hdrs[] = {"Host: s3.test", "X-Amz-Test: 1", NULL};
    return start_h(c, method, path, body_len, hdrs, 2);
}

/* ---- loop helpers and fixture ---- */

static inline void
on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    *(bool *)arg = true;
}

static inline bool
run_until(struct event_base *base, const int *counter, int target, int ms)
{
    bool expired = false;
    struct event *ev = evtimer_new(base, on_deadline, &expired);
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    assert_int_equal(evtimer_add(ev, &tv), 0);
    while (*counter < target && !expired) {
        event_base_loop(base, EVLOOP_ONCE);
    }
    event_free(ev);
    return *counter >= target;
}

static inline void
run_for(struct event_base *base, int ms)
{
    int never = 0;
    (void)run_until(base, &never, 1, ms);
}

struct fx {
    struct event_base *base;
    struct srv srv;
    struct gw_upstream *up;
    struct cli c;
};

static inline struct gw_upstream *
new_upstream(struct event_base *base, uint32_t timeout_ms)
{
    struct gw_upstream_opts o = {
        .engine = harness_engine,
        .connect_timeout_ms = 2000,
        .timeout_ms = timeout_ms,
        .max_connections = 8,
        .ca_file = NULL,
        .tls_verify = true,
    };
    struct gw_upstream *up = gw_upstream_new(base, &o);
    assert_non_null(up);
    return up;
}

static inline void
cli_init(struct cli *c, struct fx *f)
{
    memset(c, 0, sizeof(*c));
    c->base = f->base;
    c->up = f->up;
    c->srv = &f->srv;
}

static inline int
setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->base = event_base_new();
    assert_non_null(f->base);
    srv_init(&f->srv, f->base);
    f->up = new_upstream(f->base, 5000);
    cli_init(&f->c, f);
    *state = f;
    return 0;
}

static inline int
teardown(void **state)
{
    struct fx *f = *state;
    gw_upstream_free(f->up);
    srv_cleanup(&f->srv);
    event_base_free(f->base);
    free(f);
    return 0;
}

static inline void
use_timeout(struct fx *f, uint32_t ms)
{
    gw_upstream_free(f->up);
    f->up = new_upstream(f->base, ms);
    f->c.up = f->up;
}

/* Run the group once per engine ("name/curl", "name/lean"); the number of failures. */
static inline int
run_both_engines(const char *name, const struct CMUnitTest *tests, size_t n)
{
    static const struct {
        enum gw_upstream_engine engine;
        const char *suffix;
    } engines[] = {{GW_UPSTREAM_CURL, "curl"}, {GW_UPSTREAM_LEAN, "lean"}};
    int fails = 0;
    for (size_t i = 0; i < sizeof(engines) / sizeof(engines[0]); i++) {
        char full[96];
        (void)snprintf(full, sizeof(full), "%s/%s", name, engines[i].suffix);
        harness_engine = engines[i].engine;
        fails += _cmocka_run_group_tests(full, tests, n, NULL, NULL);
    }
    return fails;
}

#endif /* TESTS_UNIT_GATEWAY_UPSTREAM_HARNESS_H */
