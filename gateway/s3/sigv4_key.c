/*
 * gateway/s3/sigv4_key.c: SigV4 dates (X-Amz-Date), credential scopes and
 * signing keys ("Task 3: Calculate Signature", "Derive a signing key") with
 * their cache: the HMAC chain from a secret to a day's key for one region
 * and service, kept with its prepared HMAC states so that signing a request
 * costs one HMAC over the string to sign.
 */
#include "gateway/s3/sigv4.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "common/codec.h"
#include "common/date.h"
#include "common/num.h"
#include "gateway/s3/digest.h"
#include "gateway/s3/sigv4_int.h"

#define KEYCACHE_SLOTS 16   /* distinct (secret, day, region, service) kept */
#define MAX_SECRET     1024 /* longest secret key accepted */

/* ---- dates and credential scopes ---- */

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

/* a credential scope's parts: a real day (YYYYMMDD), a region and a service */
static bool
scope_ok(const char *date, const char *region, const char *service)
{
    return date8_ok(date) && scope_part_ok(region, GW_SIGV4_MAX_REGION) &&
           scope_part_ok(service, GW_SIGV4_MAX_SERVICE);
}

int
gw_sigv4_scope(const char *date, const char *region, const char *service, char *out, size_t outlen)
{
    if (!scope_ok(date, region, service)) {
        return ERR_INVAL;
    }
    return str_concat(out, outlen, date, "/", region, "/", service, "/aws4_request",
                      (const char *)NULL);
}

/* ---- signing keys ---- */

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
    err = gw_digest_hmac_sha256(k, 4 + slen, date, 8, t);
    if (err != 0) {
        goto fail;
    }
    err = gw_digest_hmac_sha256(t, 32, region, strlen(region), t);
    if (err != 0) {
        goto fail;
    }
    err = gw_digest_hmac_sha256(t, 32, service, strlen(service), t);
    if (err != 0) {
        goto fail;
    }
    err = gw_digest_hmac_sha256(t, 32, "aws4_request", 12, key);
fail:
    OPENSSL_cleanse(k, sizeof(k));
    OPENSSL_cleanse(t, sizeof(t));
    return err;
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
    if (!scope_ok(date, region, service)) {
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
        return scope_ok(date, region, service)
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

int
gw_sigv4_key_hmac_hex(struct gw_sigv4_keycache *kc, const char *secret, const char *date,
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
        if (!scope_ok(date, region, service)) {
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
