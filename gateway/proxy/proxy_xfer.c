/*
 * gateway/proxy/proxy_xfer.c: the upstream transfer of a forwarded request and
 * the request's end (gateway/proxy/proxy_int.h): the transfer's callbacks, the
 * client's and the fence's, the answer to our condition's 412.
 */
#define LOG_MODULE "proxy"
#include "gateway/proxy/proxy_int.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include "common/buf.h"
#include "common/log.h"
#include "common/num.h"
#include "gateway/base/config.h"
#include "gateway/base/inflight.h"
#include "gateway/base/metrics.h"
#include "gateway/fence/fence.h"
#include "gateway/http/access.h"
#include "gateway/http/http.h"
#include "gateway/net/loopctx.h"
#include "gateway/proxy/body.h"
#include "gateway/proxy/cond.h"
#include "gateway/proxy/cond_reply.h"
#include "gateway/proxy/etag_map.h"
#include "gateway/proxy/proxy_hdr.h"
#include "gateway/proxy/refuse.h"
#include "gateway/proxy/upload.h"
#include "gateway/s3/s3req.h"
#include "gateway/s3/s3xml.h"
#include "gateway/s3client/s3client.h"
#include "gateway/upstream/upstream.h"

void
gw_proxy_preq_free(struct preq *p)
{
    if (p == NULL) {
        return;
    }
    gw_upstream_xfer_cancel(p->x);
    gw_cond_head_cancel(p->head);
    if (p->fwd != NULL) {
        p->fwd_free(p->fwd);
    }
    gw_http_fair_transfer_end(p->client); /* the upstream slot is free again */
    gw_fport_release(p->ticket);          /* after the cancel: the write is over at S3 */
    if (p->write_cfg != NULL) {
        gw_inflight_end(p->write_cfg->inflight, gw_loopctx_index(), p->write_slot); /* likewise */
    }
    gw_s3client_msg_cleanup(&p->msg);
    struct gw_proxy *px = p->px;
    bool last_detached = false;
    if (p->detached) {
        TAILQ_REMOVE(&px->detached, p, link);
        px->ndetached--;
        last_detached = px->ndetached == 0;
    }
    free(p->query);
    free(p->s3);
    free(p->mem);
    gw_s3xml_free(p->tap);
    buf_cleanup(&p->answer);
    gw_body_free(p->body);
    GW_GAUGE_DEC(requests_active);
    free(p);
    if (last_detached && px->drain_done != NULL) {
        void (*done)(void *) = px->drain_done;
        px->drain_done = NULL;
        done(px->drain_arg); /* last: it may end the loop */
    }
}

/*
 * The error to answer when a step of our own (checksum, signing, starting the
 * transfer) failed with rc.  The request was parsed, authenticated and
 * classified before those steps, so a refusal there (ERR_INVAL from a libcurl
 * option or the signer's own checks) is the gateway's failure: 500
 * InternalError, never 400 (DESIGN G8).  No memory stays 503, the upstream's
 * failures 502/504, and a size limit the client's headers hit 413.
 */
int
gw_proxy_own_failure(int rc)
{
    switch (rc) {
    case ERR_NOMEM:
    case ERR_AGAIN:
    case ERR_UPSTREAM:
    case ERR_TIMEOUT:
    case ERR_TOOBIG:
        return rc;
    default:
        GW_COUNT(internal_errors);
        return ERR_IO;
    }
}

/* Ends the client's request with an error of our own, or by cutting the
 * connection if the upstream's response head was already sent. */
static void
finish_error(struct preq *p, int err, const char *what)
{
    struct gw_req *req = p->req;
    if (err == ERR_TIMEOUT) {
        GW_COUNT(upstream_errors[GW_UPERR_TIMEOUT]);
    } else if (err == ERR_UPSTREAM) {
        GW_COUNT(upstream_errors[GW_UPERR_CONNECT]);
    }
    struct gw_refusal bf;
    if (p->head_sent) {
        /* Too late for a status: cut the connection so the client sees a
         * truncated body rather than a complete-looking one. */
        gw_resp_abort(req);
    } else if (p->body != NULL && gw_body_fail(p->body, &bf)) {
        /* the body broke its promise (hash, chunk signature, framing): the
         * upstream transfer was cut before its last byte */
        gw_refuse(NULL, req, NULL, NULL, &bf); /* neither audited nor counted */
    } else {
        gw_refuse_err(req, err, what);
    }
    p->req = NULL;
    gw_proxy_preq_free(p);
}

/* ---- conditional writes: the answer to our condition ---- */

/* The map learns from a tracked write's outcome: its new ETag, or to forget the key. */
static void
cond_answered(struct preq *p, int err)
{
    if (p->cond_use != GW_COND_USE_TRACK && p->cond_use != GW_COND_USE_ADD) {
        return;
    }
    if (err != 0 || p->cond_failed) {
        gw_cond_forget(p->px->cond, p->s3->bucket, p->s3->key);
        return;
    }
    gw_cond_record(p->px->cond, p->lock, p->token, p->s3, p->status,
                   p->etag[0] != '\0' ? p->etag : NULL);
    if (p->cond && p->status >= 200 && p->status < 300 && strcmp(p->cond_hdr.value, "*") == 0) {
        gw_cond_bucket_passed(p->px->cond, p->s3->bucket); /* an absence honoured */
    }
}

/* Our condition failed while the token is still the lock's highest. */
static void
cond_slow_down(struct preq *p)
{
    gw_cond_slow_down(p->req, p->s3, p->lock, p->token);
    p->req = NULL;
    gw_proxy_preq_free(p);
}

/* Our condition failed and the token is no longer current (err ERR_FENCED,
 * current the newer token; or ERR_EXPIRED): the store itself stopped a late
 * stale write. */
static void
store_refused(struct preq *p, int err, uint64_t current, bool counted)
{
    gw_cond_store_refused(p->store, p->req, p->s3, p->principal, p->lock, p->token, err, current,
                          counted);
    p->req = NULL;
    gw_proxy_preq_free(p);
}

/* gw_fence_judged_fn: a worker loop's gw_cond_judge, answered by the control loop. */
static void
on_judged(void *arg, int err, uint64_t current)
{
    struct preq *p = arg;
    p->cond_wait = false;
    if (err != 0) {
        store_refused(p, err, current, false);
    } else {
        cond_slow_down(p);
    }
}

/* The store answered 412 to our condition (on_done): is the token still the highest? */
static void
cond_refused(struct preq *p)
{
    uint64_t current = 0;
    if (gw_fport_remote()) {
        /* the fence is a crossing away: on_judged, or gw_proxy_on_cut (superseded or ended) */
        p->cond_wait = true;
        gw_fport_judge(p->ticket, on_judged);
        return;
    }
    switch (gw_cond_judge(p->fence, gw_fport_local(p->ticket), p->lock, p->token, &current)) {
    case GW_COND_SUPERSEDED:
        store_refused(p, ERR_FENCED, current, false);
        return;
    case GW_COND_CURRENT:
        cond_slow_down(p);
        return;
    default:
        /* gw_proxy_on_resume: still current; gw_proxy_on_cut: superseded or ended */
        p->cond_wait = true;
        return;
    }
}

/* gw_cond_head_fn: after the store's 412 to our condition, the key's version
 * now (recorded in the map).  If it is the very version we conditioned on,
 * the store refused a condition that held: it does not honour conditions on
 * this bucket (RGW 16 on a versioned bucket), and no more are sent to it, so
 * the client's retry is forwarded as without them. */
static void
on_cond_learned(void *arg, int err, const struct gw_cond_hdr *hdr)
{
    struct preq *p = arg;
    p->head = NULL;
    p->cond_wait = false;
    if (err == 0 && strcmp(hdr->name, p->cond_hdr.name) == 0 &&
        strcmp(hdr->value, p->cond_hdr.value) == 0) {
        gw_cond_forget(p->px->cond, p->s3->bucket, p->s3->key);
        gw_cond_bucket_ignore(p->px->cond, p->s3->bucket, strcmp(hdr->value, "*") == 0);
    }
    cond_refused(p);
}

/* The store answered 412 to our condition: learn the key's version (HEAD), then judge. */
static void
cond_learn(struct preq *p)
{
    p->cond_wait = true; /* a cut meanwhile is the store's refusal of a stale write */
    if (gw_cond_head(p->px->cond, p->lock, p->token, p->s3->bucket, p->s3->key, on_cond_learned, p,
                     &p->head) != 0) {
        p->cond_wait = false;
        cond_refused(p);
    }
}

/* ---- upstream callbacks (struct gw_xfer_cbs) ---- */

static ssize_t
on_read_body(void *arg, char *dst, size_t len)
{
    struct preq *p = arg;
    ssize_t n;
    bool last_cleared = false;
    if (p->held) {
        /* DESIGN "Write windows" rule 2: the last byte only inside the window */
        if (!gw_fport_may_finish(p->ticket)) {
            p->body_waiting = true;
            return ERR_AGAIN;
        }
        dst[0] = p->held_byte;
        p->held = false;
        last_cleared = true;
        n = 1;
    } else if (p->body == NULL) {
        size_t left = p->mem_len - p->mem_off;
        size_t k = left < len ? left : len;
        if (k > 0) {
            memcpy(dst, p->mem + p->mem_off, k);
        }
        p->mem_off += k;
        n = (ssize_t)k;
    } else {
        n = gw_body_read(p->body, dst, len);
    }
    if (n == ERR_AGAIN) {
        p->body_waiting = true;
        return ERR_AGAIN;
    }
    if (n > 0 && p->ticket != NULL && !last_cleared &&
        p->body_passed + (uint64_t)n == p->body_length && !gw_fport_may_finish(p->ticket)) {
        /* hold the last byte until the fence says the window covers it (resume), or cut */
        p->held_byte = dst[n - 1];
        p->held = true;
        n--;
        if (n == 0) {
            p->body_waiting = true;
            return ERR_AGAIN;
        }
    }
    if (n > 0) {
        GW_COUNT_ADD(bytes_in, (uint64_t)n);
        p->body_passed += (uint64_t)n;
    }
    /* With a known length libcurl asks for no more once it has them all, so
     * "completely handed over" is the count, not an end-of-body read. */
    if (p->ticket != NULL && (n == 0 || p->body_passed == p->body_length)) {
        gw_fport_sent(p->ticket); /* the barrier now waits for it instead of cutting */
    }
    return n;
}

static int
on_head(void *arg, int status, const struct gw_header *headers, size_t n)
{
    struct preq *p = arg;
    struct gw_req *req = p->req;
    int64_t content_length = -1;

    p->status = status;
    uint64_t now = gw_metrics_now_ns(); /* one read: the metrics' and the access log's */
    if (p->sent_ns != 0) {
        gw_metrics_upstream_duration(p->op, now > p->sent_ns ? now - p->sent_ns : 0);
    }
    if (p->cond && status == 412) {
        /* our condition failed: mapped in on_done, before a byte of this answer goes out */
        p->cond_failed = true;
        return 0;
    }
    if (p->cond_use != GW_COND_USE_NONE && status >= 200 && status < 300) {
        for (size_t i = 0; i < n; i++) {
            if (strcasecmp(headers[i].name, "etag") == 0 &&
                gw_etag_map_bare(headers[i].value, p->etag, sizeof(p->etag)) != 0) {
                p->etag[0] = '\0';
            }
        }
    }
    if (p->detached) {
        return 0; /* the client is gone: only the outcome matters */
    }
    gw_access_note_upstream_head(req, status, now);
    gw_resp_start(req, status);
    for (size_t i = 0; i < n; i++) {
        const struct gw_header *h = &headers[i];
        if (strcasecmp(h->name, "content-length") == 0) {
            uint64_t v;
            if (parse_u64(h->value, 0, INT64_MAX, &v) == 0) {
                content_length = (int64_t)v;
            }
            continue;
        }
        if (gw_proxy_hdr_drop_response(h->name)) {
            continue;
        }
        if (gw_resp_header(req, h->name, h->value) != 0) {
            log_warn("req %s: dropped upstream header %s with control bytes", gw_req_id(req),
                     h->name);
        }
    }
    if (status == 204 || status == 304 || (status >= 100 && status < 200)) {
        content_length = p->is_head ? content_length : 0;
    }
    if (p->ticket != NULL) {
        char cur[24];
        cur[fmt_u64(p->token, cur)] = '\0';
        if (gw_resp_header(req, "X-Fencing-Current-Token", cur) != 0) {
            log_warn("req %s: could not add X-Fencing-Current-Token", gw_req_id(req));
        }
    }
    gw_resp_body_begin(req, content_length);
    p->head_sent = true;
    return 0;
}

/* The held answer of a Create (hold_answer) to the client, and the hold
 * dropped.  Returns gw_resp_body_write's code (ERR_AGAIN: queued, over the
 * output limit). */
static int
release_answer(struct preq *p)
{
    int rc = 0;
    if (p->answer.len > 0) {
        rc = gw_resp_body_write(p->req, p->answer.data, p->answer.len);
    }
    buf_cleanup(&p->answer);
    return rc;
}

static int
on_body(void *arg, const char *data, size_t len)
{
    struct preq *p = arg;
    if (p->cond_failed) {
        return 0; /* the 412's document: ours to answer, dropped */
    }
    GW_COUNT_ADD(bytes_out, len);
    if (p->tap != NULL) {
        if (gw_s3xml_feed(p->tap, data, len) != 0) {
            gw_s3xml_free(p->tap); /* not an answer we understand: nothing is recorded */
            p->tap = NULL;
        }
    }
    if (p->detached) {
        return 0; /* the client is gone: discarded */
    }
    int held = 0;
    if (p->hold_answer) {
        if (p->tap != NULL && buf_append(&p->answer, data, len) == 0) {
            return 0; /* written in on_done, after the upload is recorded */
        }
        /* nothing will be recorded: what was held goes out, then the rest as it comes */
        p->hold_answer = false;
        held = release_answer(p);
        if (held != 0 && held != ERR_AGAIN) {
            return held;
        }
    }
    int rc = gw_resp_body_write(p->req, data, len);
    if (rc == 0 && held == ERR_AGAIN) {
        rc = ERR_AGAIN; /* both were queued: over the output limit */
    }
    if (rc == ERR_AGAIN) {
        p->recv_paused = true;
        return ERR_AGAIN;
    }
    return rc;
}

/* The end of a write whose client left after sending all of it (on_abort):
 * record what a multipart answer says, as for an attached client, then
 * release the ticket, which lets newer epochs' writes go (G3). */
static void
end_detached(struct preq *p, int err)
{
    log_info("req %s: upstream outcome of the write its client left: %s, status %d; epoch "
             "barrier released",
             p->reqid, err != 0 ? err_str(err) : "complete", p->status);
    cond_answered(p, err);
    if (p->cond_failed) {
        log_info("req %s: the store refused it: our condition on %s/%s failed (412)", p->reqid,
                 p->s3->bucket, p->s3->key);
    }
    struct gw_upload *u = p->px->uploads;
    if (err == 0 && p->status != 0 && u != NULL && p->query != NULL) {
        gw_upload_response(u, p->lock, p->token, p->s3, p->query, p->status, p->tap);
    }
    gw_proxy_preq_free(p);
}

static void
on_done(void *arg, int err)
{
    struct preq *p = arg;
    p->x = NULL; /* freed by the upstream module after this returns */
    if (p->detached) {
        end_detached(p, err);
        return;
    }
    cond_answered(p, err);
    if (err == 0 && p->cond_failed) {
        cond_learn(p);
        return;
    }
    if (err != 0) {
        log_info("req %s: upstream transfer failed: %s", gw_req_id(p->req), err_str(err));
        finish_error(p, err,
                     err == ERR_TIMEOUT ? "The upstream did not answer in time."
                                        : "The upstream could not be reached.");
        return;
    }
    if (!p->head_sent) {
        finish_error(p, ERR_UPSTREAM, "The upstream sent no response.");
        return;
    }
    struct gw_req *req = p->req;
    struct gw_upload *u = p->px->uploads;
    if (p->ticket != NULL && u != NULL && p->query != NULL) {
        gw_upload_response(u, p->lock, p->token, p->s3, p->query, p->status, p->tap);
    }
    if (p->hold_answer) {
        p->hold_answer = false;
        int rc = release_answer(p);
        if (rc != 0 && rc != ERR_AGAIN) {
            log_info("req %s: the answer could not be written: %s", gw_req_id(req), err_str(rc));
        }
    }
    p->req = NULL;
    gw_proxy_preq_free(p);
    gw_resp_end(req);
}

/* ---- client-side callbacks (struct gw_req_ops) ---- */

static void
on_body_ready(struct gw_req *req, void *arg)
{
    struct preq *p = arg;
    (void)req;
    if (p->body_waiting && p->x != NULL) {
        p->body_waiting = false;
        gw_xfer_resume_send(p->x);
    }
}

static void
on_output_drained(struct gw_req *req, void *arg)
{
    struct preq *p = arg;
    (void)req;
    if (p->recv_paused && p->x != NULL) {
        p->recv_paused = false;
        gw_xfer_resume_recv(p->x);
    }
}

/*
 * The client of a fenced write left after its whole request was handed to the
 * upstream, which may still commit it: the barrier must await that outcome,
 * whatever the client does (G3).  The transfer runs on without req (freed by
 * the server after on_abort), its answer discarded, and its end releases the
 * ticket (end_detached).
 */
static void
detach(struct preq *p, struct gw_req *req)
{
    str_copy(p->reqid, sizeof(p->reqid), gw_req_id(req));
    gw_body_free(p->body); /* it reads from req; every byte of it was read */
    p->body = NULL;
    p->write_cfg = gw_req_write_take(req, &p->write_slot); /* the hold waits for it too */
    p->req = NULL;
    p->detached = true;
    TAILQ_INSERT_TAIL(&p->px->detached, p, link);
    p->px->ndetached++;
    if (p->recv_paused) {
        p->recv_paused = false;
        gw_xfer_resume_recv(p->x); /* last: it may end the transfer and free p */
    }
}

static void
on_abort(struct gw_req *req, int err, void *arg)
{
    struct preq *p = arg;
    GW_COUNT(client_aborts);
    /* body_passed == body_length: the same "completely sent" as on_read_body's (and
     * gw_proxy_start_transfer's for an empty body), so exactly the writes the barrier awaits */
    if (p->ticket != NULL && p->x != NULL && p->body_passed == p->body_length) {
        log_info("req %s: client request aborted (%s) after the whole write was sent; awaiting "
                 "the upstream outcome",
                 gw_req_id(req), err_str(err));
        detach(p, req);
        return;
    }
    log_info("req %s: client request aborted (%s); upstream transfer cancelled", gw_req_id(req),
             err_str(err));
    p->req = NULL;
    gw_proxy_preq_free(p); /* cancels the transfer before its last byte: nothing is committed */
}

static const struct gw_xfer_cbs xfer_cbs;

/* Starts the upstream transfer of a signed request (p->msg). */
int
gw_proxy_start_transfer(struct preq *p)
{
    p->start_pending = false;
    struct gw_xfer_req xr;
    gw_s3client_msg_xfer_req(&p->msg, p->method, p->up_length, &xr);
    /* A HEAD with a query is not a plain HeadObject/HeadBucket: a store may
     * answer it with a body (RGW 16 does for ?acl), which would poison the
     * connection for the next request.  Plain HEADs keep their connection. */
    xr.no_reuse = p->is_head && strchr(xr.url, '?') != NULL;
    if (p->ticket != NULL && p->up_length <= 0) {
        /* no body, or an empty one: the head is the whole request (G3) */
        gw_fport_sent(p->ticket);
    }
    uint64_t now = gw_metrics_now_ns(); /* one read: the metrics' and the access log's */
    if (p->req != NULL) {
        gw_access_note_upstream_start(p->req, now);
    }
    int rc = gw_upstream_xfer_start(p->px->up, &xr, &xfer_cbs, p, &p->x);
    gw_s3client_msg_cleanup(&p->msg); /* the transfer copied what it needs */
    if (rc != 0) {
        return rc;
    }
    GW_COUNT(proxied);
    p->sent_ns = now;
    p->op = gw_req_metrics(p->req)->op;
    if (p->is_write) {
        GW_COUNT(writes);
    }
    return 0;
}

/* gw_fence_cut_fn: a newer epoch was accepted while this write's request was
 * not completely sent (G3).  Closing the transfer before its last byte means
 * S3 never commits it. */
void
gw_proxy_on_cut(void *arg, int err, uint64_t current)
{
    struct preq *p = arg;
    struct gw_req *req = p->req;
    p->ticket = NULL; /* freed by the fence */
    if (p->detached) {
        /* not expected: the barrier cuts only writes not completely sent */
        log_warn("req %s: cut after its client left; transfer cancelled", p->reqid);
        gw_proxy_preq_free(p);
        return;
    }
    if (p->cond_wait) {
        /* after the store's 412: the fence moved on, or the lease ended */
        store_refused(p, err, current, true);
        return;
    }
    gw_upstream_xfer_cancel(p->x);
    p->x = NULL;
    log_info("req %s: cut before its last byte (%s): token %llu, lock %s at %llu", gw_req_id(req),
             err_str(err), (unsigned long long)p->token, p->lock, (unsigned long long)current);
    struct gw_refusal r;
    gw_fence_cut_refusal(err, p->lock, p->token, current, &r);
    if (p->head_sent) {
        /* too late for an answer: recorded, and the connection is cut */
        gw_refuse_cut(p->store, req, p->s3, p->principal, &r);
    } else {
        gw_refuse(p->store, req, p->s3, p->principal, &r);
    }
    p->req = NULL;
    gw_proxy_preq_free(p);
}

/* gw_fence_resume_fn: the window is open again; the held last byte (or the
 * head of a body-less write) may go. */
void
gw_proxy_on_resume(void *arg)
{
    struct preq *p = arg;
    if (p->cond_wait) {
        p->cond_wait = false;
        cond_slow_down(p); /* after the store's 412: the token is still current */
        return;
    }
    if (p->start_pending) {
        int rc = gw_proxy_start_transfer(p);
        if (rc != 0) {
            log_error("req %s: not forwarded: the transfer could not start (%s)", gw_req_id(p->req),
                      err_str(rc));
            finish_error(p, gw_proxy_own_failure(rc), "The request could not be forwarded.");
        }
        return;
    }
    if (p->x != NULL) {
        p->body_waiting = false;
        gw_xfer_resume_send(p->x);
    }
}

const struct gw_req_ops gw_proxy_preq_ops = {
    .on_body_ready = on_body_ready,
    .on_output_drained = on_output_drained,
    .on_abort = on_abort,
};

static const struct gw_xfer_cbs xfer_cbs = {
    .read_body = on_read_body,
    .on_head = on_head,
    .on_body = on_body,
    .on_done = on_done,
};
