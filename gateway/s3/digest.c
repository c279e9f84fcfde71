/* gateway/s3/digest.c: SHA-256 and HMAC-SHA256 without allocations (see digest.h). */

/* SHA256_Init/_Update/_Final, deprecated in OpenSSL 3.0: chosen for the
 * allocation-free signing path (digest.h says why); before any OpenSSL header. */
#define OPENSSL_SUPPRESS_DEPRECATED

#include "gateway/s3/digest.h"

#include <pthread.h>
#include <string.h>

#include <openssl/crypto.h>

#define HMAC_BLOCK 64 /* SHA-256's block size: the HMAC key pad */

static pthread_once_t fetch_once = PTHREAD_ONCE_INIT;
static const EVP_MD *md_sha256; /* owned for the process's life */
static const EVP_MD *md_sha1;

/* pthread_once callback */
static void
on_fetch_once(void)
{
    EVP_MD *m = EVP_MD_fetch(NULL, "SHA256", NULL);
    md_sha256 = m != NULL ? m : EVP_sha256();
    m = EVP_MD_fetch(NULL, "SHA1", NULL);
    md_sha1 = m != NULL ? m : EVP_sha1();
}

const EVP_MD *
gw_digest_md_sha256(void)
{
    (void)pthread_once(&fetch_once, on_fetch_once);
    return md_sha256;
}

const EVP_MD *
gw_digest_md_sha1(void)
{
    (void)pthread_once(&fetch_once, on_fetch_once);
    return md_sha1;
}

int
gw_digest_sha256(const void *p, size_t n, unsigned char out[GW_DIGEST_SHA256_LEN])
{
    SHA256_CTX c;
    int ok = SHA256_Init(&c) == 1 && SHA256_Update(&c, p, n) == 1 && SHA256_Final(out, &c) == 1;
    return ok ? 0 : ERR_NOMEM;
}

int
gw_digest_sha256_init(struct gw_digest_sha256 *s)
{
    return SHA256_Init(&s->c) == 1 ? 0 : ERR_NOMEM;
}

int
gw_digest_sha256_update(struct gw_digest_sha256 *s, const void *p, size_t n)
{
    return SHA256_Update(&s->c, p, n) == 1 ? 0 : ERR_NOMEM;
}

int
gw_digest_sha256_final(struct gw_digest_sha256 *s, unsigned char out[GW_DIGEST_SHA256_LEN])
{
    int ok = SHA256_Final(out, &s->c) == 1;
    OPENSSL_cleanse(s, sizeof(*s));
    return ok ? 0 : ERR_NOMEM;
}

int
gw_digest_hmac_init(struct gw_digest_hmac *h, const unsigned char *key, size_t keylen)
{
    unsigned char k0[HMAC_BLOCK];
    unsigned char pad[HMAC_BLOCK];
    int err = ERR_NOMEM;
    memset(k0, 0, sizeof(k0));
    if (keylen > HMAC_BLOCK) {
        /* RFC 2104 section 2: a key longer than the block is hashed first */
        if (gw_digest_sha256(key, keylen, k0) != 0) {
            goto out;
        }
    } else if (keylen > 0) {
        memcpy(k0, key, keylen);
    }
    for (size_t i = 0; i < HMAC_BLOCK; i++) {
        pad[i] = k0[i] ^ 0x36;
    }
    if (SHA256_Init(&h->inner) != 1 || SHA256_Update(&h->inner, pad, HMAC_BLOCK) != 1) {
        goto out;
    }
    for (size_t i = 0; i < HMAC_BLOCK; i++) {
        pad[i] = k0[i] ^ 0x5c;
    }
    if (SHA256_Init(&h->outer) != 1 || SHA256_Update(&h->outer, pad, HMAC_BLOCK) != 1) {
        goto out;
    }
    err = 0;
out:
    OPENSSL_cleanse(k0, sizeof(k0));
    OPENSSL_cleanse(pad, sizeof(pad));
    if (err != 0) {
        gw_digest_hmac_cleanse(h);
    }
    return err;
}

void
gw_digest_hmac_begin(const struct gw_digest_hmac *h, struct gw_digest_sha256 *s)
{
    s->c = h->inner;
}

int
gw_digest_hmac_end(const struct gw_digest_hmac *h, struct gw_digest_sha256 *s,
                   unsigned char out[GW_DIGEST_SHA256_LEN])
{
    unsigned char inner[GW_DIGEST_SHA256_LEN];
    int ok = SHA256_Final(inner, &s->c) == 1;
    s->c = h->outer;
    ok = ok && SHA256_Update(&s->c, inner, sizeof(inner)) == 1 && SHA256_Final(out, &s->c) == 1;
    OPENSSL_cleanse(inner, sizeof(inner));
    OPENSSL_cleanse(s, sizeof(*s));
    return ok ? 0 : ERR_NOMEM;
}

int
gw_digest_hmac_final(const struct gw_digest_hmac *h, const void *msg, size_t len,
                     unsigned char out[GW_DIGEST_SHA256_LEN])
{
    struct gw_digest_sha256 s;
    gw_digest_hmac_begin(h, &s);
    if (gw_digest_sha256_update(&s, msg, len) != 0) {
        OPENSSL_cleanse(&s, sizeof(s));
        return ERR_NOMEM;
    }
    return gw_digest_hmac_end(h, &s, out);
}

void
gw_digest_hmac_cleanse(struct gw_digest_hmac *h)
{
    OPENSSL_cleanse(h, sizeof(*h));
}

int
gw_digest_hmac_sha256(const unsigned char *key, size_t keylen, const void *msg, size_t len,
                      unsigned char out[GW_DIGEST_SHA256_LEN])
{
    struct gw_digest_hmac h;
    int err = gw_digest_hmac_init(&h, key, keylen);
    if (err == 0) {
        err = gw_digest_hmac_final(&h, msg, len, out); /* out may alias key: key is in h now */
    }
    gw_digest_hmac_cleanse(&h);
    return err;
}
