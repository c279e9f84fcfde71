/*
 * tests/unit/gateway/proxy/pipeline_test.c: the request pipeline end to end
 * in one process (router, authentication, classifier, fence, proxy, store,
 * `dir` election; pipeline_harness.h), against a fake upstream that records
 * what it receives.  Each case asserts the exact status and S3 <Code>,
 * whether the upstream was reached (and with what), the audit record and
 * the counters, all through HTTP.
 *
 * The configuration (pipeline_harness.h): principals "worker" (locks
 * ["orders"]) and "other" (locks ["billing"]), both limited to bucket
 * "data"; one fence rule, data/orders/ under lock "orders", token required.
 */
#include "tests/unit/gateway/pipeline_harness.h"

static char lid[128]; /* the lease id of the last pl_acquire */

static const char delete_doc[] = "<Delete><Object><Key>orders/a</Key></Object>"
                                 "<Object><Key>orders/b</Key></Object></Delete>";

/* "X-Fencing-Token: t\r\n" (a static buffer: for the next pl_ask). */
static const char *
token_hdr(uint64_t t)
{
    static char h[64];
    (void)snprintf(h, sizeof(h), "X-Fencing-Token: %llu\r\n", (unsigned long long)t);
    return h;
}

/* The audit record of the last request is of kind, under lock. */
static void
expect_audited(const char *kind, const char *lock)
{
    char got_lock[160];
    const char *got = pl_audit_kind(pl_last.request_id, got_lock, sizeof(got_lock), NULL);
    if (strcmp(got, kind) != 0 || strcmp(got_lock, lock) != 0) {
        fail_msg("%s (request %s) audited as <%s> lock <%s>; wanted <%s> lock <%s>", pl_last.what,
                 pl_last.request_id, got, got_lock, kind, lock);
    }
}

/* A PUT of data/orders/x with "X-Fencing-Token: token" as the worker. */
static int
put_fenced(uint64_t token)
{
    const char *h = token_hdr(token);
    return pl_ask(PL_WORKER, "PUT", "/data/orders/x", h, "hello");
}

/* ---- routing ---- */

/* The gateway's own endpoints answer without the upstream and without a signature. */
static void
test_own_endpoints(void **state)
{
    (void)state;
    assert_int_equal(pl_ask(PL_ANONYMOUS, "GET", "/healthz", NULL, ""), 200);
    assert_string_equal(buf_cstr(&pl_last.body), "ok\n");
    assert_false(pl_last.reached);
    assert_int_equal(pl_ask(PL_ANONYMOUS, "GET", "/readyz", NULL, ""), 200);
    assert_string_equal(buf_cstr(&pl_last.body), "ready\n");
    uint64_t requests = pl_metric("fencegate_requests_received_total");
    assert_int_equal(pl_ask(PL_ANONYMOUS, "GET", "/metrics", NULL, ""), 200);
    assert_non_null(
        strstr(buf_cstr(&pl_last.body), "\n# TYPE fencegate_fence_refusals_total counter\n"));
    assert_false(pl_last.reached);
    assert_int_equal(pl_metric("fencegate_requests_received_total"),
                     requests + 2); /* that one and this one */
    assert_int_equal(pl_up.requests, 0);
}

/* An S3 read is forwarded, re-signed with the gateway's own upstream credentials. */
static void
test_read_forwarded_resigned(void **state)
{
    (void)state;
    uint64_t proxied = pl_metric("fencegate_requests_forwarded_total");
    pl_up.resp_len = 7;
    assert_int_equal(pl_ask(PL_WORKER, "GET", "/data/orders/x?versionId=1", NULL, ""), 200);
    pl_expect(200, NULL, true);
    assert_int_equal(pl_last.body.len, 7);
    assert_memory_equal(pl_up.head, "GET /data/orders/x?versionId=1 HTTP/1.1\r\n", 41);
    assert_true(pl_upstream_has("Authorization: AWS4-HMAC-SHA256 Credential=" PL_UP_AK "/"));
    assert_false(has_ci(pl_up.head, PL_WORKER));
    assert_int_equal(pl_metric("fencegate_requests_forwarded_total"), proxied + 1);
}

/* A lock granted through the JSON API; its token then opens the fence. */
static void
test_api_grant_then_write(void **state)
{
    (void)state;
    uint64_t t = pl_acquire("orders", "w1", lid, sizeof(lid));
    assert_false(pl_last.reached);
    assert_int_equal(put_fenced(t), 200);
    pl_expect(200, NULL, true);
    char want[64];
    (void)snprintf(want, sizeof(want), "%llu", (unsigned long long)t);
    assert_string_equal(pl_last.current, want);
    assert_memory_equal(pl_up.head, "PUT /data/orders/x HTTP/1.1\r\n", 29);
    assert_true(pl_upstream_has("Authorization: AWS4-HMAC-SHA256 Credential=" PL_UP_AK "/"));
    assert_false(has_ci(pl_up.head, "x-fencing-token"));
    assert_false(has_ci(pl_up.head, "x-fencing-lock"));
    (void)snprintf(want, sizeof(want), "x-amz-meta-fencing-epoch: %llu", (unsigned long long)t);
    assert_true(pl_upstream_has(want));
    assert_int_equal(pl_up.cl, 5);
    assert_true(pl_upstream_has("Content-Length: 5"));
    assert_int_equal(pl_fence_token("orders"), t); /* the fence table has it */
}

/* ---- authentication ---- */

static void
test_auth_good_signature_passes(void **state)
{
    (void)state;
    uint64_t writes = pl_metric("fencegate_writes_forwarded_total");
    assert_int_equal(pl_ask(PL_WORKER, "PUT", "/data/free/k", NULL, "abc"), 200);
    pl_expect(200, NULL, true);
    assert_memory_equal(pl_up.head, "PUT /data/free/k HTTP/1.1\r\n", 27);
    assert_true(pl_upstream_has("Authorization: AWS4-HMAC-SHA256 Credential=" PL_UP_AK "/"));
    assert_int_equal(pl_up.cl, 3);
    assert_int_equal(pl_metric("fencegate_writes_forwarded_total"), writes + 1);
}

static void
test_auth_wrong_signature_refused(void **state)
{
    (void)state;
    uint64_t r4xx = pl_metric_where("fencegate_requests_total", "code=\"4");
    pl_ask_f(PL_WORKER, PL_BAD_SIG, "GET", "/data/free/k", NULL, "");
    pl_expect(403, "SignatureDoesNotMatch", false);
    pl_ask_f(PL_WORKER, PL_BAD_SIG, "PUT", "/data/free/k", NULL, "abc");
    pl_expect(403, "SignatureDoesNotMatch", false);
    /* the JSON API is authenticated like S3 */
    pl_ask_f(PL_WORKER, PL_BAD_SIG, "POST", "/_fencegate/v1/locks/orders/acquire", NULL,
             "{\"holder\":\"w1\"}");
    pl_expect(403, "SignatureDoesNotMatch", false);
    assert_int_equal(pl_up.requests, 0);
    assert_int_equal(pl_metric_where("fencegate_requests_total", "code=\"4"), r4xx + 3);
}

/* A body that does not match its signed hash never completes upstream (body.c holds the
 * last byte until the hash matches). */
static void
test_auth_tampered_body_never_completes(void **state)
{
    (void)state;
    pl_ask_f(PL_WORKER, PL_BAD_BODY, "PUT", "/data/free/k", NULL, "hello, world");
    pl_expect(400, "XAmzContentSHA256Mismatch", false);
    pl_ask_f(PL_WORKER, PL_BAD_BODY, "POST", "/data?delete", NULL, delete_doc);
    pl_expect(400, "XAmzContentSHA256Mismatch", false);
    assert_int_equal(pl_up.requests, 0);
}

static void
test_auth_unknown_key_or_none_refused(void **state)
{
    (void)state;
    pl_ask("AKIDNOBODY", "GET", "/data/free/k", NULL, "");
    pl_expect(403, "InvalidAccessKeyId", false);
    pl_ask(PL_ANONYMOUS, "GET", "/data/free/k", NULL, "");
    pl_expect(403, "AccessDenied", false);
    pl_ask(PL_ANONYMOUS, "GET", "/_fencegate/v1/locks", NULL, "");
    pl_expect(403, "AccessDenied", false);
    assert_int_equal(pl_up.requests, 0);
}

/* A principal writes only under its own locks, and only in its buckets. */
static void
test_principal_bounds(void **state)
{
    (void)state;
    uint64_t t = pl_acquire("orders", "w1", lid, sizeof(lid));
    uint64_t refusals = pl_metric("fencegate_classify_refusals_total");
    const char *h = token_hdr(t);
    pl_ask(PL_OTHER, "PUT", "/data/orders/x", h, "zz");
    pl_expect(403, "AccessDenied", false);
    expect_audited("refused", "orders");
    pl_ask(PL_OTHER, "PUT", "/data/orders/x", NULL, "zz"); /* without a token too */
    pl_expect(403, "AccessDenied", false);
    expect_audited("refused", "orders");
    assert_int_equal(pl_metric("fencegate_classify_refusals_total"), refusals + 2);
    pl_ask(PL_OTHER, "PUT", "/elsewhere/k", NULL, "zz");
    pl_expect(403, "AccessDenied", false);
    pl_ask(PL_OTHER, "GET", "/elsewhere/k", NULL, "");
    pl_expect(403, "AccessDenied", false);
    /* the lock API too: "other" may not take "orders" */
    pl_ask(PL_OTHER, "POST", "/_fencegate/v1/locks/orders/acquire",
           "Content-Type: application/json\r\n", "{\"holder\":\"o\"}");
    assert_int_equal(pl_last.status, 403);
    assert_int_equal(pl_up.requests, 0);
    /* and outside any rule it writes as usual */
    pl_ask(PL_OTHER, "PUT", "/data/free/k", NULL, "zz");
    pl_expect(200, NULL, true);
}

/* ---- fencing decisions ---- */

/* Tokens t1 < t2 granted in turn: t1's writes pass until t2 writes, then are stale. */
static void
test_fence_stale_token(void **state)
{
    (void)state;
    uint64_t t1 = pl_acquire("orders", "w1", lid, sizeof(lid));
    assert_int_equal(put_fenced(t1), 200);
    pl_expect(200, NULL, true);
    assert_int_equal(pl_fence_token("orders"), t1);
    pl_release("orders", t1, lid);
    uint64_t t2 = pl_acquire("orders", "w2", lid, sizeof(lid));
    assert_true(t2 > t1);
    assert_int_equal(put_fenced(t2), 200); /* the higher token advances the fence */
    pl_expect(200, NULL, true);
    assert_int_equal(pl_fence_token("orders"), t2);
    uint64_t rejections = pl_metric("fencegate_fence_refusals_total");
    int before = pl_up.requests;
    put_fenced(t1);
    pl_expect(409, "StaleFencingToken", false);
    char cur[32];
    pl_xml_value(buf_cstr(&pl_last.body), "CurrentToken", cur, sizeof(cur));
    assert_int_equal(strtoull(cur, NULL, 10), t2);
    uint64_t token = 0;
    assert_string_equal(pl_audit_kind(pl_last.request_id, NULL, 0, &token), "stale");
    assert_int_equal(token, t1);
    assert_int_equal(pl_metric("fencegate_fence_refusals_total"), rejections + 1);
    assert_int_equal(pl_up.requests, before);
    assert_int_equal(pl_fence_token("orders"), t2);
    /* the current token still passes */
    assert_int_equal(put_fenced(t2), 200);
}

/* A token above every grant is refused, audited, never forwarded. */
static void
test_fence_token_not_granted(void **state)
{
    (void)state;
    uint64_t t = pl_acquire("orders", "w1", lid, sizeof(lid));
    uint64_t rejections = pl_metric("fencegate_fence_refusals_total");
    put_fenced(t + 5);
    pl_expect(409, "FencingTokenNotGranted", false);
    expect_audited("not_granted", "orders");
    assert_int_equal(pl_metric("fencegate_fence_refusals_total"), rejections + 1);
}

/* A fenced write without a token: 428 (the rule requires one), audited. */
static void
test_fence_missing_token(void **state)
{
    (void)state;
    uint64_t rejections = pl_metric("fencegate_fence_refusals_total");
    pl_ask(PL_WORKER, "PUT", "/data/orders/x", NULL, "hello");
    pl_expect(428, "MissingFencingToken", false);
    expect_audited("missing_token", "orders");
    pl_ask(PL_WORKER, "DELETE", "/data/orders/x", NULL, "");
    pl_expect(428, "MissingFencingToken", false);
    assert_int_equal(pl_metric("fencegate_fence_refusals_total"), rejections + 2);
    assert_int_equal(pl_up.requests, 0);
}

/* With fencing.allow_unfenced_writes false a tokenless write outside every rule is refused too. */
static void
test_fence_unfenced_writes_refused(void **state)
{
    (void)state;
    pl_stop();
    pl_start(",\"allow_unfenced_writes\":false");
    pl_ask(PL_WORKER, "PUT", "/data/free/k", NULL, "abc");
    pl_expect(428, "MissingFencingToken", false);
    pl_ask(PL_WORKER, "GET", "/data/free/k", NULL, ""); /* reads still pass */
    pl_expect(200, NULL, true);
}

/* ---- refusals of the classifier (fail closed) ---- */

/* One refused request: status, code, audited "refused", counted, never forwarded. */
static void
refused(const char *method, const char *target, const char *headers, const char *body, int status,
        const char *code)
{
    uint64_t refusals = pl_metric("fencegate_classify_refusals_total");
    int before = pl_up.requests;
    pl_ask(PL_WORKER, method, target, headers, body);
    pl_expect(status, code, false);
    expect_audited("refused", "");
    assert_int_equal(pl_metric("fencegate_classify_refusals_total"), refusals + 1);
    assert_int_equal(pl_up.requests, before);
}

static void
test_classifier_refusals(void **state)
{
    (void)state;
    refused("POST", "/data?delete&uploads", NULL, "<Delete/>", 400, "InvalidRequest");
    refused("PUT", "/data/free/k?tagging&acl", NULL, "<Tagging/>", 400, "InvalidRequest");
    refused("PUT", "/data?policy&uploads", NULL, "{}", 400, "InvalidRequest");
    refused("PATCH", "/data/free/k", NULL, "x", 405, "MethodNotAllowed");
    refused("COPY", "/data/free/k", "Destination: /data/orders/x\r\n", "", 405, "MethodNotAllowed");
    refused("POST", "/data/free/k", "Content-Type: multipart/form-data; boundary=zz\r\n",
            "--zz--\r\n", 501, "NotImplemented");
    refused("POST", "/data", "Content-Type: multipart/form-data; boundary=zz\r\n", "--zz--\r\n",
            501, "NotImplemented");
    /* a CreateMultipartUpload, but for its content type */
    refused("POST", "/data/free/k?uploads", "Content-Type: multipart/form-data; boundary=zz\r\n",
            "--zz--\r\n", 501, "NotImplemented");
    refused("PUT", "/data/free/k", "X-HTTP-Method-Override: DELETE\r\n", "x", 400,
            "InvalidRequest");
    refused("PUT", "/data/free/k?mdsearch", NULL, "x", 400, "InvalidArgument");
    refused("PUT", "/data?policy", NULL, "{}", 403, "AccessDenied"); /* a bucket write */
    refused("DELETE", "/data", NULL, "", 403, "AccessDenied");
}

/* ---- DeleteObjects ---- */

static int
delete_objects(uint64_t token)
{
    const char *h = token_hdr(token);
    return pl_ask(PL_WORKER, "POST", "/data?delete", h, delete_doc);
}

static void
test_delete_objects_fenced(void **state)
{
    (void)state;
    uint64_t t1 = pl_acquire("orders", "w1", lid, sizeof(lid));
    pl_release("orders", t1, lid);
    uint64_t t2 = pl_acquire("orders", "w2", lid, sizeof(lid));
    assert_int_equal(put_fenced(t2), 200);
    uint64_t rejections = pl_metric("fencegate_fence_refusals_total");
    delete_objects(t1);
    pl_expect(409, "StaleFencingToken", false);
    expect_audited("stale", "orders");
    assert_int_equal(pl_metric("fencegate_fence_refusals_total"), rejections + 1);
    /* the current token deletes: the document goes upstream as sent */
    delete_objects(t2);
    pl_expect(200, NULL, true);
    assert_memory_equal(pl_up.head, "POST /data?delete HTTP/1.1\r\n", 28);
    assert_int_equal(pl_up.cl, strlen(delete_doc));
    assert_false(has_ci(pl_up.head, "x-fencing-token"));
    /* a key outside the principal's locks refuses the whole request */
    pl_ask(PL_OTHER, "POST", "/data?delete", token_hdr(1),
           "<Delete><Object><Key>free/a</Key></Object><Object><Key>orders/b</Key></Object>"
           "</Delete>");
    pl_expect(403, "AccessDenied", false);
    expect_audited("refused", "orders");
}

/* ---- multipart uploads under epochs (gateway/proxy/upload.c) ---- */

static const char initiated[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<InitiateMultipartUploadResult "
    "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>data</Bucket><Key>orders/big</Key>"
    "<UploadId>u1</UploadId></InitiateMultipartUploadResult>";

/* Under lock orders: t1 creates upload u1 (the token on CreateMultipartUpload only) and
 * sends a tokenless part, claimed with t1; then t2 takes the lock.  Returns t1. */
static uint64_t
upload_then_advance(uint64_t *t2)
{
    uint64_t t1 = pl_acquire("orders", "w1", lid, sizeof(lid));
    const char *h = token_hdr(t1);
    pl_up.xml = initiated;
    pl_ask(PL_WORKER, "POST", "/data/orders/big?uploads", h, "");
    pl_expect(200, NULL, true);
    pl_up.xml = NULL;
    assert_memory_equal(pl_up.head, "POST /data/orders/big?uploads HTTP/1.1\r\n", 40);
    pl_ask(PL_WORKER, "PUT", "/data/orders/big?partNumber=1&uploadId=u1", NULL, "part1");
    pl_expect(200, NULL, true);
    pl_release("orders", t1, lid);
    *t2 = pl_acquire("orders", "w2", lid, sizeof(lid)); /* the fence learns t2 at the grant */
    return t1;
}

/* A zombie's upload stays its epoch's: its parts are stale, with or without a token. */
static void
test_upload_parts_of_older_epoch_refused(void **state)
{
    (void)state;
    pl_stop();
    pl_start(",\"abort_stale_uploads\":false");
    uint64_t t2;
    uint64_t t1 = upload_then_advance(&t2);
    assert_int_equal(put_fenced(t2), 200);
    uint64_t rejections = pl_metric("fencegate_fence_refusals_total");
    pl_ask(PL_WORKER, "PUT", "/data/orders/big?partNumber=2&uploadId=u1", NULL, "part2");
    pl_expect(409, "StaleFencingToken", false);
    uint64_t token = 0;
    assert_string_equal(pl_audit_kind(pl_last.request_id, NULL, 0, &token), "stale");
    assert_int_equal(token, t1);
    /* the new leader may not complete it either */
    const char *h = token_hdr(t2);
    pl_ask(PL_WORKER, "POST", "/data/orders/big?uploadId=u1", h,
           "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>e</ETag></Part>"
           "</CompleteMultipartUpload>");
    pl_expect(409, "StaleFencingToken", false);
    assert_true(pl_metric("fencegate_fence_refusals_total") >= rejections + 2);
}

/* When the lock advances, the older epoch's upload is aborted at the upstream. */
static void
test_upload_of_older_epoch_aborted(void **state)
{
    (void)state;
    uint64_t t2;
    (void)upload_then_advance(&t2);
    static const char abort_line[] = "DELETE /data/orders/big?uploadId=u1 HTTP/1.1\r\n";
    uint64_t end = now_ms() + 3000;
    while (strncmp(pl_up.head, abort_line, strlen(abort_line)) != 0 && now_ms() < end) {
        pump_ms(NULL, 5);
    }
    assert_memory_equal(pl_up.head, abort_line, strlen(abort_line));
    assert_true(pl_upstream_has("Authorization: AWS4-HMAC-SHA256 Credential=" PL_UP_AK "/"));
    /* once the abort's answer is in (and the store has forgotten it) a tokenless part into
     * it names no epoch; until then it is still the old epoch's */
    end = now_ms() + 3000;
    for (;;) {
        pl_ask(PL_WORKER, "PUT", "/data/orders/big?partNumber=2&uploadId=u1", NULL, "part2");
        if (pl_last.status != 409 || now_ms() > end) {
            break;
        }
        pl_expect(409, "StaleFencingToken", false);
        pump_ms(NULL, 10);
    }
    pl_expect(428, "MissingFencingToken", false);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, pl_setup, pl_teardown)
        T(test_own_endpoints),
        T(test_read_forwarded_resigned),
        T(test_api_grant_then_write),
        T(test_auth_good_signature_passes),
        T(test_auth_wrong_signature_refused),
        T(test_auth_tampered_body_never_completes),
        T(test_auth_unknown_key_or_none_refused),
        T(test_principal_bounds),
        T(test_fence_stale_token),
        T(test_fence_token_not_granted),
        T(test_fence_missing_token),
        T(test_fence_unfenced_writes_refused),
        T(test_classifier_refusals),
        T(test_delete_objects_fenced),
        T(test_upload_parts_of_older_epoch_refused),
        T(test_upload_of_older_epoch_aborted),
#undef T
    };
    return cmocka_run_group_tests_name("pipeline", tests, NULL, NULL);
}
