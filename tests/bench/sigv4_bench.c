/*
 * tests/bench/sigv4_bench.c: what SigV4 costs one small request (not a test:
 * it prints figures, it asserts nothing but success).
 *
 *   build/tests/bench/sigv4_bench [verify|sign|both] [N]
 *
 * The request is the one make bench-proxy's gw_auth case forwards: a GET of
 * a short key with host, x-amz-date and x-amz-content-sha256 signed.  Each
 * round verifies it as the gateway's authenticator does (its key cache warm,
 * one principal) and re-signs it for the upstream as the internal S3 client
 * does (its own cache, other credentials).  Prints ns per operation; for
 * instruction counts, tests/bench/sigv4_cost.sh runs it under callgrind.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gateway/s3/sigv4.h"
#include "tests/bench/benchlib.h"

#define AMZ_DATE "20261127T120000Z"

static void
check(int err, const char *what)
{
    if (err != 0) {
        (void)fprintf(stderr, "sigv4_bench: %s: %s\n", what, err_str(err));
        exit(1);
    }
}

int
main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "both";
    long n = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
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
