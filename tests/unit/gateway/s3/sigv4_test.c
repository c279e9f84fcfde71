/*
 * tests/unit/gateway/s3/sigv4_test.c: the signer on the AWS SigV4 test suite (all
 * 34 cases, read from tests/data/sigv4 at run time), the S3 header and
 * presigned examples of s3-examples.json, and the canonicalisation pieces.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/codec.h"

#include "gateway/s3/sigv4.h"
#include "tests/unit/testdata.h"

#define SUITE_AK     "AKIDEXAMPLE"
#define SUITE_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define SUITE_DATE   "20150830T123600Z"
#define SUITE_TOKEN  "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"
#define MAX_HDRS     32

/* ---- test data ---- */

/* Read a whole file; NULL if it does not exist.  *len gets its size.  Caller frees. */
static char *
slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    size_t cap = 4096;
    size_t n = 0;
    char *b = malloc(cap + 1);
    assert_non_null(b);
    for (;;) {
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (n < cap) {
            break;
        }
        cap *= 2;
        b = realloc(b, cap + 1);
        assert_non_null(b);
    }
    (void)fclose(f);
    b[n] = '\0';
    if (len != NULL) {
        *len = n;
    }
    return b;
}

/* A parsed .req file of the suite. */
struct req {
    char *raw;                               /* the file, cut in place */
    char method[16];                         /* request method */
    char *path;                              /* raw path */
    char *query;                             /* raw query or "" */
    struct gw_sigv4_header hdr[MAX_HDRS];    /* headers, folded lines joined */
    char *folded[MAX_HDRS];                  /* allocated joined values, to free */
    size_t nhdr;                             /* number of headers */
    char *body;                              /* body or "" */
    size_t bodylen;                          /* body length */
    char payload_hash[GW_SIGV4_HEX_LEN + 1]; /* SHA-256 of the body */
    char signed_headers[1024];               /* every header name, sorted */
};

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Parse the suite's .req format (LF line ends, obs-fold allowed). */
static void
req_parse(struct req *r, char *raw, size_t len, int add_token)
{
    memset(r, 0, sizeof(*r));
    r->raw = raw;
    char *eol = strchr(raw, '\n');
    char *line_end = eol != NULL ? eol : raw + len;
    *line_end = '\0';
    /* "METHOD SP target SP HTTP/1.1"; the target may hold a raw space (get-space). */
    char *sp1 = strchr(raw, ' ');
    char *sp2 = strrchr(raw, ' ');
    assert_non_null(sp1);
    assert_true(sp2 > sp1);
    *sp1 = '\0';
    *sp2 = '\0';
    assert_true(strlen(raw) < sizeof(r->method));
    memcpy(r->method, raw, strlen(raw) + 1);
    r->path = sp1 + 1;
    char *q = strchr(r->path, '?');
    if (q != NULL) {
        *q = '\0';
        r->query = q + 1;
    } else {
        r->query = sp2; /* "" */
    }
    r->body = raw + len; /* "" */
    char *p = eol != NULL ? eol + 1 : raw + len;
    while (p < raw + len) {
        char *e = memchr(p, '\n', (size_t)(raw + len - p));
        char *end = e != NULL ? e : raw + len;
        if (end == p) { /* empty line (so e != NULL): the body follows */
            r->body = p + 1;
            r->bodylen = (size_t)(raw + len - r->body);
            break;
        }
        *end = '\0';
        if ((*p == ' ' || *p == '\t') && r->nhdr > 0) {
            /* obs-fold (RFC 9112 5.2): the continuation joins the value with a space. */
            struct gw_sigv4_header *h = &r->hdr[r->nhdr - 1];
            size_t n = strlen(h->value) + 1 + strlen(p) + 1;
            char *v = malloc(n);
            assert_non_null(v);
            (void)snprintf(v, n, "%s %s", h->value, p);
            free(r->folded[r->nhdr - 1]);
            r->folded[r->nhdr - 1] = v;
            h->value = v;
        } else {
            char *colon = strchr(p, ':');
            assert_non_null(colon);
            *colon = '\0';
            assert_true(r->nhdr < MAX_HDRS);
            r->hdr[r->nhdr].name = p;
            r->hdr[r->nhdr].value = colon + 1;
            r->nhdr++;
        }
        p = end + 1;
    }
    assert_int_equal(gw_sigv4_sha256_hex(r->body, r->bodylen, r->payload_hash), 0);
    /* Signed headers: every header of the request, lowercased, sorted, unique. */
    char *names[MAX_HDRS + 1];
    char lower[MAX_HDRS + 1][64];
    size_t nn = 0;
    for (size_t i = 0; i < r->nhdr; i++) {
        size_t l = strlen(r->hdr[i].name);
        assert_true(l < 64);
        for (size_t k = 0; k <= l; k++) {
            char c = r->hdr[i].name[k];
            lower[nn][k] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
        }
        names[nn] = lower[nn];
        nn++;
    }
    if (add_token) {
        (void)snprintf(lower[nn], 64, "x-amz-security-token");
        names[nn] = lower[nn];
        nn++;
    }
    qsort(names, nn, sizeof(names[0]), cmp_str);
    r->signed_headers[0] = '\0';
    for (size_t i = 0; i < nn; i++) {
        if (i > 0 && strcmp(names[i], names[i - 1]) == 0) {
            continue;
        }
        if (r->signed_headers[0] != '\0') {
            strncat(r->signed_headers, ";",
                    sizeof(r->signed_headers) - strlen(r->signed_headers) - 1);
        }
        strncat(r->signed_headers, names[i],
                sizeof(r->signed_headers) - strlen(r->signed_headers) - 1);
    }
}

static void
req_free(struct req *r)
{
    for (size_t i = 0; i < MAX_HDRS; i++) {
        free(r->folded[i]);
    }
    free(r->raw);
}

static void
expect_bytes(const char *what, const char *casename, const char *got, size_t gotlen,
             const char *want, size_t wantlen)
{
    if (gotlen != wantlen || memcmp(got, want, gotlen) != 0) {
        print_error("%s: %s differs\n--- want\n%.*s\n--- got\n%.*s\n", casename, what, (int)wantlen,
                    want, (int)gotlen, got);
        fail();
    }
}

/* ---- the AWS suite ---- */

/* Run one case: dir is the folder, name its last part. */
static void
run_suite_case(const char *dir, const char *name, int normalize)
{
    char path[4096];
    size_t len;
    size_t creqlen;
    size_t stslen;
    size_t authzlen;

    int token_case = strcmp(name, "get-vanilla-with-session-token") == 0;
    (void)snprintf(path, sizeof(path), "%s/%s.req", dir, name);
    char *raw = slurp(path, &len);
    assert_non_null(raw);
    (void)snprintf(path, sizeof(path), "%s/%s.creq", dir, name);
    char *creq_want = slurp(path, &creqlen);
    (void)snprintf(path, sizeof(path), "%s/%s.sts", dir, name);
    char *sts_want = slurp(path, &stslen);
    (void)snprintf(path, sizeof(path), "%s/%s.authz", dir, name);
    char *authz_want = slurp(path, &authzlen);
    assert_non_null(creq_want);
    assert_non_null(sts_want);
    assert_non_null(authz_want);

    struct req r;
    req_parse(&r, raw, len, token_case);
    struct gw_sigv4_input in = {
        .method = r.method,
        .path = r.path,
        .query = r.query,
        .headers = r.hdr,
        .nheaders = r.nhdr,
        .payload_hash = r.payload_hash,
    };
    struct buf creq;
    struct buf sts;
    char sig[GW_SIGV4_HEX_LEN + 1];
    buf_init(&creq, 1 << 20);
    buf_init(&sts, 1 << 20);
    const char *token = token_case ? SUITE_TOKEN : NULL;
    assert_int_equal(gw_sigv4_signature(NULL, SUITE_SECRET, token, "us-east-1", "service",
                                        SUITE_DATE, &in, r.signed_headers,
                                        normalize ? GW_SIGV4_F_NORMALIZE_PATH : 0, sig, &creq,
                                        &sts),
                     0);
    expect_bytes("canonical request", name, creq.data, creq.len, creq_want, creqlen);
    expect_bytes("string to sign", name, sts.data, sts.len, sts_want, stslen);
    const char *sigpos = strstr(authz_want, "Signature=");
    assert_non_null(sigpos);
    expect_bytes("signature", name, sig, strlen(sig), sigpos + 10, strlen(sigpos + 10));

    /* The S3 signer (no path normalisation) gives the whole Authorization value. */
    struct gw_sigv4_creds c = {SUITE_AK, SUITE_SECRET, token};
    char authz[GW_SIGV4_MAX_AUTHZ];
    assert_int_equal(gw_sigv4_sign(NULL, &c, "us-east-1", "service", SUITE_DATE, &in,
                                   r.signed_headers, authz, sizeof(authz)),
                     0);
    if (!normalize) {
        expect_bytes("authorization", name, authz, strlen(authz), authz_want, authzlen);
    } else {
        /* S3 mode: the path is encoded but never normalised. */
        struct buf uri;
        buf_init(&uri, 4096);
        assert_int_equal(gw_sigv4_canonical_uri(r.path, strlen(r.path), 0, &uri), 0);
        int same = strcmp(name, "get-space") == 0 || strcmp(name, "get-special-character") == 0;
        if (same) {
            expect_bytes("authorization (S3 mode)", name, authz, strlen(authz), authz_want,
                         authzlen);
        } else {
            assert_string_not_equal(authz, authz_want);
            /* Only the dot segments and slashes differ from the raw path. */
            assert_string_equal(uri.data, r.path);
        }
        buf_cleanup(&uri);
    }
    buf_cleanup(&creq);
    buf_cleanup(&sts);
    req_free(&r);
    free(creq_want);
    free(sts_want);
    free(authz_want);
}

/* Find every case folder (NAME/NAME.req) under base, one level of grouping deep. */
static int
walk_cases(const char *base, int depth, int *count)
{
    DIR *d = opendir(base);
    if (d == NULL) {
        return -1;
    }
    char sub[2048];
    char req[4096];
    for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
        if (e->d_name[0] == '.') {
            continue;
        }
        (void)snprintf(sub, sizeof(sub), "%s/%s", base, e->d_name);
        (void)snprintf(req, sizeof(req), "%s/%s.req", sub, e->d_name);
        FILE *f = fopen(req, "rb");
        if (f != NULL) {
            (void)fclose(f);
            int normalize = strstr(sub, "/normalize-path/") != NULL;
            run_suite_case(sub, e->d_name, normalize);
            (*count)++;
        } else if (depth == 0) {
            (void)walk_cases(sub, 1, count);
        }
    }
    (void)closedir(d);
    return 0;
}

static void
test_aws_suite(void **state)
{
    (void)state;
    char base[1024];
    int count = 0;
    (void)snprintf(base, sizeof(base), "%s/sigv4", testdata_dir());
    assert_int_equal(walk_cases(base, 0, &count), 0);
    assert_int_equal(count, 34);
}

/* ---- s3-examples.json ---- */

static json_t *
load_examples(void)
{
    char path[1024];
    json_error_t jerr;
    (void)snprintf(path, sizeof(path), "%s/sigv4/s3-examples.json", testdata_dir());
    json_t *j = json_load_file(path, 0, &jerr);
    if (j == NULL) {
        print_error("%s: %s\n", path, jerr.text);
    }
    assert_non_null(j);
    return j;
}

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

static void
test_s3_header_examples(void **state)
{
    (void)state;
    json_t *j = load_examples();
    const char *ak = jstr(json_object_get(j, "credentials"), "access_key_id");
    const char *secret = jstr(json_object_get(j, "credentials"), "secret_access_key");
    const char *amz_date = jstr(j, "amz_date");
    struct gw_sigv4_keycache *kc = gw_sigv4_keycache_new();
    assert_non_null(kc);

    /* The signing key itself. */
    unsigned char key[GW_SIGV4_KEY_LEN];
    unsigned char want_key[GW_SIGV4_KEY_LEN];
    assert_int_equal(gw_sigv4_signing_key(kc, secret, "20130524", "us-east-1", "s3", key), 0);
    const char *kh = jstr(j, "signing_key_hex");
    assert_int_equal(hex_decode(kh, strlen(kh), want_key, sizeof(want_key)), 0);
    assert_memory_equal(key, want_key, sizeof(key));

    json_t *exs = json_object_get(j, "header_examples");
    assert_int_equal(json_array_size(exs), 4);
    for (size_t i = 0; i < json_array_size(exs); i++) {
        json_t *e = json_array_get(exs, i);
        const char *name = jstr(e, "name");
        char target[512];
        (void)snprintf(target, sizeof(target), "%s", jstr(e, "request_target"));
        char *q = strchr(target, '?');
        if (q != NULL) {
            *q++ = '\0';
        }
        json_t *hs = json_object_get(e, "request_headers");
        struct gw_sigv4_header h[MAX_HDRS];
        size_t nh = json_array_size(hs);
        assert_true(nh < MAX_HDRS);
        for (size_t k = 0; k < nh; k++) {
            h[k].name = json_string_value(json_array_get(json_array_get(hs, k), 0));
            h[k].value = json_string_value(json_array_get(json_array_get(hs, k), 1));
        }
        struct gw_sigv4_input in = {jstr(e, "method"),      target, q != NULL ? q : "", h, nh,
                                    jstr(e, "payload_hash")};
        char sig[GW_SIGV4_HEX_LEN + 1];
        struct buf creq;
        struct buf sts;
        buf_init(&creq, 1 << 16);
        buf_init(&sts, 1 << 16);
        const char *sh = jstr(e, "signed_headers");
        assert_int_equal(gw_sigv4_signature(kc, secret, NULL, "us-east-1", "s3", amz_date, &in, sh,
                                            0, sig, &creq, &sts),
                         0);
        const char *w = jstr(e, "canonical_request");
        expect_bytes("canonical request", name, creq.data, creq.len, w, strlen(w));
        w = jstr(e, "string_to_sign");
        expect_bytes("string to sign", name, sts.data, sts.len, w, strlen(w));
        assert_string_equal(sig, jstr(e, "signature"));
        buf_cleanup(&creq);
        buf_cleanup(&sts);

        /* Signer output, and the docs' comma-without-space form parsed and verified. */
        struct gw_sigv4_creds c = {ak, secret, NULL};
        char authz[GW_SIGV4_MAX_AUTHZ];
        assert_int_equal(
            gw_sigv4_sign(kc, &c, "us-east-1", "s3", amz_date, &in, sh, authz, sizeof(authz)), 0);
        struct gw_sigv4_authz a1;
        struct gw_sigv4_authz a2;
        assert_int_equal(gw_sigv4_authz_parse(authz, &a1), 0);
        assert_int_equal(gw_sigv4_authz_parse(jstr(e, "authorization"), &a2), 0);
        assert_memory_equal(&a1, &a2, sizeof(a1));
        int64_t t;
        assert_int_equal(gw_sigv4_amz_date_parse(amz_date, &t), 0);
        struct gw_sigv4_verify_opts o = {"us-east-1", "s3", t * 1000, 0, 0};
        in.payload_hash = NULL; /* taken from x-amz-content-sha256 */
        enum gw_sigv4_fail why;
        assert_int_equal(gw_sigv4_verify(kc, secret, &a2, &in, &o, NULL, &why), 0);
        assert_int_equal(why, GW_SIGV4_FAIL_NONE);
        /* The wrong secret (the suite's, one character apart) is refused. */
        assert_int_equal(gw_sigv4_verify(kc, SUITE_SECRET, &a2, &in, &o, NULL, &why), ERR_AUTH);
        assert_int_equal(why, GW_SIGV4_FAIL_MISMATCH);
        assert_string_equal(gw_sigv4_fail_s3code(why), "SignatureDoesNotMatch");
    }
    gw_sigv4_keycache_free(kc);
    json_decref(j);
}

static void
test_s3_presigned_example(void **state)
{
    (void)state;
    json_t *j = load_examples();
    const char *secret = jstr(json_object_get(j, "credentials"), "secret_access_key");
    json_t *e = json_object_get(j, "presigned_url_example");
    const char *url = jstr(e, "url");
    const char *q = strchr(url, '?');
    assert_non_null(q);
    q++;
    struct gw_sigv4_authz a;
    assert_int_equal(gw_sigv4_presigned_parse(q, &a), 0);
    assert_int_equal(a.presigned, 1);
    assert_int_equal(a.expires, 86400);
    assert_string_equal(a.access_key, "AKIAIOSFODNN7EXAMPLE");
    assert_string_equal(a.scope, jstr(j, "scope"));
    assert_string_equal(a.signed_headers, "host");

    struct gw_sigv4_header h[1] = {{"Host", jstr(e, "host")}};
    struct gw_sigv4_input in = {"GET", jstr(e, "path"), q, h, 1, NULL};
    char sig[GW_SIGV4_HEX_LEN + 1];
    struct buf creq;
    struct buf sts;
    buf_init(&creq, 1 << 16);
    buf_init(&sts, 1 << 16);
    in.payload_hash = GW_SIGV4_UNSIGNED;
    assert_int_equal(gw_sigv4_signature(NULL, secret, NULL, "us-east-1", "s3", a.amz_date, &in,
                                        "host", GW_SIGV4_F_SKIP_SIGNATURE, sig, &creq, &sts),
                     0);
    const char *w = jstr(e, "canonical_request");
    expect_bytes("canonical request", "presigned", creq.data, creq.len, w, strlen(w));
    w = jstr(e, "string_to_sign");
    expect_bytes("string to sign", "presigned", sts.data, sts.len, w, strlen(w));
    assert_string_equal(sig, jstr(e, "signature"));
    buf_cleanup(&creq);
    buf_cleanup(&sts);

    in.payload_hash = NULL;
    int64_t t;
    assert_int_equal(gw_sigv4_amz_date_parse(a.amz_date, &t), 0);
    struct gw_sigv4_verify_opts o = {"us-east-1", "s3", (t + 3600) * 1000, 0, 0};
    enum gw_sigv4_fail why;
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &in, &o, NULL, &why), 0);
    /* Valid until X-Amz-Date + X-Amz-Expires, not after. */
    o.now_ms = (t + 86400) * 1000;
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &in, &o, NULL, &why), 0);
    o.now_ms = (t + 86401) * 1000;
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &in, &o, NULL, &why), ERR_TIMEOUT);
    assert_int_equal(why, GW_SIGV4_FAIL_EXPIRED);
    o.now_ms = (t - 901) * 1000;
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &in, &o, NULL, &why), ERR_TIMEOUT);
    assert_int_equal(why, GW_SIGV4_FAIL_SKEW);
    /* A wrong region in the expectations is a malformed scope. */
    o.now_ms = t * 1000;
    o.region = "eu-west-1";
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &in, &o, NULL, &why), ERR_INVAL);
    assert_int_equal(why, GW_SIGV4_FAIL_QUERY);
    json_decref(j);
}

/* ---- canonicalisation pieces ---- */

static void
test_canonical_headers(void **state)
{
    (void)state;
    struct gw_sigv4_header h[] = {
        {"Host", "example.com"},     {"My-Header", "  a   b  "}, {"X-Dup", "one"},
        {"my-header2", "\"a   b\""}, {"x-dup", " two "},         {"X-Tab", "a\t\tb"},
    };
    struct buf b;
    buf_init(&b, 4096);
    assert_int_equal(
        gw_sigv4_canonical_headers(h, 6, "host;my-header;my-header2;x-dup;x-tab", NULL, &b), 0);
    assert_string_equal(buf_cstr(&b), "host:example.com\nmy-header:a b\nmy-header2:\"a b\"\n"
                                      "x-dup:one,two\nx-tab:a b\n");
    buf_reset(&b);
    /* A signed header that is missing; unsorted, repeated, uppercase or empty names. */
    assert_int_equal(gw_sigv4_canonical_headers(h, 6, "host;x-missing", NULL, &b), ERR_INVAL);
    assert_int_equal(gw_sigv4_canonical_headers(h, 6, "x-dup;host", NULL, &b), ERR_INVAL);
    assert_int_equal(gw_sigv4_canonical_headers(h, 6, "host;host", NULL, &b), ERR_INVAL);
    assert_int_equal(gw_sigv4_canonical_headers(h, 6, "Host", NULL, &b), ERR_INVAL);
    assert_int_equal(gw_sigv4_canonical_headers(h, 6, "host;", NULL, &b), ERR_INVAL);
    assert_int_equal(gw_sigv4_canonical_headers(h, 6, "", NULL, &b), ERR_INVAL);
    assert_int_equal(gw_sigv4_canonical_headers(h, 6, ";host", NULL, &b), ERR_INVAL);
    assert_int_equal(gw_sigv4_canonical_headers(h, 6, "ho st", NULL, &b), ERR_INVAL);
    /* The session token comes from the credentials when the header is not there. */
    buf_reset(&b);
    assert_int_equal(gw_sigv4_canonical_headers(h, 6, "host;x-amz-security-token", "tok", &b), 0);
    assert_string_equal(buf_cstr(&b), "host:example.com\nx-amz-security-token:tok\n");
    buf_cleanup(&b);

    char longlist[GW_SIGV4_MAX_SIGNED_HDRS + 16];
    memset(longlist, 'a', sizeof(longlist) - 1);
    longlist[sizeof(longlist) - 1] = '\0';
    assert_int_equal(gw_sigv4_signed_headers_check(longlist), ERR_INVAL);
    assert_int_equal(gw_sigv4_signed_headers_check("a;b;c"), 0);
    assert_int_equal(gw_sigv4_signed_headers_check("a;ab;b"), 0);
    assert_int_equal(gw_sigv4_signed_headers_check("ab;a"), ERR_INVAL);
}

static void
test_sign_errors(void **state)
{
    (void)state;
    struct gw_sigv4_header h[] = {{"Host", "h"}, {"X-Amz-Date", SUITE_DATE}};
    struct gw_sigv4_input in = {"GET", "/", "", h, 2, GW_SIGV4_EMPTY_SHA256};
    struct gw_sigv4_creds c = {SUITE_AK, SUITE_SECRET, NULL};
    char out[GW_SIGV4_MAX_AUTHZ];
    assert_int_equal(
        gw_sigv4_sign(NULL, &c, "us-east-1", "s3", SUITE_DATE, &in, "host;x-amz-date", out, 300),
        0);
    assert_int_equal(
        gw_sigv4_sign(NULL, &c, "us-east-1", "s3", SUITE_DATE, &in, "host;x-amz-date", out, 100),
        ERR_TOOBIG);
    assert_string_equal(out, "");
    assert_int_equal(gw_sigv4_sign(NULL, &c, "us-east-1", "s3", "20150830T123600", &in,
                                   "host;x-amz-date", out, sizeof(out)),
                     ERR_INVAL);
    assert_int_equal(gw_sigv4_sign(NULL, &c, "us-east-1", "s3", "20150231T123600Z", &in,
                                   "host;x-amz-date", out, sizeof(out)),
                     ERR_INVAL);
    assert_int_equal(gw_sigv4_sign(NULL, &c, "us/east", "s3", SUITE_DATE, &in, "host;x-amz-date",
                                   out, sizeof(out)),
                     ERR_INVAL);
    assert_int_equal(
        gw_sigv4_sign(NULL, &c, "", "s3", SUITE_DATE, &in, "host;x-amz-date", out, sizeof(out)),
        ERR_INVAL);
    struct gw_sigv4_creds bad = {"AK/X", SUITE_SECRET, NULL};
    assert_int_equal(gw_sigv4_sign(NULL, &bad, "us-east-1", "s3", SUITE_DATE, &in,
                                   "host;x-amz-date", out, sizeof(out)),
                     ERR_INVAL);
    struct gw_sigv4_input bm = in;
    bm.method = "get";
    assert_int_equal(gw_sigv4_sign(NULL, &c, "us-east-1", "s3", SUITE_DATE, &bm, "host;x-amz-date",
                                   out, sizeof(out)),
                     ERR_INVAL);
    bm = in;
    bm.payload_hash = "a\nb";
    assert_int_equal(gw_sigv4_sign(NULL, &c, "us-east-1", "s3", SUITE_DATE, &bm, "host;x-amz-date",
                                   out, sizeof(out)),
                     ERR_INVAL);
}

static void
test_keycache(void **state)
{
    (void)state;
    struct gw_sigv4_keycache *kc = gw_sigv4_keycache_new();
    unsigned char k1[GW_SIGV4_KEY_LEN];
    unsigned char k2[GW_SIGV4_KEY_LEN];
    assert_non_null(kc);
    /* Cached and uncached keys agree, across more entries than the cache holds. */
    for (int round = 0; round < 2; round++) {
        for (unsigned i = 0; i < 12; i++) {
            char date[9] = "201508XX";
            date[6] = (char)('0' + (i + 1) / 10);
            date[7] = (char)('0' + (i + 1) % 10);
            assert_int_equal(gw_sigv4_signing_key(kc, SUITE_SECRET, date, "us-east-1", "s3", k1),
                             0);
            assert_int_equal(gw_sigv4_signing_key(NULL, SUITE_SECRET, date, "us-east-1", "s3", k2),
                             0);
            assert_memory_equal(k1, k2, sizeof(k1));
        }
    }
    /* Another secret, same scope: another key. */
    assert_int_equal(gw_sigv4_signing_key(kc, "other", "20150801", "us-east-1", "s3", k2), 0);
    assert_int_equal(gw_sigv4_signing_key(kc, SUITE_SECRET, "20150801", "us-east-1", "s3", k1), 0);
    assert_memory_not_equal(k1, k2, sizeof(k1));
    assert_int_equal(gw_sigv4_signing_key(kc, "", "20150801", "us-east-1", "s3", k1), ERR_INVAL);
    assert_int_equal(gw_sigv4_signing_key(kc, "s", "2015080", "us-east-1", "s3", k1), ERR_INVAL);
    /* A scope is checked where the cache misses, whatever it holds for the secret. */
    assert_int_equal(gw_sigv4_signing_key(kc, SUITE_SECRET, "2015080", "us-east-1", "s3", k1),
                     ERR_INVAL);
    assert_int_equal(gw_sigv4_signing_key(kc, SUITE_SECRET, "20150801", "us east", "s3", k1),
                     ERR_INVAL);
    assert_int_equal(gw_sigv4_signing_key(kc, SUITE_SECRET, "20150801", "us-east-1", "", k1),
                     ERR_INVAL);
    assert_int_equal(gw_sigv4_signing_key(kc, SUITE_SECRET, "20150231", "us-east-1", "s3", k1),
                     ERR_INVAL);
    gw_sigv4_wipe(k1, sizeof(k1));
    gw_sigv4_wipe(k2, sizeof(k2));
    gw_sigv4_keycache_free(kc);
    gw_sigv4_keycache_free(NULL);
}

static void
test_amz_date(void **state)
{
    (void)state;
    int64_t t;
    char out[GW_SIGV4_AMZ_DATE_LEN + 1];
    assert_int_equal(gw_sigv4_amz_date_parse("20150830T123600Z", &t), 0);
    assert_int_equal(t, 1440938160);
    assert_int_equal(gw_sigv4_amz_date_format(t, out), 0);
    assert_string_equal(out, "20150830T123600Z");
    assert_int_equal(gw_sigv4_amz_date_parse("20000229T000000Z", &t), 0);
    assert_int_equal(gw_sigv4_amz_date_format(t, out), 0);
    assert_string_equal(out, "20000229T000000Z");
    assert_int_equal(gw_sigv4_amz_date_parse("19700101T000000Z", &t), 0);
    assert_int_equal(t, 0);
    const char *bad[] = {"20150830T123600",  "20150830T123600ZZ", "20150830 123600Z",
                         "20150230T123600Z", "19000229T000000Z",  "20150830T243600Z",
                         "20150830T126000Z", "2015083OT123600Z",  "",
                         "20151330T123600Z", "20150800T123600Z",  "19691231T235959Z"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(gw_sigv4_amz_date_parse(bad[i], &t), ERR_INVAL);
    }
    assert_int_equal(gw_sigv4_amz_date_format(-1, out), ERR_INVAL);
}

/* gw_sigv4_amz_date_format is strftime("%Y%m%dT%H%M%SZ") of gmtime over its whole range */
static void
test_amz_date_matches_strftime(void **state)
{
    (void)state;
    const int64_t last = 253402300799LL; /* 9999-12-31T23:59:59Z */
    const int64_t edges[] = {0,
                             59,
                             60,
                             3599,
                             3600,
                             86399,
                             86400,
                             951782400 /* 2000-02-29 */,
                             1440938160,
                             4107542400LL /* 2100-03-01 */,
                             last - 86400,
                             last};
    const size_t nedges = sizeof(edges) / sizeof(edges[0]);
    uint64_t x = 88172645463325252ULL;
    for (size_t i = 0; i < 200000 + nedges; i++) {
        int64_t t;
        if (i < nedges) {
            t = edges[i];
        } else {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            /* every other one near now, where the signer runs */
            t = (i % 2 != 0) ? (int64_t)(x % (uint64_t)(last + 1))
                             : 1700000000 + (int64_t)(x % 1000000000);
        }
        char got[GW_SIGV4_AMZ_DATE_LEN + 1];
        memset(got, '#', sizeof(got));
        assert_int_equal(gw_sigv4_amz_date_format(t, got), 0);
        time_t tt = (time_t)t;
        struct tm tm;
        assert_non_null(gmtime_r(&tt, &tm));
        char want[64];
        assert_int_equal(strftime(want, sizeof(want), "%Y%m%dT%H%M%SZ", &tm),
                         GW_SIGV4_AMZ_DATE_LEN);
        assert_string_equal(got, want);
    }
    char out[GW_SIGV4_AMZ_DATE_LEN + 1];
    assert_int_equal(gw_sigv4_amz_date_format(last + 1, out), ERR_INVAL);
}

/* The scope is "date/region/service/aws4_request"; ERR_TOOBIG and "" (never a prefix) if too long
 */
static void
test_scope_format(void **state)
{
    (void)state;
    const char *want = "20150830/us-east-1/s3/aws4_request";
    char scope[64];
    for (size_t len = 1; len <= strlen(want) + 1; len++) {
        memset(scope, '#', sizeof(scope));
        int rc = gw_sigv4_scope("20150830", "us-east-1", "s3", scope, len);
        if (len == strlen(want) + 1) {
            assert_int_equal(rc, 0);
            assert_string_equal(scope, want);
        } else {
            assert_int_equal(rc, ERR_TOOBIG);
            assert_string_equal(scope, "");
        }
    }
}

static void
test_primitives(void **state)
{
    (void)state;
    char hex[GW_SIGV4_HEX_LEN + 1];
    unsigned char bin[2];
    assert_int_equal(gw_sigv4_sha256_hex("", 0, hex), 0);
    assert_string_equal(hex, GW_SIGV4_EMPTY_SHA256);
    /* RFC 4231 test case 2 */
    assert_int_equal(gw_sigv4_hmac_hex((const unsigned char *)"Jefe", 4,
                                       "what do ya want for nothing?", 28, hex),
                     0);
    assert_string_equal(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    assert_int_equal(hex_decode("aB01", 4, bin, 2), 0);
    assert_int_equal(bin[0], 0xab);
    assert_int_equal(bin[1], 0x01);
    assert_int_equal(hex_decode("aB0", 3, bin, 2), ERR_INVAL);
    assert_int_equal(hex_decode("aB0g", 4, bin, 2), ERR_INVAL);
    char scope[16];
    assert_int_equal(gw_sigv4_scope("20150830", "us-east-1", "s3", scope, sizeof(scope)),
                     ERR_TOOBIG);
}

/* Sign the suite's GET with kc under (secret, region, service, amz_date) into out. */
static void
sign_with(struct gw_sigv4_keycache *kc, const char *secret, const char *region, const char *service,
          const char *amz_date, char out[GW_SIGV4_MAX_AUTHZ])
{
    struct gw_sigv4_header h[] = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", amz_date}};
    struct gw_sigv4_input in = {"GET", "/", "", h, 2, GW_SIGV4_EMPTY_SHA256};
    struct gw_sigv4_creds c = {SUITE_AK, secret, NULL};
    assert_int_equal(gw_sigv4_sign(kc, &c, region, service, amz_date, &in, "host;x-amz-date", out,
                                   GW_SIGV4_MAX_AUTHZ),
                     0);
}

/* The cache never answers for another secret, day, region or service: each
 * change, made after the old entry is cached, signs as an uncached signer does. */
static void
test_keycache_keyed_by_all(void **state)
{
    (void)state;
    struct gw_sigv4_keycache *kc = gw_sigv4_keycache_new();
    assert_non_null(kc);
    char secret[64];
    (void)snprintf(secret, sizeof(secret), "%s", SUITE_SECRET);
    static const struct {
        const char *region, *service, *date;
    } scopes[] = {
        {"us-east-1", "s3", SUITE_DATE},
        {"us-east-1", "s3", "20150831T000000Z"}, /* the next day */
        {"us-east-1", "s3", "20150830T235959Z"}, /* the same day: the same key */
        {"eu-west-1", "s3", SUITE_DATE},
        {"us-east-1", "iam", SUITE_DATE},
    };
    char first[GW_SIGV4_MAX_AUTHZ];
    char got[GW_SIGV4_MAX_AUTHZ];
    char want[GW_SIGV4_MAX_AUTHZ];
    for (int rotation = 0; rotation < 4; rotation++) {
        if (rotation == 1) {
            secret[0] ^= 0x01; /* rotated in place: the same memory, the same length */
        } else if (rotation == 2) {
            (void)snprintf(secret, sizeof(secret), "%s2", SUITE_SECRET); /* one byte longer */
        } else if (rotation == 3) {
            secret[strlen(secret) - 2] = '\0'; /* a prefix of the secret cached first */
        }
        for (size_t i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++) {
            sign_with(kc, secret, scopes[i].region, scopes[i].service, scopes[i].date, got);
            sign_with(NULL, secret, scopes[i].region, scopes[i].service, scopes[i].date, want);
            assert_string_equal(got, want);
            if (rotation == 0 && i == 0) {
                memcpy(first, got, sizeof(first));
            } else {
                assert_string_not_equal(got, first);
            }
            sign_with(kc, secret, scopes[i].region, scopes[i].service, scopes[i].date, got);
            assert_string_equal(got, want); /* and again, from the cache */
        }
    }
    /* the first entry is still there and still right */
    (void)snprintf(secret, sizeof(secret), "%s", SUITE_SECRET);
    sign_with(kc, secret, "us-east-1", "s3", SUITE_DATE, got);
    assert_string_equal(got, first);
    gw_sigv4_keycache_free(kc);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aws_suite),
        cmocka_unit_test(test_s3_header_examples),
        cmocka_unit_test(test_s3_presigned_example),
        cmocka_unit_test(test_canonical_headers),
        cmocka_unit_test(test_sign_errors),
        cmocka_unit_test(test_keycache),
        cmocka_unit_test(test_keycache_keyed_by_all),
        cmocka_unit_test(test_amz_date),
        cmocka_unit_test(test_amz_date_matches_strftime),
        cmocka_unit_test(test_scope_format),
        cmocka_unit_test(test_primitives),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
