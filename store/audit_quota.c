/*
 * store/audit_quota.c: the per-lock and per-principal quotas of the audit
 * log (DESIGN.md "Audit retention under a flood").
 *
 * Two scopes, one rule.  "audit_quota" maps 'q' + lock, and 'p' + who (the
 * principal, or "@" + the client's address for unauthenticated requests:
 * store_audit_who), to two big-endian u64s: the records of that lock or
 * that client now kept, and those dropped by a quota.  "audit_lock" and
 * "audit_who" index the records by (lock | who, time, seq).  When an
 * append takes a lock past opts.audit_max_per_lock, or its client past
 * opts.audit_max_per_principal, that scope's second-oldest record is
 * deleted: its oldest (the first occurrence) and its newest (the last)
 * stay, and the counts say how many went.  A deleted record leaves both
 * indexes and is counted as dropped in both scopes.  A record committed by
 * the running transaction is never the one deleted, so every record is
 * committed, and its refusal answered, before a later transaction may drop
 * it (G7).  One lock's flood can push out only its own middle records, one
 * client's flood only its own.
 */
#define LOG_MODULE "store"
#include "store/store.h"

#include <string.h>

#include "common/log.h"
#include "store/store_int.h"

#define QUOTA_VAL_LEN  16
#define QUOTA_KEY_MAX  (1 + STORE_LOCK_MAX)
#define QUOTA_EVICT_AT 8 /* deletions per append at most (a lowered quota converges) */

static uint64_t
be64_load(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
        v = (v << 8) | p[i];
    }
    return v;
}

static void
be64_store(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

/* The quota key of name in scope (cut like the index key) into out; returns its length. */
static size_t
quota_key(enum store_quota_scope scope, const char *name, uint8_t out[QUOTA_KEY_MAX])
{
    size_t n = name == NULL ? 0 : store_rec_trunc_len(name, STORE_LOCK_MAX);
    out[0] = (uint8_t)scope;
    if (n > 0) {
        memcpy(out + 1, name, n);
    }
    return 1 + n;
}

/* The index of scope. */
static MDB_dbi
scope_dbi(const struct store *s, enum store_quota_scope scope)
{
    return scope == STORE_QUOTA_LOCK ? s->dbi_index : s->dbi_who;
}

/*
 * The bound of name in scope (0: none).  Records under no lock (refused
 * before a lock was known: the classifier's refusals) are not one lock's:
 * bounded as the lock "", every client's would share one quota, and one
 * client's flood of them would push out everyone else's.  Their principal's
 * quota bounds them instead.
 */
static uint64_t
scope_max(const struct store *s, enum store_quota_scope scope, const char *name)
{
    if (scope == STORE_QUOTA_LOCK) {
        return name == NULL || name[0] == '\0' ? 0 : s->opts.audit_max_per_lock;
    }
    return s->opts.audit_max_per_principal;
}

/* Read the counters of key (zero when absent).  Returns 0 or an MDB_* code. */
static int
quota_read(struct store *s, MDB_txn *txn, const uint8_t *key, size_t klen, uint64_t *kept,
           uint64_t *dropped)
{
    MDB_val k = {.mv_size = klen, .mv_data = (void *)key};
    MDB_val v;
    *kept = 0;
    *dropped = 0;
    int rc = mdb_get(txn, s->dbi_quota, &k, &v);
    if (rc == MDB_NOTFOUND) {
        return 0;
    }
    if (rc != 0) {
        return rc;
    }
    if (v.mv_size != QUOTA_VAL_LEN) {
        atomic_fetch_add(&s->st_damaged, 1);
        return 0; /* rebuilt as zero: a quota that lags, never a lost record */
    }
    *kept = be64_load(v.mv_data);
    *dropped = be64_load((const uint8_t *)v.mv_data + 8);
    return 0;
}

static int
quota_write(struct store *s, MDB_txn *txn, const uint8_t *key, size_t klen, uint64_t kept,
            uint64_t dropped)
{
    uint8_t val[QUOTA_VAL_LEN];
    be64_store(val, kept);
    be64_store(val + 8, dropped);
    MDB_val k = {.mv_size = klen, .mv_data = (void *)key};
    MDB_val v = {.mv_size = sizeof(val), .mv_data = val};
    return mdb_put(txn, s->dbi_quota, &k, &v, 0);
}

/* Uncount one record of name in scope: kept - 1, and dropped + 1 if a quota took it. */
static int
quota_uncount(struct store *s, MDB_txn *txn, enum store_quota_scope scope, const char *name,
              bool dropped_by_quota)
{
    uint8_t key[QUOTA_KEY_MAX];
    size_t klen = quota_key(scope, name, key);
    uint64_t kept, dropped;
    int rc = quota_read(s, txn, key, klen, &kept, &dropped);
    if (rc != 0 || (kept == 0 && !dropped_by_quota)) {
        return rc;
    }
    return quota_write(s, txn, key, klen, kept > 0 ? kept - 1 : 0,
                       dropped + (dropped_by_quota ? 1 : 0));
}

/* Delete the index entry of (name, t, seq) in scope and uncount it if it was there. */
static int
unindex_one(struct store *s, MDB_txn *txn, enum store_quota_scope scope, const char *name,
            int64_t t, uint64_t seq, bool dropped_by_quota)
{
    uint8_t ik[STORE_KEY_INDEX_MAX];
    MDB_val k = {.mv_size = store_rec_index_key(name, t, seq, ik), .mv_data = ik};
    int rc = mdb_del(txn, scope_dbi(s, scope), &k, NULL);
    if (rc == MDB_NOTFOUND) {
        return 0;
    }
    return rc != 0 ? rc : quota_uncount(s, txn, scope, name, dropped_by_quota);
}

int
store_audit_unindex(struct store *s, MDB_txn *txn, const MDB_val *v, int64_t t, uint64_t seq,
                    bool dropped_by_quota)
{
    struct store_audit_rec r;
    struct store_rec_scratch sc;
    if (store_rec_audit_decode(v->mv_data, v->mv_size, &r, &sc) != 0) {
        atomic_fetch_add(&s->st_damaged, 1);
        return 0; /* its index entries, if any, are orphans that queries skip */
    }
    int rc = unindex_one(s, txn, STORE_QUOTA_LOCK, r.lock, t, seq, dropped_by_quota);
    if (rc != 0) {
        return rc;
    }
    char who[STORE_WHO_MAX + 1];
    store_audit_who(r.principal, r.client, who);
    rc = store_audit_run_forget(s, txn, &r, who, t, seq);
    if (rc != 0 || !s->has_who) {
        return rc;
    }
    return unindex_one(s, txn, STORE_QUOTA_WHO, who, t, seq, dropped_by_quota);
}

/*
 * Delete the second-oldest record of name in scope unless it was written by
 * this transaction.  *done: whether one was deleted.  Returns 0 or an MDB_*
 * code.
 */
static int
evict_one(struct store *s, MDB_txn *txn, enum store_quota_scope scope, const char *name, bool *done)
{
    *done = false;
    size_t nl = name == NULL ? 0 : store_rec_trunc_len(name, STORE_LOCK_MAX);
    uint8_t ik[STORE_KEY_INDEX_MAX];
    MDB_val k = {.mv_size = store_rec_index_key(name, 0, 0, ik), .mv_data = ik};
    MDB_val v;
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, scope_dbi(s, scope), &cur);
    if (rc != 0) {
        return rc;
    }
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); /* the oldest: the first occurrence */
    if (rc == 0) {
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT); /* the victim */
    }
    size_t kl;
    int64_t t;
    uint64_t seq;
    const uint8_t *p = k.mv_data;
    if (rc != 0 || k.mv_size < 1 + nl || p[0] != nl || (nl > 0 && memcmp(p + 1, name, nl) != 0) ||
        store_rec_index_key_decode(p, k.mv_size, &kl, &t, &seq) != 0 ||
        store_audit_txn_wrote(s, seq)) {
        mdb_cursor_close(cur);
        return rc == MDB_NOTFOUND ? 0 : rc; /* fewer than two, or only this txn's records */
    }
    mdb_cursor_close(cur);
    uint8_t ak[STORE_KEY_AUDIT_LEN];
    store_rec_audit_key(t, seq, ak);
    MDB_val pk = {.mv_size = sizeof(ak), .mv_data = ak};
    MDB_val pv;
    rc = mdb_get(txn, s->dbi_audit, &pk, &pv);
    if (rc == MDB_NOTFOUND) {
        /* an orphan index entry (its record was damaged and pruned) */
        rc = unindex_one(s, txn, scope, name, t, seq, false);
        *done = rc == 0;
        return rc;
    }
    if (rc == 0) {
        rc = store_audit_unindex(s, txn, &pv, t, seq, true);
    }
    if (rc == 0) {
        rc = mdb_del(txn, s->dbi_audit, &pk, NULL);
    }
    if (rc != 0) {
        return rc;
    }
    *done = true;
    return 0;
}

int
store_audit_quota_add(struct store *s, MDB_txn *txn, enum store_quota_scope scope, const char *name,
                      uint64_t *evicted)
{
    *evicted = 0;
    uint8_t key[QUOTA_KEY_MAX];
    size_t klen = quota_key(scope, name, key);
    uint64_t kept, dropped;
    int rc = quota_read(s, txn, key, klen, &kept, &dropped);
    if (rc == 0) {
        rc = quota_write(s, txn, key, klen, kept + 1, dropped);
    }
    uint64_t max = scope_max(s, scope, name);
    uint64_t now = kept + 1;
    for (int i = 0; rc == 0 && max > 0 && now > max && i < QUOTA_EVICT_AT; i++) {
        bool done = false;
        rc = evict_one(s, txn, scope, name, &done);
        if (rc != 0 || !done) {
            break;
        }
        (*evicted)++;
        rc = quota_read(s, txn, key, klen, &now, &dropped); /* the eviction uncounted it */
    }
    return rc;
}

/* Count the entries of index dbi, per name, into the scope's counters. */
static int
count_index(struct store *s, MDB_txn *txn, enum store_quota_scope scope)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, scope_dbi(s, scope), &cur);
    if (rc != 0) {
        return rc;
    }
    char name[STORE_LOCK_MAX + 1] = "";
    uint64_t kept = 0;
    bool any = false;
    MDB_val k;
    MDB_val v;
    uint8_t key[QUOTA_KEY_MAX];
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        size_t nl;
        int64_t t;
        uint64_t seq;
        if (store_rec_index_key_decode(k.mv_data, k.mv_size, &nl, &t, &seq) != 0) {
            continue;
        }
        const char *kn = (const char *)k.mv_data + 1;
        if (any && (strlen(name) != nl || memcmp(name, kn, nl) != 0)) {
            int w = quota_write(s, txn, key, quota_key(scope, name, key), kept, 0);
            if (w != 0) {
                rc = w;
                break;
            }
            kept = 0;
        }
        memcpy(name, kn, nl);
        name[nl] = '\0';
        kept++;
        any = true;
    }
    mdb_cursor_close(cur);
    if (rc != MDB_NOTFOUND) {
        return rc;
    }
    return any ? quota_write(s, txn, key, quota_key(scope, name, key), kept, 0) : 0;
}

int
store_audit_quota_rebuild(struct store *s, MDB_txn *txn)
{
    return count_index(s, txn, STORE_QUOTA_LOCK);
}

/*
 * store_audit_walk's callback, from store_audit_who_rebuild: index one record
 * by its principal or origin.
 */
static int
on_who_rec(struct store *s, MDB_txn *txn, int64_t t, uint64_t seq, const struct store_audit_rec *r)
{
    char who[STORE_WHO_MAX + 1];
    store_audit_who(r->principal, r->client, who);
    uint8_t ik[STORE_KEY_INDEX_MAX];
    MDB_val ikv = {.mv_size = store_rec_index_key(who, t, seq, ik), .mv_data = ik};
    MDB_val empty = {.mv_size = 0, .mv_data = NULL};
    return mdb_put(txn, s->dbi_who, &ikv, &empty, 0);
}

int
store_audit_who_rebuild(struct store *s, MDB_txn *txn, bool index)
{
    if (index) {
        int rc = store_audit_walk(s, txn, on_who_rec);
        if (rc != 0) {
            return rc;
        }
    }
    return count_index(s, txn, STORE_QUOTA_WHO);
}

/* The counters of name in scope, in a read transaction. */
static int
stats(struct store *s, enum store_quota_scope scope, const char *name, uint64_t *kept,
      uint64_t *dropped)
{
    if (name == NULL || strnlen(name, STORE_LOCK_MAX + 1) > STORE_LOCK_MAX) {
        return ERR_INVAL;
    }
    *kept = 0;
    *dropped = 0;
    if (!s->has_quota || (scope == STORE_QUOTA_WHO && !s->has_who)) {
        return 0;
    }
    MDB_txn *txn;
    int err = store_txn_read_begin(s, &txn);
    if (err != 0) {
        return err;
    }
    uint8_t key[QUOTA_KEY_MAX];
    int rc = quota_read(s, txn, key, quota_key(scope, name, key), kept, dropped);
    store_txn_read_end(s, txn);
    return rc == 0 ? 0 : store_err_mdb(rc, "mdb_get(audit_quota)");
}

int
store_audit_lock_stats(struct store *s, const char *lock, uint64_t *kept, uint64_t *dropped)
{
    return stats(s, STORE_QUOTA_LOCK, lock, kept, dropped);
}

int
store_audit_who_stats(struct store *s, const char *who, uint64_t *kept, uint64_t *dropped)
{
    return stats(s, STORE_QUOTA_WHO, who, kept, dropped);
}
