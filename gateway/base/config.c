/*
 * gateway/base/config.c: the JSON configuration loader (STYLE R9).
 *
 * Every JSON object of the configuration is described by a table of fields
 * ({name, type, offset, min, max, default}) that gateway/base/json_table.c's
 * walker (gw_json_table_walk()) applies: unknown keys, wrong types and out-of-range
 * values fail naming the full key path ("upstream.regoin: unknown key"),
 * absent keys get their defaults.  This file holds the tables of gw_config's
 * sections; arrays of objects (listen, principals, fences) and the
 * cross-field rules (secret sources, lease ordering, the anonymous-access
 * rule of DESIGN.md "Authentication") are checked here after the walk.
 *
 * Secrets (upstream keys, session token, principal secrets) are wiped before
 * they are freed.  <jansson.h> stays in this file and gateway/json*.c:
 * json_error_t is turned into errbuf text here (STYLE R4).
 */
#include "gateway/base/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/lockname.h"
#include "common/num.h"
#include "gateway/base/config_check.h"
#include "gateway/base/json_table.h"
#include "gateway/base/metrics.h"

#define CONFIG_MAX_FILE_BYTES                                                                      \
    ((size_t)4 * 1024 * 1024) /* a config file larger than this is refused */

/*
 * Table rows, one per key (Redis's createIntConfig idea), positional so each
 * fits a line: FSTR(name, offset, flags, min_len, max_len, default, check, check_msg) ...
 */
/* clang-format off */
#define FSTR(...)  FSTR_(__VA_ARGS__) /* indirection: each V_* below is two arguments */
#define FLIST(...) FLIST_(__VA_ARGS__)
#define FSTR_(n, off, fl, lo, hi, def, chk, msg) {n, GW_JSON_TABLE_STR, fl, off, lo, hi, 0, def, chk, msg, NULL, NULL}
#define FLIST_(n, off, chk, msg)     {n, GW_JSON_TABLE_STRLIST, 0, off, 0, 0, 0, NULL, chk, msg, NULL, NULL}
#define FBOOL(n, off, def)           {n, GW_JSON_TABLE_BOOL, 0, off, 0, 0, def, NULL, NULL, NULL, NULL, NULL}
#define FU32(n, off, lo, hi, def)    {n, GW_JSON_TABLE_U32, 0, off, lo, hi, def, NULL, NULL, NULL, NULL, NULL}
#define FU64(n, off, lo, hi, def)    {n, GW_JSON_TABLE_U64, 0, off, lo, hi, def, NULL, NULL, NULL, NULL, NULL}
#define FENUM(n, off, fl, def, chs)  {n, GW_JSON_TABLE_ENUM, fl, off, 0, 0, def, NULL, NULL, NULL, chs, NULL}
#define FCUSTOM(n, off, fn)          {n, GW_JSON_TABLE_CUSTOM, 0, off, 0, 0, 0, NULL, NULL, NULL, NULL, fn}
/* clang-format on */

/* check functions and their messages, as FSTR/FLIST argument pairs */
#define V_NONE     NULL, NULL
#define V_TOKEN    gw_config_valid_token, "printable ASCII without spaces or quotes, at most 255 bytes"
#define V_ENV      gw_config_valid_env_name, "an environment variable name"
#define V_BUCKET   gw_config_valid_bucket, "a bucket name ([A-Za-z0-9._-]{1,255})"
#define V_LOCK     lock_name_valid, "a lock name ([A-Za-z0-9._-]{1,128}, not \".\" or \"..\")"
#define V_DOMAIN   gw_config_valid_domain, "a DNS name such as \"s3.example.com\""
#define V_AKEY     gw_config_valid_access_key, "an access key ([A-Za-z0-9._~+-]{1,128})"
#define V_LOGLEVEL gw_config_valid_log_level, "\"debug\", \"info\", \"warn\" or \"error\""
#define V_LOGFMT   gw_config_valid_log_format, "\"text\" or \"json\""
#define REQ        GW_JSON_TABLE_REQUIRED
#define SCR        GW_JSON_TABLE_SCRATCH

/* ---- listen ---- */

/* The object form of a listen entry; address is scratch, the TLS files go straight in. */
struct listen_src {
    char *address; /* owned until parsed */
};

static const struct gw_json_table_field listen_fields[] = {
    FSTR("address", offsetof(struct listen_src, address), REQ | SCR, 1, 0, NULL, V_NONE),
    FSTR("tls_cert", offsetof(struct gw_listen, tls_cert), 0, 1, 0, NULL, V_NONE),
    FSTR("tls_key", offsetof(struct gw_listen, tls_key), 0, 1, 0, NULL, V_NONE),
};

static int
parse_listen_entry(struct gw_json_table_ctx *c, const char *path, json_t *v, struct gw_listen *l)
{
    if (json_is_string(v)) {
        return gw_config_parse_address(c, path, json_string_value(v), l);
    }
    if (!json_is_object(v)) {
        return gw_json_table_err(c, path, "expected \"host:port\" or an object with \"address\"");
    }
    struct listen_src src = {0};
    char kpath[GW_JSON_TABLE_MAX_PATH];
    int rc = gw_json_table_walk(c, path, v, listen_fields, GW_JSON_TABLE_NFIELDS(listen_fields), l,
                                &src, NULL);
    if (rc != 0) {
        goto fail;
    }
    gw_json_table_join(kpath, sizeof(kpath), path, "address");
    rc = gw_config_parse_address(c, kpath, src.address, l);
    if (rc != 0) {
        goto fail;
    }
    if ((l->tls_cert == NULL) != (l->tls_key == NULL)) {
        gw_json_table_join(kpath, sizeof(kpath), path,
                           l->tls_cert == NULL ? "tls_cert" : "tls_key");
        rc = gw_json_table_err(c, kpath, "required with %s",
                               l->tls_cert == NULL ? "tls_key" : "tls_cert");
        goto fail;
    }
fail:
    free(src.address);
    return rc;
}

/* A non-empty array of listen entries into l[0..*n). */
static int
parse_listen_array(struct gw_json_table_ctx *c, const char *path, json_t *v, struct gw_listen *l,
                   size_t *n)
{
    if (!json_is_array(v) || json_array_size(v) == 0) {
        return gw_json_table_err(c, path, "expected a non-empty array");
    }
    if (json_array_size(v) > GW_CONFIG_MAX_LISTEN) {
        return gw_json_table_err(c, path, "at most %d entries", GW_CONFIG_MAX_LISTEN);
    }
    for (size_t i = 0; i < json_array_size(v); i++) {
        char ipath[GW_JSON_TABLE_MAX_PATH];
        gw_json_table_index_path(ipath, sizeof(ipath), path, i);
        /* count first: a partly built entry is freed with the config */
        *n = i + 1;
        int rc = parse_listen_entry(c, ipath, json_array_get(v, i), &l[i]);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

/* GW_JSON_TABLE_CUSTOM for "listen" (base: struct gw_config) */
static int
on_listen(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    struct gw_config *cfg =
        (struct gw_config *)(void *)((char *)dst - offsetof(struct gw_config, listen));
    if (v == NULL) {
        return gw_json_table_err(c, path, "required");
    }
    return parse_listen_array(c, path, v, cfg->listen, &cfg->nlisten);
}

/* GW_JSON_TABLE_CUSTOM for "admin_listen" (base: struct gw_config); optional */
static int
on_admin_listen(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    struct gw_config *cfg =
        (struct gw_config *)(void *)((char *)dst - offsetof(struct gw_config, admin_listen));
    if (v == NULL) {
        return 0;
    }
    return parse_listen_array(c, path, v, cfg->admin_listen, &cfg->nadmin_listen);
}

/* Whether a and b may be the same socket address: same port, and the same host or a wildcard. */
static bool
listen_overlap(const struct gw_listen *a, const struct gw_listen *b)
{
    static const char *const any[] = {"0.0.0.0", "::", "0:0:0:0:0:0:0:0"};
    if (a->port != b->port || a->port == 0) {
        return false;
    }
    if (strcasecmp(a->host, b->host) == 0) {
        return true;
    }
    for (size_t i = 0; i < sizeof(any) / sizeof(any[0]); i++) {
        if (strcmp(a->host, any[i]) == 0 || strcmp(b->host, any[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* check_admin_listen - no admin listener on (or under a wildcard of) an S3 listener's address. */
static int
check_admin_listen(struct gw_json_table_ctx *c, const struct gw_config *cfg)
{
    for (size_t i = 0; i < cfg->nadmin_listen; i++) {
        for (size_t j = 0; j < cfg->nlisten; j++) {
            if (listen_overlap(&cfg->admin_listen[i], &cfg->listen[j])) {
                char ipath[GW_JSON_TABLE_MAX_PATH];
                gw_json_table_index_path(ipath, sizeof(ipath), "admin_listen", i);
                return gw_json_table_err(c, ipath, "overlaps listen[%zu] (port %u)", j,
                                         (unsigned)cfg->listen[j].port);
            }
        }
        for (size_t j = 0; j < i; j++) {
            if (listen_overlap(&cfg->admin_listen[i], &cfg->admin_listen[j])) {
                char ipath[GW_JSON_TABLE_MAX_PATH];
                gw_json_table_index_path(ipath, sizeof(ipath), "admin_listen", i);
                return gw_json_table_err(c, ipath, "overlaps admin_listen[%zu]", j);
            }
        }
    }
    return 0;
}

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

static const struct gw_json_table_choice cond_choices[] = {
    {"auto", GW_COND_AUTO},
    {"on", GW_COND_ON},
    {"off", GW_COND_OFF},
    {NULL, 0},
};

static const struct gw_json_table_choice cond_rule_choices[] = {
    {"inherit", GW_COND_RULE_INHERIT},
    {"on", GW_COND_RULE_ON},
    {"off", GW_COND_RULE_OFF},
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
static int
on_upstream(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
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

/* ---- principals ---- */

struct principal_src {
    char *secret_key_env;  /* owned or NULL */
    char *secret_key_file; /* owned or NULL */
};

#define PR(m) offsetof(struct gw_principal, m)
#define PS(m) offsetof(struct principal_src, m)
static const struct gw_json_table_field principal_fields[] = {
    FSTR("name", PR(name), REQ, 1, 0, NULL, V_TOKEN),
    FSTR("access_key", PR(access_key), REQ, 1, 0, NULL, V_AKEY),
    FSTR("secret_key", PR(secret_key), 0, 1, 0, NULL, V_NONE),
    FSTR("secret_key_env", PS(secret_key_env), SCR, 1, 0, NULL, V_ENV),
    FSTR("secret_key_file", PS(secret_key_file), SCR, 1, 0, NULL, V_NONE),
    FLIST("buckets", PR(buckets), V_BUCKET),
    FLIST("locks", PR(locks), V_LOCK),
    FBOOL("admin", PR(admin), false),
};
#undef PR
#undef PS

static int
parse_principal(struct gw_json_table_ctx *c, const char *path, json_t *v, struct gw_principal *p)
{
    struct principal_src src = {0};
    char kpath[GW_JSON_TABLE_MAX_PATH];
    int rc = gw_json_table_walk(c, path, v, principal_fields,
                                GW_JSON_TABLE_NFIELDS(principal_fields), p, &src, NULL);
    if (rc != 0) {
        goto fail;
    }
    int nsrc =
        (p->secret_key != NULL) + (src.secret_key_env != NULL) + (src.secret_key_file != NULL);
    if (nsrc != 1) {
        gw_json_table_join(kpath, sizeof(kpath), path, "secret_key");
        rc = gw_json_table_err(c, kpath,
                               "give exactly one of secret_key, secret_key_env, secret_key_file");
        goto fail;
    }
    if (src.secret_key_env != NULL) {
        gw_json_table_join(kpath, sizeof(kpath), path, "secret_key_env");
        rc = gw_config_secret_from_env(c, kpath, src.secret_key_env, &p->secret_key);
    } else if (src.secret_key_file != NULL) {
        gw_json_table_join(kpath, sizeof(kpath), path, "secret_key_file");
        rc = gw_config_secret_from_file(c, kpath, src.secret_key_file, &p->secret_key);
    }
fail:
    free(src.secret_key_env);
    free(src.secret_key_file);
    return rc;
}

/* gw_json_table_entry_fn for "principals": one principal, unique in access key and name */
static int
principal_entry(struct gw_json_table_ctx *c, const char *path, const char *ipath, size_t i,
                json_t *v, void *entries, void *arg)
{
    struct gw_config *cfg = arg;
    struct gw_principal *all = entries;
    cfg->nprincipals = i + 1;
    struct gw_principal *p = &all[i];
    int rc = parse_principal(c, ipath, v, p);
    if (rc != 0) {
        return rc;
    }
    for (size_t j = 0; j < i; j++) {
        if (strcmp(all[j].access_key, p->access_key) == 0) {
            char kpath[GW_JSON_TABLE_MAX_PATH];
            gw_json_table_join(kpath, sizeof(kpath), ipath, "access_key");
            return gw_json_table_err(c, kpath, "same access key as %s[%zu]", path, j);
        }
        if (strcmp(all[j].name, p->name) == 0) {
            char kpath[GW_JSON_TABLE_MAX_PATH];
            gw_json_table_join(kpath, sizeof(kpath), ipath, "name");
            return gw_json_table_err(c, kpath, "same name as %s[%zu]", path, j);
        }
    }
    return 0;
}

/* GW_JSON_TABLE_CUSTOM for "principals" (base: &cfg->principals) */
static int
on_principals(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    struct gw_config *cfg =
        (struct gw_config *)(void *)((char *)dst - offsetof(struct gw_config, principals));
    void *entries = NULL;
    int rc = gw_json_table_walk_array(c, path, v, sizeof(*cfg->principals), principal_entry, cfg,
                                      &entries);
    cfg->principals = entries; /* on failure too: the counted entries are freed with cfg */
    return rc;
}

/* ---- election ---- */

static const struct gw_json_table_choice backend_choices[] = {
    {"s3", GW_ELECT_S3},
    {"dir", GW_ELECT_DIR},
    {NULL, 0},
};

/* GW_JSON_TABLE_CUSTOM for "election.shared": its default depends on the backend,
 * so absence is kept (-1) and resolved by check_windows. */
static int
on_shared(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    int *opt = dst;
    if (v == NULL) {
        *opt = -1;
        return 0;
    }
    if (!json_is_boolean(v)) {
        return gw_json_table_err(c, path, "expected true or false");
    }
    *opt = json_is_true(v) ? 1 : 0;
    return 0;
}

#define EL(m)     offsetof(struct gw_config, election.m)
#define LEASE_MAX 86400000u /* one day */
static const struct gw_json_table_field election_fields[] = {
    FENUM("backend", EL(backend), REQ, GW_ELECT_NONE, backend_choices),
    FSTR("bucket", EL(bucket), 0, 1, 0, NULL, V_BUCKET),
    FSTR("prefix", EL(prefix), 0, 0, 512, "fencegate/", V_NONE),
    FSTR("path", EL(path), 0, 1, 0, NULL, V_NONE),
    FU32("default_lease_ms", EL(default_lease_ms), 10, LEASE_MAX, 15000),
    FU32("min_lease_ms", EL(min_lease_ms), 10, LEASE_MAX, 4500),
    FU32("max_lease_ms", EL(max_lease_ms), 10, LEASE_MAX, 300000),
    FU32("keep_epochs", EL(keep_epochs), 1, 1000000, 5),
    FCUSTOM("shared", EL(shared_opt), on_shared),
    FU32("shared_window_ms", EL(shared_window_ms), 100, LEASE_MAX, 5000),
};
#undef EL

/* GW_JSON_TABLE_CUSTOM for "election" (base: &cfg->election); absent means backend NONE */
static int
on_election(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    struct gw_config *cfg =
        (struct gw_config *)(void *)((char *)dst - offsetof(struct gw_config, election));
    char kpath[GW_JSON_TABLE_MAX_PATH];
    if (v == NULL) {
        /* defaults for the lease numbers; "backend" is the one required key */
        int rc = gw_json_table_walk(c, path, NULL, election_fields + 1,
                                    GW_JSON_TABLE_NFIELDS(election_fields) - 1, cfg, NULL, NULL);
        cfg->election.backend = GW_ELECT_NONE;
        return rc;
    }
    int rc = gw_json_table_walk(c, path, v, election_fields, GW_JSON_TABLE_NFIELDS(election_fields),
                                cfg, NULL, NULL);
    if (rc != 0) {
        return rc;
    }
    bool s3 = cfg->election.backend == GW_ELECT_S3;
    const char *need = s3 ? "bucket" : "path";
    const char *other = s3 ? "path" : "bucket";
    if ((s3 ? cfg->election.bucket : cfg->election.path) == NULL) {
        gw_json_table_join(kpath, sizeof(kpath), path, need);
        return gw_json_table_err(c, kpath, "required with backend \"%s\"", s3 ? "s3" : "dir");
    }
    if ((s3 ? cfg->election.path : cfg->election.bucket) != NULL) {
        gw_json_table_join(kpath, sizeof(kpath), path, other);
        return gw_json_table_err(c, kpath, "only for backend \"%s\"", s3 ? "dir" : "s3");
    }
    if (cfg->election.min_lease_ms > cfg->election.max_lease_ms) {
        gw_json_table_join(kpath, sizeof(kpath), path, "min_lease_ms");
        return gw_json_table_err(c, kpath, "larger than max_lease_ms");
    }
    if (cfg->election.default_lease_ms < cfg->election.min_lease_ms ||
        cfg->election.default_lease_ms > cfg->election.max_lease_ms) {
        gw_json_table_join(kpath, sizeof(kpath), path, "default_lease_ms");
        return gw_json_table_err(c, kpath,
                                 "must lie between min_lease_ms (%u) and max_lease_ms (%u)",
                                 cfg->election.min_lease_ms, cfg->election.max_lease_ms);
    }
    return 0;
}

/* ---- fences ---- */

#define FR(m) offsetof(struct gw_fence_rule, m)
static const struct gw_json_table_field fence_fields[] = {
    FSTR("bucket", FR(bucket), REQ, 1, 0, NULL, V_BUCKET),
    FSTR("prefix", FR(prefix), 0, 0, 1024, "", V_NONE),
    FSTR("lock", FR(lock), REQ, 1, 0, NULL, V_LOCK),
    FBOOL("require_token", FR(require_token), true),
    FENUM("conditional_writes", FR(conditional_writes), 0, GW_COND_RULE_INHERIT, cond_rule_choices),
};
#undef FR

/* gw_json_table_entry_fn for "fences": one rule */
static int
fence_entry(struct gw_json_table_ctx *c, const char *path, const char *ipath, size_t i, json_t *v,
            void *entries, void *arg)
{
    struct gw_config *cfg = arg;
    (void)path;
    cfg->nfences = i + 1;
    return gw_json_table_walk(c, ipath, v, fence_fields, GW_JSON_TABLE_NFIELDS(fence_fields),
                              (struct gw_fence_rule *)entries + i, NULL, NULL);
}

/* GW_JSON_TABLE_CUSTOM for "fences" (base: &cfg->fences) */
static int
on_fences(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    struct gw_config *cfg =
        (struct gw_config *)(void *)((char *)dst - offsetof(struct gw_config, fences));
    void *entries = NULL;
    int rc = gw_json_table_walk_array(c, path, v, sizeof(*cfg->fences), fence_entry, cfg, &entries);
    cfg->fences = entries; /* on failure too: the counted entries are freed with cfg */
    return rc;
}

/* ---- auth, fencing, limits, audit: plain sections ---- */

#define AUTH(m) offsetof(struct gw_config, auth.m)
static const struct gw_json_table_field auth_fields[] = {
    FBOOL("sigv2", AUTH(sigv2), true),
};
#undef AUTH

#define FE(m) offsetof(struct gw_config, fencing.m)
static const struct gw_json_table_field fencing_fields[] = {
    FBOOL("allow_unfenced_writes", FE(allow_unfenced_writes), true),
    FBOOL("record_epoch_metadata", FE(record_epoch_metadata), true),
    FBOOL("abort_stale_uploads", FE(abort_stale_uploads), true),
    FBOOL("allow_bucket_writes", FE(allow_bucket_writes), false),
    FU32("commit_margin_ms", FE(commit_margin_ms), 1, 600000, 1000),
    FU32("complete_margin_ms", FE(complete_margin_ms), 1, 600000, 3000),
    FENUM("conditional_writes", FE(conditional_writes), 0, GW_COND_AUTO, cond_choices),
    FU32("etag_cache_entries", FE(etag_cache_entries), 16, 16777216, 65536),
};
#undef FE

#define LI(m)   offsetof(struct gw_config, limits.m)
#define HOUR_MS 3600000u
static const struct gw_json_table_field limits_fields[] = {
    FU32("max_header_bytes", LI(max_header_bytes), 1024, 1048576, 65536),
    FU32("max_headers", LI(max_headers), 8, 10000, 100),
    FU32("max_url_bytes", LI(max_url_bytes), 256, 65536, 8192),
    FU32("header_timeout_ms", LI(header_timeout_ms), 100, HOUR_MS, 30000),
    FU32("body_timeout_ms", LI(body_timeout_ms), 100, HOUR_MS, 60000),
    FU32("idle_timeout_ms", LI(idle_timeout_ms), 100, HOUR_MS, 60000),
    FU32("write_timeout_ms", LI(write_timeout_ms), 100, HOUR_MS, 60000),
    FU32("max_connections", LI(max_connections), 1, 1000000, 4096),
    FU32("buffer_bytes", LI(buffer_bytes), 4096, 67108864, 262144),
    FU64("max_object_bytes", LI(max_object_bytes), 1, 5497558138880ull, GW_MAX_OBJECT_BYTES),
    FU64("discard_body_bytes", LI(discard_body_bytes), 1, 5368709120ull, 67108864),
    FU32("max_connections_per_client", LI(max_connections_per_client), 0, 1000000, 0),
    FU32("max_transfers_per_client", LI(max_transfers_per_client), 0, 1000000, 0),
    FU32("min_body_rate", LI(min_body_rate), 0, 1073741824, 1024),
    FU32("min_body_rate_window_ms", LI(min_body_rate_window_ms), 1000, HOUR_MS, 10000),
};
#undef LI

#define AU(m) offsetof(struct gw_config, audit.m)
static const struct gw_json_table_field audit_fields[] = {
    FU32("retention_days", AU(retention_days), 1, 36500, 30),
    FU64("max_records", AU(max_records), 1, 1000000000000ull, 1000000),
    FU64("max_records_per_lock", AU(max_records_per_lock), 2, 1000000000000ull, 10000),
    FU64("max_records_per_principal", AU(max_records_per_principal), 2, 1000000000000ull, 100000),
    FU32("queue_max", AU(queue_max), 1, 16777216, 65536),
};
#undef AU

#define ME(m) offsetof(struct gw_config, metrics.m)
static const struct gw_json_table_field metrics_fields[] = {
    FU32("max_locks", ME(max_locks), 0, GW_METRICS_MAX_LOCKS_MAX, GW_METRICS_MAX_LOCKS_DEFAULT),
};
#undef ME

/* GW_JSON_TABLE_CUSTOM for "auth", "fencing", "limits", "audit" (base: that member of struct
 * gw_config) */
static int
on_auth(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    return gw_json_table_walk(c, path, v, auth_fields, GW_JSON_TABLE_NFIELDS(auth_fields),
                              (char *)dst - offsetof(struct gw_config, auth), NULL, NULL);
}

static int
on_fencing(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    return gw_json_table_walk(c, path, v, fencing_fields, GW_JSON_TABLE_NFIELDS(fencing_fields),
                              (char *)dst - offsetof(struct gw_config, fencing), NULL, NULL);
}

static int
on_limits(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    return gw_json_table_walk(c, path, v, limits_fields, GW_JSON_TABLE_NFIELDS(limits_fields),
                              (char *)dst - offsetof(struct gw_config, limits), NULL, NULL);
}

static int
on_audit(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    return gw_json_table_walk(c, path, v, audit_fields, GW_JSON_TABLE_NFIELDS(audit_fields),
                              (char *)dst - offsetof(struct gw_config, audit), NULL, NULL);
}

static int
on_metrics(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    return gw_json_table_walk(c, path, v, metrics_fields, GW_JSON_TABLE_NFIELDS(metrics_fields),
                              (char *)dst - offsetof(struct gw_config, metrics), NULL, NULL);
}

/* ---- the top level ---- */

#define TOP(m) offsetof(struct gw_config, m)
static const struct gw_json_table_field top_fields[] = {
    FCUSTOM("listen", TOP(listen), on_listen),
    FCUSTOM("admin_listen", TOP(admin_listen), on_admin_listen),
    FSTR("data_dir", TOP(data_dir), REQ, 1, 0, NULL, V_NONE),
    FSTR("gateway_id", TOP(gateway_id), 0, 1, 255, NULL, V_TOKEN),
    FSTR("log_level", TOP(log_level), 0, 1, 0, "info", V_LOGLEVEL),
    FSTR("log_format", TOP(log_format), 0, 1, 0, "text", V_LOGFMT),
    FSTR("access_log", TOP(access_log), 0, 1, 0, "off", V_NONE),
    FBOOL("allow_anonymous", TOP(allow_anonymous), false),
    FLIST("virtual_host_domains", TOP(virtual_host_domains), V_DOMAIN),
    FCUSTOM("upstream", TOP(upstream), on_upstream),
    FCUSTOM("auth", TOP(auth), on_auth),
    FCUSTOM("principals", TOP(principals), on_principals),
    FCUSTOM("election", TOP(election), on_election),
    FCUSTOM("fences", TOP(fences), on_fences),
    FCUSTOM("fencing", TOP(fencing), on_fencing),
    FCUSTOM("limits", TOP(limits), on_limits),
    FCUSTOM("audit", TOP(audit), on_audit),
    FCUSTOM("metrics", TOP(metrics), on_metrics),
};
#undef TOP

static int
default_gateway_id(struct gw_json_table_ctx *c, struct gw_config *cfg)
{
    char host[256];
    if (gethostname(host, sizeof(host)) != 0) {
        host[0] = '\0';
    }
    host[sizeof(host) - 1] = '\0';
    const char *id = gw_config_valid_token(host) ? host : "fencegate";
    cfg->gateway_id = strdup(id);
    return cfg->gateway_id == NULL ? gw_json_table_nomem(c) : 0;
}

/* check_anonymous - no principals on a non-loopback address needs consent (DESIGN.md
 * "Authentication"). */
static int
check_anonymous(struct gw_json_table_ctx *c, const struct gw_config *cfg)
{
    if (cfg->nprincipals > 0 || cfg->allow_anonymous) {
        return 0;
    }
    for (size_t i = 0; i < cfg->nlisten + cfg->nadmin_listen; i++) {
        const struct gw_listen *l =
            i < cfg->nlisten ? &cfg->listen[i] : &cfg->admin_listen[i - cfg->nlisten];
        if (!l->loopback) {
            bool v6 = strchr(l->host, ':') != NULL;
            return gw_json_table_err(
                c, "principals",
                "none configured and %s address %s%s%s:%u is not loopback; set "
                "\"allow_anonymous\": true to allow",
                i < cfg->nlisten ? "listen" : "admin_listen", v6 ? "[" : "", l->host, v6 ? "]" : "",
                (unsigned)l->port);
        }
    }
    return 0;
}

uint32_t
gw_config_min_lease_for_windows(const struct gw_config *cfg)
{
    /* Date and Last-Modified are both truncated to whole seconds: a read's age is
     * off by up to 1 s either way, and 1 s of slack covers the side that matters,
     * so a window from a read can be up to 2 s shorter than the lease left. */
    uint64_t resolution = cfg->election.backend == GW_ELECT_S3 ? 2000u : 0u;
    uint64_t need = (3u * ((uint64_t)cfg->fencing.commit_margin_ms + resolution) + 1u) / 2u;
    return need > UINT32_MAX ? UINT32_MAX : (uint32_t)need;
}

/* check_windows - DESIGN.md "Write windows": leases long enough to keep a
 * window open, a shared window longer than every margin. */
static int
check_windows(struct gw_json_table_ctx *c, struct gw_config *cfg)
{
    if (cfg->election.shared_opt < 0) {
        cfg->election.shared = cfg->election.backend == GW_ELECT_S3;
    } else {
        cfg->election.shared = cfg->election.shared_opt == 1;
    }
    if (cfg->election.backend == GW_ELECT_NONE) {
        return 0;
    }
    uint32_t need = gw_config_min_lease_for_windows(cfg);
    if (cfg->election.min_lease_ms < need) {
        return gw_json_table_err(
            c, "election.min_lease_ms",
            "%u is too short for fencing.commit_margin_ms %u: a holder renewing at a "
            "third of its lease needs at least %u ms to keep its write window open",
            cfg->election.min_lease_ms, cfg->fencing.commit_margin_ms, need);
    }
    uint32_t margin = cfg->fencing.commit_margin_ms > cfg->fencing.complete_margin_ms
                          ? cfg->fencing.commit_margin_ms
                          : cfg->fencing.complete_margin_ms;
    if (cfg->election.shared && cfg->election.shared_window_ms <= margin) {
        return gw_json_table_err(
            c, "election.shared_window_ms",
            "%u must be longer than the commit margins (%u ms), or no write could "
            "ever be forwarded",
            cfg->election.shared_window_ms, margin);
    }
    return 0;
}

/* load_json - parse text; path (or NULL) is recorded in the config. */
static int
load_json(const char *text, size_t len, const char *path, struct gw_config **out,
          struct gw_json_table_ctx *c)
{
    json_error_t jerr;
    struct gw_config *cfg = NULL;
    int rc;

    *out = NULL;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        return gw_json_table_err(c, NULL, "line %d column %d: %s", jerr.line, jerr.column,
                                 jerr.text);
    }
    if (!json_is_object(root)) {
        rc = gw_json_table_err(c, NULL, "the configuration must be a JSON object");
        goto fail;
    }
    cfg = calloc(1, sizeof(*cfg));
    if (cfg == NULL) {
        rc = gw_json_table_nomem(c);
        goto fail;
    }
    rc = gw_json_table_walk(c, "", root, top_fields, GW_JSON_TABLE_NFIELDS(top_fields), cfg, NULL,
                            NULL);
    if (rc != 0) {
        goto fail;
    }
    if (cfg->gateway_id == NULL) {
        rc = default_gateway_id(c, cfg);
        if (rc != 0) {
            goto fail;
        }
    }
    rc = check_anonymous(c, cfg);
    if (rc == 0) {
        rc = check_admin_listen(c, cfg);
    }
    if (rc == 0) {
        rc = check_windows(c, cfg);
    }
    if (rc != 0) {
        goto fail;
    }
    if (path != NULL) {
        cfg->path = strdup(path);
        if (cfg->path == NULL) {
            rc = gw_json_table_nomem(c);
            goto fail;
        }
    }
    json_decref(root);
    *out = cfg;
    return 0;
fail:
    json_decref(root);
    gw_config_free(cfg);
    return rc;
}

int
gw_config_load_string(const char *json, struct gw_config **out, char *errbuf, size_t errlen)
{
    struct gw_json_table_ctx c = {errbuf, errlen};
    if (errbuf != NULL && errlen > 0) {
        errbuf[0] = '\0';
    }
    return load_json(json, strlen(json), NULL, out, &c);
}

int
gw_config_load(const char *path, struct gw_config **out, char *errbuf, size_t errlen)
{
    struct gw_json_table_ctx c = {errbuf, errlen};
    struct buf text;
    int rc = 0;

    *out = NULL;
    if (errbuf != NULL && errlen > 0) {
        errbuf[0] = '\0';
    }
    buf_init(&text, CONFIG_MAX_FILE_BYTES);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        (void)gw_json_table_err(&c, path, "cannot open: %s", strerror(errno));
        return ERR_IO;
    }
    for (;;) {
        char chunk[16384];
        ssize_t r = read(fd, chunk, sizeof(chunk));
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            (void)gw_json_table_err(&c, path, "cannot read: %s", strerror(errno));
            rc = ERR_IO;
            goto fail;
        }
        if (r == 0) {
            break;
        }
        rc = buf_append(&text, chunk, (size_t)r);
        if (rc == ERR_TOOBIG) {
            rc = gw_json_table_err(&c, path, "larger than %zu bytes", CONFIG_MAX_FILE_BYTES);
            goto fail;
        }
        if (rc != 0) {
            rc = gw_json_table_nomem(&c);
            goto fail;
        }
    }
    rc = load_json(buf_cstr(&text), text.len, path, out, &c);
fail:
    /* the file may hold inline secrets */
    buf_cleanse(&text);
    (void)close(fd);
    return rc;
}

void
gw_config_free(struct gw_config *cfg)
{
    if (cfg == NULL) {
        return;
    }
    free(cfg->path);
    for (size_t i = 0; i < cfg->nlisten; i++) {
        free(cfg->listen[i].host);
        free(cfg->listen[i].tls_cert);
        free(cfg->listen[i].tls_key);
    }
    for (size_t i = 0; i < cfg->nadmin_listen; i++) {
        free(cfg->admin_listen[i].host);
        free(cfg->admin_listen[i].tls_cert);
        free(cfg->admin_listen[i].tls_key);
    }
    free(cfg->data_dir);
    free(cfg->gateway_id);
    free(cfg->log_level);
    free(cfg->log_format);
    free(cfg->access_log);
    gw_json_table_strlist_free(cfg->virtual_host_domains);
    free(cfg->upstream.endpoint);
    free(cfg->upstream.region);
    free(cfg->upstream.access_key);
    gw_config_free_secret(cfg->upstream.secret_key);
    gw_config_free_secret(cfg->upstream.session_token);
    free(cfg->upstream.ca_file);
    for (size_t i = 0; i < cfg->nprincipals; i++) {
        struct gw_principal *p = &cfg->principals[i];
        free(p->name);
        free(p->access_key);
        gw_config_free_secret(p->secret_key);
        gw_json_table_strlist_free(p->buckets);
        gw_json_table_strlist_free(p->locks);
    }
    free(cfg->principals);
    free(cfg->election.bucket);
    free(cfg->election.prefix);
    free(cfg->election.path);
    for (size_t i = 0; i < cfg->nfences; i++) {
        free(cfg->fences[i].bucket);
        free(cfg->fences[i].prefix);
        free(cfg->fences[i].lock);
    }
    free(cfg->fences);
    gw_config_wipe(cfg, sizeof(*cfg));
    free(cfg);
}

const struct gw_principal *
gw_config_principal_by_key(const struct gw_config *cfg, const char *access_key)
{
    for (size_t i = 0; i < cfg->nprincipals; i++) {
        if (strcmp(cfg->principals[i].access_key, access_key) == 0) {
            return &cfg->principals[i];
        }
    }
    return NULL;
}

const struct gw_fence_rule *
gw_config_fence_rule(const struct gw_config *cfg, const char *bucket, const char *key)
{
    for (size_t i = 0; i < cfg->nfences; i++) {
        const struct gw_fence_rule *r = &cfg->fences[i];
        if (strcmp(r->bucket, bucket) == 0 && strncmp(key, r->prefix, strlen(r->prefix)) == 0) {
            return r;
        }
    }
    return NULL;
}
