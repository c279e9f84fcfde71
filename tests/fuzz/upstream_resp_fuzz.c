/*
 * tests/fuzz/upstream_resp_fuzz.c: arbitrary bytes as an upstream's answer
 * to the lean engine (gateway/upstream/lean_conn.c: the head line by line
 * through llhttp and upmsg, bodies by Content-Length, chunked or close,
 * interim responses, HEAD).  A loopback origin accepts the connection, sends
 * the input after its first byte and half-closes.  The first byte chooses the
 * method (bit 0: HEAD), whether on_body pauses every call and resumes from the
 * loop (bit 1), and whether on_head fails the transfer (bit 2).
 * Checks: no memory errors (ASan/UBSan), on_done exactly once, on_head at
 * most once and before any body byte (which caught llhttp ending a head at
 * "\r\r\n" where upmsg did not), the client frees everything (LeakSanitizer
 * at exit; every request is no_reuse, so nothing stays pooled).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/err.h"
#include "common/log.h"
#include "gateway/upstream/upstream.h"

static struct event_base *base;
static struct evconnlistener *lis;
static uint16_t port;
static const uint8_t *answer;
static size_t answer_len;
static int origin_fd = -1;
static struct gw_upstream *up; /* one client for every input (its TLS context is costly) */

struct run {
    struct gw_xfer *x;
    int heads, dones;
    bool body_before_head;
    bool pause;
    bool fail_head;
};

static void
on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len, void *arg)
{
    (void)l;
    (void)sa;
    (void)len;
    (void)arg;
    size_t off = 0;
    while (off < answer_len) {
        ssize_t n = write(fd, answer + off, answer_len - off);
        if (n <= 0) {
            break;
        }
        off += (size_t)n;
    }
    (void)shutdown(fd, SHUT_WR);
    if (origin_fd >= 0) {
        close(origin_fd);
    }
    origin_fd = fd; /* closed later: closing with the request unread would reset the stream */
}

static void
resume_cb(evutil_socket_t fd, short what, void *arg)
{
    struct run *r = arg;
    (void)fd;
    (void)what;
    if (r->dones == 0) {
        gw_xfer_resume_recv(r->x);
    }
}

static int
on_head(void *arg, int status, const struct gw_header *h, size_t n)
{
    struct run *r = arg;
    (void)h;
    (void)n;
    if (status < 200 || status > 599) {
        abort(); /* interim heads are never delivered; upmsg caps the status */
    }
    r->heads++;
    return r->fail_head ? ERR_IO : 0;
}

static int
on_body(void *arg, const char *data, size_t len)
{
    struct run *r = arg;
    (void)data;
    (void)len;
    if (r->heads == 0) {
        r->body_before_head = true;
    }
    if (r->pause) {
        struct timeval tv = {0, 0};
        (void)event_base_once(base, -1, EV_TIMEOUT, resume_cb, r, &tv);
        return ERR_AGAIN;
    }
    return 0;
}

static void
on_done(void *arg, int err)
{
    struct run *r = arg;
    (void)err;
    r->dones++;
}

static const struct gw_xfer_cbs cbs = {.on_head = on_head, .on_body = on_body, .on_done = on_done};

static void
setup(void)
{
    (void)signal(SIGPIPE, SIG_IGN);
    (void)log_set_level("error");
    base = event_base_new();
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = 0};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    lis = evconnlistener_new_bind(base, on_accept, NULL, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
                                  64, (struct sockaddr *)&sin, sizeof(sin));
    if (base == NULL || lis == NULL) {
        abort();
    }
    socklen_t len = sizeof(sin);
    if (getsockname(evconnlistener_get_fd(lis), (struct sockaddr *)&sin, &len) != 0) {
        abort();
    }
    port = ntohs(sin.sin_port);
    struct gw_upstream_opts o = {
        .engine = GW_UPSTREAM_LEAN, .connect_timeout_ms = 1000, .timeout_ms = 1000};
    up = gw_upstream_new(base, &o);
    if (up == NULL) {
        abort();
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (base == NULL) {
        setup();
    }
    if (size < 1) {
        return 0;
    }
    answer = data + 1;
    answer_len = size - 1;
    struct run r = {.pause = (data[0] & 2) != 0, .fail_head = (data[0] & 4) != 0};
    char url[64];
    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%u/b/k", port);
    struct gw_xfer_req rq = {
        .method = (data[0] & 1) != 0 ? "HEAD" : "GET",
        .url = url,
        .body_length = -1,
        .no_reuse = true, /* each input on a connection of its own */
    };
    if (gw_upstream_xfer_start(up, &rq, &cbs, &r, &r.x) != 0) {
        abort();
    }
    while (r.dones == 0) {
        (void)event_base_loop(base, EVLOOP_ONCE);
    }
    if (getenv("FUZZ_DEBUG") != NULL) {
        fprintf(stderr, "dones %d heads %d early %d\n", r.dones, r.heads, r.body_before_head);
    }
    if (r.dones != 1 || r.heads > 1 || r.body_before_head) {
        abort();
    }
    (void)event_base_loop(base, EVLOOP_NONBLOCK);
    if (origin_fd >= 0) {
        close(origin_fd);
        origin_fd = -1;
    }
    return 0;
}
