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

size_t
fmt_u64(uint64_t v, char out[20])
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++) {
        out[i] = tmp[n - 1 - i];
    }
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
    for (size_t i = width; i > 0; i--) {
        out[i - 1] = (char)('0' + v % 10);
        v /= 10;
    }
}
