/*
 * gateway/upstream/engine.c: the set-up every engine's constructor shares
 * (engine.h): the client's header with its base, a copy of the options and
 * the unreachable streak it feeds.
 * The engines call it; it calls nothing back.
 */
#include "gateway/upstream/engine.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"

void *
gw_upstream_alloc(size_t size, const struct gw_upstream_ops *ops, struct event_base *base,
                  const struct gw_upstream_opts *opts)
{
    if (base == NULL || opts == NULL) {
        return NULL;
    }
    struct gw_upstream *up = calloc(1, size);
    if (up == NULL) {
        log_error("out of memory");
        return NULL;
    }
    up->ops = ops;
    up->base = base;
    up->opts = *opts;
    if (opts->ca_file != NULL && (up->ca_file = strdup(opts->ca_file)) == NULL) {
        log_error("out of memory");
        free(up);
        return NULL;
    }
    up->opts.ca_file = up->ca_file;
    gw_upstream_streak_init(&up->own_streak);
    up->streak = opts->streak != NULL ? opts->streak : &up->own_streak;
    return up;
}

void
gw_upstream_dealloc(struct gw_upstream *up)
{
    gw_upstream_streak_cleanup(&up->own_streak);
    free(up->ca_file);
    free(up);
}
