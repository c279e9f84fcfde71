/*
 * store/upload.c: the upload table: which epoch created each multipart
 * upload of a lock, so that uploads of older epochs can be refused and
 * aborted once the lock's highest advances.
 */
#define LOG_MODULE "store"
#include "store/store.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/lockname.h"
#include "common/log.h"
#include "store/store_int.h"

int
store_upload_apply(struct store *s, MDB_txn *txn, const struct store_op *op)
{
    if (!s->has_upload) {
        return ERR_CLOSED;
    }
    size_t klen = (size_t)op->value;
    MDB_val k = {.mv_size = klen, .mv_data = (void *)op->rec};
    if (op->type == STORE_OP_UPLOAD_DEL) {
        int rc = mdb_del(txn, s->dbi_upload, &k, NULL);
        return rc == MDB_NOTFOUND ? 0 : rc;
    }
    MDB_val v = {.mv_size = op->rec_len - klen, .mv_data = (void *)(op->rec + klen)};
    return mdb_put(txn, s->dbi_upload, &k, &v, 0);
}

/* Queue a put (value != NULL) or a delete of key. */
static int
submit(struct store *s, const char *lock, const uint8_t *key, size_t klen, const uint8_t *val,
       size_t vlen, store_upload_done_fn *cb, void *arg)
{
    if (s->read_only) {
        return ERR_CLOSED;
    }
    struct store_op *op = calloc(1, sizeof(*op) + klen + vlen);
    if (op == NULL) {
        return ERR_NOMEM;
    }
    op->type = val != NULL ? STORE_OP_UPLOAD_PUT : STORE_OP_UPLOAD_DEL;
    memcpy(op->lock, lock, strlen(lock) + 1);
    memcpy(op->rec, key, klen);
    if (vlen > 0) {
        memcpy(op->rec + klen, val, vlen);
    }
    op->rec_len = klen + vlen;
    op->value = klen;
    op->upload_cb = cb;
    op->arg = arg;
    int err = store_worker_submit(s, op);
    if (err != 0) {
        free(op);
    }
    return err;
}

int
store_upload_put(struct store *s, const char *lock, const char *upload_id, uint64_t epoch,
                 const char *bucket, const char *key, store_upload_done_fn *cb, void *arg)
{
    uint8_t k[STORE_KEY_UPLOAD_MAX];
    size_t klen = lock_name_valid(lock) ? store_rec_upload_key(lock, upload_id, k) : 0;
    if (klen == 0 || epoch == 0) {
        return ERR_INVAL;
    }
    struct store_upload u = {.epoch = epoch, .created_ms = clock_wall_ms()};
    size_t n = bucket == NULL ? 0 : store_rec_trunc_len(bucket, STORE_BUCKET_MAX);
    memcpy(u.bucket, bucket != NULL ? bucket : "", n);
    u.bucket[n] = '\0';
    n = key == NULL ? 0 : store_rec_trunc_len(key, STORE_KEY_MAX);
    memcpy(u.key, key != NULL ? key : "", n);
    u.key[n] = '\0';
    uint8_t v[STORE_REC_UPLOAD_MAX];
    size_t vlen = 0;
    int err = store_rec_upload_encode(&u, v, sizeof(v), &vlen);
    if (err != 0) {
        return err;
    }
    return submit(s, lock, k, klen, v, vlen, cb, arg);
}

int
store_upload_del(struct store *s, const char *lock, const char *upload_id, store_upload_done_fn *cb,
                 void *arg)
{
    uint8_t k[STORE_KEY_UPLOAD_MAX];
    size_t klen = lock_name_valid(lock) ? store_rec_upload_key(lock, upload_id, k) : 0;
    if (klen == 0) {
        return ERR_INVAL;
    }
    return submit(s, lock, k, klen, NULL, 0, cb, arg);
}

int
store_upload_get(struct store *s, const char *lock, const char *upload_id, struct store_upload *out)
{
    uint8_t kb[STORE_KEY_UPLOAD_MAX];
    size_t klen = lock_name_valid(lock) ? store_rec_upload_key(lock, upload_id, kb) : 0;
    if (klen == 0) {
        return ERR_INVAL;
    }
    if (!s->has_upload) {
        return ERR_NOTFOUND;
    }
    MDB_txn *txn;
    int rc = store_txn_read_begin(s, &txn);
    if (rc != 0) {
        return rc;
    }
    MDB_val k = {.mv_size = klen, .mv_data = kb};
    MDB_val v;
    rc = mdb_get(txn, s->dbi_upload, &k, &v);
    if (rc == 0 && store_rec_upload_decode(v.mv_data, v.mv_size, out) != 0) {
        atomic_fetch_add(&s->st_damaged, 1);
        log_error("%s: damaged upload record for lock '%s'", s->path, lock);
        rc = ERR_IO;
    } else if (rc == MDB_NOTFOUND) {
        rc = ERR_NOTFOUND;
    } else if (rc != 0) {
        rc = store_err_mdb(rc, "mdb_get(upload)");
    }
    store_txn_read_end(s, txn);
    return rc;
}

int
store_upload_list_older(struct store *s, const char *lock, uint64_t epoch, uint32_t limit,
                        store_upload_each_fn *fn, void *arg)
{
    if (!lock_name_valid(lock)) {
        return ERR_INVAL;
    }
    if (!s->has_upload) {
        return 0;
    }
    size_t ll = strlen(lock);
    uint8_t prefix[1 + STORE_LOCK_MAX];
    prefix[0] = (uint8_t)ll;
    memcpy(prefix + 1, lock, ll);
    MDB_txn *txn;
    int rc = store_txn_read_begin(s, &txn);
    if (rc != 0) {
        return rc;
    }
    MDB_cursor *cur = NULL;
    rc = mdb_cursor_open(txn, s->dbi_upload, &cur);
    if (rc != 0) {
        rc = store_err_mdb(rc, "mdb_cursor_open(upload)");
        goto out;
    }
    MDB_val k = {.mv_size = 1 + ll, .mv_data = prefix};
    MDB_val v;
    uint32_t seen = 0;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0 && seen < limit;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size <= 1 + ll || memcmp(k.mv_data, prefix, 1 + ll) != 0) {
            break; /* past this lock's entries */
        }
        struct store_upload u;
        if (store_rec_upload_decode(v.mv_data, v.mv_size, &u) != 0) {
            atomic_fetch_add(&s->st_damaged, 1);
            continue;
        }
        if (u.epoch >= epoch) {
            continue;
        }
        char id[STORE_UPLOAD_ID_MAX + 1];
        size_t idlen = k.mv_size - 1 - ll;
        if (idlen > STORE_UPLOAD_ID_MAX) {
            continue;
        }
        memcpy(id, (const uint8_t *)k.mv_data + 1 + ll, idlen);
        id[idlen] = '\0';
        seen++;
        int r = fn(arg, id, &u);
        if (r != 0) {
            rc = r < 0 ? r : 0;
            goto out;
        }
    }
    rc = rc == MDB_NOTFOUND || rc == 0 ? 0 : store_err_mdb(rc, "mdb_cursor_get(upload)");
out:
    if (cur != NULL) {
        mdb_cursor_close(cur);
    }
    store_txn_read_end(s, txn);
    return rc;
}
