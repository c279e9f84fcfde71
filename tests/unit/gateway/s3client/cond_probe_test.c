/*
 * tests/unit/gateway/s3client/cond_probe_test.c: the conditional-write probe's
 * steps and verdicts, with the internal S3 client stubbed (cond_probe.c is
 * included; gw_s3client_start records each call and the test answers it as
 * a store would): RGW 16 (PutObject honours conditions with the bare ETag
 * only; Copy, Complete and Delete ignore them), AWS (quoted ETag; all
 * honoured), a store that ignores If-None-Match, a store without multipart
 * (Complete not honoured, the rest decided), and an answer that says nothing
 * (5xx: retried, no verdict).  The real RGW: tests/integration/test_conditional_writes.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/s3client/cond_probe.c"

/* ---- the stubbed S3 client: one call at a time, answered by the test ---- */

struct call {
    char method[16];
    char hdrs[512];  /* "Name: value\n" per extra header */
    char query[256]; /* the raw query, "" if none */
    char body[512];  /* the request body (cut), "" if none */
    const struct gw_s3client_cbs *cbs;
    void *arg;
};

static struct call calls[32];
static size_t ncalls;
static struct gw_s3client_op *fake_op = (struct gw_s3client_op *)&ncalls;

int
gw_s3client_start(struct gw_s3client *c, const struct gw_s3client_call *call,
                  const struct gw_s3client_cbs *cbs, void *arg, struct gw_s3client_op **out)
{
    (void)c;
    assert_true(ncalls < sizeof(calls) / sizeof(calls[0]));
    struct call *k = &calls[ncalls++];
    (void)snprintf(k->method, sizeof(k->method), "%s", call->method);
    (void)snprintf(k->query, sizeof(k->query), "%s", call->query != NULL ? call->query : "");
    (void)snprintf(k->body, sizeof(k->body), "%.*s", (int)call->body_len,
                   call->body != NULL ? call->body : "");
    k->hdrs[0] = '\0';
    for (size_t i = 0; i < call->nextra; i++) {
        size_t n = strlen(k->hdrs);
        (void)snprintf(k->hdrs + n, sizeof(k->hdrs) - n, "%s: %s\n", call->extra[i].name,
                       call->extra[i].value);
    }
    k->cbs = cbs;
    k->arg = arg;
    *out = fake_op;
    return 0;
}

void
gw_s3client_cancel(struct gw_s3client_op *op)
{
    (void)op;
}

int
gw_s3client_encode(const char *s, bool keep_slash, struct buf *out)
{
    (void)keep_slash;
    return buf_append_str(out, s);
}

/* Answers the last call with status (and, for a 2xx, the ETag header etag). */
static void
answer(int status, const char *etag)
{
    struct call *k = &calls[ncalls - 1];
    if (etag != NULL && k->cbs->on_head != NULL) {
        const struct gw_header h = {.name = "ETag", .value = etag};
        assert_int_equal(k->cbs->on_head(k->arg, status, &h, 1), 0);
    }
    k->cbs->on_done(k->arg, 0, status, status == 412 ? "PreconditionFailed" : NULL);
}

/* Answers the last call 200 with body (in two pieces, as a transfer may). */
static void
answer_body(const char *body)
{
    struct call *k = &calls[ncalls - 1];
    size_t half = strlen(body) / 2;
    assert_non_null(k->cbs->on_body);
    assert_int_equal(k->cbs->on_body(k->arg, body, half), 0);
    assert_int_equal(k->cbs->on_body(k->arg, body + half, strlen(body) - half), 0);
    k->cbs->on_done(k->arg, 0, 200, NULL);
}

#define UPLOAD_XML                                                                                 \
    "<?xml version=\"1.0\"?><InitiateMultipartUploadResult><Bucket>bkt</Bucket>"                   \
    "<Key>k</Key><UploadId>2~up/id+x</UploadId></InitiateMultipartUploadResult>"

/* The multipart steps from CreateMultipartUpload on, Complete answered complete_status. */
static void
multipart(size_t first, int complete_status)
{
    assert_int_equal(ncalls, first + 1);
    assert_string_equal(calls[first].method, "POST");
    assert_string_equal(calls[first].query, "uploads");
    answer_body(UPLOAD_XML);
    assert_string_equal(calls[first + 1].method, "PUT");
    assert_string_equal(calls[first + 1].query, "partNumber=1&uploadId=2~up/id+x");
    answer(200, "\"part1\"");
    assert_string_equal(calls[first + 2].method, "POST");
    assert_string_equal(calls[first + 2].query, "uploadId=2~up/id+x");
    assert_string_equal(calls[first + 2].hdrs, "If-None-Match: *\n");
    assert_non_null(strstr(calls[first + 2].body,
                           "<Part><PartNumber>1</PartNumber><ETag>\"part1\"</ETag></Part>"));
    answer(complete_status, NULL);
    assert_string_equal(calls[first + 3].method, "DELETE"); /* the upload aborted */
    assert_string_equal(calls[first + 3].query, "uploadId=2~up/id+x");
    answer(complete_status == 412 ? 204 : 404, NULL);
    assert_string_equal(calls[first + 4].query, "");
}

static bool got;
static struct gw_cond_caps caps;

static void
on_done(void *arg, const struct gw_cond_caps *c)
{
    (void)arg;
    got = true;
    caps = *c;
}

static struct gw_cond_probe *
start(struct event_base **base)
{
    ncalls = 0;
    got = false;
    memset(&caps, 0xff, sizeof(caps));
    *base = event_base_new();
    assert_non_null(*base);
    struct gw_cond_probe *p = gw_cond_probe_start(*base, NULL, "bkt", "fencegate/", on_done, NULL);
    assert_non_null(p);
    assert_int_equal(ncalls, 0); /* the first attempt runs from the loop */
    assert_int_equal(event_base_loop(*base, EVLOOP_ONCE), 0);
    assert_int_equal(ncalls, 1);
    return p;
}

static void
stop(struct gw_cond_probe *p, struct event_base *base)
{
    gw_cond_probe_free(p);
    event_base_free(base);
}

static void
test_rgw16(void **state)
{
    (void)state;
    struct event_base *base;
    struct gw_cond_probe *p = start(&base);
    assert_string_equal(calls[0].method, "PUT");
    assert_string_equal(calls[0].hdrs, "");
    answer(200, "\"abc\"");
    assert_string_equal(calls[1].hdrs, "If-None-Match: *\n");
    answer(412, NULL);
    assert_string_equal(calls[2].hdrs, "If-Match: " PROBE_WRONG_ETAG "\n");
    answer(412, NULL);
    assert_string_equal(calls[3].hdrs, "If-Match: \"abc\"\n");
    answer(412, NULL); /* RGW 16 refuses the quoted form */
    assert_string_equal(calls[4].hdrs, "If-Match: abc\n");
    answer(200, "\"abc\"");
    assert_non_null(strstr(calls[5].hdrs, "x-amz-copy-source: /bkt/fencegate/~probe/cond-"));
    assert_non_null(strstr(calls[5].hdrs, "If-None-Match: *\n"));
    answer(200, NULL); /* copied despite the condition */
    multipart(6, 200); /* completed despite the condition */
    assert_string_equal(calls[10].method, "DELETE");
    assert_string_equal(calls[10].hdrs, "If-Match: " PROBE_WRONG_ETAG "\n");
    assert_false(got);
    answer(204, NULL); /* deleted despite the condition */
    assert_true(got);
    assert_true(caps.put);
    assert_false(caps.quoted);
    assert_false(caps.copy);
    assert_false(caps.complete);
    assert_false(caps.del);
    assert_int_equal(ncalls, 12); /* the clean-up DELETE */
    assert_string_equal(calls[11].method, "DELETE");
    assert_string_equal(calls[11].hdrs, "");
    stop(p, base);
}

static void
test_aws(void **state)
{
    (void)state;
    struct event_base *base;
    struct gw_cond_probe *p = start(&base);
    answer(200, "\"abc\"");
    answer(412, NULL);
    answer(412, NULL);
    answer(200, "\"abc\""); /* quoted taken */
    assert_non_null(strstr(calls[4].hdrs, "x-amz-copy-source"));
    answer(412, NULL);
    multipart(5, 412);
    answer(412, NULL);
    assert_true(got);
    assert_true(caps.put && caps.quoted && caps.copy && caps.complete && caps.del);
    stop(p, base);
}

/* A store without multipart (or one that fails it): Complete is not honoured,
 * and the probe goes on to its verdict instead of starting over. */
/* The steps up to the multipart ones, as AWS answers them (quoted ETag, copy honoured). */
static void
to_multipart(void)
{
    answer(200, "\"abc\"");
    answer(412, NULL);
    answer(412, NULL);
    answer(200, "\"abc\"");
    answer(412, NULL);
}

static void
test_multipart_unavailable(void **state)
{
    (void)state;
    struct event_base *base;
    struct gw_cond_probe *p = start(&base);
    to_multipart(); /* copy honoured */
    assert_string_equal(calls[5].query, "uploads");
    answer(501, NULL);                              /* NotImplemented */
    assert_string_equal(calls[6].method, "DELETE"); /* no upload to abort: the DELETE step */
    assert_string_equal(calls[6].hdrs, "If-Match: " PROBE_WRONG_ETAG "\n");
    answer(412, NULL);
    assert_true(got);
    assert_true(caps.put && caps.copy && caps.del);
    assert_false(caps.complete);
    assert_int_equal(p->backoff_ms, 0); /* never retried */
    stop(p, base);

    p = start(&base); /* an answer without an UploadId, then a part that fails */
    to_multipart();
    answer_body("<InitiateMultipartUploadResult></InitiateMultipartUploadResult>");
    assert_string_equal(calls[6].hdrs, "If-Match: " PROBE_WRONG_ETAG "\n");
    answer(412, NULL);
    assert_true(got);
    assert_false(caps.complete);
    stop(p, base);

    p = start(&base);
    to_multipart();
    answer_body(UPLOAD_XML);
    answer(500, NULL); /* the part failed: the upload is aborted */
    assert_string_equal(calls[7].method, "DELETE");
    assert_string_equal(calls[7].query, "uploadId=2~up/id+x");
    answer(204, NULL);
    assert_string_equal(calls[8].hdrs, "If-Match: " PROBE_WRONG_ETAG "\n");
    answer(412, NULL);
    assert_true(got);
    assert_false(caps.complete);
    assert_int_equal(p->backoff_ms, 0);
    stop(p, base);
}

static void
test_ignores_conditions(void **state)
{
    (void)state;
    struct event_base *base;
    struct gw_cond_probe *p = start(&base);
    answer(200, "\"abc\"");
    answer(200, "\"abc\""); /* If-None-Match: * on an existing key accepted */
    assert_true(got);
    assert_false(caps.put);
    assert_false(caps.copy || caps.del);
    stop(p, base);

    p = start(&base);
    answer(200, "\"abc\"");
    answer(412, NULL);
    answer(412, NULL);
    answer(412, NULL);
    answer(412, NULL); /* its own ETag refused both ways */
    assert_true(got);
    assert_false(caps.put);
    stop(p, base);
}

/* 5xx, 403, no ETag: no verdict; a fresh attempt after the backoff. */
static void
test_no_answer_retries(void **state)
{
    (void)state;
    struct event_base *base;
    struct gw_cond_probe *p = start(&base);
    answer(200, NULL); /* created, but no ETag */
    assert_false(got);
    assert_int_equal(ncalls, 1);
    assert_int_equal(p->backoff_ms, PROBE_BACKOFF_MIN_MS);
    on_timer(-1, 0, p); /* the retry timer */
    assert_int_equal(ncalls, 2);
    answer(200, "\"abc\"");
    answer(503, NULL);
    assert_false(got);
    assert_int_equal(p->backoff_ms, 2 * PROBE_BACKOFF_MIN_MS);
    on_timer(-1, 0, p);
    assert_string_equal(calls[ncalls - 1].hdrs, ""); /* from the first step again */
    stop(p, base);
}

int
main(void)
{
    (void)log_set_level("none");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rgw16),
        cmocka_unit_test(test_aws),
        cmocka_unit_test(test_ignores_conditions),
        cmocka_unit_test(test_multipart_unavailable),
        cmocka_unit_test(test_no_answer_retries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
