/*
 * store/fence.c: the fence table and the election cache.  Both map a lock
 * name to a value that only ever rises.
 */
#define LOG_MODULE "store"
#include "store/store.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/lockname.h"
#include "common/log.h"
#include "store/store_int.h"

static MDB_val
lock_key(const char *lock)
{
    MDB_val k = {.mv_size = strlen(lock), .mv_data = (void *)lock};
    return k;
}

/* Copy src into dst (cap + 1 bytes), truncated at a UTF-8 boundary; NULL is "". */
static void
copy_trunc(char *dst, size_t cap, const char *src)
{
    size_t n = src == NULL ? 0 : store_rec_trunc_len(src, cap);
    if (n > 0) {
        memcpy(dst, src, n);
    }
    dst[n] = '\0';
}

/* Read the fence entry of lock inside txn.  Returns 0, MDB_NOTFOUND, ERR_IO, MDB_*. */
static int
fence_read(struct store *s, MDB_txn *txn, const char *lock, struct store_fence *f)
{
    MDB_val k = lock_key(lock);
    MDB_val v;
    int rc = mdb_get(txn, s->dbi_fence, &k, &v);
    if (rc != 0) {
        return rc;
    }
    if (store_rec_fence_decode(v.mv_data, v.mv_size, f) != 0) {
        atomic_fetch_add(&s->st_damaged, 1);
        log_error("%s: damaged fence record for lock '%s'", s->path, lock);
        return ERR_IO;
    }
    return 0;
}

static int
elect_read(struct store *s, MDB_txn *txn, const char *lock, struct store_elect *e)
{
    MDB_val k = lock_key(lock);
    MDB_val v;
    int rc = mdb_get(txn, s->dbi_elect, &k, &v);
    if (rc != 0) {
        return rc;
    }
    if (store_rec_elect_decode(v.mv_data, v.mv_size, e) != 0) {
        atomic_fetch_add(&s->st_damaged, 1);
        log_error("%s: damaged election record for lock '%s'", s->path, lock);
        return ERR_IO;
    }
    return 0;
}

static int
from_read(int rc, const char *what)
{
    if (rc == 0 || rc == ERR_IO) {
        return rc;
    }
    return rc == MDB_NOTFOUND ? ERR_NOTFOUND : store_err_mdb(rc, what);
}

int
store_fence_get(struct store *s, const char *lock, struct store_fence *out, bool *durable)
{
    if (!lock_name_valid(lock)) {
        return ERR_INVAL;
    }
    MDB_txn *txn;
    int err = store_txn_read_begin(s, &txn);
    if (err != 0) {
        return err;
    }
    struct store_fence f;
    err = from_read(fence_read(s, txn, lock, &f), "mdb_get(fence)");
    bool d = store_txn_durable(s, txn);
    store_txn_read_end(s, txn);
    if (err == 0) {
        *out = f;
        if (durable != NULL) {
            *durable = d;
        }
    }
    return err;
}

int
store_fence_check(struct store *s, const char *lock, uint64_t token,
                  enum store_fence_verdict *verdict, uint64_t *highest)
{
    if (!lock_name_valid(lock) || token == 0) {
        return ERR_INVAL;
    }
    struct store_fence f;
    bool durable = false;
    int err = store_fence_get(s, lock, &f, &durable);
    if (err == ERR_NOTFOUND) {
        f.token = 0;
        durable = true;
    } else if (err != 0) {
        return err;
    }
    if (token < f.token) {
        *verdict = STORE_FENCE_STALE;
    } else if (token == f.token && durable) {
        *verdict = STORE_FENCE_ACCEPT;
    } else {
        /* Higher, or equal to a value whose commit has not returned yet: the
         * advance path waits for durability (G2). */
        *verdict = STORE_FENCE_ADVANCE;
    }
    if (highest != NULL) {
        *highest = f.token;
    }
    return 0;
}

int
store_fence_apply(struct store *s, MDB_txn *txn, const char *lock, uint64_t token,
                  const char *request_id, const char *principal, int64_t now_ms, uint64_t *highest)
{
    struct store_fence f;
    int rc = fence_read(s, txn, lock, &f);
    if (rc == 0 && f.token >= token) {
        *highest = f.token;
        return 0;
    }
    if (rc != 0 && rc != MDB_NOTFOUND) {
        return rc; /* a damaged entry fails closed: never overwrite an unknown value */
    }
    f.token = token;
    f.advanced_ms = now_ms;
    copy_trunc(f.request_id, STORE_REQID_MAX, request_id);
    copy_trunc(f.principal, STORE_PRINCIPAL_MAX, principal);
    uint8_t buf[STORE_REC_FENCE_MAX];
    size_t len = 0;
    int err = store_rec_fence_encode(&f, buf, sizeof(buf), &len);
    if (err != 0) {
        return err;
    }
    MDB_val k = lock_key(lock);
    MDB_val v = {.mv_size = len, .mv_data = buf};
    rc = mdb_put(txn, s->dbi_fence, &k, &v, 0);
    if (rc != 0) {
        return rc;
    }
    *highest = token;
    return 0;
}

int
store_elect_apply(struct store *s, MDB_txn *txn, const char *lock, uint64_t epoch, int64_t now_ms,
                  uint64_t *epoch_now)
{
    struct store_elect e;
    int rc = elect_read(s, txn, lock, &e);
    if (rc == 0 && e.epoch >= epoch) {
        *epoch_now = e.epoch;
        return 0;
    }
    if (rc != 0 && rc != MDB_NOTFOUND) {
        return rc;
    }
    e.epoch = epoch;
    e.learned_ms = now_ms;
    uint8_t buf[STORE_REC_ELECT_MAX];
    size_t len = 0;
    int err = store_rec_elect_encode(&e, buf, sizeof(buf), &len);
    if (err != 0) {
        return err;
    }
    MDB_val k = lock_key(lock);
    MDB_val v = {.mv_size = len, .mv_data = buf};
    rc = mdb_put(txn, s->dbi_elect, &k, &v, 0);
    if (rc != 0) {
        return rc;
    }
    *epoch_now = epoch;
    return 0;
}

/* Arguments and result of a synchronous advance (store_write_fn). */
struct advance_ctx {
    const char *lock;       /* the lock */
    uint64_t value;         /* token or epoch */
    const char *request_id; /* fence only */
    const char *principal;  /* fence only */
    uint64_t result;        /* highest afterwards */
};

static int
fence_write(struct store *s, MDB_txn *txn, void *arg)
{
    struct advance_ctx *c = arg;
    c->result = 0;
    return store_fence_apply(s, txn, c->lock, c->value, c->request_id, c->principal,
                             clock_wall_ms(), &c->result);
}

static int
elect_write(struct store *s, MDB_txn *txn, void *arg)
{
    struct advance_ctx *c = arg;
    c->result = 0;
    return store_elect_apply(s, txn, c->lock, c->value, clock_wall_ms(), &c->result);
}

int
store_fence_advance_sync(struct store *s, const char *lock, uint64_t token, const char *request_id,
                         const char *principal, uint64_t *highest)
{
    if (!lock_name_valid(lock) || token == 0) {
        return ERR_INVAL;
    }
    struct advance_ctx c = {
        .lock = lock, .value = token, .request_id = request_id, .principal = principal};
    int err = store_write_run(s, fence_write, &c);
    if (err != 0) {
        return err;
    }
    atomic_fetch_add(&s->st_fence, 1);
    if (highest != NULL) {
        *highest = c.result;
    }
    return c.result > token ? ERR_FENCED : 0;
}

int
store_elect_advance_sync(struct store *s, const char *lock, uint64_t epoch, uint64_t *epoch_now)
{
    if (!lock_name_valid(lock) || epoch == 0) {
        return ERR_INVAL;
    }
    struct advance_ctx c = {.lock = lock, .value = epoch};
    int err = store_write_run(s, elect_write, &c);
    if (err != 0) {
        return err;
    }
    atomic_fetch_add(&s->st_elect, 1);
    if (epoch_now != NULL) {
        *epoch_now = c.result;
    }
    return 0;
}

/* A queued advance of either kind.  Returns as store_fence_advance. */
static int
submit_advance(struct store *s, enum store_op_type type, const char *lock, uint64_t value,
               const char *request_id, const char *principal, store_fence_done_fn *fcb,
               store_elect_done_fn *ecb, void *arg)
{
    if (!lock_name_valid(lock) || value == 0 || (fcb == NULL && ecb == NULL)) {
        return ERR_INVAL;
    }
    if (s->read_only) {
        return ERR_CLOSED;
    }
    struct store_op *op = calloc(1, sizeof(*op));
    if (op == NULL) {
        return ERR_NOMEM;
    }
    op->type = type;
    copy_trunc(op->lock, STORE_LOCK_MAX, lock);
    op->value = value;
    copy_trunc(op->request_id, STORE_REQID_MAX, request_id);
    copy_trunc(op->principal, STORE_PRINCIPAL_MAX, principal);
    op->fence_cb = fcb;
    op->elect_cb = ecb;
    op->arg = arg;
    int err = store_worker_submit(s, op);
    if (err != 0) {
        free(op);
    }
    return err;
}

int
store_fence_advance(struct store *s, const char *lock, uint64_t token, const char *request_id,
                    const char *principal, store_fence_done_fn *cb, void *arg)
{
    if (cb == NULL) {
        return ERR_INVAL;
    }
    return submit_advance(s, STORE_OP_FENCE, lock, token, request_id, principal, cb, NULL, arg);
}

int
store_elect_advance(struct store *s, const char *lock, uint64_t epoch, store_elect_done_fn *cb,
                    void *arg)
{
    if (cb == NULL) {
        return ERR_INVAL;
    }
    return submit_advance(s, STORE_OP_ELECT, lock, epoch, NULL, NULL, NULL, cb, arg);
}

int
store_elect_get(struct store *s, const char *lock, struct store_elect *out)
{
    if (!lock_name_valid(lock)) {
        return ERR_INVAL;
    }
    MDB_txn *txn;
    int err = store_txn_read_begin(s, &txn);
    if (err != 0) {
        return err;
    }
    struct store_elect e;
    err = from_read(elect_read(s, txn, lock, &e), "mdb_get(elect)");
    store_txn_read_end(s, txn);
    if (err == 0) {
        *out = e;
    }
    return err;
}

/* The caller's callback of a list walk; one of the two is set. */
struct walk_ctx {
    store_fence_each_fn *fence_fn; /* store_fence_list */
    store_elect_each_fn *elect_fn; /* store_elect_list */
    void *arg;                     /* for it */
};

/* Where a walk starts and how far it goes (store_*_page). */
struct walk_range {
    const char *after; /* NULL: from the first key; else strictly after this one */
    uint32_t limit;    /* entries delivered at most; 0 = no bound */
    bool more;         /* out: an entry past the limit exists */
};

/* Walk one lock-keyed database; each entry goes to visit. */
typedef int visit_fn(struct store *s, const char *lock, const MDB_val *v, const struct walk_ctx *w);

/* A key that is a plausible lock name, copied into lock (STORE_LOCK_MAX + 1). */
static bool
key_lock(const MDB_val *k, char *lock)
{
    if (k->mv_size == 0 || k->mv_size > STORE_LOCK_MAX ||
        memchr(k->mv_data, '\0', k->mv_size) != NULL) {
        return false;
    }
    memcpy(lock, k->mv_data, k->mv_size);
    lock[k->mv_size] = '\0';
    return true;
}

/*
 * A range scan: MDB_SET_RANGE to r->after (skipping it if present), then at
 * most r->limit entries.  The cost is that of the entries delivered plus one
 * B-tree descent, whatever the table's size (DESIGN.md "Paged listings").
 */
static int
walk(struct store *s, MDB_dbi dbi, visit_fn *visit, const struct walk_ctx *w, struct walk_range *r)
{
    MDB_txn *txn;
    int err = store_txn_read_begin(s, &txn);
    if (err != 0) {
        return err;
    }
    MDB_cursor *cur = NULL;
    int rc = mdb_cursor_open(txn, dbi, &cur);
    if (rc != 0) {
        err = store_err_mdb(rc, "mdb_cursor_open");
        goto out;
    }
    MDB_val k = {0};
    MDB_val v;
    MDB_cursor_op op = MDB_FIRST;
    if (r->after != NULL) {
        k = lock_key(r->after);
        op = MDB_SET_RANGE;
    }
    uint32_t n = 0;
    for (rc = mdb_cursor_get(cur, &k, &v, op); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        char lock[STORE_LOCK_MAX + 1];
        if (!key_lock(&k, lock)) {
            atomic_fetch_add(&s->st_damaged, 1);
            continue;
        }
        if (r->after != NULL && strcmp(lock, r->after) == 0) {
            continue; /* the cursor names the last entry already delivered */
        }
        if (r->limit > 0 && n == r->limit) {
            r->more = true;
            break;
        }
        n++;
        int ret = visit(s, lock, &v, w);
        if (ret != 0) {
            err = ret < 0 ? ret : 0;
            goto out;
        }
    }
    if (rc != 0 && rc != MDB_NOTFOUND) {
        err = store_err_mdb(rc, "mdb_cursor_get");
    }
out:
    mdb_cursor_close(cur);
    store_txn_read_end(s, txn);
    return err;
}

static int
visit_fence(struct store *s, const char *lock, const MDB_val *v, const struct walk_ctx *w)
{
    struct store_fence f;
    if (store_rec_fence_decode(v->mv_data, v->mv_size, &f) != 0) {
        atomic_fetch_add(&s->st_damaged, 1);
        return 0;
    }
    return w->fence_fn(w->arg, lock, &f);
}

static int
visit_elect(struct store *s, const char *lock, const MDB_val *v, const struct walk_ctx *w)
{
    struct store_elect e;
    if (store_rec_elect_decode(v->mv_data, v->mv_size, &e) != 0) {
        atomic_fetch_add(&s->st_damaged, 1);
        return 0;
    }
    return w->elect_fn(w->arg, lock, &e);
}

int
store_fence_list(struct store *s, store_fence_each_fn *fn, void *arg)
{
    struct walk_ctx w = {.fence_fn = fn, .arg = arg};
    struct walk_range r = {0};
    return walk(s, s->dbi_fence, visit_fence, &w, &r);
}

int
store_elect_list(struct store *s, store_elect_each_fn *fn, void *arg)
{
    struct walk_ctx w = {.elect_fn = fn, .arg = arg};
    struct walk_range r = {0};
    return walk(s, s->dbi_elect, visit_elect, &w, &r);
}

/* Arguments of the page calls; after must be NULL, "" or a lock name. */
static int
page(struct store *s, MDB_dbi dbi, visit_fn *visit, const struct walk_ctx *w, const char *after,
     uint32_t limit, bool *more)
{
    if (limit == 0 || limit > STORE_PAGE_MAX || more == NULL ||
        (after != NULL && after[0] != '\0' && !lock_name_valid(after))) {
        return ERR_INVAL;
    }
    struct walk_range r = {.after = after != NULL && after[0] != '\0' ? after : NULL,
                           .limit = limit};
    int err = walk(s, dbi, visit, w, &r);
    *more = err == 0 && r.more;
    return err;
}

int
store_fence_page(struct store *s, const char *after, uint32_t limit, store_fence_each_fn *fn,
                 void *arg, bool *more)
{
    struct walk_ctx w = {.fence_fn = fn, .arg = arg};
    return page(s, s->dbi_fence, visit_fence, &w, after, limit, more);
}

int
store_elect_page(struct store *s, const char *after, uint32_t limit, store_elect_each_fn *fn,
                 void *arg, bool *more)
{
    struct walk_ctx w = {.elect_fn = fn, .arg = arg};
    return page(s, s->dbi_elect, visit_elect, &w, after, limit, more);
}
