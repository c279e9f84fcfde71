/*
 * gateway/net/net.h: what the HTTP server and the upstream clients share,
 * below both of them (make check-deps: net/ includes neither).
 *
 *   struct gw_header  one header of a message as received
 *   bevio.c           gw_bevio_*: plain sockets written at once and read by
 *                     recv, not by a bufferevent's events (the server's
 *                     connections and the lean upstream client's)
 *   loopmsg.c         gw_loopq_*: messages from any thread to one event loop
 *                     (gateway/net/loopmsg.h; DESIGN "Worker loops")
 */
#ifndef GW_NET_H
#define GW_NET_H

#include <stdbool.h>
#include <stddef.h>

struct bufferevent;

/* One header as received: name and value are NUL-terminated, borrowed from their message. */
struct gw_header {
    const char *name;  /* as sent (case preserved); compare with strcasecmp */
    const char *value; /* leading/trailing spaces and tabs trimmed */
    size_t name_len;
    size_t value_len;
};

/*
 * gw_bevio_flush - write the output of bev, a plain socket bufferevent whose
 * write event its owner keeps disabled, to the socket now.  Returns true when
 * nothing is left; otherwise (the send buffer is full, or an error) it has
 * enabled the write event: the bufferevent writes the rest, or reports the
 * error through its event callback.  Calls nothing back.  While the write
 * event is enabled it does nothing: a TLS bufferevent, whose socket carries
 * records, must keep its write event enabled and never be given to
 * gw_bevio_written.
 */
bool gw_bevio_flush(struct bufferevent *bev);

/*
 * gw_bevio_written - from bev's write callback: once its output is empty,
 * disable the write event again, so the next output goes by gw_bevio_flush.
 */
void gw_bevio_written(struct bufferevent *bev);

/*
 * gw_bevio_read - read bev's socket (plain; its owner keeps the bufferevent's
 * read event disabled and watches the socket with an event of its own) into
 * its input buffer: up to chunk bytes per recv, until the socket has no more
 * or high bytes are buffered.  Returns 0, or at EOF or an error the flags
 * (BEV_EVENT_READING with BEV_EVENT_EOF or BEV_EVENT_ERROR) for the owner's
 * event callback, after the bytes read before it are in the buffer.
 */
short gw_bevio_read(struct bufferevent *bev, size_t high, size_t chunk);

#endif
