/*
 * Unit tests for gateway/s3/chunk_enc.c: the aws-chunked unsigned-trailer encoder.
 *
 * The reference is a real client: aws cli 1.45 / botocore 1.43 sent the body
 * of sigv4-client-captures/..._streaming-unsigned-payload-trailer.http over
 * the wire; encoding the same payload must give the same bytes.  Lengths are
 * checked against the output for chunk-boundary sizes, and the output is
 * decoded again by the gateway's own aws-chunked decoder (gateway/s3/sigv4.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/s3/checksum.h"
#include "gateway/s3/chunk_enc.h"
#include "gateway/s3/sigv4.h"
#include "tests/unit/testdata.h"

/* A payload in memory, handed out at most step bytes per read, with an
 * ERR_AGAIN before every read when stall is set. */
struct src {
    const char *data;
    size_t len, off, step;
    enum gw_checksum_alg alg;
    bool stall, stalled;
    const char *value; /* overrides the computed checksum value */
};

static ssize_t
src_read(void *arg, char *dst, size_t len)
{
    struct src *s = arg;
    if (s->stall && !s->stalled) {
        s->stalled = true;
        return ERR_AGAIN;
    }
    s->stalled = false;
    size_t n = s->len - s->off;
    n = n < len ? n : len;
    n = n < s->step ? n : s->step;
    memcpy(dst, s->data + s->off, n);
    s->off += n;
    return (ssize_t)n;
}

static int
src_value(void *arg, char *out, size_t outlen)
{
    struct src *s = arg;
    if (s->value != NULL) {
        (void)snprintf(out, outlen, "%s", s->value);
        return 0;
    }
    return gw_checksum_b64(s->alg, s->data, s->len, out, outlen);
}

/* Encodes everything, reading at most rlen bytes per call. */
static ssize_t
encode(struct src *s, size_t rlen, char **out, size_t *outlen)
{
    struct gw_chunk_enc e;
    gw_chunk_enc_init(&e, s->len, s->alg);
    const struct gw_chunk_src cs = {.read = src_read, .value = src_value, .arg = s};
    size_t cap = (size_t)gw_chunk_enc_length(s->len, s->alg) + 64;
    char *buf = malloc(cap);
    assert_non_null(buf);
    size_t used = 0;
    ssize_t n;
    for (int guard = 0; guard < 10000000; guard++) {
        n = gw_chunk_enc_read(&e, buf + used, cap - used < rlen ? cap - used : rlen, &cs);
        if (n == ERR_AGAIN) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        used += (size_t)n;
    }
    *out = buf;
    *outlen = used;
    return n;
}

static char *
read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = malloc(1 << 20);
    assert_non_null(buf);
    *len = fread(buf, 1, 1 << 20, f);
    (void)fclose(f);
    return buf;
}

static void
test_same_bytes_as_botocore_on_the_wire(void **state)
{
    (void)state;
    char path[1024];
    (void)snprintf(path, sizeof(path), "%s/sigv4-client-captures/%s", testdata_dir(),
                   "awscli-1.45.11-botocore-1.43.11_put-object_https_"
                   "streaming-unsigned-payload-trailer.http");
    size_t len;
    char *raw = read_file(path, &len);
    /* the body is one HTTP/1.1 chunk holding the whole aws-chunked body */
    char *body = strstr(raw, "\r\n\r\n");
    assert_non_null(body);
    body += 4;
    char *end;
    unsigned long n = strtoul(body, &end, 16);
    assert_true(end[0] == '\r' && end[1] == '\n' && n > 0);
    const char *wire = end + 2;
    assert_true((size_t)(wire - raw) + n <= len);

    struct src s = {.data = "0123456789", .len = 10, .step = 10, .alg = GW_CHECKSUM_CRC32};
    char *out;
    size_t olen;
    assert_int_equal(encode(&s, 4096, &out, &olen), 0);
    assert_int_equal(olen, n);
    assert_memory_equal(out, wire, n);
    assert_int_equal(gw_chunk_enc_length(10, GW_CHECKSUM_CRC32), n);
    free(out);
    free(raw);
}

/* Decodes an encoded body with the gateway's decoder; returns the payload. */
static int
collect(void *arg, const char *p, size_t n)
{
    char **cur = arg;
    memcpy(*cur, p, n);
    *cur += n;
    return 0;
}

static void
test_lengths_and_round_trip(void **state)
{
    (void)state;
    static const size_t sizes[] = {0,     1,     10,     65535,  65536,
                                   65537, 70000, 131072, 200001, 3 * 65536 + 5};
    static const enum gw_checksum_alg algs[] = {GW_CHECKSUM_CRC32, GW_CHECKSUM_CRC32C,
                                                GW_CHECKSUM_SHA1, GW_CHECKSUM_SHA256};
    char *data = malloc(200001 + 3 * 65536);
    assert_non_null(data);
    for (size_t i = 0; i < 200001 + 3 * 65536; i++) {
        data[i] = (char)(i * 131 + 7);
    }
    for (size_t a = 0; a < sizeof(algs) / sizeof(algs[0]); a++) {
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            struct src s = {.data = data, .len = sizes[i], .step = 5000, .alg = algs[a]};
            char *out;
            size_t olen;
            /* odd read sizes split headers, payload and trailer anywhere */
            assert_int_equal(encode(&s, 1 + (i * 977) % 9000, &out, &olen), 0);
            assert_int_equal(olen, gw_chunk_enc_length(sizes[i], algs[a]));

            char trailer[64];
            (void)snprintf(trailer, sizeof(trailer), "%s", gw_checksum_header_name(algs[a]));
            struct gw_sigv4_chunked *dec =
                gw_sigv4_chunked_new(GW_SIGV4_CHUNKED_UNSIGNED_TRAILER, NULL, sizes[i], trailer);
            assert_non_null(dec);
            char *back = malloc(sizes[i] + 1);
            char *cur = back;
            assert_int_equal(gw_sigv4_chunked_feed(dec, out, olen, collect, &cur), 1);
            assert_int_equal((size_t)(cur - back), sizes[i]);
            assert_memory_equal(back, data, sizes[i]);
            gw_sigv4_chunked_free(dec);
            free(back);
            free(out);
        }
    }
    /* full chunks carry exactly 64 KiB: "10000" CRLF */
    struct src s = {.data = data, .len = 65536 * 2, .step = 65536 * 2, .alg = GW_CHECKSUM_CRC32};
    char *out;
    size_t olen;
    assert_int_equal(encode(&s, 1 << 20, &out, &olen), 0);
    assert_memory_equal(out, "10000\r\n", 7);
    assert_memory_equal(out + 7 + 65536, "\r\n10000\r\n", 9);
    assert_memory_equal(out + 7 + 65536 + 9 + 65536, "\r\n0\r\nx-amz-checksum-crc32:", 26);
    free(out);
    free(data);
}

static void
test_stalls_resume_where_they_stopped(void **state)
{
    (void)state;
    static char data[150000];
    for (size_t i = 0; i < sizeof(data); i++) {
        data[i] = (char)(i % 251);
    }
    struct src a = {.data = data, .len = sizeof(data), .step = 3000, .alg = GW_CHECKSUM_SHA256};
    struct src b = a;
    b.stall = true;
    b.step = 17;
    char *x;
    char *y;
    size_t xl, yl;
    assert_int_equal(encode(&a, 65536, &x, &xl), 0);
    assert_int_equal(encode(&b, 100, &y, &yl), 0);
    assert_int_equal(xl, yl);
    assert_memory_equal(x, y, xl);
    free(x);
    free(y);
}

static ssize_t
failing_read(void *arg, char *dst, size_t len)
{
    (void)arg;
    (void)dst;
    (void)len;
    return ERR_NOMEM;
}

static void
test_source_breaking_its_promise_is_refused(void **state)
{
    (void)state;
    char *out;
    size_t olen;
    /* fewer payload bytes than announced: the body must not end "complete" */
    struct src shortsrc = {.data = "abcdef", .len = 6, .step = 6, .alg = GW_CHECKSUM_CRC32};
    struct gw_chunk_enc e;
    gw_chunk_enc_init(&e, 10, GW_CHECKSUM_CRC32);
    const struct gw_chunk_src cs = {.read = src_read, .value = src_value, .arg = &shortsrc};
    char buf[256];
    ssize_t n;
    size_t total = 0;
    while ((n = gw_chunk_enc_read(&e, buf, sizeof(buf), &cs)) > 0) {
        total += (size_t)n;
    }
    assert_int_equal(n, ERR_INVAL);
    assert_int_equal(total, 3 + 6); /* "a\r\n" and the 6 bytes, nothing after */

    /* a checksum value of the wrong length would break the announced length */
    struct src badval = {
        .data = "abc", .len = 3, .step = 3, .alg = GW_CHECKSUM_CRC32, .value = "AAAAAAAAAAAA"};
    assert_int_equal(encode(&badval, 256, &out, &olen), ERR_INVAL);
    assert_int_equal(olen, 3 + 3 + 2); /* "3\r\nabc\r\n": no trailer */
    free(out);

    /* a source error goes to the caller as is */
    gw_chunk_enc_init(&e, 5, GW_CHECKSUM_CRC32);
    const struct gw_chunk_src es = {.read = failing_read, .value = src_value, .arg = NULL};
    assert_int_equal(gw_chunk_enc_read(&e, buf, sizeof(buf), &es), 3); /* "5\r\n" */
    assert_int_equal(gw_chunk_enc_read(&e, buf, sizeof(buf), &es), ERR_NOMEM);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_bytes_as_botocore_on_the_wire),
        cmocka_unit_test(test_lengths_and_round_trip),
        cmocka_unit_test(test_stalls_resume_where_they_stopped),
        cmocka_unit_test(test_source_breaking_its_promise_is_refused),
    };
    return cmocka_run_group_tests_name("chunk_enc", tests, NULL, NULL);
}
