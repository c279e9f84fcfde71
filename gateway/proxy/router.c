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
#include "gateway/base/config.h"
#include "gateway/base/metrics.h"
#include "gateway/fence/fence.h"
#include "gateway/http/http.h"
#include "gateway/proxy/auth.h"
#include "gateway/proxy/body.h"
#include "gateway/proxy/proxy.h"
#include "gateway/proxy/refuse.h"
#include "gateway/proxy/upload.h"
#include "gateway/s3/s3req.h"
#include "gateway/s3/s3xml.h"
#include "gateway/upstream/bucket_probe.h"
#include "gateway/upstream/upstream.h"
#include "store/store.h"

static void
send_text(struct gw_req *req, int status, const char *content_type, const char *text)
{
    gw_resp_simple(req, status, content_type, text, strlen(text));
}

static void
serve_metrics(struct gw_router *rt, struct gw_req *req)
{
    (void)rt;
    struct buf b;
    buf_init(&b, (size_t)64 * 1024);
    if (gw_metrics_render(&b) != 0) {
        buf_cleanup(&b);
        gw_refuse_err(req, ERR_NOMEM, "Could not render metrics.");
        return;
    }
    gw_resp_simple(req, 200, "text/plain; version=0.0.4", b.data, b.len);
    buf_cleanup(&b);
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
    const char *why = NULL;
    if (!rt->ready) {
        send_text(req, 503, "text/plain", rt->not_ready != NULL ? rt->not_ready : "not ready\n");
    } else if (rt->elect != NULL && !elect_ready(rt->elect, &why)) {
        /* the backend's precondition self-test has not passed: no leases */
        char text[512];
        (void)snprintf(text, sizeof(text), "election not ready: %s\n",
                       why != NULL ? why : "self-test running");
        send_text(req, 503, "text/plain", text);
    } else if (rt->upstream != NULL && gw_upstream_unreachable(rt->upstream, &why)) {
        /* the last transfers could not connect: this gateway cannot forward */
        char text[512];
        (void)snprintf(text, sizeof(text), "upstream unreachable: %s\n", why);
        send_text(req, 503, "text/plain", text);
    } else {
        send_text(req, 200, "text/plain", "ready\n");
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

/* A fenced write waiting for its verdict (gw_fence_admit). */
struct pending {
    struct gw_router *rt;           /* the router */
    struct gw_req *req;             /* the request (owned by the server) */
    struct gw_s3req s3;             /* its parse */
    struct gw_auth auth;            /* its authentication (holds a signing key: wiped) */
    struct gw_fence_claim claim;    /* what it claims */
    struct gw_fence_ticket *ticket; /* its place in the lock's queue */
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

/*
 * refuse_audited - refuse a request before the fence (G9: not classified
 * exactly, a bucket-level write, a principal's bounds): counted, audited as
 * "refused" (G7: never answered without its record), never forwarded.
 */
static void
refuse_audited(struct gw_router *rt, struct gw_req *req, const struct gw_s3req *s3,
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
    gw_refuse(audit_store(rt), req, s3, principal, &r);
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
    gw_fence_ticket_release(pd->ticket);
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
    if (err == 0 && gw_fence_uploads(fence) != NULL) {
        /* a new leader must not add to or commit an older epoch's upload */
        err = gw_upload_check(gw_fence_uploads(fence), c->lock, c->token, &pd->s3,
                              gw_req_query(req), &created);
        if (err == ERR_FENCED) {
            /* a write into an upload of another epoch than its token */
            gw_fence_ticket_release(pd->ticket);
            struct gw_refusal r;
            gw_fence_upload_refusal(c, created, &r);
            gw_refuse(audit_store(pd->rt), req, &pd->s3, principal_name(&pd->auth), &r);
            pending_free(pd);
            return;
        }
        if (err != 0) {
            gw_fence_ticket_release(pd->ticket);
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

/* ---- CreateBucket of a bucket that exists: answered as S3 does ---- */

/* A CreateBucket waiting for the HEAD of its bucket. */
struct mkbucket {
    struct gw_router *rt;          /* the router */
    struct gw_req *req;            /* the request (owned by the server) */
    struct gw_bucket_probe_op *op; /* the HEAD in flight */
    struct gw_s3req s3;            /* its parse (bucket, for the log and the audit) */
    char principal[128];           /* its principal's name, for the audit */
};

/* Ops of a CreateBucket no longer waiting. */
static const struct gw_req_ops mkbucket_idle_ops = {0};

static void
bucket_writes_refused(struct gw_router *rt, struct gw_req *req, const struct gw_s3req *s3,
                      const char *principal)
{
    refuse_audited(rt, req, s3, principal, NULL, 403, "AccessDenied",
                   "Bucket-level writes are disabled on this gateway "
                   "(fencing.allow_bucket_writes).");
}

/* gw_bucket_probe_fn: the bucket exists for the upstream credentials, or not. */
static void
on_mkbucket_probed(void *arg, int err, int status)
{
    struct mkbucket *mb = arg;
    struct gw_req *req = mb->req;
    gw_req_set_ops(req, &mkbucket_idle_ops, NULL);
    if (err == 0 && status == 200) {
        /* us-east-1 (and RGW) answer a CreateBucket of one's own bucket with 200 */
        log_info("req %s: CreateBucket of existing bucket %s answered 200", gw_req_id(req),
                 mb->s3.bucket);
        char location[GW_S3_MAX_BUCKET + 2];
        (void)snprintf(location, sizeof(location), "/%s", mb->s3.bucket);
        gw_resp_start(req, 200);
        if (gw_resp_header(req, "Location", location) != 0) {
            log_debug("req %s: Location header not added", gw_req_id(req));
        }
        gw_resp_body_begin(req, 0);
        gw_resp_end(req);
    } else if (err != 0 || status >= 500) {
        gw_refuse_reply(req, 503, "ServiceUnavailable",
                        "Whether the bucket exists could not be checked; retry later.");
    } else {
        /* no such bucket, or not the upstream credentials' */
        bucket_writes_refused(mb->rt, req, &mb->s3, mb->principal);
    }
    free(mb);
}

/* gw_req_ops.on_abort: the client left while its bucket was probed. */
static void
on_mkbucket_abort(struct gw_req *req, int err, void *arg)
{
    struct mkbucket *mb = arg;
    (void)req;
    (void)err;
    gw_bucket_probe_cancel(mb->op);
    free(mb);
}

static const struct gw_req_ops mkbucket_ops = {
    .on_abort = on_mkbucket_abort,
};

/*
 * Whether a CreateBucket only "ensures" its bucket: no body (no
 * LocationConstraint) and no header that would configure the bucket (ACLs
 * other than the default "private", which rclone sends; object lock,
 * ownership).  Nothing is forwarded: the existing bucket is left as it is.
 */
static bool
mkbucket_plain(struct gw_req *req)
{
    const char *cl = gw_req_header(req, "content-length");
    if ((cl != NULL && strcmp(cl, "0") != 0) || gw_req_header(req, "transfer-encoding") != NULL) {
        return false;
    }
    const char *acl = gw_req_header(req, "x-amz-acl");
    if (acl != NULL && strcmp(acl, "private") != 0) {
        return false;
    }
    static const char *const configuring[] = {
        "x-amz-grant-full-control", "x-amz-grant-read",      "x-amz-grant-read-acp",
        "x-amz-grant-write",        "x-amz-grant-write-acp", "x-amz-bucket-object-lock-enabled",
        "x-amz-object-ownership",
    };
    for (size_t i = 0; i < sizeof(configuring) / sizeof(configuring[0]); i++) {
        if (gw_req_header(req, configuring[i]) != NULL) {
            return false;
        }
    }
    return true;
}

/* CreateBucket with bucket writes disabled: 200 if the bucket exists, else 403. */
static void
mkbucket_start(struct gw_router *rt, struct gw_req *req, const struct gw_s3req *s3,
               const struct gw_auth *auth)
{
    if (!mkbucket_plain(req) || s3->bucket[0] == '\0') {
        bucket_writes_refused(rt, req, s3, principal_name(auth));
        return;
    }
    struct mkbucket *mb = calloc(1, sizeof(*mb));
    if (mb == NULL) {
        gw_refuse_err(req, ERR_NOMEM, "Out of memory.");
        return;
    }
    mb->rt = rt;
    mb->req = req;
    mb->s3 = *s3;
    (void)snprintf(mb->principal, sizeof(mb->principal), "%s", principal_name(auth));
    int rc = gw_bucket_probe_head(rt->probe, s3->bucket, on_mkbucket_probed, mb, &mb->op);
    if (rc != 0) {
        free(mb);
        gw_refuse_reply(req, 503, "ServiceUnavailable",
                        "Whether the bucket exists could not be checked; retry later.");
        return;
    }
    gw_req_set_ops(req, &mkbucket_ops, mb);
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
static void delobj_start(struct gw_router *rt, struct gw_req *req, const struct gw_s3req *s3,
                         const struct gw_auth *auth);

/* Fenced writes wait for the fence's verdict; everything else is forwarded now. */
static void
fence_then_forward(struct gw_router *rt, struct gw_req *req, const struct gw_s3req *s3,
                   const struct gw_auth *auth)
{
    struct gw_fence_claim claim;
    struct gw_refusal refusal;

    const struct gw_config *cfg = gw_req_config(req);
    if (s3->bucket_write && !cfg->fencing.allow_bucket_writes) {
        if (s3->op == GW_S3_OP_CREATE_BUCKET && rt->probe != NULL) {
            mkbucket_start(rt, req, s3, auth); /* "ensure the bucket" (rclone): as S3 answers */
        } else {
            bucket_writes_refused(rt, req, s3, principal_name(auth));
        }
        return;
    }
    if ((s3->op == GW_S3_OP_COPY_OBJECT || s3->op == GW_S3_OP_UPLOAD_PART_COPY) &&
        !copy_source_allowed(req, auth)) {
        refuse_audited(rt, req, s3, principal_name(auth), NULL, 403, "AccessDenied",
                       "This principal may not read the copy source's bucket.");
        return;
    }
    const char *key = s3->key;
    const char *not_held = s3->object_write ? lock_not_held(cfg, auth, s3->bucket, &key, 1) : NULL;
    if (not_held != NULL) {
        refuse_audited(rt, req, s3, principal_name(auth), not_held, 403, "AccessDenied",
                       msg_not_held);
        return;
    }
    if (rt->fence == NULL) {
        gw_proxy_forward(rt->proxy, req, s3, auth, NULL);
        return;
    }
    if (s3->op == GW_S3_OP_DELETE_OBJECTS) {
        delobj_start(rt, req, s3, auth); /* the keys are in the body */
        return;
    }
    struct gw_fence_headers fh;
    fence_headers(req, &fh);
    int rc = gw_fence_resolve(&fh, cfg, s3, &claim, &refusal);
    if (claim.by_upload && gw_fence_uploads(rt->fence) != NULL) {
        /* a tokenless write into an upload the gateway saw created: its epoch */
        uint64_t epoch = 0;
        int ur =
            gw_upload_claim(gw_fence_uploads(rt->fence), claim.lock, s3, gw_req_query(req), &epoch);
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
        refuse_audited(rt, req, s3, principal_name(auth), claim.lock, 403, "AccessDenied",
                       "This principal may not write under this lock.");
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
    int rc = gw_fence_admit(rt->fence, &claim, gw_req_id(req), principal_name(auth), on_admitted,
                            on_pending_cut, pd, &pd->ticket);
    if (rc != 0) {
        pending_free(pd);
        gw_refuse_err(req, rc, "The fence could not be checked.");
    }
}

/* ---- DeleteObjects: one write, every key under the same lock ---- */

/* Cap on a DeleteObjects document (S3 allows 1000 keys; 1 MiB holds them). */
#define DELOBJ_MAX_BYTES ((size_t)1024 * 1024)
#define DELOBJ_MAX_KEYS  1000

/* A DeleteObjects whose body is being read before the fence can judge it. */
struct delobj {
    struct gw_router *rt; /* the router */
    struct gw_req *req;   /* the request (owned by the server) */
    struct gw_s3req s3;   /* its parse */
    struct gw_auth auth;  /* its authentication (holds a signing key: wiped) */
    struct gw_body *body; /* the body filter (hash, aws-chunked) */
    struct buf xml;       /* the document so far (cap DELOBJ_MAX_BYTES) */
};

static void
delobj_free(struct delobj *d)
{
    gw_body_free(d->body);
    gw_auth_cleanup(&d->auth);
    gw_s3req_cleanup(&d->s3);
    buf_cleanup(&d->xml);
    free(d);
}

/* Ops of a DeleteObjects no longer reading its body (answered or handed on). */
static const struct gw_req_ops delobj_idle_ops = {0};

static void
delobj_refuse(struct delobj *d, int status, const char *code, const char *message)
{
    gw_req_set_ops(d->req, &delobj_idle_ops, NULL);
    gw_req_set_close(d->req); /* the rest of the body is not read */
    gw_refuse_reply(d->req, status, code, message);
    delobj_free(d);
}

/* A document the gateway cannot read exactly (or too big to): a G9 refusal, audited. */
static void
delobj_malformed(struct delobj *d, const char *message)
{
    gw_req_set_ops(d->req, &delobj_idle_ops, NULL);
    gw_req_set_close(d->req); /* the rest of the body may not have been read */
    refuse_audited(d->rt, d->req, &d->s3, principal_name(&d->auth), NULL, 400, "MalformedXML",
                   message);
    delobj_free(d);
}

/* The whole document is here: find its keys, then fence it as one write. */
static void
delobj_judge(struct delobj *d)
{
    struct gw_router *rt = d->rt;
    struct gw_req *req = d->req;
    gw_req_set_ops(req, &delobj_idle_ops, NULL);
    struct gw_s3xml *x = gw_s3xml_new(DELOBJ_MAX_KEYS, DELOBJ_MAX_BYTES);
    if (x == NULL) {
        gw_refuse_err(req, ERR_NOMEM, "Out of memory.");
        delobj_free(d);
        return;
    }
    int rc = gw_s3xml_feed(x, d->xml.data, d->xml.len);
    if (rc == 0) {
        rc = gw_s3xml_finish(x);
    }
    size_t n = 0;
    const char *const *keys = gw_s3xml_keys(x, &n);
    const char *not_held = NULL;
    if (rc == ERR_NOMEM) {
        gw_refuse_err(req, ERR_NOMEM, "Out of memory.");
        delobj_free(d);
    } else if (rc != 0 || gw_s3xml_root(x) != GW_S3XML_ROOT_DELETE || n == 0) {
        delobj_malformed(d,
                         "The XML you provided was not well-formed or did not validate against "
                         "the DeleteObjects schema (1 to 1000 keys; exactly Delete, Object, Key, "
                         "VersionId and Quiet, without prefixes).");
    } else if ((not_held = lock_not_held(gw_req_config(req), &d->auth, d->s3.bucket, keys, n)) !=
               NULL) {
        refuse_audited(rt, req, &d->s3, principal_name(&d->auth), not_held, 403, "AccessDenied",
                       msg_not_held);
        delobj_free(d);
    } else {
        struct gw_fence_claim claim;
        struct gw_refusal refusal;
        struct gw_fence_headers fh;
        fence_headers(req, &fh);
        if (gw_fence_resolve_keys(&fh, gw_req_config(req), &d->s3, keys, n, &claim, &refusal) !=
            0) {
            gw_refuse(audit_store(rt), req, &d->s3, principal_name(&d->auth), &refusal);
        } else if (!claim.fenced) {
            gw_proxy_forward_body(rt->proxy, req, &d->s3, &d->auth, NULL, d->xml.data, d->xml.len);
        } else {
            admit(rt, req, &d->s3, &d->auth, &claim, &d->xml);
        }
        delobj_free(d);
    }
    gw_s3xml_free(x);
}

/* Reads what the client has sent; judges the document at its end. */
static void
delobj_pump(struct delobj *d)
{
    char chunk[16384];
    for (;;) {
        ssize_t n = gw_body_read(d->body, chunk, sizeof(chunk));
        if (n == ERR_AGAIN) {
            return; /* on_delobj_body_ready follows */
        }
        if (n == 0) {
            delobj_judge(d);
            return;
        }
        if (n < 0) {
            struct gw_refusal bf;
            if (gw_body_fail(d->body, &bf)) {
                delobj_refuse(d, bf.status, bf.code, bf.message);
            } else {
                gw_req_set_ops(d->req, &delobj_idle_ops, NULL);
                gw_req_set_close(d->req);
                gw_refuse_err(d->req, (int)n, "The request body could not be read.");
                delobj_free(d);
            }
            return;
        }
        int rc = buf_append(&d->xml, chunk, (size_t)n);
        if (rc == ERR_NOMEM) {
            gw_req_set_ops(d->req, &delobj_idle_ops, NULL);
            gw_refuse_err(d->req, ERR_NOMEM, "Out of memory.");
            delobj_free(d);
            return;
        }
        if (rc != 0) {
            delobj_malformed(d, "The DeleteObjects document is larger than this gateway accepts "
                                "(1 MiB).");
            return;
        }
    }
}

/* gw_req_ops.on_body_ready: more of the DeleteObjects document arrived. */
static void
on_delobj_body_ready(struct gw_req *req, void *arg)
{
    struct delobj *d = arg;
    (void)req;
    delobj_pump(d);
}

/* gw_req_ops.on_abort: the client left while its document was being read. */
static void
on_delobj_abort(struct gw_req *req, int err, void *arg)
{
    struct delobj *d = arg;
    (void)req;
    (void)err;
    delobj_free(d);
}

static const struct gw_req_ops delobj_ops = {
    .on_body_ready = on_delobj_body_ready,
    .on_abort = on_delobj_abort,
};

/* DeleteObjects under fencing: buffer the document (capped), then judge it. */
static void
delobj_start(struct gw_router *rt, struct gw_req *req, const struct gw_s3req *s3,
             const struct gw_auth *auth)
{
    struct delobj *d = calloc(1, sizeof(*d));
    if (d == NULL) {
        gw_refuse_err(req, ERR_NOMEM, "Out of memory.");
        return;
    }
    d->rt = rt;
    d->req = req;
    d->s3 = *s3;
    d->auth = *auth;
    buf_init(&d->xml, DELOBJ_MAX_BYTES);
    d->body = gw_body_new(req, auth, false); /* read into memory here */
    if (d->body == NULL) {
        gw_refuse_err(req, ERR_NOMEM, "Out of memory.");
        delobj_free(d);
        return;
    }
    int64_t len = gw_body_upstream_length(d->body);
    if (len > (int64_t)DELOBJ_MAX_BYTES) {
        delobj_malformed(d,
                         "The DeleteObjects document is larger than this gateway accepts (1 MiB).");
        return;
    }
    gw_req_set_ops(req, &delobj_ops, d);
    gw_req_body_start(req);
    delobj_pump(d);
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

    gw_metrics.requests++;
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
    log_debug("req %s: %s %s bucket=%s principal=%s", gw_req_id(req), method, s3.name, s3.bucket,
              auth.principal != NULL ? auth.principal->name : "(anonymous)");
    if (parsed == ERR_DENIED) {
        /* not classified exactly (G9): refused, whoever asks; after authentication, so the
         * audit names the principal and strangers cannot fill the audit log */
        refuse_audited(rt, req, &s3, principal_name(&auth), NULL, s3.refuse_status, s3.refuse_code,
                       s3.refuse_msg);
    } else if (s3.op != GW_S3_OP_GATEWAY_API && too_large(req, &auth)) {
        gw_refuse_reply(req, 400, "EntityTooLarge",
                        "Your proposed upload exceeds the maximum allowed object size.");
    } else if (s3.op == GW_S3_OP_GATEWAY_API && strncmp(path, "/_fencegate/v1/locks", 20) == 0 &&
               (path[20] == '\0' || path[20] == '/')) {
        gw_api_locks_handle(req, rt->elect, rt->store, auth.principal);
    } else if (s3.op == GW_S3_OP_GATEWAY_API) {
        gw_api_handle(req, rt->store, auth.principal); /* authenticated like everything else */
    } else {
        fence_then_forward(rt, req, &s3, &auth);
    }
    gw_auth_cleanup(&auth);
    gw_s3req_cleanup(&s3);
}
