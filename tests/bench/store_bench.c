/*
 * tests/bench/store_bench.c: store/ micro-benchmark (not a test: it prints
 * figures, it asserts nothing but success).
 *
 *   make build/tests/bench/store_bench && build/tests/bench/store_bench
 *
 * The store lives in a fresh directory under $STORE_BENCH_DIR (default /tmp),
 * so durable figures are those of that file system's fsync.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "store/store.h"
#include "tests/bench/benchlib.h"

#define LOCKS 1000

static void
check(int err, const char *what)
{
    if (err != 0 && err != ERR_FENCED) {
        (void)fprintf(stderr, "store_bench: %s: %s\n", what, err_str(err));
        exit(1);
    }
}

static void
lock_name(char *out, size_t len, unsigned i)
{
    (void)snprintf(out, len, "lock-%u", i % LOCKS);
}

/* Wait for n completions, counted by the callbacks in *done. */
static void
drain(struct store *s, const volatile uint64_t *done, uint64_t n)
{
    while (*done < n) {
        if (store_dispatch_completions(s) == 0) {
            struct timespec ts = {.tv_nsec = 20000};
            (void)nanosleep(&ts, NULL);
        }
    }
}

static void
on_done(void *arg, int err, uint64_t v)
{
    uint64_t *done = arg;
    (void)v;
    check(err, "async");
    (*done)++;
}

static void
on_audit_done(void *arg, int err, const struct store_audit_done *d)
{
    (void)d;
    on_done(arg, err, 0);
}

static void
bench_reads(struct store *s)
{
    char lock[32];
    for (unsigned i = 0; i < LOCKS; i++) {
        lock_name(lock, sizeof(lock), i);
        check(store_fence_advance_sync(s, lock, 5, "bench", "bench", NULL), "seed");
    }
    const unsigned n = 1000000;
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < n; i++) {
        lock_name(lock, sizeof(lock), i * 7919u);
        enum store_fence_verdict v;
        check(store_fence_check(s, lock, 5, &v, NULL), "check");
    }
    uint64_t dt = now_ns() - t0;
    (void)printf("fence read (store_fence_check, %u locks):     %8.0f ns/op  (%u ops)\n", LOCKS,
                 (double)dt / n, n);
}

static void
bench_sync_advance(struct store *s)
{
    const unsigned n = 500;
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < n; i++) {
        check(store_fence_advance_sync(s, "single", i + 1, "bench", "bench", NULL), "sync");
    }
    uint64_t dt = now_ns() - t0;
    (void)printf("durable advance, sync, one at a time:         %8.0f ns/op  (%u ops, 1 fsync "
                 "each)\n",
                 (double)dt / n, n);
}

static void
bench_async_single(struct store *s)
{
    const unsigned n = 500;
    uint64_t done = 0;
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < n; i++) {
        check(store_fence_advance(s, "asingle", i + 1, NULL, NULL, on_done, &done), "queue");
        drain(s, &done, i + 1);
    }
    uint64_t dt = now_ns() - t0;
    (void)printf("durable advance, async, one in flight:        %8.0f ns/op  (%u ops; "
                 "latency incl. worker hand-off)\n",
                 (double)dt / n, n);
}

static void
bench_async_grouped(struct store *s)
{
    const unsigned n = 50000;
    const unsigned window = 1024;
    uint64_t done = 0;
    struct store_stats st0;
    struct store_stats st1;
    store_stats_get(s, &st0);
    char lock[32];
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < n; i++) {
        while (i - done >= window) {
            drain(s, &done, done + 1);
        }
        lock_name(lock, sizeof(lock), i);
        check(store_fence_advance(s, lock, 100 + i, NULL, NULL, on_done, &done), "queue");
    }
    drain(s, &done, n);
    uint64_t dt = now_ns() - t0;
    store_stats_get(s, &st1);
    uint64_t commits = st1.commits - st0.commits;
    (void)printf("durable advance, async, %u in flight:       %8.0f ns/op  (%u ops, %llu fsync "
                 "groups, %.0f per group)\n",
                 window, (double)dt / n, n, (unsigned long long)commits,
                 commits ? (double)n / (double)commits : 0.0);
}

struct thr {
    struct store *s; /* shared */
    unsigned id;     /* thread number */
    unsigned n;      /* advances to do */
};

static void *
sync_thread(void *arg)
{
    struct thr *t = arg;
    char lock[32];
    (void)snprintf(lock, sizeof(lock), "thr-%u", t->id);
    for (unsigned i = 0; i < t->n; i++) {
        check(store_fence_advance_sync(t->s, lock, i + 1, NULL, NULL, NULL), "thread");
    }
    return NULL;
}

static void
bench_sync_threads(struct store *s)
{
    enum { NT = 8 };
    pthread_t th[NT];
    struct thr ts[NT];
    const unsigned per = 100;
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < NT; i++) {
        ts[i] = (struct thr){.s = s, .id = i, .n = per};
        if (pthread_create(&th[i], NULL, sync_thread, &ts[i]) != 0) {
            exit(1);
        }
    }
    for (unsigned i = 0; i < NT; i++) {
        (void)pthread_join(th[i], NULL);
    }
    uint64_t dt = now_ns() - t0;
    (void)printf("durable advance, sync, %d threads:             %8.0f ns/op  (%u ops; sync "
                 "calls do not group)\n",
                 NT, (double)dt / (NT * per), NT * per);
}

static _Atomic int writer_stop;

static void *
writer_thread(void *arg)
{
    struct store *s = arg;
    uint64_t t = 1000000;
    while (!atomic_load(&writer_stop)) {
        check(store_fence_advance_sync(s, "busy", t++, NULL, NULL, NULL), "writer");
    }
    return NULL;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Read latency while another thread commits (fsync) continuously. */
static void
bench_reads_under_writes(struct store *s)
{
    pthread_t w;
    if (pthread_create(&w, NULL, writer_thread, s) != 0) {
        exit(1);
    }
    enum { N = 200000 };
    uint64_t *lat = malloc(N * sizeof(*lat));
    char lock[32];
    for (unsigned i = 0; i < N; i++) {
        lock_name(lock, sizeof(lock), i * 31u);
        enum store_fence_verdict v;
        uint64_t t0 = now_ns();
        check(store_fence_check(s, lock, 5, &v, NULL), "check");
        lat[i] = now_ns() - t0;
    }
    atomic_store(&writer_stop, 1);
    (void)pthread_join(w, NULL);
    qsort(lat, N, sizeof(*lat), cmp_u64);
    (void)printf("fence read while a writer fsyncs:             p50 %llu ns, p99 %llu ns, "
                 "max %llu ns\n",
                 (unsigned long long)lat[N / 2], (unsigned long long)lat[N * 99 / 100],
                 (unsigned long long)lat[N - 1]);
    free(lat);
}

/* Appends of one refusal repeated (identical), or each on a key of its own
 * (distinct); what says how the store was opened. */
static void
bench_audit(struct store *s, const char *what, bool distinct)
{
    const unsigned n = 200000;
    char key[64];
    uint64_t done = 0;
    struct store_stats st0;
    struct store_stats st1;
    store_stats_get(s, &st0);
    struct store_audit_rec r = {.kind = STORE_AUDIT_STALE,
                                .token = 4,
                                .current = 5,
                                .lock = "orders",
                                .principal = "worker",
                                .client = "192.0.2.7:51234",
                                .method = "PUT",
                                .bucket = "data",
                                .key = "orders/2026/11/21/part-00042.parquet",
                                .operation = "PutObject",
                                .request_id = "0123456789abcdef",
                                .user_agent = "aws-cli/2.13.0 Python/3.11 Linux/6.1"};
    uint64_t t0 = now_ns();
    uint64_t queued = 0;
    while (queued < n) {
        if (distinct) {
            (void)snprintf(key, sizeof(key), "orders/part-%llu", (unsigned long long)queued);
            r.key = key;
        }
        int err = store_audit_append(s, &r, on_audit_done, &done);
        if (err == ERR_AGAIN) {
            drain(s, &done, done + 1);
            continue;
        }
        check(err, "audit");
        queued++;
    }
    drain(s, &done, n);
    uint64_t dt = now_ns() - t0;
    store_stats_get(s, &st1);
    uint64_t commits = st1.commits - st0.commits;
    uint64_t count = 0;
    check(store_audit_count(s, &count), "count");
    (void)printf("audit append, async (durable), %-17s %8.0f appends/s  (%u appends, "
                 "%llu fsync groups, %llu records now)\n",
                 what, (double)n * 1e9 / (double)dt, n, (unsigned long long)commits,
                 (unsigned long long)count);
}

int
main(void)
{
    log_threshold = LOG_WARN;
    const char *base = getenv("STORE_BENCH_DIR");
    char dir[512];
    (void)snprintf(dir, sizeof(dir), "%s/fencegate-bench-XXXXXX", base ? base : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    struct store_opts o;
    store_opts_init(&o);
    o.data_dir = dir;
    o.audit_max_records = 0; /* measure appends, not retention */
    struct store *s = NULL;
    char err[256];
    if (store_open(&o, &s, err, sizeof(err)) != 0) {
        (void)fprintf(stderr, "store_bench: %s\n", err);
        return 1;
    }
    (void)printf("store_bench: data in %s\n", dir);
    bench_reads(s);
    bench_sync_advance(s);
    bench_async_single(s);
    bench_async_grouped(s);
    bench_sync_threads(s);
    bench_reads_under_writes(s);
    bench_audit(s, "off, identical:", false);
    bench_audit(s, "off, distinct:", true);
    store_close(s);
    o.audit_coalesce_ms = 60000; /* the gateway's default */
    if (store_open(&o, &s, err, sizeof(err)) != 0) {
        (void)fprintf(stderr, "store_bench: %s\n", err);
        return 1;
    }
    bench_audit(s, "on, identical:", false);
    bench_audit(s, "on, distinct:", true);
    struct store_stats st;
    store_stats_get(s, &st);
    (void)printf("map: %llu bytes after %llu grow(s)\n", (unsigned long long)st.map_size,
                 (unsigned long long)st.map_grows);
    store_close(s);
    char cmd[600];
    (void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
