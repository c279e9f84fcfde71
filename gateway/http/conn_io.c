/*
 * gateway/http/conn_io.c: what the parts of a connection (req.c, resp.c,
 * fair.c) and server.c itself do to it without running its state machine:
 * kick it (run it from the loop soon), measure and flush its queued output,
 * read the clock.  Calls nothing in the room, so the parts never call back
 * into server.c.  Event-loop thread only.
 */
#include "gateway/http/internal.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/clock.h"

uint64_t
gw_http_now_ms(void)
{
    return clock_coarse_ms();
}

void
gw_http_conn_kick(struct gw_conn *c)
{
    /* a zero timeout, not event_active: it runs on the next loop turn, after
     * other connections' events, so a busy connection cannot starve them */
    static const struct timeval zero = {0, 0};
    if (!evtimer_pending(c->kick, NULL)) {
        (void)evtimer_add(c->kick, &zero);
    }
}

size_t
gw_http_output_len(const struct gw_conn *c)
{
    return evbuffer_get_length(bufferevent_get_output(c->bev));
}

bool
gw_http_flush(struct gw_conn *c)
{
    if (!c->direct || c->dead || gw_http_output_len(c) == 0) {
        return false;
    }
    return gw_bevio_flush(c->bev);
}
