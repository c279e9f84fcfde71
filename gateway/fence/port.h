/*
 * gateway/fence/port.h: the one way the proxy and the router reach the
 * fence, on whichever loop they run (DESIGN "Worker loops").
 *
 * On the control loop (and in a single-loop process, and in tests that set
 * no loop context) each call is the fence's own (fence.h), directly.  On a
 * worker loop (gw_loopctx_worker(), gateway/net/loopctx.h) each is the same
 * call as a crossing (remote.h), through the loop's gw_loopctx_here->fence.
 * A request lives on the loop that accepted it, so the thread that admitted
 * a ticket is the thread that makes every later call on it, and the thread
 * alone says which kind of ticket it holds.
 *
 * The callbacks are the fence's and keep its contract: never run before the
 * call that registers them returns, on the caller's loop.
 */
#ifndef GW_FENCE_PORT_H
#define GW_FENCE_PORT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "gateway/fence/fence.h"
#include "gateway/fence/remote.h"

/* A gw_fence_ticket on the control loop, a gw_fence_rticket on a worker loop. */
struct gw_fport_ticket;

/*
 * gw_fport_admit - gw_fence_admit (f: the control loop's fence; unused on a
 * worker loop, whose crossing reaches it).  Same arguments, returns and
 * callbacks; on a worker loop never GW_FENCE_ADMITTED (the verdict crosses
 * back), and ERR_CLOSED too (the control loop is going).
 */
MUST_USE int gw_fport_admit(struct gw_fence *f, const struct gw_fence_claim *claim,
                            const char *reqid, const char *principal, gw_fence_admit_fn *admitted,
                            gw_fence_cut_fn *cut, void *arg, struct gw_fport_ticket **out);

/* gw_fport_rebind, _may_finish, _sent, _release - as gw_fence_ticket_*. */
void gw_fport_rebind(struct gw_fport_ticket *t, gw_fence_cut_fn *cut, gw_fence_resume_fn *resume,
                     void *arg);
MUST_USE bool gw_fport_may_finish(struct gw_fport_ticket *t);
void gw_fport_sent(struct gw_fport_ticket *t);
void gw_fport_release(struct gw_fport_ticket *t);

/* gw_fport_remote - true where the fence is a crossing away (ask, then hear). */
bool gw_fport_remote(void);

/* gw_fport_local - the fence's own ticket, on the control loop only (NULL elsewhere). */
struct gw_fence_ticket *gw_fport_local(struct gw_fport_ticket *t);

/*
 * gw_fport_judge - on a worker loop: gw_fence_rticket_judge (remote.h).  The
 * control loop judges at once (gateway/proxy/cond_reply.c's gw_cond_judge
 * with gw_fport_local) and never calls this.
 */
void gw_fport_judge(struct gw_fport_ticket *t, gw_fence_judged_fn *judged);

#endif
