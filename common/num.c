#include "common/num.h"

#include <string.h>

int
parse_u64n(const char *s, size_t len, uint64_t min, uint64_t max, uint64_t *out)
{
    if (len == 0 || len > 20) {
        return ERR_INVAL;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return ERR_INVAL;
        }
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return ERR_INVAL;
        }
        v = v * 10 + d;
    }
    if (v < min || v > max) {
        return ERR_INVAL;
    }
    *out = v;
    return 0;
}

int
parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    return parse_u64n(s, strlen(s), min, max, out);
}

int
parse_hex_u64n(const char *s, size_t len, uint64_t *out)
{
    if (len == 0 || len > 16) {
        return ERR_INVAL;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        uint64_t d;
        if (c >= '0' && c <= '9') {
            d = (uint64_t)(c - '0');
        } else if (c >= 'a' && c <= 'f') {
            d = (uint64_t)(c - 'a') + 10u;
        } else if (c >= 'A' && c <= 'F') {
            d = (uint64_t)(c - 'A') + 10u;
        } else {
            return ERR_INVAL;
        }
        v = (v << 4) | d;
    }
    *out = v;
    return 0;
}

/* "00".."99": the decimal writers put two digits per division. */
static const char digit_pairs[201] = "00010203040506070809"
                                     "10111213141516171819"
                                     "20212223242526272829"
                                     "30313233343536373839"
                                     "40414243444546474849"
                                     "50515253545556575859"
                                     "60616263646566676869"
                                     "70717273747576777879"
                                     "80818283848586878889"
                                     "90919293949596979899";

/* The number of decimal digits of v (1 to 20). */
static size_t
dec_len(uint64_t v)
{
    size_t n = 1;
    for (;;) {
        if (v < 10u) {
            return n;
        }
        if (v < 100u) {
            return n + 1;
        }
        if (v < 1000u) {
            return n + 2;
        }
        if (v < 10000u) {
            return n + 3;
        }
        v /= 10000u;
        n += 4;
    }
}

/* v's decimal digits into out[0..n), right to left, two a step (n = dec_len(v), or
 * more for zeros in front). */
static void
put_dec(uint64_t v, size_t n, char *out)
{
    while (n >= 2) {
        unsigned p = (unsigned)(v % 100u) * 2u;
        v /= 100u;
        n -= 2;
        out[n] = digit_pairs[p];
        out[n + 1] = digit_pairs[p + 1];
    }
    if (n == 1) {
        out[0] = (char)('0' + v % 10u);
    }
}

size_t
fmt_u64(uint64_t v, char out[20])
{
    size_t n = dec_len(v);
    put_dec(v, n, out);
    return n;
}

size_t
fmt_hex_u64(uint64_t v, char out[16])
{
    static const char digits[] = "0123456789abcdef";
    char tmp[16];
    size_t n = 0;
    do {
        tmp[n++] = digits[v & 0xf];
        v >>= 4;
    } while (v != 0);
    for (size_t i = 0; i < n; i++) {
        out[i] = tmp[n - 1 - i];
    }
    return n;
}

void
fmt_u64_zpad(uint64_t v, size_t width, char *out)
{
    put_dec(v, width, out);
}
