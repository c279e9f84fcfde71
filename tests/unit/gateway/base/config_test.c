/*
 * tests/unit/gateway/base/config_test.c: the configuration loader.  The sample
 * configurations in deploy/ load; every kind of error names its key; secrets
 * come from the environment and from files; defaults are what config.h says.
 * The upstream section's own checks are in config_upstream_test.c, the fence
 * rules' lookup, widening, warnings and digest in config_fences_test.c; all
 * use tests/unit/gateway/config_harness.h.  Run from the repository root
 * (make unit does), so deploy/ is found.
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

#include "gateway/base/config.h"
#include "gateway/base/metrics.h"
#include "tests/unit/gateway/config_harness.h"

static void
test_dev_json(void **state)
{
    (void)state;
    assert_int_equal(setenv("FENCEGATE_UPSTREAM_ACCESS_KEY", "devak", 1), 0);
    assert_int_equal(setenv("FENCEGATE_UPSTREAM_SECRET_KEY", "devsk", 1), 0);
    /* a stray AWS session must not ride along with keys from other variables */
    assert_int_equal(setenv("AWS_SESSION_TOKEN", "stray", 1), 0);
    char err[512] = "";
    struct gw_config *cfg = NULL;
    int rc = gw_config_load("deploy/dev.json", &cfg, err, sizeof(err));
    if (rc != 0) {
        fail_msg("deploy/dev.json: %d %s", rc, err);
    }
    assert_string_equal(cfg->path, "deploy/dev.json");
    assert_int_equal(cfg->nlisten, 1);
    assert_string_equal(cfg->listen[0].host, "127.0.0.1");
    assert_int_equal(cfg->listen[0].port, 9000);
    assert_true(cfg->listen[0].loopback);
    assert_null(cfg->listen[0].tls_cert);
    assert_string_equal(cfg->upstream.endpoint, "http://127.0.0.1:7480");
    assert_string_equal(cfg->upstream.access_key, "devak");
    assert_string_equal(cfg->upstream.secret_key, "devsk");
    assert_null(cfg->upstream.session_token);
    assert_int_equal(cfg->upstream.addressing, GW_ADDR_PATH);
    assert_int_equal(cfg->upstream.checksum_trailers, GW_TRAILERS_AUTO);
    assert_int_equal(cfg->upstream.client, GW_UPSTREAM_CLIENT_LEAN);
    assert_int_equal(cfg->election.backend, GW_ELECT_DIR);
    assert_non_null(cfg->election.path);
    assert_int_equal(cfg->nprincipals, 0);
    assert_int_equal(cfg->nfences, 1);
    assert_string_equal(cfg->fences[0].bucket, "data");
    assert_string_equal(cfg->fences[0].prefix, "orders/");
    assert_string_equal(cfg->fences[0].lock, "orders");
    assert_true(cfg->fences[0].require_token);
    const struct gw_fence_rule *r = gw_config_fence_rule(cfg, "data", "orders/2026/1.json");
    assert_ptr_equal(r, &cfg->fences[0]);
    assert_null(gw_config_fence_rule(cfg, "data", "invoices/1"));
    gw_config_free(cfg);
}

static void
test_example_json(void **state)
{
    (void)state;
    assert_int_equal(setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE", 1), 0);
    assert_int_equal(setenv("AWS_SECRET_ACCESS_KEY", "exsecret", 1), 0);
    assert_int_equal(setenv("AWS_SESSION_TOKEN", "extoken", 1), 0);
    assert_int_equal(setenv("FENCEGATE_ORDERS_WORKER_SECRET", "worker-secret", 1), 0);
    assert_int_equal(setenv("FENCEGATE_OPERATOR_SECRET", "operator-secret", 1), 0);
    char err[512] = "";
    struct gw_config *cfg = NULL;
    int rc = gw_config_load("deploy/example.json", &cfg, err, sizeof(err));
    if (rc != 0) {
        fail_msg("deploy/example.json: %d %s", rc, err);
    }
    assert_false(cfg->listen[0].loopback);
    assert_int_equal(cfg->nadmin_listen, 1); /* the operator endpoints on loopback */
    assert_true(cfg->admin_listen[0].loopback);
    assert_false(cfg->principals[0].admin);
    assert_true(cfg->principals[1].admin);
    assert_int_equal(cfg->upstream.addressing, GW_ADDR_VIRTUAL);
    assert_string_equal(cfg->upstream.access_key, "AKIAEXAMPLE");
    assert_string_equal(cfg->upstream.secret_key, "exsecret");
    assert_string_equal(cfg->upstream.session_token, "extoken");
    assert_int_equal(cfg->election.backend, GW_ELECT_S3);
    assert_string_equal(cfg->election.bucket, "locks");
    assert_int_equal(cfg->nprincipals, 2);
    const struct gw_principal *p = gw_config_principal_by_key(cfg, "AKIAFGORDERSWORKER01");
    assert_non_null(p);
    assert_string_equal(p->name, "orders-worker");
    assert_string_equal(p->secret_key, "worker-secret");
    assert_string_equal(p->buckets[0], "data");
    assert_null(p->buckets[1]);
    assert_string_equal(p->locks[0], "orders");
    assert_null(p->locks[1]);
    p = gw_config_principal_by_key(cfg, "AKIAFGOPERATOR000001");
    assert_non_null(p);
    assert_string_equal(p->secret_key, "operator-secret");
    assert_null(p->buckets);
    assert_null(p->locks);
    assert_null(gw_config_principal_by_key(cfg, "AKIAFGOPERATOR00000"));
    assert_string_equal(cfg->virtual_host_domains[0], "s3.example.com");
    assert_null(cfg->virtual_host_domains[1]);
    gw_config_free(cfg);
}

/* A small production-shaped sample: principals, an s3 election, a fence rule. */
static void
test_design_sample(void **state)
{
    (void)state;
    assert_int_equal(setenv("AWS_ACCESS_KEY_ID", "AK", 1), 0);
    assert_int_equal(setenv("AWS_SECRET_ACCESS_KEY", "SK", 1), 0);
    assert_int_equal(setenv("WORKER_SECRET", "ws", 1), 0);
    struct gw_config *cfg =
        load_ok("{\n"
                "  \"listen\": [\"127.0.0.1:9000\"],\n"
                "  \"data_dir\": \"/var/lib/fencegate\",\n"
                "  \"upstream\": {\n"
                "    \"endpoint\": \"http://127.0.0.1:7480\",\n"
                "    \"region\": \"us-east-1\",\n"
                "    \"addressing\": \"path\",\n"
                "    \"access_key_env\": \"AWS_ACCESS_KEY_ID\",\n"
                "    \"secret_key_env\": \"AWS_SECRET_ACCESS_KEY\"\n"
                "  },\n"
                "  \"principals\": [\n"
                "    {\"name\": \"worker\", \"access_key\": \"AKIAWORKER\", \"secret_key_env\": "
                "\"WORKER_SECRET\"}\n"
                "  ],\n"
                "  \"election\": {\"backend\": \"s3\", \"bucket\": \"locks\", \"prefix\": "
                "\"fencegate/\",\n"
                "               \"default_lease_ms\": 15000},\n"
                "  \"fences\": [\n"
                "    {\"bucket\": \"data\", \"prefix\": \"orders/\", \"lock\": \"orders\", "
                "\"require_token\": true}\n"
                "  ]\n"
                "}\n");
    assert_string_equal(gw_config_principal_by_key(cfg, "AKIAWORKER")->secret_key, "ws");
    assert_string_equal(cfg->upstream.secret_key, "SK");
    assert_int_equal(cfg->election.backend, GW_ELECT_S3);
    gw_config_free(cfg);
    (void)unsetenv("WORKER_SECRET");
}

/* election.shared follows the backend unless given; the dir backend needs no
 * second of slack for HTTP dates. */
static void
test_window_defaults(void **state)
{
    (void)state;
    struct gw_config *cfg =
        load_ok(MIN_PREFIX ",\"election\":{\"backend\":\"s3\",\"bucket\":\"locks\"}}");
    assert_true(cfg->election.shared);
    assert_int_equal(gw_config_min_lease_for_windows(cfg), 4500);
    gw_config_free(cfg);
    cfg = load_ok(MIN_PREFIX ",\"election\":{\"backend\":\"dir\",\"path\":\"p\","
                             "\"min_lease_ms\":1500,\"default_lease_ms\":1500}}");
    assert_false(cfg->election.shared);
    assert_int_equal(gw_config_min_lease_for_windows(cfg), 1500);
    gw_config_free(cfg);
    cfg = load_ok(MIN_PREFIX ",\"election\":{\"backend\":\"dir\",\"path\":\"p\","
                             "\"shared\":true},\"fencing\":{\"commit_margin_ms\":200}}");
    assert_true(cfg->election.shared);
    gw_config_free(cfg);
}

static void
test_defaults(void **state)
{
    (void)state;
    struct gw_config *cfg = load_ok(MIN_CONFIG);
    assert_null(cfg->path);
    assert_string_equal(cfg->data_dir, "/tmp/fg");
    assert_non_null(cfg->gateway_id);
    assert_true(cfg->gateway_id[0] != '\0');
    char host[256] = "";
    if (gethostname(host, sizeof(host)) == 0 && host[0] != '\0') {
        assert_string_equal(cfg->gateway_id, host);
    }
    assert_string_equal(cfg->log_level, "info");
    assert_false(cfg->allow_anonymous);
    assert_int_equal(cfg->workers, 0); /* one loop per CPU (gw_config_workers) */
    assert_int_equal(cfg->accept, GW_ACCEPT_ACCEPTOR);
    assert_null(cfg->virtual_host_domains);
    assert_string_equal(cfg->upstream.region, "us-east-1");
    assert_int_equal(cfg->upstream.addressing, GW_ADDR_PATH);
    assert_string_equal(cfg->upstream.access_key, "AK");
    assert_string_equal(cfg->upstream.secret_key, "SK");
    assert_null(cfg->upstream.session_token);
    assert_null(cfg->upstream.ca_file);
    assert_true(cfg->upstream.tls_verify);
    assert_int_equal(cfg->upstream.connect_timeout_ms, 5000);
    assert_int_equal(cfg->upstream.timeout_ms, 60000);
    assert_int_equal(cfg->upstream.max_connections, 256);
    assert_int_equal(cfg->nprincipals, 0);
    assert_null(cfg->principals);
    assert_int_equal(cfg->election.backend, GW_ELECT_NONE);
    assert_string_equal(cfg->election.prefix, "fencegate/");
    assert_int_equal(cfg->election.default_lease_ms, 15000);
    assert_int_equal(cfg->election.min_lease_ms, 4500);
    assert_int_equal(cfg->election.max_lease_ms, 300000);
    assert_false(cfg->election.shared); /* no election */
    assert_int_equal(cfg->election.shared_window_ms, 5000);
    assert_int_equal(cfg->fencing.commit_margin_ms, 1000);
    assert_int_equal(cfg->fencing.complete_margin_ms, 3000);
    assert_int_equal(cfg->election.keep_epochs, 5);
    assert_int_equal(cfg->nfences, 0);
    assert_true(cfg->fencing.allow_unfenced_writes);
    assert_true(cfg->fencing.record_epoch_metadata);
    assert_true(cfg->fencing.abort_stale_uploads);
    assert_false(cfg->fencing.allow_bucket_writes);
    assert_true(cfg->auth.sigv2);
    assert_int_equal(cfg->limits.max_header_bytes, 65536);
    assert_int_equal(cfg->limits.max_headers, 100);
    assert_int_equal(cfg->limits.max_url_bytes, 8192);
    assert_int_equal(cfg->limits.header_timeout_ms, 30000);
    assert_int_equal(cfg->limits.body_timeout_ms, 60000);
    assert_int_equal(cfg->limits.idle_timeout_ms, 60000);
    assert_int_equal(cfg->limits.write_timeout_ms, 60000);
    assert_int_equal(cfg->limits.max_connections, 4096);
    assert_int_equal(cfg->limits.buffer_bytes, 262144);
    assert_true(cfg->limits.max_object_bytes == 5368709120ull);
    assert_true(cfg->limits.discard_body_bytes == 67108864);
    assert_int_equal(cfg->audit.retention_days, 30);
    assert_int_equal(cfg->audit.max_records, 1000000);
    assert_int_equal(cfg->audit.queue_max, 65536);
    assert_int_equal(cfg->audit.coalesce_window_ms, 60000);
    assert_int_equal(cfg->metrics.max_locks, GW_METRICS_MAX_LOCKS_DEFAULT);
    gw_config_free(cfg);
}

static void
test_all_keys(void **state)
{
    (void)state;
    struct gw_config *cfg = load_ok(
        "{\"listen\":[\"[::1]:0\",{\"address\":\"0.0.0.0:9443\",\"tls_cert\":\"c.pem\","
        "\"tls_key\":\"k.pem\"}],\"data_dir\":\"d\",\"gateway_id\":\"gw-1\",\"log_level\":\"warn\","
        "\"allow_anonymous\":true,\"workers\":1,\"accept\":\"reuseport\","
        "\"virtual_host_domains\":[\"s3.example.com\","
        "\"localhost\"],"
        "\"upstream\":{\"endpoint\":\"https://s3.example.net:8443/\",\"region\":\"eu-west-1\","
        "\"addressing\":\"virtual\",\"access_key\":\"AK\",\"secret_key\":\"SK\","
        "\"ca_file\":\"/etc/ca.pem\",\"tls_verify\":false,\"connect_timeout_ms\":100,"
        "\"timeout_ms\":86400000,\"max_connections\":1},"
        "\"election\":{\"backend\":\"s3\",\"bucket\":\"locks\",\"prefix\":\"\","
        "\"default_lease_ms\":3500,\"min_lease_ms\":3150,\"max_lease_ms\":4000,\"keep_epochs\":1,"
        "\"shared\":false,\"shared_window_ms\":300},"
        "\"fences\":[{\"bucket\":\"b\",\"lock\":\"l\",\"require_token\":false}],"
        "\"fencing\":{\"allow_unfenced_writes\":false,\"record_epoch_metadata\":false,"
        "\"abort_stale_uploads\":false,\"allow_bucket_writes\":true,\"commit_margin_ms\":100,"
        "\"complete_margin_ms\":200},"
        "\"auth\":{\"sigv2\":false},"
        "\"limits\":{\"max_header_bytes\":1024,\"max_headers\":8,\"max_url_bytes\":256,"
        "\"header_timeout_ms\":100,\"body_timeout_ms\":200,\"idle_timeout_ms\":300,"
        "\"write_timeout_ms\":400,\"max_connections\":1,\"buffer_bytes\":4096,"
        "\"max_object_bytes\":1000,\"discard_body_bytes\":1},"
        "\"audit\":{\"retention_days\":1,\"max_records\":1000000000000,\"queue_max\":1,"
        "\"coalesce_window_ms\":0}}");
    assert_int_equal(cfg->nlisten, 2);
    assert_string_equal(cfg->listen[0].host, "::1");
    assert_int_equal(cfg->listen[0].port, 0);
    assert_true(cfg->listen[0].loopback);
    assert_string_equal(cfg->listen[1].host, "0.0.0.0");
    assert_int_equal(cfg->listen[1].port, 9443);
    assert_false(cfg->listen[1].loopback);
    assert_string_equal(cfg->listen[1].tls_cert, "c.pem");
    assert_string_equal(cfg->listen[1].tls_key, "k.pem");
    assert_string_equal(cfg->gateway_id, "gw-1");
    assert_string_equal(cfg->log_level, "warn");
    assert_true(cfg->allow_anonymous);
    assert_int_equal(cfg->workers, 1);
    assert_int_equal(cfg->accept, GW_ACCEPT_REUSEPORT);
    assert_string_equal(cfg->virtual_host_domains[1], "localhost");
    assert_string_equal(cfg->upstream.endpoint, "https://s3.example.net:8443");
    assert_string_equal(cfg->upstream.region, "eu-west-1");
    assert_int_equal(cfg->upstream.addressing, GW_ADDR_VIRTUAL);
    assert_string_equal(cfg->upstream.ca_file, "/etc/ca.pem");
    assert_false(cfg->upstream.tls_verify);
    assert_int_equal(cfg->upstream.connect_timeout_ms, 100);
    assert_int_equal(cfg->upstream.timeout_ms, 86400000);
    assert_int_equal(cfg->upstream.max_connections, 1);
    assert_int_equal(cfg->election.backend, GW_ELECT_S3);
    assert_string_equal(cfg->election.prefix, "");
    assert_int_equal(cfg->election.default_lease_ms, 3500);
    assert_int_equal(cfg->election.min_lease_ms, 3150);
    assert_int_equal(cfg->election.keep_epochs, 1);
    assert_false(cfg->election.shared); /* given, though the backend is s3 */
    assert_int_equal(cfg->election.shared_window_ms, 300);
    assert_int_equal(cfg->fencing.commit_margin_ms, 100);
    assert_int_equal(cfg->fencing.complete_margin_ms, 200);
    assert_string_equal(cfg->fences[0].prefix, "");
    assert_false(cfg->fences[0].require_token);
    assert_false(cfg->fencing.allow_unfenced_writes);
    assert_false(cfg->fencing.record_epoch_metadata);
    assert_false(cfg->fencing.abort_stale_uploads);
    assert_true(cfg->fencing.allow_bucket_writes);
    assert_false(cfg->auth.sigv2);
    assert_int_equal(cfg->limits.max_header_bytes, 1024);
    assert_int_equal(cfg->limits.body_timeout_ms, 200);
    assert_int_equal(cfg->limits.idle_timeout_ms, 300);
    assert_int_equal(cfg->limits.write_timeout_ms, 400);
    assert_int_equal(cfg->limits.buffer_bytes, 4096);
    assert_int_equal(cfg->audit.retention_days, 1);
    assert_true(cfg->audit.max_records == 1000000000000ull);
    assert_true(cfg->limits.max_object_bytes == 1000);
    assert_true(cfg->limits.discard_body_bytes == 1);
    assert_int_equal(cfg->audit.queue_max, 1);
    assert_int_equal(cfg->audit.coalesce_window_ms, 0); /* 0: off */
    gw_config_free(cfg);
}

static void
test_unknown_keys(void **state)
{
    (void)state;
    expect_err(MIN_PREFIX ",\"bogus\":1}", "bogus: unknown key");
    expect_err("{\"listen\":[\"127.0.0.1:1\"],\"data_dir\":\"d\",\"upstream\":{\"endpoint\":"
               "\"http://h\",\"regoin\":\"x\"}}",
               "upstream.regoin: unknown key");
    expect_err(MIN_PREFIX ",\"limits\":{\"max_header\":1}}", "limits.max_header: unknown key");
    expect_err(MIN_PREFIX ",\"fencing\":{\"allow\":true}}", "fencing.allow: unknown key");
    expect_err(MIN_PREFIX ",\"audit\":{\"days\":1}}", "audit.days: unknown key");
    expect_err(MIN_PREFIX ",\"election\":{\"backnd\":\"s3\"}}", "election.backnd: unknown key");
    expect_err(MIN_PREFIX ",\"fences\":[{\"bucket\":\"b\",\"lock\":\"l\"},{\"bucket\":\"b\","
                          "\"lok\":\"l\"}]}",
               "fences[1].lok: unknown key");
    expect_err(MIN_PREFIX ",\"principals\":[{\"name\":\"n\",\"access_key\":\"a\","
                          "\"secret_key\":\"s\",\"nme\":1}]}",
               "principals[0].nme: unknown key");
    expect_err("{\"listen\":[{\"adress\":\"127.0.0.1:1\"}],\"data_dir\":\"d\"," UP_INLINE "}",
               "listen[0].adress: unknown key");
}

static void
test_wrong_types(void **state)
{
    (void)state;
    expect_err("{\"listen\":[\"127.0.0.1:1\"],\"data_dir\":\"d\",\"upstream\":{\"endpoint\":"
               "\"http://h\",\"access_key\":\"a\",\"secret_key\":\"s\",\"region\":5}}",
               "upstream.region: expected a string");
    expect_err(MIN_PREFIX ",\"limits\":{\"max_headers\":\"10\"}}",
               "limits.max_headers: expected an integer");
    expect_err(MIN_PREFIX ",\"limits\":{\"max_headers\":10.5}}",
               "limits.max_headers: expected an integer");
    expect_err(MIN_PREFIX ",\"allow_anonymous\":\"yes\"}",
               "allow_anonymous: expected true or false");
    expect_err(MIN_PREFIX ",\"accept\":\"kernel\"}",
               "accept: must be \"acceptor\" or \"reuseport\"");
    expect_err(MIN_PREFIX ",\"fences\":{}}", "fences: expected an array of objects");
    expect_err(MIN_PREFIX ",\"fences\":[7]}", "fences[0]: expected an object");
    expect_err(MIN_PREFIX ",\"principals\":\"x\"}", "principals: expected an array of objects");
    expect_err(MIN_PREFIX ",\"limits\":[]}", "limits: expected an object");
    expect_err(MIN_PREFIX ",\"virtual_host_domains\":\"a.b\"}",
               "virtual_host_domains: expected an array of strings");
    expect_err(MIN_PREFIX ",\"virtual_host_domains\":[\"a.b\",3]}",
               "virtual_host_domains[1]: expected a string");
    expect_err("{\"listen\":[\"127.0.0.1:1\"],\"data_dir\":null," UP_INLINE "}",
               "data_dir: expected a string");
    expect_err("{\"listen\":\"127.0.0.1:1\",\"data_dir\":\"d\"," UP_INLINE "}",
               "listen: expected a non-empty array");
    expect_err("{\"listen\":[],\"data_dir\":\"d\"," UP_INLINE "}",
               "listen: expected a non-empty array");
    expect_err("{\"listen\":[5],\"data_dir\":\"d\"," UP_INLINE "}",
               "listen[0]: expected \"host:port\" or an object with \"address\"");
    expect_err("{\"listen\":[\"127.0.0.1:1\"],\"data_dir\":\"d\",\"upstream\":\"http://h\"}",
               "upstream: expected an object");
    expect_err_prefix(MIN_PREFIX ",\"upstream\":{}}", "line 1 column 144: duplicate object key");
}

static void
test_ranges(void **state)
{
    (void)state;
    expect_err(MIN_PREFIX ",\"limits\":{\"max_headers\":0}}",
               "limits.max_headers: must be between 8 and 10000");
    expect_err(MIN_PREFIX ",\"limits\":{\"max_headers\":10001}}",
               "limits.max_headers: must be between 8 and 10000");
    expect_err(MIN_PREFIX ",\"limits\":{\"buffer_bytes\":-1}}",
               "limits.buffer_bytes: must be between 4096 and 67108864");
    expect_err(MIN_PREFIX ",\"audit\":{\"max_records\":0}}",
               "audit.max_records: must be between 1 and 1000000000000");
    expect_err(MIN_PREFIX ",\"audit\":{\"queue_max\":0}}",
               "audit.queue_max: must be between 1 and 16777216");
    expect_err(MIN_PREFIX ",\"audit\":{\"coalesce_window_ms\":86400001}}",
               "audit.coalesce_window_ms: must be between 0 and 86400000");
    expect_err(MIN_PREFIX ",\"metrics\":{\"max_locks\":100001}}",
               "metrics.max_locks: must be between 0 and 100000");
    expect_err(MIN_PREFIX ",\"metrics\":{\"max_lock\":1}}", "metrics.max_lock: unknown key");
    expect_err(MIN_PREFIX ",\"metrics\":{\"max_locks\":\"9\"}}",
               "metrics.max_locks: expected an integer");
    expect_err(MIN_PREFIX ",\"limits\":{\"max_object_bytes\":0}}",
               "limits.max_object_bytes: must be between 1 and 5497558138880");
    expect_err(MIN_PREFIX ",\"election\":{\"backend\":\"dir\",\"path\":\"p\",\"keep_epochs\":0}}",
               "election.keep_epochs: must be between 1 and 1000000");
    expect_err("{\"listen\":[\"127.0.0.1:1\"],\"data_dir\":\"d\",\"upstream\":{\"endpoint\":"
               "\"http://h\",\"access_key\":\"a\",\"secret_key\":\"s\",\"timeout_ms\":99}}",
               "upstream.timeout_ms: must be between 100 and 86400000");
    /* a number jansson cannot hold is a parse error, not a wrap-around */
    expect_err_prefix(MIN_PREFIX ",\"limits\":{\"max_headers\":99999999999999999999}}",
                      "line 1 column");
    expect_err(MIN_PREFIX ",\"election\":{\"backend\":\"dir\",\"path\":\"p\","
                          "\"min_lease_ms\":5000,\"max_lease_ms\":4000,\"default_lease_ms\":4500}}",
               "election.min_lease_ms: larger than max_lease_ms");
    expect_err(MIN_PREFIX ",\"election\":{\"backend\":\"dir\",\"path\":\"p\","
                          "\"default_lease_ms\":500}}",
               "election.default_lease_ms: must lie between min_lease_ms (4500) and "
               "max_lease_ms (300000)");
    /* write windows: a lease too short to keep a window open, a shared window no
     * write could fit in (DESIGN "Write windows") */
    expect_err(
        MIN_PREFIX ",\"election\":{\"backend\":\"s3\",\"bucket\":\"locks\","
                   "\"min_lease_ms\":4499}}",
        "election.min_lease_ms: 4499 is too short for fencing.commit_margin_ms 1000: a holder "
        "renewing at a third of its lease needs at least 4500 ms to keep its write window "
        "open");
    expect_err(MIN_PREFIX ",\"election\":{\"backend\":\"s3\",\"bucket\":\"locks\","
                          "\"shared_window_ms\":3000}}",
               "election.shared_window_ms: 3000 must be longer than the commit margins (3000 ms), "
               "or no write could ever be forwarded");
    expect_err(MIN_PREFIX ",\"election\":{\"backend\":\"dir\",\"path\":\"p\","
                          "\"shared\":1}}",
               "election.shared: expected true or false");
    expect_err(MIN_PREFIX ",\"log_level\":\"verbose\"}",
               "log_level: must be \"debug\", \"info\", \"warn\" or \"error\"");
    expect_err_prefix(MIN_PREFIX ",\"upstream\":null}", "line 1 column 144: duplicate object key");
}

static void
test_required(void **state)
{
    (void)state;
    expect_err("{\"listen\":[\"127.0.0.1:1\"]," UP_INLINE "}", "data_dir: required");
    expect_err("{\"listen\":[\"127.0.0.1:1\"],\"data_dir\":\"\"," UP_INLINE "}",
               "data_dir: must not be empty");
    expect_err("{\"data_dir\":\"d\"," UP_INLINE "}", "listen: required");
    expect_err("{\"listen\":[\"127.0.0.1:1\"],\"data_dir\":\"d\"}", "upstream: required");
    expect_err("{\"listen\":[\"127.0.0.1:1\"],\"data_dir\":\"d\",\"upstream\":{}}",
               "upstream.endpoint: required");
    expect_err(MIN_PREFIX ",\"election\":{}}", "election.backend: required");
    expect_err(MIN_PREFIX ",\"election\":{\"backend\":\"zk\"}}",
               "election.backend: must be \"s3\" or \"dir\"");
    expect_err(MIN_PREFIX ",\"election\":{\"backend\":\"s3\"}}",
               "election.bucket: required with backend \"s3\"");
    expect_err(MIN_PREFIX ",\"election\":{\"backend\":\"dir\"}}",
               "election.path: required with backend \"dir\"");
    expect_err(MIN_PREFIX ",\"election\":{\"backend\":\"dir\",\"path\":\"p\",\"bucket\":\"b\"}}",
               "election.bucket: only for backend \"s3\"");
    expect_err(MIN_PREFIX ",\"election\":{\"backend\":\"s3\",\"path\":\"p\",\"bucket\":\"b\"}}",
               "election.path: only for backend \"dir\"");
    expect_err(MIN_PREFIX ",\"fences\":[{\"bucket\":\"b\"}]}", "fences[0].lock: required");
    expect_err(MIN_PREFIX ",\"fences\":[{\"lock\":\"l\"}]}", "fences[0].bucket: required");
    expect_err(MIN_PREFIX ",\"principals\":[{\"access_key\":\"a\",\"secret_key\":\"s\"}]}",
               "principals[0].name: required");
    expect_err(MIN_PREFIX ",\"principals\":[{\"name\":\"n\",\"secret_key\":\"s\"}]}",
               "principals[0].access_key: required");
}

static void
test_lock_names(void **state)
{
    (void)state;
    /* "." and ".." too: the election could never grant them (one rule, common/lockname.c) */
    static const char *const bad[] = {"a b", "a/b", "x\\u00e9", "a:b", ".", ".."};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char json[512];
        (void)snprintf(json, sizeof(json),
                       MIN_PREFIX ",\"fences\":[{\"bucket\":\"b\",\"lock\":\"%s\"}]}", bad[i]);
        expect_err(
            json,
            "fences[0].lock: must be a lock name ([A-Za-z0-9._-]{1,128}, not \".\" or \"..\")");
    }
    expect_err(MIN_PREFIX ",\"fences\":[{\"bucket\":\"b\",\"lock\":\"\"}]}",
               "fences[0].lock: must not be empty");
    char json[1024];
    char name[130];
    memset(name, 'a', 129);
    name[129] = '\0';
    (void)snprintf(json, sizeof(json),
                   MIN_PREFIX ",\"fences\":[{\"bucket\":\"b\",\"lock\":\"%s\"}]}", name);
    expect_err(json,
               "fences[0].lock: must be a lock name ([A-Za-z0-9._-]{1,128}, not \".\" or \"..\")");
    name[128] = '\0';
    (void)snprintf(json, sizeof(json),
                   MIN_PREFIX ",\"fences\":[{\"bucket\":\"b\",\"lock\":\"%s\"}]}", name);
    struct gw_config *cfg = load_ok(json);
    gw_config_free(cfg);
    cfg = load_ok(MIN_PREFIX ",\"fences\":[{\"bucket\":\"b\",\"lock\":\"Orders.v2_x-1\"}]}");
    assert_string_equal(cfg->fences[0].lock, "Orders.v2_x-1");
    gw_config_free(cfg);
    expect_err(
        MIN_PREFIX ",\"principals\":[{\"name\":\"n\",\"access_key\":\"a\","
                   "\"secret_key\":\"s\",\"locks\":[\"ok\",\"not ok\"]}]}",
        "principals[0].locks[1]: must be a lock name ([A-Za-z0-9._-]{1,128}, not \".\" or \"..\")");
    expect_err(MIN_PREFIX ",\"fences\":[{\"bucket\":\"a/b\",\"lock\":\"l\"}]}",
               "fences[0].bucket: must be a bucket name ([A-Za-z0-9._-]{1,255})");
    expect_err(MIN_PREFIX ",\"virtual_host_domains\":[\".example.com\"]}",
               "virtual_host_domains[0]: must be a DNS name such as \"s3.example.com\"");
    expect_err(MIN_PREFIX ",\"gateway_id\":\"gw 1\"}",
               "gateway_id: must be printable ASCII without spaces or quotes, at most 255 bytes");
}

static void
test_listen(void **state)
{
    (void)state;
    static const struct {
        const char *addr;
        const char *host;
        unsigned port;
        bool loopback;
    } good[] = {
        {"127.0.0.1:9000", "127.0.0.1", 9000, true},
        {"127.1.2.3:1", "127.1.2.3", 1, true},
        {"[::1]:9000", "::1", 9000, true},
        {"[::ffff:127.0.0.1]:80", "::ffff:127.0.0.1", 80, true},
        {"localhost:65535", "localhost", 65535, true},
        {"LOCALHOST:0", "LOCALHOST", 0, true},
        {"0.0.0.0:9000", "0.0.0.0", 9000, false},
        {"[::]:9000", "::", 9000, false},
        {"10.0.0.1:80", "10.0.0.1", 80, false},
        {"gw.example.com:80", "gw.example.com", 80, false},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        char json[512];
        (void)snprintf(json, sizeof(json),
                       "{\"listen\":[\"%s\"],\"data_dir\":\"d\",\"allow_anonymous\":true," UP_INLINE
                       "}",
                       good[i].addr);
        struct gw_config *cfg = load_ok(json);
        assert_string_equal(cfg->listen[0].host, good[i].host);
        assert_int_equal(cfg->listen[0].port, good[i].port);
        assert_int_equal(cfg->listen[0].loopback, good[i].loopback);
        gw_config_free(cfg);
    }
    static const struct {
        const char *addr;
        const char *err;
    } bad[] = {
        {"127.0.0.1", "listen[0]: expected \"host:port\""},
        {"::1:9000", "listen[0]: write IPv6 addresses as \"[address]:port\""},
        {":9000", "listen[0]: missing host (use 0.0.0.0 or [::] for every address)"},
        {"127.0.0.1:65536", "listen[0]: port must be a number between 0 and 65535"},
        {"127.0.0.1:-1", "listen[0]: port must be a number between 0 and 65535"},
        {"127.0.0.1:", "listen[0]: port must be a number between 0 and 65535"},
        {"[::1]9000", "listen[0]: expected \"[address]:port\""},
        {"[nothex]:80", "listen[0]: invalid host"},
        {"a_b:80", "listen[0]: invalid host"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char json[512];
        (void)snprintf(json, sizeof(json),
                       "{\"listen\":[\"%s\"],\"data_dir\":\"d\",\"allow_anonymous\":true," UP_INLINE
                       "}",
                       bad[i].addr);
        expect_err(json, bad[i].err);
    }
    expect_err("{\"listen\":[\"127.0.0.1:1\",{\"address\":\"127.0.0.1:2\",\"tls_cert\":\"c\"}],"
               "\"data_dir\":\"d\"," UP_INLINE "}",
               "listen[1].tls_key: required with tls_cert");
    expect_err("{\"listen\":[{\"address\":\"127.0.0.1:2\",\"tls_key\":\"k\"}],"
               "\"data_dir\":\"d\"," UP_INLINE "}",
               "listen[0].tls_cert: required with tls_key");
    expect_err("{\"listen\":[{\"tls_key\":\"k\"}],\"data_dir\":\"d\"," UP_INLINE "}",
               "listen[0].address: required");
    expect_err("{\"listen\":[{\"address\":\"1.2.3.4\"}],\"data_dir\":\"d\"," UP_INLINE "}",
               "listen[0].address: expected \"host:port\"");
    char json[2048];
    size_t used = (size_t)snprintf(json, sizeof(json), "{\"listen\":[");
    for (int i = 0; i < GW_CONFIG_MAX_LISTEN + 1; i++) {
        used += (size_t)snprintf(json + used, sizeof(json) - used, "%s\"127.0.0.1:%d\"",
                                 i == 0 ? "" : ",", 1000 + i);
    }
    (void)snprintf(json + used, sizeof(json) - used, "],\"data_dir\":\"d\"," UP_INLINE "}");
    expect_err(json, "listen: at most 16 entries");
}

static void
test_anonymous_rule(void **state)
{
    (void)state;
    expect_err("{\"listen\":[\"127.0.0.1:9000\",\"0.0.0.0:9001\"],\"data_dir\":\"d\"," UP_INLINE
               "}",
               "principals: none configured and listen address 0.0.0.0:9001 is not loopback; set "
               "\"allow_anonymous\": true to allow");
    expect_err("{\"listen\":[\"[::]:9001\"],\"data_dir\":\"d\"," UP_INLINE "}",
               "principals: none configured and listen address [::]:9001 is not loopback; set "
               "\"allow_anonymous\": true to allow");
    expect_err("{\"listen\":[\"0.0.0.0:9001\"],\"data_dir\":\"d\",\"principals\":[],"
               "\"allow_anonymous\":false," UP_INLINE "}",
               "principals: none configured and listen address 0.0.0.0:9001 is not loopback; set "
               "\"allow_anonymous\": true to allow");
    struct gw_config *cfg = load_ok("{\"listen\":[\"0.0.0.0:9001\"],\"data_dir\":\"d\","
                                    "\"allow_anonymous\":true," UP_INLINE "}");
    gw_config_free(cfg);
    cfg = load_ok("{\"listen\":[\"0.0.0.0:9001\"],\"data_dir\":\"d\",\"principals\":[{\"name\":"
                  "\"w\",\"access_key\":\"AK1\",\"secret_key\":\"s\"}]," UP_INLINE "}");
    assert_int_equal(cfg->nprincipals, 1);
    gw_config_free(cfg);
}

static void
test_principal_secrets(void **state)
{
    (void)state;
    char json[1024];
    const char *pfx = MIN_PREFIX ",\"principals\":[{\"name\":\"w\",\"access_key\":\"AKW\"";

    (void)snprintf(json, sizeof(json), "%s}]}", pfx);
    expect_err(json, "principals[0].secret_key: give exactly one of secret_key, secret_key_env, "
                     "secret_key_file");
    (void)snprintf(json, sizeof(json), "%s,\"secret_key\":\"s\",\"secret_key_env\":\"E\"}]}", pfx);
    expect_err(json, "principals[0].secret_key: give exactly one of secret_key, secret_key_env, "
                     "secret_key_file");
    (void)snprintf(json, sizeof(json), "%s,\"secret_key\":\"\"}]}", pfx);
    expect_err(json, "principals[0].secret_key: must not be empty");

    (void)snprintf(json, sizeof(json), "%s,\"secret_key_env\":\"FG_TEST_SECRET\"}]}", pfx);
    expect_err(json, "principals[0].secret_key_env: environment variable FG_TEST_SECRET is not "
                     "set");
    assert_int_equal(setenv("FG_TEST_SECRET", "from-env", 1), 0);
    struct gw_config *cfg = load_ok(json);
    assert_string_equal(cfg->principals[0].secret_key, "from-env");
    assert_string_equal(cfg->principals[0].name, "w");
    assert_string_equal(cfg->principals[0].access_key, "AKW");
    gw_config_free(cfg);

    char *path = write_temp("from-file\r\n\n");
    (void)snprintf(json, sizeof(json), "%s,\"secret_key_file\":\"%s\"}]}", pfx, path);
    cfg = load_ok(json);
    assert_string_equal(cfg->principals[0].secret_key, "from-file");
    /* made of the same bytes: the text and the secret file's (gw_config_same_source) */
    struct gw_config *again = load_ok(json);
    assert_true(gw_config_same_source(cfg, again));
    gw_config_free(again);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs("from-file-2\n", f) >= 0);
    assert_int_equal(fclose(f), 0);
    again = load_ok(json); /* the same text, another secret */
    assert_false(gw_config_same_source(cfg, again));
    gw_config_free(again);
    again = load_ok(json);
    struct gw_config *spaced = NULL;
    {
        char json2[sizeof(json) + 2];
        (void)snprintf(json2, sizeof(json2), "%s ", json); /* one byte more */
        spaced = load_ok(json2);
    }
    assert_true(gw_config_same_source(again, again));
    assert_false(gw_config_same_source(again, spaced));
    gw_config_free(again);
    gw_config_free(spaced);
    gw_config_free(cfg);
    assert_int_equal(unlink(path), 0);
    char want[256];
    (void)snprintf(want, sizeof(want),
                   "principals[0].secret_key_file: cannot open %s: No such file or directory",
                   path);
    expect_err(json, want);

    (void)snprintf(json, sizeof(json), "%s,\"secret_key_file\":\"/dev/null\"}]}", pfx);
    expect_err(json, "principals[0].secret_key_file: /dev/null is not a regular file");

    path = write_temp("\n");
    (void)snprintf(json, sizeof(json), "%s,\"secret_key_file\":\"%s\"}]}", pfx, path);
    (void)snprintf(want, sizeof(want), "principals[0].secret_key_file: %s is empty", path);
    expect_err(json, want);
    assert_int_equal(unlink(path), 0);

    static char big[5000];
    memset(big, 'x', sizeof(big) - 1);
    path = write_temp(big);
    (void)snprintf(json, sizeof(json), "%s,\"secret_key_file\":\"%s\"}]}", pfx, path);
    (void)snprintf(want, sizeof(want),
                   "principals[0].secret_key_file: %s is larger than 4096 bytes", path);
    expect_err(json, want);
    assert_int_equal(unlink(path), 0);
}

static void
test_principals(void **state)
{
    (void)state;
    struct gw_config *cfg = load_ok(
        MIN_PREFIX ",\"principals\":[{\"name\":\"a\",\"access_key\":\"AK1\",\"secret_key\":\"s1\","
                   "\"buckets\":[],\"locks\":[\"l1\",\"l2\"]},{\"name\":\"b\",\"access_key\":"
                   "\"AK2\",\"secret_key\":\"s2\",\"buckets\":[\"x\",\"y\"]}]}");
    assert_int_equal(cfg->nprincipals, 2);
    const struct gw_principal *p = gw_config_principal_by_key(cfg, "AK1");
    assert_ptr_equal(p, &cfg->principals[0]);
    assert_non_null(p->buckets);
    assert_null(p->buckets[0]); /* [] means no bucket, unlike an absent list */
    assert_string_equal(p->locks[1], "l2");
    assert_null(p->locks[2]);
    p = gw_config_principal_by_key(cfg, "AK2");
    assert_ptr_equal(p, &cfg->principals[1]);
    assert_string_equal(p->buckets[1], "y");
    assert_null(p->locks);
    assert_false(p->admin); /* "admin" defaults to false */
    assert_null(gw_config_principal_by_key(cfg, "ak1"));
    assert_null(gw_config_principal_by_key(cfg, ""));
    gw_config_free(cfg);

    expect_err(MIN_PREFIX ",\"principals\":[{\"name\":\"a\",\"access_key\":\"AK1\","
                          "\"secret_key\":\"s\"},{\"name\":\"b\",\"access_key\":\"AK1\","
                          "\"secret_key\":\"t\"}]}",
               "principals[1].access_key: same access key as principals[0]");
    expect_err(MIN_PREFIX ",\"principals\":[{\"name\":\"a\",\"access_key\":\"AK1\","
                          "\"secret_key\":\"s\"},{\"name\":\"a\",\"access_key\":\"AK2\","
                          "\"secret_key\":\"t\"}]}",
               "principals[1].name: same name as principals[0]");
    expect_err(MIN_PREFIX ",\"principals\":[{\"name\":\"a\",\"access_key\":\"AK/1\","
                          "\"secret_key\":\"s\"}]}",
               "principals[0].access_key: must be an access key ([A-Za-z0-9._~+-]{1,128})");

    /* "admin": a boolean on the principal (DESIGN.md "Roles") */
    cfg = load_ok(MIN_PREFIX ",\"principals\":[{\"name\":\"ops\",\"access_key\":\"AK1\","
                             "\"secret_key\":\"s\",\"admin\":true},{\"name\":\"w\","
                             "\"access_key\":\"AK2\",\"secret_key\":\"t\",\"admin\":false}]}");
    assert_true(cfg->principals[0].admin);
    assert_false(cfg->principals[1].admin);
    gw_config_free(cfg);
    expect_err(MIN_PREFIX ",\"principals\":[{\"name\":\"a\",\"access_key\":\"AK1\","
                          "\"secret_key\":\"s\",\"admin\":\"yes\"}]}",
               "principals[0].admin: expected true or false");
}

/* admin_listen: the forms of listen, never on (or under a wildcard of) an S3 address. */
static void
test_admin_listen(void **state)
{
    (void)state;
    struct gw_config *cfg = load_ok(MIN_CONFIG);
    assert_int_equal(cfg->nadmin_listen, 0); /* unset: operator endpoints on the S3 listeners */
    gw_config_free(cfg);
    cfg = load_ok(MIN_PREFIX ",\"admin_listen\":[\"127.0.0.1:9001\",{\"address\":\"[::1]:9002\","
                             "\"tls_cert\":\"c.pem\",\"tls_key\":\"k.pem\"}]}");
    assert_int_equal(cfg->nadmin_listen, 2);
    assert_string_equal(cfg->admin_listen[0].host, "127.0.0.1");
    assert_int_equal(cfg->admin_listen[0].port, 9001);
    assert_null(cfg->admin_listen[0].tls_cert);
    assert_string_equal(cfg->admin_listen[1].host, "::1");
    assert_string_equal(cfg->admin_listen[1].tls_key, "k.pem");
    gw_config_free(cfg);
    /* port 0 (any free port) never overlaps */
    cfg = load_ok("{\"listen\":[\"127.0.0.1:0\"],\"admin_listen\":[\"127.0.0.1:0\"],"
                  "\"data_dir\":\"d\"," UP_INLINE "}");
    gw_config_free(cfg);

    expect_err(MIN_PREFIX ",\"admin_listen\":[\"127.0.0.1:9000\"]}",
               "admin_listen[0]: overlaps listen[0] (port 9000)");
    expect_err(MIN_PREFIX ",\"allow_anonymous\":true,\"admin_listen\":[\"127.0.0.1:9001\","
                          "\"0.0.0.0:9000\"]}",
               "admin_listen[1]: overlaps listen[0] (port 9000)");
    expect_err(MIN_PREFIX ",\"admin_listen\":[\"localhost:9001\",\"LOCALHOST:9001\"]}",
               "admin_listen[1]: overlaps admin_listen[0]");
    expect_err(MIN_PREFIX ",\"admin_listen\":[]}", "admin_listen: expected a non-empty array");
    expect_err(MIN_PREFIX ",\"admin_listen\":\"127.0.0.1:9001\"}",
               "admin_listen: expected a non-empty array");
    expect_err(MIN_PREFIX ",\"admin_listen\":[{\"address\":\"127.0.0.1:9001\","
                          "\"tls_cert\":\"c.pem\"}]}",
               "admin_listen[0].tls_key: required with tls_cert");
    expect_err(MIN_PREFIX ",\"admin_listen\":[\"10.0.0.1:9001\"]}",
               "principals: none configured and admin_listen address 10.0.0.1:9001 is not "
               "loopback; set \"allow_anonymous\": true to allow");
}

static void
test_syntax_errors(void **state)
{
    (void)state;
    expect_err_prefix("{", "line 1 column 1:");
    expect_err_prefix("", "line 1 column 0:");
    expect_err("[1]", "the configuration must be a JSON object");
    expect_err_prefix("{\"listen\":[\"127.0.0.1:1\"],\"listen\":[\"127.0.0.1:2\"]}",
                      "line 1 column 34: duplicate object key");
    expect_err_prefix(MIN_PREFIX ",\"data_dir\":\"a\\u0000b\"}", "line 1 column");
    /* control bytes in key names are not echoed raw */
    expect_err(MIN_PREFIX ",\"a\\u0001b\":1}", "a?b: unknown key");
}

static void
test_load_file_errors(void **state)
{
    (void)state;
    char err[512] = "";
    struct gw_config *cfg = (struct gw_config *)(uintptr_t)1;
    assert_int_equal(gw_config_load("/nonexistent/fencegate.json", &cfg, err, sizeof(err)), ERR_IO);
    assert_null(cfg);
    assert_string_equal(err, "/nonexistent/fencegate.json: cannot open: No such file or directory");
    char *path = write_temp("{\"listen\": 1}");
    assert_int_equal(gw_config_load(path, &cfg, err, sizeof(err)), ERR_INVAL);
    assert_string_equal(err, "listen: expected a non-empty array");
    assert_int_equal(unlink(path), 0);
    /* errbuf may be absent */
    assert_int_equal(gw_config_load_string("{", &cfg, NULL, 0), ERR_INVAL);
    gw_config_free(NULL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_dev_json, clean_env),
        cmocka_unit_test_setup(test_example_json, clean_env),
        cmocka_unit_test_setup(test_design_sample, clean_env),
        cmocka_unit_test_setup(test_defaults, clean_env),
        cmocka_unit_test_setup(test_window_defaults, clean_env),
        cmocka_unit_test_setup(test_all_keys, clean_env),
        cmocka_unit_test_setup(test_unknown_keys, clean_env),
        cmocka_unit_test_setup(test_wrong_types, clean_env),
        cmocka_unit_test_setup(test_ranges, clean_env),
        cmocka_unit_test_setup(test_required, clean_env),
        cmocka_unit_test_setup(test_lock_names, clean_env),
        cmocka_unit_test_setup(test_listen, clean_env),
        cmocka_unit_test_setup(test_anonymous_rule, clean_env),
        cmocka_unit_test_setup(test_principal_secrets, clean_env),
        cmocka_unit_test_setup(test_principals, clean_env),
        cmocka_unit_test_setup(test_admin_listen, clean_env),
        cmocka_unit_test_setup(test_syntax_errors, clean_env),
        cmocka_unit_test_setup(test_load_file_errors, clean_env),
    };
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
