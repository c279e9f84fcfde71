/* election/backend.c: argument checks in front of a backend's operations table, and the
 * optional timing of each call (elect_backend_set_timing). */
#include "election/backend.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static bool
key_ok(const char *key)
{
    if (key == NULL) {
        return false;
    }
    size_t n = strlen(key);
    return n >= 1 && n <= ELECT_KEY_MAX;
}

/* ---- timing (elect_backend_set_timing) ---- */

/* One call being timed: the caller's callback, called through ours. */
struct elect_be_timed {
    struct elect_be_timed *next;   /* in be->timed */
    struct elect_be_timed **pprev; /* the pointer to this one */
    struct elect_backend *be;
    enum elect_be_op op;
    uint64_t t0; /* monotonic ns at the start */
    union {
        elect_be_write_fn *write;
        elect_be_get_fn *get;
        elect_be_list_fn *list;
        elect_be_del_fn *del;
    } cb;
    void *arg;
};

static uint64_t
now_ns(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void
elect_backend_set_timing(struct elect_backend *be, elect_be_timing_fn *fn, void *arg)
{
    be->timing = fn;
    be->timing_arg = arg;
}

/* A record for a call of op, linked; NULL when not timing (or out of memory). */
static struct elect_be_timed *
timed_new(struct elect_backend *be, enum elect_be_op op, void *arg)
{
    if (be->timing == NULL) {
        return NULL;
    }
    struct elect_be_timed *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        return NULL;
    }
    t->be = be;
    t->op = op;
    t->arg = arg;
    t->t0 = now_ns();
    t->next = be->timed;
    if (t->next != NULL) {
        t->next->pprev = &t->next;
    }
    t->pprev = &be->timed;
    be->timed = t;
    return t;
}

/* Unlink t and tell the timing hook; the caller then calls t's callback and frees t. */
static void
timed_end(struct elect_be_timed *t)
{
    *t->pprev = t->next;
    if (t->next != NULL) {
        t->next->pprev = t->pprev;
    }
    uint64_t now = now_ns();
    if (t->be->timing != NULL) {
        t->be->timing(t->be->timing_arg, t->op, now > t->t0 ? now - t->t0 : 0);
    }
}

/* A call that did not start: no callback will come. */
static void
timed_drop(struct elect_be_timed *t)
{
    *t->pprev = t->next;
    if (t->next != NULL) {
        t->next->pprev = t->pprev;
    }
    free(t);
}

/* elect_be_write_fn, registered by elect_backend_create/replace when timing */
static void
on_timed_write(void *arg, int err, const struct elect_obj_meta *meta)
{
    struct elect_be_timed *t = arg;
    timed_end(t);
    elect_be_write_fn *cb = t->cb.write;
    void *cb_arg = t->arg;
    free(t);
    cb(cb_arg, err, meta);
}

/* elect_be_get_fn, registered by elect_backend_get when timing */
static void
on_timed_get(void *arg, int err, const char *body, size_t len, const struct elect_obj_meta *meta)
{
    struct elect_be_timed *t = arg;
    timed_end(t);
    elect_be_get_fn *cb = t->cb.get;
    void *cb_arg = t->arg;
    free(t);
    cb(cb_arg, err, body, len, meta);
}

/* elect_be_list_fn, registered by elect_backend_list when timing */
static void
on_timed_list(void *arg, int err, const char *const *keys, size_t n, bool truncated)
{
    struct elect_be_timed *t = arg;
    timed_end(t);
    elect_be_list_fn *cb = t->cb.list;
    void *cb_arg = t->arg;
    free(t);
    cb(cb_arg, err, keys, n, truncated);
}

/* elect_be_del_fn, registered by elect_backend_del when timing */
static void
on_timed_del(void *arg, int err)
{
    struct elect_be_timed *t = arg;
    timed_end(t);
    elect_be_del_fn *cb = t->cb.del;
    void *cb_arg = t->arg;
    free(t);
    cb(cb_arg, err);
}

int
elect_backend_create(struct elect_backend *be, const char *key, const char *body, size_t len,
                     elect_be_write_fn *cb, void *arg)
{
    if (be == NULL || !key_ok(key) || (body == NULL && len > 0) || cb == NULL) {
        return ERR_INVAL;
    }
    if (len > ELECT_OBJ_MAX) {
        return ERR_TOOBIG;
    }
    struct elect_be_timed *t = timed_new(be, ELECT_BE_CREATE, arg);
    if (t == NULL) {
        return be->ops->create(be, key, body, len, cb, arg);
    }
    t->cb.write = cb;
    int rc = be->ops->create(be, key, body, len, on_timed_write, t);
    if (rc != 0) {
        timed_drop(t);
    }
    return rc;
}

int
elect_backend_replace(struct elect_backend *be, const char *key, const char *etag,
                      enum elect_etag_form form, const char *body, size_t len,
                      elect_be_write_fn *cb, void *arg)
{
    if (be == NULL || !key_ok(key) || etag == NULL || etag[0] == '\0' ||
        strlen(etag) > ELECT_ETAG_MAX || (body == NULL && len > 0) || cb == NULL ||
        (form != ELECT_ETAG_QUOTED && form != ELECT_ETAG_UNQUOTED)) {
        return ERR_INVAL;
    }
    if (len > ELECT_OBJ_MAX) {
        return ERR_TOOBIG;
    }
    struct elect_be_timed *t = timed_new(be, ELECT_BE_REPLACE, arg);
    if (t == NULL) {
        return be->ops->replace(be, key, etag, form, body, len, cb, arg);
    }
    t->cb.write = cb;
    int rc = be->ops->replace(be, key, etag, form, body, len, on_timed_write, t);
    if (rc != 0) {
        timed_drop(t);
    }
    return rc;
}

int
elect_backend_get(struct elect_backend *be, const char *key, elect_be_get_fn *cb, void *arg)
{
    if (be == NULL || !key_ok(key) || cb == NULL) {
        return ERR_INVAL;
    }
    struct elect_be_timed *t = timed_new(be, ELECT_BE_GET, arg);
    if (t == NULL) {
        return be->ops->get(be, key, cb, arg);
    }
    t->cb.get = cb;
    int rc = be->ops->get(be, key, on_timed_get, t);
    if (rc != 0) {
        timed_drop(t);
    }
    return rc;
}

int
elect_backend_list(struct elect_backend *be, const char *prefix, const char *start_after,
                   uint32_t max, elect_be_list_fn *cb, void *arg)
{
    if (be == NULL || prefix == NULL || strlen(prefix) > ELECT_KEY_MAX || cb == NULL || max == 0 ||
        max > ELECT_LIST_MAX || (start_after != NULL && strlen(start_after) > ELECT_KEY_MAX)) {
        return ERR_INVAL;
    }
    if (start_after != NULL && start_after[0] == '\0') {
        start_after = NULL;
    }
    struct elect_be_timed *t = timed_new(be, ELECT_BE_LIST, arg);
    if (t == NULL) {
        return be->ops->list(be, prefix, start_after, max, cb, arg);
    }
    t->cb.list = cb;
    int rc = be->ops->list(be, prefix, start_after, max, on_timed_list, t);
    if (rc != 0) {
        timed_drop(t);
    }
    return rc;
}

int
elect_backend_del(struct elect_backend *be, const char *key, elect_be_del_fn *cb, void *arg)
{
    if (be == NULL || !key_ok(key) || cb == NULL) {
        return ERR_INVAL;
    }
    struct elect_be_timed *t = timed_new(be, ELECT_BE_DEL, arg);
    if (t == NULL) {
        return be->ops->del(be, key, cb, arg);
    }
    t->cb.del = cb;
    int rc = be->ops->del(be, key, on_timed_del, t);
    if (rc != 0) {
        timed_drop(t);
    }
    return rc;
}

const char *
elect_backend_name(const struct elect_backend *be)
{
    if (be == NULL || be->name == NULL) {
        return "?";
    }
    return be->name;
}

void
elect_backend_free(struct elect_backend *be)
{
    if (be == NULL) {
        return;
    }
    struct elect_be_timed *t = be->timed; /* cancelled with the backend: no callbacks */
    be->ops->free(be);
    while (t != NULL) {
        struct elect_be_timed *next = t->next;
        free(t);
        t = next;
    }
}

int
elect_etag_bare(const char *value, char *out, size_t outlen)
{
    if (value == NULL || out == NULL || outlen == 0) {
        return ERR_INVAL;
    }
    const char *s = value;
    const char *e = value + strlen(value);
    while (s < e && (*s == ' ' || *s == '\t')) {
        s++;
    }
    while (e > s && (e[-1] == ' ' || e[-1] == '\t')) {
        e--;
    }
    if (e - s >= 2 && s[0] == 'W' && s[1] == '/') {
        s += 2;
    }
    if (s < e && *s == '"') {
        if (e - s < 2 || e[-1] != '"') {
            return ERR_INVAL;
        }
        s++;
        e--;
    }
    if (s == e) {
        return ERR_INVAL;
    }
    for (const char *p = s; p < e; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c < 0x21 || c == 0x7f) {
            return ERR_INVAL;
        }
    }
    size_t n = (size_t)(e - s);
    if (n > ELECT_ETAG_MAX || n + 1 > outlen) {
        return ERR_TOOBIG;
    }
    memcpy(out, s, n);
    out[n] = '\0';
    return 0;
}
