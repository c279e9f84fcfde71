/*
 * gateway/fence/port.c: the fence on either loop (port.h).  The ticket's type
 * is the thread's: the casts below go back to the type the same thread made.
 */
#include "gateway/fence/port.h"

#include "gateway/net/loopctx.h"

static struct gw_fence_ticket *
local(struct gw_fport_ticket *t)
{
    return (struct gw_fence_ticket *)(void *)t;
}

static struct gw_fence_rticket *
remote(struct gw_fport_ticket *t)
{
    return (struct gw_fence_rticket *)(void *)t;
}

bool
gw_fport_remote(void)
{
    return gw_loopctx_worker();
}

struct gw_fence_ticket *
gw_fport_local(struct gw_fport_ticket *t)
{
    return gw_loopctx_worker() ? NULL : local(t);
}

int
gw_fport_admit(struct gw_fence *f, const struct gw_fence_claim *claim, const char *reqid,
               const char *principal, gw_fence_admit_fn *admitted, gw_fence_cut_fn *cut, void *arg,
               struct gw_fport_ticket **out)
{
    if (gw_loopctx_worker()) {
        struct gw_fence_rticket *rt = NULL;
        int rc = gw_fence_remote_admit(gw_loopctx_here->fence, claim, reqid, principal, admitted,
                                       cut, arg, &rt);
        *out = (struct gw_fport_ticket *)(void *)rt;
        return rc;
    }
    struct gw_fence_ticket *t = NULL;
    int rc = gw_fence_admit(f, claim, reqid, principal, admitted, cut, arg, &t);
    *out = (struct gw_fport_ticket *)(void *)t;
    return rc;
}

void
gw_fport_rebind(struct gw_fport_ticket *t, gw_fence_cut_fn *cut, gw_fence_resume_fn *resume,
                void *arg)
{
    if (gw_loopctx_worker()) {
        gw_fence_rticket_rebind(remote(t), cut, resume, arg);
    } else {
        gw_fence_ticket_rebind(local(t), cut, resume, arg);
    }
}

bool
gw_fport_may_finish(struct gw_fport_ticket *t)
{
    return gw_loopctx_worker() ? gw_fence_rticket_may_finish(remote(t))
                               : gw_fence_ticket_may_finish(local(t));
}

void
gw_fport_sent(struct gw_fport_ticket *t)
{
    if (gw_loopctx_worker()) {
        gw_fence_rticket_sent(remote(t));
    } else {
        gw_fence_ticket_sent(local(t));
    }
}

void
gw_fport_release(struct gw_fport_ticket *t)
{
    if (gw_loopctx_worker()) {
        gw_fence_rticket_release(remote(t));
    } else {
        gw_fence_ticket_release(local(t));
    }
}

void
gw_fport_judge(struct gw_fport_ticket *t, gw_fence_judged_fn *judged)
{
    gw_fence_rticket_judge(remote(t), judged);
}
