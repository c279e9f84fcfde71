/*
 * tests/unit/gateway/proxy/upload_mt_test.c: one struct gw_upload shared by
 * two worker loops' threads (DESIGN "Worker loops").  Each records
 * creations, checks writes into them and forgets some, at once, while a
 * third thread (the control loop) runs the store's completions, whose on_put
 * takes the creations off the in-memory list.  Every creation is found
 * (from the list or the store) the moment it is recorded, under its epoch;
 * the table ends with exactly the kept ones; make SAN=thread unit runs it
 * under ThreadSanitizer, which fails it without the object's mutex.
 * upload.c is included (STYLE R12) to reach record and forget directly.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gateway/proxy/upload.c"
#include "tests/unit/testlib.h"

#define PER_WORKER 300 /* creations per worker thread */

static struct {
    char *dir;
    struct store *st;
    pthread_t th;
    atomic_bool stop;
} ctl;

static struct gw_config cfg; /* fencing.abort_stale_uploads off: no S3 client needed */
static struct gw_upload *up;

struct worker {
    const char *name;
    pthread_t th;
    int failures; /* checks that went wrong */
};

static void *
control_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&ctl.stop)) {
        if (store_dispatch_completions(ctl.st) == 0) {
            (void)usleep(100);
        }
    }
    return NULL;
}

static void *
worker_main(void *arg)
{
    struct worker *w = arg;
    struct gw_s3req create = {.op = GW_S3_OP_CREATE_MULTIPART, .bucket = "data", .key = "k"};
    struct gw_s3req part = {.op = GW_S3_OP_UPLOAD_PART, .bucket = "data", .key = "k"};
    char id[64], query[96];
    for (int i = 0; i < PER_WORKER; i++) {
        (void)snprintf(id, sizeof(id), "%s-%d", w->name, i);
        (void)snprintf(query, sizeof(query), "partNumber=1&uploadId=%s", id);
        record(up, "orders", 5, &create, id);
        uint64_t created = 0;
        uint64_t epoch = 0;
        w->failures += gw_upload_check(up, "orders", 5, &part, query, &created) != 0;
        w->failures += gw_upload_check(up, "orders", 6, &part, query, &created) != ERR_FENCED;
        w->failures += created != 5;
        w->failures += gw_upload_claim(up, "orders", &part, query, &epoch) != 0 || epoch != 5;
        if (i % 2 == 1) {
            forget(up, "orders", query);
        }
    }
    return NULL;
}

static unsigned
pending(void)
{
    (void)pthread_mutex_lock(&up->mu);
    unsigned n = up->pending;
    (void)pthread_mutex_unlock(&up->mu);
    return n;
}

static void
test_two_workers_and_the_store_callbacks(void **state)
{
    (void)state;
    ctl.dir = tl_dir_new("upload_mt");
    struct store_opts o;
    char errbuf[256];
    store_opts_init(&o);
    o.data_dir = ctl.dir;
    assert_int_equal(store_open(&o, &ctl.st, errbuf, sizeof(errbuf)), 0);
    up = gw_upload_new(ctl.st, NULL, &cfg);
    assert_non_null(up);
    atomic_store(&ctl.stop, false);
    assert_int_equal(pthread_create(&ctl.th, NULL, control_main, NULL), 0);
    struct worker wa = {.name = "wa"}, wb = {.name = "wb"};
    assert_int_equal(pthread_create(&wa.th, NULL, worker_main, &wa), 0);
    assert_int_equal(pthread_create(&wb.th, NULL, worker_main, &wb), 0);
    assert_int_equal(pthread_join(wa.th, NULL), 0);
    assert_int_equal(pthread_join(wb.th, NULL), 0);
    assert_int_equal(wa.failures, 0);
    assert_int_equal(wb.failures, 0);
    for (int i = 0; i < 20000 && pending() != 0; i++) {
        (void)usleep(250);
    }
    assert_int_equal(pending(), 0);
    atomic_store(&ctl.stop, true);
    assert_int_equal(pthread_join(ctl.th, NULL), 0);
    assert_true(LIST_EMPTY(&up->puts));
    gw_upload_free(up); /* the workers are joined (gw_upload_free's contract) */
    /* reopened: every queued put and delete committed */
    store_close(ctl.st);
    assert_int_equal(store_open(&o, &ctl.st, errbuf, sizeof(errbuf)), 0);
    char id[64];
    struct store_upload rec;
    for (int i = 0; i < PER_WORKER; i++) {
        for (int k = 0; k < 2; k++) {
            (void)snprintf(id, sizeof(id), "%s-%d", k == 0 ? "wa" : "wb", i);
            int rc = store_upload_get(ctl.st, "orders", id, &rec);
            if (i % 2 == 1) {
                assert_int_equal(rc, ERR_NOTFOUND);
            } else {
                assert_int_equal(rc, 0);
                assert_int_equal(rec.epoch, 5);
            }
        }
    }
    store_close(ctl.st);
    tl_dir_free(ctl.dir);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_workers_and_the_store_callbacks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
