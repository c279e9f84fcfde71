/*
 * gateway/http/gate.c: the accept gate: the listeners on or off by the
 * connection count (this server's share of limits.max_connections, or an idle
 * connection to shed); and the hand-out ("accept": "acceptor"), where the
 * control loop's server alone accepts on the S3 ports and gives each
 * connection to the loop with room and the fewest connections (handout.c
 * picks), parking it while no loop has room; a loop that makes room while
 * the acceptor's listeners are off wakes it with a message.
 * Below the listeners (listen.c), the connections (server.c) and fair use
 * (fair.c), which all open or close it; it calls nothing of theirs back
 * (a connection handed to a loop is served through srv->attach).
 * Event-loop thread only (each server's own; the hand-out's counts are
 * atomics, and its messages cross by the loops' queues).
 */
#define LOG_MODULE "http"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "common/buf.h"
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

/* ---- the hand-out ("accept": "acceptor") ---- */

#define GATE_PARKED_MAX 64 /* accepted connections held while no loop has room */

/* To the acceptor: a loop made room while its listeners were off. */
struct wake {
    struct gw_loopmsg m; /* first */
    struct gw_server *acceptor;
};

static void
on_wake(struct gw_loopmsg *m)
{
    struct gw_server *srv = ((struct wake *)m)->acceptor; /* alive while its loop runs */
    free(m);
    gw_http_accept_gate(srv);
}

static void
on_wake_cancel(struct gw_loopmsg *m, int why)
{
    (void)why;
    free(m);
}

/* This loop's counts, for the acceptor's choice (handout.c). */
static void
publish(struct gw_server *srv)
{
    const struct gw_conn *first = TAILQ_FIRST(&srv->idle);
    atomic_store(&srv->slot->open, gw_http_clients_open(srv));
    atomic_store(&srv->slot->oldest_idle, first != NULL ? first->idle_at : UINT64_MAX);
}

static void wake_acceptor(struct gw_handout *h);

/*
 * On the chosen loop: serve the connection handed over.  Its count moves
 * from pending to open: open first, so the acceptor never sees the loop
 * one lighter than it is and hands it a connection past its share (which
 * would be shed or refused here instead of parked).
 */
static void
on_handoff(struct gw_loopmsg *m)
{
    struct gw_handoff *ho = (struct gw_handoff *)(void *)m;
    struct gw_server *srv = ho->slot->srv;
    if (srv->draining) {
        (void)close(ho->fd);
    } else {
        srv->attach(srv, ho->fd, ho->peer, ho->idx);
    }
    publish(srv);
    (void)atomic_fetch_sub(&ho->slot->pending, 1);
    free(ho);
    wake_acceptor(srv->handout); /* dropped instead: room made, for a paused acceptor */
}

static void
on_handoff_cancel(struct gw_loopmsg *m, int why)
{
    struct gw_handoff *ho = (struct gw_handoff *)(void *)m;
    (void)why; /* the loop is ending: its server is gone */
    (void)close(ho->fd);
    (void)atomic_fetch_sub(&ho->slot->pending, 1);
    free(ho);
}

/* The acceptor: the oldest parked connection to slot s (this loop's or another's). */
static void
hand_over(struct gw_server *srv, struct gw_handout_slot *s)
{
    struct gw_handout *h = srv->handout;
    struct gw_handoff *ho = srv->parked;
    srv->parked = ho->next;
    if (srv->parked == NULL) {
        srv->parked_last = NULL;
    }
    srv->nparked--;
    h->next = (h->next + 1) % h->n; /* ties in turn */
    if (s == srv->slot) {
        srv->attach(srv, ho->fd, ho->peer, ho->idx);
        free(ho);
        publish(srv);
        return;
    }
    ho->slot = s;
    log_debug("%s: connection handed to loop %zu", ho->peer, (size_t)(s - h->slot));
    ho->m = (struct gw_loopmsg){.run = on_handoff, .cancel = on_handoff_cancel};
    (void)atomic_fetch_add(&s->pending, 1);
    if (gw_loopq_post(s->q, &ho->m) != 0) {
        (void)atomic_fetch_sub(&s->pending, 1); /* that loop has ended */
        (void)close(ho->fd);
        free(ho);
    }
}

/* A loop beside the acceptor made room: wake the acceptor if it paused. */
static void
wake_acceptor(struct gw_handout *h)
{
    if (!atomic_load(&h->paused) || !atomic_exchange(&h->paused, false)) {
        return;
    }
    struct wake *w = malloc(sizeof(*w));
    if (w == NULL) {
        log_error("out of memory: the acceptor resumes at its own next close");
        return;
    }
    *w = (struct wake){.m = {.run = on_wake, .cancel = on_wake_cancel}, .acceptor = h->slot[0].srv};
    if (gw_loopq_post(h->ctlq, &w->m) != 0) {
        free(w); /* the control loop has ended */
    }
}

/*
 * The acceptor's turn: hand the parked connections out while a loop has
 * room, then keep the listeners on if one still has, else pause them.  It
 * pauses only after it has raised the flag and still sees no room, and a
 * loop looks at the flag only after publishing its counts (handout_gate):
 * one of the two always sees the other (sequentially consistent atomics),
 * so no room is ever missed.  From the loop only (on_accept, on_flush): a
 * hand-over to this loop may shed an idle connection, which must not be
 * the one whose state machine is running.
 */
static void
acceptor_turn(struct gw_server *srv)
{
    struct gw_handout *h = srv->handout;
    struct gw_http_limits lim;
    gw_http_server_limits(&lim, srv);
    for (;;) {
        struct gw_handout_slot *s = gw_http_handout_pick(h, lim.max_connections);
        while (srv->parked != NULL && s != NULL) {
            hand_over(srv, s);
            s = gw_http_handout_pick(h, lim.max_connections);
        }
        if (srv->parked == NULL && s != NULL) {
            if (srv->accepting_paused) {
                atomic_store(&h->paused, false);
                gw_http_resume_accepting(srv);
            }
            return;
        }
        atomic_store(&h->paused, true);
        if (gw_http_handout_pick(h, lim.max_connections) != NULL) {
            continue; /* a loop made room meanwhile */
        }
        if (!srv->accepting_paused) {
            log_warn("every loop at its share of limits.max_connections (%zu), none idle: not "
                     "accepting more",
                     lim.max_connections);
            gw_http_pause_accepting(srv);
        }
        return;
    }
}

/* evtimer (zero): the acceptor's turn, from its loop. */
static void
on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    acceptor_turn(arg);
}

/*
 * The gate with the hand-out: publish.  The acceptor then takes its turn at
 * once when nothing is parked (pausing or resuming is safe from anywhere),
 * else from its loop.
 */
static void
handout_gate(struct gw_server *srv)
{
    struct gw_handout *h = srv->handout;
    publish(srv);
    if (srv->slot != &h->slot[0]) {
        wake_acceptor(h);
    } else if (srv->parked == NULL) {
        acceptor_turn(srv);
    } else if (srv->flush != NULL) {
        event_active(srv->flush, EV_TIMEOUT, 0);
    }
}

int
gw_http_handout_start(struct gw_server *srv)
{
    if (srv->slot != &srv->handout->slot[0]) {
        return 0;
    }
    srv->flush = evtimer_new(srv->base, on_flush, srv);
    return srv->flush != NULL ? 0 : ERR_NOMEM;
}

void
gw_http_handout_give(struct gw_server *srv, int fd, const char *peer, size_t idx)
{
    struct gw_handoff *ho = NULL;
    if (srv->nparked < GATE_PARKED_MAX) {
        ho = malloc(sizeof(*ho));
    }
    if (ho == NULL) {
        log_warn("%s: refused: %zu connections wait for room", peer, srv->nparked);
        (void)close(fd);
        return;
    }
    *ho = (struct gw_handoff){.fd = fd, .idx = idx};
    str_copy(ho->peer, sizeof(ho->peer), peer);
    if (srv->parked_last != NULL) {
        srv->parked_last->next = ho;
    } else {
        srv->parked = ho;
    }
    srv->parked_last = ho;
    srv->nparked++;
    acceptor_turn(srv);
}

void
gw_http_handout_stop(struct gw_server *srv)
{
    if (srv->flush != NULL) {
        event_free(srv->flush);
        srv->flush = NULL;
    }
    while (srv->parked != NULL) {
        struct gw_handoff *ho = srv->parked;
        srv->parked = ho->next;
        (void)close(ho->fd);
        free(ho);
    }
    srv->parked_last = NULL;
    srv->nparked = 0;
}

void
gw_http_accept_gate(struct gw_server *srv)
{
    if (srv->handout != NULL) {
        handout_gate(srv);
        return;
    }
    struct gw_http_limits lim;
    gw_http_server_limits(&lim, srv);
    bool room = gw_http_clients_open(srv) < lim.max_connections || !TAILQ_EMPTY(&srv->idle);
    if (room && srv->accepting_paused) {
        gw_http_resume_accepting(srv);
    } else if (!room && !srv->accepting_paused) {
        log_warn("%zu connections, none idle: not accepting more", gw_http_clients_open(srv));
        gw_http_pause_accepting(srv);
    }
}
