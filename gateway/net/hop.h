/*
 * gateway/net/hop.h: run a continuation on the loop that queued an
 * asynchronous call (DESIGN "Worker loops").
 *
 * The store's completions run on the control loop's thread
 * (store_dispatch_completions), whichever thread queued the call.  A worker
 * loop that queues a store call from its own thread must not let the
 * completion touch its objects (a request, its per-thread counters) there:
 * the completion copies what it was given into the caller's object and
 * hops back with gw_hop_post, and the continuation (run) then does the rest
 * on the worker's thread.  On the control loop, or in a single-loop process
 * (gw_loopctx_here NULL), gw_hop_init records no loop and the completion
 * simply goes on in place (gw_hop_away false): the single-loop path costs one
 * thread-local read.
 *
 * Threads: gw_hop_init on the thread that queues the call; gw_hop_away and
 * gw_hop_post on the completion's thread; run and cancel on the queuing
 * loop's thread (gateway/net/loopmsg.h).
 */
#ifndef GW_HOP_H
#define GW_HOP_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "gateway/net/loopmsg.h"

struct gw_loopq;

/* The way back to the loop that queued a call; embedded in the caller's object. */
struct gw_hop {
    struct gw_loopmsg msg; /* posted to q (run, cancel; target 0: the loop itself) */
    struct gw_loopq *q;    /* the queuing worker loop's queue; NULL: the control loop */
};

/*
 * gw_hop_init - remember the calling thread's loop (gw_loopctx_here's q, or
 * none on the control loop) and the continuation.  Call it before queuing
 * the asynchronous call.
 * [in] run     the continuation: runs on the queuing loop's thread, from its loop
 * [in] cancel  runs instead when that loop's queue was closed with the hop
 *              pending (shutdown): it must release what the object holds
 * Recover the object from the message with offsetof (msg is the hop's first field).
 */
void gw_hop_init(struct gw_hop *h, gw_loopmsg_run_fn *run, gw_loopmsg_cancel_fn *cancel);

/* gw_hop_away - true if the completion must hop (the call was queued by a worker loop). */
static inline bool
gw_hop_away(const struct gw_hop *h)
{
    return h->q != NULL;
}

/*
 * gw_hop_post - hand h's object back to its loop (from the completion, any
 * thread; gw_hop_away(h) must be true).  Everything the continuation reads
 * must be written before this call: the post publishes it to the loop's
 * thread, and the object is the loop's from then on (run may already be
 * running when this returns).
 * Returns 0, or ERR_CLOSED: the loop's queue is closed (the loop is going
 * away); nothing will run and the object stays the caller's.  Its loop's
 * objects must not be touched from here: see the caller's contract.
 */
MUST_USE int gw_hop_post(struct gw_hop *h);

#endif
