/* Unit tests for gateway/proxy/body.c: the request-body filter.  The client side
 * (gw_req_*) is stubbed: a scripted body delivered in small pieces with
 * "nothing yet" (ERR_AGAIN) between them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/proxy/body.c"

/* The stub request: what the client sends. */
struct gw_req {
    const char *data; /* the wire body */
    size_t len;       /* its length as sent (may be short of the declared one) */
    size_t pos;       /* bytes read so far */
    size_t step;      /* at most this many bytes per read */
    int64_t declared; /* Content-Length (-1 chunked) */
    bool stall;       /* alternate ERR_AGAIN with data */
    bool stalled;     /* the last call said ERR_AGAIN */
};

ssize_t
gw_req_body_read(struct gw_req *req, char *dst, size_t len)
{
    if (req->stall && !req->stalled && req->pos < req->len) {
        req->stalled = true;
        return ERR_AGAIN;
    }
    req->stalled = false;
    size_t n = req->len - req->pos;
    if (n == 0) {
        return 0;
    }
    if (n > len) {
        n = len;
    }
    if (n > req->step) {
        n = req->step;
    }
    memcpy(dst, req->data + req->pos, n);
    req->pos += n;
    return (ssize_t)n;
}

int64_t
gw_req_content_length(const struct gw_req *req)
{
    return req->declared;
}

const char *
gw_req_id(const struct gw_req *req)
{
    (void)req;
    return "test";
}

/* Pulls everything the upstream would get.  Returns the last read's result
 * (0 = clean end) and the bytes delivered in *out / *outlen. */
static ssize_t
drain(struct gw_body *b, char *out, size_t cap, size_t *outlen)
{
    *outlen = 0;
    for (int guard = 0; guard < 100000; guard++) {
        char tmp[700];
        ssize_t n = gw_body_read(b, tmp, sizeof(tmp));
        if (n == ERR_AGAIN) {
            continue;
        }
        if (n <= 0) {
            return n;
        }
        assert_true(*outlen + (size_t)n <= cap);
        memcpy(out + *outlen, tmp, (size_t)n);
        *outlen += (size_t)n;
    }
    fail_msg("body never ended");
    return ERR_INVAL;
}

static void
fill(char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = (char)('a' + (i * 7) % 26);
    }
}

static void
sha256_hex_of(const char *p, size_t n, char hex[65])
{
    assert_int_equal(gw_sigv4_sha256_hex(p, n, hex), 0);
}

static void
test_sha256_good_body_passes_whole(void **state)
{
    (void)state;
    static char body[10000], out[10000];
    fill(body, sizeof(body));
    struct gw_req req = {body, sizeof(body), 0, 333, sizeof(body), true, false};
    struct gw_auth auth = {.payload = GW_PAYLOAD_SHA256};
    sha256_hex_of(body, sizeof(body), auth.sha256);
    struct gw_body *b = gw_body_new(&req, &auth, false);
    assert_non_null(b);
    assert_int_equal(gw_body_upstream_length(b), sizeof(body));
    size_t got;
    assert_int_equal(drain(b, out, sizeof(out), &got), 0);
    assert_int_equal(got, sizeof(body));
    assert_memory_equal(out, body, sizeof(body));
    struct gw_refusal f;
    assert_false(gw_body_fail(b, &f));
    gw_body_free(b);
}

static void
test_sha256_mismatch_never_hands_over_the_last_byte(void **state)
{
    (void)state;
    static char body[5000], out[5000];
    fill(body, sizeof(body));
    struct gw_req req = {body, sizeof(body), 0, 512, sizeof(body), true, false};
    struct gw_auth auth = {.payload = GW_PAYLOAD_SHA256};
    sha256_hex_of(body, sizeof(body), auth.sha256);
    body[4000] ^= 1; /* tampered in flight, after signing */
    struct gw_body *b = gw_body_new(&req, &auth, false);
    size_t got;
    assert_int_equal(drain(b, out, sizeof(out), &got), ERR_AUTH);
    assert_true(got < sizeof(body));        /* the upstream never gets the last byte */
    assert_true(got >= sizeof(body) - 512); /* only the final read is withheld */
    struct gw_refusal f;
    assert_true(gw_body_fail(b, &f));
    assert_int_equal(f.status, 400);
    assert_string_equal(f.code, "XAmzContentSHA256Mismatch");
    gw_body_free(b);
}

static void
test_unsigned_payload_passes_through(void **state)
{
    (void)state;
    static char body[3000], out[3000];
    fill(body, sizeof(body));
    struct gw_req req = {body, sizeof(body), 0, 1000, sizeof(body), false, false};
    struct gw_auth auth = {.payload = GW_PAYLOAD_NONE};
    struct gw_body *b = gw_body_new(&req, &auth, false);
    size_t got;
    assert_int_equal(drain(b, out, sizeof(out), &got), 0);
    assert_int_equal(got, sizeof(body));
    assert_memory_equal(out, body, sizeof(body));
    gw_body_free(b);
}

/* An aws-chunked STREAMING-UNSIGNED-PAYLOAD-TRAILER body with a crc32 trailer. */
static size_t
trailer_body(char *wire, size_t cap, const char *data, size_t n, const char *crc_b64)
{
    int w = snprintf(wire, cap, "%zx\r\n", n);
    assert_true(w > 0);
    size_t len = (size_t)w;
    memcpy(wire + len, data, n);
    len += n;
    w = snprintf(wire + len, cap - len, "\r\n0\r\nx-amz-checksum-crc32:%s\r\n\r\n", crc_b64);
    assert_true(w > 0);
    return len + (size_t)w;
}

static void
test_unsigned_trailer_decoded_and_checked(void **state)
{
    (void)state;
    static char data[2000], wire[4000], out[4000];
    fill(data, sizeof(data));
    char crc[GW_CHECKSUM_B64_MAX];
    assert_int_equal(gw_checksum_b64(GW_CHECKSUM_CRC32, data, sizeof(data), crc, sizeof(crc)), 0);
    size_t wlen = trailer_body(wire, sizeof(wire), data, sizeof(data), crc);
    struct gw_req req = {wire, wlen, 0, 97, -1, true, false};
    struct gw_auth auth = {.payload = GW_PAYLOAD_CHUNKED_UNSIGNED_TRL,
                           .decoded_length = sizeof(data),
                           .trailer = "x-amz-checksum-crc32"};
    struct gw_body *b = gw_body_new(&req, &auth, false);
    assert_non_null(b);
    assert_int_equal(gw_body_upstream_length(b), sizeof(data));
    size_t got;
    assert_int_equal(drain(b, out, sizeof(out), &got), 0);
    assert_int_equal(got, sizeof(data)); /* the framing is gone */
    assert_memory_equal(out, data, sizeof(data));
    gw_body_free(b);

    /* a wrong checksum: BadDigest, and the last byte is never handed over */
    wlen = trailer_body(wire, sizeof(wire), data, sizeof(data), "AAAAAA==");
    struct gw_req bad = {wire, wlen, 0, 97, -1, false, false};
    b = gw_body_new(&bad, &auth, false);
    assert_true(drain(b, out, sizeof(out), &got) < 0);
    assert_true(got < sizeof(data));
    struct gw_refusal f;
    assert_true(gw_body_fail(b, &f));
    assert_string_equal(f.code, "BadDigest");
    gw_body_free(b);
}

/* With an upstream that takes trailers, the verified payload goes on re-framed
 * with the client's checksum as its trailer, and nothing else changes. */
static void
test_unsigned_trailer_reframed_for_the_upstream(void **state)
{
    (void)state;
    static char data[70000], wire[80000], out[80000], want[80000];
    fill(data, sizeof(data));
    char crc[GW_CHECKSUM_B64_MAX];
    assert_int_equal(gw_checksum_b64(GW_CHECKSUM_CRC32, data, sizeof(data), crc, sizeof(crc)), 0);
    size_t wlen = trailer_body(wire, sizeof(wire), data, sizeof(data), crc);
    struct gw_req req = {wire, wlen, 0, 997, -1, true, false};
    struct gw_auth auth = {.payload = GW_PAYLOAD_CHUNKED_UNSIGNED_TRL,
                           .decoded_length = sizeof(data),
                           .trailer = "x-amz-checksum-crc32"};
    struct gw_body *b = gw_body_new(&req, &auth, true);
    assert_non_null(b);
    assert_string_equal(gw_body_upstream_trailer(b), "x-amz-checksum-crc32");
    /* 64 KiB chunk, then the 4464-byte rest, then the trailer */
    int w = snprintf(want, sizeof(want), "10000\r\n");
    size_t wl = (size_t)w;
    memcpy(want + wl, data, 65536);
    wl += 65536;
    w = snprintf(want + wl, sizeof(want) - wl, "\r\n1170\r\n");
    wl += (size_t)w;
    memcpy(want + wl, data + 65536, sizeof(data) - 65536);
    wl += sizeof(data) - 65536;
    w = snprintf(want + wl, sizeof(want) - wl, "\r\n0\r\nx-amz-checksum-crc32:%s\r\n\r\n", crc);
    wl += (size_t)w;
    assert_int_equal(gw_body_upstream_length(b), wl);
    size_t got;
    assert_int_equal(drain(b, out, sizeof(out), &got), 0);
    assert_int_equal(got, wl);
    assert_memory_equal(out, want, wl);
    gw_body_free(b);

    /* a wrong checksum: neither the last payload byte nor the trailer goes out */
    wlen = trailer_body(wire, sizeof(wire), data, sizeof(data), "AAAAAA==");
    struct gw_req bad = {wire, wlen, 0, 997, -1, false, false};
    b = gw_body_new(&bad, &auth, true);
    assert_true(drain(b, out, sizeof(out), &got) < 0);
    assert_true(got < wl - strlen(crc) - 30);
    struct gw_refusal f;
    assert_true(gw_body_fail(b, &f));
    assert_string_equal(f.code, "BadDigest");
    gw_body_free(b);

    /* no checksum trailer: nothing to re-frame, the plain body goes on */
    auth.trailer = NULL;
    snprintf(wire, sizeof(wire), "3\r\nabc\r\n0\r\n\r\n");
    struct gw_req plain = {wire, strlen(wire), 0, 5, -1, false, false};
    auth.decoded_length = 3;
    b = gw_body_new(&plain, &auth, true);
    assert_null(gw_body_upstream_trailer(b));
    assert_int_equal(gw_body_upstream_length(b), 3);
    assert_int_equal(drain(b, out, sizeof(out), &got), 0);
    assert_int_equal(got, 3);
    assert_memory_equal(out, "abc", 3);
    gw_body_free(b);
}

static void
test_chunked_body_cut_short(void **state)
{
    (void)state;
    static char data[1000], wire[2000], out[2000];
    fill(data, sizeof(data));
    char crc[GW_CHECKSUM_B64_MAX];
    assert_int_equal(gw_checksum_b64(GW_CHECKSUM_CRC32, data, sizeof(data), crc, sizeof(crc)), 0);
    size_t wlen = trailer_body(wire, sizeof(wire), data, sizeof(data), crc);
    struct gw_req req = {wire, wlen - 20, 0, 64, -1, false, false}; /* the client stops early */
    struct gw_auth auth = {.payload = GW_PAYLOAD_CHUNKED_UNSIGNED_TRL,
                           .decoded_length = sizeof(data),
                           .trailer = "x-amz-checksum-crc32"};
    struct gw_body *b = gw_body_new(&req, &auth, false);
    size_t got;
    assert_true(drain(b, out, sizeof(out), &got) < 0);
    assert_true(got < sizeof(data));
    struct gw_refusal f;
    assert_true(gw_body_fail(b, &f));
    assert_string_equal(f.code, "IncompleteBody");
    gw_body_free(b);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_good_body_passes_whole),
        cmocka_unit_test(test_sha256_mismatch_never_hands_over_the_last_byte),
        cmocka_unit_test(test_unsigned_payload_passes_through),
        cmocka_unit_test(test_unsigned_trailer_decoded_and_checked),
        cmocka_unit_test(test_unsigned_trailer_reframed_for_the_upstream),
        cmocka_unit_test(test_chunked_body_cut_short),
    };
    return cmocka_run_group_tests_name("body", tests, NULL, NULL);
}
