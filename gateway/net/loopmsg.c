/*
 * gateway/net/loopmsg.c: messages from any thread to one event loop
 * (DESIGN "Worker loops").
 *
 * Two lists: pending, which senders append to under mu, and ready, the
 * owner's alone, which the owner's wake-up splices pending onto and runs
 * from the head.  signalled says an eventfd write is owed or done and not
 * yet consumed, so a burst of posts costs one write and one wake-up.  The
 * owner reads the eventfd before it takes pending, so a post that misses the
 * splice always finds signalled clear and writes again.
 */
#define LOG_MODULE "loopmsg"
#include "gateway/net/loopmsg.h"

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"

/* One endpoint slot: its current generation, and whether that one is open. */
struct slot {
    uint32_t gen; /* the generation of the latest endpoint in this slot (0: never used) */
    bool open;    /* that endpoint is open */
};

struct gw_loopq {
    pthread_mutex_t mu;         /* guards pending, pending_tail, signalled, closed */
    struct gw_loopmsg *pending; /* posted, not yet taken by the owner (oldest first) */
    struct gw_loopmsg *pending_tail;
    bool signalled;           /* the eventfd was written since the owner last took pending */
    bool closed;              /* gw_loopq_close ran: posts are refused */
    struct gw_loopmsg *ready; /* owner only: taken, not yet run (oldest first) */
    struct gw_loopmsg *ready_tail;
    int efd;              /* the eventfd that wakes the owner; owned */
    struct event *ev;     /* owned; EV_READ on efd, on the owner's base */
    struct event *more;   /* owned; a zero timer for the rest of a batch */
    struct slot *slots;   /* owner only: endpoint slots; owned */
    uint32_t nslots;      /* slots in use or free */
    uint32_t cap;         /* slots allocated */
    uint32_t *free_slots; /* owner only: indexes of closed slots (a stack); owned */
    uint32_t nfree;       /* entries on free_slots */
};

/* Is target 0 or an endpoint of q that is open now? */
static bool
target_open(const struct gw_loopq *q, uint64_t target)
{
    if (target == 0) {
        return true;
    }
    uint32_t idx = (uint32_t)(target & 0xffffffffu);
    uint32_t gen = (uint32_t)(target >> 32);
    if (idx == 0 || idx > q->nslots) {
        return false;
    }
    const struct slot *s = &q->slots[idx - 1];
    return s->open && s->gen == gen;
}

/* Pop the head of ready, or NULL. */
static struct gw_loopmsg *
ready_pop(struct gw_loopq *q)
{
    struct gw_loopmsg *m = q->ready;
    if (m != NULL) {
        q->ready = m->next;
        if (q->ready == NULL) {
            q->ready_tail = NULL;
        }
        m->next = NULL;
    }
    return m;
}

/* Move pending onto the end of ready (the owner, under mu). */
static void
take_pending(struct gw_loopq *q)
{
    if (q->pending == NULL) {
        return;
    }
    if (q->ready_tail != NULL) {
        q->ready_tail->next = q->pending;
    } else {
        q->ready = q->pending;
    }
    q->ready_tail = q->pending_tail;
    q->pending = NULL;
    q->pending_tail = NULL;
}

/* Run at most GW_LOOPQ_BATCH taken messages; a zero timer takes the rest after
 * the next poll, so other events of the loop get their turn (bounded work). */
static void
drain(struct gw_loopq *q)
{
    (void)pthread_mutex_lock(&q->mu);
    take_pending(q);
    q->signalled = false;
    (void)pthread_mutex_unlock(&q->mu);
    /* pop one at a time: a callback may close the queue or an endpoint */
    for (int i = 0; i < GW_LOOPQ_BATCH; i++) {
        struct gw_loopmsg *m = ready_pop(q);
        if (m == NULL) {
            return;
        }
        if (target_open(q, m->target)) {
            m->run(m);
        } else {
            m->cancel(m, ERR_CLOSED);
        }
    }
    if (q->ready != NULL) {
        static const struct timeval now = {0, 0};
        (void)evtimer_add(q->more, &now);
    }
}

/* EV_READ on efd (event_new in gw_loopq_new) */
static void
on_wake(evutil_socket_t fd, short what, void *arg)
{
    struct gw_loopq *q = arg;
    (void)what;
    uint64_t n;
    /* consume the wake-up first: a post after this sees signalled clear and writes again */
    (void)read(fd, &n, sizeof(n));
    drain(q);
}

/* evtimer q->more: the rest of a batch */
static void
on_more(evutil_socket_t fd, short what, void *arg)
{
    struct gw_loopq *q = arg;
    (void)fd;
    (void)what;
    drain(q);
}

struct gw_loopq *
gw_loopq_new(struct event_base *base)
{
    struct gw_loopq *q = calloc(1, sizeof(*q));
    if (q == NULL) {
        return NULL;
    }
    q->efd = -1;
    if (pthread_mutex_init(&q->mu, NULL) != 0) {
        free(q);
        return NULL;
    }
    q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (q->efd < 0) {
        log_error("eventfd: %s", strerror(errno));
        goto fail;
    }
    q->ev = event_new(base, q->efd, EV_READ | EV_PERSIST, on_wake, q);
    q->more = evtimer_new(base, on_more, q);
    if (q->ev == NULL || q->more == NULL || event_add(q->ev, NULL) != 0) {
        goto fail;
    }
    return q;
fail:
    gw_loopq_free(q);
    return NULL;
}

int
gw_loopq_post(struct gw_loopq *q, struct gw_loopmsg *m)
{
    m->next = NULL;
    (void)pthread_mutex_lock(&q->mu);
    if (q->closed) {
        (void)pthread_mutex_unlock(&q->mu);
        return ERR_CLOSED;
    }
    if (q->pending_tail != NULL) {
        q->pending_tail->next = m;
    } else {
        q->pending = m;
    }
    q->pending_tail = m;
    bool wake = !q->signalled;
    q->signalled = true;
    (void)pthread_mutex_unlock(&q->mu);
    if (wake) {
        uint64_t one = 1;
        /* cannot fail short of a counter at 2^64-2; EAGAIN would mean one is owed anyway */
        (void)write(q->efd, &one, sizeof(one));
    }
    return 0;
}

int
gw_loopq_ep_open(struct gw_loopq *q, uint64_t *id)
{
    uint32_t idx;
    if (q->nfree > 0) {
        idx = q->free_slots[--q->nfree];
    } else {
        if (q->nslots == q->cap) {
            uint32_t cap = q->cap == 0 ? 64 : q->cap * 2;
            if (cap < q->cap) {
                return ERR_NOMEM;
            }
            struct slot *slots = realloc(q->slots, (size_t)cap * sizeof(*slots));
            if (slots == NULL) {
                return ERR_NOMEM;
            }
            q->slots = slots;
            uint32_t *fr = realloc(q->free_slots, (size_t)cap * sizeof(*fr));
            if (fr == NULL) {
                return ERR_NOMEM;
            }
            q->free_slots = fr;
            q->cap = cap;
        }
        idx = q->nslots++;
        q->slots[idx].gen = 0;
    }
    struct slot *s = &q->slots[idx];
    s->gen++;
    if (s->gen == 0) { /* 0 never names an endpoint */
        s->gen = 1;
    }
    s->open = true;
    *id = (uint64_t)s->gen << 32 | (uint64_t)(idx + 1);
    return 0;
}

void
gw_loopq_ep_close(struct gw_loopq *q, uint64_t id)
{
    if (id == 0 || !target_open(q, id)) {
        return;
    }
    uint32_t idx = (uint32_t)(id & 0xffffffffu) - 1;
    q->slots[idx].open = false;
    q->free_slots[q->nfree++] = idx;
}

void
gw_loopq_close(struct gw_loopq *q)
{
    (void)pthread_mutex_lock(&q->mu);
    q->closed = true;
    take_pending(q);
    q->signalled = false;
    (void)pthread_mutex_unlock(&q->mu);
    struct gw_loopmsg *m;
    while ((m = ready_pop(q)) != NULL) {
        m->cancel(m, ERR_CLOSED);
    }
}

void
gw_loopq_free(struct gw_loopq *q)
{
    if (q == NULL) {
        return;
    }
    gw_loopq_close(q);
    if (q->ev != NULL) {
        event_free(q->ev);
    }
    if (q->more != NULL) {
        event_free(q->more);
    }
    if (q->efd >= 0) {
        (void)close(q->efd);
    }
    (void)pthread_mutex_destroy(&q->mu);
    free(q->slots);
    free(q->free_slots);
    free(q);
}
