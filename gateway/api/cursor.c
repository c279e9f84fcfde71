#include "gateway/api/cursor.h"

#include <stdint.h>
#include <string.h>

#include "common/codec.h"

#define CURSOR_VERSION '1'

/* FNV-1a 32 over kind, version and name: a check, not a MAC (see the header). */
static uint32_t
check(char kind, const char *name, size_t n)
{
    uint32_t h = 2166136261u;
    const char head[2] = {kind, CURSOR_VERSION};
    for (size_t i = 0; i < sizeof(head); i++) {
        h = (h ^ (uint8_t)head[i]) * 16777619u;
    }
    for (size_t i = 0; i < n; i++) {
        h = (h ^ (uint8_t)name[i]) * 16777619u;
    }
    return h;
}

int
gw_cursor_format(enum gw_cursor_kind kind, const char *lock, char out[GW_CURSOR_MAX + 1])
{
    if (!lock_name_valid(lock)) {
        return ERR_INVAL;
    }
    size_t n = strlen(lock);
    out[0] = (char)kind;
    out[1] = CURSOR_VERSION;
    hex_encode((const unsigned char *)lock, n, out + 2);
    char *p = out + 2 + 2 * n;
    *p++ = '.';
    uint32_t c = check((char)kind, lock, n);
    unsigned char cb[4] = {(unsigned char)(c >> 24), (unsigned char)(c >> 16),
                           (unsigned char)(c >> 8), (unsigned char)c};
    hex_encode(cb, sizeof(cb), p); /* writes the NUL */
    return 0;
}

int
gw_cursor_parse(enum gw_cursor_kind kind, const char *s, size_t len, char lock[LOCK_NAME_MAX + 1])
{
    /* kind, version, at least one name byte (2 digits), '.', 8 check digits */
    if (len < 2 + 2 + 1 + 8 || len > GW_CURSOR_MAX || s[0] != (char)kind ||
        s[1] != CURSOR_VERSION || s[len - 9] != '.') {
        return ERR_INVAL;
    }
    size_t hexlen = len - 2 - 9;
    if (hexlen % 2 != 0) {
        return ERR_INVAL;
    }
    char name[LOCK_NAME_MAX + 1];
    size_t n = hexlen / 2;
    unsigned char cb[4];
    if (hex_decode(s + 2, hexlen, (unsigned char *)name, n) != 0 ||
        hex_decode(s + len - 8, 8, cb, sizeof(cb)) != 0) {
        return ERR_INVAL;
    }
    name[n] = '\0';
    uint32_t want = ((uint32_t)cb[0] << 24) | ((uint32_t)cb[1] << 16) | ((uint32_t)cb[2] << 8) |
                    (uint32_t)cb[3];
    if (memchr(name, '\0', n) != NULL || check((char)kind, name, n) != want ||
        !lock_name_valid(name)) {
        return ERR_INVAL;
    }
    memcpy(lock, name, n + 1);
    return 0;
}
