/*
 * tests/unit/gateway/base/config_upstream_test.c: the configuration loader's
 * upstream section: the endpoint's form, addressing, checksum_trailers and
 * client choices, and where the upstream keys come from (inline, the default
 * and named environment variables, a secret file).  The rest of the loader
 * is config_test.c's; both use tests/unit/gateway/config_harness.h.
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
#include "tests/unit/gateway/config_harness.h"

static void
test_endpoint(void **state)
{
    (void)state;
    static const struct {
        const char *endpoint;
        const char *err; /* NULL: valid */
        const char *stored;
    } cases[] = {
        {"http://127.0.0.1:7480", NULL, "http://127.0.0.1:7480"},
        {"https://s3.amazonaws.com", NULL, "https://s3.amazonaws.com"},
        {"http://h:1/", NULL, "http://h:1"},
        {"https://[::1]:443", NULL, "https://[::1]:443"},
        {"ftp://h", "must start with http:// or https://", NULL},
        {"HTTP://h", "must start with http:// or https://", NULL},
        {"h:80", "must start with http:// or https://", NULL},
        {"http://", "missing host", NULL},
        {"http://:80", "missing host", NULL},
        {"http://h/path", "must be scheme://host[:port] with no path, query or user", NULL},
        {"http://u@h", "must be scheme://host[:port] with no path, query or user", NULL},
        {"http://h?x", "must be scheme://host[:port] with no path, query or user", NULL},
        {"http://h:99999", "bad port", NULL},
        {"http://h:0", "bad port", NULL},
        {"http://h:", "bad port", NULL},
        {"http://[::1", "bad IPv6 address", NULL},
        {"http://[::1]x", "bad host", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char json[512];
        (void)snprintf(json, sizeof(json),
                       "{\"listen\":[\"127.0.0.1:1\"],\"data_dir\":\"d\",\"upstream\":{"
                       "\"endpoint\":\"%s\",\"access_key\":\"a\",\"secret_key\":\"s\"}}",
                       cases[i].endpoint);
        if (cases[i].err == NULL) {
            struct gw_config *cfg = load_ok(json);
            assert_string_equal(cfg->upstream.endpoint, cases[i].stored);
            gw_config_free(cfg);
        } else {
            char want[256];
            (void)snprintf(want, sizeof(want), "upstream.endpoint: %s", cases[i].err);
            expect_err(json, want);
        }
    }
}

/* upstream_with - into json: a configuration whose upstream at http://h has key set to value. */
static void
upstream_with(char *json, size_t size, const char *key, const char *value)
{
    (void)snprintf(json, size,
                   "{\"listen\":[\"127.0.0.1:1\"],\"data_dir\":\"d\",\"upstream\":{"
                   "\"endpoint\":\"http://h\",\"%s\":\"%s\",\"access_key\":\"a\",\"secret_key\":"
                   "\"s\"}}",
                   key, value);
}

/* upstream.addressing, checksum_trailers and client: the names each takes, and no other. */
static void
test_upstream_choices(void **state)
{
    (void)state;
    char json[256];
    upstream_with(json, sizeof(json), "addressing", "host");
    expect_err(json, "upstream.addressing: must be \"path\" or \"virtual\"");
    upstream_with(json, sizeof(json), "checksum_trailers", "on");
    expect_err(json, "upstream.checksum_trailers: must be \"auto\" or \"forward\" or \"verify\"");
    const char *modes[] = {"auto", "forward", "verify"};
    for (int i = 0; i < 3; i++) {
        upstream_with(json, sizeof(json), "checksum_trailers", modes[i]);
        struct gw_config *cfg = load_ok(json);
        assert_int_equal(cfg->upstream.checksum_trailers, i == 0   ? GW_TRAILERS_AUTO
                                                          : i == 1 ? GW_TRAILERS_FORWARD
                                                                   : GW_TRAILERS_VERIFY);
        gw_config_free(cfg);
    }
    upstream_with(json, sizeof(json), "client", "libcurl");
    expect_err(json, "upstream.client: must be \"lean\" or \"curl\"");
    const char *clients[] = {"lean", "curl"};
    for (int i = 0; i < 2; i++) {
        upstream_with(json, sizeof(json), "client", clients[i]);
        struct gw_config *cfg = load_ok(json);
        assert_int_equal(cfg->upstream.client,
                         i == 0 ? GW_UPSTREAM_CLIENT_LEAN : GW_UPSTREAM_CLIENT_CURL);
        gw_config_free(cfg);
    }
}

static void
test_upstream_credentials(void **state)
{
    (void)state;
    const char *pre = "{\"listen\":[\"127.0.0.1:1\"],\"data_dir\":\"d\",\"upstream\":{"
                      "\"endpoint\":\"http://h\"";
    char json[512];

    /* nothing configured and nothing in the environment: name the key and the variable */
    (void)snprintf(json, sizeof(json), "%s}}", pre);
    expect_err(json,
               "upstream.access_key: not given, and environment variable AWS_ACCESS_KEY_ID is "
               "not set");
    assert_int_equal(setenv("AWS_ACCESS_KEY_ID", "envak", 1), 0);
    expect_err(json, "upstream.secret_key: not given, and environment variable "
                     "AWS_SECRET_ACCESS_KEY is not set");
    assert_int_equal(setenv("AWS_SECRET_ACCESS_KEY", "envsk", 1), 0);
    struct gw_config *cfg = load_ok(json);
    assert_string_equal(cfg->upstream.access_key, "envak");
    assert_string_equal(cfg->upstream.secret_key, "envsk");
    assert_null(cfg->upstream.session_token);
    gw_config_free(cfg);
    /* the default session token goes with the default secret */
    assert_int_equal(setenv("AWS_SESSION_TOKEN", "envtok", 1), 0);
    cfg = load_ok(json);
    assert_string_equal(cfg->upstream.session_token, "envtok");
    gw_config_free(cfg);
    /* ... but not with inline keys */
    (void)snprintf(json, sizeof(json), "%s,\"access_key\":\"a\",\"secret_key\":\"s\"}}", pre);
    cfg = load_ok(json);
    assert_null(cfg->upstream.session_token);
    gw_config_free(cfg);

    /* named variables */
    (void)snprintf(json, sizeof(json),
                   "%s,\"access_key_env\":\"FG_TEST_AK\",\"secret_key_env\":\"FG_TEST_SECRET\"}}",
                   pre);
    expect_err(json, "upstream.access_key_env: environment variable FG_TEST_AK is not set");
    assert_int_equal(setenv("FG_TEST_AK", "namedak", 1), 0);
    expect_err(json, "upstream.secret_key_env: environment variable FG_TEST_SECRET is not set");
    assert_int_equal(setenv("FG_TEST_SECRET", "", 1), 0);
    expect_err(json, "upstream.secret_key_env: environment variable FG_TEST_SECRET is not set");
    assert_int_equal(setenv("FG_TEST_SECRET", "namedsk", 1), 0);
    cfg = load_ok(json);
    assert_string_equal(cfg->upstream.access_key, "namedak");
    assert_string_equal(cfg->upstream.secret_key, "namedsk");
    assert_null(cfg->upstream.session_token);
    gw_config_free(cfg);
    (void)unsetenv("FG_TEST_AK");

    /* explicit session token variable: must be set */
    (void)snprintf(json, sizeof(json),
                   "%s,\"access_key\":\"a\",\"secret_key\":\"s\",\"session_token_env\":"
                   "\"FG_TEST_TOKEN\"}}",
                   pre);
    expect_err(json, "upstream.session_token_env: environment variable FG_TEST_TOKEN is not set");
    assert_int_equal(setenv("FG_TEST_TOKEN", "tok", 1), 0);
    cfg = load_ok(json);
    assert_string_equal(cfg->upstream.session_token, "tok");
    gw_config_free(cfg);

    /* conflicting sources */
    (void)snprintf(json, sizeof(json), "%s,\"access_key\":\"a\",\"access_key_env\":\"X\"}}", pre);
    expect_err(json, "upstream.access_key_env: give access_key or access_key_env, not both");
    (void)snprintf(json, sizeof(json),
                   "%s,\"access_key\":\"a\",\"secret_key\":\"s\",\"secret_key_env\":\"X\"}}", pre);
    expect_err(json, "upstream.secret_key: give one of secret_key, secret_key_env, "
                     "secret_key_file");
    (void)snprintf(json, sizeof(json), "%s,\"access_key\":\"a\",\"secret_key_env\":\"1X\"}}", pre);
    expect_err(json, "upstream.secret_key_env: must be an environment variable name");
}

/* The upstream secret from a file. */
static void
test_upstream_secret_file(void **state)
{
    (void)state;
    char json[1024];
    char *path = write_temp("upstream-secret\n");
    (void)snprintf(json, sizeof(json),
                   "{\"listen\":[\"127.0.0.1:1\"],\"data_dir\":\"d\",\"upstream\":{\"endpoint\":"
                   "\"http://h\",\"access_key\":\"a\",\"secret_key_file\":\"%s\"}}",
                   path);
    struct gw_config *cfg = load_ok(json);
    assert_string_equal(cfg->upstream.secret_key, "upstream-secret");
    gw_config_free(cfg);
    assert_int_equal(unlink(path), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_endpoint, clean_env),
        cmocka_unit_test_setup(test_upstream_choices, clean_env),
        cmocka_unit_test_setup(test_upstream_credentials, clean_env),
        cmocka_unit_test_setup(test_upstream_secret_file, clean_env),
    };
    return cmocka_run_group_tests_name("config_upstream", tests, NULL, NULL);
}
