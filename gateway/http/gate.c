/*
 * gateway/http/gate.c: the accept gate: the listeners on or off by the
 * connection count (this server's share of limits.max_connections, or an idle
 * connection to shed).
 * Below the listeners (listen.c), the connections (server.c) and fair use
 * (fair.c), which all open or close it; it calls nothing of theirs back.
 * Event-loop thread only.
 */
#define LOG_MODULE "http"

#include <event2/listener.h>

#include "common/log.h"
#include "gateway/http/internal.h"

void
gw_http_resume_accepting(struct gw_server *srv)
{
    if (srv->draining) {
        return;
    }
    for (size_t i = 0; i < srv->nlisten; i++) {
        if (srv->lev[i] != NULL) {
            (void)evconnlistener_enable(srv->lev[i]);
        }
    }
    srv->accepting_paused = false;
}

void
gw_http_pause_accepting(struct gw_server *srv)
{
    for (size_t i = 0; i < srv->nlisten; i++) {
        if (srv->lev[i] != NULL) {
            (void)evconnlistener_disable(srv->lev[i]);
        }
    }
    srv->accepting_paused = true;
}

void
gw_http_accept_gate(struct gw_server *srv)
{
    struct gw_http_limits lim;
    gw_http_server_limits(&lim, srv);
    bool room = srv->nconns < lim.max_connections || !TAILQ_EMPTY(&srv->idle);
    if (room && srv->accepting_paused) {
        gw_http_resume_accepting(srv);
    } else if (!room && !srv->accepting_paused) {
        log_warn("%zu connections, none idle: not accepting more", srv->nconns);
        gw_http_pause_accepting(srv);
    }
}
