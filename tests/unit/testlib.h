/*
 * tests/unit/testlib.h: what the unit tests share, in one place.
 *
 *   tl_dir_new / tl_dir_free   a fresh temporary directory, and its removal
 *                              with everything in it (no shell)
 *   TL_RUN_UNTIL               run an event loop (and a store's completions)
 *                              until a condition holds, bounded in time
 *   the pinned clock           common/clock.h's clock_pin / clock_unpin: a
 *                              test that judges time pins it, never sleeps
 *
 * The harnesses that serve one room sit beside that room's tests
 * (tests/unit/gateway/http_harness.h, tests/unit/election/elect_harness.h,
 * tests/unit/store/testutil.h, ...) and build on this file.
 */
#ifndef TESTS_UNIT_TESTLIB_H
#define TESTS_UNIT_TESTLIB_H

#include <dirent.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"

/* Remove path and, if it is a directory, everything under it (symbolic links are not followed). */
static inline void
tl_rm_rf(const char *path)
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
                tl_rm_rf(sub);
            }
        }
        if (d != NULL) {
            (void)closedir(d);
        }
    }
    (void)remove(path);
}

/*
 * A fresh directory, $TMPDIR/fencegate-<name>-XXXXXX (/tmp without
 * $TMPDIR); aborts the test binary when none can be made.  The caller
 * removes and frees it with tl_dir_free.
 */
static inline char *
tl_dir_new(const char *name)
{
    const char *tmp = getenv("TMPDIR");
    char tmpl[512];
    int n = snprintf(tmpl, sizeof(tmpl), "%s/fencegate-%s-XXXXXX",
                     tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp", name);
    char *d = n > 0 && (size_t)n < sizeof(tmpl) ? mkdtemp(tmpl) : NULL;
    char *copy = d != NULL ? strdup(d) : NULL;
    if (copy == NULL) {
        (void)fprintf(stderr, "tl_dir_new(%s): cannot make a temporary directory\n", name);
        abort();
    }
    return copy;
}

/* Remove dir and everything in it, then free the name.  NULL-safe. */
static inline void
tl_dir_free(char *dir)
{
    if (dir != NULL) {
        tl_rm_rf(dir);
        free(dir);
    }
}

/*
 * One turn of the wait in TL_RUN_UNTIL: a non-blocking pass of eb (may be
 * NULL), the store's finished callbacks (st may be NULL), then half a
 * millisecond's sleep when nothing was due.
 */
static inline void
tl_turn(struct event_base *eb, struct store *st)
{
    if (eb != NULL) {
        (void)event_base_loop(eb, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    }
    if (st == NULL || store_dispatch_completions(st) == 0) {
        (void)usleep(500);
    }
}

/*
 * TL_RUN_UNTIL - run base and st's completions (either may be NULL) until
 * cond holds; fails the test (cmocka's assert_true) if it still does not
 * after about ms milliseconds.
 */
#define TL_RUN_UNTIL(base, st, cond, ms)                                                           \
    do {                                                                                           \
        for (int tl_i_ = 0; tl_i_ < 2 * (ms) && !(cond); tl_i_++) {                                \
            tl_turn((base), (st));                                                                 \
        }                                                                                          \
        assert_true(cond);                                                                         \
    } while (0)

#endif
