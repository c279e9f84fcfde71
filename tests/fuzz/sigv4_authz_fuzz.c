/*
 * tests/fuzz/sigv4_authz_fuzz.c: the Authorization header and presigned query
 * parsers, and verification of whatever they accept against a fixed request.
 * Input: the header value or query string (the first byte picks which).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/s3/sigv4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(const struct gw_sigv4_authz *a)
{
    char scope[GW_SIGV4_MAX_SCOPE + 1];
    if (gw_sigv4_signed_headers_check(a->signed_headers) != 0 || a->access_key[0] == '\0' ||
        gw_sigv4_scope(a->date, a->region, a->service, scope, sizeof(scope)) != 0 ||
        strcmp(scope, a->scope) != 0) {
        abort();
    }
    struct gw_sigv4_header h[] = {
        {"Host", "example.com"},
        {"X-Amz-Date", "20150830T123600Z"},
        {"X-Amz-Content-SHA256", GW_SIGV4_EMPTY_SHA256},
    };
    struct gw_sigv4_input in = {"GET", "/b/k", "a=1", h, 3, NULL};
    struct gw_sigv4_verify_opts o = {NULL, NULL, 1440938160000LL, -1, 0};
    struct gw_sigv4_verified v;
    enum gw_sigv4_fail why;
    int err = gw_sigv4_verify(NULL, "secret", a, &in, &o, &v, &why);
    if (err == 0) {
        abort(); /* a random signature must not verify */
    }
    if (why == GW_SIGV4_FAIL_NONE) {
        abort();
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    char *s = malloc(size);
    if (s == NULL) {
        return 0;
    }
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    struct gw_sigv4_authz a;
    int err;
    if (data[0] & 1) {
        err = gw_sigv4_presigned_parse(s, &a);
        if (err == 0 && (a.presigned != 1 || a.expires == 0 || a.expires > GW_SIGV4_MAX_EXPIRES)) {
            abort();
        }
    } else {
        err = gw_sigv4_authz_parse(s, &a);
    }
    if (err == 0) {
        check(&a);
    } else if (a.access_key[0] != '\0' || a.signed_headers[0] != '\0') {
        abort(); /* zeroed on failure */
    }
    free(s);
    return 0;
}
