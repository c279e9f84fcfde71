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

/* Open a store in dir with the defaults (plus read_only); fails the test on error. */
static inline struct store *
tu_open(const char *dir, bool read_only)
{
    struct store_opts o;
    store_opts_init(&o);
    o.data_dir = dir;
    o.read_only = read_only;
    struct store *s = NULL;
    char err[256];
    if (store_open(&o, &s, err, sizeof(err)) != 0) {
        (void)fprintf(stderr, "store_open(%s): %s\n", dir, err);
        abort();
    }
    return s;
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
