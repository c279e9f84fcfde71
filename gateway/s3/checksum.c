/*
 * gateway/s3/checksum.c: CRC-32, CRC-32C, SHA-1, SHA-256 for S3's
 * x-amz-checksum-* values (base64 of the big-endian digest).
 */
#include "gateway/s3/checksum.h"

#include <pthread.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "gateway/s3/digest.h"

/* Reflected polynomials: CRC-32 (IEEE 802.3, zlib) and CRC-32C (Castagnoli, RFC 3720 B.4). */
#define POLY_CRC32  0xedb88320u
#define POLY_CRC32C 0x82f63b78u

/* Slicing-by-8 tables (Intel's method): tab[k][b] is the CRC of byte b followed by k zero bytes. */
static uint32_t crc32_tab[8][256];
static uint32_t crc32c_tab[8][256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void
fill_table(uint32_t tab[8][256], uint32_t poly)
{
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int k = 0; k < 8; k++) {
            c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
        }
        tab[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; b++) {
        for (int k = 1; k < 8; k++) {
            tab[k][b] = (tab[k - 1][b] >> 8) ^ tab[0][tab[k - 1][b] & 0xff];
        }
    }
}

/* pthread_once callback, from tables_init() */
static void
on_tables_once(void)
{
    fill_table(crc32_tab, POLY_CRC32);
    fill_table(crc32c_tab, POLY_CRC32C);
}

static void
tables_init(void)
{
    (void)pthread_once(&tables_once, on_tables_once);
}

/* The raw (pre- and post-inverted by the caller) slicing-by-8 loop. */
static uint32_t
crc_run(uint32_t tab[8][256], uint32_t c, const unsigned char *p, size_t n)
{
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                           (uint32_t)p[3] << 24);
        c = tab[7][lo & 0xff] ^ tab[6][(lo >> 8) & 0xff] ^ tab[5][(lo >> 16) & 0xff] ^
            tab[4][lo >> 24] ^ tab[3][p[4]] ^ tab[2][p[5]] ^ tab[1][p[6]] ^ tab[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n > 0) {
        c = (c >> 8) ^ tab[0][(c ^ *p) & 0xff];
        p++;
        n--;
    }
    return c;
}

uint32_t
gw_checksum_crc32_update(uint32_t crc, const void *p, size_t n)
{
    tables_init();
    return ~crc_run(crc32_tab, ~crc, p, n);
}

uint32_t
gw_checksum_crc32c_update(uint32_t crc, const void *p, size_t n)
{
    tables_init();
    return ~crc_run(crc32c_tab, ~crc, p, n);
}

static const struct {
    enum gw_checksum_alg alg;
    const char *name;
    size_t digest_len; /* bytes of the big-endian digest */
} alg_names[] = {
    {GW_CHECKSUM_CRC32, "x-amz-checksum-crc32", 4},
    {GW_CHECKSUM_CRC32C, "x-amz-checksum-crc32c", 4},
    {GW_CHECKSUM_SHA1, "x-amz-checksum-sha1", 20},
    {GW_CHECKSUM_SHA256, "x-amz-checksum-sha256", 32},
};

int
gw_checksum_alg_from_header(const char *name, enum gw_checksum_alg *alg)
{
    for (size_t i = 0; i < sizeof(alg_names) / sizeof(alg_names[0]); i++) {
        if (strcasecmp(name, alg_names[i].name) == 0) {
            *alg = alg_names[i].alg;
            return 0;
        }
    }
    return ERR_NOTFOUND;
}

const char *
gw_checksum_header_name(enum gw_checksum_alg alg)
{
    for (size_t i = 0; i < sizeof(alg_names) / sizeof(alg_names[0]); i++) {
        if (alg_names[i].alg == alg) {
            return alg_names[i].name;
        }
    }
    return "";
}

size_t
gw_checksum_b64_len(enum gw_checksum_alg alg)
{
    for (size_t i = 0; i < sizeof(alg_names) / sizeof(alg_names[0]); i++) {
        if (alg_names[i].alg == alg) {
            return 4 * ((alg_names[i].digest_len + 2) / 3); /* base64 with padding */
        }
    }
    return 0;
}

int
gw_checksum_init(struct gw_checksum *c, enum gw_checksum_alg alg)
{
    const EVP_MD *md = NULL;

    memset(c, 0, sizeof(*c));
    switch (alg) {
    case GW_CHECKSUM_CRC32:
    case GW_CHECKSUM_CRC32C:
        c->alg = alg;
        return 0;
    case GW_CHECKSUM_SHA1:
        md = gw_digest_md_sha1();
        break;
    case GW_CHECKSUM_SHA256:
        md = gw_digest_md_sha256();
        break;
    case GW_CHECKSUM_NONE:
    default:
        return ERR_INVAL;
    }
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (ctx == NULL) {
        return ERR_NOMEM;
    }
    if (EVP_DigestInit_ex(ctx, md, NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        return ERR_NOMEM;
    }
    c->alg = alg;
    c->md = ctx;
    return 0;
}

int
gw_checksum_update(struct gw_checksum *c, const void *p, size_t n)
{
    switch (c->alg) {
    case GW_CHECKSUM_CRC32:
        c->crc = gw_checksum_crc32_update(c->crc, p, n);
        return 0;
    case GW_CHECKSUM_CRC32C:
        c->crc = gw_checksum_crc32c_update(c->crc, p, n);
        return 0;
    case GW_CHECKSUM_SHA1:
    case GW_CHECKSUM_SHA256:
        if (c->md == NULL || EVP_DigestUpdate(c->md, p, n) != 1) {
            return ERR_NOMEM;
        }
        return 0;
    case GW_CHECKSUM_NONE:
    default:
        return ERR_INVAL;
    }
}

int
gw_checksum_final_b64(struct gw_checksum *c, char *out, size_t outlen)
{
    unsigned char dig[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;

    switch (c->alg) {
    case GW_CHECKSUM_CRC32:
    case GW_CHECKSUM_CRC32C:
        dig[0] = (unsigned char)(c->crc >> 24);
        dig[1] = (unsigned char)(c->crc >> 16);
        dig[2] = (unsigned char)(c->crc >> 8);
        dig[3] = (unsigned char)c->crc;
        dlen = 4;
        break;
    case GW_CHECKSUM_SHA1:
    case GW_CHECKSUM_SHA256:
        if (c->md == NULL || EVP_DigestFinal_ex(c->md, dig, &dlen) != 1) {
            return ERR_NOMEM;
        }
        break;
    case GW_CHECKSUM_NONE:
    default:
        return ERR_INVAL;
    }
    /* Base64 of dlen bytes: 4 * ceil(dlen / 3) characters and the NUL EVP_EncodeBlock adds. */
    size_t need = 4 * ((dlen + 2) / 3) + 1;
    if (outlen < need) {
        return ERR_TOOBIG;
    }
    (void)EVP_EncodeBlock((unsigned char *)out, dig, (int)dlen);
    return 0;
}

void
gw_checksum_cleanup(struct gw_checksum *c)
{
    if (c == NULL) {
        return;
    }
    EVP_MD_CTX_free(c->md);
    c->md = NULL;
    c->alg = GW_CHECKSUM_NONE;
    c->crc = 0;
}

int
gw_checksum_b64(enum gw_checksum_alg alg, const void *p, size_t n, char *out, size_t outlen)
{
    struct gw_checksum c;

    int err = gw_checksum_init(&c, alg);
    if (err != 0) {
        return err;
    }
    err = gw_checksum_update(&c, p, n);
    if (err == 0) {
        err = gw_checksum_final_b64(&c, out, outlen);
    }
    gw_checksum_cleanup(&c);
    return err;
}
