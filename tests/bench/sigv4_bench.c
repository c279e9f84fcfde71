/*
 * tests/bench/sigv4_bench.c: what SigV4 costs one small request (not a test:
 * it prints figures, it asserts nothing but success).
 *
 *   build/tests/bench/sigv4_bench [verify|sign|both] [N]
 *   build/tests/bench/sigv4_bench chunked [N [CHUNK_BYTES]]
 *
 * The request is the one make bench-proxy's gw_auth case forwards: a GET of
 * a short key with host, x-amz-date and x-amz-content-sha256 signed.  Each
 * round verifies it as the gateway's authenticator does (its key cache warm,
 * one principal) and re-signs it for the upstream as the internal S3 client
 * does (its own cache, other credentials).  Prints ns per operation; for
 * instruction counts, tests/bench/sigv4_cost.sh runs it under callgrind.
 *
 * chunked: a STREAMING-AWS4-HMAC-SHA256-PAYLOAD body of 1 MiB in chunks of
 * CHUNK_BYTES (65536; the last chunk is shorter if it does not divide), made
 * once; each round decodes and verifies it as gateway/proxy/body.c does: a
 * new decoder, the wire body fed in GW_BODY_STAGE (16 KiB) pieces, freed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "gateway/s3/sigv4.h"
#include "tests/bench/benchlib.h"

#define AMZ_DATE      "20261127T120000Z"
#define CHUNKED_BODY  (1u << 20) /* decoded bytes of the chunked case's body */
#define CHUNKED_PIECE 16384      /* gateway/proxy/body.h's GW_BODY_STAGE */

static void
check(int err, const char *what)
{
    if (err != 0) {
        (void)fprintf(stderr, "sigv4_bench: %s: %s\n", what, err_str(err));
        exit(1);
    }
}

/* gw_sigv4_chunked_data_fn: counts the decoded bytes */
static int
on_decoded(void *arg, const char *p, size_t n)
{
    (void)p;
    *(uint64_t *)arg += n;
    return 0;
}

/* Decode and verify the wire body once, as gateway/proxy/body.c does. */
static void
decode_once(const struct gw_sigv4_verified *v, const struct buf *wire)
{
    struct gw_sigv4_chunked *d =
        gw_sigv4_chunked_new(GW_SIGV4_CHUNKED_SIGNED, v, CHUNKED_BODY, NULL);
    if (d == NULL) {
        check(ERR_NOMEM, "decoder");
    }
    uint64_t got = 0;
    int rc = 0;
    for (size_t off = 0; off < wire->len && rc == 0; off += CHUNKED_PIECE) {
        size_t len = wire->len - off < CHUNKED_PIECE ? wire->len - off : CHUNKED_PIECE;
        rc = gw_sigv4_chunked_feed(d, wire->data + off, len, on_decoded, &got);
    }
    if (rc != 1 || gw_sigv4_chunked_finish(d) != 0 || got != CHUNKED_BODY) {
        check(rc < 0 ? rc : ERR_INVAL, "decode");
    }
    gw_sigv4_chunked_free(d);
}

/* The chunked case: n rounds of decoding one signed aws-chunked body. */
static int
bench_chunked(long n, size_t chunk)
{
    struct gw_sigv4_verified v;
    memset(&v, 0, sizeof(v));
    check(gw_sigv4_signing_key(NULL, "bench-client-secret-0123456789abcdef", "20261127",
                               "us-east-1", "s3", v.key),
          "signing key");
    check(gw_sigv4_scope("20261127", "us-east-1", "s3", v.scope, sizeof(v.scope)), "scope");
    memcpy(v.amz_date, AMZ_DATE, sizeof(v.amz_date));
    /* the seed: any request signature; the decoder only chains from it */
    check(gw_sigv4_sha256_hex("seed", 4, v.signature), "seed");

    char *data = malloc(CHUNKED_BODY);
    struct buf wire;
    buf_init(&wire, 2 * CHUNKED_BODY);
    if (data == NULL) {
        check(ERR_NOMEM, "body");
    }
    for (size_t i = 0; i < CHUNKED_BODY; i++) {
        data[i] = (char)('a' + i % 26);
    }
    char prev[GW_SIGV4_HEX_LEN + 1];
    memcpy(prev, v.signature, sizeof(prev));
    long chunks = 0;
    for (size_t off = 0;; off += chunk) {
        size_t len = off < CHUNKED_BODY ? CHUNKED_BODY - off : 0;
        len = len < chunk ? len : chunk;
        char hash[GW_SIGV4_HEX_LEN + 1];
        char sig[GW_SIGV4_HEX_LEN + 1];
        char head[128];
        check(gw_sigv4_sha256_hex(data + off, len, hash), "chunk hash");
        check(gw_sigv4_chunk_signature(v.key, v.amz_date, v.scope, prev, hash, sig), "chunk sig");
        int hl = snprintf(head, sizeof(head), "%zx;chunk-signature=%s\r\n", len, sig);
        check(buf_append(&wire, head, (size_t)hl), "wire");
        check(buf_append(&wire, data + off, len), "wire");
        check(buf_append(&wire, "\r\n", 2), "wire");
        memcpy(prev, sig, sizeof(prev));
        chunks++;
        if (len == 0) {
            break;
        }
    }
    /* one untimed round first: OpenSSL loads its provider on first use, which
     * the setup (rounds = 0) must include for sigv4_cost.sh's subtraction */
    decode_once(&v, &wire);
    uint64_t t = 0;
    for (long r = 0; r < n; r++) {
        uint64_t t0 = now_ns();
        decode_once(&v, &wire);
        t += now_ns() - t0;
    }
    if (n > 0) {
        (void)printf("sigv4_bench: %ld rounds: chunked %.0f ns per 1 MiB body, %.0f ns per chunk "
                     "(%ld signed chunks of %zu bytes)\n",
                     n, (double)t / (double)n, (double)t / (double)n / (double)chunks, chunks,
                     chunk);
    }
    buf_cleanup(&wire);
    free(data);
    gw_sigv4_wipe(&v, sizeof(v));
    return 0;
}

int
main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "both";
    long n = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
    if (strcmp(what, "chunked") == 0) {
        long chunk = argc > 3 ? strtol(argv[3], NULL, 10) : 65536;
        if (chunk <= 0) {
            check(ERR_INVAL, "chunk size");
        }
        return bench_chunked(argc > 2 ? n : 200, (size_t)chunk);
    }
    bool verify = strcmp(what, "sign") != 0;
    bool sign = strcmp(what, "verify") != 0;
    struct gw_sigv4_header h[] = {
        {"host", "127.0.0.1:8080"},
        {"x-amz-content-sha256", GW_SIGV4_UNSIGNED},
        {"x-amz-date", AMZ_DATE},
        {"user-agent", "wrk"},
    };
    struct gw_sigv4_input in = {"GET", "/bench/obj-1k", "", h, 4, GW_SIGV4_UNSIGNED};
    const char *signed_headers = "host;x-amz-content-sha256;x-amz-date";
    struct gw_sigv4_creds client = {"BENCHCLIENTKEY", "bench-client-secret-0123456789abcdef", NULL};
    struct gw_sigv4_creds upstream = {"BENCHUPSTREAMKEY", "bench-upstream-secret-0123456789abcdef",
                                      NULL};
    char authz[GW_SIGV4_MAX_AUTHZ];
    check(gw_sigv4_sign(NULL, &client, "us-east-1", "s3", AMZ_DATE, &in, signed_headers, authz,
                        sizeof(authz)),
          "sign the client's request");
    struct gw_sigv4_authz a;
    check(gw_sigv4_authz_parse(authz, &a), "parse");
    struct gw_sigv4_keycache *inbound = gw_sigv4_keycache_new();
    struct gw_sigv4_keycache *outbound = gw_sigv4_keycache_new();
    if (inbound == NULL || outbound == NULL) {
        check(ERR_NOMEM, "keycache");
    }
    struct gw_sigv4_verify_opts opts = {.region = "us-east-1", .service = "s3", .skew_s = -1};
    char out[GW_SIGV4_MAX_AUTHZ];
    uint64_t t_verify = 0;
    uint64_t t_sign = 0;
    for (long i = 0; i < n; i++) {
        uint64_t t0 = now_ns();
        if (verify) {
            enum gw_sigv4_fail why;
            check(gw_sigv4_verify(inbound, client.secret_key, &a, &in, &opts, NULL, &why),
                  "verify");
        }
        uint64_t t1 = now_ns();
        if (sign) {
            check(gw_sigv4_sign(outbound, &upstream, "us-east-1", "s3", AMZ_DATE, &in,
                                signed_headers, out, sizeof(out)),
                  "re-sign");
        }
        t_verify += t1 - t0;
        t_sign += now_ns() - t1;
    }
    if (n > 0) {
        (void)printf("sigv4_bench: %ld rounds: verify %.0f ns, re-sign %.0f ns per request\n", n,
                     verify ? (double)t_verify / (double)n : 0.0,
                     sign ? (double)t_sign / (double)n : 0.0);
    }
    gw_sigv4_keycache_free(inbound);
    gw_sigv4_keycache_free(outbound);
    return 0;
}
