/*
 * store/store.c: the environment: open/close, format version, transactions,
 * map growth, counters.
 */
#define LOG_MODULE "store"
#include "store/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "store/store_int.h"

#define STORE_FILE        "fencegate.mdb"
#define META_FORMAT_KEY   "format"
#define MIN_MAP_BYTES     ((size_t)64 << 10)
#define DEFAULT_MAP_BYTES ((size_t)64 << 20)
#define DEFAULT_MAP_MAX   ((size_t)16 << 30)
#define REMAP_TRIES       4

void
store_opts_init(struct store_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->map_initial = DEFAULT_MAP_BYTES;
    o->map_max = DEFAULT_MAP_MAX;
    o->audit_flush_ms = 5;
    o->queue_max = 65536;
    o->audit_max_records = 1000000;
    o->audit_max_age_ms = 30ull * 24 * 3600 * 1000;
    o->retention_interval_ms = 1000;
    o->audit_max_per_lock = 10000;
    o->audit_max_per_principal = 100000;
}

int
store_err_mdb(int rc, const char *what)
{
    switch (rc) {
    case ENOMEM:
        log_error("%s: %s", what, mdb_strerror(rc));
        return ERR_NOMEM;
    case MDB_MAP_FULL:
        return ERR_TOOBIG;
    case MDB_NOTFOUND:
        return ERR_NOTFOUND;
    default:
        log_error("%s: %s", what, mdb_strerror(rc));
        return ERR_IO;
    }
}

/* Our own codes are small negatives; LMDB's are below -30000, errno positive. */
static bool
is_err_code(int rc)
{
    return rc < 0 && rc > -1000;
}

/* Log a start-up failure and copy it into the caller's errbuf (if any). */
#define errmsg(errbuf, errlen, ...)                                                                \
    do {                                                                                           \
        log_error(__VA_ARGS__);                                                                    \
        if ((errbuf) != NULL && (errlen) > 0) {                                                    \
            (void)snprintf((errbuf), (errlen), __VA_ARGS__);                                       \
        }                                                                                          \
    } while (0)

static void
durable_raise(struct store *s, uint64_t id)
{
    uint64_t cur = atomic_load(&s->durable_txnid);
    while (cur < id && !atomic_compare_exchange_weak(&s->durable_txnid, &cur, id)) {
    }
}

/* Adopt a map size another process set (MDB_MAP_RESIZED).  Takes the locks. */
static int
remap(struct store *s)
{
    (void)pthread_mutex_lock(&s->wlock);
    (void)pthread_rwlock_wrlock(&s->maplock);
    int rc = mdb_env_set_mapsize(s->env, 0);
    MDB_envinfo info;
    if (rc == 0 && mdb_env_info(s->env, &info) == 0) {
        s->map_size = info.me_mapsize;
    }
    (void)pthread_rwlock_unlock(&s->maplock);
    (void)pthread_mutex_unlock(&s->wlock);
    return rc == 0 ? 0 : store_err_mdb(rc, "mdb_env_set_mapsize");
}

/*
 * LMDB 0.9.24's mdb_txn_renew0 (read-only) stores mti_txnid (S) in the reader
 * slot, then copies the roots from the meta page me_metas[S & 1].  A writer
 * overwrites that page for S + 2 (pwrite on the O_DSYNC fd, then publishes
 * mti_txnid): a reader delayed between the two steps across commit S + 1 and
 * into S + 2's meta write reads S + 2's roots, before S + 2's commit returned,
 * under the id S; the next reader still gets mti_txnid S + 1 and its older
 * value.  Such a snapshot needs commit S + 1 to end and S + 2 to begin while
 * the transaction starts, i.e. commit_seq to move by 2 or more: then it is
 * started again; after READ_RACE_TRIES, under wlock (no commit of this
 * process can run).  tests/helpers/lmdb_meta_race.c reproduces it with plain
 * LMDB.  Commits of another process (store_seed, a second daemon) are not
 * counted in commit_seq: a meta page already naming id + 2 after the start
 * also restarts it, which narrows that case without closing it.
 */
#define READ_RACE_TRIES 8

/* Renew a pooled read transaction or begin one; 0 or an LMDB code. */
static int
read_txn_start(struct store *s, MDB_txn **txn)
{
    MDB_txn *t = NULL;
    (void)pthread_mutex_lock(&s->rpool_lock);
    if (s->nrpool > 0) {
        t = s->rpool[--s->nrpool];
    }
    (void)pthread_mutex_unlock(&s->rpool_lock);
    int rc = t != NULL ? mdb_txn_renew(t) : mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t);
    if (rc != 0 && t != NULL) {
        mdb_txn_abort(t);
        t = NULL;
    }
    *txn = t;
    return rc;
}

/* Reset a read transaction into the pool (abort it if the pool is full). */
static void
read_txn_park(struct store *s, MDB_txn *txn)
{
    mdb_txn_reset(txn);
    (void)pthread_mutex_lock(&s->rpool_lock);
    if (s->nrpool < STORE_RPOOL_MAX) {
        s->rpool[s->nrpool++] = txn;
        txn = NULL;
    }
    (void)pthread_mutex_unlock(&s->rpool_lock);
    if (txn != NULL) {
        mdb_txn_abort(txn);
    }
}

/* Could the transaction begun at commit_seq seq hold a later snapshot than its id? */
static bool
read_raced(struct store *s, MDB_txn *txn, uint64_t seq)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load(&s->commit_seq) - seq >= 2) {
        return true;
    }
    /* another process's commit: its meta page may already be written (narrows
     * the window only: the page is read here after the transaction copied it) */
    MDB_envinfo info;
    return mdb_env_info(s->env, &info) == 0 && info.me_last_txnid >= mdb_txn_id(txn) + 2;
}

/* read_txn_start, again until no commit of this process raced it (above). */
static int
read_txn_start_checked(struct store *s, MDB_txn **txn)
{
    for (int i = 0; i < READ_RACE_TRIES; i++) {
        uint64_t seq = atomic_load(&s->commit_seq);
        int rc = read_txn_start(s, txn);
        if (rc != 0 || !read_raced(s, *txn, seq)) {
            return rc;
        }
        read_txn_park(s, *txn);
        *txn = NULL;
    }
    return -1; /* the caller starts it under wlock */
}

int
store_txn_read_begin(struct store *s, MDB_txn **txn)
{
    for (int attempt = 0;; attempt++) {
        (void)pthread_rwlock_rdlock(&s->maplock);
        MDB_txn *t = NULL;
        int rc = read_txn_start_checked(s, &t);
        if (rc == -1) {
            /* wlock before maplock (the order at the top of store_int.h) */
            (void)pthread_rwlock_unlock(&s->maplock);
            (void)pthread_mutex_lock(&s->wlock);
            (void)pthread_rwlock_rdlock(&s->maplock);
            rc = read_txn_start(s, &t);
            (void)pthread_mutex_unlock(&s->wlock);
        }
        if (rc == 0) {
            *txn = t;
            return 0;
        }
        (void)pthread_rwlock_unlock(&s->maplock);
        if (rc == MDB_MAP_RESIZED && attempt < REMAP_TRIES) {
            int err = remap(s);
            if (err != 0) {
                return err;
            }
            continue;
        }
        return store_err_mdb(rc, "mdb_txn_begin(read)");
    }
}

void
store_txn_read_end(struct store *s, MDB_txn *txn)
{
    read_txn_park(s, txn);
    (void)pthread_rwlock_unlock(&s->maplock);
}

bool
store_txn_durable(struct store *s, MDB_txn *txn)
{
    if (s->read_only) {
        return true;
    }
    return (uint64_t)mdb_txn_id(txn) <= atomic_load(&s->durable_txnid);
}

/* Double the map (under wlock, no write txn active).  Returns 0 or ERR_*. */
static int
grow_locked(struct store *s)
{
    if (s->map_size >= s->opts.map_max) {
        log_error("%s: map full at %zu bytes (map_max); cannot grow", s->path, s->map_size);
        return ERR_TOOBIG;
    }
    size_t want = s->map_size > s->opts.map_max / 2 ? s->opts.map_max : s->map_size * 2;
    size_t old = s->map_size;
    (void)pthread_rwlock_wrlock(&s->maplock);
    int rc = mdb_env_set_mapsize(s->env, want);
    if (rc == 0) {
        s->map_size = want;
    }
    (void)pthread_rwlock_unlock(&s->maplock);
    if (rc != 0) {
        return store_err_mdb(rc, "mdb_env_set_mapsize");
    }
    log_info("%s: map grown from %zu to %zu bytes", s->path, old, want);
    atomic_fetch_add(&s->st_grows, 1);
    return 0;
}

int
store_write_run(struct store *s, store_write_fn *fn, void *arg)
{
    if (s->read_only) {
        return ERR_CLOSED;
    }
    int err = 0;
    (void)pthread_mutex_lock(&s->wlock);
    for (int resized = 0;;) {
        MDB_txn *txn = NULL;
        int rc = mdb_txn_begin(s->env, NULL, 0, &txn);
        if (rc == MDB_MAP_RESIZED && resized++ < REMAP_TRIES) {
            (void)pthread_rwlock_wrlock(&s->maplock);
            rc = mdb_env_set_mapsize(s->env, 0);
            (void)pthread_rwlock_unlock(&s->maplock);
            if (rc == 0) {
                continue;
            }
        }
        if (rc != 0) {
            err = store_err_mdb(rc, "mdb_txn_begin(write)");
            break;
        }
        /* LMDB's writer lock means every earlier commit has returned: fsync'd. */
        uint64_t id = (uint64_t)mdb_txn_id(txn);
        durable_raise(s, id - 1);
        rc = fn(s, txn, arg);
        if (rc == 0) {
            atomic_fetch_add(&s->commit_seq, 1);
            rc = mdb_txn_commit(txn);
            atomic_fetch_add(&s->commit_seq, 1);
            if (rc == 0) {
                durable_raise(s, id);
                atomic_fetch_add(&s->st_commits, 1);
                break;
            }
        } else {
            mdb_txn_abort(txn);
        }
        if (rc == MDB_MAP_FULL) {
            err = grow_locked(s);
            if (err != 0) {
                break;
            }
            continue;
        }
        err = is_err_code(rc) ? rc : store_err_mdb(rc, "write transaction");
        break;
    }
    (void)pthread_mutex_unlock(&s->wlock);
    return err;
}

/* Check (and on a new store write) the format record.  Runs in a write or read txn. */
static int
check_format(struct store *s, MDB_txn *txn, bool create, char *errbuf, size_t errlen)
{
    MDB_val k = {.mv_size = sizeof(META_FORMAT_KEY) - 1, .mv_data = (void *)META_FORMAT_KEY};
    MDB_val v;
    int rc = mdb_get(txn, s->dbi_meta, &k, &v);
    if (rc == MDB_NOTFOUND && create) {
        uint8_t b[4] = {STORE_FORMAT_VERSION, 0, 0, 0};
        MDB_val nv = {.mv_size = sizeof(b), .mv_data = b};
        return mdb_put(txn, s->dbi_meta, &k, &nv, 0);
    }
    if (rc == MDB_NOTFOUND) {
        errmsg(errbuf, errlen, "%s: no format-version record: not a fencegate store", s->path);
        return ERR_INVAL;
    }
    if (rc != 0) {
        return rc;
    }
    if (v.mv_size != 4) {
        errmsg(errbuf, errlen, "%s: damaged format-version record", s->path);
        return ERR_INVAL;
    }
    const uint8_t *p = v.mv_data;
    uint32_t ver =
        (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    if (ver > STORE_FORMAT_VERSION) {
        errmsg(errbuf, errlen,
               "%s has store format version %u, newer than this fencegate understands (%u): "
               "refusing to open it; run a newer fencegate",
               s->path, ver, (unsigned)STORE_FORMAT_VERSION);
        return ERR_VERSION;
    }
    if (ver == 0) {
        errmsg(errbuf, errlen, "%s: damaged format-version record (0)", s->path);
        return ERR_INVAL;
    }
    return 0;
}

struct init_ctx {
    char *errbuf;  /* for check_format's message */
    size_t errlen; /* its size */
};

/* Open every database and check the format (store_write_fn, or in a read txn). */
static int
open_dbis(struct store *s, MDB_txn *txn, bool create, char *errbuf, size_t errlen)
{
    unsigned int fl = create ? MDB_CREATE : 0;
    int rc = mdb_dbi_open(txn, "meta", fl, &s->dbi_meta);
    if (rc != 0) {
        return rc;
    }
    rc = check_format(s, txn, create, errbuf, errlen);
    if (rc != 0) {
        return rc;
    }
    static const char *const names[] = {"fence", "elect", "audit", "audit_lock"};
    MDB_dbi *dbis[] = {&s->dbi_fence, &s->dbi_elect, &s->dbi_audit, &s->dbi_index};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        rc = mdb_dbi_open(txn, names[i], fl, dbis[i]);
        if (rc != 0) {
            return rc;
        }
    }
    /* added later than the others: a read-only open of an older store goes on without them */
    rc = mdb_dbi_open(txn, "upload", fl, &s->dbi_upload);
    if (rc == MDB_NOTFOUND && !create) {
        s->has_upload = false;
        s->has_quota = false;
        s->has_who = false;
        return 0;
    }
    s->has_upload = rc == 0;
    if (rc != 0) {
        return rc;
    }
    bool recount = false;
    rc = mdb_dbi_open(txn, "audit_quota", 0, &s->dbi_quota);
    if (rc == MDB_NOTFOUND && create) {
        /* a store from before the quota: count what it holds, once */
        rc = mdb_dbi_open(txn, "audit_quota", MDB_CREATE, &s->dbi_quota);
        if (rc == 0) {
            rc = store_audit_quota_rebuild(s, txn);
        }
        recount = true;
    } else if (rc == MDB_NOTFOUND) {
        s->has_quota = false;
        s->has_who = false;
        return 0;
    }
    s->has_quota = rc == 0;
    if (rc != 0) {
        return rc;
    }
    rc = mdb_dbi_open(txn, "audit_who", 0, &s->dbi_who);
    if (rc == MDB_NOTFOUND && create) {
        /* a store from before the per-principal quota: index and count what it holds, once */
        rc = mdb_dbi_open(txn, "audit_who", MDB_CREATE, &s->dbi_who);
        s->has_who = rc == 0;
        if (rc == 0) {
            rc = store_audit_who_rebuild(s, txn, true);
        }
        return rc;
    }
    if (rc == MDB_NOTFOUND) {
        s->has_who = false;
        return 0;
    }
    s->has_who = rc == 0;
    if (rc == 0 && recount) {
        rc = store_audit_who_rebuild(s, txn, false); /* its counters went with the table */
    }
    return rc;
}

static int
init_write(struct store *s, MDB_txn *txn, void *arg)
{
    struct init_ctx *c = arg;
    return open_dbis(s, txn, true, c->errbuf, c->errlen);
}

static int
init_read_only(struct store *s, char *errbuf, size_t errlen)
{
    MDB_txn *txn = NULL;
    int rc = 0;
    for (int attempt = 0; attempt < REMAP_TRIES; attempt++) {
        rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
        if (rc != MDB_MAP_RESIZED) {
            break;
        }
        rc = mdb_env_set_mapsize(s->env, 0);
        if (rc != 0) {
            break;
        }
        rc = MDB_MAP_RESIZED;
    }
    if (rc != 0) {
        errmsg(errbuf, errlen, "%s: cannot begin a read transaction: %s", s->path,
               mdb_strerror(rc));
        return ERR_IO;
    }
    rc = open_dbis(s, txn, false, errbuf, errlen);
    if (rc != 0) {
        mdb_txn_abort(txn);
        if (rc == MDB_NOTFOUND) {
            errmsg(errbuf, errlen, "%s: not an initialised fencegate store", s->path);
            return ERR_NOTFOUND;
        }
        if (is_err_code(rc)) {
            return rc;
        }
        errmsg(errbuf, errlen, "%s: %s", s->path, mdb_strerror(rc));
        return ERR_IO;
    }
    rc = mdb_txn_commit(txn); /* keeps the database handles */
    if (rc != 0) {
        errmsg(errbuf, errlen, "%s: %s", s->path, mdb_strerror(rc));
        return ERR_IO;
    }
    return 0;
}

static int
check_opts(const struct store_opts *o, char *errbuf, size_t errlen)
{
    if (o->data_dir == NULL || o->data_dir[0] == '\0') {
        errmsg(errbuf, errlen, "store: data_dir is not set");
        return ERR_INVAL;
    }
    if (o->map_initial < MIN_MAP_BYTES || o->map_max < o->map_initial) {
        errmsg(errbuf, errlen, "store: map sizes out of range (initial >= %zu, max >= initial)",
               MIN_MAP_BYTES);
        return ERR_INVAL;
    }
    if (o->audit_flush_ms < 1 || o->audit_flush_ms > 10 || o->queue_max < 1 ||
        o->retention_interval_ms < 1 || o->audit_max_per_lock == 1 ||
        o->audit_max_per_principal == 1) {
        errmsg(errbuf, errlen,
               "store: audit_flush_ms (1..10), queue_max, "
               "retention_interval_ms must be set; audit_max_per_lock and "
               "audit_max_per_principal 0 or >= 2");
        return ERR_INVAL;
    }
    return 0;
}

static int
open_env(struct store *s, char *errbuf, size_t errlen)
{
    int rc = mdb_env_create(&s->env);
    if (rc != 0) {
        s->env = NULL;
        errmsg(errbuf, errlen, "mdb_env_create: %s", mdb_strerror(rc));
        return ERR_IO;
    }
    (void)mdb_env_set_maxdbs(s->env, 9);
    (void)mdb_env_set_maxreaders(s->env, 256);
    (void)mdb_env_set_mapsize(s->env, s->opts.map_initial);
    /* MDB_NOTLS: read transactions are pooled across threads (store_int.h). */
    unsigned int flags = MDB_NOSUBDIR | MDB_NOTLS | (s->read_only ? MDB_RDONLY : 0);
    rc = mdb_env_open(s->env, s->path, flags, 0600);
    if (rc != 0) {
        errmsg(errbuf, errlen, "%s: cannot open: %s", s->path, mdb_strerror(rc));
        return rc == ENOENT ? ERR_NOTFOUND : ERR_IO;
    }
    int dead = 0;
    rc = mdb_reader_check(s->env, &dead);
    if (rc != 0) {
        log_warn("%s: mdb_reader_check: %s", s->path, mdb_strerror(rc));
    } else if (dead > 0) {
        log_info("%s: cleared %d stale reader slot(s)", s->path, dead);
    }
    MDB_envinfo info;
    rc = mdb_env_info(s->env, &info);
    if (rc != 0) {
        errmsg(errbuf, errlen, "%s: mdb_env_info: %s", s->path, mdb_strerror(rc));
        return ERR_IO;
    }
    s->map_size = info.me_mapsize;
    return 0;
}

int
store_open(const struct store_opts *o, struct store **out, char *errbuf, size_t errlen)
{
    *out = NULL;
    int err = check_opts(o, errbuf, errlen);
    if (err != 0) {
        return err;
    }
    struct store *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        errmsg(errbuf, errlen, "store: out of memory");
        return ERR_NOMEM;
    }
    s->opts = *o;
    s->opts.data_dir = NULL;
    s->read_only = o->read_only;
    s->efd = -1;
    (void)pthread_mutex_init(&s->wlock, NULL);
    (void)pthread_rwlock_init(&s->maplock, NULL);
    (void)pthread_mutex_init(&s->rpool_lock, NULL);
    (void)pthread_mutex_init(&s->qlock, NULL);
    pthread_condattr_t ca;
    (void)pthread_condattr_init(&ca);
    (void)pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* the worker's timed waits */
    (void)pthread_cond_init(&s->qcond, &ca);
    (void)pthread_condattr_destroy(&ca);
    (void)pthread_mutex_init(&s->dlock, NULL);

    int n = snprintf(s->path, sizeof(s->path), "%s/%s", o->data_dir, STORE_FILE);
    if (n < 0 || (size_t)n >= sizeof(s->path)) {
        errmsg(errbuf, errlen, "store: data_dir path too long");
        err = ERR_INVAL;
        goto fail;
    }
    if (!s->read_only && mkdir(o->data_dir, 0700) != 0 && errno != EEXIST) {
        errmsg(errbuf, errlen, "%s: mkdir: %s", o->data_dir, strerror(errno));
        err = ERR_IO;
        goto fail;
    }
    if (s->read_only && access(s->path, R_OK) != 0) {
        errmsg(errbuf, errlen, "%s: no fencegate store there (%s)", s->path, strerror(errno));
        err = errno == ENOENT ? ERR_NOTFOUND : ERR_IO;
        goto fail;
    }
    err = open_env(s, errbuf, errlen);
    if (err != 0) {
        goto fail;
    }
    if (s->read_only) {
        err = init_read_only(s, errbuf, errlen);
    } else {
        struct init_ctx c = {.errbuf = errbuf, .errlen = errlen};
        err = store_write_run(s, init_write, &c);
        if (err == ERR_IO || err == ERR_TOOBIG) {
            errmsg(errbuf, errlen, "%s: cannot initialise the store (%s)", s->path, err_str(err));
        }
    }
    if (err != 0) {
        goto fail;
    }
    if (!s->read_only) {
        /* What a killed predecessor committed may sit in the page cache only;
         * flush it so that everything visible now is durable. */
        int rc = mdb_env_sync(s->env, 1);
        MDB_envinfo info;
        if (rc == 0) {
            rc = mdb_env_info(s->env, &info);
        }
        if (rc != 0) {
            errmsg(errbuf, errlen, "%s: sync: %s", s->path, mdb_strerror(rc));
            err = ERR_IO;
            goto fail;
        }
        durable_raise(s, (uint64_t)info.me_last_txnid);
        err = store_worker_start(s);
        if (err != 0) {
            errmsg(errbuf, errlen, "store: cannot start the worker thread");
            goto fail;
        }
    }
    log_debug("%s: open (%s, map %zu bytes)", s->path, s->read_only ? "read-only" : "read-write",
              s->map_size);
    *out = s;
    return 0;

fail:
    store_close(s);
    return err;
}

void
store_close(struct store *s)
{
    if (s == NULL) {
        return;
    }
    store_worker_stop(s);
    for (int i = 0; i < s->nrpool; i++) {
        mdb_txn_abort(s->rpool[i]);
    }
    s->nrpool = 0;
    if (s->env != NULL) {
        mdb_env_close(s->env);
    }
    (void)pthread_mutex_destroy(&s->wlock);
    (void)pthread_rwlock_destroy(&s->maplock);
    (void)pthread_mutex_destroy(&s->rpool_lock);
    (void)pthread_mutex_destroy(&s->qlock);
    (void)pthread_cond_destroy(&s->qcond);
    (void)pthread_mutex_destroy(&s->dlock);
    free(s);
}

void
store_stats_get(struct store *s, struct store_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->commits = atomic_load(&s->st_commits);
    st->fence_advances = atomic_load(&s->st_fence);
    st->elect_advances = atomic_load(&s->st_elect);
    st->audit_appended = atomic_load(&s->st_audit);
    st->audit_pruned = atomic_load(&s->st_pruned);
    st->queue_rejected = atomic_load(&s->st_rejected);
    st->map_grows = atomic_load(&s->st_grows);
    st->audit_damaged = atomic_load(&s->st_damaged);
    (void)pthread_mutex_lock(&s->qlock);
    st->queue_depth = s->qlen;
    (void)pthread_mutex_unlock(&s->qlock);
    (void)pthread_rwlock_rdlock(&s->maplock);
    st->map_size = s->map_size;
    (void)pthread_rwlock_unlock(&s->maplock);
}
