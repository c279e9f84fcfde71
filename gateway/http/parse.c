/*
 * gateway/http/parse.c: request parsing for the HTTP server: the llhttp
 * callbacks that collect the request line, headers and trailers into the
 * connection's capped header text, the framing checks llhttp leaves to us,
 * feeding input to llhttp, and building the gw_req once a head is complete.
 * Event-loop thread only.
 *
 * llhttp runs strict (no lenient flag is ever set).  On top of it: HTTP/1.0
 * and 1.1 only, no obs-fold, no CTL in a field value, a single Content-Length
 * that parses, Transfer-Encoding only as a lone "chunked", exactly one Host
 * in HTTP/1.1, no CONNECT.  Refusals record the S3 error to send
 * (c->err_status/err_code/err_msg) and stop the parser with HPE_USER.
 */
#include "gateway/http/internal.h"

#define LOG_MODULE "http"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "common/buf.h"
#include "common/log.h"
#include "common/mem.h"
#include "common/num.h"
#include "gateway/base/inflight.h"
#include "gateway/net/loopctx.h"

static uint32_t
or_default(uint32_t v, uint32_t def)
{
    return v != 0 ? v : def;
}

void
gw_http_limits_from(struct gw_http_limits *l, const struct gw_config *cfg)
{
    l->max_header_bytes = or_default(cfg->limits.max_header_bytes, 65536);
    l->max_headers = or_default(cfg->limits.max_headers, 100);
    l->max_url_bytes = or_default(cfg->limits.max_url_bytes, 8192);
    l->header_timeout_ms = or_default(cfg->limits.header_timeout_ms, 30000);
    l->body_timeout_ms = or_default(cfg->limits.body_timeout_ms, 60000);
    l->idle_timeout_ms = or_default(cfg->limits.idle_timeout_ms, 60000);
    l->write_timeout_ms = or_default(cfg->limits.write_timeout_ms, 60000);
    l->max_connections = or_default(cfg->limits.max_connections, 4096);
    l->buffer_bytes = or_default(cfg->limits.buffer_bytes, 262144);
    l->discard_body_bytes =
        cfg->limits.discard_body_bytes != 0 ? cfg->limits.discard_body_bytes : 67108864;
    /* fair shares (DESIGN G10): a quarter of the connections, half the upstream ones */
    l->max_conns_per_client =
        or_default(cfg->limits.max_connections_per_client, (uint32_t)(l->max_connections + 3) / 4);
    l->max_xfers_per_client = or_default(cfg->limits.max_transfers_per_client,
                                         (or_default(cfg->upstream.max_connections, 256) + 1) / 2);
    l->min_body_rate = cfg->limits.min_body_rate; /* 0: off */
    l->min_body_rate_window_ms = or_default(cfg->limits.min_body_rate_window_ms, 10000);
}

void
gw_http_server_limits(struct gw_http_limits *l, const struct gw_server *srv)
{
    gw_http_limits_from(l, srv->cfg);
    /* after the per-client default, which is a share of the process's connections */
    size_t n = srv->loops > 1 ? srv->loops : 1;
    l->max_connections = (l->max_connections + n - 1) / n;
}

/* ---- header lists ---- */

void
gw_http_hdr_list_init(struct gw_hdr_list *h, size_t cap)
{
    memset(h, 0, sizeof(*h));
    buf_init(&h->text, cap);
}

static void
hdr_list_reset(struct gw_hdr_list *h, size_t cap)
{
    buf_reset(&h->text);
    h->text.cap = cap;
    h->n = 0;
    h->in_value = false;
    h->have_value = false;
}

void
gw_http_hdr_list_cleanup(struct gw_hdr_list *h)
{
    buf_cleanup(&h->text);
    free(h->off);
    free(h->view);
    h->off = NULL;
    h->view = NULL;
    h->alloc = 0;
    h->n = 0;
}

/* Start a new header; ERR_TOOBIG past max, ERR_NOMEM. */
static int
hdr_list_add(struct gw_hdr_list *h, size_t max)
{
    if (h->n >= max) {
        return ERR_TOOBIG;
    }
    if (h->n == h->alloc) {
        size_t na = h->alloc == 0 ? 16 : h->alloc * 2;
        if (na > max) {
            na = max;
        }
        struct gw_hdr_off *off = realloc(h->off, na * sizeof(*off));
        if (off == NULL) {
            return ERR_NOMEM;
        }
        h->off = off;
        struct gw_header *view = realloc(h->view, na * sizeof(*view));
        if (view == NULL) {
            return ERR_NOMEM;
        }
        h->view = view;
        h->alloc = na;
    }
    struct gw_hdr_off *o = &h->off[h->n++];
    o->name = h->text.len;
    o->name_len = 0;
    o->value = 0;
    o->value_len = 0;
    h->in_value = false;
    h->have_value = false;
    return 0;
}

/* Build the pointer view once the block is complete and text will not move. */
static void
hdr_list_finish(struct gw_hdr_list *h)
{
    for (size_t i = 0; i < h->n; i++) {
        const struct gw_hdr_off *o = &h->off[i];
        h->view[i].name = h->text.data + o->name;
        h->view[i].name_len = o->name_len;
        h->view[i].value = h->text.data + o->value;
        h->view[i].value_len = o->value_len;
    }
}

/* ---- parser callbacks (llhttp_settings_t; registered in `gw_http_settings` below) ---- */

/* Refuse the message: remember the response, stop the parser. */
int
gw_http_refuse(struct gw_conn *c, int status, const char *code, const char *msg)
{
    if (c->err_status == 0) {
        c->err_status = status;
        c->err_code = code;
        c->err_msg = msg;
    }
    return HPE_USER;
}

static int
refuse_append(struct gw_conn *c, int rc)
{
    if (rc == ERR_NOMEM) {
        return gw_http_refuse(c, 503, "ServiceUnavailable", "Out of memory.");
    }
    return gw_http_refuse(c, 431, "RequestHeaderSectionTooLarge",
                          "Your request header section exceeds the maximum allowed size.");
}

static int
on_message_begin(llhttp_t *p)
{
    struct gw_conn *c = p->data;
    gw_http_limits_from(&c->lim, c->srv->cfg);
    c->cfg = c->srv->cfg;
    /* the head text also holds a copy of the path: room for it */
    hdr_list_reset(&c->head, c->lim.max_header_bytes + c->lim.max_url_bytes + 64);
    hdr_list_reset(&c->trail, c->lim.max_header_bytes);
    c->url_off = 0;
    c->url_len = 0;
    c->in_body = false;
    return 0;
}

static int
on_method(llhttp_t *p, const char *at, size_t len)
{
    struct gw_conn *c = p->data;
    int rc = buf_append(&c->head.text, at, len);
    return rc == 0 ? 0 : refuse_append(c, rc);
}

static int
on_method_complete(llhttp_t *p)
{
    struct gw_conn *c = p->data;
    int rc = buf_append(&c->head.text, "", 1);
    if (rc != 0) {
        return refuse_append(c, rc);
    }
    c->url_off = c->head.text.len;
    return 0;
}

static int
on_url(llhttp_t *p, const char *at, size_t len)
{
    struct gw_conn *c = p->data;
    if (c->url_len + len > c->lim.max_url_bytes) {
        /* S3 has no code for this; InvalidURI is the closest one SDKs know */
        return gw_http_refuse(c, 414, "InvalidURI", "The request URI is too long.");
    }
    /*
     * A URL ended by CR or LF has no version: llhttp takes "GET /x\r\n" as
     * HTTP/0.9 but says so (on_url_complete, then on_headers_complete) only
     * once another byte arrives, which an HTTP/0.9 client never sends.  Only
     * 1.0 and 1.1 are served: refuse now, not at the header timeout.  (A span
     * cut at the end of the input has at + len == exec_end: nothing after it.)
     */
    if (at + len < c->exec_end && (at[len] == '\r' || at[len] == '\n')) {
        return gw_http_refuse(c, 400, "InvalidRequest", "HTTP/0.9 requests are not supported.");
    }
    c->url_len += len;
    int rc = buf_append(&c->head.text, at, len);
    return rc == 0 ? 0 : refuse_append(c, rc);
}

static int
on_url_complete(llhttp_t *p)
{
    struct gw_conn *c = p->data;
    int rc = buf_append(&c->head.text, "", 1);
    return rc == 0 ? 0 : refuse_append(c, rc);
}

static int
on_version_complete(llhttp_t *p)
{
    struct gw_conn *c = p->data;
    /* HTTP/1.0 and 1.1 only; "PRI * HTTP/2.0" (the h2 preface) ends here too */
    if (p->http_major != 1 || p->http_minor > 1) {
        return gw_http_refuse(c, 505, "HTTPVersionNotSupported",
                              "The HTTP version is not supported.");
    }
    return 0;
}

static struct gw_hdr_list *
cur_list(struct gw_conn *c)
{
    return c->in_body ? &c->trail : &c->head;
}

static int
on_header_field(llhttp_t *p, const char *at, size_t len)
{
    struct gw_conn *c = p->data;
    struct gw_hdr_list *h = cur_list(c);
    if (h->n == 0 || h->in_value || h->have_value) {
        int rc = hdr_list_add(h, c->lim.max_headers);
        if (rc == ERR_TOOBIG) {
            return gw_http_refuse(c, 431, "RequestHeaderSectionTooLarge",
                                  "Your request has too many header fields.");
        }
        if (rc != 0) {
            return refuse_append(c, rc);
        }
    }
    h->off[h->n - 1].name_len += len;
    int rc = buf_append(&h->text, at, len);
    return rc == 0 ? 0 : refuse_append(c, rc);
}

static int
on_header_field_complete(llhttp_t *p)
{
    struct gw_conn *c = p->data;
    int rc = buf_append(&cur_list(c)->text, "", 1);
    return rc == 0 ? 0 : refuse_append(c, rc);
}

static int
on_header_value(llhttp_t *p, const char *at, size_t len)
{
    struct gw_conn *c = p->data;
    struct gw_hdr_list *h = cur_list(c);
    if (h->have_value) {
        /*
         * A second span of the same value is either the rest of it after
         * an execute boundary, or an obs-fold continuation line, which
         * llhttp accepts and RFC 9112 section 5.2 lets us reject.
         */
        bool contiguous =
            c->val_end != NULL ? at == c->val_end : (at == c->exec_base && c->val_tail);
        if (!contiguous) {
            return gw_http_refuse(c, 400, "InvalidRequest",
                                  "Obsolete line folding is not allowed.");
        }
    } else {
        h->have_value = true;
        h->off[h->n - 1].value = h->text.len;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)at[i];
        /* RFC 9110 section 5.5: no CTLs but HTAB in a field value */
        if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
            return gw_http_refuse(c, 400, "InvalidRequest",
                                  "A header value holds a control character.");
        }
    }
    h->in_value = true;
    c->val_end = at + len;
    c->val_tail = c->val_end == c->exec_end;
    h->off[h->n - 1].value_len += len;
    int rc = buf_append(&h->text, at, len);
    return rc == 0 ? 0 : refuse_append(c, rc);
}

static int
on_header_value_complete(llhttp_t *p)
{
    struct gw_conn *c = p->data;
    struct gw_hdr_list *h = cur_list(c);
    struct gw_hdr_off *o = &h->off[h->n - 1];
    if (!h->have_value) {
        o->value = h->text.len;
    }
    while (o->value_len > 0 && (h->text.data[o->value + o->value_len - 1] == ' ' ||
                                h->text.data[o->value + o->value_len - 1] == '\t')) {
        o->value_len--;
        h->text.len--;
    }
    h->in_value = true;
    h->have_value = true;
    c->val_end = NULL;
    c->val_tail = false;
    int rc = buf_append(&h->text, "", 1);
    return rc == 0 ? 0 : refuse_append(c, rc);
}

/* Framing checks llhttp leaves to us (it refuses CL+TE and repeated CL itself). */
static int
check_framing(struct gw_conn *c)
{
    size_t ncl = 0, nte = 0, nhost = 0;
    const struct gw_header *cl = NULL, *te = NULL;
    for (size_t i = 0; i < c->head.n; i++) {
        const struct gw_header *hd = &c->head.view[i];
        if (strcasecmp(hd->name, "content-length") == 0) {
            ncl++;
            cl = hd;
        } else if (strcasecmp(hd->name, "transfer-encoding") == 0) {
            nte++;
            te = hd;
        } else if (strcasecmp(hd->name, "host") == 0) {
            nhost++;
        }
    }
    /* RFC 9112 section 6.3: CL with TE, or several CLs, are smuggling shapes */
    if (ncl > 1 || (ncl > 0 && nte > 0)) {
        return gw_http_refuse(c, 400, "InvalidRequest", "Conflicting message framing headers.");
    }
    uint64_t len;
    if (cl != NULL && parse_u64n(cl->value, cl->value_len, 0, INT64_MAX, &len) != 0) {
        return gw_http_refuse(c, 400, "InvalidRequest", "Invalid Content-Length.");
    }
    /* only "chunked" alone; S3 answers 501 NotImplemented for other codings */
    if (nte > 1 || (te != NULL && strcasecmp(te->value, "chunked") != 0)) {
        return gw_http_refuse(
            c, 501, "NotImplemented",
            "A header you provided implies functionality that is not implemented.");
    }
    /* RFC 9112 section 3.2: exactly one Host in HTTP/1.1 */
    if (nhost > 1 || (nhost == 0 && c->parser.http_minor == 1)) {
        return gw_http_refuse(c, 400, "InvalidRequest", "Missing or repeated Host header.");
    }
    return 0;
}

static int
on_headers_complete(llhttp_t *p)
{
    struct gw_conn *c = p->data;
    if (p->http_major != 1 || p->http_minor > 1) {
        /* "GET /\r\n": llhttp takes it as HTTP/0.9 */
        return gw_http_refuse(c, 400, "InvalidRequest", "HTTP/0.9 requests are not supported.");
    }
    if (p->method == HTTP_CONNECT) {
        return gw_http_refuse(c, 405, "MethodNotAllowed",
                              "The specified method is not allowed against this resource.");
    }
    hdr_list_finish(&c->head);
    int rc = check_framing(c);
    if (rc != 0) {
        return rc;
    }
    c->in_body = true;
    c->head_ready = true;
    return HPE_PAUSED;
}

static int
on_body(llhttp_t *p, const char *at, size_t len)
{
    struct gw_conn *c = p->data;
    struct gw_req *req = c->req;
    if (len == 0) {
        return 0;
    }
    if (req == NULL || req->resp == GW_RESP_ENDED || req->aborted) {
        if (req != NULL) {
            req->discarded += len;
        }
        return 0;
    }
    if (evbuffer_add(req->body, at, len) != 0) {
        return gw_http_refuse(c, 503, "ServiceUnavailable", "Out of memory.");
    }
    req->body_received += len;
    req->body_news = true;
    return 0;
}

static int
on_message_complete(llhttp_t *p)
{
    struct gw_conn *c = p->data;
    if (c->req != NULL) {
        hdr_list_finish(&c->trail);
        c->req->body_done = true;
        c->req->body_news = true;
    }
    return HPE_PAUSED;
}

const llhttp_settings_t gw_http_settings = {
    .on_message_begin = on_message_begin,
    .on_method = on_method,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
    .on_method_complete = on_method_complete,
    .on_url_complete = on_url_complete,
    .on_version_complete = on_version_complete,
    .on_header_field_complete = on_header_field_complete,
    .on_header_value_complete = on_header_value_complete,
};

/* One llhttp_execute over data[0..len); returns the bytes consumed; c->perr is set. */
static size_t
feed_span(struct gw_conn *c, const char *data, size_t len)
{
    c->exec_base = data;
    c->exec_end = data + len;
    c->val_end = NULL;
    int err = llhttp_execute(&c->parser, data, len);
    size_t used = len;
    if (err != HPE_OK) {
        used = (size_t)(llhttp_get_error_pos(&c->parser) - data);
    }
    c->perr = err;
    if (err == HPE_PAUSED) {
        c->paused = true;
    }
    return used;
}

/*
 * Feed at most max input bytes to llhttp, stopping at a pause or an error.
 * Returns the bytes consumed (and drained from the input); c->perr is set.
 */
size_t
gw_http_feed(struct gw_conn *c, size_t max)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    size_t total = 0;
    c->perr = HPE_OK;
    c->err_status = 0;
    /* a zero-length execute right after a resume lets llhttp run on from
     * on_headers_complete to on_message_complete for a body-less request */
    bool resumed = false;
    if (c->paused) {
        llhttp_resume(&c->parser);
        c->paused = false;
        resumed = true;
    }
    static const char none[1] = {0};
    while (total < max) {
        struct evbuffer_iovec v;
        size_t len = 0;
        const char *data = none;
        if (evbuffer_peek(in, (ev_ssize_t)(max - total), NULL, &v, 1) > 0) {
            data = v.iov_base;
            len = v.iov_len < max - total ? v.iov_len : max - total;
        }
        if (len == 0 && !resumed) {
            break;
        }
        resumed = false;
        size_t used = feed_span(c, data, len);
        if (used > 0) {
            (void)evbuffer_drain(in, used);
        }
        total += used;
        if (c->perr != HPE_OK || len == 0) {
            break;
        }
    }
    return total;
}

size_t
gw_http_feed_mem(struct gw_conn *c, const char *data, size_t len)
{
    c->perr = HPE_OK;
    c->err_status = 0;
    if (len == 0 || c->paused) {
        return 0; /* the caller feeds only a running parser */
    }
    return feed_span(c, data, len);
}

void
gw_http_req_free(struct gw_req *req)
{
    if (req == NULL) {
        return;
    }
    gw_metrics_req_end(&req->acct); /* counted once, when the request is over */
    if (req->write_cfg != NULL) {
        gw_inflight_end(req->write_cfg->inflight, gw_loopctx_index(), req->write_slot);
    }
    if (req->body != NULL) {
        evbuffer_free(req->body);
    }
    buf_cleanup(&req->resp_head);
    gw_access_cleanup(&req->access);
    free(req);
}

struct gw_req *
gw_http_req_new(struct gw_conn *c)
{
    struct gw_req *req = mem_zalloc(sizeof(*req));
    if (req == NULL) {
        return NULL;
    }
    req->body = evbuffer_new();
    if (req->body == NULL) {
        free(req);
        return NULL;
    }
    /* the path is the target up to '?', copied so it is NUL-terminated */
    struct buf *t = &c->head.text;
    const char *q = memchr(t->data + c->url_off, '?', c->url_len);
    size_t plen = q != NULL ? (size_t)(q - (t->data + c->url_off)) : c->url_len;
    size_t path_off = t->len;
    /* through a bounce buffer: appending may move t->data under the source */
    for (size_t done = 0; done < plen;) {
        char tmp[256];
        size_t n = plen - done < sizeof(tmp) ? plen - done : sizeof(tmp);
        memcpy(tmp, t->data + c->url_off + done, n);
        if (buf_append(t, tmp, n) != 0) {
            gw_http_req_free(req);
            return NULL;
        }
        done += n;
    }
    if (buf_append(t, "", 1) != 0) {
        gw_http_req_free(req);
        return NULL;
    }
    hdr_list_finish(&c->head); /* text may have moved */
    req->conn = c;
    /* The configuration in force now, in the turn the router classifies it in
     * (c->cfg, the message's start's, only sized its head): a loop that has moved
     * on begins nothing under an older one (gateway/base/inflight.h). */
    c->cfg = c->srv->cfg;
    req->cfg = c->cfg;
    if (c->relayed && c->relay_id[0] != '\0') {
        str_copy(req->id, sizeof(req->id), c->relay_id); /* one id for both loops */
    } else {
        gw_http_new_id(req->id);
    }
    if (!c->relayed) {
        gw_metrics_req_begin(&req->acct); /* a relayed request is counted on its worker */
    }
    req->method = t->data;
    req->target = t->data + c->url_off;
    req->path = t->data + path_off;
    req->query = q != NULL ? t->data + c->url_off + plen + 1 : "";
    req->version_minor = c->parser.http_minor;
    req->keep_alive = llhttp_should_keep_alive(&c->parser) != 0;
    req->is_head = c->parser.method == HTTP_HEAD;
    if (c->parser.upgrade) {
        req->want_close = true; /* no protocol switch here: never parse past this message */
    }
    if (c->parser.flags & F_CHUNKED) {
        req->content_length = -1;
    } else if (c->parser.flags & F_CONTENT_LENGTH) {
        req->content_length = (int64_t)c->parser.content_length;
    }
    const char *expect = gw_req_header(req, "expect");
    req->expect_continue =
        expect != NULL && strcasecmp(expect, "100-continue") == 0 && req->version_minor == 1;
    req->resp_length = -1;
    buf_init(&req->resp_head, GW_HTTP_RESP_HEAD);
    gw_access_init(&req->access, gw_req_header(req, "traceparent"), req->acct.start_ns);
    return req;
}
