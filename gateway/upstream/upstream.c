/*
 * gateway/upstream/upstream.c: gateway/upstream/upstream.h's functions: the
 * one public transfer API, each call handed to the engine a client or
 * transfer was made by through its operations table (engine.h), and the
 * checks on a request before any engine sees it.  The client's shared set-up
 * is engine.c's, the unreachable streak streak.c's: the engines call those,
 * never this file, so the API and its engines make no circle.
 */
#include "gateway/upstream/engine.h"

#include <stddef.h>
#include <string.h>

#include "gateway/upstream/upmsg.h"

struct gw_upstream *
gw_upstream_new(struct event_base *base, const struct gw_upstream_opts *opts)
{
    if (opts == NULL) {
        return NULL;
    }
    switch (opts->engine) {
    case GW_UPSTREAM_CURL:
        return gw_curl_new(base, opts);
    case GW_UPSTREAM_LEAN:
        return gw_lean_new(base, opts);
    default:
        return NULL;
    }
}

void
gw_upstream_free(struct gw_upstream *up)
{
    if (up == NULL) {
        return;
    }
    up->ops->free(up);
}

int
gw_upstream_xfer_start(struct gw_upstream *up, const struct gw_xfer_req *rq,
                       const struct gw_xfer_cbs *cbs, void *arg, struct gw_xfer **out)
{
    if (up == NULL || out == NULL) {
        return ERR_INVAL;
    }
    *out = NULL;
    /* the request checks both engines rely on */
    if (rq == NULL || cbs == NULL || cbs->on_done == NULL || rq->method == NULL ||
        rq->url == NULL || (rq->nheaders > 0 && rq->headers == NULL)) {
        return ERR_INVAL;
    }
    bool head = strcmp(rq->method, "HEAD") == 0;
    if (rq->body_length < -1 || (rq->body_length >= 0 && (cbs->read_body == NULL || head)) ||
        !gw_upmsg_req_method_ok(rq->method) || !gw_upmsg_req_url_ok(rq->url)) {
        return ERR_INVAL;
    }
    return up->ops->xfer_start(up, rq, cbs, arg, out);
}

void
gw_xfer_resume_send(struct gw_xfer *x)
{
    if (x == NULL) {
        return;
    }
    x->ops->resume_send(x);
}

void
gw_xfer_resume_recv(struct gw_xfer *x)
{
    if (x == NULL) {
        return;
    }
    x->ops->resume_recv(x);
}

void
gw_upstream_xfer_cancel(struct gw_xfer *x)
{
    if (x == NULL) {
        return;
    }
    x->ops->cancel(x);
}

uint64_t
gw_xfer_body_sent(const struct gw_xfer *x)
{
    if (x == NULL) {
        return 0;
    }
    return x->ops->body_sent(x);
}

void
gw_upstream_conns(const struct gw_upstream *up, uint64_t *open, uint64_t *idle)
{
    *open = 0;
    *idle = 0;
    if (up != NULL) {
        up->ops->conns(up, open, idle);
    }
}
