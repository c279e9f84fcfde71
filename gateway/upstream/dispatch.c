/*
 * gateway/upstream/dispatch.c: gateway/upstream/upstream.h's functions, each
 * handing over to the engine its client or transfer was made by (the tag in
 * gateway/upstream/engine.h), and the unreachable streak both engines keep
 * in that tag.
 */
#include "gateway/upstream/engine.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "common/clock.h"

/* The engine's struct starts with the public tag ("pub"), so these casts are exact. */
#define CURL_UP(up) ((struct gw_curl *)(void *)(up))
#define LEAN_UP(up) ((struct gw_lean *)(void *)(up))
#define CURL_X(x)   ((struct gw_curl_xfer *)(void *)(x))
#define LEAN_X(x)   ((struct gw_lean_xfer *)(void *)(x))

struct gw_upstream *
gw_upstream_new(struct event_base *base, const struct gw_upstream_opts *opts)
{
    if (opts == NULL) {
        return NULL;
    }
    switch (opts->engine) {
    case GW_UPSTREAM_CURL:
        return (struct gw_upstream *)(void *)gw_curl_new(base, opts);
    case GW_UPSTREAM_LEAN:
        return (struct gw_upstream *)(void *)gw_lean_new(base, opts);
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
    if (up->engine == GW_UPSTREAM_LEAN) {
        gw_lean_free(LEAN_UP(up));
    } else {
        gw_curl_free(CURL_UP(up));
    }
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

void
gw_upstream_conns(const struct gw_upstream *up, uint64_t *open, uint64_t *idle)
{
    *open = 0;
    *idle = 0;
    if (up == NULL) {
        return;
    }
    if (up->engine == GW_UPSTREAM_LEAN) {
        const struct gw_lean *l = (const struct gw_lean *)(const void *)up;
        *open = gw_lean_conns_open(l);
        *idle = gw_lean_conns_idle(l);
    } else {
        *open = gw_curl_sockets((const struct gw_curl *)(const void *)up);
    }
}

int
gw_upstream_xfer_start(struct gw_upstream *up, const struct gw_xfer_req *rq,
                       const struct gw_xfer_cbs *cbs, void *arg, struct gw_xfer **out)
{
    if (up == NULL || out == NULL) {
        return ERR_INVAL;
    }
    int err;
    if (up->engine == GW_UPSTREAM_LEAN) {
        struct gw_lean_xfer *x = NULL;
        err = gw_lean_xfer_start(LEAN_UP(up), rq, cbs, arg, &x);
        *out = (struct gw_xfer *)(void *)x;
    } else {
        struct gw_curl_xfer *x = NULL;
        err = gw_curl_xfer_start(CURL_UP(up), rq, cbs, arg, &x);
        *out = (struct gw_xfer *)(void *)x;
    }
    return err;
}

void
gw_xfer_resume_send(struct gw_xfer *x)
{
    if (x == NULL) {
        return;
    }
    if (x->engine == GW_UPSTREAM_LEAN) {
        gw_lean_resume_send(LEAN_X(x));
    } else {
        gw_curl_resume_send(CURL_X(x));
    }
}

void
gw_xfer_resume_recv(struct gw_xfer *x)
{
    if (x == NULL) {
        return;
    }
    if (x->engine == GW_UPSTREAM_LEAN) {
        gw_lean_resume_recv(LEAN_X(x));
    } else {
        gw_curl_resume_recv(CURL_X(x));
    }
}

void
gw_upstream_xfer_cancel(struct gw_xfer *x)
{
    if (x == NULL) {
        return;
    }
    if (x->engine == GW_UPSTREAM_LEAN) {
        gw_lean_xfer_cancel(LEAN_X(x));
    } else {
        gw_curl_xfer_cancel(CURL_X(x));
    }
}

uint64_t
gw_xfer_body_sent(const struct gw_xfer *x)
{
    if (x == NULL) {
        return 0;
    }
    return x->engine == GW_UPSTREAM_LEAN ? gw_lean_body_sent(LEAN_X(x))
                                         : gw_curl_body_sent(CURL_X(x));
}
