#define LOG_MODULE "api"
#include "gateway/api/api.h"

#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/lockname.h"
#include "common/log.h"
#include "common/num.h"
#include "gateway/api/cursor.h"
#include "gateway/api/json_audit.h"
#include "gateway/base/config.h"
#include "gateway/base/metrics.h"
#include "gateway/http/http.h"
#include "gateway/s3/s3err.h"
#include "gateway/s3/s3req.h"
#include "store/store.h"

#define API_MAX_BODY   ((size_t)4 * 1024 * 1024) /* cap on one JSON answer */
#define API_AUDIT_DEF  100                       /* records per page by default */
#define API_AUDIT_MAX  1000                      /* and at most */
#define API_AUDIT_SCAN 10000 /* records read for one filtered page at most (then a short page) */

bool
gw_api_may_see(const struct gw_principal *principal, const char *lock)
{
    if (principal == NULL || principal->admin || principal->locks == NULL) {
        return true;
    }
    for (char **l = principal->locks; *l != NULL; l++) {
        if (strcmp(*l, lock) == 0) {
            return true;
        }
    }
    return false;
}

bool
gw_api_is_admin_path(const char *path)
{
    static const char prefix[] = "/_fencegate/v1/locks/";
    static const char verb[] = "/revoke";
    size_t n = strlen(path);
    if (strcmp(path, "/_fencegate/") == 0 || strcmp(path, "/_fencegate") == 0) {
        return true; /* the status page */
    }
    return strncmp(path, prefix, sizeof(prefix) - 1) == 0 &&
           n > sizeof(prefix) - 1 + sizeof(verb) - 1 &&
           strcmp(path + n - (sizeof(verb) - 1), verb) == 0;
}

bool
gw_api_is_admin(const struct gw_principal *principal)
{
    return principal == NULL || principal->admin;
}

static void
send_json(struct gw_req *req, int status, struct buf *b)
{
    gw_resp_simple(req, status, "application/json", b->data, b->len);
}

/* An API error in JSON: {"error":code,"message":...}. */
static void
send_json_error(struct gw_req *req, int status, const char *code, const char *message)
{
    struct buf b;
    buf_init(&b, 4096);
    int rc = buf_append_str(&b, "{\"error\":");
    if (rc == 0) {
        rc = gw_json_audit_str_append(&b, code);
    }
    if (rc == 0) {
        rc = buf_append_str(&b, ",\"message\":");
    }
    if (rc == 0) {
        rc = gw_json_audit_str_append(&b, message);
    }
    if (rc == 0) {
        rc = buf_append_str(&b, "}\n");
    }
    if (rc != 0) {
        /* no room for JSON: the S3 error document of ERR_NOMEM (or its bare form) */
        buf_cleanup(&b);
        buf_init(&b, GW_S3ERR_MAX_BODY);
        char bare[GW_S3ERR_BARE_MAX];
        size_t len = 0;
        const char *doc =
            gw_s3err_build(&b, bare, &len, gw_s3err_code_from_err(ERR_NOMEM), "Out of memory.",
                           gw_req_path(req), gw_req_id(req), NULL, 0);
        gw_resp_simple(req, gw_s3err_status_from_err(ERR_NOMEM), "application/xml", doc, len);
        buf_cleanup(&b);
        return;
    }
    send_json(req, status, &b);
    buf_cleanup(&b);
}

/*
 * The most one fence entry can take in the answer: the names and numbers
 * plus its two free-text fields at the worst JSON escaping (\u00XX, 6 bytes
 * per byte).  A page's buffer is sized from it, so no page of at most
 * GW_LIST_MAX entries can overflow it.
 */
#define API_FENCE_ENTRY_MAX (128 + 6 * (STORE_LOCK_MAX + STORE_REQID_MAX + STORE_PRINCIPAL_MAX))

struct fence_list {
    struct buf *b;                        /* the answer */
    const struct gw_principal *principal; /* who asks (gw_api_may_see), or NULL */
    int rc;                               /* first append error */
    bool first;                           /* no entry written yet */
    char last[STORE_LOCK_MAX + 1];        /* the last name scanned (the next cursor) */
};

/* store_fence_each_fn */
static int
on_fence(void *arg, const char *lock, const struct store_fence *f)
{
    struct fence_list *fl = arg;
    str_copy(fl->last, sizeof(fl->last), lock);
    if (!gw_api_may_see(fl->principal, lock)) { /* hidden: still moves the cursor */
        return 0;
    }
    char when[GW_AUDIT_TIME_LEN];
    gw_json_audit_time_format(f->advanced_ms, when);
    int rc = buf_append_str(fl->b, fl->first ? "\n  {\"lock\":" : ",\n  {\"lock\":");
    if (rc == 0) {
        rc = gw_json_audit_str_append(fl->b, lock);
    }
    if (rc == 0) {
        rc = buf_printf(fl->b, ",\"token\":%llu,\"advanced_at\":\"%s\",\"request_id\":",
                        (unsigned long long)f->token, when);
    }
    if (rc == 0) {
        rc = gw_json_audit_str_append(fl->b, f->request_id);
    }
    if (rc == 0) {
        rc = buf_append_str(fl->b, ",\"principal\":");
    }
    if (rc == 0) {
        rc = gw_json_audit_str_append(fl->b, f->principal);
    }
    if (rc == 0) {
        rc = buf_append_str(fl->b, "}");
    }
    fl->first = false;
    fl->rc = rc;
    return rc;
}

/* A query parameter (decoded) or NULL when absent; 1 on a bad value. */
static int
param(const char *query, const char *name, char *out, size_t outlen, bool *present)
{
    int rc = gw_s3req_query_get(query, name, out, outlen);
    *present = rc == 0;
    return rc == 0 || rc == ERR_NOTFOUND ? 0 : 1;
}

/* GET /fences?limit=&after=: one page, a range scan from the cursor. */
static void
get_fences(struct gw_req *req, struct store *st, const struct gw_principal *principal)
{
    const char *query = gw_req_query(req);
    char limit[24], after[GW_CURSOR_MAX + 2], from[STORE_LOCK_MAX + 1] = "";
    bool has_limit, has_after;
    uint64_t n = GW_LIST_DEFAULT;
    if (param(query, "limit", limit, sizeof(limit), &has_limit) ||
        (has_limit && parse_u64(limit, 1, GW_LIST_MAX, &n) != 0)) {
        send_json_error(req, 400, "bad_limit", "limit must be an integer in 1..10000.");
        return;
    }
    if (param(query, "after", after, sizeof(after), &has_after) ||
        (has_after && gw_cursor_parse(GW_CURSOR_FENCES, after, strlen(after), from) != 0)) {
        send_json_error(req, 400, "bad_cursor",
                        "after must be the \"next\" of a previous page of this listing.");
        return;
    }
    struct buf b;
    buf_init(&b, 256 + (size_t)n * API_FENCE_ENTRY_MAX);
    struct fence_list fl = {.b = &b, .principal = principal, .first = true};
    bool more = false;
    int rc = buf_append_str(&b, "{\"fences\":[");
    if (rc == 0) {
        rc = store_fence_page(st, from, (uint32_t)n, on_fence, &fl, &more);
    }
    if (rc == 0) {
        rc = buf_printf(&b, "%s],\"truncated\":%s,\"next\":", fl.first ? "" : "\n",
                        more ? "true" : "false");
    }
    char cursor[GW_CURSOR_MAX + 1];
    if (rc == 0 && more) {
        rc = gw_cursor_format(GW_CURSOR_FENCES, fl.last, cursor);
        if (rc == 0) {
            rc = gw_json_audit_str_append(&b, cursor);
        }
    } else if (rc == 0) {
        rc = buf_append_str(&b, "null");
    }
    if (rc == 0) {
        rc = buf_append_str(&b, "}\n");
    }
    if (rc != 0) {
        buf_cleanup(&b);
        log_error("req %s: fence list: %s", gw_req_id(req), err_str(rc));
        /* ERR_TOOBIG cannot happen (the buffer fits GW_LIST_MAX entries); any
         * failure here is the store's or memory's: the gateway is unavailable */
        send_json_error(req, 503, "unavailable", "The fence table could not be listed.");
        return;
    }
    send_json(req, 200, &b);
    buf_cleanup(&b);
}

struct audit_list {
    struct buf *b;                        /* the answer */
    const struct gw_principal *principal; /* who asks, or NULL (anonymous) */
    uint32_t n;                           /* records written */
    uint32_t scanned;                     /* records read */
    bool first;                           /* no record written yet */
};

/* Whether principal sees rec: a record of a lock it sees, or one of its own requests. */
static bool
audit_visible(const struct gw_principal *principal, const struct store_audit_rec *rec)
{
    if (gw_api_may_see(principal, rec->lock)) {
        return true;
    }
    return principal != NULL && strcmp(rec->principal, principal->name) == 0;
}

/* store_audit_each_fn */
static int
on_audit(void *arg, const struct store_audit_rec *rec)
{
    struct audit_list *al = arg;
    al->scanned++;
    if (!audit_visible(al->principal, rec)) {
        return 0;
    }
    al->n++;
    int rc = buf_append_str(al->b, al->first ? "\n  " : ",\n  ");
    if (rc == 0) {
        rc = gw_json_audit_rec_append(al->b, rec);
    }
    al->first = false;
    return rc;
}

/*
 * GET /audit?request_id=ID: the record of the refusal answered with ID (a
 * plain id, or "BASE.n", the n-th occurrence of BASE's run), as a page of
 * at most one record: none when no record has it (never was, or retention
 * deleted it) or when the asker may not see it, like any filter.
 */
static void
get_audit_by_id(struct gw_req *req, struct store *st, const struct gw_principal *principal,
                const char *id)
{
    if (id[0] == '\0' || strlen(id) > STORE_REQID_MAX + 21) {
        send_json_error(req, 400, "bad_request", "request_id must be 1..85 bytes.");
        return;
    }
    struct buf b;
    buf_init(&b, API_MAX_BODY);
    struct audit_list al = {.b = &b, .principal = principal, .first = true};
    int rc = buf_append_str(&b, "{\"records\":[");
    if (rc == 0) {
        rc = store_audit_find(st, id, on_audit, &al, NULL);
        if (rc == ERR_NOTFOUND) {
            rc = 0;
        }
    }
    if (rc == 0) {
        rc = buf_append_str(&b, al.first ? "],\"next\":null}\n" : "\n],\"next\":null}\n");
    }
    if (rc != 0) {
        buf_cleanup(&b);
        send_json_error(req, 500, "internal", "The audit log could not be read.");
        return;
    }
    send_json(req, 200, &b);
    buf_cleanup(&b);
}

static void
get_audit(struct gw_req *req, struct store *st, const struct gw_principal *principal)
{
    const char *query = gw_req_query(req);
    char lock[160], since[64], until[64], limit[24], after[128], who[STORE_WHO_MAX + 2];
    char reqid[STORE_REQID_MAX + 24];
    bool has_lock, has_since, has_until, has_limit, has_after, has_who, has_reqid;
    struct store_audit_query q = {.limit = API_AUDIT_DEF};
    uint64_t n;

    if (param(query, "lock", lock, sizeof(lock), &has_lock) ||
        param(query, "since", since, sizeof(since), &has_since) ||
        param(query, "until", until, sizeof(until), &has_until) ||
        param(query, "limit", limit, sizeof(limit), &has_limit) ||
        param(query, "after", after, sizeof(after), &has_after) ||
        param(query, "principal", who, sizeof(who), &has_who) ||
        param(query, "request_id", reqid, sizeof(reqid), &has_reqid)) {
        send_json_error(req, 400, "bad_request", "A query parameter is malformed.");
        return;
    }
    if (has_reqid) {
        get_audit_by_id(req, st, principal, reqid);
        return;
    }
    if (has_who) {
        if (has_lock || who[0] == '\0' || strlen(who) > STORE_WHO_MAX) {
            send_json_error(req, 400, "bad_request",
                            "principal must be a principal's name or @ADDRESS, without lock.");
            return;
        }
        /* a principal's own records and counts; every client's for an admin
         * (or anonymous loopback mode) */
        if (principal != NULL && !principal->admin && strcmp(principal->name, who) != 0) {
            send_json_error(req, 403, "denied", "This principal may not see another's records.");
            return;
        }
        q.who = who;
    }
    if (has_lock) {
        if (!lock_name_valid(lock)) {
            send_json_error(req, 400, "bad_request", "lock must match [A-Za-z0-9._-]{1,128}.");
            return;
        }
        if (!gw_api_may_see(principal, lock)) {
            send_json_error(req, 403, "denied", "This principal may not see this lock.");
            return;
        }
        q.lock = lock;
    }
    if (has_since && gw_json_audit_time_parse(since, &q.since_ms) != 0) {
        send_json_error(req, 400, "bad_request",
                        "since must be RFC 3339 UTC (2026-11-21T10:00:00Z) or Unix ms.");
        return;
    }
    if (has_until && gw_json_audit_time_parse(until, &q.until_ms) != 0) {
        send_json_error(req, 400, "bad_request", "until must be RFC 3339 UTC or Unix ms.");
        return;
    }
    if (has_limit) {
        if (parse_u64(limit, 1, API_AUDIT_MAX, &n) != 0) {
            send_json_error(req, 400, "bad_request", "limit must be 1..1000.");
            return;
        }
        q.limit = (uint32_t)n;
    }
    if (has_after && store_audit_cursor_parse(after, &q.after) != 0) {
        send_json_error(req, 400, "bad_request", "after must be a cursor from a previous page.");
        return;
    }
    struct buf b;
    buf_init(&b, API_MAX_BODY);
    struct audit_list al = {.b = &b, .principal = principal, .first = true};
    struct store_audit_cursor next = {0};
    int rc = buf_append_str(&b, "{\"records\":[");
    /* Records a principal may not see are skipped: read on until the page is
     * full, the log ends, or API_AUDIT_SCAN records were read (a short page
     * whose "next" goes on; a page may then even be empty). */
    uint32_t want = q.limit;
    while (rc == 0) {
        q.limit = want - al.n;
        rc = store_audit_query(st, &q, on_audit, &al, &next);
        if (rc != 0 || !next.set || al.n >= want || al.scanned >= API_AUDIT_SCAN) {
            break;
        }
        q.after = next;
    }
    if (rc == 0) {
        rc = buf_append_str(&b, al.first ? "],\"next\":" : "\n],\"next\":");
    }
    if (rc == 0 && next.set) {
        char cursor[128];
        rc = store_audit_cursor_format(&next, cursor, sizeof(cursor));
        if (rc == 0) {
            rc = gw_json_audit_str_append(&b, cursor);
        }
    } else if (rc == 0) {
        rc = buf_append_str(&b, "null");
    }
    if (rc == 0 && q.lock != NULL) {
        /* the per-lock quota's count: how many of this lock's refusals were
         * dropped between its first and its newest records */
        uint64_t kept = 0, dropped = 0;
        rc = store_audit_lock_stats(st, q.lock, &kept, &dropped);
        if (rc == 0) {
            rc = buf_printf(&b, ",\"lock_kept\":%llu,\"lock_dropped\":%llu",
                            (unsigned long long)kept, (unsigned long long)dropped);
        }
    }
    if (rc == 0 && q.who != NULL) {
        /* the per-principal quota's count, as the per-lock one */
        uint64_t kept = 0, dropped = 0;
        rc = store_audit_who_stats(st, q.who, &kept, &dropped);
        if (rc == 0) {
            rc = buf_printf(&b, ",\"principal_kept\":%llu,\"principal_dropped\":%llu",
                            (unsigned long long)kept, (unsigned long long)dropped);
        }
    }
    if (rc == 0) {
        rc = buf_append_str(&b, "}\n");
    }
    if (rc != 0) {
        buf_cleanup(&b);
        send_json_error(req, 500, "internal", "The audit log could not be read.");
        return;
    }
    send_json(req, 200, &b);
    buf_cleanup(&b);
}

void
gw_api_handle(struct gw_req *req, struct store *st, const struct gw_principal *principal)
{
    const char *path = gw_req_path(req);
    const char *method = gw_req_method(req);
    bool get = strcmp(method, "GET") == 0;

    if (st == NULL) {
        send_json_error(req, 503, "unavailable", "The gateway has no store.");
        return;
    }
    if (strcmp(path, "/_fencegate/v1/fences") == 0) {
        if (!get) {
            send_json_error(req, 405, "method_not_allowed", "Use GET.");
            return;
        }
        get_fences(req, st, principal);
        return;
    }
    if (strcmp(path, "/_fencegate/v1/audit") == 0) {
        if (!get) {
            send_json_error(req, 405, "method_not_allowed", "Use GET.");
            return;
        }
        get_audit(req, st, principal);
        return;
    }
    send_json_error(req, 404, "not_found", "No such gateway API resource.");
}
