/*
 * election/elect_lock.c: the lock table (elect_lock_find) and the election
 * cache in the store (elect_cache_advance, elect_cache_note).  The bottom of
 * the room's internals: it calls nothing else in election/; the cache's
 * commits report to the callbacks their callers pass.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "election/elect_int.h"
#include "store/store.h"

#define LOG_MODULE "election"
#include "common/buf.h"
#include "common/log.h"

static size_t
bucket_of(const char *name)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)name; *p != '\0'; p++) {
        h = (h ^ *p) * 16777619u;
    }
    return h % ELECT_NBUCKETS;
}

struct elect_lock *
elect_lock_find(struct elect *e, const char *name, bool create)
{
    size_t b = bucket_of(name);
    for (struct elect_lock *lk = e->table[b]; lk != NULL; lk = lk->next) {
        if (strcmp(lk->name, name) == 0) {
            return lk;
        }
    }
    if (!create) {
        return NULL;
    }
    struct elect_lock *lk = calloc(1, sizeof(*lk));
    if (lk == NULL) {
        return NULL;
    }
    str_copy(lk->name, sizeof(lk->name), name);
    lk->e = e;
    TAILQ_INIT(&lk->queue);
    TAILQ_INIT(&lk->waiting);
    /* Seed the latest epoch from the election cache, so the first LIST
     * starts after it: the cost of finding the latest does not grow with
     * history (issue 5). */
    if (e->store != NULL) {
        struct store_elect se;
        int err = store_elect_get(e->store, name, &se);
        if (err == 0) {
            lk->latest = se.epoch;
            lk->cached = se.epoch;
        } else if (err != ERR_NOTFOUND) {
            log_warn("lock %s: election cache unreadable (%s); listing from the start", name,
                     err_str(err));
        }
    }
    lk->next = e->table[b];
    e->table[b] = lk;
    return lk;
}

/* store_elect_done_fn, registered by elect_cache_advance */
static void
on_cache_advanced(void *arg, int err, uint64_t epoch)
{
    struct elect_ticket *t = arg;
    if (t->e == NULL) {
        free(t); /* the elect is gone */
        return;
    }
    LIST_REMOVE(t, link);
    if (err != 0) {
        log_error("election cache: recording epoch failed: %s", err_str(err));
    }
    (void)epoch;
    struct elect_call *call = t->call;
    elect_granted_fn *granted = t->granted;
    elect_check_fn *check_cb = t->check_cb;
    void *check_arg = t->check_arg;
    free(t);
    if (call != NULL) {
        granted(call, err);
    }
    if (check_cb != NULL) {
        check_cb(check_arg, err, err == 0);
    }
}

int
elect_cache_advance(struct elect *e, struct elect_lock *lk, uint64_t epoch,
                    elect_granted_fn *granted, struct elect_call *call, elect_check_fn *check_cb,
                    void *check_arg)
{
    struct elect_ticket *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        return ERR_NOMEM;
    }
    t->e = e;
    t->granted = granted;
    t->call = call;
    t->check_cb = check_cb;
    t->check_arg = check_arg;
    int err = store_elect_advance(e->store, lk->name, epoch, on_cache_advanced, t);
    if (err != 0) {
        free(t);
        return err;
    }
    LIST_INSERT_HEAD(&e->tickets, t, link);
    if (epoch > lk->cached) {
        lk->cached = epoch;
    }
    return 0;
}

void
elect_cache_note(struct elect *e, struct elect_lock *lk, uint64_t epoch)
{
    if (e->store == NULL || epoch <= lk->cached) {
        return;
    }
    int err = elect_cache_advance(e, lk, epoch, NULL, NULL, NULL, NULL);
    if (err != 0) {
        log_warn("lock %s: recording observed epoch %llu: %s", lk->name, (unsigned long long)epoch,
                 err_str(err));
    }
}
