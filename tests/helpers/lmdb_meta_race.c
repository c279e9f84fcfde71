/*
 * lmdb_meta_race: a reproduction, with plain LMDB (no fencegate code), of the
 * race store_txn_read_begin guards against (store/store.c): a read
 * transaction that registers snapshot S, then is delayed across commit S + 1
 * and into S + 2's meta-page write, copies S + 2's roots (me_metas[S & 1])
 * before S + 2's commit returned; the next reader still gets S + 1: the value
 * read goes back.  Seen with LMDB 0.9.24 (Debian 12) on a loaded 2-core host.
 *
 *   lmdb_meta_race FILE [POOL [NOTLS [PER_WRITER]]]
 *
 * 4 writers raise one key under a mutex; 2 readers read it in a loop (POOL=1:
 * reset/renew transactions pooled across threads, as the store does; 0: begin
 * and abort) and check it never lowers.  Each violation prints the snapshot id
 * the value committed at that id, and the last commit that had returned when
 * the read ended (the value seen belongs to a later one).  Exit 1 if any.
 * It is probabilistic: run it several times at once to load the machine.
 * Not run by make unit (it fails by design, now and then).
 */
#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NWRITERS  4
#define NREADERS  2
#define POOL_MAX  16
#define MAX_TXNID (1 << 16)

static MDB_env *env;
static MDB_dbi dbi;
static pthread_mutex_t wmutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pmutex = PTHREAD_MUTEX_INITIALIZER;
static MDB_txn *pool[POOL_MAX];
static int npool;
static int use_pool = 1;
static char key_race[] = "race";
static int per_writer = 2000;
static _Atomic int stop;
static _Atomic long bad, reads;
static _Atomic uint64_t value_at[MAX_TXNID]; /* the value each txn committed */
static _Atomic size_t last_commit;           /* the last txn whose commit returned */

static void
check(int rc, const char *what)
{
    if (rc != 0) {
        (void)fprintf(stderr, "%s: %s\n", what, mdb_strerror(rc));
        exit(2);
    }
}

static MDB_txn *
read_begin(void)
{
    MDB_txn *t = NULL;
    if (use_pool) {
        (void)pthread_mutex_lock(&pmutex);
        if (npool > 0) {
            t = pool[--npool];
        }
        (void)pthread_mutex_unlock(&pmutex);
    }
    if (t != NULL) {
        check(mdb_txn_renew(t), "mdb_txn_renew");
    } else {
        check(mdb_txn_begin(env, NULL, MDB_RDONLY, &t), "mdb_txn_begin(read)");
    }
    return t;
}

static void
read_end(MDB_txn *t)
{
    if (use_pool) {
        mdb_txn_reset(t);
        (void)pthread_mutex_lock(&pmutex);
        if (npool < POOL_MAX) {
            pool[npool++] = t;
            t = NULL;
        }
        (void)pthread_mutex_unlock(&pmutex);
    }
    if (t != NULL) {
        mdb_txn_abort(t);
    }
}

static uint64_t
get(MDB_txn *t)
{
    MDB_val k = {.mv_size = 4, .mv_data = key_race};
    MDB_val v;
    int rc = mdb_get(t, dbi, &k, &v);
    if (rc == MDB_NOTFOUND) {
        return 0;
    }
    check(rc, "mdb_get");
    uint64_t x;
    memcpy(&x, v.mv_data, sizeof(x));
    return x;
}

static void *
writer(void *arg)
{
    uint64_t id = (uint64_t)(uintptr_t)arg;
    for (int i = 1; i <= per_writer; i++) {
        uint64_t t = (uint64_t)i * NWRITERS + id;
        (void)pthread_mutex_lock(&wmutex);
        MDB_txn *w;
        check(mdb_txn_begin(env, NULL, 0, &w), "mdb_txn_begin(write)");
        if (get(w) < t) {
            char buf[200];
            memset(buf, 'x', sizeof(buf));
            memcpy(buf, &t, sizeof(t));
            MDB_val k = {.mv_size = 4, .mv_data = key_race};
            MDB_val v = {.mv_size = sizeof(buf), .mv_data = buf};
            check(mdb_put(w, dbi, &k, &v, 0), "mdb_put");
            size_t txnid = mdb_txn_id(w);
            check(mdb_txn_commit(w), "mdb_txn_commit");
            if (txnid < MAX_TXNID) {
                atomic_store(&value_at[txnid], t);
            }
            atomic_store(&last_commit, txnid);
        } else {
            mdb_txn_abort(w);
        }
        (void)pthread_mutex_unlock(&wmutex);
    }
    return NULL;
}

static uint64_t
committed(size_t txnid)
{
    return txnid < MAX_TXNID ? atomic_load(&value_at[txnid]) : 0;
}

static void *
reader(void *arg)
{
    (void)arg;
    uint64_t last = 0;
    size_t last_id = 0, last_done = 0;
    while (!atomic_load(&stop)) {
        MDB_txn *t = read_begin();
        size_t id = mdb_txn_id(t);
        uint64_t x = get(t);
        read_end(t);
        size_t done = atomic_load(&last_commit);
        atomic_fetch_add(&reads, 1);
        if (x < last) {
            atomic_fetch_add(&bad, 1);
            (void)fprintf(stderr,
                          "went back: %llu (snapshot %zu) after %llu (snapshot %zu, which "
                          "committed %llu; commits returned then: up to %zu)\n",
                          (unsigned long long)x, id, (unsigned long long)last, last_id,
                          (unsigned long long)committed(last_id), last_done);
        }
        last = x;
        last_id = id;
        last_done = done;
    }
    return NULL;
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        (void)fprintf(stderr, "usage: lmdb_meta_race FILE [POOL [NOTLS [PER_WRITER]]]\n");
        return 2;
    }
    const char *path = argv[1];
    use_pool = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 1;
    int notls = argc > 3 ? (int)strtol(argv[3], NULL, 10) : 1;
    per_writer = argc > 4 ? (int)strtol(argv[4], NULL, 10) : 2000;
    char lockpath[4096];
    (void)snprintf(lockpath, sizeof(lockpath), "%s-lock", path);
    (void)unlink(path);
    (void)unlink(lockpath);
    check(mdb_env_create(&env), "mdb_env_create");
    (void)mdb_env_set_maxdbs(env, 8);
    (void)mdb_env_set_maxreaders(env, 256);
    (void)mdb_env_set_mapsize(env, (size_t)64 << 20);
    check(mdb_env_open(env, path, MDB_NOSUBDIR | (notls ? MDB_NOTLS : 0), 0600), "mdb_env_open");
    MDB_txn *w;
    check(mdb_txn_begin(env, NULL, 0, &w), "mdb_txn_begin");
    check(mdb_dbi_open(w, "fence", MDB_CREATE, &dbi), "mdb_dbi_open");
    check(mdb_txn_commit(w), "mdb_txn_commit");
    pthread_t th[NWRITERS + NREADERS];
    for (int i = 0; i < NWRITERS + NREADERS; i++) {
        void *(*fn)(void *) = i < NWRITERS ? writer : reader;
        if (pthread_create(&th[i], NULL, fn, (void *)(uintptr_t)i) != 0) {
            return 2;
        }
    }
    for (int i = 0; i < NWRITERS; i++) {
        (void)pthread_join(th[i], NULL);
    }
    atomic_store(&stop, 1);
    for (int i = NWRITERS; i < NWRITERS + NREADERS; i++) {
        (void)pthread_join(th[i], NULL);
    }
    printf("pool=%d notls=%d reads=%ld went-back=%ld\n", use_pool, notls, atomic_load(&reads),
           atomic_load(&bad));
    mdb_env_close(env);
    (void)unlink(path);
    (void)unlink(lockpath);
    return atomic_load(&bad) != 0 ? 1 : 0;
}
