/* gateway/s3client/s3client.c: the one internal S3 client and its signer (see s3client.h). */
#define LOG_MODULE "s3client"
#include "gateway/s3client/s3client.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/mem.h"
#include "common/token.h"
#include "gateway/base/config.h"
#include "gateway/s3/s3xml.h"
#include "gateway/upstream/upstream.h"

/* Headers the builder adds itself: Host, x-amz-date, x-amz-content-sha256,
 * x-amz-security-token, Authorization. */
#define OWN_HEADERS      5
#define SIGN_NAMES_LOCAL 32 /* headers whose names gw_s3client_sign sorts without an allocation */

/* Bytes of an encoded key or query of one call. */
#define RAW_MAX ((size_t)16 * 1024)

/* One call in flight (gw_s3client_start). */
struct gw_s3client_op {
    struct gw_s3client *c;             /* the client */
    LIST_ENTRY(gw_s3client_op) link;   /* in c->ops */
    struct gw_xfer *x;                 /* the transfer */
    const struct gw_s3client_cbs *cbs; /* borrowed: the caller's callbacks */
    void *arg;                         /* their argument */
    char *body;                        /* owned copy of the request body, or NULL */
    size_t body_len;                   /* its length */
    size_t body_off;                   /* bytes handed to the upstream so far */
    int status;                        /* the answer's status; 0 before its head */
    struct buf err_doc;                /* a non-2xx answer's body (cap GW_S3CLIENT_ERR_BODY_MAX) */
};

LIST_HEAD(s3client_ops, gw_s3client_op);

static void op_free(struct gw_s3client_op *op);

struct gw_s3client {
    struct gw_upstream *up;              /* borrowed; NULL: signing only */
    const struct gw_config *cfg;         /* borrowed; credentials, region, addressing */
    struct gw_sigv4_keycache *kc;        /* owned; signing keys per day/region/service */
    char scheme[8];                      /* "http" or "https" */
    char host[GW_S3CLIENT_MAX_HOST + 1]; /* endpoint "host[:port]" */
    struct s3client_ops ops;             /* calls in flight */
    size_t nops;                         /* their number */
};

/* Headers an extra may not name: the builder or the upstream client writes them. */
static const char *const reserved[] = {
    "host",       "authorization",        "content-length",
    "x-amz-date", "x-amz-content-sha256", "x-amz-security-token",
    NULL,
};

/* Parses "http[s]://host[:port][/]" of the configuration. */
static int
parse_endpoint(const char *endpoint, char *scheme, size_t schemelen, char *host, size_t hostlen,
               char *errbuf, size_t errlen)
{
    const char *rest;
    if (endpoint == NULL) {
        (void)snprintf(errbuf, errlen, "upstream.endpoint: missing");
        return ERR_INVAL;
    }
    if (strncmp(endpoint, "http://", 7) == 0) {
        (void)snprintf(scheme, schemelen, "http");
        rest = endpoint + 7;
    } else if (strncmp(endpoint, "https://", 8) == 0) {
        (void)snprintf(scheme, schemelen, "https");
        rest = endpoint + 8;
    } else {
        (void)snprintf(errbuf, errlen, "upstream.endpoint: must start with http:// or https://");
        return ERR_INVAL;
    }
    size_t n = strcspn(rest, "/?#@");
    if (n == 0 || n >= hostlen || (rest[n] != '\0' && strcmp(rest + n, "/") != 0)) {
        (void)snprintf(errbuf, errlen, "upstream.endpoint: expected scheme://host[:port]");
        return ERR_INVAL;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)rest[i];
        if (c <= 0x20 || c >= 0x7f) {
            (void)snprintf(errbuf, errlen, "upstream.endpoint: bad character in host");
            return ERR_INVAL;
        }
    }
    memcpy(host, rest, n);
    host[n] = '\0';
    return 0;
}

static int
check_config(const struct gw_config *cfg, char *scheme, size_t schemelen, char *host,
             size_t hostlen, char *errbuf, size_t errlen)
{
    if (cfg == NULL) {
        (void)snprintf(errbuf, errlen, "no configuration");
        return ERR_INVAL;
    }
    int rc =
        parse_endpoint(cfg->upstream.endpoint, scheme, schemelen, host, hostlen, errbuf, errlen);
    if (rc != 0) {
        return rc;
    }
    if (cfg->upstream.access_key == NULL || cfg->upstream.access_key[0] == '\0' ||
        cfg->upstream.secret_key == NULL || cfg->upstream.secret_key[0] == '\0') {
        (void)snprintf(errbuf, errlen, "upstream: no access key or secret key");
        return ERR_INVAL;
    }
    if (cfg->upstream.region == NULL || cfg->upstream.region[0] == '\0') {
        (void)snprintf(errbuf, errlen, "upstream.region: missing");
        return ERR_INVAL;
    }
    return 0;
}

struct gw_s3client *
gw_s3client_new(struct gw_upstream *up, const struct gw_config *cfg, char *errbuf, size_t errlen)
{
    struct gw_s3client *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        (void)snprintf(errbuf, errlen, "out of memory");
        return NULL;
    }
    LIST_INIT(&c->ops);
    c->up = up;
    if (check_config(cfg, c->scheme, sizeof(c->scheme), c->host, sizeof(c->host), errbuf, errlen) !=
        0) {
        goto fail;
    }
    c->kc = gw_sigv4_keycache_new();
    if (c->kc == NULL) {
        (void)snprintf(errbuf, errlen, "out of memory");
        goto fail;
    }
    c->cfg = cfg;
    return c;

fail:
    gw_s3client_free(c);
    return NULL;
}

int
gw_s3client_set_config(struct gw_s3client *c, const struct gw_config *cfg)
{
    char scheme[sizeof(c->scheme)];
    char host[sizeof(c->host)];
    char errbuf[256];
    if (check_config(cfg, scheme, sizeof(scheme), host, sizeof(host), errbuf, sizeof(errbuf)) !=
        0) {
        log_error("keeping the old upstream for signed requests: %s", errbuf);
        return ERR_INVAL;
    }
    memcpy(c->scheme, scheme, sizeof(c->scheme));
    memcpy(c->host, host, sizeof(c->host));
    /* The key cache tells entries apart by a hash of the secret: a changed
     * secret or region simply misses. */
    c->cfg = cfg;
    return 0;
}

void
gw_s3client_free(struct gw_s3client *c)
{
    if (c == NULL) {
        return;
    }
    struct gw_s3client_op *op;
    while ((op = LIST_FIRST(&c->ops)) != NULL) {
        LIST_REMOVE(op, link);
        gw_upstream_xfer_cancel(op->x); /* no callback follows */
        op_free(op);
    }
    gw_sigv4_keycache_free(c->kc);
    free(c);
}

void
gw_s3client_msg_init(struct gw_s3client_msg *m)
{
    memset(m, 0, sizeof(*m));
    buf_init(&m->data, GW_S3CLIENT_MAX_BYTES);
}

void
gw_s3client_msg_cleanup(struct gw_s3client_msg *m)
{
    if (m == NULL) {
        return;
    }
    buf_cleanse(&m->data); /* holds the session token, if any */
    free(m->sh);           /* line_ptrs and offs live in the same allocation */
    gw_s3client_msg_init(m);
}

/* Drops the contents but keeps the storage. */
static void
msg_reset(struct gw_s3client_msg *m)
{
    buf_reset(&m->data);
    m->url = NULL;
    m->lines = NULL;
    m->nlines = 0;
}

static int
msg_reserve(struct gw_s3client_msg *m, size_t n)
{
    if (n <= m->slots) {
        return 0;
    }
    /* one allocation for the three, sh first (the strictest alignment of them) */
    struct gw_sigv4_header *sh =
        mem_zalloc(n * sizeof(*sh) + 2 * n * sizeof(size_t) + (n + 1) * sizeof(const char *));
    if (sh == NULL) {
        return ERR_NOMEM;
    }
    free(m->sh);
    m->sh = sh;
    m->offs = (size_t *)(void *)(sh + n);
    m->line_ptrs = (const char **)(void *)(m->offs + 2 * n);
    m->slots = n;
    return 0;
}

static bool
name_ok(const char *name)
{
    if (name == NULL || strlen(name) > 256 || !http_is_token(name, strlen(name))) {
        return false;
    }
    for (size_t i = 0; reserved[i] != NULL; i++) {
        if (strcasecmp(reserved[i], name) == 0) {
            return false;
        }
    }
    return true;
}

/* RFC 9110 5.5: field values are VCHAR, obs-text, SP and HTAB; no CR/LF/NUL. */
static bool
value_ok(const char *value)
{
    if (value == NULL) {
        return false;
    }
    for (const char *p = value; *p != '\0'; p++) {
        unsigned char c = (unsigned char)*p;
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            return false;
        }
    }
    return true;
}

/* A raw path or query piece: printable ASCII, no space, and none of stop. */
static bool
raw_ok(const char *s, const char *stop)
{
    for (const char *p = s; *p != '\0'; p++) {
        unsigned char c = (unsigned char)*p;
        if (c <= 0x20 || c >= 0x7f || strchr(stop, c) != NULL) {
            return false;
        }
    }
    return true;
}

static bool
bucket_ok(const char *b)
{
    size_t n = strlen(b);
    if (n > GW_S3CLIENT_MAX_BUCKET) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char c = b[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-')) {
            return false;
        }
    }
    return true;
}

static int
check_req(const struct gw_s3client_sign_req *rq)
{
    if (rq == NULL || rq->method == NULL || rq->method[0] == '\0' ||
        (rq->nextra > 0 && rq->extra == NULL)) {
        return ERR_INVAL;
    }
    if (!http_is_token(rq->method, strlen(rq->method))) {
        return ERR_INVAL;
    }
    if ((rq->bucket != NULL && !bucket_ok(rq->bucket)) ||
        (rq->key != NULL && !raw_ok(rq->key, "?#")) ||
        (rq->query != NULL && !raw_ok(rq->query, "#"))) {
        return ERR_INVAL;
    }
    if (rq->nextra > GW_S3CLIENT_MAX_EXTRA) {
        return ERR_TOOBIG;
    }
    for (size_t i = 0; i < rq->nextra; i++) {
        if (!name_ok(rq->extra[i].name) || !value_ok(rq->extra[i].value)) {
            return ERR_INVAL;
        }
    }
    const char *ph = rq->payload_hash;
    if (ph != NULL && strcmp(ph, GW_SIGV4_UNSIGNED) != 0 &&
        strcmp(ph, GW_SIGV4_STREAMING_UTRL) != 0) {
        if (strlen(ph) != GW_SIGV4_HEX_LEN || strspn(ph, "0123456789abcdef") != GW_SIGV4_HEX_LEN) {
            return ERR_INVAL;
        }
    }
    return 0;
}

/* Appends "lname\0Name: value\0" and records both offsets as header number *n. */
static int
add_header(struct gw_s3client_msg *m, size_t *n, const char *name, const char *value)
{
    size_t lname = m->data.len;
    size_t nlen = strlen(name);
    size_t vlen = strlen(value);
    /* one reservation, then plain copies: this runs for every header of every request */
    if (nlen > SIZE_MAX / 4 || vlen > SIZE_MAX / 4) {
        return ERR_TOOBIG;
    }
    int rc = buf_reserve(&m->data, 2 * nlen + vlen + 4);
    if (rc != 0) {
        return rc;
    }
    char *out = m->data.data + lname;
    for (size_t i = 0; i < nlen; i++) {
        char c = name[i];
        out[i] = (char)((c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c);
    }
    out[nlen] = '\0';
    size_t line = lname + nlen + 1;
    out = m->data.data + line;
    memcpy(out, name, nlen);
    memcpy(out + nlen, ": ", 2);
    memcpy(out + nlen + 2, value, vlen);
    out[nlen + 2 + vlen] = '\0';
    m->data.len = line + nlen + 2 + vlen + 1;
    m->data.data[m->data.len] = '\0';
    m->offs[2 * *n] = lname;
    m->offs[2 * *n + 1] = line;
    (*n)++;
    return 0;
}

static bool
s3_signed_name(const char *lname)
{
    return strncmp(lname, "x-amz-", 6) == 0 || strcmp(lname, "content-md5") == 0 ||
           strcmp(lname, "content-type") == 0 || strcmp(lname, "content-encoding") == 0 ||
           strcmp(lname, "host") == 0;
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * The sorted, unique ';'-joined SignedHeaders list: the builder's own
 * headers (0..nown) always, the extras per policy.  names is scratch of n
 * entries.
 */
static int
signed_list(const struct gw_s3client_msg *m, size_t n, size_t nown, enum gw_s3client_policy policy,
            const char **names, char *out, size_t outlen)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *l = m->sh[i].name;
        if (i >= nown && policy == GW_S3CLIENT_SIGN_S3 && !s3_signed_name(l)) {
            continue;
        }
        names[k++] = l;
    }
    qsort(names, k, sizeof(names[0]), cmp_str);
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < k; i++) {
        if (i > 0 && strcmp(names[i], names[i - 1]) == 0) {
            continue; /* a repeated header is one canonical line */
        }
        size_t sep = used > 0 ? 1 : 0;
        size_t len = strlen(names[i]);
        if (sep + len >= outlen - used) {
            out[0] = '\0';
            return ERR_TOOBIG;
        }
        out[used] = ';';
        memcpy(out + used + sep, names[i], len + 1);
        used += sep + len;
    }
    return 0;
}

/* Points sh[] and line_ptrs[] at the n headers in data (after its last growth). */
static void
msg_point(struct gw_s3client_msg *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *lname = m->data.data + m->offs[2 * i];
        const char *line = m->data.data + m->offs[2 * i + 1];
        m->sh[i].name = lname;
        m->sh[i].value = line + strlen(lname) + 2; /* "Name: " */
        m->line_ptrs[i] = line;
    }
    m->line_ptrs[n] = NULL;
}

int
gw_s3client_sign(struct gw_s3client *c, const struct gw_s3client_sign_req *rq,
                 struct gw_s3client_msg *m)
{
    const struct gw_config *cfg = c->cfg;
    const char *names_local[SIGN_NAMES_LOCAL]; /* a request's dozen: no allocation */
    const char **names = names_local;
    char amz_date[GW_SIGV4_AMZ_DATE_LEN + 1];
    char signed_hdrs[GW_SIGV4_MAX_SIGNED_HDRS + 1];
    char authz[GW_SIGV4_MAX_AUTHZ];
    size_t n = 0;
    struct buf path;
    char path_local[256]; /* a bucket and key that fit: no allocation */

    buf_init_local(&path, GW_S3CLIENT_MAX_BYTES, path_local, sizeof(path_local));
    msg_reset(m);
    int rc = check_req(rq);
    if (rc != 0) {
        goto fail;
    }
    const char *bucket = rq->bucket != NULL ? rq->bucket : "";
    bool virt = cfg->upstream.addressing == GW_ADDR_VIRTUAL && bucket[0] != '\0';
    const char *payload_hash = rq->payload_hash != NULL ? rq->payload_hash : GW_SIGV4_UNSIGNED;
    size_t total = OWN_HEADERS + rq->nextra;
    rc = msg_reserve(m, total);
    if (rc != 0) {
        goto fail;
    }
    if (total > SIGN_NAMES_LOCAL && (names = mem_zalloc_array(total, sizeof(*names))) == NULL) {
        rc = ERR_NOMEM;
        goto fail;
    }

    /* Path: "/bucket/key" (path style) or "/key" (virtual); S3 keys go on the
     * path exactly as given (no normalisation: DESIGN.md "One key, one meaning"). */
    const char *query = rq->query != NULL ? rq->query : "";
    if (!virt && bucket[0] != '\0') {
        rc = buf_append_strs(&path, "/", bucket, (const char *)NULL);
    }
    if (rc == 0 && rq->key != NULL) {
        rc = buf_append_strs(&path, "/", rq->key, (const char *)NULL);
    }
    if (rc == 0 && path.len == 0) {
        rc = buf_append_str(&path, "/");
    }
    char hostv[GW_S3CLIENT_MAX_HOST + GW_S3CLIENT_MAX_BUCKET + 2];
    if (rc == 0) {
        rc = str_concat(hostv, sizeof(hostv), virt ? bucket : "", virt ? "." : "", c->host,
                        (const char *)NULL);
    }
    /* data: url \0, then "lname\0Name: value\0" per header */
    if (rc == 0) {
        rc = buf_append_strs(&m->data, c->scheme, "://", hostv, buf_cstr(&path),
                             query[0] != '\0' ? "?" : "", query, (const char *)NULL);
    }
    if (rc == 0) {
        rc = buf_append(&m->data, "", 1);
    }
    if (rc != 0) {
        goto fail;
    }

    rc = gw_sigv4_amz_date_format(clock_wall_ms() / 1000, amz_date);
    if (rc == 0) {
        rc = add_header(m, &n, "Host", hostv);
    }
    if (rc == 0) {
        rc = add_header(m, &n, "x-amz-date", amz_date);
    }
    if (rc == 0) {
        rc = add_header(m, &n, "x-amz-content-sha256", payload_hash);
    }
    if (rc == 0 && cfg->upstream.session_token != NULL && cfg->upstream.session_token[0] != '\0') {
        rc = add_header(m, &n, "x-amz-security-token", cfg->upstream.session_token);
    }
    size_t nown = n;
    for (size_t i = 0; rc == 0 && i < rq->nextra; i++) {
        rc = add_header(m, &n, rq->extra[i].name, rq->extra[i].value);
    }
    if (rc != 0) {
        goto fail;
    }
    msg_point(m, n);
    rc = signed_list(m, n, nown, rq->policy, names, signed_hdrs, GW_SIGV4_MAX_SIGNED_HDRS + 1);
    if (rc != 0) {
        goto fail;
    }
    struct gw_sigv4_creds creds = {
        .access_key = cfg->upstream.access_key,
        .secret_key = cfg->upstream.secret_key,
        .session_token = cfg->upstream.session_token,
    };
    struct gw_sigv4_input in = {
        .method = rq->method,
        .path = buf_cstr(&path),
        .query = query,
        .headers = m->sh,
        .nheaders = n,
        .payload_hash = payload_hash,
    };
    rc = gw_sigv4_sign(c->kc, &creds, cfg->upstream.region, "s3", amz_date, &in, signed_hdrs, authz,
                       GW_SIGV4_MAX_AUTHZ);
    if (rc != 0) {
        goto fail;
    }
    rc = add_header(m, &n, "Authorization", authz);
    if (rc != 0) {
        goto fail;
    }
    msg_point(m, n); /* data may have moved; it no longer grows */
    m->url = m->data.data;
    m->lines = m->line_ptrs;
    m->nlines = n;
    rc = 0;
    goto out;

fail:
    msg_reset(m);
out:
    buf_cleanup(&path);
    if (names != names_local) {
        free(names);
    }
    return rc;
}

void
gw_s3client_msg_xfer_req(const struct gw_s3client_msg *m, const char *method, int64_t body_length,
                         struct gw_xfer_req *out)
{
    memset(out, 0, sizeof(*out));
    out->method = method;
    out->url = m->url;
    out->headers = m->lines;
    out->nheaders = m->nlines;
    out->body_length = body_length;
}

int
gw_s3client_encode(const char *s, bool keep_slash, struct buf *out)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t old = out->len;
    int rc = 0;
    for (const char *p = s; rc == 0 && *p != '\0'; p++) {
        unsigned char c = (unsigned char)*p;
        bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                     c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/');
        if (plain) {
            rc = buf_append(out, p, 1);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            rc = buf_append(out, e, sizeof(e));
        }
    }
    if (rc != 0 && out->data != NULL) {
        out->len = old; /* unchanged on failure, as buf_append promises */
        out->data[old] = '\0';
    }
    return rc;
}

/* ---- the gateway's own calls ---- */

static void
op_free(struct gw_s3client_op *op)
{
    free(op->body);
    buf_cleanup(&op->err_doc);
    free(op);
}

/* Takes op off its client's list (it is over, or being cancelled). */
static void
op_unlink(struct gw_s3client_op *op)
{
    LIST_REMOVE(op, link);
    op->c->nops--;
    op->x = NULL;
}

/* gw_xfer_cbs.read_body */
static ssize_t
on_call_read(void *arg, char *dst, size_t len)
{
    struct gw_s3client_op *op = arg;
    size_t n = op->body_len - op->body_off;
    n = n < len ? n : len;
    memcpy(dst, op->body + op->body_off, n);
    op->body_off += n;
    return (ssize_t)n;
}

static bool
is_2xx(int status)
{
    return status >= 200 && status < 300;
}

/* gw_xfer_cbs.on_head */
static int
on_call_head(void *arg, int status, const struct gw_header *headers, size_t n)
{
    struct gw_s3client_op *op = arg;
    op->status = status;
    return op->cbs->on_head != NULL ? op->cbs->on_head(op->arg, status, headers, n) : 0;
}

/* gw_xfer_cbs.on_body: 2xx bodies to the caller, error documents kept (capped) */
static int
on_call_body(void *arg, const char *data, size_t len)
{
    struct gw_s3client_op *op = arg;
    if (is_2xx(op->status)) {
        return op->cbs->on_body != NULL ? op->cbs->on_body(op->arg, data, len) : 0;
    }
    size_t room = op->err_doc.cap - op->err_doc.len;
    if (buf_append(&op->err_doc, data, len < room ? len : room) != 0) {
        buf_reset(&op->err_doc); /* out of memory: just lose the Code */
    }
    return 0;
}

/* The Code of the error document in op (into code[len]), or "" if none. */
static void
error_code(const struct gw_s3client_op *op, char *code, size_t len)
{
    code[0] = '\0';
    if (op->err_doc.len == 0) {
        return;
    }
    struct gw_s3xml *x = gw_s3xml_new(0, GW_S3CLIENT_ERR_BODY_MAX);
    if (x == NULL) {
        return;
    }
    if (gw_s3xml_feed(x, op->err_doc.data, op->err_doc.len) == 0 && gw_s3xml_finish(x) == 0 &&
        gw_s3xml_error_code(x) != NULL) {
        str_copy(code, len, gw_s3xml_error_code(x));
    }
    gw_s3xml_free(x);
}

/* gw_xfer_cbs.on_done */
static void
on_call_done(void *arg, int err)
{
    struct gw_s3client_op *op = arg;
    char code[64] = "";
    op_unlink(op);
    if (err == 0 && !is_2xx(op->status)) {
        error_code(op, code, sizeof(code));
    }
    /* The callback may free its owner and cancel other calls: op is off the
     * list already and is freed here, without touching the client again. */
    op->cbs->on_done(op->arg, err, op->status, code[0] != '\0' ? code : NULL);
    op_free(op);
}

static const struct gw_xfer_cbs call_cbs = {
    .read_body = on_call_read,
    .on_head = on_call_head,
    .on_body = on_call_body,
    .on_done = on_call_done,
};

/* Copies the call's body into op. */
static int
op_set_body(struct gw_s3client_op *op, const struct gw_s3client_call *call)
{
    if (!call->has_body) {
        return 0;
    }
    op->body = malloc(call->body_len > 0 ? call->body_len : 1);
    if (op->body == NULL) {
        return ERR_NOMEM;
    }
    if (call->body_len > 0) {
        memcpy(op->body, call->body, call->body_len);
    }
    op->body_len = call->body_len;
    return 0;
}

/* Signs op's call into m: the key encoded, the payload hashed unless given. */
static int
call_sign(struct gw_s3client *c, const struct gw_s3client_call *call,
          const struct gw_s3client_op *op, struct gw_s3client_msg *m)
{
    char hash[GW_SIGV4_HEX_LEN + 1];
    struct buf raw_key;
    buf_init(&raw_key, RAW_MAX);
    int rc = 0;
    const char *payload_hash = call->payload_hash;
    if (payload_hash == NULL) {
        rc = gw_sigv4_sha256_hex(op->body != NULL ? op->body : "", op->body_len, hash);
        payload_hash = hash;
    }
    if (rc == 0 && call->key != NULL) {
        rc = gw_s3client_encode(call->key, true, &raw_key);
    }
    if (rc == 0) {
        struct gw_s3client_sign_req rq = {
            .method = call->method,
            .bucket = call->bucket,
            .key = call->key != NULL ? buf_cstr(&raw_key) : NULL,
            .query = call->query,
            .extra = call->extra,
            .nextra = call->nextra,
            .payload_hash = payload_hash,
            .policy = GW_S3CLIENT_SIGN_ALL,
        };
        rc = gw_s3client_sign(c, &rq, m);
    }
    buf_cleanup(&raw_key);
    return rc;
}

int
gw_s3client_start(struct gw_s3client *c, const struct gw_s3client_call *call,
                  const struct gw_s3client_cbs *cbs, void *arg, struct gw_s3client_op **out)
{
    if (c->up == NULL || call == NULL || cbs == NULL || cbs->on_done == NULL ||
        call->bucket == NULL || call->bucket[0] == '\0' ||
        (call->has_body && call->body == NULL && call->body_len > 0)) {
        return ERR_INVAL;
    }
    struct gw_s3client_op *op = calloc(1, sizeof(*op));
    if (op == NULL) {
        return ERR_NOMEM;
    }
    op->c = c;
    op->cbs = cbs;
    op->arg = arg;
    buf_init(&op->err_doc, GW_S3CLIENT_ERR_BODY_MAX);
    struct gw_s3client_msg m;
    gw_s3client_msg_init(&m);
    int rc = op_set_body(op, call);
    if (rc == 0) {
        rc = call_sign(c, call, op, &m);
    }
    if (rc == 0) {
        struct gw_xfer_req xr;
        gw_s3client_msg_xfer_req(&m, call->method, call->has_body ? (int64_t)op->body_len : -1,
                                 &xr);
        rc = gw_upstream_xfer_start(c->up, &xr, &call_cbs, op, &op->x);
    }
    gw_s3client_msg_cleanup(&m);
    if (rc != 0) {
        op_free(op);
        return rc;
    }
    LIST_INSERT_HEAD(&c->ops, op, link);
    c->nops++;
    if (out != NULL) {
        *out = op;
    }
    return 0;
}

int
gw_s3client_abort_upload(struct gw_s3client *c, const char *bucket, const char *key,
                         const char *upload_id, const struct gw_s3client_cbs *cbs, void *arg,
                         struct gw_s3client_op **out)
{
    struct buf query;
    buf_init(&query, RAW_MAX);
    int rc = buf_append_str(&query, "uploadId=");
    if (rc == 0) {
        rc = gw_s3client_encode(upload_id, false, &query);
    }
    if (rc == 0) {
        const struct gw_s3client_call call = {
            .method = "DELETE",
            .bucket = bucket,
            .key = key,
            .query = buf_cstr(&query),
        };
        rc = gw_s3client_start(c, &call, cbs, arg, out);
    }
    buf_cleanup(&query);
    return rc;
}

void
gw_s3client_cancel(struct gw_s3client_op *op)
{
    if (op == NULL) {
        return;
    }
    struct gw_xfer *x = op->x;
    op_unlink(op);
    gw_upstream_xfer_cancel(x); /* no callback follows; a body cut short is never committed */
    op_free(op);
}

size_t
gw_s3client_pending(const struct gw_s3client *c)
{
    return c->nops;
}

const char *
gw_s3client_probe_bucket(const struct gw_config *cfg)
{
    if (cfg->election.backend == GW_ELECT_S3) {
        return cfg->election.bucket;
    }
    return cfg->nfences > 0 ? cfg->fences[0].bucket : NULL;
}
