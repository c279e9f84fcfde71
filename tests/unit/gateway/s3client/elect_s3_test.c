/*
 * tests/unit/gateway/s3client/elect_s3_test.c: the s3 election backend's pure parts
 * (status mapping) through its statics, and the
 * asynchronous contract without a store: synchronous refusals run no
 * callback, a refused connection is ERR_UPSTREAM from the loop (never before
 * the call returns), and free cancels pending operations silently.  The
 * behaviour against a real S3 is tests/integration/test_elect_s3_backend.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gateway/base/config.h"
#include "gateway/s3client/elect_s3.c"
#include "gateway/upstream/upstream.h"

static void
test_map_status(void **state)
{
    (void)state;
    static const struct {
        enum op_kind kind;
        int status;
        const char *code;
        int want;
    } cases[] = {
        {OP_CREATE, 200, NULL, 0},
        {OP_CREATE, 412, "PreconditionFailed", ERR_EXISTS},
        {OP_CREATE, 409, "ConditionalRequestConflict", ERR_CONFLICT},
        {OP_CREATE, 500, "UnknownError", ERR_UPSTREAM},
        {OP_CREATE, 503, "SlowDown", ERR_UPSTREAM},
        {OP_CREATE, 403, "AccessDenied", ERR_DENIED},
        {OP_CREATE, 401, NULL, ERR_DENIED},
        {OP_CREATE, 404, "NoSuchBucket", ERR_NOTFOUND},
        {OP_CREATE, 400, "RequestTimeout", ERR_TIMEOUT},
        {OP_CREATE, 400, "InvalidArgument", ERR_INVAL},
        {OP_CREATE, 408, NULL, ERR_TIMEOUT},
        {OP_CREATE, 413, "EntityTooLarge", ERR_TOOBIG},
        {OP_CREATE, 501, "NotImplemented", ERR_UNSUPPORTED},
        {OP_CREATE, 301, "PermanentRedirect", ERR_UPSTREAM},
        {OP_CREATE, 429, NULL, ERR_UPSTREAM},
        {OP_REPLACE, 200, NULL, 0},
        {OP_REPLACE, 412, "PreconditionFailed", ERR_CONFLICT},
        {OP_REPLACE, 409, NULL, ERR_CONFLICT},
        {OP_REPLACE, 404, "NoSuchKey", ERR_NOTFOUND},
        {OP_GET, 200, NULL, 0},
        {OP_GET, 404, "NoSuchKey", ERR_NOTFOUND},
        {OP_GET, 412, NULL, ERR_UPSTREAM},
        {OP_LIST, 404, "NoSuchBucket", ERR_NOTFOUND},
        {OP_LIST, 500, NULL, ERR_UPSTREAM},
        {OP_DEL, 204, NULL, 0},
        {OP_DEL, 200, NULL, 0},
        {OP_DEL, 404, "NoSuchKey", 0},
        {OP_DEL, 403, NULL, ERR_DENIED},
        {OP_DEL, 0, NULL, ERR_UPSTREAM},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(map_status(cases[i].kind, cases[i].status, cases[i].code), cases[i].want);
    }
}

/* ---- the asynchronous contract, with nothing listening ---- */

struct result {
    int calls; /* callbacks seen */
    int err;   /* the last err */
};

static bool in_call; /* a backend call is running */

static void
on_w(void *arg, int err, const struct elect_obj_meta *meta)
{
    struct result *r = arg;
    assert_false(in_call);
    assert_null(meta);
    r->calls++;
    r->err = err;
}

static void
on_g(void *arg, int err, const char *body, size_t len, const struct elect_obj_meta *meta)
{
    struct result *r = arg;
    assert_false(in_call);
    assert_null(body);
    assert_int_equal(len, 0);
    assert_null(meta);
    r->calls++;
    r->err = err;
}

static void
on_l(void *arg, int err, const char *const *keys, size_t n, bool truncated)
{
    struct result *r = arg;
    assert_false(in_call);
    assert_null(keys);
    assert_int_equal(n, 0);
    assert_false(truncated);
    r->calls++;
    r->err = err;
}

static void
on_d(void *arg, int err)
{
    struct result *r = arg;
    assert_false(in_call);
    r->calls++;
    r->err = err;
}

/* A callback that frees the backend (arg) from inside; counts in freed_calls. */
static int freed_calls;

static void
on_w_free(void *arg, int err, const struct elect_obj_meta *meta)
{
    (void)err;
    (void)meta;
    freed_calls++;
    elect_backend_free(arg);
}

/* A port on 127.0.0.1 that refuses connections (bound, never listened on). */
static char endpoint[64];

static struct gw_config *
refusing_cfg(int *fd)
{
    *fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(*fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(*fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    socklen_t sl = sizeof(sa);
    assert_int_equal(getsockname(*fd, (struct sockaddr *)&sa, &sl), 0);
    (void)snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%u", ntohs(sa.sin_port));
    struct gw_config *cfg = calloc(1, sizeof(*cfg));
    assert_non_null(cfg);
    static char region[] = "us-east-1";
    static char ak[] = "AK";
    static char sk[] = "SK";
    cfg->upstream.endpoint = endpoint;
    cfg->upstream.region = region;
    cfg->upstream.access_key = ak;
    cfg->upstream.secret_key = sk;
    return cfg;
}

static void
test_async_contract(void **state)
{
    (void)state;
    int fd;
    struct gw_config *cfg = refusing_cfg(&fd);
    struct event_base *base = event_base_new();
    assert_non_null(base);
    struct gw_upstream_opts uo = {.connect_timeout_ms = 2000, .timeout_ms = 5000};
    struct gw_upstream *up = gw_upstream_new(base, &uo);
    assert_non_null(up);
    char errbuf[128];
    struct gw_s3client *s3c = gw_s3client_new(up, cfg, errbuf, sizeof(errbuf));
    assert_non_null(s3c);

    /* Bad constructor arguments. */
    assert_null(gw_elect_s3_new(s3c, "bad/bucket", errbuf, sizeof(errbuf)));
    assert_null(gw_elect_s3_new(s3c, "", NULL, 0));
    assert_null(gw_elect_s3_new(NULL, "b", errbuf, sizeof(errbuf)));

    struct elect_backend *be = gw_elect_s3_new(s3c, "locks", errbuf, sizeof(errbuf));
    assert_non_null(be);
    assert_string_equal(elect_backend_name(be), "s3:locks");

    /* Synchronous refusals: no callback, ever. */
    struct result r0 = {0};
    in_call = true;
    assert_int_equal(elect_backend_replace(be, "k", "a\"b", ELECT_ETAG_QUOTED, "x", 1, on_w, &r0),
                     ERR_INVAL);
    in_call = false;

    /* Every operation against a refusing port: ERR_UPSTREAM, from the loop. */
    struct result r[5] = {{0}};
    in_call = true;
    assert_int_equal(elect_backend_create(be, "p/k", "body", 4, on_w, &r[0]), 0);
    assert_int_equal(
        elect_backend_replace(be, "p/k", "abc", ELECT_ETAG_UNQUOTED, "b", 1, on_w, &r[1]), 0);
    assert_int_equal(elect_backend_get(be, "p/k", on_g, &r[2]), 0);
    assert_int_equal(elect_backend_list(be, "p/", "p/a", 7, on_l, &r[3]), 0);
    assert_int_equal(elect_backend_del(be, "p/k", on_d, &r[4]), 0);
    in_call = false;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(r[i].calls, 0);
    }
    for (int spins = 0; spins < 500; spins++) {
        int done = 0;
        for (int i = 0; i < 5; i++) {
            done += r[i].calls;
        }
        if (done == 5) {
            break;
        }
        (void)event_base_loop(base, EVLOOP_ONCE);
    }
    for (int i = 0; i < 5; i++) {
        assert_int_equal(r[i].calls, 1);
        assert_int_equal(r[i].err, ERR_UPSTREAM);
    }

    /* Free with operations pending: no callback runs, nothing leaks. */
    struct result rc = {0};
    assert_int_equal(elect_backend_create(be, "p/k2", "body", 4, on_w, &rc), 0);
    assert_int_equal(elect_backend_get(be, "p/k2", on_g, &rc), 0);
    assert_int_equal(gw_s3client_pending(s3c), 2);
    elect_backend_free(be);
    assert_int_equal(gw_s3client_pending(s3c), 0);
    for (int spins = 0; spins < 20; spins++) {
        (void)event_base_loop(base, EVLOOP_NONBLOCK);
    }
    assert_int_equal(rc.calls, 0);

    /* A callback may free the backend: the other pending ones never run. */
    be = gw_elect_s3_new(s3c, "locks", errbuf, sizeof(errbuf));
    assert_non_null(be);
    freed_calls = 0;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(elect_backend_create(be, "p/k3", "b", 1, on_w_free, be), 0);
    }
    for (int spins = 0; spins < 500 && freed_calls == 0; spins++) {
        (void)event_base_loop(base, EVLOOP_ONCE);
    }
    for (int spins = 0; spins < 20; spins++) {
        (void)event_base_loop(base, EVLOOP_NONBLOCK);
    }
    assert_int_equal(freed_calls, 1);
    assert_int_equal(gw_s3client_pending(s3c), 0);

    gw_s3client_free(s3c);
    gw_upstream_free(up);
    event_base_free(base);
    (void)close(fd);
    free(cfg);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map_status),
        cmocka_unit_test(test_async_contract),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
