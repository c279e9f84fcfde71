/*
 * store_format: rewrite a data dir's store format-version record, as a future
 * fencegate would have left it, with plain LMDB (no fencegate code), so a test
 * can check that this build refuses it:  store_format DATA_DIR VERSION
 * Run only on a stopped gateway's data dir.
 */
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>

#include "common/num.h"

int
main(int argc, char **argv)
{
    uint64_t v;
    if (argc != 3 || parse_u64(argv[2], 1, UINT32_MAX, &v) != 0) {
        (void)fprintf(stderr, "usage: store_format DATA_DIR VERSION\n");
        return 2;
    }
    char path[4096];
    (void)snprintf(path, sizeof(path), "%s/fencegate.mdb", argv[1]);
    MDB_env *env = NULL;
    MDB_txn *txn = NULL;
    MDB_dbi dbi;
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    char name[] = "format";
    MDB_val k = {.mv_size = sizeof(name) - 1, .mv_data = name};
    MDB_val d = {.mv_size = sizeof(b), .mv_data = b};
    int rc = mdb_env_create(&env);
    if (rc == 0) {
        rc = mdb_env_set_maxdbs(env, 16);
    }
    if (rc == 0) {
        rc = mdb_env_open(env, path, MDB_NOSUBDIR, 0600);
    }
    if (rc == 0) {
        rc = mdb_txn_begin(env, NULL, 0, &txn);
    }
    if (rc == 0) {
        rc = mdb_dbi_open(txn, "meta", 0, &dbi);
    }
    if (rc == 0) {
        rc = mdb_put(txn, dbi, &k, &d, 0);
    }
    if (rc == 0) {
        rc = mdb_txn_commit(txn);
        txn = NULL;
    }
    if (txn != NULL) {
        mdb_txn_abort(txn);
    }
    mdb_env_close(env);
    if (rc != 0) {
        (void)fprintf(stderr, "store_format: %s: %s\n", path, mdb_strerror(rc));
        return 1;
    }
    return 0;
}
