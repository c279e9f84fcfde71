/*
 * tests/fuzz/http_head_fuzz.c: arbitrary bytes through the HTTP server's
 * connection code (request line, headers, framing, bodies, pipelining),
 * delivered over a bufferevent pair in two writes split at a point the input
 * chooses, with a handler that answers, echoes, streams or holds requests.
 * Checks: no memory errors (ASan/UBSan), the decoded body never passes its
 * cap, every connection and request is freed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/log.h"
#include "gateway/base/config.h"
#include "gateway/http/http.h"
#include "gateway/http/internal.h"

static struct event_base *base;
static struct gw_config cfg;
static struct gw_req *held;

/* gw_req_ops.on_body_ready: read and drop the body, answer at its end */
static void
on_body_ready(struct gw_req *req, void *arg)
{
    (void)arg;
    char tmp[700];
    for (;;) {
        ssize_t n = gw_req_body_read(req, tmp, sizeof(tmp));
        if (n > 0) {
            continue;
        }
        if (n == 0) {
            held = NULL;
            gw_resp_simple(req, 201, "text/plain", "done", 4);
        }
        return;
    }
}

/* gw_req_ops.on_output_drained */
static void
on_output_drained(struct gw_req *req, void *arg)
{
    (void)arg;
    (void)req;
}

/* gw_req_ops.on_abort */
static void
on_abort(struct gw_req *req, int err, void *arg)
{
    (void)arg;
    (void)err;
    if (req == held) {
        held = NULL;
    }
}

static const struct gw_req_ops ops = {
    .on_body_ready = on_body_ready,
    .on_output_drained = on_output_drained,
    .on_abort = on_abort,
};

/* gw_request_fn: behaviour picked by the path */
static void
on_request(struct gw_req *req, void *arg)
{
    (void)arg;
    const char *path = gw_req_path(req);
    /* touch every accessor */
    size_t n = gw_req_header_count(req);
    for (size_t i = 0; i < n; i++) {
        const struct gw_header *h = gw_req_header_at(req, i);
        if (strlen(h->name) != h->name_len || strlen(h->value) != h->value_len) {
            abort();
        }
    }
    (void)gw_req_header(req, "host");
    (void)gw_req_query(req);
    (void)gw_req_content_length(req);
    if (strncmp(path, "/echo", 5) == 0) {
        held = req;
        gw_req_set_ops(req, &ops, NULL);
        gw_req_body_start(req);
    } else if (strncmp(path, "/hold", 5) == 0) {
        held = req;
        gw_req_set_ops(req, &ops, NULL);
    } else if (strncmp(path, "/stream", 7) == 0) {
        gw_req_set_ops(req, &ops, NULL);
        gw_resp_start(req, 200);
        if (gw_resp_header(req, "x-k", gw_req_target(req)) != 0) {
            abort(); /* the target cannot hold CR or LF */
        }
        gw_resp_body_begin(req, -1);
        for (int i = 0; i < 3; i++) {
            int rc = gw_resp_body_write(req, "chunk", 5);
            if (rc != 0 && rc != ERR_AGAIN) {
                abort();
            }
        }
        gw_resp_end(req);
    } else {
        gw_resp_simple(req, 200, "text/plain", path, strlen(path));
    }
}

/* client side: drop whatever the server sends */
static void
on_client_read(struct bufferevent *bev, void *arg)
{
    (void)arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    (void)evbuffer_drain(in, evbuffer_get_length(in));
}

static void
check_bounds(struct gw_server *srv)
{
    struct gw_conn *c;
    TAILQ_FOREACH (c, &srv->conns, link) {
        if (c->req != NULL && evbuffer_get_length(c->req->body) > c->lim.buffer_bytes) {
            abort();
        }
    }
}

static void
run(struct gw_server *srv, int turns)
{
    for (int i = 0; i < turns; i++) {
        (void)event_base_loop(base, EVLOOP_NONBLOCK);
        check_bounds(srv);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (base == NULL) {
        log_threshold = LOG_NONE;
        base = event_base_new();
        cfg.nlisten = 0;
        cfg.limits.max_header_bytes = 2048;
        cfg.limits.max_headers = 16;
        cfg.limits.max_url_bytes = 512;
        cfg.limits.buffer_bytes = 1024;
    }
    char err[128];
    struct gw_server *srv = gw_server_new(base, &cfg, on_request, NULL, err, sizeof(err));
    if (srv == NULL) {
        abort();
    }
    struct bufferevent *pair[2];
    if (bufferevent_pair_new(base, BEV_OPT_DEFER_CALLBACKS, pair) != 0) {
        abort();
    }
    if (gw_http_conn_adopt(srv, pair[0], "fuzz:1", false) != 0) {
        abort();
    }
    bufferevent_setcb(pair[1], on_client_read, NULL, NULL, NULL);
    (void)bufferevent_enable(pair[1], EV_READ | EV_WRITE);
    size_t split = size > 0 ? size * data[size - 1] / 256 : 0;
    (void)bufferevent_write(pair[1], data, split);
    run(srv, 40);
    (void)bufferevent_write(pair[1], data + split, size - split);
    run(srv, 80);
    if (held != NULL && (size & 1) != 0) {
        gw_resp_simple(held, 500, NULL, NULL, 0);
        held = NULL;
        run(srv, 20);
    }
    bufferevent_free(pair[1]);
    run(srv, 10);
    gw_server_free(srv); /* aborts whatever is still in flight */
    held = NULL;
    return 0;
}
