/*
 * gateway/upstream/streak.c: the unreachable streak both engines keep in the
 * client's header (engine.h): fed by the engines as their transfers connect
 * or fail to, read by gw_upstream_unreachable (/readyz).  It calls nothing
 * back, so the engines and the API file that calls them make no circle.
 */
#include "gateway/upstream/engine.h"

#include <stdarg.h>
#include <stdio.h>

#include "common/clock.h"

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
