#define LOG_MODULE "refuse"
#include "gateway/proxy/refuse.h"

#include <stdio.h>

#include "common/buf.h"
#include "common/log.h"
#include "gateway/base/metrics.h"
#include "gateway/http/http.h"
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
    struct buf body;
    char bare[GW_S3ERR_BARE_MAX];
    size_t len = 0;
    buf_init(&body, GW_S3ERR_MAX_BODY);
    const char *doc = gw_s3err_build(&body, bare, &len, r->code, r->message, gw_req_path(req),
                                     gw_req_id(req), r->tokens ? extra : NULL, r->tokens ? 3 : 0);
    gw_resp_simple(req, r->status, "application/xml", doc, len);
    buf_cleanup(&body);
}

/* Queues r's audit record (G7). */
static int
audit(struct store *st, struct gw_req *req, const struct gw_s3req *s3, const char *principal,
      const struct gw_refusal *r)
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
    };
    int rc = store_audit_append(st, &rec, NULL, NULL);
    if (rc != 0) {
        log_error("req %s: audit record (%s, lock %s) not queued: %s", gw_req_id(req),
                  store_audit_kind_name(rec.kind), lock, err_str(rc));
        gw_metrics.audit_failures++;
    }
    return rc;
}

int
gw_refuse_record(struct store *st, struct gw_req *req, const struct gw_s3req *s3,
                 const char *principal, const struct gw_refusal *r)
{
    if (r->count == GW_REFUSAL_FENCE) {
        gw_metrics.fence_rejections++;
    } else if (r->count == GW_REFUSAL_CLASSIFY) {
        gw_metrics.classify_refusals++;
    }
    if (r->count == GW_REFUSAL_UNCOUNTED && r->audit == 0) {
        return 0;
    }
    if (r->tokens) {
        log_info("req %s: %s %s refused (%d %s), lock %s token %llu current %llu: %s",
                 gw_req_id(req), gw_req_method(req), s3->name, r->status, r->code,
                 r->lock != NULL ? r->lock : "", (unsigned long long)r->token,
                 (unsigned long long)r->current, r->message);
    } else {
        log_info("req %s: %s %s refused (%d %s): %s", gw_req_id(req), gw_req_method(req), s3->name,
                 r->status, r->code, r->message);
    }
    return r->audit != 0 && st != NULL ? audit(st, req, s3, principal, r) : 0;
}

void
gw_refuse(struct store *st, struct gw_req *req, const struct gw_s3req *s3, const char *principal,
          const struct gw_refusal *r)
{
    if (gw_refuse_record(st, req, s3, principal, r) != 0) {
        /* G7: no refusal without its record; the client retries, nothing was forwarded */
        gw_refuse_reply(req, 503, "SlowDown",
                        "This write was refused, but its audit record could not be queued; "
                        "nothing was forwarded. Please reduce your request rate.");
        return;
    }
    reply(req, r);
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
