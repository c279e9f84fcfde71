/*
 * store/audit_run.c: coalescing of identical refusals, and the request-id
 * index (DESIGN.md "Audit retention under a flood").
 *
 * Two tables, both written in the transaction that writes the record and
 * cleaned in the one that deletes it (store_audit_run_forget, called for
 * every deleted record by store_audit_unindex):
 *   "audit_run"    a 64-bit hash of a record's identity (who, lock, token,
 *                  bucket, key, method, operation, kind) -> the audit key (time, seq)
 *                  of the newest record with that identity (the method too:
 *                  a request no S3 operation names, refused as such, is told
 *                  apart by it).  A hash, not the
 *                  identity (which can pass LMDB's 511-byte key limit): every
 *                  use decodes the record and compares the identity itself,
 *                  so a collision costs a missed coalescing, never a wrong one.
 *   "audit_reqid"  a record's request id -> its audit key.  A repeat has no
 *                  entry of its own: its id is "<run record's id>.<n>", found
 *                  through its run's record and count.
 * An append identical to a run whose last occurrence is at most
 * opts.audit_coalesce_ms old adds no record: the run record's count and
 * last_ms are rewritten in the same transaction, so the repeat is as
 * durable as a record of its own when its completion runs (G7), and it
 * never counts against a quota (it adds nothing to bound).
 *
 * store_audit_walk, the walk over every record that rebuilds an index a
 * store had no table for, is here too: the request-id index's rebuild and
 * audit_quota.c's "audit_who" rebuild use it.
 */
#define LOG_MODULE "store"
#include "store/store.h"

#include <string.h>

#include "common/log.h"
#include "common/num.h"
#include "store/store_int.h"

#define RUN_KEY_LEN 8

/* FNV-1a over one length-prefixed string. */
static uint64_t
fnv_str(uint64_t h, const char *s)
{
    size_t n = s == NULL ? 0 : strlen(s);
    for (size_t i = 0; i < sizeof(n); i++) {
        h = (h ^ (uint8_t)(n >> (8 * i))) * UINT64_C(0x100000001b3);
    }
    for (size_t i = 0; i < n; i++) {
        h = (h ^ (uint8_t)s[i]) * UINT64_C(0x100000001b3);
    }
    return h;
}

/* The run key of r (who: store_audit_who's form of r's principal and client). */
static void
run_key(const struct store_audit_rec *r, const char *who, uint8_t out[RUN_KEY_LEN])
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    h = fnv_str(h, who);
    h = fnv_str(h, r->lock);
    h = fnv_str(h, r->bucket);
    h = fnv_str(h, r->key);
    h = fnv_str(h, r->method);
    h = fnv_str(h, r->operation);
    for (int i = 0; i < 8; i++) {
        h = (h ^ (uint8_t)(r->token >> (8 * i))) * UINT64_C(0x100000001b3);
    }
    h = (h ^ (uint8_t)r->kind) * UINT64_C(0x100000001b3);
    for (int i = 0; i < RUN_KEY_LEN; i++) {
        out[i] = (uint8_t)(h >> (8 * i));
    }
}

/* Whether a and b (each with its who) are the same refusal, repeated. */
static bool
same_identity(const struct store_audit_rec *a, const char *awho, const struct store_audit_rec *b,
              const char *bwho)
{
    return a->kind == b->kind && a->token == b->token && strcmp(awho, bwho) == 0 &&
           strcmp(a->lock, b->lock) == 0 && strcmp(a->bucket, b->bucket) == 0 &&
           strcmp(a->key, b->key) == 0 && strcmp(a->method, b->method) == 0 &&
           strcmp(a->operation, b->operation) == 0;
}

/* Put key -> the audit key of (t, seq) into dbi. */
static int
put_ref(MDB_txn *txn, MDB_dbi dbi, const void *key, size_t klen, int64_t t, uint64_t seq)
{
    uint8_t ak[STORE_KEY_AUDIT_LEN];
    store_rec_audit_key(t, seq, ak);
    MDB_val k = {.mv_size = klen, .mv_data = (void *)key};
    MDB_val v = {.mv_size = sizeof(ak), .mv_data = ak};
    return mdb_put(txn, dbi, &k, &v, 0);
}

/* Delete key from dbi if it refers to (t, seq) (a newer record may own it now). */
static int
del_ref(MDB_txn *txn, MDB_dbi dbi, const void *key, size_t klen, int64_t t, uint64_t seq)
{
    uint8_t ak[STORE_KEY_AUDIT_LEN];
    store_rec_audit_key(t, seq, ak);
    MDB_val k = {.mv_size = klen, .mv_data = (void *)key};
    MDB_val v;
    int rc = mdb_get(txn, dbi, &k, &v);
    if (rc == MDB_NOTFOUND) {
        return 0;
    }
    if (rc != 0) {
        return rc;
    }
    if (v.mv_size != sizeof(ak) || memcmp(v.mv_data, ak, sizeof(ak)) != 0) {
        return 0;
    }
    return mdb_del(txn, dbi, &k, NULL);
}

int
store_audit_run_join(struct store *s, MDB_txn *txn, const struct store_audit_rec *r,
                     const char *who, int64_t now_ms, struct store_op *op, bool *joined)
{
    *joined = false;
    if (s->opts.audit_coalesce_ms == 0 || !s->has_run || r->request_id[0] == '\0') {
        return 0;
    }
    uint8_t rk[RUN_KEY_LEN];
    run_key(r, who, rk);
    MDB_val k = {.mv_size = sizeof(rk), .mv_data = rk};
    MDB_val v;
    int rc = mdb_get(txn, s->dbi_run, &k, &v);
    if (rc == MDB_NOTFOUND) {
        return 0;
    }
    int64_t t;
    uint64_t seq;
    if (rc != 0 || store_rec_audit_key_decode(v.mv_data, v.mv_size, &t, &seq) != 0) {
        return rc; /* a damaged entry: start a new run, which overwrites it */
    }
    uint8_t ak[STORE_KEY_AUDIT_LEN];
    store_rec_audit_key(t, seq, ak);
    MDB_val pk = {.mv_size = sizeof(ak), .mv_data = ak};
    MDB_val pv;
    rc = mdb_get(txn, s->dbi_audit, &pk, &pv);
    if (rc != 0) {
        return rc == MDB_NOTFOUND ? 0 : rc;
    }
    struct store_audit_rec run;
    struct store_rec_scratch sc;
    if (store_rec_audit_decode(pv.mv_data, pv.mv_size, &run, &sc) != 0) {
        return 0;
    }
    char run_who[STORE_WHO_MAX + 1];
    store_audit_who(run.principal, run.client, run_who);
    if (!same_identity(r, who, &run, run_who) || run.request_id[0] == '\0' ||
        run.count == UINT64_MAX) {
        return 0; /* a hash collision, or nothing to derive the repeat's id from */
    }
    if (now_ms > run.last_ms && (uint64_t)(now_ms - run.last_ms) > s->opts.audit_coalesce_ms) {
        return 0; /* the window closed: this starts a new run */
    }
    run.count++;
    if (now_ms > run.last_ms) {
        run.last_ms = now_ms;
    }
    uint8_t buf[STORE_REC_AUDIT_MAX];
    size_t len = 0;
    rc = store_rec_audit_encode(&run, buf, sizeof(buf), &len);
    if (rc != 0) {
        return rc;
    }
    MDB_val nv = {.mv_size = len, .mv_data = buf};
    rc = mdb_put(txn, s->dbi_audit, &pk, &nv, 0);
    if (rc != 0) {
        return rc;
    }
    if (!store_audit_txn_wrote(s, seq) && s->audit_txn_njoined < STORE_BATCH_MAX) {
        s->audit_txn_joined[s->audit_txn_njoined++] = seq;
    }
    op->result = seq;
    op->value = run.count;
    size_t n = strlen(run.request_id);
    memcpy(op->request_id, run.request_id, n + 1);
    *joined = true;
    return 0;
}

int
store_audit_run_note(struct store *s, MDB_txn *txn, const struct store_audit_rec *r,
                     const char *who, int64_t t, uint64_t seq)
{
    int rc = 0;
    if (s->opts.audit_coalesce_ms > 0 && s->has_run) {
        uint8_t rk[RUN_KEY_LEN];
        run_key(r, who, rk);
        rc = put_ref(txn, s->dbi_run, rk, sizeof(rk), t, seq);
    }
    if (rc == 0 && s->has_reqid && r->request_id[0] != '\0') {
        rc = put_ref(txn, s->dbi_reqid, r->request_id, strlen(r->request_id), t, seq);
    }
    return rc;
}

int
store_audit_run_forget(struct store *s, MDB_txn *txn, const struct store_audit_rec *r,
                       const char *who, int64_t t, uint64_t seq)
{
    int rc = 0;
    if (s->has_run) {
        uint8_t rk[RUN_KEY_LEN];
        run_key(r, who, rk);
        rc = del_ref(txn, s->dbi_run, rk, sizeof(rk), t, seq);
    }
    if (rc == 0 && s->has_reqid && r->request_id[0] != '\0') {
        rc = del_ref(txn, s->dbi_reqid, r->request_id, strlen(r->request_id), t, seq);
    }
    return rc;
}

/*
 * store_audit_walk's callback, from store_audit_reqid_rebuild: index one
 * record by its request id (a record without one has no entry).
 */
static int
on_reqid_rec(struct store *s, MDB_txn *txn, int64_t t, uint64_t seq,
             const struct store_audit_rec *r)
{
    if (r->request_id[0] == '\0') {
        return 0;
    }
    return put_ref(txn, s->dbi_reqid, r->request_id, strlen(r->request_id), t, seq);
}

int
store_audit_reqid_rebuild(struct store *s, MDB_txn *txn)
{
    return store_audit_walk(s, txn, on_reqid_rec);
}

int
store_audit_walk(struct store *s, MDB_txn *txn, store_audit_rec_fn *fn)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, s->dbi_audit, &cur);
    if (rc != 0) {
        return rc;
    }
    MDB_val k;
    MDB_val v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        int64_t t;
        uint64_t seq;
        struct store_audit_rec r;
        struct store_rec_scratch sc;
        if (store_rec_audit_key_decode(k.mv_data, k.mv_size, &t, &seq) != 0 ||
            store_rec_audit_decode(v.mv_data, v.mv_size, &r, &sc) != 0) {
            continue;
        }
        rc = fn(s, txn, t, seq, &r);
        if (rc != 0) {
            break;
        }
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

bool
store_audit_reqid_split(const char *id, size_t len, size_t *base_len, uint64_t *n)
{
    size_t dot = len;
    while (dot > 0 && id[dot - 1] != '.') {
        dot--;
    }
    if (dot < 2 || dot == len || id[dot] == '0') {
        return false; /* no dot, empty BASE, empty n, or a leading zero */
    }
    uint64_t v;
    if (parse_u64n(id + dot, len - dot, 2, UINT64_MAX, &v) != 0) {
        return false;
    }
    *base_len = dot - 1;
    *n = v;
    return true;
}

/* A record with request id id (len bytes): through the index, or a scan of
 * the log when the store has no index (an older store opened read-only). */
static int
find_plain(struct store *s, MDB_txn *txn, const char *id, size_t len, MDB_val *key, MDB_val *val)
{
    if (s->has_reqid) {
        MDB_val k = {.mv_size = len, .mv_data = (void *)id};
        MDB_val v;
        int rc = mdb_get(txn, s->dbi_reqid, &k, &v);
        if (rc != 0) {
            return rc;
        }
        if (v.mv_size != STORE_KEY_AUDIT_LEN) {
            atomic_fetch_add(&s->st_damaged, 1);
            return MDB_NOTFOUND;
        }
        *key = v;
        return mdb_get(txn, s->dbi_audit, key, val);
    }
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, s->dbi_audit, &cur);
    if (rc != 0) {
        return rc;
    }
    for (rc = mdb_cursor_get(cur, key, val, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, key, val, MDB_NEXT)) {
        struct store_audit_rec r;
        struct store_rec_scratch sc;
        if (store_rec_audit_decode(val->mv_data, val->mv_size, &r, &sc) == 0 &&
            strlen(r.request_id) == len && memcmp(r.request_id, id, len) == 0) {
            break;
        }
    }
    mdb_cursor_close(cur);
    return rc;
}

int
store_audit_find(struct store *s, const char *request_id, store_audit_each_fn *fn, void *arg,
                 uint64_t *occurrence)
{
    size_t len = request_id == NULL ? 0 : strnlen(request_id, STORE_REQID_MAX + 22);
    if (len == 0 || len > STORE_REQID_MAX + 21 || fn == NULL) {
        return ERR_INVAL;
    }
    MDB_txn *txn;
    int err = store_txn_read_begin(s, &txn);
    if (err != 0) {
        return err;
    }
    MDB_val k;
    MDB_val v;
    uint64_t n = 1;
    int rc = len <= STORE_REQID_MAX ? find_plain(s, txn, request_id, len, &k, &v) : MDB_NOTFOUND;
    size_t base_len = 0;
    if (rc == MDB_NOTFOUND && store_audit_reqid_split(request_id, len, &base_len, &n) &&
        base_len <= STORE_REQID_MAX) {
        rc = find_plain(s, txn, request_id, base_len, &k, &v);
    }
    struct store_audit_rec r;
    struct store_rec_scratch sc;
    int64_t t = 0;
    uint64_t seq = 0;
    if (rc == 0 && (store_rec_audit_key_decode(k.mv_data, k.mv_size, &t, &seq) != 0 ||
                    store_rec_audit_decode(v.mv_data, v.mv_size, &r, &sc) != 0)) {
        atomic_fetch_add(&s->st_damaged, 1);
        rc = MDB_NOTFOUND;
    }
    if (rc == 0 && n > r.count) {
        rc = MDB_NOTFOUND; /* BASE.n past its run's count: no such occurrence */
    }
    if (rc == 0) {
        r.time_ms = t;
        r.seq = seq;
        if (occurrence != NULL) {
            *occurrence = n;
        }
        rc = fn(arg, &r);
    }
    store_txn_read_end(s, txn);
    if (rc == MDB_NOTFOUND) {
        return ERR_NOTFOUND;
    }
    if (rc != 0 && !store_is_err_code(rc)) {
        return store_err_mdb(rc, "audit find");
    }
    return rc > 0 ? 0 : rc;
}
