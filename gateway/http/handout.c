/*
 * gateway/http/handout.c: the hand-out of accepted connections to the loops
 * (config "accept": "acceptor"; DESIGN "Worker loops", "Accepting"): the
 * slots where every loop publishes its counts, and the acceptor's choice
 * among them, read without a lock.  gate.c does the hand-over and the
 * pausing; this file calls nothing else of the room's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/http/internal.h"

struct gw_handout *
gw_handout_new(size_t loops, struct gw_loopq *ctlq)
{
    /* aligned for idle_seq's line (sizeof is a multiple of the alignment) */
    struct gw_handout *h = aligned_alloc(_Alignof(struct gw_handout), sizeof(*h));
    if (h == NULL) {
        return NULL;
    }
    memset(h, 0, sizeof(*h));
    size_t cap = loops > 0 ? loops : 1;
    h->slot = aligned_alloc(_Alignof(struct gw_handout_slot), cap * sizeof(*h->slot));
    if (h->slot == NULL) {
        free(h);
        return NULL;
    }
    for (size_t i = 0; i < cap; i++) {
        h->slot[i].srv = NULL;
        h->slot[i].q = NULL;
        atomic_init(&h->slot[i].open, 0);
        atomic_init(&h->slot[i].oldest_idle, UINT64_MAX);
        atomic_init(&h->slot[i].pending, 0);
    }
    h->cap = cap;
    h->ctlq = ctlq;
    atomic_init(&h->paused, false);
    atomic_init(&h->idle_seq, 0);
    return h;
}

uint64_t
gw_http_handout_idle_seq(struct gw_handout *h)
{
    return atomic_fetch_add_explicit(&h->idle_seq, 1, memory_order_relaxed) + 1;
}

void
gw_handout_free(struct gw_handout *h)
{
    if (h != NULL) {
        free(h->slot);
        free(h);
    }
}

int
gw_http_handout_join(struct gw_handout *h, struct gw_server *srv, struct gw_loopq *q)
{
    if (h->n == h->cap) {
        return ERR_NOMEM;
    }
    struct gw_handout_slot *s = &h->slot[h->n++];
    s->srv = srv;
    s->q = q;
    srv->handout = h;
    srv->slot = s;
    return 0;
}

struct gw_handout_slot *
gw_http_handout_pick(struct gw_handout *h, size_t share)
{
    struct gw_handout_slot *best = NULL;
    size_t best_load = 0;
    struct gw_handout_slot *shed = NULL;
    uint64_t oldest = UINT64_MAX;
    for (size_t k = 0; k < h->n; k++) {
        struct gw_handout_slot *s = &h->slot[(h->next + k) % h->n];
        size_t load = atomic_load(&s->open) + atomic_load(&s->pending);
        if (load < share) {
            if (best == NULL || load < best_load) {
                best = s;
                best_load = load;
            }
            continue;
        }
        uint64_t since = atomic_load(&s->oldest_idle);
        if (since < oldest) {
            shed = s;
            oldest = since;
        }
    }
    return best != NULL ? best : shed;
}
