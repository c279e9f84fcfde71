/*
 * election/elect_timer.h: the thin libevent adapter of the election: one
 * re-armable one-shot timer.  The election core computes deadlines on the
 * injected clock (common/clock.h) and arms this timer with the delay; when it
 * fires, the core looks at the clock again (a pinned clock in tests makes the
 * real timer a harmless extra wake-up).  Event-loop thread only.
 */
#ifndef ELECTION_ELECT_TIMER_H
#define ELECTION_ELECT_TIMER_H

#include <stdint.h>

struct event_base;
struct elect_timer;

/* elect_timer_fn - the timer fired (registered by elect_timer_new). */
typedef void elect_timer_fn(void *arg);

/*
 * elect_timer_new - a disarmed timer on base calling fire(arg).
 * Returns the timer (elect_timer_free), or NULL (out of memory).
 */
struct elect_timer *elect_timer_new(struct event_base *base, elect_timer_fn *fire, void *arg);

/* elect_timer_set - (re)arm to fire once, delay_ms from now (capped at one day). */
void elect_timer_set(struct elect_timer *t, uint64_t delay_ms);

/* elect_timer_clear - disarm; fire will not run until the next set. */
void elect_timer_clear(struct elect_timer *t);

/* elect_timer_free - disarm and free.  NULL-safe. */
void elect_timer_free(struct elect_timer *t);

#endif
