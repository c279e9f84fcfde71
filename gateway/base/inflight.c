/*
 * gateway/base/inflight.c: object writes in flight per configuration, loop
 * and bucket slot (inflight.h).
 */
#include "gateway/base/inflight.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>

/*
 * One loop's counts, on cache lines of their own: only that loop writes them.
 * 32 bits a count: begun and ended are compared modulo 2^32, and no loop has
 * 2^32 writes in flight at once.
 */
struct record {
    alignas(64) _Atomic uint32_t begun[GW_INFLIGHT_SLOTS]; /* writes begun, per slot */
    _Atomic uint32_t ended[GW_INFLIGHT_SLOTS];             /* ... of them, ended */
    _Atomic bool moved_on; /* the loop serves a newer configuration */
};

struct gw_inflight {
    uint32_t loops;
    struct record *rec; /* rec[0..loops) */
};

unsigned
gw_inflight_slot(const char *bucket)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *c = (const unsigned char *)bucket; *c != '\0'; c++) {
        h = (h ^ *c) * 0x100000001b3ULL;
    }
    return (unsigned)(h % GW_INFLIGHT_SLOTS);
}

struct gw_inflight *
gw_inflight_new(uint32_t loops)
{
    struct gw_inflight *in = calloc(1, sizeof(*in));
    if (in == NULL) {
        return NULL;
    }
    in->loops = loops > 0 ? loops : 1;
    in->rec = aligned_alloc(alignof(struct record), in->loops * sizeof(struct record));
    if (in->rec == NULL) {
        free(in);
        return NULL;
    }
    for (uint32_t i = 0; i < in->loops; i++) {
        struct record *r = &in->rec[i];
        for (unsigned k = 0; k < GW_INFLIGHT_SLOTS; k++) {
            atomic_init(&r->begun[k], 0);
            atomic_init(&r->ended[k], 0);
        }
        atomic_init(&r->moved_on, false);
    }
    return in;
}

void
gw_inflight_free(struct gw_inflight *in)
{
    if (in != NULL) {
        free(in->rec);
        free(in);
    }
}

/* The calling loop's count: the only writer, so a load and a store count. */
static void
bump(_Atomic uint32_t *c)
{
    uint32_t v = atomic_load_explicit(c, memory_order_relaxed);
    atomic_store_explicit(c, v + 1, memory_order_release);
}

void
gw_inflight_begin(struct gw_inflight *in, unsigned loop, unsigned slot)
{
    if (in != NULL && loop < in->loops && slot < GW_INFLIGHT_SLOTS) {
        bump(&in->rec[loop].begun[slot]);
    }
}

void
gw_inflight_end(struct gw_inflight *in, unsigned loop, unsigned slot)
{
    if (in != NULL && loop < in->loops && slot < GW_INFLIGHT_SLOTS) {
        bump(&in->rec[loop].ended[slot]);
    }
}

void
gw_inflight_moved_on(struct gw_inflight *in, unsigned loop)
{
    if (in != NULL && loop < in->loops) {
        /* release: every begin of this loop under the configuration comes before */
        atomic_store_explicit(&in->rec[loop].moved_on, true, memory_order_release);
    }
}

bool
gw_inflight_ended(const struct gw_inflight *in, uint64_t mask, uint64_t *pending)
{
    uint64_t n = 0;
    bool ended = true;
    for (uint32_t i = 0; in != NULL && i < in->loops; i++) {
        struct record *r = &in->rec[i];
        if (!atomic_load_explicit(&r->moved_on, memory_order_acquire)) {
            ended = false; /* it may still begin writes under this configuration */
            continue;
        }
        for (unsigned k = 0; k < GW_INFLIGHT_SLOTS; k++) {
            if ((mask >> k & 1) == 0) {
                continue;
            }
            /* begun first: an end read later is never of a write this read missed, so
             * begun == ended means none is in flight (one read after the other may see
             * a write begun and ended between them: then they differ, and we look again) */
            uint32_t b = atomic_load_explicit(&r->begun[k], memory_order_acquire);
            uint32_t e = atomic_load_explicit(&r->ended[k], memory_order_acquire);
            if (b != e) {
                ended = false;
                n += (uint32_t)(b - e);
            }
        }
    }
    if (pending != NULL) {
        *pending = n;
    }
    return ended;
}
