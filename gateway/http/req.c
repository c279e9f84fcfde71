/*
 * gateway/http/req.c: the request side of gateway/http/http.h: accessors for the
 * parsed head, and reading the request body.  Event-loop thread only.
 * Strings returned here are borrowed from the request (its connection's head
 * text) and valid until the request is freed.
 */
#include "gateway/http/http.h"

#define LOG_MODULE "http"

#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "common/log.h"
#include "gateway/base/inflight.h"
#include "gateway/http/internal.h"
#include "gateway/net/loopctx.h"

void
gw_req_set_ops(struct gw_req *req, const struct gw_req_ops *ops, void *arg)
{
    req->ops = ops;
    req->ops_arg = arg;
    if (req->body_news && req->body_started) {
        gw_http_conn_kick(req->conn); /* deliver what is already buffered */
    }
}

const char *
gw_req_method(const struct gw_req *req)
{
    return req->method;
}

const char *
gw_req_target(const struct gw_req *req)
{
    return req->target;
}

const char *
gw_req_path(const struct gw_req *req)
{
    return req->path;
}

const char *
gw_req_query(const struct gw_req *req)
{
    return req->query;
}

int
gw_req_version_minor(const struct gw_req *req)
{
    return req->version_minor;
}

const char *
gw_req_id(const struct gw_req *req)
{
    return req->id;
}

int
gw_req_set_id(struct gw_req *req, const char *id)
{
    size_t n = strnlen(id, GW_REQ_ID_MAX + 1);
    if (n > GW_REQ_ID_MAX) {
        return ERR_TOOBIG;
    }
    memcpy(req->id, id, n + 1);
    return 0;
}

const char *
gw_req_peer(const struct gw_req *req)
{
    return req->conn->peer;
}

struct gw_metrics_req *
gw_req_metrics(struct gw_req *req)
{
    return &req->acct;
}

enum gw_listener
gw_req_listener(const struct gw_req *req)
{
    return req->conn->listener;
}

bool
gw_req_relayed(const struct gw_req *req)
{
    return req->conn->relayed;
}

bool
gw_req_is_tls(const struct gw_req *req)
{
    return req->conn->is_tls;
}

const struct gw_config *
gw_req_config(const struct gw_req *req)
{
    return req->cfg;
}

void
gw_req_write_begin(struct gw_req *req, const char *bucket)
{
    if (req->write_cfg == NULL) {
        req->write_cfg = req->cfg;
        req->write_slot = gw_inflight_slot(bucket);
        gw_inflight_begin(req->cfg->inflight, gw_loopctx_index(), req->write_slot);
    }
}

const struct gw_config *
gw_req_write_take(struct gw_req *req, unsigned *slot)
{
    const struct gw_config *cfg = req->write_cfg;
    *slot = req->write_slot;
    req->write_cfg = NULL;
    return cfg;
}

static const char *
find(const struct gw_hdr_list *h, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < h->n; i++) {
        /* the lengths first: most names differ in them, and then no byte is compared
         * (about 80 lookups that miss a fenced PUT) */
        if (h->view[i].name_len == n && strncasecmp(h->view[i].name, name, n) == 0) {
            return h->view[i].value;
        }
    }
    return NULL;
}

const char *
gw_req_header(const struct gw_req *req, const char *name)
{
    return find(&req->conn->head, name);
}

size_t
gw_req_header_count(const struct gw_req *req)
{
    return req->conn->head.n;
}

const struct gw_header *
gw_req_header_at(const struct gw_req *req, size_t i)
{
    if (i >= req->conn->head.n) {
        return NULL;
    }
    return &req->conn->head.view[i];
}

int64_t
gw_req_content_length(const struct gw_req *req)
{
    return req->content_length;
}

const char *
gw_req_trailer(const struct gw_req *req, const char *name)
{
    if (!req->body_done) {
        return NULL;
    }
    return find(&req->conn->trail, name);
}

void
gw_req_body_start(struct gw_req *req)
{
    if (req->body_started) {
        return;
    }
    req->body_started = true;
    /* RFC 9110 section 10.1.1: 100 only if the client waits for it and the
     * final status has not been sent */
    if (req->expect_continue && !req->sent_100 && !req->body_done && req->resp == GW_RESP_NONE &&
        !req->aborted) {
        gw_http_send_continue(req);
    }
    req->body_news = true; /* report what is (or is not) buffered */
    gw_http_conn_kick(req->conn);
}

ssize_t
gw_req_body_read(struct gw_req *req, char *dst, size_t len)
{
    if (req->aborted) {
        return req->body_err != 0 ? req->body_err : ERR_CLOSED;
    }
    if (req->body_err != 0) {
        return req->body_err;
    }
    if (!req->body_started) {
        gw_req_body_start(req);
    }
    struct gw_conn *c = req->conn;
    size_t have = evbuffer_get_length(req->body);
    if (have > 0 && len > 0) {
        int n = evbuffer_remove(req->body, dst, len);
        if (n < 0) {
            return ERR_NOMEM;
        }
        if (!req->body_done && (have >= c->lim.buffer_bytes ||
                                evbuffer_get_length(bufferevent_get_input(c->bev)) > 0)) {
            /* room again: parse the input held back, re-enable reading */
            gw_http_conn_kick(c);
        }
        return n;
    }
    if (req->body_done) {
        return 0;
    }
    if (c->peer_eof || c->dead) {
        return ERR_CLOSED;
    }
    return ERR_AGAIN;
}

bool
gw_req_body_done(const struct gw_req *req)
{
    return req->body_done;
}

uint64_t
gw_req_body_received(const struct gw_req *req)
{
    return req->body_received;
}

void
gw_req_set_close(struct gw_req *req)
{
    req->want_close = true;
}
