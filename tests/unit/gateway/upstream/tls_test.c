/*
 * tests/unit/gateway/upstream/tls_test.c: https upstreams, against both
 * engines: an origin with a certificate from a test CA (made with the
 * openssl command in a temp dir; skipped without it) answers a PUT and a GET
 * with upstream.ca_file set, by IP address and by host name ("localhost",
 * resolved without blocking); the wrong CA and a certificate for another
 * name are refused before any byte of the request leaves (ERR_UPSTREAM, no
 * head).  The origin is upstream_harness.h's server on a TLS bufferevent
 * (gateway/http/tls.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/http/tls.h"
#include "gateway/upstream/upstream.h"

#include "tests/unit/gateway/upstream_harness.h"

static char dir[64];    /* the temp dir with the PEM files */
static bool have_certs; /* the openssl command made them */

static void
path_of(char *out, size_t len, const char *name)
{
    (void)snprintf(out, len, "%s/%s", dir, name);
}

static int
sh(const char *cmd)
{
    char full[2048];
    (void)snprintf(full, sizeof(full), "cd %s && { %s ; } >/dev/null 2>&1", dir, cmd);
    return system(full);
}

/* Two CAs; "good" (localhost, 127.0.0.1) and "other" (other.example) signed by the first. */
static int
make_certs(void **state)
{
    (void)state;
    (void)snprintf(dir, sizeof(dir), "/tmp/upstream_tlsXXXXXX");
    assert_non_null(mkdtemp(dir));
    static const char *const cmds[] = {
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key "
        "-out ca.pem -days 2 -subj /CN=fencegate-test-ca",
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca2.key "
        "-out ca2.pem -days 2 -subj /CN=fencegate-other-ca",
        "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > good.ext && "
        "printf 'subjectAltName=DNS:other.example\\n' > other.ext",
        "for n in good other; do openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
        "-keyout $n.key -out $n.csr -subj /CN=$n && openssl x509 -req -in $n.csr -CA ca.pem "
        "-CAkey ca.key -CAcreateserial -days 2 -extfile $n.ext -out $n.pem || exit 1; done",
    };
    have_certs = true;
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        if (sh(cmds[i]) != 0) {
            have_certs = false;
        }
    }
    return 0;
}

static int
remove_certs(void **state)
{
    (void)state;
    (void)sh("rm -f ca.key ca.pem ca.srl ca2.key ca2.pem good.* other.*");
    (void)rmdir(dir);
    return 0;
}

/* The fixture's origin on TLS with cert name, and a client trusting ca (a file in dir). */
static void
use_tls(struct fx *f, const char *cert, const char *ca)
{
    if (!have_certs) {
        skip();
    }
    char crt[128], key[128], cafile[128], err[256];
    (void)snprintf(crt, sizeof(crt), "%s/%s.pem", dir, cert);
    (void)snprintf(key, sizeof(key), "%s/%s.key", dir, cert);
    path_of(cafile, sizeof(cafile), ca);
    assert_int_equal(gw_tls_new(crt, key, &f->srv.tls, err, sizeof(err)), 0);
    gw_upstream_free(f->up);
    struct gw_upstream_opts o = {.engine = harness_engine,
                                 .connect_timeout_ms = 2000,
                                 .timeout_ms = 5000,
                                 .max_connections = 8,
                                 .ca_file = cafile,
                                 .tls_verify = true};
    f->up = gw_upstream_new(f->base, &o);
    assert_non_null(f->up);
    /* ca_file is borrowed only during gw_upstream_new: every later transfer must
     * still find the CAs after the caller's string is gone */
    memset(cafile, 'x', sizeof(cafile) - 1);
    f->c.up = f->up;
}

static int
tls_teardown(void **state)
{
    struct fx *f = *state;
    struct gw_tls *t = f->srv.tls;
    (void)teardown(state);
    gw_tls_free(t);
    return 0;
}

/* start() for https://host:port path. */
static int
start_tls(struct cli *c, const char *host, const char *method, const char *path, int64_t len)
{
    char url[256];
    (void)snprintf(url, sizeof(url), "https://%s:%u%s", host, c->srv->port, path);
    struct gw_xfer_req rq = {.method = method, .url = url, .body_length = len};
    if (len >= 0) {
        c->up_len = (uint64_t)len;
        c->stop_at = UINT64_MAX;
    }
    return gw_upstream_xfer_start(c->up, &rq, &cbs, c, &c->x);
}

static void
test_put_get_over_tls(void **state)
{
    struct fx *f = *state;
    use_tls(f, "good", "ca.pem");
    const char *const hosts[] = {"127.0.0.1", "localhost"};
    for (int i = 0; i < 2; i++) {
        cli_init(&f->c, f);
        assert_int_equal(start_tls(&f->c, hosts[i], "PUT", "/b/k", 3 * MIB + 1), 0);
        assert_true(run_until(f->base, &f->c.dones, 1, 10000));
        assert_int_equal(f->c.err, 0);
        assert_int_equal(f->c.status, 200);
        assert_true(f->srv.body_ok);
        assert_int_equal(f->srv.live_got, 3 * MIB + 1);
        f->srv.resp_len = 2 * MIB + 3;
        cli_init(&f->c, f);
        assert_int_equal(start_tls(&f->c, hosts[i], "GET", "/b/k", -1), 0);
        assert_true(run_until(f->base, &f->c.dones, 1, 10000));
        assert_int_equal(f->c.err, 0);
        assert_int_equal(f->c.body_got, 2 * MIB + 3);
        assert_false(f->c.body_bad);
        f->srv.resp_len = 0;
    }
    assert_int_equal(f->srv.requests, 4);
    assert_int_equal(f->srv.accepts, 2); /* one connection per host name, reused */
}

static void
test_wrong_ca_refused(void **state)
{
    struct fx *f = *state;
    use_tls(f, "good", "ca2.pem");
    assert_int_equal(start_tls(&f->c, "127.0.0.1", "PUT", "/b/k", 1000), 0);
    assert_true(run_until(f->base, &f->c.dones, 1, 5000));
    assert_int_equal(f->c.err, ERR_UPSTREAM);
    assert_int_equal(f->c.heads, 0);
    assert_int_equal(f->srv.heads, 0);
}

static void
test_wrong_host_name_refused(void **state)
{
    struct fx *f = *state;
    use_tls(f, "other", "ca.pem");
    const char *const hosts[] = {"127.0.0.1", "localhost"};
    for (int i = 0; i < 2; i++) {
        cli_init(&f->c, f);
        assert_int_equal(start_tls(&f->c, hosts[i], "GET", "/b/k", -1), 0);
        assert_true(run_until(f->base, &f->c.dones, 1, 5000));
        assert_int_equal(f->c.err, ERR_UPSTREAM);
        assert_int_equal(f->c.heads, 0);
    }
    assert_int_equal(f->srv.heads, 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_put_get_over_tls, setup, tls_teardown),
        cmocka_unit_test_setup_teardown(test_wrong_ca_refused, setup, tls_teardown),
        cmocka_unit_test_setup_teardown(test_wrong_host_name_refused, setup, tls_teardown),
    };
    (void)signal(SIGPIPE, SIG_IGN); /* the origin writes to clients that gave up */
    (void)make_certs(NULL);
    int fails = run_both_engines("upstream_tls", tests, sizeof(tests) / sizeof(tests[0]));
    (void)remove_certs(NULL);
    return fails;
}
