/* election/lockfile.c: the epoch lock file codec (the only jansson user in election/). */
#include "election/lockfile.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "common/num.h"
#include "election/backend.h"

#define LOG_MODULE "election"
#include "common/date.h"
#include "common/lockname.h"
#include "common/log.h"

/* The body's keys, in the order they are written. */
enum field {
    F_VERSION,
    F_LOCK,
    F_EPOCH,
    F_HOLDER,
    F_LEASE_MS,
    F_ACQUIRED_AT,
    F_RENEWED_AT,
    F_EXPIRED,
    F_LEASE_SHA256,
    F_GRANTED_BY,
    F_GRANT_ID,
    F_RENEWALS,
    F_COUNT,
};

static const char *const field_names[F_COUNT] = {
    "version",    "lock",    "epoch",        "holder",     "lease_ms", "acquired_at",
    "renewed_at", "expired", "lease_sha256", "granted_by", "grant_id", "renewals",
};

/* A text field: 1..max bytes, no C0 control bytes or DEL (UTF-8 is checked by jansson). */
static bool
text_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f) {
            return false;
        }
    }
    return true;
}

static bool
hex_ok(const char *s, size_t len)
{
    if (strlen(s) != len) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return false;
        }
    }
    return true;
}

static bool
lockfile_ok(const struct elect_lockfile *lf)
{
    return lock_name_valid(lf->lock) && lf->epoch >= 1 && lf->epoch <= (uint64_t)ELECT_EPOCH_MAX &&
           text_ok(lf->holder, ELECT_HOLDER_MAX) && lf->lease_ms >= 1 &&
           lf->lease_ms <= ELECT_LEASE_MS_MAX && lf->acquired_at_ms >= 0 &&
           lf->acquired_at_ms <= DATE_MAX_MS && lf->renewed_at_ms >= 0 &&
           lf->renewed_at_ms <= DATE_MAX_MS && hex_ok(lf->lease_sha256, 64) &&
           text_ok(lf->granted_by, ELECT_GRANTED_BY_MAX) &&
           hex_ok(lf->grant_id, ELECT_GRANT_ID_HEX) && lf->renewals <= (uint64_t)INT64_MAX;
}

static int
set_new(json_t *obj, const char *key, json_t *v)
{
    if (v == NULL) {
        return ERR_INVAL; /* json_string refuses invalid UTF-8; or out of memory */
    }
    if (json_object_set_new(obj, key, v) != 0) {
        return ERR_NOMEM;
    }
    return 0;
}

int
elect_lockfile_encode(const struct elect_lockfile *lf, char *out, size_t outlen,
                      size_t *outlen_used)
{
    if (lf == NULL || out == NULL || outlen_used == NULL || !lockfile_ok(lf)) {
        return ERR_INVAL;
    }
    char acq[DATE_RFC3339_LEN + 1];
    char ren[DATE_RFC3339_LEN + 1];
    if (date_rfc3339_format(lf->acquired_at_ms, acq) != 0 ||
        date_rfc3339_format(lf->renewed_at_ms, ren) != 0) {
        return ERR_INVAL;
    }
    json_t *o = json_object();
    if (o == NULL) {
        return ERR_NOMEM;
    }
    int err = 0;
    /* Insertion order is kept (jansson >= 2.8), giving the documented key order. */
    err = err ? err : set_new(o, field_names[F_VERSION], json_integer(ELECT_LOCKFILE_VERSION));
    err = err ? err : set_new(o, field_names[F_LOCK], json_string(lf->lock));
    err = err ? err : set_new(o, field_names[F_EPOCH], json_integer((json_int_t)lf->epoch));
    err = err ? err : set_new(o, field_names[F_HOLDER], json_string(lf->holder));
    err = err ? err : set_new(o, field_names[F_LEASE_MS], json_integer(lf->lease_ms));
    err = err ? err : set_new(o, field_names[F_ACQUIRED_AT], json_string(acq));
    err = err ? err : set_new(o, field_names[F_RENEWED_AT], json_string(ren));
    err = err ? err : set_new(o, field_names[F_EXPIRED], json_boolean(lf->expired));
    err = err ? err : set_new(o, field_names[F_LEASE_SHA256], json_string(lf->lease_sha256));
    err = err ? err : set_new(o, field_names[F_GRANTED_BY], json_string(lf->granted_by));
    err = err ? err : set_new(o, field_names[F_GRANT_ID], json_string(lf->grant_id));
    err = err ? err : set_new(o, field_names[F_RENEWALS], json_integer((json_int_t)lf->renewals));
    if (err != 0) {
        goto fail;
    }
    size_t n = json_dumpb(o, NULL, 0, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (n == 0) {
        err = ERR_NOMEM;
        goto fail;
    }
    if (n + 1 > outlen) {
        err = ERR_TOOBIG;
        goto fail;
    }
    if (json_dumpb(o, out, n, JSON_COMPACT | JSON_PRESERVE_ORDER) != n) {
        err = ERR_NOMEM;
        goto fail;
    }
    out[n] = '\0';
    *outlen_used = n;
    json_decref(o);
    return 0;
fail:
    json_decref(o);
    return err;
}

/* A non-negative JSON integer within [min, max]. */
static bool
get_int(json_t *v, int64_t min, int64_t max, int64_t *out)
{
    if (!json_is_integer(v)) {
        return false;
    }
    json_int_t i = json_integer_value(v);
    if (i < min || i > max) {
        return false;
    }
    *out = (int64_t)i;
    return true;
}

/* A JSON string copied into out (size outlen). */
static bool
get_str(json_t *v, char *out, size_t outlen)
{
    if (!json_is_string(v)) {
        return false;
    }
    size_t n = json_string_length(v);
    if (n + 1 > outlen || strlen(json_string_value(v)) != n) {
        return false;
    }
    memcpy(out, json_string_value(v), n + 1);
    return true;
}

static bool
get_time(json_t *v, int64_t *ms)
{
    char buf[DATE_RFC3339_LEN + 1];
    return get_str(v, buf, sizeof(buf)) && date_rfc3339_parse(buf, ms) == 0;
}

/* Store one known field of a version-1 body into lf; false if its value is bad. */
static bool
decode_field(enum field f, json_t *v, struct elect_lockfile *lf)
{
    int64_t i = 0;
    switch (f) {
    case F_VERSION:
        return true; /* checked before */
    case F_LOCK:
        return get_str(v, lf->lock, sizeof(lf->lock));
    case F_EPOCH:
        if (!get_int(v, 1, ELECT_EPOCH_MAX, &i)) {
            return false;
        }
        lf->epoch = (uint64_t)i;
        return true;
    case F_HOLDER:
        return get_str(v, lf->holder, sizeof(lf->holder));
    case F_LEASE_MS:
        if (!get_int(v, 1, ELECT_LEASE_MS_MAX, &i)) {
            return false;
        }
        lf->lease_ms = (uint32_t)i;
        return true;
    case F_ACQUIRED_AT:
        return get_time(v, &lf->acquired_at_ms);
    case F_RENEWED_AT:
        return get_time(v, &lf->renewed_at_ms);
    case F_EXPIRED:
        if (!json_is_boolean(v)) {
            return false;
        }
        lf->expired = json_is_true(v);
        return true;
    case F_LEASE_SHA256:
        return get_str(v, lf->lease_sha256, sizeof(lf->lease_sha256));
    case F_GRANTED_BY:
        return get_str(v, lf->granted_by, sizeof(lf->granted_by));
    case F_GRANT_ID:
        return get_str(v, lf->grant_id, sizeof(lf->grant_id));
    case F_RENEWALS:
        if (!get_int(v, 0, INT64_MAX, &i)) {
            return false;
        }
        lf->renewals = (uint64_t)i;
        return true;
    case F_COUNT:
    default:
        return false;
    }
}

int
elect_lockfile_decode(const char *body, size_t len, struct elect_lockfile *lf)
{
    if (body == NULL || lf == NULL) {
        return ERR_INVAL;
    }
    if (len > ELECT_OBJ_MAX) {
        return ERR_TOOBIG;
    }
    json_error_t jerr;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (o == NULL) {
        log_debug("lock file is not JSON: %s (line %d)", jerr.text, jerr.line);
        return ERR_INVAL;
    }
    int err = ERR_INVAL;
    struct elect_lockfile tmp;
    memset(&tmp, 0, sizeof(tmp));
    if (!json_is_object(o)) {
        goto fail;
    }
    /* The version decides how to read everything else: check it first. */
    json_t *ver = json_object_get(o, field_names[F_VERSION]);
    if (ver == NULL || !json_is_integer(ver)) {
        goto fail;
    }
    if (json_integer_value(ver) != ELECT_LOCKFILE_VERSION) {
        err = ERR_VERSION;
        goto fail;
    }
    bool seen[F_COUNT] = {false};
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        int f = 0;
        while (f < F_COUNT && strcmp(field_names[f], key) != 0) {
            f++;
        }
        if (f == F_COUNT || !decode_field((enum field)f, v, &tmp)) {
            goto fail; /* unknown key, or a bad value */
        }
        seen[f] = true;
    }
    for (int f = 0; f < F_COUNT; f++) {
        if (!seen[f]) {
            goto fail;
        }
    }
    if (!lockfile_ok(&tmp)) {
        goto fail;
    }
    json_decref(o);
    *lf = tmp;
    return 0;
fail:
    json_decref(o);
    return err;
}

static bool
prefix_ok(const char *prefix)
{
    return prefix != NULL && strlen(prefix) <= ELECT_KEY_MAX;
}

int
elect_lockfile_dir(const char *prefix, const char *lock, char *out, size_t outlen)
{
    if (!prefix_ok(prefix) || !lock_name_valid(lock) || out == NULL) {
        return ERR_INVAL;
    }
    int n = snprintf(out, outlen, "%s%s/", prefix, lock);
    if (n < 0 || (size_t)n >= outlen) {
        return ERR_TOOBIG;
    }
    return 0;
}

int
elect_lockfile_key(const char *prefix, const char *lock, uint64_t epoch, char *out, size_t outlen)
{
    if (!prefix_ok(prefix) || !lock_name_valid(lock) || epoch == 0 || out == NULL) {
        return ERR_INVAL;
    }
    int n = snprintf(out, outlen, "%s%s/epoch-%020" PRIu64 ".json", prefix, lock, epoch);
    if (n < 0 || (size_t)n >= outlen) {
        return ERR_TOOBIG;
    }
    return 0;
}

int
elect_lockfile_key_epoch(const char *prefix, const char *lock, const char *key, uint64_t *epoch)
{
    if (!prefix_ok(prefix) || !lock_name_valid(lock) || key == NULL || epoch == NULL) {
        return ERR_INVAL;
    }
    size_t pl = strlen(prefix);
    size_t ll = strlen(lock);
    static const char head[] = "/epoch-";
    static const char tail[] = ".json";
    size_t hl = sizeof(head) - 1;
    size_t tl = sizeof(tail) - 1;
    if (strlen(key) != pl + ll + hl + 20 + tl || memcmp(key, prefix, pl) != 0 ||
        memcmp(key + pl, lock, ll) != 0 || memcmp(key + pl + ll, head, hl) != 0 ||
        memcmp(key + pl + ll + hl + 20, tail, tl) != 0) {
        return ERR_INVAL;
    }
    uint64_t e;
    if (parse_u64n(key + pl + ll + hl, 20, 1, (uint64_t)ELECT_EPOCH_MAX, &e) != 0) {
        return ERR_INVAL;
    }
    *epoch = e;
    return 0;
}
