/*
 * gateway/s3/sigv2.c: AWS Signature Version 2 verification (S3).
 *
 * Sources: Amazon S3 Developer Guide, "Signing and authenticating REST
 * requests" (RESTAuthentication: header form, query string form, the
 * sub-resource list) and the rules of botocore's HmacV1Auth /
 * HmacV1QueryAuth, whose sub-resource list this file follows (s3cmd's is a
 * subset of it).
 */
#include "gateway/s3/sigv2.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/codec.h"
#include "common/date.h"
#include "common/num.h"
#include "gateway/s3/digest.h"

#define MAX_PARAMS     256       /* query parameters or x-amz-* headers considered */
#define MAX_STS        (1 << 20) /* cap on a string to sign */
#define MAX_DATE_BYTES 64

/* Query parameters that are part of the resource (botocore's QSAOfInterest). */
static const char *const subresources[] = {
    "accelerate",
    "acl",
    "analytics",
    "cors",
    "defaultObjectAcl",
    "delete",
    "inventory",
    "lifecycle",
    "location",
    "logging",
    "metrics",
    "notification",
    "object-lock",
    "partNumber",
    "policy",
    "replication",
    "requestPayment",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "select",
    "select-type",
    "storageClass",
    "tagging",
    "torrent",
    "uploadId",
    "uploads",
    "versionId",
    "versioning",
    "versions",
    "website",
};

/* ---- small helpers ---- */

/* Percent-decodes n bytes at s into out (a '+' stays a '+', as urllib's unquote). */
static int
unquote_lenient(const char *s, size_t n, struct buf *out)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%' && i + 2 < n && hex_digit((unsigned char)s[i + 1]) >= 0 &&
            hex_digit((unsigned char)s[i + 2]) >= 0) {
            c = (char)(hex_digit((unsigned char)s[i + 1]) * 16 +
                       hex_digit((unsigned char)s[i + 2]));
            i += 2;
        }
        int rc = buf_append(out, &c, 1);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

/* A decoded parameter value into out[outlen] (NUL-terminated); ERR_INVAL if too long. */
static int
decode_into(const char *s, size_t n, char *out, size_t outlen)
{
    struct buf b;
    buf_init(&b, outlen - 1);
    int rc = unquote_lenient(s, n, &b);
    if (rc == 0) {
        memcpy(out, buf_cstr(&b), b.len + 1);
    }
    buf_cleanup(&b);
    return rc == 0 ? 0 : ERR_INVAL;
}

/* Decodes the base64 of a 20-byte signature (28 characters, one '='). */
static int
sig_decode(const char *s, size_t n, unsigned char sig[GW_SIGV2_SIG_LEN])
{
    unsigned char tmp[GW_SIGV2_B64_LEN];
    if (n != GW_SIGV2_B64_LEN || s[n - 1] != '=' || s[n - 2] == '=') {
        return ERR_INVAL;
    }
    /* EVP_DecodeBlock counts the padding as zero bytes: 21 for 28 characters */
    if (EVP_DecodeBlock(tmp, (const unsigned char *)s, (int)n) != GW_SIGV2_SIG_LEN + 1) {
        return ERR_INVAL;
    }
    memcpy(sig, tmp, GW_SIGV2_SIG_LEN);
    return 0;
}

static bool
is_subresource(const char *name, size_t n)
{
    for (size_t i = 0; i < sizeof(subresources) / sizeof(subresources[0]); i++) {
        if (strlen(subresources[i]) == n && memcmp(subresources[i], name, n) == 0) {
            return true;
        }
    }
    return false;
}

/* ---- parsing ---- */

int
gw_sigv2_authz_parse(const char *value, struct gw_sigv2_authz *out)
{
    memset(out, 0, sizeof(*out));
    if (value == NULL || strncmp(value, "AWS ", 4) != 0) {
        return ERR_NOTFOUND;
    }
    const char *ak = value + 4;
    const char *colon = strrchr(ak, ':');
    size_t aklen = colon != NULL ? (size_t)(colon - ak) : 0;
    if (aklen == 0 || aklen > GW_SIGV4_MAX_ACCESS_KEY || memchr(ak, ' ', aklen) != NULL ||
        sig_decode(colon + 1, strlen(colon + 1), out->signature) != 0) {
        memset(out, 0, sizeof(*out));
        return ERR_INVAL;
    }
    memcpy(out->access_key, ak, aklen);
    return 0;
}

int
gw_sigv2_presigned_parse(const char *query, struct gw_sigv2_authz *out)
{
    static const char *const names[3] = {"AWSAccessKeyId", "Signature", "Expires"};
    const char *val[3] = {NULL, NULL, NULL};
    size_t vlen[3] = {0, 0, 0};
    int seen = 0;
    memset(out, 0, sizeof(*out));
    for (const char *p = query != NULL ? query : ""; *p != '\0';) {
        size_t plen = strcspn(p, "&");
        size_t nlen = strcspn(p, "=&");
        for (int i = 0; i < 3; i++) {
            if (nlen == strlen(names[i]) && memcmp(p, names[i], nlen) == 0) {
                if (val[i] != NULL) {
                    return ERR_INVAL; /* repeated */
                }
                val[i] = nlen < plen ? p + nlen + 1 : p + nlen;
                vlen[i] = nlen < plen ? plen - nlen - 1 : 0;
                seen++;
            }
        }
        p += plen;
        p += *p == '&';
    }
    if (seen == 0) {
        return ERR_NOTFOUND;
    }
    char sig[3 * GW_SIGV2_B64_LEN + 1];
    uint64_t exp;
    int rc = ERR_INVAL;
    if (seen != 3 || vlen[0] == 0 ||
        decode_into(val[0], vlen[0], out->access_key, sizeof(out->access_key)) != 0 ||
        decode_into(val[1], vlen[1], sig, sizeof(sig)) != 0 ||
        sig_decode(sig, strlen(sig), out->signature) != 0 ||
        decode_into(val[2], vlen[2], out->expires, sizeof(out->expires)) != 0 ||
        parse_u64(out->expires, 0, INT64_MAX / 1000, &exp) != 0) {
        goto fail;
    }
    out->expires_s = (int64_t)exp;
    out->presigned = 1;
    return 0;
fail:
    memset(out, 0, sizeof(*out));
    return rc;
}

/* ---- the string to sign ---- */

/* One "name:value" contributor: an x-amz-* header or query parameter, or a sub-resource. */
struct item {
    char *name;  /* owned; lowercased for x-amz-* */
    char *value; /* owned; trimmed (headers) or decoded (query) */
    bool has_eq; /* sub-resources: "name=" was sent */
};

struct items {
    struct item v[MAX_PARAMS];
    size_t n;
};

static void
items_free(struct items *it)
{
    for (size_t i = 0; i < it->n; i++) {
        free(it->v[i].name);
        free(it->v[i].value);
    }
    it->n = 0;
}

static char *
dup_n(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p != NULL) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

/* Adds name (lowercased if lower) = value; values of a repeated name are joined with ','. */
static int
items_add(struct items *it, const char *name, size_t nlen, const char *value, size_t vlen,
          bool lower, bool has_eq, bool join)
{
    for (size_t i = 0; join && i < it->n; i++) {
        if (strlen(it->v[i].name) == nlen && strncasecmp(it->v[i].name, name, nlen) == 0) {
            size_t old = strlen(it->v[i].value);
            char *nv = realloc(it->v[i].value, old + 1 + vlen + 1);
            if (nv == NULL) {
                return ERR_NOMEM;
            }
            nv[old] = ',';
            memcpy(nv + old + 1, value, vlen);
            nv[old + 1 + vlen] = '\0';
            it->v[i].value = nv;
            return 0;
        }
    }
    if (it->n == MAX_PARAMS) {
        return ERR_TOOBIG;
    }
    struct item *x = &it->v[it->n];
    x->name = dup_n(name, nlen);
    x->value = dup_n(value, vlen);
    x->has_eq = has_eq;
    if (x->name == NULL || x->value == NULL) {
        free(x->name);
        free(x->value);
        return ERR_NOMEM;
    }
    for (char *c = x->name; lower && *c != '\0'; c++) {
        *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
    }
    it->n++;
    return 0;
}

/* Stable sort by name (insertion sort: a handful of items). */
static void
items_sort(struct items *it)
{
    for (size_t i = 1; i < it->n; i++) {
        struct item x = it->v[i];
        size_t j = i;
        while (j > 0 && strcmp(it->v[j - 1].name, x.name) > 0) {
            it->v[j] = it->v[j - 1];
            j--;
        }
        it->v[j] = x;
    }
}

static bool
is_ws(char c)
{
    return c == ' ' || c == '\t';
}

/* Trims spaces and tabs: [*s, *s + *n). */
static void
trim(const char **s, size_t *n)
{
    while (*n > 0 && is_ws((*s)[0])) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && is_ws((*s)[*n - 1])) {
        (*n)--;
    }
}

static const char *
header(const struct gw_sigv2_input *in, const char *name)
{
    for (size_t i = 0; i < in->nheaders; i++) {
        if (strcasecmp(in->headers[i].name, name) == 0) {
            return in->headers[i].value;
        }
    }
    return NULL;
}

/* Appends a header's trimmed value (or "") and a newline. */
static int
put_line(struct buf *out, const char *v)
{
    size_t n = v != NULL ? strlen(v) : 0;
    trim(&v, &n);
    int rc = n > 0 ? buf_append(out, v, n) : 0;
    return rc == 0 ? buf_append(out, "\n", 1) : rc;
}

/*
 * Walks the query: sub-resources into res; for a presigned URL, x-amz-*
 * parameters into amz and content-md5 / content-type into the two outputs.
 */
static int
scan_query(const struct gw_sigv2_input *in, bool presigned, struct items *res, struct items *amz,
           struct buf *md5, struct buf *ctype)
{
    int rc = 0;
    struct buf v;
    buf_init(&v, MAX_STS);
    for (const char *p = in->query != NULL ? in->query : ""; rc == 0 && *p != '\0';) {
        size_t plen = strcspn(p, "&");
        size_t nlen = strcspn(p, "=&");
        bool has_eq = nlen < plen;
        const char *val = has_eq ? p + nlen + 1 : p + nlen;
        size_t vlen = has_eq ? plen - nlen - 1 : 0;
        buf_reset(&v);
        rc = unquote_lenient(val, vlen, &v);
        if (rc == 0 && is_subresource(p, nlen)) {
            rc = items_add(res, p, nlen, buf_cstr(&v), v.len, false, has_eq, false);
        } else if (rc == 0 && presigned && nlen > 6 && strncasecmp(p, "x-amz-", 6) == 0) {
            rc = items_add(amz, p, nlen, buf_cstr(&v), v.len, true, true, true);
        } else if (rc == 0 && presigned && nlen == 11 && strncasecmp(p, "content-md5", 11) == 0) {
            buf_reset(md5);
            rc = buf_append(md5, v.data != NULL ? buf_cstr(&v) : "", v.len);
        } else if (rc == 0 && presigned && nlen == 12 && strncasecmp(p, "content-type", 12) == 0) {
            buf_reset(ctype);
            rc = buf_append(ctype, v.data != NULL ? buf_cstr(&v) : "", v.len);
        }
        p += plen;
        p += *p == '&';
    }
    buf_cleanup(&v);
    return rc;
}

static int
put_amz(struct buf *out, struct items *amz)
{
    int rc = 0;
    items_sort(amz);
    for (size_t i = 0; rc == 0 && i < amz->n; i++) {
        rc = buf_printf(out, "%s:%s\n", amz->v[i].name, amz->v[i].value);
    }
    return rc;
}

/*
 * The resource forms a signature is checked against.  SPEC is S3's.  The
 * others are what botocore's HmacV1Auth signs for path-style requests since
 * its endpoint rules (1.28+) build an "auth path" from the operation's URI:
 * a bucket-only path gets a trailing '/' ("/bkt/"), and the URI's own query
 * ("?list-type=2", "?delete", "?uploads", ...), which is the first parameter
 * of the wire query, is prefixed to the sub-resources ("/bkt?delete?delete").
 * Neither can be another request's SPEC string (a SPEC resource has at most
 * one '?' and a path ending in '/' is a different wire path), and both sign
 * the same method, path and sub-resources, so accepting them widens nothing.
 */
enum form { FORM_SPEC = 0, FORM_BOTO_SLASH, FORM_BOTO_URIQUERY, NFORMS };

/* Whether form applies to in at all. */
static bool
form_applies(enum form f, const struct gw_sigv2_input *in)
{
    const char *path = in->path != NULL ? in->path : "";
    bool vhost = in->vhost_bucket != NULL && in->vhost_bucket[0] != '\0';
    switch (f) {
    case FORM_SPEC:
        return true;
    case FORM_BOTO_SLASH: /* "/bkt": path style, bucket only */
        return !vhost && path[0] == '/' && path[1] != '\0' && strchr(path + 1, '/') == NULL;
    case FORM_BOTO_URIQUERY:
        return !vhost && in->query != NULL && in->query[0] != '\0' && in->query[0] != '&';
    case NFORMS:
    default:
        return false;
    }
}

static int
put_resource(struct buf *out, const struct gw_sigv2_input *in, enum form f, struct items *res)
{
    int rc = 0;
    if (in->vhost_bucket != NULL && in->vhost_bucket[0] != '\0') {
        rc = buf_printf(out, "/%s", in->vhost_bucket);
    }
    if (rc == 0) {
        rc = buf_append_str(out, in->path != NULL && in->path[0] != '\0' ? in->path : "/");
    }
    if (rc == 0 && f == FORM_BOTO_SLASH) {
        rc = buf_append_str(out, "/");
    }
    if (rc == 0 && f == FORM_BOTO_URIQUERY) {
        rc = buf_printf(out, "?%.*s", (int)strcspn(in->query, "&"), in->query);
    }
    items_sort(res);
    for (size_t i = 0; rc == 0 && i < res->n; i++) {
        rc = buf_printf(out, "%c%s%s%s", i == 0 ? '?' : '&', res->v[i].name,
                        res->v[i].has_eq ? "=" : "", res->v[i].value);
    }
    return rc;
}

static int string_to_sign(const struct gw_sigv2_input *in, const struct gw_sigv2_authz *a,
                          enum form f, struct buf *out);

int
gw_sigv2_string_to_sign(const struct gw_sigv2_input *in, const struct gw_sigv2_authz *a,
                        struct buf *out)
{
    return string_to_sign(in, a, FORM_SPEC, out);
}

static int
string_to_sign(const struct gw_sigv2_input *in, const struct gw_sigv2_authz *a, enum form f,
               struct buf *out)
{
    struct items *res = calloc(1, sizeof(*res));
    struct items *amz = calloc(1, sizeof(*amz));
    struct buf md5;
    struct buf ctype;
    buf_init(&md5, MAX_STS);
    buf_init(&ctype, MAX_STS);
    int rc = ERR_NOMEM;
    if (res == NULL || amz == NULL) {
        goto out;
    }
    rc = scan_query(in, a->presigned != 0, res, amz, &md5, &ctype);
    for (size_t i = 0; rc == 0 && i < in->nheaders; i++) {
        const char *name = in->headers[i].name;
        const char *v = in->headers[i].value;
        size_t vlen = strlen(v);
        trim(&v, &vlen);
        if (strncasecmp(name, "x-amz-", 6) == 0) {
            rc = items_add(amz, name, strlen(name), v, vlen, true, true, true);
        }
    }
    const char *hmd5 = header(in, "content-md5");
    const char *hctype = header(in, "content-type");
    const char *date = a->presigned                       ? a->expires
                       : header(in, "x-amz-date") != NULL ? ""
                                                          : header(in, "date");
    if (rc == 0) {
        rc = buf_printf(out, "%s\n", in->method);
    }
    if (rc == 0) {
        rc = put_line(out, hmd5 != NULL || md5.len == 0 ? hmd5 : buf_cstr(&md5));
    }
    if (rc == 0) {
        rc = put_line(out, hctype != NULL || ctype.len == 0 ? hctype : buf_cstr(&ctype));
    }
    if (rc == 0) {
        rc = put_line(out, date);
    }
    if (rc == 0) {
        rc = put_amz(out, amz);
    }
    if (rc == 0) {
        rc = put_resource(out, in, f, res);
    }
out:
    if (res != NULL) {
        items_free(res);
    }
    if (amz != NULL) {
        items_free(amz);
    }
    free(res);
    free(amz);
    buf_cleanup(&md5);
    buf_cleanup(&ctype);
    return rc;
}

/* ---- signing and verifying ---- */

static int
hmac_sha1(const char *secret, const void *msg, size_t len, unsigned char mac[GW_SIGV2_SIG_LEN])
{
    unsigned int maclen = 0;
    if (HMAC(gw_digest_md_sha1(), secret, (int)strlen(secret), msg, len, mac, &maclen) == NULL ||
        maclen != GW_SIGV2_SIG_LEN) {
        return ERR_NOMEM;
    }
    return 0;
}

int
gw_sigv2_sign(const char *secret, const void *sts, size_t len, char out[GW_SIGV2_B64_LEN + 1])
{
    unsigned char mac[GW_SIGV2_SIG_LEN];
    int rc = hmac_sha1(secret, sts, len, mac);
    if (rc == 0) {
        (void)EVP_EncodeBlock((unsigned char *)out, mac, GW_SIGV2_SIG_LEN);
    }
    OPENSSL_cleanse(mac, sizeof(mac));
    return rc;
}

/* The request time of the header form: x-amz-date, else Date.  0 or ERR_INVAL. */
static int
request_time(const struct gw_sigv2_input *in, int64_t *ms)
{
    const char *d = header(in, "x-amz-date");
    if (d == NULL) {
        d = header(in, "date");
    }
    if (d == NULL) {
        return ERR_INVAL;
    }
    size_t n = strlen(d);
    trim(&d, &n);
    char tmp[MAX_DATE_BYTES];
    if (n == 0 || n >= sizeof(tmp)) {
        return ERR_INVAL;
    }
    memcpy(tmp, d, n);
    tmp[n] = '\0';
    int64_t s;
    if (n == GW_SIGV4_AMZ_DATE_LEN && gw_sigv4_amz_date_parse(tmp, &s) == 0) {
        *ms = s * 1000;
        return 0;
    }
    /* "+0000" is what s3cmd and the AWS examples send for GMT */
    if (n == DATE_HTTP_LEN + 2 && strcmp(tmp + 26, "+0000") == 0) {
        memcpy(tmp + 26, "GMT", 4);
    }
    return date_http_parse(tmp, ms);
}

static int
failed(enum gw_sigv2_fail f, enum gw_sigv2_fail *why, int rc)
{
    if (why != NULL) {
        *why = f;
    }
    return rc;
}

int
gw_sigv2_verify(const char *secret, const struct gw_sigv2_authz *a, const struct gw_sigv2_input *in,
                int64_t now_ms, enum gw_sigv2_fail *why)
{
    int64_t t_ms;
    if (a->presigned) {
        if (now_ms / 1000 > a->expires_s) {
            return failed(GW_SIGV2_FAIL_EXPIRED, why, ERR_TIMEOUT);
        }
    } else {
        if (request_time(in, &t_ms) != 0) {
            return failed(GW_SIGV2_FAIL_NODATE, why, ERR_INVAL);
        }
        int64_t d = t_ms > now_ms ? t_ms - now_ms : now_ms - t_ms;
        if (d > (int64_t)GW_SIGV4_MAX_SKEW_S * 1000) {
            return failed(GW_SIGV2_FAIL_SKEW, why, ERR_TIMEOUT);
        }
    }
    struct buf sts;
    buf_init(&sts, MAX_STS);
    unsigned char mac[GW_SIGV2_SIG_LEN];
    int rc = 0;
    bool ok = false;
    for (enum form f = FORM_SPEC; rc == 0 && !ok && f < NFORMS; f++) {
        if (!form_applies(f, in)) {
            continue;
        }
        buf_reset(&sts);
        rc = string_to_sign(in, a, f, &sts);
        if (rc == 0) {
            rc = hmac_sha1(secret, sts.data != NULL ? sts.data : "", sts.len, mac);
        }
        ok = rc == 0 && CRYPTO_memcmp(mac, a->signature, GW_SIGV2_SIG_LEN) == 0;
    }
    buf_cleanup(&sts);
    OPENSSL_cleanse(mac, sizeof(mac));
    if (rc != 0) {
        return failed(GW_SIGV2_FAIL_INTERNAL, why, rc == ERR_TOOBIG ? ERR_INVAL : ERR_NOMEM);
    }
    if (!ok) {
        return failed(GW_SIGV2_FAIL_MISMATCH, why, ERR_AUTH);
    }
    return failed(GW_SIGV2_FAIL_NONE, why, 0);
}
