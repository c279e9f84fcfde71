/*
 * tests/unit/gateway/http/fair_test.c: fair use in the HTTP/1.x server
 * (gateway/http/fair.c, harness in http_harness.h): per-address connection
 * and transfer shares, shedding the oldest idle connection at the connection
 * limit, and cutting a body slower than limits.min_body_rate.
 */
#include "tests/unit/gateway/http_harness.h"

#include <arpa/inet.h>

#include "gateway/base/metrics.h"

/* cl_open from a given loopback address (the whole of 127/8 is loopback on Linux). */
static void
cl_open_from(struct client *cl, const char *from)
{
    memset(cl, 0, sizeof(*cl));
    buf_init(&cl->in, 1 << 20);
    cl->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(cl->fd >= 0);
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    assert_int_equal(inet_pton(AF_INET, from, &sin.sin_addr), 1);
    assert_int_equal(bind(cl->fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    sin.sin_port = htons(gw_server_port(srv, 0));
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(cl->fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(fcntl(cl->fd, F_SETFL, O_NONBLOCK), 0);
}

/* One GET on cl, answered 200 with "GET /x|/x|". */
static void
expect_get(struct client *cl, size_t skip)
{
    cl_sends(cl, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n");
    struct resp r;
    (void)wait_resp(cl, skip, false, &r, 3000);
    assert_int_equal(r.status, 200);
    assert_string_equal(buf_cstr(&r.body), "GET /x|/x|");
    resp_cleanup(&r);
}

static void
test_conns_per_client(void **state)
{
    (void)state;
    cfg.limits.max_connections_per_client = 2;
    uint64_t refused0 = gw_metrics.client_conns_refused;
    struct client a, b, c, d;
    cl_open_from(&a, "127.0.0.1");
    cl_open_from(&b, "127.0.0.1");
    pump_ms(&a, 30);
    cl_open_from(&c, "127.0.0.1"); /* a third from the same address: closed at accept */
    cl_sends(&c, "GET /c HTTP/1.1\r\nHost: x\r\n\r\n");
    wait_eof(&c, 2000);
    assert_int_equal(c.in.len, 0);
    assert_int_equal(gw_metrics.client_conns_refused, refused0 + 1);
    cl_open_from(&d, "127.0.0.2"); /* another address is served */
    expect_get(&d, 0);
    assert_int_equal(srv->nconns, 3);
    /* the share frees with a connection */
    cl_close(&a);
    pump_ms(&b, 30);
    struct client e;
    cl_open_from(&e, "127.0.0.1");
    expect_get(&e, 0);
    cl_close(&b);
    cl_close(&c);
    cl_close(&d);
    cl_close(&e);
}

/* Adopt a connection from peer (a bufferevent pair); returns gw_http_conn_adopt's result. */
static int
adopt(const char *peer, struct bufferevent **other)
{
    struct bufferevent *pair[2];
    assert_int_equal(bufferevent_pair_new(base, 0, pair), 0);
    *other = pair[1];
    return gw_http_conn_adopt(srv, pair[0], peer, false);
}

static void
test_client_keys(void **state)
{
    (void)state;
    cfg.limits.max_connections_per_client = 1;
    struct bufferevent *o[6];
    /* the port does not count; an IPv6 /64 is one client; v4-mapped is IPv4 */
    assert_int_equal(adopt("10.0.0.1:1000", &o[0]), 0);
    assert_int_equal(adopt("10.0.0.1:1001", &o[1]), ERR_DENIED);
    assert_int_equal(adopt("[::ffff:10.0.0.1]:1002", &o[2]), ERR_DENIED);
    assert_int_equal(adopt("[2001:db8:1:2::1]:5", &o[3]), 0);
    assert_int_equal(adopt("[2001:db8:1:2:ffff::9]:6", &o[4]), ERR_DENIED);
    assert_int_equal(adopt("[2001:db8:1:3::1]:5", &o[5]), 0); /* another /64 */
    assert_int_equal(srv->nconns, 3);
    for (size_t i = 0; i < 6; i++) {
        bufferevent_free(o[i]);
    }
}

static void
test_idle_shed_at_limit(void **state)
{
    (void)state;
    cfg.limits.max_connections = 3;
    cfg.limits.max_connections_per_client = 10;
    uint64_t shed0 = gw_metrics.idle_shed;
    struct client a, b, c, d;
    cl_open(&a);
    expect_get(&a, 0); /* kept alive: idle, the oldest */
    cl_open(&b);
    cl_sends(&b, "GET /b HTTP/1.1\r\n"); /* a head in progress: never shed */
    cl_open(&c);
    pump_ms(&c, 30); /* fresh: idle */
    assert_int_equal(srv->nconns, 3);
    assert_false(srv->accepting_paused);
    cl_open(&d);
    expect_get(&d, 0); /* admitted: the oldest idle one (a) was closed for it */
    wait_eof(&a, 2000);
    assert_int_equal(gw_metrics.idle_shed, shed0 + 1);
    assert_false(b.eof);
    /* b still finishes its request */
    cl_sends(&b, "Host: x\r\n\r\n");
    struct resp r;
    (void)wait_resp(&b, 0, false, &r, 3000);
    assert_int_equal(r.status, 200);
    resp_cleanup(&r);
    cl_close(&a);
    cl_close(&b);
    cl_close(&c);
    cl_close(&d);
}

static void
test_lingering_shed_first(void **state)
{
    (void)state;
    cfg.limits.max_connections = 2;
    cfg.limits.max_connections_per_client = 10;
    struct client a, b, c;
    cl_open(&a);
    expect_get(&a, 0); /* kept alive: idle, the oldest */
    cl_open(&b);
    cl_sends(&b, "get / HTTP/1.1\r\nHost: x\r\n\r\n"); /* refused: lingering close */
    struct resp r;
    (void)wait_resp(&b, 0, false, &r, 3000);
    assert_int_equal(r.status, 400);
    resp_cleanup(&r);
    pump_ms(&b, 30);
    assert_int_equal(srv->nconns, 2); /* b lingers (FIN sent, reading) for GW_HTTP_LINGER_MS */
    cl_open(&c);
    expect_get(&c, 0); /* admitted: the lingering one went, not the idle one */
    assert_int_equal(srv->nconns, 2);
    pump_ms(&a, 30);
    assert_false(a.eof);
    expect_get(&a, a.in.len);
    cl_close(&a);
    cl_close(&b);
    cl_close(&c);
}

/*
 * A relayed connection (gw_http_conn_relay, over a socketpair as the relay hub
 * serves one) takes no place at limits.max_connections and is never shed, even
 * while it lingers after its answer: at the limit a new client sheds the
 * oldest kept-alive idle connection, and the clients stay at the limit.
 */
static void
test_relay_never_shed(void **state)
{
    (void)state;
    cfg.limits.max_connections = 2;
    cfg.limits.max_connections_per_client = 10;
    struct client a, b, c, r;
    cl_open(&a);
    expect_get(&a, 0); /* kept alive: idle, the oldest */
    cl_open(&b);
    expect_get(&b, 0); /* idle */
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(evutil_make_socket_nonblocking(sv[0]), 0);
    struct bufferevent *bev = bufferevent_socket_new(base, sv[0], BEV_OPT_CLOSE_ON_FREE);
    assert_non_null(bev);
    assert_int_equal(
        gw_http_conn_relay(srv, bev, "127.0.0.9:1", false, GW_LISTENER_S3_ALL, "relayed1"), 0);
    memset(&r, 0, sizeof(r));
    buf_init(&r.in, 1 << 20);
    r.fd = sv[1];
    assert_int_equal(fcntl(r.fd, F_SETFL, O_NONBLOCK), 0);
    assert_int_equal(gw_http_clients_open(srv), 2);    /* the relay is not a client's */
    cl_sends(&r, "get / HTTP/1.1\r\nHost: x\r\n\r\n"); /* refused: a lingering close */
    struct resp rr;
    (void)wait_resp(&r, 0, false, &rr, 3000);
    assert_int_equal(rr.status, 400);
    resp_cleanup(&rr);
    pump_ms(&r, 30);
    assert_int_equal(srv->nconns, 3); /* the relay lingers, reading */
    cl_open(&c);
    expect_get(&c, 0); /* admitted: a was shed for it, not the lingering relay */
    wait_eof(&a, 2000);
    assert_int_equal(srv->nconns, 3);
    assert_int_equal(gw_http_clients_open(srv), 2);
    cl_close(&r); /* the relay's hub hangs up: the relay closes */
    pump_ms(&b, 30);
    assert_int_equal(srv->nconns, 2);
    assert_int_equal(srv->nrelayed, 0);
    cl_close(&a);
    cl_close(&b);
    cl_close(&c);
}

static void
test_transfers_per_client(void **state)
{
    (void)state;
    cfg.limits.max_transfers_per_client = 2;
    th.mode = MODE_DEFER_ECHO;
    uint64_t refused0 = gw_metrics.client_transfers_refused;
    struct client a;
    cl_open_from(&a, "127.0.0.1");
    cl_sends(&a, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n");
    while (th.req == NULL) {
        pump(&a);
    }
    struct gw_client *t1 = gw_http_fair_transfer_begin(th.req);
    struct gw_client *t2 = gw_http_fair_transfer_begin(th.req);
    assert_non_null(t1);
    assert_non_null(t2);
    assert_null(gw_http_fair_transfer_begin(th.req)); /* over the share */
    assert_int_equal(gw_metrics.client_transfers_refused, refused0 + 1);
    gw_http_fair_transfer_end(t1);
    struct gw_client *t3 = gw_http_fair_transfer_begin(th.req);
    assert_non_null(t3);
    gw_http_fair_transfer_end(t2);
    /* t3 outlives its connection and the server (a detached transfer): freed at its end */
    cl_close(&a);
    pump_ms(NULL, 30);
    gw_server_free(srv);
    srv = NULL;
    gw_http_fair_transfer_end(t3);
}

/* A PUT of len bytes sent n bytes every every_ms; returns the response status. */
static int
trickle(size_t len, size_t n, int every_ms, struct resp *r)
{
    struct client cl;
    cl_open(&cl);
    char head[128];
    (void)snprintf(head, sizeof(head), "PUT /k HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n",
                   len);
    cl_sends(&cl, head);
    size_t sent = 0;
    while (sent < len && !cl.eof) {
        size_t k = len - sent < n ? len - sent : n;
        char chunk[256];
        memset(chunk, 'a', sizeof(chunk));
        cl_send(&cl, chunk, k);
        sent += k;
        pump_ms(&cl, every_ms);
        if (cl.in.len > 0) {
            break; /* answered (cut) */
        }
    }
    (void)wait_resp(&cl, 0, false, r, 3000);
    cl_close(&cl);
    return r->status;
}

static void
test_min_body_rate(void **state)
{
    (void)state;
    cfg.limits.min_body_rate = 1000; /* bytes/s: 300 bytes in each 300 ms window */
    cfg.limits.min_body_rate_window_ms = 300;
    cfg.limits.body_timeout_ms = 60000; /* each byte would reset it */
    th.mode = MODE_ECHO;
    uint64_t cut0 = gw_metrics.slow_bodies_cut;
    /* 10 bytes every 50 ms: 200 B/s, progress all the time */
    uint64_t t0 = now_ms();
    struct resp r;
    assert_int_equal(trickle(4000, 10, 50, &r), 400);
    assert_non_null(strstr(buf_cstr(&r.body), "<Code>RequestTimeout</Code>"));
    assert_true(now_ms() - t0 < 1500);
    resp_cleanup(&r);
    assert_int_equal(th.aborts, 1);
    assert_int_equal(th.abort_err, ERR_TIMEOUT);
    assert_int_equal(gw_metrics.slow_bodies_cut, cut0 + 1);
    /* 100 bytes every 50 ms: 2000 B/s, over several windows, completes */
    th.aborts = 0;
    assert_int_equal(trickle(2400, 100, 50, &r), 200);
    assert_int_equal(r.body.len, 2400);
    resp_cleanup(&r);
    assert_int_equal(th.aborts, 0);
    assert_int_equal(gw_metrics.slow_bodies_cut, cut0 + 1);
}

static void
test_min_body_rate_off(void **state)
{
    (void)state;
    cfg.limits.min_body_rate = 0; /* off: only body_timeout_ms */
    cfg.limits.min_body_rate_window_ms = 300;
    th.mode = MODE_ECHO;
    struct resp r;
    assert_int_equal(trickle(40, 2, 50, &r), 200);
    resp_cleanup(&r);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_conns_per_client, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_shed_at_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lingering_shed_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_relay_never_shed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transfers_per_client, setup, teardown),
        cmocka_unit_test_setup_teardown(test_min_body_rate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_min_body_rate_off, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
