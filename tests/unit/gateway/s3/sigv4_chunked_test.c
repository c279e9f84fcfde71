/*
 * tests/unit/gateway/s3/sigv4_chunked_test.c: chunk and trailer signatures and
 * the aws-chunked decoder: the 66560-byte streaming example of
 * s3-examples.json (read at run time) fed in random splits, the trailer
 * signature, our own signed-trailer and unsigned-trailer bodies, and every
 * framing error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/buf.h"
#include "gateway/s3/checksum.h"
#include "gateway/s3/sigv4.h"
#include "tests/unit/testdata.h"

static const char *
jstr(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    if (s == NULL) {
        print_error("missing string %s\n", key);
    }
    assert_non_null(s);
    return s;
}

/* Collects decoded output. */
struct sink {
    struct buf out; /* bytes received */
    int fail_after; /* return ERR_IO once out passes this many bytes (0: never) */
};

/* gw_sigv4_chunked_data_fn, registered by feed_split() */
static int
on_data(void *arg, const char *p, size_t n)
{
    struct sink *s = arg;
    assert_true(n > 0);
    if (buf_append(&s->out, p, n) != 0) {
        return ERR_NOMEM;
    }
    if (s->fail_after > 0 && s->out.len > (size_t)s->fail_after) {
        return ERR_IO;
    }
    return 0;
}

/*
 * Feed wire[0..n) in pieces (sizes from seed: 0 means one piece, 1 means one
 * byte at a time, else pseudo-random 0..2*avg).  Returns the last feed result.
 */
static int
feed_split(struct gw_sigv4_chunked *d, const char *wire, size_t n, unsigned seed, size_t avg,
           struct sink *s)
{
    size_t off = 0;
    int r = 0;
    uint32_t x = seed;
    while (off < n) {
        size_t take;
        if (seed == 0) {
            take = n;
        } else if (seed == 1) {
            take = 1;
        } else {
            x = x * 1664525u + 1013904223u;
            take = (x >> 8) % (2 * avg + 1); /* 0-byte feeds included */
        }
        if (take > n - off) {
            take = n - off;
        }
        r = gw_sigv4_chunked_feed(d, wire + off, take, on_data, s);
        if (r != 0) {
            off += take;
            break;
        }
        off += take;
    }
    if (r == 1 && off != n) {
        /* Done before the end: the rest must be refused. */
        r = gw_sigv4_chunked_feed(d, wire + off, n - off, on_data, s);
    }
    return r;
}

/* ---- the S3 streaming example ---- */

struct stream_ex {
    json_t *j;                  /* the whole file */
    json_t *ex;                 /* streaming_example */
    struct gw_sigv4_verified v; /* from verifying the example's request */
    struct buf wire;            /* the 66824-byte body */
};

static void
stream_ex_load(struct stream_ex *se)
{
    char path[1024];
    json_error_t jerr;
    memset(se, 0, sizeof(*se));
    (void)snprintf(path, sizeof(path), "%s/sigv4/s3-examples.json", testdata_dir());
    se->j = json_load_file(path, 0, &jerr);
    assert_non_null(se->j);
    se->ex = json_object_get(se->j, "streaming_example");
    assert_non_null(se->ex);
    const char *secret = jstr(json_object_get(se->j, "credentials"), "secret_access_key");

    /* The seed signature is the request's signature: verify the request to get it. */
    json_t *hs = json_object_get(se->ex, "request_headers");
    struct gw_sigv4_header h[16];
    size_t nh = json_array_size(hs);
    assert_true(nh <= 16);
    for (size_t k = 0; k < nh; k++) {
        h[k].name = json_string_value(json_array_get(json_array_get(hs, k), 0));
        h[k].value = json_string_value(json_array_get(json_array_get(hs, k), 1));
    }
    struct gw_sigv4_input in = {
        jstr(se->ex, "method"), jstr(se->ex, "request_target"), "", h, nh, NULL};
    struct buf creq;
    struct buf sts;
    char sig[GW_SIGV4_HEX_LEN + 1];
    buf_init(&creq, 1 << 16);
    buf_init(&sts, 1 << 16);
    in.payload_hash = GW_SIGV4_STREAMING;
    assert_int_equal(gw_sigv4_signature(NULL, secret, NULL, "us-east-1", "s3",
                                        jstr(se->j, "amz_date"), &in,
                                        jstr(se->ex, "signed_headers"), 0, sig, &creq, &sts),
                     0);
    assert_string_equal(buf_cstr(&creq), jstr(se->ex, "canonical_request"));
    assert_string_equal(buf_cstr(&sts), jstr(se->ex, "string_to_sign"));
    assert_string_equal(sig, jstr(se->ex, "seed_signature"));
    buf_cleanup(&creq);
    buf_cleanup(&sts);

    struct gw_sigv4_authz a;
    assert_int_equal(gw_sigv4_authz_parse(jstr(se->ex, "authorization"), &a), 0);
    int64_t t;
    assert_int_equal(gw_sigv4_amz_date_parse(jstr(se->j, "amz_date"), &t), 0);
    struct gw_sigv4_verify_opts o = {"us-east-1", "s3", t * 1000, 0, 0};
    in.payload_hash = NULL;
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &in, &o, &se->v, NULL), 0);
    assert_string_equal(se->v.signature, jstr(se->ex, "seed_signature"));

    /* The wire body, from the chunk list: header line CRLF data CRLF. */
    buf_init(&se->wire, 1 << 20);
    json_t *chunks = json_object_get(se->ex, "chunks");
    for (size_t i = 0; i < json_array_size(chunks); i++) {
        json_t *c = json_array_get(chunks, i);
        size_t size = (size_t)json_integer_value(json_object_get(c, "size"));
        assert_int_equal(buf_printf(&se->wire, "%s\r\n", jstr(c, "header_line")), 0);
        for (size_t k = 0; k < size; k++) {
            assert_int_equal(buf_append(&se->wire, "a", 1), 0);
        }
        assert_int_equal(buf_append(&se->wire, "\r\n", 2), 0);
    }
    assert_int_equal(se->wire.len,
                     (size_t)json_integer_value(json_object_get(se->ex, "content_length")));
}

static void
stream_ex_free(struct stream_ex *se)
{
    gw_sigv4_wipe(&se->v, sizeof(se->v));
    buf_cleanup(&se->wire);
    json_decref(se->j);
}

static void
test_streaming_signatures(void **state)
{
    (void)state;
    struct stream_ex se;
    stream_ex_load(&se);
    json_t *chunks = json_object_get(se.ex, "chunks");
    assert_int_equal(json_array_size(chunks), 3);
    char prev[GW_SIGV4_HEX_LEN + 1];
    memcpy(prev, se.v.signature, sizeof(prev));
    for (size_t i = 0; i < json_array_size(chunks); i++) {
        json_t *c = json_array_get(chunks, i);
        size_t size = (size_t)json_integer_value(json_object_get(c, "size"));
        char *data = malloc(size + 1);
        assert_non_null(data);
        memset(data, 'a', size);
        char hash[GW_SIGV4_HEX_LEN + 1];
        assert_int_equal(gw_sigv4_sha256_hex(data, size, hash), 0);
        free(data);
        assert_string_equal(hash, jstr(c, "data_sha256"));
        assert_string_equal(prev, jstr(c, "previous_signature"));
        char sig[GW_SIGV4_HEX_LEN + 1];
        assert_int_equal(
            gw_sigv4_chunk_signature(se.v.key, se.v.amz_date, se.v.scope, prev, hash, sig), 0);
        assert_string_equal(sig, jstr(c, "signature"));
        memcpy(prev, sig, sizeof(prev));
    }
    /* The trailer signature continues the chain from the final chunk. */
    json_t *te = json_object_get(se.j, "streaming_trailer_example");
    assert_string_equal(prev, jstr(te, "previous_signature"));
    const char *ct = jstr(te, "canonical_trailers");
    char sig[GW_SIGV4_HEX_LEN + 1];
    assert_int_equal(
        gw_sigv4_trailer_signature(se.v.key, se.v.amz_date, se.v.scope, prev, ct, strlen(ct), sig),
        0);
    assert_string_equal(sig, jstr(te, "signature"));
    /* Bad arguments. */
    assert_int_equal(gw_sigv4_chunk_signature(se.v.key, "2013", se.v.scope, prev, prev, sig),
                     ERR_INVAL);
    assert_int_equal(gw_sigv4_chunk_signature(se.v.key, se.v.amz_date, se.v.scope, "ab", prev, sig),
                     ERR_INVAL);
    assert_int_equal(gw_sigv4_chunk_signature(se.v.key, se.v.amz_date, se.v.scope, prev, "ab", sig),
                     ERR_INVAL);
    stream_ex_free(&se);
}

static void
test_streaming_decode_splits(void **state)
{
    (void)state;
    struct stream_ex se;
    stream_ex_load(&se);
    const size_t decoded = 66560;
    unsigned seeds[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
    size_t avgs[] = {1, 3, 7, 13, 64, 100, 1000, 4096, 70000};
    for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
        for (size_t k = 0; k < sizeof(avgs) / sizeof(avgs[0]); k++) {
            if (seeds[i] < 2 && k > 0) {
                continue;
            }
            for (int known = 0; known < 2; known++) {
                struct gw_sigv4_chunked *d = gw_sigv4_chunked_new(
                    GW_SIGV4_CHUNKED_SIGNED, &se.v, known ? decoded : UINT64_MAX, NULL);
                assert_non_null(d);
                struct sink s = {0};
                buf_init(&s.out, 1 << 20);
                int r = feed_split(d, se.wire.data, se.wire.len, seeds[i], avgs[k], &s);
                assert_int_equal(r, 1);
                assert_int_equal(gw_sigv4_chunked_finish(d), 0);
                assert_int_equal(s.out.len, decoded);
                for (size_t b = 0; b < decoded; b++) {
                    if (s.out.data[b] != 'a') {
                        fail_msg("byte %zu", b);
                    }
                }
                assert_int_equal(gw_sigv4_chunked_decoded(d), decoded);
                assert_int_equal(gw_sigv4_chunked_fail(d), GW_SIGV4_CHUNKED_OK);
                buf_cleanup(&s.out);
                gw_sigv4_chunked_free(d);
            }
        }
    }
    stream_ex_free(&se);
}

/* Decode wire with one byte changed at off; expect err and the reason. */
static void
expect_tamper(const struct stream_ex *se, size_t off, int want, enum gw_sigv4_chunked_fail why)
{
    struct buf w;
    buf_init(&w, 1 << 20);
    assert_int_equal(buf_append(&w, se->wire.data, se->wire.len), 0);
    w.data[off] = (char)(w.data[off] == 'a' ? 'b' : w.data[off] == '0' ? '1' : '0');
    struct gw_sigv4_chunked *d = gw_sigv4_chunked_new(GW_SIGV4_CHUNKED_SIGNED, &se->v, 66560, NULL);
    assert_non_null(d);
    struct sink s = {0};
    buf_init(&s.out, 1 << 20);
    int r = feed_split(d, w.data, w.len, 7, 500, &s);
    if (r != want || gw_sigv4_chunked_fail(d) != why) {
        fail_msg("offset %zu: got %d/%d, want %d/%d", off, r, gw_sigv4_chunked_fail(d), want, why);
    }
    /* Never the whole payload: the last byte is held back until everything verified. */
    assert_true(s.out.len < 66560);
    assert_int_equal(gw_sigv4_chunked_feed(d, "x", 1, on_data, &s), ERR_INVAL);
    assert_int_equal(gw_sigv4_chunked_finish(d), ERR_INVAL);
    buf_cleanup(&s.out);
    gw_sigv4_chunked_free(d);
    buf_cleanup(&w);
}

static void
test_streaming_tampered(void **state)
{
    (void)state;
    struct stream_ex se;
    stream_ex_load(&se);
    const char *w = se.wire.data;
    size_t first_data = (size_t)(strstr(w, "\r\n") - w) + 2;
    const char *l2 = strstr(w + first_data + 65536, "400;");
    const char *l3 = strstr(w + first_data + 65536 + 1024, "0;chunk-signature=");
    assert_non_null(l2);
    assert_non_null(l3);
    size_t sig2 = (size_t)(l2 - w) + strlen("400;chunk-signature=") + 10;
    size_t sig3 = (size_t)(l3 - w) + strlen("0;chunk-signature=") + 63;
    /* Data of the first chunk, its last byte, the second chunk's data and signatures. */
    expect_tamper(&se, first_data, ERR_AUTH, GW_SIGV4_CHUNKED_SIGNATURE);
    expect_tamper(&se, first_data + 65535, ERR_AUTH, GW_SIGV4_CHUNKED_SIGNATURE);
    expect_tamper(&se, (size_t)(l2 - w) + 90, ERR_AUTH, GW_SIGV4_CHUNKED_SIGNATURE);
    expect_tamper(&se, 30, ERR_AUTH, GW_SIGV4_CHUNKED_SIGNATURE);
    expect_tamper(&se, sig2, ERR_AUTH, GW_SIGV4_CHUNKED_SIGNATURE);
    expect_tamper(&se, sig3, ERR_AUTH, GW_SIGV4_CHUNKED_SIGNATURE);
    /* Framing: the size, the extension name, the CRLF after data, the final CRLF. */
    expect_tamper(&se, 0, ERR_AUTH, GW_SIGV4_CHUNKED_SIGNATURE); /* "00000": a final chunk */
    expect_tamper(&se, 7, ERR_INVAL, GW_SIGV4_CHUNKED_FRAMING);
    expect_tamper(&se, first_data + 65536, ERR_INVAL, GW_SIGV4_CHUNKED_FRAMING);
    expect_tamper(&se, se.wire.len - 1, ERR_INVAL, GW_SIGV4_CHUNKED_FRAMING);
    /* Truncated anywhere: incomplete. */
    size_t cuts[] = {0, 5, first_data + 100, se.wire.len - 1};
    for (size_t i = 0; i < 4; i++) {
        struct gw_sigv4_chunked *d =
            gw_sigv4_chunked_new(GW_SIGV4_CHUNKED_SIGNED, &se.v, 66560, NULL);
        struct sink s = {0};
        buf_init(&s.out, 1 << 20);
        assert_int_equal(feed_split(d, w, cuts[i], 3, 100, &s), 0);
        assert_int_equal(gw_sigv4_chunked_finish(d), ERR_INVAL);
        assert_int_equal(gw_sigv4_chunked_fail(d), GW_SIGV4_CHUNKED_INCOMPLETE);
        buf_cleanup(&s.out);
        gw_sigv4_chunked_free(d);
    }
    /* A wrong decoded length, either way. */
    uint64_t lens[] = {66559, 66561, 0};
    for (size_t i = 0; i < 3; i++) {
        struct gw_sigv4_chunked *d =
            gw_sigv4_chunked_new(GW_SIGV4_CHUNKED_SIGNED, &se.v, lens[i], NULL);
        struct sink s = {0};
        buf_init(&s.out, 1 << 20);
        assert_int_equal(feed_split(d, w, se.wire.len, 0, 0, &s), ERR_INVAL);
        assert_int_equal(gw_sigv4_chunked_fail(d), GW_SIGV4_CHUNKED_LENGTH);
        buf_cleanup(&s.out);
        gw_sigv4_chunked_free(d);
    }
    /* The consumer's error stops the decoder and comes back. */
    struct gw_sigv4_chunked *d = gw_sigv4_chunked_new(GW_SIGV4_CHUNKED_SIGNED, &se.v, 66560, NULL);
    struct sink s = {.fail_after = 1000};
    buf_init(&s.out, 1 << 20);
    assert_int_equal(feed_split(d, w, se.wire.len, 5, 300, &s), ERR_IO);
    assert_int_equal(gw_sigv4_chunked_feed(d, "", 0, on_data, &s), ERR_INVAL);
    buf_cleanup(&s.out);
    gw_sigv4_chunked_free(d);
    stream_ex_free(&se);
}

/* ---- our own bodies ---- */

/* Run one whole body through a fresh decoder; returns the feed result and the reason. */
static int
decode_one(enum gw_sigv4_chunked_mode mode, const struct gw_sigv4_verified *v, uint64_t dlen,
           const char *trailer, const char *wire, size_t n, struct sink *s,
           enum gw_sigv4_chunked_fail *why)
{
    struct gw_sigv4_chunked *d = gw_sigv4_chunked_new(mode, v, dlen, trailer);
    assert_non_null(d);
    int r = feed_split(d, wire, n, 1, 1, s);
    if (r == 0) {
        r = gw_sigv4_chunked_finish(d);
        if (r == 0) {
            r = 1;
        }
    }
    *why = gw_sigv4_chunked_fail(d);
    gw_sigv4_chunked_free(d);
    return r;
}

static void
expect_unsigned(const char *wire, uint64_t dlen, const char *trailer, int want,
                enum gw_sigv4_chunked_fail want_why)
{
    struct sink s = {0};
    enum gw_sigv4_chunked_fail why;
    buf_init(&s.out, 1 << 16);
    int r = decode_one(GW_SIGV4_CHUNKED_UNSIGNED_TRAILER, NULL, dlen, trailer, wire, strlen(wire),
                       &s, &why);
    if (r != want || why != want_why) {
        fail_msg("%s: got %d/%d, want %d/%d", wire, r, why, want, want_why);
    }
    buf_cleanup(&s.out);
}

static void
test_unsigned_trailer(void **state)
{
    (void)state;
    const char *crc = "x-amz-checksum-crc32";
    char ok[128];
    char v[GW_CHECKSUM_B64_MAX];
    assert_int_equal(gw_checksum_b64(GW_CHECKSUM_CRC32, "abcdefg", 7, v, sizeof(v)), 0);
    (void)snprintf(ok, sizeof(ok), "3\r\nabc\r\n4\r\ndefg\r\n0\r\nx-amz-checksum-crc32:%s\r\n\r\n",
                   v);
    expect_unsigned(ok, 7, crc, 1, GW_SIGV4_CHUNKED_OK);
    expect_unsigned(ok, UINT64_MAX, crc, 1, GW_SIGV4_CHUNKED_OK);
    /* The decoded bytes, and the checksum trailer handed back. */
    struct gw_sigv4_chunked *d =
        gw_sigv4_chunked_new(GW_SIGV4_CHUNKED_UNSIGNED_TRAILER, NULL, 7, "X-Amz-Checksum-Crc32");
    struct sink s = {0};
    buf_init(&s.out, 1024);
    assert_int_equal(gw_sigv4_chunked_feed(d, ok, strlen(ok), on_data, &s), 1);
    assert_int_equal(s.out.len, 7);
    assert_memory_equal(s.out.data, "abcdefg", 7);
    const char *name;
    const char *value;
    gw_sigv4_chunked_checksum(d, &name, &value);
    assert_string_equal(name, "x-amz-checksum-crc32");
    assert_string_equal(value, v);
    assert_int_equal(gw_sigv4_chunked_feed(d, "", 0, on_data, &s), 1);
    assert_int_equal(gw_sigv4_chunked_feed(d, "\r\n", 2, on_data, &s), ERR_INVAL);
    buf_cleanup(&s.out);
    gw_sigv4_chunked_free(d);

    /* Other checksums; spaces around a trailer value; upper-case hex sizes. */
    char sha[GW_CHECKSUM_B64_MAX];
    assert_int_equal(gw_checksum_b64(GW_CHECKSUM_SHA256, "abcdefghijk", 11, sha, sizeof(sha)), 0);
    char w2[160];
    (void)snprintf(w2, sizeof(w2), "B\r\nabcdefghijk\r\n0\r\nX-Amz-Checksum-Sha256: %s \r\n\r\n",
                   sha);
    expect_unsigned(w2, 11, "x-amz-checksum-sha256", 1, GW_SIGV4_CHUNKED_OK);
    /* No trailer expected, none sent; an empty body. */
    expect_unsigned("3\r\nabc\r\n0\r\n\r\n", 3, NULL, 1, GW_SIGV4_CHUNKED_OK);
    expect_unsigned("0\r\n\r\n", 0, NULL, 1, GW_SIGV4_CHUNKED_OK);

    /* Checksum wrong, missing, repeated, of another kind, unannounced. */
    expect_unsigned("3\r\nabc\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n", 3, crc, ERR_INVAL,
                    GW_SIGV4_CHUNKED_CHECKSUM);
    expect_unsigned("3\r\nabc\r\n0\r\n\r\n", 3, crc, ERR_INVAL, GW_SIGV4_CHUNKED_FRAMING);
    char w3[160];
    assert_int_equal(gw_checksum_b64(GW_CHECKSUM_CRC32, "abc", 3, v, sizeof(v)), 0);
    (void)snprintf(w3, sizeof(w3), "3\r\nabc\r\n0\r\n%s:%s\r\n%s:%s\r\n\r\n", crc, v, crc, v);
    expect_unsigned(w3, 3, crc, ERR_INVAL, GW_SIGV4_CHUNKED_FRAMING);
    (void)snprintf(w3, sizeof(w3), "3\r\nabc\r\n0\r\nx-amz-checksum-crc32c:%s\r\n\r\n", v);
    expect_unsigned(w3, 3, crc, ERR_INVAL, GW_SIGV4_CHUNKED_FRAMING);
    expect_unsigned("3\r\nabc\r\n0\r\nx-other:1\r\n\r\n", 3, NULL, ERR_INVAL,
                    GW_SIGV4_CHUNKED_FRAMING);
    expect_unsigned("3\r\nabc\r\n0\r\n:1\r\n\r\n", 3, NULL, ERR_INVAL, GW_SIGV4_CHUNKED_FRAMING);
    expect_unsigned("3\r\nabc\r\n0\r\nnocolon\r\n\r\n", 3, NULL, ERR_INVAL,
                    GW_SIGV4_CHUNKED_FRAMING);

    /* Framing: bad hex, empty size, extensions, bare LF or CR, missing CRLF after data. */
    const char *bad[] = {
        "g\r\nabc\r\n0\r\n\r\n",
        "\r\nabc\r\n0\r\n\r\n",
        "3;x=y\r\nabc\r\n0\r\n\r\n",
        "3\nabc\r\n0\r\n\r\n",
        "3\r\nabc\n0\r\n\r\n",
        "3\r\nabcX\r\n0\r\n\r\n",
        "3\r\nabc\r\r\n0\r\n\r\n",
        "3\r\nabc\r\n0\r\n\n",
        "3\r\nabc\r\n0\r\n\r\r\n",
        " 3\r\nabc\r\n0\r\n\r\n",
        "3 \r\nabc\r\n0\r\n\r\n",
        "-3\r\nabc\r\n0\r\n\r\n",
        "0x3\r\nabc\r\n0\r\n\r\n",
        "3\r\nabc\r\n0\r\n\r\nX",
        "3\r\nabc\r\n0\r\n\r\n0\r\n\r\n",
        "0000000000000000003\r\nabc\r\n0\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        expect_unsigned(bad[i], UINT64_MAX, NULL, ERR_INVAL, GW_SIGV4_CHUNKED_FRAMING);
    }
    /* Sizes against the declared length. */
    expect_unsigned("ffffffffffffffff\r\nabc", 3, NULL, ERR_INVAL, GW_SIGV4_CHUNKED_LENGTH);
    expect_unsigned("3\r\nabc\r\n0\r\n\r\n", 4, NULL, ERR_INVAL, GW_SIGV4_CHUNKED_LENGTH);
    expect_unsigned("3\r\nabc\r\n0\r\n\r\n", 2, NULL, ERR_INVAL, GW_SIGV4_CHUNKED_LENGTH);
    /* Incomplete. */
    expect_unsigned("3\r\nab", 3, NULL, ERR_INVAL, GW_SIGV4_CHUNKED_INCOMPLETE);
    expect_unsigned("3\r\nabc\r\n0\r\n", 3, NULL, ERR_INVAL, GW_SIGV4_CHUNKED_INCOMPLETE);
    /* Limits: a size line past GW_SIGV4_CHUNKED_MAX_LINE, trailers past the cap. */
    struct buf b;
    buf_init(&b, 1 << 16);
    for (int i = 0; i < GW_SIGV4_CHUNKED_MAX_LINE + 10; i++) {
        assert_int_equal(buf_append(&b, "0", 1), 0);
    }
    assert_int_equal(buf_append_str(&b, "\r\n\r\n"), 0);
    expect_unsigned(b.data, UINT64_MAX, NULL, ERR_INVAL, GW_SIGV4_CHUNKED_FRAMING);
    buf_reset(&b);
    assert_int_equal(buf_append_str(&b, "0\r\nx-amz-checksum-crc32:"), 0);
    for (int i = 0; i < 200; i++) {
        assert_int_equal(buf_append(&b, "A", 1), 0);
    }
    assert_int_equal(buf_append_str(&b, "\r\n\r\n"), 0);
    expect_unsigned(b.data, 0, crc, ERR_INVAL, GW_SIGV4_CHUNKED_FRAMING);
    buf_reset(&b);
    assert_int_equal(buf_append_str(&b, "0\r\n"), 0);
    for (int i = 0; i < 20; i++) {
        assert_int_equal(buf_printf(&b, "x-amz-meta-pad%02d:%080d\r\n", i, 0), 0);
    }
    assert_int_equal(buf_append_str(&b, "\r\n"), 0);
    expect_unsigned(b.data, 0, crc, ERR_INVAL, GW_SIGV4_CHUNKED_FRAMING);
    buf_cleanup(&b);

    /* Constructor refusals. */
    assert_null(gw_sigv4_chunked_new(GW_SIGV4_CHUNKED_SIGNED, NULL, 0, NULL));
    assert_null(gw_sigv4_chunked_new(GW_SIGV4_CHUNKED_UNSIGNED_TRAILER, NULL, 0,
                                     "x-amz-checksum-crc64nvme"));
    assert_null(gw_sigv4_chunked_new((enum gw_sigv4_chunked_mode)42, NULL, 0, NULL));
    gw_sigv4_chunked_free(NULL);
}

/* A STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER body built with our own signer. */
static void
build_signed_trailer(const struct gw_sigv4_verified *v, const char *data, size_t n, size_t chunk,
                     int sign_trailer, struct buf *w)
{
    char prev[GW_SIGV4_HEX_LEN + 1];
    char hash[GW_SIGV4_HEX_LEN + 1];
    char sig[GW_SIGV4_HEX_LEN + 1];
    memcpy(prev, v->signature, sizeof(prev));
    size_t off = 0;
    for (;;) {
        size_t take = n - off < chunk ? n - off : chunk;
        assert_int_equal(gw_sigv4_sha256_hex(data + off, take, hash), 0);
        assert_int_equal(gw_sigv4_chunk_signature(v->key, v->amz_date, v->scope, prev, hash, sig),
                         0);
        assert_int_equal(buf_printf(w, "%zx;chunk-signature=%s\r\n", take, sig), 0);
        memcpy(prev, sig, sizeof(prev));
        if (take == 0) {
            break;
        }
        assert_int_equal(buf_append(w, data + off, take), 0);
        assert_int_equal(buf_append_str(w, "\r\n"), 0);
        off += take;
    }
    char ck[GW_CHECKSUM_B64_MAX];
    assert_int_equal(gw_checksum_b64(GW_CHECKSUM_CRC32C, data, n, ck, sizeof(ck)), 0);
    char trailers[128];
    int tl = snprintf(trailers, sizeof(trailers), "x-amz-checksum-crc32c:%s\n", ck);
    assert_int_equal(buf_printf(w, "x-amz-checksum-crc32c:%s\r\n", ck), 0);
    assert_int_equal(
        gw_sigv4_trailer_signature(v->key, v->amz_date, v->scope, prev, trailers, (size_t)tl, sig),
        0);
    if (sign_trailer) {
        assert_int_equal(buf_printf(w, "x-amz-trailer-signature:%s\r\n", sig), 0);
    }
    assert_int_equal(buf_append_str(w, "\r\n"), 0);
}

static void
test_signed_trailer(void **state)
{
    (void)state;
    struct gw_sigv4_verified v;
    memset(&v, 0, sizeof(v));
    assert_int_equal(gw_sigv4_signing_key(NULL, "secret", "20261121", "us-east-1", "s3", v.key), 0);
    memcpy(v.signature, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9", 65);
    memcpy(v.amz_date, "20261121T210000Z", 17);
    memcpy(v.scope, "20261121/us-east-1/s3/aws4_request", 35);
    char data[5000];
    for (size_t i = 0; i < sizeof(data); i++) {
        data[i] = (char)('A' + i % 26); /* no NUL: the test searches the body with strstr */
    }
    struct buf w;
    buf_init(&w, 1 << 16);
    build_signed_trailer(&v, data, sizeof(data), 1024, 1, &w);
    struct sink s = {0};
    enum gw_sigv4_chunked_fail why;
    buf_init(&s.out, 1 << 16);
    assert_int_equal(decode_one(GW_SIGV4_CHUNKED_SIGNED_TRAILER, &v, sizeof(data),
                                "x-amz-checksum-crc32c", w.data, w.len, &s, &why),
                     1);
    assert_int_equal(s.out.len, sizeof(data));
    assert_memory_equal(s.out.data, data, sizeof(data));
    /* Flip each byte of the trailer section in turn: always refused. */
    const char *tpos = strstr(w.data, "x-amz-checksum-crc32c:");
    assert_non_null(tpos);
    for (size_t off = (size_t)(tpos - w.data); off < w.len; off++) {
        w.data[off] ^= 0x01;
        buf_reset(&s.out);
        int r = decode_one(GW_SIGV4_CHUNKED_SIGNED_TRAILER, &v, sizeof(data),
                           "x-amz-checksum-crc32c", w.data, w.len, &s, &why);
        if (r == 1) {
            fail_msg("accepted with byte %zu flipped", off);
        }
        assert_true(s.out.len < sizeof(data));
        w.data[off] ^= 0x01;
    }
    /* Without the trailer signature: refused. */
    buf_reset(&w);
    build_signed_trailer(&v, data, sizeof(data), 2000, 0, &w);
    buf_reset(&s.out);
    assert_int_equal(decode_one(GW_SIGV4_CHUNKED_SIGNED_TRAILER, &v, sizeof(data),
                                "x-amz-checksum-crc32c", w.data, w.len, &s, &why),
                     ERR_INVAL);
    assert_int_equal(why, GW_SIGV4_CHUNKED_FRAMING);
    /* The same body in the no-trailer signed mode: trailers are not allowed there. */
    buf_reset(&s.out);
    assert_int_equal(
        decode_one(GW_SIGV4_CHUNKED_SIGNED, &v, sizeof(data), NULL, w.data, w.len, &s, &why),
        ERR_INVAL);
    buf_cleanup(&s.out);
    buf_cleanup(&w);
    gw_sigv4_wipe(&v, sizeof(v));
}

/*
 * Bytes after the end of a body, in the same buffer as its last line, are a
 * framing error found before the held-back last byte is released: the whole
 * payload never reaches the upstream (the fuzz target found it released).
 */
static void
test_bytes_after_end_keep_the_last_byte(void **state)
{
    (void)state;
    const char *wires[] = {
        "3\r\nabc\r\n0\r\n\r\nX",
        "3\r\nabc\r\n0\r\n\r\n0\r\n\r\n",
        "3\r\nabc\r\n0\r\n\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(wires) / sizeof(wires[0]); i++) {
        struct gw_sigv4_chunked *d =
            gw_sigv4_chunked_new(GW_SIGV4_CHUNKED_UNSIGNED_TRAILER, NULL, 3, NULL);
        assert_non_null(d);
        struct sink s = {0};
        buf_init(&s.out, 1024);
        assert_int_equal(gw_sigv4_chunked_feed(d, wires[i], strlen(wires[i]), on_data, &s),
                         ERR_INVAL);
        assert_int_equal(gw_sigv4_chunked_fail(d), GW_SIGV4_CHUNKED_FRAMING);
        assert_int_equal(s.out.len, 2); /* "ab": the last byte held */
        assert_int_not_equal(gw_sigv4_chunked_finish(d), 0);
        buf_cleanup(&s.out);
        gw_sigv4_chunked_free(d);
    }
    /* The same body without the extra bytes ends and releases the last byte. */
    struct gw_sigv4_chunked *d =
        gw_sigv4_chunked_new(GW_SIGV4_CHUNKED_UNSIGNED_TRAILER, NULL, 3, NULL);
    assert_non_null(d);
    struct sink s = {0};
    buf_init(&s.out, 1024);
    const char *ok = "3\r\nabc\r\n0\r\n\r\n";
    assert_int_equal(gw_sigv4_chunked_feed(d, ok, strlen(ok), on_data, &s), 1);
    assert_int_equal(s.out.len, 3);
    assert_int_equal(gw_sigv4_chunked_finish(d), 0);
    buf_cleanup(&s.out);
    gw_sigv4_chunked_free(d);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_streaming_signatures),
        cmocka_unit_test(test_streaming_decode_splits),
        cmocka_unit_test(test_streaming_tampered),
        cmocka_unit_test(test_unsigned_trailer),
        cmocka_unit_test(test_signed_trailer),
        cmocka_unit_test(test_bytes_after_end_keep_the_last_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
