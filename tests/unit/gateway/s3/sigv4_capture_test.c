/*
 * tests/unit/gateway/s3/sigv4_capture_test.c: the 11 real client requests of
 * tests/data/sigv4-client-captures (.http files), and the presigned URL
 * quoted in its README, read at run time.  With the clock at each request's
 * X-Amz-Date, each verifies with secret S3RVER; one byte changed in a signed
 * header, the path, the query, a chunk or a chunk signature is refused.
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

#include <cmocka.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/num.h"
#include "gateway/s3/sigv4.h"
#include "tests/unit/testdata.h"

#define SECRET   "S3RVER"
#define MAX_HDRS 32

static char *
slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    struct buf b;
    buf_init(&b, 1 << 24);
    char tmp[4096];
    for (;;) {
        size_t r = fread(tmp, 1, sizeof(tmp), f);
        if (r == 0) {
            break;
        }
        assert_int_equal(buf_append(&b, tmp, r), 0);
    }
    (void)fclose(f);
    *len = b.len;
    if (b.data == NULL) {
        return calloc(1, 1);
    }
    return b.data; /* the buffer's storage, now the caller's to free */
}

/* One captured HTTP/1.1 request. */
struct capture {
    char name[256];                       /* file name */
    char *raw;                            /* the file, cut in place */
    char *method;                         /* request method */
    char *path;                           /* raw path */
    char *query;                          /* raw query or "" */
    struct gw_sigv4_header hdr[MAX_HDRS]; /* headers (values point into raw) */
    size_t nhdr;                          /* header count */
    char *body;                           /* body bytes as sent (framing included) */
    size_t bodylen;                       /* body length */
};

static const char *
cap_header(const struct capture *c, const char *name)
{
    for (size_t i = 0; i < c->nhdr; i++) {
        if (strcasecmp(c->hdr[i].name, name) == 0) {
            return c->hdr[i].value;
        }
    }
    return NULL;
}

/* Parse "request line CRLF (name: value CRLF)* CRLF body". */
static void
cap_parse(struct capture *c, char *raw, size_t len)
{
    c->raw = raw;
    char *end = strstr(raw, "\r\n\r\n");
    assert_non_null(end);
    c->body = end + 4;
    c->bodylen = len - (size_t)(c->body - raw);
    end[2] = '\0';
    char *line = raw;
    char *eol = strstr(line, "\r\n");
    *eol = '\0';
    c->method = line;
    char *sp = strchr(line, ' ');
    *sp = '\0';
    c->path = sp + 1;
    sp = strchr(c->path, ' ');
    assert_non_null(sp);
    assert_string_equal(sp + 1, "HTTP/1.1");
    *sp = '\0';
    char *q = strchr(c->path, '?');
    if (q != NULL) {
        *q = '\0';
        c->query = q + 1;
    } else {
        c->query = sp; /* "" */
    }
    line = eol + 2;
    while (*line != '\0') {
        eol = strstr(line, "\r\n");
        *eol = '\0';
        char *colon = strchr(line, ':');
        assert_non_null(colon);
        *colon = '\0';
        char *v = colon + 1;
        while (*v == ' ') {
            v++;
        }
        assert_true(c->nhdr < MAX_HDRS);
        c->hdr[c->nhdr].name = line;
        c->hdr[c->nhdr].value = v;
        c->nhdr++;
        line = eol + 2;
    }
}

static struct gw_sigv4_input
cap_input(const struct capture *c)
{
    struct gw_sigv4_input in = {c->method, c->path, c->query, c->hdr, c->nhdr, NULL};
    return in;
}

static int64_t
cap_time_ms(const struct capture *c)
{
    int64_t t;
    const char *d = cap_header(c, "x-amz-date");
    assert_non_null(d);
    assert_int_equal(gw_sigv4_amz_date_parse(d, &t), 0);
    return t * 1000;
}

/* Verify the capture as it is, or as modified by the caller. */
static int
cap_verify(const struct capture *c, const struct gw_sigv4_input *in, struct gw_sigv4_verified *v)
{
    struct gw_sigv4_authz a;
    const char *authz = cap_header(c, "authorization");
    assert_non_null(authz);
    int err = gw_sigv4_authz_parse(authz, &a);
    if (err != 0) {
        return err;
    }
    /* The clock is pinned to the request's time (common/clock.h), as the gateway would read it. */
    struct gw_sigv4_verify_opts o = {"us-east-1", "s3", clock_wall_ms(), 0, 0};
    return gw_sigv4_verify(NULL, SECRET, &a, in, &o, v, NULL);
}

/* Decode an HTTP/1.1 chunked body (RFC 9112 7.1) into out. */
static void
http_dechunk(const char *p, size_t n, struct buf *out)
{
    size_t off = 0;
    for (;;) {
        const char *eol = strstr(p + off, "\r\n");
        assert_non_null(eol);
        uint64_t size;
        assert_int_equal(parse_hex_u64n(p + off, (size_t)(eol - (p + off)), &size), 0);
        off = (size_t)(eol - p) + 2;
        if (size == 0) {
            assert_int_equal(n - off, 2); /* no HTTP trailers, final CRLF */
            return;
        }
        assert_true(off + size + 2 <= n);
        assert_int_equal(buf_append(out, p + off, size), 0);
        off += size + 2;
    }
}

struct sink {
    struct buf out; /* decoded bytes */
};

/* gw_sigv4_chunked_data_fn, registered by decode_body() */
static int
on_data(void *arg, const char *p, size_t n)
{
    struct sink *s = arg;
    return buf_append(&s->out, p, n);
}

/* Run the aws-chunked decoder on body in 7-byte pieces; returns the final status. */
static int
decode_body(enum gw_sigv4_chunked_mode mode, const struct gw_sigv4_verified *v, uint64_t dlen,
            const char *trailer, const char *body, size_t n, struct buf *out)
{
    struct gw_sigv4_chunked *d = gw_sigv4_chunked_new(mode, v, dlen, trailer);
    assert_non_null(d);
    struct sink s;
    s.out = *out;
    int r = 0;
    for (size_t off = 0; off < n && r == 0; off += 7) {
        r = gw_sigv4_chunked_feed(d, body + off, n - off < 7 ? n - off : 7, on_data, &s);
    }
    if (r == 0) {
        r = gw_sigv4_chunked_finish(d);
    }
    *out = s.out;
    gw_sigv4_chunked_free(d);
    return r;
}

/* The body checks that go with each payload mode. */
static void
check_body(const struct capture *c, const struct gw_sigv4_verified *v)
{
    const char *mode = cap_header(c, "x-amz-content-sha256");
    const char *dl = cap_header(c, "x-amz-decoded-content-length");
    const char *te = cap_header(c, "transfer-encoding");
    struct buf out;
    buf_init(&out, 1 << 20);
    assert_non_null(mode);
    if (strcmp(mode, GW_SIGV4_STREAMING) == 0) {
        uint64_t n;
        assert_int_equal(parse_u64(dl, 0, UINT64_MAX, &n), 0);
        assert_int_equal(
            decode_body(GW_SIGV4_CHUNKED_SIGNED, v, n, NULL, c->body, c->bodylen, &out), 1);
        assert_int_equal(out.len, n);
        /* One byte changed in the chunk data, in a chunk signature: refused. */
        for (size_t k = 0; k < 2; k++) {
            struct buf w;
            buf_init(&w, 1 << 20);
            assert_int_equal(buf_append(&w, c->body, c->bodylen), 0);
            char *at = k == 0 ? strstr(w.data, "\r\n") + 2 : strstr(w.data, "signature=") + 20;
            *at ^= 1;
            buf_reset(&out);
            assert_int_equal(decode_body(GW_SIGV4_CHUNKED_SIGNED, v, n, NULL, w.data, w.len, &out),
                             ERR_AUTH);
            assert_true(out.len < n);
            buf_cleanup(&w);
        }
    } else if (strcmp(mode, GW_SIGV4_STREAMING_UTRL) == 0) {
        uint64_t n;
        struct buf aws;
        buf_init(&aws, 1 << 20);
        assert_non_null(te);
        assert_string_equal(te, "chunked");
        http_dechunk(c->body, c->bodylen, &aws);
        assert_int_equal(parse_u64(dl, 0, UINT64_MAX, &n), 0);
        const char *trailer = cap_header(c, "x-amz-trailer");
        assert_int_equal(decode_body(GW_SIGV4_CHUNKED_UNSIGNED_TRAILER, NULL, n, trailer, aws.data,
                                     aws.len, &out),
                         1);
        assert_int_equal(out.len, n);
        assert_memory_equal(out.data, "0123456789", 10);
        /* A changed data byte breaks the crc32 trailer. */
        char *at = strstr(aws.data, "\r\n") + 2;
        *at ^= 1;
        buf_reset(&out);
        assert_int_equal(decode_body(GW_SIGV4_CHUNKED_UNSIGNED_TRAILER, NULL, n, trailer, aws.data,
                                     aws.len, &out),
                         ERR_INVAL);
        buf_cleanup(&aws);
    } else if (strcmp(mode, GW_SIGV4_UNSIGNED) != 0) {
        char h[GW_SIGV4_HEX_LEN + 1];
        assert_int_equal(gw_sigv4_sha256_hex(c->body, c->bodylen, h), 0);
        assert_string_equal(h, mode); /* the signed payload hash is the body's */
    }
    buf_cleanup(&out);
}

/* Every single-byte change that must be refused. */
static void
check_tampering(struct capture *c)
{
    struct gw_sigv4_input in = cap_input(c);
    struct gw_sigv4_authz a;
    assert_int_equal(gw_sigv4_authz_parse(cap_header(c, "authorization"), &a), 0);
    /* Each signed header's value, one byte changed. */
    int changed = 0;
    for (size_t i = 0; i < c->nhdr; i++) {
        char lname[128];
        size_t l = strlen(c->hdr[i].name);
        assert_true(l < sizeof(lname));
        for (size_t k = 0; k <= l; k++) {
            char ch = c->hdr[i].name[k];
            lname[k] = (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
        }
        char pat[140];
        (void)snprintf(pat, sizeof(pat), ";%s;", lname);
        char list[GW_SIGV4_MAX_SIGNED_HDRS + 3];
        (void)snprintf(list, sizeof(list), ";%s;", a.signed_headers);
        char *val = (char *)(uintptr_t)c->hdr[i].value;
        size_t vl = strlen(val);
        if (vl == 0) {
            continue;
        }
        int is_signed = strstr(list, pat) != NULL;
        val[vl / 2] ^= 1;
        int err = cap_verify(c, &in, NULL);
        val[vl / 2] ^= 1;
        if (is_signed) {
            if (err == 0) {
                fail_msg("%s: changed signed header %s accepted", c->name, lname);
            }
            changed++;
        } else if (strcmp(lname, "authorization") != 0 && err != 0) {
            fail_msg("%s: changed unsigned header %s refused (%d)", c->name, lname, err);
        }
    }
    assert_true(changed >= 3);
    /* The path. */
    size_t pl = strlen(c->path);
    c->path[pl - 1] ^= 1;
    assert_int_equal(cap_verify(c, &in, NULL), ERR_AUTH);
    c->path[pl - 1] ^= 1;
    /* The query: a byte changed, or a parameter added. */
    if (c->query[0] != '\0') {
        c->query[1] ^= 1;
        assert_int_equal(cap_verify(c, &in, NULL), ERR_AUTH);
        c->query[1] ^= 1;
    }
    in.query = "x-id=PutObject";
    assert_int_equal(cap_verify(c, &in, NULL), ERR_AUTH);
    in.query = c->query;
    /* The method. */
    in.method = strcmp(c->method, "GET") == 0 ? "HEAD" : "POST";
    assert_int_equal(cap_verify(c, &in, NULL), ERR_AUTH);
    in.method = c->method;
    /* The signature itself. */
    char *sig = strstr((char *)(uintptr_t)cap_header(c, "authorization"), "Signature=");
    assert_non_null(sig);
    sig[10 + 17] = sig[10 + 17] == '0' ? '1' : '0';
    assert_int_equal(cap_verify(c, &in, NULL), ERR_AUTH);
}

static void
run_capture(const char *dir, const char *name)
{
    char path[4096];
    size_t len;
    struct capture c;
    memset(&c, 0, sizeof(c));
    (void)snprintf(c.name, sizeof(c.name), "%s", name);
    (void)snprintf(path, sizeof(path), "%s/%s", dir, name);
    char *raw = slurp(path, &len);
    cap_parse(&c, raw, len);
    clock_pin(0, cap_time_ms(&c));
    struct gw_sigv4_input in = cap_input(&c);
    struct gw_sigv4_verified v;
    int err = cap_verify(&c, &in, &v);
    if (err != 0) {
        fail_msg("%s: verify = %d", name, err);
    }
    check_body(&c, &v);
    gw_sigv4_wipe(&v, sizeof(v));
    /* Sixteen minutes later the same request is too old. */
    clock_pin(0, cap_time_ms(&c) + 16 * 60 * 1000);
    assert_int_equal(cap_verify(&c, &in, NULL), ERR_TIMEOUT);
    clock_pin(0, cap_time_ms(&c));
    check_tampering(&c);
    clock_unpin();
    free(raw);
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
test_http_captures(void **state)
{
    (void)state;
    char dir[1024];
    (void)snprintf(dir, sizeof(dir), "%s/sigv4-client-captures", testdata_dir());
    DIR *d = opendir(dir);
    assert_non_null(d);
    char *names[64];
    size_t n = 0;
    for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
        size_t l = strlen(e->d_name);
        if (l > 5 && strcmp(e->d_name + l - 5, ".http") == 0) {
            assert_true(n < 64);
            names[n] = malloc(l + 1);
            assert_non_null(names[n]);
            memcpy(names[n], e->d_name, l + 1);
            n++;
        }
    }
    (void)closedir(d);
    qsort(names, n, sizeof(names[0]), cmp_str);
    assert_int_equal(n, 11);
    for (size_t i = 0; i < n; i++) {
        run_capture(dir, names[i]);
        free(names[i]);
    }
}

/* The presigned URL quoted in the captures' README. */
static void
test_presigned_capture(void **state)
{
    (void)state;
    char path[1024];
    size_t len;
    (void)snprintf(path, sizeof(path), "%s/sigv4-client-captures/README.md", testdata_dir());
    char *readme = slurp(path, &len);
    /* The indented line that holds "&X-Amz-Signature=" is the URL. */
    char *sigp = strstr(readme, "&X-Amz-Signature=");
    assert_non_null(sigp);
    char *ls = sigp;
    while (ls > readme && ls[-1] != '\n') {
        ls--;
    }
    char *url = strstr(ls, "http://127.0.0.1:14569/");
    assert_non_null(url);
    *strchr(url, '\n') = '\0';
    char *p = url + strlen("http://127.0.0.1:14569");
    char *q = strchr(p, '?');
    assert_non_null(q);
    *q++ = '\0';
    struct gw_sigv4_authz a;
    assert_int_equal(gw_sigv4_presigned_parse(q, &a), 0);
    assert_int_equal(a.expires, 300);
    int64_t t;
    assert_int_equal(gw_sigv4_amz_date_parse(a.amz_date, &t), 0);
    /* An x-amz-content-sha256 header plays no part in a presigned request. */
    struct gw_sigv4_header h[] = {{"Host", "127.0.0.1:14569"},
                                  {"User-Agent", "python-requests"},
                                  {"X-Amz-Content-Sha256", GW_SIGV4_EMPTY_SHA256}};
    struct gw_sigv4_input in = {"GET", p, q, h, 3, NULL};
    struct gw_sigv4_verify_opts o = {"us-east-1", "s3", t * 1000, 0, 0};
    enum gw_sigv4_fail why;
    assert_int_equal(gw_sigv4_verify(NULL, SECRET, &a, &in, &o, NULL, &why), 0);
    o.now_ms = (t + 300) * 1000;
    assert_int_equal(gw_sigv4_verify(NULL, SECRET, &a, &in, &o, NULL, &why), 0);
    o.now_ms = (t + 301) * 1000;
    assert_int_equal(gw_sigv4_verify(NULL, SECRET, &a, &in, &o, NULL, &why), ERR_TIMEOUT);
    assert_int_equal(why, GW_SIGV4_FAIL_EXPIRED);
    o.now_ms = t * 1000;
    /* Host, path, query (X-Amz-Expires=300 -> 301), method: each refused. */
    h[0].value = "127.0.0.1:14570";
    assert_int_equal(gw_sigv4_verify(NULL, SECRET, &a, &in, &o, NULL, &why), ERR_AUTH);
    h[0].value = "127.0.0.1:14569";
    p[strlen(p) - 1] ^= 1;
    assert_int_equal(gw_sigv4_verify(NULL, SECRET, &a, &in, &o, NULL, &why), ERR_AUTH);
    p[strlen(p) - 1] ^= 1;
    char *exp = strstr(q, "X-Amz-Expires=300");
    assert_non_null(exp);
    exp[16] = '1';
    struct gw_sigv4_authz a2;
    assert_int_equal(gw_sigv4_presigned_parse(q, &a2), 0);
    assert_int_equal(gw_sigv4_verify(NULL, SECRET, &a2, &in, &o, NULL, &why), ERR_AUTH);
    assert_int_equal(why, GW_SIGV4_FAIL_MISMATCH);
    exp[16] = '0';
    in.method = "PUT";
    assert_int_equal(gw_sigv4_verify(NULL, SECRET, &a, &in, &o, NULL, &why), ERR_AUTH);
    in.method = "GET";
    /* An extra parameter added to the query. */
    struct buf q2;
    buf_init(&q2, 4096);
    assert_int_equal(buf_printf(&q2, "%s&versionId=1", q), 0);
    in.query = q2.data;
    assert_int_equal(gw_sigv4_verify(NULL, SECRET, &a, &in, &o, NULL, &why), ERR_AUTH);
    buf_cleanup(&q2);
    in.query = q;
    /* One byte of the signature. */
    char *sig = strstr(q, "X-Amz-Signature=") + 16 + 5;
    *sig = *sig == '0' ? '1' : '0';
    assert_int_equal(gw_sigv4_presigned_parse(q, &a2), 0);
    assert_int_equal(gw_sigv4_verify(NULL, SECRET, &a2, &in, &o, NULL, &why), ERR_AUTH);
    free(readme);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http_captures),
        cmocka_unit_test(test_presigned_capture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
