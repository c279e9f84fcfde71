/*
 * tests/fuzz/sigv2_fuzz.c: the SigV2 header and presigned-query parsers, the
 * string to sign of an arbitrary query and headers, and verification of
 * whatever parses.  Input: first byte picks the form; then up to three
 * NUL-separated parts: the Authorization value or query, a header name, its
 * value.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/s3/sigv2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    char *s = malloc(size + 2);
    if (s == NULL) {
        return 0;
    }
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    s[size] = '\0';
    s[size + 1] = '\0';
    const char *first = s;
    const char *hname = s + strlen(s) + 1;
    const char *hvalue = hname + strlen(hname) + 1;
    if (hname > s + size - 1) {
        hname = "x-amz-meta-a";
        hvalue = "b";
    } else if (hvalue > s + size) {
        hvalue = "";
    }
    struct gw_sigv2_authz a;
    bool presigned = (data[0] & 1) != 0;
    int err = presigned ? gw_sigv2_presigned_parse(first, &a) : gw_sigv2_authz_parse(first, &a);
    if (err != 0 && (a.access_key[0] != '\0' || a.presigned != 0)) {
        abort(); /* zeroed on failure */
    }
    if (err == 0 && (a.access_key[0] == '\0' || a.presigned != (presigned ? 1 : 0))) {
        abort();
    }
    struct gw_sigv4_header h[] = {{"Date", "Tue, 27 Mar 2007 19:36:42 +0000"}, {hname, hvalue}};
    struct gw_sigv2_input in = {"GET", "/b/k", presigned ? first : "acl&uploadId=1",
                                h,     2,      (data[0] & 2) ? "b" : NULL};
    if (err == 0) {
        enum gw_sigv2_fail why;
        if (gw_sigv2_verify("secret", &a, &in, 1175024202000LL, &why) == 0 ||
            why == GW_SIGV2_FAIL_NONE) {
            abort(); /* a random signature must not verify */
        }
    } else {
        struct buf b;
        buf_init(&b, 1 << 20);
        a.presigned = presigned;
        (void)gw_sigv2_string_to_sign(&in, &a, &b);
        buf_cleanup(&b);
    }
    free(s);
    return 0;
}
