/*
 * gateway/base/config_upstream.c: the "upstream" section of the
 * configuration: the endpoint's form, where the credentials come from (the
 * environment or a file, never the file itself), the client engine.
 */
#include "gateway/base/config.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/lockname.h"
#include "common/num.h"
#include "gateway/base/config_check.h"
#include "gateway/base/config_int.h"

/* ---- upstream ---- */

/* Where the upstream credentials come from; env names and file paths, never secrets. */
struct upstream_src {
    char *access_key_env;    /* owned or NULL */
    char *secret_key_env;    /* owned or NULL */
    char *secret_key_file;   /* owned or NULL */
    char *session_token_env; /* owned or NULL */
};

static const struct gw_json_table_choice addressing_choices[] = {
    {"path", GW_ADDR_PATH},
    {"virtual", GW_ADDR_VIRTUAL},
    {NULL, 0},
};

static const struct gw_json_table_choice trailer_choices[] = {
    {"auto", GW_TRAILERS_AUTO},
    {"forward", GW_TRAILERS_FORWARD},
    {"verify", GW_TRAILERS_VERIFY},
    {NULL, 0},
};

static const struct gw_json_table_choice client_choices[] = {
    {"lean", GW_UPSTREAM_CLIENT_LEAN},
    {"curl", GW_UPSTREAM_CLIENT_CURL},
    {NULL, 0},
};

#define UP(m) offsetof(struct gw_config, upstream.m)
#define US(m) offsetof(struct upstream_src, m)
static const struct gw_json_table_field upstream_fields[] = {
    FSTR("endpoint", UP(endpoint), REQ, 1, 0, NULL, V_NONE),
    FSTR("region", UP(region), 0, 1, 64, "us-east-1", V_TOKEN),
    FENUM("addressing", UP(addressing), 0, GW_ADDR_PATH, addressing_choices),
    FSTR("access_key", UP(access_key), 0, 1, 0, NULL, V_TOKEN),
    FSTR("access_key_env", US(access_key_env), SCR, 1, 0, NULL, V_ENV),
    FSTR("secret_key", UP(secret_key), 0, 1, 0, NULL, V_NONE),
    FSTR("secret_key_env", US(secret_key_env), SCR, 1, 0, NULL, V_ENV),
    FSTR("secret_key_file", US(secret_key_file), SCR, 1, 0, NULL, V_NONE),
    FSTR("session_token_env", US(session_token_env), SCR, 1, 0, NULL, V_ENV),
    FSTR("ca_file", UP(ca_file), 0, 1, 0, NULL, V_NONE),
    FBOOL("tls_verify", UP(tls_verify), true),
    FU32("connect_timeout_ms", UP(connect_timeout_ms), 100, 600000, 5000),
    FU32("timeout_ms", UP(timeout_ms), 100, 86400000, 60000),
    FU32("max_connections", UP(max_connections), 1, 65536, 256),
    FENUM("checksum_trailers", UP(checksum_trailers), 0, GW_TRAILERS_AUTO, trailer_choices),
    FENUM("client", UP(client), 0, GW_UPSTREAM_CLIENT_LEAN, client_choices),
};
#undef US
#undef UP

/* check_endpoint - scheme http/https, a host, an optional port, no path/query/userinfo. */
static int
check_endpoint(struct gw_json_table_ctx *c, const char *path, char *ep)
{
    const char *rest;
    if (strncmp(ep, "http://", 7) == 0) {
        rest = ep + 7;
    } else if (strncmp(ep, "https://", 8) == 0) {
        rest = ep + 8;
    } else {
        return gw_json_table_err(c, path, "must start with http:// or https://");
    }
    size_t n = strlen(ep);
    if (n > 0 && ep[n - 1] == '/') {
        ep[n - 1] = '\0'; /* "http://h:1/" means "http://h:1" */
    }
    if (strpbrk(rest, "/?#@ ") != NULL) {
        return gw_json_table_err(c, path,
                                 "must be scheme://host[:port] with no path, query or user");
    }
    const char *hostend;
    if (rest[0] == '[') {
        hostend = strchr(rest, ']');
        if (hostend == NULL || hostend == rest + 1) {
            return gw_json_table_err(c, path, "bad IPv6 address");
        }
        hostend++;
    } else {
        hostend = strchr(rest, ':');
        if (hostend == NULL) {
            hostend = rest + strlen(rest);
        }
        if (hostend == rest) {
            return gw_json_table_err(c, path, "missing host");
        }
    }
    if (*hostend == ':') {
        uint64_t port = 0;
        if (parse_u64(hostend + 1, 1, 65535, &port) != 0) {
            return gw_json_table_err(c, path, "bad port");
        }
    } else if (*hostend != '\0') {
        return gw_json_table_err(c, path, "bad host");
    }
    return 0;
}

/* GW_JSON_TABLE_CUSTOM for "upstream" (base: &cfg->upstream) */
int
gw_config_on_upstream(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    struct gw_config *cfg =
        (struct gw_config *)(void *)((char *)dst - offsetof(struct gw_config, upstream));
    struct upstream_src src = {0};
    char kpath[GW_JSON_TABLE_MAX_PATH];
    uint64_t seen = 0;
    int rc;

    if (v == NULL) {
        return gw_json_table_err(c, path, "required");
    }
    rc = gw_json_table_walk(c, path, v, upstream_fields, GW_JSON_TABLE_NFIELDS(upstream_fields),
                            cfg, &src, &seen);
    if (rc != 0) {
        goto fail;
    }
    gw_json_table_join(kpath, sizeof(kpath), path, "endpoint");
    rc = check_endpoint(c, kpath, cfg->upstream.endpoint);
    if (rc != 0) {
        goto fail;
    }

    /* access key: inline, or a named variable, or AWS_ACCESS_KEY_ID */
    if (cfg->upstream.access_key != NULL && src.access_key_env != NULL) {
        gw_json_table_join(kpath, sizeof(kpath), path, "access_key_env");
        rc = gw_json_table_err(c, kpath, "give access_key or access_key_env, not both");
        goto fail;
    }
    if (cfg->upstream.access_key == NULL) {
        const char *var = src.access_key_env != NULL ? src.access_key_env : "AWS_ACCESS_KEY_ID";
        gw_json_table_join(kpath, sizeof(kpath), path,
                           src.access_key_env != NULL ? "access_key_env" : "access_key");
        const char *val = getenv(var);
        if (src.access_key_env == NULL && (val == NULL || val[0] == '\0')) {
            rc = gw_json_table_err(c, kpath, "not given, and environment variable %s is not set",
                                   var);
            goto fail;
        }
        rc = gw_config_secret_from_env(c, kpath, var, &cfg->upstream.access_key);
        if (rc != 0) {
            goto fail;
        }
        if (!gw_config_valid_token(cfg->upstream.access_key)) {
            rc = gw_json_table_err(c, kpath, "the access key in %s is not printable", var);
            goto fail;
        }
    }

    /* secret key: exactly one of inline, named variable, file; else AWS_SECRET_ACCESS_KEY */
    int nsrc = (cfg->upstream.secret_key != NULL) + (src.secret_key_env != NULL) +
               (src.secret_key_file != NULL);
    if (nsrc > 1) {
        gw_json_table_join(kpath, sizeof(kpath), path, "secret_key");
        rc = gw_json_table_err(c, kpath, "give one of secret_key, secret_key_env, secret_key_file");
        goto fail;
    }
    bool default_env = false;
    if (src.secret_key_file != NULL) {
        gw_json_table_join(kpath, sizeof(kpath), path, "secret_key_file");
        rc = gw_config_secret_from_file(c, kpath, src.secret_key_file, &cfg->upstream.secret_key);
    } else if (cfg->upstream.secret_key == NULL) {
        default_env = src.secret_key_env == NULL;
        gw_json_table_join(kpath, sizeof(kpath), path,
                           default_env ? "secret_key" : "secret_key_env");
        const char *dv = getenv("AWS_SECRET_ACCESS_KEY");
        if (default_env && (dv == NULL || dv[0] == '\0')) {
            rc = gw_json_table_err(
                c, kpath, "not given, and environment variable AWS_SECRET_ACCESS_KEY is not set");
            goto fail;
        }
        rc = gw_config_secret_from_env(c, kpath,
                                       default_env ? "AWS_SECRET_ACCESS_KEY" : src.secret_key_env,
                                       &cfg->upstream.secret_key);
    }
    if (rc != 0) {
        goto fail;
    }

    /*
     * Session token: a named variable must be set.  The default
     * AWS_SESSION_TOKEN is used only with the default AWS_SECRET_ACCESS_KEY,
     * so a stray AWS session in a developer's shell is not sent along with
     * keys that came from somewhere else.
     */
    if (src.session_token_env != NULL) {
        gw_json_table_join(kpath, sizeof(kpath), path, "session_token_env");
        rc = gw_config_secret_from_env(c, kpath, src.session_token_env,
                                       &cfg->upstream.session_token);
        if (rc != 0) {
            goto fail;
        }
    } else if (default_env) {
        const char *tok = getenv("AWS_SESSION_TOKEN");
        if (tok != NULL && tok[0] != '\0') {
            cfg->upstream.session_token = strdup(tok);
            if (cfg->upstream.session_token == NULL) {
                rc = gw_json_table_nomem(c);
                goto fail;
            }
        }
    }
fail:
    free(src.access_key_env);
    free(src.secret_key_env);
    free(src.secret_key_file);
    free(src.session_token_env);
    return rc;
}
