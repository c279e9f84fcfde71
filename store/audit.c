/*
 * store/audit.c: the audit log of rejected writes.
 *
 * "audit" maps (time, seq) to the record; "audit_lock" maps (lock, time, seq)
 * to nothing, so a query by lock and time range is a range scan of the index
 * plus one lookup per record.  seq comes from the meta key "audit_seq",
 * advanced in the same transaction, so it is unique even if the wall clock
 * steps back.  Retention deletes from the front of "audit" (oldest first).
 * An append that repeats an open run is counted into the run's record
 * instead (audit_run.c).
 */
#define LOG_MODULE "store"
#include "store/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/num.h"
#include "store/store_int.h"

#define META_SEQ_KEY "audit_seq"

static const char *const kind_names[STORE_AUDIT_KIND_MAX + 1] = {
    [STORE_AUDIT_STALE] = "stale",
    [STORE_AUDIT_NOT_GRANTED] = "not_granted",
    [STORE_AUDIT_CUT] = "cut",
    [STORE_AUDIT_MISSING_TOKEN] = "missing_token",
    [STORE_AUDIT_LOCK_MISMATCH] = "lock_mismatch",
    [STORE_AUDIT_INVALID_TOKEN] = "invalid_token",
    [STORE_AUDIT_LEASE_EXPIRED] = "lease_expired",
    [STORE_AUDIT_REFUSED] = "refused",
    [STORE_AUDIT_REVOKED] = "revoked",
    [STORE_AUDIT_STORE_REFUSED] = "store_refused",
};

const char *
store_audit_kind_name(enum store_audit_kind kind)
{
    if ((int)kind < 1 || (int)kind > STORE_AUDIT_KIND_MAX) {
        return "unknown";
    }
    return kind_names[kind];
}

int
store_audit_kind_parse(const char *name, enum store_audit_kind *out)
{
    for (int k = 1; k <= STORE_AUDIT_KIND_MAX; k++) {
        if (strcmp(name, kind_names[k]) == 0) {
            *out = (enum store_audit_kind)k;
            return 0;
        }
    }
    return ERR_INVAL;
}

int
store_audit_cursor_format(const struct store_audit_cursor *c, char *out, size_t len)
{
    int n = snprintf(out, len, "%" PRId64 ".%" PRIu64, c->time_ms, c->seq);
    if (n < 0 || (size_t)n >= len) {
        return ERR_TOOBIG;
    }
    return 0;
}

int
store_audit_cursor_parse(const char *s, struct store_audit_cursor *out)
{
    const char *dot = strchr(s, '.');
    if (dot == NULL) {
        return ERR_INVAL;
    }
    uint64_t t;
    uint64_t seq;
    if (parse_u64n(s, (size_t)(dot - s), 0, INT64_MAX, &t) != 0 ||
        parse_u64(dot + 1, 0, UINT64_MAX, &seq) != 0) {
        return ERR_INVAL;
    }
    out->set = true;
    out->time_ms = (int64_t)t;
    out->seq = seq;
    return 0;
}

int
store_audit_prune_txn(struct store *s, MDB_txn *txn, int64_t now_ms, uint32_t max,
                      uint64_t *deleted, bool *more)
{
    *deleted = 0;
    *more = false;
    MDB_stat st;
    int rc = mdb_stat(txn, s->dbi_audit, &st);
    if (rc != 0) {
        return rc;
    }
    uint64_t entries = st.ms_entries;
    int64_t cutoff = INT64_MIN;
    if (now_ms >= 0 && s->opts.audit_max_age_ms > 0 &&
        (uint64_t)now_ms > s->opts.audit_max_age_ms) {
        cutoff = now_ms - (int64_t)s->opts.audit_max_age_ms;
    }
    MDB_cursor *cur;
    rc = mdb_cursor_open(txn, s->dbi_audit, &cur);
    if (rc != 0) {
        return rc;
    }
    while (*deleted < max) {
        MDB_val k;
        MDB_val v;
        rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
        if (rc != 0) {
            break;
        }
        int64_t t = 0;
        uint64_t seq = 0;
        bool key_ok = store_rec_audit_key_decode(k.mv_data, k.mv_size, &t, &seq) == 0;
        bool over = s->opts.audit_max_records > 0 && entries - *deleted > s->opts.audit_max_records;
        if (!over && key_ok && t >= cutoff) {
            break; /* the oldest record may stay, so all younger ones may too */
        }
        if (key_ok && store_audit_txn_wrote(s, seq)) {
            break; /* a repeat was just counted into it: a later transaction may */
        }
        if (key_ok) {
            rc = store_audit_unindex(s, txn, &v, t, seq, false);
            if (rc != 0) {
                break;
            }
        }
        rc = mdb_cursor_del(cur, 0);
        if (rc != 0) {
            break;
        }
        (*deleted)++;
    }
    mdb_cursor_close(cur);
    if (rc == MDB_NOTFOUND) {
        rc = 0;
    }
    *more = rc == 0 && *deleted == max;
    return rc;
}

/*
 * The time a record stamped at stamp_ms is filed under: never before the
 * newest record's.  The log is ordered by (time, seq), and "first" and
 * "oldest" (the quotas' kept first record, age retention) go by that order:
 * a wall clock stepped back, or a record stamped on one loop and appended
 * after another loop's newer one, would file a new record before older
 * ones, and a flood's quota would then keep it as its scope's first and drop
 * the real first occurrence.  Only the store's own stamps are moved (a time
 * the caller gave, as an import or a test does, is filed as given); the
 * record itself keeps its stamp, which is what it shows.  Returns 0 or an
 * MDB_* code.
 */
static int
record_time(struct store *s, MDB_txn *txn, int64_t stamp_ms, int64_t *out)
{
    *out = stamp_ms;
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, s->dbi_audit, &cur);
    if (rc != 0) {
        return rc;
    }
    MDB_val k;
    MDB_val v;
    rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
    mdb_cursor_close(cur);
    if (rc == MDB_NOTFOUND) {
        return 0;
    }
    if (rc != 0) {
        return rc;
    }
    int64_t t;
    uint64_t seq;
    if (store_rec_audit_key_decode(k.mv_data, k.mv_size, &t, &seq) == 0 && t > stamp_ms) {
        *out = t;
    }
    return 0;
}

int
store_audit_apply(struct store *s, MDB_txn *txn, struct store_op *op)
{
    const char *lock = op->lock;
    const char *who = op->principal;
    int64_t time_ms = op->time_ms;
    int rc = op->stamped ? record_time(s, txn, op->time_ms, &time_ms) : 0;
    if (rc != 0) {
        return rc;
    }
    op->result = 0;
    op->value = 1;
    op->request_id[0] = '\0';
    struct store_audit_rec r;
    struct store_rec_scratch sc;
    if (store_rec_audit_decode(op->rec, op->rec_len, &r, &sc) != 0) {
        return ERR_INVAL; /* encoded by audit_op_new: cannot happen */
    }
    bool joined = false;
    rc = store_audit_run_join(s, txn, &r, who, time_ms, op, &joined);
    if (rc != 0 || joined) {
        return rc; /* a repeat: counted into its run's record, no record of its own */
    }
    MDB_val mk = {.mv_size = sizeof(META_SEQ_KEY) - 1, .mv_data = (void *)META_SEQ_KEY};
    MDB_val mv;
    uint64_t last = 0;
    rc = mdb_get(txn, s->dbi_meta, &mk, &mv);
    if (rc == 0 && mv.mv_size == 8) {
        const uint8_t *p = mv.mv_data;
        for (int i = 7; i >= 0; i--) {
            last = (last << 8) | p[i];
        }
    } else if (rc != 0 && rc != MDB_NOTFOUND) {
        return rc;
    }
    uint64_t n = last + 1;
    uint8_t nb[8];
    for (int i = 0; i < 8; i++) {
        nb[i] = (uint8_t)(n >> (8 * i));
    }
    MDB_val nv = {.mv_size = sizeof(nb), .mv_data = nb};
    rc = mdb_put(txn, s->dbi_meta, &mk, &nv, 0);
    if (rc != 0) {
        return rc;
    }
    uint8_t ak[STORE_KEY_AUDIT_LEN];
    store_rec_audit_key(time_ms, n, ak);
    MDB_val k = {.mv_size = sizeof(ak), .mv_data = ak};
    MDB_val v = {.mv_size = op->rec_len, .mv_data = op->rec};
    rc = mdb_put(txn, s->dbi_audit, &k, &v, MDB_NOOVERWRITE);
    if (rc == 0) {
        rc = store_audit_run_note(s, txn, &r, who, time_ms, n);
    }
    if (rc != 0) {
        return rc;
    }
    uint8_t ik[STORE_KEY_INDEX_MAX];
    MDB_val ikv = {.mv_size = store_rec_index_key(lock, time_ms, n, ik), .mv_data = ik};
    MDB_val empty = {.mv_size = 0, .mv_data = NULL};
    rc = mdb_put(txn, s->dbi_index, &ikv, &empty, 0);
    if (rc != 0) {
        return rc;
    }
    if (s->has_who) {
        MDB_val wkv = {.mv_size = store_rec_index_key(who, time_ms, n, ik), .mv_data = ik};
        rc = mdb_put(txn, s->dbi_who, &wkv, &empty, 0);
        if (rc != 0) {
            return rc;
        }
    }
    if (n < s->audit_txn_seq0) {
        s->audit_txn_seq0 = n;
    }
    uint64_t evicted = 0;
    rc = store_audit_quota_add(s, txn, STORE_QUOTA_LOCK, lock, &evicted);
    atomic_fetch_add(&s->st_pruned, evicted);
    if (rc == 0 && s->has_who) {
        rc = store_audit_quota_add(s, txn, STORE_QUOTA_WHO, who, &evicted);
        atomic_fetch_add(&s->st_pruned, evicted);
    }
    if (rc != 0) {
        return rc;
    }
    op->result = n;
    return 0;
}

/* Encode rec into a new op (time filled in).  Returns 0, ERR_INVAL, ERR_NOMEM. */
static int
audit_op_new(const struct store_audit_rec *rec, struct store_op **out)
{
    struct store_audit_rec r = *rec;
    bool stamped = r.time_ms <= 0;
    if (stamped) {
        r.time_ms = clock_wall_ms();
    }
    uint8_t buf[STORE_REC_AUDIT_MAX];
    size_t len = 0;
    int err = store_rec_audit_encode(&r, buf, sizeof(buf), &len);
    if (err != 0) {
        return err;
    }
    struct store_op *op = calloc(1, sizeof(*op) + len);
    if (op == NULL) {
        return ERR_NOMEM;
    }
    op->type = STORE_OP_AUDIT;
    op->time_ms = r.time_ms;
    op->stamped = stamped;
    size_t n = r.lock == NULL ? 0 : store_rec_trunc_len(r.lock, STORE_LOCK_MAX);
    if (n > 0) {
        memcpy(op->lock, r.lock, n);
    }
    op->lock[n] = '\0';
    store_audit_who(r.principal, r.client, op->principal);
    memcpy(op->rec, buf, len);
    op->rec_len = len;
    *out = op;
    return 0;
}

int
store_audit_append(struct store *s, const struct store_audit_rec *rec, store_audit_done_fn *cb,
                   void *arg)
{
    if (s->read_only) {
        return ERR_CLOSED;
    }
    struct store_op *op = NULL;
    int err = audit_op_new(rec, &op);
    if (err != 0) {
        return err;
    }
    op->audit_cb = cb;
    op->arg = arg;
    err = store_worker_submit(s, op);
    if (err != 0) {
        free(op);
    }
    return err;
}

/* store_write_fn of store_audit_append_sync. */
struct append_ctx {
    struct store_op *op; /* the encoded record; its results */
};

static int
append_write(struct store *s, MDB_txn *txn, void *arg)
{
    struct append_ctx *c = arg;
    store_audit_txn_begin(s);
    int rc = store_audit_apply(s, txn, c->op);
    if (rc != 0 || s->opts.audit_max_records == 0) {
        return rc;
    }
    uint64_t deleted = 0;
    bool more = false;
    rc = store_audit_prune_txn(s, txn, -1, 64, &deleted, &more);
    atomic_fetch_add(&s->st_pruned, deleted); /* may count twice if retried; a counter only */
    return rc;
}

int
store_audit_append_sync(struct store *s, const struct store_audit_rec *rec, uint64_t *seq)
{
    if (s->read_only) {
        return ERR_CLOSED;
    }
    struct store_op *op = NULL;
    int err = audit_op_new(rec, &op);
    if (err != 0) {
        return err;
    }
    struct append_ctx c = {.op = op};
    err = store_write_run(s, append_write, &c);
    uint64_t result = op->result;
    free(op);
    if (err != 0) {
        return err;
    }
    atomic_fetch_add(&s->st_audit, 1);
    if (seq != NULL) {
        *seq = result;
    }
    return 0;
}

/* store_write_fn of store_audit_prune_sync. */
struct prune_ctx {
    int64_t now_ms;   /* for the age limit */
    uint32_t max;     /* batch bound */
    uint64_t deleted; /* result */
    bool more;        /* result */
};

static int
prune_write(struct store *s, MDB_txn *txn, void *arg)
{
    struct prune_ctx *c = arg;
    store_audit_txn_begin(s); /* it appends nothing: every record is retention's */
    return store_audit_prune_txn(s, txn, c->now_ms, c->max, &c->deleted, &c->more);
}

int
store_audit_prune_sync(struct store *s, int64_t now_ms, uint32_t max_delete, uint64_t *deleted,
                       bool *more)
{
    if (max_delete == 0 || now_ms < 0) {
        return ERR_INVAL;
    }
    struct prune_ctx c = {.now_ms = now_ms, .max = max_delete};
    int err = store_write_run(s, prune_write, &c);
    if (err != 0) {
        return err;
    }
    atomic_fetch_add(&s->st_pruned, c.deleted);
    if (deleted != NULL) {
        *deleted = c.deleted;
    }
    if (more != NULL) {
        *more = c.more;
    }
    return 0;
}

int
store_audit_count(struct store *s, uint64_t *n)
{
    MDB_txn *txn;
    int err = store_txn_read_begin(s, &txn);
    if (err != 0) {
        return err;
    }
    MDB_stat st;
    int rc = mdb_stat(txn, s->dbi_audit, &st);
    store_txn_read_end(s, txn);
    if (rc != 0) {
        return store_err_mdb(rc, "mdb_stat");
    }
    *n = st.ms_entries;
    return 0;
}

/* State of one query walk. */
struct qwalk {
    const struct store_audit_query *q; /* the query */
    int64_t until;                     /* exclusive upper time bound */
    const char *name;                  /* q->lock or q->who (index walks) */
    size_t name_len;                   /* its length */
    uint32_t count;                    /* records delivered */
    struct store_audit_cursor last;    /* the last one delivered */
    bool more;                         /* a record past the limit exists */
};

/*
 * Deliver the record at (t, seq) whose value is v.  Returns 0 to go on, 1 to
 * stop quietly, or a negative code to stop with it.
 */
static int
deliver(struct store *s, struct qwalk *w, int64_t t, uint64_t seq, const MDB_val *v,
        store_audit_each_fn *fn, void *arg)
{
    struct store_audit_rec r;
    struct store_rec_scratch sc;
    if (store_rec_audit_decode(v->mv_data, v->mv_size, &r, &sc) != 0) {
        atomic_fetch_add(&s->st_damaged, 1);
        log_warn("%s: skipping damaged audit record %" PRId64 ".%" PRIu64, s->path, t, seq);
        return 0;
    }
    if (w->count == w->q->limit) {
        w->more = true;
        return 1;
    }
    r.time_ms = t;
    r.seq = seq;
    int rc = fn(arg, &r);
    w->count++;
    w->last = (struct store_audit_cursor){.set = true, .time_ms = t, .seq = seq};
    if (rc != 0) {
        w->more = true;
        return rc < 0 ? rc : 1;
    }
    return 0;
}

/* Walk "audit" from key start.  Returns 0, a negative ERR_*, or an MDB_* code. */
static int
walk_all(struct store *s, MDB_txn *txn, struct qwalk *w, const uint8_t *start,
         store_audit_each_fn *fn, void *arg)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, s->dbi_audit, &cur);
    if (rc != 0) {
        return rc;
    }
    MDB_val k = {.mv_size = STORE_KEY_AUDIT_LEN, .mv_data = (void *)start};
    MDB_val v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        int64_t t;
        uint64_t seq;
        if (store_rec_audit_key_decode(k.mv_data, k.mv_size, &t, &seq) != 0) {
            atomic_fetch_add(&s->st_damaged, 1);
            continue;
        }
        if (t >= w->until) {
            break;
        }
        int r = deliver(s, w, t, seq, &v, fn, arg);
        if (r != 0) {
            rc = r < 0 ? r : 0;
            break;
        }
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Walk index dbi ("audit_lock" or "audit_who") for one name from key start,
 * looking each record up. */
static int
walk_index(struct store *s, MDB_txn *txn, MDB_dbi dbi, struct qwalk *w, const uint8_t *start,
           size_t start_len, store_audit_each_fn *fn, void *arg)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, dbi, &cur);
    if (rc != 0) {
        return rc;
    }
    MDB_val k = {.mv_size = start_len, .mv_data = (void *)start};
    MDB_val v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        size_t ll;
        int64_t t;
        uint64_t seq;
        const uint8_t *p = k.mv_data;
        if (k.mv_size < 1 + w->name_len || p[0] != w->name_len ||
            memcmp(p + 1, w->name, w->name_len) != 0) {
            break; /* past this name's entries */
        }
        if (store_rec_index_key_decode(p, k.mv_size, &ll, &t, &seq) != 0) {
            atomic_fetch_add(&s->st_damaged, 1);
            continue;
        }
        if (t >= w->until) {
            break;
        }
        uint8_t ak[STORE_KEY_AUDIT_LEN];
        store_rec_audit_key(t, seq, ak);
        MDB_val pk = {.mv_size = sizeof(ak), .mv_data = ak};
        MDB_val pv;
        int g = mdb_get(txn, s->dbi_audit, &pk, &pv);
        if (g == MDB_NOTFOUND) {
            continue; /* orphan index entry (its record was damaged and pruned) */
        }
        if (g != 0) {
            rc = g;
            break;
        }
        int r = deliver(s, w, t, seq, &pv, fn, arg);
        if (r != 0) {
            rc = r < 0 ? r : 0;
            break;
        }
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

int
store_audit_query(struct store *s, const struct store_audit_query *q, store_audit_each_fn *fn,
                  void *arg, struct store_audit_cursor *next)
{
    if (next != NULL) {
        memset(next, 0, sizeof(*next));
    }
    if (q->limit < 1 || q->limit > STORE_AUDIT_LIMIT_MAX || fn == NULL ||
        (q->lock != NULL && strnlen(q->lock, STORE_LOCK_MAX + 1) > STORE_LOCK_MAX) ||
        (q->who != NULL &&
         (q->lock != NULL || strnlen(q->who, STORE_WHO_MAX + 1) > STORE_WHO_MAX))) {
        return ERR_INVAL;
    }
    struct qwalk w = {.q = q, .until = q->until_ms > 0 ? q->until_ms : INT64_MAX};
    /* The first key to look at: since_ms, or just after the cursor if later. */
    int64_t t0 = q->since_ms > 0 ? q->since_ms : 0;
    uint64_t seq0 = 0;
    if (q->after.set && q->after.time_ms >= t0) {
        t0 = q->after.time_ms;
        seq0 = q->after.seq + 1;
        if (seq0 == 0) {
            t0++; /* seq wrapped: nothing more at this millisecond */
        }
    }
    MDB_txn *txn;
    int err = store_txn_read_begin(s, &txn);
    if (err != 0) {
        return err;
    }
    int rc;
    if (q->lock != NULL || q->who != NULL) {
        w.name = q->lock != NULL ? q->lock : q->who;
        w.name_len = strlen(w.name);
        uint8_t ik[STORE_KEY_INDEX_MAX];
        size_t ilen = store_rec_index_key(w.name, t0, seq0, ik);
        if (q->lock != NULL) {
            rc = walk_index(s, txn, s->dbi_index, &w, ik, ilen, fn, arg);
        } else if (s->has_who) {
            rc = walk_index(s, txn, s->dbi_who, &w, ik, ilen, fn, arg);
        } else {
            rc = 0; /* an older store opened read-only: no index by principal */
        }
    } else {
        uint8_t ak[STORE_KEY_AUDIT_LEN];
        store_rec_audit_key(t0, seq0, ak);
        rc = walk_all(s, txn, &w, ak, fn, arg);
    }
    store_txn_read_end(s, txn);
    if (rc != 0 && !(rc < 0 && rc > -1000)) {
        return store_err_mdb(rc, "audit query");
    }
    if (next != NULL && w.more) {
        *next = w.last;
    }
    return rc;
}
