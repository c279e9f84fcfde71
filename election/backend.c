/* election/backend.c: argument checks in front of a backend's operations table. */
#include "election/backend.h"

#include <string.h>

static bool
key_ok(const char *key)
{
    if (key == NULL) {
        return false;
    }
    size_t n = strlen(key);
    return n >= 1 && n <= ELECT_KEY_MAX;
}

int
elect_backend_create(struct elect_backend *be, const char *key, const char *body, size_t len,
                     elect_be_write_fn *cb, void *arg)
{
    if (be == NULL || !key_ok(key) || (body == NULL && len > 0) || cb == NULL) {
        return ERR_INVAL;
    }
    if (len > ELECT_OBJ_MAX) {
        return ERR_TOOBIG;
    }
    return be->ops->create(be, key, body, len, cb, arg);
}

int
elect_backend_replace(struct elect_backend *be, const char *key, const char *etag,
                      enum elect_etag_form form, const char *body, size_t len,
                      elect_be_write_fn *cb, void *arg)
{
    if (be == NULL || !key_ok(key) || etag == NULL || etag[0] == '\0' ||
        strlen(etag) > ELECT_ETAG_MAX || (body == NULL && len > 0) || cb == NULL ||
        (form != ELECT_ETAG_QUOTED && form != ELECT_ETAG_UNQUOTED)) {
        return ERR_INVAL;
    }
    if (len > ELECT_OBJ_MAX) {
        return ERR_TOOBIG;
    }
    return be->ops->replace(be, key, etag, form, body, len, cb, arg);
}

int
elect_backend_get(struct elect_backend *be, const char *key, elect_be_get_fn *cb, void *arg)
{
    if (be == NULL || !key_ok(key) || cb == NULL) {
        return ERR_INVAL;
    }
    return be->ops->get(be, key, cb, arg);
}

int
elect_backend_list(struct elect_backend *be, const char *prefix, const char *start_after,
                   uint32_t max, elect_be_list_fn *cb, void *arg)
{
    if (be == NULL || prefix == NULL || strlen(prefix) > ELECT_KEY_MAX || cb == NULL || max == 0 ||
        max > ELECT_LIST_MAX || (start_after != NULL && strlen(start_after) > ELECT_KEY_MAX)) {
        return ERR_INVAL;
    }
    if (start_after != NULL && start_after[0] == '\0') {
        start_after = NULL;
    }
    return be->ops->list(be, prefix, start_after, max, cb, arg);
}

int
elect_backend_del(struct elect_backend *be, const char *key, elect_be_del_fn *cb, void *arg)
{
    if (be == NULL || !key_ok(key) || cb == NULL) {
        return ERR_INVAL;
    }
    return be->ops->del(be, key, cb, arg);
}

const char *
elect_backend_name(const struct elect_backend *be)
{
    if (be == NULL || be->name == NULL) {
        return "?";
    }
    return be->name;
}

void
elect_backend_free(struct elect_backend *be)
{
    if (be == NULL) {
        return;
    }
    be->ops->free(be);
}

int
elect_etag_bare(const char *value, char *out, size_t outlen)
{
    if (value == NULL || out == NULL || outlen == 0) {
        return ERR_INVAL;
    }
    const char *s = value;
    const char *e = value + strlen(value);
    while (s < e && (*s == ' ' || *s == '\t')) {
        s++;
    }
    while (e > s && (e[-1] == ' ' || e[-1] == '\t')) {
        e--;
    }
    if (e - s >= 2 && s[0] == 'W' && s[1] == '/') {
        s += 2;
    }
    if (s < e && *s == '"') {
        if (e - s < 2 || e[-1] != '"') {
            return ERR_INVAL;
        }
        s++;
        e--;
    }
    if (s == e) {
        return ERR_INVAL;
    }
    for (const char *p = s; p < e; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c < 0x21 || c == 0x7f) {
            return ERR_INVAL;
        }
    }
    size_t n = (size_t)(e - s);
    if (n > ELECT_ETAG_MAX || n + 1 > outlen) {
        return ERR_TOOBIG;
    }
    memcpy(out, s, n);
    out[n] = '\0';
    return 0;
}
