/* election/sha256.c: SHA-256 as specified in FIPS 180-4, sections 4.1.2, 4.2.2, 5 and 6.2. */
#include "election/sha256.h"

#include <string.h>

/* FIPS 180-4 4.2.2: the first 32 bits of the fractional parts of the cube
 * roots of the first 64 primes. */
static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t
rotr(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

/* FIPS 180-4 6.2.2: one 512-bit block. */
static void
compress(uint32_t h[8], const uint8_t *p)
{
    uint32_t w[64];
    for (size_t t = 0; t < 16; t++) {
        const uint8_t *q = p + 4 * t;
        w[t] = (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | (uint32_t)q[3];
    }
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = hh + S1 + ch + K[t] + w[t];
        uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
        uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = S0 + maj;
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
}

void
elect_sha256_init(struct elect_sha256 *c)
{
    /* FIPS 180-4 5.3.3 */
    static const uint32_t H0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, H0, sizeof(H0));
    c->nbytes = 0;
    c->fill = 0;
}

void
elect_sha256_update(struct elect_sha256 *c, const void *p, size_t len)
{
    const uint8_t *in = p;
    c->nbytes += len;
    while (len > 0) {
        if (c->fill == 0 && len >= 64) {
            compress(c->h, in);
            in += 64;
            len -= 64;
            continue;
        }
        size_t take = 64 - c->fill;
        if (take > len) {
            take = len;
        }
        memcpy(c->block + c->fill, in, take);
        c->fill += take;
        in += take;
        len -= take;
        if (c->fill == 64) {
            compress(c->h, c->block);
            c->fill = 0;
        }
    }
}

void
elect_sha256_final(struct elect_sha256 *c, uint8_t out[ELECT_SHA256_LEN])
{
    /* FIPS 180-4 5.1.1: a 1 bit, zeros, then the length in bits, big-endian. */
    uint64_t bits = c->nbytes * 8;
    c->block[c->fill++] = 0x80;
    if (c->fill > 56) {
        memset(c->block + c->fill, 0, 64 - c->fill);
        compress(c->h, c->block);
        c->fill = 0;
    }
    memset(c->block + c->fill, 0, 56 - c->fill);
    for (size_t i = 0; i < 8; i++) {
        c->block[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
    }
    compress(c->h, c->block);
    for (size_t i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(c->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)c->h[i];
    }
    volatile uint8_t *v = (volatile uint8_t *)c;
    for (size_t i = 0; i < sizeof(*c); i++) {
        v[i] = 0;
    }
}

void
elect_sha256(const void *p, size_t len, uint8_t out[ELECT_SHA256_LEN])
{
    struct elect_sha256 c;
    elect_sha256_init(&c);
    elect_sha256_update(&c, p, len);
    elect_sha256_final(&c, out);
}

void
elect_sha256_hex(const void *p, size_t len, char out[ELECT_SHA256_HEX + 1])
{
    static const char hex[] = "0123456789abcdef";
    uint8_t d[ELECT_SHA256_LEN];
    elect_sha256(p, len, d);
    for (size_t i = 0; i < ELECT_SHA256_LEN; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[ELECT_SHA256_HEX] = '\0';
}

bool
elect_ct_equal(const void *a, const void *b, size_t len)
{
    const volatile uint8_t *x = a;
    const volatile uint8_t *y = b;
    uint8_t acc = 0;
    for (size_t i = 0; i < len; i++) {
        acc |= (uint8_t)(x[i] ^ y[i]);
    }
    return acc == 0;
}
