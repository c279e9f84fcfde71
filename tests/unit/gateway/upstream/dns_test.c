/*
 * tests/unit/gateway/upstream/dns_test.c: the lean engine's host-name path
 * (gateway/upstream/lean_conn.c conn_connect: names other than IP literals
 * and *.localhost go through evdns).  A tiny DNS server of our own on
 * 127.0.0.1 UDP, on the same event_base, answers "origin.test" with an A
 * record 127.0.0.1, its AAAA question with no records, and every other name
 * with NXDOMAIN (or nothing at all, in silent mode).  The engine's evdns base
 * is made here, before the first request, with only that server (the test
 * reaches into struct gw_lean; production reads /etc/resolv.conf).  Checked:
 * a GET by name reaches the origin, its pooled connection serves a second
 * GET without another lookup, an unknown name fails with ERR_UPSTREAM and a
 * "could not resolve" text naming the host (and makes the unreachable
 * streak), a lookup that never answers is bounded by connect_timeout_ms,
 * and a client freed with a lookup pending leaks nothing (under ASan).
 * Lean engine only: libcurl cannot be pointed at this resolver without the
 * system's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ctype.h>
#include <event2/dns.h>
#include <fcntl.h>

#include "gateway/upstream/lean.h"
#include "gateway/upstream/upstream.h"

#include "tests/unit/gateway/upstream_harness.h"

#define KNOWN_NAME "origin.test"

/* ---- the DNS server ---- */

struct dns_srv {
    int fd;
    struct event *ev;
    uint16_t port;
    bool silent;    /* read queries, never answer */
    int queries;    /* questions received */
    int a_queries;  /* ... of type A */
    char last[256]; /* the last question's name, lower case */
};

static uint16_t
get16(const unsigned char *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

static void
put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

/* The question's name (lower case) into name; the offset past QTYPE and QCLASS, or 0. */
static size_t
parse_question(const unsigned char *q, size_t len, char *name, size_t size, uint16_t *qtype)
{
    size_t off = 12, out = 0;
    while (off < len && q[off] != 0) {
        size_t l = q[off++];
        if (l > 63 || off + l > len || out + l + 2 > size) {
            return 0;
        }
        if (out > 0) {
            name[out++] = '.';
        }
        for (size_t i = 0; i < l; i++) {
            name[out++] = (char)tolower(q[off + i]);
        }
        off += l;
    }
    name[out] = '\0';
    if (off + 5 > len) {
        return 0;
    }
    *qtype = get16(q + off + 1);
    return off + 5;
}

/* EV_READ|EV_PERSIST on the server's socket (dns_srv_init). */
static void
on_dns_query(evutil_socket_t fd, short what, void *arg)
{
    struct dns_srv *d = arg;
    (void)what;
    unsigned char q[512];
    unsigned char r[512 + 16];
    struct sockaddr_storage from;
    socklen_t flen = sizeof(from);
    ssize_t n = recvfrom(fd, q, sizeof(q), 0, (struct sockaddr *)&from, &flen);
    if (n < 12 || get16(q + 4) != 1) {
        return;
    }
    uint16_t qtype = 0;
    size_t qend = parse_question(q, (size_t)n, d->last, sizeof(d->last), &qtype);
    if (qend == 0) {
        return;
    }
    d->queries++;
    d->a_queries += qtype == 1;
    if (d->silent) {
        return;
    }
    bool known = strcmp(d->last, KNOWN_NAME) == 0;
    memcpy(r, q, qend);                    /* id and question, as asked (0x20 case) */
    put16(r + 2, known ? 0x8180 : 0x8183); /* QR, RD, RA; rcode 0 or 3 (NXDOMAIN) */
    put16(r + 4, 1);
    put16(r + 6, known && qtype == 1 ? 1 : 0);
    put16(r + 8, 0);
    put16(r + 10, 0);
    size_t rl = qend;
    if (known && qtype == 1) {
        static const unsigned char a[] = {0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1};
        memcpy(r + rl, a, sizeof(a));
        rl += sizeof(a);
    }
    (void)sendto(fd, r, rl, 0, (struct sockaddr *)&from, flen);
}

static void
dns_srv_init(struct dns_srv *d, struct event_base *base)
{
    memset(d, 0, sizeof(*d));
    d->fd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(d->fd >= 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = 0};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(d->fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    socklen_t len = sizeof(sin);
    assert_int_equal(getsockname(d->fd, (struct sockaddr *)&sin, &len), 0);
    d->port = ntohs(sin.sin_port);
    assert_int_equal(evutil_make_socket_nonblocking(d->fd), 0);
    d->ev = event_new(base, d->fd, EV_READ | EV_PERSIST, on_dns_query, d);
    assert_non_null(d->ev);
    assert_int_equal(event_add(d->ev, NULL), 0);
}

static void
dns_srv_cleanup(struct dns_srv *d)
{
    event_free(d->ev);
    close(d->fd);
}

/* ---- fixture ---- */

struct dfx {
    struct fx f; /* first: the harness's fixture */
    struct dns_srv dns;
};

/* A lean client whose evdns base asks only our server, quickly. */
static void
use_dns(struct dfx *d, uint32_t connect_timeout_ms)
{
    gw_upstream_free(d->f.up);
    struct gw_upstream_opts o = {.engine = GW_UPSTREAM_LEAN,
                                 .connect_timeout_ms = connect_timeout_ms,
                                 .timeout_ms = 5000,
                                 .max_connections = 8,
                                 .tls_verify = true};
    d->f.up = gw_upstream_new(d->f.base, &o);
    assert_non_null(d->f.up);
    d->f.c.up = d->f.up;
    struct gw_lean *up = (struct gw_lean *)(void *)d->f.up;
    assert_null(up->dns); /* made on first use, so this one is used */
    up->dns = evdns_base_new(d->f.base, 0);
    assert_non_null(up->dns);
    char ns[32];
    (void)snprintf(ns, sizeof(ns), "127.0.0.1:%u", d->dns.port);
    assert_int_equal(evdns_base_nameserver_ip_add(up->dns, ns), 0);
    assert_int_equal(evdns_base_set_option(up->dns, "timeout:", "0.3"), 0);
    assert_int_equal(evdns_base_set_option(up->dns, "attempts:", "1"), 0);
}

static int
dsetup(void **state)
{
    struct dfx *d = calloc(1, sizeof(*d));
    assert_non_null(d);
    d->f.base = event_base_new();
    assert_non_null(d->f.base);
    srv_init(&d->f.srv, d->f.base);
    dns_srv_init(&d->dns, d->f.base);
    cli_init(&d->f.c, &d->f);
    use_dns(d, 2000);
    *state = d;
    return 0;
}

static int
dteardown(void **state)
{
    struct dfx *d = *state;
    gw_upstream_free(d->f.up);
    dns_srv_cleanup(&d->dns);
    srv_cleanup(&d->f.srv);
    event_base_free(d->f.base);
    free(d);
    return 0;
}

/* GET http://<host>:<origin port>/b/k; returns when on_done ran (asserted within ms). */
static void
get_host(struct dfx *d, const char *host, int ms)
{
    char url[128];
    (void)snprintf(url, sizeof(url), "http://%s:%u/b/k", host, d->f.srv.port);
    struct gw_xfer_req rq = {.method = "GET", .url = url, .body_length = -1};
    cli_init(&d->f.c, &d->f);
    assert_int_equal(gw_upstream_xfer_start(d->f.up, &rq, &cbs, &d->f.c, &d->f.c.x), 0);
    assert_true(run_until(d->f.base, &d->f.c.dones, 1, ms));
}

/* ---- tests ---- */

/* A name our server knows: looked up, connected, answered; the pooled connection serves again. */
static void
test_name_resolves_and_pools(void **state)
{
    struct dfx *d = *state;
    d->f.srv.resp_len = 3000;
    get_host(d, KNOWN_NAME, 3000);
    assert_int_equal(d->f.c.err, 0);
    assert_int_equal(d->f.c.status, 200);
    assert_int_equal(d->f.c.body_got, 3000);
    assert_false(d->f.c.body_bad);
    assert_int_equal(d->f.srv.requests, 1);
    assert_int_equal(d->dns.a_queries, 1);
    assert_string_equal(d->dns.last, KNOWN_NAME);
    assert_true(has_ci(d->f.srv.head, "GET /b/k HTTP/1.1\r\n"));
    int queries = d->dns.queries;

    get_host(d, KNOWN_NAME, 3000); /* the idle connection: no lookup, no new connect */
    assert_int_equal(d->f.c.err, 0);
    assert_int_equal(d->f.c.body_got, 3000);
    assert_int_equal(d->f.srv.requests, 2);
    assert_int_equal(d->f.srv.accepts, 1);
    assert_int_equal(d->dns.queries, queries);
}

/* NXDOMAIN: ERR_UPSTREAM before any head, the text names the host; three make the streak. */
static void
test_nxdomain_fails(void **state)
{
    struct dfx *d = *state;
    char why[GW_UPSTREAM_WHY_MAX] = "";
    for (int i = 0; i < GW_UPSTREAM_DOWN_AFTER; i++) {
        assert_false(gw_upstream_unreachable(d->f.up, why, sizeof(why)));
        get_host(d, "nowhere.test", 3000);
        assert_int_equal(d->f.c.err, ERR_UPSTREAM);
        assert_int_equal(d->f.c.heads, 0);
    }
    assert_int_equal(d->dns.a_queries, GW_UPSTREAM_DOWN_AFTER);
    assert_string_equal(d->dns.last, "nowhere.test");
    assert_int_equal(d->f.srv.accepts, 0);
    assert_true(gw_upstream_unreachable(d->f.up, why, sizeof(why)));
    print_message("unreachable: %s\n", why);
    assert_non_null(strstr(why, "could not resolve nowhere.test: "));
    assert_true(strncmp(why, "nowhere.test:", 13) == 0);

    get_host(d, KNOWN_NAME, 3000); /* a response ends the streak */
    assert_int_equal(d->f.c.err, 0);
    assert_false(gw_upstream_unreachable(d->f.up, why, sizeof(why)));
}

/* A server that never answers: connect_timeout_ms bounds the lookup (ERR_TIMEOUT). */
static void
test_silent_server_times_out(void **state)
{
    struct dfx *d = *state;
    use_dns(d, 150); /* shorter than evdns's own 0.3 s timeout */
    d->dns.silent = true;
    uint64_t t0 = clock_mono_ms();
    get_host(d, KNOWN_NAME, 3000);
    uint64_t took = clock_mono_ms() - t0;
    assert_int_equal(d->f.c.err, ERR_TIMEOUT);
    assert_int_equal(d->f.c.heads, 0);
    assert_true(took >= 100 && took < 1000);
    assert_true(d->dns.queries >= 1);
    assert_int_equal(d->f.srv.accepts, 0);
    /* the operator is told it was the name, not the connect */
    const char *err = ((struct gw_lean *)d->f.up)->pub.connect_err;
    assert_non_null(strstr(err, "could not resolve " KNOWN_NAME ": timed out"));
    run_for(d->f.base,
            600); /* evdns gives up meanwhile: nothing may call into the freed connection */
    assert_int_equal(d->f.c.dones, 1);
}

/*
 * The client freed while a lookup is pending, the loop turning on: nothing
 * leaks (LeakSanitizer, make SAN=address): the lookup holds a reference on
 * its connection's bufferevent until its callback runs, so gw_lean_free must
 * fail it, not drop it.
 */
static void
test_free_during_lookup(void **state)
{
    struct dfx *d = *state;
    d->dns.silent = true;
    char url[128];
    (void)snprintf(url, sizeof(url), "http://%s:%u/b/k", KNOWN_NAME, d->f.srv.port);
    struct gw_xfer_req rq = {.method = "GET", .url = url, .body_length = -1};
    assert_int_equal(gw_upstream_xfer_start(d->f.up, &rq, &cbs, &d->f.c, &d->f.c.x), 0);
    assert_true(run_until(d->f.base, &d->dns.queries, 1, 2000));
    gw_upstream_free(d->f.up);
    d->f.up = NULL;
    run_for(d->f.base, 50);
    assert_int_equal(d->f.c.dones, 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_name_resolves_and_pools, dsetup, dteardown),
        cmocka_unit_test_setup_teardown(test_nxdomain_fails, dsetup, dteardown),
        cmocka_unit_test_setup_teardown(test_silent_server_times_out, dsetup, dteardown),
        cmocka_unit_test_setup_teardown(test_free_during_lookup, dsetup, dteardown),
    };
    return cmocka_run_group_tests_name("upstream_dns/lean", tests, NULL, NULL);
}
