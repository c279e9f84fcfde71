/*
 * gateway/upstream/upstream.c: gateway/upstream/upstream.h's functions: the
 * one public transfer API, each call handed to the engine a client or
 * transfer was made by through its operations table (engine.h), and the
 * unreachable streak both engines keep in the client's header.
 */
#include "gateway/upstream/engine.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "common/clock.h"

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

void
gw_upstream_note_connect_err(struct gw_upstream *up, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    /* NOLINTNEXTLINE: clang-analyzer 14 false positive (va_list "uninitialized") */
    int n = vsnprintf(up->connect_err, sizeof(up->connect_err), fmt, ap);
    va_end(ap);
    if (n < 0) {
        up->connect_err[0] = '\0';
    } /* else truncated at worst: the text is for people */
}

void
gw_upstream_note_connect_failed(struct gw_upstream *up)
{
    up->connect_fails++;
    up->connect_fail_ms = clock_mono_ms();
}

void
gw_upstream_note_reached(struct gw_upstream *up)
{
    up->connect_fails = 0;
}

bool
gw_upstream_unreachable(const struct gw_upstream *up, const char **why)
{
    if (up->connect_fails < GW_UPSTREAM_DOWN_AFTER ||
        clock_mono_ms() - up->connect_fail_ms >= GW_UPSTREAM_DOWN_HOLD_MS) {
        return false;
    }
    *why = up->connect_err;
    return true;
}

int
gw_upstream_xfer_start(struct gw_upstream *up, const struct gw_xfer_req *rq,
                       const struct gw_xfer_cbs *cbs, void *arg, struct gw_xfer **out)
{
    if (up == NULL || out == NULL) {
        return ERR_INVAL;
    }
    *out = NULL;
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
