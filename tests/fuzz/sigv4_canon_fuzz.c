/*
 * tests/fuzz/sigv4_canon_fuzz.c: SigV4 canonical URI and query string.
 * Input: one flags byte, then "path\nquery\nheader-value".  Checks that the
 * output uses only the SigV4 alphabet and that canonicalising is idempotent.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/s3/sigv4.h"

static int
is_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

/* Only unreserved bytes, '%XX' (uppercase hex) and the extra characters in `extra`. */
static void
check_alphabet(const struct buf *b, const char *extra)
{
    for (size_t i = 0; i < b->len; i++) {
        unsigned char c = (unsigned char)b->data[i];
        if (c == '%') {
            if (i + 2 >= b->len || !strchr("0123456789ABCDEF", b->data[i + 1]) ||
                !strchr("0123456789ABCDEF", b->data[i + 2])) {
                abort();
            }
            i += 2;
        } else if (!is_unreserved(c) && strchr(extra, c) == NULL) {
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    unsigned flags = data[0] & (GW_SIGV4_F_NORMALIZE_PATH | GW_SIGV4_F_SKIP_SIGNATURE);
    char *s = malloc(size);
    if (s == NULL) {
        return 0;
    }
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    char *query = strchr(s, '\n');
    char *hval = NULL;
    if (query != NULL) {
        *query++ = '\0';
        hval = strchr(query, '\n');
        if (hval != NULL) {
            *hval++ = '\0';
        }
    }
    struct buf a;
    struct buf b;
    buf_init(&a, 1 << 20);
    buf_init(&b, 1 << 20);

    if (gw_sigv4_canonical_uri(s, strlen(s), flags, &a) == 0) {
        check_alphabet(&a, "/");
        if (a.len == 0 || a.data[0] != '/') {
            abort();
        }
        /* Canonical paths are fixed points. */
        if (gw_sigv4_canonical_uri(a.data, a.len, flags, &b) != 0 || b.len != a.len ||
            memcmp(a.data, b.data, a.len) != 0) {
            abort();
        }
    }
    buf_reset(&a);
    buf_reset(&b);
    if (query != NULL && gw_sigv4_canonical_query(query, flags, &a) == 0) {
        check_alphabet(&a, "=&");
        if (gw_sigv4_canonical_query(buf_cstr(&a), flags, &b) != 0 || b.len != a.len ||
            (a.len > 0 && memcmp(a.data, b.data, a.len) != 0)) {
            abort();
        }
    }
    buf_reset(&a);
    if (hval != NULL) {
        struct gw_sigv4_header h[2] = {{"X-A", hval}, {"x-a", query}};
        if (gw_sigv4_canonical_headers(h, 2, "x-a", NULL, &a) == 0) {
            /* One line, no leading or doubled spaces. */
            if (a.len < 5 || a.data[a.len - 1] != '\n' || strstr(a.data, "  ") != NULL ||
                memchr(a.data, '\n', a.len - 1) != NULL) {
                abort();
            }
        }
        struct gw_sigv4_input in = {"PUT", s, query, h, 2, hval};
        char sig[GW_SIGV4_HEX_LEN + 1];
        (void)gw_sigv4_signature(NULL, "secret", NULL, "us-east-1", "s3", "20150830T123600Z", &in,
                                 "x-a", flags, sig, NULL, NULL);
    }
    buf_cleanup(&a);
    buf_cleanup(&b);
    free(s);
    return 0;
}
