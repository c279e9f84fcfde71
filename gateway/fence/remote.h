/*
 * gateway/fence/remote.h: the fence as a worker loop sees it (DESIGN
 * "Worker loops", "The crossings").
 *
 * The fence (fence.h) is single-threaded and lives on the control loop.  A
 * worker loop's fenced write reaches it through this module, with the same
 * calls and the same callbacks as gw_fence_admit and its ticket, each call a
 * message on the control loop's queue and each callback a message back on
 * the worker's (gateway/net/loopmsg.h):
 *
 *   worker                          control
 *   gw_fence_remote_admit   ----->  gw_fence_admit
 *   admitted(err, current)  <-----  its verdict
 *   cut(err, current)       <-----  the barrier's or the window's cut
 *   rticket_may_finish      ----->  gw_fence_ticket_may_finish; when it says
 *                                   yes, gw_fence_ticket_sent at once
 *   resume                  <-----  "yes" (then may_finish answers true)
 *   rticket_sent, _release  ----->  gw_fence_ticket_sent, _release
 *   rticket_judge           ----->  gw_fence_current, then may_finish
 *   judged(err, current)    <-----  (after a store's 412; cond_reply.c)
 *
 * The last byte.  On the control loop a write's "may finish: yes" and its
 * "sent" are one step, as they are in one callback on a single loop: once
 * the control side has said yes, the barrier awaits the write instead of
 * cutting it (G3).  So a worker's may_finish answers false until the yes has
 * arrived (the proxy holds its last byte, as for a held window), and true
 * after it, with no cut possible in between.  Cost: one round trip per
 * fenced write's last byte, none for reads or unfenced writes.
 *
 * Lifetimes.  A ticket has a worker half (struct gw_fence_rticket, with an
 * endpoint on the worker's queue, so answers to a ticket since released are
 * cancelled, never delivered) and a control half (the real ticket).  Every
 * admission ends with exactly one release message to the control side:
 * posted by gw_fence_rticket_release, or by this module when the verdict is
 * a refusal or a cut arrives (the API's "the ticket is already freed").  A
 * worker's messages run in the order posted, so the control side always
 * sees the release after the admission, whenever the client went.
 *
 * Threads: gw_fence_hub_* on the control loop's thread; gw_fence_remote_*
 * and gw_fence_rticket_* on the worker loop's thread; callbacks run there.
 */
#ifndef GW_FENCE_REMOTE_H
#define GW_FENCE_REMOTE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "gateway/fence/fence.h"

struct gw_loopq;
struct gw_fence_hub;
struct gw_fence_remote;
struct gw_fence_rticket;

/*
 * gw_fence_hub_new - the control side over fence f, taking messages on q
 * (the control loop's queue).  Both borrowed; they must outlive the hub.
 * Returns the hub or NULL (out of memory).
 */
struct gw_fence_hub *gw_fence_hub_new(struct gw_fence *f, struct gw_loopq *q);

/*
 * gw_fence_hub_free - release every ticket still held for a worker (the
 * fence must be freed after this, with no ticket left), and free the hub.
 * Call after closing q, so that no message of the hub's runs any more.
 * NULL-safe.
 */
void gw_fence_hub_free(struct gw_fence_hub *h);

/* gw_fence_hub_tickets - tickets the hub holds for workers now (tests, metrics). */
uint64_t gw_fence_hub_tickets(const struct gw_fence_hub *h);

/*
 * gw_fence_remote_new - a worker loop's view of hub h (which it reads here, once, and
 * never again: the hub may go first); answers arrive on q,
 * the worker loop's queue.  Both borrowed.  Returns it or NULL (out of memory).
 */
struct gw_fence_remote *gw_fence_remote_new(struct gw_fence_hub *h, struct gw_loopq *q);

/* gw_fence_remote_free - free; every ticket must have ended first.  NULL-safe. */
void gw_fence_remote_free(struct gw_fence_remote *r);

/*
 * gw_fence_remote_admit - gw_fence_admit from a worker loop: the same
 * arguments and the same callbacks, run on the worker's loop, never before
 * this returns.  Returns 0, ERR_INVAL (not a fenced claim), ERR_NOMEM, or
 * ERR_CLOSED (the control loop is shutting down): no callback will run.
 */
MUST_USE int gw_fence_remote_admit(struct gw_fence_remote *r, const struct gw_fence_claim *claim,
                                   const char *reqid, const char *principal,
                                   gw_fence_admit_fn *admitted, gw_fence_cut_fn *cut, void *arg,
                                   struct gw_fence_rticket **out);

/* gw_fence_rticket_rebind - as gw_fence_ticket_rebind. */
void gw_fence_rticket_rebind(struct gw_fence_rticket *t, gw_fence_cut_fn *cut,
                             gw_fence_resume_fn *resume, void *arg);

/*
 * gw_fence_rticket_may_finish - as gw_fence_ticket_may_finish: true once the
 * control side said yes (the write then counts as sent there); false until
 * then: hold the last byte, and resume (then ask again) or cut follows.
 */
MUST_USE bool gw_fence_rticket_may_finish(struct gw_fence_rticket *t);

/* gw_fence_rticket_sent - as gw_fence_ticket_sent. */
void gw_fence_rticket_sent(struct gw_fence_rticket *t);

/*
 * gw_fence_judged_fn - the answer to gw_fence_rticket_judge: err 0, the token
 * is still current and its window allows the write; ERR_FENCED, a newer
 * token (current) exists.  A judgement the window cuts is answered by the
 * ticket's cut callback instead (the ticket then ends, as any cut's).
 */
typedef void gw_fence_judged_fn(void *arg, int err, uint64_t current);

/*
 * gw_fence_rticket_judge - the store refused the write's condition (412)
 * after its last byte went: ask the control side gw_cond_judge's questions
 * of the real ticket (gateway/proxy/cond_reply.h): a newer token, else the
 * window's verdict.  judged(arg, ...) runs on the worker, never before this
 * returns, and never after the ticket's release.
 */
void gw_fence_rticket_judge(struct gw_fence_rticket *t, gw_fence_judged_fn *judged);

/* gw_fence_rticket_release - as gw_fence_ticket_release: frees t.  NULL-safe. */
void gw_fence_rticket_release(struct gw_fence_rticket *t);

#endif
