/*
 * store/audit_quota.c: the per-lock quota of the audit log (DESIGN.md
 * "Audit retention under a flood").
 *
 * "audit_quota" maps 'q' + lock name to two big-endian u64s: the records of
 * that lock now kept, and those dropped by the quota.  When an append takes a
 * lock past opts.audit_max_per_lock, the lock's second-oldest record is
 * deleted: its oldest (the first occurrence) and its newest (the last) stay,
 * and the count says how many went.  A record committed by the running
 * transaction is never the one deleted, so every record is committed, and
 * its refusal answered, before a later transaction may drop it (G7).
 * Records of other locks are untouched: one lock's flood can only push out
 * its own middle records.
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

/* The quota key of lock (cut like the index key) into out; returns its length. */
static size_t
quota_key(const char *lock, uint8_t out[QUOTA_KEY_MAX])
{
    size_t n = lock == NULL ? 0 : store_rec_trunc_len(lock, STORE_LOCK_MAX);
    out[0] = 'q';
    if (n > 0) {
        memcpy(out + 1, lock, n);
    }
    return 1 + n;
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

/*
 * Delete lock's second-oldest record unless it was written by this
 * transaction.  *done: whether one was deleted.  Returns 0 or an MDB_* code.
 */
static int
evict_one(struct store *s, MDB_txn *txn, const char *lock, bool *done)
{
    *done = false;
    size_t ll = lock == NULL ? 0 : store_rec_trunc_len(lock, STORE_LOCK_MAX);
    uint8_t ik[STORE_KEY_INDEX_MAX];
    MDB_val k = {.mv_size = store_rec_index_key(lock, 0, 0, ik), .mv_data = ik};
    MDB_val v;
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, s->dbi_index, &cur);
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
    if (rc != 0 || k.mv_size < 1 + ll || p[0] != ll || (ll > 0 && memcmp(p + 1, lock, ll) != 0) ||
        store_rec_index_key_decode(p, k.mv_size, &kl, &t, &seq) != 0 || seq >= s->audit_txn_seq0) {
        mdb_cursor_close(cur);
        return rc == MDB_NOTFOUND ? 0 : rc; /* fewer than two, or only this txn's records */
    }
    rc = mdb_cursor_del(cur, 0);
    mdb_cursor_close(cur);
    if (rc != 0) {
        return rc;
    }
    uint8_t ak[STORE_KEY_AUDIT_LEN];
    store_rec_audit_key(t, seq, ak);
    MDB_val pk = {.mv_size = sizeof(ak), .mv_data = ak};
    rc = mdb_del(txn, s->dbi_audit, &pk, NULL);
    if (rc != 0 && rc != MDB_NOTFOUND) {
        return rc;
    }
    *done = true;
    return 0;
}

int
store_audit_quota_add(struct store *s, MDB_txn *txn, const char *lock, uint64_t *evicted)
{
    *evicted = 0;
    uint8_t key[QUOTA_KEY_MAX];
    size_t klen = quota_key(lock, key);
    uint64_t kept, dropped;
    int rc = quota_read(s, txn, key, klen, &kept, &dropped);
    if (rc != 0) {
        return rc;
    }
    kept++;
    uint64_t max = s->opts.audit_max_per_lock;
    for (int i = 0; max > 0 && kept > max && i < QUOTA_EVICT_AT; i++) {
        bool done = false;
        rc = evict_one(s, txn, lock, &done);
        if (rc != 0) {
            return rc;
        }
        if (!done) {
            break;
        }
        kept--;
        dropped++;
        (*evicted)++;
    }
    return quota_write(s, txn, key, klen, kept, dropped);
}

int
store_audit_quota_forget(struct store *s, MDB_txn *txn, const char *lock)
{
    uint8_t key[QUOTA_KEY_MAX];
    size_t klen = quota_key(lock, key);
    uint64_t kept, dropped;
    int rc = quota_read(s, txn, key, klen, &kept, &dropped);
    if (rc != 0 || kept == 0) {
        return rc;
    }
    return quota_write(s, txn, key, klen, kept - 1, dropped);
}

int
store_audit_quota_rebuild(struct store *s, MDB_txn *txn)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, s->dbi_index, &cur);
    if (rc != 0) {
        return rc;
    }
    char lock[STORE_LOCK_MAX + 1] = "";
    uint64_t kept = 0;
    bool any = false;
    MDB_val k;
    MDB_val v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        size_t ll;
        int64_t t;
        uint64_t seq;
        if (store_rec_index_key_decode(k.mv_data, k.mv_size, &ll, &t, &seq) != 0) {
            continue;
        }
        const char *name = (const char *)k.mv_data + 1;
        if (any && (strlen(lock) != ll || memcmp(lock, name, ll) != 0)) {
            uint8_t key[QUOTA_KEY_MAX];
            int w = quota_write(s, txn, key, quota_key(lock, key), kept, 0);
            if (w != 0) {
                rc = w;
                break;
            }
            kept = 0;
        }
        memcpy(lock, name, ll);
        lock[ll] = '\0';
        kept++;
        any = true;
    }
    mdb_cursor_close(cur);
    if (rc != MDB_NOTFOUND) {
        return rc;
    }
    if (any) {
        uint8_t key[QUOTA_KEY_MAX];
        return quota_write(s, txn, key, quota_key(lock, key), kept, 0);
    }
    return 0;
}

int
store_audit_lock_stats(struct store *s, const char *lock, uint64_t *kept, uint64_t *dropped)
{
    if (lock == NULL || strnlen(lock, STORE_LOCK_MAX + 1) > STORE_LOCK_MAX) {
        return ERR_INVAL;
    }
    *kept = 0;
    *dropped = 0;
    if (!s->has_quota) {
        return 0;
    }
    MDB_txn *txn;
    int err = store_txn_read_begin(s, &txn);
    if (err != 0) {
        return err;
    }
    uint8_t key[QUOTA_KEY_MAX];
    int rc = quota_read(s, txn, key, quota_key(lock, key), kept, dropped);
    store_txn_read_end(s, txn);
    return rc == 0 ? 0 : store_err_mdb(rc, "mdb_get(audit_quota)");
}
