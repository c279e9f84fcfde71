#define LOG_MODULE "status"
#include "gateway/api/status_page.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/jsonstr.h"
#include "common/log.h"
#include "election/elect.h"
#include "gateway/api/json_audit.h"
#include "gateway/http/http.h"
#include "store/store.h"

#define PAGE_MAX ((size_t)4 * 1024 * 1024) /* cap on the page */

/* One lock of the election cache, and what the election read of it now. */
struct row {
    struct page *pg; /* the page it belongs to */
    char lock[STORE_LOCK_MAX + 1];
    uint64_t cached;         /* the epoch in the election cache */
    int64_t learned_ms;      /* when it was recorded */
    struct elect_call *call; /* the read in flight, NULL when done */
    int err;                 /* its outcome */
    struct elect_info info;  /* what it read (err 0) */
};

/* A page being built: the reads of every lock, then the HTML. */
struct page {
    struct gw_req *req;        /* NULL once the client left */
    struct elect *el;          /* borrowed */
    struct store *st;          /* borrowed */
    struct gw_status_ready rd; /* strings copied into the fields below */
    char why[256];
    char upstream[256];
    char gateway[256];
    struct row *rows; /* owned; rows[0..n) */
    size_t n;         /* locks read */
    size_t more;      /* locks past GW_STATUS_PAGE_LOCKS, not shown */
    size_t pending;   /* reads still in flight */
};

int
gw_status_page_escape(struct buf *b, const char *s)
{
    if (s == NULL) {
        return 0;
    }
    const unsigned char *p = (const unsigned char *)s;
    size_t len = strlen(s);
    int rc = 0;
    size_t i = 0;
    while (rc == 0 && i < len) {
        unsigned c = p[i];
        const char *ent = NULL;
        size_t n = 1;
        switch (c) {
        case '&':
            ent = "&amp;";
            break;
        case '<':
            ent = "&lt;";
            break;
        case '>':
            ent = "&gt;";
            break;
        case '"':
            ent = "&quot;";
            break;
        case '\'':
            ent = "&#39;";
            break;
        default:
            if (c < 0x20 || c == 0x7f) {
                ent = "&#xFFFD;"; /* HTML forbids most controls in text */
            } else if (c >= 0x80) {
                n = jsonstr_utf8_len(p + i, len - i);
                if (n == 0) {
                    ent = "&#xFFFD;";
                    n = 1;
                }
            }
            break;
        }
        rc = ent != NULL ? buf_append_str(b, ent) : buf_append(b, p + i, n);
        i += n;
    }
    return rc;
}

static void
page_free(struct page *pg)
{
    free(pg->rows);
    free(pg);
}

/* <td>escaped</td> */
static int
td(struct buf *b, const char *s)
{
    int rc = buf_append_str(b, "<td>");
    rc = rc != 0 ? rc : gw_status_page_escape(b, s);
    return rc != 0 ? rc : buf_append_str(b, "</td>");
}

static int
td_u64(struct buf *b, uint64_t v)
{
    return v == 0 ? buf_append_str(b, "<td>&mdash;</td>")
                  : buf_printf(b, "<td class=n>%" PRIu64 "</td>", v);
}

static int
td_time(struct buf *b, int64_t ms)
{
    if (ms <= 0) {
        return buf_append_str(b, "<td>&mdash;</td>");
    }
    char t[GW_AUDIT_TIME_LEN];
    gw_json_audit_time_format(ms, t);
    return buf_printf(b, "<td>%s</td>", t);
}

static const char style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1b1f23;background:#fff}"
    "h1{font-size:1.4em;margin:0 0 .3em}h2{font-size:1.1em;margin:1.4em 0 .4em}"
    "table{border-collapse:collapse;width:100%}"
    "th,td{border-bottom:1px solid #d8dee4;padding:.3em .6em;text-align:left;"
    "vertical-align:top}td{white-space:nowrap}td.w{white-space:normal;overflow-wrap:anywhere}"
    "th{background:#f3f5f7;font-weight:600;white-space:nowrap}td.n{text-align:right;font-variant-"
    "numeric:"
    "tabular-nums}.ok{color:#116329;font-weight:600}.bad{color:#b3261e;font-weight:600}"
    ".dim{color:#59636e}p.state{margin:.2em 0}";

static int
render_head(struct buf *b, const struct page *pg)
{
    int rc = buf_printf(b,
                        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                        "<meta http-equiv=\"refresh\" content=\"%d\">"
                        "<meta name=\"viewport\" content=\"width=device-width\">"
                        "<title>fencegate ",
                        GW_STATUS_PAGE_REFRESH_S);
    rc = rc != 0 ? rc : gw_status_page_escape(b, pg->gateway);
    rc = rc != 0 ? rc
                 : buf_printf(b, "</title><style>%s</style></head><body>\n<h1>fencegate ", style);
    rc = rc != 0 ? rc : gw_status_page_escape(b, pg->gateway);
    char now[GW_AUDIT_TIME_LEN];
    struct timespec ts;
    (void)clock_gettime(CLOCK_REALTIME, &ts);
    gw_json_audit_time_format((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, now);
    rc = rc != 0
             ? rc
             : buf_printf(b, "</h1>\n<p class=state>Readiness: <span id=ready class=%s>%s</span>",
                          pg->rd.ready ? "ok" : "bad", pg->rd.ready ? "ready" : "not ready");
    if (rc == 0 && !pg->rd.ready) {
        rc = buf_append_str(b, " &mdash; ");
        rc = rc != 0 ? rc : gw_status_page_escape(b, pg->why);
    }
    rc = rc != 0 ? rc : buf_append_str(b, "</p>\n<p class=state>Upstream: ");
    rc = rc != 0 ? rc : gw_status_page_escape(b, pg->upstream);
    rc = rc != 0 ? rc
                 : buf_printf(b, " <span id=upstream class=%s>%s</span></p>\n",
                              pg->rd.upstream_ok ? "ok" : "bad",
                              pg->rd.upstream_ok ? "reachable" : "unreachable");
    rc = rc != 0
             ? rc
             : buf_printf(b, "<p class=\"state dim\">%s UTC; this page refreshes every %d s.</p>\n",
                          now, GW_STATUS_PAGE_REFRESH_S);
    return rc;
}

static int
render_locks(struct buf *b, const struct page *pg)
{
    int rc = buf_append_str(b, "<h2>Locks</h2>\n<table id=locks><tr><th>Lock<th>Epoch<th>Holder"
                               "<th>State<th>Lease remaining<th>Last renewal<th>Granted by"
                               "<th>Acquired</tr>\n");
    for (size_t i = 0; rc == 0 && i < pg->n; i++) {
        const struct row *r = &pg->rows[i];
        const struct elect_info *in = &r->info;
        bool read = r->err == 0 && pg->el != NULL && in->token != 0;
        rc = buf_append_str(b, "<tr>");
        rc = rc != 0 ? rc : td(b, r->lock);
        rc = rc != 0 ? rc : td_u64(b, read ? in->token : r->cached);
        rc = rc != 0 ? rc : td(b, read ? in->holder : "");
        if (rc == 0) {
            const char *state = !read          ? (pg->el == NULL ? "no election here" : "unknown")
                                : in->live     ? "held"
                                : in->released ? "released"
                                               : "lease ended";
            rc = buf_printf(b, "<td class=%s>%s</td>", read && in->live ? "ok" : "dim", state);
        }
        if (rc == 0 && read && in->live) {
            rc = buf_printf(b, "<td class=n>%" PRIu64 ".%01" PRIu64 " s</td>",
                            in->expires_in_ms / 1000, in->expires_in_ms % 1000 / 100);
        } else if (rc == 0) {
            rc = buf_append_str(b, "<td>&mdash;</td>");
        }
        rc = rc != 0 ? rc : td_time(b, read ? in->renewed_at_ms : 0);
        rc = rc != 0 ? rc : td(b, read ? in->granted_by : "");
        rc = rc != 0 ? rc : td_time(b, read ? in->acquired_at_ms : r->learned_ms);
        rc = rc != 0 ? rc : buf_append_str(b, "</tr>\n");
    }
    rc = rc != 0 ? rc : buf_append_str(b, "</table>\n");
    if (rc == 0 && pg->n == 0) {
        rc = buf_append_str(b, "<p class=dim>No lock known to this gateway yet.</p>\n");
    }
    if (rc == 0 && pg->more > 0) {
        rc = buf_printf(b, "<p class=dim>and %zu more.</p>\n", pg->more);
    }
    return rc;
}

/* store_fence_each_fn: one row of the fence table. */
static int
on_fence_row(void *arg, const char *lock, const struct store_fence *f)
{
    struct buf *b = arg;
    int rc = buf_append_str(b, "<tr>");
    rc = rc != 0 ? rc : td(b, lock);
    rc = rc != 0 ? rc : td_u64(b, f->token);
    rc = rc != 0 ? rc : td_time(b, f->advanced_ms);
    rc = rc != 0 ? rc : td(b, f->request_id);
    rc = rc != 0 ? rc : td(b, f->principal);
    rc = rc != 0 ? rc : buf_append_str(b, "</tr>\n");
    return rc;
}

/* The S3 code a refusal of this kind was answered with (the kind when several are). */
static const char *
kind_code(enum store_audit_kind k)
{
    switch (k) {
    case STORE_AUDIT_STALE:
        return "StaleFencingToken";
    case STORE_AUDIT_NOT_GRANTED:
        return "FencingTokenNotGranted";
    case STORE_AUDIT_MISSING_TOKEN:
        return "MissingFencingToken";
    case STORE_AUDIT_LOCK_MISMATCH:
        return "FencingLockMismatch";
    case STORE_AUDIT_INVALID_TOKEN:
        return "InvalidFencingToken";
    case STORE_AUDIT_LEASE_EXPIRED:
        return "FencingLeaseExpired";
    case STORE_AUDIT_CUT:
    case STORE_AUDIT_REFUSED:
    default:
        return "";
    }
}

/* The newest refusals: a ring of copies, filled oldest first. */
struct ring {
    struct refusal {
        int64_t time_ms;
        enum store_audit_kind kind;
        uint64_t token, current;
        char lock[STORE_LOCK_MAX + 1];
        char principal[STORE_PRINCIPAL_MAX + 1];
        char method[STORE_METHOD_MAX + 1];
        char bucket[STORE_BUCKET_MAX + 1];
        char key[STORE_KEY_MAX + 1];
        char request_id[STORE_REQID_MAX + 1];
        char trace_id[STORE_TRACE_MAX + 1];
    } r[GW_STATUS_PAGE_REFUSALS];
    size_t n; /* records seen */
};

/* store_audit_each_fn: keep the record, over the oldest kept. */
static int
on_refusal(void *arg, const struct store_audit_rec *rec)
{
    struct ring *g = arg;
    struct refusal *x = &g->r[g->n++ % GW_STATUS_PAGE_REFUSALS];
    x->time_ms = rec->time_ms;
    x->kind = rec->kind;
    x->token = rec->token;
    x->current = rec->current;
    str_copy(x->lock, sizeof(x->lock), rec->lock);
    str_copy(x->principal, sizeof(x->principal), rec->principal);
    str_copy(x->method, sizeof(x->method), rec->method);
    str_copy(x->bucket, sizeof(x->bucket), rec->bucket);
    str_copy(x->key, sizeof(x->key), rec->key);
    str_copy(x->request_id, sizeof(x->request_id), rec->request_id);
    (void)snprintf(x->trace_id, sizeof(x->trace_id), "%s",
                   rec->trace_id != NULL ? rec->trace_id : "");
    return 0;
}

/* Records one page render reads from the audit log at most (bounded work on the loop). */
#define SCAN_MAX ((size_t)2 * STORE_AUDIT_LIMIT_MAX)

/*
 * The last refusals, newest first.  The audit log is read oldest first, so
 * the newest are looked for in widening windows (10 s, a minute, an hour, a
 * day, 30 days), reading at most SCAN_MAX records in each.  A window holding
 * more than that would not reach its newest records: the narrower window
 * before it, whose records are the newest (if fewer than wanted), is shown.
 */
static int
render_refusals(struct buf *b, struct store *st)
{
    static const int64_t windows[] = {10000, 60000, 3600000, 86400000, 30LL * 86400000};
    struct ring *g = calloc(2, sizeof(*g)); /* the window being read, and the one before */
    if (g == NULL) {
        return ERR_NOMEM;
    }
    struct timespec ts;
    (void)clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    const struct ring *best = NULL; /* the newest records found so far */
    const struct ring *last = &g[0];
    for (size_t w = 0; w < sizeof(windows) / sizeof(windows[0]); w++) {
        struct ring *r = best == &g[0] ? &g[1] : &g[0];
        r->n = 0;
        last = r;
        struct store_audit_query q = {.since_ms = now - windows[w], .limit = STORE_AUDIT_LIMIT_MAX};
        struct store_audit_cursor next = {.set = false};
        do {
            if (store_audit_query(st, &q, on_refusal, r, &next) != 0) {
                next.set = false;
                break;
            }
            q.after = next;
        } while (next.set && r->n < SCAN_MAX);
        if (next.set) {
            break; /* too many to reach this window's newest: keep the narrower one's */
        }
        best = r;
        if (r->n >= GW_STATUS_PAGE_REFUSALS) {
            break;
        }
    }
    /* even 10 s held more than SCAN_MAX: the last of those read, close to the newest */
    const struct ring *shownr = best != NULL ? best : last;
    int rc = buf_append_str(b, "<h2>Last refusals</h2>\n<table id=refusals><tr><th>Time<th>Code"
                               "<th>Kind<th>Lock<th>Token<th>Current<th>Principal<th>Request"
                               "<th>Trace</tr>\n");
    size_t shown = shownr->n < GW_STATUS_PAGE_REFUSALS ? shownr->n : GW_STATUS_PAGE_REFUSALS;
    for (size_t i = 0; rc == 0 && i < shown; i++) {
        const struct refusal *x = &shownr->r[(shownr->n - 1 - i) % GW_STATUS_PAGE_REFUSALS];
        char what[STORE_METHOD_MAX + STORE_BUCKET_MAX + STORE_KEY_MAX + 4];
        (void)snprintf(what, sizeof(what), "%s /%s/%s", x->method, x->bucket, x->key);
        rc = buf_append_str(b, "<tr>");
        rc = rc != 0 ? rc : td_time(b, x->time_ms);
        rc = rc != 0 ? rc : buf_append_str(b, "<td class=bad>");
        rc = rc != 0 ? rc : gw_status_page_escape(b, kind_code(x->kind));
        rc = rc != 0 ? rc : buf_append_str(b, "</td>");
        rc = rc != 0 ? rc : td(b, store_audit_kind_name(x->kind));
        rc = rc != 0 ? rc : td(b, x->lock);
        rc = rc != 0 ? rc : td_u64(b, x->token);
        rc = rc != 0 ? rc : td_u64(b, x->current);
        rc = rc != 0 ? rc : td(b, x->principal);
        rc = rc != 0 ? rc : buf_append_str(b, "<td class=w>");
        rc = rc != 0 ? rc : gw_status_page_escape(b, what);
        rc = rc != 0 ? rc : buf_append_str(b, "<br><span class=dim>");
        rc = rc != 0 ? rc : gw_status_page_escape(b, x->request_id);
        rc = rc != 0 ? rc : buf_append_str(b, "</span></td>");
        rc = rc != 0 ? rc : buf_append_str(b, "<td class=w>");
        rc = rc != 0 ? rc : gw_status_page_escape(b, x->trace_id);
        rc = rc != 0 ? rc : buf_append_str(b, "</td></tr>\n");
    }
    rc = rc != 0 ? rc : buf_append_str(b, "</table>\n");
    if (rc == 0 && shown == 0) {
        rc = buf_append_str(b, "<p class=dim>No refusal recorded.</p>\n");
    }
    free(g);
    return rc;
}

/* Every read is back: the page, then the answer. */
static void
finish(struct page *pg)
{
    struct gw_req *req = pg->req;
    gw_req_set_ops(req, NULL, NULL);
    struct buf b;
    buf_init(&b, PAGE_MAX);
    int rc = render_head(&b, pg);
    rc = rc != 0 ? rc : render_locks(&b, pg);
    rc = rc != 0 ? rc
                 : buf_append_str(&b, "<h2>Fence table</h2>\n<table id=fences><tr><th>Lock"
                                      "<th>Highest token<th>Advanced<th>By request"
                                      "<th>Principal</tr>\n");
    if (rc == 0) {
        rc = store_fence_list(pg->st, on_fence_row, &b);
    }
    rc = rc != 0 ? rc : buf_append_str(&b, "</table>\n");
    rc = rc != 0 ? rc : render_refusals(&b, pg->st);
    rc = rc != 0 ? rc : buf_append_str(&b, "</body></html>\n");
    if (rc != 0) {
        log_warn("req %s: status page not rendered: %s", gw_req_id(req), err_str(rc));
        static const char msg[] = "The status page could not be rendered.\n";
        gw_resp_simple(req, 503, "text/plain", msg, sizeof(msg) - 1);
    } else {
        gw_resp_start(req, 200);
        if (gw_resp_header(req, "Content-Type", "text/html; charset=utf-8") != 0 ||
            gw_resp_header(req, "Cache-Control", "no-store") != 0) {
            log_debug("req %s: a header was not added", gw_req_id(req));
        }
        gw_resp_body_begin(req, (int64_t)b.len);
        rc = gw_resp_body_write(req, b.data, b.len);
        if (rc != 0 && rc != ERR_AGAIN) { /* ERR_AGAIN: queued anyway */
            log_debug("req %s: %s", gw_req_id(req), err_str(rc));
        }
        gw_resp_end(req);
    }
    buf_cleanup(&b);
    page_free(pg);
}

/* elect_done_fn: one lock's read. */
static void
on_read(void *arg, int err, const struct elect_info *info)
{
    struct row *r = arg;
    struct page *pg = r->pg;
    r->call = NULL;
    r->err = err;
    r->info = *info;
    r->info.lease_id[0] = '\0'; /* a secret: never kept */
    if (--pg->pending == 0) {
        finish(pg);
    }
}

/* gw_req_ops.on_abort: the client left: cancel the reads still out. */
static void
on_abort(struct gw_req *req, int err, void *arg)
{
    struct page *pg = arg;
    (void)req;
    (void)err;
    for (size_t i = 0; i < pg->n; i++) {
        if (pg->rows[i].call != NULL) {
            elect_call_cancel(pg->el, pg->rows[i].call);
        }
    }
    page_free(pg);
}

static const struct gw_req_ops page_ops = {.on_abort = on_abort};

/* store_elect_each_fn: a lock of the election cache. */
static int
on_cached(void *arg, const char *lock, const struct store_elect *e)
{
    struct page *pg = arg;
    if (pg->n == GW_STATUS_PAGE_LOCKS) {
        pg->more++;
        return 0;
    }
    struct row *r = &pg->rows[pg->n++];
    r->pg = pg;
    str_copy(r->lock, sizeof(r->lock), lock);
    r->cached = e->epoch;
    r->learned_ms = e->learned_ms;
    r->err = ERR_NOTFOUND;
    return 0;
}

void
gw_status_page_handle(struct gw_req *req, struct elect *el, struct store *st,
                      const struct gw_status_ready *rd)
{
    const char *m = gw_req_method(req);
    if (strcmp(m, "GET") != 0 && strcmp(m, "HEAD") != 0) {
        static const char msg[] = "GET only.\n";
        gw_resp_simple(req, 405, "text/plain", msg, sizeof(msg) - 1);
        return;
    }
    struct page *pg = calloc(1, sizeof(*pg));
    if (pg != NULL) {
        pg->rows = calloc(GW_STATUS_PAGE_LOCKS, sizeof(*pg->rows));
    }
    if (st == NULL || pg == NULL || pg->rows == NULL) {
        if (pg != NULL) {
            page_free(pg);
        }
        static const char msg[] = "The status page is not available.\n";
        gw_resp_simple(req, 503, "text/plain", msg, sizeof(msg) - 1);
        return;
    }
    pg->req = req;
    pg->el = el;
    pg->st = st;
    pg->rd = *rd;
    str_copy(pg->why, sizeof(pg->why), rd->why != NULL ? rd->why : "");
    (void)snprintf(pg->upstream, sizeof(pg->upstream), "%s",
                   rd->upstream != NULL ? rd->upstream : "");
    str_copy(pg->gateway, sizeof(pg->gateway), rd->gateway != NULL ? rd->gateway : "");
    pg->rd.why = pg->why;
    pg->rd.upstream = pg->upstream;
    pg->rd.gateway = pg->gateway;
    if (store_elect_list(st, on_cached, pg) != 0) {
        pg->n = 0;
    }
    /* the reads start together; none answers before this returns (elect.h) */
    pg->pending = 1; /* held until every read has started */
    gw_req_set_ops(req, &page_ops, pg);
    for (size_t i = 0; el != NULL && i < pg->n; i++) {
        struct row *r = &pg->rows[i];
        if (elect_get(el, r->lock, 0, 0, on_read, r, &r->call) == 0) {
            pg->pending++;
        } else {
            r->call = NULL;
        }
    }
    if (--pg->pending == 0) {
        finish(pg);
    }
}
