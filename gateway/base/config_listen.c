/*
 * gateway/base/config_listen.c: the "listen" and "admin_listen" sections of
 * the configuration (a non-empty array of address strings and TLS objects) and the rule
 * that keeps the admin listeners off the S3 listeners' addresses.
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
int
gw_config_on_listen(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    struct gw_config *cfg =
        (struct gw_config *)(void *)((char *)dst - offsetof(struct gw_config, listen));
    if (v == NULL) {
        return gw_json_table_err(c, path, "required");
    }
    return parse_listen_array(c, path, v, cfg->listen, &cfg->nlisten);
}

/* GW_JSON_TABLE_CUSTOM for "admin_listen" (base: struct gw_config); optional */
int
gw_config_on_admin_listen(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
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
int
gw_config_check_admin_listen(struct gw_json_table_ctx *c, const struct gw_config *cfg)
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
