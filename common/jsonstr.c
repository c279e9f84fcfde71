#include "common/jsonstr.h"

#include <string.h>

size_t
jsonstr_utf8_len(const unsigned char *s, size_t len)
{
    if (len == 0) {
        return 0;
    }
    unsigned c = s[0];
    if (c < 0x80) {
        return 1;
    }
    /* RFC 3629 section 4: the second byte's range depends on the first */
    size_t n;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0) {
            lo = 0xa0; /* no overlongs */
        } else if (c == 0xed) {
            hi = 0x9f; /* no surrogates */
        }
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0) {
            lo = 0x90; /* no overlongs */
        } else if (c == 0xf4) {
            hi = 0x8f; /* nothing above U+10FFFF */
        }
    } else {
        return 0; /* a continuation byte, C0, C1, F5..FF */
    }
    if (len < n || s[1] < lo || s[1] > hi) {
        return 0;
    }
    for (size_t i = 2; i < n; i++) {
        if (s[i] < 0x80 || s[i] > 0xbf) {
            return 0;
        }
    }
    return n;
}

int
jsonstr_append(struct buf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    int rc = buf_append(b, "\"", 1);
    size_t run = 0; /* start of the bytes copied as they are */
    size_t i = 0;
    while (rc == 0 && i < len) {
        unsigned c = p[i];
        char esc[8]; /* an escape, not a C string */
        size_t elen = 0;
        size_t n = 1;
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            elen = 2;
        } else if (c < 0x20 || c == 0x7f) {
            static const char u00[4] = {'\\', 'u', '0', '0'};
            memcpy(esc, u00, sizeof(u00));
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 0xf];
            elen = 6;
        } else if (c >= 0x80) {
            n = jsonstr_utf8_len(p + i, len - i);
            if (n == 0) {
                static const char fffd[6] = {'\\', 'u', 'f', 'f', 'f', 'd'};
                memcpy(esc, fffd, sizeof(fffd)); /* one replacement per bad byte */
                elen = 6;
                n = 1;
            }
        }
        if (elen > 0) {
            rc = buf_append(b, p + run, i - run);
            if (rc == 0) {
                rc = buf_append(b, esc, elen);
            }
            run = i + n;
        }
        i += n;
    }
    if (rc == 0) {
        rc = buf_append(b, p + run, len - run);
    }
    if (rc == 0) {
        rc = buf_append(b, "\"", 1);
    }
    return rc;
}

int
jsonstr_append_cstr(struct buf *b, const char *s)
{
    if (s == NULL) {
        return buf_append(b, "null", 4);
    }
    return jsonstr_append(b, s, strlen(s));
}
