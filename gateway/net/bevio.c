/*
 * gateway/net/bevio.c: writing a plain socket bufferevent's output without
 * its write event.
 *
 * A bufferevent writes only from its write event: queueing a response costs
 * an epoll_ctl to watch for EPOLLOUT, a loop turn, the writev, and another
 * epoll_ctl to stop watching: four system calls per request and side where
 * one would do (make bench-proxy, BENCH_SYSCALLS: 4.0 epoll_ctl per small
 * GET through the gateway).  So, as nginx does, the owner keeps the write
 * event disabled, writes at once with gw_bevio_flush, and lets the
 * bufferevent take over only when the kernel's send buffer is full; once it
 * has written everything, gw_bevio_written hands the output back.
 *
 * Reads too: a bufferevent reads 4 KiB at most per call and asks the
 * kernel first how much there is (FIONREAD), two system calls per read.  Its
 * owner disables its read event and reads with gw_bevio_read from an event of
 * its own, one recv per chunk.
 *
 * Errors are not handled here: on anything but EAGAIN the write event is
 * enabled, the bufferevent's own writev meets the error again and reports it
 * through the event callback, as before.  So nothing is called back from
 * inside gw_bevio_flush, and its callers need no re-entrancy care.
 */
#include "gateway/net/net.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <sys/socket.h>

bool
gw_bevio_flush(struct bufferevent *bev)
{
    struct evbuffer *out = bufferevent_get_output(bev);
    if (evbuffer_get_length(out) == 0) {
        return true;
    }
    if ((bufferevent_get_enabled(bev) & EV_WRITE) != 0) {
        return false; /* the bufferevent is writing: it goes on */
    }
    evutil_socket_t fd = bufferevent_getfd(bev);
    /* a socket bufferevent freezes its output's front so only it drains it;
     * it thaws it around its own writes, and so do we */
    (void)evbuffer_unfreeze(out, 1);
    while (fd >= 0 && evbuffer_get_length(out) > 0) {
        if (evbuffer_write(out, fd) <= 0 && errno != EINTR) {
            break; /* the send buffer is full, or an error the bufferevent will report */
        }
    }
    (void)evbuffer_freeze(out, 1);
    if (evbuffer_get_length(out) == 0) {
        return true;
    }
    (void)bufferevent_enable(bev, EV_WRITE);
    return false;
}

void
gw_bevio_written(struct bufferevent *bev)
{
    if (evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
        (void)bufferevent_disable(bev, EV_WRITE);
    }
}

short
gw_bevio_read(struct bufferevent *bev, size_t high, size_t chunk)
{
    struct evbuffer *in = bufferevent_get_input(bev);
    evutil_socket_t fd = bufferevent_getfd(bev);
    short what = 0;
    /* a socket bufferevent made with its socket freezes its input's end so
     * only it adds to it; it thaws it around its own reads, and so do we */
    (void)evbuffer_unfreeze(in, 0);
    for (size_t have; (have = evbuffer_get_length(in)) < high;) {
        size_t want = high - have < chunk ? high - have : chunk;
        struct evbuffer_iovec v;
        if (evbuffer_reserve_space(in, (ev_ssize_t)want, &v, 1) != 1) {
            break; /* no memory: again at the next wake-up */
        }
        if (v.iov_len > want) {
            v.iov_len = want;
        }
        ssize_t n = recv(fd, v.iov_base, v.iov_len, 0);
        if (n > 0) {
            size_t got = (size_t)n;
            bool drained = got < v.iov_len;
            v.iov_len = got;
            (void)evbuffer_commit_space(in, &v, 1);
            if (drained) {
                break;
            }
            continue;
        }
        (void)evbuffer_commit_space(in, NULL, 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            break;
        }
        what = (short)(BEV_EVENT_READING | (n == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR));
        break;
    }
    (void)evbuffer_freeze(in, 0);
    return what;
}
