#define LOG_MODULE "router"
#include "gateway/proxy/router.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/log.h"
#include "election/elect.h"
#include "gateway/api/api.h"
#include "gateway/api/locks.h"
#include "gateway/api/status_page.h"
#include "gateway/base/config.h"
#include "gateway/base/metrics.h"
#include "gateway/fence/fence.h"
#include "gateway/fence/port.h"
#include "gateway/http/access.h"
#include "gateway/http/http.h"
#include "gateway/http/relay.h"
#include "gateway/net/loopctx.h"
#include "gateway/proxy/auth.h"
#include "gateway/proxy/create_bucket.h"
#include "gateway/proxy/delete_objects.h"
#include "gateway/proxy/proxy.h"
#include "gateway/proxy/refuse.h"
#include "gateway/proxy/upload.h"
#include "gateway/s3/s3req.h"
#include "gateway/upstream/upstream.h"
#include "store/store.h"

static void
send_text(struct gw_req *req, int status, const char *content_type, const char *text)
{
    gw_resp_simple(req, status, content_type, text, strlen(text));
}

/* The operation label of index op (metrics.h): the classifier's names. */
static const char *
op_name(unsigned op)
{
    return op < GW_S3_OP_COUNT ? gw_s3_op_name((enum gw_s3_op)op) : NULL;
}

_Static_assert(GW_S3_OP_COUNT < GW_METRICS_OP_NONE, "metrics.h: GW_METRICS_OPS too small");

/* Whether /readyz answers 200; else text says why (one line). */
static bool
readiness(const struct gw_router *rt, char *text, size_t len)
{
    const char *why = NULL;
    if (!rt->ready) {
        str_copy(text, len, rt->not_ready != NULL ? rt->not_ready : "not ready\n");
        return false;
    }
    if (rt->elect != NULL && !elect_ready(rt->elect, &why)) {
        /* the backend's precondition self-test has not passed: no leases */
        (void)snprintf(text, len, "election not ready: %s\n",
                       why != NULL ? why : "self-test running");
        return false;
    }
    char up_why[GW_UPSTREAM_WHY_MAX];
    if (rt->upstream != NULL && gw_upstream_unreachable(rt->upstream, up_why, sizeof(up_why))) {
        /* the last transfers, on any loop (the streak is the process's), could not connect */
        (void)snprintf(text, len, "upstream unreachable: %s\n", up_why);
        return false;
    }
    str_copy(text, len, "");
    return true;
}

static void
serve_metrics(struct gw_router *rt, struct gw_req *req)
{
    char text[512];
    struct gw_metrics_live live = {.op_name = op_name};
    live.ready = readiness(rt, text, sizeof(text));
    gw_upstream_conns(rt->upstream, &live.upstream_open, &live.upstream_idle);
    if (rt->store != NULL) {
        struct store_stats st;
        store_stats_get(rt->store, &st);
        live.audit_queue_depth = st.queue_depth;
        live.audit_appended = st.audit_appended;
    }
    /* the text's bound grows with the locks that may have series (metrics.h) */
    const struct gw_config *cfg = gw_req_config(req);
    live.fences_digest = cfg->fences_digest;
    live.config_generation = cfg->generation;
    struct buf b;
    buf_init(&b, GW_METRICS_RENDER_BASE +
                     (cfg->metrics.max_locks + cfg->nfences + 2) * GW_METRICS_RENDER_PER_LOCK);
    if (gw_metrics_render(&b, &live) != 0) {
        buf_cleanup(&b);
        gw_refuse_err(req, ERR_NOMEM, "Could not render metrics.");
        return;
    }
    gw_resp_simple(req, 200, "text/plain; version=0.0.4", b.data, b.len);
    buf_cleanup(&b);
}

/* GET /_fencegate/: the status page (gateway/api/status_page.c), with what only we know. */
static void
status_page(struct gw_router *rt, struct gw_req *req)
{
    char why[512];
    const struct gw_config *cfg = gw_req_config(req);
    struct gw_status_ready rd = {
        .ready = readiness(rt, why, sizeof(why)),
        .why = why,
        .upstream = cfg->upstream.endpoint,
        .upstream_ok = rt->upstream == NULL || !gw_upstream_unreachable(rt->upstream, NULL, 0),
        .gateway = cfg->gateway_id,
    };
    gw_status_page_handle(req, rt->elect, rt->store, &rd);
}

static void
serve_healthz(struct gw_router *rt, struct gw_req *req)
{
    (void)rt;
    send_text(req, 200, "text/plain", "ok\n");
}

static void
serve_readyz(struct gw_router *rt, struct gw_req *req)
{
    char text[512];
    if (readiness(rt, text, sizeof(text))) {
        send_text(req, 200, "text/plain", "ready\n");
    } else {
        send_text(req, 503, "text/plain", text);
    }
}

/*
 * The gateway's own operator endpoints (README "Running it in production"):
 * GET or HEAD, unauthenticated, answered before S3 parsing.  With
 * admin_listen set they are served on the admin listeners only (so a
 * path-style bucket of the same name works on the S3 ones); without it, on
 * the S3 listeners, where they shadow those bucket names.  A new operator
 * page is one more row.
 */
static const struct {
    const char *path;                                        /* exact path */
    void (*serve)(struct gw_router *rt, struct gw_req *req); /* answers req */
} own_endpoints[] = {
    {"/healthz", serve_healthz},
    {"/readyz", serve_readyz},
    {"/metrics", serve_metrics},
};

/* The gateway's own endpoints.  Returns true if req was answered. */
static bool
serve_own(struct gw_router *rt, struct gw_req *req, const char *method, const char *path)
{
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        return false;
    }
    for (size_t i = 0; i < sizeof(own_endpoints) / sizeof(own_endpoints[0]); i++) {
        if (strcmp(path, own_endpoints[i].path) == 0) {
            own_endpoints[i].serve(rt, req);
            return true;
        }
    }
    return false;
}

/*
 * Where a request goes by its listener (admin_listen): true if answered here.
 * An admin listener serves the operator endpoints and the JSON API (the admin
 * API among it); everything else there is 404.  An S3 listener of a gateway
 * with admin listeners serves neither the operator endpoints nor the admin
 * API (404 for the latter; the former are S3 paths there).
 */
static bool
route_by_listener(struct gw_router *rt, struct gw_req *req, const char *method, const char *path)
{
    enum gw_listener kind = gw_req_listener(req);
    if (kind != GW_LISTENER_S3 && serve_own(rt, req, method, path)) {
        return true;
    }
    bool api = strncmp(path, "/_fencegate/", 12) == 0;
    if (kind == GW_LISTENER_ADMIN && !api) {
        send_text(req, 404, "text/plain",
                  "not found: this is the admin listener (/healthz, /readyz, /metrics, "
                  "/_fencegate/); S3 is served on the listen addresses\n");
        return true;
    }
    if (kind == GW_LISTENER_S3 && gw_api_is_admin_path(path)) {
        send_text(req, 404, "text/plain",
                  "not found: the admin API is served on the admin listener (admin_listen)\n");
        return true;
    }
    return false;
}

/*
 * On a worker loop (rt->relay set): what only the control loop serves,
 * because it reads the election, the fence's tables or the probes: the
 * gateway's paths (the JSON API, the status page) and its operator
 * endpoints, where this listener serves them.  Decided before anything is
 * counted: the control loop counts and serves it as its own.
 */
static bool
control_only(struct gw_req *req, const char *method, const char *path)
{
    if (strncmp(path, "/_fencegate", 11) == 0 && (path[11] == '\0' || path[11] == '/')) {
        return true;
    }
    if (gw_req_listener(req) == GW_LISTENER_S3 ||
        (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)) {
        return false;
    }
    for (size_t i = 0; i < sizeof(own_endpoints) / sizeof(own_endpoints[0]); i++) {
        if (strcmp(path, own_endpoints[i].path) == 0) {
            return true;
        }
    }
    return false;
}

/* Hands req to the control loop's server (gateway/http/relay.h). */
static void
to_control(struct gw_router *rt, struct gw_req *req)
{
    int rc = gw_relay_request(rt->relay, req);
    if (rc != 0) {
        gw_refuse_err(req, rc, "The gateway is shutting down or out of memory.");
    }
}

/* A fenced write waiting for its verdict (gw_fence_admit). */
struct pending {
    struct gw_router *rt;           /* the router */
    struct gw_req *req;             /* the request (owned by the server) */
    struct gw_s3req s3;             /* its parse */
    struct gw_auth auth;            /* its authentication (holds a signing key: wiped) */
    struct gw_fence_claim claim;    /* what it claims */
    struct gw_fport_ticket *ticket; /* its place in the lock's queue */
    struct buf body;                /* a buffered body (DeleteObjects), else empty */
    bool buffered;                  /* forward body from memory, not from the client */
};

static void
pending_free(struct pending *pd)
{
    gw_auth_cleanup(&pd->auth);
    gw_s3req_cleanup(&pd->s3);
    buf_cleanup(&pd->body);
    free(pd);
}

static const char *
principal_name(const struct gw_auth *auth)
{
    return auth->principal != NULL ? auth->principal->name : "";
}

/* The store for refusals' audit records: none when nothing is fenced (tests). */
static struct store *
audit_store(const struct gw_router *rt)
{
    return rt->fence != NULL ? rt->store : NULL;
}

/* principal_holds - the principal may write under lock (its locks name it, or it has none). */
static bool
principal_holds(const struct gw_auth *auth, const char *lock)
{
    if (auth->principal == NULL || auth->principal->locks == NULL) {
        return true;
    }
    for (char **l = auth->principal->locks; *l != NULL; l++) {
        if (strcmp(*l, lock) == 0) {
            return true;
        }
    }
    return false;
}

/*
 * lock_not_held - the lock of a fence rule covering one of keys (n of them,
 * in bucket) that the principal does not hold, or NULL: a principal writes
 * under no rule of a lock outside its `locks`, with or without a token.
 */
static const char *
lock_not_held(const struct gw_config *cfg, const struct gw_auth *auth, const char *bucket,
              const char *const *keys, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct gw_fence_rule *r = gw_config_fence_rule(cfg, bucket, keys[i]);
        if (r != NULL && !principal_holds(auth, r->lock)) {
            return r->lock;
        }
    }
    return NULL;
}

/* copy_source_allowed - a copy reads only from a bucket the principal's `buckets` name. */
static bool
copy_source_allowed(struct gw_req *req, const struct gw_auth *auth)
{
    const char *src = gw_req_header(req, "x-amz-copy-source");
    if (src == NULL || auth->principal == NULL || auth->principal->buckets == NULL) {
        return true;
    }
    src += *src == '/';
    size_t n = strcspn(src, "/?"); /* compared as sent: an encoded name matches nothing */
    for (char **b = auth->principal->buckets; *b != NULL; b++) {
        if (strlen(*b) == n && memcmp(*b, src, n) == 0) {
            return true;
        }
    }
    return false;
}

static const char msg_not_held[] =
    "This principal may not write under this lock (its locks do not name the lock whose rule "
    "covers this key).";

/* gw_req_ops.on_abort: the client left while its write waited for the fence. */
static void
on_pending_abort(struct gw_req *req, int err, void *arg)
{
    struct pending *pd = arg;
    (void)req;
    (void)err;
    gw_fport_release(pd->ticket);
    pending_free(pd);
}

static const struct gw_req_ops pending_ops = {
    .on_abort = on_pending_abort,
};

/* gw_fence_cut_fn: cannot happen before admission; kept for the contract. */
static void
on_pending_cut(void *arg, int err, uint64_t current)
{
    (void)arg;
    (void)err;
    (void)current;
}

/* gw_fence_admit_fn */
static void
on_admitted(void *arg, int err, uint64_t current)
{
    struct pending *pd = arg;
    struct gw_req *req = pd->req;
    struct gw_fence *fence = pd->rt->fence;
    const struct gw_fence_claim *c = &pd->claim;

    uint64_t created = 0;
    if (err == 0 && pd->rt->uploads != NULL) {
        /* a new leader must not add to or commit an older epoch's upload */
        err = gw_upload_check(pd->rt->uploads, c->lock, c->token, &pd->s3, gw_req_query(req),
                              &created);
        if (err == ERR_FENCED) {
            /* a write into an upload of another epoch than its token */
            gw_fport_release(pd->ticket);
            struct gw_refusal r;
            gw_fence_upload_refusal(c, created, &r);
            gw_refuse(audit_store(pd->rt), req, &pd->s3, principal_name(&pd->auth), &r);
            pending_free(pd);
            return;
        }
        if (err != 0) {
            gw_fport_release(pd->ticket);
        }
    }
    if (err != 0) {
        struct gw_refusal r;
        gw_fence_refusal(err, c, current, &r);
        gw_refuse(audit_store(pd->rt), req, &pd->s3, principal_name(&pd->auth), &r);
    } else {
        struct gw_proxy_fence pf = {
            .fence = fence,
            .store = audit_store(pd->rt),
            .ticket = pd->ticket,
            .lock = c->lock,
            .token = c->token,
        };
        if (pd->buffered) {
            gw_proxy_forward_body(pd->rt->proxy, req, &pd->s3, &pd->auth, &pf, pd->body.data,
                                  pd->body.len);
        } else {
            gw_proxy_forward(pd->rt->proxy, req, &pd->s3, &pd->auth, &pf);
        }
    }
    pending_free(pd);
}

/* The request's fencing headers, for gw_fence_resolve. */
static void
fence_headers(struct gw_req *req, struct gw_fence_headers *h)
{
    h->lock = gw_req_header(req, "x-fencing-lock");
    h->meta_lock = gw_req_header(req, "x-amz-meta-fencing-lock");
    h->token = gw_req_header(req, "x-fencing-token");
    h->meta_token = gw_req_header(req, "x-amz-meta-fencing-token");
}

static void admit(struct gw_router *rt, struct gw_req *req, const struct gw_s3req *s3,
                  const struct gw_auth *auth, const struct gw_fence_claim *c, struct buf *body);
static gw_delete_objects_fn on_delete_objects_read;

/* Fenced writes wait for the fence's verdict; everything else is forwarded now. */
static void
fence_then_forward(struct gw_router *rt, struct gw_req *req, const struct gw_s3req *s3,
                   const struct gw_auth *auth)
{
    struct gw_fence_claim claim;
    struct gw_refusal refusal;

    const struct gw_config *cfg = gw_req_config(req);
    if (s3->object_write) {
        /* counted from this turn: a reload's hold on a lock that now covers its key
         * waits for it, fenced or not (gateway/base/inflight.h) */
        gw_req_write_begin(req, s3->bucket);
    }
    if (s3->bucket_write && !cfg->fencing.allow_bucket_writes) {
        if (s3->op == GW_S3_OP_CREATE_BUCKET && rt->relay != NULL) {
            to_control(rt, req); /* the probe is the control loop's */
        } else if (s3->op == GW_S3_OP_CREATE_BUCKET) {
            /* "ensure the bucket" (rclone): as S3 answers */
            gw_create_bucket_start(rt->probe, audit_store(rt), req, s3, principal_name(auth));
        } else {
            gw_create_bucket_refuse(audit_store(rt), req, s3, principal_name(auth));
        }
        return;
    }
    if ((s3->op == GW_S3_OP_COPY_OBJECT || s3->op == GW_S3_OP_UPLOAD_PART_COPY) &&
        !copy_source_allowed(req, auth)) {
        gw_refuse_classified(audit_store(rt), req, s3, principal_name(auth), NULL, 403,
                             "AccessDenied",
                             "This principal may not read the copy source's bucket.");
        return;
    }
    const char *key = s3->key;
    const char *not_held = s3->object_write ? lock_not_held(cfg, auth, s3->bucket, &key, 1) : NULL;
    if (not_held != NULL) {
        gw_refuse_classified(audit_store(rt), req, s3, principal_name(auth), not_held, 403,
                             "AccessDenied", msg_not_held);
        return;
    }
    if (rt->fence == NULL) {
        gw_proxy_forward(rt->proxy, req, s3, auth, NULL);
        return;
    }
    if (s3->op == GW_S3_OP_DELETE_OBJECTS) {
        /* the keys are in the body */
        gw_delete_objects_start(req, s3, auth, audit_store(rt), on_delete_objects_read, rt);
        return;
    }
    struct gw_fence_headers fh;
    fence_headers(req, &fh);
    int rc = gw_fence_resolve(&fh, cfg, s3, &claim, &refusal);
    if (claim.by_upload && rt->uploads != NULL) {
        /* a tokenless write into an upload the gateway saw created: its epoch */
        uint64_t epoch = 0;
        int ur = gw_upload_claim(rt->uploads, claim.lock, s3, gw_req_query(req), &epoch);
        if (ur == 0) {
            log_debug("req %s: claimed with its upload's epoch %llu under lock %s", gw_req_id(req),
                      (unsigned long long)epoch, claim.lock);
            claim.fenced = true;
            claim.token = epoch;
            claim.complete = s3->op == GW_S3_OP_COMPLETE_MULTIPART;
            rc = 0;
        } else if (ur != ERR_NOTFOUND) {
            gw_refuse_reply(req, 503, "ServiceUnavailable",
                            "The multipart upload's fencing epoch could not be read; nothing was "
                            "forwarded. Retry later.");
            return;
        }
    }
    if (rc != 0) {
        gw_refuse(audit_store(rt), req, s3, principal_name(auth), &refusal);
        return;
    }
    if (!claim.fenced) {
        gw_proxy_forward(rt->proxy, req, s3, auth, NULL);
        return;
    }
    admit(rt, req, s3, auth, &claim, NULL);
}

/*
 * A fenced write asks the fence for its verdict; on admission it is
 * forwarded (from body, moved into the pending write, when not NULL).
 */
static void
admit(struct gw_router *rt, struct gw_req *req, const struct gw_s3req *s3,
      const struct gw_auth *auth, const struct gw_fence_claim *c, struct buf *body)
{
    struct gw_fence_claim claim = *c;
    if (!principal_holds(auth, claim.lock)) {
        gw_refuse_classified(audit_store(rt), req, s3, principal_name(auth), claim.lock, 403,
                             "AccessDenied", "This principal may not write under this lock.");
        return;
    }
    struct pending *pd = calloc(1, sizeof(*pd));
    if (pd == NULL) {
        gw_refuse_err(req, ERR_NOMEM, "Out of memory.");
        return;
    }
    pd->rt = rt;
    pd->req = req;
    pd->s3 = *s3;
    pd->auth = *auth;
    pd->claim = claim;
    buf_init(&pd->body, 0);
    if (body != NULL) {
        pd->body = *body; /* moved */
        buf_init(body, 0);
        pd->buffered = true;
    }
    gw_req_set_ops(req, &pending_ops, pd);
    log_debug("req %s: token %llu of lock %s asks the fence on loop %u", gw_req_id(req),
              (unsigned long long)claim.token, claim.lock,
              gw_loopctx_here != NULL ? gw_loopctx_here->index : 0);
    int rc = gw_fport_admit(rt->fence, &claim, gw_req_id(req), principal_name(auth), on_admitted,
                            on_pending_cut, pd, &pd->ticket);
    if (rc == GW_FENCE_ADMITTED) {
        on_admitted(pd, 0, claim.token);
    } else if (rc != 0) {
        pending_free(pd);
        gw_refuse_err(req, rc, "The fence could not be checked.");
    }
}

/* gw_delete_objects_fn: a DeleteObjects' keys, fenced as one write under one lock. */
static void
on_delete_objects_read(void *arg, struct gw_req *req, const struct gw_s3req *s3,
                       const struct gw_auth *auth, const char *const *keys, size_t n,
                       struct buf *doc)
{
    struct gw_router *rt = arg;
    const struct gw_config *cfg = gw_req_config(req);
    const char *not_held = lock_not_held(cfg, auth, s3->bucket, keys, n);
    if (not_held != NULL) {
        gw_refuse_classified(audit_store(rt), req, s3, principal_name(auth), not_held, 403,
                             "AccessDenied", msg_not_held);
        return;
    }
    struct gw_fence_claim claim;
    struct gw_refusal refusal;
    struct gw_fence_headers fh;
    fence_headers(req, &fh);
    if (gw_fence_resolve_keys(&fh, cfg, s3, keys, n, &claim, &refusal) != 0) {
        gw_refuse(audit_store(rt), req, s3, principal_name(auth), &refusal);
    } else if (!claim.fenced) {
        gw_proxy_forward_body(rt->proxy, req, s3, auth, NULL, doc->data, doc->len);
    } else {
        admit(rt, req, s3, auth, &claim, doc);
    }
}

/*
 * Whether the body is longer than limits.max_object_bytes (S3's 5 GiB for
 * PutObject and UploadPart, the largest body any S3 call takes): refused
 * before anything is forwarded, as S3 does, instead of streaming it upstream
 * to be refused there.  aws-chunked bodies count their decoded length.
 */
static bool
too_large(struct gw_req *req, const struct gw_auth *auth)
{
    uint64_t max = gw_req_config(req)->limits.max_object_bytes;
    if (max == 0) {
        max = GW_MAX_OBJECT_BYTES;
    }
    if (auth->payload == GW_PAYLOAD_CHUNKED_SIGNED ||
        auth->payload == GW_PAYLOAD_CHUNKED_SIGNED_TRL ||
        auth->payload == GW_PAYLOAD_CHUNKED_UNSIGNED_TRL) {
        return auth->decoded_length > max;
    }
    int64_t len = gw_req_content_length(req);
    return len > 0 && (uint64_t)len > max;
}

void
gw_router_on_request(struct gw_req *req, void *arg)
{
    struct gw_router *rt = arg;
    const char *method = gw_req_method(req);
    const char *path = gw_req_path(req);

    if (!gw_req_relayed(req)) {
        GW_COUNT(requests); /* on the loop that took it from its client, once */
    }
    if (rt->relay != NULL && control_only(req, method, path)) {
        /* counted here by its operation (the control loop counts it in no request metric) */
        gw_metrics_req_set_op(gw_req_metrics(req), GW_S3_OP_GATEWAY_API);
        to_control(rt, req);
        return;
    }
    struct gw_metrics_req *m = gw_req_metrics(req);
    gw_metrics_req_set_op(m, GW_S3_OP_GATEWAY_API);
    if (route_by_listener(rt, req, method, path)) {
        return;
    }
    struct gw_s3req s3;
    struct gw_s3req_in in = {
        .method = method,
        .path = path,
        .query = gw_req_query(req),
        .host = gw_req_header(req, "host"),
        .copy_source = gw_req_header(req, "x-amz-copy-source") != NULL,
        .virtual_host_domains = gw_req_config(req)->virtual_host_domains,
        .content_type = gw_req_header(req, "content-type"),
        .method_override = gw_req_header(req, "x-http-method-override") != NULL ||
                           gw_req_header(req, "x-http-method") != NULL ||
                           gw_req_header(req, "x-method-override") != NULL,
        .operator_paths_s3 = gw_req_listener(req) == GW_LISTENER_S3,
    };
    int parsed = gw_s3req_parse(&in, &s3);
    gw_metrics_req_set_op(m, s3.op); /* a request refused here keeps what was found */
    if (parsed == 0 || parsed == ERR_DENIED) {
        gw_access_note_s3(req, s3.name, s3.bucket, s3.key);
    }
    if (parsed != 0 && parsed != ERR_DENIED) {
        gw_refuse_reply(req, s3.refuse_status, s3.refuse_code, s3.refuse_msg);
        return;
    }
    struct gw_auth auth;
    struct gw_refusal fail;
    int rc = gw_auth_check(req, gw_req_config(req), &s3, rt->kc, &auth, &fail);
    if (rc != 0) {
        if (rc == ERR_NOMEM) {
            gw_refuse_err(req, ERR_NOMEM, "Out of memory.");
        } else {
            gw_refuse(NULL, req, &s3, NULL, &fail); /* neither audited nor counted */
        }
        gw_auth_cleanup(&auth);
        gw_s3req_cleanup(&s3);
        return;
    }
    if (auth.principal != NULL) {
        gw_access_note_principal(req, auth.principal->name);
    }
    log_debug("req %s: %s %s bucket=%s principal=%s", gw_req_id(req), method, s3.name, s3.bucket,
              auth.principal != NULL ? auth.principal->name : "(anonymous)");
    if (parsed == ERR_DENIED) {
        /* not classified exactly (G9): refused, whoever asks; after authentication, so the
         * audit names the principal and strangers cannot fill the audit log */
        gw_refuse_classified(audit_store(rt), req, &s3, principal_name(&auth), NULL,
                             s3.refuse_status, s3.refuse_code, s3.refuse_msg);
    } else if (s3.op != GW_S3_OP_GATEWAY_API && too_large(req, &auth)) {
        gw_refuse_reply(req, 400, "EntityTooLarge",
                        "Your proposed upload exceeds the maximum allowed object size.");
    } else if (s3.op == GW_S3_OP_GATEWAY_API && strncmp(path, "/_fencegate/v1/locks", 20) == 0 &&
               (path[20] == '\0' || path[20] == '/')) {
        gw_api_locks_handle(req, rt->elect, rt->store, auth.principal);
    } else if (s3.op == GW_S3_OP_GATEWAY_API &&
               (strcmp(path, "/_fencegate/") == 0 || strcmp(path, "/_fencegate") == 0)) {
        /* authenticated like the JSON API; it shows every lock, so admins only */
        if (gw_api_is_admin(auth.principal)) {
            status_page(rt, req);
        } else {
            send_text(req, 403, "application/json",
                      "{\"error\":\"denied\",\"message\":\"the status page shows every lock: "
                      "admin principals only\"}\n");
        }
    } else if (s3.op == GW_S3_OP_GATEWAY_API) {
        gw_api_handle(req, rt->store, auth.principal); /* authenticated like everything else */
    } else {
        fence_then_forward(rt, req, &s3, &auth);
    }
    gw_auth_cleanup(&auth);
    gw_s3req_cleanup(&s3);
}
