/*
 * gateway/base/config_access.c: the "principals" and "fences" sections of the
 * configuration: who may write (keys and their secrets' sources) and which
 * lock fences which bucket and prefix.
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
int
gw_config_on_principals(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    struct gw_config *cfg =
        (struct gw_config *)(void *)((char *)dst - offsetof(struct gw_config, principals));
    void *entries = NULL;
    int rc = gw_json_table_walk_array(c, path, v, sizeof(*cfg->principals), principal_entry, cfg,
                                      &entries);
    cfg->principals = entries; /* on failure too: the counted entries are freed with cfg */
    return rc;
}

/* ---- fences ---- */

static const struct gw_json_table_choice cond_rule_choices[] = {
    {"inherit", GW_COND_RULE_INHERIT},
    {"on", GW_COND_RULE_ON},
    {"off", GW_COND_RULE_OFF},
    {NULL, 0},
};

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
int
gw_config_on_fences(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    struct gw_config *cfg =
        (struct gw_config *)(void *)((char *)dst - offsetof(struct gw_config, fences));
    void *entries = NULL;
    int rc = gw_json_table_walk_array(c, path, v, sizeof(*cfg->fences), fence_entry, cfg, &entries);
    cfg->fences = entries; /* on failure too: the counted entries are freed with cfg */
    return rc;
}
