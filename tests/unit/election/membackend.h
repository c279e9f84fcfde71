/*
 * tests/unit/election/membackend.h: an in-memory election backend (a test
 * double of election/backend.h) with fault injection, for elect_test.c.
 *
 * One struct mem_store holds the objects; any number of backends
 * (mem_backend_new) share it, like gateways sharing one bucket.  Each
 * operation takes effect when it is called (it linearises there) and its
 * callback is queued; mem_run() runs queued callbacks in order until none
 * are left, so no callback ever runs before its call returns.
 *
 * Reordering (mem_hold): the next operations of chosen kinds on keys
 * containing a given text can be held, either before they take effect (a
 * request still on its way to the store: it linearises when landed) or
 * after (an answer still on its way back).  mem_land() lets one go on.
 */
#ifndef TESTS_UNIT_ELECTION_MEMBACKEND_H
#define TESTS_UNIT_ELECTION_MEMBACKEND_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "election/backend.h"

#define MEM_MAX_OBJS 4096
#define MEM_MAX_OPS  65536
#define MEM_MAX_HELD 8

/* Operation kinds for mem_hold (a mask). */
#define MEM_OP_CREATE  1u
#define MEM_OP_REPLACE 2u
#define MEM_OP_GET     4u
#define MEM_OP_LIST    8u

enum mem_create_fault {
    MEM_FAULT_NONE = 0,
    MEM_FAULT_LAND_THEN_500, /* the create lands, the answer is ERR_UPSTREAM */
    MEM_FAULT_LOST_TIMEOUT,  /* the create does not land, the answer is ERR_TIMEOUT */
    MEM_FAULT_EXISTS_AS_500, /* a losing create (key exists) answers ERR_UPSTREAM (RGW) */
};

struct mem_obj {
    char *key;
    char *body;
    size_t len;
    char etag[32];
    int64_t lm;
};

struct mem_backend;
struct mem_op;

/* An operation held by mem_hold. */
struct mem_held {
    struct mem_backend *be;
    unsigned kind;     /* one MEM_OP_* */
    struct mem_op *op; /* took effect already: only its answer is held */
    char *key;         /* not yet: the request, to be made by mem_land */
    char *etag;        /* replace */
    int form;          /* replace */
    char *body;        /* create, replace */
    size_t len;
    char *start_after; /* list */
    uint32_t max;      /* list */
    void *cb;
    void *arg;
};

struct mem_op {
    struct mem_backend *be;
    int kind; /* 0 write, 1 get, 2 list, 3 del */
    int err;
    struct elect_obj_meta meta;
    char *body;
    size_t len;
    char **keys;
    size_t nkeys;
    bool truncated;
    void *cb;
    void *arg;
};

struct mem_store {
    struct mem_obj objs[MEM_MAX_OBJS];
    size_t nobjs;
    unsigned long etag_seq;
    struct mem_op *ops[MEM_MAX_OPS];
    size_t head, tail; /* ring of queued callbacks */
    /* behaviour */
    bool ignore_if_none_match;   /* create overwrites */
    bool ignore_if_match;        /* replace ignores the ETag */
    int form_only;               /* -1 both forms; else the only enum elect_etag_form accepted */
    bool times;                  /* report Last-Modified / Date from clock_wall_ms() */
    enum mem_create_fault fault; /* applied to the next `fault_n` epoch creates */
    int fault_n;
    int probe_fail_n;    /* the next probe creates fail with ERR_UPSTREAM (not landed) */
    unsigned hold_kinds; /* MEM_OP_* mask of the operations mem_hold holds */
    char hold_key[ELECT_KEY_MAX + 1]; /* ... on keys (list: prefixes) containing this text */
    int hold_n;                       /* ... this many more */
    bool hold_answer;                 /* ... after they took effect (else before) */
    bool landing;                     /* mem_land is making a held request: do not hold it again */
    struct mem_held held[MEM_MAX_HELD];
    size_t nheld;
    /* counters */
    unsigned long n_create, n_replace, n_get, n_list, n_del;
};

struct mem_backend {
    struct elect_backend base;
    struct mem_store *st;
};

static struct mem_obj *
mem_find(struct mem_store *st, const char *key)
{
    for (size_t i = 0; i < st->nobjs; i++) {
        if (strcmp(st->objs[i].key, key) == 0) {
            return &st->objs[i];
        }
    }
    return NULL;
}

static void
mem_put(struct mem_store *st, struct mem_obj *o, const char *key, const char *body, size_t len)
{
    if (o == NULL) {
        if (st->nobjs == MEM_MAX_OBJS) {
            abort();
        }
        o = &st->objs[st->nobjs++];
        o->key = strdup(key);
    } else {
        free(o->body);
    }
    o->body = malloc(len + 1);
    memcpy(o->body, body, len);
    o->body[len] = '\0';
    o->len = len;
    (void)snprintf(o->etag, sizeof(o->etag), "etag-%lu", ++st->etag_seq);
    o->lm = clock_wall_ms();
}

static void
mem_meta(struct mem_store *st, struct mem_obj *o, struct elect_obj_meta *m)
{
    (void)snprintf(m->etag, sizeof(m->etag), "%s", o->etag);
    m->last_modified_ms = st->times ? o->lm : -1;
    m->date_ms = st->times ? clock_wall_ms() : -1;
}

static struct mem_op *
mem_op_new(struct mem_backend *b, int kind, void *cb, void *arg)
{
    struct mem_op *op = calloc(1, sizeof(*op));
    op->be = b;
    op->kind = kind;
    op->cb = cb;
    op->arg = arg;
    op->meta.last_modified_ms = -1;
    op->meta.date_ms = -1;
    return op;
}

static int
mem_queue(struct mem_op *op)
{
    struct mem_store *st = op->be->st;
    st->ops[st->tail % MEM_MAX_OPS] = op;
    st->tail++;
    return 0;
}

static bool
is_epoch_key(const char *key)
{
    return strstr(key, "/epoch-") != NULL;
}

static char *
mem_dup(const char *s, size_t len)
{
    char *d = malloc(len + 1);
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

/* Whether the operation (kind, key) is to be held now (and one fewer after it). */
static bool
mem_hold_match(struct mem_store *st, unsigned kind, const char *key, bool answer)
{
    if (st->landing || st->hold_n <= 0 || (st->hold_kinds & kind) == 0 ||
        st->hold_answer != answer || strstr(key, st->hold_key) == NULL) {
        return false;
    }
    if (st->nheld == MEM_MAX_HELD) {
        abort();
    }
    st->hold_n--;
    return true;
}

/* Hold a request before it takes effect; returns false when it is not to be held. */
static bool
mem_hold_request(struct mem_backend *b, unsigned kind, const char *key, const char *etag, int form,
                 const char *body, size_t len, const char *start_after, uint32_t max, void *cb,
                 void *arg)
{
    struct mem_store *st = b->st;
    if (!mem_hold_match(st, kind, key, false)) {
        return false;
    }
    struct mem_held *h = &st->held[st->nheld++];
    memset(h, 0, sizeof(*h));
    h->be = b;
    h->kind = kind;
    h->key = strdup(key);
    h->etag = etag != NULL ? strdup(etag) : NULL;
    h->form = form;
    h->body = body != NULL ? mem_dup(body, len) : NULL;
    h->len = len;
    h->start_after = start_after != NULL ? strdup(start_after) : NULL;
    h->max = max;
    h->cb = cb;
    h->arg = arg;
    return true;
}

/* Queue op's answer, or hold it (it took effect already). */
static int
mem_finish(struct mem_op *op, unsigned kind, const char *key)
{
    struct mem_store *st = op->be->st;
    if (!mem_hold_match(st, kind, key, true)) {
        return mem_queue(op);
    }
    struct mem_held *h = &st->held[st->nheld++];
    memset(h, 0, sizeof(*h));
    h->be = op->be;
    h->kind = kind;
    h->op = op;
    return 0;
}

/*
 * mem_hold - hold the next n operations of kinds (MEM_OP_* mask) whose key
 * (for a list: prefix) contains key: before they take effect, or, with
 * answer, after (only the answer is late).  They wait in st->held, oldest
 * first, until mem_land.
 */
__attribute__((unused)) static void
mem_hold(struct mem_store *st, unsigned kinds, const char *key, int n, bool answer)
{
    st->hold_kinds = kinds;
    (void)snprintf(st->hold_key, sizeof(st->hold_key), "%s", key);
    st->hold_n = n;
    st->hold_answer = answer;
}

static void
mem_held_clear(struct mem_held *h)
{
    free(h->key);
    free(h->etag);
    free(h->body);
    free(h->start_after);
}

static int
mem_create(struct elect_backend *be, const char *key, const char *body, size_t len,
           elect_be_write_fn *cb, void *arg)
{
    struct mem_backend *b = (struct mem_backend *)be;
    struct mem_store *st = b->st;
    if (mem_hold_request(b, MEM_OP_CREATE, key, NULL, 0, body, len, NULL, 0, (void *)cb, arg)) {
        return 0;
    }
    st->n_create++;
    struct mem_op *op = mem_op_new(b, 0, (void *)cb, arg);
    struct mem_obj *o = mem_find(st, key);
    enum mem_create_fault fault = MEM_FAULT_NONE;
    if (is_epoch_key(key) && st->fault_n > 0) {
        fault = st->fault;
        st->fault_n--;
    }
    if (!is_epoch_key(key) && st->probe_fail_n > 0) {
        st->probe_fail_n--;
        op->err = ERR_UPSTREAM;
        return mem_finish(op, MEM_OP_CREATE, key);
    }
    if (fault == MEM_FAULT_LOST_TIMEOUT) {
        op->err = ERR_TIMEOUT;
    } else if (o != NULL && !st->ignore_if_none_match) {
        op->err = fault == MEM_FAULT_EXISTS_AS_500 ? ERR_UPSTREAM : ERR_EXISTS;
    } else {
        mem_put(st, o, key, body, len);
        o = mem_find(st, key);
        mem_meta(st, o, &op->meta);
        op->err = fault == MEM_FAULT_LAND_THEN_500 ? ERR_UPSTREAM : 0;
    }
    return mem_finish(op, MEM_OP_CREATE, key);
}

static int
mem_replace(struct elect_backend *be, const char *key, const char *etag, enum elect_etag_form form,
            const char *body, size_t len, elect_be_write_fn *cb, void *arg)
{
    struct mem_backend *b = (struct mem_backend *)be;
    struct mem_store *st = b->st;
    if (mem_hold_request(b, MEM_OP_REPLACE, key, etag, (int)form, body, len, NULL, 0, (void *)cb,
                         arg)) {
        return 0;
    }
    st->n_replace++;
    struct mem_op *op = mem_op_new(b, 0, (void *)cb, arg);
    struct mem_obj *o = mem_find(st, key);
    if (o == NULL) {
        op->err = ERR_NOTFOUND;
    } else if (!st->ignore_if_match &&
               ((st->form_only >= 0 && (int)form != st->form_only) || strcmp(o->etag, etag) != 0)) {
        op->err = ERR_CONFLICT;
    } else {
        mem_put(st, o, key, body, len);
        mem_meta(st, o, &op->meta);
    }
    return mem_finish(op, MEM_OP_REPLACE, key);
}

static int
mem_get(struct elect_backend *be, const char *key, elect_be_get_fn *cb, void *arg)
{
    struct mem_backend *b = (struct mem_backend *)be;
    struct mem_store *st = b->st;
    if (mem_hold_request(b, MEM_OP_GET, key, NULL, 0, NULL, 0, NULL, 0, (void *)cb, arg)) {
        return 0;
    }
    st->n_get++;
    struct mem_op *op = mem_op_new(b, 1, (void *)cb, arg);
    struct mem_obj *o = mem_find(st, key);
    if (o == NULL) {
        op->err = ERR_NOTFOUND;
    } else {
        op->body = malloc(o->len + 1);
        memcpy(op->body, o->body, o->len);
        op->len = o->len;
        mem_meta(st, o, &op->meta);
    }
    return mem_finish(op, MEM_OP_GET, key);
}

static int
mem_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
mem_list(struct elect_backend *be, const char *prefix, const char *start_after, uint32_t max,
         elect_be_list_fn *cb, void *arg)
{
    struct mem_backend *b = (struct mem_backend *)be;
    struct mem_store *st = b->st;
    if (mem_hold_request(b, MEM_OP_LIST, prefix, NULL, 0, NULL, 0, start_after, max, (void *)cb,
                         arg)) {
        return 0;
    }
    st->n_list++;
    struct mem_op *op = mem_op_new(b, 2, (void *)cb, arg);
    char **all = calloc(st->nobjs + 1, sizeof(*all));
    size_t n = 0;
    for (size_t i = 0; i < st->nobjs; i++) {
        const char *k = st->objs[i].key;
        if (strncmp(k, prefix, strlen(prefix)) == 0 &&
            (start_after == NULL || strcmp(k, start_after) > 0)) {
            all[n++] = strdup(k);
        }
    }
    qsort(all, n, sizeof(*all), mem_cmp);
    size_t take = n < max ? n : max;
    for (size_t i = take; i < n; i++) {
        free(all[i]);
    }
    op->keys = all;
    op->nkeys = take;
    op->truncated = take < n;
    return mem_finish(op, MEM_OP_LIST, prefix);
}

static int
mem_del(struct elect_backend *be, const char *key, elect_be_del_fn *cb, void *arg)
{
    struct mem_backend *b = (struct mem_backend *)be;
    struct mem_store *st = b->st;
    st->n_del++;
    struct mem_op *op = mem_op_new(b, 3, (void *)cb, arg);
    struct mem_obj *o = mem_find(st, key);
    if (o != NULL) {
        free(o->key);
        free(o->body);
        *o = st->objs[--st->nobjs];
    }
    return mem_queue(op);
}

static void
mem_op_free(struct mem_op *op)
{
    free(op->body);
    for (size_t i = 0; i < op->nkeys; i++) {
        free(op->keys[i]);
    }
    free(op->keys);
    free(op);
}

static void
mem_free(struct elect_backend *be)
{
    struct mem_backend *b = (struct mem_backend *)be;
    struct mem_store *st = b->st;
    /* cancel: drop this backend's queued callbacks */
    for (size_t i = st->head; i < st->tail; i++) {
        struct mem_op *op = st->ops[i % MEM_MAX_OPS];
        if (op != NULL && op->be == b) {
            mem_op_free(op);
            st->ops[i % MEM_MAX_OPS] = NULL;
        }
    }
    /* and its held operations */
    size_t k = 0;
    for (size_t i = 0; i < st->nheld; i++) {
        if (st->held[i].be == b) {
            if (st->held[i].op != NULL) {
                mem_op_free(st->held[i].op);
            }
            mem_held_clear(&st->held[i]);
        } else {
            st->held[k++] = st->held[i];
        }
    }
    st->nheld = k;
    free(b);
}

static const struct elect_backend_ops mem_ops = {
    .create = mem_create,
    .replace = mem_replace,
    .get = mem_get,
    .list = mem_list,
    .del = mem_del,
    .free = mem_free,
};

static struct elect_backend *
mem_backend_new(struct mem_store *st)
{
    struct mem_backend *b = calloc(1, sizeof(*b));
    b->base.ops = &mem_ops;
    b->base.name = "mem";
    b->st = st;
    return &b->base;
}

static struct mem_store *
mem_store_new(void)
{
    struct mem_store *st = calloc(1, sizeof(*st));
    st->form_only = -1;
    st->times = true;
    return st;
}

static void
mem_store_free(struct mem_store *st)
{
    for (size_t i = 0; i < st->nobjs; i++) {
        free(st->objs[i].key);
        free(st->objs[i].body);
    }
    for (size_t i = st->head; i < st->tail; i++) {
        if (st->ops[i % MEM_MAX_OPS] != NULL) {
            mem_op_free(st->ops[i % MEM_MAX_OPS]);
        }
    }
    for (size_t i = 0; i < st->nheld; i++) {
        if (st->held[i].op != NULL) {
            mem_op_free(st->held[i].op);
        }
        mem_held_clear(&st->held[i]);
    }
    free(st);
}

/*
 * mem_land - let held operation i (0 = the oldest) go on: a held request
 * takes effect now, a held answer is queued.  Callbacks run at the next mem_run.
 */
__attribute__((unused)) static void
mem_land(struct mem_store *st, size_t i)
{
    if (i >= st->nheld) {
        abort();
    }
    struct mem_held h = st->held[i];
    memmove(&st->held[i], &st->held[i + 1], (st->nheld - i - 1) * sizeof(h));
    st->nheld--;
    if (h.op != NULL) {
        (void)mem_queue(h.op);
        return;
    }
    struct elect_backend *be = &h.be->base;
    int err = 0;
    st->landing = true;
    switch (h.kind) {
    case MEM_OP_CREATE:
        err = mem_create(be, h.key, h.body, h.len, (elect_be_write_fn *)h.cb, h.arg);
        break;
    case MEM_OP_REPLACE:
        err = mem_replace(be, h.key, h.etag, (enum elect_etag_form)h.form, h.body, h.len,
                          (elect_be_write_fn *)h.cb, h.arg);
        break;
    case MEM_OP_GET:
        err = mem_get(be, h.key, (elect_be_get_fn *)h.cb, h.arg);
        break;
    default:
        err = mem_list(be, h.key, h.start_after, h.max, (elect_be_list_fn *)h.cb, h.arg);
        break;
    }
    st->landing = false;
    mem_held_clear(&h);
    if (err != 0) {
        abort();
    }
}

/* Run queued callbacks (and those they queue) until none are left.  Returns how many ran. */
static size_t
mem_run(struct mem_store *st)
{
    size_t ran = 0;
    while (st->head < st->tail) {
        struct mem_op *op = st->ops[st->head % MEM_MAX_OPS];
        st->ops[st->head % MEM_MAX_OPS] = NULL;
        st->head++;
        if (op == NULL) {
            continue;
        }
        bool ok = op->err == 0;
        switch (op->kind) {
        case 0:
            ((elect_be_write_fn *)op->cb)(op->arg, op->err, ok ? &op->meta : NULL);
            break;
        case 1:
            ((elect_be_get_fn *)op->cb)(op->arg, op->err, ok ? op->body : NULL, ok ? op->len : 0,
                                        ok ? &op->meta : NULL);
            break;
        case 2:
            ((elect_be_list_fn *)op->cb)(op->arg, op->err, (const char *const *)op->keys, op->nkeys,
                                         op->truncated);
            break;
        default:
            ((elect_be_del_fn *)op->cb)(op->arg, op->err);
            break;
        }
        mem_op_free(op);
        ran++;
    }
    return ran;
}

/* How many epoch files of lock exist, and the lowest/highest epoch key present. */
__attribute__((unused)) static size_t
mem_count_prefix(struct mem_store *st, const char *prefix)
{
    size_t n = 0;
    for (size_t i = 0; i < st->nobjs; i++) {
        if (strncmp(st->objs[i].key, prefix, strlen(prefix)) == 0) {
            n++;
        }
    }
    return n;
}

#endif
