/*
 * tests/unit/gateway/config_harness.h: what the configuration loader's tests
 * (tests/unit/gateway/base/config_test.c, config_upstream_test.c) share: the
 * smallest valid configuration (MIN_CONFIG, MIN_PREFIX, UP_INLINE), the
 * cmocka setup that clears the key variables (clean_env), loading that must
 * work or fail with a given message (load_ok, expect_err, expect_err_prefix)
 * and a secret file (write_temp).
 *
 * Each test binary is built from one .c file, so everything here is
 * static inline (no -Wunused-function for what an includer does not use).
 */
#ifndef TESTS_UNIT_GATEWAY_CONFIG_HARNESS_H
#define TESTS_UNIT_GATEWAY_CONFIG_HARNESS_H

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

/* A valid upstream section with inline (development) keys. */
#define UP_INLINE                                                                                  \
    "\"upstream\":{\"endpoint\":\"http://127.0.0.1:7480\",\"access_key\":\"AK\","                  \
    "\"secret_key\":\"SK\"}"
/* The smallest valid configuration, followed by more top-level keys. */
#define MIN_PREFIX "{\"listen\":[\"127.0.0.1:9000\"],\"data_dir\":\"/tmp/fg\"," UP_INLINE
#define MIN_CONFIG MIN_PREFIX "}"

/* clean_env - cmocka setup: unset every variable a configuration may read its keys from. */
static inline int
clean_env(void **state)
{
    static const char *const env_vars[] = {
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "FENCEGATE_UPSTREAM_ACCESS_KEY",
        "FENCEGATE_UPSTREAM_SECRET_KEY",
        "FENCEGATE_ORDERS_WORKER_SECRET",
        "FENCEGATE_OPERATOR_SECRET",
        "FG_TEST_SECRET",
        "FG_TEST_TOKEN",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++) {
        (void)unsetenv(env_vars[i]);
    }
    return 0;
}

/* load_ok - json loads; the configuration, for gw_config_free. */
static inline struct gw_config *
load_ok(const char *json)
{
    char err[512] = "";
    struct gw_config *cfg = NULL;
    int rc = gw_config_load_string(json, &cfg, err, sizeof(err));
    if (rc != 0) {
        fail_msg("unexpected error %d: %s\nconfig: %s", rc, err, json);
    }
    assert_non_null(cfg);
    return cfg;
}

/* expect_err - loading json fails with ERR_INVAL and exactly the message want. */
static inline void
expect_err(const char *json, const char *want)
{
    char err[512] = "";
    struct gw_config *cfg = (struct gw_config *)(uintptr_t)1;
    int rc = gw_config_load_string(json, &cfg, err, sizeof(err));
    if (rc != ERR_INVAL || strcmp(err, want) != 0) {
        fail_msg("config %s\n  want ERR_INVAL \"%s\"\n  got %d \"%s\"", json, want, rc, err);
    }
    assert_null(cfg);
}

/* expect_err_prefix - as expect_err, comparing only the start of the message. */
static inline void
expect_err_prefix(const char *json, const char *want)
{
    char err[512] = "";
    struct gw_config *cfg = NULL;
    int rc = gw_config_load_string(json, &cfg, err, sizeof(err));
    if (rc != ERR_INVAL || strncmp(err, want, strlen(want)) != 0) {
        fail_msg("config %s\n  want ERR_INVAL \"%s...\"\n  got %d \"%s\"", json, want, rc, err);
    }
    assert_null(cfg);
}

/* write_temp - a new file under /tmp holding content; its path, valid until the next call. */
static inline char *
write_temp(const char *content)
{
    static char path[64];
    (void)snprintf(path, sizeof(path), "/tmp/fg-config-test-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t len = strlen(content);
    assert_int_equal(write(fd, content, len), (ssize_t)len);
    assert_int_equal(close(fd), 0);
    return path;
}

#endif
