#define LOG_MODULE "proxy"
#include "gateway/proxy/proxy.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <time.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/num.h"
#include "gateway/base/config.h"
#include "gateway/base/metrics.h"
#include "gateway/fence/fence.h"
#include "gateway/http/access.h"
#include "gateway/http/http.h"
#include "gateway/proxy/auth.h"
#include "gateway/proxy/body.h"
#include "gateway/proxy/cond.h"
#include "gateway/proxy/cond_reply.h"
#include "gateway/proxy/etag_map.h"
#include "gateway/proxy/proxy_hdr.h"
#include "gateway/proxy/refuse.h"
#include "gateway/proxy/upload.h"
#include "gateway/s3/checksum.h"
#include "gateway/s3/s3req.h"
#include "gateway/s3/s3xml.h"
#include "gateway/s3/sigv4.h"
#include "gateway/s3client/s3client.h"
#include "gateway/upstream/upstream.h"
#include "store/store.h"

/* Content-Encoding headers rewritten (aws-chunked removed) on one request. */
#define PROXY_MAX_CE    4
#define PROXY_MAX_QUERY 65536 /* limits.max_url_bytes is at most this */

struct preq;
struct fwd;
static void fwd_free(struct fwd *f);
static void on_cond_head(void *arg, int err, const struct gw_cond_hdr *hdr);

struct gw_proxy {
    const struct gw_config *cfg; /* borrowed; in force for new requests */
    struct gw_upstream *up;      /* borrowed */
    struct gw_s3client *s3c;     /* borrowed; the one signer: addressing, SigV4, reload */
    bool trailers;               /* the upstream takes aws-chunked checksum trailers */
    struct gw_upload *uploads;   /* borrowed; multipart bookkeeping, or NULL */
    struct gw_cond *cond;        /* owned; conditional writes: the ETag map, HEADs */
    /* owned; fenced writes running on without their client (on_abort) */
    TAILQ_HEAD(preq_list, preq) detached;
};

/* One forwarded request. */
struct preq {
    struct gw_proxy *px;  /* the proxy */
    struct gw_req *req;   /* the client request (owned by the server) */
    struct gw_xfer *x;    /* the upstream transfer, NULL once done or cancelled */
    struct gw_body *body; /* the request-body filter (checks hashes, decodes aws-chunked);
                             NULL when the body was buffered (mem) */
    char *mem;            /* owned; a body already read and checked (gw_proxy_forward_body) */
    size_t mem_len;       /* its length */
    size_t mem_off;       /* bytes of it handed to the upstream */
    bool body_waiting;    /* read_body returned ERR_AGAIN: resume on body_ready */
    bool recv_paused;     /* on_body returned ERR_AGAIN: resume on output drained */
    bool head_sent;       /* the response head went to the client */
    bool is_head;         /* a HEAD request: no response body */
    uint64_t body_length; /* bytes the upstream's Content-Length announces */
    uint64_t body_passed; /* bytes handed to the upstream so far */
    struct gw_fence_ticket *ticket;   /* fenced write: its ticket, NULL otherwise */
    struct gw_fence *fence;           /* fenced write: its fence (upload bookkeeping) */
    struct store *store;              /* fenced write: for the audit of a cut, or NULL */
    struct gw_s3req *s3;              /* fenced write: a copy, for the audit of a cut */
    char lock[GW_FENCE_LOCK_MAX + 1]; /* fenced write: the lock */
    char etag[GW_ETAG_MAX + 1];       /* fenced write: the answer's ETag (bare), "" if none */
    uint64_t token;                   /* fenced write: the admitted token */
    char principal[64];               /* fenced write: for the audit */
    struct gw_s3xml *tap;      /* owned; fenced Create/Complete: the answer parsed on its way */
    char *query;               /* owned; fenced Create/Complete/Abort: the raw query, for
                                  gw_upload_response (also once the client is gone) */
    int status;                /* the upstream's status */
    uint64_t sent_ns;          /* monotonic ns the transfer started; 0 before */
    unsigned op;               /* the request's operation index (metrics.h) */
    enum gw_cond_use cond_use; /* what conditional writes do with it (gateway/proxy/cond.h) */
    bool cond;                 /* a condition of ours rides on it */
    bool cond_failed;          /* the store answered 412 to it: nothing goes to the client */
    bool cond_wait;            /* after that 412: the fence says whether the token is current */
    bool held;                 /* fenced: the body's last byte is held for a write window */
    char held_byte;            /* ... that byte */
    bool start_pending;        /* fenced, body-less: the head waits for a write window */
    /* the signed upstream request until its transfer starts */
    struct gw_s3client_msg msg;
    const char *method;          /* the client's method (borrowed from req) */
    int64_t up_length;           /* the upstream body length, -1 for none */
    bool is_write;               /* for the metrics */
    struct gw_client *client;    /* its address's transfer share (gw_http_fair_transfer_begin) */
    bool detached;               /* the client left after the whole request was sent: the transfer
                                    runs on for the barrier (G3), its answer discarded */
    char reqid[24];              /* detached: the request id, for the log */
    struct gw_cond_head *head;   /* the HEAD for the key's ETag while it runs */
    struct fwd *fwd;             /* owned while the HEAD runs: the steps left to forward */
    struct gw_cond_hdr cond_hdr; /* our condition */
    /* detached: in px->detached */
    TAILQ_ENTRY(preq) link;
};

struct gw_proxy *
gw_proxy_new(const struct gw_config *cfg, struct gw_upstream *up, struct gw_s3client *s3c,
             char *errbuf, size_t errlen)
{
    struct gw_proxy *px = calloc(1, sizeof(*px));
    if (px == NULL) {
        (void)snprintf(errbuf, errlen, "out of memory");
        return NULL;
    }
    TAILQ_INIT(&px->detached);
    px->cfg = cfg;
    px->up = up;
    px->s3c = s3c;
    px->cond = gw_cond_new(cfg, s3c);
    if (px->cond == NULL) {
        (void)snprintf(errbuf, errlen, "out of memory");
        gw_proxy_free(px);
        return NULL;
    }
    if (s3c == NULL) {
        (void)snprintf(errbuf, errlen, "no upstream signer");
        gw_proxy_free(px);
        return NULL;
    }
    return px;
}

void
gw_proxy_set_config(struct gw_proxy *px, const struct gw_config *cfg)
{
    px->cfg = cfg; /* the signer is reloaded by its owner (gw_s3client_set_config) */
    gw_cond_set_config(px->cond, cfg);
}

void
gw_proxy_set_cond_caps(struct gw_proxy *px, const struct gw_cond_caps *caps)
{
    gw_cond_set_caps(px->cond, caps);
}

bool
gw_proxy_cond_active(const struct gw_proxy *px)
{
    return gw_cond_active(px->cond);
}

void
gw_proxy_set_uploads(struct gw_proxy *px, struct gw_upload *u)
{
    px->uploads = u;
}

void
gw_proxy_set_trailers(struct gw_proxy *px, bool on)
{
    px->trailers = on;
}

bool
gw_proxy_trailers(const struct gw_proxy *px)
{
    return px->trailers;
}

static void preq_free(struct preq *p);

void
gw_proxy_free(struct gw_proxy *px)
{
    if (px == NULL) {
        return;
    }
    while (!TAILQ_EMPTY(&px->detached)) {
        preq_free(TAILQ_FIRST(&px->detached)); /* shutting down: cancelled, tickets released */
    }
    gw_cond_free(px->cond);
    free(px);
}

static void
preq_free(struct preq *p)
{
    if (p == NULL) {
        return;
    }
    gw_upstream_xfer_cancel(p->x);
    gw_cond_head_cancel(p->head);
    fwd_free(p->fwd);
    gw_http_fair_transfer_end(p->client); /* the upstream slot is free again */
    gw_fence_ticket_release(p->ticket);   /* after the cancel: the write is over at S3 */
    gw_s3client_msg_cleanup(&p->msg);
    if (p->detached) {
        TAILQ_REMOVE(&p->px->detached, p, link);
    }
    free(p->query);
    free(p->s3);
    free(p->mem);
    gw_s3xml_free(p->tap);
    gw_body_free(p->body);
    GW_GAUGE_DEC(requests_active);
    free(p);
}

/*
 * The error to answer when a step of our own (checksum, signing, starting the
 * transfer) failed with rc.  The request was parsed, authenticated and
 * classified before those steps, so a refusal there (ERR_INVAL from a libcurl
 * option or the signer's own checks) is the gateway's failure: 500
 * InternalError, never 400 (DESIGN G8).  No memory stays 503, the upstream's
 * failures 502/504, and a size limit the client's headers hit 413.
 */
static int
own_failure(int rc)
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
    preq_free(p);
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
}

/* Our condition failed while the token is still the lock's highest. */
static void
cond_slow_down(struct preq *p)
{
    gw_cond_slow_down(p->req, p->s3, p->lock, p->token);
    p->req = NULL;
    preq_free(p);
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
    preq_free(p);
}

/* The store answered 412 to our condition (on_done): is the token still the highest? */
static void
cond_refused(struct preq *p)
{
    uint64_t current = 0;
    switch (gw_cond_judge(p->fence, p->ticket, p->lock, p->token, &current)) {
    case GW_COND_SUPERSEDED:
        store_refused(p, ERR_FENCED, current, false);
        return;
    case GW_COND_CURRENT:
        cond_slow_down(p);
        return;
    default:
        p->cond_wait = true; /* on_resume: still current; on_cut: superseded or ended */
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
        gw_cond_bucket_ignore(p->px->cond, p->s3->bucket);
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
        if (!gw_fence_ticket_may_finish(p->ticket)) {
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
        p->body_passed + (uint64_t)n == p->body_length && !gw_fence_ticket_may_finish(p->ticket)) {
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
        gw_fence_ticket_sent(p->ticket); /* the barrier now waits for it instead of cutting */
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
        (void)snprintf(cur, sizeof(cur), "%llu", (unsigned long long)p->token);
        if (gw_resp_header(req, "X-Fencing-Current-Token", cur) != 0) {
            log_warn("req %s: could not add X-Fencing-Current-Token", gw_req_id(req));
        }
    }
    gw_resp_body_begin(req, content_length);
    p->head_sent = true;
    return 0;
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
    int rc = gw_resp_body_write(p->req, data, len);
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
    preq_free(p);
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
    p->req = NULL;
    preq_free(p);
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
    (void)snprintf(p->reqid, sizeof(p->reqid), "%s", gw_req_id(req));
    gw_body_free(p->body); /* it reads from req; every byte of it was read */
    p->body = NULL;
    p->req = NULL;
    p->detached = true;
    TAILQ_INSERT_TAIL(&p->px->detached, p, link);
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
    /* body_passed == body_length: the same "completely sent" as on_read_body's
     * (and start_transfer's for an empty body), so exactly the writes the barrier awaits */
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
    preq_free(p); /* cancels the transfer before its last byte: nothing is committed */
}

static const struct gw_xfer_cbs xfer_cbs;

/* Starts the upstream transfer of a signed request (p->msg). */
static int
start_transfer(struct preq *p)
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
        gw_fence_ticket_sent(p->ticket);
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
static void
on_cut(void *arg, int err, uint64_t current)
{
    struct preq *p = arg;
    struct gw_req *req = p->req;
    p->ticket = NULL; /* freed by the fence */
    if (p->detached) {
        /* not expected: the barrier cuts only writes not completely sent */
        log_warn("req %s: cut after its client left; transfer cancelled", p->reqid);
        preq_free(p);
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
    preq_free(p);
}

/* gw_fence_resume_fn: the window is open again; the held last byte (or the
 * head of a body-less write) may go. */
static void
on_resume(void *arg)
{
    struct preq *p = arg;
    if (p->cond_wait) {
        p->cond_wait = false;
        cond_slow_down(p); /* after the store's 412: the token is still current */
        return;
    }
    if (p->start_pending) {
        int rc = start_transfer(p);
        if (rc != 0) {
            log_error("req %s: not forwarded: the transfer could not start (%s)", gw_req_id(p->req),
                      err_str(rc));
            finish_error(p, own_failure(rc), "The request could not be forwarded.");
        }
        return;
    }
    if (p->x != NULL) {
        p->body_waiting = false;
        gw_xfer_resume_send(p->x);
    }
}

static const struct gw_req_ops preq_ops = {
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

/* ---- building the upstream request ---- */

/* How a step of forward ended when it did not succeed. */
enum fwd_end {
    FWD_OK = 0,
    FWD_FAIL,  /* the client's request: logged at info, answered from rc and what */
    FWD_OURS,  /* our own failure: logged as an error, answered 5xx */
    FWD_QUIET, /* already answered (p->req cleared) */
    FWD_WAIT,  /* waiting for the key's ETag (a HEAD): on_cond_head goes on */
};

/* What forward works out for one request, step by step. */
struct fwd {
    struct gw_proxy *px;
    struct gw_req *req;
    const struct gw_s3req *s3;
    const struct gw_auth *auth;
    const char *mem; /* the body read into memory (DeleteObjects), or NULL: streamed */
    size_t mem_len;
    struct preq *p;
    const char *what; /* the answer's message when a step fails */
    int rc;
    int64_t body_length; /* upstream body length, -1 for none */
    bool chunked;        /* the client sent aws-chunked framing */
    const char *trailer; /* the re-framed body's trailer header, or NULL */
    enum gw_checksum_alg ck_alg;
    char ck_value[GW_CHECKSUM_B64_MAX];
    bool drop_sdk_alg;
    struct gw_sigv4_header *extra; /* the forwarded headers (before signing) */
    size_t ne;
    char ce[PROXY_MAX_CE][256 + 16]; /* "aws-chunked, " + the rest of a coding list */
    size_t nce;
    char ce_rest[256];
    char decoded[24];
    char epoch[24];
    struct buf query;                  /* the client's query less presigned credentials */
    enum gw_payload payload;           /* auth->payload, for fwd_sign (auth may be gone) */
    char sha256[GW_SIGV4_HEX_LEN + 1]; /* auth->sha256, the same */
};

/* fwd_bind - the request context, its share of upstream transfers, the fence ticket. */
static enum fwd_end
fwd_bind(struct fwd *f, const struct gw_proxy_fence *fenced)
{
    struct preq *p = f->p;
    GW_COUNT(requests_active);
    gw_s3client_msg_init(&p->msg);
    p->px = f->px;
    p->req = f->req;
    p->is_head = strcmp(gw_req_method(f->req), "HEAD") == 0;
    gw_req_set_ops(f->req, &preq_ops, p);
    p->client = gw_http_fair_transfer_begin(f->req);
    if (p->client == NULL) {
        /* DESIGN G10: this address holds its share of upstream transfers (logged) */
        gw_refuse_reply(f->req, 503, "SlowDown",
                        "Too many requests in flight from your address. Please reduce your "
                        "request rate.");
        p->req = NULL;
        if (fenced != NULL) {
            p->ticket = fenced->ticket; /* released with p */
        }
        return FWD_QUIET;
    }
    if (fenced == NULL) {
        return FWD_OK;
    }
    p->ticket = fenced->ticket;
    gw_access_note_fence(f->req, fenced->lock, fenced->token);
    gw_fence_ticket_rebind(p->ticket, on_cut, on_resume, p);
    p->fence = fenced->fence;
    p->store = fenced->store;
    p->token = fenced->token;
    (void)snprintf(p->lock, sizeof(p->lock), "%s", fenced->lock);
    (void)snprintf(p->principal, sizeof(p->principal), "%s",
                   f->auth->principal != NULL ? f->auth->principal->name : "");
    p->s3 = malloc(sizeof(*p->s3));
    if (p->s3 == NULL) {
        f->rc = ERR_NOMEM;
        return FWD_FAIL;
    }
    *p->s3 = *f->s3;
    if (p->px->uploads != NULL && gw_upload_tracked(f->s3)) {
        p->query = strdup(gw_req_query(f->req)); /* req may be gone when the answer ends */
        if (p->query == NULL) {
            f->rc = ERR_NOMEM;
            return FWD_FAIL;
        }
    }
    if (p->query != NULL && f->s3->op != GW_S3_OP_ABORT_MULTIPART) {
        p->tap = gw_s3xml_new(0, GW_UPLOAD_TAP_MAX);
        if (p->tap == NULL) {
            f->rc = ERR_NOMEM;
            return FWD_FAIL;
        }
    }
    return FWD_OK;
}

/*
 * fwd_body - the body's framing: read into memory already, or streamed through
 * the body filter.  A chunked body of unknown length cannot be signed for S3
 * with a Content-Length (S3 answers 411 to a PUT without one).
 */
static enum fwd_end
fwd_body(struct fwd *f)
{
    struct preq *p = f->p;
    const struct gw_auth *auth = f->auth;
    if (f->mem != NULL) {
        /* read and checked already (hash, aws-chunked signatures): sent as is */
        p->mem = malloc(f->mem_len > 0 ? f->mem_len : 1);
        if (p->mem == NULL) {
            f->rc = ERR_NOMEM;
            return FWD_FAIL;
        }
        memcpy(p->mem, f->mem, f->mem_len);
        p->mem_len = f->mem_len;
        f->body_length = (int64_t)f->mem_len;
    } else {
        p->body = gw_body_new(f->req, auth, f->px->trailers);
        if (p->body == NULL) {
            f->rc = ERR_NOMEM;
            return FWD_FAIL;
        }
        f->body_length = gw_body_upstream_length(p->body);
    }
    f->chunked = auth->payload == GW_PAYLOAD_CHUNKED_SIGNED ||
                 auth->payload == GW_PAYLOAD_CHUNKED_SIGNED_TRL ||
                 auth->payload == GW_PAYLOAD_CHUNKED_UNSIGNED_TRL;
    const char *method = gw_req_method(f->req);
    if (f->body_length < 0) {
        f->what = "A request body needs a Content-Length (chunked uploads need aws-chunked "
                  "framing with x-amz-decoded-content-length).";
        gw_refuse_reply(f->req, 411, "MissingContentLength", f->what);
        p->req = NULL;
        return FWD_QUIET;
    }
    if (f->body_length == 0 && (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0 ||
                                strcmp(method, "DELETE") == 0 || strcmp(method, "OPTIONS") == 0)) {
        f->body_length = -1; /* s3cmd sends "Content-Length: 0" on GET: no body either way */
    }
    p->body_length = f->body_length > 0 ? (uint64_t)f->body_length : 0;
    return FWD_OK;
}

/*
 * fwd_checksum - a checksum the client sent as an aws-chunked trailer goes
 * along as a trailer of a re-framed body (an upstream that takes them), or,
 * for a body read into memory, as the header (computed here: the body verified
 * against it).  Otherwise it was checked here and is not forwarded, nor is
 * x-amz-sdk-checksum-algorithm (S3 refuses it without a checksum).
 */
static enum fwd_end
fwd_checksum(struct fwd *f)
{
    const struct gw_auth *auth = f->auth;
    f->trailer = f->p->body != NULL ? gw_body_upstream_trailer(f->p->body) : NULL;
    f->ck_alg = GW_CHECKSUM_NONE;
    if (f->chunked && f->mem != NULL && auth->trailer != NULL &&
        gw_checksum_alg_from_header(auth->trailer, &f->ck_alg) == 0 &&
        gw_req_header(f->req, auth->trailer) == NULL) {
        f->rc = gw_checksum_b64(f->ck_alg, f->mem, f->mem_len, f->ck_value, sizeof(f->ck_value));
        if (f->rc != 0) {
            f->what = "The request checksum could not be computed.";
            return FWD_OURS;
        }
    } else {
        f->ck_alg = GW_CHECKSUM_NONE;
    }
    f->drop_sdk_alg =
        f->chunked && auth->trailer != NULL && f->trailer == NULL && f->ck_alg == GW_CHECKSUM_NONE;
    return FWD_OK;
}

/* fwd_add - one more forwarded header. */
static void
fwd_add(struct fwd *f, const char *name, const char *value)
{
    f->extra[f->ne].name = name;
    f->extra[f->ne].value = value;
    f->ne++;
}

/*
 * fwd_headers - the forwarded header set: the client's, less hop-by-hop
 * headers, its credentials, the fencing headers and the aws-chunked framing;
 * plus the re-framed body's framing or the checksum header, and the epoch
 * metadata.  Signed afresh by the builder (x-amz-*, Content-MD5, Content-Type,
 * Content-Encoding, Host).
 */
static enum fwd_end
fwd_headers(struct fwd *f)
{
    const struct gw_config *cfg = f->px->cfg;
    size_t nclient = gw_req_header_count(f->req);
    /* + x-amz-meta-fencing-epoch, and Content-Encoding, x-amz-decoded-content-length
     * and x-amz-trailer (re-framed) or the checksum header (buffered) */
    f->extra = calloc(nclient + 5, sizeof(*f->extra)); /* + our condition (fwd_cond) */
    if (f->extra == NULL) {
        f->rc = ERR_NOMEM;
        return FWD_FAIL;
    }
    const char *connection = gw_req_header(f->req, "connection");
    for (size_t i = 0; i < nclient; i++) {
        const struct gw_header *h = gw_req_header_at(f->req, i);
        if (gw_proxy_hdr_drop_request(h->name, connection, f->chunked) ||
            (f->drop_sdk_alg && strcasecmp(h->name, "x-amz-sdk-checksum-algorithm") == 0)) {
            continue;
        }
        if (cfg->fencing.record_epoch_metadata &&
            strcasecmp(h->name, "x-amz-meta-fencing-epoch") == 0) {
            continue; /* only the gateway says which epoch wrote an object */
        }
        const char *value = h->value;
        if (f->chunked && strcasecmp(h->name, "content-encoding") == 0) {
            if (f->nce == PROXY_MAX_CE) {
                f->rc = ERR_INVAL;
                f->what = "Too many Content-Encoding headers.";
                return FWD_FAIL;
            }
            value = gw_proxy_hdr_strip_aws_chunked(h->value, f->ce_rest, sizeof(f->ce_rest));
            char *ce = f->ce[f->nce];
            if (f->trailer != NULL && f->nce == 0) {
                /* the re-framed body is aws-chunked again: first coding */
                (void)snprintf(ce, sizeof(f->ce[0]), "aws-chunked%s%s", value != NULL ? ", " : "",
                               value != NULL ? value : "");
            } else if (value != NULL) {
                (void)snprintf(ce, sizeof(f->ce[0]), "%s", value);
            } else {
                continue;
            }
            value = ce;
            f->nce++;
        }
        fwd_add(f, h->name, value);
    }
    if (f->trailer != NULL) {
        if (f->nce == 0) {
            fwd_add(f, "Content-Encoding", "aws-chunked");
        }
        (void)snprintf(f->decoded, sizeof(f->decoded), "%llu",
                       (unsigned long long)f->auth->decoded_length);
        fwd_add(f, "x-amz-decoded-content-length", f->decoded);
        fwd_add(f, "x-amz-trailer", f->trailer);
    } else if (f->ck_alg != GW_CHECKSUM_NONE) {
        fwd_add(f, gw_checksum_header_name(f->ck_alg), f->ck_value);
    }
    if (f->p->ticket != NULL && cfg->fencing.record_epoch_metadata &&
        (f->s3->op == GW_S3_OP_PUT_OBJECT || f->s3->op == GW_S3_OP_CREATE_MULTIPART)) {
        (void)snprintf(f->epoch, sizeof(f->epoch), "%llu", (unsigned long long)f->p->token);
        fwd_add(f, "x-amz-meta-fencing-epoch", f->epoch);
    }
    return FWD_OK;
}

/* fwd_add_cond - our condition goes with the write (sent unsigned: SigV4 signs what
 * the builder's policy says, and a condition need not be signed). */
static void
fwd_add_cond(struct fwd *f)
{
    fwd_add(f, f->p->cond_hdr.name, f->p->cond_hdr.value);
    f->p->cond = true;
}

/* Whether the client set a condition of its own on the destination. */
static bool
own_condition(const struct fwd *f)
{
    static const char *const names[] = {
        "if-match",
        "if-none-match",
        "x-amz-copy-source-if-match",
        "x-amz-copy-source-if-none-match",
        "x-amz-copy-source-if-modified-since",
        "x-amz-copy-source-if-unmodified-since",
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (gw_req_header(f->req, names[i]) != NULL) {
            return true;
        }
    }
    return false;
}

/*
 * fwd_cond - a fenced overwrite goes with a condition on the version this
 * gateway knows (DESIGN "Conditional writes"): from the ETag map, or, on a
 * miss, a HEAD of the key first (FWD_WAIT: on_cond_head goes on).  A
 * request with a condition of its own gets none of ours.
 */
static enum fwd_end
fwd_cond(struct fwd *f)
{
    struct preq *p = f->p;
    if (p->ticket == NULL) {
        return FWD_OK;
    }
    p->cond_use = gw_cond_use(f->px->cond, f->s3, own_condition(f));
    if (p->cond_use == GW_COND_USE_UNKNOWN) {
        gw_cond_reply_slowdown(f->req, "The gateway has not yet learned whether the store "
                                       "honours conditional writes. Please retry.");
        p->req = NULL;
        return FWD_QUIET;
    }
    if (p->cond_use != GW_COND_USE_ADD) {
        return FWD_OK;
    }
    if (gw_cond_lookup(f->px->cond, p->lock, p->token, f->s3->bucket, f->s3->key, &p->cond_hdr) ==
        0) {
        fwd_add_cond(f);
        return FWD_OK;
    }
    f->rc = gw_cond_head(f->px->cond, p->lock, p->token, f->s3->bucket, f->s3->key, on_cond_head, p,
                         &p->head);
    if (f->rc != 0) {
        f->what = "The object's current version could not be looked up.";
        return FWD_OURS;
    }
    return FWD_WAIT;
}

/*
 * fwd_sign - where it goes and its signature: the raw (still encoded) key is
 * forwarded byte for byte; only the bucket moves between path and Host with
 * the addressing style.  The payload hash is the client's SHA-256 (checked
 * here while streaming, and again by the upstream), the unsigned-trailer
 * mode, else UNSIGNED-PAYLOAD.
 */
static enum fwd_end
fwd_sign(struct fwd *f)
{
    const struct gw_s3req *s3 = f->s3;
    const char *path = gw_req_path(f->req);
    const char *key = NULL;
    if (s3->bucket_len > 0) {
        size_t plen = strlen(path);
        if (s3->raw_key_off < plen) {
            key = path + s3->raw_key_off;
        } else if (s3->style == GW_S3_STYLE_PATH && plen > 1 && path[plen - 1] == '/') {
            key = ""; /* "/bucket/": keep the slash the client sent */
        }
    }
    f->rc = gw_auth_query_strip(gw_req_query(f->req), &f->query);
    if (f->rc != 0) {
        f->what = "The request could not be forwarded.";
        return FWD_OURS;
    }
    const char *payload_hash = f->payload == GW_PAYLOAD_SHA256 ? f->sha256
                               : f->trailer != NULL            ? GW_SIGV4_STREAMING_UTRL
                                                               : GW_SIGV4_UNSIGNED;
    struct gw_s3client_sign_req sr = {
        .method = gw_req_method(f->req),
        .bucket = s3->bucket_len > 0 ? s3->bucket : NULL,
        .key = key,
        .query = buf_cstr(&f->query),
        .extra = f->extra,
        .nextra = f->ne,
        .payload_hash = payload_hash,
        .policy = GW_S3CLIENT_SIGN_S3,
    };
    f->rc = gw_s3client_sign(f->px->s3c, &sr, &f->p->msg);
    if (f->rc != 0) {
        f->what = "The request could not be signed for the upstream.";
        return FWD_OURS;
    }
    return FWD_OK;
}

/*
 * fwd_start - start the upstream transfer, or, for a fenced request with no
 * body outside its write window, leave it to on_resume (the head is its last
 * byte).
 */
static enum fwd_end
fwd_start(struct fwd *f)
{
    struct preq *p = f->p;
    p->method = gw_req_method(f->req);
    p->up_length = f->body_length;
    p->is_write = f->s3->write;
    if (f->body_length >= 0 && f->mem == NULL) {
        gw_req_body_start(f->req);
    }
    if (p->ticket != NULL && f->body_length <= 0 && !gw_fence_ticket_may_finish(p->ticket)) {
        p->start_pending = true;
        return FWD_OK;
    }
    f->rc = start_transfer(p);
    return f->rc == 0 ? FWD_OK : FWD_OURS;
}

static void
fwd_free(struct fwd *f)
{
    if (f == NULL) {
        return;
    }
    free(f->extra);
    buf_cleanup(&f->query);
    free(f);
}

/* The end of forward's steps: a failure answered, p freed unless forwarded; f freed. */
static void
fwd_end(struct fwd *f, enum fwd_end end)
{
    struct gw_req *req = f->req;
    struct preq *p = f->p;
    if (end == FWD_OURS || end == FWD_FAIL) {
        int rc = f->rc;
        if (end == FWD_OURS) {
            log_error("req %s: not forwarded: %s (%s)", gw_req_id(req), f->what, err_str(rc));
            rc = own_failure(rc);
        } else {
            log_info("req %s: not forwarded: %s (%s)", gw_req_id(req), f->what, err_str(rc));
        }
        gw_refuse_err(req, rc, f->what);
        p->req = NULL;
    }
    if (end != FWD_OK) {
        preq_free(p);
    }
    fwd_free(f);
}

/* gw_cond_head_fn: the key's version is known (or cannot be): the steps go on. */
static void
on_cond_head(void *arg, int err, const struct gw_cond_hdr *hdr)
{
    struct preq *p = arg;
    struct fwd *f = p->fwd;
    p->head = NULL;
    p->fwd = NULL;
    enum fwd_end end = FWD_OK;
    if (err == 0) {
        p->cond_hdr = *hdr;
        fwd_add_cond(f);
    } else if (err == ERR_DENIED) {
        p->cond_use = GW_COND_USE_TRACK; /* the store would not say: as without conditions */
    } else {
        log_info("req %s: the HEAD for the key's ETag failed (%s): 503", gw_req_id(f->req),
                 err_str(err));
        gw_cond_reply_slowdown(f->req, "The object's current version could not be looked up. "
                                       "Please retry.");
        p->req = NULL;
        end = FWD_QUIET;
    }
    end = end != FWD_OK ? end : fwd_sign(f);
    end = end != FWD_OK ? end : fwd_start(f);
    fwd_end(f, end);
}

/* gw_proxy_forward and gw_proxy_forward_body: mem NULL streams the client's body. */
static void
forward(struct gw_proxy *px, struct gw_req *req, const struct gw_s3req *s3,
        const struct gw_auth *auth, const struct gw_proxy_fence *fenced, const char *mem,
        size_t mem_len)
{
    struct fwd *f = calloc(1, sizeof(*f));
    struct preq *p = f != NULL ? calloc(1, sizeof(*p)) : NULL;
    if (p == NULL) {
        free(f);
        if (fenced != NULL) {
            gw_fence_ticket_release(fenced->ticket);
        }
        gw_refuse_err(req, ERR_NOMEM, "Out of memory.");
        return;
    }
    f->px = px;
    f->req = req;
    f->s3 = s3;
    f->auth = auth;
    f->mem = mem;
    f->mem_len = mem_len;
    f->p = p;
    f->payload = auth->payload;
    memcpy(f->sha256, auth->sha256, sizeof(f->sha256));
    f->what = "The request could not be forwarded.";
    buf_init(&f->query, PROXY_MAX_QUERY);

    enum fwd_end end = fwd_bind(f, fenced);
    end = end != FWD_OK ? end : fwd_body(f);
    end = end != FWD_OK ? end : fwd_checksum(f);
    end = end != FWD_OK ? end : fwd_headers(f);
    end = end != FWD_OK ? end : fwd_cond(f);
    if (end == FWD_WAIT) {
        /* s3 and auth are the caller's for this call only: the copy in p, and what
         * the later steps read of auth, stay */
        f->s3 = p->s3;
        f->auth = NULL;
        f->mem = f->mem != NULL ? p->mem : NULL;
        p->fwd = f;
        return;
    }
    end = end != FWD_OK ? end : fwd_sign(f);
    end = end != FWD_OK ? end : fwd_start(f);
    fwd_end(f, end);
}

void
gw_proxy_forward(struct gw_proxy *px, struct gw_req *req, const struct gw_s3req *s3,
                 const struct gw_auth *auth, const struct gw_proxy_fence *fenced)
{
    forward(px, req, s3, auth, fenced, NULL, 0);
}

void
gw_proxy_forward_body(struct gw_proxy *px, struct gw_req *req, const struct gw_s3req *s3,
                      const struct gw_auth *auth, const struct gw_proxy_fence *fenced,
                      const char *body, size_t len)
{
    forward(px, req, s3, auth, fenced, body != NULL ? body : "", len);
}
