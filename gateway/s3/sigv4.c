/*
 * gateway/s3/sigv4.c: SigV4 canonicalisation (S3 rules), signing keys and the
 * signer.  Parsing and verification live in sigv4_parse.c, aws-chunked
 * decoding in sigv4_chunked.c.
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

#define KEYCACHE_SLOTS   16   /* distinct (secret, day, region, service) kept */
#define MAX_SECRET       1024 /* longest secret key accepted */
#define MAX_QUERY_PARAMS 1024

/* ---- small helpers ---- */

void
gw_sigv4_wipe(void *p, size_t n)
{
    OPENSSL_cleanse(p, n);
}

int
gw_sigv4_hmac_hex(const unsigned char *key, size_t keylen, const void *msg, size_t len,
                  char hex[GW_SIGV4_HEX_LEN + 1])
{
    unsigned char mac[GW_DIGEST_SHA256_LEN];

    if (gw_digest_hmac_sha256(key, keylen, msg, len, mac) != 0) {
        return ERR_NOMEM;
    }
    hex_encode(mac, 32, hex);
    return 0;
}

static int
hmac_raw(const unsigned char *key, size_t keylen, const void *msg, size_t len,
         unsigned char out[32])
{
    return gw_digest_hmac_sha256(key, keylen, msg, len, out);
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

static int
is_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return 0;
        }
    }
    return 1;
}

static int
num2(const char *s)
{
    return (s[0] - '0') * 10 + (s[1] - '0');
}

/* A valid "YYYYMMDD"; fills y/m/d. */
static int
date8_parse(const char *s, int *y, int *m, int *d)
{
    if (!is_digits(s, 8)) {
        return ERR_INVAL;
    }
    *y = num2(s) * 100 + num2(s + 2);
    *m = num2(s + 4);
    *d = num2(s + 6);
    if (!date_valid_ymd(*y, (unsigned)*m, (unsigned)*d)) {
        return ERR_INVAL;
    }
    return 0;
}

int
gw_sigv4_amz_date_parse(const char *s, int64_t *out)
{
    int y;
    int m;
    int d;

    if (strlen(s) != GW_SIGV4_AMZ_DATE_LEN || s[8] != 'T' || s[15] != 'Z' || !is_digits(s + 9, 6) ||
        date8_parse(s, &y, &m, &d) != 0) {
        return ERR_INVAL;
    }
    int hh = num2(s + 9);
    int mm = num2(s + 11);
    int ss = num2(s + 13);
    if (hh > 23 || mm > 59 || ss > 60) {
        return ERR_INVAL;
    }
    *out = date_days_from_civil(y, (unsigned)m, (unsigned)d) * 86400 + (int64_t)hh * 3600 +
           (int64_t)mm * 60 + ss;
    return 0;
}

int
gw_sigv4_amz_date_format(int64_t t, char out[GW_SIGV4_AMZ_DATE_LEN + 1])
{
    if (t < 0 || t >= 253402300800LL) { /* 10000-01-01 */
        return ERR_INVAL;
    }
    int64_t secs = t % 86400;
    int64_t y;
    unsigned m;
    unsigned d;
    date_civil_from_days(t / 86400, &y, &m, &d);
    /* "YYYYMMDDTHHMMSSZ" (SigV4 "Handling dates"); 0 <= t < year 10000: four year digits */
    fmt_u64_zpad((uint64_t)y, 4, out);
    fmt_u64_zpad(m, 2, out + 4);
    fmt_u64_zpad(d, 2, out + 6);
    out[8] = 'T';
    fmt_u64_zpad((uint64_t)(secs / 3600), 2, out + 9);
    fmt_u64_zpad((uint64_t)(secs / 60 % 60), 2, out + 11);
    fmt_u64_zpad((uint64_t)(secs % 60), 2, out + 13);
    out[15] = 'Z';
    out[GW_SIGV4_AMZ_DATE_LEN] = '\0';
    return 0;
}

/* A scope part (region, service): printable ASCII, none of "/ ,;=". */
static int
scope_part_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c >= 0x7f || c == '/' || c == ',' || c == ';' || c == '=') {
            return 0;
        }
    }
    return 1;
}

static int
date8_ok(const char *date)
{
    int y;
    int m;
    int d;
    return strlen(date) == 8 && date8_parse(date, &y, &m, &d) == 0;
}

int
gw_sigv4_scope(const char *date, const char *region, const char *service, char *out, size_t outlen)
{
    if (!date8_ok(date) || !scope_part_ok(region, GW_SIGV4_MAX_REGION) ||
        !scope_part_ok(service, GW_SIGV4_MAX_SERVICE)) {
        return ERR_INVAL;
    }
    return str_concat(out, outlen, date, "/", region, "/", service, "/aws4_request",
                      (const char *)NULL);
}

/* ---- signing keys ---- */

struct keycache_slot {
    int used;                               /* slot holds a key */
    size_t secret_len;                      /* bytes of secret */
    char secret[MAX_SECRET];                /* the secret key itself (a secret): compared whole */
    char date[9];                           /* YYYYMMDD */
    char region[GW_SIGV4_MAX_REGION + 1];   /* scope region */
    char service[GW_SIGV4_MAX_SERVICE + 1]; /* scope service */
    unsigned char key[GW_SIGV4_KEY_LEN];    /* the derived signing key (secret) */
    struct gw_digest_hmac mac;              /* key, prepared for HMAC (secret) */
};

struct gw_sigv4_keycache {
    struct keycache_slot slot[KEYCACHE_SLOTS]; /* the entries */
    unsigned next;                             /* slot to replace next (round robin) */
    unsigned last;                             /* the slot of the last hit, tried first */
};

struct gw_sigv4_keycache *
gw_sigv4_keycache_new(void)
{
    return calloc(1, sizeof(struct gw_sigv4_keycache));
}

void
gw_sigv4_keycache_free(struct gw_sigv4_keycache *kc)
{
    if (kc == NULL) {
        return;
    }
    OPENSSL_cleanse(kc, sizeof(*kc));
    free(kc);
}

/* The four-step HMAC chain of "Derive a signing key" (SigV4 Task 3). */
static int
derive_key(const char *secret, size_t slen, const char *date, const char *region,
           const char *service, unsigned char key[GW_SIGV4_KEY_LEN])
{
    unsigned char k[4 + MAX_SECRET];
    unsigned char t[32];
    int err = ERR_INVAL;

    /* kSecret = "AWS4" + secret, binary (no NUL): SigV4 "Derive a signing key". */
    k[0] = 'A';
    k[1] = 'W';
    k[2] = 'S';
    k[3] = '4';
    memcpy(k + 4, secret, slen);
    err = hmac_raw(k, 4 + slen, date, 8, t);
    if (err != 0) {
        goto fail;
    }
    err = hmac_raw(t, 32, region, strlen(region), t);
    if (err != 0) {
        goto fail;
    }
    err = hmac_raw(t, 32, service, strlen(service), t);
    if (err != 0) {
        goto fail;
    }
    err = hmac_raw(t, 32, "aws4_request", 12, key);
fail:
    OPENSSL_cleanse(k, sizeof(k));
    OPENSSL_cleanse(t, sizeof(t));
    return err;
}

/* A signing key's scope, checked: what keycache_get checks before it derives. */
static bool
key_scope_ok(const char *date, const char *region, const char *service)
{
    return date8_ok(date) && scope_part_ok(region, GW_SIGV4_MAX_REGION) &&
           scope_part_ok(service, GW_SIGV4_MAX_SERVICE);
}

/* A signing key's secret, checked; *slen its length. */
static bool
key_secret_ok(const char *secret, size_t *slen)
{
    if (secret == NULL) {
        return false;
    }
    *slen = strlen(secret);
    return *slen > 0 && *slen <= MAX_SECRET;
}

static bool
slot_is(const struct keycache_slot *s, const char *secret, size_t slen, const char *date,
        const char *region, const char *service)
{
    return s->used && s->secret_len == slen && strcmp(s->date, date) == 0 &&
           strcmp(s->region, region) == 0 && strcmp(s->service, service) == 0 &&
           CRYPTO_memcmp(s->secret, secret, slen) == 0;
}

/*
 * The cache's slot for (secret, date, region, service), derived and prepared
 * on a miss (replacing the oldest); NULL with *err on failure.  A slot is
 * found by its whole secret, so a key rotated in place (the same access key,
 * the same memory, another secret) never meets the old one's slot.  The scope
 * is checked on a miss only: a hit is equal to a scope checked when stored.
 */
static const struct keycache_slot *
keycache_get(struct gw_sigv4_keycache *kc, const char *secret, size_t slen, const char *date,
             const char *region, const char *service, int *err)
{
    if (slot_is(&kc->slot[kc->last], secret, slen, date, region, service)) {
        return &kc->slot[kc->last];
    }
    for (unsigned i = 0; i < KEYCACHE_SLOTS; i++) {
        if (slot_is(&kc->slot[i], secret, slen, date, region, service)) {
            kc->last = i;
            return &kc->slot[i];
        }
    }
    if (!key_scope_ok(date, region, service)) {
        *err = ERR_INVAL;
        return NULL;
    }
    struct keycache_slot *s = &kc->slot[kc->next];
    OPENSSL_cleanse(s, sizeof(*s));
    *err = derive_key(secret, slen, date, region, service, s->key);
    if (*err == 0) {
        *err = gw_digest_hmac_init(&s->mac, s->key, GW_SIGV4_KEY_LEN);
    }
    if (*err != 0) {
        OPENSSL_cleanse(s, sizeof(*s));
        return NULL;
    }
    s->used = 1;
    s->secret_len = slen;
    memcpy(s->secret, secret, slen);
    memcpy(s->date, date, 9);
    memcpy(s->region, region, strlen(region) + 1);
    memcpy(s->service, service, strlen(service) + 1);
    kc->last = kc->next;
    kc->next = (kc->next + 1) % KEYCACHE_SLOTS;
    return s;
}

int
gw_sigv4_signing_key(struct gw_sigv4_keycache *kc, const char *secret, const char *date,
                     const char *region, const char *service, unsigned char key[GW_SIGV4_KEY_LEN])
{
    size_t slen = 0;
    int err = 0;
    if (!key_secret_ok(secret, &slen)) {
        return ERR_INVAL;
    }
    if (kc == NULL) {
        return key_scope_ok(date, region, service)
                   ? derive_key(secret, slen, date, region, service, key)
                   : ERR_INVAL;
    }
    const struct keycache_slot *s = keycache_get(kc, secret, slen, date, region, service, &err);
    if (s == NULL) {
        return err;
    }
    memcpy(key, s->key, GW_SIGV4_KEY_LEN);
    return 0;
}

/* HMAC-SHA256 of msg under the signing key of (secret, date, region, service),
 * as lowercase hex: the key's prepared states from kc, or derived now. */
static int
signing_hmac_hex(struct gw_sigv4_keycache *kc, const char *secret, const char *date,
                 const char *region, const char *service, const void *msg, size_t len,
                 char hex[GW_SIGV4_HEX_LEN + 1])
{
    unsigned char mac[GW_DIGEST_SHA256_LEN];
    size_t slen = 0;
    int err = 0;
    if (!key_secret_ok(secret, &slen)) {
        return ERR_INVAL;
    }
    if (kc == NULL) {
        if (!key_scope_ok(date, region, service)) {
            return ERR_INVAL;
        }
        unsigned char key[GW_SIGV4_KEY_LEN];
        err = derive_key(secret, slen, date, region, service, key);
        if (err == 0) {
            err = gw_sigv4_hmac_hex(key, sizeof(key), msg, len, hex);
        }
        OPENSSL_cleanse(key, sizeof(key));
        return err;
    }
    const struct keycache_slot *s = keycache_get(kc, secret, slen, date, region, service, &err);
    if (s == NULL) {
        return err;
    }
    if (gw_digest_hmac_final(&s->mac, msg, len, mac) != 0) {
        return ERR_NOMEM;
    }
    hex_encode(mac, sizeof(mac), hex);
    OPENSSL_cleanse(mac, sizeof(mac));
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

/* b stands for itself in SigV4's UriEncode (keep_slash: 2 in a path, else 0). */
static int
is_kept(unsigned char b, int keep_slash)
{
    return uri_kept[b] == 1 || (uri_kept[b] == 2 && keep_slash);
}

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

/* n bytes that stand for themselves: staged, or past the stage's room straight to the buffer. */
static void
stage_bytes(struct stage *st, const char *p, size_t n)
{
    if (n > sizeof(st->tmp) - st->n) {
        stage_flush(st);
        if (n > sizeof(st->tmp)) {
            if (st->err == 0) {
                st->err = buf_append(st->out, p, n);
            }
            return;
        }
    }
    memcpy(st->tmp + st->n, p, n);
    st->n += n;
}

static void
stage_byte_encoded(struct stage *st, unsigned char b, int keep_slash)
{
    static const char up[] = "0123456789ABCDEF";
    if (is_kept(b, keep_slash)) {
        stage_put(st, (char)b);
        return;
    }
    stage_put(st, '%');
    stage_put(st, up[b >> 4]);
    stage_put(st, up[b & 15]);
}

/*
 * Decode s[0..n) once (%XX, and '+' as space when plus_space) and encode the
 * result per SigV4 UriEncode (uppercase hex; '/' kept when keep_slash).
 */
static int
recode(const char *s, size_t n, int plus_space, int keep_slash, struct buf *out)
{
    struct stage st = {.out = out};

    for (size_t i = 0; i < n; i++) {
        size_t j = i; /* a run that encodes to itself, staged whole */
        while (j < n && is_kept((unsigned char)s[j], keep_slash)) {
            j++;
        }
        if (j > i) {
            stage_bytes(&st, s + i, j - i);
            i = j - 1;
            continue;
        }
        unsigned char b = (unsigned char)s[i];
        if (b == '%') {
            if (i + 2 >= n) { /* a '%' needs two hex digits after it */
                return ERR_INVAL;
            }
            int hi = hex_digit((unsigned char)s[i + 1]);
            int lo = hex_digit((unsigned char)s[i + 2]);
            if (hi < 0 || lo < 0) {
                return ERR_INVAL;
            }
            b = (unsigned char)(hi << 4 | lo);
            i += 2;
        } else if (b == '+' && plus_space) {
            b = ' ';
        }
        stage_byte_encoded(&st, b, keep_slash);
    }
    stage_flush(&st);
    return st.err;
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
        q->voff = enc.len;
        if (eq != NULL) {
            err = recode(eq + 1, n - kn - 1, 1, 0, &enc);
            if (err != 0) {
                goto fail;
            }
        }
        q->vlen = enc.len - q->voff;
        /* buf_cstr, not enc.data: "=" and "=&=" encode to nothing, and enc then has no
         * storage yet (NULL + 0 and memcmp(NULL, ..., 0) are undefined) */
        if ((flags & GW_SIGV4_F_SKIP_SIGNATURE) &&
            memcmp_len(buf_cstr(&enc) + q->koff, q->klen, "X-Amz-Signature", 15) == 0) {
            enc.len = q->koff;
            continue;
        }
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
    err = signing_hmac_hex(kc, secret, date, region, service, sts.data, sts.len, sig);
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
