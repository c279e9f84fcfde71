/*
 * gateway/http/heap.c: the process heap under the server's load (http.h):
 * glibc's thresholds fixed once at start-up, and the idle trim that hands
 * back what the heap kept under load once requests stop.  It reads the
 * request counters (gateway/base/metrics.h) and calls nothing else in the room.
 */
#include "gateway/http/http.h"

#include <event2/event.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/time.h>

#include "common/log.h"
#include "gateway/base/metrics.h"

/*
 * The heap's thresholds fixed instead of glibc's defaults.  Each upstream
 * transfer allocates read buffers (the lean client's reads of up to 128 KiB,
 * libcurl's 64 KiB receive and upload buffers) and frees them when done; with
 * tens of transfers in flight the heap's top moves by megabytes, and the
 * default 128 KiB trim threshold hands those pages back (brk) only to fault
 * them in again on the next request: at 64 connections that doubled the CPU
 * per PUT (make bench-proxy, PERFORMANCE.md "Performance notes").  Keeping up to
 * GW_HTTP_HEAP_KEEP_BYTES of free heap stops the churn; setting M_MMAP_THRESHOLD also
 * stops glibc raising it (and the trim threshold with it) as it sees large
 * frees.
 */
#define GW_HTTP_HEAP_KEEP_BYTES (32 * 1024 * 1024)
#define GW_HTTP_HEAP_MMAP_BYTES (1024 * 1024)

/*
 * With worker loops (DESIGN.md "Worker loops"), one malloc arena for every
 * thread.  glibc gives each thread that allocates an arena of its own, and
 * the idle trim, which runs on the control loop, did not hand back what a
 * worker loop's buffers had freed in its arena: test_memory.py at workers 2
 * kept 23.7 MiB resident ten seconds after the load (14.3 before, 27.8
 * under it), 7 MiB of it in the worker's arena by smaps.  With one arena it
 * gives 14.4, 23.2, 14.6 MiB.  The price is the arena's lock, taken by every
 * malloc and free that a thread's tcache does not serve.  One loop keeps
 * glibc's default: its other threads (store, access log) allocate little.
 * A thread binds its arena at its first malloc, hence "before any other
 * thread starts".
 */
void
gw_http_heap_tune(uint32_t loops)
{
    if (mallopt(M_MMAP_THRESHOLD, GW_HTTP_HEAP_MMAP_BYTES) != 1 ||
        mallopt(M_TRIM_THRESHOLD, GW_HTTP_HEAP_KEEP_BYTES) != 1) {
        log_warn("mallopt failed; the heap keeps glibc's default thresholds");
    }
    if (loops > 1 && mallopt(M_ARENA_MAX, 1) != 1) {
        log_warn("mallopt(M_ARENA_MAX) failed; the idle trim misses the worker loops' heaps");
    }
}

/*
 * The other side of GW_HTTP_HEAP_KEEP_BYTES: what the heap keeps under load it hands
 * back once load stops.  Every GW_HTTP_HEAP_TRIM_MS, a gateway that received no
 * request since the last tick, has none in flight and received some since the
 * heap was last trimmed calls malloc_trim, which returns the free pages of the
 * whole heap, not only its top (make bench-proxy: 26 MiB resident after the
 * 64-connection runs, 14 MiB once trimmed).  A steady load never triggers it.
 */
#define GW_HTTP_HEAP_TRIM_MS 1000

struct gw_http_heap_trim {
    struct event *ev; /* the tick */
    uint64_t seen;    /* requests (every loop's) at its last tick */
    uint64_t done;    /* ... when the heap was last handed back */
};

bool
gw_http_heap_trim_due(struct gw_http_heap_trim *t, uint64_t requests, uint64_t active)
{
    bool idle = requests == t->seen && active == 0;
    t->seen = requests;
    if (idle && requests != t->done) {
        t->done = requests;
        return true;
    }
    return false;
}

/* libevent: the tick */
static void
on_trim_tick(evutil_socket_t fd, short what, void *arg)
{
    struct gw_http_heap_trim *t = arg;
    (void)fd;
    (void)what;
    if (gw_http_heap_trim_due(t, GW_METRICS_TOTAL(requests), GW_METRICS_TOTAL(requests_active))) {
        (void)malloc_trim(0);
    }
}

struct gw_http_heap_trim *
gw_http_heap_trim_start(struct event_base *base)
{
    struct gw_http_heap_trim *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        return NULL;
    }
    t->ev = event_new(base, -1, EV_PERSIST, on_trim_tick, t);
    struct timeval tv = {GW_HTTP_HEAP_TRIM_MS / 1000,
                         (suseconds_t)(GW_HTTP_HEAP_TRIM_MS % 1000) * 1000};
    if (t->ev == NULL || event_add(t->ev, &tv) != 0) {
        gw_http_heap_trim_free(t);
        return NULL;
    }
    return t;
}

void
gw_http_heap_trim_free(struct gw_http_heap_trim *t)
{
    if (t == NULL) {
        return;
    }
    if (t->ev != NULL) {
        event_free(t->ev);
    }
    free(t);
}
