#define LOG_MODULE "proxy"
#include "gateway/proxy/cond_reply.h"

#include <stddef.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/log.h"
#include "gateway/base/metrics.h"
#include "gateway/fence/fence.h"
#include "gateway/http/http.h"
#include "gateway/proxy/refuse.h"
#include "gateway/s3/s3err.h"
#include "gateway/s3/s3req.h"
#include "store/store.h"

enum gw_cond_verdict
gw_cond_judge(struct gw_fence *fence, struct gw_fence_ticket *ticket, const char *lock,
              uint64_t token, uint64_t *current)
{
    *current = 0;
    if (gw_fence_current(fence, lock, current) == 0 && *current > token) {
        return GW_COND_SUPERSEDED;
    }
    /* this gateway knows of nothing newer: the window says whether another may */
    if (gw_fence_ticket_may_finish(ticket)) {
        return GW_COND_CURRENT;
    }
    return GW_COND_UNDECIDED;
}

void
gw_cond_reply_slowdown(struct gw_req *req, const char *message)
{
    struct buf body;
    char bare[GW_S3ERR_BARE_MAX];
    size_t len = 0;
    buf_init(&body, GW_S3ERR_MAX_BODY);
    const char *doc = gw_s3err_build(&body, bare, &len, "SlowDown", message, gw_req_path(req),
                                     gw_req_id(req), NULL, 0);
    gw_resp_start(req, 503);
    if (gw_resp_header(req, "Content-Type", "application/xml") != 0 ||
        gw_resp_header(req, "Retry-After", "1") != 0) {
        log_warn("req %s: a header of the answer was dropped", gw_req_id(req));
    }
    gw_resp_body_begin(req, (int64_t)len);
    int rc = gw_resp_body_write(req, doc, len);
    if (rc != 0 && rc != ERR_AGAIN) { /* ERR_AGAIN: queued anyway */
        log_debug("req %s: %s", gw_req_id(req), err_str(rc));
    }
    gw_resp_end(req);
    buf_cleanup(&body);
}

/* The key changed under the same epoch (another gateway, an unfenced writer).
 * The map forgot it; the client's retry learns its new ETag with a HEAD. */
void
gw_cond_slow_down(struct gw_req *req, const struct gw_s3req *s3, const char *lock, uint64_t token)
{
    GW_COUNT(cond_slowdowns);
    log_info("req %s: the store refused our condition on %s/%s (412) while token %llu of lock "
             "%s is current: 503 SlowDown, the retry learns the key's new version",
             gw_req_id(req), s3->bucket, s3->key, (unsigned long long)token, lock);
    gw_cond_reply_slowdown(req, "The object changed since this gateway last saw it. Please retry.");
}

void
gw_cond_store_refused(struct store *st, struct gw_req *req, const struct gw_s3req *s3,
                      const char *principal, const char *lock, uint64_t token, int err,
                      uint64_t current, bool counted)
{
    struct gw_refusal r;
    gw_fence_cut_refusal(err, lock, token, current, &r);
    if (r.status == 409) {
        r.audit = STORE_AUDIT_STORE_REFUSED;
        r.message = "The store refused this late write: a newer write of the key came first and "
                    "the fencing token is no longer current.";
        r.count = counted ? GW_REFUSAL_UNCOUNTED : GW_REFUSAL_FENCE;
        GW_COUNT(cond_store_refused);
    }
    log_info("req %s: the store refused the write of %s/%s (412) with token %llu of lock %s, "
             "now at %llu: %d %s",
             gw_req_id(req), s3->bucket, s3->key, (unsigned long long)token, lock,
             (unsigned long long)current, r.status, r.code);
    gw_refuse(st, req, s3, principal, &r);
}
