/*
 * election/sha256.h: SHA-256 (FIPS 180-4), for lease_id hashes and the dir
 * backend's ETags.
 *
 * election/ may not use OpenSSL (STYLE R1), and the election needs the hash in
 * its own core (to store only SHA-256(lease_id) and to check a presented one),
 * so it carries this small implementation instead of taking a function
 * pointer from the gateway: fewer moving parts, and tested against the FIPS
 * 180-4 / NIST example vectors in tests/unit/election/sha256_test.c.  Not
 * constant-time in any way that matters here: the input (a random lease_id)
 * is hashed, and digests are compared with elect_ct_equal.
 * Pure functions; any thread.
 */
#ifndef ELECTION_SHA256_H
#define ELECTION_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ELECT_SHA256_LEN 32
#define ELECT_SHA256_HEX 64 /* hex digits (2 * ELECT_SHA256_LEN), NUL not counted */

/* Running state; embed it (elect_sha256_init). */
struct elect_sha256 {
    uint32_t h[8];     /* chaining value */
    uint64_t nbytes;   /* bytes hashed so far */
    uint8_t block[64]; /* partial block */
    size_t fill;       /* bytes in block */
};

/* elect_sha256_init - start a hash.  [out] c */
void elect_sha256_init(struct elect_sha256 *c);

/* elect_sha256_update - hash len bytes of p (borrowed; NULL allowed when len is 0). */
void elect_sha256_update(struct elect_sha256 *c, const void *p, size_t len);

/* elect_sha256_final - finish: [out] out the 32-byte digest; c is wiped. */
void elect_sha256_final(struct elect_sha256 *c, uint8_t out[ELECT_SHA256_LEN]);

/* elect_sha256 - one-shot digest of p[0..len). */
void elect_sha256(const void *p, size_t len, uint8_t out[ELECT_SHA256_LEN]);

/*
 * elect_sha256_hex - one-shot digest as lowercase hex.
 * [out] out  ELECT_SHA256_HEX digits and a NUL (size ELECT_SHA256_HEX + 1)
 */
void elect_sha256_hex(const void *p, size_t len, char out[ELECT_SHA256_HEX + 1]);

/* elect_ct_equal - compare len bytes without an early exit (for secrets' digests). */
bool elect_ct_equal(const void *a, const void *b, size_t len);

#endif
