/*
 * gateway/s3/sigv4.c: SigV4 canonicalisation (S3 rules) and the signer.
 * Signing keys and their cache live in sigv4_key.c, parsing and
 * verification in sigv4_parse.c, aws-chunked decoding in sigv4_chunked.c.
 *
 * Source for every rule here unless noted: Amazon S3 API Reference,
 * "Signature Calculations for the Authorization Header" ("Task 1: Create a
 * Canonical Request", "Task 2: Create a String to Sign", "Task 3: Calculate
 * Signature"), and the AWS SigV4 test suite.
 */
#include "gateway/s3/sigv4.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "common/codec.h"
#include "common/date.h"
#include "common/num.h"
#include "common/token.h"
#include "gateway/s3/digest.h"
#include "gateway/s3/sigv4_int.h"

#define MAX_QUERY_PARAMS 1024

/* ---- small helpers ---- */

void
gw_sigv4_wipe(void *p, size_t n)
{
    OPENSSL_cleanse(p, n);
}

int
gw_sigv4_sha256_hex(const void *p, size_t len, char hex[GW_SIGV4_HEX_LEN + 1])
{
    unsigned char md[GW_DIGEST_SHA256_LEN];

    if (gw_digest_sha256(p, len, md) != 0) {
        return ERR_NOMEM;
    }
    hex_encode(md, 32, hex);
    return 0;
}

/* ---- percent-encoding ---- */

/* RFC 3986 2.3 unreserved characters, the only ones SigV4 leaves unencoded
 * (1), and '/', which a path keeps (2): one load a byte when re-encoding. */
static const unsigned char uri_kept[256] = {
    ['-'] = 1, ['.'] = 1, ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1,
    ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1, ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1,
    ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1,
    ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1,
    ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1, ['_'] = 1, ['a'] = 1,
    ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1,
    ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1,
    ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1,
    ['z'] = 1, ['~'] = 1, ['/'] = 2,
};

/* Output staging so that encoding does not call buf_append per byte. */
struct stage {
    struct buf *out; /* destination */
    char tmp[256];   /* pending bytes */
    size_t n;        /* bytes in tmp */
    int err;         /* first error */
};

static void
stage_flush(struct stage *st)
{
    if (st->n > 0 && st->err == 0) {
        st->err = buf_append(st->out, st->tmp, st->n);
    }
    st->n = 0;
}

static void
stage_put(struct stage *st, char c)
{
    if (st->n == sizeof(st->tmp)) {
        stage_flush(st);
    }
    st->tmp[st->n++] = c;
}

/*
 * Decode s[0..n) once (%XX, and '+' as space when plus_space) and encode the
 * result per SigV4 UriEncode (uppercase hex; '/' kept when keep_slash),
 * appended to out.  Written in place: a byte in gives at most three out, so
 * room for 3n (or whatever the cap leaves) is made once, and no byte is
 * staged or appended on its own.  On failure out is unchanged.
 */
static int
recode(const char *s, size_t n, int plus_space, int keep_slash, struct buf *out)
{
    static const char up[] = "0123456789ABCDEF";
    const unsigned char kept = keep_slash ? 3 : 1; /* the uri_kept bits that stand for themselves */
    if (n == 0) {
        return 0;
    }
    size_t left = out->cap - out->len;
    size_t room = n <= left / 3 ? 3 * n : left;
    int err = buf_reserve(out, room);
    if (err != 0) {
        return err;
    }
    char *d = out->data + out->len;
    const char *end = d + room;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)s[i];
        if (!(uri_kept[b] & kept)) {
            if (b == '%') {
                int hi = i + 2 < n ? hex_digit((unsigned char)s[i + 1]) : -1;
                int lo = i + 2 < n ? hex_digit((unsigned char)s[i + 2]) : -1;
                if (hi < 0 || lo < 0) { /* a '%' needs two hex digits after it */
                    err = ERR_INVAL;
                    break;
                }
                b = (unsigned char)(hi << 4 | lo);
                i += 2;
            } else if (b == '+' && plus_space) {
                b = ' ';
            }
        }
        if (uri_kept[b] & kept) {
            if (d == end) {
                err = ERR_TOOBIG;
                break;
            }
            *d++ = (char)b;
        } else {
            if (end - d < 3) {
                err = ERR_TOOBIG;
                break;
            }
            d[0] = '%';
            d[1] = up[b >> 4];
            d[2] = up[b & 15];
            d += 3;
        }
    }
    if (err == 0) {
        out->len = (size_t)(d - out->data);
    }
    out->data[out->len] = '\0';
    return err;
}

/* RFC 3986 5.2.4 remove_dot_segments plus "//" squashing, for non-S3 services. */
static int
normalize_path(const char *p, size_t n, struct buf *out)
{
    size_t *stack = NULL; /* start offsets in out of each kept segment */
    size_t depth = 0;
    size_t base = out->len;
    int err = 0;

    stack = malloc((n / 2 + 2) * sizeof(*stack));
    if (stack == NULL) {
        return ERR_NOMEM;
    }
    size_t i = 0;
    while (i < n) {
        while (i < n && p[i] == '/') {
            i++;
        }
        size_t start = i;
        while (i < n && p[i] != '/') {
            i++;
        }
        size_t len = i - start;
        if (len == 0 || (len == 1 && p[start] == '.')) {
            continue;
        }
        if (len == 2 && p[start] == '.' && p[start + 1] == '.') {
            if (depth > 0) {
                depth--;
                out->len = stack[depth];
                out->data[out->len] = '\0';
            }
            continue;
        }
        stack[depth++] = out->len;
        err = buf_append(out, "/", 1);
        if (err == 0) {
            err = buf_append(out, p + start, len);
        }
        if (err != 0) {
            goto fail;
        }
    }
    if (out->len == base || (n > 0 && p[n - 1] == '/')) {
        err = buf_append(out, "/", 1);
    }
fail:
    free(stack);
    return err;
}

int
gw_sigv4_canonical_uri(const char *path, size_t len, unsigned flags, struct buf *out)
{
    if (len == 0) {
        return buf_append(out, "/", 1);
    }
    if (path[0] != '/') {
        return ERR_INVAL;
    }
    if (!(flags & GW_SIGV4_F_NORMALIZE_PATH)) {
        /* S3: decode once, encode once, keep every segment as it is. */
        return recode(path, len, 0, 1, out);
    }
    struct buf tmp;
    buf_init(&tmp, out->cap);
    int err = recode(path, len, 0, 1, &tmp);
    if (err == 0) {
        err = normalize_path(tmp.data, tmp.len, out);
    }
    buf_cleanup(&tmp);
    return err;
}

/* One query parameter, encoded, as offsets into the encoding buffer then as pointers. */
struct qparam {
    size_t koff, klen; /* encoded key */
    size_t voff, vlen; /* encoded value */
    const char *k;     /* set after encoding: key bytes */
    const char *v;     /* value bytes */
};

static int
memcmp_len(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    if (c != 0) {
        return c;
    }
    return an < bn ? -1 : an > bn;
}

/* qsort comparator for gw_sigv4_canonical_query: key, then value, in encoded bytes. */
static int
qparam_cmp(const void *a, const void *b)
{
    const struct qparam *x = a;
    const struct qparam *y = b;
    int c = memcmp_len(x->k, x->klen, y->k, y->klen);
    if (c != 0) {
        return c;
    }
    return memcmp_len(x->v, x->vlen, y->v, y->vlen);
}

int
gw_sigv4_canonical_query(const char *query, unsigned flags, struct buf *out)
{
    struct qparam local[16]; /* a presigned URL's dozen: no allocation */
    struct qparam *ps = local;
    size_t np = 0;
    size_t cap = sizeof(local) / sizeof(local[0]);
    struct buf enc;
    char enc_local[512]; /* a presigned URL's query fits: no allocation */
    int err = 0;

    if (query == NULL || query[0] == '\0') {
        return 0;
    }
    buf_init_local(&enc, out->cap, enc_local, sizeof(enc_local));
    const char *p = query;
    while (*p != '\0') {
        const char *amp = strchr(p, '&');
        size_t n = amp != NULL ? (size_t)(amp - p) : strlen(p);
        const char *piece = p;
        p += n;
        if (*p == '&') {
            p++;
        }
        if (n == 0) {
            continue; /* "a=1&&b=2", a trailing '&': nothing to sign */
        }
        const char *eq = memchr(piece, '=', n);
        size_t kn = eq != NULL ? (size_t)(eq - piece) : n;
        if (np == cap) {
            if (cap == MAX_QUERY_PARAMS) {
                err = ERR_INVAL;
                goto fail;
            }
            size_t ncap = cap * 2;
            struct qparam *nps = realloc(ps == local ? NULL : ps, ncap * sizeof(*ps));
            if (nps == NULL) {
                err = ERR_NOMEM;
                goto fail;
            }
            if (ps == local) {
                memcpy(nps, local, sizeof(local));
            }
            ps = nps;
            cap = ncap;
        }
        struct qparam *q = &ps[np];
        q->koff = enc.len;
        err = recode(piece, kn, 1, 0, &enc);
        if (err != 0) {
            goto fail;
        }
        q->klen = enc.len - q->koff;
        /* buf_cstr, not enc.data: "=" and "=&=" encode to nothing, and enc then has no
         * storage yet (NULL + 0 and memcmp(NULL, ..., 0) are undefined) */
        if ((flags & GW_SIGV4_F_SKIP_SIGNATURE) &&
            memcmp_len(buf_cstr(&enc) + q->koff, q->klen, "X-Amz-Signature", 15) == 0) {
            enc.len = q->koff; /* its value is never encoded */
            enc.data[enc.len] = '\0';
            continue;
        }
        q->voff = enc.len;
        if (eq != NULL) {
            err = recode(eq + 1, n - kn - 1, 1, 0, &enc);
            if (err != 0) {
                goto fail;
            }
        }
        q->vlen = enc.len - q->voff;
        np++;
    }
    const char *encoded = buf_cstr(&enc); /* "" when every key and value was empty */
    for (size_t i = 0; i < np; i++) {
        ps[i].k = encoded + ps[i].koff;
        ps[i].v = encoded + ps[i].voff;
    }
    if (np > 1) {
        qsort(ps, np, sizeof(*ps), qparam_cmp);
    }
    for (size_t i = 0; i < np && err == 0; i++) {
        if (i > 0) {
            err = buf_append(out, "&", 1);
        }
        if (err == 0) {
            err = buf_append(out, ps[i].k, ps[i].klen);
        }
        if (err == 0) {
            err = buf_append(out, "=", 1);
        }
        if (err == 0) {
            err = buf_append(out, ps[i].v, ps[i].vlen);
        }
    }
fail:
    if (ps != local) {
        free(ps);
    }
    buf_cleanup(&enc);
    return err;
}

/* ---- canonical headers ---- */

/* RFC 9110 5.6.2 tchar, lowercase letters only (SignedHeaders are lowercase). */
static int
is_lower_tchar(unsigned char c)
{
    return http_is_tchar(c) && !(c >= 'A' && c <= 'Z');
}

int
gw_sigv4_signed_headers_check(const char *s)
{
    size_t n = strlen(s);
    const char *prev = NULL;
    size_t prevlen = 0;

    if (n == 0 || n > GW_SIGV4_MAX_SIGNED_HDRS) {
        return ERR_INVAL;
    }
    const char *p = s;
    while (1) {
        size_t len = 0;
        while (p[len] != '\0' && p[len] != ';') {
            if (!is_lower_tchar((unsigned char)p[len])) {
                return ERR_INVAL;
            }
            len++;
        }
        if (len == 0) {
            return ERR_INVAL;
        }
        if (prev != NULL && memcmp_len(prev, prevlen, p, len) >= 0) {
            return ERR_INVAL; /* unsorted or repeated */
        }
        prev = p;
        prevlen = len;
        if (p[len] == '\0') {
            return 0;
        }
        p += len + 1;
    }
}

static int
is_hws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Trim, and make each inner run of whitespace one space (SigV4 "Trimall"). */
static void
stage_trimall(struct stage *st, const char *v)
{
    int pending = 0;
    int any = 0;
    for (const unsigned char *p = (const unsigned char *)v; *p != '\0'; p++) {
        if (is_hws(*p)) {
            pending = any;
            continue;
        }
        if (pending) {
            stage_put(st, ' ');
            pending = 0;
        }
        stage_put(st, (char)*p);
        any = 1;
    }
}

static int
name_eq(const char *hname, const char *sname, size_t slen)
{
    return strlen(hname) == slen && strncasecmp(hname, sname, slen) == 0;
}

int
gw_sigv4_canonical_headers(const struct gw_sigv4_header *headers, size_t n,
                           const char *signed_headers, const char *token, struct buf *out)
{
    struct stage st = {.out = out};

    if (gw_sigv4_signed_headers_check(signed_headers) != 0) {
        return ERR_INVAL;
    }
    const char *p = signed_headers;
    while (*p != '\0') {
        size_t len = strcspn(p, ";");
        for (size_t k = 0; k < len; k++) {
            stage_put(&st, p[k]);
        }
        stage_put(&st, ':');
        int found = 0;
        for (size_t i = 0; i < n; i++) {
            if (!name_eq(headers[i].name, p, len)) {
                continue;
            }
            if (found) {
                stage_put(&st, ','); /* repeated header: values in arrival order */
            }
            stage_trimall(&st, headers[i].value);
            found = 1;
        }
        if (!found) {
            if (token == NULL || !name_eq("x-amz-security-token", p, len)) {
                return ERR_INVAL;
            }
            stage_trimall(&st, token);
        }
        stage_put(&st, '\n');
        p += len;
        if (*p == ';') {
            p++;
        }
    }
    stage_flush(&st);
    return st.err;
}

static int
method_ok(const char *m)
{
    size_t n = strlen(m);
    if (n == 0 || n > 32) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (m[i] < 'A' || m[i] > 'Z') {
            return 0;
        }
    }
    return 1;
}

static int
payload_hash_ok(const char *h)
{
    size_t n = strlen(h);
    if (n == 0 || n > 128) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)h[i];
        if (c <= 0x20 || c >= 0x7f) {
            return 0;
        }
    }
    return 1;
}

int
gw_sigv4_canonical_request(const struct gw_sigv4_input *in, const char *signed_headers,
                           unsigned flags, const char *token, struct buf *out)
{
    const char *ph = in->payload_hash != NULL ? in->payload_hash : GW_SIGV4_UNSIGNED;

    if (in->method == NULL || !method_ok(in->method) || in->path == NULL || !payload_hash_ok(ph) ||
        (in->headers == NULL && in->nheaders > 0)) {
        return ERR_INVAL;
    }
    int err = buf_append_str(out, in->method);
    if (err == 0) {
        err = buf_append(out, "\n", 1);
    }
    if (err == 0) {
        err = gw_sigv4_canonical_uri(in->path, strlen(in->path), flags, out);
    }
    if (err == 0) {
        err = buf_append(out, "\n", 1);
    }
    if (err == 0) {
        err = gw_sigv4_canonical_query(in->query, flags, out);
    }
    if (err == 0) {
        err = buf_append(out, "\n", 1);
    }
    if (err == 0) {
        err = gw_sigv4_canonical_headers(in->headers, in->nheaders, signed_headers, token, out);
    }
    if (err == 0) {
        err = buf_append_strs(out, "\n", signed_headers, "\n", ph, (const char *)NULL);
    }
    return err;
}

static int
amz_date_ok(const char *amz_date)
{
    int64_t t;
    return amz_date != NULL && gw_sigv4_amz_date_parse(amz_date, &t) == 0;
}

/* gw_sigv4_string_to_sign once its date and scope are checked */
static int
string_to_sign(const char *amz_date, const char *scope, const void *creq, size_t creqlen,
               struct buf *out)
{
    char hex[GW_SIGV4_HEX_LEN + 1];
    int err = gw_sigv4_sha256_hex(creq, creqlen, hex);
    if (err != 0) {
        return err;
    }
    return buf_append_strs(out, GW_SIGV4_ALGORITHM, "\n", amz_date, "\n", scope, "\n", hex,
                           (const char *)NULL);
}

int
gw_sigv4_string_to_sign(const char *amz_date, const char *scope, const void *creq, size_t creqlen,
                        struct buf *out)
{
    if (!amz_date_ok(amz_date) || scope == NULL || scope[0] == '\0') {
        return ERR_INVAL;
    }
    return string_to_sign(amz_date, scope, creq, creqlen, out);
}

/* ---- signing ---- */

int
gw_sigv4_signature(struct gw_sigv4_keycache *kc, const char *secret, const char *token,
                   const char *region, const char *service, const char *amz_date,
                   const struct gw_sigv4_input *in, const char *signed_headers, unsigned flags,
                   char sig[GW_SIGV4_HEX_LEN + 1], struct buf *creq_out, struct buf *sts_out)
{
    struct buf creq;
    struct buf sts;
    char creq_local[1024]; /* a request's canonical form and string to sign fit: no allocation */
    char sts_local[256];
    char scope[GW_SIGV4_MAX_SCOPE + 1];
    char date[9];
    int err;

    buf_init_local(&creq, GW_SIGV4_MAX_CREQ, creq_local, sizeof(creq_local));
    buf_init_local(&sts, GW_SIGV4_MAX_CREQ, sts_local, sizeof(sts_local));
    if (secret == NULL || signed_headers == NULL || !amz_date_ok(amz_date)) {
        err = ERR_INVAL;
        goto fail;
    }
    memcpy(date, amz_date, 8);
    date[8] = '\0';
    err = gw_sigv4_scope(date, region, service, scope, sizeof(scope));
    if (err != 0) {
        goto fail;
    }
    err = gw_sigv4_canonical_request(in, signed_headers, flags, token, &creq);
    if (err != 0) {
        goto fail;
    }
    err = string_to_sign(amz_date, scope, creq.data, creq.len, &sts); /* both checked above */
    if (err != 0) {
        goto fail;
    }
    err = gw_sigv4_key_hmac_hex(kc, secret, date, region, service, sts.data, sts.len, sig);
    if (err != 0) {
        goto fail;
    }
    if (creq_out != NULL) {
        err = buf_append(creq_out, creq.data, creq.len);
    }
    if (err == 0 && sts_out != NULL) {
        err = buf_append(sts_out, sts.data, sts.len);
    }
fail:
    buf_cleanup(&creq);
    buf_cleanup(&sts);
    return err;
}

static int
access_key_ok(const char *ak)
{
    size_t n = strlen(ak);
    if (n == 0 || n > GW_SIGV4_MAX_ACCESS_KEY) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)ak[i];
        if (c <= 0x20 || c >= 0x7f || c == '/' || c == ',' || c == '=') {
            return 0;
        }
    }
    return 1;
}

int
gw_sigv4_sign(struct gw_sigv4_keycache *kc, const struct gw_sigv4_creds *c, const char *region,
              const char *service, const char *amz_date, const struct gw_sigv4_input *in,
              const char *signed_headers, char authz_out[], size_t authz_len)
{
    char sig[GW_SIGV4_HEX_LEN + 1];

    if (authz_len > 0) {
        authz_out[0] = '\0';
    }
    if (c == NULL || c->access_key == NULL || !access_key_ok(c->access_key)) {
        return ERR_INVAL;
    }
    int err = gw_sigv4_signature(kc, c->secret_key, c->session_token, region, service, amz_date, in,
                                 signed_headers, GW_SIGV4_F_NONE, sig, NULL, NULL);
    if (err != 0) {
        return err;
    }
    /* Validated by gw_sigv4_signature: amz_date's first 8 characters are the scope date. */
    char date8[9];
    memcpy(date8, amz_date, 8);
    date8[8] = '\0';
    return str_concat(authz_out, authz_len, GW_SIGV4_ALGORITHM, " Credential=", c->access_key, "/",
                      date8, "/", region, "/", service,
                      "/aws4_request, SignedHeaders=", signed_headers, ", Signature=", sig,
                      (const char *)NULL);
}
