/* gateway/s3client/elect_s3.c: the s3 election backend (see elect_s3.h). */
#define LOG_MODULE "elect_s3"
#include "gateway/s3client/elect_s3.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include "common/buf.h"
#include "common/date.h"
#include "common/log.h"
#include "common/num.h"
#include "gateway/net/net.h"
#include "gateway/s3/s3xml.h"
#include "gateway/s3/sigv4.h"
#include "gateway/s3client/s3client.h"

/* Cap on a listing's bytes: max keys of up to 3 KiB url-encoded, plus per-entry XML. */
#define ES3_LIST_BYTES_PER_KEY ((size_t)3 * ELECT_KEY_MAX + 1024)
/* The raw (percent-encoded) listing query. */
#define ES3_RAW_MAX ((size_t)16 * 1024)

LIST_HEAD(es3_op_list, es3_op);

struct es3 {
    struct elect_backend base; /* first: the election's handle */
    struct gw_s3client *s3c;   /* borrowed; outlives the backend */
    char *bucket;              /* owned copy */
    char *name;                /* owned; "s3:<bucket>" (base.name points here) */
    struct es3_op_list ops;    /* pending operations */
};

enum op_kind {
    OP_CREATE,
    OP_REPLACE,
    OP_GET,
    OP_LIST,
    OP_DEL,
};

/* One pending operation: owns its response buffers (the s3 client its request). */
struct es3_op {
    LIST_ENTRY(es3_op) link; /* in es3.ops while pending */
    struct es3 *be;          /* the backend (valid while the op is pending) */
    enum op_kind kind;
    struct gw_s3client_op *call; /* the call; NULL once done */
    union {
        elect_be_write_fn *write;
        elect_be_get_fn *get;
        elect_be_list_fn *list;
        elect_be_del_fn *del;
    } cb;                       /* the caller's callback */
    void *arg;                  /* its argument */
    int status;                 /* the response status, 0 before the head */
    bool etag_bad;              /* an ETag header that is not a valid (short) entity-tag */
    struct elect_obj_meta meta; /* from the response head */
    struct buf body;            /* GET 200: the object (cap ELECT_OBJ_MAX) */
    struct gw_s3xml *xml;       /* LIST 200: the streaming parser */
    char *prefix;               /* LIST: owned copy, to check the answer */
    char *start_after;          /* LIST: owned copy or NULL */
    uint32_t max;               /* LIST: max keys asked for */
    char what[96];              /* for logs: "PUT key" (key shortened) */
};

/* ---- status mapping ---- */

/*
 * The outcome of a complete response (see elect_s3.h "Status mapping").
 * code is the error document's Code or NULL.
 */
static int
map_status(enum op_kind kind, int status, const char *code)
{
    if (status >= 200 && status < 300) {
        return 0;
    }
    switch (status) {
    case 404:
        return kind == OP_DEL ? 0 : ERR_NOTFOUND;
    case 412:
        return kind == OP_CREATE    ? ERR_EXISTS
               : kind == OP_REPLACE ? ERR_CONFLICT
                                    : ERR_UPSTREAM; /* we sent no precondition */
    case 409:
        return ERR_CONFLICT;
    case 401:
    case 403:
        return ERR_DENIED;
    case 408:
        return ERR_TIMEOUT;
    case 413:
        return ERR_TOOBIG;
    case 429:
        return ERR_UPSTREAM;
    case 501:
        return ERR_UNSUPPORTED;
    default:
        break;
    }
    if (status == 400 && code != NULL && strcmp(code, "RequestTimeout") == 0) {
        return ERR_TIMEOUT; /* S3: the body did not arrive in time */
    }
    if (status >= 400 && status < 500) {
        return ERR_INVAL;
    }
    return ERR_UPSTREAM; /* 5xx, 3xx, anything unexpected */
}

/* ---- operations ---- */

static void
op_free(struct es3_op *op)
{
    if (op == NULL) {
        return;
    }
    buf_cleanup(&op->body);
    gw_s3xml_free(op->xml);
    free(op->prefix);
    free(op->start_after);
    free(op);
}

static struct es3_op *
op_new(struct es3 *be, enum op_kind kind, void *arg)
{
    struct es3_op *op = calloc(1, sizeof(*op));
    if (op == NULL) {
        return NULL;
    }
    op->be = be;
    op->kind = kind;
    op->arg = arg;
    op->meta.last_modified_ms = -1;
    op->meta.date_ms = -1;
    buf_init(&op->body, ELECT_OBJ_MAX);
    return op;
}

/* gw_s3client_cbs.on_head */
static int
on_head(void *arg, int status, const struct gw_header *headers, size_t n)
{
    struct es3_op *op = arg;
    int64_t content_length = -1;
    op->status = status;
    for (size_t i = 0; i < n; i++) {
        const char *name = headers[i].name;
        const char *value = headers[i].value;
        if (strcasecmp(name, "ETag") == 0) {
            op->etag_bad = elect_etag_bare(value, op->meta.etag, sizeof(op->meta.etag)) != 0;
            if (op->etag_bad) {
                op->meta.etag[0] = '\0';
            }
        } else if (strcasecmp(name, "Last-Modified") == 0) {
            if (date_http_parse(value, &op->meta.last_modified_ms) != 0) {
                op->meta.last_modified_ms = -1;
            }
        } else if (strcasecmp(name, "Date") == 0) {
            if (date_http_parse(value, &op->meta.date_ms) != 0) {
                op->meta.date_ms = -1;
            }
        } else if (strcasecmp(name, "Content-Length") == 0) {
            uint64_t v;
            if (parse_u64(value, 0, INT64_MAX, &v) == 0) {
                content_length = (int64_t)v;
            }
        }
    }
    if (status != 200) {
        return 0; /* an error document goes to the s3 client (its Code to on_done) */
    }
    if (op->kind == OP_GET) {
        if (content_length > ELECT_OBJ_MAX) {
            return ERR_TOOBIG; /* not read further */
        }
    } else if (op->kind == OP_LIST) {
        op->xml = gw_s3xml_new(op->max, (size_t)op->max * ES3_LIST_BYTES_PER_KEY + 4096);
        if (op->xml == NULL) {
            return ERR_NOMEM;
        }
    }
    return 0;
}

/* gw_s3client_cbs.on_body: a 2xx body */
static int
on_body(void *arg, const char *data, size_t len)
{
    struct es3_op *op = arg;
    if (op->status == 200 && op->kind == OP_GET) {
        return buf_append(&op->body, data, len); /* ERR_TOOBIG past ELECT_OBJ_MAX */
    }
    if (op->status == 200 && op->kind == OP_LIST) {
        int rc = gw_s3xml_feed(op->xml, data, len);
        if (rc != 0) {
            log_warn("%s: %s: bad listing: %s", op->be->name, op->what, err_str(rc));
            return rc == ERR_NOMEM ? rc : ERR_UPSTREAM;
        }
        return 0;
    }
    return 0; /* a 2xx body of a write or delete is ignored */
}

/* LIST 200: finish the parse and check the keys keep the contract. */
static int
list_result(struct es3_op *op, const char *const **keys, size_t *n, bool *truncated)
{
    int rc = gw_s3xml_finish(op->xml);
    if (rc != 0) {
        log_warn("%s: %s: bad listing: %s", op->be->name, op->what, err_str(rc));
        return rc == ERR_NOMEM ? rc : ERR_UPSTREAM;
    }
    if (gw_s3xml_root(op->xml) != GW_S3XML_ROOT_LIST) {
        log_warn("%s: %s: 200 without a ListBucketResult", op->be->name, op->what);
        return ERR_UPSTREAM;
    }
    *keys = gw_s3xml_keys(op->xml, n);
    *truncated = gw_s3xml_truncated(op->xml);
    size_t plen = strlen(op->prefix);
    for (size_t i = 0; i < *n; i++) {
        const char *k = (*keys)[i];
        const char *prev = i > 0 ? (*keys)[i - 1] : op->start_after;
        if (strncmp(k, op->prefix, plen) != 0 || (prev != NULL && strcmp(k, prev) <= 0) ||
            strlen(k) > ELECT_KEY_MAX) {
            log_warn("%s: %s: listing out of order or off prefix", op->be->name, op->what);
            return ERR_UPSTREAM;
        }
    }
    if (*n > op->max || (*truncated && *n == 0)) {
        /* more than asked for, or "more follow" with no key to continue after */
        log_warn("%s: %s: listing of %zu keys (max %u, truncated %d)", op->be->name, op->what, *n,
                 op->max, (int)*truncated);
        return ERR_UPSTREAM;
    }
    return 0;
}

/* Runs the caller's callback for a finished op with outcome err. */
static void
op_complete(struct es3_op *op, int err)
{
    switch (op->kind) {
    case OP_CREATE:
    case OP_REPLACE:
        if (err == 0 && (op->meta.etag[0] == '\0' || op->etag_bad)) {
            log_warn("%s: %s: %d without a usable ETag", op->be->name, op->what, op->status);
            err = ERR_UPSTREAM; /* written, but we cannot tell its ETag: ambiguous */
        }
        op->cb.write(op->arg, err, err == 0 ? &op->meta : NULL);
        break;
    case OP_GET:
        if (err == 0 && op->status != 200) {
            err = ERR_UPSTREAM; /* 2xx other than 200 to a plain GET */
        }
        if (err == 0 && op->etag_bad) {
            log_warn("%s: %s: bad ETag in the answer", op->be->name, op->what);
            err = ERR_UPSTREAM;
        }
        if (err == 0) {
            op->cb.get(op->arg, 0, op->body.len > 0 ? op->body.data : "", op->body.len, &op->meta);
        } else {
            op->cb.get(op->arg, err, NULL, 0, NULL);
        }
        break;
    case OP_LIST: {
        const char *const *keys = NULL;
        size_t n = 0;
        bool truncated = false;
        if (err == 0 && (op->status != 200 || op->xml == NULL)) {
            err = ERR_UPSTREAM;
        }
        if (err == 0) {
            err = list_result(op, &keys, &n, &truncated);
        }
        if (err == 0) {
            op->cb.list(op->arg, 0, n > 0 ? keys : NULL, n, truncated);
        } else {
            op->cb.list(op->arg, err, NULL, 0, false);
        }
        break;
    }
    case OP_DEL:
    default:
        op->cb.del(op->arg, err);
        break;
    }
}

/* gw_s3client_cbs.on_done */
static void
on_done(void *arg, int err, int status, const char *code)
{
    struct es3_op *op = arg;
    struct es3 *be = op->be;
    LIST_REMOVE(op, link);
    op->call = NULL;
    if (err == 0) {
        err = map_status(op->kind, status, code);
        bool expected = err == 0 || err == ERR_EXISTS || err == ERR_CONFLICT || err == ERR_NOTFOUND;
        if (expected) {
            log_debug("%s: %s: %d %s -> %s", be->name, op->what, status, code != NULL ? code : "",
                      err_str(err));
        } else {
            log_warn("%s: %s: %d %s -> %s", be->name, op->what, status, code != NULL ? code : "",
                     err_str(err));
        }
    } else {
        /* the upstream client logged the cause already (with its library's text) */
        log_debug("%s: %s: no complete answer: %s", be->name, op->what, err_str(err));
    }
    /* The callback may free the backend or start new operations: op is off
     * the list already and is freed here, without touching be again. */
    op_complete(op, err);
    op_free(op);
}

static const struct gw_s3client_cbs call_cbs = {
    .on_head = on_head,
    .on_body = on_body,
    .on_done = on_done,
};

/*
 * Starts op: method on key (plain, or NULL for the bucket), with query (raw),
 * extra headers and, for a write, body.  On success op is pending; on failure
 * the caller frees it (no callback).
 */
static int
op_start(struct es3 *be, struct es3_op *op, const char *method, const char *key, const char *query,
         const struct gw_sigv4_header *extra, size_t nextra, const char *body, size_t len)
{
    if (op->what[0] == '\0') {
        (void)snprintf(op->what, sizeof(op->what), "%s %.80s", method, key != NULL ? key : "/");
    }
    const struct gw_s3client_call call = {
        .method = method,
        .bucket = be->bucket,
        .key = key,
        .query = query,
        .extra = extra,
        .nextra = nextra,
        .body = body,
        .body_len = len,
        .has_body = op->kind == OP_CREATE || op->kind == OP_REPLACE,
    };
    int rc = gw_s3client_start(be->s3c, &call, &call_cbs, op, &op->call);
    if (rc != 0) {
        log_warn("%s: %s: not started: %s", be->name, op->what, err_str(rc));
        return rc;
    }
    LIST_INSERT_HEAD(&be->ops, op, link);
    return 0;
}

static int
es3_create(struct elect_backend *base, const char *key, const char *body, size_t len,
           elect_be_write_fn *cb, void *arg)
{
    struct es3 *be = (struct es3 *)base;
    struct es3_op *op = op_new(be, OP_CREATE, arg);
    if (op == NULL) {
        return ERR_NOMEM;
    }
    op->cb.write = cb;
    /* RFC 9110 13.1.2 / S3 conditional writes: create only if absent. */
    static const struct gw_sigv4_header inm = {"If-None-Match", "*"};
    int rc = op_start(be, op, "PUT", key, NULL, &inm, 1, body, len);
    if (rc != 0) {
        op_free(op);
    }
    return rc;
}

static int
es3_replace(struct elect_backend *base, const char *key, const char *etag,
            enum elect_etag_form form, const char *body, size_t len, elect_be_write_fn *cb,
            void *arg)
{
    struct es3 *be = (struct es3 *)base;
    char value[ELECT_ETAG_MAX + 3];
    /* AWS compares the quoted entity-tag (RFC 9110 8.8.3); RGW's PUT only the bare one. */
    int w;
    if (form == ELECT_ETAG_QUOTED) {
        w = snprintf(value, sizeof(value), "\"%s\"", etag);
    } else {
        w = snprintf(value, sizeof(value), "%s", etag);
    }
    if (strchr(etag, '"') != NULL || w < 0 || (size_t)w >= sizeof(value)) {
        return ERR_INVAL;
    }
    struct es3_op *op = op_new(be, OP_REPLACE, arg);
    if (op == NULL) {
        return ERR_NOMEM;
    }
    op->cb.write = cb;
    struct gw_sigv4_header im = {"If-Match", value};
    int rc = op_start(be, op, "PUT", key, NULL, &im, 1, body, len);
    if (rc != 0) {
        op_free(op);
    }
    return rc;
}

static int
es3_get(struct elect_backend *base, const char *key, elect_be_get_fn *cb, void *arg)
{
    struct es3 *be = (struct es3 *)base;
    struct es3_op *op = op_new(be, OP_GET, arg);
    if (op == NULL) {
        return ERR_NOMEM;
    }
    op->cb.get = cb;
    int rc = op_start(be, op, "GET", key, NULL, NULL, 0, NULL, 0);
    if (rc != 0) {
        op_free(op);
    }
    return rc;
}

static int
es3_list(struct elect_backend *base, const char *prefix, const char *start_after, uint32_t max,
         elect_be_list_fn *cb, void *arg)
{
    struct es3 *be = (struct es3 *)base;
    struct buf q;
    buf_init(&q, ES3_RAW_MAX);
    struct es3_op *op = op_new(be, OP_LIST, arg);
    int rc = ERR_NOMEM;
    if (op == NULL) {
        goto out;
    }
    op->cb.list = cb;
    op->max = max;
    (void)snprintf(op->what, sizeof(op->what), "LIST %.80s", prefix);
    op->prefix = strdup(prefix);
    op->start_after = start_after != NULL ? strdup(start_after) : NULL;
    if (op->prefix == NULL || (start_after != NULL && op->start_after == NULL)) {
        goto out;
    }
    /* ListObjectsV2; encoding-type=url so that any key survives XML 1.0. */
    rc = buf_printf(&q, "list-type=2&encoding-type=url&max-keys=%u", (unsigned)max);
    if (rc == 0 && prefix[0] != '\0') {
        rc = buf_append_str(&q, "&prefix=");
        if (rc == 0) {
            rc = gw_s3client_encode(prefix, false, &q);
        }
    }
    if (rc == 0 && start_after != NULL) {
        rc = buf_append_str(&q, "&start-after=");
        if (rc == 0) {
            rc = gw_s3client_encode(start_after, false, &q);
        }
    }
    if (rc == 0) {
        rc = op_start(be, op, "GET", NULL, buf_cstr(&q), NULL, 0, NULL, 0);
    }
    if (rc == 0) {
        op = NULL; /* pending */
    }
out:
    op_free(op);
    buf_cleanup(&q);
    return rc;
}

static int
es3_del(struct elect_backend *base, const char *key, elect_be_del_fn *cb, void *arg)
{
    struct es3 *be = (struct es3 *)base;
    struct es3_op *op = op_new(be, OP_DEL, arg);
    if (op == NULL) {
        return ERR_NOMEM;
    }
    op->cb.del = cb;
    int rc = op_start(be, op, "DELETE", key, NULL, NULL, 0, NULL, 0);
    if (rc != 0) {
        op_free(op);
    }
    return rc;
}

static void
es3_free(struct elect_backend *base)
{
    struct es3 *be = (struct es3 *)base;
    struct es3_op *op;
    while ((op = LIST_FIRST(&be->ops)) != NULL) {
        LIST_REMOVE(op, link);
        gw_s3client_cancel(op->call); /* no callback follows; a PUT cut short is never committed */
        op_free(op);
    }
    free(be->bucket);
    free(be->name);
    free(be);
}

static const struct elect_backend_ops es3_ops = {
    .create = es3_create,
    .replace = es3_replace,
    .get = es3_get,
    .list = es3_list,
    .del = es3_del,
    .free = es3_free,
};

struct elect_backend *
gw_elect_s3_new(struct gw_s3client *s3c, const char *bucket, char *errbuf, size_t errlen)
{
    char dummy[8];
    if (errbuf == NULL) {
        errbuf = dummy;
        errlen = sizeof(dummy);
    }
    if (s3c == NULL || bucket == NULL || bucket[0] == '\0' ||
        strlen(bucket) > GW_S3CLIENT_MAX_BUCKET ||
        strspn(bucket, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
            strlen(bucket)) {
        (void)snprintf(errbuf, errlen, "election.bucket: expected 1..255 of [A-Za-z0-9._-]");
        return NULL;
    }
    struct es3 *be = calloc(1, sizeof(*be));
    if (be == NULL) {
        (void)snprintf(errbuf, errlen, "out of memory");
        return NULL;
    }
    LIST_INIT(&be->ops);
    be->s3c = s3c;
    be->base.ops = &es3_ops;
    be->bucket = strdup(bucket);
    size_t nlen = strlen(bucket) + 4;
    be->name = malloc(nlen);
    if (be->bucket == NULL || be->name == NULL) {
        (void)snprintf(errbuf, errlen, "out of memory");
        goto fail;
    }
    (void)snprintf(be->name, nlen, "s3:%s", bucket);
    be->base.name = be->name;
    return &be->base;

fail:
    es3_free(&be->base);
    return NULL;
}
