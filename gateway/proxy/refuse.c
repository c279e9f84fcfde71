#define LOG_MODULE "refuse"
#include "gateway/proxy/refuse.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/log.h"
#include "gateway/base/metrics.h"
#include "gateway/http/access.h"
#include "gateway/http/http.h"
#include "gateway/net/hop.h"
#include "gateway/s3/s3err.h"
#include "gateway/s3/s3req.h"
#include "store/store.h"

/* The document and status of r (extras for the fence's refusals). */
static void
reply(struct gw_req *req, const struct gw_refusal *r)
{
    char tok[24], cur[24];
    (void)snprintf(tok, sizeof(tok), "%llu", (unsigned long long)r->token);
    (void)snprintf(cur, sizeof(cur), "%llu", (unsigned long long)r->current);
    const struct gw_s3err_extra extra[] = {
        {"Lock", r->lock != NULL ? r->lock : ""},
        {"Token", tok},
        {"CurrentToken", cur},
    };
    gw_access_note_error(req, r->code);
    struct buf body;
    char bare[GW_S3ERR_BARE_MAX];
    size_t len = 0;
    buf_init(&body, GW_S3ERR_MAX_BODY);
    const char *doc = gw_s3err_build(&body, bare, &len, r->code, r->message, gw_req_path(req),
                                     gw_req_id(req), r->tokens ? extra : NULL, r->tokens ? 3 : 0);
    gw_resp_simple(req, r->status, "application/xml", doc, len);
    buf_cleanup(&body);
}

/*
 * A refusal waiting for its audit record to commit (G7: the answer goes out
 * only once the record is durable, so a crash between the two can lose the
 * answer, never the record).  It holds req through its own ops: an abort
 * (client gone, timeout, shutdown) only forgets req; the store's callback,
 * which always comes, frees it.
 *
 * Queued by a worker loop (DESIGN "Worker loops"), the store's callback runs
 * on the control loop's thread: there it only writes err and fid and hops
 * back (gateway/net/hop.h), and the worker's thread answers (wait_run), or
 * frees it if its queue was closed meanwhile (wait_cancel).  req is read and
 * written on the queuing loop's thread only.
 */
struct refusal_wait {
    struct gw_hop hop;           /* first: the way back to the queuing loop */
    struct gw_req *req;          /* NULL once the request died; the queuing loop's thread only */
    int err;                     /* the commit's outcome (written by the store's callback) */
    char fid[GW_REQ_ID_MAX + 1]; /* the id it answers with (idem; final_id) */
    struct gw_refusal r;
    bool cut;                   /* end by cutting the connection (the head was already sent) */
    uint64_t queued_ns;         /* monotonic ns the record was queued (audit_commit_seconds) */
    const char *method;         /* for the log line, written once the final id is known */
    const char *op;             /* the S3 operation's name, idem */
    const char *trace;          /* the trace id, or NULL, idem */
    char id[GW_REQ_ID_MAX + 1]; /* the request's id when queued */
    char strs[];                /* lock, code, message, method, op, trace: copied */
};

static void log_refusal(const char *id, const char *method, const char *op, const char *trace,
                        const struct gw_refusal *r);

static void
wait_abort(struct gw_req *req, int err, void *arg)
{
    struct refusal_wait *w = arg;
    (void)req;
    log_info("req %s: client gone (%s) before its refusal's audit record committed", w->id,
             err_str(err));
    w->req = NULL;
}

static const struct gw_req_ops wait_ops = {.on_abort = wait_abort};

static void reply(struct gw_req *req, const struct gw_refusal *r);

static const char slowdown_msg[] =
    "This write was refused, but its audit record could not be stored; nothing was forwarded. "
    "Please reduce your request rate.";

/*
 * The id the refusal answers with: its own, or, when the store counted it
 * into a run (occurrence n >= 2), "<run's id>.<n>", which GET /audit?request_id=
 * finds (the run's record).  Written into out (GW_REQ_ID_MAX + 1 bytes).
 */
static void
final_id(const struct refusal_wait *w, const struct store_audit_done *d, char *out)
{
    int n = -1;
    if (d != NULL && d->occurrence > 1 && d->run_request_id[0] != '\0') {
        n = snprintf(out, GW_REQ_ID_MAX + 1, "%s.%llu", d->run_request_id,
                     (unsigned long long)d->occurrence);
    }
    if (n < 0 || n > GW_REQ_ID_MAX) {
        str_copy(out, GW_REQ_ID_MAX + 1, w->id);
    }
}

/* The record is durable (w->err 0), or it failed: log, answer or cut, free.  On
 * the queuing loop's thread (its counters, its request). */
static void
finish(struct refusal_wait *w)
{
    int err = w->err;
    if (err == 0) { /* measured on the loop: the store's thread touches no counter */
        uint64_t now = gw_metrics_now_ns();
        gw_histo_observe(&gw_metrics.audit_commit_seconds,
                         now > w->queued_ns ? now - w->queued_ns : 0);
    }
    const char *id = w->fid;
    log_refusal(id, w->method, w->op, w->trace, &w->r);
    struct gw_req *req = w->req;
    if (req != NULL) {
        gw_req_set_ops(req, NULL, NULL);
        (void)gw_req_set_id(req, id); /* fits: final_id bounds it */
        if (w->cut) {
            gw_resp_abort(req);
        } else if (err != 0) {
            log_error("req %s: audit record (%s, lock %s) not committed: %s", gw_req_id(req),
                      store_audit_kind_name((enum store_audit_kind)w->r.audit), w->r.lock,
                      err_str(err));
            GW_COUNT(audit_failures);
            gw_refuse_reply(req, 503, "SlowDown", slowdown_msg);
        } else {
            reply(req, &w->r);
        }
    }
    free(w);
}

/* gw_loopmsg_run_fn: the hop of a worker's refusal arrived on the worker's thread. */
static void
wait_run(struct gw_loopmsg *m)
{
    finish((struct refusal_wait *)m); /* hop.msg is the first field */
}

/* gw_loopmsg_cancel_fn: the worker's queue closed with the hop pending (the
 * loop is stopping): no answer; a request still waiting is cut. */
static void
wait_cancel(struct gw_loopmsg *m, int why)
{
    struct refusal_wait *w = (struct refusal_wait *)m;
    log_info("req %s: refusal not answered: its loop is stopping (%s)", w->fid, err_str(why));
    if (w->req != NULL) {
        gw_req_set_ops(w->req, NULL, NULL);
        gw_resp_abort(w->req);
    }
    free(w);
}

/*
 * store_audit_done_fn: the record is durable (err 0), or it failed.  Runs on
 * the thread that dispatches the store's completions: the loop itself on a
 * single loop; the control loop for a worker's refusal, which only copies
 * and hops back.  If the worker's queue is already closed, its requests are
 * gone (a worker closes its queue only once its connections are freed, every
 * waiting request aborted and forgotten by its wait): w is freed here.
 */
static void
wait_done(void *arg, int err, const struct store_audit_done *d)
{
    struct refusal_wait *w = arg;
    w->err = err;
    final_id(w, err == 0 ? d : NULL, w->fid);
    if (!gw_hop_away(&w->hop)) {
        finish(w);
        return;
    }
    if (gw_hop_post(&w->hop) != 0) {
        log_info("req %s: refusal not answered: its loop has stopped", w->fid);
        free(w);
    }
}

/* A copy of r whose strings live in the returned block; NULL when out of memory. */
static struct refusal_wait *
wait_new(struct gw_req *req, const struct gw_s3req *s3, const struct gw_refusal *r, bool cut)
{
    const char *strs[6] = {
        r->lock != NULL ? r->lock : "",
        r->code,
        r->message != NULL ? r->message : "",
        gw_req_method(req),
        s3->name != NULL ? s3->name : "",
        gw_access_trace_id(req) != NULL ? gw_access_trace_id(req) : "",
    };
    size_t lens[6];
    size_t total = 0;
    for (size_t i = 0; i < 6; i++) {
        lens[i] = strlen(strs[i]) + 1;
        total += lens[i];
    }
    struct refusal_wait *w = malloc(sizeof(*w) + total);
    if (w == NULL) {
        return NULL;
    }
    gw_hop_init(&w->hop, wait_run, wait_cancel);
    w->req = req;
    w->err = 0;
    w->fid[0] = '\0';
    w->r = *r;
    w->cut = cut;
    w->queued_ns = gw_metrics_now_ns();
    str_copy(w->id, sizeof(w->id), gw_req_id(req));
    const char *copies[6];
    char *p = w->strs;
    for (size_t i = 0; i < 6; i++) {
        copies[i] = memcpy(p, strs[i], lens[i]);
        p += lens[i];
    }
    w->r.lock = copies[0];
    w->r.code = copies[1];
    w->r.message = copies[2];
    w->method = copies[3];
    w->op = copies[4];
    w->trace = copies[5][0] != '\0' ? copies[5] : NULL;
    return w;
}

/* Queues r's audit record (G7); w, when given, hears of its commit. */
static int
audit(struct store *st, struct gw_req *req, const struct gw_s3req *s3, const char *principal,
      const struct gw_refusal *r, struct refusal_wait *w)
{
    const char *lock = r->lock != NULL ? r->lock : "";
    struct store_audit_rec rec = {
        .time_ms = 0,
        .kind = (enum store_audit_kind)r->audit,
        .token = r->token,
        .current = r->current,
        .lock = lock,
        .principal = principal,
        .client = gw_req_peer(req),
        .method = gw_req_method(req),
        .bucket = s3->bucket,
        .key = s3->key,
        .operation = s3->name,
        .request_id = gw_req_id(req),
        .user_agent = gw_req_header(req, "user-agent"),
        .trace_id = gw_access_trace_id(req),
    };
    int rc = store_audit_append(st, &rec, w != NULL ? wait_done : NULL, w);
    if (rc != 0) {
        log_error("req %s: audit record (%s, lock %s) not queued: %s", gw_req_id(req),
                  store_audit_kind_name(rec.kind), lock, err_str(rc));
        GW_COUNT(audit_failures);
    }
    return rc;
}

/* The counters of r. */
static void
account(struct gw_req *req, const struct gw_refusal *r)
{
    if (r->count == GW_REFUSAL_FENCE) {
        gw_metrics_fence_refusal(r->lock, r->code);
    } else if (r->count == GW_REFUSAL_CLASSIFY) {
        GW_COUNT(classify_refusals);
    }
    gw_access_note_fence(req, r->lock, r->token);
}

/* The log line of r, with the id it answers with. */
static void
log_refusal(const char *id, const char *method, const char *op, const char *trace,
            const struct gw_refusal *r)
{
    if (r->count == GW_REFUSAL_UNCOUNTED && r->audit == 0) {
        return;
    }
    if (r->tokens) {
        log_info("req %s: %s %s refused (%d %s), lock %s token %llu current %llu%s%s: %s", id,
                 method, op, r->status, r->code, r->lock != NULL ? r->lock : "",
                 (unsigned long long)r->token, (unsigned long long)r->current,
                 trace != NULL ? ", trace " : "", trace != NULL ? trace : "", r->message);
    } else {
        log_info("req %s: %s %s refused (%d %s)%s%s: %s", id, method, op, r->status, r->code,
                 trace != NULL ? ", trace " : "", trace != NULL ? trace : "", r->message);
    }
}

/* The log line of r, now (its id is final). */
static void
log_now(struct gw_req *req, const struct gw_s3req *s3, const struct gw_refusal *r)
{
    if (r->count == GW_REFUSAL_UNCOUNTED && r->audit == 0) {
        return; /* no line (s3 may be NULL then) */
    }
    log_refusal(gw_req_id(req), gw_req_method(req), s3->name, gw_access_trace_id(req), r);
}

/* gw_refuse and gw_refuse_cut: answer (or cut) once r's record is durable. */
static void
carry_out(struct store *st, struct gw_req *req, const struct gw_s3req *s3, const char *principal,
          const struct gw_refusal *r, bool cut)
{
    account(req, r);
    if (r->audit == 0 || st == NULL) {
        log_now(req, s3, r);
        if (cut) {
            gw_resp_abort(req);
        } else {
            reply(req, r);
        }
        return;
    }
    struct refusal_wait *w = wait_new(req, s3, r, cut);
    int rc = w != NULL ? audit(st, req, s3, principal, r, w) : ERR_NOMEM;
    if (rc == 0) {
        gw_req_set_ops(req, &wait_ops, w); /* wait_done logs and answers */
        return;
    }
    log_now(req, s3, r);
    if (w == NULL) {
        log_error("req %s: audit record (lock %s) not queued: %s", gw_req_id(req),
                  r->lock != NULL ? r->lock : "", err_str(rc));
        GW_COUNT(audit_failures);
    }
    free(w);
    if (cut) {
        gw_resp_abort(req);
    } else {
        /* G7: no refusal without its record; the client retries, nothing was forwarded */
        gw_refuse_reply(req, 503, "SlowDown", slowdown_msg);
    }
}

void
gw_refuse(struct store *st, struct gw_req *req, const struct gw_s3req *s3, const char *principal,
          const struct gw_refusal *r)
{
    carry_out(st, req, s3, principal, r, false);
}

void
gw_refuse_classified(struct store *st, struct gw_req *req, const struct gw_s3req *s3,
                     const char *principal, const char *lock, int status, const char *code,
                     const char *message)
{
    const struct gw_refusal r = {
        .status = status,
        .code = code,
        .message = message,
        .audit = STORE_AUDIT_REFUSED,
        .count = GW_REFUSAL_CLASSIFY,
        .lock = lock,
    };
    carry_out(st, req, s3, principal, &r, false);
}

void
gw_refuse_cut(struct store *st, struct gw_req *req, const struct gw_s3req *s3,
              const char *principal, const struct gw_refusal *r)
{
    carry_out(st, req, s3, principal, r, true);
}

void
gw_refuse_reply(struct gw_req *req, int status, const char *code, const char *message)
{
    const struct gw_refusal r = {.status = status, .code = code, .message = message};
    reply(req, &r);
}

void
gw_refuse_err(struct gw_req *req, int err, const char *message)
{
    gw_refuse_reply(req, gw_s3err_status_from_err(err), gw_s3err_code_from_err(err),
                    message != NULL ? message : err_str(err));
}
