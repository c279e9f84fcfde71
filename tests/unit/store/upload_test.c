/* tests/unit/store/upload_test.c: store/upload.c: the multipart-upload table
 * (put, get, delete, list of older epochs), its limits and durability. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "store/record.h"
#include "testutil.h"

struct done {
    int n;   /* callbacks run */
    int err; /* the last err */
};

/* store_upload_done_fn */
static void
on_done(void *arg, int err)
{
    struct done *d = arg;
    d->n++;
    d->err = err;
}

struct seen {
    int n;             /* entries seen */
    char ids[8][64];   /* their upload ids */
    uint64_t epoch[8]; /* their epochs */
    int stop_after;    /* return 1 after this many (0: never) */
};

/* store_upload_each_fn */
static int
on_each(void *arg, const char *upload_id, const struct store_upload *u)
{
    struct seen *s = arg;
    if (s->n < 8) {
        (void)snprintf(s->ids[s->n], sizeof(s->ids[0]), "%s", upload_id);
        s->epoch[s->n] = u->epoch;
    }
    s->n++;
    return s->stop_after != 0 && s->n >= s->stop_after ? 1 : 0;
}

static void
put(struct store *s, const char *lock, const char *id, uint64_t epoch, const char *key)
{
    struct done d = {0};
    assert_int_equal(store_upload_put(s, lock, id, epoch, "bkt", key, on_done, &d), 0);
    assert_int_equal(d.n, 0); /* never before the call returns */
    tu_wait(s, &d.n, 1);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.err, 0);
}

static void
test_put_get_del(void **state)
{
    struct store *s = tu_open(*state, false);
    struct store_upload u;
    assert_int_equal(store_upload_get(s, "orders", "u1", &u), ERR_NOTFOUND);
    put(s, "orders", "u1", 3, "orders/a");
    assert_int_equal(store_upload_get(s, "orders", "u1", &u), 0);
    assert_int_equal(u.epoch, 3);
    assert_string_equal(u.bucket, "bkt");
    assert_string_equal(u.key, "orders/a");
    assert_true(u.created_ms > 0);
    /* another lock does not see it */
    assert_int_equal(store_upload_get(s, "order", "su1", &u), ERR_NOTFOUND);
    assert_int_equal(store_upload_get(s, "billing", "u1", &u), ERR_NOTFOUND);
    /* replaced */
    put(s, "orders", "u1", 4, "orders/b");
    assert_int_equal(store_upload_get(s, "orders", "u1", &u), 0);
    assert_int_equal(u.epoch, 4);
    /* deleted, twice (no entry is fine), fire and forget */
    struct done d = {0};
    assert_int_equal(store_upload_del(s, "orders", "u1", on_done, &d), 0);
    assert_int_equal(store_upload_del(s, "orders", "u1", on_done, &d), 0);
    assert_int_equal(store_upload_del(s, "orders", "nope", NULL, NULL), 0);
    tu_wait(s, &d.n, 2);
    assert_int_equal(d.err, 0);
    assert_int_equal(store_upload_get(s, "orders", "u1", &u), ERR_NOTFOUND);
    store_close(s);
}

static void
test_list_older(void **state)
{
    struct store *s = tu_open(*state, false);
    put(s, "orders", "a", 1, "orders/1");
    put(s, "orders", "b", 2, "orders/2");
    put(s, "orders", "c", 5, "orders/5");
    put(s, "ordersx", "d", 1, "x"); /* a lock whose name extends another's */
    put(s, "order", "sz", 1, "y");  /* and one that is a prefix of it */
    struct seen sn = {0};
    assert_int_equal(store_upload_list_older(s, "orders", 5, 100, on_each, &sn), 0);
    assert_int_equal(sn.n, 2);
    assert_string_equal(sn.ids[0], "a");
    assert_int_equal(sn.epoch[0], 1);
    assert_string_equal(sn.ids[1], "b");
    memset(&sn, 0, sizeof(sn));
    assert_int_equal(store_upload_list_older(s, "orders", 1, 100, on_each, &sn), 0);
    assert_int_equal(sn.n, 0);
    memset(&sn, 0, sizeof(sn));
    assert_int_equal(store_upload_list_older(s, "orders", 100, 1, on_each, &sn), 0);
    assert_int_equal(sn.n, 1); /* the limit */
    memset(&sn, 0, sizeof(sn));
    sn.stop_after = 2;
    assert_int_equal(store_upload_list_older(s, "orders", 100, 100, on_each, &sn), 0);
    assert_int_equal(sn.n, 2); /* fn stopped it */
    memset(&sn, 0, sizeof(sn));
    assert_int_equal(store_upload_list_older(s, "ordersx", 2, 100, on_each, &sn), 0);
    assert_int_equal(sn.n, 1);
    assert_string_equal(sn.ids[0], "d");
    memset(&sn, 0, sizeof(sn));
    assert_int_equal(store_upload_list_older(s, "order", 2, 100, on_each, &sn), 0);
    assert_int_equal(sn.n, 1);
    assert_string_equal(sn.ids[0], "sz");
    store_close(s);
    /* durable across a reopen, and readable read-only */
    s = tu_open(*state, true);
    struct store_upload u;
    assert_int_equal(store_upload_get(s, "orders", "c", &u), 0);
    assert_int_equal(u.epoch, 5);
    assert_int_equal(store_upload_put(s, "orders", "e", 1, "b", "k", NULL, NULL), ERR_CLOSED);
    store_close(s);
}

static void
test_invalid(void **state)
{
    struct store *s = tu_open(*state, false);
    char long_id[STORE_UPLOAD_ID_MAX + 2];
    memset(long_id, 'u', sizeof(long_id) - 1);
    long_id[sizeof(long_id) - 1] = '\0';
    struct store_upload u;
    assert_int_equal(store_upload_put(s, "bad lock", "u", 1, "b", "k", NULL, NULL), ERR_INVAL);
    assert_int_equal(store_upload_put(s, "orders", "", 1, "b", "k", NULL, NULL), ERR_INVAL);
    assert_int_equal(store_upload_put(s, "orders", long_id, 1, "b", "k", NULL, NULL), ERR_INVAL);
    assert_int_equal(store_upload_put(s, "orders", "u", 0, "b", "k", NULL, NULL), ERR_INVAL);
    assert_int_equal(store_upload_del(s, "orders", "", NULL, NULL), ERR_INVAL);
    assert_int_equal(store_upload_get(s, "orders", long_id, &u), ERR_INVAL);
    assert_int_equal(store_upload_get(s, "", "u", &u), ERR_INVAL);
    assert_int_equal(store_upload_list_older(s, "bad/lock", 1, 1, on_each, NULL), ERR_INVAL);
    /* the longest id is fine */
    long_id[STORE_UPLOAD_ID_MAX] = '\0';
    put(s, "orders", long_id, 2, NULL);
    assert_int_equal(store_upload_get(s, "orders", long_id, &u), 0);
    assert_string_equal(u.key, "");
    /* ids as long as an LMDB key (511 bytes) allows with the longest lock */
    char lock[STORE_LOCK_MAX + 1];
    memset(lock, 'l', STORE_LOCK_MAX);
    lock[STORE_LOCK_MAX] = '\0';
    char id[383];
    memset(id, 'i', 382);
    id[382] = '\0';
    put(s, lock, id, 3, NULL);
    assert_int_equal(store_upload_get(s, lock, id, &u), 0);
    assert_int_equal(u.epoch, 3);
    store_close(s);
}

static void
test_record(void **state)
{
    (void)state;
    struct store_upload u = {.epoch = 7, .created_ms = 1234};
    (void)snprintf(u.bucket, sizeof(u.bucket), "data");
    (void)snprintf(u.key, sizeof(u.key), "orders/x");
    uint8_t b[STORE_REC_UPLOAD_MAX];
    size_t len = 0;
    assert_int_equal(store_rec_upload_encode(&u, b, sizeof(b), &len), 0);
    struct store_upload d;
    assert_int_equal(store_rec_upload_decode(b, len, &d), 0);
    assert_int_equal(d.epoch, 7);
    assert_int_equal(d.created_ms, 1234);
    assert_string_equal(d.key, "orders/x");
    for (size_t n = 0; n < len; n++) {
        assert_int_equal(store_rec_upload_decode(b, n, &d), ERR_INVAL); /* truncated */
    }
    assert_int_equal(store_rec_upload_encode(&u, b, 5, &len), ERR_TOOBIG);
    assert_int_equal(store_rec_upload_encode(&u, b, sizeof(b), &len), 0);
    b[1] = STORE_REC_VERSION + 1;
    assert_int_equal(store_rec_upload_decode(b, len, &d), ERR_VERSION);
    b[1] = STORE_REC_VERSION;
    b[0] = STORE_REC_FENCE;
    assert_int_equal(store_rec_upload_decode(b, len, &d), ERR_INVAL);
    u.epoch = 0;
    assert_int_equal(store_rec_upload_encode(&u, b, sizeof(b), &len), 0);
    assert_int_equal(store_rec_upload_decode(b, len, &d), ERR_INVAL);
    uint8_t k[STORE_KEY_UPLOAD_MAX];
    assert_int_equal(store_rec_upload_key("orders", "u1", k), 1 + 6 + 2);
    assert_int_equal(k[0], 6);
    assert_int_equal(store_rec_upload_key("", "u1", k), 0);
    assert_int_equal(store_rec_upload_key("orders", "", k), 0);
}

int
main(void)
{
    log_threshold = LOG_WARN;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_put_get_del, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_list_older, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test_setup_teardown(test_invalid, tu_dir_setup, tu_dir_teardown),
        cmocka_unit_test(test_record),
    };
    return cmocka_run_group_tests_name("store_upload", tests, NULL, NULL);
}
