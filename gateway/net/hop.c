#include "gateway/net/hop.h"

#include "gateway/net/loopctx.h"

void
gw_hop_init(struct gw_hop *h, gw_loopmsg_run_fn *run, gw_loopmsg_cancel_fn *cancel)
{
    h->msg.next = NULL;
    h->msg.run = run;
    h->msg.cancel = cancel;
    h->msg.target = 0; /* the loop itself: the object outlives its own hop */
    h->q = gw_loopctx_here != NULL ? gw_loopctx_here->q : NULL;
}

int
gw_hop_post(struct gw_hop *h)
{
    return gw_loopq_post(h->q, &h->msg);
}
