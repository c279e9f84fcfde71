/* gateway/s3/digest.c: SHA-256 and HMAC-SHA256 on algorithms fetched once (see digest.h). */
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

/* H(a || b) into out, on ctx. */
static int
digest2(EVP_MD_CTX *ctx, const void *a, size_t alen, const void *b, size_t blen,
        unsigned char out[GW_DIGEST_SHA256_LEN])
{
    unsigned int n = 0;
    if (EVP_DigestInit_ex2(ctx, gw_digest_md_sha256(), NULL) != 1 ||
        EVP_DigestUpdate(ctx, a, alen) != 1 || (blen > 0 && EVP_DigestUpdate(ctx, b, blen) != 1) ||
        EVP_DigestFinal_ex(ctx, out, &n) != 1 || n != GW_DIGEST_SHA256_LEN) {
        return ERR_NOMEM;
    }
    return 0;
}

int
gw_digest_sha256(const void *p, size_t n, unsigned char out[GW_DIGEST_SHA256_LEN])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (ctx == NULL) {
        return ERR_NOMEM;
    }
    int err = digest2(ctx, p, n, NULL, 0, out);
    EVP_MD_CTX_free(ctx);
    return err;
}

int
gw_digest_hmac_sha256(const unsigned char *key, size_t keylen, const void *msg, size_t len,
                      unsigned char out[GW_DIGEST_SHA256_LEN])
{
    unsigned char k0[HMAC_BLOCK];
    unsigned char pad[HMAC_BLOCK];
    unsigned char inner[GW_DIGEST_SHA256_LEN];
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int err = ERR_NOMEM;
    if (ctx == NULL) {
        return ERR_NOMEM;
    }
    memset(k0, 0, sizeof(k0));
    if (keylen > HMAC_BLOCK) {
        /* RFC 2104 section 2: a key longer than the block is hashed first */
        if (digest2(ctx, key, keylen, NULL, 0, k0) != 0) {
            goto out;
        }
    } else if (keylen > 0) {
        memcpy(k0, key, keylen);
    }
    for (size_t i = 0; i < HMAC_BLOCK; i++) {
        pad[i] = k0[i] ^ 0x36;
    }
    if (digest2(ctx, pad, HMAC_BLOCK, msg, len, inner) != 0) {
        goto out;
    }
    for (size_t i = 0; i < HMAC_BLOCK; i++) {
        pad[i] = k0[i] ^ 0x5c;
    }
    err = digest2(ctx, pad, HMAC_BLOCK, inner, sizeof(inner), out);
out:
    OPENSSL_cleanse(k0, sizeof(k0));
    OPENSSL_cleanse(pad, sizeof(pad));
    OPENSSL_cleanse(inner, sizeof(inner));
    EVP_MD_CTX_free(ctx);
    return err;
}
