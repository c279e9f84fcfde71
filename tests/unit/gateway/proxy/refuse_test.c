/*
 * tests/unit/gateway/proxy/refuse_test.c: the one refusal path.  A refusal
 * gives its counter, its audit record in a real LMDB store (in a temporary
 * directory) and its exact S3 error document and status, and the document
 * goes out only once the record has committed (G7: the stubs check the
 * store's commit count at the moment of the answer); a refusal whose record
 * cannot be queued gives 503 SlowDown instead.  refuse.c is included
 * (STYLE R12) and the gateway/http/http.h and access.h functions it calls are
 * stubbed (tests/unit/gateway/refuse_harness.h), so the test links without
 * the server.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gateway/proxy/refuse.c"
#include "tests/unit/gateway/refuse_harness.h"
#include "tests/unit/testlib.h"

#define XML_DECL "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

/* ---- a store in a temporary directory ---- */

struct env {
    char *dir;
    struct store *st;
    struct gw_s3req s3;
};

static uint64_t g_coalesce_ms; /* the store's audit_coalesce_ms (0: the default, off) */

static struct store *
open_store(const char *dir, bool read_only)
{
    struct store_opts o;
    char errbuf[256];
    struct store *st = NULL;
    store_opts_init(&o);
    o.audit_coalesce_ms = g_coalesce_ms;
    o.data_dir = dir;
    o.read_only = read_only;
    assert_int_equal(store_open(&o, &st, errbuf, sizeof(errbuf)), 0);
    return st;
}

static int
setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    e->dir = tl_dir_new("refuse");
    e->st = open_store(e->dir, false);
    rf_bind(e->st);
    e->s3.name = "PutObject";
    (void)snprintf(e->s3.bucket, sizeof(e->s3.bucket), "data");
    (void)snprintf(e->s3.key, sizeof(e->s3.key), "a&b");
    gw_metrics_reset();
    gw_metrics_locks_free(); /* the per-lock series start empty too */
    *state = e;
    return 0;
}

/* As setup, with coalescing on (a minute's window). */
static int
setup_coalesce(void **state)
{
    g_coalesce_ms = 60000;
    return setup(state);
}

static int
teardown(void **state)
{
    g_coalesce_ms = 0;
    struct env *e = *state;
    store_close(e->st);
    rf_bind(NULL);
    tl_dir_free(e->dir);
    e->dir = NULL;
    free(e);
    return 0;
}

/* The audit records committed so far (the store is closed and reopened read-only). */
struct seen {
    int n;
    struct store_audit_rec rec; /* the last one; strings copied below */
    char lock[64], principal[64], client[64], method[16], bucket[64], key[64], op[64], id[64],
        ua[64], trace[64];
};

static int
on_rec(void *arg, const struct store_audit_rec *r)
{
    struct seen *s = arg;
    s->n++;
    s->rec = *r;
    (void)snprintf(s->lock, sizeof(s->lock), "%s", r->lock);
    (void)snprintf(s->principal, sizeof(s->principal), "%s", r->principal);
    (void)snprintf(s->client, sizeof(s->client), "%s", r->client);
    (void)snprintf(s->method, sizeof(s->method), "%s", r->method);
    (void)snprintf(s->bucket, sizeof(s->bucket), "%s", r->bucket);
    (void)snprintf(s->key, sizeof(s->key), "%s", r->key);
    (void)snprintf(s->op, sizeof(s->op), "%s", r->operation);
    (void)snprintf(s->id, sizeof(s->id), "%s", r->request_id);
    (void)snprintf(s->ua, sizeof(s->ua), "%s", r->user_agent);
    (void)snprintf(s->trace, sizeof(s->trace), "%s", r->trace_id != NULL ? r->trace_id : "");
    return 0;
}

/* Closes e's store (committing what was queued) and opens it again; read-only: appends fail. */
static void
reopen(struct env *e, bool read_only)
{
    store_close(e->st);
    e->st = open_store(e->dir, read_only);
    rf_bind(read_only ? NULL : e->st);
}

/* Into s: the records committed so far (the store is reopened, writable again after). */
static void
records(struct env *e, struct seen *s)
{
    reopen(e, true);
    memset(s, 0, sizeof(*s));
    struct store_audit_query q = {.limit = 100};
    struct store_audit_cursor next;
    assert_int_equal(store_audit_query(e->st, &q, on_rec, s, &next), 0);
    reopen(e, false);
}

/* As records, and there is exactly one, of this kind. */
static void
one_record(struct env *e, struct seen *s, int kind)
{
    records(e, s);
    assert_int_equal(s->n, 1);
    assert_int_equal(s->rec.kind, kind);
}

/* Runs the store's callbacks until req is answered or cut (bounded). */
static void
settle(struct env *e, const struct gw_req *req)
{
    for (int i = 0; i < 20000 && req->calls + req->aborts == 0; i++) {
        if (store_dispatch_completions(e->st) == 0) {
            (void)usleep(500);
        }
    }
}

/* Runs the store's callbacks until its queue is empty (the record committed). */
static void
settle_all(struct env *e)
{
    for (int i = 0; i < 200; i++) {
        if (store_dispatch_completions(e->st) == 0) {
            (void)usleep(500);
        }
    }
}

/* G7: gw_refuse holds req (its ops replaced) until the record commits, then answers it once. */
static void
refuse_after_commit(struct env *e, struct gw_req *req, const char *principal,
                    const struct gw_refusal *r)
{
    gw_refuse(e->st, req, &e->s3, principal, r);
    assert_int_equal(req->calls, 0);
    assert_non_null(req->ops);
    settle(e, req);
    assert_int_equal(req->calls, 1);
    assert_int_equal(req->aborts, 0);
    assert_int_equal(req->committed_at_end, 1);
}

/* A fence refusal of lock: 409 StaleFencingToken "stale", audited and counted as one. */
static struct gw_refusal
stale_refusal(const char *lock, uint64_t token, uint64_t current)
{
    return (struct gw_refusal){
        .status = 409,
        .code = "StaleFencingToken",
        .message = "stale",
        .audit = STORE_AUDIT_STALE,
        .count = GW_REFUSAL_FENCE,
        .tokens = true,
        .lock = lock,
        .token = token,
        .current = current,
    };
}

/* ---- tests ---- */

/* A fence refusal: counted once, recorded with every field, the exact 409 document. */
static void
test_fence_refusal(void **state)
{
    struct env *e = *state;
    struct gw_req req = {
        .path = "/data/a&b", .id = "req-1", .trace = "4bf92f3577b34da6a3ce929d0e0e4736"};
    const struct gw_refusal r = stale_refusal("jobs", 5, 7);
    refuse_after_commit(e, &req, "alice", &r);
    /* the access log hears of the code, lock and token */
    assert_string_equal(req.noted_code, "StaleFencingToken");
    assert_string_equal(req.noted_lock, "jobs");
    assert_int_equal(req.noted_token, 5);
    assert_int_equal(req.status, 409);
    assert_string_equal(req.ctype, "application/xml");
    assert_string_equal(req.body, XML_DECL "<Error><Code>StaleFencingToken</Code>"
                                           "<Message>stale</Message><Resource>/data/a&amp;b"
                                           "</Resource><RequestId>req-1</RequestId><Lock>jobs"
                                           "</Lock><Token>5</Token><CurrentToken>7</CurrentToken>"
                                           "</Error>");
    assert_int_equal(gw_metrics_fence_refusals(), 1);
    assert_int_equal(gw_metrics.classify_refusals, 0);
    assert_int_equal(gw_metrics.audit_failures, 0);

    struct seen s;
    one_record(e, &s, STORE_AUDIT_STALE);
    assert_int_equal(s.rec.token, 5);
    assert_int_equal(s.rec.current, 7);
    assert_string_equal(s.lock, "jobs");
    assert_string_equal(s.principal, "alice");
    assert_string_equal(s.client, "192.0.2.7:51234");
    assert_string_equal(s.method, "PUT");
    assert_string_equal(s.bucket, "data");
    assert_string_equal(s.key, "a&b");
    assert_string_equal(s.op, "PutObject");
    assert_string_equal(s.id, "req-1");
    assert_string_equal(s.ua, "test-agent/1");
    assert_string_equal(s.trace, "4bf92f3577b34da6a3ce929d0e0e4736"); /* the trace id too */
}

/* A G9 refusal: its own counter, lock "" in the record, no fencing extras. */
static void
test_classify_refusal(void **state)
{
    struct env *e = *state;
    struct gw_req req = {.path = "/data/k", .id = "req-2"};
    const struct gw_refusal r = {
        .status = 400,
        .code = "InvalidRequest",
        .message = "not classified",
        .audit = STORE_AUDIT_REFUSED,
        .count = GW_REFUSAL_CLASSIFY,
    };
    refuse_after_commit(e, &req, "", &r);
    assert_int_equal(req.status, 400);
    assert_string_equal(req.body, XML_DECL "<Error><Code>InvalidRequest</Code>"
                                           "<Message>not classified</Message><Resource>/data/k"
                                           "</Resource><RequestId>req-2</RequestId></Error>");
    assert_int_equal(gw_metrics.classify_refusals, 1);
    assert_int_equal(gw_metrics_fence_refusals(), 0);
    struct seen s;
    one_record(e, &s, STORE_AUDIT_REFUSED);
    assert_string_equal(s.lock, "");
    assert_int_equal(s.rec.token, 0);
}

/* G7: a refusal whose record cannot be queued is answered 503 SlowDown, counted. */
static void
test_audit_failure_is_503(void **state)
{
    struct env *e = *state;
    reopen(e, true); /* appends fail: ERR_CLOSED */
    struct gw_req req = {.path = "/data/a", .id = "req-3"};
    const struct gw_refusal r = {
        .status = 409,
        .code = "FencingTokenNotGranted",
        .message = "never granted",
        .audit = STORE_AUDIT_NOT_GRANTED,
        .count = GW_REFUSAL_FENCE,
        .tokens = true,
        .lock = "jobs",
        .token = 9,
    };
    gw_refuse(e->st, &req, &e->s3, "alice", &r);
    assert_int_equal(req.calls, 1); /* at once: there is nothing to wait for */
    assert_int_equal(req.status, 503);
    assert_string_equal(req.body,
                        XML_DECL "<Error><Code>SlowDown</Code><Message>This write was refused, "
                                 "but its audit record could not be stored; nothing was "
                                 "forwarded. Please reduce your request rate.</Message>"
                                 "<Resource>/data/a</Resource><RequestId>req-3</RequestId>"
                                 "</Error>");
    assert_int_equal(gw_metrics.audit_failures, 1);
    assert_int_equal(gw_metrics_fence_refusals(), 1);
    /* too late to answer: cut at once, the failure counted */
    struct gw_req late = {.path = "/data/a", .id = "req-4"};
    gw_refuse_cut(e->st, &late, &e->s3, "alice", &r);
    assert_int_equal(late.calls, 0);
    assert_int_equal(late.aborts, 1);
    assert_int_equal(gw_metrics.audit_failures, 2);
    reopen(e, false);
}

/* A refusal too late to answer: the connection is cut once the record has committed. */
static void
test_cut_after_commit(void **state)
{
    struct env *e = *state;
    struct gw_req req = {.path = "/data/a", .id = "req-5"};
    struct gw_refusal r = stale_refusal("jobs", 3, 4);
    r.message = "cut";
    r.audit = STORE_AUDIT_CUT;
    r.count = GW_REFUSAL_UNCOUNTED;
    gw_refuse_cut(e->st, &req, &e->s3, "alice", &r);
    assert_int_equal(req.aborts, 0);
    settle(e, &req);
    assert_int_equal(req.calls, 0);
    assert_int_equal(req.aborts, 1);
    assert_int_equal(req.committed_at_end, 1);
    struct seen s;
    one_record(e, &s, STORE_AUDIT_CUT);
}

/* The client leaves while its refusal waits: the record still commits, nothing is sent. */
static void
test_client_gone_while_waiting(void **state)
{
    struct env *e = *state;
    struct gw_req req = {.path = "/data/a", .id = "req-6"};
    char lock[8] = "jobs"; /* the caller's copy dies with the caller */
    const struct gw_refusal r = stale_refusal(lock, 1, 2);
    gw_refuse(e->st, &req, &e->s3, "alice", &r);
    memset(lock, 'x', sizeof(lock) - 1);
    assert_non_null(req.ops);
    req.ops->on_abort(&req, ERR_CLOSED, req.ops_arg); /* the server frees req after this */
    req.path = NULL;                                  /* a use after the abort would crash */
    settle_all(e);
    assert_int_equal(req.calls + req.aborts, 0);
    struct seen s;
    records(e, &s);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.lock, "jobs");
}

/* Neither counted nor audited (an authentication failure): the document only. */
/* store_audit_each_fn: copies the found record's id and count */
static int
on_found(void *arg, const struct store_audit_rec *r)
{
    struct seen *s = arg;
    s->n++;
    s->rec.count = r->count;
    (void)snprintf(s->id, sizeof(s->id), "%s", r->request_id);
    return 0;
}

/*
 * A flood of identical refusals coalesces into one record, and each repeat
 * answers (header id, <RequestId>, log) with "<first's id>.<n>", only once
 * the count that includes it committed (G7), and that id finds the record.
 */
static void
test_repeat_answers_run_id(void **state)
{
    struct env *e = *state;
    static const char *const ids[] = {"req-a", "req-b", "req-c"};
    static const char *const want[] = {"req-a", "req-a.2", "req-a.3"};
    for (size_t i = 0; i < 3; i++) {
        struct gw_req req = {.path = "/data/a&b", .id = ids[i]};
        const struct gw_refusal r = stale_refusal("jobs", 5, 7);
        gw_refuse(e->st, &req, &e->s3, "alice", &r);
        assert_int_equal(req.calls, 0);
        settle(e, &req);
        assert_int_equal(req.calls, 1);
        assert_int_equal(req.status, 409);
        assert_int_equal(req.committed_at_end, i + 1); /* its count had committed */
        assert_string_equal(gw_req_id(&req), want[i]);
        char tag[64];
        (void)snprintf(tag, sizeof(tag), "<RequestId>%s</RequestId>", want[i]);
        assert_non_null(strstr(req.body, tag));
    }
    /* another token is another refusal: a record of its own, its own id */
    struct gw_req other = {.path = "/data/a&b", .id = "req-d"};
    const struct gw_refusal r4 = stale_refusal("jobs", 4, 7);
    gw_refuse(e->st, &other, &e->s3, "alice", &r4);
    settle(e, &other);
    assert_string_equal(gw_req_id(&other), "req-d");

    struct seen s;
    records(e, &s);
    assert_int_equal(s.n, 2);
    for (size_t i = 0; i < 3; i++) {
        memset(&s, 0, sizeof(s));
        assert_int_equal(store_audit_find(e->st, want[i], on_found, &s, NULL), 0);
        assert_string_equal(s.id, "req-a");
        assert_int_equal(s.rec.count, 3);
    }
    assert_int_equal(store_audit_find(e->st, "req-a.4", on_found, &s, NULL), ERR_NOTFOUND);
}

static void
test_plain_refusal(void **state)
{
    struct env *e = *state;
    struct gw_req req = {.path = "/data/k", .id = "r"};
    const struct gw_refusal r = {.status = 403, .code = "SignatureDoesNotMatch", .message = "no"};
    gw_refuse(e->st, &req, NULL, NULL, &r);
    assert_int_equal(req.status, 403);
    assert_string_equal(req.body, XML_DECL "<Error><Code>SignatureDoesNotMatch</Code>"
                                           "<Message>no</Message><Resource>/data/k</Resource>"
                                           "<RequestId>r</RequestId></Error>");
    assert_int_equal(gw_metrics_fence_refusals() + gw_metrics.classify_refusals, 0);
    struct seen s;
    records(e, &s);
    assert_int_equal(s.n, 0);
}

static void
test_reply_and_err(void **state)
{
    (void)state;
    struct gw_req req = {.path = "/data/a&b", .id = "req-1"};
    gw_refuse_reply(&req, 404, "NoSuchKey", "gone");
    assert_int_equal(req.calls, 1);
    assert_int_equal(req.status, 404);
    assert_string_equal(req.ctype, "application/xml");
    assert_string_equal(req.body, XML_DECL "<Error><Code>NoSuchKey</Code><Message>gone</Message>"
                                           "<Resource>/data/a&amp;b</Resource>"
                                           "<RequestId>req-1</RequestId></Error>");
    struct gw_req req2 = {.path = "/b", .id = "r"};
    gw_refuse_err(&req2, ERR_TIMEOUT, NULL);
    assert_int_equal(req2.status, 504);
    assert_string_equal(req2.body, XML_DECL "<Error><Code>GatewayTimeout</Code>"
                                            "<Message>timed out</Message><Resource>/b</Resource>"
                                            "<RequestId>r</RequestId></Error>");
    struct gw_req req3 = {.path = "/b", .id = "r"};
    gw_refuse_err(&req3, ERR_UPSTREAM, "upstream unreachable");
    assert_int_equal(req3.status, 502);
    assert_non_null(strstr(req3.body, "<Code>BadGateway</Code>"));
    assert_non_null(strstr(req3.body, "<Message>upstream unreachable</Message>"));
}

/* A document too long to build: the bare one still goes out, with the status. */
static void
test_reply_fallback(void **state)
{
    (void)state;
    static char longpath[GW_S3ERR_MAX_BODY + 100];
    memset(longpath, 'a', sizeof(longpath) - 1);
    longpath[0] = '/';
    struct gw_req req = {.path = longpath, .id = "r"};
    gw_refuse_reply(&req, 400, "KeyTooLongError", "long");
    assert_int_equal(req.calls, 1);
    assert_int_equal(req.status, 400);
    assert_string_equal(req.body, XML_DECL "<Error><Code>KeyTooLongError</Code>"
                                           "<Message></Message></Error>");
    struct gw_req req2 = {.path = longpath, .id = "r"};
    gw_refuse_reply(&req2, 400, "Bad<Code>", "long");
    assert_string_equal(req2.body, XML_DECL "<Error><Code>InternalError</Code>"
                                            "<Message></Message></Error>");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fence_refusal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_classify_refusal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_audit_failure_is_503, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cut_after_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_gone_while_waiting, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plain_refusal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_repeat_answers_run_id, setup_coalesce, teardown),
        cmocka_unit_test(test_reply_and_err),
        cmocka_unit_test(test_reply_fallback),
    };
    return cmocka_run_group_tests_name("refuse", tests, NULL, NULL);
}
