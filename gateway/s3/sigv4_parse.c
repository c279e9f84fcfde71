/*
 * gateway/s3/sigv4_parse.c: inbound SigV4: the Authorization header, presigned
 * query parameters, and verification of a request against a secret.
 *
 * Sources: Amazon S3 API Reference, "Authenticating Requests: Using the
 * Authorization Header" (the header's three components) and "Authenticating
 * Requests: Using Query Parameters" (presigned URLs).
 */
#include "gateway/s3/sigv4.h"

#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "common/buf.h"
#include "common/codec.h"
#include "common/num.h"

#define CRED_TERM "aws4_request"

/* ---- Credential=AK/YYYYMMDD/region/service/aws4_request ---- */

/* Copy s[0..n) into dst[dstsize] as a string; 0 if it does not fit or is empty. */
static int
copy_part(char *dst, size_t dstsize, const char *s, size_t n)
{
    if (n == 0 || n >= dstsize) {
        return 0;
    }
    memcpy(dst, s, n);
    dst[n] = '\0';
    return 1;
}

/* A credential's bytes: printable ASCII, no space, no ',' or '=' (which would end it in a header).
 */
static int
credential_chars_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c >= 0x7f || c == ',' || c == '=') {
            return 0;
        }
    }
    return 1;
}

/* Parse a credential value (len bytes, already percent-decoded) into out. */
static int
credential_parse(const char *s, size_t len, struct gw_sigv4_authz *out)
{
    const char *part[5];
    size_t plen[5];
    size_t k = 0;
    size_t start = 0;

    if (!credential_chars_ok(s, len)) {
        return ERR_INVAL;
    }
    for (size_t i = 0; i <= len; i++) {
        if (i == len || s[i] == '/') {
            if (k == 5) {
                return ERR_INVAL; /* more than five parts */
            }
            part[k] = s + start;
            plen[k] = i - start;
            k++;
            start = i + 1;
        }
    }
    if (k != 5 || plen[1] != 8 || plen[4] != strlen(CRED_TERM) ||
        memcmp(part[4], CRED_TERM, plen[4]) != 0) {
        return ERR_INVAL;
    }
    if (!copy_part(out->access_key, sizeof(out->access_key), part[0], plen[0]) ||
        !copy_part(out->date, sizeof(out->date), part[1], plen[1]) ||
        !copy_part(out->region, sizeof(out->region), part[2], plen[2]) ||
        !copy_part(out->service, sizeof(out->service), part[3], plen[3])) {
        return ERR_INVAL;
    }
    /* gw_sigv4_scope validates the date and the region and service characters. */
    if (gw_sigv4_scope(out->date, out->region, out->service, out->scope, sizeof(out->scope)) != 0) {
        return ERR_INVAL;
    }
    return 0;
}

static int
signed_headers_parse(const char *s, size_t len, struct gw_sigv4_authz *out)
{
    if (!copy_part(out->signed_headers, sizeof(out->signed_headers), s, len)) {
        return ERR_INVAL;
    }
    return gw_sigv4_signed_headers_check(out->signed_headers);
}

static int
signature_parse(const char *s, size_t len, struct gw_sigv4_authz *out)
{
    return hex_decode(s, len, out->signature, sizeof(out->signature));
}

/* ---- Authorization header ---- */

int
gw_sigv4_authz_parse(const char *value, struct gw_sigv4_authz *out)
{
    static const char alg[] = GW_SIGV4_ALGORITHM " ";
    int seen_cred = 0;
    int seen_sh = 0;
    int seen_sig = 0;
    int err = ERR_INVAL;

    memset(out, 0, sizeof(*out));
    if (value == NULL) {
        return ERR_INVAL;
    }
    size_t total = strnlen(value, GW_SIGV4_MAX_AUTHZ + 1);
    if (total > GW_SIGV4_MAX_AUTHZ) {
        goto fail;
    }
    if (strncmp(value, alg, sizeof(alg) - 1) != 0) {
        /* SigV2 ("AWS AK:sig") and SigV4a (AWS4-ECDSA-P256-SHA256) are valid elsewhere. */
        size_t toklen = strcspn(value, " ");
        if ((toklen == 3 && memcmp(value, "AWS", 3) == 0) ||
            (strncmp(value, "AWS4-", 5) == 0 && strncmp(value, alg, sizeof(alg) - 2) != 0)) {
            err = ERR_UNSUPPORTED;
        }
        goto fail;
    }
    const char *p = value + sizeof(alg) - 1;
    while (*p == ' ') {
        p++;
    }
    for (;;) {
        const char *eq = strchr(p, '=');
        if (eq == NULL) {
            goto fail;
        }
        size_t nlen = (size_t)(eq - p);
        const char *v = eq + 1;
        size_t vlen = strcspn(v, ",");
        int perr = ERR_INVAL;
        if (nlen == 10 && memcmp(p, "Credential", 10) == 0 && !seen_cred) {
            seen_cred = 1;
            perr = credential_parse(v, vlen, out);
        } else if (nlen == 13 && memcmp(p, "SignedHeaders", 13) == 0 && !seen_sh) {
            seen_sh = 1;
            perr = signed_headers_parse(v, vlen, out);
        } else if (nlen == 9 && memcmp(p, "Signature", 9) == 0 && !seen_sig) {
            seen_sig = 1;
            perr = signature_parse(v, vlen, out);
        }
        if (perr != 0) {
            goto fail; /* unknown or repeated component, or a bad value */
        }
        p = v + vlen;
        if (*p == '\0') {
            break;
        }
        p++; /* ',' */
        while (*p == ' ') {
            p++; /* SDKs send ", ", s3cmd and the S3 docs "," */
        }
    }
    if (!seen_cred || !seen_sh || !seen_sig) {
        goto fail;
    }
    return 0;
fail:
    memset(out, 0, sizeof(*out));
    return err;
}

/* ---- presigned query ---- */

/* The presigned parameters, indexes into seen[] of gw_sigv4_presigned_parse. */
enum {
    P_ALG,
    P_CRED,
    P_DATE,
    P_EXPIRES,
    P_SH,
    P_SIG,
    P_TOKEN,
    P_CONTENT,
    P_COUNT,
};

static const struct strlit pnames[P_COUNT] = {
    STRLIT("X-Amz-Algorithm"),      STRLIT("X-Amz-Credential"),     STRLIT("X-Amz-Date"),
    STRLIT("X-Amz-Expires"),        STRLIT("X-Amz-SignedHeaders"),  STRLIT("X-Amz-Signature"),
    STRLIT("X-Amz-Security-Token"), STRLIT("X-Amz-Content-Sha256"),
};

static int
presigned_param(int which, const char *v, size_t vlen, struct gw_sigv4_authz *out)
{
    uint64_t u;

    switch (which) {
    case P_ALG:
        if (strcmp(v, GW_SIGV4_ALGORITHM) != 0) {
            return strncmp(v, "AWS4-", 5) == 0 ? ERR_UNSUPPORTED : ERR_INVAL;
        }
        return 0;
    case P_CRED:
        return credential_parse(v, vlen, out);
    case P_DATE: {
        int64_t t;
        if (gw_sigv4_amz_date_parse(v, &t) != 0) {
            return ERR_INVAL;
        }
        memcpy(out->amz_date, v, GW_SIGV4_AMZ_DATE_LEN + 1);
        return 0;
    }
    case P_EXPIRES:
        if (parse_u64(v, 1, GW_SIGV4_MAX_EXPIRES, &u) != 0) {
            return ERR_INVAL;
        }
        out->expires = u;
        return 0;
    case P_SH:
        return signed_headers_parse(v, vlen, out);
    case P_SIG:
        return signature_parse(v, vlen, out);
    case P_CONTENT:
        /* A hex SHA-256 or UNSIGNED-PAYLOAD: letters, digits and '-' only. */
        if (!copy_part(out->content_sha256, sizeof(out->content_sha256), v, vlen) ||
            strspn(v, "0123456789abcdefABCDEFGHIJKLMNOPQRSTUVWXYZ-") != vlen) {
            return ERR_INVAL;
        }
        return 0;
    case P_TOKEN:
    default:
        return ERR_INVAL;
    }
}

int
gw_sigv4_presigned_parse(const char *query, struct gw_sigv4_authz *out)
{
    int seen[P_COUNT] = {0};
    char val[GW_SIGV4_MAX_SIGNED_HDRS + 1];
    int err = ERR_INVAL;

    memset(out, 0, sizeof(*out));
    if (query == NULL) {
        return ERR_NOTFOUND;
    }
    const char *p = query;
    while (*p != '\0') {
        size_t n = strcspn(p, "&");
        const char *piece = p;
        p += n;
        if (*p == '&') {
            p++;
        }
        /* Our keys are all unreserved characters, so compare them undecoded. */
        const char *eq = memchr(piece, '=', n);
        size_t kn = eq != NULL ? (size_t)(eq - piece) : n;
        int which = -1;
        for (int i = 0; i < P_COUNT && which < 0; i++) {
            if (pnames[i].n == kn && memcmp(piece, pnames[i].s, kn) == 0) {
                which = i;
            }
        }
        if (which < 0) {
            continue; /* not ours: part of the canonical query, nothing more */
        }
        if (seen[which]++ || kn == n) {
            goto fail; /* repeated, or no '=' */
        }
        if (which == P_TOKEN) {
            /* The token is only signed (it is in the canonical query); no need to decode it. */
            out->has_token = 1;
            continue;
        }
        size_t vlen = 0; /* '+' as space, as in gw_sigv4_canonical_query; no NUL (%00) */
        if (pct_decode(piece + kn + 1, n - kn - 1, true, val, sizeof(val) - 1, &vlen) != 0 ||
            vlen == 0) {
            goto fail;
        }
        err = presigned_param(which, val, vlen, out);
        if (err != 0) {
            goto fail;
        }
        err = ERR_INVAL;
    }
    if (!seen[P_SIG] && !seen[P_ALG]) {
        err = ERR_NOTFOUND;
        goto fail;
    }
    for (int i = 0; i < P_TOKEN; i++) { /* all but the optional ones */
        if (!seen[i]) {
            goto fail;
        }
    }
    out->presigned = 1;
    return 0;
fail:
    memset(out, 0, sizeof(*out));
    return err;
}

/* ---- verification ---- */

const char *
gw_sigv4_fail_s3code(enum gw_sigv4_fail f)
{
    switch (f) {
    case GW_SIGV4_FAIL_NONE:
        return "";
    case GW_SIGV4_FAIL_MALFORMED:
        return "AuthorizationHeaderMalformed";
    case GW_SIGV4_FAIL_QUERY:
        return "AuthorizationQueryParametersError";
    case GW_SIGV4_FAIL_SKEW:
        return "RequestTimeTooSkewed";
    case GW_SIGV4_FAIL_EXPIRED:
        return "AccessDenied";
    case GW_SIGV4_FAIL_MISMATCH:
        return "SignatureDoesNotMatch";
    case GW_SIGV4_FAIL_INTERNAL:
    default:
        return "InternalError";
    }
}

/* The only value of header name (any case), or NULL if absent or repeated. */
static const char *
header_one(const struct gw_sigv4_input *in, const char *name, int *count)
{
    const char *v = NULL;
    *count = 0;
    for (size_t i = 0; i < in->nheaders; i++) {
        if (strcasecmp(in->headers[i].name, name) == 0) {
            v = in->headers[i].value;
            (*count)++;
        }
    }
    return *count == 1 ? v : NULL;
}

/* Is name one of the ';'-separated names in list? */
static int
list_has(const char *list, const char *name)
{
    size_t n = strlen(name);
    const char *p = list;
    while (*p != '\0') {
        size_t len = strcspn(p, ";");
        if (len == n && memcmp(p, name, n) == 0) {
            return 1;
        }
        p += len;
        if (*p == ';') {
            p++;
        }
    }
    return 0;
}

/* A header value without surrounding blanks, copied into dst. */
static int
trimmed_copy(const char *v, char *dst, size_t dstsize)
{
    while (*v == ' ' || *v == '\t') {
        v++;
    }
    size_t n = strlen(v);
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t')) {
        n--;
    }
    return copy_part(dst, dstsize, v, n);
}

int
gw_sigv4_verify(struct gw_sigv4_keycache *kc, const char *secret, const struct gw_sigv4_authz *a,
                const struct gw_sigv4_input *in, const struct gw_sigv4_verify_opts *opts,
                struct gw_sigv4_verified *v, enum gw_sigv4_fail *why)
{
    enum gw_sigv4_fail f = a->presigned ? GW_SIGV4_FAIL_QUERY : GW_SIGV4_FAIL_MALFORMED;
    char amz_date[GW_SIGV4_AMZ_DATE_LEN + 1];
    char phash[130];
    char sig[GW_SIGV4_HEX_LEN + 1];
    unsigned char sigbin[32];
    struct gw_sigv4_input req = *in;
    int64_t t;
    int count;
    int err = ERR_INVAL;

    if (v != NULL) {
        OPENSSL_cleanse(v, sizeof(*v));
    }
    if (secret == NULL || a->access_key[0] == '\0' || !list_has(a->signed_headers, "host")) {
        goto fail;
    }
    if ((opts->region != NULL && strcmp(opts->region, a->region) != 0) ||
        (opts->service != NULL && strcmp(opts->service, a->service) != 0)) {
        goto fail; /* S3 names the expected region in AuthorizationHeaderMalformed */
    }
    /* The request time: X-Amz-Date, which must be signed (header form) or in the query. */
    if (a->presigned) {
        memcpy(amz_date, a->amz_date, sizeof(amz_date));
    } else {
        const char *d = header_one(in, "x-amz-date", &count);
        if (d == NULL || !list_has(a->signed_headers, "x-amz-date") ||
            !trimmed_copy(d, amz_date, sizeof(amz_date))) {
            goto fail;
        }
    }
    if (gw_sigv4_amz_date_parse(amz_date, &t) != 0 || memcmp(amz_date, a->date, 8) != 0) {
        goto fail;
    }
    /*
     * Payload hash: the caller's; else, presigned, the X-Amz-Content-Sha256 query
     * parameter or UNSIGNED-PAYLOAD (S3 "Authenticating Requests: Using Query
     * Parameters"); else the x-amz-content-sha256 header.
     */
    if (req.payload_hash == NULL && a->presigned) {
        req.payload_hash = a->content_sha256[0] != '\0' ? a->content_sha256 : GW_SIGV4_UNSIGNED;
    }
    if (req.payload_hash == NULL) {
        const char *h = header_one(in, "x-amz-content-sha256", &count);
        if (h == NULL || !trimmed_copy(h, phash, sizeof(phash))) {
            goto fail;
        }
        req.payload_hash = phash;
    }
    /* Clock (S3: 15 minutes of skew; presigned: valid until X-Amz-Date + X-Amz-Expires). */
    int64_t now = opts->now_ms / 1000;
    int64_t skew = opts->skew_s == 0 ? GW_SIGV4_MAX_SKEW_S : opts->skew_s;
    if (skew >= 0) {
        if (a->presigned) {
            if (now < t - skew) {
                f = GW_SIGV4_FAIL_SKEW;
                err = ERR_TIMEOUT;
                goto fail;
            }
            if (now > t + (int64_t)a->expires) {
                f = GW_SIGV4_FAIL_EXPIRED;
                err = ERR_TIMEOUT;
                goto fail;
            }
        } else if (now < t - skew || now > t + skew) {
            f = GW_SIGV4_FAIL_SKEW;
            err = ERR_TIMEOUT;
            goto fail;
        }
    }
    unsigned flags = opts->flags | (a->presigned ? GW_SIGV4_F_SKIP_SIGNATURE : 0);
    err = gw_sigv4_signature(kc, secret, NULL, a->region, a->service, amz_date, &req,
                             a->signed_headers, flags, sig, NULL, NULL);
    if (err == ERR_NOMEM) {
        f = GW_SIGV4_FAIL_INTERNAL;
        goto fail;
    }
    if (err != 0) {
        err = ERR_INVAL; /* a signed header missing, a bad path or query */
        goto fail;
    }
    if (hex_decode(sig, GW_SIGV4_HEX_LEN, sigbin, sizeof(sigbin)) != 0 ||
        CRYPTO_memcmp(sigbin, a->signature, sizeof(sigbin)) != 0) {
        f = GW_SIGV4_FAIL_MISMATCH;
        err = ERR_AUTH;
        goto fail;
    }
    if (v != NULL) {
        err = gw_sigv4_signing_key(kc, secret, a->date, a->region, a->service, v->key);
        if (err != 0) {
            f = GW_SIGV4_FAIL_INTERNAL;
            goto fail;
        }
        memcpy(v->signature, sig, sizeof(v->signature));
        memcpy(v->amz_date, amz_date, sizeof(v->amz_date));
        memcpy(v->scope, a->scope, sizeof(v->scope));
        v->time_s = t;
    }
    if (why != NULL) {
        *why = GW_SIGV4_FAIL_NONE;
    }
    return 0;
fail:
    if (v != NULL) {
        OPENSSL_cleanse(v, sizeof(*v));
    }
    if (why != NULL) {
        *why = f;
    }
    return err;
}
