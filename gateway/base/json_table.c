/*
 * gateway/base/json_table.c: the table-driven JSON object walker
 * (gateway/base/json_table.h).  jansson's json_error_t never reaches here (the
 * caller parses); every failure is one "path: message" line in the caller's
 * errbuf (STYLE R4).
 */
#include "gateway/base/json_table.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

#define JT_MAX_STR 4096u /* default maximum length of a string value */

void
gw_json_table_strlist_free(char **list)
{
    if (list == NULL) {
        return;
    }
    for (char **p = list; *p != NULL; p++) {
        free(*p);
    }
    free(list);
}

int
gw_json_table_err(struct gw_json_table_ctx *c, const char *path, const char *fmt, ...)
{
    if (c->errbuf == NULL || c->errlen == 0) {
        return ERR_INVAL;
    }
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof(msg), fmt, ap); /* NOLINT: clang-analyzer 14 false positive */
    va_end(ap);
    if (n < 0) {
        msg[0] = '\0';
    }
    if (path != NULL && path[0] != '\0') {
        (void)snprintf(c->errbuf, c->errlen, "%s: %s", path, msg);
    } else {
        str_copy(c->errbuf, c->errlen, msg);
    }
    /* Key names come from the file: keep the one-line message printable. */
    for (char *p = c->errbuf; *p != '\0'; p++) {
        if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f) {
            *p = '?';
        }
    }
    return ERR_INVAL;
}

int
gw_json_table_nomem(struct gw_json_table_ctx *c)
{
    if (c->errbuf != NULL && c->errlen > 0) {
        (void)snprintf(c->errbuf, c->errlen, "out of memory");
    }
    return ERR_NOMEM;
}

/* concat - parts[0..n) into out, cut to fit (snprintf would warn about the cut, rightly). */
static void
concat(char *out, size_t outlen, const char *const *parts, size_t nparts)
{
    size_t used = 0;
    for (size_t i = 0; i < nparts; i++) {
        size_t n = strlen(parts[i]);
        if (n > outlen - 1 - used) {
            n = outlen - 1 - used;
        }
        memcpy(out + used, parts[i], n);
        used += n;
    }
    out[used] = '\0';
}

void
gw_json_table_join(char *out, size_t outlen, const char *parent, const char *name)
{
    const char *parts[3] = {parent, parent[0] != '\0' ? "." : "", name};
    concat(out, outlen, parts, 3);
}

void
gw_json_table_index_path(char *out, size_t outlen, const char *parent, size_t i)
{
    char idx[32];
    (void)snprintf(idx, sizeof(idx), "[%zu]", i);
    const char *parts[2] = {parent, idx};
    concat(out, outlen, parts, 2);
}

/* ---- the walker ---- */

static int
read_string(struct gw_json_table_ctx *c, const char *path, json_t *v,
            const struct gw_json_table_field *f, char **out)
{
    if (!json_is_string(v)) {
        return gw_json_table_err(c, path, "expected a string");
    }
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    size_t max = f->max != 0 ? (size_t)f->max : JT_MAX_STR;
    if (strlen(s) != len) {
        return gw_json_table_err(c, path, "must not contain NUL");
    }
    if (len < f->min) {
        return gw_json_table_err(c, path, len == 0 ? "must not be empty" : "too short");
    }
    if (len > max) {
        return gw_json_table_err(c, path, "longer than %zu bytes", max);
    }
    if (f->valid != NULL && !f->valid(s)) {
        return gw_json_table_err(c, path, "must be %s", f->valid_msg);
    }
    char *copy = strdup(s);
    if (copy == NULL) {
        return gw_json_table_nomem(c);
    }
    *out = copy;
    return 0;
}

static int
read_strlist(struct gw_json_table_ctx *c, const char *path, json_t *v,
             const struct gw_json_table_field *f, char ***out)
{
    if (!json_is_array(v)) {
        return gw_json_table_err(c, path, "expected an array of strings");
    }
    size_t n = json_array_size(v);
    char **list = calloc(n + 1, sizeof(*list));
    if (list == NULL) {
        return gw_json_table_nomem(c);
    }
    for (size_t i = 0; i < n; i++) {
        char ipath[GW_JSON_TABLE_MAX_PATH];
        gw_json_table_index_path(ipath, sizeof(ipath), path, i);
        int rc = read_string(c, ipath, json_array_get(v, i), f, &list[i]);
        if (rc != 0) {
            gw_json_table_strlist_free(list);
            return rc;
        }
    }
    *out = list;
    return 0;
}

static int
read_int(struct gw_json_table_ctx *c, const char *path, json_t *v,
         const struct gw_json_table_field *f, uint64_t *out)
{
    if (!json_is_integer(v)) {
        return gw_json_table_err(c, path, "expected an integer");
    }
    json_int_t i = json_integer_value(v);
    if (i < 0 || (uint64_t)i < f->min || (uint64_t)i > f->max) {
        return gw_json_table_err(c, path, "must be between %llu and %llu",
                                 (unsigned long long)f->min, (unsigned long long)f->max);
    }
    *out = (uint64_t)i;
    return 0;
}

static int
read_enum(struct gw_json_table_ctx *c, const char *path, json_t *v,
          const struct gw_json_table_field *f, int *out)
{
    if (json_is_string(v)) {
        for (const struct gw_json_table_choice *ch = f->choices; ch->name != NULL; ch++) {
            if (strcmp(json_string_value(v), ch->name) == 0) {
                *out = ch->value;
                return 0;
            }
        }
    }
    char want[128] = "";
    size_t used = 0;
    for (const struct gw_json_table_choice *ch = f->choices; ch->name != NULL; ch++) {
        int n = snprintf(want + used, sizeof(want) - used, "%s\"%s\"", used == 0 ? "" : " or ",
                         ch->name);
        if (n < 0 || (size_t)n >= sizeof(want) - used) {
            break;
        }
        used += (size_t)n;
    }
    return gw_json_table_err(c, path, "must be %s", want);
}

/* set_value - parse v (never NULL) as field f and store it. */
static int
set_value(struct gw_json_table_ctx *c, const char *path, json_t *v,
          const struct gw_json_table_field *f, char *dst)
{
    switch (f->type) {
    case GW_JSON_TABLE_STR: {
        char *s = NULL;
        int rc = read_string(c, path, v, f, &s);
        if (rc != 0) {
            return rc;
        }
        memcpy(dst, &s, sizeof(s));
        return 0;
    }
    case GW_JSON_TABLE_BOOL: {
        if (!json_is_boolean(v)) {
            return gw_json_table_err(c, path, "expected true or false");
        }
        bool b = json_is_true(v);
        memcpy(dst, &b, sizeof(b));
        return 0;
    }
    case GW_JSON_TABLE_U32:
    case GW_JSON_TABLE_U64: {
        uint64_t u = 0;
        int rc = read_int(c, path, v, f, &u);
        if (rc != 0) {
            return rc;
        }
        if (f->type == GW_JSON_TABLE_U32) {
            uint32_t u32 = (uint32_t)u;
            memcpy(dst, &u32, sizeof(u32));
        } else {
            memcpy(dst, &u, sizeof(u));
        }
        return 0;
    }
    case GW_JSON_TABLE_ENUM: {
        int e = 0;
        int rc = read_enum(c, path, v, f, &e);
        if (rc != 0) {
            return rc;
        }
        memcpy(dst, &e, sizeof(e));
        return 0;
    }
    case GW_JSON_TABLE_STRLIST: {
        char **list = NULL;
        int rc = read_strlist(c, path, v, f, &list);
        if (rc != 0) {
            return rc;
        }
        memcpy(dst, &list, sizeof(list));
        return 0;
    }
    case GW_JSON_TABLE_CUSTOM:
        return f->custom(c, path, v, dst);
    default:
        return gw_json_table_err(c, path, "internal error: bad field type");
    }
}

/* set_default - store field f's default (f's key was absent). */
static int
set_default(struct gw_json_table_ctx *c, const char *path, const struct gw_json_table_field *f,
            char *dst)
{
    switch (f->type) {
    case GW_JSON_TABLE_STR: {
        char *s = NULL;
        if (f->sdef != NULL) {
            s = strdup(f->sdef);
            if (s == NULL) {
                return gw_json_table_nomem(c);
            }
        }
        memcpy(dst, &s, sizeof(s));
        return 0;
    }
    case GW_JSON_TABLE_BOOL: {
        bool b = f->def != 0;
        memcpy(dst, &b, sizeof(b));
        return 0;
    }
    case GW_JSON_TABLE_U32: {
        uint32_t u32 = (uint32_t)f->def;
        memcpy(dst, &u32, sizeof(u32));
        return 0;
    }
    case GW_JSON_TABLE_U64:
        memcpy(dst, &f->def, sizeof(f->def));
        return 0;
    case GW_JSON_TABLE_ENUM: {
        int e = (int)f->def;
        memcpy(dst, &e, sizeof(e));
        return 0;
    }
    case GW_JSON_TABLE_STRLIST: {
        char **list = NULL;
        memcpy(dst, &list, sizeof(list));
        return 0;
    }
    case GW_JSON_TABLE_CUSTOM:
        return f->custom(c, path, NULL, dst);
    default:
        return gw_json_table_err(c, path, "internal error: bad field type");
    }
}

/* field_dst - where f's value is stored; NULL when f wants a scratch struct and none was given. */
static char *
field_dst(const struct gw_json_table_field *f, void *base, void *scratch)
{
    void *p = (f->flags & GW_JSON_TABLE_SCRATCH) != 0 ? scratch : base;
    return p != NULL ? (char *)p + f->offset : NULL;
}

int
gw_json_table_walk(struct gw_json_table_ctx *c, const char *path, json_t *obj,
                   const struct gw_json_table_field *fields, size_t n, void *base, void *scratch,
                   uint64_t *seen)
{
    uint64_t mask = 0;
    char kpath[GW_JSON_TABLE_MAX_PATH];

    if (obj != NULL && !json_is_object(obj)) {
        return gw_json_table_err(c, path, "expected an object");
    }
    if (obj != NULL) {
        const char *key;
        json_t *v;
        json_object_foreach(obj, key, v)
        {
            gw_json_table_join(kpath, sizeof(kpath), path, key);
            size_t i = 0;
            while (i < n && strcmp(fields[i].name, key) != 0) {
                i++;
            }
            if (i == n) {
                return gw_json_table_err(c, kpath, "unknown key");
            }
            const struct gw_json_table_field *f = &fields[i];
            char *dst = field_dst(f, base, scratch);
            if (dst == NULL) {
                return gw_json_table_err(c, kpath, "internal error: no scratch space");
            }
            int rc = set_value(c, kpath, v, f, dst);
            if (rc != 0) {
                return rc;
            }
            mask |= 1ull << i;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if ((mask & (1ull << i)) != 0) {
            continue;
        }
        const struct gw_json_table_field *f = &fields[i];
        gw_json_table_join(kpath, sizeof(kpath), path, f->name);
        if ((f->flags & GW_JSON_TABLE_REQUIRED) != 0) {
            return gw_json_table_err(c, kpath, "required");
        }
        char *dst = field_dst(f, base, scratch);
        if (dst == NULL) {
            return gw_json_table_err(c, kpath, "internal error: no scratch space");
        }
        int rc = set_default(c, kpath, f, dst);
        if (rc != 0) {
            return rc;
        }
    }
    if (seen != NULL) {
        *seen = mask;
    }
    return 0;
}

int
gw_json_table_walk_array(struct gw_json_table_ctx *c, const char *path, json_t *v, size_t size,
                         gw_json_table_entry_fn *fn, void *arg, void **out)
{
    *out = NULL;
    if (v == NULL) {
        return 0;
    }
    if (!json_is_array(v)) {
        return gw_json_table_err(c, path, "expected an array of objects");
    }
    size_t n = json_array_size(v);
    if (n == 0) {
        return 0;
    }
    *out = calloc(n, size);
    if (*out == NULL) {
        return gw_json_table_nomem(c);
    }
    for (size_t i = 0; i < n; i++) {
        char ipath[GW_JSON_TABLE_MAX_PATH];
        gw_json_table_index_path(ipath, sizeof(ipath), path, i);
        int rc = fn(c, path, ipath, i, json_array_get(v, i), *out, arg);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}
