/* gateway/proxy/cond.c: which condition a fenced write gets, and from where (see cond.h). */
#define LOG_MODULE "cond"
#include "gateway/proxy/cond.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include "common/buf.h"
#include "common/lockname.h"
#include "common/log.h"
#include "gateway/base/config.h"
#include "gateway/base/metrics.h"
#include "gateway/http/http.h"
#include "gateway/proxy/etag_map.h"
#include "gateway/s3/s3req.h"
#include "gateway/s3client/s3client.h"

/*
 * What this gateway has learned of the store's keys and buckets: one for the
 * process, shared by every loop's gw_cond (gw_cond_share), so that a key
 * written through one loop is conditioned on the ETag that write left when
 * the next write of it arrives on another.  Its mutex is held for a map
 * operation or a list walk, never across a call out of this file.
 */
struct learned {
    pthread_mutex_t mu;
    struct gw_etag_map *etags; /* owned */
    char **ignored;            /* owned; buckets whose store ignores conditions */
    size_t nignored;           /* entries in ignored */
    bool ignore_all;           /* more than GW_COND_MAX_IGNORED such buckets */
    /* buckets whose store refused If-None-Match: * and then showed the key absent,
     * with no such write passing since (gw_cond_bucket_ignore); the oldest replaced */
    char suspects[GW_COND_MAX_SUSPECTS][GW_S3_MAX_BUCKET + 1];
    size_t nsuspects;         /* entries in use */
    size_t next_suspect;      /* the entry replaced next when full */
    atomic_size_t suspecting; /* nsuspects, read without mu on the write path */
};

struct gw_cond {
    const struct gw_config *cfg;     /* borrowed */
    struct gw_s3client *s3c;         /* borrowed */
    struct learned *l;               /* owned (own_l) or another loop's gw_cond's */
    bool own_l;                      /* l is this one's */
    struct gw_cond_caps caps;        /* what the store honours (the probe's answer) */
    bool probed;                     /* caps holds the probe's answer */
    LIST_HEAD(, gw_cond_head) heads; /* HEADs in flight */
};

/* One HEAD for a key's ETag. */
struct gw_cond_head {
    struct gw_cond *c;
    struct gw_s3client_op *call;       /* the HEAD */
    gw_cond_head_fn *done;             /* the caller's callback */
    void *arg;                         /* its argument */
    uint64_t token;                    /* the epoch it is learned under */
    char etag[GW_ETAG_MAX + 1];        /* the answer's ETag, bare; "" if none */
    bool etag_bad;                     /* an ETag header that cannot be used */
    char lock[LOCK_NAME_MAX + 1];      /* the lock */
    char bucket[GW_S3_MAX_BUCKET + 1]; /* the bucket */
    char key[GW_S3_MAX_KEY + 1];       /* the key (plain) */
    LIST_ENTRY(gw_cond_head) link;     /* in c->heads */
};

struct gw_cond *
gw_cond_new(const struct gw_config *cfg, struct gw_s3client *s3c)
{
    struct gw_cond *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    c->cfg = cfg;
    c->s3c = s3c;
    LIST_INIT(&c->heads);
    c->l = calloc(1, sizeof(*c->l));
    if (c->l == NULL || (c->l->etags = gw_etag_map_new(cfg->fencing.etag_cache_entries)) == NULL) {
        free(c->l);
        free(c);
        return NULL;
    }
    (void)pthread_mutex_init(&c->l->mu, NULL);
    c->own_l = true;
    return c;
}

static void
learned_free(struct gw_cond *c)
{
    struct learned *l = c->l;
    if (!c->own_l || l == NULL) {
        return;
    }
    gw_etag_map_free(l->etags);
    for (size_t i = 0; i < l->nignored; i++) {
        free(l->ignored[i]);
    }
    free(l->ignored);
    (void)pthread_mutex_destroy(&l->mu);
    free(l);
    c->l = NULL;
}

void
gw_cond_free(struct gw_cond *c)
{
    if (c == NULL) {
        return;
    }
    struct gw_cond_head *h = LIST_FIRST(&c->heads);
    while (h != NULL) {
        struct gw_cond_head *next = LIST_NEXT(h, link);
        gw_s3client_cancel(h->call);
        free(h);
        h = next;
    }
    learned_free(c);
    free(c);
}

void
gw_cond_share(struct gw_cond *c, struct gw_cond *from)
{
    learned_free(c);
    c->l = from->l;
    c->own_l = false;
}

void
gw_cond_set_config(struct gw_cond *c, const struct gw_config *cfg)
{
    c->cfg = cfg;
    if (c->own_l) { /* the owner's reload sets the shared bound */
        (void)pthread_mutex_lock(&c->l->mu);
        gw_etag_map_set_max(c->l->etags, cfg->fencing.etag_cache_entries);
        (void)pthread_mutex_unlock(&c->l->mu);
    }
}

void
gw_cond_set_caps(struct gw_cond *c, const struct gw_cond_caps *caps)
{
    c->caps = *caps;
    c->probed = true;
}

bool
gw_cond_active(const struct gw_cond *c)
{
    return c->probed && c->caps.put && c->cfg->fencing.conditional_writes != GW_COND_OFF;
}

/* Whether the store honours a condition on op (the probe's answer). */
static bool
honoured(const struct gw_cond *c, enum gw_s3_op op)
{
    switch (op) {
    case GW_S3_OP_PUT_OBJECT:
        return c->caps.put;
    case GW_S3_OP_COPY_OBJECT:
        return c->caps.put && c->caps.copy;
    case GW_S3_OP_COMPLETE_MULTIPART:
        return c->caps.put && c->caps.complete;
    case GW_S3_OP_DELETE_OBJECT:
        return c->caps.put && c->caps.del;
    default:
        return false;
    }
}

/* Caller holds l->mu. */
static bool
ignored_locked(const struct learned *l, const char *bucket)
{
    if (l->ignore_all) {
        return true;
    }
    for (size_t i = 0; i < l->nignored; i++) {
        if (strcmp(l->ignored[i], bucket) == 0) {
            return true;
        }
    }
    return false;
}

static bool
bucket_ignored(const struct gw_cond *c, const char *bucket)
{
    (void)pthread_mutex_lock(&c->l->mu);
    bool ignored = ignored_locked(c->l, bucket);
    (void)pthread_mutex_unlock(&c->l->mu);
    return ignored;
}

/* Adds bucket to l's list; false if it was there.  Caller holds l->mu. */
static bool
ignore_locked(struct learned *l, const char *bucket)
{
    if (ignored_locked(l, bucket)) {
        return false;
    }
    if (l->nignored == GW_COND_MAX_IGNORED) {
        l->ignore_all = true;
        return true;
    }
    char **grown = realloc(l->ignored, (l->nignored + 1) * sizeof(char *));
    char *name = strdup(bucket);
    if (grown == NULL || name == NULL) {
        if (grown != NULL) {
            l->ignored = grown;
        }
        free(name);
        l->ignore_all = true; /* no memory: the safe side is no conditions anywhere */
        return true;
    }
    l->ignored = grown;
    l->ignored[l->nignored++] = name;
    return true;
}

/* The index of bucket among l's suspects, or -1.  Caller holds l->mu. */
static int
suspect_find(const struct learned *l, const char *bucket)
{
    for (size_t i = 0; i < l->nsuspects; i++) {
        if (strcmp(l->suspects[i], bucket) == 0) {
            return (int)i;
        }
    }
    return -1;
}

/* Drops entry i of l's suspects.  Caller holds l->mu. */
static void
suspect_drop(struct learned *l, size_t i)
{
    l->nsuspects--;
    if (i != l->nsuspects) {
        memcpy(l->suspects[i], l->suspects[l->nsuspects], sizeof(l->suspects[i]));
    }
    l->next_suspect = 0;
    atomic_store_explicit(&l->suspecting, l->nsuspects, memory_order_relaxed);
}

/*
 * Suspects bucket; true if it was suspected already (a second refusal of an
 * absence in a row: it ignores conditions).  Caller holds l->mu.
 */
static bool
suspect_locked(struct learned *l, const char *bucket)
{
    int at = suspect_find(l, bucket);
    if (at >= 0) {
        suspect_drop(l, (size_t)at);
        return true;
    }
    size_t i = l->nsuspects;
    if (i == GW_COND_MAX_SUSPECTS) {
        i = l->next_suspect;
        l->next_suspect = (l->next_suspect + 1) % GW_COND_MAX_SUSPECTS;
    } else {
        l->nsuspects++;
    }
    str_copy(l->suspects[i], sizeof(l->suspects[i]), bucket);
    atomic_store_explicit(&l->suspecting, l->nsuspects, memory_order_relaxed);
    return false;
}

void
gw_cond_bucket_passed(struct gw_cond *c, const char *bucket)
{
    struct learned *l = c->l;
    if (atomic_load_explicit(&l->suspecting, memory_order_relaxed) == 0) {
        return; /* the usual case: no lock taken */
    }
    (void)pthread_mutex_lock(&l->mu);
    int at = suspect_find(l, bucket);
    if (at >= 0) {
        suspect_drop(l, (size_t)at);
    }
    (void)pthread_mutex_unlock(&l->mu);
}

void
gw_cond_bucket_ignore(struct gw_cond *c, const char *bucket, bool absence)
{
    (void)pthread_mutex_lock(&c->l->mu);
    bool added = false;
    bool suspected = absence && !ignored_locked(c->l, bucket) && !suspect_locked(c->l, bucket);
    if (!suspected) {
        added = ignore_locked(c->l, bucket);
    }
    (void)pthread_mutex_unlock(&c->l->mu);
    if (suspected) {
        log_info("the store refused If-None-Match: * on bucket %s and the key was then absent: "
                 "a create and a delete in between, or a store that ignores conditions there; "
                 "conditions stay on unless the next such write is refused the same way",
                 bucket);
    }
    if (added) {
        log_warn("the store refused a condition that held on bucket %s (RGW 16 does so on a "
                 "versioned bucket): fenced writes to it go without conditions from now on",
                 bucket);
    }
}

/* The map's calls, under the shared mutex. */
static int
map_put(struct gw_cond *c, const char *lock, uint64_t token, const char *bucket, const char *key,
        const char *etag)
{
    (void)pthread_mutex_lock(&c->l->mu);
    int rc = gw_etag_map_put(c->l->etags, lock, token, bucket, key, etag);
    (void)pthread_mutex_unlock(&c->l->mu);
    return rc;
}

static void
map_forget(struct gw_cond *c, const char *bucket, const char *key)
{
    (void)pthread_mutex_lock(&c->l->mu);
    gw_etag_map_forget(c->l->etags, bucket, key);
    (void)pthread_mutex_unlock(&c->l->mu);
}

enum gw_cond_use
gw_cond_use(const struct gw_cond *c, const struct gw_s3req *s3, bool own)
{
    switch (s3->op) {
    case GW_S3_OP_PUT_OBJECT:
    case GW_S3_OP_COPY_OBJECT:
    case GW_S3_OP_COMPLETE_MULTIPART:
    case GW_S3_OP_DELETE_OBJECT:
        break;
    default:
        return GW_COND_USE_NONE; /* not a replacement of one key's version */
    }
    const struct gw_fence_rule *rule = gw_config_fence_rule(c->cfg, s3->bucket, s3->key);
    enum gw_cond_rule r = rule != NULL ? rule->conditional_writes : GW_COND_RULE_INHERIT;
    if (r == GW_COND_RULE_OFF ||
        (r == GW_COND_RULE_INHERIT && c->cfg->fencing.conditional_writes == GW_COND_OFF)) {
        return GW_COND_USE_NONE;
    }
    if (!c->probed) {
        /* "on" promises conditions: nothing fenced goes without them until the probe says */
        return r == GW_COND_RULE_INHERIT && c->cfg->fencing.conditional_writes == GW_COND_ON
                   ? GW_COND_USE_UNKNOWN
                   : GW_COND_USE_NONE;
    }
    if (!c->caps.put) {
        return GW_COND_USE_NONE;
    }
    return own || !honoured(c, s3->op) || bucket_ignored(c, s3->bucket) ? GW_COND_USE_TRACK
                                                                        : GW_COND_USE_ADD;
}

/* The header for what the map knows: If-Match in the store's form, or If-None-Match: *. */
static void
hdr_for(const struct gw_cond *c, const char *etag, bool absent, struct gw_cond_hdr *out)
{
    if (absent) {
        out->name = "If-None-Match";
        (void)snprintf(out->value, sizeof(out->value), "*");
        return;
    }
    out->name = "If-Match";
    /* AWS compares the quoted entity-tag (RFC 9110 13.1.1); RGW 16's PUT only the bare one */
    (void)snprintf(out->value, sizeof(out->value), c->caps.quoted ? "\"%s\"" : "%s", etag);
}

int
gw_cond_lookup(struct gw_cond *c, const char *lock, uint64_t token, const char *bucket,
               const char *key, struct gw_cond_hdr *out)
{
    char etag[GW_ETAG_MAX + 1];
    bool absent = false;
    (void)pthread_mutex_lock(&c->l->mu);
    int rc = gw_etag_map_get(c->l->etags, lock, token, bucket, key, etag, sizeof(etag), &absent);
    (void)pthread_mutex_unlock(&c->l->mu);
    if (rc != 0) {
        return rc;
    }
    hdr_for(c, etag, absent, out);
    return 0;
}

static void
head_free(struct gw_cond_head *h)
{
    LIST_REMOVE(h, link);
    free(h);
}

/* gw_s3client_cbs.on_head of the HEAD: its ETag */
static int
on_head_answer(void *arg, int status, const struct gw_header *headers, size_t n)
{
    struct gw_cond_head *h = arg;
    if (status < 200 || status >= 300) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (strcasecmp(headers[i].name, "etag") == 0) {
            h->etag_bad = gw_etag_map_bare(headers[i].value, h->etag, sizeof(h->etag)) != 0;
        }
    }
    return 0;
}

/* gw_s3client_cbs.on_done of the HEAD */
static void
on_head_done(void *arg, int err, int status, const char *code)
{
    struct gw_cond_head *h = arg;
    struct gw_cond *c = h->c;
    h->call = NULL;
    struct gw_cond_hdr hdr;
    int rc = err;
    if (err == 0 && status >= 200 && status < 300 && h->etag[0] != '\0' && !h->etag_bad) {
        hdr_for(c, h->etag, false, &hdr);
        if (map_put(c, h->lock, h->token, h->bucket, h->key, h->etag) != 0) {
            log_debug("ETag of %s/%s not kept", h->bucket, h->key);
        }
    } else if (err == 0 && status == 404) {
        hdr_for(c, NULL, true, &hdr);
        if (map_put(c, h->lock, h->token, h->bucket, h->key, NULL) != 0) {
            log_debug("absence of %s/%s not kept", h->bucket, h->key);
        }
    } else if (err == 0 && status >= 500) {
        rc = ERR_UPSTREAM;
    } else if (err == 0) {
        log_warn("HEAD of %s/%s for its ETag: %d %s%s; written without a condition", h->bucket,
                 h->key, status, code != NULL ? code : "",
                 h->etag_bad ? " (an ETag that cannot be sent back)" : "");
        rc = ERR_DENIED;
    }
    gw_cond_head_fn *done = h->done;
    void *done_arg = h->arg;
    head_free(h);
    done(done_arg, rc, rc == 0 ? &hdr : NULL);
}

static const struct gw_s3client_cbs head_cbs = {
    .on_head = on_head_answer,
    .on_done = on_head_done,
};

int
gw_cond_head(struct gw_cond *c, const char *lock, uint64_t token, const char *bucket,
             const char *key, gw_cond_head_fn *done, void *arg, struct gw_cond_head **out)
{
    if (strlen(lock) >= sizeof(((struct gw_cond_head *)0)->lock) ||
        strlen(bucket) > GW_S3_MAX_BUCKET || strlen(key) > GW_S3_MAX_KEY) {
        return ERR_INVAL;
    }
    struct gw_cond_head *h = calloc(1, sizeof(*h));
    if (h == NULL) {
        return ERR_NOMEM;
    }
    h->c = c;
    h->done = done;
    h->arg = arg;
    h->token = token;
    str_copy(h->lock, sizeof(h->lock), lock);
    str_copy(h->bucket, sizeof(h->bucket), bucket);
    str_copy(h->key, sizeof(h->key), key);
    const struct gw_s3client_call call = {.method = "HEAD", .bucket = bucket, .key = key};
    int rc = gw_s3client_start(c->s3c, &call, &head_cbs, h, &h->call);
    if (rc != 0) {
        free(h);
        return rc;
    }
    LIST_INSERT_HEAD(&c->heads, h, link);
    GW_COUNT(cond_heads);
    *out = h;
    return 0;
}

void
gw_cond_head_cancel(struct gw_cond_head *h)
{
    if (h == NULL) {
        return;
    }
    gw_s3client_cancel(h->call);
    head_free(h);
}

void
gw_cond_record(struct gw_cond *c, const char *lock, uint64_t token, const struct gw_s3req *s3,
               int status, const char *etag)
{
    if (s3->op == GW_S3_OP_PUT_OBJECT && status >= 200 && status < 300 && etag != NULL) {
        if (map_put(c, lock, token, s3->bucket, s3->key, etag) != 0) {
            log_debug("ETag of %s/%s not kept", s3->bucket, s3->key);
        }
        return;
    }
    /* a copy's or a complete's ETag is in its XML answer, a delete may have removed a
     * version only: the next write of the key learns its state with a HEAD */
    map_forget(c, s3->bucket, s3->key);
}

void
gw_cond_forget(struct gw_cond *c, const char *bucket, const char *key)
{
    map_forget(c, bucket, key);
}

void
gw_cond_copy_caps(struct gw_cond *dst, const struct gw_cond *src)
{
    if (src->probed) {
        gw_cond_set_caps(dst, &src->caps);
    }
}
