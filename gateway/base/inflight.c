/*
 * gateway/base/inflight.c: object writes in flight per configuration and
 * loop (inflight.h).
 */
#include "gateway/base/inflight.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>

/* One loop's counts, on a cache line of its own: only that loop writes it. */
struct slot {
    alignas(64) _Atomic uint64_t begun; /* writes begun under the configuration */
    _Atomic uint64_t ended;             /* ... of them, ended */
    _Atomic bool moved_on;              /* the loop serves a newer configuration */
};

struct gw_inflight {
    uint32_t loops;
    struct slot *slot; /* slot[0..loops) */
};

struct gw_inflight *
gw_inflight_new(uint32_t loops)
{
    struct gw_inflight *in = calloc(1, sizeof(*in));
    if (in == NULL) {
        return NULL;
    }
    in->loops = loops > 0 ? loops : 1;
    in->slot = aligned_alloc(alignof(struct slot), in->loops * sizeof(struct slot));
    if (in->slot == NULL) {
        free(in);
        return NULL;
    }
    for (uint32_t i = 0; i < in->loops; i++) {
        atomic_init(&in->slot[i].begun, 0);
        atomic_init(&in->slot[i].ended, 0);
        atomic_init(&in->slot[i].moved_on, false);
    }
    return in;
}

void
gw_inflight_free(struct gw_inflight *in)
{
    if (in != NULL) {
        free(in->slot);
        free(in);
    }
}

/* The calling loop's slot: the only writer, so a load and a store count. */
static void
bump(_Atomic uint64_t *c)
{
    uint64_t v = atomic_load_explicit(c, memory_order_relaxed);
    atomic_store_explicit(c, v + 1, memory_order_release);
}

void
gw_inflight_begin(struct gw_inflight *in, unsigned loop)
{
    if (in != NULL && loop < in->loops) {
        bump(&in->slot[loop].begun);
    }
}

void
gw_inflight_end(struct gw_inflight *in, unsigned loop)
{
    if (in != NULL && loop < in->loops) {
        bump(&in->slot[loop].ended);
    }
}

void
gw_inflight_moved_on(struct gw_inflight *in, unsigned loop)
{
    if (in != NULL && loop < in->loops) {
        /* release: every begin of this loop under the configuration comes before */
        atomic_store_explicit(&in->slot[loop].moved_on, true, memory_order_release);
    }
}

bool
gw_inflight_ended(const struct gw_inflight *in, uint64_t *pending)
{
    uint64_t n = 0;
    bool ended = true;
    for (uint32_t i = 0; in != NULL && i < in->loops; i++) {
        struct slot *s = &in->slot[i];
        if (!atomic_load_explicit(&s->moved_on, memory_order_acquire)) {
            ended = false; /* it may still begin writes under this configuration */
            continue;
        }
        /* begun first: an end read later is never of a write this read missed, so
         * begun == ended means none is in flight (one read after the other may see
         * a write begun and ended between them: then they differ, and we look again) */
        uint64_t b = atomic_load_explicit(&s->begun, memory_order_acquire);
        uint64_t e = atomic_load_explicit(&s->ended, memory_order_acquire);
        if (b != e) {
            ended = false;
            n += b > e ? b - e : 0;
        }
    }
    if (pending != NULL) {
        *pending = n;
    }
    return ended;
}
