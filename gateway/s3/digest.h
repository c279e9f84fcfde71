/*
 * gateway/s3/digest.h: SHA-256 and HMAC-SHA256 (and SHA-1 for checksums) on
 * algorithms fetched from OpenSSL once.
 *
 * OpenSSL 3 looks an algorithm up by name, through its provider store and
 * under a lock, each time a digest is started from EVP_sha256() or an HMAC()
 * is computed; a SigV4-verified, re-signed request does half a dozen of them.
 * Here each algorithm is fetched once per process (EVP_MD objects are
 * immutable and may be shared by threads), for the x-amz-checksum-* values
 * (gateway/s3/checksum.c) and SigV2's HMAC-SHA1.
 *
 * SHA-256 and HMAC-SHA256, one-shot (the signing path) or streamed (a
 * signed body, aws-chunked chunks), run on OpenSSL's SHA256_CTX functions
 * instead: OpenSSL 3.0's EVP allocates a provider context on every digest
 * init and every EVP_MD_CTX_copy_ex, and adds a dispatch per call; the
 * SHA256_CTX functions (deprecated in 3.0, still built by Debian) allocate
 * nothing and their state is a plain struct, so an HMAC key's padded
 * states (struct gw_digest_hmac) are computed once and copied by assignment
 * for each message: two compression blocks fewer per HMAC.
 * docs/PERFORMANCE.md has the measurements.  Any thread.
 */
#ifndef GW_S3_DIGEST_H
#define GW_S3_DIGEST_H

#include <stddef.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

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

/*
 * struct gw_digest_sha256 - a running SHA-256, for a message that arrives in
 * pieces (a streamed body, a chunk's data).  Allocates nothing; a plain
 * struct, embedded by its owner; a copy (assignment) forks the hash.
 */
struct gw_digest_sha256 {
    SHA256_CTX c; /* OpenSSL's state */
};

/* gw_digest_sha256_init - start s.  Returns 0 or ERR_NOMEM (OpenSSL failed). */
int gw_digest_sha256_init(struct gw_digest_sha256 *s);

/* gw_digest_sha256_update - add p[n] to s.  Returns 0 or ERR_NOMEM (OpenSSL failed). */
int gw_digest_sha256_update(struct gw_digest_sha256 *s, const void *p, size_t n);

/*
 * gw_digest_sha256_final - the digest of everything added, into out; s is
 * wiped and must be started again before reuse.
 * Returns 0 or ERR_NOMEM (OpenSSL failed).
 */
int gw_digest_sha256_final(struct gw_digest_sha256 *s, unsigned char out[GW_DIGEST_SHA256_LEN]);

/*
 * struct gw_digest_hmac - an HMAC-SHA256 key, prepared: the SHA-256 states
 * after (key ^ ipad) and after (key ^ opad).  As secret as the key itself:
 * wipe it with gw_digest_hmac_cleanse.  Embedded by its owner; copyable.
 */
struct gw_digest_hmac {
    SHA256_CTX inner; /* after the key's inner pad */
    SHA256_CTX outer; /* after the key's outer pad */
};

/*
 * gw_digest_hmac_init - prepare h for key[keylen] (RFC 2104; a key over the
 * 64-byte block is hashed first).  The key's padded copies are wiped.
 * Returns 0 or ERR_NOMEM (OpenSSL failed).
 */
int gw_digest_hmac_init(struct gw_digest_hmac *h, const unsigned char *key, size_t keylen);

/*
 * gw_digest_hmac_final - HMAC-SHA256 of msg[len] under h's key into out; h is
 * unchanged (its states are copied), so it serves any number of messages.
 * Returns 0 or ERR_NOMEM (OpenSSL failed).
 */
int gw_digest_hmac_final(const struct gw_digest_hmac *h, const void *msg, size_t len,
                         unsigned char out[GW_DIGEST_SHA256_LEN]);

/*
 * gw_digest_hmac_begin / _end - HMAC-SHA256 under h's key of a message added
 * in pieces: _begin sets s to the inner state after the key's pad; add the
 * message with gw_digest_sha256_update (a copy of s taken after a common
 * prefix serves every message with that prefix); _end writes the HMAC to out
 * and wipes s.  h is unchanged.  _end returns 0 or ERR_NOMEM (OpenSSL failed).
 */
void gw_digest_hmac_begin(const struct gw_digest_hmac *h, struct gw_digest_sha256 *s);
int gw_digest_hmac_end(const struct gw_digest_hmac *h, struct gw_digest_sha256 *s,
                       unsigned char out[GW_DIGEST_SHA256_LEN]);

/* gw_digest_hmac_cleanse - wipe h (OPENSSL_cleanse). */
void gw_digest_hmac_cleanse(struct gw_digest_hmac *h);

#endif
