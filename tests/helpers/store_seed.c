/*
 * store_seed: record an epoch as granted in a store's election cache, as the
 * election does on every acquire.  Test scaffolding for fencing tests that do
 * not run the election:  store_seed DATA_DIR LOCK EPOCH
 * With a COUNT (store_seed DATA_DIR PREFIX EPOCH COUNT) it seeds COUNT locks
 * PREFIX000000.. in both the election cache and the fence table, grouped
 * (many per commit): fleet-size listings in seconds (tests/integration/
 * test_scale.py, make bench-scale).
 * Safe beside a running gateway (LMDB serialises writers across processes).
 */
#include <stdio.h>
#include <unistd.h>

#include "common/num.h"
#include "store/store.h"

struct seeded {
    unsigned long done; /* callbacks run */
    int err;            /* first error */
};

static void
on_elect(void *arg, int err, uint64_t epoch)
{
    struct seeded *s = arg;
    (void)epoch;
    s->done++;
    if (err != 0 && s->err == 0) {
        s->err = err;
    }
}

static void
on_fence(void *arg, int err, uint64_t highest)
{
    on_elect(arg, err == ERR_FENCED ? 0 : err, highest);
}

/* COUNT locks PREFIX%06u, both tables; returns 0 or an ERR_*. */
static int
seed_many(struct store *st, const char *prefix, uint64_t epoch, uint64_t count)
{
    struct seeded sd = {0};
    unsigned long queued = 0;
    for (uint64_t i = 0; i < count && sd.err == 0; i++) {
        char lock[160];
        (void)snprintf(lock, sizeof(lock), "%s%06llu", prefix, (unsigned long long)i);
        int rc;
        while ((rc = store_elect_advance(st, lock, epoch, on_elect, &sd)) == ERR_AGAIN) {
            (void)store_dispatch_completions(st);
            (void)usleep(1000);
        }
        if (rc != 0) {
            return rc;
        }
        while ((rc = store_fence_advance(st, lock, epoch, "seed", "seed", on_fence, &sd)) ==
               ERR_AGAIN) {
            (void)store_dispatch_completions(st);
            (void)usleep(1000);
        }
        if (rc != 0) {
            return rc;
        }
        queued += 2;
        (void)store_dispatch_completions(st);
    }
    while (sd.done < queued) {
        if (store_dispatch_completions(st) == 0) {
            (void)usleep(1000);
        }
    }
    return sd.err;
}

int
main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        (void)fprintf(stderr, "usage: store_seed DATA_DIR LOCK EPOCH\n"
                              "       store_seed DATA_DIR PREFIX EPOCH COUNT\n");
        return 2;
    }
    uint64_t epoch;
    uint64_t count = 0;
    if (parse_u64(argv[3], 1, UINT64_MAX, &epoch) != 0 ||
        (argc == 5 && parse_u64(argv[4], 1, 10000000, &count) != 0)) {
        (void)fprintf(stderr, "store_seed: bad epoch or count\n");
        return 2;
    }
    struct store_opts o;
    store_opts_init(&o);
    o.data_dir = argv[1];
    struct store *st;
    char errbuf[256];
    if (store_open(&o, &st, errbuf, sizeof(errbuf)) != 0) {
        (void)fprintf(stderr, "store_seed: %s\n", errbuf);
        return 1;
    }
    uint64_t now = 0;
    int rc = argc == 5 ? seed_many(st, argv[2], epoch, count)
                       : store_elect_advance_sync(st, argv[2], epoch, &now);
    store_close(st);
    if (rc != 0) {
        (void)fprintf(stderr, "store_seed: %s\n", err_str(rc));
        return 1;
    }
    (void)printf("%llu\n", (unsigned long long)(argc == 5 ? count : now));
    return 0;
}
