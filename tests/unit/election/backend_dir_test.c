/*
 * Unit tests for election/backend_dir.c: the operations on a real directory
 * under mkdtemp, then the election over it (several instances and several
 * processes sharing one directory, restart, expiry on a pinned clock).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <event2/event.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include "../store/testutil.h"
#include "common/clock.h"
#include "common/num.h"
#include "election/backend_dir.h"
#include "election/elect.h"
#include "election/lockfile.h"
#include "store/store.h"

#define WALL0 INT64_C(1795000000000)

struct env {
    char *dir;  /* the election directory */
    char *sdir; /* the store's */
    struct store *store;
    struct event_base *base;
    struct elect *e[8];
    int ne;
    uint64_t now;
};

static void
set_time(struct env *v, uint64_t mono)
{
    v->now = mono;
    clock_pin(mono, WALL0 + (int64_t)mono);
}

static int
setup(void **state)
{
    struct env *v = calloc(1, sizeof(*v));
    set_time(v, 5000);
    v->dir = tl_dir_new("store");
    v->sdir = tl_dir_new("store");
    v->store = tu_open(v->sdir, false);
    v->base = event_base_new();
    *state = v;
    return 0;
}

static int
teardown(void **state)
{
    struct env *v = *state;
    for (int i = 0; i < v->ne; i++) {
        elect_free(v->e[i]);
    }
    store_close(v->store);
    event_base_free(v->base);
    tl_dir_free(v->dir);
    tl_dir_free(v->sdir);
    clock_unpin();
    free(v);
    return 0;
}

/* Run the loop (deferred backend callbacks) and store completions until quiet. */
static void
run(struct env *v)
{
    for (int quiet = 0, spins = 0; quiet < 3 && spins < 100000; spins++) {
        (void)event_base_loop(v->base, EVLOOP_NONBLOCK);
        size_t n = store_dispatch_completions(v->store);
        struct store_stats st;
        store_stats_get(v->store, &st);
        if (n == 0 && st.queue_depth > 0) {
            struct pollfd p = {.fd = store_completion_fd(v->store), .events = POLLIN};
            (void)poll(&p, 1, 50);
        }
        quiet = n == 0 && st.queue_depth == 0 ? quiet + 1 : 0;
    }
}

static struct elect_backend *
dir_be(struct env *v)
{
    struct elect_backend *be = NULL;
    char err[256];
    assert_int_equal(elect_backend_dir_new(v->base, v->dir, &be, err, sizeof(err)), 0);
    return be;
}

/* ---- backend operations ---- */

struct wres {
    int calls;
    int err;
    struct elect_obj_meta meta;
    char body[ELECT_OBJ_MAX + 1];
    size_t len;
    char keys[16][ELECT_KEY_MAX + 1];
    size_t n;
    bool truncated;
};

static void
on_write(void *arg, int err, const struct elect_obj_meta *meta)
{
    struct wres *r = arg;
    r->calls++;
    r->err = err;
    if (meta != NULL) {
        r->meta = *meta;
    }
}

static void
on_get(void *arg, int err, const char *body, size_t len, const struct elect_obj_meta *meta)
{
    struct wres *r = arg;
    r->calls++;
    r->err = err;
    r->len = len;
    if (body != NULL) {
        memcpy(r->body, body, len);
        r->body[len] = '\0';
        r->meta = *meta;
    }
}

static void
on_list(void *arg, int err, const char *const *keys, size_t n, bool truncated)
{
    struct wres *r = arg;
    r->calls++;
    r->err = err;
    r->n = n < 16 ? n : 16;
    for (size_t i = 0; i < r->n; i++) {
        (void)snprintf(r->keys[i], sizeof(r->keys[i]), "%s", keys[i]);
    }
    r->truncated = truncated;
}

static void
on_del(void *arg, int err)
{
    struct wres *r = arg;
    r->calls++;
    r->err = err;
}

static int
do_create(struct env *v, struct elect_backend *be, const char *key, const char *body,
          struct wres *r)
{
    memset(r, 0, sizeof(*r));
    assert_int_equal(elect_backend_create(be, key, body, strlen(body), on_write, r), 0);
    assert_int_equal(r->calls, 0); /* deferred */
    run(v);
    assert_int_equal(r->calls, 1);
    return r->err;
}

static int
do_replace(struct env *v, struct elect_backend *be, const char *key, const char *etag,
           enum elect_etag_form form, const char *body, struct wres *r)
{
    memset(r, 0, sizeof(*r));
    assert_int_equal(elect_backend_replace(be, key, etag, form, body, strlen(body), on_write, r),
                     0);
    assert_int_equal(r->calls, 0);
    run(v);
    assert_int_equal(r->calls, 1);
    return r->err;
}

static int
do_get(struct env *v, struct elect_backend *be, const char *key, struct wres *r)
{
    memset(r, 0, sizeof(*r));
    assert_int_equal(elect_backend_get(be, key, on_get, r), 0);
    assert_int_equal(r->calls, 0);
    run(v);
    assert_int_equal(r->calls, 1);
    return r->err;
}

static int
do_list(struct env *v, struct elect_backend *be, const char *prefix, const char *after,
        uint32_t max, struct wres *r)
{
    memset(r, 0, sizeof(*r));
    assert_int_equal(elect_backend_list(be, prefix, after, max, on_list, r), 0);
    assert_int_equal(r->calls, 0);
    run(v);
    assert_int_equal(r->calls, 1);
    return r->err;
}

static int
do_del(struct env *v, struct elect_backend *be, const char *key, struct wres *r)
{
    memset(r, 0, sizeof(*r));
    assert_int_equal(elect_backend_del(be, key, on_del, r), 0);
    assert_int_equal(r->calls, 0);
    run(v);
    assert_int_equal(r->calls, 1);
    return r->err;
}

static void
test_dir_operations(void **state)
{
    struct env *v = *state;
    struct elect_backend *be = dir_be(v);
    assert_non_null(strstr(elect_backend_name(be), "dir:"));
    struct wres r, g;
    const char *k = "fg/orders/epoch-00000000000000000001.json";
    assert_int_equal(do_create(v, be, k, "one", &r), 0);
    char etag1[ELECT_ETAG_MAX + 1];
    (void)snprintf(etag1, sizeof(etag1), "%s", r.meta.etag);
    assert_true(strlen(etag1) > 0);
    assert_int_equal(r.meta.last_modified_ms, WALL0 + 5000);
    /* create-if-absent */
    assert_int_equal(do_create(v, be, k, "two", &r), ERR_EXISTS);
    assert_int_equal(do_get(v, be, k, &g), 0);
    assert_string_equal(g.body, "one");
    assert_string_equal(g.meta.etag, etag1);
    set_time(v, 7000);
    assert_int_equal(do_get(v, be, k, &g), 0);
    assert_int_equal(g.meta.date_ms - g.meta.last_modified_ms, 2000); /* one clock */
    /* replace-if-match */
    assert_int_equal(do_replace(v, be, k, "nope", ELECT_ETAG_QUOTED, "x", &r), ERR_CONFLICT);
    assert_int_equal(do_replace(v, be, k, etag1, ELECT_ETAG_UNQUOTED, "three", &r), 0);
    char etag2[ELECT_ETAG_MAX + 1];
    (void)snprintf(etag2, sizeof(etag2), "%s", r.meta.etag);
    assert_string_not_equal(etag1, etag2);
    assert_int_equal(do_replace(v, be, k, etag1, ELECT_ETAG_QUOTED, "four", &r), ERR_CONFLICT);
    assert_int_equal(do_replace(v, be, k, etag2, ELECT_ETAG_QUOTED, "four", &r), 0);
    assert_int_equal(do_get(v, be, k, &g), 0);
    assert_string_equal(g.body, "four");
    assert_int_equal(g.meta.last_modified_ms, WALL0 + 7000);
    assert_int_equal(do_replace(v, be, "fg/orders/missing", etag2, ELECT_ETAG_QUOTED, "x", &r),
                     ERR_NOTFOUND);
    assert_int_equal(do_get(v, be, "fg/orders/missing", &g), ERR_NOTFOUND);
    assert_int_equal(do_get(v, be, "fg/nodir/missing", &g), ERR_NOTFOUND);
    /* list: prefix, start-after, max, truncated, byte order */
    for (int i = 2; i <= 5; i++) {
        char key[ELECT_KEY_MAX + 1];
        assert_int_equal(elect_lockfile_key("fg/", "orders", (uint64_t)i, key, sizeof(key)), 0);
        assert_int_equal(do_create(v, be, key, "x", &r), 0);
    }
    assert_int_equal(do_create(v, be, "fg/orders2/epoch-00000000000000000001.json", "x", &r), 0);
    assert_int_equal(do_list(v, be, "fg/orders/", NULL, 3, &r), 0);
    assert_int_equal(r.n, 3);
    assert_true(r.truncated);
    assert_string_equal(r.keys[0], k);
    char after[ELECT_KEY_MAX + 1];
    (void)snprintf(after, sizeof(after), "%s", r.keys[2]);
    assert_int_equal(do_list(v, be, "fg/orders/", after, 3, &r), 0);
    assert_int_equal(r.n, 2);
    assert_false(r.truncated);
    assert_string_equal(r.keys[1], "fg/orders/epoch-00000000000000000005.json");
    assert_int_equal(do_list(v, be, "fg/orders", NULL, 100, &r), 0);
    assert_int_equal(r.n, 6); /* orders/ and orders2/ */
    assert_int_equal(do_list(v, be, "", NULL, 100, &r), 0);
    assert_int_equal(r.n, 6); /* .tmp/ is not listed */
    assert_int_equal(do_list(v, be, "fg/none/", NULL, 100, &r), 0);
    assert_int_equal(r.n, 0);
    /* delete */
    assert_int_equal(do_del(v, be, k, &r), 0);
    assert_int_equal(do_get(v, be, k, &g), ERR_NOTFOUND);
    assert_int_equal(do_del(v, be, k, &r), 0); /* missing is fine */
    assert_int_equal(do_del(v, be, "fg/nodir/x", &r), 0);
    /* keys that are not safe paths */
    const char *bad[] = {"../x", "/abs", ".tmp/x", "a//b", "a/./b", "a/../b", "a/", "a\nb"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(elect_backend_create(be, bad[i], "x", 1, on_write, &r), ERR_INVAL);
        assert_int_equal(elect_backend_get(be, bad[i], on_get, &r), ERR_INVAL);
    }
    /* free cancels pending callbacks */
    memset(&r, 0, sizeof(r));
    assert_int_equal(
        elect_backend_get(be, "fg/orders2/epoch-00000000000000000001.json", on_get, &r), 0);
    elect_backend_free(be);
    run(v);
    assert_int_equal(r.calls, 0);
}

/* ---- the election over the dir backend ---- */

static struct elect *
new_elect(struct env *v, uint32_t keep)
{
    struct elect_opts o;
    elect_opts_init(&o);
    o.base = v->base;
    o.backend = dir_be(v);
    o.store = v->store;
    o.prefix = "fg/";
    o.granted_by = "gw";
    o.keep_epochs = keep;
    o.min_lease_ms = 100;
    o.commit_margin_ms = 50; /* leases of 1 s: the default 1000 would refuse every renewal */
    struct elect *e = NULL;
    assert_int_equal(elect_new(&o, &e), 0);
    assert_int_equal(elect_start(e), 0);
    run(v);
    const char *why = NULL;
    assert_true(elect_ready(e, &why));
    assert_int_equal(elect_etag_form_used(e), ELECT_ETAG_QUOTED);
    v->e[v->ne++] = e;
    return e;
}

struct res {
    int calls;
    int err;
    struct elect_info info;
    uint64_t at;
};

static void
on_done(void *arg, int err, const struct elect_info *info)
{
    struct res *r = arg;
    r->calls++;
    r->err = err;
    r->info = *info;
    r->at = clock_mono_ms();
}

static void
acquire(struct elect *e, const char *lock, const char *holder, uint32_t lease, uint32_t wait,
        struct res *r)
{
    memset(r, 0, sizeof(*r));
    assert_int_equal(elect_acquire(e, lock, holder, lease, wait, on_done, r, NULL), 0);
}

static int
release(struct env *v, struct elect *e, const char *lock, uint64_t token, const char *id)
{
    struct res r = {0};
    assert_int_equal(elect_release(e, lock, token, id, on_done, &r, NULL), 0);
    run(v);
    assert_int_equal(r.calls, 1);
    return r.err;
}

static int
renew(struct env *v, struct elect *e, const char *lock, uint64_t token, const char *id,
      struct res *r)
{
    memset(r, 0, sizeof(*r));
    assert_int_equal(elect_renew(e, lock, token, id, on_done, r, NULL), 0);
    run(v);
    assert_int_equal(r->calls, 1);
    return r->err;
}

static void
test_dir_32_contenders_four_instances(void **state)
{
    struct env *v = *state;
    struct elect *es[4];
    for (int i = 0; i < 4; i++) {
        es[i] = new_elect(v, 3);
    }
    static struct res r[32];
    char holders[32][8];
    for (int round = 1; round <= 10; round++) {
        for (int i = 0; i < 32; i++) {
            (void)snprintf(holders[i], sizeof(holders[i]), "w%d", i);
            acquire(es[i % 4], "hot", holders[i], 5000, 0, &r[i]);
        }
        run(v);
        int winner = -1;
        for (int i = 0; i < 32; i++) {
            assert_int_equal(r[i].calls, 1);
            if (r[i].err == 0) {
                assert_int_equal(winner, -1);
                winner = i;
            } else {
                assert_int_equal(r[i].err, ERR_CONFLICT);
            }
        }
        assert_true(winner >= 0);
        assert_int_equal(r[winner].info.token, (uint64_t)round);
        for (int i = 0; i < 32; i++) {
            if (i != winner) {
                assert_string_equal(r[i].info.holder, holders[winner]);
                assert_int_equal(r[i].info.token, (uint64_t)round);
            }
        }
        assert_int_equal(
            release(v, es[winner % 4], "hot", (uint64_t)round, r[winner].info.lease_id), 0);
        set_time(v, v->now + 1);
    }
}

static void
test_dir_expiry_restart_gc(void **state)
{
    struct env *v = *state;
    struct elect *e = new_elect(v, 2);
    struct res a, b, q;
    acquire(e, "L", "A", 1000, 0, &a);
    run(v);
    assert_int_equal(a.err, 0);
    acquire(e, "L", "B", 1000, 10000, &b);
    run(v);
    assert_int_equal(b.calls, 0);
    uint64_t last = v->now;
    for (int i = 0; i < 3; i++) {
        set_time(v, v->now + 300);
        elect_on_timer(e);
        run(v);
        assert_int_equal(renew(v, e, "L", a.info.token, a.info.lease_id, &q), 0);
        last = v->now;
    }
    /* A stops renewing: B takes over within lease + 250 ms of expiry */
    while (b.calls == 0 && v->now < last + 5000) {
        set_time(v, v->now + 10);
        elect_on_timer(e);
        run(v);
    }
    assert_int_equal(b.err, 0);
    assert_int_equal(b.info.token, 2);
    assert_true(b.at >= last + 1000 && b.at <= last + 1250);
    assert_int_equal(renew(v, e, "L", 1, a.info.lease_id, &q), ERR_CONFLICT);
    assert_string_equal(q.info.holder, "B");
    /* restart: a new instance over the same directory and store */
    elect_free(e);
    v->e[0] = NULL;
    struct elect *e2 = new_elect(v, 2);
    assert_int_equal(renew(v, e2, "L", 2, b.info.lease_id, &q), 0);
    struct res c;
    acquire(e2, "L", "C", 1000, 0, &c);
    run(v);
    assert_int_equal(c.err, ERR_CONFLICT);
    assert_int_equal(release(v, e2, "L", 2, b.info.lease_id), 0);
    for (int i = 3; i <= 6; i++) {
        acquire(e2, "L", "C", 1000, 0, &c);
        run(v);
        assert_int_equal(c.err, 0);
        assert_int_equal(c.info.token, (uint64_t)i);
        assert_int_equal(release(v, e2, "L", c.info.token, c.info.lease_id), 0);
    }
    /* GC keeps the last 2, never the latest */
    for (int i = 0; i < 30; i++) {
        set_time(v, v->now + 100);
        elect_on_timer(e2);
        run(v);
    }
    struct elect_backend *be = dir_be(v);
    struct wres r;
    assert_int_equal(do_list(v, be, "fg/L/", NULL, 100, &r), 0);
    assert_int_equal(r.n, 2);
    assert_string_equal(r.keys[0], "fg/L/epoch-00000000000000000005.json");
    assert_string_equal(r.keys[1], "fg/L/epoch-00000000000000000006.json");
    elect_backend_free(be);
}

/* ---- several processes over one directory ---- */

#define NPROC  4
#define NGRANT 15

struct child {
    struct event_base *base;
    struct elect *e;
    int fd;
    int granted;
    bool waiting;
    char name[16];
};

static void
on_child_released(void *arg, int err, const struct elect_info *info)
{
    struct child *c = arg;
    (void)info;
    if (err != 0) {
        _exit(5);
    }
    c->waiting = false;
}

static void
on_child_done(void *arg, int err, const struct elect_info *info)
{
    struct child *c = arg;
    c->waiting = false;
    if (err == 0) {
        /* report the epoch, then release so the others get theirs */
        char line[64];
        int n = snprintf(line, sizeof(line), "%llu\n", (unsigned long long)info->token);
        if (write(c->fd, line, (size_t)n) != n) {
            _exit(3);
        }
        c->granted++;
        struct elect_call *call;
        if (elect_release(c->e, info->lock, info->token, info->lease_id, on_child_released, c,
                          &call) != 0) {
            _exit(4);
        }
        c->waiting = true;
        return;
    }
    (void)info;
}

static void
start_acquire(struct child *c)
{
    if (elect_acquire(c->e, "mp", c->name, 5000, 200, on_child_done, c, NULL) == 0) {
        c->waiting = true;
    }
}

static void
child_main(const char *dir, int idx, int fd)
{
    clock_unpin();
    (void)log_set_level("error");
    struct child c = {.fd = fd};
    (void)snprintf(c.name, sizeof(c.name), "p%d", idx);
    c.base = event_base_new();
    struct elect_opts o;
    elect_opts_init(&o);
    o.base = c.base;
    char err[256];
    if (elect_backend_dir_new(c.base, dir, &o.backend, err, sizeof(err)) != 0) {
        _exit(1);
    }
    o.prefix = "fg/";
    o.granted_by = c.name;
    o.poll_ms = 20;
    if (elect_new(&o, &c.e) != 0 || elect_start(c.e) != 0) {
        _exit(1);
    }
    uint64_t end = clock_mono_ms() + 20000;
    while (c.granted < NGRANT && clock_mono_ms() < end) {
        if (!c.waiting && elect_ready(c.e, NULL)) {
            start_acquire(&c);
        }
        (void)event_base_loop(c.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        (void)usleep(200);
    }
    /* let the last release land */
    for (int i = 0; i < 100 && c.waiting; i++) {
        (void)event_base_loop(c.base, EVLOOP_NONBLOCK);
        (void)usleep(1000);
    }
    elect_free(c.e);
    event_base_free(c.base);
    _exit(c.granted == NGRANT ? 0 : 2);
}

static void
test_dir_multi_process(void **state)
{
    struct env *v = *state;
    /* fork() copies only the calling thread: a lock another thread (the store's
     * worker) held at that instant stays locked forever in the child (under
     * ASan, the allocator's), and the child hangs.  The children need no store,
     * so stop its thread first. */
    store_close(v->store);
    v->store = NULL;
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pids[NPROC];
    for (int i = 0; i < NPROC; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            (void)close(p[0]);
            child_main(v->dir, i, p[1]);
        }
    }
    (void)close(p[1]);
    char buf[8192];
    size_t got = 0;
    /* the children give up after 20 s; a child that hangs anyway fails the test */
    uint64_t deadline = clock_mono_ms() + 60000;
    for (;;) {
        struct pollfd pf = {.fd = p[0], .events = POLLIN};
        uint64_t now = clock_mono_ms();
        if (now >= deadline || poll(&pf, 1, (int)(deadline - now)) <= 0) {
            for (int i = 0; i < NPROC; i++) {
                (void)kill(pids[i], SIGKILL);
                (void)waitpid(pids[i], NULL, 0);
            }
            fail_msg("the children did not finish within 60 s");
        }
        ssize_t n = read(p[0], buf + got, sizeof(buf) - 1 - got);
        if (n <= 0) {
            break;
        }
        got += (size_t)n;
    }
    buf[got] = '\0';
    (void)close(p[0]);
    for (int i = 0; i < NPROC; i++) {
        int status = 0;
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    /* every epoch granted exactly once, 1..NPROC*NGRANT */
    static int seen[NPROC * NGRANT + 1];
    memset(seen, 0, sizeof(seen));
    int count = 0;
    for (char *line = buf; *line != '\0';) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        *nl = '\0';
        uint64_t ep = 0;
        assert_int_equal(parse_u64(line, 1, NPROC * NGRANT, &ep), 0);
        seen[ep]++;
        count++;
        line = nl + 1;
    }
    assert_int_equal(count, NPROC * NGRANT);
    for (int i = 1; i <= NPROC * NGRANT; i++) {
        assert_int_equal(seen[i], 1);
    }
}

int
main(void)
{
    (void)log_set_level(getenv("FENCEGATE_TEST_LOG") != NULL ? getenv("FENCEGATE_TEST_LOG")
                                                             : "error");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_dir_operations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dir_32_contenders_four_instances, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dir_expiry_restart_gc, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dir_multi_process, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
