#define LOG_MODULE "locks"
#include "gateway/api/locks.h"

#include "gateway/api/api.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/lockname.h"
#include "common/log.h"
#include "common/num.h"
#include "election/elect.h"
#include "gateway/api/api.h"
#include "gateway/api/cursor.h"
#include "gateway/api/json_audit.h"
#include "gateway/base/config.h"
#include "gateway/base/metrics.h"
#include "gateway/http/http.h"
#include "gateway/s3/s3req.h"
#include "store/store.h"

#define LOCKS_PREFIX   "/_fencegate/v1/locks"
#define LOCKS_MAX_BODY ((size_t)64 * 1024) /* request bodies are tiny JSON objects */

enum action {
    A_ACQUIRE,
    A_RENEW,
    A_RELEASE,
    A_GET,
    A_REVOKE,
};

/* One API call in progress. */
struct lcall {
    struct gw_req *req;            /* the request (owned by the server) */
    struct elect *e;               /* the election */
    struct elect_call *call;       /* the election call in flight, or NULL */
    enum action act;               /* what was asked */
    char lock[ELECT_LOCK_MAX + 1]; /* which lock */
    struct buf body;               /* the request body so far */
    struct store *st;              /* revoke: where its audit record goes (borrowed) */
    char admin[128];               /* revoke: the admin's principal name ("" anonymous) */
    char client[64];               /* revoke: the request's client address, id and User-Agent, */
    char request_id[64];           /*   copied: a revoke that went ahead is audited even if the */
    char user_agent[256];          /*   client hung up meanwhile (req is then NULL) */
    bool auditing;                 /* revoke: its audit record is being committed */
    struct elect_info info;        /* revoke: the lock as revoked, answered once audited */
};

static void
send_json_value(struct gw_req *req, int status, json_t *v)
{
    char *text = v != NULL ? json_dumps(v, JSON_COMPACT) : NULL;
    if (text == NULL) {
        static const char oom[] = "{\"error\":\"unavailable\",\"message\":\"out of memory\"}\n";
        gw_resp_simple(req, 503, "application/json", oom, sizeof(oom) - 1);
    } else {
        size_t n = strlen(text);
        text[n] = '\n'; /* replaces the NUL: send n + 1 bytes, no NUL */
        gw_resp_simple(req, status, "application/json", text, n + 1);
        free(text);
    }
    json_decref(v);
}

static void
send_error(struct gw_req *req, int status, const char *code, const char *message)
{
    send_json_value(req, status, json_pack("{s:s,s:s}", "error", code, "message", message));
}

static json_t *
time_value(int64_t ms)
{
    if (ms <= 0) {
        return json_null();
    }
    char t[GW_AUDIT_TIME_LEN];
    gw_json_audit_time_format(ms, t);
    return json_string(t);
}

/* The public view of a lock record (never the lease_id unless with_secret). */
static json_t *
info_json(const struct elect_info *in, bool with_secret)
{
    json_t *o =
        json_pack("{s:s,s:I,s:b,s:b,s:s,s:I,s:I,s:o,s:o,s:o,s:I,s:s}", "lock", in->lock, "token",
                  (json_int_t)in->token, "live", in->live, "released", in->released, "holder",
                  in->holder, "lease_ms", (json_int_t)in->lease_ms, "expires_in_ms",
                  (json_int_t)(in->live ? in->expires_in_ms : 0), "expires_at",
                  in->live ? time_value(in->expires_at_ms) : json_null(), "acquired_at",
                  time_value(in->acquired_at_ms), "renewed_at", time_value(in->renewed_at_ms),
                  "renewals", (json_int_t)in->renewals, "granted_by", in->granted_by);
    if (o != NULL && with_secret && in->lease_id[0] != '\0') {
        (void)json_object_set_new(o, "lease_id", json_string(in->lease_id));
    }
    return o;
}

/* Maps an election error to an answer; conflicts carry the current holder. */
static void
send_elect_error(struct gw_req *req, enum action act, int err, const struct elect_info *in,
                 const struct elect *e)
{
    const char *reason = NULL;
    switch (err) {
    case ERR_CONFLICT:
        send_json_value(
            req, 409,
            json_pack("{s:s,s:s,s:I,s:I,s:b}", "error", act == A_ACQUIRE ? "held" : "superseded",
                      "holder", in->holder, "token", (json_int_t)in->token, "expires_in_ms",
                      (json_int_t)(in->live ? in->expires_in_ms : 0), "live", in->live));
        return;
    case ERR_DENIED:
        send_error(req, 403, "denied", "The lease_id does not match this epoch.");
        return;
    case ERR_NOTFOUND:
        send_error(req, 404, "not_found", "No such epoch for this lock.");
        return;
    case ERR_AGAIN:
        (void)elect_ready(e, &reason);
        send_error(req, 503, "unavailable",
                   reason != NULL && reason[0] != '\0' ? reason : "The election is not ready.");
        return;
    case ERR_TIMEOUT:
        send_error(req, 504, "backend_timeout", "The lock store did not answer in time.");
        return;
    case ERR_VERSION:
    case ERR_INVAL:
        send_error(req, 500, "unreadable",
                   "The latest lock file cannot be read; nothing is granted over it.");
        return;
    default:
        send_error(req, 503, "backend", "The lock store could not be reached.");
        return;
    }
}

static void
lcall_free(struct lcall *lc)
{
    buf_cleanup(&lc->body);
    free(lc);
}

/* store_audit_done_fn, registered by revoked(): the record is durable, answer now */
static void
on_revoke_audited(void *arg, int err, const struct store_audit_done *d)
{
    struct lcall *lc = arg;
    (void)d; /* an epoch is revoked once: its record never repeats a run */
    if (err != 0) {
        log_error("req %s: lock %s: the revoke's audit record was not written: %s", lc->request_id,
                  lc->lock, err_str(err));
    }
    if (lc->req != NULL) {
        send_json_value(lc->req, 200, info_json(&lc->info, false));
    }
    lcall_free(lc);
}

/*
 * A revoke ended the lease (info: the epoch and its holder): audited with
 * the admin's name and the holder, answered once the record is committed.
 */
static void
revoked(struct lcall *lc, const struct elect_info *info)
{
    log_info("req %s: lock %s: epoch %llu of %s revoked by %s", lc->request_id, info->lock,
             (unsigned long long)info->token, info->holder,
             lc->admin[0] != '\0' ? lc->admin : "(anonymous)");
    lc->info = *info;
    const struct store_audit_rec rec = {
        .kind = STORE_AUDIT_REVOKED,
        .token = info->token,
        .current = info->token,
        .lock = info->lock,
        .principal = lc->admin,
        .client = lc->client,
        .method = "POST",
        .key = info->holder,
        .operation = "RevokeLease",
        .request_id = lc->request_id,
        .user_agent = lc->user_agent,
    };
    int rc = lc->st != NULL ? store_audit_append(lc->st, &rec, on_revoke_audited, lc) : ERR_INVAL;
    if (rc != 0) {
        on_revoke_audited(lc, rc, NULL);
        return;
    }
    lc->auditing = true;
}

/* elect_done_fn */
static void
on_elect_done(void *arg, int err, const struct elect_info *info)
{
    struct lcall *lc = arg;
    struct gw_req *req = lc->req;
    lc->call = NULL;
    if (err == 0 && lc->act == A_REVOKE) {
        revoked(lc, info);
        return;
    }
    if (req == NULL) {
        lcall_free(lc); /* a revoke whose client left, and which did not go ahead */
        return;
    }
    if (err != 0) {
        send_elect_error(req, lc->act, err, info, lc->e);
    } else {
        if (lc->act == A_ACQUIRE) {
            log_info("req %s: lock %s granted: epoch %llu to %s", gw_req_id(req), info->lock,
                     (unsigned long long)info->token, info->holder);
        }
        send_json_value(req, 200, info_json(info, lc->act == A_ACQUIRE));
    }
    lcall_free(lc);
}

/* gw_req_ops.on_abort: the client hung up (long-polls do this often). */
static void
on_abort(struct gw_req *req, int err, void *arg)
{
    struct lcall *lc = arg;
    (void)req;
    (void)err;
    if (lc->auditing || (lc->act == A_REVOKE && lc->call != NULL)) {
        /* a revoke is never cancelled half-way: it finishes, is audited, then freed */
        lc->req = NULL;
        return;
    }
    if (lc->call != NULL) {
        elect_call_cancel(lc->e, lc->call);
    }
    lcall_free(lc);
}

/* Reads a JSON object's fields; unknown keys are errors (like the config). */
static const char *
check_keys(json_t *o, const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        bool ok = false;
        for (size_t i = 0; allowed[i] != NULL; i++) {
            ok = ok || strcmp(key, allowed[i]) == 0;
        }
        if (!ok) {
            return key;
        }
    }
    return NULL;
}

static int
get_uint(json_t *o, const char *name, uint64_t max, bool required, uint64_t *out)
{
    json_t *v = json_object_get(o, name);
    if (v == NULL) {
        return required ? ERR_NOTFOUND : 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max) {
        return ERR_INVAL;
    }
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static void
start_call(struct lcall *lc)
{
    struct gw_req *req = lc->req;
    char msg[160];
    json_error_t jerr;
    json_t *o = json_loadb(lc->body.data != NULL ? lc->body.data : "", lc->body.len,
                           JSON_REJECT_DUPLICATES, &jerr);
    int rc = 0;

    if (lc->act == A_REVOKE && lc->body.len == 0) {
        o = json_object(); /* a revoke needs no body: "{}" or nothing */
    }

    if (o == NULL || !json_is_object(o)) {
        (void)snprintf(msg, sizeof(msg), "The body must be a JSON object: %.100s",
                       o == NULL ? jerr.text : "not an object");
        goto bad;
    }
    if (lc->act == A_REVOKE) {
        static const char *const keys[] = {NULL};
        const char *unknown = check_keys(o, keys);
        if (unknown != NULL) {
            (void)snprintf(msg, sizeof(msg), "%.64s: unknown field", unknown);
            goto bad;
        }
        rc = elect_revoke(lc->e, lc->lock, on_elect_done, lc, &lc->call);
    } else if (lc->act == A_ACQUIRE) {
        static const char *const keys[] = {"holder", "lease_ms", "wait_ms", NULL};
        uint64_t lease_ms = 0, wait_ms = 0;
        json_t *holder = json_object_get(o, "holder");
        const char *unknown = check_keys(o, keys);
        if (unknown != NULL) {
            (void)snprintf(msg, sizeof(msg), "%.64s: unknown field", unknown);
            goto bad;
        }
        if (!json_is_string(holder)) {
            (void)snprintf(msg, sizeof(msg), "holder: a string is required");
            goto bad;
        }
        if (get_uint(o, "lease_ms", UINT32_MAX, false, &lease_ms) != 0 ||
            get_uint(o, "wait_ms", UINT32_MAX, false, &wait_ms) != 0) {
            (void)snprintf(msg, sizeof(msg), "lease_ms and wait_ms must be non-negative integers");
            goto bad;
        }
        rc = elect_acquire(lc->e, lc->lock, json_string_value(holder), (uint32_t)lease_ms,
                           (uint32_t)wait_ms, on_elect_done, lc, &lc->call);
    } else {
        static const char *const keys[] = {"token", "lease_id", NULL};
        uint64_t token = 0;
        json_t *lease = json_object_get(o, "lease_id");
        const char *unknown = check_keys(o, keys);
        if (unknown != NULL) {
            (void)snprintf(msg, sizeof(msg), "%.64s: unknown field", unknown);
            goto bad;
        }
        if (get_uint(o, "token", INT64_MAX, true, &token) != 0 || token == 0) {
            (void)snprintf(msg, sizeof(msg), "token: a positive integer is required");
            goto bad;
        }
        if (!json_is_string(lease)) {
            (void)snprintf(msg, sizeof(msg), "lease_id: a string is required");
            goto bad;
        }
        if (lc->act == A_RENEW) {
            rc = elect_renew(lc->e, lc->lock, token, json_string_value(lease), on_elect_done, lc,
                             &lc->call);
        } else {
            rc = elect_release(lc->e, lc->lock, token, json_string_value(lease), on_elect_done, lc,
                               &lc->call);
        }
    }
    json_decref(o);
    if (rc != 0) {
        struct elect_info none;
        memset(&none, 0, sizeof(none));
        if (rc == ERR_INVAL) {
            send_error(req, 400, "bad_request",
                       "A field is out of range (holder 1..128 bytes without control "
                       "characters, lease_ms within the configured bounds, lease_id 64 hex "
                       "digits).");
        } else {
            send_elect_error(req, lc->act, rc, &none, lc->e);
        }
        lcall_free(lc);
    }
    return;
bad:
    json_decref(o);
    send_error(req, 400, "bad_request", msg);
    lcall_free(lc);
}

/* gw_req_ops.on_body_ready, and the first read */
static void
on_body_ready(struct gw_req *req, void *arg)
{
    struct lcall *lc = arg;
    char tmp[4096];
    for (;;) {
        ssize_t n = gw_req_body_read(req, tmp, sizeof(tmp));
        if (n == ERR_AGAIN) {
            return;
        }
        if (n < 0) {
            send_error(req, 400, "bad_request", "The request body could not be read.");
            lcall_free(lc);
            return;
        }
        if (n == 0) {
            start_call(lc);
            return;
        }
        if (buf_append(&lc->body, tmp, (size_t)n) != 0) {
            send_error(req, 413, "too_large", "The request body is too large.");
            lcall_free(lc);
            return;
        }
    }
}

static const struct gw_req_ops lcall_ops = {
    .on_body_ready = on_body_ready,
    .on_abort = on_abort,
};

static bool
lock_allowed(const struct gw_principal *p, const char *lock)
{
    if (p == NULL || p->locks == NULL) {
        return true;
    }
    for (char **l = p->locks; *l != NULL; l++) {
        if (strcmp(*l, lock) == 0) {
            return true;
        }
    }
    return false;
}

/* One entry of a page of GET /locks. */
struct lentry {
    struct lpage *pg;        /* its page */
    struct elect_call *call; /* the read in flight, or NULL */
    struct elect_info info;  /* what is known (lease_id always "") */
};

/* A page of GET /locks in progress: the names are read from the election
 * cache; locks not read since the restart are read like GET /locks/NAME. */
struct lpage {
    struct gw_req *req;             /* the request (owned by the server) */
    struct elect *e;                /* the election */
    const struct gw_principal *who; /* the caller (borrowed from the config) */
    struct lentry *ent;             /* the entries, in name order */
    size_t n;                       /* entries used */
    size_t pending;                 /* reads in flight */
    bool more;                      /* names past this page exist */
    char last[ELECT_LOCK_MAX + 1];  /* the last name scanned (the next cursor) */
};

/*
 * Whether principal may see lock in a listing.  Every lock is public to an
 * authenticated principal today; the per-lock visibility rule (roles) goes
 * here, and the page loop below calls it once per scanned lock.  A hidden
 * lock still moves the cursor on, so pages never repeat or stall.
 */
static bool
list_visible(const struct gw_principal *principal, const char *lock)
{
    return gw_api_may_see(principal, lock); /* DESIGN.md "Roles": reads bounded like writes */
}

/* store_elect_each_fn: one name of the page; elect_peek reads the store, so only copy. */
static int
on_name(void *arg, const char *lock, const struct store_elect *se)
{
    struct lpage *pg = arg;
    (void)se;
    str_copy(pg->last, sizeof(pg->last), lock);
    if (!list_visible(pg->who, lock)) {
        return 0;
    }
    struct lentry *en = &pg->ent[pg->n++];
    en->pg = pg;
    str_copy(en->info.lock, sizeof(en->info.lock), lock);
    return 0;
}

static void
lpage_free(struct lpage *pg)
{
    if (pg != NULL) {
        free(pg->ent);
        free(pg);
    }
}

/* The JSON of one listed lock: a lock whose record could not be read says
 * "known":false and "live":null, never a "not live" it cannot know. */
static json_t *
entry_json(const struct elect_info *in)
{
    json_t *o = info_json(in, false);
    if (o == NULL) {
        return NULL;
    }
    bool known = in->known || in->token == 0;
    (void)json_object_set_new(o, "known", json_boolean(known));
    if (!known) {
        (void)json_object_set_new(o, "live", json_null());
    }
    return o;
}

static void
lpage_send(struct lpage *pg)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr != NULL && i < pg->n; i++) {
        if (json_array_append_new(arr, entry_json(&pg->ent[i].info)) != 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    json_t *next = json_null();
    char cursor[GW_CURSOR_MAX + 1];
    if (pg->more && gw_cursor_format(GW_CURSOR_LOCKS, pg->last, cursor) == 0) {
        next = json_string(cursor);
    }
    send_json_value(pg->req, 200,
                    arr == NULL ? NULL
                                : json_pack("{s:o,s:b,s:o}", "locks", arr, "truncated", pg->more,
                                            "next", next));
    lpage_free(pg);
}

/* elect_done_fn of one entry's read */
static void
on_entry_read(void *arg, int err, const struct elect_info *info)
{
    struct lentry *en = arg;
    struct lpage *pg = en->pg;
    en->call = NULL;
    if (err == 0 && info->token >= en->info.token) {
        en->info = *info;
        en->info.lease_id[0] = '\0';
    }
    if (--pg->pending == 0) {
        lpage_send(pg);
    }
}

/* gw_req_ops.on_abort of a page: the client hung up while locks were read. */
static void
on_page_abort(struct gw_req *req, int err, void *arg)
{
    struct lpage *pg = arg;
    (void)req;
    (void)err;
    for (size_t i = 0; i < pg->n; i++) {
        if (pg->ent[i].call != NULL) {
            elect_call_cancel(pg->e, pg->ent[i].call);
        }
    }
    lpage_free(pg);
}

static const struct gw_req_ops lpage_ops = {
    .on_abort = on_page_abort,
};

/* Reads limit= and after= of a listing; answers 400 itself on a bad value. */
static bool
list_params(struct gw_req *req, enum gw_cursor_kind kind, uint32_t *limit,
            char after[ELECT_LOCK_MAX + 1])
{
    const char *query = gw_req_query(req);
    char v[GW_CURSOR_MAX + 2];
    uint64_t n = GW_LIST_DEFAULT;
    after[0] = '\0';
    int rc = gw_s3req_query_get(query, "limit", v, sizeof(v));
    if (rc == 0) {
        rc = parse_u64(v, 1, GW_LIST_MAX, &n);
    }
    if (rc != 0 && rc != ERR_NOTFOUND) {
        send_error(req, 400, "bad_limit", "limit must be an integer in 1..10000.");
        return false;
    }
    rc = gw_s3req_query_get(query, "after", v, sizeof(v));
    if (rc == 0) {
        rc = gw_cursor_parse(kind, v, strlen(v), after);
    }
    if (rc != 0 && rc != ERR_NOTFOUND) {
        send_error(req, 400, "bad_cursor",
                   "after must be the \"next\" of a previous page of this listing.");
        return false;
    }
    *limit = (uint32_t)n;
    return true;
}

static void
list_locks(struct gw_req *req, struct elect *e, struct store *st,
           const struct gw_principal *principal)
{
    uint32_t limit;
    char after[ELECT_LOCK_MAX + 1];
    if (!list_params(req, GW_CURSOR_LOCKS, &limit, after)) {
        return;
    }
    struct lpage *pg = calloc(1, sizeof(*pg));
    if (pg == NULL || (pg->ent = calloc(limit, sizeof(*pg->ent))) == NULL) {
        lpage_free(pg);
        send_error(req, 503, "unavailable", "Out of memory.");
        return;
    }
    pg->req = req;
    pg->e = e;
    pg->who = principal;
    if (st == NULL || store_elect_page(st, after, limit, on_name, pg, &pg->more) != 0) {
        lpage_free(pg);
        send_error(req, 503, "unavailable", "The lock list could not be read.");
        return;
    }
    gw_req_set_ops(req, &lpage_ops, pg);
    pg->pending = 1; /* held by this loop, so no read's callback sends the page early */
    for (size_t i = 0; i < pg->n; i++) {
        struct lentry *en = &pg->ent[i];
        char name[ELECT_LOCK_MAX + 1];
        memcpy(name, en->info.lock, sizeof(name));
        if (elect_peek(e, name, &en->info) != 0) {
            str_copy(en->info.lock, sizeof(en->info.lock), name);
            continue;
        }
        if (en->info.known || en->info.token == 0) {
            continue;
        }
        /* Not read since the restart: read it as GET /locks/NAME would (DESIGN.md
         * "Paged listings"); on failure it stays "known":false. */
        if (elect_get(e, name, 0, 0, on_entry_read, en, &en->call) == 0) {
            pg->pending++;
        }
    }
    if (--pg->pending == 0) {
        lpage_send(pg);
    }
}

static int
query_u64(struct gw_req *req, const char *name, uint64_t max, uint64_t *out)
{
    char v[32];
    int rc = gw_s3req_query_get(gw_req_query(req), name, v, sizeof(v));
    if (rc == ERR_NOTFOUND) {
        return 0;
    }
    return rc == 0 ? parse_u64(v, 0, max, out) : rc;
}

void
gw_api_locks_handle(struct gw_req *req, struct elect *e, struct store *st,
                    const struct gw_principal *principal)
{
    const char *rest = gw_req_path(req) + strlen(LOCKS_PREFIX);
    const char *method = gw_req_method(req);
    char lock[ELECT_LOCK_MAX + 1];
    enum action act;

    if (e == NULL) {
        send_error(req, 503, "unavailable",
                   "No election is configured on this gateway (see \"election\" in the "
                   "configuration).");
        return;
    }
    if (rest[0] == '\0' || strcmp(rest, "/") == 0) {
        if (strcmp(method, "GET") != 0) {
            send_error(req, 405, "method_not_allowed", "Use GET.");
            return;
        }
        list_locks(req, e, st, principal);
        return;
    }
    if (rest[0] != '/') {
        send_error(req, 404, "not_found", "No such gateway API resource.");
        return;
    }
    rest++;
    size_t n = strcspn(rest, "/");
    if (n == 0 || n > ELECT_LOCK_MAX) {
        send_error(req, 400, "bad_request", "Lock names must match [A-Za-z0-9._-]{1,128}.");
        return;
    }
    memcpy(lock, rest, n);
    lock[n] = '\0';
    if (!lock_name_valid(lock)) {
        send_error(req, 400, "bad_request", "Lock names must match [A-Za-z0-9._-]{1,128}.");
        return;
    }
    const char *verb = rest + n;
    if (verb[0] == '\0') {
        act = A_GET;
    } else if (strcmp(verb, "/acquire") == 0) {
        act = A_ACQUIRE;
    } else if (strcmp(verb, "/renew") == 0) {
        act = A_RENEW;
    } else if (strcmp(verb, "/release") == 0) {
        act = A_RELEASE;
    } else if (strcmp(verb, "/revoke") == 0) {
        act = A_REVOKE;
    } else {
        send_error(req, 404, "not_found", "No such lock operation.");
        return;
    }
    if (strcmp(method, act == A_GET ? "GET" : "POST") != 0) {
        send_error(req, 405, "method_not_allowed", act == A_GET ? "Use GET." : "Use POST.");
        return;
    }
    if (act == A_GET && !gw_api_may_see(principal, lock)) {
        send_error(req, 403, "denied", "This principal may not see this lock.");
        return;
    }
    if (act == A_REVOKE && !gw_api_is_admin(principal)) {
        send_error(req, 403, "denied", "Only an admin principal may revoke a lease.");
        return;
    }
    if (act != A_GET && act != A_REVOKE && !lock_allowed(principal, lock)) {
        send_error(req, 403, "denied", "This principal may not hold this lock.");
        return;
    }
    struct lcall *lc = calloc(1, sizeof(*lc));
    if (lc == NULL) {
        send_error(req, 503, "unavailable", "Out of memory.");
        return;
    }
    lc->req = req;
    lc->e = e;
    lc->act = act;
    lc->st = st;
    str_copy(lc->admin, sizeof(lc->admin), principal != NULL ? principal->name : "");
    if (act == A_REVOKE) {
        const char *ua = gw_req_header(req, "user-agent");
        str_copy(lc->client, sizeof(lc->client), gw_req_peer(req));
        str_copy(lc->request_id, sizeof(lc->request_id), gw_req_id(req));
        str_copy(lc->user_agent, sizeof(lc->user_agent), ua != NULL ? ua : "");
    }
    memcpy(lc->lock, lock, n + 1);
    buf_init(&lc->body, LOCKS_MAX_BODY);
    gw_req_set_ops(req, &lcall_ops, lc);
    if (act == A_GET) {
        uint64_t wait_ms = 0, after = 0;
        if (query_u64(req, "wait_ms", UINT32_MAX, &wait_ms) != 0 ||
            query_u64(req, "after", INT64_MAX, &after) != 0) {
            send_error(req, 400, "bad_request", "wait_ms and after must be integers.");
            lcall_free(lc);
            return;
        }
        int rc = elect_get(e, lock, after, (uint32_t)wait_ms, on_elect_done, lc, &lc->call);
        if (rc != 0) {
            struct elect_info none;
            memset(&none, 0, sizeof(none));
            send_elect_error(req, act, rc, &none, e);
            lcall_free(lc);
        }
        return;
    }
    gw_req_body_start(req);
    on_body_ready(req, lc);
}
