/*
 * gateway/base/config_check.h: the checks and value sources behind the config
 * loader (gateway/base/config.c), kept apart from its JSON tables: name
 * validators, secrets from the environment or a file, and listen addresses.
 * No JSON here; errors are reported through the loader's context
 * (gw_json_table_err, gateway/base/json_table.h) naming the key path.  Start-up only.
 */
#ifndef GW_CONFIG_CHECK_H
#define GW_CONFIG_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

struct gw_json_table_ctx;
struct gw_listen;

/* gw_config_wipe - overwrite len bytes at p so the compiler cannot skip it. */
void gw_config_wipe(void *p, size_t len);

/* gw_config_free_secret - wipe and free a NUL-terminated secret.  NULL-safe. */
void gw_config_free_secret(char *s);

/* Validators for the table rows: each returns true if s is acceptable. */
bool gw_config_valid_bucket(const char *s);     /* [A-Za-z0-9._-]{1,255} */
bool gw_config_valid_domain(const char *s);     /* a DNS name, e.g. "s3.example.com" */
bool gw_config_valid_access_key(const char *s); /* [A-Za-z0-9._~+-]{1,128} */
bool gw_config_valid_token(const char *s);      /* printable ASCII, no spaces or quotes, <= 255 */
bool gw_config_valid_env_name(const char *s);   /* an environment variable name */
bool gw_config_valid_log_level(const char *s);  /* "debug", "info", "warn" or "error" */
bool gw_config_valid_log_format(const char *s); /* "text" or "json" */

/*
 * gw_config_secret_from_env - copy the secret in environment variable var.
 * [in]  path  the key path for error messages
 * [out] out   an owned copy (gw_config_free_secret)
 * Returns 0, ERR_INVAL (unset or empty; c says why), ERR_NOMEM.
 */
MUST_USE int gw_config_secret_from_env(struct gw_json_table_ctx *c, const char *path,
                                       const char *var, char **out);

/*
 * gw_config_secret_from_file - read a secret from the regular file fpath (at
 * most 4 KiB, one trailing newline dropped, opened non-blocking so a FIFO
 * cannot hang start-up).
 * [out] out  an owned copy (gw_config_free_secret)
 * Returns 0, ERR_INVAL (unreadable, not regular, empty, too big, NUL byte), ERR_NOMEM.
 */
MUST_USE int gw_config_secret_from_file(struct gw_json_table_ctx *c, const char *path,
                                        const char *fpath, char **out);

/* gw_config_is_loopback - host is 127.0.0.0/8, ::1 or "localhost". */
bool gw_config_is_loopback(const char *host);

/*
 * gw_config_parse_address - "host:port" or "[v6]:port" into l->host (owned),
 * l->port and l->loopback.
 * Returns 0, ERR_INVAL (c says why), ERR_NOMEM.
 */
MUST_USE int gw_config_parse_address(struct gw_json_table_ctx *c, const char *path, const char *s,
                                     struct gw_listen *l);

#endif
