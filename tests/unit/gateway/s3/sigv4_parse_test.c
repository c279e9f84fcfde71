/*
 * tests/unit/gateway/s3/sigv4_parse_test.c: the Authorization header and
 * presigned-query parsers (good and malformed input), and gw_sigv4_verify's
 * refusals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/s3/sigv4.h"

#define SIG64 "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024"
#define CRED  "AKIDEXAMPLE/20150830/us-east-1/service/aws4_request"

static void
test_authz_good(void **state)
{
    (void)state;
    struct gw_sigv4_authz a;
    const char *forms[] = {
        "AWS4-HMAC-SHA256 Credential=" CRED ", SignedHeaders=host;x-amz-date, Signature=" SIG64,
        "AWS4-HMAC-SHA256 Credential=" CRED ",SignedHeaders=host;x-amz-date,Signature=" SIG64,
        "AWS4-HMAC-SHA256 Credential=" CRED ",  SignedHeaders=host;x-amz-date,Signature=" SIG64,
        "AWS4-HMAC-SHA256 Signature=" SIG64 ", Credential=" CRED ", SignedHeaders=host;x-amz-date",
        "AWS4-HMAC-SHA256  Credential=" CRED ", SignedHeaders=host;x-amz-date, Signature=" SIG64,
    };
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        assert_int_equal(gw_sigv4_authz_parse(forms[i], &a), 0);
        assert_string_equal(a.access_key, "AKIDEXAMPLE");
        assert_string_equal(a.date, "20150830");
        assert_string_equal(a.region, "us-east-1");
        assert_string_equal(a.service, "service");
        assert_string_equal(a.scope, "20150830/us-east-1/service/aws4_request");
        assert_string_equal(a.signed_headers, "host;x-amz-date");
        assert_int_equal(a.signature[0], 0xfe);
        assert_int_equal(a.signature[31], 0x24);
        assert_int_equal(a.presigned, 0);
    }
}

static void
test_authz_bad(void **state)
{
    (void)state;
    struct gw_sigv4_authz a;
    const char *bad[] = {
        "",
        "AWS4-HMAC-SHA256",
        "AWS4-HMAC-SHA256 ",
        "aws4-hmac-sha256 Credential=" CRED ", SignedHeaders=host, Signature=" SIG64,
        "AWS4-HMAC-SHA256Credential=" CRED ", SignedHeaders=host, Signature=" SIG64,
        /* missing components */
        "AWS4-HMAC-SHA256 SignedHeaders=host, Signature=" SIG64,
        "AWS4-HMAC-SHA256 Credential=" CRED ", Signature=" SIG64,
        "AWS4-HMAC-SHA256 Credential=" CRED ", SignedHeaders=host",
        /* repeated, unknown, empty components; stray commas and spaces */
        "AWS4-HMAC-SHA256 Credential=" CRED ", Credential=" CRED
        ", SignedHeaders=host, Signature=" SIG64,
        "AWS4-HMAC-SHA256 Credential=" CRED ", SignedHeaders=host, Signature=" SIG64 ", Foo=bar",
        "AWS4-HMAC-SHA256 Credential=" CRED ", SignedHeaders=host, Signature=" SIG64 ",",
        "AWS4-HMAC-SHA256 Credential=" CRED ", SignedHeaders=host, Signature=" SIG64 " ",
        "AWS4-HMAC-SHA256 Credential=" CRED " , SignedHeaders=host, Signature=" SIG64,
        "AWS4-HMAC-SHA256 Credential=, SignedHeaders=host, Signature=" SIG64,
        "AWS4-HMAC-SHA256 Credential=" CRED ", SignedHeaders=, Signature=" SIG64,
        "AWS4-HMAC-SHA256 Credential=" CRED ", SignedHeaders=host, Signature=",
        "AWS4-HMAC-SHA256 Credential" CRED ", SignedHeaders=host, Signature=" SIG64,
        "AWS4-HMAC-SHA256 ,Credential=" CRED ", SignedHeaders=host, Signature=" SIG64,
        /* bad signatures: short, long, not hex */
        "AWS4-HMAC-SHA256 Credential=" CRED ", SignedHeaders=host, Signature=" SIG64 "0",
        "AWS4-HMAC-SHA256 Credential=" CRED ", SignedHeaders=host, Signature=fe5f",
        "AWS4-HMAC-SHA256 Credential=" CRED ", SignedHeaders=host, Signature="
        "ge5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024",
        /* bad credentials */
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_reques, "
        "SignedHeaders=host, Signature=" SIG64,
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service, SignedHeaders=host, "
        "Signature=" SIG64,
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request/x, "
        "SignedHeaders=host, Signature=" SIG64,
        "AWS4-HMAC-SHA256 Credential=/20150830/us-east-1/service/aws4_request, SignedHeaders=host, "
        "Signature=" SIG64,
        "AWS4-HMAC-SHA256 Credential=AK/2015083/us-east-1/service/aws4_request, "
        "SignedHeaders=host, Signature=" SIG64,
        "AWS4-HMAC-SHA256 Credential=AK/20151330/us-east-1/service/aws4_request, "
        "SignedHeaders=host, Signature=" SIG64,
        "AWS4-HMAC-SHA256 Credential=AK/20150830//service/aws4_request, SignedHeaders=host, "
        "Signature=" SIG64,
        "AWS4-HMAC-SHA256 Credential=AK/20150830/us-east-1//aws4_request, SignedHeaders=host, "
        "Signature=" SIG64,
        "AWS4-HMAC-SHA256 Credential=A K/20150830/us-east-1/s3/aws4_request, SignedHeaders=host, "
        "Signature=" SIG64,
        /* bad header lists */
        "AWS4-HMAC-SHA256 Credential=" CRED ", SignedHeaders=x-amz-date;host, Signature=" SIG64,
        "AWS4-HMAC-SHA256 Credential=" CRED ", SignedHeaders=Host, Signature=" SIG64,
        "AWS4-HMAC-SHA256 Credential=" CRED ", SignedHeaders=host;;x, Signature=" SIG64,
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&a, 0x55, sizeof(a));
        int err = gw_sigv4_authz_parse(bad[i], &a);
        if (err != ERR_INVAL) {
            print_error("case %zu accepted (%d): %s\n", i, err, bad[i]);
            fail();
        }
        assert_int_equal(a.access_key[0], 0); /* zeroed on failure */
    }
    assert_int_equal(gw_sigv4_authz_parse(NULL, &a), ERR_INVAL);
    /* Other schemes are unsupported rather than malformed. */
    assert_int_equal(gw_sigv4_authz_parse("AWS AKIDEXAMPLE:c2lnbmF0dXJl", &a), ERR_UNSUPPORTED);
    assert_int_equal(gw_sigv4_authz_parse("AWS4-ECDSA-P256-SHA256 Credential=x", &a),
                     ERR_UNSUPPORTED);

    /* Oversized: a long access key, a long region, a long header list, a long value. */
    char big[GW_SIGV4_MAX_AUTHZ + 64];
    char ak[GW_SIGV4_MAX_ACCESS_KEY + 2];
    memset(ak, 'A', sizeof(ak) - 1);
    ak[sizeof(ak) - 1] = '\0';
    (void)snprintf(big, sizeof(big),
                   "AWS4-HMAC-SHA256 Credential=%s/20150830/us-east-1/s3/aws4_request, "
                   "SignedHeaders=host, Signature=" SIG64,
                   ak);
    assert_int_equal(gw_sigv4_authz_parse(big, &a), ERR_INVAL);
    ak[GW_SIGV4_MAX_ACCESS_KEY] = '\0';
    (void)snprintf(big, sizeof(big),
                   "AWS4-HMAC-SHA256 Credential=%s/20150830/us-east-1/s3/aws4_request, "
                   "SignedHeaders=host, Signature=" SIG64,
                   ak);
    assert_int_equal(gw_sigv4_authz_parse(big, &a), 0); /* exactly at the limit */
    char region[GW_SIGV4_MAX_REGION + 2];
    memset(region, 'r', sizeof(region) - 1);
    region[sizeof(region) - 1] = '\0';
    (void)snprintf(big, sizeof(big),
                   "AWS4-HMAC-SHA256 Credential=AK/20150830/%s/s3/aws4_request, "
                   "SignedHeaders=host, Signature=" SIG64,
                   region);
    assert_int_equal(gw_sigv4_authz_parse(big, &a), ERR_INVAL);
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    memcpy(big, "AWS4-HMAC-SHA256 Credential=" CRED ", SignedHeaders=",
           strlen("AWS4-HMAC-SHA256 Credential=" CRED ", SignedHeaders="));
    assert_int_equal(gw_sigv4_authz_parse(big, &a), ERR_INVAL);
}

#define PQ_ALG  "X-Amz-Algorithm=AWS4-HMAC-SHA256"
#define PQ_CRED "X-Amz-Credential=AK%2F20261121%2Fus-east-1%2Fs3%2Faws4_request"
#define PQ_DATE "X-Amz-Date=20261121T210312Z"
#define PQ_EXP  "X-Amz-Expires=300"
#define PQ_SH   "X-Amz-SignedHeaders=host"
#define PQ_SIG  "X-Amz-Signature=" SIG64
#define PQ_ALL  PQ_ALG "&" PQ_CRED "&" PQ_DATE "&" PQ_EXP "&" PQ_SH "&" PQ_SIG

static void
test_presigned_good(void **state)
{
    (void)state;
    struct gw_sigv4_authz a;
    /* Any order, other parameters mixed in, and a session token. */
    const char *q = "X-Amz-Signature=" SIG64 "&versionId=3&X-Amz-Expires=300"
                    "&X-Amz-Credential=AK%2F20261121%2Fus-east-1%2Fs3%2Faws4_request"
                    "&X-Amz-SignedHeaders=host%3Bx-amz-meta-a&X-Amz-Date=20261121T210312Z"
                    "&X-Amz-Security-Token=tok%2Ben&X-Amz-Algorithm=AWS4-HMAC-SHA256";
    assert_int_equal(gw_sigv4_presigned_parse(q, &a), 0);
    assert_int_equal(a.presigned, 1);
    assert_int_equal(a.has_token, 1);
    assert_int_equal(a.expires, 300);
    assert_string_equal(a.access_key, "AK");
    assert_string_equal(a.amz_date, "20261121T210312Z");
    assert_string_equal(a.signed_headers, "host;x-amz-meta-a");
    assert_string_equal(a.scope, "20261121/us-east-1/s3/aws4_request");
    assert_string_equal(a.content_sha256, "");
    assert_int_equal(gw_sigv4_presigned_parse(PQ_ALL "&X-Amz-Content-Sha256=UNSIGNED-PAYLOAD", &a),
                     0);
    assert_string_equal(a.content_sha256, "UNSIGNED-PAYLOAD");
    assert_int_equal(gw_sigv4_presigned_parse(PQ_ALL "&X-Amz-Content-Sha256=a%20b", &a), ERR_INVAL);
    assert_int_equal(gw_sigv4_presigned_parse(PQ_ALL "&X-Amz-Content-Sha256=", &a), ERR_INVAL);
    /* Not presigned at all. */
    assert_int_equal(gw_sigv4_presigned_parse("list-type=2", &a), ERR_NOTFOUND);
    assert_int_equal(gw_sigv4_presigned_parse("", &a), ERR_NOTFOUND);
    assert_int_equal(gw_sigv4_presigned_parse(NULL, &a), ERR_NOTFOUND);
}

static void
test_presigned_bad(void **state)
{
    (void)state;
    struct gw_sigv4_authz a;
    const char *bad[] = {
        /* each required parameter missing in turn */
        PQ_CRED "&" PQ_DATE "&" PQ_EXP "&" PQ_SH "&" PQ_SIG,
        PQ_ALG "&" PQ_DATE "&" PQ_EXP "&" PQ_SH "&" PQ_SIG,
        PQ_ALG "&" PQ_CRED "&" PQ_EXP "&" PQ_SH "&" PQ_SIG,
        PQ_ALG "&" PQ_CRED "&" PQ_DATE "&" PQ_SH "&" PQ_SIG,
        PQ_ALG "&" PQ_CRED "&" PQ_DATE "&" PQ_EXP "&" PQ_SIG,
        PQ_ALG "&" PQ_CRED "&" PQ_DATE "&" PQ_EXP "&" PQ_SH,
        /* repeated */
        PQ_ALG "&" PQ_CRED "&" PQ_DATE "&" PQ_EXP "&" PQ_SH "&" PQ_SIG "&" PQ_SIG,
        PQ_ALG "&" PQ_CRED "&" PQ_DATE "&" PQ_EXP "&" PQ_SH "&" PQ_SIG "&" PQ_EXP,
        /* bad values */
        PQ_ALG "&" PQ_CRED "&" PQ_DATE "&X-Amz-Expires=0&" PQ_SH "&" PQ_SIG,
        PQ_ALG "&" PQ_CRED "&" PQ_DATE "&X-Amz-Expires=604801&" PQ_SH "&" PQ_SIG,
        PQ_ALG "&" PQ_CRED "&" PQ_DATE "&X-Amz-Expires=-1&" PQ_SH "&" PQ_SIG,
        PQ_ALG "&" PQ_CRED "&" PQ_DATE "&X-Amz-Expires=1e3&" PQ_SH "&" PQ_SIG,
        PQ_ALG "&" PQ_CRED "&X-Amz-Date=20261121&" PQ_EXP "&" PQ_SH "&" PQ_SIG,
        PQ_ALG "&" PQ_CRED "&X-Amz-Date=20261121T250000Z&" PQ_EXP "&" PQ_SH "&" PQ_SIG,
        PQ_ALG "&X-Amz-Credential=AK/20261121/us-east-1/s3&" PQ_DATE "&" PQ_EXP "&" PQ_SH
               "&" PQ_SIG,
        PQ_ALG "&X-Amz-Credential=AK%2&" PQ_DATE "&" PQ_EXP "&" PQ_SH "&" PQ_SIG,
        PQ_ALG "&" PQ_CRED "&" PQ_DATE "&" PQ_EXP "&X-Amz-SignedHeaders=b%3Ba&" PQ_SIG,
        PQ_ALG "&" PQ_CRED "&" PQ_DATE "&" PQ_EXP "&" PQ_SH "&X-Amz-Signature=abc",
        PQ_ALG "&" PQ_CRED "&" PQ_DATE "&" PQ_EXP "&" PQ_SH "&X-Amz-Signature",
        PQ_ALG "&" PQ_CRED "&" PQ_DATE "&" PQ_EXP "&" PQ_SH "&X-Amz-Signature=",
        PQ_ALG "&" PQ_CRED "&" PQ_DATE "&" PQ_EXP "&X-Amz-SignedHeaders=host%00&" PQ_SIG,
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int err = gw_sigv4_presigned_parse(bad[i], &a);
        if (err != ERR_INVAL) {
            print_error("case %zu gave %d: %s\n", i, err, bad[i]);
            fail();
        }
    }
    assert_int_equal(gw_sigv4_presigned_parse("X-Amz-Algorithm=AWS4-ECDSA-P256-SHA256&" PQ_CRED
                                              "&" PQ_DATE "&" PQ_EXP "&" PQ_SH "&" PQ_SIG,
                                              &a),
                     ERR_UNSUPPORTED);
    /* An oversized SignedHeaders value. */
    struct buf b;
    buf_init(&b, 1 << 16);
    assert_int_equal(buf_append_str(&b, PQ_ALG "&" PQ_CRED "&" PQ_DATE "&" PQ_EXP "&" PQ_SIG
                                               "&X-Amz-SignedHeaders=host"),
                     0);
    for (int i = 0; i < 600; i++) {
        assert_int_equal(buf_printf(&b, "%%3Bx%04d", i), 0);
    }
    assert_int_equal(gw_sigv4_presigned_parse(buf_cstr(&b), &a), ERR_INVAL);
    buf_cleanup(&b);
}

/* A request signed here, then verified with changes. */
static void
test_verify_refusals(void **state)
{
    (void)state;
    const char *secret = "secret";
    const char *date = "20261121T210000Z";
    struct gw_sigv4_header h[] = {
        {"Host", "127.0.0.1:9000"},
        {"X-Amz-Date", date},
        {"X-Amz-Content-SHA256", GW_SIGV4_EMPTY_SHA256},
    };
    struct gw_sigv4_input in = {"GET", "/b/k", "", h, 3, NULL};
    struct gw_sigv4_creds c = {"AK", secret, NULL};
    char authz[GW_SIGV4_MAX_AUTHZ];
    const char *sh = "host;x-amz-content-sha256;x-amz-date";
    in.payload_hash = GW_SIGV4_EMPTY_SHA256;
    assert_int_equal(
        gw_sigv4_sign(NULL, &c, "us-east-1", "s3", date, &in, sh, authz, sizeof(authz)), 0);
    in.payload_hash = NULL;
    struct gw_sigv4_authz a;
    assert_int_equal(gw_sigv4_authz_parse(authz, &a), 0);
    int64_t t;
    assert_int_equal(gw_sigv4_amz_date_parse(date, &t), 0);
    struct gw_sigv4_verify_opts o = {"us-east-1", "s3", t * 1000, 0, 0};
    struct gw_sigv4_verified v;
    enum gw_sigv4_fail why;
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &in, &o, &v, &why), 0);
    assert_string_equal(v.amz_date, date);
    assert_string_equal(v.scope, "20261121/us-east-1/s3/aws4_request");
    assert_int_equal(v.time_s, t);

    /* Clock: 15 minutes either way, then RequestTimeTooSkewed; a negative skew turns it off. */
    o.now_ms = (t + 900) * 1000;
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &in, &o, NULL, &why), 0);
    o.now_ms = (t + 901) * 1000;
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &in, &o, NULL, &why), ERR_TIMEOUT);
    assert_int_equal(why, GW_SIGV4_FAIL_SKEW);
    assert_string_equal(gw_sigv4_fail_s3code(why), "RequestTimeTooSkewed");
    o.now_ms = (t - 901) * 1000;
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &in, &o, NULL, &why), ERR_TIMEOUT);
    o.skew_s = -1;
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &in, &o, NULL, &why), 0);
    o.skew_s = 0;
    o.now_ms = t * 1000;

    /* Wrong service or region expected. */
    o.service = "sts";
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &in, &o, NULL, &why), ERR_INVAL);
    assert_int_equal(why, GW_SIGV4_FAIL_MALFORMED);
    o.service = "s3";

    /* The path, the query, the method, a signed header: each changed, each refused. */
    struct gw_sigv4_input m = in;
    m.path = "/b/K";
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &m, &o, &v, &why), ERR_AUTH);
    assert_int_equal(why, GW_SIGV4_FAIL_MISMATCH);
    assert_int_equal(v.key[0] | v.key[1] | v.signature[0], 0); /* wiped */
    m = in;
    m.query = "x";
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &m, &o, NULL, &why), ERR_AUTH);
    m = in;
    m.method = "PUT";
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &m, &o, NULL, &why), ERR_AUTH);
    struct gw_sigv4_header h2[4];
    memcpy(h2, h, sizeof(h));
    h2[0].value = "127.0.0.1:9001";
    m = in;
    m.headers = h2;
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &m, &o, NULL, &why), ERR_AUTH);
    /* A repeated signed header changes the canonical value. */
    memcpy(h2, h, sizeof(h));
    h2[3].name = "host";
    h2[3].value = "evil";
    m.nheaders = 4;
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &m, &o, NULL, &why), ERR_AUTH);
    /* An unsigned header may change. */
    h2[3].name = "User-Agent";
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &m, &o, NULL, &why), 0);
    /* A payload hash other than the signed one. */
    m = in;
    m.payload_hash = GW_SIGV4_UNSIGNED;
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &m, &o, NULL, &why), ERR_AUTH);

    /* Missing x-amz-date, x-amz-content-sha256, a signed header; repeated x-amz-date. */
    m = in;
    m.nheaders = 1;
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &m, &o, NULL, &why), ERR_INVAL);
    assert_int_equal(why, GW_SIGV4_FAIL_MALFORMED);
    memcpy(h2, h, sizeof(h));
    h2[2] = h[1];
    h2[1] = h[2];
    m.headers = h2;
    m.nheaders = 2; /* host, content-sha256 */
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &m, &o, NULL, &why), ERR_INVAL);
    m.nheaders = 3;
    h2[3] = h[1];
    m.nheaders = 4; /* x-amz-date twice */
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &m, &o, NULL, &why), ERR_INVAL);
    m = in;
    m.nheaders = 2; /* no x-amz-content-sha256 */
    assert_int_equal(gw_sigv4_verify(NULL, secret, &a, &m, &o, NULL, &why), ERR_INVAL);

    /* host or x-amz-date not signed; a date that is not the scope's day. */
    struct gw_sigv4_authz b = a;
    (void)snprintf(b.signed_headers, sizeof(b.signed_headers), "x-amz-content-sha256;x-amz-date");
    assert_int_equal(gw_sigv4_verify(NULL, secret, &b, &in, &o, NULL, &why), ERR_INVAL);
    b = a;
    (void)snprintf(b.signed_headers, sizeof(b.signed_headers), "host;x-amz-content-sha256");
    assert_int_equal(gw_sigv4_verify(NULL, secret, &b, &in, &o, NULL, &why), ERR_INVAL);
    b = a;
    memcpy(b.date, "20261122", 9);
    assert_int_equal(gw_sigv4_verify(NULL, secret, &b, &in, &o, NULL, &why), ERR_INVAL);
    /* A flipped signature bit; a wrong secret. */
    b = a;
    b.signature[31] ^= 1;
    assert_int_equal(gw_sigv4_verify(NULL, secret, &b, &in, &o, NULL, &why), ERR_AUTH);
    assert_int_equal(gw_sigv4_verify(NULL, "secreT", &a, &in, &o, NULL, &why), ERR_AUTH);
    assert_int_equal(gw_sigv4_verify(NULL, NULL, &a, &in, &o, NULL, &why), ERR_INVAL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_authz_good),      cmocka_unit_test(test_authz_bad),
        cmocka_unit_test(test_presigned_good),  cmocka_unit_test(test_presigned_bad),
        cmocka_unit_test(test_verify_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
