#define LOG_MODULE "proxy"
#include "gateway/proxy.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/num.h"
#include "gateway/auth.h"
#include "gateway/body.h"
#include "gateway/config.h"
#include "gateway/fence.h"
#include "gateway/http.h"
#include "gateway/metrics.h"
#include "gateway/s3err.h"
#include "gateway/s3req.h"
#include "gateway/s3xml.h"
#include "gateway/sigv4.h"
#include "gateway/upload.h"
#include "gateway/upstream.h"
#include "store/store.h"

/* Upper bound on the header block sent upstream (client headers are capped lower). */
#define PROXY_MAX_HEADER_BYTES ((size_t)128 * 1024)
/* Headers the proxy adds itself: Host, x-amz-date, x-amz-content-sha256, token, Authorization. */
#define PROXY_EXTRA_HEADERS 8
#define PROXY_MAX_HOST      512
/* Distinct header names signed on one upstream request. */
#define GW_PROXY_MAX_SIGNED 64

struct gw_proxy {
    const struct gw_config *cfg;  /* borrowed; in force for new requests */
    struct gw_upstream *up;       /* borrowed */
    struct gw_sigv4_keycache *kc; /* owned; derived signing keys per date/region/service */
    char scheme[8];               /* "http" or "https" */
    char host[PROXY_MAX_HOST];    /* "host[:port]" of the endpoint, as the Host header */
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
    struct buf hdrs;      /* "Name: value\0" strings sent upstream */
    bool body_waiting;    /* read_body returned ERR_AGAIN: resume on body_ready */
    bool recv_paused;     /* on_body returned ERR_AGAIN: resume on output drained */
    bool head_sent;       /* the response head went to the client */
    bool is_head;         /* a HEAD request: no response body */
    uint64_t body_length; /* bytes the upstream's Content-Length announces */
    uint64_t body_passed; /* bytes handed to the upstream so far */
    struct gw_fence_ticket *ticket;   /* fenced write: its ticket, NULL otherwise */
    struct gw_fence *fence;           /* fenced write: for the audit of a cut */
    struct gw_s3req *s3;              /* fenced write: a copy, for the audit of a cut */
    char lock[GW_FENCE_LOCK_MAX + 1]; /* fenced write: the lock */
    uint64_t token;                   /* fenced write: the admitted token */
    char principal[64];               /* fenced write: for the audit */
    struct gw_s3xml *tap; /* owned; fenced Create/Complete: the answer parsed on its way */
    int status;           /* the upstream's status */
};

/* Request headers that are not forwarded (RFC 9110 7.6.1 hop-by-hop, the client's
 * credentials, which are replaced, and the fencing headers, which are ours). */
static const char *const drop_request[] = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "expect",
    "host",
    "content-length",
    "authorization",
    "x-amz-date",
    "x-amz-security-token",
    "x-amz-content-sha256",
    "x-fencing-token",
    "x-fencing-lock",
    NULL,
};

/* Headers that describe the aws-chunked framing, which the upstream never sees. */
static const char *const drop_chunked[] = {
    "x-amz-decoded-content-length",
    "x-amz-trailer",
    NULL,
};

/* Response headers the server frames itself or that are hop-by-hop. */
static const char *const drop_response[] = {
    "connection",        "keep-alive", "proxy-connection", "te", "trailer",
    "transfer-encoding", "upgrade",    "content-length",   NULL,
};

static bool
in_list(const char *const *list, const char *name)
{
    for (size_t i = 0; list[i] != NULL; i++) {
        if (strcasecmp(list[i], name) == 0) {
            return true;
        }
    }
    return false;
}

/* True if name appears as a token of the client's Connection header (RFC 9110 7.6.1). */
static bool
named_by_connection(const char *connection, const char *name)
{
    if (connection == NULL) {
        return false;
    }
    size_t nlen = strlen(name);
    const char *p = connection;
    while (*p != '\0') {
        while (*p == ' ' || *p == '\t' || *p == ',') {
            p++;
        }
        const char *start = p;
        while (*p != '\0' && *p != ',' && *p != ' ' && *p != '\t') {
            p++;
        }
        if ((size_t)(p - start) == nlen && strncasecmp(start, name, nlen) == 0) {
            return true;
        }
    }
    return false;
}

static int
parse_endpoint(struct gw_proxy *px, const char *endpoint, char *errbuf, size_t errlen)
{
    const char *rest;
    if (strncmp(endpoint, "http://", 7) == 0) {
        (void)snprintf(px->scheme, sizeof(px->scheme), "http");
        rest = endpoint + 7;
    } else if (strncmp(endpoint, "https://", 8) == 0) {
        (void)snprintf(px->scheme, sizeof(px->scheme), "https");
        rest = endpoint + 8;
    } else {
        (void)snprintf(errbuf, errlen, "upstream.endpoint: must start with http:// or https://");
        return ERR_INVAL;
    }
    size_t n = strcspn(rest, "/?#");
    if (n == 0 || n >= sizeof(px->host) || (rest[n] != '\0' && strcmp(rest + n, "/") != 0)) {
        (void)snprintf(errbuf, errlen, "upstream.endpoint: expected scheme://host[:port]");
        return ERR_INVAL;
    }
    memcpy(px->host, rest, n);
    px->host[n] = '\0';
    return 0;
}

struct gw_proxy *
gw_proxy_new(const struct gw_config *cfg, struct gw_upstream *up, char *errbuf, size_t errlen)
{
    struct gw_proxy *px = calloc(1, sizeof(*px));
    if (px == NULL) {
        (void)snprintf(errbuf, errlen, "out of memory");
        return NULL;
    }
    px->cfg = cfg;
    px->up = up;
    px->kc = gw_sigv4_keycache_new();
    if (px->kc == NULL) {
        (void)snprintf(errbuf, errlen, "out of memory");
        gw_proxy_free(px);
        return NULL;
    }
    if (parse_endpoint(px, cfg->upstream.endpoint, errbuf, errlen) != 0) {
        gw_proxy_free(px);
        return NULL;
    }
    return px;
}

void
gw_proxy_set_config(struct gw_proxy *px, const struct gw_config *cfg)
{
    char errbuf[256];
    struct gw_proxy tmp = {0};
    if (parse_endpoint(&tmp, cfg->upstream.endpoint, errbuf, sizeof(errbuf)) != 0) {
        log_error("new configuration keeps the old upstream: %s", errbuf);
    } else {
        memcpy(px->scheme, tmp.scheme, sizeof(px->scheme));
        memcpy(px->host, tmp.host, sizeof(px->host));
    }
    px->cfg = cfg;
    /* The cache keys entries by a hash of the secret, so a changed secret
     * simply misses; nothing to flush. */
}

void
gw_proxy_free(struct gw_proxy *px)
{
    if (px == NULL) {
        return;
    }
    gw_sigv4_keycache_free(px->kc);
    free(px);
}

static void
preq_free(struct preq *p)
{
    if (p == NULL) {
        return;
    }
    gw_xfer_cancel(p->x);
    gw_fence_ticket_release(p->ticket); /* after the cancel: the write is over at S3 */
    free(p->s3);
    free(p->mem);
    gw_s3xml_free(p->tap);
    gw_body_free(p->body);
    buf_cleanup(&p->hdrs);
    gw_metrics.requests_active--;
    free(p);
}

/* Ends the client's request with an error of our own, or by cutting the
 * connection if the upstream's response head was already sent. */
static void
finish_error(struct preq *p, int err, const char *what)
{
    struct gw_req *req = p->req;
    if (err == ERR_TIMEOUT) {
        gw_metrics.upstream_timeouts++;
    } else if (err == ERR_UPSTREAM) {
        gw_metrics.upstream_errors++;
    }
    struct gw_auth_fail bf;
    if (p->head_sent) {
        /* Too late for a status: cut the connection so the client sees a
         * truncated body rather than a complete-looking one. */
        gw_resp_abort(req);
    } else if (p->body != NULL && gw_body_fail(p->body, &bf)) {
        /* the body broke its promise (hash, chunk signature, framing): the
         * upstream transfer was cut before its last byte */
        gw_metrics_count_status(bf.status);
        gw_s3err_send(req, bf.status, bf.code, bf.message);
    } else {
        gw_metrics_count_status(gw_status_from_err(err));
        gw_s3err_send_err(req, err, what);
    }
    p->req = NULL;
    preq_free(p);
}

/* ---- upstream callbacks (struct gw_xfer_cbs) ---- */

static ssize_t
on_read_body(void *arg, char *dst, size_t len)
{
    struct preq *p = arg;
    ssize_t n;
    if (p->body == NULL) {
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
    if (n > 0) {
        gw_metrics.bytes_in += (uint64_t)n;
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
        if (in_list(drop_response, h->name)) {
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
    gw_metrics_count_status(status);
    gw_resp_body_begin(req, content_length);
    p->head_sent = true;
    return 0;
}

static int
on_body(void *arg, const char *data, size_t len)
{
    struct preq *p = arg;
    gw_metrics.bytes_out += len;
    if (p->tap != NULL) {
        if (gw_s3xml_feed(p->tap, data, len) != 0) {
            gw_s3xml_free(p->tap); /* not an answer we understand: nothing is recorded */
            p->tap = NULL;
        }
    }
    int rc = gw_resp_body_write(p->req, data, len);
    if (rc == ERR_AGAIN) {
        p->recv_paused = true;
        return ERR_AGAIN;
    }
    return rc;
}

static void
on_done(void *arg, int err)
{
    struct preq *p = arg;
    p->x = NULL; /* freed by the upstream module after this returns */
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
    struct gw_upload *u = p->fence != NULL ? gw_fence_uploads(p->fence) : NULL;
    if (p->ticket != NULL && u != NULL && gw_upload_tracked(p->s3)) {
        gw_upload_response(u, p->lock, p->token, p->s3, gw_req_query(req), p->status, p->tap);
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

static void
on_abort(struct gw_req *req, int err, void *arg)
{
    struct preq *p = arg;
    log_info("req %s: client request aborted (%s); upstream transfer cancelled", gw_req_id(req),
             err_str(err));
    gw_metrics.client_aborts++;
    p->req = NULL;
    preq_free(p); /* cancels the transfer before its last byte: nothing is committed */
}

/* gw_fence_cut_fn: a newer epoch was accepted while this write's request was
 * not completely sent (G3).  Closing the transfer before its last byte means
 * S3 never commits it. */
static void
on_cut(void *arg, uint64_t current)
{
    struct preq *p = arg;
    struct gw_req *req = p->req;
    p->ticket = NULL; /* freed by the fence */
    gw_xfer_cancel(p->x);
    p->x = NULL;
    log_info("req %s: cut by the epoch barrier: token %llu, lock %s now at %llu", gw_req_id(req),
             (unsigned long long)p->token, p->lock, (unsigned long long)current);
    gw_metrics.fence_rejections++;
    gw_fence_audit(p->fence, req, p->s3, p->principal, STORE_AUDIT_CUT, p->lock, p->token, current);
    if (p->head_sent) {
        gw_resp_abort(req);
    } else {
        gw_fence_send_error(req, 409, "StaleFencingToken",
                            "A newer fencing token was accepted for this lock while this write "
                            "was in flight; it was cut off before reaching the store.",
                            p->lock, p->token, current);
    }
    p->req = NULL;
    preq_free(p);
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

/* Appends "Name: value\0" to p->hdrs and records its offset. */
static int
add_header(struct preq *p, size_t *offs, size_t *n, size_t max, const char *name, const char *value)
{
    if (*n >= max) {
        return ERR_TOOBIG;
    }
    offs[*n] = p->hdrs.len;
    int rc = buf_printf(&p->hdrs, "%s: %s", name, value);
    if (rc == 0) {
        rc = buf_append(&p->hdrs, "", 1); /* keep the NUL as a separator */
    }
    if (rc == 0) {
        (*n)++;
    }
    return rc;
}

static void
format_amz_date(char out[17])
{
    int64_t ms = clock_wall_ms();
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    (void)gmtime_r(&t, &tm);
    (void)strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

/* Is this header sent signed?  S3 wants every x-amz-* header signed; Content-MD5
 * and Content-Type are signed too so nobody on the path can swap them. */
static bool
want_signed(const char *lname)
{
    return strncmp(lname, "x-amz-", 6) == 0 || strcmp(lname, "content-md5") == 0 ||
           strcmp(lname, "content-type") == 0 || strcmp(lname, "host") == 0;
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Builds the ";"-joined, sorted, unique, lower-case list of signed header names. */
static int
signed_header_list(const struct gw_sigv4_header *hs, size_t n, char *out, size_t outlen)
{
    char names[GW_PROXY_MAX_SIGNED][64];
    const char *sorted[GW_PROXY_MAX_SIGNED] = {0};
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char l[64];
        size_t len = strlen(hs[i].name);
        if (len >= sizeof(l)) {
            continue; /* not a header we sign */
        }
        for (size_t j = 0; j <= len; j++) {
            char c = hs[i].name[j];
            l[j] = (char)((c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c);
        }
        if (!want_signed(l)) {
            continue;
        }
        bool dup = false;
        for (size_t j = 0; j < k; j++) {
            if (strcmp(names[j], l) == 0) {
                dup = true;
                break;
            }
        }
        if (dup) {
            continue;
        }
        if (k == GW_PROXY_MAX_SIGNED) {
            return ERR_TOOBIG;
        }
        memcpy(names[k], l, len + 1);
        sorted[k] = names[k];
        k++;
    }
    qsort(sorted, k, sizeof(sorted[0]), cmp_str);
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < k; i++) {
        int w = snprintf(out + used, outlen - used, "%s%s", i > 0 ? ";" : "", sorted[i]);
        if (w < 0 || (size_t)w >= outlen - used) {
            return ERR_TOOBIG;
        }
        used += (size_t)w;
    }
    return 0;
}

/*
 * Where the request goes: the Host header and the target (path and query,
 * raw, byte for byte as the client sent them) for the configured upstream
 * addressing style.  When the client used the upstream's own style, the path
 * is forwarded untouched; otherwise only the bucket moves between the Host
 * and the path, and the raw (still encoded) key is kept as it was.
 */
static int
upstream_target(const struct gw_proxy *px, const struct gw_config *cfg, struct gw_req *req,
                const struct gw_s3req *s3, struct buf *host, struct buf *target)
{
    const char *path = gw_req_path(req);
    const char *query = gw_req_query(req);
    const char *raw_key = path + s3->raw_key_off;
    bool to_virtual = cfg->upstream.addressing == GW_ADDR_VIRTUAL && s3->bucket_len > 0;
    int rc;

    if (to_virtual) {
        rc = buf_printf(host, "%s.%s", s3->bucket, px->host);
    } else {
        rc = buf_append_str(host, px->host);
    }
    if (rc != 0) {
        return rc;
    }
    if (s3->bucket_len == 0 || (s3->style == GW_S3_STYLE_PATH && !to_virtual) ||
        (s3->style == GW_S3_STYLE_VIRTUAL && to_virtual)) {
        rc = buf_append_str(target, path);
    } else if (to_virtual) {
        rc = buf_printf(target, "/%s", raw_key); /* path style in, virtual out */
    } else {
        rc = buf_printf(target, "/%s%s", s3->bucket, path); /* virtual in, path out */
    }
    if (rc == 0 && query[0] != '\0') {
        rc = buf_printf(target, "?%s", query);
    }
    return rc;
}

/*
 * Content-Encoding without its "aws-chunked" token (the framing is removed
 * here); NULL when nothing is left.  Writes into out[outlen].
 */
static const char *
strip_aws_chunked(const char *value, char *out, size_t outlen)
{
    size_t used = 0;
    const char *p = value;
    out[0] = '\0';
    while (*p != '\0') {
        while (*p == ' ' || *p == '\t' || *p == ',') {
            p++;
        }
        const char *start = p;
        while (*p != '\0' && *p != ',') {
            p++;
        }
        const char *end = p;
        while (end > start && (end[-1] == ' ' || end[-1] == '\t')) {
            end--;
        }
        size_t n = (size_t)(end - start);
        if (n == 0 || (n == 11 && strncasecmp(start, "aws-chunked", 11) == 0)) {
            continue;
        }
        int w = snprintf(out + used, outlen - used, "%s%.*s", used > 0 ? ", " : "", (int)n, start);
        if (w < 0 || (size_t)w >= outlen - used) {
            break;
        }
        used += (size_t)w;
    }
    return used > 0 ? out : NULL;
}

/* gw_proxy_forward and gw_proxy_forward_body: mem NULL streams the client's body. */
static void
forward(struct gw_proxy *px, struct gw_req *req, const struct gw_s3req *s3,
        const struct gw_auth *auth, const struct gw_proxy_fence *fenced, const char *mem,
        size_t mem_len)
{
    const struct gw_config *cfg = px->cfg;
    struct preq *p = calloc(1, sizeof(*p));
    struct buf host, target, url;
    size_t nclient = gw_req_header_count(req);
    size_t max = nclient + PROXY_EXTRA_HEADERS;
    size_t *offs = NULL;
    size_t *name_offs = NULL;
    struct buf names;
    const char **lines = NULL;
    struct gw_sigv4_header *sh = NULL;
    const char *what = "The request could not be forwarded.";
    int rc = ERR_NOMEM;

    buf_init(&host, (size_t)PROXY_MAX_HOST + 256);
    buf_init(&target, (size_t)64 * 1024);
    buf_init(&url, (size_t)64 * 1024);
    buf_init(&names, PROXY_MAX_HEADER_BYTES);
    if (p == NULL) {
        if (fenced != NULL) {
            gw_fence_ticket_release(fenced->ticket);
        }
        gw_s3err_send_err(req, ERR_NOMEM, "Out of memory.");
        goto out;
    }
    gw_metrics.requests_active++;
    p->px = px;
    p->req = req;
    p->is_head = strcmp(gw_req_method(req), "HEAD") == 0;
    buf_init(&p->hdrs, PROXY_MAX_HEADER_BYTES);
    gw_req_set_ops(req, &preq_ops, p);
    if (fenced != NULL) {
        p->ticket = fenced->ticket;
        gw_fence_ticket_rebind(p->ticket, on_cut, p);
        p->fence = fenced->fence;
        p->token = fenced->token;
        (void)snprintf(p->lock, sizeof(p->lock), "%s", fenced->lock);
        (void)snprintf(p->principal, sizeof(p->principal), "%s",
                       auth->principal != NULL ? auth->principal->name : "");
        p->s3 = malloc(sizeof(*p->s3));
        if (p->s3 == NULL) {
            goto fail;
        }
        *p->s3 = *s3;
        if (gw_fence_uploads(p->fence) != NULL && s3->op != GW_S3_OP_ABORT_MULTIPART &&
            gw_upload_tracked(s3)) {
            p->tap = gw_s3xml_new(0, GW_UPLOAD_TAP_MAX);
            if (p->tap == NULL) {
                goto fail;
            }
        }
    }

    offs = calloc(max, sizeof(*offs));
    name_offs = calloc(max, sizeof(*name_offs));
    lines = calloc(max + 1, sizeof(*lines));
    sh = calloc(max, sizeof(*sh));
    if (offs == NULL || name_offs == NULL || lines == NULL || sh == NULL) {
        goto fail;
    }

    /* Body framing.  A chunked body of unknown length cannot be signed for
     * S3 with a Content-Length (S3 answers 411 to a PUT without one). */
    int64_t body_length;
    if (mem != NULL) {
        /* read and checked already (hash, aws-chunked signatures): sent as is */
        p->mem = malloc(mem_len > 0 ? mem_len : 1);
        if (p->mem == NULL) {
            goto fail;
        }
        memcpy(p->mem, mem, mem_len);
        p->mem_len = mem_len;
        body_length = (int64_t)mem_len;
    } else {
        p->body = gw_body_new(req, auth);
        if (p->body == NULL) {
            goto fail;
        }
        body_length = gw_body_upstream_length(p->body);
    }
    bool chunked = auth->payload == GW_PAYLOAD_CHUNKED_SIGNED ||
                   auth->payload == GW_PAYLOAD_CHUNKED_SIGNED_TRL ||
                   auth->payload == GW_PAYLOAD_CHUNKED_UNSIGNED_TRL;
    const char *method = gw_req_method(req);
    if (body_length < 0) {
        what = "A request body needs a Content-Length (chunked uploads need aws-chunked "
               "framing with x-amz-decoded-content-length).";
        gw_s3err_send(req, 411, "MissingContentLength", what);
        p->req = NULL;
        goto fail_quiet;
    }
    if (body_length == 0 && (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0 ||
                             strcmp(method, "DELETE") == 0 || strcmp(method, "OPTIONS") == 0)) {
        body_length = -1; /* s3cmd sends "Content-Length: 0" on GET: no body either way */
    }
    p->body_length = body_length > 0 ? (uint64_t)body_length : 0;

    /* The payload hash: the client's SHA-256 (checked here while streaming,
     * and again by the upstream), else UNSIGNED-PAYLOAD. */
    const char *payload_hash =
        auth->payload == GW_PAYLOAD_SHA256 ? auth->sha256 : GW_SIGV4_UNSIGNED;

    rc = upstream_target(px, cfg, req, s3, &host, &target);
    if (rc != 0) {
        goto fail;
    }
    char amz_date[17];
    format_amz_date(amz_date);

    size_t n = 0;
    const char *connection = gw_req_header(req, "connection");
    rc = add_header(p, offs, &n, max, "Host", buf_cstr(&host));
    for (size_t i = 0; rc == 0 && i < nclient; i++) {
        const struct gw_header *h = gw_req_header_at(req, i);
        if (in_list(drop_request, h->name) || named_by_connection(connection, h->name) ||
            (chunked && in_list(drop_chunked, h->name))) {
            continue;
        }
        if (cfg->fencing.record_epoch_metadata &&
            strcasecmp(h->name, "x-amz-meta-fencing-epoch") == 0) {
            continue; /* only the gateway says which epoch wrote an object */
        }
        const char *value = h->value;
        char ce[256];
        if (chunked && strcasecmp(h->name, "content-encoding") == 0) {
            value = strip_aws_chunked(h->value, ce, sizeof(ce));
            if (value == NULL) {
                continue;
            }
        }
        rc = add_header(p, offs, &n, max, h->name, value);
    }
    if (rc == 0) {
        rc = add_header(p, offs, &n, max, "x-amz-date", amz_date);
    }
    if (rc == 0) {
        rc = add_header(p, offs, &n, max, "x-amz-content-sha256", payload_hash);
    }
    if (rc == 0 && p->ticket != NULL && cfg->fencing.record_epoch_metadata &&
        (s3->op == GW_S3_OP_PUT_OBJECT || s3->op == GW_S3_OP_CREATE_MULTIPART)) {
        char epoch[24];
        (void)snprintf(epoch, sizeof(epoch), "%llu", (unsigned long long)p->token);
        rc = add_header(p, offs, &n, max, "x-amz-meta-fencing-epoch", epoch);
    }
    if (rc == 0 && cfg->upstream.session_token != NULL) {
        rc = add_header(p, offs, &n, max, "x-amz-security-token", cfg->upstream.session_token);
    }
    if (rc != 0) {
        what = "Too many request headers.";
        goto fail;
    }

    /* The signer's view of the same header set: names NUL-terminated in their
     * own buffer, values borrowed from the lines ("Name: value"). */
    rc = buf_append(&names, "", 0);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *line = p->hdrs.data + offs[i];
        name_offs[i] = names.len;
        rc = buf_append(&names, line, strcspn(line, ":"));
        if (rc == 0) {
            rc = buf_append(&names, "", 1);
        }
    }
    if (rc != 0) {
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        const char *line = p->hdrs.data + offs[i];
        sh[i].name = names.data + name_offs[i];
        sh[i].value = line + strcspn(line, ":") + 2;
    }
    char signed_headers[2048];
    rc = signed_header_list(sh, n, signed_headers, sizeof(signed_headers));
    if (rc != 0) {
        what = "Too many headers to sign.";
        goto fail;
    }
    struct gw_sigv4_creds creds = {
        .access_key = cfg->upstream.access_key,
        .secret_key = cfg->upstream.secret_key,
        .session_token = cfg->upstream.session_token,
    };
    const char *q = strchr(buf_cstr(&target), '?');
    size_t plen = q != NULL ? (size_t)(q - buf_cstr(&target)) : target.len;
    char upath[8192];
    if (plen >= sizeof(upath)) {
        rc = ERR_TOOBIG;
        goto fail;
    }
    memcpy(upath, buf_cstr(&target), plen);
    upath[plen] = '\0';
    struct gw_sigv4_input in = {
        .method = method,
        .path = upath,
        .query = q != NULL ? q + 1 : "",
        .headers = sh,
        .nheaders = n,
        .payload_hash = payload_hash,
    };
    char authz[GW_SIGV4_MAX_AUTHZ];
    rc = gw_sigv4_sign(px->kc, &creds, cfg->upstream.region, "s3", amz_date, &in, signed_headers,
                       authz, sizeof(authz));
    if (rc != 0) {
        what = "The request could not be signed for the upstream.";
        goto fail;
    }
    rc = add_header(p, offs, &n, max, "Authorization", authz);
    if (rc != 0) {
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        lines[i] = p->hdrs.data + offs[i]; /* hdrs no longer grows: pointers stay valid */
    }
    lines[n] = NULL;

    rc = buf_printf(&url, "%s://%s%s", px->scheme, px->host, buf_cstr(&target));
    if (rc != 0) {
        goto fail;
    }
    struct gw_xfer_req xr = {
        .method = method,
        .url = buf_cstr(&url),
        .headers = lines,
        .nheaders = n,
        .body_length = body_length,
    };
    if (body_length >= 0 && mem == NULL) {
        gw_req_body_start(req);
    } else if (body_length >= 0) {
        /* the buffered body goes up from memory */
    } else if (p->ticket != NULL) {
        gw_fence_ticket_sent(p->ticket); /* no body: the head is the whole request */
    }
    rc = gw_xfer_start(px->up, &xr, &xfer_cbs, p, &p->x);
    if (rc != 0) {
        goto fail;
    }
    gw_metrics.proxied++;
    if (s3->write) {
        gw_metrics.writes++;
    }
    goto out;

fail:
    log_info("req %s: not forwarded: %s (%s)", gw_req_id(req), what, err_str(rc));
    gw_metrics_count_status(gw_status_from_err(rc));
    gw_s3err_send_err(req, rc, what);
    p->req = NULL;
fail_quiet:
    preq_free(p);
out:
    free(offs);
    free(name_offs);
    buf_cleanup(&names);
    free(lines);
    free(sh);
    buf_cleanup(&host);
    buf_cleanup(&target);
    buf_cleanup(&url);
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
