/*
 * tests/unit/gateway/s3/sigv2_test.c: SigV2 against known vectors - the AWS
 * documentation's examples (Amazon S3 Developer Guide, "Signing and
 * authenticating REST requests") and requests botocore's HmacV1Auth /
 * HmacV1QueryAuth signed (tests/unit/gateway/sigv2_vectors.py) - plus the
 * parsers, the clock rules and the refusals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/date.h"
#include "gateway/proxy/auth.h"
#include "gateway/s3/sigv2.h"

#define AK        "AKIAIOSFODNN7EXAMPLE"
#define SECRET    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define BOTO_DATE "Mon, 23 Nov 2026 23:31:10 GMT"

static int64_t
date_ms(const char *d)
{
    int64_t ms = 0;
    char tmp[64];
    (void)snprintf(tmp, sizeof(tmp), "%s", d);
    size_t n = strlen(tmp);
    if (n == 31 && strcmp(tmp + 26, "+0000") == 0) {
        memcpy(tmp + 26, "GMT", 4);
    }
    assert_int_equal(date_http_parse(tmp, &ms), 0);
    return ms;
}

/* Header form: the string to sign is sts, and "AWS AK:sig" verifies at the request's time. */
static void
check_header(const char *method, const char *path, const char *query,
             const struct gw_sigv4_header *hs, size_t n, const char *vhost, const char *sts,
             const char *sig, int64_t now_ms)
{
    struct gw_sigv2_input in = {method, path, query, hs, n, vhost};
    char authz[128];
    (void)snprintf(authz, sizeof(authz), "AWS %s:%s", AK, sig);
    struct gw_sigv2_authz a;
    assert_int_equal(gw_sigv2_authz_parse(authz, &a), 0);
    assert_string_equal(a.access_key, AK);
    if (sts != NULL) {
        struct buf b;
        buf_init(&b, 1 << 16);
        assert_int_equal(gw_sigv2_string_to_sign(&in, &a, &b), 0);
        assert_string_equal(buf_cstr(&b), sts);
        char mine[GW_SIGV2_B64_LEN + 1];
        assert_int_equal(gw_sigv2_sign(SECRET, b.data, b.len, mine), 0);
        assert_string_equal(mine, sig);
        buf_cleanup(&b);
    }
    enum gw_sigv2_fail why = GW_SIGV2_FAIL_INTERNAL;
    assert_int_equal(gw_sigv2_verify(SECRET, &a, &in, now_ms, &why), 0);
    assert_int_equal(why, GW_SIGV2_FAIL_NONE);
    /* the wrong secret; one flipped signature bit */
    assert_int_equal(
        gw_sigv2_verify("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEZ", &a, &in, now_ms, &why),
        ERR_AUTH);
    assert_int_equal(why, GW_SIGV2_FAIL_MISMATCH);
    a.signature[7] ^= 0x10;
    assert_int_equal(gw_sigv2_verify(SECRET, &a, &in, now_ms, &why), ERR_AUTH);
}

static void
test_aws_doc_vectors(void **state)
{
    (void)state;
    /* Object GET, virtual-hosted (Host: johnsmith.s3.amazonaws.com) */
    struct gw_sigv4_header get[] = {{"Host", "johnsmith.s3.amazonaws.com"},
                                    {"Date", "Tue, 27 Mar 2007 19:36:42 +0000"}};
    check_header("GET", "/photos/puppy.jpg", "", get, 2, "johnsmith",
                 "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/johnsmith/photos/puppy.jpg",
                 "bWq2s1WEIj+Ydj0vQ697zp+IXMU=", date_ms("Tue, 27 Mar 2007 19:36:42 GMT"));
    /* Object PUT */
    struct gw_sigv4_header put[] = {{"Content-Type", "image/jpeg"},
                                    {"Content-Length", "94328"},
                                    {"Host", "johnsmith.s3.amazonaws.com"},
                                    {"Date", "Tue, 27 Mar 2007 21:15:45 +0000"}};
    check_header("PUT", "/photos/puppy.jpg", NULL, put, 4, "johnsmith", NULL,
                 "MyyxeRY7whkBe+bq8fHCL/2kKUg=", date_ms("Tue, 27 Mar 2007 21:15:45 GMT"));
    /* List: the query is not part of the resource */
    struct gw_sigv4_header list[] = {{"User-Agent", "Mozilla/5.0"},
                                     {"Host", "johnsmith.s3.amazonaws.com"},
                                     {"Date", "Tue, 27 Mar 2007 19:42:41 +0000"}};
    check_header("GET", "/", "prefix=photos&max-keys=50&marker=puppy", list, 3, "johnsmith",
                 "GET\n\n\nTue, 27 Mar 2007 19:42:41 +0000\n/johnsmith/",
                 "htDYFYduRNen8P9ZfE/s9SuKy0U=", date_ms("Tue, 27 Mar 2007 19:42:41 GMT"));
    /* Fetch: the acl sub-resource */
    struct gw_sigv4_header acl[] = {{"Host", "johnsmith.s3.amazonaws.com"},
                                    {"Date", "Tue, 27 Mar 2007 19:44:46 +0000"}};
    check_header("GET", "/", "acl", acl, 2, "johnsmith",
                 "GET\n\n\nTue, 27 Mar 2007 19:44:46 +0000\n/johnsmith/?acl",
                 "c2WLPFtWHVgbEmeEG93a4cG37dM=", date_ms("Tue, 27 Mar 2007 19:44:46 GMT"));
    /* Upload: x-amz-* headers lowercased, sorted, repeated ones joined (CNAME host) */
    struct gw_sigv4_header up[] = {
        {"Host", "static.johnsmith.net:8080"},
        {"Date", "Tue, 27 Mar 2007 21:06:08 +0000"},
        {"x-amz-acl", "public-read"},
        {"content-type", "application/x-download"},
        {"Content-MD5", "4gJE4saaMU4BqNR0kLY+lw=="},
        {"X-Amz-Meta-ReviewedBy", "joe@johnsmith.net"},
        {"X-Amz-Meta-ReviewedBy", "jane@johnsmith.net"},
        {"X-Amz-Meta-FileChecksum", "0x02661779"},
        {"X-Amz-Meta-ChecksumAlgorithm", "crc32"},
        {"Content-Disposition", "attachment; filename=database.dat"},
        {"Content-Encoding", "gzip"},
        {"Content-Length", "5913339"},
    };
    check_header("PUT", "/db-backup.dat.gz", "", up, 12, "static.johnsmith.net",
                 "PUT\n4gJE4saaMU4BqNR0kLY+lw==\napplication/x-download\nTue, 27 Mar 2007 "
                 "21:06:08 +0000\nx-amz-acl:public-read\nx-amz-meta-checksumalgorithm:crc32\n"
                 "x-amz-meta-filechecksum:0x02661779\nx-amz-meta-reviewedby:joe@johnsmith.net,"
                 "jane@johnsmith.net\n/static.johnsmith.net/db-backup.dat.gz",
                 "ilyl83RwaSoYIEdixDQcA4OnAnc=", date_ms("Tue, 27 Mar 2007 21:06:08 GMT"));
    /* Delete, path style, with x-amz-date: the Date line is empty (signature
     * computed per the spec with Python's hmac; the guide's own figure signs
     * a different request) */
    struct gw_sigv4_header del[] = {{"User-Agent", "dotnet"},
                                    {"Host", "s3.amazonaws.com"},
                                    {"Date", "Tue, 27 Mar 2007 21:20:27 +0000"},
                                    {"x-amz-date", "Tue, 27 Mar 2007 21:20:26 +0000"}};
    check_header("DELETE", "/johnsmith/photos/puppy.jpg", "", del, 4, NULL,
                 "DELETE\n\n\n\nx-amz-date:Tue, 27 Mar 2007 21:20:26 +0000\n"
                 "/johnsmith/photos/puppy.jpg",
                 "R4dJ53KECjStyBO5iTBJZ4XVOaI=", date_ms("Tue, 27 Mar 2007 21:20:26 GMT"));
}

static void
test_botocore_vectors(void **state)
{
    (void)state;
    int64_t now = date_ms(BOTO_DATE);
    /* UploadPart: partNumber and uploadId are sub-resources, sorted */
    struct gw_sigv4_header part[] = {{"Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg=="},
                                     {"Date", BOTO_DATE}};
    check_header("PUT", "/bkt/big.bin", "partNumber=2&uploadId=2~AbC-def", part, 2, NULL,
                 "PUT\n1B2M2Y8AsgTpgAmY7PhCfg==\n\n" BOTO_DATE
                 "\n/bkt/big.bin?partNumber=2&uploadId=2~AbC-def",
                 "KSNySPJJN10n2LA2ABIBgYli89E=", now);
    /* ListObjectsV2: no sub-resource */
    struct gw_sigv4_header list[] = {{"Date", BOTO_DATE}};
    check_header("GET", "/bkt", "list-type=2&prefix=a&continuation-token=x", list, 1, NULL,
                 "GET\n\n\n" BOTO_DATE "\n/bkt", "d6M9/7fbZde+CHob/7lmwMF8QaQ=", now);
    /* an encoded key, x-amz-meta-*, and X-Fencing-Token (not signed by SigV2) */
    struct gw_sigv4_header put[] = {{"Content-Type", "text/plain"},
                                    {"Date", BOTO_DATE},
                                    {"X-Amz-Meta-Lock", "orders"},
                                    {"x-amz-meta-fencing-token", "7"},
                                    {"x-fencing-token", "7"}};
    check_header("PUT", "/bkt/a%20b/c%2Bd", "", put, 5, NULL, NULL,
                 "OFc9Ksurpg+mNiJQfilTyh6qI64=", now);
    put[4].value = "8"; /* the token header is not signed: still verifies */
    check_header("PUT", "/bkt/a%20b/c%2Bd", "", put, 5, NULL, NULL,
                 "OFc9Ksurpg+mNiJQfilTyh6qI64=", now);
    /* DeleteObjects */
    struct gw_sigv4_header del[] = {{"Content-MD5", "xyz=="}, {"Date", BOTO_DATE}};
    check_header("POST", "/bkt", "delete", del, 2, NULL,
                 "POST\nxyz==\n\n" BOTO_DATE "\n/bkt?delete", "KunmhQJ4WwUWf58tvXKX2tyZ0U4=", now);
    /* virtual-hosted: the bucket is prefixed */
    struct gw_sigv4_header vh[] = {{"Date", BOTO_DATE}};
    check_header("GET", "/k", "versionId=v1&acl", vh, 1, "bkt",
                 "GET\n\n\n" BOTO_DATE "\n/bkt/k?acl&versionId=v1",
                 "kJ02gPEZFTwrPILaxDuikAdf16s=", now);
}

/* Whole boto3 calls (path style): botocore's "auth path" resources, which
 * are not S3's, verify too; S3's form for the same request would differ. */
static void
test_botocore_auth_path_forms(void **state)
{
    (void)state;
    static const struct {
        const char *method, *path, *query, *md5, *sig, *spec_resource;
    } v[] = {
        {"GET", "/bkt", "list-type=2&prefix=p&encoding-type=url", "",
         "pgty9e2hfj+cjaz89gJfFc+JouI=", "/bkt"}, /* signed "/bkt?list-type=2" */
        {"GET", "/bkt", "encoding-type=url", "",
         "4VCw9bLMXOfZYXmtqf31PDldumo=", "/bkt"}, /* signed "/bkt/" */
        {"POST", "/bkt", "delete", "cDL/HO6237pKgcrKF+HYeA==", "cGF4FfKgv8hDZZKm3I7dsJN46Qs=",
         "/bkt?delete"}, /* signed "/bkt?delete?delete" */
        {"POST", "/bkt/k", "uploads", "",
         "29d04J2Qh60UD0e3pTZRlj7Q1Xs=", "/bkt/k?uploads"}, /* signed "/bkt/k?uploads?uploads" */
    };
    int64_t now = date_ms(BOTO_DATE);
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        struct gw_sigv4_header h[] = {{"Date", BOTO_DATE}, {"Content-MD5", v[i].md5}};
        char sts[256];
        (void)snprintf(sts, sizeof(sts), "%s\n%s\n\n" BOTO_DATE "\n%s", v[i].method, v[i].md5,
                       v[i].spec_resource);
        struct gw_sigv2_input in = {v[i].method, v[i].path, v[i].query, h, 2, NULL};
        struct gw_sigv2_authz a;
        assert_int_equal(gw_sigv2_authz_parse("AWS " AK ":bWq2s1WEIj+Ydj0vQ697zp+IXMU=", &a), 0);
        struct buf b;
        buf_init(&b, 4096);
        assert_int_equal(gw_sigv2_string_to_sign(&in, &a, &b), 0);
        assert_string_equal(buf_cstr(&b), sts);
        char spec_sig[GW_SIGV2_B64_LEN + 1];
        assert_int_equal(gw_sigv2_sign(SECRET, b.data, b.len, spec_sig), 0);
        assert_string_not_equal(spec_sig, v[i].sig);
        buf_cleanup(&b);
        check_header(v[i].method, v[i].path, v[i].query, h, 2, NULL, NULL, v[i].sig, now);
        /* and S3's own form still verifies */
        check_header(v[i].method, v[i].path, v[i].query, h, 2, NULL, sts, spec_sig, now);
    }
    /* the forms are path-style only: a virtual-hosted "/k" gets neither */
    struct gw_sigv4_header h[] = {{"Date", BOTO_DATE}};
    struct gw_sigv2_input in = {"GET", "/bkt", "encoding-type=url", h, 1, "bkt"};
    struct gw_sigv2_authz a;
    assert_int_equal(gw_sigv2_authz_parse("AWS " AK ":4VCw9bLMXOfZYXmtqf31PDldumo=", &a), 0);
    assert_int_equal(gw_sigv2_verify(SECRET, &a, &in, now, NULL), ERR_AUTH);
}

/* Presigned: the query parses, the string to sign uses Expires, and it verifies before it. */
static void
check_presigned(const char *method, const char *path, const char *query,
                const struct gw_sigv4_header *hs, size_t n, const char *sts)
{
    struct gw_sigv2_input in = {method, path, query, hs, n, NULL};
    struct gw_sigv2_authz a;
    assert_int_equal(gw_sigv2_presigned_parse(query, &a), 0);
    assert_int_equal(a.presigned, 1);
    assert_string_equal(a.access_key, AK);
    assert_int_equal(a.expires_s, 1795130000);
    struct buf b;
    buf_init(&b, 1 << 16);
    assert_int_equal(gw_sigv2_string_to_sign(&in, &a, &b), 0);
    assert_string_equal(buf_cstr(&b), sts);
    buf_cleanup(&b);
    enum gw_sigv2_fail why;
    assert_int_equal(gw_sigv2_verify(SECRET, &a, &in, 1795130000LL * 1000, &why), 0);
    /* one second past Expires: refused as expired, whatever the signature */
    assert_int_equal(gw_sigv2_verify(SECRET, &a, &in, 1795130001LL * 1000, &why), ERR_TIMEOUT);
    assert_int_equal(why, GW_SIGV2_FAIL_EXPIRED);
    assert_int_equal(gw_sigv2_verify("x", &a, &in, 1795120000LL * 1000, &why), ERR_AUTH);
    assert_int_equal(why, GW_SIGV2_FAIL_MISMATCH);
}

static void
test_presigned_vectors(void **state)
{
    (void)state;
    /* a response-* override: a sub-resource, its value decoded */
    check_presigned("GET", "/bkt/k",
                    "response-content-disposition=attachment%3B%20filename%3D%22a%20b.txt%22&"
                    "AWSAccessKeyId=" AK "&Signature=WVvve%2FzPE99L9b%2FXDzoRB51%2BABo%3D&"
                    "Expires=1795130000",
                    NULL, 0,
                    "GET\n\n\n1795130000\n/bkt/k?response-content-disposition=attachment; "
                    "filename=\"a b.txt\"");
    /* a PUT whose Content-Type and x-amz-meta-* botocore moved into the query */
    check_presigned("PUT", "/bkt/up.txt",
                    "AWSAccessKeyId=" AK "&Signature=7UW%2BREtuyyxA4CtUMlY8lsroa2Q%3D&"
                    "content-type=text%2Fplain&x-amz-meta-fencing-token=9&Expires=1795130000",
                    NULL, 0,
                    "PUT\n\ntext/plain\n1795130000\nx-amz-meta-fencing-token:9\n/bkt/up.txt");
    /* the AWS guide's query-string example */
    struct gw_sigv4_header h[] = {{"Host", "johnsmith.s3.amazonaws.com"}};
    struct gw_sigv2_input in = {"GET",
                                "/photos/puppy.jpg",
                                "AWSAccessKeyId=" AK "&Expires=1175139620&Signature="
                                "NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D",
                                h,
                                1,
                                "johnsmith"};
    struct gw_sigv2_authz a;
    assert_int_equal(gw_sigv2_presigned_parse(in.query, &a), 0);
    assert_int_equal(gw_sigv2_verify(SECRET, &a, &in, 1175139000LL * 1000, NULL), 0);
}

static void
test_parse_bad(void **state)
{
    (void)state;
    struct gw_sigv2_authz a;
    assert_int_equal(gw_sigv2_authz_parse("AWS4-HMAC-SHA256 Credential=x", &a), ERR_NOTFOUND);
    assert_int_equal(gw_sigv2_authz_parse(NULL, &a), ERR_NOTFOUND);
    assert_int_equal(gw_sigv2_authz_parse("AWS " AK, &a), ERR_INVAL);
    assert_int_equal(gw_sigv2_authz_parse("AWS :bWq2s1WEIj+Ydj0vQ697zp+IXMU=", &a), ERR_INVAL);
    assert_int_equal(gw_sigv2_authz_parse("AWS " AK ":bWq2s1WEIj+Ydj0vQ697zp+IXMU", &a), ERR_INVAL);
    assert_int_equal(gw_sigv2_authz_parse("AWS " AK ":bWq2s1WEIj+Ydj0vQ697zp+IXM==", &a),
                     ERR_INVAL);
    assert_int_equal(gw_sigv2_authz_parse("AWS " AK ":bWq2s1WEIj+Ydj0vQ697zp+IX*U=", &a),
                     ERR_INVAL);
    assert_int_equal(gw_sigv2_authz_parse("AWS a b:bWq2s1WEIj+Ydj0vQ697zp+IXMU=", &a), ERR_INVAL);
    assert_int_equal(a.access_key[0], '\0');

    assert_int_equal(gw_sigv2_presigned_parse("", &a), ERR_NOTFOUND);
    assert_int_equal(gw_sigv2_presigned_parse("X-Amz-Signature=ab&list-type=2", &a), ERR_NOTFOUND);
    const char *bad[] = {
        "AWSAccessKeyId=" AK "&Expires=1",                                    /* no Signature */
        "Signature=bWq2s1WEIj%2BYdj0vQ697zp%2BIXMU%3D&Expires=1",             /* no key */
        "AWSAccessKeyId=" AK "&Signature=bWq2s1WEIj%2BYdj0vQ697zp%2BIXMU%3D", /* no Expires */
        "AWSAccessKeyId=" AK "&Signature=bWq2s1WEIj%2BYdj0vQ697zp%2BIXMU%3D&Expires=-1",
        "AWSAccessKeyId=" AK "&Signature=bWq2s1WEIj%2BYdj0vQ697zp%2BIXMU%3D&Expires=1&Expires=2",
        "AWSAccessKeyId=" AK "&Signature=short&Expires=1",
        "AWSAccessKeyId=&Signature=bWq2s1WEIj%2BYdj0vQ697zp%2BIXMU%3D&Expires=1",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(gw_sigv2_presigned_parse(bad[i], &a), ERR_INVAL);
    }
    /* a raw '+' in the signature is a '+' */
    assert_int_equal(gw_sigv2_presigned_parse("AWSAccessKeyId=" AK "&Expires=5&Signature="
                                              "bWq2s1WEIj+Ydj0vQ697zp+IXMU=",
                                              &a),
                     0);
}

static void
test_clock(void **state)
{
    (void)state;
    struct gw_sigv4_header h[] = {{"Host", "johnsmith.s3.amazonaws.com"},
                                  {"Date", "Tue, 27 Mar 2007 19:36:42 +0000"}};
    struct gw_sigv2_input in = {"GET", "/photos/puppy.jpg", "", h, 2, "johnsmith"};
    struct gw_sigv2_authz a;
    assert_int_equal(gw_sigv2_authz_parse("AWS " AK ":bWq2s1WEIj+Ydj0vQ697zp+IXMU=", &a), 0);
    int64_t t = date_ms("Tue, 27 Mar 2007 19:36:42 GMT");
    enum gw_sigv2_fail why;
    /* 15 minutes either way is fine, a second more is not */
    assert_int_equal(gw_sigv2_verify(SECRET, &a, &in, t + 900000, &why), 0);
    assert_int_equal(gw_sigv2_verify(SECRET, &a, &in, t - 900000, &why), 0);
    assert_int_equal(gw_sigv2_verify(SECRET, &a, &in, t + 901000, &why), ERR_TIMEOUT);
    assert_int_equal(why, GW_SIGV2_FAIL_SKEW);
    assert_int_equal(gw_sigv2_verify(SECRET, &a, &in, t - 901000, &why), ERR_TIMEOUT);
    /* no date at all; a date in another format */
    in.nheaders = 1;
    assert_int_equal(gw_sigv2_verify(SECRET, &a, &in, t, &why), ERR_INVAL);
    assert_int_equal(why, GW_SIGV2_FAIL_NODATE);
    h[1].value = "2007-03-27T19:36:42Z";
    in.nheaders = 2;
    assert_int_equal(gw_sigv2_verify(SECRET, &a, &in, t, &why), ERR_INVAL);
    /* x-amz-date in ISO 8601 basic form is the request time too */
    struct gw_sigv4_header h2[] = {{"x-amz-date", "20070327T193642Z"}};
    struct gw_sigv2_input in2 = {"GET", "/x", "", h2, 1, NULL};
    struct buf b;
    buf_init(&b, 4096);
    assert_int_equal(gw_sigv2_string_to_sign(&in2, &a, &b), 0);
    char sig[GW_SIGV2_B64_LEN + 1];
    assert_int_equal(gw_sigv2_sign(SECRET, b.data, b.len, sig), 0);
    assert_string_equal(buf_cstr(&b), "GET\n\n\n\nx-amz-date:20070327T193642Z\n/x");
    buf_cleanup(&b);
    char authz[80];
    (void)snprintf(authz, sizeof(authz), "AWS " AK ":%s", sig);
    assert_int_equal(gw_sigv2_authz_parse(authz, &a), 0);
    assert_int_equal(gw_sigv2_verify(SECRET, &a, &in2, t + 1000, &why), 0);
    assert_int_equal(gw_sigv2_verify(SECRET, &a, &in2, t + 3600000, &why), ERR_TIMEOUT);
}

/* Presigned credentials never go upstream; every other parameter keeps its bytes and order. */
static void
test_query_strip(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"AWSAccessKeyId=AK&Signature=a%2Bb%3D&Expires=5", ""},
        {"response-content-type=a%2Fb&AWSAccessKeyId=AK&Expires=5&Signature=s&x=1",
         "response-content-type=a%2Fb&x=1"},
        {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=c&X-Amz-Date=d&X-Amz-Expires=1&"
         "X-Amz-SignedHeaders=host&X-Amz-Signature=s&X-Amz-Security-Token=t&uploadId=u&partNumber="
         "2",
         "uploadId=u&partNumber=2"},
        {"uploads", "uploads"},
        {"list-type=2&&prefix=a+b", "list-type=2&prefix=a+b"},
        {"Signaturex=1&expires=2&x-amz-meta-a=b", "Signaturex=1&expires=2&x-amz-meta-a=b"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct buf b;
        buf_init(&b, 4096);
        assert_int_equal(gw_auth_query_strip(cases[i][0], &b), 0);
        assert_string_equal(buf_cstr(&b), cases[i][1]);
        buf_cleanup(&b);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aws_doc_vectors),
        cmocka_unit_test(test_botocore_vectors),
        cmocka_unit_test(test_botocore_auth_path_forms),
        cmocka_unit_test(test_presigned_vectors),
        cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_clock),
        cmocka_unit_test(test_query_strip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
