/*
 * store/store.h: durable state in LMDB: the fence table, the election cache
 * and the audit log of rejected writes.
 *
 * One struct store per process owns one LMDB environment, the files
 * <data_dir>/fencegate.mdb and <data_dir>/fencegate.mdb-lock.  It holds:
 *   - the fence table: per lock, the highest accepted token, when it advanced
 *     (wall ms) and by whose request (request id, principal);
 *   - the election cache: per lock, the latest epoch known to be granted;
 *   - the audit log: one record per rejected or cut write (identical ones
 *     within opts.audit_coalesce_ms counted into one), indexed by time, by
 *     (lock, time), by (principal, time) and by request id, with retention
 *     by age, by count and by quota (G7);
 *   - the upload table: per (lock, multipart upload id), the epoch that
 *     created the upload, its bucket and key (so older epochs' uploads can be
 *     refused and aborted once the lock's highest advances).
 *
 * Durability.  Every write is committed with fsync before its success is
 * reported: a _sync call returns, or an async call's callback runs, only
 * after LMDB's commit (data fdatasync, then the meta page through O_DSYNC)
 * has returned.  Tokens and epochs are only ever raised, never lowered.
 *
 * Threads and the event loop.  store/ knows no event loop.  A writable store
 * runs one worker thread that performs async writes in groups (many fence
 * advances and audit records per fsync).  It signals finished work on a file
 * descriptor (store_completion_fd); the owner of the loop watches it for
 * readability and calls store_dispatch_completions(), which runs the
 * callbacks on the calling thread.  A callback never runs before the call
 * that queued it has returned.
 *
 * May run on the event loop (never wait for fsync or for an LMDB writer):
 *   store_fence_get, store_fence_check, store_elect_get, store_fence_list,
 *   store_elect_list, store_fence_page, store_elect_page (bounded by their
 *   limit), store_audit_query (bounded by its limit),
 *   store_fence_advance, store_elect_advance, store_audit_append,
 *   store_completion_fd, store_dispatch_completions, store_stats_get,
 *   store_audit_cursor_format, store_audit_cursor_parse,
 *   store_audit_kind_name, store_audit_kind_parse,
 *   store_upload_put, store_upload_del, store_upload_get,
 *   store_upload_list_older (bounded by its limit), store_audit_lock_stats,
 *   store_audit_find (one index lookup; a scan of the log only in a
 *   read-only store from before the request-id index, as the CLI may open).
 * Block (start-up, CLI, tests, other threads; not on the loop):
 *   store_open, store_close, every *_sync function, store_audit_prune_sync.
 * Reads are LMDB read-only transactions, which never wait for a writer.  The
 * one exception is a map resize (rare: the map doubles), during which reads
 * in this process wait for the remap (an munmap/mmap pair, no I/O).
 *
 * Open one struct store per data_dir per process and share it (LMDB's rule:
 * closing a second handle on the same files drops the process's file locks).
 * Other processes, e.g. `fencegate audit`, may open it read-only at any time.
 *
 * All functions are thread-safe on one store unless said otherwise.
 * Ownership: every pointer argument is borrowed for the duration of the call
 * only (the store copies what it keeps); nothing returned points into LMDB
 * memory except the record views handed to list/query callbacks, which are
 * valid only during that callback.
 */
#ifndef STORE_STORE_H
#define STORE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/lockname.h"

/* Size caps in bytes, not counting the NUL.  Longer strings are truncated
 * (at a UTF-8 boundary) except lock names, which are refused. */
#define STORE_LOCK_MAX      LOCK_NAME_MAX
#define STORE_REQID_MAX     64
#define STORE_PRINCIPAL_MAX 128
#define STORE_CLIENT_MAX    64
#define STORE_METHOD_MAX    16
#define STORE_BUCKET_MAX    255
#define STORE_KEY_MAX       1024
#define STORE_OPERATION_MAX 32
#define STORE_UA_MAX        256
#define STORE_TRACE_MAX     32                  /* a W3C trace id: 32 hex digits */
#define STORE_WHO_MAX       STORE_PRINCIPAL_MAX /* store_audit_who's answer (<= STORE_LOCK_MAX) */
#define STORE_UPLOAD_ID_MAX                                                                        \
    382 /* longer upload ids are not tracked: 1 + lock + id is an                                  \
           LMDB key (<= 511 bytes) */

/* The on-disk format this build writes; a store with a newer one is refused. */
#define STORE_FORMAT_VERSION 1

/* Upper bound on store_fence_page's and store_elect_page's limit. */
#define STORE_PAGE_MAX 10000

/* Upper bound on store_audit_query's limit. */
#define STORE_AUDIT_LIMIT_MAX 10000

struct store;

struct store_opts {
    const char *data_dir;           /* borrowed during store_open; created (0700) if missing
                                       unless read_only */
    bool read_only;                 /* MDB_RDONLY: no writes, no worker; safe beside a running
                                       gateway on the same files */
    size_t map_initial;             /* initial map size in bytes (default 64 MiB) */
    size_t map_max;                 /* the map doubles on MDB_MAP_FULL up to this (default 16 GiB);
                                       past it writes fail with ERR_TOOBIG */
    uint32_t audit_flush_ms;        /* an audit record waits at most this long for companions
                                       before its group is committed (1..10, default 5) */
    uint32_t queue_max;             /* async operations queued at most; beyond: ERR_AGAIN
                                       (default 65536) */
    uint64_t audit_max_records;     /* keep at most this many audit records, oldest deleted first
                                       (0 = no count limit; default 1,000,000) */
    uint64_t audit_max_age_ms;      /* delete audit records older than this (0 = no age limit;
                                       default 30 days) */
    uint32_t retention_interval_ms; /* how often the worker runs age retention (default 1000) */
    uint64_t audit_max_per_lock;    /* keep at most this many audit records per lock: its
                                       first and its newest; the middle ones are dropped and
                                       counted (0 = no quota, else >= 2; default 10,000) */
    uint64_t audit_max_per_principal; /* the same per principal, or per origin for
                                         unauthenticated clients (store_audit_who)
                                         (0 = no quota, else >= 2; default 100,000) */
    uint64_t audit_coalesce_ms;       /* an append identical to an open run (same who, lock,
                                         token, bucket, key, method, operation, kind, its last
                                         occurrence at most this old) counts into that run's
                                         record instead of adding one (0 = never; the
                                         gateway's default is 60,000) */
};

/* Per-lock fence entry, copied out of the store. */
struct store_fence {
    uint64_t token;                          /* highest accepted token (>= 1) */
    int64_t advanced_ms;                     /* wall-clock ms when it last advanced */
    char request_id[STORE_REQID_MAX + 1];    /* request that advanced it ("" if none given) */
    char principal[STORE_PRINCIPAL_MAX + 1]; /* its principal ("" if none given) */
};

/* Per-lock election cache entry, copied out of the store. */
struct store_elect {
    uint64_t epoch;     /* latest epoch known to be granted (>= 1) */
    int64_t learned_ms; /* wall-clock ms when this epoch was recorded */
};

/* What a fence check says about a presented token. */
enum store_fence_verdict {
    STORE_FENCE_ACCEPT = 0,  /* token == the durable highest: forward the write */
    STORE_FENCE_STALE = 1,   /* token < highest: reject (StaleFencingToken) */
    STORE_FENCE_ADVANCE = 2, /* token > highest, or == a highest whose commit is still in
                                flight: call store_fence_advance and wait for it */
};

/* Why a write was rejected; stored as one byte, names as in store_audit_kind_name. */
enum store_audit_kind {
    STORE_AUDIT_STALE = 1,          /* "stale": token lower than the highest */
    STORE_AUDIT_NOT_GRANTED = 2,    /* "not_granted": token never granted (G4) */
    STORE_AUDIT_CUT = 3,            /* "cut": in-flight older-epoch write cut off (G3) */
    STORE_AUDIT_MISSING_TOKEN = 4,  /* "missing_token": fenced write without a token */
    STORE_AUDIT_LOCK_MISMATCH = 5,  /* "lock_mismatch": lock header contradicts the rule */
    STORE_AUDIT_INVALID_TOKEN = 6,  /* "invalid_token": malformed token or lock name */
    STORE_AUDIT_LEASE_EXPIRED = 7,  /* "lease_expired": the epoch's lease ended, no write window */
    STORE_AUDIT_REFUSED = 8,        /* "refused": not forwarded as classified (G9: method, query,
                                       form upload, bucket-level write, principal's bounds) */
    STORE_AUDIT_REVOKED = 9,        /* "revoked": an admin ended the lease of epoch `token`;
                                       principal is the admin, key the lock's holder */
    STORE_AUDIT_STORE_REFUSED = 10, /* "store_refused": a late write the store itself refused
                                      (the gateway's own condition failed, 412) while its
                                      token was no longer the highest or its lease had ended */
};
#define STORE_AUDIT_KIND_MAX 10

/*
 * One audit record.  On append every string is borrowed until the call
 * returns; NULL means "" and over-long strings are truncated to their caps.
 * In query callbacks the strings are NUL-terminated views valid only during
 * the callback.
 */
struct store_audit_rec {
    int64_t time_ms;            /* wall-clock ms; on append 0 means "now" */
    uint64_t seq;               /* assigned by the store on append (ignored there); unique */
    enum store_audit_kind kind; /* why it was rejected (or "revoked": what an admin did) */
    uint64_t token;             /* token presented (0 = none) */
    uint64_t current;           /* the lock's highest token then (0 = none) */
    const char *lock;           /* lock name ("" when unknown) */
    const char *principal;      /* authenticated principal */
    const char *client;         /* client address, e.g. "192.0.2.7:51234" */
    const char *method;         /* HTTP method */
    const char *bucket;         /* S3 bucket */
    const char *key;            /* S3 key ("revoked": the holder whose lease ended) */
    const char *operation;      /* S3 operation, e.g. "PutObject" */
    const char *request_id;     /* gateway request id */
    const char *user_agent;     /* User-Agent header */
    const char *trace_id;       /* W3C trace id of the request (traceparent), NULL or "": none */
    uint64_t count;             /* occurrences this record stands for (>= 1; ignored on append):
                                   identical refusals within opts.audit_coalesce_ms coalesce */
    int64_t last_ms;            /* time of the last occurrence (= time_ms when count is 1) */
};

/* A position in the audit log: the last record seen.  Zeroed = the start. */
struct store_audit_cursor {
    bool set;        /* false: start at since_ms */
    int64_t time_ms; /* time of the last record returned */
    uint64_t seq;    /* its sequence number */
};

/* An audit query: records with since_ms <= time < until_ms, oldest first. */
struct store_audit_query {
    const char *lock;                /* NULL: every lock; else only this lock */
    const char *who;                 /* NULL: everyone; else only this principal or origin
                                        (store_audit_who's form); not with lock */
    int64_t since_ms;                /* inclusive lower bound (0 = from the start) */
    int64_t until_ms;                /* exclusive upper bound (0 = no bound) */
    uint32_t limit;                  /* at most this many records (1..STORE_AUDIT_LIMIT_MAX) */
    struct store_audit_cursor after; /* if set, start after this record (previous page's next) */
};

/* Counters for metrics and benchmarks; a snapshot, each value read atomically. */
struct store_stats {
    uint64_t commits;        /* write transactions committed (= fsync groups) */
    uint64_t fence_advances; /* fence advances applied (raised or confirmed) */
    uint64_t elect_advances; /* election cache updates applied */
    uint64_t audit_appended; /* audit appends committed (a repeat counted into its run too) */
    uint64_t audit_pruned;   /* audit records deleted by retention */
    uint64_t queue_rejected; /* async calls refused with ERR_AGAIN (queue full) */
    uint64_t queue_depth;    /* async operations queued or in the current group */
    uint64_t map_size;       /* current map size in bytes */
    uint64_t map_grows;      /* times the map was grown */
    uint64_t audit_damaged;  /* damaged records skipped by queries and retention */
};

/* A multipart upload created by a fenced write, copied out of the store. */
struct store_upload {
    uint64_t epoch;                    /* the token of the CreateMultipartUpload (>= 1) */
    int64_t created_ms;                /* wall-clock ms when it was recorded */
    char bucket[STORE_BUCKET_MAX + 1]; /* its bucket */
    char key[STORE_KEY_MAX + 1];       /* its key */
};

/* Callbacks of the async calls.  They run in store_dispatch_completions (or in
 * store_close), on that caller's thread, never before the queuing call returns. */

/*
 * store_fence_done_fn - an advance finished.  err: 0 = token is now the durable
 * highest (it advanced, or was already equal); ERR_FENCED = a higher token is
 * recorded (highest says which; nothing was lowered); ERR_TOOBIG = the map
 * cannot grow; ERR_IO = the commit failed (fence unchanged by this call).
 */
typedef void store_fence_done_fn(void *arg, int err, uint64_t highest);

/* store_elect_done_fn - an election-cache update finished: err 0 and the epoch now
 * recorded (>= the one given), or ERR_IO / ERR_TOOBIG. */
typedef void store_elect_done_fn(void *arg, int err, uint64_t epoch);

/* What an append became once committed. */
struct store_audit_done {
    uint64_t seq;               /* the record that holds it (a new one, or its run's) */
    uint64_t occurrence;        /* 1: a record of its own; n >= 2: the n-th occurrence of a run,
                                   counted into the run's record (opts.audit_coalesce_ms) */
    const char *run_request_id; /* occurrence >= 2: the run record's request id (its first
                                   occurrence's); the repeat is findable as
                                   "<run_request_id>.<occurrence>"; else "" */
};

/* store_audit_done_fn - an audit record was committed (err 0; d says where, valid
 * during the call), or failed (ERR_IO / ERR_TOOBIG; d is NULL). */
typedef void store_audit_done_fn(void *arg, int err, const struct store_audit_done *d);

/* store_fence_each_fn / store_elect_each_fn - one entry of a list; views valid during
 * the call, which runs inside a read transaction: do not call back into the store.
 * Return 0 to go on, non-zero to stop (a negative value is returned by the list call). */
typedef int store_fence_each_fn(void *arg, const char *lock, const struct store_fence *f);
typedef int store_elect_each_fn(void *arg, const char *lock, const struct store_elect *e);

/* store_upload_done_fn - an upload-table write finished: err 0, or ERR_IO / ERR_TOOBIG. */
typedef void store_upload_done_fn(void *arg, int err);

/* store_upload_each_fn - one upload; upload_id and u are valid during the call only,
 * which runs inside a read transaction: do not call back into the store.
 * Return 0 to go on, non-zero to stop (a negative value is returned by the list call). */
typedef int store_upload_each_fn(void *arg, const char *upload_id, const struct store_upload *u);

/* store_audit_each_fn - one audit record; rec and its strings are valid during the
 * call only, which runs inside a read transaction: do not call back into the store.
 * Return 0 to go on, non-zero to stop (a negative value is returned by
 * store_audit_query). */
typedef int store_audit_each_fn(void *arg, const struct store_audit_rec *rec);

/* ---- environment ---- */

/*
 * store_opts_init - fill *o with the defaults (data_dir NULL: the caller sets it).
 * [out] o
 */
void store_opts_init(struct store_opts *o);

/*
 * store_open - open (creating if needed, unless read_only) the store under
 * o->data_dir.  Clears stale reader slots (mdb_reader_check), checks the
 * format-version record (writing it into a new store), fsyncs what a
 * previous run left, and starts the worker thread unless read_only.
 * [in]  o       options; borrowed during the call
 * [out] out     the new store, owned by the caller (store_close); NULL on failure
 * [out] errbuf  on failure, a one-line reason (may be NULL); errlen its size
 * Returns 0; ERR_INVAL (bad options); ERR_NOTFOUND (read_only and no store
 * there); ERR_VERSION (written by a newer fencegate; refused, nothing read);
 * ERR_IO (LMDB or system error); ERR_NOMEM.  Blocking.
 */
MUST_USE int store_open(const struct store_opts *o, struct store **out, char *errbuf,
                        size_t errlen);

/*
 * store_close - finish every queued async write (committing it), run the
 * remaining callbacks on the calling thread, stop the worker and close the
 * environment.  Call it on the thread that dispatches completions, after the
 * last async call.  NULL-safe.  Blocking.
 */
void store_close(struct store *s);

/*
 * store_completion_fd - the descriptor that becomes readable when async work
 * has finished; watch it for reading (level-triggered) and call
 * store_dispatch_completions.  Owned by the store: do not read or close it.
 * Returns the fd, or -1 for a read-only store (no async calls).
 */
int store_completion_fd(const struct store *s);

/*
 * store_dispatch_completions - run the callbacks of finished async work, in
 * completion order, on the calling thread (one thread only: the loop).
 * Callbacks may queue new async work.  Never blocks on I/O.
 * Returns the number of callbacks run.
 */
size_t store_dispatch_completions(struct store *s);

/* store_stats_get - a snapshot of the counters.  [out] st */
void store_stats_get(struct store *s, struct store_stats *st);

/* ---- fence table ---- */

/*
 * store_fence_get - read a lock's fence entry (read-only transaction).
 * [in]  lock     lock name
 * [out] out      the entry (untouched on failure)
 * [out] durable  may be NULL; false only while the commit that wrote this
 *                value is still in flight in this process (read-only stores
 *                always say true)
 * Returns 0; ERR_NOTFOUND (never advanced); ERR_INVAL (bad lock name);
 * ERR_IO (LMDB error, or a damaged record: logged; the write path must
 * then refuse the write, never treat it as "no fence").
 */
MUST_USE int store_fence_get(struct store *s, const char *lock, struct store_fence *out,
                             bool *durable);

/*
 * store_fence_check - compare a presented token with the lock's highest
 * (the write path's fast check; a read-only transaction).
 * [in]  token    the token presented (>= 1)
 * [out] verdict  what to do with the write
 * [out] highest  the recorded highest (0 if none); may be NULL
 * Returns 0 (see verdict), ERR_INVAL (bad lock or token 0), ERR_IO (as
 * store_fence_get; no verdict then).
 */
MUST_USE int store_fence_check(struct store *s, const char *lock, uint64_t token,
                               enum store_fence_verdict *verdict, uint64_t *highest);

/*
 * store_fence_advance - raise a lock's highest token to token, durably,
 * grouped with other writes into one fsync.  Never lowers it.
 * [in] request_id, principal  recorded with the entry if it advances; NULL = ""
 * [in] cb   required; runs once from store_dispatch_completions (never before
 *           this call returns), with the result described at store_fence_done_fn
 * [in] arg  passed to cb
 * Returns 0 (queued; cb will run); ERR_INVAL (bad lock, token 0, cb NULL);
 * ERR_AGAIN (queue full); ERR_CLOSED (read-only or closing); ERR_NOMEM.
 * On a non-zero return cb never runs.
 */
MUST_USE int store_fence_advance(struct store *s, const char *lock, uint64_t token,
                                 const char *request_id, const char *principal,
                                 store_fence_done_fn *cb, void *arg);

/*
 * store_fence_advance_sync - the same, on the calling thread, in its own
 * committed (fsync'd) transaction.  Blocking.
 * [out] highest  the highest after the call; may be NULL
 * Returns 0 (token is the durable highest), ERR_FENCED (a higher one is),
 * ERR_INVAL, ERR_CLOSED (read-only), ERR_TOOBIG (map at map_max), ERR_IO.
 */
MUST_USE int store_fence_advance_sync(struct store *s, const char *lock, uint64_t token,
                                      const char *request_id, const char *principal,
                                      uint64_t *highest);

/*
 * store_fence_list - call fn for every fence entry, in lock-name byte order,
 * inside one read-only transaction.
 * Returns 0, fn's negative return, or ERR_IO.  Damaged entries are skipped.
 */
MUST_USE int store_fence_list(struct store *s, store_fence_each_fn *fn, void *arg);

/* ---- election cache ---- */

/*
 * store_elect_get - the latest epoch known granted for lock.
 * Returns 0, ERR_NOTFOUND, ERR_INVAL (bad lock), ERR_IO (LMDB error or damaged record).
 */
MUST_USE int store_elect_get(struct store *s, const char *lock, struct store_elect *out);

/*
 * store_elect_advance - record that epoch was granted for lock (raises, never
 * lowers), durably and grouped; cb as for store_fence_advance.
 * Returns 0, ERR_INVAL (bad lock, epoch 0, cb NULL), ERR_AGAIN, ERR_CLOSED, ERR_NOMEM.
 */
MUST_USE int store_elect_advance(struct store *s, const char *lock, uint64_t epoch,
                                 store_elect_done_fn *cb, void *arg);

/*
 * store_elect_advance_sync - the same on the calling thread.  Blocking.
 * [out] epoch_now  the recorded epoch afterwards (>= epoch); may be NULL
 * Returns 0, ERR_INVAL, ERR_CLOSED, ERR_TOOBIG, ERR_IO.
 */
MUST_USE int store_elect_advance_sync(struct store *s, const char *lock, uint64_t epoch,
                                      uint64_t *epoch_now);

/* store_elect_list - as store_fence_list, for the election cache. */
MUST_USE int store_elect_list(struct store *s, store_elect_each_fn *fn, void *arg);

/*
 * store_fence_page - one page of the fence table: fn for at most limit
 * entries whose names sort (bytewise) strictly after `after`, in order, in
 * one read-only transaction.  A range scan: its cost does not grow with the
 * table.  Entries added or removed between pages may or may not show; every
 * entry present throughout is delivered exactly once across the pages.
 * [in]  after  NULL or "": from the first entry; else a valid lock name (it
 *              need not exist)
 * [in]  limit  1..STORE_PAGE_MAX
 * [out] more   true when an entry past this page exists (only on 0)
 * Returns 0, fn's negative return, ERR_INVAL (bad after, limit or more),
 * ERR_IO.  Damaged entries are skipped (not counted in limit).
 */
MUST_USE int store_fence_page(struct store *s, const char *after, uint32_t limit,
                              store_fence_each_fn *fn, void *arg, bool *more);

/* store_elect_page - as store_fence_page, for the election cache. */
MUST_USE int store_elect_page(struct store *s, const char *after, uint32_t limit,
                              store_elect_each_fn *fn, void *arg, bool *more);

/* ---- multipart uploads ---- */

/*
 * store_upload_put - record that upload_id (under lock) was created by epoch,
 * durably and grouped like a fence advance.  Replaces an existing entry.
 * [in] upload_id  1..STORE_UPLOAD_ID_MAX bytes
 * [in] bucket, key  copied (truncated to their caps)
 * [in] cb   may be NULL (fire and forget; failures are logged); otherwise runs
 *           once from store_dispatch_completions, never before this returns
 * Returns 0, ERR_INVAL (bad lock, upload id or epoch 0), ERR_AGAIN,
 * ERR_CLOSED, ERR_NOMEM.  On a non-zero return cb never runs.
 */
MUST_USE int store_upload_put(struct store *s, const char *lock, const char *upload_id,
                              uint64_t epoch, const char *bucket, const char *key,
                              store_upload_done_fn *cb, void *arg);

/*
 * store_upload_del - forget upload_id under lock (no entry is not an error),
 * durably and grouped; cb as for store_upload_put.
 * Returns 0, ERR_INVAL, ERR_AGAIN, ERR_CLOSED, ERR_NOMEM.
 */
MUST_USE int store_upload_del(struct store *s, const char *lock, const char *upload_id,
                              store_upload_done_fn *cb, void *arg);

/*
 * store_upload_get - the entry of upload_id under lock (read-only transaction).
 * [out] out  untouched on failure
 * Returns 0, ERR_NOTFOUND, ERR_INVAL (bad lock or upload id), ERR_IO
 * (LMDB error or damaged record).
 */
MUST_USE int store_upload_get(struct store *s, const char *lock, const char *upload_id,
                              struct store_upload *out);

/*
 * store_upload_list_older - call fn for each upload of lock created by an
 * epoch lower than epoch, in upload-id byte order, at most limit of them,
 * in one read-only transaction.  Damaged entries are skipped.
 * Returns 0, fn's negative return, ERR_INVAL (bad lock), ERR_IO.
 */
MUST_USE int store_upload_list_older(struct store *s, const char *lock, uint64_t epoch,
                                     uint32_t limit, store_upload_each_fn *fn, void *arg);

/* ---- audit log ---- */

/*
 * store_audit_append - queue one audit record; it is committed with others
 * within opts.audit_flush_ms (or at once with a fence advance).
 * [in] rec  copied (strings truncated to their caps); rec->seq is ignored
 * [in] cb   may be NULL (fire and forget; failures are logged); otherwise runs
 *           once from store_dispatch_completions, never before this returns
 * Returns 0, ERR_INVAL (bad kind), ERR_AGAIN (queue full: the caller should
 * count it and answer 503 rather than lose the record silently), ERR_CLOSED,
 * ERR_NOMEM.
 */
MUST_USE int store_audit_append(struct store *s, const struct store_audit_rec *rec,
                                store_audit_done_fn *cb, void *arg);

/*
 * store_audit_append_sync - append one record in its own committed
 * transaction on the calling thread (count retention applied).  Blocking.
 * [out] seq  the sequence number of the record that holds it (its own, or its
 *            run's when it repeats one: opts.audit_coalesce_ms); may be NULL
 * Returns 0, ERR_INVAL, ERR_CLOSED, ERR_TOOBIG, ERR_IO.
 */
MUST_USE int store_audit_append_sync(struct store *s, const struct store_audit_rec *rec,
                                     uint64_t *seq);

/*
 * store_audit_query - call fn for each matching record, oldest first, in one
 * read-only transaction.  Damaged records are skipped (and counted).
 * [in]  q     the query; q->limit in 1..STORE_AUDIT_LIMIT_MAX
 * [out] next  may be NULL; set (next->set = true) when more records may
 *             follow: pass it as q->after for the next page; else cleared
 * Returns 0, fn's negative return, ERR_INVAL (bad query), ERR_IO.
 */
MUST_USE int store_audit_query(struct store *s, const struct store_audit_query *q,
                               store_audit_each_fn *fn, void *arg, struct store_audit_cursor *next);

/*
 * store_audit_find - the record of one refusal by its request id, in one
 * read-only transaction: a plain id through the request-id index, or
 * "BASE.n" (store_audit_reqid_split), the n-th occurrence of the run whose
 * record has the id BASE, when 2 <= n <= that record's count.  fn is called
 * once with the record when found.
 * [out] occurrence  may be NULL: 1 for a plain id, else n
 * Returns 0, ERR_NOTFOUND, fn's negative return, ERR_INVAL (id empty or over
 * STORE_REQID_MAX + 21 bytes), ERR_IO.
 */
MUST_USE int store_audit_find(struct store *s, const char *request_id, store_audit_each_fn *fn,
                              void *arg, uint64_t *occurrence);

/*
 * store_audit_reqid_split - whether id has the form BASE.n of a repeat's
 * request id: BASE non-empty, n decimal without a leading zero, 2..UINT64_MAX.
 * Then *base_len is BASE's length and *n is n.  Pure.
 */
bool store_audit_reqid_split(const char *id, size_t len, size_t *base_len, uint64_t *n);

/*
 * store_audit_count - the number of audit records stored.
 * Returns 0 or ERR_IO.
 */
MUST_USE int store_audit_count(struct store *s, uint64_t *n);

/*
 * store_audit_prune_sync - one bounded retention batch on the calling
 * thread: delete, oldest first, records older than now_ms - audit_max_age_ms
 * and records beyond audit_max_records, at most max_delete of them.  The
 * worker runs the same in the background.  Blocking.
 * [out] deleted  how many were deleted; may be NULL
 * [out] more     true if the batch limit stopped it; may be NULL
 * Returns 0, ERR_INVAL (max_delete 0 or now_ms < 0), ERR_CLOSED, ERR_IO.
 */
MUST_USE int store_audit_prune_sync(struct store *s, int64_t now_ms, uint32_t max_delete,
                                    uint64_t *deleted, bool *more);

/*
 * store_audit_lock_stats - the quota counters of one lock's audit records.
 * [in]  lock     a lock name, or "" (records with no lock)
 * [out] kept     records of lock stored now
 * [out] dropped  records of lock deleted by a quota (per lock or per principal) so far
 * Returns 0 (zeros for a lock never refused), ERR_INVAL, ERR_IO.
 */
MUST_USE int store_audit_lock_stats(struct store *s, const char *lock, uint64_t *kept,
                                    uint64_t *dropped);

/*
 * store_audit_who_stats - the same counters for one principal or origin
 * (store_audit_who's form): its records kept now, and those of its records
 * deleted by either quota.  Returns 0, ERR_INVAL, ERR_IO.
 */
MUST_USE int store_audit_who_stats(struct store *s, const char *who, uint64_t *kept,
                                   uint64_t *dropped);

/*
 * store_audit_who - whom the per-principal quota counts a record against:
 * principal when it is not empty, else "@" + client's address without its
 * port ("192.0.2.7:51234" -> "@192.0.2.7", "[::1]:80" -> "@[::1]"); NULL is
 * "".  Writes at most STORE_WHO_MAX bytes and a NUL into out.
 */
void store_audit_who(const char *principal, const char *client, char out[STORE_WHO_MAX + 1]);

/*
 * store_audit_kind_name - "stale", "not_granted", "cut", "missing_token",
 * "lock_mismatch", "invalid_token", "lease_expired", "refused", "store_refused";
 * "unknown" for anything else.  Static storage.
 */
const char *store_audit_kind_name(enum store_audit_kind kind);

/* store_audit_kind_parse - the inverse.  Returns 0 or ERR_INVAL. */
MUST_USE int store_audit_kind_parse(const char *name, enum store_audit_kind *out);

/*
 * store_audit_cursor_format - write c as "<time_ms>.<seq>" into out (size len,
 * at least 42 bytes is always enough).  Returns 0 or ERR_TOOBIG.
 */
MUST_USE int store_audit_cursor_format(const struct store_audit_cursor *c, char *out, size_t len);

/* store_audit_cursor_parse - parse what store_audit_cursor_format wrote.
 * Returns 0 (out->set = true) or ERR_INVAL (out untouched). */
MUST_USE int store_audit_cursor_parse(const char *s, struct store_audit_cursor *out);

#endif
