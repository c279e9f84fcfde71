/*
 * store_seed: record an epoch as granted in a store's election cache, as the
 * election does on every acquire.  Test scaffolding for fencing tests that do
 * not run the election:  store_seed DATA_DIR LOCK EPOCH
 * Safe beside a running gateway (LMDB serialises writers across processes).
 */
#include <stdio.h>

#include "common/num.h"
#include "store/store.h"

int
main(int argc, char **argv)
{
    if (argc != 4) {
        (void)fprintf(stderr, "usage: store_seed DATA_DIR LOCK EPOCH\n");
        return 2;
    }
    uint64_t epoch;
    if (parse_u64(argv[3], 1, UINT64_MAX, &epoch) != 0) {
        (void)fprintf(stderr, "store_seed: bad epoch %s\n", argv[3]);
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
    int rc = store_elect_advance_sync(st, argv[2], epoch, &now);
    store_close(st);
    if (rc != 0) {
        (void)fprintf(stderr, "store_seed: %s\n", err_str(rc));
        return 1;
    }
    (void)printf("%llu\n", (unsigned long long)now);
    return 0;
}
