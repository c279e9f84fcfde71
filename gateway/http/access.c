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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/jsonstr.h"
#include "common/log.h"
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

/* The loop's own copy of sink.on (set where the loop opens the sink), so the
 * per-request notes cost nothing, no lock and no copy, while the log is off. */
static bool notes_on;

uint64_t
gw_access_now_ns(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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
    struct buf batch;
    buf_init(&batch, GW_ACCESS_MAX_PENDING);
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
            gw_metrics.access_log_dropped_total++;
        }
    }
    sink.on = fd >= 0;
    notes_on = sink.on;
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
    notes_on = false;
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
        gw_metrics.access_log_dropped_total++;
    }
    return rc;
}

/* ---- one request's record ---- */

void
gw_access_init(struct gw_access *a, const char *traceparent)
{
    memset(a, 0, sizeof(*a));
    a->upstream_ms_x1000 = -1;
    struct timespec ts;
    (void)clock_gettime(CLOCK_REALTIME, &ts);
    a->start_wall_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    a->start_ns = gw_access_now_ns();
    if (traceparent != NULL &&
        traceparent_parse(traceparent, strlen(traceparent), a->trace_id) != 0) {
        gw_metrics.traceparent_invalid_total++; /* ignored: forwarded as it came */
        a->trace_id[0] = '\0';
    }
}

void
gw_access_cleanup(struct gw_access *a)
{
    if (a == NULL) {
        return;
    }
    free(a->principal);
    free(a->operation);
    free(a->bucket);
    free(a->key);
    free(a->lock);
    a->principal = a->operation = a->bucket = a->key = a->lock = NULL;
}

/* Replace *dst by a copy of s (NULL or "" keeps *dst; out of memory leaves null). */
static void
note(char **dst, const char *s)
{
    if (!notes_on || s == NULL || s[0] == '\0') {
        return;
    }
    free(*dst);
    *dst = strdup(s);
}

void
gw_access_note_s3(struct gw_req *req, const char *operation, const char *bucket, const char *key)
{
    note(&req->access.operation, operation);
    note(&req->access.bucket, bucket);
    note(&req->access.key, key);
}

void
gw_access_note_principal(struct gw_req *req, const char *principal)
{
    note(&req->access.principal, principal);
}

void
gw_access_note_fence(struct gw_req *req, const char *lock, uint64_t token)
{
    if (lock != NULL && lock[0] != '\0') {
        note(&req->access.lock, lock);
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
gw_access_note_upstream_start(struct gw_req *req)
{
    req->access.upstream_ns = gw_access_now_ns();
}

void
gw_access_note_upstream_head(struct gw_req *req, int status)
{
    req->access.upstream_status = status;
    if (req->access.upstream_ns != 0) {
        req->access.upstream_ms_x1000 =
            (int64_t)((gw_access_now_ns() - req->access.upstream_ns) / 1000u);
    }
}

const char *
gw_access_trace_id(const struct gw_req *req)
{
    return req->access.trace_id[0] != '\0' ? req->access.trace_id : NULL;
}

/* ---- the line ---- */

/* "2026-11-27T18:39:23.123Z" */
static int
put_time(struct buf *out, int64_t ms)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    (void)gmtime_r(&s, &tm);
    return buf_printf(out, "\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"", tm.tm_year + 1900,
                      tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                      (int)(ms % 1000));
}

/* A string field: ,"name":"value" (or null). */
static int
put_str(struct buf *out, const char *name, const char *v)
{
    int rc = buf_printf(out, ",\"%s\":", name);
    return rc != 0 ? rc : jsonstr_append_cstr(out, v);
}

/* A number field, null when absent. */
static int
put_num(struct buf *out, const char *name, bool have, uint64_t v)
{
    if (!have) {
        return buf_printf(out, ",\"%s\":null", name);
    }
    return buf_printf(out, ",\"%s\":%llu", name, (unsigned long long)v);
}

/* Milliseconds with three decimals from µs. */
static int
put_ms(struct buf *out, const char *name, bool have, uint64_t us)
{
    if (!have) {
        return buf_printf(out, ",\"%s\":null", name);
    }
    return buf_printf(out, ",\"%s\":%llu.%03u", name, (unsigned long long)(us / 1000),
                      (unsigned)(us % 1000));
}

int
gw_access_format(struct buf *out, const struct gw_access *a, const char *request_id,
                 const char *client, const char *method, int status, uint64_t bytes_in,
                 uint64_t bytes_out, uint64_t end_ns)
{
    buf_reset(out);
    uint64_t dur_us = end_ns > a->start_ns ? (end_ns - a->start_ns) / 1000u : 0;
    int rc = buf_append_str(out, "{\"time\":");
    rc = rc != 0 ? rc : put_time(out, a->start_wall_ms);
    rc = rc != 0 ? rc : put_str(out, "request_id", request_id);
    rc = rc != 0 ? rc : put_str(out, "client", client);
    rc = rc != 0 ? rc : put_str(out, "principal", a->principal);
    rc = rc != 0 ? rc : put_str(out, "method", method);
    rc = rc != 0 ? rc : put_str(out, "operation", a->operation);
    rc = rc != 0 ? rc : put_str(out, "bucket", a->bucket);
    rc = rc != 0 ? rc : put_str(out, "key", a->key);
    rc = rc != 0 ? rc : put_str(out, "lock", a->lock);
    rc = rc != 0 ? rc : put_num(out, "token", a->token != 0, a->token);
    rc = rc != 0 ? rc : put_num(out, "status", true, (uint64_t)status);
    rc = rc != 0 ? rc : put_str(out, "error_code", a->error_code[0] != '\0' ? a->error_code : NULL);
    rc = rc != 0 ? rc : put_num(out, "bytes_in", true, bytes_in);
    rc = rc != 0 ? rc : put_num(out, "bytes_out", true, bytes_out);
    rc = rc != 0 ? rc : put_ms(out, "duration_ms", true, dur_us);
    rc = rc != 0 ? rc
                 : put_num(out, "upstream_status", a->upstream_status != 0,
                           (uint64_t)a->upstream_status);
    rc = rc != 0 ? rc
                 : put_ms(out, "upstream_ms", a->upstream_ms_x1000 >= 0,
                          (uint64_t)a->upstream_ms_x1000);
    rc = rc != 0 ? rc : put_str(out, "trace_id", a->trace_id[0] != '\0' ? a->trace_id : NULL);
    rc = rc != 0 ? rc : buf_append_str(out, "}\n");
    return rc;
}

/* The line of a request that ends now (or a placeholder when it would not fit). */
static void
emit(const struct gw_access *a, const char *id, const char *client, const char *method, int status,
     uint64_t in, uint64_t out)
{
    struct buf line;
    buf_init(&line, GW_ACCESS_LINE_MAX);
    int rc = gw_access_format(&line, a, id, client, method, status, in, out, gw_access_now_ns());
    if (rc != 0) {
        /* a key too long for one line: keep the line, drop the names (still valid JSON) */
        struct gw_access bare = *a;
        bare.principal = bare.bucket = bare.key = bare.lock = bare.operation = NULL;
        rc =
            gw_access_format(&line, &bare, id, client, method, status, in, out, gw_access_now_ns());
    }
    if (rc == 0) {
        (void)gw_access_append(line.data, line.len);
    }
    buf_cleanup(&line);
}

void
gw_http_access_request(struct gw_req *req)
{
    if (!notes_on) {
        return;
    }
    int status = req->status;
    /* the client left first (or the connection died before an answer): nginx's 499 */
    bool gone = req->aborted ? (req->access.abort_err == ERR_CLOSED || status == 0)
                             : (req->resp != GW_RESP_ENDED && status == 0);
    if (gone) {
        status = GW_ACCESS_STATUS_CLIENT_GONE;
    }
    emit(&req->access, req->id, req->conn->peer, req->method, status, req->body_received,
         req->resp_sent);
}

void
gw_http_access_refused(struct gw_conn *c, const char *id, int status, const char *code)
{
    if (!notes_on) {
        return;
    }
    struct gw_access a;
    gw_access_init(&a, NULL);
    (void)snprintf(a.error_code, sizeof(a.error_code), "%s", code);
    emit(&a, id, c->peer, NULL, status, 0, 0);
}
