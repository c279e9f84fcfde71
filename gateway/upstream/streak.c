/*
 * gateway/upstream/streak.c: the unreachable streak (upstream.h, engine.h):
 * fed by the engines as their transfers connect or fail to, on every loop
 * whose client shares it, and read by gw_upstream_unreachable (/readyz).
 * It calls nothing back, so the engines and the API file that calls them
 * make no circle.
 */
#include "gateway/upstream/engine.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"

void
gw_upstream_streak_init(struct gw_upstream_streak *s)
{
    atomic_init(&s->fails, 0);
    atomic_init(&s->fail_ms, 0);
    (void)pthread_mutex_init(&s->mu, NULL);
    s->why[0] = '\0';
}

void
gw_upstream_streak_cleanup(struct gw_upstream_streak *s)
{
    (void)pthread_mutex_destroy(&s->mu);
}

struct gw_upstream_streak *
gw_upstream_streak_new(void)
{
    struct gw_upstream_streak *s = malloc(sizeof(*s));
    if (s == NULL) {
        log_error("out of memory");
        return NULL;
    }
    gw_upstream_streak_init(s);
    return s;
}

void
gw_upstream_streak_free(struct gw_upstream_streak *s)
{
    if (s == NULL) {
        return;
    }
    gw_upstream_streak_cleanup(s);
    free(s);
}

void
gw_upstream_streak_failed(struct gw_upstream_streak *s, uint64_t now_ms)
{
    /* the time first: whoever sees the new count sees this time or a later one */
    atomic_store_explicit(&s->fail_ms, now_ms, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->fails, 1, memory_order_release);
}

void
gw_upstream_streak_why(struct gw_upstream_streak *s, const char *text)
{
    (void)pthread_mutex_lock(&s->mu);
    str_copy(s->why, sizeof(s->why), text);
    (void)pthread_mutex_unlock(&s->mu);
}

void
gw_upstream_streak_reached(struct gw_upstream_streak *s)
{
    /* every response comes here: write only when there is a streak to end */
    if (atomic_load_explicit(&s->fails, memory_order_relaxed) != 0) {
        atomic_store_explicit(&s->fails, 0, memory_order_relaxed);
    }
}

bool
gw_upstream_streak_unreachable(struct gw_upstream_streak *s, char *why, size_t len)
{
    if (atomic_load_explicit(&s->fails, memory_order_acquire) < GW_UPSTREAM_DOWN_AFTER) {
        return false;
    }
    /* the time before now: a failure recorded meanwhile cannot look older than the hold */
    uint64_t last = atomic_load_explicit(&s->fail_ms, memory_order_relaxed);
    if (clock_mono_ms() >= last + GW_UPSTREAM_DOWN_HOLD_MS) {
        return false;
    }
    if (len > 0) {
        (void)pthread_mutex_lock(&s->mu);
        str_copy(why, len, s->why);
        (void)pthread_mutex_unlock(&s->mu);
    }
    return true;
}

bool
gw_upstream_unreachable(const struct gw_upstream *up, char *why, size_t len)
{
    return gw_upstream_streak_unreachable(up->streak, why, len);
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
    gw_upstream_streak_why(up->streak, up->connect_err);
}

void
gw_upstream_note_connect_failed(struct gw_upstream *up)
{
    gw_upstream_streak_failed(up->streak, clock_mono_ms());
}

void
gw_upstream_note_reached(struct gw_upstream *up)
{
    gw_upstream_streak_reached(up->streak);
}
