/*
 * gateway/fence/hold.c: the reload holds (internal.h; DESIGN "The reload
 * hold").
 */
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "gateway/fence/internal.h"

static void
hold_free(struct gw_fence_hold *h)
{
    for (size_t i = 0; i < h->nlocks; i++) {
        free(h->locks[i]);
    }
    free(h->locks);
}

static void
hold_drop(struct gw_fence_holds *hs, size_t i)
{
    hold_free(&hs->h[i]);
    hs->h[i] = hs->h[--hs->n];
}

int
gw_fence_holds_add(struct gw_fence_holds *hs, uint32_t gen, const char *const *locks, size_t n)
{
    if (n == 0) {
        return 0;
    }
    if (hs->n == GW_FENCE_HOLDS_MAX) {
        return ERR_AGAIN;
    }
    struct gw_fence_hold h = {.gen = gen, .locks = calloc(n, sizeof(char *))};
    if (h.locks == NULL) {
        return ERR_NOMEM;
    }
    for (; h.nlocks < n; h.nlocks++) {
        if ((h.locks[h.nlocks] = strdup(locks[h.nlocks])) == NULL) {
            hold_free(&h);
            return ERR_NOMEM;
        }
    }
    hs->h[hs->n++] = h;
    return 0;
}

void
gw_fence_holds_end(struct gw_fence_holds *hs, uint32_t gen, uint64_t lift_at,
                   void (*each)(void *arg, const char *lock), void *arg)
{
    for (size_t i = 0; i < hs->n; i++) {
        struct gw_fence_hold *h = &hs->h[i];
        if (h->gen != gen || h->ended) {
            continue;
        }
        h->ended = true;
        h->lift_at = lift_at;
        for (size_t k = 0; k < h->nlocks; k++) {
            each(arg, h->locks[k]);
        }
    }
}

bool
gw_fence_holds_pending(const struct gw_fence_holds *hs, uint64_t now)
{
    for (size_t i = 0; i < hs->n; i++) {
        if (!hs->h[i].ended || now < hs->h[i].lift_at) {
            return true;
        }
    }
    return false;
}

static bool
holds_lock(const struct gw_fence_hold *h, const char *lock)
{
    for (size_t k = 0; k < h->nlocks; k++) {
        if (strcmp(h->locks[k], lock) == 0) {
            return true;
        }
    }
    return false;
}

bool
gw_fence_holds_keep(struct gw_fence_holds *hs, const char *lock, uint32_t gen, uint64_t now,
                    uint64_t *wake)
{
    bool kept = false;
    *wake = 0;
    for (size_t i = 0; i < hs->n;) {
        struct gw_fence_hold *h = &hs->h[i];
        if (h->ended && now >= h->lift_at) {
            hold_drop(hs, i);
            continue;
        }
        i++;
        /* a write claimed before the hold's generation is among those it waits for */
        if (gen < h->gen || !holds_lock(h, lock)) {
            continue;
        }
        kept = true;
        if (h->ended && (*wake == 0 || h->lift_at - now < *wake)) {
            *wake = h->lift_at - now;
        }
    }
    return kept;
}

void
gw_fence_holds_clear(struct gw_fence_holds *hs)
{
    while (hs->n > 0) {
        hold_drop(hs, hs->n - 1);
    }
}
