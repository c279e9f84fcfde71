/*
 * tests/helpers/store_crash.c: the victim of tests/integration/test_store_crash.py.
 *
 *   store_crash run DIR sync|async   advance lock "crash" forever, printing
 *                                    each token whose advance has returned
 *                                    success (so is durable), one per line,
 *                                    written with write(2): nothing buffered
 *   store_crash verify DIR           open the store (read-write, as a
 *                                    restarted gateway would), read every
 *                                    record, print "<highest> <audit records>"
 *
 * "run" starts with a tiny map and appends audit records as it goes, so
 * kills also land during map growth.  "async" keeps several advances in
 * flight through the worker (group commit) and prints from the callbacks.
 * Exit status: 0, or 1 with a reason on stderr.
 */
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "store/store.h"

#define LOCK     "crash"
#define INFLIGHT 8

static void
say_token(uint64_t t)
{
    char line[32];
    int n = snprintf(line, sizeof(line), "%llu\n", (unsigned long long)t);
    if (n > 0 && write(STDOUT_FILENO, line, (size_t)n) != n) {
        _exit(1);
    }
}

static struct store *
open_store(const char *dir, size_t map)
{
    struct store_opts o;
    store_opts_init(&o);
    o.data_dir = dir;
    o.map_initial = map;
    o.audit_max_records = 20000;
    struct store *s = NULL;
    char err[512];
    if (store_open(&o, &s, err, sizeof(err)) != 0) {
        (void)fprintf(stderr, "store_crash: open: %s\n", err);
        return NULL;
    }
    return s;
}

static uint64_t
highest(struct store *s)
{
    struct store_fence f;
    int err = store_fence_get(s, LOCK, &f, NULL);
    if (err == ERR_NOTFOUND) {
        return 0;
    }
    if (err != 0) {
        (void)fprintf(stderr, "store_crash: fence_get: %s\n", err_str(err));
        _exit(1);
    }
    return f.token;
}

static void
audit(struct store *s, uint64_t t, bool sync)
{
    char key[600];
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    struct store_audit_rec r = {
        .kind = STORE_AUDIT_STALE, .lock = LOCK, .token = t - 1, .current = t, .key = key};
    int err = sync ? store_audit_append_sync(s, &r, NULL) : store_audit_append(s, &r, NULL, NULL);
    if (err != 0 && err != ERR_AGAIN) {
        (void)fprintf(stderr, "store_crash: audit: %s\n", err_str(err));
        _exit(1);
    }
}

/* store_fence_done_fn of the async mode */
static void
on_advanced(void *arg, int err, uint64_t h)
{
    int *inflight = arg;
    (*inflight)--;
    if (err != 0 && err != ERR_FENCED) {
        (void)fprintf(stderr, "store_crash: advance: %s\n", err_str(err));
        _exit(1);
    }
    if (err == 0) {
        say_token(h);
    }
}

static int
run(const char *dir, bool async)
{
    struct store *s = open_store(dir, 64 << 10);
    if (s == NULL) {
        return 1;
    }
    uint64_t t = highest(s);
    if (!async) {
        for (;;) {
            t++;
            uint64_t h = 0;
            int err = store_fence_advance_sync(s, LOCK, t, "crash", "crash", &h);
            if (err != 0) {
                (void)fprintf(stderr, "store_crash: advance %llu: %s\n", (unsigned long long)t,
                              err_str(err));
                return 1;
            }
            say_token(t);
            audit(s, t, true);
        }
    }
    int inflight = 0;
    struct pollfd p = {.fd = store_completion_fd(s), .events = POLLIN};
    for (;;) {
        while (inflight < INFLIGHT) {
            t++;
            int err = store_fence_advance(s, LOCK, t, "crash", "crash", on_advanced, &inflight);
            if (err != 0) {
                (void)fprintf(stderr, "store_crash: queue: %s\n", err_str(err));
                return 1;
            }
            inflight++;
            audit(s, t, false);
        }
        if (poll(&p, 1, 1000) < 0) {
            return 1;
        }
        (void)store_dispatch_completions(s);
    }
}

/* store_audit_each_fn */
static int
on_audit(void *arg, const struct store_audit_rec *r)
{
    uint64_t *n = arg;
    (void)r;
    (*n)++;
    return 0;
}

static int
verify(const char *dir)
{
    struct store *s = open_store(dir, 64 << 10);
    if (s == NULL) {
        return 1;
    }
    uint64_t h = highest(s);
    uint64_t n = 0;
    uint64_t count = 0;
    struct store_audit_query q = {.limit = STORE_AUDIT_LIMIT_MAX};
    for (;;) {
        struct store_audit_cursor next;
        int err = store_audit_query(s, &q, on_audit, &n, &next);
        if (err != 0) {
            (void)fprintf(stderr, "store_crash: query: %s\n", err_str(err));
            return 1;
        }
        if (!next.set) {
            break;
        }
        q.after = next;
    }
    struct store_stats st;
    store_stats_get(s, &st);
    if (store_audit_count(s, &count) != 0 || count != n || st.audit_damaged != 0) {
        (void)fprintf(stderr, "store_crash: audit log inconsistent (%llu listed, %llu stored)\n",
                      (unsigned long long)n, (unsigned long long)count);
        return 1;
    }
    store_close(s);
    (void)printf("%llu %llu\n", (unsigned long long)h, (unsigned long long)n);
    return 0;
}

int
main(int argc, char **argv)
{
    log_threshold = LOG_WARN;
    if (argc == 4 && strcmp(argv[1], "run") == 0 &&
        (strcmp(argv[3], "sync") == 0 || strcmp(argv[3], "async") == 0)) {
        return run(argv[2], strcmp(argv[3], "async") == 0);
    }
    if (argc == 3 && strcmp(argv[1], "verify") == 0) {
        return verify(argv[2]);
    }
    (void)fprintf(stderr, "usage: store_crash run DIR sync|async | store_crash verify DIR\n");
    return 2;
}
