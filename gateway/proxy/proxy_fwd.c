/*
 * gateway/proxy/proxy_fwd.c: forward in named steps (gw_proxy_forward,
 * gw_proxy_forward_body): bind, body, checksum, headers, condition, sign,
 * start; the transfer then runs in proxy_xfer.c (gateway/proxy/proxy_int.h).
 */
#define LOG_MODULE "proxy"
#include "gateway/proxy/proxy.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/log.h"
#include "common/mem.h"
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
#include "gateway/proxy/proxy_hdr.h"
#include "gateway/proxy/proxy_int.h"
#include "gateway/proxy/refuse.h"
#include "gateway/proxy/upload.h"
#include "gateway/s3/checksum.h"
#include "gateway/s3/s3req.h"
#include "gateway/s3/s3xml.h"
#include "gateway/s3/sigv4.h"
#include "gateway/s3client/s3client.h"

/* Content-Encoding headers rewritten (aws-chunked removed) on one request. */
#define PROXY_MAX_CE    4
#define PROXY_MAX_QUERY 65536 /* limits.max_url_bytes is at most this */

static void on_cond_head(void *arg, int err, const struct gw_cond_hdr *hdr);

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
    /* "aws-chunked, " + the rest of a coding list, each; allocated for the first:
     * without them struct fwd stays small enough for the allocator's fast path */
    char (*ce)[256 + 16];
    size_t nce;
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
    gw_req_set_ops(f->req, &gw_proxy_preq_ops, p);
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
    gw_fport_rebind(p->ticket, gw_proxy_on_cut, gw_proxy_on_resume, p);
    p->fence = fenced->fence;
    p->store = fenced->store;
    p->token = fenced->token;
    str_copy(p->lock, sizeof(p->lock), fenced->lock);
    str_copy(p->principal, sizeof(p->principal),
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
        /* the upload id reaches the client only once it is recorded (DESIGN "Tokens on
         * the wire"): a part sent with it at once, on any loop, finds its epoch */
        p->hold_answer = f->s3->op == GW_S3_OP_CREATE_MULTIPART;
        buf_init(&p->answer, GW_UPLOAD_TAP_MAX);
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
    f->extra = mem_zalloc_array(nclient + 5, sizeof(*f->extra)); /* + our condition (fwd_cond) */
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
            if (f->ce == NULL) {
                f->ce = mem_zalloc_array(PROXY_MAX_CE, sizeof(*f->ce));
                if (f->ce == NULL) {
                    f->rc = ERR_NOMEM;
                    return FWD_FAIL;
                }
            }
            char rest[256];
            value = gw_proxy_hdr_strip_aws_chunked(h->value, rest, sizeof(rest));
            char *ce = f->ce[f->nce];
            if (f->trailer != NULL && f->nce == 0) {
                /* the re-framed body is aws-chunked again: first coding */
                (void)snprintf(ce, sizeof(f->ce[0]), "aws-chunked%s%s", value != NULL ? ", " : "",
                               value != NULL ? value : "");
            } else if (value != NULL) {
                str_copy(ce, sizeof(f->ce[0]), value);
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
        f->decoded[fmt_u64(f->auth->decoded_length, f->decoded)] = '\0';
        fwd_add(f, "x-amz-decoded-content-length", f->decoded);
        fwd_add(f, "x-amz-trailer", f->trailer);
    } else if (f->ck_alg != GW_CHECKSUM_NONE) {
        fwd_add(f, gw_checksum_header_name(f->ck_alg), f->ck_value);
    }
    if (f->p->ticket != NULL && cfg->fencing.record_epoch_metadata &&
        (f->s3->op == GW_S3_OP_PUT_OBJECT || f->s3->op == GW_S3_OP_CREATE_MULTIPART)) {
        f->epoch[fmt_u64(f->p->token, f->epoch)] = '\0';
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
 * body outside its write window, leave it to gw_proxy_on_resume (the head is
 * its last byte).
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
    if (p->ticket != NULL && f->body_length <= 0 && !gw_fport_may_finish(p->ticket)) {
        p->start_pending = true;
        return FWD_OK;
    }
    f->rc = gw_proxy_start_transfer(p);
    return f->rc == 0 ? FWD_OK : FWD_OURS;
}

static void
fwd_free(struct fwd *f)
{
    if (f == NULL) {
        return;
    }
    free(f->extra);
    free(f->ce);
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
            rc = gw_proxy_own_failure(rc);
        } else {
            log_info("req %s: not forwarded: %s (%s)", gw_req_id(req), f->what, err_str(rc));
        }
        gw_refuse_err(req, rc, f->what);
        p->req = NULL;
    }
    if (end != FWD_OK) {
        gw_proxy_preq_free(p);
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
    struct fwd *f = mem_zalloc(sizeof(*f));
    struct preq *p = f != NULL ? mem_zalloc(sizeof(*p)) : NULL;
    if (p == NULL) {
        free(f);
        if (fenced != NULL) {
            gw_fport_release(fenced->ticket);
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
        p->fwd_free = fwd_free;
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
