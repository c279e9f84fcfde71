/*
 * gateway/base/config_int.h: what the config loader's files share; not for
 * use outside gateway/base/config*.c.
 *
 * The loader (config.c) walks the top-level table; the sections with arrays
 * or cross-field rules have a file each, whose GW_JSON_TABLE_CUSTOM handlers
 * the top-level table names:
 *   config_listen.c     "listen", "admin_listen" and their overlap rule
 *   config_upstream.c   "upstream": endpoint, credentials' sources, engine
 *   config_access.c     "principals" and "fences": who writes, under which lock
 * They call nothing in config.c, so the loader and its sections make no circle.
 */
#ifndef GW_CONFIG_INT_H
#define GW_CONFIG_INT_H

#include <jansson.h>
#include <stddef.h>

#include "gateway/base/config.h"
#include "gateway/base/json_table.h"

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

/* GW_JSON_TABLE_CUSTOM handlers of the top-level table (dst: the section's member). */
int gw_config_on_listen(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst);
int gw_config_on_admin_listen(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst);
int gw_config_on_upstream(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst);
int gw_config_on_principals(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst);
int gw_config_on_fences(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst);

/* gw_config_check_admin_listen - no admin listener on (or under a wildcard of)
 * an S3 listener's address, nor two on one address.  Returns 0 or ERR_INVAL. */
int gw_config_check_admin_listen(struct gw_json_table_ctx *c, const struct gw_config *cfg);

#endif
