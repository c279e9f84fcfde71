/* common/codec.c: hex and percent codecs (see codec.h). */
#include "common/codec.h"

#include <stdint.h>
#include <string.h>

/* each digit's value plus one (codec.h), so that the zeroed rest reads -1 */
const signed char codec_hex_value[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,  ['6'] = 7,  ['7'] = 8,
    ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

void
hex_encode(const unsigned char *p, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = '\0';
}

int
hex_decode(const char *hex, size_t hexlen, unsigned char *out, size_t n)
{
    if (hexlen != 2 * n) {
        return ERR_INVAL;
    }
    for (size_t i = 0; i < n; i++) {
        int hi = hex_digit((unsigned char)hex[2 * i]);
        int lo = hex_digit((unsigned char)hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            return ERR_INVAL;
        }
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

/*
 * The end of the run from s[i] of bytes that decode to themselves: eight at a
 * time while no byte of the eight is '%' (or '+' with plus_space), a presigned
 * URL's credential and signature being long runs.  A byte is c exactly when
 * (x ^ c) has a zero byte: (v - 0x01..) & ~v & 0x80.. flags one where v has
 * one (a borrow starts only at a zero byte, so no byte before it is flagged).
 */
static size_t
plain_run(const char *s, size_t i, size_t n, bool plus_space)
{
    const uint64_t ones = 0x0101010101010101ULL;
    const uint64_t highs = 0x8080808080808080ULL;
    for (; n - i >= 8; i += 8) {
        uint64_t x;
        memcpy(&x, s + i, 8);
        uint64_t pct = x ^ (ones * '%');
        uint64_t hit = (pct - ones) & ~pct;
        if (plus_space) {
            uint64_t plus = x ^ (ones * '+');
            hit |= (plus - ones) & ~plus;
        }
        if ((hit & highs) != 0) {
            break;
        }
    }
    while (i < n && s[i] != '%' && (s[i] != '+' || !plus_space)) {
        i++;
    }
    return i;
}

int
pct_decode(const char *s, size_t n, bool plus_space, char *out, size_t cap, size_t *outlen)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t j = plain_run(s, i, n, plus_space); /* copied whole */
        if (j > i) {
            if (cap - o < j - i) {
                return ERR_TOOBIG;
            }
            if (out != NULL) {
                memcpy(out + o, s + i, j - i);
            }
            o += j - i;
            i = j;
            continue;
        }
        char c = ' '; /* a '+' as space */
        if (s[i] == '%') {
            if (n - i < 3) {
                return ERR_INVAL;
            }
            int hi = hex_digit((unsigned char)s[i + 1]);
            int lo = hex_digit((unsigned char)s[i + 2]);
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                return ERR_INVAL;
            }
            c = (char)(hi << 4 | lo);
            i += 2;
        }
        i++;
        if (o == cap) {
            return ERR_TOOBIG;
        }
        if (out != NULL) {
            out[o] = c;
        }
        o++;
    }
    if (out != NULL) {
        out[o] = '\0';
    }
    *outlen = o;
    return 0;
}
