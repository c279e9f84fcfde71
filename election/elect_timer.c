/* election/elect_timer.c: one-shot timers on libevent for the election core. */
#include "election/elect_timer.h"

#include <stdlib.h>

#include <event2/event.h>

struct elect_timer {
    struct event *ev;     /* evtimer on the loop */
    elect_timer_fn *fire; /* the owner's callback */
    void *arg;            /* its argument */
};

/* evtimer callback, registered by elect_timer_new */
static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct elect_timer *t = arg;
    (void)fd;
    (void)what;
    t->fire(t->arg);
}

struct elect_timer *
elect_timer_new(struct event_base *base, elect_timer_fn *fire, void *arg)
{
    struct elect_timer *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        return NULL;
    }
    t->fire = fire;
    t->arg = arg;
    t->ev = evtimer_new(base, on_timer, t);
    if (t->ev == NULL) {
        free(t);
        return NULL;
    }
    return t;
}

void
elect_timer_set(struct elect_timer *t, uint64_t delay_ms)
{
    if (delay_ms > 86400000u) {
        delay_ms = 86400000u;
    }
    struct timeval tv = {.tv_sec = (time_t)(delay_ms / 1000),
                         .tv_usec = (suseconds_t)(delay_ms % 1000) * 1000};
    (void)evtimer_add(t->ev, &tv);
}

void
elect_timer_clear(struct elect_timer *t)
{
    (void)evtimer_del(t->ev);
}

void
elect_timer_free(struct elect_timer *t)
{
    if (t == NULL) {
        return;
    }
    event_free(t->ev);
    free(t);
}
