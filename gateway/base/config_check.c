#include "gateway/base/config_check.h"

#include "gateway/base/config.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/num.h"
#include "gateway/base/json_table.h"

#define CONFIG_MAX_SECRET_BYTES 4096u /* a secret_key_file larger than this is refused */

/* ---- small helpers ---- */

void
gw_config_wipe(void *p, size_t len)
{
    /* volatile stores so the gw_config_wipe is not optimised away before free() */
    volatile unsigned char *v = p;
    for (size_t i = 0; i < len; i++) {
        v[i] = 0;
    }
}

void
gw_config_free_secret(char *s)
{
    if (s != NULL) {
        gw_config_wipe(s, strlen(s));
        free(s);
    }
}

static bool
all_chars(const char *s, size_t minlen, size_t maxlen, const char *extra)
{
    size_t n = strlen(s);
    if (n < minlen || n > maxlen) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || strchr(extra, ch) != NULL;
        if (!ok) {
            return false;
        }
    }
    return true;
}

/* Bucket names: the S3 character set including legacy upper case and '_'. */
bool
gw_config_valid_bucket(const char *s)
{
    return all_chars(s, 1, 255, "._-");
}

/* DNS names for virtual_host_domains: no leading or trailing dot. */
bool
gw_config_valid_domain(const char *s)
{
    size_t n = strlen(s);
    return all_chars(s, 1, 253, ".-") && s[0] != '.' && s[n - 1] != '.';
}

/* Access keys appear inside "Credential=AK/date/...": no '/', ',', '=' or spaces. */
bool
gw_config_valid_access_key(const char *s)
{
    return all_chars(s, 1, 128, "._~+-");
}

/* Names shown in logs and lock files: printable ASCII, no spaces or quotes. */
bool
gw_config_valid_token(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 255) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch <= 0x20 || ch >= 0x7f || ch == '"' || ch == '\\') {
            return false;
        }
    }
    return true;
}

/* Environment variable names: [A-Za-z_][A-Za-z0-9_]*. */
bool
gw_config_valid_env_name(const char *s)
{
    return all_chars(s, 1, 255, "_") && !(s[0] >= '0' && s[0] <= '9');
}

bool
gw_config_valid_log_level(const char *s)
{
    return strcmp(s, "debug") == 0 || strcmp(s, "info") == 0 || strcmp(s, "warn") == 0 ||
           strcmp(s, "error") == 0;
}

bool
gw_config_valid_log_format(const char *s)
{
    return strcmp(s, "text") == 0 || strcmp(s, "json") == 0;
}

/* ---- secrets from the environment or a file ---- */

int
gw_config_secret_from_env(struct gw_json_table_ctx *c, const char *path, const char *var,
                          char **out)
{
    const char *v = getenv(var);
    if (v == NULL || v[0] == '\0') {
        return gw_json_table_err(c, path, "environment variable %s is not set", var);
    }
    char *copy = strdup(v);
    if (copy == NULL) {
        return gw_json_table_nomem(c);
    }
    *out = copy;
    return 0;
}

/* gw_config_secret_from_file - the whole file at fpath, trailing whitespace removed. */
int
gw_config_secret_from_file(struct gw_json_table_ctx *c, const char *path, const char *fpath,
                           char **out)
{
    char tmp[CONFIG_MAX_SECRET_BYTES + 1];
    size_t len = 0;
    int rc = 0;
    struct stat st;
    /* O_NONBLOCK: naming a FIFO must not hang start-up; only regular files are read */
    int fd = open(fpath, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        return gw_json_table_err(c, path, "cannot open %s: %s", fpath, strerror(errno));
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = gw_json_table_err(c, path, "%s is not a regular file", fpath);
        goto fail;
    }
    for (;;) {
        ssize_t r = read(fd, tmp + len, sizeof(tmp) - len);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            rc = gw_json_table_err(c, path, "cannot read %s: %s", fpath, strerror(errno));
            goto fail;
        }
        if (r == 0) {
            break;
        }
        len += (size_t)r;
        if (len == sizeof(tmp)) {
            rc = gw_json_table_err(c, path, "%s is larger than %u bytes", fpath,
                                   CONFIG_MAX_SECRET_BYTES);
            goto fail;
        }
    }
    while (len > 0 && (tmp[len - 1] == '\n' || tmp[len - 1] == '\r' || tmp[len - 1] == ' ' ||
                       tmp[len - 1] == '\t')) {
        len--;
    }
    if (len == 0) {
        rc = gw_json_table_err(c, path, "%s is empty", fpath);
        goto fail;
    }
    if (memchr(tmp, '\0', len) != NULL) {
        rc = gw_json_table_err(c, path, "%s contains a NUL byte", fpath);
        goto fail;
    }
    char *copy = malloc(len + 1);
    if (copy == NULL) {
        rc = gw_json_table_nomem(c);
        goto fail;
    }
    memcpy(copy, tmp, len);
    copy[len] = '\0';
    if (c->inputs != NULL && (buf_append(c->inputs, fpath, strlen(fpath) + 1) != 0 ||
                              buf_append(c->inputs, copy, len + 1) != 0)) {
        gw_config_wipe(copy, len);
        free(copy);
        rc = gw_json_table_nomem(c);
        goto fail;
    }
    *out = copy;
fail:
    gw_config_wipe(tmp, sizeof(tmp));
    (void)close(fd);
    return rc;
}

/* ---- listen ---- */

bool
gw_config_is_loopback(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (strcasecmp(host, "localhost") == 0) {
        return true;
    }
    if (inet_pton(AF_INET, host, &a4) == 1) {
        return (ntohl(a4.s_addr) >> 24) == 127;
    }
    if (inet_pton(AF_INET6, host, &a6) == 1) {
        if (IN6_IS_ADDR_LOOPBACK(&a6)) {
            return true;
        }
        return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
    }
    return false;
}

/* gw_config_parse_address - "host:port" or "[v6]:port" into l->host, l->port, l->loopback. */
int
gw_config_parse_address(struct gw_json_table_ctx *c, const char *path, const char *s,
                        struct gw_listen *l)
{
    const char *host;
    size_t hlen;
    const char *port;

    if (s[0] == '[') {
        const char *end = strchr(s, ']');
        if (end == NULL || end[1] != ':') {
            return gw_json_table_err(c, path, "expected \"[address]:port\"");
        }
        host = s + 1;
        hlen = (size_t)(end - host);
        port = end + 2;
    } else {
        const char *colon = strrchr(s, ':');
        if (colon == NULL) {
            return gw_json_table_err(c, path, "expected \"host:port\"");
        }
        host = s;
        hlen = (size_t)(colon - s);
        port = colon + 1;
        if (memchr(host, ':', hlen) != NULL) {
            return gw_json_table_err(c, path, "write IPv6 addresses as \"[address]:port\"");
        }
    }
    if (hlen == 0) {
        return gw_json_table_err(c, path, "missing host (use 0.0.0.0 or [::] for every address)");
    }
    uint64_t p = 0;
    if (parse_u64(port, 0, 65535, &p) != 0) {
        return gw_json_table_err(c, path, "port must be a number between 0 and 65535");
    }
    char *h = strndup(host, hlen);
    if (h == NULL) {
        return gw_json_table_nomem(c);
    }
    struct in6_addr a6;
    if (s[0] == '[' ? inet_pton(AF_INET6, h, &a6) != 1 : !all_chars(h, 1, 253, ".-")) {
        free(h);
        return gw_json_table_err(c, path, "invalid host");
    }
    l->host = h;
    l->port = (uint16_t)p;
    l->loopback = gw_config_is_loopback(h);
    return 0;
}
