/*
 * gateway/s3/digest.h: SHA-256 and HMAC-SHA256 (and SHA-1 for checksums) on
 * algorithms fetched from OpenSSL once.
 *
 * OpenSSL 3 looks an algorithm up by name, through its provider store and
 * under a lock, each time a digest is started from EVP_sha256() or an HMAC()
 * is computed; a SigV4-verified, re-signed request does half a dozen of them.
 * Here each algorithm is fetched once per process (EVP_MD objects are
 * immutable and may be shared by threads) and HMAC is RFC 2104 over it.
 */
#ifndef GW_S3_DIGEST_H
#define GW_S3_DIGEST_H

#include <stddef.h>

#include <openssl/evp.h>

#include "common/err.h"

#define GW_DIGEST_SHA256_LEN 32 /* bytes of a SHA-256 digest or HMAC-SHA256 */

/* The SHA-256 and SHA-1 algorithms, fetched on first use (falls back to
 * EVP_sha256() / EVP_sha1() if the fetch fails).  Never NULL; not to be freed. */
const EVP_MD *gw_digest_md_sha256(void);
const EVP_MD *gw_digest_md_sha1(void);

/*
 * gw_digest_sha256 - SHA-256 of p[n] into out.
 * Returns 0 or ERR_NOMEM (OpenSSL failed).
 */
int gw_digest_sha256(const void *p, size_t n, unsigned char out[GW_DIGEST_SHA256_LEN]);

/*
 * gw_digest_hmac_sha256 - HMAC-SHA256 (RFC 2104) of msg[len] under key[keylen]
 * into out; out may alias key.  The key's padded copies are wiped.
 * Returns 0 or ERR_NOMEM (OpenSSL failed).
 */
int gw_digest_hmac_sha256(const unsigned char *key, size_t keylen, const void *msg, size_t len,
                          unsigned char out[GW_DIGEST_SHA256_LEN]);

#endif
