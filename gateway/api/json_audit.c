#include "gateway/api/json_audit.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "common/date.h"
#include "common/jsonstr.h"
#include "common/num.h"

int
gw_json_audit_str_append(struct buf *b, const char *s)
{
    /* the one escaper (common/jsonstr.c), shared with the access log and JSON logs */
    return jsonstr_append_cstr(b, s != NULL ? s : "");
}

void
gw_json_audit_time_format(int64_t ms, char out[GW_AUDIT_TIME_LEN])
{
    if (ms < 0) {
        ms = 0;
    }
    char t[DATE_RFC3339_LEN + 1];
    if (date_rfc3339_format(ms, t) != 0) {
        (void)snprintf(out, GW_AUDIT_TIME_LEN, "%" PRId64, ms);
        return;
    }
    str_copy(out, GW_AUDIT_TIME_LEN, t);
}

/* Parse n digits at s into *v, within [lo, hi]. */
static bool
field(const char *s, size_t n, uint64_t lo, uint64_t hi, int64_t *v)
{
    uint64_t u;
    if (parse_u64n(s, n, lo, hi, &u) != 0) {
        return false;
    }
    *v = (int64_t)u;
    return true;
}

int
gw_json_audit_time_parse(const char *s, int64_t *ms)
{
    size_t n = strlen(s);
    if (n > 0 && strspn(s, "0123456789") == n) {
        uint64_t v;
        if (parse_u64(s, 0, INT64_MAX, &v) != 0) {
            return ERR_INVAL;
        }
        *ms = (int64_t)v;
        return 0;
    }
    /* YYYY-MM-DDTHH:MM:SS[.fff]Z (RFC 3339 section 5.6, UTC only) */
    int64_t y;
    int64_t mo;
    int64_t d;
    int64_t h;
    int64_t mi;
    int64_t sec;
    if (n < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' ||
        s[16] != ':' || !field(s, 4, 1970, 9999, &y) || !field(s + 5, 2, 1, 12, &mo) ||
        !field(s + 8, 2, 1, 31, &d) || !field(s + 11, 2, 0, 23, &h) ||
        !field(s + 14, 2, 0, 59, &mi) || !field(s + 17, 2, 0, 59, &sec)) {
        return ERR_INVAL;
    }
    if (!date_valid_ymd(y, (unsigned)mo, (unsigned)d)) {
        return ERR_INVAL;
    }
    size_t i = 19;
    int64_t frac = 0;
    if (s[i] == '.') {
        size_t digits = strspn(s + i + 1, "0123456789");
        if (digits == 0 || digits > 9) {
            return ERR_INVAL;
        }
        for (size_t k = 0; k < 3; k++) {
            frac = frac * 10 + (k < digits ? s[i + 1 + k] - '0' : 0);
        }
        i += 1 + digits;
    }
    if ((s[i] != 'Z' && s[i] != 'z') || s[i + 1] != '\0') {
        return ERR_INVAL;
    }
    *ms = ((date_days_from_civil(y, (unsigned)mo, (unsigned)d) * 24 + h) * 60 + mi) * 60000 +
          sec * 1000 + frac;
    return 0;
}

/* Append ,"name":<u64 or null when 0>. */
static int
num_or_null(struct buf *b, const char *name, uint64_t v)
{
    if (v == 0) {
        return buf_printf(b, ",\"%s\":null", name);
    }
    return buf_printf(b, ",\"%s\":%" PRIu64, name, v);
}

int
gw_json_audit_rec_append(struct buf *b, const struct store_audit_rec *r)
{
    char t[GW_AUDIT_TIME_LEN];
    gw_json_audit_time_format(r->time_ms, t);
    int err = buf_printf(
        b, "{\"time\":\"%s\",\"time_ms\":%" PRId64 ",\"seq\":%" PRIu64 ",\"kind\":\"%s\"", t,
        r->time_ms, r->seq, store_audit_kind_name(r->kind));
    const struct {
        const char *name;  /* JSON member */
        const char *value; /* its string */
    } strs[] = {
        {"lock", r->lock},           {"principal", r->principal},   {"client", r->client},
        {"method", r->method},       {"bucket", r->bucket},         {"key", r->key},
        {"operation", r->operation}, {"request_id", r->request_id}, {"user_agent", r->user_agent},
    };
    if (err == 0) {
        /* a run of identical refusals: time is its first occurrence, last_time its last */
        char lt[GW_AUDIT_TIME_LEN];
        uint64_t count = r->count > 0 ? r->count : 1;
        int64_t last = count > 1 ? r->last_ms : r->time_ms;
        gw_json_audit_time_format(last, lt);
        err = buf_printf(b, ",\"count\":%" PRIu64 ",\"last_time\":\"%s\",\"last_ms\":%" PRId64,
                         count, lt, last);
    }
    if (err == 0) {
        err = num_or_null(b, "token", r->token);
    }
    if (err == 0) {
        err = num_or_null(b, "current_token", r->current);
    }
    for (size_t i = 0; err == 0 && i < sizeof(strs) / sizeof(strs[0]); i++) {
        err = buf_printf(b, ",\"%s\":", strs[i].name);
        if (err == 0) {
            err = gw_json_audit_str_append(b, strs[i].value);
        }
    }
    if (err == 0 && r->kind == STORE_AUDIT_REVOKED) {
        /* the record's key field carries the holder whose lease was revoked */
        err = buf_append_str(b, ",\"holder\":");
        if (err == 0) {
            err = gw_json_audit_str_append(b, r->key);
        }
    }
    if (err == 0) {
        /* null without one (records before trace ids, requests without a traceparent) */
        bool traced = r->trace_id != NULL && r->trace_id[0] != '\0';
        err = buf_append_str(b, ",\"trace_id\":");
        err = err != 0 ? err : jsonstr_append_cstr(b, traced ? r->trace_id : NULL);
    }
    if (err == 0) {
        err = buf_append(b, "}", 1);
    }
    return err;
}
