/*
 * tests/unit/gateway/pipeline_harness.h: the whole request pipeline in one
 * process, on one event loop, without RGW.
 *
 * The real router, authentication, classifier, fence, proxy, upload table,
 * bucket probe, store (LMDB in a temporary directory) and election (the
 * `dir` backend, in the same directory) are wired as `fencegate serve` wires
 * them (gateway/cli/serve.c is #included for its open_store, open_election
 * and serve_cleanup), in front of the fake upstream of upstream_harness.h,
 * which records the head of the last request it received and answers
 * 200 (with pl_up.xml as its body when set: an S3 answer such as
 * CreateMultipartUpload's).  Requests are
 * written byte for byte by the raw client of http_harness.h; signed ones are
 * signed with AWS Signature Version 4 by gateway/s3client/s3client.h with a
 * principal's keys, as an S3 client would sign them.
 *
 * Helpers (each returns what a test asserts on):
 *   pl_start(extra)  a gateway on 127.0.0.1:0 with the configuration below,
 *                    extra members of its "fencing" section appended
 *                    (",\"allow_unfenced_writes\":false"); write-window
 *                    margins of 20 ms, so that fenced writes are judged at once
 *                    (a gateway admits none for its largest margin after start)
 *   pl_ask(...)      one request; fills pl_last (status, <Code>, request id,
 *                    body, whether the fake upstream received it)
 *   pl_metric(name)  a counter read from GET /metrics
 *   pl_audit_kind()  the audit record of pl_last's request, from the JSON API
 *   pl_acquire()     a token from the JSON election API (pl_release)
 *   pl_fence_token() a lock's token in the fence table, from the JSON API
 *
 * Include this header once, first, from a *_test.c only (it includes .c
 * files: http_harness.h's note).
 */
#ifndef TESTS_UNIT_GATEWAY_PIPELINE_HARNESS_H
#define TESTS_UNIT_GATEWAY_PIPELINE_HARNESS_H

#include "tests/unit/gateway/http_harness.h"

/* upstream_harness.h names its fixture setup/teardown as http_harness.h does,
 * and its parameters named base shadow http_harness.h's loop. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#define setup    up_fixture_setup
#define teardown up_fixture_teardown
#include "tests/unit/gateway/upstream_harness.h"
#undef setup
#undef teardown
#pragma GCC diagnostic pop

#undef LOG_MODULE
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow" /* its parameters named cfg */
#include "gateway/cli/serve.c"
#pragma GCC diagnostic pop

#include <jansson.h>
#include <stdlib.h>

#include "gateway/proxy/router.h"
#include "gateway/s3/sigv4.h"
#include "gateway/s3client/s3client.h"
#include "tests/unit/testlib.h"

/* The principals of every pipeline (access key, secret). */
#define PL_WORKER    "AKIDWORKER"
#define PL_WORKER_SK "worker-secret-0123456789abcdef"
#define PL_OTHER     "AKIDOTHER"
#define PL_OTHER_SK  "other-secret-0123456789abcdef"
#define PL_UP_AK     "AKIDUPSTREAM" /* the gateway's own upstream credentials */
#define PL_UP_SK     "upstream-secret-0123456789abcdef"
#define PL_ANONYMOUS NULL /* pl_ask's "who" for an unsigned request */
#define PL_BAD_SIG   1    /* pl_ask flag: one hex digit of the signature changed */
#define PL_BAD_BODY  2    /* pl_ask flag: the body's last byte changed after signing */

struct pl_last {
    char what[256]; /* "METHOD target" */
    int status;
    char code[64];       /* <Code> of an S3 error, "" if none */
    char request_id[96]; /* x-amz-request-id */
    char current[32];    /* X-Fencing-Current-Token, "" if none */
    struct buf body;     /* the response body, NUL-terminated */
    bool reached;        /* the fake upstream received a request meanwhile */
};

static struct serve pl;          /* the gateway, as serve.c holds it */
static struct srv pl_up;         /* the fake upstream */
static struct pl_last pl_last;   /* the last pl_ask */
static char *pl_dir;             /* the temporary directory */
static struct gw_config pl_ccfg; /* the client's view: the gateway as its S3 endpoint */

static const char pl_config_fmt[] =
    "{\"listen\":[\"127.0.0.1:0\"],\"data_dir\":\"%s/data\",\"gateway_id\":\"gw-test\","
    "\"log_level\":\"error\","
    "\"upstream\":{\"endpoint\":\"http://127.0.0.1:%u\",\"access_key\":\"" PL_UP_AK "\","
    "\"secret_key\":\"" PL_UP_SK "\",\"checksum_trailers\":\"verify\"},"
    "\"principals\":["
    "{\"name\":\"worker\",\"access_key\":\"" PL_WORKER "\",\"secret_key\":\"" PL_WORKER_SK "\","
    "\"buckets\":[\"data\"],\"locks\":[\"orders\"]},"
    "{\"name\":\"other\",\"access_key\":\"" PL_OTHER "\",\"secret_key\":\"" PL_OTHER_SK "\","
    "\"buckets\":[\"data\"],\"locks\":[\"billing\"]}],"
    "\"election\":{\"backend\":\"dir\",\"path\":\"%s/election\"},"
    "\"fences\":[{\"bucket\":\"data\",\"prefix\":\"orders/\",\"lock\":\"orders\"}],"
    "\"fencing\":{\"commit_margin_ms\":20,\"complete_margin_ms\":20%s}}";

static int pl_get(const char *target, struct resp *r);

/* Wires the gateway as gw_cmd_serve does, after its configuration is loaded. */
static void
pl_wire(void)
{
    char err[512];
    assert_int_equal(open_upstreams(&pl), 0); /* the proxy on the lean client, as configured */
    pl.s3c = gw_s3client_new(pl.up_s3, pl.cfg, err, sizeof(err));
    assert_non_null(pl.s3c);
    pl.proxy = gw_proxy_new(pl.cfg, pl.up, pl.s3c, err, sizeof(err));
    assert_non_null(pl.proxy);
    pl.kc = gw_sigv4_keycache_new();
    assert_non_null(pl.kc);
    if (open_store(&pl, err, sizeof(err)) != 0 || open_election(&pl, err, sizeof(err)) != 0 ||
        start_trailers(&pl) != 0) {
        fail_msg("%s", err);
    }
    pl.uploads = gw_upload_new(pl.store, pl.s3c, pl.cfg);
    assert_non_null(pl.uploads);
    gw_fence_set_advance_hook(pl.fence, gw_upload_on_advance, pl.uploads);
    gw_proxy_set_uploads(pl.proxy, pl.uploads);
    pl.probe = gw_bucket_probe_new(pl.s3c);
    assert_non_null(pl.probe);
    pl.router = (struct gw_router){.probe = pl.probe,
                                   .uploads = pl.uploads,
                                   .elect = pl.elect,
                                   .upstream = pl.up,
                                   .fence = pl.fence,
                                   .store = pl.store,
                                   .proxy = pl.proxy,
                                   .kc = pl.kc,
                                   .ready = true};
    pl.srv = gw_server_new(pl.base, pl.cfg, gw_router_on_request, &pl.router, err, sizeof(err));
    assert_non_null(pl.srv);
}

/* A gateway in front of a fresh fake upstream; extra: more members of "fencing". */
static void
pl_start(const char *extra)
{
    memset(&pl, 0, sizeof(pl));
    memset(&pl_last, 0, sizeof(pl_last));
    buf_init(&pl_last.body, 1 << 20);
    pl_dir = tl_dir_new("pipeline");
    pl.base = event_base_new();
    assert_non_null(pl.base);
    base = pl.base; /* http_harness.h's client runs this loop */
    srv_init(&pl_up, pl.base);
    char json[4096];
    int n = snprintf(json, sizeof(json), pl_config_fmt, pl_dir, (unsigned)pl_up.port, pl_dir,
                     extra != NULL ? extra : "");
    assert_true(n > 0 && (size_t)n < sizeof(json));
    char err[512];
    if (gw_config_load_string(json, &pl.cfg, err, sizeof(err)) != 0) {
        fail_msg("config: %s", err);
    }
    (void)log_set_level(getenv("PL_DEBUG") != NULL ? "debug" : pl.cfg->log_level);
    pl_wire();
    srv = pl.srv; /* http_harness.h's client connects here */
    static char endpoint[64];
    (void)snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%u", gw_server_port(srv, 0));
    static char region[] = "us-east-1";
    memset(&pl_ccfg, 0, sizeof(pl_ccfg));
    pl_ccfg.upstream.endpoint = endpoint;
    pl_ccfg.upstream.region = region;
    pl_ccfg.upstream.addressing = GW_ADDR_PATH;
    /* the election's self-test runs on the loop: ready once /readyz says so */
    uint64_t end = now_ms() + 5000;
    for (;;) {
        struct resp r;
        int st = pl_get("/readyz", &r);
        resp_cleanup(&r);
        if (st == 200) {
            break;
        }
        assert_true(now_ms() < end);
        pump_ms(NULL, 5);
    }
}

static void
pl_stop(void)
{
    gw_server_free(pl.srv);
    pl.srv = NULL;
    srv_cleanup(&pl_up);
    serve_cleanup(&pl); /* frees the loop and the configuration too */
    base = NULL;
    srv = NULL;
    buf_cleanup(&pl_last.body);
    tl_dir_free(pl_dir);
    pl_dir = NULL;
}

/* cmocka fixtures: the default pipeline. */
static int
pl_setup(void **state)
{
    (void)state;
    pl_start(NULL);
    return 0;
}

static int
pl_teardown(void **state)
{
    (void)state;
    pl_stop();
    return 0;
}

/* Sends raw on a new connection; the response into r (resp_cleanup it). */
static int
pl_send_raw(const char *raw, size_t len, struct resp *r)
{
    struct client cl;
    cl_open(&cl);
    cl_send(&cl, raw, len);
    (void)wait_resp(&cl, 0, strncmp(raw, "HEAD ", 5) == 0, r, 5000);
    cl_close(&cl);
    return r->status;
}

/* An unsigned GET of one of the gateway's own endpoints. */
static int
pl_get(const char *target, struct resp *r)
{
    char raw[512];
    int n = snprintf(raw, sizeof(raw), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", target);
    return pl_send_raw(raw, (size_t)n, r);
}

/* The extra headers of "Name: value\r\n..." into h (names and values in store). */
static size_t
pl_split_headers(const char *headers, char *store, size_t cap, struct gw_sigv4_header *h,
                 size_t max)
{
    size_t n = 0;
    (void)snprintf(store, cap, "%s", headers != NULL ? headers : "");
    for (char *line = store; *line != '\0' && n < max;) {
        char *end = strstr(line, "\r\n");
        assert_non_null(end);
        *end = '\0';
        char *colon = strchr(line, ':');
        assert_non_null(colon);
        *colon = '\0';
        char *v = colon + 1;
        while (*v == ' ') {
            v++;
        }
        h[n].name = line;
        h[n].value = v;
        n++;
        line = end + 2;
    }
    return n;
}

/* Signs method target (+ headers, body) as the principal ak/sk into raw. */
static void
pl_sign(const char *ak, const char *sk, const char *method, const char *target, const char *headers,
        const char *body, struct buf *raw)
{
    char akey[64], skey[64], path[1024], hstore[2048];
    (void)snprintf(akey, sizeof(akey), "%s", ak);
    (void)snprintf(skey, sizeof(skey), "%s", sk);
    pl_ccfg.upstream.access_key = akey;
    pl_ccfg.upstream.secret_key = skey;
    char err[256];
    struct gw_s3client *s = gw_s3client_new(NULL, &pl_ccfg, err, sizeof(err));
    assert_non_null(s);
    /* "/bucket/key?query" into its parts */
    (void)snprintf(path, sizeof(path), "%s", target + 1);
    char *query = strchr(path, '?');
    if (query != NULL) {
        *query++ = '\0';
    }
    char *key = strchr(path, '/');
    if (key != NULL) {
        *key++ = '\0';
    }
    char hash[GW_SIGV4_HEX_LEN + 1];
    assert_int_equal(gw_sigv4_sha256_hex(body, strlen(body), hash), 0);
    struct gw_sigv4_header extra[16];
    size_t nextra = pl_split_headers(headers, hstore, sizeof(hstore), extra, 16);
    struct gw_s3client_sign_req rq = {.method = method,
                                      .bucket = path,
                                      .key = key,
                                      .query = query,
                                      .extra = extra,
                                      .nextra = nextra,
                                      .payload_hash = hash,
                                      .policy = GW_S3CLIENT_SIGN_S3};
    struct gw_s3client_msg m;
    gw_s3client_msg_init(&m);
    assert_int_equal(gw_s3client_sign(s, &rq, &m), 0);
    assert_int_equal(buf_printf(raw, "%s %s HTTP/1.1\r\n", method, target), 0);
    for (size_t i = 0; i < m.nlines; i++) {
        assert_int_equal(buf_printf(raw, "%s\r\n", m.lines[i]), 0);
    }
    gw_s3client_msg_cleanup(&m);
    gw_s3client_free(s);
}

/* The secret of a principal's access key (an unknown key gets a made-up one). */
static const char *
pl_secret(const char *ak)
{
    if (strcmp(ak, PL_WORKER) == 0) {
        return PL_WORKER_SK;
    }
    if (strcmp(ak, PL_OTHER) == 0) {
        return PL_OTHER_SK;
    }
    return "no-such-secret-0123456789abcdef";
}

/* The value after "<tag>" up to '<' in text, into out ("" if absent). */
static void
pl_xml_value(const char *text, const char *tag, char *out, size_t outlen)
{
    char open[64];
    (void)snprintf(open, sizeof(open), "<%s>", tag);
    const char *p = strstr(text, open);
    out[0] = '\0';
    if (p != NULL) {
        p += strlen(open);
        (void)snprintf(out, outlen, "%.*s", (int)strcspn(p, "<"), p);
    }
}

/*
 * pl_ask - one request on a new connection.  who: a principal's access key
 * (signed with its secret; PL_BAD_SIG in flags spoils the signature,
 * PL_BAD_BODY the body after its hash was signed), or
 * PL_ANONYMOUS; headers: "Name: value\r\n" lines (X-Fencing-Token is not
 * signed, as rclone sends it); body: sent with a Content-Length, "" for none.
 * Returns the status; pl_last holds the rest.
 */
static int
pl_ask_f(const char *who, int flags, const char *method, const char *target, const char *headers,
         const char *body)
{
    struct buf raw;
    buf_init(&raw, 1 << 20);
    if (who != NULL) {
        pl_sign(who, pl_secret(who), method, target, headers, body, &raw);
        if (flags & PL_BAD_SIG) {
            char *sig = strstr(raw.data, "Signature=");
            assert_non_null(sig);
            sig += strlen("Signature=");
            *sig = *sig == '0' ? '1' : '0';
        }
    } else {
        assert_int_equal(buf_printf(&raw, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s", method, target,
                                    headers != NULL ? headers : ""),
                         0);
    }
    if (body[0] != '\0' || strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0) {
        assert_int_equal(buf_printf(&raw, "Content-Length: %zu\r\n", strlen(body)), 0);
    }
    assert_int_equal(buf_printf(&raw, "\r\n%s", body), 0);
    if ((flags & PL_BAD_BODY) && body[0] != '\0') {
        raw.data[raw.len - 1] ^= 1;
    }
    int before = pl_up.requests;
    (void)snprintf(pl_last.what, sizeof(pl_last.what), "%s %s", method, target);
    struct resp r;
    pl_send_raw(raw.data, raw.len, &r);
    buf_cleanup(&raw);
    pl_last.status = r.status;
    pl_last.reached = pl_up.requests != before;
    buf_reset(&pl_last.body);
    assert_int_equal(buf_append(&pl_last.body, r.body.data, r.body.len), 0);
    pl_xml_value(buf_cstr(&pl_last.body), "Code", pl_last.code, sizeof(pl_last.code));
    if (!hdr(&r, "x-amz-request-id", pl_last.request_id, sizeof(pl_last.request_id))) {
        pl_last.request_id[0] = '\0';
    }
    if (!hdr(&r, "x-fencing-current-token", pl_last.current, sizeof(pl_last.current))) {
        pl_last.current[0] = '\0';
    }
    resp_cleanup(&r);
    return pl_last.status;
}

static int
pl_ask(const char *who, const char *method, const char *target, const char *headers,
       const char *body)
{
    return pl_ask_f(who, 0, method, target, headers, body);
}

/* Asserts the last answer: status, S3 <Code> (NULL: none), and whether the upstream saw it. */
#define pl_expect(st_, code_, reached_)                                                            \
    do {                                                                                           \
        const char *want_code_ = (code_) != NULL ? (const char *)(code_) : "";                     \
        if (pl_last.status != (st_) || strcmp(pl_last.code, want_code_) != 0 ||                    \
            pl_last.reached != (reached_)) {                                                       \
            fail_msg("%s: got %d <%s> upstream %s; wanted %d <%s> upstream %s; body %s",           \
                     pl_last.what, pl_last.status, pl_last.code,                                   \
                     pl_last.reached ? "reached" : "untouched", (st_), want_code_,                 \
                     (reached_) ? "reached" : "untouched", buf_cstr(&pl_last.body));               \
        }                                                                                          \
    } while (0)

/*
 * The sum of family name's samples on GET /metrics whose line holds filter
 * (NULL: every sample), e.g. ("fencegate_requests_total", "code=\"4").
 */
static uint64_t
pl_metric_where(const char *name, const char *filter)
{
    struct resp r;
    assert_int_equal(pl_get("/metrics", &r), 200);
    char type[160];
    (void)snprintf(type, sizeof(type), "\n# TYPE %s ", name);
    if (strstr(buf_cstr(&r.body), type) == NULL) {
        fail_msg("no metric %s", name);
    }
    uint64_t sum = 0;
    size_t nl = strlen(name);
    for (const char *p = buf_cstr(&r.body); p != NULL && *p != '\0';) {
        const char *end = strchr(p, '\n');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        if (len > nl && strncmp(p, name, nl) == 0 && (p[nl] == ' ' || p[nl] == '{')) {
            char line[1024];
            (void)snprintf(line, sizeof(line), "%.*s", (int)len, p);
            if (filter == NULL || strstr(line, filter) != NULL) {
                sum += strtoull(strrchr(line, ' ') + 1, NULL, 10);
            }
        }
        p = end != NULL ? end + 1 : NULL;
    }
    resp_cleanup(&r);
    return sum;
}

/* A family's total on GET /metrics ("fencegate_fence_refusals_total": every lock and code). */
static uint64_t
pl_metric(const char *name)
{
    return pl_metric_where(name, NULL);
}

/*
 * pl_audit_kind - the kind ("stale", "refused", ...) of the audit record of
 * the request whose id was id, read through GET /_fencegate/v1/audit as the
 * worker; lock and token (either may be NULL) get its lock and token ("" /
 * 0 if none).  Returns "" when there is no such record.
 */
static const char *pl_audit_find(const char *id, char *lock, size_t locklen, uint64_t *token);

static const char *
pl_audit_kind(const char *request_id, char *lock, size_t locklen, uint64_t *token)
{
    char id[96]; /* request_id may point into pl_last, which each look overwrites */
    (void)snprintf(id, sizeof(id), "%s", request_id);
    /* records are committed in batches (store_audit_append): a few ms */
    uint64_t end = now_ms() + 3000;
    for (;;) {
        const char *kind = pl_audit_find(id, lock, locklen, token);
        if (kind[0] != '\0' || now_ms() > end) {
            return kind;
        }
        pump_ms(NULL, 5);
    }
}

/* One look at the audit log for pl_audit_kind. */
static const char *
pl_audit_find(const char *id, char *lock, size_t locklen, uint64_t *token)
{
    static char kind[32];
    struct pl_last saved = pl_last;
    buf_init(&pl_last.body, 1 << 20);
    /* by request id: a plain id, or a repeat's "<run's id>.<n>" (identical
     * refusals coalesce into their run's record) */
    char target[192];
    (void)snprintf(target, sizeof(target), "/_fencegate/v1/audit?request_id=%s", id);
    assert_int_equal(pl_ask(PL_WORKER, "GET", target, NULL, ""), 200);
    if (getenv("PL_DEBUG") != NULL) {
        (void)fprintf(stderr, "audit: %s\n", buf_cstr(&pl_last.body));
    }
    json_error_t jerr;
    json_t *doc = json_loads(buf_cstr(&pl_last.body), 0, &jerr);
    if (doc == NULL) {
        fail_msg("audit: %s: %s", jerr.text, buf_cstr(&pl_last.body));
    }
    kind[0] = '\0';
    if (lock != NULL) {
        lock[0] = '\0';
    }
    size_t i;
    json_t *rec;
    json_array_foreach(json_object_get(doc, "records"), i, rec)
    {
        const char *rid = json_string_value(json_object_get(rec, "request_id"));
        size_t rl = rid != NULL ? strlen(rid) : 0;
        if (rid != NULL && strncmp(rid, id, rl) == 0 && (id[rl] == '\0' || id[rl] == '.')) {
            (void)snprintf(kind, sizeof(kind), "%s",
                           json_string_value(json_object_get(rec, "kind")));
            if (lock != NULL) {
                const char *l = json_string_value(json_object_get(rec, "lock"));
                (void)snprintf(lock, locklen, "%s", l != NULL ? l : "");
            }
            if (token != NULL) {
                *token = (uint64_t)json_integer_value(json_object_get(rec, "token"));
            }
        }
    }
    json_decref(doc);
    buf_cleanup(&pl_last.body);
    pl_last = saved;
    return kind;
}

/* A lease of lock for holder from the JSON election API, as the worker; its lease_id into lid. */
static uint64_t
pl_acquire(const char *lock, const char *holder, char *lid, size_t lidlen)
{
    char target[256], body[256];
    (void)snprintf(target, sizeof(target), "/_fencegate/v1/locks/%s/acquire", lock);
    (void)snprintf(body, sizeof(body), "{\"holder\":\"%s\",\"lease_ms\":60000}", holder);
    int st = pl_ask(PL_WORKER, "POST", target, "Content-Type: application/json\r\n", body);
    if (st != 200) {
        fail_msg("acquire %s: %d %s", lock, st, buf_cstr(&pl_last.body));
    }
    json_error_t jerr;
    json_t *doc = json_loads(buf_cstr(&pl_last.body), 0, &jerr);
    assert_non_null(doc);
    json_int_t token = json_integer_value(json_object_get(doc, "token"));
    const char *l = json_string_value(json_object_get(doc, "lease_id"));
    assert_non_null(l);
    (void)snprintf(lid, lidlen, "%s", l);
    json_decref(doc);
    assert_true(token > 0);
    return (uint64_t)token;
}

/* Releases the lease token/lid of lock through the JSON API. */
static void
pl_release(const char *lock, uint64_t token, const char *lid)
{
    char target[256], body[256];
    (void)snprintf(target, sizeof(target), "/_fencegate/v1/locks/%s/release", lock);
    (void)snprintf(body, sizeof(body), "{\"token\":%llu,\"lease_id\":\"%s\"}",
                   (unsigned long long)token, lid);
    int st = pl_ask(PL_WORKER, "POST", target, "Content-Type: application/json\r\n", body);
    if (st != 200) {
        fail_msg("release %s: %d %s", lock, st, buf_cstr(&pl_last.body));
    }
}

/* The token of lock in the fence table (GET /_fencegate/v1/fences, as the worker); 0 if none. */
static uint64_t
pl_fence_token(const char *lock)
{
    struct pl_last saved = pl_last;
    buf_init(&pl_last.body, 1 << 20);
    assert_int_equal(pl_ask(PL_WORKER, "GET", "/_fencegate/v1/fences", NULL, ""), 200);
    json_error_t jerr;
    json_t *doc = json_loads(buf_cstr(&pl_last.body), 0, &jerr);
    assert_non_null(doc);
    uint64_t token = 0;
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(doc, "fences"), i, f)
    {
        const char *l = json_string_value(json_object_get(f, "lock"));
        if (l != NULL && strcmp(l, lock) == 0) {
            token = (uint64_t)json_integer_value(json_object_get(f, "token"));
        }
    }
    json_decref(doc);
    buf_cleanup(&pl_last.body);
    pl_last = saved;
    return token;
}

/* Whether the head the fake upstream received last has a header line starting with line. */
static bool
pl_upstream_has(const char *line)
{
    char want[512];
    (void)snprintf(want, sizeof(want), "\r\n%s", line);
    return has_ci(pl_up.head, want);
}

#endif /* TESTS_UNIT_GATEWAY_PIPELINE_HARNESS_H */
