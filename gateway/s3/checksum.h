/*
 * gateway/s3/checksum.h: the S3 additional checksums (x-amz-checksum-*).
 *
 * S3 carries a checksum as the base64 of the big-endian digest: CRC32 (the
 * zlib/IEEE polynomial, 4 bytes), CRC32C (Castagnoli, 4 bytes), SHA-1 (20) and
 * SHA-256 (32).  The CRCs are table-driven here (no zlib); the SHAs use
 * OpenSSL.  struct gw_checksum is embedded by its owner (_init/_cleanup) and
 * belongs to one thread.
 */
#ifndef GW_SIGV4_CHECKSUM_H
#define GW_SIGV4_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

enum gw_checksum_alg {
    GW_CHECKSUM_NONE = 0, /* no checksum */
    GW_CHECKSUM_CRC32,    /* x-amz-checksum-crc32 */
    GW_CHECKSUM_CRC32C,   /* x-amz-checksum-crc32c */
    GW_CHECKSUM_SHA1,     /* x-amz-checksum-sha1 */
    GW_CHECKSUM_SHA256,   /* x-amz-checksum-sha256 */
};

/* Longest base64 checksum value plus NUL (SHA-256: 44 characters). */
#define GW_CHECKSUM_B64_MAX 48

/* A running checksum. */
struct gw_checksum {
    enum gw_checksum_alg alg; /* which one */
    uint32_t crc;             /* CRC state (pre-inverted) */
    void *md;                 /* EVP_MD_CTX for the SHAs; owned, NULL for CRCs */
};

/*
 * gw_checksum_alg_from_header - the algorithm named by a header or trailer
 * name ("x-amz-checksum-crc32", any case).  Returns 0 or ERR_NOTFOUND (not a
 * checksum header, or one not implemented here such as crc64nvme).
 */
MUST_USE int gw_checksum_alg_from_header(const char *name, enum gw_checksum_alg *alg);

/* gw_checksum_header_name - "x-amz-checksum-crc32" etc. (static; "" for NONE). */
const char *gw_checksum_header_name(enum gw_checksum_alg alg);

/*
 * gw_checksum_b64_len - characters of the base64 value of alg (8 for the CRCs,
 * 28 for SHA-1, 44 for SHA-256; 0 for NONE).
 */
size_t gw_checksum_b64_len(enum gw_checksum_alg alg);

/* gw_checksum_crc32_update - continue a CRC-32 (zlib's crc32(): start with 0). */
uint32_t gw_checksum_crc32_update(uint32_t crc, const void *p, size_t n);

/* gw_checksum_crc32c_update - continue a CRC-32C (Castagnoli; start with 0). */
uint32_t gw_checksum_crc32c_update(uint32_t crc, const void *p, size_t n);

/* gw_checksum_init - start a checksum.  Returns 0, ERR_INVAL (alg), ERR_NOMEM. */
MUST_USE int gw_checksum_init(struct gw_checksum *c, enum gw_checksum_alg alg);

/* gw_checksum_update - add n bytes at p (borrowed).  Returns 0 or ERR_NOMEM (OpenSSL). */
MUST_USE int gw_checksum_update(struct gw_checksum *c, const void *p, size_t n);

/*
 * gw_checksum_final_b64 - finish and write the base64 value (NUL-terminated)
 * into out[outlen].  The checksum must be re-initialised before reuse.
 * Returns 0, ERR_TOOBIG (outlen < GW_CHECKSUM_B64_MAX is always enough),
 * ERR_NOMEM.
 */
MUST_USE int gw_checksum_final_b64(struct gw_checksum *c, char *out, size_t outlen);

/* gw_checksum_cleanup - free what init took.  Safe on a zeroed or finished struct. */
void gw_checksum_cleanup(struct gw_checksum *c);

/* gw_checksum_b64 - one-shot: the base64 checksum of n bytes at p.  Returns as above. */
MUST_USE int gw_checksum_b64(enum gw_checksum_alg alg, const void *p, size_t n, char *out,
                             size_t outlen);

#endif
