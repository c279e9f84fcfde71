/*
 * tests/unit/gateway/upstream/cap_close_test.c: a lean client under the
 * process's cap (gateway/upstream/lean.c, lean_conn.c, cap.c; DESIGN "The
 * upstream pool across loops") gives a connection's slot back, or hands it
 * to another loop, only once the connection's socket is closed.  Another
 * loop may open a connection the instant the slot is free, so a socket
 * still open then is one more than upstream.max_connections (CI's TSan run
 * once saw two sockets against a cap of one).  libevent 2.1 closes a
 * bufferevent's socket in a finalizer that runs later in the loop, not in
 * bufferevent_free, which is why the order matters.
 *
 * The test builds cap.c into itself with gw_upstream_cap_give and
 * gw_upstream_cap_hand_over renamed, and wraps both: each call counts the
 * sockets of this process still connected to the origin (in
 * /proc/net/tcp, where a closed socket left to finish its FIN has inode 0).
 * Three ways a connection gives up its slot: closed for a loop that asked
 * for a shed, closed instead of parked while another loop waits, and closed
 * when the client is freed.
 */
#define gw_upstream_cap_give      cap_give_real
#define gw_upstream_cap_hand_over cap_hand_over_real
#include "gateway/upstream/cap.c"
#undef gw_upstream_cap_give
#undef gw_upstream_cap_hand_over

#include "gateway/net/loopmsg.h"
#include "tests/unit/gateway/upstream_harness.h"

/* What the wrappers saw: calls, and the most origin sockets open during one. */
static struct {
    uint16_t port; /* the origin's; 0: not watching */
    int gives;
    int hand_overs;
    int most_open;
} seen;

/* Field i (0-based) of a /proc/net/tcp line, split on blanks; NULL past the end. */
static const char *
tcp_field(const char *line, int i, size_t *len)
{
    const char *p = line;
    for (int k = 0;; k++) {
        while (*p == ' ' || *p == '\t') {
            p++;
        }
        if (*p == '\0' || *p == '\n') {
            return NULL;
        }
        const char *e = p;
        while (*e != '\0' && *e != ' ' && *e != '\t' && *e != '\n') {
            e++;
        }
        if (k == i) {
            *len = (size_t)(e - p);
            return p;
        }
        p = e;
    }
}

/* The process's sockets connected to 127.0.0.1:port that a descriptor still holds. */
static int
open_to(uint16_t port)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    assert_non_null(f);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        /* sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode */
        size_t rlen;
        size_t ilen;
        const char *rem = tcp_field(line, 2, &rlen);
        const char *inode = tcp_field(line, 9, &ilen);
        const char *colon = rem != NULL ? memchr(rem, ':', rlen) : NULL;
        if (colon == NULL || inode == NULL) {
            continue; /* the header line */
        }
        unsigned long rport = strtoul(colon + 1, NULL, 16);
        unsigned long ino = strtoul(inode, NULL, 10);
        if (rport == port && ino != 0) {
            n++;
        }
    }
    (void)fclose(f);
    return n;
}

static void
look_open(void)
{
    if (seen.port != 0) {
        int n = open_to(seen.port);
        if (n > seen.most_open) {
            seen.most_open = n;
        }
    }
}

void
gw_upstream_cap_give(struct gw_upstream_cap *c)
{
    seen.gives++;
    look_open();
    cap_give_real(c);
}

bool
gw_upstream_cap_hand_over(struct gw_upstream_cap *c, uint32_t slot, bool to_empty_only)
{
    seen.hand_overs++;
    look_open();
    return cap_hand_over_real(c, slot, to_empty_only);
}

/* The client's loop is the fixture's; the other member stands for a second loop. */
struct capfx {
    struct fx *f;
    struct gw_upstream_cap *cap;
    struct gw_loopq *q;
    struct event_base *base2;
    struct gw_loopq *q2;
    uint32_t slot2;
    int looks2;
};

static void
other_look(void *arg)
{
    struct capfx *x = arg;
    x->looks2++;
}

static void
capfx_init(struct capfx *x, struct fx *f)
{
    memset(x, 0, sizeof(*x));
    memset(&seen, 0, sizeof(seen));
    x->f = f;
    x->cap = gw_upstream_cap_new(1, 2);
    assert_non_null(x->cap);
    x->q = gw_loopq_new(f->base);
    assert_non_null(x->q);
    gw_upstream_free(f->up);
    struct gw_upstream_opts o = {.engine = GW_UPSTREAM_LEAN,
                                 .connect_timeout_ms = 2000,
                                 .timeout_ms = 5000,
                                 .max_connections = 1,
                                 .tls_verify = true,
                                 .cap = x->cap,
                                 .q = x->q};
    f->up = gw_upstream_new(f->base, &o);
    assert_non_null(f->up);
    f->c.up = f->up;
    x->base2 = event_base_new();
    assert_non_null(x->base2);
    x->q2 = gw_loopq_new(x->base2);
    assert_non_null(x->q2);
    assert_int_equal(gw_upstream_cap_join(x->cap, x->q2, other_look, x, &x->slot2), 0);
    seen.port = f->srv.port;
}

static void
capfx_done(struct capfx *x)
{
    gw_upstream_free(x->f->up); /* before the cap it borrows */
    x->f->up = NULL;
    gw_upstream_cap_leave(x->cap, x->slot2);
    gw_loopq_free(x->q2);
    event_base_free(x->base2);
    gw_loopq_free(x->q);
    gw_upstream_cap_free(x->cap);
    memset(&seen, 0, sizeof(seen));
}

/* One GET on the client, its connection left idle in the pool. */
static void
one_get(struct fx *f)
{
    assert_int_equal(start(&f->c, "GET", "/b/k", -1), 0);
    assert_true(run_until(f->base, &f->c.dones, 1, 5000));
    assert_int_equal(f->c.err, 0);
    assert_int_equal(f->c.status, 200);
    assert_int_equal(open_to(f->srv.port), 1);
}

/* The other loop waits: the client, asked to shed its idle connection, hands it over closed. */
static void
test_shed_hands_over_a_closed_socket(void **state)
{
    struct fx *f = *state;
    struct capfx x;
    capfx_init(&x, f);
    one_get(f);
    gw_upstream_cap_wait(x.cap, x.slot2); /* asks the client's loop for a shed */
    assert_true(run_until(f->base, &seen.hand_overs, 1, 2000));
    assert_int_equal(seen.most_open, 0);
    assert_int_equal(gw_upstream_cap_granted(x.cap, x.slot2), 1);
    assert_int_equal(open_to(f->srv.port), 0);
    gw_upstream_cap_give(x.cap); /* the other loop's granted slot, unused */
    capfx_done(&x);
}

/* The other loop waits while the client's GET runs: its connection is handed over, not parked. */
static void
test_finished_connection_handed_over_closed(void **state)
{
    struct fx *f = *state;
    struct capfx x;
    capfx_init(&x, f);
    assert_int_equal(start(&f->c, "GET", "/b/k", -1), 0);
    assert_true(run_until(f->base, &f->srv.requests, 1, 5000));
    gw_upstream_cap_wait(x.cap, x.slot2);
    assert_true(run_until(f->base, &f->c.dones, 1, 5000));
    assert_int_equal(f->c.err, 0);
    assert_true(run_until(f->base, &seen.hand_overs, 1, 2000));
    assert_int_equal(seen.most_open, 0);
    assert_int_equal(gw_upstream_cap_granted(x.cap, x.slot2), 1);
    gw_upstream_cap_give(x.cap);
    capfx_done(&x);
}

/* The client is freed with a connection idle: its slot goes back after the socket closed. */
static void
test_free_gives_back_a_closed_socket(void **state)
{
    struct fx *f = *state;
    struct capfx x;
    capfx_init(&x, f);
    one_get(f);
    int gives = seen.gives;
    gw_upstream_free(f->up);
    f->up = NULL;
    assert_int_equal(seen.gives, gives + 1);
    assert_int_equal(seen.most_open, 0);
    uint64_t open;
    uint64_t idle;
    gw_upstream_cap_conns(x.cap, &open, &idle);
    assert_int_equal(open, 0);
    capfx_done(&x);
}

int
main(void)
{
    harness_engine = GW_UPSTREAM_LEAN;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_shed_hands_over_a_closed_socket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_finished_connection_handed_over_closed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_free_gives_back_a_closed_socket, setup, teardown),
    };
    return cmocka_run_group_tests_name("cap_close", tests, NULL, NULL);
}
