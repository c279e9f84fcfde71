/*
 * tests/fuzz/s3xml_fuzz.c: the S3 response parsers (gateway/s3/s3xml.c) on
 * arbitrary bodies.
 *
 * Each input is parsed twice: in one piece, and fed in pieces whose sizes
 * come from the input's bytes (1..16).  Checks, beyond memory safety: both
 * runs agree on the outcome, the root, the keys, IsTruncated, the token and
 * the error code (streaming must not change the result); keys are non-empty
 * and within the key cap; the byte cap holds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/s3/s3xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_KEYS  50
#define MAX_BYTES 32768

static int
run(const uint8_t *data, size_t size, bool pieces, struct gw_s3xml **out)
{
    struct gw_s3xml *x = gw_s3xml_new(MAX_KEYS, MAX_BYTES);
    if (x == NULL) {
        abort();
    }
    *out = x;
    size_t off = 0;
    while (off < size) {
        size_t n = pieces ? (size_t)(data[off] % 16) + 1 : size - off;
        if (n > size - off) {
            n = size - off;
        }
        int rc = gw_s3xml_feed(x, (const char *)data + off, n);
        if (rc != 0) {
            return rc;
        }
        off += n;
    }
    return gw_s3xml_finish(x);
}

static bool
same_str(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gw_s3xml *a = NULL;
    struct gw_s3xml *b = NULL;
    int ra = run(data, size, false, &a);
    int rb = run(data, size, true, &b);
    if (size > MAX_BYTES && ra != ERR_TOOBIG) {
        abort();
    }
    /* Errors may differ in kind only where a cap and a syntax error race
     * (which one is met first depends on the piece boundaries). */
    if ((ra == 0) != (rb == 0)) {
        abort();
    }
    if (ra == 0) {
        size_t na = 0;
        size_t nb = 0;
        const char *const *ka = gw_s3xml_keys(a, &na);
        const char *const *kb = gw_s3xml_keys(b, &nb);
        if (na != nb || na > MAX_KEYS || gw_s3xml_root(a) != gw_s3xml_root(b) ||
            gw_s3xml_truncated(a) != gw_s3xml_truncated(b) ||
            !same_str(gw_s3xml_next_token(a), gw_s3xml_next_token(b)) ||
            !same_str(gw_s3xml_error_code(a), gw_s3xml_error_code(b)) ||
            !same_str(gw_s3xml_error_message(a), gw_s3xml_error_message(b))) {
            abort();
        }
        for (size_t i = 0; i < na; i++) {
            if (ka[i][0] == '\0' || strcmp(ka[i], kb[i]) != 0) {
                abort();
            }
        }
        if (gw_s3xml_root(a) != GW_S3XML_ROOT_LIST && na != 0) {
            abort();
        }
    }
    gw_s3xml_free(a);
    gw_s3xml_free(b);
    return 0;
}
