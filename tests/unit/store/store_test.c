/* tests/unit/store/store_test.c: store/store.c: open/close, format version,
 * read-only access, map growth, stats, lock names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <lmdb.h>
#include <signal.h>
#include <sys/wait.h>

#include "testutil.h"

static void
test_open_close_reopen(void **state)
{
    (void)state;
    char *dir = tl_dir_new("store");
    char sub[512];
    (void)snprintf(sub, sizeof(sub), "%s/data", dir); /* created by store_open */
    struct store *s = tu_open(sub, false);
    assert_true(store_completion_fd(s) >= 0);
    assert_int_equal(store_fence_advance_sync(s, "orders", 5, "r1", "w", NULL), 0);
    store_close(s);
    s = tu_open(sub, false);
    struct store_fence f;
    bool durable = false;
    assert_int_equal(store_fence_get(s, "orders", &f, &durable), 0);
    assert_int_equal(f.token, 5);
    assert_true(durable);
    store_close(s);
    store_close(NULL);
    tl_dir_free(dir);
}

static void
test_bad_opts(void **state)
{
    (void)state;
    struct store_opts o;
    store_opts_init(&o);
    struct store *s = (struct store *)1;
    char err[256] = "";
    assert_int_equal(store_open(&o, &s, err, sizeof(err)), ERR_INVAL); /* no data_dir */
    assert_null(s);
    assert_true(strstr(err, "data_dir") != NULL);
    char *dir = tl_dir_new("store");
    o.data_dir = dir;
    o.map_initial = 1024;
    assert_int_equal(store_open(&o, &s, NULL, 0), ERR_INVAL);
    store_opts_init(&o);
    o.data_dir = dir;
    o.audit_flush_ms = 11;
    assert_int_equal(store_open(&o, &s, err, sizeof(err)), ERR_INVAL);
    store_opts_init(&o);
    o.data_dir = "/proc/nonexistent/dir";
    assert_int_equal(store_open(&o, &s, err, sizeof(err)), ERR_IO);
    tl_dir_free(dir);
}

static void
test_read_only_missing(void **state)
{
    (void)state;
    char *dir = tl_dir_new("store");
    struct store_opts o;
    store_opts_init(&o);
    o.data_dir = dir;
    o.read_only = true;
    struct store *s = NULL;
    char err[256] = "";
    assert_int_equal(store_open(&o, &s, err, sizeof(err)), ERR_NOTFOUND);
    assert_true(strstr(err, "no fencegate store") != NULL);
    tl_dir_free(dir);
}

/* Write format version v straight into the meta database. */
static void
set_format(const char *dir, uint32_t v)
{
    char path[512];
    (void)snprintf(path, sizeof(path), "%s/fencegate.mdb", dir);
    MDB_env *env;
    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_set_maxdbs(env, 8), 0);
    assert_int_equal(mdb_env_open(env, path, MDB_NOSUBDIR, 0600), 0);
    MDB_txn *txn;
    MDB_dbi dbi;
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
    assert_int_equal(mdb_dbi_open(txn, "meta", 0, &dbi), 0);
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    char name[] = "format";
    MDB_val k = {.mv_size = 6, .mv_data = name};
    MDB_val d = {.mv_size = 4, .mv_data = b};
    assert_int_equal(mdb_put(txn, dbi, &k, &d, 0), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
}

static void
test_format_version_refused(void **state)
{
    (void)state;
    char *dir = tl_dir_new("store");
    struct store *s = tu_open(dir, false);
    assert_int_equal(store_fence_advance_sync(s, "a", 3, NULL, NULL, NULL), 0);
    store_close(s);
    set_format(dir, STORE_FORMAT_VERSION + 1);
    struct store_opts o;
    store_opts_init(&o);
    o.data_dir = dir;
    char err[512] = "";
    s = NULL;
    log_threshold = LOG_NONE;
    assert_int_equal(store_open(&o, &s, err, sizeof(err)), ERR_VERSION);
    assert_null(s);
    assert_true(strstr(err, "format version 2") != NULL);
    assert_true(strstr(err, "refusing") != NULL);
    o.read_only = true;
    assert_int_equal(store_open(&o, &s, err, sizeof(err)), ERR_VERSION);
    set_format(dir, 0);
    assert_int_equal(store_open(&o, &s, err, sizeof(err)), ERR_INVAL);
    log_threshold = LOG_WARN;
    set_format(dir, STORE_FORMAT_VERSION); /* back to ours: data intact */
    s = tu_open(dir, true);
    struct store_fence f;
    assert_int_equal(store_fence_get(s, "a", &f, NULL), 0);
    assert_int_equal(f.token, 3);
    store_close(s);
    tl_dir_free(dir);
}

static void
test_read_only_beside_writer(void **state)
{
    (void)state;
    char *dir = tl_dir_new("store");
    struct store *w = tu_open(dir, false);
    assert_int_equal(store_fence_advance_sync(w, "orders", 1, NULL, NULL, NULL), 0);
    struct store *r = tu_open(dir, true);
    assert_int_equal(store_completion_fd(r), -1);
    struct store_fence f;
    assert_int_equal(store_fence_get(r, "orders", &f, NULL), 0);
    assert_int_equal(f.token, 1);
    /* the writer goes on; the reader sees each commit */
    for (uint64_t t = 2; t <= 20; t++) {
        assert_int_equal(store_fence_advance_sync(w, "orders", t, NULL, NULL, NULL), 0);
        assert_int_equal(store_fence_get(r, "orders", &f, NULL), 0);
        assert_int_equal(f.token, t);
    }
    /* writes through the read-only handle are refused */
    assert_int_equal(store_fence_advance_sync(r, "orders", 30, NULL, NULL, NULL), ERR_CLOSED);
    struct store_audit_rec rec = {.kind = STORE_AUDIT_STALE};
    assert_int_equal(store_audit_append_sync(r, &rec, NULL), ERR_CLOSED);
    store_close(r);
    store_close(w);
    tl_dir_free(dir);
}

/* A tiny map grows as records are added; a read-only reader opened before
 * the growth keeps working (MDB_MAP_RESIZED is handled). */
static void
test_map_growth(void **state)
{
    (void)state;
    char *dir = tl_dir_new("store");
    struct store_opts o;
    store_opts_init(&o);
    o.data_dir = dir;
    o.map_initial = 64 << 10;
    o.audit_max_records = 0;
    struct store *s = NULL;
    assert_int_equal(store_open(&o, &s, NULL, 0), 0);
    struct store *r = tu_open(dir, true);
    char key[900];
    memset(key, 'x', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    struct store_audit_rec rec = {.kind = STORE_AUDIT_STALE, .lock = "grow", .key = key};
    for (int i = 0; i < 100; i++) {
        assert_int_equal(store_audit_append_sync(s, &rec, NULL), 0);
    }
    struct store_stats st;
    store_stats_get(s, &st);
    assert_true(st.map_grows >= 1);
    assert_true(st.map_size > (64u << 10));
    uint64_t n = 0;
    assert_int_equal(store_audit_count(r, &n), 0); /* remaps to the larger size */
    assert_int_equal(n, 100);
    assert_int_equal(store_audit_count(s, &n), 0);
    assert_int_equal(n, 100);
    store_close(r);
    store_close(s);
    /* map_max stops growth with ERR_TOOBIG, and the store stays usable */
    o.map_max = o.map_initial = 1 << 20;
    assert_int_equal(store_open(&o, &s, NULL, 0), 0);
    log_threshold = LOG_NONE;
    int err = 0;
    for (int i = 0; i < 10000 && err == 0; i++) {
        err = store_audit_append_sync(s, &rec, NULL);
    }
    log_threshold = LOG_WARN;
    assert_int_equal(err, ERR_TOOBIG);
    assert_int_equal(store_fence_advance_sync(s, "still", 1, NULL, NULL, NULL), 0);
    store_close(s);
    tl_dir_free(dir);
}

/* store_audit_each_fn: die inside the read transaction, leaving its slot. */
static int
die_in_txn(void *arg, const struct store_audit_rec *r)
{
    (void)arg;
    (void)r;
    (void)raise(SIGKILL);
    return 0;
}

/* mdb_reader_list callback: count the lines (one per live slot). */
static int
count_line(const char *msg, void *ctx)
{
    int *n = ctx;
    if (strstr(msg, "(no active readers)") == NULL && strstr(msg, "pid") == NULL) {
        (*n)++;
    }
    return 0;
}

static int
live_readers(const char *dir)
{
    char path[512];
    (void)snprintf(path, sizeof(path), "%s/fencegate.mdb", dir);
    MDB_env *env;
    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_set_maxdbs(env, 8), 0);
    assert_int_equal(mdb_env_open(env, path, MDB_NOSUBDIR | MDB_RDONLY, 0600), 0);
    int n = 0;
    assert_true(mdb_reader_list(env, count_line, &n) >= 0);
    mdb_env_close(env);
    return n;
}

/* live_readers in a child process (LMDB forbids a second env of one file per process). */
static int
live_readers_elsewhere(const char *dir)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        _exit(live_readers(dir));
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

/* A reader killed inside its transaction leaves a slot; the next open clears
 * it (a gateway keeps the environment open meanwhile, so LMDB's own
 * first-opener reset does not happen). */
static void
test_stale_reader_cleared(void **state)
{
    (void)state;
    char *dir = tl_dir_new("store");
    struct store *s = tu_open(dir, false);
    struct store_audit_rec rec = {.kind = STORE_AUDIT_STALE, .lock = "a"};
    assert_int_equal(store_audit_append_sync(s, &rec, NULL), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct store *c = tu_open(dir, true);
        struct store_audit_query q = {.limit = 1};
        int err = store_audit_query(c, &q, die_in_txn, NULL, NULL);
        _exit(err == 0 ? 0 : 1);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(live_readers_elsewhere(dir), 1); /* the dead reader's slot */
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        store_close(tu_open(dir, true)); /* store_open runs mdb_reader_check */
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_int_equal(live_readers_elsewhere(dir), 0);
    assert_int_equal(store_audit_append_sync(s, &rec, NULL), 0);
    store_close(s);
    tl_dir_free(dir);
}

static void
test_stats(void **state)
{
    (void)state;
    char *dir = tl_dir_new("store");
    struct store *s = tu_open(dir, false);
    struct store_stats st;
    store_stats_get(s, &st);
    uint64_t c0 = st.commits;
    assert_int_equal(store_fence_advance_sync(s, "a", 1, NULL, NULL, NULL), 0);
    assert_int_equal(store_elect_advance_sync(s, "a", 1, NULL), 0);
    store_stats_get(s, &st);
    assert_int_equal(st.commits, c0 + 2);
    assert_int_equal(st.fence_advances, 1);
    assert_int_equal(st.elect_advances, 1);
    assert_int_equal(st.map_size, 64u << 20);
    assert_int_equal(st.queue_depth, 0);
    store_close(s);
    tl_dir_free(dir);
}

int
main(void)
{
    log_threshold = LOG_WARN;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_close_reopen),
        cmocka_unit_test(test_bad_opts),
        cmocka_unit_test(test_read_only_missing),
        cmocka_unit_test(test_format_version_refused),
        cmocka_unit_test(test_read_only_beside_writer),
        cmocka_unit_test(test_map_growth),
        cmocka_unit_test(test_stale_reader_cleared),
        cmocka_unit_test(test_stats),
    };
    return cmocka_run_group_tests_name("store_env", tests, NULL, NULL);
}
