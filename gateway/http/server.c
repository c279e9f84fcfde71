/*
 * gateway/http/server.c: listeners, client connections and the per-connection parse
 * loop of the HTTP/1.x server (libevent bufferevents + llhttp).
 *
 * One state machine per connection, conn_process(), runs from libevent
 * callbacks only (read, write, event, timer, kick), never from inside a
 * handler's call into the API: API calls change state and kick.  That is
 * what lets a handler answer synchronously from gw_request_fn, and it is the
 * only place a connection is freed.  On a plain connection the bufferevent's
 * own events stay off (gateway/net/bevio.c): c->rev reads with recv, and
 * gw_http_flush (conn_io.c) writes queued output at once, from conn_process
 * and from gw_resp_body_write/gw_resp_end; a write calls nothing back (an
 * error comes through on_event, from the bufferevent's next attempt).  The
 * parts (parse.c, req.c, resp.c, fair.c) never call this file: they kick the
 * connection and flush it through conn_io.c.
 *
 * Parsing: llhttp pauses at on_headers_complete (the handler gets the head,
 * no body byte has been consumed) and at on_message_complete (the next
 * pipelined head is not parsed until this response is flushed).  llhttp is
 * fed at most as many bytes as the body buffer has room for; chunked framing
 * only shrinks data, so the decoded body never passes limits.buffer_bytes,
 * and the unparsed input is capped by a read watermark.
 *
 * EOF from the client while a request is in flight: if its body is not
 * complete, the request is aborted (ERR_CLOSED).  If the body is complete the
 * response is still written (a half-closed client may be waiting for it; S3
 * clients do not half-close, but HTTP/1.0 tools do); a client that really
 * went away is noticed when the write fails, which aborts the request then.
 */
#include "gateway/http/http.h"

#define LOG_MODULE "http"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/num.h"
#include "gateway/http/internal.h"
#include "gateway/net/loopctx.h"

static void conn_process(struct gw_conn *c);
static void after_eof(struct gw_conn *c);
static void abort_req(struct gw_conn *c, int err);

/* The loop this thread runs, for the debug log (0: the control loop). */
static unsigned
loop_no(void)
{
    return gw_loopctx_index();
}

/* The llhttp error that stopped parsing, as a response; the connection closes. */
static void
parse_fail(struct gw_conn *c)
{
    int status = 400;
    const char *code = "InvalidRequest";
    const char *msg = "The request is malformed.";
    if (c->err_status != 0) {
        status = c->err_status;
        code = c->err_code;
        msg = c->err_msg;
    } else if (c->perr == HPE_INVALID_VERSION || c->perr == HPE_PAUSED_H2_UPGRADE) {
        status = 505;
        code = "HTTPVersionNotSupported";
        msg = "The HTTP version is not supported.";
    } else if (c->perr == HPE_INVALID_TRANSFER_ENCODING) {
        status = 501;
        code = "NotImplemented";
        msg = "A header you provided implies functionality that is not implemented.";
    }
    log_info("%s: refused (%d %s): %s", c->peer, status, code,
             c->err_status != 0 ? msg : llhttp_get_error_reason(&c->parser));
    struct gw_req *req = c->req;
    if (req != NULL && !req->aborted && req->resp != GW_RESP_ENDED) {
        /* bad body framing after the handler got the head */
        req->body_err = ERR_INVAL;
        req->aborted = true;
        if (req->ops != NULL && req->ops->on_abort != NULL) {
            req->ops->on_abort(req, ERR_INVAL, req->ops_arg);
        }
    }
    if (req == NULL || req->resp == GW_RESP_NONE || req->resp == GW_RESP_STARTED) {
        gw_http_send_error(c, req, status, code, msg);
    } else if (req->resp != GW_RESP_ENDED) {
        c->dead = true; /* mid-response: nothing sane to add */
    }
    c->closing = true;
}

/* ---- the per-connection state machine ---- */

static size_t
body_room(const struct gw_conn *c, const struct gw_req *req)
{
    if (req->resp == GW_RESP_ENDED || req->aborted) {
        return GW_HTTP_READ_MAX; /* discarding */
    }
    size_t have = evbuffer_get_length(req->body);
    return have < c->lim.buffer_bytes ? c->lim.buffer_bytes - have : 0;
}

/* Whether the parser may consume body bytes of the current request now. */
static bool
body_wanted(const struct gw_req *req)
{
    return !req->body_done &&
           (req->body_started || req->resp == GW_RESP_ENDED || req->content_length == 0);
}

static bool
step_head(struct gw_conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    if (evbuffer_get_length(in) == 0) {
        return false;
    }
    if (!c->head_started) {
        c->head_started = true;
        c->head_bytes = 0;
        c->since = gw_http_now_ms();
    }
    size_t max = c->lim.max_header_bytes + 1 - c->head_bytes;
    c->head_ready = false;
    c->head_bytes += gw_http_feed(c, max);
    if (c->perr != HPE_OK && c->perr != HPE_PAUSED) {
        parse_fail(c);
        return false;
    }
    if (c->head_bytes > c->lim.max_header_bytes) {
        (void)gw_http_refuse(c, 431, "RequestHeaderSectionTooLarge",
                             "Your request header section exceeds the maximum allowed size.");
        parse_fail(c);
        return false;
    }
    if (!c->head_ready) {
        return false;
    }
    c->head_ready = false;
    c->head_started = false;
    struct gw_req *req = gw_http_req_new(c);
    if (req == NULL) {
        (void)gw_http_refuse(c, 503, "ServiceUnavailable", "Out of memory.");
        parse_fail(c);
        return false;
    }
    c->req = req;
    req->body_done = false;
    /* the loop that took it, and whether it came by the relay (one id on both loops) */
    log_debug("%s %s %s %s on loop %u%s", req->id, c->peer, req->method, req->target, loop_no(),
              c->relayed ? ", relayed" : "");
    c->srv->on_request(req, c->srv->arg);
    return true;
}

/*
 * Plain connections only: read up to max body bytes straight from the socket,
 * at most GW_HTTP_BODY_READ at a time (libevent 2.1 reads 4 KiB per read
 * callback), and parse them at once.  Only when the input is empty and the
 * parser runs, so the order of bytes is kept; what llhttp leaves (after the
 * message, or at an error) becomes input as if libevent had read it.  EOF
 * and socket errors are handled as on_event would.  Returns the bytes read.
 */
static size_t
read_body_direct(struct gw_conn *c, size_t max)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    evutil_socket_t fd = bufferevent_getfd(c->bev);
    if (c->is_tls || fd < 0 || c->peer_eof || c->paused || c->perr != HPE_OK ||
        evbuffer_get_length(in) > 0) {
        return 0;
    }
    size_t want = max < GW_HTTP_BODY_READ ? max : GW_HTTP_BODY_READ;
    if ((c->parser.flags & F_CONTENT_LENGTH) && !(c->parser.flags & F_CHUNKED) &&
        c->parser.content_length < want) {
        want = (size_t)c->parser.content_length; /* leave the next request to libevent */
    }
    if (want == 0) {
        return 0;
    }
    if (c->srv->rbuf == NULL) {
        c->srv->rbuf = malloc(GW_HTTP_BODY_READ);
        if (c->srv->rbuf == NULL) {
            return 0; /* libevent keeps reading */
        }
    }
    ssize_t n = recv(fd, c->srv->rbuf, want, MSG_DONTWAIT);
    if (n == 0) {
        c->peer_eof = true;
        c->eof_pending = true; /* handled after parsing, as on_event does */
        return 0;
    }
    if (n < 0) {
        int e = errno;
        if (e != EAGAIN && e != EWOULDBLOCK && e != EINTR) {
            log_debug("%s: connection error: %s", c->peer, evutil_socket_error_to_string(e));
            abort_req(c, ERR_CLOSED);
            c->dead = true;
        }
        return 0;
    }
    size_t used = gw_http_feed_mem(c, c->srv->rbuf, (size_t)n);
    if (used < (size_t)n && c->perr == HPE_PAUSED &&
        evbuffer_prepend(in, c->srv->rbuf + used, (size_t)n - used) != 0) {
        log_warn("%s: out of memory", c->peer);
        abort_req(c, ERR_NOMEM);
        c->dead = true;
    }
    return (size_t)n;
}

static bool
step_body(struct gw_conn *c, struct gw_req *req)
{
    size_t room = body_room(c, req);
    if (room == 0) {
        return false;
    }
    size_t used = gw_http_feed(c, room);
    if (c->perr == HPE_OK && used < room) {
        used += read_body_direct(c, room - used);
        if (c->dead) {
            return false;
        }
    }
    if (c->perr != HPE_OK && c->perr != HPE_PAUSED) {
        parse_fail(c);
        return true;
    }
    if (used > 0) {
        c->since = gw_http_now_ms(); /* body progress */
    }
    return used > 0 || req->body_done;
}

/* The response is flushed and the body consumed: on to the next request. */
static void
finish_req(struct gw_conn *c)
{
    struct gw_req *req = c->req;
    bool again = req->keep_alive && !req->want_close && req->body_done && !c->srv->draining;
    c->req = NULL;
    c->nrequests++;
    gw_http_access_request(req);
    gw_http_req_free(req);
    if (!again) {
        c->closing = true;
        return;
    }
    c->since = gw_http_now_ms();
    c->head_started = false;
}

/* The client is gone or timed out: tell the handler, once. */
static void
abort_req(struct gw_conn *c, int err)
{
    struct gw_req *req = c->req;
    if (req == NULL || req->aborted || req->resp == GW_RESP_ENDED) {
        return;
    }
    req->aborted = true;
    req->access.abort_err = err;
    log_info("%s %s: aborted: %s", req->id, c->peer, err_str(err));
    if (req->ops != NULL && req->ops->on_abort != NULL) {
        req->ops->on_abort(req, err, req->ops_arg);
    }
}

static void
start_linger(struct gw_conn *c)
{
    evutil_socket_t fd = bufferevent_getfd(c->bev);
    if (fd < 0 || c->peer_eof) {
        c->dead = true;
        return;
    }
    /* send FIN but keep reading, so unread input does not turn into an RST that
     * destroys the response before the client reads it */
    (void)shutdown(fd, SHUT_WR);
    c->lingering = true;
    c->since = gw_http_now_ms();
}

static bool
step(struct gw_conn *c)
{
    if (c->dead) {
        return false;
    }
    if (c->lingering) {
        struct evbuffer *in = bufferevent_get_input(c->bev);
        c->lingered += evbuffer_get_length(in);
        (void)evbuffer_drain(in, evbuffer_get_length(in));
        if (c->lingered > GW_HTTP_LINGER_BYTES) {
            c->dead = true;
        }
        return false;
    }
    struct gw_req *req = c->req;
    if (req == NULL) {
        if (c->closing) {
            if (gw_http_output_len(c) == 0) {
                start_linger(c);
            }
            return false;
        }
        return step_head(c);
    }
    if (req->resp == GW_RESP_ENDED && gw_http_output_len(c) == 0 &&
        (req->body_done || c->closing)) {
        finish_req(c);
        return true;
    }
    bool progress = false;
    if (body_wanted(req) && !c->closing) {
        progress = step_body(c, req);
        if (c->dead || req != c->req) {
            return false;
        }
        if (req->resp == GW_RESP_ENDED && !req->body_done &&
            req->discarded > c->lim.discard_body_bytes) {
            c->closing = true; /* too much unread body: drop the connection instead */
        }
    }
    if (req->aborted || req->resp == GW_RESP_ENDED || req->ops == NULL) {
        return progress;
    }
    if (req->body_news && req->body_started) {
        req->body_news = false;
        if (req->ops->on_body_ready != NULL) {
            req->ops->on_body_ready(req, req->ops_arg);
        }
        progress = true;
    }
    if (req->want_drain && gw_http_output_len(c) <= c->lim.buffer_bytes / 2 &&
        req->resp != GW_RESP_ENDED && !req->aborted) {
        req->want_drain = false;
        if (req->ops->on_output_drained != NULL) {
            req->ops->on_output_drained(req, req->ops_arg);
        }
        progress = true;
    }
    return progress;
}

/* Reading and the timer, from the state. */
static void
update_io(struct gw_conn *c)
{
    struct gw_req *req = c->req;
    bool want_read = true;
    enum gw_tkind kind = GW_TK_NONE;
    uint32_t ms = 0;
    if (c->lingering) {
        kind = GW_TK_LINGER;
        ms = GW_HTTP_LINGER_MS;
    } else if (req == NULL) {
        want_read = !c->closing;
        if (c->closing) {
            kind = GW_TK_NONE;
        } else if (c->head_started) {
            kind = GW_TK_HEAD;
            ms = c->lim.header_timeout_ms;
        } else {
            kind = GW_TK_IDLE;
            ms = c->nrequests == 0 ? c->lim.header_timeout_ms : c->lim.idle_timeout_ms;
        }
    } else if (body_wanted(req) && !c->closing) {
        /* stop reading while the body buffer is full: the handler is the slow side */
        want_read = body_room(c, req) > 0;
        kind = want_read ? GW_TK_BODY : GW_TK_NONE;
        ms = c->lim.body_timeout_ms;
    } else if (c->closing) {
        want_read = false;
    }
    /* otherwise: waiting for the handler; keep reading (bounded by the read
     * watermark) so a hang-up is noticed */
    if (c->peer_eof) {
        want_read = false;
    }
    if (!c->direct && want_read) {
        (void)bufferevent_enable(c->bev, EV_READ);
    } else if (!c->direct) {
        (void)bufferevent_disable(c->bev, EV_READ);
    } else if (want_read && evbuffer_get_length(bufferevent_get_input(c->bev)) < GW_HTTP_READ_MAX) {
        (void)event_add(c->rev, NULL); /* a no-op while it is added */
    } else {
        (void)event_del(c->rev); /* unparsed input never grows past GW_HTTP_READ_MAX */
    }
    if (kind != c->tkind) {
        if (kind == GW_TK_BODY) {
            c->since = gw_http_now_ms(); /* the body wait starts now */
            c->rate_since = c->since;    /* and so does a min_body_rate window */
            c->rate_bytes = req->body_received + req->discarded;
        }
        c->tkind = kind;
    }
    gw_http_fair_idle(c);
    uint64_t deadline = kind == GW_TK_NONE ? 0 : c->since + ms;
    if (kind == GW_TK_BODY && c->lim.min_body_rate > 0 &&
        c->rate_since + c->lim.min_body_rate_window_ms < deadline) {
        deadline = c->rate_since + c->lim.min_body_rate_window_ms;
    }
    if (deadline == c->deadline) {
        return;
    }
    c->deadline = deadline;
    if (deadline == 0) {
        (void)evtimer_del(c->timer);
        return;
    }
    uint64_t now = gw_http_now_ms();
    uint64_t left = deadline > now ? deadline - now : 0;
    struct timeval tv = {(time_t)(left / 1000), (suseconds_t)((left % 1000) * 1000)};
    (void)evtimer_add(c->timer, &tv);
}

void
gw_http_conn_free(struct gw_conn *c)
{
    struct gw_server *srv = c->srv;
    abort_req(c, ERR_CLOSED);
    if (c->req != NULL) {
        gw_http_access_request(c->req);
    }
    gw_http_req_free(c->req);
    c->req = NULL;
    if (c->rev != NULL) {
        event_free(c->rev); /* before the socket closes with the bufferevent */
        c->rev = NULL;
    }
    if (c->bev != NULL) {
        bufferevent_free(c->bev);
    }
    if (c->timer != NULL) {
        event_free(c->timer);
    }
    if (c->kick != NULL) {
        event_free(c->kick);
    }
    gw_http_hdr_list_cleanup(&c->head);
    gw_http_hdr_list_cleanup(&c->trail);
    TAILQ_REMOVE(&srv->conns, c, link);
    if (c->is_idle) {
        TAILQ_REMOVE(&srv->idle, c, idle_link);
    }
    if (c->client != NULL) {
        if (c->relayed) {
            gw_http_fair_relay_end(c->client);
        } else {
            gw_http_fair_conn_end(c->client);
        }
    }
    srv->nconns--;
    if (c->relayed) {
        srv->nrelayed--;
    } else {
        GW_GAUGE_DEC(client_conns_open);
    }
    if (srv->accepting_paused || srv->handout != NULL) {
        gw_http_accept_gate(srv); /* with the hand-out: publish the count (gate.c) */
    }
    /* Logged once the count is published: whoever reads the log (the tests
     * do) then sees the acceptor's view, not one the loop has yet to give it. */
    log_debug("%s: connection closed on loop %u, %zu open there", c->peer, loop_no(), srv->nconns);
    free(c);
    if (srv->draining && srv->nconns == 0 && srv->drain_done != NULL) {
        void (*done)(void *) = srv->drain_done;
        srv->drain_done = NULL;
        done(srv->drain_arg);
    }
}

static void
run_steps(struct gw_conn *c)
{
    int rounds = 0;
    while (step(c)) {
        if (++rounds == GW_HTTP_ROUNDS) {
            gw_http_conn_kick(c); /* more to do: yield to other connections */
            break;
        }
    }
}

static void
conn_process(struct gw_conn *c)
{
    if (c->in_process) {
        return;
    }
    c->in_process = true;
    run_steps(c);
    if (c->eof_pending && !c->dead) {
        c->eof_pending = false;
        after_eof(c);
        run_steps(c);
    }
    /* what the steps queued leaves now; steps that waited for it (the next
     * request, a lingering close) go on.  Output left over has the
     * bufferevent's write event, so it is never stranded. */
    for (int rounds = 0; gw_http_flush(c); rounds++) {
        if (rounds == GW_HTTP_ROUNDS) {
            gw_http_conn_kick(c);
            break;
        }
        run_steps(c);
    }
    c->in_process = false;
    if (c->dead) {
        gw_http_conn_free(c);
        return;
    }
    update_io(c);
}

/* bufferevent read callback */
static void
on_read(struct bufferevent *bev, void *arg)
{
    struct gw_conn *c = arg;
    (void)bev;
    conn_process(c);
}

/* bufferevent write callback: output at or below the low watermark */
static void
on_write(struct bufferevent *bev, void *arg)
{
    struct gw_conn *c = arg;
    if (c->direct) {
        gw_bevio_written(bev); /* all of it left: the next output goes by gw_http_flush */
    }
    conn_process(c);
}

static void on_event(struct bufferevent *bev, short what, void *arg);

/* c->rev: a direct connection's socket is readable */
static void
on_raw_read(evutil_socket_t fd, short what, void *arg)
{
    struct gw_conn *c = arg;
    (void)fd;
    (void)what;
    short ev = gw_bevio_read(c->bev, GW_HTTP_READ_MAX, GW_HTTP_READ_MAX);
    if (ev != 0) {
        (void)event_del(c->rev);
        on_event(c->bev, ev, c); /* after the bytes before the EOF, as a bufferevent does */
        return;
    }
    conn_process(c);
}

/* bufferevent event callback */
static void
on_event(struct bufferevent *bev, short what, void *arg)
{
    struct gw_conn *c = arg;
    (void)bev;
    struct gw_req *req = c->req;
    if (what & (BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) {
        if (what & BEV_EVENT_ERROR) {
            log_debug("%s: connection error: %s", c->peer,
                      evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
        }
        abort_req(c, (what & BEV_EVENT_TIMEOUT) ? ERR_TIMEOUT : ERR_CLOSED);
        c->dead = true;
    } else if (what & BEV_EVENT_EOF) {
        c->peer_eof = true;
        c->eof_pending = true; /* handled after parsing what arrived before it */
    }
    (void)req;
    conn_process(c);
}

/* After an EOF has been processed: what is left to do. */
static void
after_eof(struct gw_conn *c)
{
    struct gw_req *req = c->req;
    if (c->lingering || req == NULL) {
        /* idle, a partial head, or after our error: keep flushing an error
         * response to a half-closed client, else close */
        if (!(c->closing && gw_http_output_len(c) > 0)) {
            c->dead = true;
        }
    } else if (!req->body_done) {
        if (req->resp == GW_RESP_ENDED) {
            c->closing = true;
        } else {
            abort_req(c, ERR_CLOSED);
            c->dead = true;
        }
    } else if (c->relayed && req->resp != GW_RESP_ENDED) {
        abort_req(c, ERR_CLOSED); /* the relay never half-closes: its client left */
        c->dead = true;
    } else {
        c->closing = true; /* half-closed client: answer, then close */
    }
}

/* the kick event: run the state machine from the loop */
static void
on_kick(evutil_socket_t fd, short what, void *arg)
{
    struct gw_conn *c = arg;
    (void)fd;
    (void)what;
    conn_process(c);
}

/*
 * The body timer fired: whether the body wait is over, by body_timeout_ms or
 * by a min_body_rate window the client did not keep up.  If neither, a new
 * window starts and the timer is armed again.
 */
static bool
body_timed_out(struct gw_conn *c)
{
    uint64_t now = gw_http_now_ms();
    if (now >= c->since + c->lim.body_timeout_ms) {
        return true;
    }
    if (c->lim.min_body_rate > 0 && now >= c->rate_since + c->lim.min_body_rate_window_ms &&
        !gw_http_fair_rate_check(c, now)) {
        return true;
    }
    conn_process(c); /* re-arms from the new window (tkind unchanged) */
    return false;
}

/* the connection timer */
static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct gw_conn *c = arg;
    (void)fd;
    (void)what;
    c->deadline = 0;
    struct gw_req *req = c->req;
    switch (c->tkind) {
    case GW_TK_IDLE:
    case GW_TK_LINGER:
        c->dead = true;
        break;
    case GW_TK_HEAD:
        log_info("%s: header timeout", c->peer);
        c->closing = true;
        gw_http_send_error(c, NULL, 400, "RequestTimeout",
                           "Your socket connection to the server was not read from or written "
                           "to within the timeout period.");
        break;
    case GW_TK_BODY:
        if (req != NULL && !body_timed_out(c)) {
            return; /* the client kept min_body_rate: a new window is armed */
        }
        if (req == NULL || req->resp == GW_RESP_ENDED) {
            c->dead = true;
            break;
        }
        abort_req(c, ERR_TIMEOUT);
        if (req->resp == GW_RESP_NONE || req->resp == GW_RESP_STARTED) {
            gw_http_send_error(c, req, 400, "RequestTimeout",
                               "Your socket connection to the server was not read from or "
                               "written to within the timeout period.");
        } else {
            c->dead = true;
        }
        c->closing = true;
        break;
    case GW_TK_NONE:
    default:
        break;
    }
    c->tkind = GW_TK_NONE;
    conn_process(c);
}

/* ---- connections (listeners: gateway/http/listen.c) ---- */

int
gw_http_conn_attach(struct gw_server *srv, struct bufferevent *bev, const char *peer, bool is_tls,
                    enum gw_listener listener, struct gw_client *cl)
{
    struct gw_conn *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        bufferevent_free(bev);
        gw_http_fair_conn_end(cl);
        return ERR_NOMEM;
    }
    c->client = cl;
    c->srv = srv;
    c->bev = bev;
    c->is_tls = is_tls;
    c->listener = listener;
    str_copy(c->peer, sizeof(c->peer), peer);
    gw_http_limits_from(&c->lim, srv->cfg);
    c->cfg = srv->cfg;
    gw_http_hdr_list_init(&c->head, c->lim.max_header_bytes);
    gw_http_hdr_list_init(&c->trail, c->lim.max_header_bytes);
    TAILQ_INSERT_TAIL(&srv->conns, c, link);
    srv->nconns++;
    GW_COUNT(client_conns_open);
    log_debug("%s: connection opened on loop %u, %zu open there", peer, loop_no(), srv->nconns);
    c->timer = evtimer_new(srv->base, on_timer, c);
    c->kick = evtimer_new(srv->base, on_kick, c);
    if (c->timer == NULL || c->kick == NULL) {
        c->dead = true;
        gw_http_conn_free(c);
        return ERR_NOMEM;
    }
    llhttp_init(&c->parser, HTTP_REQUEST, &gw_http_settings);
    c->parser.data = c;
    c->since = gw_http_now_ms();
    bufferevent_setcb(bev, on_read, on_write, on_event, c);
    /* unparsed input never grows past one read: back-pressure on the socket */
    bufferevent_setwatermark(bev, EV_READ, 0, GW_HTTP_READ_MAX);
    /* on_write runs at every write that leaves the output at or below half the cap */
    bufferevent_setwatermark(bev, EV_WRITE, c->lim.buffer_bytes / 2, 0);
    struct timeval wtv = {(time_t)(c->lim.write_timeout_ms / 1000),
                          (suseconds_t)((c->lim.write_timeout_ms % 1000) * 1000)};
    (void)bufferevent_set_timeouts(bev, NULL, &wtv);
    /* a plain socket is read by c->rev and written at once (gw_http_flush,
     * gateway/net/bevio.c); the bufferevent's write event, and with it the
     * write timeout, only runs while the client's window is full */
    evutil_socket_t fd = bufferevent_getfd(bev);
    if (!is_tls && fd >= 0) {
        c->rev = event_new(srv->base, fd, EV_READ | EV_PERSIST, on_raw_read, c);
        c->direct = c->rev != NULL;
    }
    if (c->direct) {
        (void)bufferevent_disable(bev, EV_WRITE); /* a new bufferevent has it enabled */
    } else {
        (void)bufferevent_enable(bev, EV_READ | EV_WRITE);
    }
    update_io(c);
    return 0;
}

int
gw_http_conn_adopt(struct gw_server *srv, struct bufferevent *bev, const char *peer, bool is_tls)
{
    struct gw_http_limits lim;
    gw_http_server_limits(&lim, srv);
    bool full = false;
    struct gw_client *cl = gw_http_fair_admit(srv, peer, &lim, &full);
    if (cl == NULL) {
        bufferevent_free(bev);
        return full ? ERR_AGAIN : ERR_DENIED;
    }
    return gw_http_conn_attach(srv, bev, peer, is_tls, GW_LISTENER_S3_ALL, cl);
}

int
gw_http_conn_relay(struct gw_server *srv, struct bufferevent *bev, const char *peer, bool is_tls,
                   enum gw_listener listener, const char *id)
{
    struct gw_client *cl = gw_http_fair_relay_client(srv, peer);
    if (cl == NULL) {
        bufferevent_free(bev);
        return ERR_NOMEM;
    }
    int rc = gw_http_conn_attach(srv, bev, peer, is_tls, listener, cl);
    if (rc != 0) {
        return rc; /* its failure path ended cl's provisional connection */
    }
    gw_http_fair_relay_attached(cl);
    struct gw_conn *c = TAILQ_LAST(&srv->conns, gw_conn_list);
    c->relayed = true;
    srv->nrelayed++; /* in no limit: the gate below publishes the count without it */
    GW_GAUGE_DEC(client_conns_open); /* nor in the gauge: its client's connection is counted */
    str_copy(c->relay_id, sizeof(c->relay_id), id);
    gw_http_fair_idle(c); /* out of the idle list: never shed */
    return 0;
}
