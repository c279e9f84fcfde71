/*
 * tests/unit/gateway/net/bevio_test.c: plain socket bufferevents written at
 * once and read by recv (gateway/net/bevio.c), on a socket pair: output
 * leaves without the event loop, a full send buffer hands the rest to the
 * bufferevent and gets it back, errors are reported by the bufferevent's
 * event callback, reads stop at the high mark and report EOF after the bytes
 * before it.  The bufferevents are made with their sockets, so their buffers
 * are frozen as the server's are.
 */
#include "gateway/http/http.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

struct fx {
    struct event_base *base;
    struct bufferevent *bev; /* owns sv[0] */
    int peer;                /* sv[1] */
    int writes;              /* write callbacks */
    short what;              /* the last event callback's flags */
};

static void
on_write(struct bufferevent *bev, void *arg)
{
    struct fx *f = arg;
    f->writes++;
    gw_bevio_written(bev);
}

static void
on_event(struct bufferevent *bev, short what, void *arg)
{
    struct fx *f = arg;
    (void)bev;
    f->what = what;
}

static int
setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
    assert_int_equal(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
    f->base = event_base_new();
    assert_non_null(f->base);
    f->bev = bufferevent_socket_new(f->base, sv[0], BEV_OPT_CLOSE_ON_FREE);
    assert_non_null(f->bev);
    bufferevent_setcb(f->bev, NULL, on_write, on_event, f);
    assert_int_equal(bufferevent_disable(f->bev, EV_READ | EV_WRITE), 0); /* as their owners do */
    f->peer = sv[1];
    *state = f;
    return 0;
}

static int
teardown(void **state)
{
    struct fx *f = *state;
    bufferevent_free(f->bev);
    if (f->peer >= 0) {
        (void)close(f->peer);
    }
    event_base_free(f->base);
    free(f);
    return 0;
}

static size_t
peer_read(struct fx *f, unsigned char *dst, size_t cap)
{
    size_t got = 0;
    for (;;) {
        ssize_t n = recv(f->peer, dst + got, cap - got, 0);
        if (n <= 0) {
            return got;
        }
        got += (size_t)n;
    }
}

static void
test_flush_writes_at_once(void **state)
{
    struct fx *f = *state;
    assert_true(gw_bevio_flush(f->bev)); /* nothing queued */
    assert_int_equal(evbuffer_add(bufferevent_get_output(f->bev), "hello ", 6), 0);
    assert_int_equal(evbuffer_add(bufferevent_get_output(f->bev), "world", 5), 0);
    assert_true(gw_bevio_flush(f->bev));
    /* there without a turn of the loop, and no write event asked for */
    unsigned char got[64];
    assert_int_equal(peer_read(f, got, sizeof(got)), 11);
    assert_memory_equal(got, "hello world", 11);
    assert_int_equal(evbuffer_get_length(bufferevent_get_output(f->bev)), 0);
    assert_int_equal(bufferevent_get_enabled(f->bev) & EV_WRITE, 0);
}

static void
test_full_send_buffer_hands_over_and_back(void **state)
{
    struct fx *f = *state;
    int small = 4096;
    assert_int_equal(setsockopt(f->peer, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
    size_t total = 4u << 20;
    unsigned char *data = malloc(total);
    unsigned char *got = malloc(total);
    assert_non_null(data);
    assert_non_null(got);
    for (size_t i = 0; i < total; i++) {
        data[i] = (unsigned char)(i % 251);
    }
    assert_int_equal(evbuffer_add(bufferevent_get_output(f->bev), data, total), 0);
    assert_false(gw_bevio_flush(f->bev));
    assert_int_not_equal(bufferevent_get_enabled(f->bev) & EV_WRITE, 0);
    size_t left = evbuffer_get_length(bufferevent_get_output(f->bev));
    assert_true(left > 0 && left < total);
    assert_false(gw_bevio_flush(f->bev)); /* the bufferevent is writing: left to it */
    size_t n = 0;
    for (int i = 0; i < 100000 && n < total; i++) {
        n += peer_read(f, got + n, total - n);
        (void)event_base_loop(f->base, EVLOOP_NONBLOCK);
    }
    assert_int_equal(n, total);
    assert_memory_equal(got, data, total);
    assert_true(f->writes > 0);
    /* the output is handed back: the next bytes go out at once again */
    assert_int_equal(bufferevent_get_enabled(f->bev) & EV_WRITE, 0);
    assert_int_equal(evbuffer_add(bufferevent_get_output(f->bev), "x", 1), 0);
    assert_true(gw_bevio_flush(f->bev));
    assert_int_equal(peer_read(f, got, 1), 1);
    free(data);
    free(got);
}

static void
test_write_error_reported_by_the_bufferevent(void **state)
{
    struct fx *f = *state;
    (void)close(f->peer);
    f->peer = -1;
    assert_int_equal(evbuffer_add(bufferevent_get_output(f->bev), "lost", 4), 0);
    assert_false(gw_bevio_flush(f->bev)); /* EPIPE: nothing called back from here */
    assert_int_equal(f->what, 0);
    for (int i = 0; i < 100 && f->what == 0; i++) {
        (void)event_base_loop(f->base, EVLOOP_NONBLOCK);
    }
    assert_int_equal(f->what, BEV_EVENT_WRITING | BEV_EVENT_ERROR);
}

static void
test_read_stops_at_high_mark(void **state)
{
    struct fx *f = *state;
    struct evbuffer *in = bufferevent_get_input(f->bev);
    char data[20000];
    memset(data, 'a', sizeof(data));
    assert_int_equal(send(f->peer, data, sizeof(data), 0), (ssize_t)sizeof(data));
    assert_int_equal(gw_bevio_read(f->bev, 8192, 3000), 0);
    assert_int_equal(evbuffer_get_length(in), 8192);
    assert_int_equal(gw_bevio_read(f->bev, 8192, 3000), 0); /* full: nothing read */
    assert_int_equal(evbuffer_get_length(in), 8192);
    assert_int_equal(evbuffer_drain(in, 8192), 0); /* the owner parses it */
    assert_int_equal(gw_bevio_read(f->bev, 65536, 65536), 0);
    assert_int_equal(evbuffer_get_length(in), sizeof(data) - 8192);
    assert_int_equal(gw_bevio_read(f->bev, 65536, 65536), 0); /* would block */
    /* the input's end is frozen again, as the bufferevent keeps it */
    assert_int_not_equal(evbuffer_add(in, "x", 1), 0);
}

static void
test_read_eof_after_the_bytes(void **state)
{
    struct fx *f = *state;
    struct evbuffer *in = bufferevent_get_input(f->bev);
    assert_int_equal(send(f->peer, "last words", 10, 0), 10);
    assert_int_equal(shutdown(f->peer, SHUT_WR), 0);
    /* 4 bytes per recv: a short read ends a call (the socket is drained), the
     * EOF comes at the next, after every byte before it */
    assert_int_equal(gw_bevio_read(f->bev, 65536, 4), 0);
    assert_int_equal(evbuffer_get_length(in), 10);
    assert_int_equal(gw_bevio_read(f->bev, 65536, 4), BEV_EVENT_READING | BEV_EVENT_EOF);
    assert_int_equal(evbuffer_get_length(in), 10);
    assert_int_equal(send(f->peer, "x", 1, 0), -1); /* (the peer shut its side) */
    assert_int_equal(gw_bevio_read(f->bev, 65536, 10), BEV_EVENT_READING | BEV_EVENT_EOF);
    char got[10];
    assert_int_equal(evbuffer_remove(in, got, sizeof(got)), 10);
    assert_memory_equal(got, "last words", 10);
}

int
main(void)
{
    (void)signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_flush_writes_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_send_buffer_hands_over_and_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_error_reported_by_the_bufferevent, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_read_stops_at_high_mark, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_eof_after_the_bytes, setup, teardown),
    };
    return cmocka_run_group_tests_name("http_bevio", tests, NULL, NULL);
}
