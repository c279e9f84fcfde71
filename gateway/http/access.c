/*
 * gateway/http/access.c: the access log (gateway/http/access.h): the line of
 * each request, and the sink, a bounded buffer that one writer thread empties
 * so the event loop never waits for a disk.
 */
#include "gateway/http/access.h"

#define LOG_MODULE "access"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/jsonstr.h"
#include "common/log.h"
#include "common/num.h"
#include "gateway/base/metrics.h"
#include "gateway/http/internal.h"

/*
 * The sink.  The loop appends to pending under mu; the writer swaps pending
 * for its own empty buffer under mu and writes outside it, so the loop holds
 * mu only for a memcpy.  A reopen moves the lines queued so far to handoff,
 * for the old fd, and the new fd takes the lines that follow.  Only the
 * writer closes a sink it may be writing to.
 */
static struct {
    pthread_mutex_t mu;  /* guards everything below */
    pthread_cond_t wake; /* pending passed GW_ACCESS_FLUSH_BYTES, a reopen, or stop */
    struct buf pending;  /* lines for fd, not yet taken by the writer */
    struct buf handoff;  /* lines queued before a reopen, for handoff_fd */
    int fd;              /* the current sink, -1: off (owned unless STDERR_FILENO) */
    int handoff_fd;      /* the sink a reopen replaced, for the writer to finish and close; -2 */
    bool on;             /* lines are accepted (a sink is open) */
    bool started;        /* the writer thread runs */
    bool stop;           /* the writer should finish and exit */
    pthread_t thread;    /* the writer */
} sink = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .fd = -1,
    .handoff_fd = -2,
};

/* What the two pending buffers (the loop's and the writer's, swapped) and the
 * line buffer are given up front: a flush's worth and a line past it, and a line. */
#define SINK_RESERVE (GW_ACCESS_FLUSH_BYTES + 4096)
#define LINE_RESERVE 1024

/* The loop's own copy of sink.on (set where the loop opens the sink), so the
 * per-request notes cost nothing, no lock and no copy, while the log is off. */
static atomic_bool notes_on; /* set under sink.mu (reopen), read by every loop */

/* Whether requests note their names for the log (any loop's thread). */
static inline bool
notes(void)
{
    return atomic_load_explicit(&notes_on, memory_order_relaxed);
}

/* The line buffer, kept per thread from one line to the next (no malloc per
 * line); gw_access_close frees the closing thread's. */
static _Thread_local struct buf line_buf = {.cap = GW_ACCESS_LINE_MAX};

static void
close_sink(int fd)
{
    if (fd >= 0 && fd != STDERR_FILENO) {
        (void)close(fd);
    }
}

/* Write all of b to fd (the writer thread); a failure drops the batch, logged. */
static void
write_all(int fd, const struct buf *b)
{
    size_t off = 0;
    while (fd >= 0 && off < b->len) {
        ssize_t n = write(fd, b->data + off, b->len - off);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            log_error("access log write failed: %s; %zu bytes dropped", strerror(errno),
                      b->len - off);
            return;
        }
        off += (size_t)n;
    }
}

/* pthread_create: the writer. */
static void *
on_writer(void *arg)
{
    (void)arg;
    struct buf batch; /* the loop's next pending: at its working size, as the first */
    buf_init(&batch, GW_ACCESS_MAX_PENDING);
    if (buf_reserve(&batch, SINK_RESERVE) != 0) {
        log_warn("access log: its buffers will grow as lines come (out of memory)");
    }
    (void)pthread_mutex_lock(&sink.mu);
    for (;;) {
        if (sink.pending.len < GW_ACCESS_FLUSH_BYTES && sink.handoff_fd == -2 && !sink.stop) {
            struct timespec until;
            (void)clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += (long)GW_ACCESS_FLUSH_MS * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            (void)pthread_cond_timedwait(&sink.wake, &sink.mu, &until);
        }
        struct buf t = sink.pending; /* swap: the loop gets the empty buffer */
        sink.pending = batch;
        batch = t;
        int fd = sink.fd;
        struct buf old = sink.handoff;
        int old_fd = sink.handoff_fd;
        buf_init(&sink.handoff, GW_ACCESS_MAX_PENDING);
        sink.handoff_fd = -2;
        bool stop = sink.stop;
        (void)pthread_mutex_unlock(&sink.mu);
        if (old_fd != -2) {
            write_all(old_fd, &old);
            close_sink(old_fd);
        }
        buf_cleanup(&old);
        write_all(fd, &batch);
        buf_reset(&batch);
        (void)pthread_mutex_lock(&sink.mu);
        if (stop && sink.pending.len == 0 && sink.handoff_fd == -2) {
            break;
        }
    }
    (void)pthread_mutex_unlock(&sink.mu);
    buf_cleanup(&batch);
    return NULL;
}

int
gw_access_open(const char *spec, char *errbuf, size_t errlen)
{
    int fd = -1;
    if (spec == NULL || strcmp(spec, "off") == 0) {
        fd = -1;
    } else if (strcmp(spec, "stderr") == 0) {
        fd = STDERR_FILENO;
    } else {
        /* open(2) of a local path on start or SIGHUP only: the per-line path never opens */
        fd = open(spec, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
        if (fd < 0) {
            (void)snprintf(errbuf, errlen, "access_log %s: %s", spec, strerror(errno));
            return ERR_IO;
        }
    }
    (void)pthread_mutex_lock(&sink.mu);
    if (!sink.started) {
        buf_init(&sink.pending, GW_ACCESS_MAX_PENDING);
        buf_init(&sink.handoff, GW_ACCESS_MAX_PENDING);
        /* the loop's buffers at their working size before the requests' own
         * allocations (grown later, they would leave holes among those and make
         * every request's malloc split chunks); a failure only defers the growth */
        if (buf_reserve(&sink.pending, SINK_RESERVE) != 0 ||
            buf_reserve(&line_buf, LINE_RESERVE) != 0) {
            log_warn("access log: its buffers will grow as lines come (out of memory)");
        }
        sink.fd = fd;
        sink.handoff_fd = -2;
        sink.stop = false;
        if (pthread_create(&sink.thread, NULL, on_writer, NULL) != 0) {
            sink.fd = -1;
            (void)pthread_mutex_unlock(&sink.mu);
            close_sink(fd);
            (void)snprintf(errbuf, errlen, "access_log: could not start its writer thread");
            return ERR_NOMEM;
        }
        sink.started = true;
    } else if (sink.handoff_fd == -2) {
        struct buf t = sink.handoff; /* empty: the writer took the last one */
        sink.handoff = sink.pending;
        sink.pending = t;
        sink.handoff_fd = sink.fd;
        sink.fd = fd;
    } else {
        /* a second reopen before the writer woke: the writer has taken nothing
         * for the sink in between, so it is closed here, and its lines join the
         * handoff (the oldest file gets them) */
        int rc = buf_append(&sink.handoff, sink.pending.data, sink.pending.len);
        buf_reset(&sink.pending);
        close_sink(sink.fd);
        sink.fd = fd;
        if (rc != 0) {
            GW_COUNT(access_log_dropped_total);
        }
    }
    sink.on = fd >= 0;
    atomic_store_explicit(&notes_on, sink.on, memory_order_relaxed);
    (void)pthread_cond_signal(&sink.wake);
    (void)pthread_mutex_unlock(&sink.mu);
    return 0;
}

bool
gw_access_enabled(void)
{
    (void)pthread_mutex_lock(&sink.mu);
    bool on = sink.on;
    (void)pthread_mutex_unlock(&sink.mu);
    return on;
}

void
gw_access_close(void)
{
    (void)pthread_mutex_lock(&sink.mu);
    if (!sink.started) {
        (void)pthread_mutex_unlock(&sink.mu);
        return;
    }
    sink.stop = true;
    sink.on = false;
    atomic_store_explicit(&notes_on, false, memory_order_relaxed);
    (void)pthread_cond_signal(&sink.wake);
    (void)pthread_mutex_unlock(&sink.mu);
    (void)pthread_join(sink.thread, NULL);
    (void)pthread_mutex_lock(&sink.mu);
    close_sink(sink.fd);
    sink.fd = -1;
    sink.started = false;
    buf_cleanup(&sink.pending);
    buf_cleanup(&sink.handoff);
    (void)pthread_mutex_unlock(&sink.mu);
    buf_cleanup(&line_buf); /* the event loop's: the thread that closes the log */
}

void
gw_access_thread_done(void)
{
    buf_cleanup(&line_buf);
}

int
gw_access_append(const char *line, size_t len)
{
    int rc = 0;
    (void)pthread_mutex_lock(&sink.mu);
    if (!sink.on) {
        (void)pthread_mutex_unlock(&sink.mu);
        return 0;
    }
    if (len > GW_ACCESS_MAX_PENDING - sink.pending.len ||
        buf_append(&sink.pending, line, len) != 0) {
        rc = ERR_TOOBIG; /* the writer is behind: drop, never wait */
    } else if (sink.pending.len >= GW_ACCESS_FLUSH_BYTES) {
        (void)pthread_cond_signal(&sink.wake);
    }
    (void)pthread_mutex_unlock(&sink.mu);
    if (rc != 0) {
        GW_COUNT(access_log_dropped_total);
    }
    return rc;
}

/* ---- one request's record ---- */

/* The wall clock's ms since the epoch. */
static int64_t
wall_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
gw_access_init(struct gw_access *a, const char *traceparent, uint64_t start_ns)
{
    memset(a, 0, offsetof(struct gw_access, names)); /* names: written before read */
    a->upstream_ms_x1000 = -1;
    a->start_ns = start_ns;
    if (notes()) {
        /* the wall clock only for a line; off, nothing reads it */
        a->start_wall_ms = wall_ms();
    }
    if (traceparent != NULL &&
        traceparent_parse(traceparent, strlen(traceparent), a->trace_id) != 0) {
        GW_COUNT(traceparent_invalid_total); /* ignored: forwarded as it came */
        a->trace_id[0] = '\0';
    }
}

/* Free s unless it lies in a->names (NULL: nothing). */
static void
free_name(struct gw_access *a, char *s)
{
    if ((uintptr_t)s - (uintptr_t)a->names >= sizeof(a->names)) {
        free(s);
    }
}

void
gw_access_cleanup(struct gw_access *a)
{
    if (a == NULL) {
        return;
    }
    free_name(a, a->principal);
    free_name(a, a->bucket);
    free_name(a, a->key);
    free_name(a, a->lock);
    a->names_used = 0;
    a->principal = a->bucket = a->key = a->lock = NULL;
    a->operation = NULL;
}

/* Replace *dst, one of a's names, by a copy of s: in a->names while it has
 * room, else on the heap (NULL or "" keeps *dst; out of memory leaves null).
 * A replaced copy's bytes in a->names are not reused (a name is noted once or twice). */
static void
note(struct gw_access *a, char **dst, const char *s)
{
    if (!notes() || s == NULL || s[0] == '\0') {
        return;
    }
    free_name(a, *dst);
    size_t size = strlen(s) + 1;
    if (size <= sizeof(a->names) - a->names_used) {
        *dst = memcpy(a->names + a->names_used, s, size);
        a->names_used += size;
    } else {
        *dst = strdup(s);
    }
}

void
gw_access_note_s3(struct gw_req *req, const char *operation, const char *bucket, const char *key)
{
    if (notes() && operation != NULL && operation[0] != '\0') {
        req->access.operation = operation; /* static: the classifier's name table */
    }
    note(&req->access, &req->access.bucket, bucket);
    note(&req->access, &req->access.key, key);
}

void
gw_access_note_principal(struct gw_req *req, const char *principal)
{
    note(&req->access, &req->access.principal, principal);
}

void
gw_access_note_fence(struct gw_req *req, const char *lock, uint64_t token)
{
    if (lock != NULL && lock[0] != '\0') {
        note(&req->access, &req->access.lock, lock);
    }
    if (token != 0) {
        req->access.token = token;
    }
}

void
gw_access_note_error(struct gw_req *req, const char *code)
{
    (void)snprintf(req->access.error_code, sizeof(req->access.error_code), "%s",
                   code != NULL ? code : "");
}

void
gw_access_note_upstream_start(struct gw_req *req, uint64_t now_ns)
{
    req->access.upstream_ns = now_ns;
}

void
gw_access_note_upstream_head(struct gw_req *req, int status, uint64_t now_ns)
{
    req->access.upstream_status = status;
    if (req->access.upstream_ns != 0) {
        req->access.upstream_ms_x1000 =
            (int64_t)((now_ns > req->access.upstream_ns ? now_ns - req->access.upstream_ns : 0) /
                      1000u);
    }
}

const char *
gw_access_trace_id(const struct gw_req *req)
{
    return req->access.trace_id[0] != '\0' ? req->access.trace_id : NULL;
}

/* ---- the line ---- */

/* A key and literal text: LIT("...") is the pointer and the length, no strlen. */
#define LIT(s) (s), (sizeof(s) - 1)

/*
 * The line is built in a stack buffer and copied into out whenever the next
 * piece might not fit (about once a line), instead of one buf_append per
 * key, number and quote.  A string that needs escaping or is long goes
 * through jsonstr_append after a flush; a short plain one (printable ASCII
 * without '"' or '\\', which jsonstr_append copies unchanged) is copied here.
 */
#define ACC_BYTES 1024
#define PIECE_MAX 64  /* the longest key, number or time put at once */
#define PLAIN_MAX 256 /* strings copied here are shorter */

struct acc {
    struct buf *out;
    size_t n;
    int rc; /* the first error; later puts do nothing */
    char t[ACC_BYTES];
};

static void
acc_flush(struct acc *w)
{
    if (w->rc == 0 && w->n > 0) {
        w->rc = buf_append(w->out, w->t, w->n);
    }
    w->n = 0;
}

/* Room for need more bytes in w->t (need <= ACC_BYTES). */
static char *
acc_room(struct acc *w, size_t need)
{
    if (ACC_BYTES - w->n < need) {
        acc_flush(w);
    }
    return w->t + w->n;
}

static void
acc_put(struct acc *w, const char *s, size_t len)
{
    memcpy(acc_room(w, len), s, len);
    w->n += len;
}

/* The second-resolution part of the last time formatted ("2026-11-27T18:39:23."),
 * per thread: lines of one second (the common case) skip gmtime_r. */
static _Thread_local struct {
    int64_t sec;   /* the second text holds, INT64_MIN: none */
    char text[21]; /* "YYYY-MM-DDTHH:MM:SS." */
} time_cache = {.sec = INT64_MIN};

/* put_time's rare path (before 1970, after 9999): the same text through printf. */
static void
put_time_slow(struct acc *w, int64_t ms)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    (void)gmtime_r(&s, &tm);
    char v[PIECE_MAX];
    int n = snprintf(v, sizeof(v), "\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
    if (n < 0 || (size_t)n >= sizeof(v)) {
        w->rc = w->rc != 0 ? w->rc : ERR_INVAL;
        return;
    }
    acc_put(w, v, (size_t)n);
}

/* "2026-11-27T18:39:23.123Z", quoted */
static void
put_time(struct acc *w, int64_t ms)
{
    int64_t sec = ms / 1000;
    if (ms < 0) {
        put_time_slow(w, ms);
        return;
    }
    if (sec != time_cache.sec) {
        time_t s = (time_t)sec;
        struct tm tm;
        if (gmtime_r(&s, &tm) == NULL || tm.tm_year > 9999 - 1900) {
            put_time_slow(w, ms);
            return;
        }
        char *t = time_cache.text;
        fmt_u64_zpad((uint64_t)tm.tm_year + 1900, 4, t);
        t[4] = '-';
        fmt_u64_zpad((uint64_t)tm.tm_mon + 1, 2, t + 5);
        t[7] = '-';
        fmt_u64_zpad((uint64_t)tm.tm_mday, 2, t + 8);
        t[10] = 'T';
        fmt_u64_zpad((uint64_t)tm.tm_hour, 2, t + 11);
        t[13] = ':';
        fmt_u64_zpad((uint64_t)tm.tm_min, 2, t + 14);
        t[16] = ':';
        fmt_u64_zpad((uint64_t)tm.tm_sec, 2, t + 17);
        t[19] = '.';
        time_cache.sec = sec;
    }
    char *v = acc_room(w, 26);
    v[0] = '"';
    memcpy(v + 1, time_cache.text, 20);
    fmt_u64_zpad((uint64_t)(ms % 1000), 3, v + 21);
    v[24] = 'Z';
    v[25] = '"';
    w->n += 26;
}

/* 1 for a byte jsonstr_append copies unchanged (printable ASCII but '"' and
 * '\\'), 0 for any other, NUL included: one lookup a byte ends a scan. */
static const unsigned char plain_byte[256] = {
    [0x20 ... 0x21] = 1, /* ' ' '!' */
    [0x23 ... 0x5b] = 1, /* '#' to '[' */
    [0x5d ... 0x7e] = 1, /* ']' to '~' */
};

/* put_str's rare path: the key here, the string through jsonstr_append. */
static void
put_str_escaped(struct acc *w, const char *key, size_t klen, const char *v)
{
    acc_put(w, key, klen);
    acc_flush(w);
    if (w->rc == 0) {
        w->rc = jsonstr_append_cstr(w->out, v);
    }
}

/* A string field: ,"name":"value" (or null); key is ,"name": (klen bytes).  A
 * string shorter than PLAIN_MAX of bytes jsonstr_append copies unchanged is
 * scanned once (a table lookup a byte) and copied whole; any other goes through it.
 * Inlined at each of its ten calls (GCC would not), so the key's copy is a few
 * moves of a constant length, not a memcpy call: about 900 of a line's 2,400 Ir. */
static inline __attribute__((always_inline)) void
put_str(struct acc *w, const char *key, size_t klen, const char *v)
{
    if (v == NULL) {
        char *t = acc_room(w, klen + 4);
        memcpy(t, key, klen);
        memcpy(t + klen, LIT("null"));
        w->n += klen + 4;
        return;
    }
    const unsigned char *u = (const unsigned char *)v;
    size_t i = 0;
    while (plain_byte[u[i]] != 0) { /* ends at the NUL, if not before */
        i++;
    }
    if (i < PLAIN_MAX && u[i] == '\0') {
        char *t = acc_room(w, klen + i + 2);
        memcpy(t, key, klen);
        t[klen] = '"';
        memcpy(t + klen + 1, v, i);
        t[klen + 1 + i] = '"';
        w->n += klen + i + 2;
        return;
    }
    put_str_escaped(w, key, klen, v);
}

/* A number field, null when absent; key as put_str's (at most PIECE_MAX - 24 bytes). */
static inline void
put_num(struct acc *w, const char *key, size_t klen, bool have, uint64_t v)
{
    char *t = acc_room(w, PIECE_MAX);
    memcpy(t, key, klen);
    if (!have) {
        memcpy(t + klen, LIT("null"));
        w->n += klen + 4;
        return;
    }
    w->n += klen + fmt_u64(v, t + klen);
}

/* Milliseconds with three decimals from µs, null when absent; key as put_num's. */
static inline void
put_ms(struct acc *w, const char *key, size_t klen, bool have, uint64_t us)
{
    if (!have) {
        put_num(w, key, klen, false, 0);
        return;
    }
    char *t = acc_room(w, PIECE_MAX);
    memcpy(t, key, klen);
    size_t n = klen + fmt_u64(us / 1000, t + klen);
    t[n] = '.';
    fmt_u64_zpad(us % 1000, 3, t + n + 1);
    w->n += n + 4;
}

int
gw_access_format(struct buf *out, const struct gw_access *a, const char *request_id,
                 const char *client, const char *method, int status, uint64_t bytes_in,
                 uint64_t bytes_out, uint64_t end_ns)
{
    buf_reset(out);
    uint64_t dur_us = end_ns > a->start_ns ? (end_ns - a->start_ns) / 1000u : 0;
    struct acc w;
    w.out = out;
    w.n = 0;
    w.rc = 0;
    acc_put(&w, LIT("{\"time\":"));
    put_time(&w, a->start_wall_ms);
    put_str(&w, LIT(",\"request_id\":"), request_id);
    put_str(&w, LIT(",\"client\":"), client);
    put_str(&w, LIT(",\"principal\":"), a->principal);
    put_str(&w, LIT(",\"method\":"), method);
    put_str(&w, LIT(",\"operation\":"), a->operation);
    put_str(&w, LIT(",\"bucket\":"), a->bucket);
    put_str(&w, LIT(",\"key\":"), a->key);
    put_str(&w, LIT(",\"lock\":"), a->lock);
    put_num(&w, LIT(",\"token\":"), a->token != 0, a->token);
    put_num(&w, LIT(",\"status\":"), true, (uint64_t)status);
    put_str(&w, LIT(",\"error_code\":"), a->error_code[0] != '\0' ? a->error_code : NULL);
    put_num(&w, LIT(",\"bytes_in\":"), true, bytes_in);
    put_num(&w, LIT(",\"bytes_out\":"), true, bytes_out);
    put_ms(&w, LIT(",\"duration_ms\":"), true, dur_us);
    put_num(&w, LIT(",\"upstream_status\":"), a->upstream_status != 0,
            (uint64_t)a->upstream_status);
    put_ms(&w, LIT(",\"upstream_ms\":"), a->upstream_ms_x1000 >= 0, (uint64_t)a->upstream_ms_x1000);
    put_str(&w, LIT(",\"trace_id\":"), a->trace_id[0] != '\0' ? a->trace_id : NULL);
    acc_put(&w, LIT("}\n"));
    acc_flush(&w);
    return w.rc;
}

/* The line of a request that ended at end_ns (or one without the names when it would not fit). */
static void
emit(const struct gw_access *a, const char *id, const char *client, const char *method, int status,
     uint64_t in, uint64_t out, uint64_t end_ns)
{
    int rc = gw_access_format(&line_buf, a, id, client, method, status, in, out, end_ns);
    if (rc != 0) {
        /* a key too long for one line: keep the line, drop the names (still valid JSON) */
        struct gw_access bare = *a;
        bare.principal = bare.bucket = bare.key = bare.lock = NULL;
        bare.operation = NULL;
        rc = gw_access_format(&line_buf, &bare, id, client, method, status, in, out, end_ns);
    }
    if (rc == 0) {
        (void)gw_access_append(line_buf.data, line_buf.len);
    }
    if (line_buf.alloc > GW_ACCESS_LINE_MAX / 4) {
        buf_cleanup(&line_buf); /* a long line's storage is not kept */
    }
}

void
gw_http_access_request(struct gw_req *req)
{
    if (!notes() || req->conn->relayed) { /* a relayed request's line is its worker's */
        return;
    }
    int status = req->status;
    /* the client left first (or the connection died before an answer): nginx's 499 */
    bool gone = req->aborted ? (req->access.abort_err == ERR_CLOSED || status == 0)
                             : (req->resp != GW_RESP_ENDED && status == 0);
    if (gone) {
        status = GW_ACCESS_STATUS_CLIENT_GONE;
    }
    /* one clock read ends both the request's metrics and its line */
    uint64_t now = gw_metrics_now_ns();
    gw_metrics_req_end_at(&req->acct, now);
    if (req->access.start_wall_ms == 0) {
        /* the log was turned on while this request ran: its start, from its duration */
        uint64_t ran_ms = now > req->access.start_ns ? (now - req->access.start_ns) / 1000000u : 0;
        req->access.start_wall_ms = wall_ms() - (int64_t)ran_ms;
    }
    emit(&req->access, req->id, req->conn->peer, req->method, status, req->body_received,
         req->resp_sent, now);
}

void
gw_http_access_refused(struct gw_conn *c, const char *id, int status, const char *code)
{
    if (!notes()) {
        return;
    }
    struct gw_access a;
    uint64_t now = gw_metrics_now_ns();
    gw_access_init(&a, NULL, now);
    str_copy(a.error_code, sizeof(a.error_code), code);
    emit(&a, id, c->peer, NULL, status, 0, 0, now);
}
