/*
 * store/store_int.h: what the files of store/ share; not for use outside store/.
 *
 * Files, each calling only those below it (make lint's circle check):
 *   store.c          open/close, format version, counters; hands the worker
 *                    the tables' write functions (struct store_apply_ops)
 *   fence.c, audit.c, upload.c   the tables: reads, and writes queued to the worker
 *   audit_quota.c    the per-lock and per-principal audit quotas
 *   audit_run.c      coalescing of identical refusals, the request-id index
 *   worker.c         the write thread: groups, retention steps, completions
 *   txn.c            read transactions, the write runner, map growth
 *   record.c         the records' byte formats
 *
 * Locking, in this order:
 *   wlock     (mutex)   held for a whole write transaction and for a resize,
 *                       so no write transaction of this process is active
 *                       while the map changes (mdb_env_set_mapsize's rule);
 *   maplock   (rwlock)  read transactions hold it shared; a resize holds it
 *                       exclusively (no read transaction active either);
 *   rpool_lock, qlock, dlock (mutexes) guard small lists, held briefly.
 * LMDB is opened with MDB_NOTLS: a read transaction is not tied to a thread,
 * so reset transactions are pooled and renewed (no reader-table lock).
 */
#ifndef STORE_STORE_INT_H
#define STORE_STORE_INT_H

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/record.h"
#include "store/store.h"

#define STORE_RPOOL_MAX   16   /* reset read transactions kept for reuse */
#define STORE_BATCH_MAX   1024 /* async operations per write transaction */
#define STORE_PRUNE_STEP  1000 /* audit records deleted per retention transaction */
#define STORE_REMAP_TRIES 4    /* adoptions of another process's map size in a row */

enum store_op_type {
    STORE_OP_FENCE = 1,      /* fence advance */
    STORE_OP_ELECT = 2,      /* election cache update */
    STORE_OP_AUDIT = 3,      /* audit append */
    STORE_OP_UPLOAD_PUT = 4, /* upload table: put (rec: key then value, value = key length) */
    STORE_OP_UPLOAD_DEL = 5, /* upload table: delete (rec: the key) */
};

/* One queued async write; owned by the store from submit to callback. */
struct store_op {
    struct store_op *next;                /* queue / completion list link */
    enum store_op_type type;              /* what to do */
    uint64_t enq_ns;                      /* CLOCK_MONOTONIC ns when queued (audit flush timing) */
    char lock[STORE_LOCK_MAX + 1];        /* fence and election: the lock */
    uint64_t value;                       /* fence: token; election: epoch; audit result:
                                             the occurrence (1: a record of its own) */
    char request_id[STORE_REQID_MAX + 1]; /* fence: who advanced it; audit result: the run's id */
    char principal[STORE_PRINCIPAL_MAX + 1]; /* fence: its principal; audit: store_audit_who */
    int64_t time_ms;                         /* audit: record time (keys) */
    bool stamped;                            /* audit: time_ms is the store's stamp (the caller
                                                gave none): filed no earlier than the newest */
    store_fence_done_fn *fence_cb;           /* callbacks; at most one is set */
    store_elect_done_fn *elect_cb;
    store_audit_done_fn *audit_cb;
    store_upload_done_fn *upload_cb;
    void *arg;       /* for the callback */
    int err;         /* result: 0 or ERR_* */
    uint64_t result; /* highest token / epoch / audit seq */
    size_t rec_len;  /* audit: bytes in rec */
    uint8_t rec[];   /* audit: the encoded value (allocated) */
};

struct store {
    MDB_env *env;            /* the environment */
    MDB_dbi dbi_meta;        /* "meta": format version, audit sequence */
    MDB_dbi dbi_fence;       /* "fence": lock -> fence record */
    MDB_dbi dbi_elect;       /* "elect": lock -> election record */
    MDB_dbi dbi_audit;       /* "audit": (time, seq) -> audit record */
    MDB_dbi dbi_index;       /* "audit_lock": (lock, time, seq) -> empty */
    MDB_dbi dbi_upload;      /* "upload": (lock, upload id) -> upload record */
    MDB_dbi dbi_quota;       /* "audit_quota": 'q' + lock -> (kept, dropped) (audit_quota.c) */
    bool has_quota;          /* the "audit_quota" database exists (an older read-only store
                                may lack it) */
    MDB_dbi dbi_who;         /* "audit_who": (who, time, seq) -> empty (audit_quota.c) */
    bool has_who;            /* the "audit_who" database exists (idem) */
    MDB_dbi dbi_run;         /* "audit_run": identity hash -> (time, seq) (audit_run.c) */
    bool has_run;            /* the "audit_run" database exists (idem) */
    MDB_dbi dbi_reqid;       /* "audit_reqid": request id -> (time, seq) (audit_run.c) */
    bool has_reqid;          /* the "audit_reqid" database exists (idem; else lookups scan) */
    uint64_t audit_txn_seq0; /* the lowest audit seq appended by the write transaction
                                running now (UINT64_MAX: none); guarded by wlock */
    uint64_t audit_txn_joined[STORE_BATCH_MAX]; /* seqs of older records a repeat was
                                                   counted into by that transaction */
    size_t audit_txn_njoined;                   /* how many; guarded by wlock */
    bool has_upload;        /* the "upload" database exists (an older read-only store may
                               lack it) */
    bool read_only;         /* opened MDB_RDONLY */
    struct store_opts opts; /* copy; opts.data_dir is NULL after open */
    char path[4096];        /* the data file's path, for messages */

    pthread_mutex_t wlock; /* see the top of this file */
    pthread_rwlock_t maplock;
    size_t map_size; /* current map size; changed under wlock + maplock */

    pthread_mutex_t rpool_lock;      /* guards rpool */
    MDB_txn *rpool[STORE_RPOOL_MAX]; /* reset read transactions */
    int nrpool;                      /* entries in rpool */

    _Atomic uint64_t durable_txnid; /* every txn <= this one is known fsync'd */
    /* Bumped before and after every mdb_txn_commit of this process (odd while
     * one runs): store_txn_read_begin's check against LMDB's meta-page race. */
    _Atomic uint64_t commit_seq;

    /* worker (writable stores only) */
    const struct store_apply_ops *apply; /* what the worker applies */
    bool worker_running;                 /* the thread was started */
    pthread_t worker;                    /* the thread */
    pthread_mutex_t qlock;               /* guards the queue fields and stopping */
    pthread_cond_t qcond;                /* signalled on submit and stop */
    struct store_op *qhead;              /* pending operations, FIFO */
    struct store_op *qtail;
    size_t qlen;            /* pending + in the current group (queue_max applies) */
    size_t qpending;        /* in the queue, not yet taken */
    size_t qurgent;         /* of those, fence/election ops (flush at once) */
    bool stopping;          /* store_close began: drain and exit */
    pthread_mutex_t dlock;  /* guards the completion (done) list */
    struct store_op *chead; /* finished operations, FIFO */
    struct store_op *ctail;
    int efd; /* eventfd signalled on completion; -1 if none */

    /* counters (struct store_stats) */
    _Atomic uint64_t st_commits, st_fence, st_elect, st_audit, st_pruned, st_rejected;
    _Atomic uint64_t st_grows, st_damaged;
};

/* A write transaction of audit appends begins: none of its own yet. */
static inline void
store_audit_txn_begin(struct store *s)
{
    s->audit_txn_seq0 = UINT64_MAX;
    s->audit_txn_njoined = 0;
}

/*
 * Whether the running write transaction wrote the record seq: appended it,
 * or counted a repeat into it.  Retention never deletes such a record in
 * that transaction, so every refusal's record (or count) exists when its
 * commit returns and its answer goes out (G7).
 */
static inline bool
store_audit_txn_wrote(const struct store *s, uint64_t seq)
{
    if (seq >= s->audit_txn_seq0) {
        return true;
    }
    for (size_t i = 0; i < s->audit_txn_njoined; i++) {
        if (s->audit_txn_joined[i] == seq) {
            return true;
        }
    }
    return false;
}

/* Our own codes are small negatives; LMDB's are below -30000, errno positive. */
static inline bool
store_is_err_code(int rc)
{
    return rc < 0 && rc > -1000;
}

/* Transactions (txn.c). */

/* store_err_mdb - convert an LMDB/errno code to ERR_* and log it with what. */
int store_err_mdb(int rc, const char *what);

/* store_durable_raise - every transaction up to id is known fsync'd. */
void store_durable_raise(struct store *s, uint64_t id);

/*
 * store_txn_read_begin - a read-only transaction (from the pool), holding
 * maplock shared until store_txn_read_end.  Its snapshot is the one
 * mdb_txn_id names (never a later, still committing one: see txn.c), so
 * successive reads never go back.  Must not be called holding wlock.
 * Returns 0 or ERR_IO.
 */
MUST_USE int store_txn_read_begin(struct store *s, MDB_txn **txn);

/* store_txn_read_end - return a transaction from store_txn_read_begin. */
void store_txn_read_end(struct store *s, MDB_txn *txn);

/* store_txn_durable - whether everything txn sees is known to be fsync'd. */
bool store_txn_durable(struct store *s, MDB_txn *txn);

/*
 * A write body: runs inside a write transaction; may be run again from the
 * start after the map has grown, so it must reset its own outputs.
 * Returns 0 (commit), an ERR_* (abort), or an MDB_* code (< -30000, converted
 * by the caller; MDB_MAP_FULL grows the map and retries).
 */
typedef int store_write_fn(struct store *s, MDB_txn *txn, void *arg);

/*
 * store_write_run - run fn in one write transaction and commit it (fsync),
 * growing the map on MDB_MAP_FULL.  Holds wlock throughout.
 * Returns 0, fn's ERR_*, ERR_TOOBIG (map at map_max), ERR_CLOSED
 * (read-only), ERR_IO.
 */
MUST_USE int store_write_run(struct store *s, store_write_fn *fn, void *arg);

/* Apply functions (inside a write transaction; MDB_* or ERR_* on failure). */
int store_fence_apply(struct store *s, MDB_txn *txn, const char *lock, uint64_t token,
                      const char *request_id, const char *principal, int64_t now_ms,
                      uint64_t *highest);
int store_elect_apply(struct store *s, MDB_txn *txn, const char *lock, uint64_t epoch,
                      int64_t now_ms, uint64_t *epoch_now);
/* Append op's audit record, or count it into its open run (op->result: the seq;
 * op->value: the occurrence; op->request_id: the run's id when it is >= 2). */
int store_audit_apply(struct store *s, MDB_txn *txn, struct store_op *op);
/* Apply an upload-table op (STORE_OP_UPLOAD_PUT / _DEL) inside a write transaction. */
int store_upload_apply(struct store *s, MDB_txn *txn, const struct store_op *op);
/* Delete, oldest first, records beyond the caps (age: if now_ms >= 0); at most max. */
int store_audit_prune_txn(struct store *s, MDB_txn *txn, int64_t now_ms, uint32_t max,
                          uint64_t *deleted, bool *more);

/* The two scopes of the audit quota; the byte is the prefix of its counter key. */
enum store_quota_scope {
    STORE_QUOTA_LOCK = 'q', /* per lock: opts.audit_max_per_lock, index "audit_lock" */
    STORE_QUOTA_WHO = 'p',  /* per principal or origin: opts.audit_max_per_principal,
                               index "audit_who" */
};

/*
 * The audit quotas (audit_quota.c), inside a write transaction:
 * _add counts a record just appended for name in scope and deletes that
 * scope's second-oldest records past its bound (never one of this
 * transaction: audit_txn_seq0), *evicted how many; _unindex removes a
 * record's entries (value v at (t, seq)) from both indexes and uncounts
 * them, as dropped by a quota if dropped_by_quota (retention: not);
 * _quota_rebuild counts every lock's records (a store that had no
 * "audit_quota" yet); _who_rebuild counts every principal's and origin's
 * records, after indexing them if index (a store that had no "audit_who"
 * yet).  Return 0 or
 * an MDB_* code.
 */
int store_audit_quota_add(struct store *s, MDB_txn *txn, enum store_quota_scope scope,
                          const char *name, uint64_t *evicted);
int store_audit_unindex(struct store *s, MDB_txn *txn, const MDB_val *v, int64_t t, uint64_t seq,
                        bool dropped_by_quota);
int store_audit_quota_rebuild(struct store *s, MDB_txn *txn);
int store_audit_who_rebuild(struct store *s, MDB_txn *txn, bool index);

/*
 * Coalescing and the request-id index (audit_run.c), inside a write
 * transaction.  r is a decoded record, who its store_audit_who.
 * _join: if r repeats an open run (opts.audit_coalesce_ms), count it into
 * the run's record and set op's results (*joined true); else nothing.
 * _note: index the new record r at (t, seq) as its identity's run and by
 * its request id.  _forget: drop those entries of a record being deleted
 * (those that still refer to it).  _reqid_rebuild: index every record by
 * request id (a store that had no "audit_reqid" yet).  Return 0, an ERR_*
 * or an MDB_* code.
 */
int store_audit_run_join(struct store *s, MDB_txn *txn, const struct store_audit_rec *r,
                         const char *who, int64_t now_ms, struct store_op *op, bool *joined);
int store_audit_run_note(struct store *s, MDB_txn *txn, const struct store_audit_rec *r,
                         const char *who, int64_t t, uint64_t seq);
int store_audit_run_forget(struct store *s, MDB_txn *txn, const struct store_audit_rec *r,
                           const char *who, int64_t t, uint64_t seq);
int store_audit_reqid_rebuild(struct store *s, MDB_txn *txn);

/*
 * One record of the audit table for store_audit_walk: its key (t, seq) and
 * r, decoded (its strings point into the walk's scratch: valid during the call
 * only).  May write in txn, but not to the audit table.  Return 0 to go on;
 * anything else stops the walk, which returns it.
 */
typedef int store_audit_rec_fn(struct store *s, MDB_txn *txn, int64_t t, uint64_t seq,
                               const struct store_audit_rec *r);

/*
 * Call fn for every record of the audit table in txn, oldest first (what the
 * rebuilds of an index the store had no table for yet walk); a record whose
 * key or value does not decode is passed over.  Return 0 once every record
 * was seen, fn's nonzero return, or an MDB_* code.
 */
int store_audit_walk(struct store *s, MDB_txn *txn, store_audit_rec_fn *fn);

/*
 * What the worker applies in its write transactions: the tables' functions
 * above, handed to it by store_open (store.c), so the worker never names the
 * files that submit to it and they make no circle with it.
 */
struct store_apply_ops {
    int (*fence)(struct store *s, MDB_txn *txn, const char *lock, uint64_t token,
                 const char *request_id, const char *principal, int64_t now_ms, uint64_t *highest);
    int (*elect)(struct store *s, MDB_txn *txn, const char *lock, uint64_t epoch, int64_t now_ms,
                 uint64_t *epoch_now);
    int (*audit)(struct store *s, MDB_txn *txn, struct store_op *op);
    int (*upload)(struct store *s, MDB_txn *txn, const struct store_op *op);
    int (*prune_txn)(struct store *s, MDB_txn *txn, int64_t now_ms, uint32_t max, uint64_t *deleted,
                     bool *more);
    int (*prune_sync)(struct store *s, int64_t now_ms, uint32_t max_delete, uint64_t *deleted,
                      bool *more);
};

/* Worker (worker.c); store_worker_start keeps ops (static storage). */
MUST_USE int store_worker_start(struct store *s, const struct store_apply_ops *ops);
void store_worker_stop(struct store *s);
/* store_worker_submit - queue op (owned by the store on success).
 * Returns 0, ERR_AGAIN (full), ERR_CLOSED. */
MUST_USE int store_worker_submit(struct store *s, struct store_op *op);

#endif
