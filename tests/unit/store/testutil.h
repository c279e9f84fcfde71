/*
 * tests/unit/store/testutil.h: temporary data directories for store tests.
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

/* Remove path and, if it is a directory, everything under it. */
static inline void
tu_rm_rf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d != NULL && (e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
                continue;
            }
            char sub[4096];
            int n = snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
            if (n > 0 && (size_t)n < sizeof(sub)) {
                tu_rm_rf(sub);
            }
        }
        if (d != NULL) {
            (void)closedir(d);
        }
    }
    (void)remove(path);
}

/* A fresh directory under /tmp; the caller frees it with tu_dir_free. */
static inline char *
tu_dir_new(void)
{
    char tmpl[] = "/tmp/fencegate-store-XXXXXX";
    char *d = mkdtemp(tmpl);
    if (d == NULL) {
        abort();
    }
    return strdup(d);
}

/* Remove the directory and everything in it, then free the name. */
static inline void
tu_dir_free(char *dir)
{
    if (dir != NULL) {
        tu_rm_rf(dir);
        free(dir);
    }
}

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
        if (store_dispatch_completions(s) == 0) {
            (void)usleep(500);
        }
    }
}

#endif
