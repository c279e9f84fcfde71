/* common/codec.c: hex and percent codecs (see codec.h). */
#include "common/codec.h"

#include <string.h>

#define HX(c, v) [c] = (v) + 1
const signed char codec_hex_value[256] = {
    HX('0', 0),   HX('1', 1),   HX('2', 2),   HX('3', 3),   HX('4', 4),   HX('5', 5),
    HX('6', 6),   HX('7', 7),   HX('8', 8),   HX('9', 9),   HX('a', 10),  HX('b', 11),
    HX('c', 12),  HX('d', 13),  HX('e', 14),  HX('f', 15),  HX('A', 10),  HX('B', 11),
    HX('C', 12),  HX('D', 13),  HX('E', 14),  HX('F', 15),
};
#undef HX

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

int
pct_decode(const char *s, size_t n, bool plus_space, char *out, size_t cap, size_t *outlen)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i; /* a run of bytes that decode to themselves, copied whole */
        while (j < n && s[j] != '%' && (s[j] != '+' || !plus_space)) {
            j++;
        }
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
