/*
 * tests/unit/election/membackend.h: an in-memory election backend (a test
 * double of election/backend.h) with fault injection, for elect_test.c.
 *
 * One struct mem_store holds the objects; any number of backends
 * (mem_backend_new) share it, like gateways sharing one bucket.  Each
 * operation takes effect when it is called (it linearises there) and its
 * callback is queued; mem_run() runs queued callbacks in order until none
 * are left, so no callback ever runs before its call returns.
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
    int probe_fail_n; /* the next probe creates fail with ERR_UPSTREAM (not landed) */
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

static int
mem_create(struct elect_backend *be, const char *key, const char *body, size_t len,
           elect_be_write_fn *cb, void *arg)
{
    struct mem_backend *b = (struct mem_backend *)be;
    struct mem_store *st = b->st;
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
        return mem_queue(op);
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
    return mem_queue(op);
}

static int
mem_replace(struct elect_backend *be, const char *key, const char *etag, enum elect_etag_form form,
            const char *body, size_t len, elect_be_write_fn *cb, void *arg)
{
    struct mem_backend *b = (struct mem_backend *)be;
    struct mem_store *st = b->st;
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
    return mem_queue(op);
}

static int
mem_get(struct elect_backend *be, const char *key, elect_be_get_fn *cb, void *arg)
{
    struct mem_backend *b = (struct mem_backend *)be;
    struct mem_store *st = b->st;
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
    return mem_queue(op);
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
    return mem_queue(op);
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
    free(st);
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
static size_t
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
