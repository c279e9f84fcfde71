/*
 * gateway/http/access.h: the access log, one JSON object per line per
 * request (config access_log: "off", "stderr" or a file path).
 *
 * Every request the server parsed a head for gets exactly one line, written
 * when the server lets go of it: answered, refused, aborted by its client
 * (status 499, nginx's convention), or cut.  A request refused before a
 * request exists (a head too large, malformed framing) gets a line too, with
 * what is known.  The keys, always all of them, in this order:
 *   time request_id client principal method operation bucket key lock token
 *   status error_code bytes_in bytes_out duration_ms upstream_status
 *   upstream_ms trace_id
 * A value not known is null.  Strings go through common/jsonstr.h, so every
 * line is valid JSON whatever the client sent.
 *
 * Writing never blocks the event loop (DESIGN "Logs, access log and trace
 * ids"): the loop appends the line to a bounded buffer under a mutex; one
 * writer thread takes the whole buffer every GW_ACCESS_FLUSH_MS, or at once
 * past GW_ACCESS_FLUSH_BYTES, and writes it with write(2).  A line that does
 * not fit the buffer (the disk is slower than the traffic for a long while) is
 * dropped and counted in fencegate_access_log_dropped_total, never waited for.
 *
 * Per-request state: struct gw_access, embedded in the request, is the one
 * place a handler records what the server cannot know (principal, operation,
 * lock, upstream status...); the gw_access_note_* setters copy what they get,
 * into the request's own names buffer while it has room (no malloc per name).
 *
 * The sink is process-wide: gw_access_open/_close from the event-loop thread.
 */
#ifndef GW_ACCESS_H
#define GW_ACCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/traceparent.h"

struct gw_req;

/* The writer wakes at least every GW_ACCESS_FLUSH_MS, and at once past
 * GW_ACCESS_FLUSH_BYTES waiting; lines beyond GW_ACCESS_MAX_PENDING waiting are
 * dropped; one line is at most GW_ACCESS_LINE_MAX (S3 keys are 1 KiB). */
#define GW_ACCESS_FLUSH_MS    100
#define GW_ACCESS_FLUSH_BYTES ((size_t)64 * 1024)
#define GW_ACCESS_MAX_PENDING ((size_t)8 * 1024 * 1024)
#define GW_ACCESS_LINE_MAX    ((size_t)16 * 1024)

/* The status logged for a client that left before its answer (nginx's 499). */
#define GW_ACCESS_STATUS_CLIENT_GONE 499

/* The bytes of a request's names (principal, bucket, key, lock, each with its NUL)
 * kept in the request itself; longer ones go to the heap. */
#define GW_ACCESS_NAMES_BYTES 256

/* What the access-log line of one request says beyond HTTP.  Strings owned
 * (NULL: null): in names while it has room, else on the heap (freed by
 * gw_access_cleanup), but operation, a static name from the classifier's table. */
struct gw_access {
    char *principal;           /* authenticated principal */
    const char *operation;     /* the classifier's S3 operation, e.g. "PutObject" (static) */
    char *bucket;              /* S3 bucket */
    char *key;                 /* S3 key */
    char *lock;                /* the lock a write was judged under */
    uint64_t token;            /* its token, 0: none */
    char error_code[48];       /* the gateway's own S3 error code, "" when none */
    int upstream_status;       /* the upstream's status, 0: not forwarded (or no answer) */
    uint64_t upstream_ns;      /* monotonic ns when the transfer started, 0: not started */
    int64_t upstream_ms_x1000; /* time to the upstream's head in µs, -1: none */
    int abort_err;             /* why the request was aborted, 0: it was not */
    int64_t start_wall_ms;     /* wall clock at the end of the head (the line's "time") */
    uint64_t start_ns;         /* monotonic ns then */
    char trace_id[TRACEPARENT_ID_LEN + 1]; /* from a valid traceparent, "" when none */
    size_t names_used;                     /* bytes of names in use */
    char names[GW_ACCESS_NAMES_BYTES];     /* last: gw_access_init leaves it uncleared */
};

/*
 * gw_access_open - log requests to spec ("off", "stderr" or a file path,
 * opened O_APPEND, created 0640), replacing the sink in use: called at start
 * and on every SIGHUP, so a file renamed by logrotate is reopened.  Lines
 * queued before the call go to the old sink.  Starts the writer thread on
 * first use.
 * [out] errbuf  why it failed (startup and reload only).
 * Returns 0, or ERR_IO (errbuf says why; the old sink stays), ERR_NOMEM.
 */
MUST_USE int gw_access_open(const char *spec, char *errbuf, size_t errlen);

/* gw_access_enabled - true while a sink is open (not "off"). */
bool gw_access_enabled(void);

/* gw_access_close - write what is queued, stop the writer, close the sink.  At exit. */
void gw_access_close(void);

/* gw_access_thread_done - a loop's thread ends: free its line buffer (thread-local). */
void gw_access_thread_done(void);

/*
 * gw_access_append - queue one line (len bytes, ending in '\n'), copied.
 * Never blocks on the sink: a line that does not fit GW_ACCESS_MAX_PENDING is
 * dropped and counted.  Returns 0, or ERR_TOOBIG when dropped.
 */
int gw_access_append(const char *line, size_t len);

/* ---- per request (event-loop thread) ---- */

/*
 * gw_access_init - start req's record at start_ns (the monotonic clock the
 * request's metrics read, gw_metrics_now_ns: one read for both), with the
 * trace id of its traceparent header; the wall clock is read only while the
 * log is on.
 */
void gw_access_init(struct gw_access *a, const char *traceparent, uint64_t start_ns);

/* gw_access_cleanup - free a's strings on the heap (those outside a->names).  NULL-safe. */
void gw_access_cleanup(struct gw_access *a);

/* gw_access_note_s3 - the request's classification (operation: a static name, kept as a
 * pointer; bucket and key copied; NULL: keep) and principal (copied). */
void gw_access_note_s3(struct gw_req *req, const char *operation, const char *bucket,
                       const char *key);
void gw_access_note_principal(struct gw_req *req, const char *principal);

/* gw_access_note_fence - the lock and token the write was judged under (lock copied). */
void gw_access_note_fence(struct gw_req *req, const char *lock, uint64_t token);

/* gw_access_note_error - the S3 error code of the gateway's own answer (copied, cut at 47). */
void gw_access_note_error(struct gw_req *req, const char *code);

/* gw_access_note_upstream_start / _head - the transfer started at now_ns; its head
 * arrived at now_ns with status (now_ns: gw_metrics_now_ns, the caller's read,
 * shared with the upstream metrics). */
void gw_access_note_upstream_start(struct gw_req *req, uint64_t now_ns);
void gw_access_note_upstream_head(struct gw_req *req, int status, uint64_t now_ns);

/* gw_access_trace_id - the request's trace id, or NULL when it brought no valid traceparent. */
const char *gw_access_trace_id(const struct gw_req *req);

/*
 * gw_access_format - req's line into out (reset first), with status the one
 * logged and bytes counted by the server.  Returns 0 or a buf error.
 * Exposed for the unit tests; the server calls gw_http_access_request.
 */
MUST_USE int gw_access_format(struct buf *out, const struct gw_access *a, const char *request_id,
                              const char *client, const char *method, int status, uint64_t bytes_in,
                              uint64_t bytes_out, uint64_t end_ns);

#endif
