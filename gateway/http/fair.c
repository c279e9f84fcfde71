/*
 * gateway/http/fair.c: fair use for the HTTP server (DESIGN G10): per-client
 * shares of connections and upstream transfers, shedding idle connections at
 * the connection limit, and the minimum request-body rate.
 * Event-loop thread only, but for the client-address table (below).
 *
 * A client is an address: the peer without its port (as nginx's limit_conn
 * keys on $binary_remote_addr), for IPv6 its /64 prefix.  Its entry lives in a
 * client-address table (struct gw_fair_table) while a connection or a
 * transfer holds it.  The table is the server's own, or one shared by the
 * servers of several loops (DESIGN "Worker loops": "Limits across loops"):
 * its mutex guards the hash chains and every entry's counts and references,
 * held only for a lookup and a count change (never across I/O, a log line or
 * a shed connection), so an entry is counted, and freed exactly once at its
 * last release, from whichever thread.  A transfer may outlive its server (a
 * detached fenced write): the table is freed when neither an owner (its
 * creator, a server) nor an entry is left, by whichever lets go last.
 *
 * Idle connections (no request in progress, no byte of a next head, not
 * closing: a kept-alive connection between requests, or a fresh one that has
 * not sent a byte) are listed oldest first, after the lingering ones (closing
 * anyway, their last answer flushed).  At limits.max_connections a new
 * connection closes the first of them instead of being refused, as nginx
 * reuses its keep-alive connections when worker_connections run out (closed
 * through srv->shed, gw_http_conn_free, so this file never calls server.c).  A
 * connection that started a head is never shed: the header timeout cuts it.
 */
#include "gateway/http/internal.h"

#define LOG_MODULE "http"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/buf.h"
#include "common/log.h"
#include "gateway/base/metrics.h"

#define RATELOG_MS 1000 /* a fair-use warning at most this often */

/* Frees t once nothing holds it: no owner (creator, server) and no entry. */
static void
table_free(struct gw_fair_table *t)
{
    (void)pthread_mutex_destroy(&t->mu);
    free(t->buckets);
    free(t);
}

struct gw_fair_table *
gw_fair_table_new(void)
{
    struct gw_fair_table *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        return NULL;
    }
    t->buckets = calloc(GW_HTTP_CLIENT_BUCKETS, sizeof(struct gw_client *));
    if (t->buckets == NULL || pthread_mutex_init(&t->mu, NULL) != 0) {
        free(t->buckets);
        free(t);
        return NULL;
    }
    t->refs = 1;
    return t;
}

void
gw_fair_table_ref(struct gw_fair_table *t)
{
    (void)pthread_mutex_lock(&t->mu);
    t->refs++;
    (void)pthread_mutex_unlock(&t->mu);
}

void
gw_fair_table_unref(struct gw_fair_table *t)
{
    if (t == NULL) {
        return;
    }
    (void)pthread_mutex_lock(&t->mu);
    /* entries still held by transfers keep it: the last of them frees it */
    bool last = --t->refs == 0 && t->nclients == 0;
    (void)pthread_mutex_unlock(&t->mu);
    if (last) {
        table_free(t);
    }
}

int
gw_http_fair_init(struct gw_server *srv, struct gw_fair_table *shared)
{
    TAILQ_INIT(&srv->idle);
    if (shared != NULL) {
        gw_fair_table_ref(shared);
        srv->fair = shared;
        return 0;
    }
    srv->fair = gw_fair_table_new();
    return srv->fair != NULL ? 0 : ERR_NOMEM;
}

void
gw_http_fair_cleanup(struct gw_server *srv)
{
    gw_fair_table_unref(srv->fair);
    srv->fair = NULL;
}

/* Whether to log now; counts the occurrence either way. */
static bool
ratelog_due(struct gw_ratelog *rl, unsigned long *skipped)
{
    uint64_t now = gw_http_now_ms();
    if (rl->last_ms != 0 && now - rl->last_ms < RATELOG_MS) {
        rl->skipped++;
        return false;
    }
    *skipped = rl->skipped;
    rl->skipped = 0;
    rl->last_ms = now;
    return true;
}

/*
 * The client of "ip:port" or "[ip6]:port" into out: the IPv4 address, or the
 * IPv6 /64 prefix (one host or site gets a whole /64, so a per-address share
 * would be no bound there; an IPv4-mapped address counts as IPv4).
 */
static void
peer_addr(const char *peer, char *out, size_t outlen)
{
    const char *colon = strrchr(peer, ':');
    size_t n = colon != NULL ? (size_t)(colon - peer) : strlen(peer);
    bool v6 = n >= 2 && peer[0] == '[' && peer[n - 1] == ']';
    if (v6) {
        peer++;
        n -= 2;
    }
    char host[INET6_ADDRSTRLEN];
    if (n >= sizeof(host)) {
        n = sizeof(host) - 1;
    }
    memcpy(host, peer, n);
    host[n] = '\0';
    unsigned char a[16];
    if (v6 && inet_pton(AF_INET6, host, a) == 1) {
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(a, mapped, sizeof(mapped)) == 0) {
            (void)inet_ntop(AF_INET, a + 12, out, (socklen_t)outlen);
            return;
        }
        memset(a + 8, 0, 8);
        if (inet_ntop(AF_INET6, a, out, (socklen_t)outlen) != NULL) {
            (void)snprintf(out + strlen(out), outlen - strlen(out), "/64");
            return;
        }
    }
    str_copy(out, outlen, host);
}

static size_t
addr_hash(const char *addr)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)addr; *p != '\0'; p++) {
        h = (h ^ *p) * 1099511628211ull;
    }
    return (size_t)(h % GW_HTTP_CLIENT_BUCKETS);
}

/* The entry of addr, created if absent (with no reference yet); NULL when out of memory.
 * Caller holds t->mu. */
static struct gw_client *
client_get(struct gw_fair_table *t, const char *addr)
{
    size_t b = addr_hash(addr);
    for (struct gw_client *cl = t->buckets[b]; cl != NULL; cl = cl->next) {
        if (strcmp(cl->addr, addr) == 0) {
            return cl;
        }
    }
    struct gw_client *cl = calloc(1, sizeof(*cl));
    if (cl == NULL) {
        return NULL;
    }
    cl->table = t;
    str_copy(cl->addr, sizeof(cl->addr), addr);
    cl->next = t->buckets[b];
    t->buckets[b] = cl;
    t->nclients++;
    return cl;
}

/* Unlinks cl if nothing holds it; caller holds t->mu.  Returns whether the caller
 * must free cl (after unlocking). */
static bool
client_unlink_unheld(struct gw_fair_table *t, struct gw_client *cl)
{
    if (cl->refs > 0) {
        return false;
    }
    struct gw_client **pp = &t->buckets[addr_hash(cl->addr)];
    while (*pp != cl) {
        pp = &(*pp)->next;
    }
    *pp = cl->next;
    t->nclients--;
    return true;
}

/*
 * Drops one reference to cl along with nconns connections and nxfers
 * transfers it counted; frees cl at its last reference, and its table when
 * that was the table's last entry and no owner is left.  Any thread.
 */
static void
client_release(struct gw_client *cl, size_t nconns, size_t nxfers)
{
    struct gw_fair_table *t = cl->table;
    (void)pthread_mutex_lock(&t->mu);
    cl->nconns -= nconns;
    cl->nxfers -= nxfers;
    cl->refs--;
    bool gone = client_unlink_unheld(t, cl);
    bool table_gone = gone && t->refs == 0 && t->nclients == 0;
    (void)pthread_mutex_unlock(&t->mu);
    if (gone) {
        free(cl);
    }
    if (table_gone) {
        table_free(t);
    }
}

void
gw_http_fair_conn_end(struct gw_client *cl)
{
    if (cl != NULL) {
        client_release(cl, 1, 0);
    }
}

/* Close the oldest idle connection.  Returns false when there is none. */
static bool
shed_idle(struct gw_server *srv)
{
    struct gw_conn *victim = TAILQ_FIRST(&srv->idle);
    if (victim == NULL) {
        return false;
    }
    GW_COUNT(idle_shed);
    unsigned long skipped = 0;
    if (ratelog_due(&srv->log_shed, &skipped)) {
        log_warn("%zu connections (limits.max_connections): closing idle %s to admit a new one "
                 "(%lu more not logged)",
                 gw_http_clients_open(srv), victim->peer, skipped);
    }
    victim->dead = true;
    srv->shed(victim); /* gw_http_conn_free */
    return true;
}

struct gw_client *
gw_http_fair_admit(struct gw_server *srv, const char *peer, const struct gw_http_limits *lim,
                   bool *full)
{
    *full = false;
    char addr[64];
    peer_addr(peer, addr, sizeof(addr));
    struct gw_fair_table *t = srv->fair;
    /* the client's share first, counted at once under the lock, so that two loops
     * admitting the same address at the same time never both pass its limit */
    (void)pthread_mutex_lock(&t->mu);
    struct gw_client *cl = client_get(t, addr);
    size_t held = 0;
    bool over = false;
    bool drop = false;
    if (cl != NULL) {
        held = cl->nconns;
        over = held >= lim->max_conns_per_client;
        if (over) {
            drop = client_unlink_unheld(t, cl); /* a zero share: nothing else holds it */
        } else {
            cl->refs++;
            cl->nconns++;
        }
    }
    (void)pthread_mutex_unlock(&t->mu);
    if (cl == NULL) {
        log_warn("%s: out of memory", peer);
        return NULL;
    }
    if (over) {
        if (drop) {
            free(cl);
        }
        GW_COUNT(client_conns_refused);
        unsigned long skipped = 0;
        if (ratelog_due(&srv->log_conns, &skipped)) {
            log_warn("%s: refused: %zu connections from %s (limits.max_connections_per_client) "
                     "(%lu more refusals not logged)",
                     peer, held, addr, skipped);
        }
        return NULL;
    }
    /* then this loop's share of limits.max_connections; shedding frees a connection,
     * whose release takes the lock again, so it is not held here */
    if (gw_http_clients_open(srv) >= lim->max_connections && !shed_idle(srv)) {
        *full = true;
        client_release(cl, 1, 0);
        return NULL;
    }
    return cl;
}

struct gw_client *
gw_http_fair_relay_client(struct gw_server *srv, const char *peer)
{
    char addr[64];
    peer_addr(peer, addr, sizeof(addr));
    struct gw_fair_table *t = srv->fair;
    (void)pthread_mutex_lock(&t->mu);
    struct gw_client *cl = client_get(t, addr);
    if (cl != NULL) {
        cl->refs++;
        cl->nconns++; /* until attached (gw_http_fair_relay_attached): attach's failure path
                         ends it as a connection */
    }
    (void)pthread_mutex_unlock(&t->mu);
    return cl;
}

void
gw_http_fair_relay_attached(struct gw_client *cl)
{
    struct gw_fair_table *t = cl->table;
    (void)pthread_mutex_lock(&t->mu);
    cl->nconns--;
    (void)pthread_mutex_unlock(&t->mu);
}

void
gw_http_fair_relay_end(struct gw_client *cl)
{
    if (cl != NULL) {
        client_release(cl, 0, 0);
    }
}

void
gw_http_fair_idle(struct gw_conn *c)
{
    bool linger = c->lingering && !c->dead && !c->relayed; /* a relay is never shed */
    bool idle = linger || (c->req == NULL && !c->head_started && !c->closing && !c->dead &&
                           !c->srv->draining && !c->relayed);
    if (idle == c->is_idle && linger == c->idle_linger) {
        return;
    }
    struct gw_server *srv = c->srv;
    if (c->is_idle) {
        TAILQ_REMOVE(&srv->idle, c, idle_link);
    }
    c->is_idle = idle;
    c->idle_linger = linger;
    /* across loops, the hand-out sheds the oldest first (gate.c): by the process's order,
     * not the coarse clock, whose tick two loops' connections can share */
    c->idle_at = linger || srv->handout == NULL ? 0 : gw_http_handout_idle_seq(srv->handout);
    if (linger) {
        /* closing anyway, its answer flushed: shed before any kept-alive connection */
        TAILQ_INSERT_HEAD(&srv->idle, c, idle_link);
    } else if (idle) {
        TAILQ_INSERT_TAIL(&srv->idle, c, idle_link);
    }
    gw_http_accept_gate(srv); /* at the limit, accept only while one can be shed */
}

bool
gw_http_fair_rate_check(struct gw_conn *c, uint64_t now)
{
    const struct gw_req *req = c->req;
    uint64_t got = req->body_received + req->discarded - c->rate_bytes;
    uint64_t window = c->lim.min_body_rate_window_ms;
    uint64_t need = (uint64_t)c->lim.min_body_rate * window / 1000;
    if (got >= need) {
        c->rate_since = now;
        c->rate_bytes = req->body_received + req->discarded;
        return true;
    }
    GW_COUNT(slow_bodies_cut);
    unsigned long skipped = 0;
    if (ratelog_due(&c->srv->log_slow, &skipped)) {
        log_warn("%s %s: body cut: %llu bytes in %llu ms, under limits.min_body_rate %u B/s "
                 "(%lu more not logged)",
                 req->id, c->peer, (unsigned long long)got,
                 (unsigned long long)(now - c->rate_since), c->lim.min_body_rate, skipped);
    }
    return false;
}

struct gw_client *
gw_http_fair_transfer_begin(struct gw_req *req)
{
    struct gw_conn *c = req->conn;
    struct gw_client *cl = c->client;
    if (cl == NULL) {
        return NULL;
    }
    struct gw_fair_table *t = cl->table;
    (void)pthread_mutex_lock(&t->mu);
    size_t held = cl->nxfers;
    bool over = held >= c->lim.max_xfers_per_client;
    if (!over) {
        cl->nxfers++;
        cl->refs++;
    }
    (void)pthread_mutex_unlock(&t->mu);
    if (over) {
        GW_COUNT(client_transfers_refused);
        unsigned long skipped = 0;
        if (ratelog_due(&c->srv->log_xfers, &skipped)) {
            log_warn("%s %s: 503 SlowDown: %zu transfers in flight from %s "
                     "(limits.max_transfers_per_client) (%lu more not logged)",
                     req->id, c->peer, held, cl->addr, skipped);
        }
        return NULL;
    }
    return cl;
}

void
gw_http_fair_transfer_end(struct gw_client *cl)
{
    if (cl != NULL) {
        client_release(cl, 0, 1);
    }
}
