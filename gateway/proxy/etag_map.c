/* gateway/proxy/etag_map.c: key -> ETag, bounded, LRU (see etag_map.h). */
#include "gateway/proxy/etag_map.h"

#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "common/lockname.h"

/* One key's version as this gateway last knew it. */
struct entry {
    TAILQ_ENTRY(entry) lru;       /* in m->lru, most recently used first */
    struct entry *next;           /* the next entry of its hash chain */
    uint64_t hash;                /* of bucket and key */
    uint64_t epoch;               /* the epoch it was learned under */
    bool absent;                  /* the key is known not to exist */
    char lock[LOCK_NAME_MAX + 1]; /* the lock it was learned under */
    char etag[GW_ETAG_MAX + 1];   /* bare ETag, "" when absent */
    size_t blen;                  /* strlen(bucket) */
    size_t klen;                  /* strlen(key) */
    char name[];                  /* bucket, NUL, key, NUL */
};

struct gw_etag_map {
    struct entry **slots;              /* hash chains */
    size_t nslots;                     /* a power of two */
    size_t count;                      /* entries held */
    size_t max;                        /* the bound */
    TAILQ_HEAD(entry_list, entry) lru; /* every entry, most recently used first */
};

/* FNV-1a over bucket, a NUL, key. */
static uint64_t
hash_of(const char *bucket, const char *key)
{
    uint64_t h = 14695981039346656037ULL;
    for (const char *s = bucket; *s != '\0'; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    }
    h = h * 1099511628211ULL; /* the NUL between them */
    for (const char *s = key; *s != '\0'; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    }
    return h;
}

static size_t
slots_for(size_t max)
{
    size_t n = 16;
    while (n < max && n < ((size_t)1 << 24)) {
        n <<= 1;
    }
    return n;
}

struct gw_etag_map *
gw_etag_map_new(size_t max)
{
    struct gw_etag_map *m = calloc(1, sizeof(*m));
    if (m == NULL) {
        return NULL;
    }
    m->max = max > 0 ? max : 1;
    m->nslots = slots_for(m->max);
    m->slots = calloc(m->nslots, sizeof(struct entry *));
    if (m->slots == NULL) {
        free(m);
        return NULL;
    }
    TAILQ_INIT(&m->lru);
    return m;
}

/* The link that points at e in its chain. */
static struct entry **
link_of(struct gw_etag_map *m, const struct entry *e)
{
    struct entry **pp = &m->slots[e->hash & (m->nslots - 1)];
    while (*pp != e) {
        pp = &(*pp)->next;
    }
    return pp;
}

static void
drop(struct gw_etag_map *m, struct entry *e)
{
    struct entry **pp = link_of(m, e);
    *pp = e->next;
    TAILQ_REMOVE(&m->lru, e, lru);
    m->count--;
    free(e);
}

void
gw_etag_map_free(struct gw_etag_map *m)
{
    if (m == NULL) {
        return;
    }
    struct entry *e;
    while ((e = TAILQ_FIRST(&m->lru)) != NULL) {
        TAILQ_REMOVE(&m->lru, e, lru);
        free(e);
    }
    free(m->slots);
    free(m);
}

void
gw_etag_map_set_max(struct gw_etag_map *m, size_t max)
{
    m->max = max > 0 ? max : 1;
    while (m->count > m->max) {
        drop(m, TAILQ_LAST(&m->lru, entry_list));
    }
    size_t want = slots_for(m->max);
    if (want <= m->nslots) {
        return;
    }
    struct entry **slots = calloc(want, sizeof(struct entry *));
    if (slots == NULL) {
        return; /* longer chains, still correct */
    }
    struct entry *e;
    TAILQ_FOREACH (e, &m->lru, lru) {
        size_t i = e->hash & (want - 1);
        e->next = slots[i];
        slots[i] = e;
    }
    free(m->slots);
    m->slots = slots;
    m->nslots = want;
}

size_t
gw_etag_map_count(const struct gw_etag_map *m)
{
    return m->count;
}

static struct entry *
find(struct gw_etag_map *m, const char *bucket, const char *key, uint64_t h)
{
    size_t blen = strlen(bucket);
    size_t klen = strlen(key);
    for (struct entry *e = m->slots[h & (m->nslots - 1)]; e != NULL; e = e->next) {
        if (e->hash == h && e->blen == blen && e->klen == klen &&
            memcmp(e->name, bucket, blen) == 0 && memcmp(e->name + blen + 1, key, klen) == 0) {
            return e;
        }
    }
    return NULL;
}

int
gw_etag_map_get(struct gw_etag_map *m, const char *lock, uint64_t epoch, const char *bucket,
                const char *key, char *etag, size_t etaglen, bool *absent)
{
    struct entry *e = find(m, bucket, key, hash_of(bucket, key));
    if (e == NULL) {
        return ERR_NOTFOUND;
    }
    if (e->epoch != epoch || strcmp(e->lock, lock) != 0) {
        /* learned under another epoch: writes of that epoch elsewhere may have changed it */
        drop(m, e);
        return ERR_NOTFOUND;
    }
    size_t n = strlen(e->etag);
    if (n >= etaglen) {
        return ERR_NOTFOUND;
    }
    memcpy(etag, e->etag, n + 1);
    *absent = e->absent;
    TAILQ_REMOVE(&m->lru, e, lru);
    TAILQ_INSERT_HEAD(&m->lru, e, lru);
    return 0;
}

int
gw_etag_map_bare(const char *etag, char *out, size_t outlen)
{
    if (strncmp(etag, "W/", 2) == 0) {
        etag += 2;
    }
    size_t n = strlen(etag);
    if (n >= 2 && etag[0] == '"' && etag[n - 1] == '"') {
        etag++;
        n -= 2;
    }
    if (n == 0 || n > GW_ETAG_MAX || n >= outlen) {
        return ERR_INVAL;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)etag[i];
        if (c == '"' || c < 0x21 || c > 0x7e) {
            return ERR_INVAL;
        }
    }
    memcpy(out, etag, n);
    out[n] = '\0';
    return 0;
}

int
gw_etag_map_put(struct gw_etag_map *m, const char *lock, uint64_t epoch, const char *bucket,
                const char *key, const char *etag)
{
    char bare[GW_ETAG_MAX + 1] = "";
    uint64_t h = hash_of(bucket, key);
    struct entry *old = find(m, bucket, key, h);
    if (old != NULL) {
        drop(m, old);
    }
    if (etag != NULL && gw_etag_map_bare(etag, bare, sizeof(bare)) != 0) {
        return ERR_INVAL;
    }
    size_t lock_len = strlen(lock);
    if (lock_len > LOCK_NAME_MAX) {
        return ERR_INVAL;
    }
    size_t blen = strlen(bucket);
    size_t klen = strlen(key);
    struct entry *e = malloc(sizeof(*e) + blen + klen + 2);
    if (e == NULL) {
        return ERR_NOMEM;
    }
    e->hash = h;
    e->epoch = epoch;
    e->absent = etag == NULL;
    memcpy(e->lock, lock, lock_len + 1);
    memcpy(e->etag, bare, sizeof(e->etag));
    e->blen = blen;
    e->klen = klen;
    memcpy(e->name, bucket, blen + 1);
    memcpy(e->name + blen + 1, key, klen + 1);
    size_t i = h & (m->nslots - 1);
    e->next = m->slots[i];
    m->slots[i] = e;
    TAILQ_INSERT_HEAD(&m->lru, e, lru);
    m->count++;
    while (m->count > m->max) {
        drop(m, TAILQ_LAST(&m->lru, entry_list));
    }
    return 0;
}

void
gw_etag_map_forget(struct gw_etag_map *m, const char *bucket, const char *key)
{
    struct entry *e = find(m, bucket, key, hash_of(bucket, key));
    if (e != NULL) {
        drop(m, e);
    }
}
