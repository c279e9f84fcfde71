/*
 * tests/bench/body_bench.c: what checking a signed payload's SHA-256 costs a
 * request body (not a test: it prints figures, it asserts nothing but
 * success).
 *
 *   build/tests/bench/body_bench sha256 [N [BYTES]]
 *
 * Each round runs gateway/proxy/body.c itself (included, as its unit test
 * does) on a body of BYTES (1024) whose x-amz-content-sha256 is its hex
 * SHA-256: a new filter, the body read 16 KiB at a time as the upstream
 * side reads it, the filter freed.  The client side (gw_req_*) is a stub
 * that hands out the body from memory.  Prints ns per body; for instruction
 * and allocation counts, tests/bench/sigv4_cost.sh runs it under valgrind.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/proxy/body.c"
#include "tests/bench/benchlib.h"

/* The stub request: the body, all of it available. */
struct gw_req {
    const char *data; /* the body */
    size_t len;       /* its length */
    size_t pos;       /* bytes read so far */
};

ssize_t
gw_req_body_read(struct gw_req *req, char *dst, size_t len)
{
    size_t n = req->len - req->pos < len ? req->len - req->pos : len;
    memcpy(dst, req->data + req->pos, n);
    req->pos += n;
    return (ssize_t)n;
}

int64_t
gw_req_content_length(const struct gw_req *req)
{
    return (int64_t)req->len;
}

const char *
gw_req_id(const struct gw_req *req)
{
    (void)req;
    return "bench";
}

static void
check(int err, const char *what)
{
    if (err != 0) {
        (void)fprintf(stderr, "body_bench: %s: %s\n", what, err_str(err));
        exit(1);
    }
}

/* One body through a new filter, as the proxy pulls it for the upstream. */
static void
pass_once(const struct gw_auth *auth, const char *body, size_t len, char *dst)
{
    struct gw_req req = {body, len, 0};
    struct gw_body *b = gw_body_new(&req, auth, false);
    if (b == NULL) {
        check(ERR_NOMEM, "filter");
    }
    size_t got = 0;
    ssize_t n;
    while ((n = gw_body_read(b, dst, GW_BODY_STAGE)) > 0) {
        got += (size_t)n;
    }
    if (n != 0 || got != len) {
        check(n < 0 ? (int)n : ERR_INVAL, "read");
    }
    gw_body_free(b);
}

int
main(int argc, char **argv)
{
    long n = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
    long len = argc > 3 ? strtol(argv[3], NULL, 10) : 1024;
    if (argc > 1 && strcmp(argv[1], "sha256") != 0) {
        check(ERR_INVAL, "the only case is sha256");
    }
    if (len <= 0) {
        check(ERR_INVAL, "body size");
    }
    char *body = malloc((size_t)len);
    char *dst = malloc(GW_BODY_STAGE);
    if (body == NULL || dst == NULL) {
        check(ERR_NOMEM, "body");
    }
    for (long i = 0; i < len; i++) {
        body[i] = (char)('a' + i % 26);
    }
    struct gw_auth auth = {.payload = GW_PAYLOAD_SHA256};
    check(gw_sigv4_sha256_hex(body, (size_t)len, auth.sha256), "hash");
    /* one untimed round: OpenSSL's first use loads its provider (see sigv4_bench.c) */
    pass_once(&auth, body, (size_t)len, dst);
    uint64_t t = 0;
    for (long r = 0; r < n; r++) {
        uint64_t t0 = now_ns();
        pass_once(&auth, body, (size_t)len, dst);
        t += now_ns() - t0;
    }
    if (n > 0) {
        (void)printf("body_bench: %ld rounds: %.0f ns per %ld-byte body (x-amz-content-sha256)\n",
                     n, (double)t / (double)n, len);
    }
    free(body);
    free(dst);
    return 0;
}
