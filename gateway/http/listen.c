/*
 * gateway/http/listen.c: the server's listeners and life: binding each
 * cfg->listen entry (TLS contexts included), accepting (fair-use admission,
 * pausing at limits.max_connections through gate.c), draining and freeing.
 * Each accepted socket becomes a connection of gateway/http/server.c
 * (gw_http_conn_attach).
 */
#define LOG_MODULE "http"
#include "gateway/http/http.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "common/log.h"
#include "gateway/http/internal.h"
#include "gateway/http/tls.h"

static void
peer_name(const struct sockaddr *sa, socklen_t len, char *out, size_t outlen)
{
    char host[INET6_ADDRSTRLEN];
    char serv[8];
    if (getnameinfo(sa, len, host, sizeof(host), serv, sizeof(serv),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        (void)snprintf(out, outlen, "?");
        return;
    }
    if (sa->sa_family == AF_INET6) {
        (void)snprintf(out, outlen, "[%s]:%s", host, serv);
    } else {
        (void)snprintf(out, outlen, "%s:%s", host, serv);
    }
}

/*
 * Admits the connection fd from peer on listener idx of srv and serves it
 * (srv->attach: the hand-out calls it on the loop it chose).  The caller
 * runs the accept gate after.
 */
static void
accept_attach(struct gw_server *srv, evutil_socket_t fd, const char *peer, size_t idx)
{
    struct gw_http_limits lim;
    gw_http_server_limits(&lim, srv);
    bool full = false;
    struct gw_client *cl = gw_http_fair_admit(srv, peer, &lim, &full);
    if (cl == NULL) {
        /* over its address's share (logged there), or at the limit with nothing idle */
        (void)evutil_closesocket(fd);
        return;
    }
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct bufferevent *bev;
    if (srv->tls[idx] != NULL) {
        bev = gw_tls_bev_new(srv->tls[idx], srv->base, fd);
    } else {
        bev = bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE);
    }
    if (bev == NULL) {
        log_warn("%s: cannot set up the connection", peer);
        (void)evutil_closesocket(fd);
        gw_http_fair_conn_end(cl);
        return;
    }
    enum gw_listener kind = GW_LISTENER_S3_ALL;
    if (idx >= srv->ns3) {
        kind = GW_LISTENER_ADMIN;
    } else if (srv->cfg->nadmin_listen > 0) {
        /* admin listeners configured: the operator endpoints are theirs, whether or
         * not this server (a worker loop's) opened them */
        kind = GW_LISTENER_S3;
    }
    if (gw_http_conn_attach(srv, bev, peer, srv->tls[idx] != NULL, kind, cl) != 0) {
        log_warn("%s: out of memory", peer);
    }
}

/* evconnlistener callback: one accepted socket */
static void
on_accept(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa, int salen, void *arg)
{
    struct gw_server *srv = arg;
    size_t idx = 0;
    while (idx < srv->nlisten && srv->lev[idx] != lev) {
        idx++;
    }
    if (srv->draining || idx == srv->nlisten) {
        (void)evutil_closesocket(fd);
        gw_http_pause_accepting(srv);
        return;
    }
    char peer[64];
    peer_name(sa, (socklen_t)salen, peer, sizeof(peer));
    if (srv->handout != NULL && idx < srv->ns3) {
        gw_http_handout_give(srv, fd, peer, idx); /* to the loop with the fewest */
        return;
    }
    accept_attach(srv, fd, peer, idx);
    gw_http_accept_gate(srv);
}

/* evconnlistener error callback */
static void
on_accept_error(struct evconnlistener *lev, void *arg)
{
    (void)lev;
    (void)arg;
    int err = EVUTIL_SOCKET_ERROR();
    /* EMFILE and friends: the descriptor is retried on the next readiness */
    log_warn("accept: %s", evutil_socket_error_to_string(err));
}

/* Listener i's TLS context, when l has a certificate (port: for the messages). */
static int
listen_tls(struct gw_server *srv, size_t i, const struct gw_listen *l, const char *port,
           char *errbuf, size_t errlen)
{
    if (l->tls_cert == NULL && l->tls_key == NULL) {
        return 0;
    }
    if (l->tls_cert == NULL || l->tls_key == NULL) {
        (void)snprintf(errbuf, errlen, "listen %s:%s: tls_cert and tls_key go together", l->host,
                       port);
        return ERR_INVAL;
    }
    return gw_tls_new(l->tls_cert, l->tls_key, &srv->tls[i], errbuf, errlen);
}

/*
 * Binds listener i to l's host and port (or to port when not 0: a worker
 * server takes the first server's ports), with SO_REUSEPORT when reuseport
 * (several servers, one socket each, on one port).  With bind false (a loop
 * that is handed its connections), only records port and loads the TLS
 * context.
 */
static int
listen_one(struct gw_server *srv, size_t i, const struct gw_listen *l, uint16_t port_over,
           bool reuseport, bool bind, const char *what, char *errbuf, size_t errlen)
{
    char port[8];
    (void)snprintf(port, sizeof(port), "%u", (unsigned)(port_over != 0 ? port_over : l->port));
    if (!bind) {
        srv->port[i] = port_over;
        return listen_tls(srv, i, l, port, errbuf, errlen);
    }
    struct addrinfo hints;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    struct addrinfo *ai = NULL;
    /* startup only: a name lookup may block here, never on the request path */
    int rc = getaddrinfo(l->host, port, &hints, &ai);
    if (rc != 0) {
        (void)snprintf(errbuf, errlen, "listen %s:%s: %s", l->host, port, gai_strerror(rc));
        return ERR_INVAL;
    }
    unsigned flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC;
    if (reuseport) {
        /* the kernel spreads connections among the loops' sockets (DESIGN "Worker loops") */
        flags |= LEV_OPT_REUSEABLE_PORT;
    }
    srv->lev[i] = evconnlistener_new_bind(srv->base, on_accept, srv, flags, -1, ai->ai_addr,
                                          (int)ai->ai_addrlen);
    freeaddrinfo(ai);
    if (srv->lev[i] == NULL) {
        (void)snprintf(errbuf, errlen, "listen %s:%s: %s", l->host, port, strerror(errno));
        return ERR_IO;
    }
    evconnlistener_set_error_cb(srv->lev[i], on_accept_error);
    struct sockaddr_storage ss;
    socklen_t slen = sizeof(ss);
    evutil_socket_t fd = evconnlistener_get_fd(srv->lev[i]);
    if (getsockname(fd, (struct sockaddr *)&ss, &slen) == 0) {
        if (ss.ss_family == AF_INET) {
            srv->port[i] = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            srv->port[i] = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
        }
    }
    rc = listen_tls(srv, i, l, port, errbuf, errlen);
    if (rc != 0) {
        return rc;
    }
    log_info("listening on %s:%u%s%s", l->host, (unsigned)srv->port[i],
             srv->tls[i] != NULL ? " (TLS)" : "", what);
    return 0;
}

struct gw_server *
gw_server_new(struct event_base *base, const struct gw_config *cfg, gw_request_fn *on_request,
              void *arg, char *errbuf, size_t errlen)
{
    return gw_server_new_opts(base, cfg, on_request, arg, NULL, errbuf, errlen);
}

struct gw_server *
gw_server_new_opts(struct event_base *base, const struct gw_config *cfg, gw_request_fn *on_request,
                   void *arg, const struct gw_server_opts *opts, char *errbuf, size_t errlen)
{
    static const struct gw_server_opts alone = {0};
    if (opts == NULL) {
        opts = &alone;
    }
    struct gw_server *srv = calloc(1, sizeof(*srv));
    if (srv == NULL) {
        (void)snprintf(errbuf, errlen, "out of memory");
        return NULL;
    }
    srv->base = base;
    srv->shed = gw_http_conn_free;
    srv->attach = accept_attach;
    srv->cfg = cfg;
    srv->on_request = on_request;
    srv->arg = arg;
    srv->loops = opts->loops > 1 ? opts->loops : 1;
    TAILQ_INIT(&srv->conns);
    if (gw_http_fair_init(srv, opts->fair) != 0) {
        (void)snprintf(errbuf, errlen, "out of memory");
        goto fail;
    }
    const struct gw_server *first = opts->first;
    if (opts->handout != NULL && gw_http_handout_join(opts->handout, srv, opts->q) != 0) {
        (void)snprintf(errbuf, errlen, "more loops than the hand-out was made for");
        goto fail;
    }
    if (opts->handout != NULL && gw_http_handout_start(srv) != 0) {
        (void)snprintf(errbuf, errlen, "out of memory");
        goto fail;
    }
    /* handed its connections: a loop beside the acceptor binds nothing */
    bool bind = opts->handout == NULL || first == NULL;
    bool reuseport = opts->handout == NULL && (opts->reuseport || first != NULL);
    for (size_t i = 0; i < cfg->nlisten && i < GW_CONFIG_MAX_LISTEN; i++) {
        srv->nlisten = i + 1;
        srv->ns3 = srv->nlisten;
        uint16_t port = first != NULL ? gw_server_port(first, i) : 0;
        if (first != NULL && port == 0) {
            (void)snprintf(errbuf, errlen, "listen %s: the first server has no listener %zu",
                           cfg->listen[i].host, i);
            goto fail;
        }
        if (listen_one(srv, i, &cfg->listen[i], port, reuseport, bind, "", errbuf, errlen) != 0) {
            goto fail;
        }
    }
    /* the admin listener stays single, on the first server (DESIGN "Worker loops") */
    for (size_t i = 0; first == NULL && i < cfg->nadmin_listen && i < GW_CONFIG_MAX_LISTEN; i++) {
        size_t k = srv->ns3 + i;
        srv->nlisten = k + 1;
        if (listen_one(srv, k, &cfg->admin_listen[i], 0, false, true, " (admin)", errbuf, errlen) !=
            0) {
            goto fail;
        }
    }
    return srv;
fail:
    gw_server_free(srv);
    return NULL;
}

void
gw_server_set_config(struct gw_server *srv, const struct gw_config *cfg)
{
    srv->cfg = cfg;
}

static void
free_listeners(struct gw_server *srv)
{
    for (size_t i = 0; i < srv->nlisten; i++) {
        if (srv->lev[i] != NULL) {
            evconnlistener_free(srv->lev[i]);
            srv->lev[i] = NULL;
        }
    }
}

void
gw_server_drain(struct gw_server *srv, void (*done)(void *arg), void *arg)
{
    srv->draining = true;
    srv->drain_done = done;
    srv->drain_arg = arg;
    free_listeners(srv);
    gw_http_handout_stop(srv);
    struct gw_conn *c = NULL;
    TAILQ_FOREACH (c, &srv->conns, link) {
        if (c->req == NULL && !c->head_started && !c->closing) {
            c->dead = true; /* idle: close from the loop */
            gw_http_conn_kick(c);
        }
    }
    if (srv->nconns == 0 && srv->drain_done != NULL) {
        srv->drain_done = NULL;
        done(arg);
    }
}

void
gw_server_free(struct gw_server *srv)
{
    if (srv == NULL) {
        return;
    }
    srv->drain_done = NULL;
    srv->draining = true;
    free_listeners(srv);
    gw_http_handout_stop(srv);
    struct gw_conn *c = TAILQ_FIRST(&srv->conns);
    while (c != NULL) {
        struct gw_conn *next = TAILQ_NEXT(c, link);
        gw_http_conn_free(c); /* on_abort handlers must not free other connections */
        c = next;
    }
    for (size_t i = 0; i < GW_HTTP_MAX_LISTEN; i++) {
        gw_tls_free(srv->tls[i]);
    }
    gw_http_fair_cleanup(srv);
    free(srv->rbuf);
    free(srv);
}

uint16_t
gw_server_port(const struct gw_server *srv, size_t i)
{
    return i < srv->ns3 ? srv->port[i] : 0;
}

uint16_t
gw_server_admin_port(const struct gw_server *srv, size_t i)
{
    return srv->ns3 + i < srv->nlisten ? srv->port[srv->ns3 + i] : 0;
}
