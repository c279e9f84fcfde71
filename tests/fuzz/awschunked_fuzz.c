/*
 * tests/fuzz/awschunked_fuzz.c: the incremental aws-chunked decoder.
 * Input: a control byte (mode, trailer, piece size, declared length known or
 * not), then the wire body.  Checks the decoder never emits more than it
 * counted, never the whole declared payload unless it finished, and that a
 * finished body was emitted in full.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/s3/sigv4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct sink {
    uint64_t n; /* bytes emitted */
};

/* gw_sigv4_chunked_data_fn, registered below */
static int
on_data(void *arg, const char *p, size_t n)
{
    struct sink *s = arg;
    if (n == 0 || p == NULL) {
        abort();
    }
    s->n += n;
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) {
        return 0;
    }
    uint8_t ctl = data[0];
    uint64_t declared = (ctl & 0x40) ? data[1] : UINT64_MAX;
    data += 2;
    size -= 2;
    static const enum gw_sigv4_chunked_mode modes[4] = {
        GW_SIGV4_CHUNKED_SIGNED, GW_SIGV4_CHUNKED_SIGNED_TRAILER, GW_SIGV4_CHUNKED_UNSIGNED_TRAILER,
        GW_SIGV4_CHUNKED_UNSIGNED_TRAILER};
    enum gw_sigv4_chunked_mode mode = modes[ctl & 3];
    const char *trailer = NULL;
    if (mode != GW_SIGV4_CHUNKED_SIGNED && (ctl & 4)) {
        trailer = (ctl & 8) ? "x-amz-checksum-crc32" : "x-amz-checksum-sha256";
    }
    struct gw_sigv4_verified v;
    memset(&v, 0, sizeof(v));
    memset(v.key, 0x42, sizeof(v.key));
    memcpy(v.signature, GW_SIGV4_EMPTY_SHA256, GW_SIGV4_HEX_LEN + 1);
    memcpy(v.amz_date, "20130524T000000Z", GW_SIGV4_AMZ_DATE_LEN + 1);
    memcpy(v.scope, "20130524/us-east-1/s3/aws4_request", 35);
    struct gw_sigv4_chunked *d = gw_sigv4_chunked_new(mode, &v, declared, trailer);
    if (d == NULL) {
        return 0;
    }
    size_t piece = ((ctl >> 4) & 3) == 0 ? 1 : ((ctl >> 4) & 3) == 1 ? 7 : size + 1;
    struct sink s = {0};
    int r = 0;
    size_t off = 0;
    while (off < size && r == 0) {
        size_t n = size - off < piece ? size - off : piece;
        r = gw_sigv4_chunked_feed(d, data + off, n, on_data, &s);
        off += n;
    }
    if (s.n > gw_sigv4_chunked_decoded(d)) {
        abort();
    }
    if (r == 1) {
        if (s.n != gw_sigv4_chunked_decoded(d) || gw_sigv4_chunked_finish(d) != 0 ||
            (declared != UINT64_MAX && s.n != declared)) {
            abort();
        }
    } else {
        if (declared != UINT64_MAX && declared > 0 && s.n >= declared) {
            abort(); /* the whole payload escaped before verification */
        }
        if (gw_sigv4_chunked_finish(d) == 0) {
            abort();
        }
    }
    gw_sigv4_chunked_free(d);
    return 0;
}
