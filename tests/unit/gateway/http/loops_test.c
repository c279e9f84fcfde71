/*
 * tests/unit/gateway/http/loops_test.c: several HTTP servers, one per event
 * loop on a thread of its own, serving one process's clients (DESIGN "Worker
 * loops": "Accepting", "Limits across loops").  A shared client-address table
 * counts one address's connections and transfers across the servers (the
 * limit refuses the one over it whichever server accepts it); entries and
 * the table are freed exactly once, from whichever thread lets go last (ASan);
 * the table's mutex is exercised by two threads admitting one address at once
 * (ThreadSanitizer); limits.max_connections is split among the loops; a
 * worker server binds the first server's ports with SO_REUSEPORT, and both
 * accept.  make SAN=thread unit and make SAN=address,undefined unit run these.
 */
#include "gateway/http/internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/err.h"

#define NLOOPS   2
#define MAX_HELD 16

/* One event loop with its server, run by a thread of its own. */
struct loop {
    int index;
    struct event_base *base;
    struct event *tick; /* checks stop: event_base_loopbreak from the loop's own thread */
    struct gw_server *srv;
    pthread_t th;
    atomic_int served; /* requests answered 200 */
};

enum mode {
    MODE_SIMPLE = 0, /* 200, the body names the loop */
    MODE_XFER = 1,   /* count a transfer and hold it (the test thread ends it), or 503 */
};

static struct loop loops[NLOOPS];
static struct gw_config cfg;
static char host[] = "127.0.0.1";
static atomic_bool stop;
static atomic_int mode;
static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static struct gw_client *held[MAX_HELD]; /* transfers begun on the loops, ended by the test */
static size_t nheld;

/* gw_request_fn; arg is the struct loop, run on its thread */
static void
on_request(struct gw_req *req, void *arg)
{
    struct loop *l = arg;
    if (atomic_load(&mode) == MODE_XFER) {
        struct gw_client *cl = gw_http_fair_transfer_begin(req);
        if (cl == NULL) {
            gw_resp_simple(req, 503, "text/plain", "slow down", 9);
            return;
        }
        (void)pthread_mutex_lock(&held_mu);
        assert_true(nheld < MAX_HELD);
        held[nheld++] = cl;
        (void)pthread_mutex_unlock(&held_mu);
    }
    char text[8];
    int n = snprintf(text, sizeof(text), "%d", l->index);
    atomic_fetch_add(&l->served, 1);
    gw_resp_simple(req, 200, "text/plain", text, (size_t)n);
}

/* event callback (the tick of run_loop): leave the loop once the test says stop */
static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct loop *l = arg;
    if (atomic_load(&stop)) {
        (void)event_base_loopbreak(l->base);
    }
}

static void *
run_loop(void *arg)
{
    struct loop *l = arg;
    (void)event_base_loop(l->base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

/* Creates loop i's base and server (with opts; NULL = alone).  Returns the server or NULL. */
static struct gw_server *
loop_new(int i, const struct gw_server_opts *opts)
{
    struct loop *l = &loops[i];
    memset(l, 0, sizeof(*l));
    l->index = i;
    l->base = event_base_new();
    assert_non_null(l->base);
    char err[256];
    l->srv = gw_server_new_opts(l->base, &cfg, on_request, l, opts, err, sizeof(err));
    if (l->srv == NULL) {
        printf("# loop %d: %s\n", i, err);
    }
    return l->srv;
}

static void
loops_start(void)
{
    atomic_store(&stop, false);
    for (int i = 0; i < NLOOPS; i++) {
        struct loop *l = &loops[i];
        l->tick = event_new(l->base, -1, EV_PERSIST, on_tick, l);
        assert_non_null(l->tick);
        struct timeval tv = {0, 10000};
        assert_int_equal(event_add(l->tick, &tv), 0);
        assert_int_equal(pthread_create(&l->th, NULL, run_loop, l), 0);
    }
}

/* Stops and joins the loops, then frees their servers here (their threads are gone). */
static void
loops_stop(void)
{
    atomic_store(&stop, true);
    for (int i = 0; i < NLOOPS; i++) {
        struct loop *l = &loops[i];
        if (l->tick != NULL) {
            assert_int_equal(pthread_join(l->th, NULL), 0);
            event_free(l->tick);
            l->tick = NULL;
        }
        gw_server_free(l->srv);
        l->srv = NULL;
        if (l->base != NULL) {
            event_base_free(l->base);
            l->base = NULL;
        }
    }
}

/* ---- the client side (the test's thread, blocking sockets) ---- */

/* A connection to 127.0.0.1:port from the loopback address from. */
static int
conn_open(uint16_t port, const char *from)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct timeval tv = {3, 0};
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    assert_int_equal(inet_pton(AF_INET, from, &sin.sin_addr), 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    sin.sin_port = htons(port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    return fd;
}

/*
 * One GET on fd (kept alive).  Returns the status, or -1 when the server
 * closed the connection instead (refused at accept).  [out] loop: the body's
 * loop index for a 200, else -1.
 */
static int
conn_get(int fd, int *loop)
{
    static const char get[] = "GET /x HTTP/1.1\r\nHost: x\r\n\r\n";
    *loop = -1;
    if (send(fd, get, sizeof(get) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(get) - 1)) {
        return -1;
    }
    char in[2048];
    size_t len = 0;
    for (;;) {
        ssize_t n = recv(fd, in + len, sizeof(in) - 1 - len, 0);
        if (n <= 0) {
            assert_true(n == 0 || errno == ECONNRESET); /* not a timeout */
            return -1;
        }
        len += (size_t)n;
        in[len] = '\0';
        const char *end = strstr(in, "\r\n\r\n");
        const char *cl = strstr(in, "Content-Length: ");
        if (end == NULL || cl == NULL) {
            continue;
        }
        size_t body = strtoul(cl + 16, NULL, 10);
        if (len < (size_t)(end + 4 - in) + body) {
            continue;
        }
        int status = (int)strtol(in + 9, NULL, 10);
        if (status == 200) {
            *loop = (int)strtol(end + 4, NULL, 10);
        }
        return status;
    }
}

/* A new connection's GET, retried for up to 3 s while it is refused (a share being freed
 * by a server's loop).  Returns the open fd with its status in *status. */
static int
conn_get_retry(uint16_t port, const char *from, int *status)
{
    for (int tries = 0;; tries++) {
        int fd = conn_open(port, from);
        int loop = -1;
        *status = conn_get(fd, &loop);
        if (*status != -1 || tries == 150) {
            return fd;
        }
        (void)close(fd);
        (void)usleep(20000);
    }
}

static void
config_init(void)
{
    memset(&cfg, 0, sizeof(cfg));
    cfg.nlisten = 1;
    cfg.listen[0].host = host;
    cfg.limits.max_connections = 64;
    cfg.limits.max_connections_per_client = 16;
    cfg.limits.max_transfers_per_client = 16;
}

static int
setup(void **state)
{
    (void)state;
    config_init();
    atomic_store(&mode, MODE_SIMPLE);
    nheld = 0;
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    loops_stop();
    return 0;
}

/* ---- per-client fair use across loops ---- */

/* Two servers on two ports (so the test picks which one accepts), one table. */
static void
shared_pair(struct gw_fair_table *t)
{
    struct gw_server_opts o = {.fair = t, .loops = NLOOPS};
    assert_non_null(loop_new(0, &o));
    assert_non_null(loop_new(1, &o));
    loops_start();
}

static void
test_conns_counted_across_loops(void **state)
{
    (void)state;
    cfg.limits.max_connections_per_client = 2;
    struct gw_fair_table *t = gw_fair_table_new();
    assert_non_null(t);
    shared_pair(t);
    gw_fair_table_unref(t); /* the servers hold it now */
    uint16_t p0 = gw_server_port(loops[0].srv, 0);
    uint16_t p1 = gw_server_port(loops[1].srv, 0);
    int loop = -1;
    int a = conn_open(p0, "127.0.0.4");
    assert_int_equal(conn_get(a, &loop), 200);
    assert_int_equal(loop, 0);
    int b = conn_open(p1, "127.0.0.4");
    assert_int_equal(conn_get(b, &loop), 200);
    assert_int_equal(loop, 1);
    /* a third from the same address is refused by either server */
    for (int i = 0; i < NLOOPS; i++) {
        int c = conn_open(i == 0 ? p0 : p1, "127.0.0.4");
        assert_int_equal(conn_get(c, &loop), -1);
        (void)close(c);
    }
    /* another address is served */
    int d = conn_open(p1, "127.0.0.5");
    assert_int_equal(conn_get(d, &loop), 200);
    /* a connection closed on loop 0 frees the share on loop 1 */
    (void)close(a);
    int status = 0;
    int e = conn_get_retry(p1, "127.0.0.4", &status);
    assert_int_equal(status, 200);
    int f = conn_open(p0, "127.0.0.4");
    assert_int_equal(conn_get(f, &loop), -1);
    (void)close(b);
    (void)close(d);
    (void)close(e);
    (void)close(f);
}

/* Without a shared table each server counts its own: the control of the test above. */
static void
test_private_tables_count_apart(void **state)
{
    (void)state;
    cfg.limits.max_connections_per_client = 1;
    struct gw_server_opts o = {.loops = NLOOPS};
    assert_non_null(loop_new(0, &o));
    assert_non_null(loop_new(1, NULL));
    loops_start();
    int loop = -1;
    int a = conn_open(gw_server_port(loops[0].srv, 0), "127.0.0.4");
    assert_int_equal(conn_get(a, &loop), 200);
    int b = conn_open(gw_server_port(loops[1].srv, 0), "127.0.0.4");
    assert_int_equal(conn_get(b, &loop), 200);
    (void)close(a);
    (void)close(b);
}

static void
held_end(size_t i)
{
    (void)pthread_mutex_lock(&held_mu);
    struct gw_client *cl = held[i];
    held[i] = NULL;
    (void)pthread_mutex_unlock(&held_mu);
    gw_http_fair_transfer_end(cl); /* from the test's thread, not the loop's */
}

static void
test_transfers_counted_across_loops(void **state)
{
    (void)state;
    cfg.limits.max_transfers_per_client = 2;
    atomic_store(&mode, MODE_XFER);
    struct gw_fair_table *t = gw_fair_table_new();
    assert_non_null(t);
    shared_pair(t);
    gw_fair_table_unref(t);
    uint16_t p0 = gw_server_port(loops[0].srv, 0);
    uint16_t p1 = gw_server_port(loops[1].srv, 0);
    int loop = -1;
    int a = conn_open(p0, "127.0.0.6");
    assert_int_equal(conn_get(a, &loop), 200);
    int b = conn_open(p1, "127.0.0.6");
    assert_int_equal(conn_get(b, &loop), 200);
    /* a third transfer is refused on either loop */
    assert_int_equal(conn_get(a, &loop), 503);
    assert_int_equal(conn_get(b, &loop), 503);
    /* ending loop 0's transfer frees a share for loop 1 */
    held_end(0);
    assert_int_equal(conn_get(b, &loop), 200);
    assert_int_equal(loop, 1);
    assert_int_equal(conn_get(a, &loop), 503);
    (void)pthread_mutex_lock(&held_mu);
    assert_int_equal(nheld, 3);
    (void)pthread_mutex_unlock(&held_mu);
    /* the connections go, then the servers (and with them every owner of the table):
     * the transfers still hold their entry, and the last of them frees it and the table */
    (void)close(a);
    (void)close(b);
    loops_stop();
    held_end(1);
    held_end(2);
}

/* ---- the table's lock: two threads admitting one address at once ---- */

struct racer {
    struct gw_server *srv;
    atomic_int *inside; /* connections of the address admitted and not yet ended */
    int over;           /* times inside passed the limit */
    int admitted;
};

#define RACE_ROUNDS 20000

static void *
race(void *arg)
{
    struct racer *r = arg;
    struct gw_http_limits lim;
    gw_http_server_limits(&lim, r->srv);
    for (int i = 0; i < RACE_ROUNDS; i++) {
        bool full = false;
        struct gw_client *cl = gw_http_fair_admit(r->srv, "10.1.2.3:4000", &lim, &full);
        if (cl == NULL) {
            continue;
        }
        r->admitted++;
        if (atomic_fetch_add(r->inside, 1) + 1 > (int)lim.max_conns_per_client) {
            r->over++;
        }
        atomic_fetch_sub(r->inside, 1);
        gw_http_fair_conn_end(cl);
    }
    return NULL;
}

static void
test_admit_race(void **state)
{
    (void)state;
    cfg.nlisten = 0; /* no listener: the threads call the admission directly */
    cfg.limits.max_connections_per_client = 1;
    struct gw_fair_table *t = gw_fair_table_new();
    assert_non_null(t);
    struct gw_server_opts o = {.fair = t, .loops = NLOOPS};
    atomic_int inside = 0;
    struct racer r[NLOOPS];
    pthread_t th[NLOOPS];
    for (int i = 0; i < NLOOPS; i++) {
        assert_non_null(loop_new(i, &o));
        r[i] = (struct racer){.srv = loops[i].srv, .inside = &inside};
    }
    for (int i = 0; i < NLOOPS; i++) {
        assert_int_equal(pthread_create(&th[i], NULL, race, &r[i]), 0);
    }
    for (int i = 0; i < NLOOPS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
    }
    int admitted = 0;
    for (int i = 0; i < NLOOPS; i++) {
        assert_int_equal(r[i].over, 0); /* never two connections of the address at once */
        admitted += r[i].admitted;
    }
    assert_true(admitted > 0);
    /* every entry was released: the table holds none */
    (void)pthread_mutex_lock(&t->mu);
    assert_int_equal(t->nclients, 0);
    (void)pthread_mutex_unlock(&t->mu);
    gw_fair_table_unref(t);
}

/* ---- limits.max_connections split among the loops ---- */

static void
test_max_connections_split(void **state)
{
    (void)state;
    struct gw_server_opts o = {.loops = 3};
    cfg.limits.max_connections = 0;            /* the default, 4096 */
    cfg.limits.max_connections_per_client = 0; /* its default: a quarter of the process's */
    assert_non_null(loop_new(0, &o));
    struct gw_http_limits lim;
    gw_http_server_limits(&lim, loops[0].srv);
    assert_int_equal(lim.max_connections, 1366); /* ceil(4096 / 3) */
    assert_int_equal(lim.max_conns_per_client, 1024);
    loops_stop();

    /* 5 among 2 loops: 3 each; a loop alone: all 5 */
    cfg.limits.max_connections = 5;
    cfg.limits.max_connections_per_client = 100;
    o.loops = 2;
    assert_non_null(loop_new(0, &o));
    assert_non_null(loop_new(1, NULL));
    struct gw_http_limits l0;
    struct gw_http_limits l1;
    gw_http_server_limits(&l0, loops[0].srv);
    gw_http_server_limits(&l1, loops[1].srv);
    assert_int_equal(l0.max_connections, 3);
    assert_int_equal(l1.max_connections, 5);
    loops_start();
    /* heads in progress: nothing idle to shed, so loop 0 stops at its share */
    uint16_t p0 = gw_server_port(loops[0].srv, 0);
    int fd[5];
    for (int i = 0; i < 3; i++) {
        fd[i] = conn_open(p0, "127.0.0.7");
        assert_int_equal(send(fd[i], "GET / HTTP/1.1\r\n", 16, MSG_NOSIGNAL), 16);
    }
    (void)usleep(200000); /* the heads are read: no connection is idle */
    for (int i = 3; i < 5; i++) {
        fd[i] = conn_open(p0, "127.0.0.7"); /* queued in the kernel's backlog, not accepted */
    }
    (void)usleep(300000);
    atomic_store(&stop, true); /* read the loop's state from its own thread's past */
    assert_int_equal(pthread_join(loops[0].th, NULL), 0);
    assert_int_equal(pthread_join(loops[1].th, NULL), 0);
    event_free(loops[0].tick);
    event_free(loops[1].tick);
    loops[0].tick = NULL;
    loops[1].tick = NULL;
    assert_int_equal(loops[0].srv->nconns, 3);
    assert_true(loops[0].srv->accepting_paused);
    for (int i = 0; i < 5; i++) {
        (void)close(fd[i]);
    }
}

/* ---- listeners: SO_REUSEPORT ---- */

static void
test_reuseport_both_accept(void **state)
{
    (void)state;
    cfg.nadmin_listen = 1;
    cfg.admin_listen[0].host = host;
    struct gw_fair_table *t = gw_fair_table_new();
    assert_non_null(t);
    struct gw_server_opts first = {.fair = t, .loops = NLOOPS, .reuseport = true};
    assert_non_null(loop_new(0, &first));
    struct gw_server_opts worker = {.fair = t, .loops = NLOOPS, .first = loops[0].srv};
    assert_non_null(loop_new(1, &worker));
    gw_fair_table_unref(t);
    uint16_t port = gw_server_port(loops[0].srv, 0);
    assert_int_equal(gw_server_port(loops[1].srv, 0), port);
    /* the admin listener stays on the first server alone */
    assert_true(gw_server_admin_port(loops[0].srv, 0) != 0);
    assert_int_equal(gw_server_admin_port(loops[1].srv, 0), 0);
    assert_int_equal(loops[1].srv->nlisten, 1);
    loops_start();
    /* the kernel spreads connections by their addresses' hash: 64 reach both loops */
    int seen[NLOOPS] = {0};
    for (int i = 0; i < 64; i++) {
        int fd = conn_open(port, "127.0.0.8");
        int loop = -1;
        assert_int_equal(conn_get(fd, &loop), 200);
        assert_true(loop >= 0 && loop < NLOOPS);
        seen[loop]++;
        (void)close(fd);
    }
    for (int i = 0; i < NLOOPS; i++) {
        assert_true(seen[i] > 0);
        assert_int_equal(atomic_load(&loops[i].served), seen[i]);
    }
}

/* A first server without SO_REUSEPORT leaves its ports to itself: a worker cannot bind. */
static void
test_worker_needs_reuseport_first(void **state)
{
    (void)state;
    assert_non_null(loop_new(0, NULL));
    struct gw_server_opts worker = {.loops = NLOOPS, .first = loops[0].srv};
    assert_null(loop_new(1, &worker));
}

int
main(void)
{
    (void)signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_conns_counted_across_loops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_private_tables_count_apart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transfers_counted_across_loops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admit_race, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_connections_split, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reuseport_both_accept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_worker_needs_reuseport_first, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
