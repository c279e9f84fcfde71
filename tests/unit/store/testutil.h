/*
 * tests/unit/store/testutil.h: opening and waiting on a store in the store
 * tests (temporary directories: tests/unit/testlib.h).
 */
#ifndef TESTS_UNIT_STORE_TESTUTIL_H
#define TESTS_UNIT_STORE_TESTUTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "store/store.h"
#include "tests/unit/testlib.h"

/* Open a store with o; fails the test on error. */
static inline struct store *
tu_open_opts(const struct store_opts *o)
{
    struct store *s = NULL;
    char err[256];
    if (store_open(o, &s, err, sizeof(err)) != 0) {
        (void)fprintf(stderr, "store_open(%s): %s\n", o->data_dir, err);
        abort();
    }
    return s;
}

/* Open a store in dir with the defaults (plus read_only); fails the test on error. */
static inline struct store *
tu_open(const char *dir, bool read_only)
{
    struct store_opts o;
    store_opts_init(&o);
    o.data_dir = dir;
    o.read_only = read_only;
    return tu_open_opts(&o);
}

/* cmocka set-up and tear-down: *state is a fresh temporary directory. */
static inline int
tu_dir_setup(void **state)
{
    *state = tl_dir_new("store");
    return 0;
}

static inline int
tu_dir_teardown(void **state)
{
    tl_dir_free(*state);
    return 0;
}

/*
 * Open a store in dir whose audit retention the test runs by hand (the
 * worker's interval is an hour), with these caps; per_lock NULL keeps the
 * default per-lock quota.  Fails the test on error.
 */
static inline struct store *
tu_open_retention(const char *dir, uint64_t max_records, uint64_t max_age_ms,
                  const uint64_t *per_lock)
{
    struct store_opts o;
    store_opts_init(&o);
    o.data_dir = dir;
    o.audit_max_records = max_records;
    o.audit_max_age_ms = max_age_ms;
    if (per_lock != NULL) {
        o.audit_max_per_lock = *per_lock;
    }
    o.retention_interval_ms = 3600 * 1000;
    return tu_open_opts(&o);
}

/* Run completions until *done reaches want (polls the completion fd). */
static inline void
tu_wait(struct store *s, const volatile int *done, int want)
{
    for (int i = 0; i < 20000 && *done < want; i++) {
        tl_turn(NULL, s);
    }
}

#endif
