/*
 * tests/unit/gateway/http/request_id_test.c: request ids stay distinct when
 * several event loops (threads) draw them at once (gw_http_new_id in
 * gateway/http/resp.c).  Each thread draws its share into its own array
 * while the others draw; then all are sorted and compared.  A plain static
 * counter loses increments under this load (duplicates) and is a data race
 * that make SAN=thread unit reports.
 */
#include "gateway/http/internal.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define NTHREADS 4
/* More than one of gw_http_new_id's blocks (65536) a thread, so blocks are
 * taken while the other threads draw. */
#define PER_THREAD 100000

struct drawer {
    char (*ids)[GW_HTTP_ID_LEN + 1]; /* PER_THREAD ids, this thread's */
    atomic_int *ready;               /* threads waiting at the start line */
};

/* Thread body: wait until every drawer is running, then draw as fast as possible. */
static void *
draw(void *arg)
{
    struct drawer *d = arg;
    atomic_fetch_add(d->ready, 1);
    while (atomic_load(d->ready) < NTHREADS) {
        /* spin: the threads start drawing together, so their draws overlap */
    }
    for (int i = 0; i < PER_THREAD; i++) {
        gw_http_new_id(d->ids[i]);
    }
    return NULL;
}

static int
cmp_id(const void *a, const void *b)
{
    return memcmp(a, b, GW_HTTP_ID_LEN);
}

static void
test_ids_distinct_across_threads(void **state)
{
    (void)state;
    char(*ids)[GW_HTTP_ID_LEN + 1] = calloc((size_t)NTHREADS * PER_THREAD, GW_HTTP_ID_LEN + 1);
    assert_non_null(ids);
    atomic_int ready = 0;
    struct drawer d[NTHREADS];
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        d[i].ids = ids + (size_t)i * PER_THREAD;
        d[i].ready = &ready;
        assert_int_equal(pthread_create(&t[i], NULL, draw, &d[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
    }
    size_t n = (size_t)NTHREADS * PER_THREAD;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(strlen(ids[i]), GW_HTTP_ID_LEN);
        assert_int_equal(strspn(ids[i], "0123456789abcdef"), GW_HTTP_ID_LEN);
    }
    qsort(ids, n, sizeof(ids[0]), cmp_id);
    size_t dups = 0;
    for (size_t i = 1; i < n; i++) {
        if (memcmp(ids[i - 1], ids[i], GW_HTTP_ID_LEN) == 0) {
            dups++;
        }
    }
    free(ids);
    assert_int_equal(dups, 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids_distinct_across_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
