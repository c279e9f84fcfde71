/*
 * gateway/net/loopmsg.h: messages from any thread to one event loop
 * (DESIGN "Worker loops").
 *
 * A struct gw_loopq belongs to one event loop, its owner: other threads (and
 * the owner itself) post messages to it, and the owner runs them, from its
 * loop, in the order they were posted.  Messages from one sender thread to
 * one queue therefore run in the order that thread posted them.  Posting
 * holds the queue's mutex only to link the message; the owner holds it only
 * to take the whole list; an eventfd, written when the list goes from empty
 * to non-empty, wakes the owner's loop.  At most GW_LOOPQ_BATCH messages run
 * per turn of the loop; a zero timer takes the rest after the next poll
 * (bounded work).
 *
 * Messages are intrusive: the sender embeds a struct gw_loopmsg in an object
 * of its own and the queue borrows it from gw_loopq_post until it calls
 * exactly one of the message's two callbacks, run or cancel, on the owner's
 * thread; after that call the queue never touches the message again, so the
 * callback may free it.
 *
 * Endpoints.  An object of the owner's (a client's request) that may be
 * freed while messages addressed to it are on their way registers an
 * endpoint (gw_loopq_ep_open) and gives its id to the senders; a message
 * addressed to that id runs only if the endpoint is still open when the
 * message is taken, else its cancel callback runs with ERR_CLOSED.  An id is
 * a slot and a generation: a slot reused by a newer endpoint never receives
 * an older endpoint's messages.  Target 0 is the loop itself: always run
 * while the queue is open.
 *
 * Threads: gw_loopq_post from any thread; everything else on the owner's
 * thread only (the loop's thread once it runs).
 */
#ifndef GW_LOOPMSG_H
#define GW_LOOPMSG_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct event_base;
struct gw_loopq;
struct gw_loopmsg;

#define GW_LOOPQ_BATCH 64 /* messages run per wake-up of the owner's loop */

/* gw_loopmsg_run_fn - the message arrived; runs on the owner's thread, from its loop. */
typedef void gw_loopmsg_run_fn(struct gw_loopmsg *m);

/*
 * gw_loopmsg_cancel_fn - the message will never run: why is ERR_CLOSED (its
 * endpoint was closed, or the queue was closed with it pending).  Runs on
 * the owner's thread (from its loop, or from gw_loopq_close).  It must
 * release what the message holds.
 */
typedef void gw_loopmsg_cancel_fn(struct gw_loopmsg *m, int why);

/* GW_LOOPMSG_OWNER - the object of type type whose member member is the message m. */
#define GW_LOOPMSG_OWNER(m, type, member) ((type *)(void *)((char *)(m)-offsetof(type, member)))

/* One message, embedded by its sender (recover the container with GW_LOOPMSG_OWNER). */
struct gw_loopmsg {
    struct gw_loopmsg *next;      /* the queue's link; the queue's while posted */
    gw_loopmsg_run_fn *run;       /* called if it is delivered */
    gw_loopmsg_cancel_fn *cancel; /* called instead if it is not (may not be NULL) */
    uint64_t target;              /* an endpoint id of the queue, or 0: the loop itself */
};

/*
 * gw_loopq_new - a queue owned by the loop base (borrowed; must outlive the
 * queue), watched by an event on base.
 * Returns the queue, or NULL (out of memory, or no eventfd: errno logged).
 */
struct gw_loopq *gw_loopq_new(struct event_base *base);

/*
 * gw_loopq_post - hand m to q's owner (any thread).  m's run and cancel and
 * target must be set; the queue borrows m until it calls one of them, never
 * before this returns on the owner's thread (another thread's post may be
 * run by the owner before the post returns).
 * Returns 0, or ERR_CLOSED: q is closed; nothing is called and m stays the
 * caller's.
 */
MUST_USE int gw_loopq_post(struct gw_loopq *q, struct gw_loopmsg *m);

/*
 * gw_loopq_ep_open - a new endpoint on q (owner's thread).
 * [out] id  nonzero; the messages' target
 * Returns 0 or ERR_NOMEM.
 */
MUST_USE int gw_loopq_ep_open(struct gw_loopq *q, uint64_t *id);

/*
 * gw_loopq_ep_close - close endpoint id (owner's thread): messages addressed
 * to it, pending or posted later, are cancelled with ERR_CLOSED.  An id that
 * is not open (0, closed, stale) is ignored.
 */
void gw_loopq_ep_close(struct gw_loopq *q, uint64_t id);

/*
 * gw_loopq_close - stop taking messages (owner's thread): every pending
 * message is cancelled with ERR_CLOSED now, in the order posted, and every
 * later gw_loopq_post returns ERR_CLOSED.  The queue stays allocated for the
 * senders that may still post until gw_loopq_free.  Idempotent.
 */
void gw_loopq_close(struct gw_loopq *q);

/*
 * gw_loopq_free - close q (as gw_loopq_close) and free it; no thread may post
 * to it any more, and no message callback of q may be running.  NULL-safe.
 */
void gw_loopq_free(struct gw_loopq *q);

#endif
