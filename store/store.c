/*
 * store/store.c: the environment: open/close, format version, counters.
 * Transactions and map growth are txn.c's.
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

/* The tables' write functions, for the worker (store_int.h). */
static const struct store_apply_ops apply_ops = {
    .fence = store_fence_apply,
    .elect = store_elect_apply,
    .audit = store_audit_apply,
    .upload = store_upload_apply,
    .prune_txn = store_audit_prune_txn,
    .prune_sync = store_audit_prune_sync,
};

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

/* Log a start-up failure and copy it into the caller's errbuf (if any). */
#define errmsg(errbuf, errlen, ...)                                                                \
    do {                                                                                           \
        log_error(__VA_ARGS__);                                                                    \
        if ((errbuf) != NULL && (errlen) > 0) {                                                    \
            (void)snprintf((errbuf), (errlen), __VA_ARGS__);                                       \
        }                                                                                          \
    } while (0)

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

/* Open every database but the run tables and check the format. */
static int
open_dbis_base(struct store *s, MDB_txn *txn, bool create, char *errbuf, size_t errlen)
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

/* Open every database and check the format (store_write_fn, or in a read txn). */
static int
open_dbis(struct store *s, MDB_txn *txn, bool create, char *errbuf, size_t errlen)
{
    s->has_run = false;
    s->has_reqid = false;
    int rc = open_dbis_base(s, txn, create, errbuf, errlen);
    if (rc != 0) {
        return rc;
    }
    /* added with coalescing: a read-only open of an older store finds ids by a scan */
    rc = mdb_dbi_open(txn, "audit_run", create ? MDB_CREATE : 0, &s->dbi_run);
    if (rc == MDB_NOTFOUND && !create) {
        return 0;
    }
    s->has_run = rc == 0;
    if (rc != 0) {
        return rc;
    }
    rc = mdb_dbi_open(txn, "audit_reqid", 0, &s->dbi_reqid);
    if (rc == MDB_NOTFOUND && create) {
        /* a store from before the index: index what it holds, once */
        rc = mdb_dbi_open(txn, "audit_reqid", MDB_CREATE, &s->dbi_reqid);
        s->has_reqid = rc == 0;
        return rc == 0 ? store_audit_reqid_rebuild(s, txn) : rc;
    }
    if (rc == MDB_NOTFOUND) {
        return 0;
    }
    s->has_reqid = rc == 0;
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
    for (int attempt = 0; attempt < STORE_REMAP_TRIES; attempt++) {
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
        if (store_is_err_code(rc)) {
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
    (void)mdb_env_set_maxdbs(s->env, 11);
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
        store_durable_raise(s, (uint64_t)info.me_last_txnid);
        err = store_worker_start(s, &apply_ops);
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
