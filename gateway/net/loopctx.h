/*
 * gateway/net/loopctx.h: which event loop the calling thread runs (DESIGN
 * "Worker loops").
 *
 * The control loop (the thread that runs `serve`: the fence, the election,
 * the store's completions, the internal S3 client) leaves gw_loopctx_here
 * NULL; so does every single-loop process and every test that does not set
 * it.  A worker loop's thread sets it, once, before its loop runs, to a
 * context it owns for the thread's life.  Code that must not touch the
 * control loop's objects from another thread asks gw_loopctx_worker(): false
 * means "call them directly, as on a single loop"; true means "cross with a
 * message (gateway/net/loopmsg.h)": to ctl, and answers back to q.
 *
 * Threads: each thread reads and writes only its own pointer.
 */
#ifndef GW_LOOPCTX_H
#define GW_LOOPCTX_H

#include <stdbool.h>
#include <stddef.h>

struct event_base;
struct gw_loopq;
struct gw_fence_remote;

/* A worker loop, as its own thread sees it. */
struct gw_loopctx {
    struct event_base *base;       /* the worker's loop */
    struct gw_loopq *q;            /* the worker's queue: answers addressed to this loop */
    struct gw_loopq *ctl;          /* the control loop's queue */
    unsigned index;                /* 1..workers-1 (the control loop is 0) */
    struct gw_fence_remote *fence; /* the fence as this loop sees it (gateway/fence/port.h) */
};

/* The calling thread's worker loop, or NULL on the control loop (see above). */
extern _Thread_local struct gw_loopctx *gw_loopctx_here;

/* gw_loopctx_worker - true if the calling thread runs a worker loop. */
static inline bool
gw_loopctx_worker(void)
{
    return gw_loopctx_here != NULL;
}

/* gw_loopctx_index - the calling thread's loop: its index, 0 on the control loop. */
static inline unsigned
gw_loopctx_index(void)
{
    return gw_loopctx_here != NULL ? gw_loopctx_here->index : 0;
}

#endif
