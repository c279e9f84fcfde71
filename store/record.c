#include "store/record.h"

#include <stdbool.h>
#include <string.h>

/* A bounded writer and reader over a byte array. */
struct wr {
    uint8_t *p; /* output */
    size_t cap; /* its size */
    size_t len; /* bytes written */
    bool full;  /* a put did not fit */
};

struct rd {
    const uint8_t *p; /* input */
    size_t len;       /* its size */
    size_t off;       /* bytes consumed */
    bool bad;         /* a get ran past the end or saw a bad field */
};

static void
put_bytes(struct wr *w, const void *src, size_t n)
{
    if (w->full || n > w->cap - w->len) {
        w->full = true;
        return;
    }
    memcpy(w->p + w->len, src, n);
    w->len += n;
}

static void
put_u8(struct wr *w, uint8_t v)
{
    put_bytes(w, &v, 1);
}

static void
put_u64(struct wr *w, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++) {
        b[i] = (uint8_t)(v >> (8 * i));
    }
    put_bytes(w, b, 8);
}

static void
put_str(struct wr *w, const char *s, size_t cap)
{
    if (s == NULL) {
        s = "";
    }
    size_t n = store_rec_trunc_len(s, cap);
    uint8_t b[2] = {(uint8_t)(n & 0xff), (uint8_t)(n >> 8)};
    put_bytes(w, b, 2);
    put_bytes(w, s, n);
}

static const uint8_t *
get_bytes(struct rd *r, size_t n)
{
    if (r->bad || n > r->len - r->off) {
        r->bad = true;
        return NULL;
    }
    const uint8_t *p = r->p + r->off;
    r->off += n;
    return p;
}

static uint8_t
get_u8(struct rd *r)
{
    const uint8_t *b = get_bytes(r, 1);
    return b == NULL ? 0 : b[0];
}

static uint64_t
get_u64(struct rd *r)
{
    const uint8_t *b = get_bytes(r, 8);
    if (b == NULL) {
        return 0;
    }
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = (v << 8) | b[i];
    }
    return v;
}

/* Read a string of at most cap bytes into dst (room for cap + 1). */
static void
get_str(struct rd *r, char *dst, size_t cap)
{
    const uint8_t *b = get_bytes(r, 2);
    if (b == NULL) {
        dst[0] = '\0';
        return;
    }
    size_t n = (size_t)b[0] | ((size_t)b[1] << 8);
    if (n > cap) {
        r->bad = true;
        dst[0] = '\0';
        return;
    }
    const uint8_t *s = get_bytes(r, n);
    if (s == NULL || memchr(s, '\0', n) != NULL) {
        r->bad = true;
        dst[0] = '\0';
        return;
    }
    memcpy(dst, s, n);
    dst[n] = '\0';
}

/* Check the tag and version (at most max; *ver, when given, gets it); returns 0, ERR_INVAL or
 * ERR_VERSION. */
static int
get_header_v(struct rd *r, uint8_t tag, uint8_t max, uint8_t *ver)
{
    uint8_t t = get_u8(r);
    uint8_t v = get_u8(r);
    if (r->bad || t != tag || v == 0) {
        return ERR_INVAL;
    }
    if (v > max) {
        return ERR_VERSION;
    }
    if (ver != NULL) {
        *ver = v;
    }
    return 0;
}

static int
get_header(struct rd *r, uint8_t tag)
{
    return get_header_v(r, tag, STORE_REC_VERSION, NULL);
}

static int
wr_result(const struct wr *w, size_t *len)
{
    if (w->full) {
        return ERR_TOOBIG;
    }
    *len = w->len;
    return 0;
}

size_t
store_rec_trunc_len(const char *s, size_t cap)
{
    size_t n = strnlen(s, cap + 1);
    if (n <= cap) {
        return n;
    }
    n = cap;
    /* Do not end inside a multi-byte sequence: back off continuation bytes
     * (10xxxxxx) and the lead byte they belong to. */
    size_t k = n;
    while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) {
        k--;
    }
    return k;
}

/* Pure, so here with the formats: audit_quota.c and audit_run.c both use it. */
void
store_audit_who(const char *principal, const char *client, char out[STORE_WHO_MAX + 1])
{
    if (principal != NULL && principal[0] != '\0') {
        size_t n = store_rec_trunc_len(principal, STORE_WHO_MAX);
        memcpy(out, principal, n);
        out[n] = '\0';
        return;
    }
    size_t n = client == NULL ? 0 : strnlen(client, STORE_CLIENT_MAX);
    /* "host:port" or "[v6]:port": drop ":port" (digits after the last colon,
     * when the host before it has no colon or ends in ']') */
    size_t d = n;
    while (d > 0 && client[d - 1] >= '0' && client[d - 1] <= '9') {
        d--;
    }
    if (d > 0 && d < n && client[d - 1] == ':') {
        size_t h = d - 1;
        if (memchr(client, ':', h) == NULL || (h > 0 && client[h - 1] == ']')) {
            n = h;
        }
    }
    out[0] = '@';
    memcpy(out + 1, client == NULL ? "" : client, n);
    out[1 + n] = '\0';
}

int
store_rec_fence_encode(const struct store_fence *f, uint8_t *out, size_t cap, size_t *len)
{
    struct wr w = {.p = out, .cap = cap};
    put_u8(&w, STORE_REC_FENCE);
    put_u8(&w, STORE_REC_VERSION);
    put_u64(&w, f->token);
    put_u64(&w, (uint64_t)f->advanced_ms);
    put_str(&w, f->request_id, STORE_REQID_MAX);
    put_str(&w, f->principal, STORE_PRINCIPAL_MAX);
    return wr_result(&w, len);
}

int
store_rec_fence_decode(const uint8_t *p, size_t len, struct store_fence *out)
{
    struct rd r = {.p = p, .len = len};
    int err = get_header(&r, STORE_REC_FENCE);
    if (err != 0) {
        return err;
    }
    struct store_fence f;
    f.token = get_u64(&r);
    f.advanced_ms = (int64_t)get_u64(&r);
    get_str(&r, f.request_id, STORE_REQID_MAX);
    get_str(&r, f.principal, STORE_PRINCIPAL_MAX);
    if (r.bad || r.off != r.len || f.token == 0) {
        return ERR_INVAL;
    }
    *out = f;
    return 0;
}

int
store_rec_elect_encode(const struct store_elect *e, uint8_t *out, size_t cap, size_t *len)
{
    struct wr w = {.p = out, .cap = cap};
    put_u8(&w, STORE_REC_ELECT);
    put_u8(&w, STORE_REC_VERSION);
    put_u64(&w, e->epoch);
    put_u64(&w, (uint64_t)e->learned_ms);
    return wr_result(&w, len);
}

int
store_rec_elect_decode(const uint8_t *p, size_t len, struct store_elect *out)
{
    struct rd r = {.p = p, .len = len};
    int err = get_header(&r, STORE_REC_ELECT);
    if (err != 0) {
        return err;
    }
    struct store_elect e;
    e.epoch = get_u64(&r);
    e.learned_ms = (int64_t)get_u64(&r);
    if (r.bad || r.off != r.len || e.epoch == 0) {
        return ERR_INVAL;
    }
    *out = e;
    return 0;
}

int
store_rec_audit_encode(const struct store_audit_rec *r, uint8_t *out, size_t cap, size_t *len)
{
    if (r->kind < 1 || r->kind > STORE_AUDIT_KIND_MAX) {
        return ERR_INVAL;
    }
    struct wr w = {.p = out, .cap = cap};
    bool traced = r->trace_id != NULL && r->trace_id[0] != '\0';
    bool repeated = r->count > 1;
    put_u8(&w, STORE_REC_AUDIT);
    put_u8(&w, repeated ? STORE_REC_AUDIT_RUN
               : traced ? STORE_REC_AUDIT_VERSION
                        : STORE_REC_VERSION);
    put_u64(&w, (uint64_t)r->time_ms);
    put_u8(&w, (uint8_t)r->kind);
    put_u64(&w, r->token);
    put_u64(&w, r->current);
    put_str(&w, r->lock, STORE_LOCK_MAX);
    put_str(&w, r->principal, STORE_PRINCIPAL_MAX);
    put_str(&w, r->client, STORE_CLIENT_MAX);
    put_str(&w, r->method, STORE_METHOD_MAX);
    put_str(&w, r->bucket, STORE_BUCKET_MAX);
    put_str(&w, r->key, STORE_KEY_MAX);
    put_str(&w, r->operation, STORE_OPERATION_MAX);
    put_str(&w, r->request_id, STORE_REQID_MAX);
    put_str(&w, r->user_agent, STORE_UA_MAX);
    if (traced || repeated) {
        put_str(&w, r->trace_id, STORE_TRACE_MAX);
    }
    if (repeated) {
        put_u64(&w, r->count);
        put_u64(&w, (uint64_t)r->last_ms);
    }
    return wr_result(&w, len);
}

/* Decode one string into the scratch area at *pos; returns the view. */
static const char *
get_scratch_str(struct rd *r, struct store_rec_scratch *sc, size_t *pos, size_t cap)
{
    if (*pos + cap + 1 > sizeof(sc->text)) {
        r->bad = true; /* cannot happen with the fixed field list; keep the bound explicit */
        return "";
    }
    char *dst = sc->text + *pos;
    get_str(r, dst, cap);
    *pos += strlen(dst) + 1;
    return dst;
}

int
store_rec_audit_decode(const uint8_t *p, size_t len, struct store_audit_rec *out,
                       struct store_rec_scratch *scratch)
{
    struct rd r = {.p = p, .len = len};
    uint8_t ver = 0;
    int err = get_header_v(&r, STORE_REC_AUDIT, STORE_REC_AUDIT_RUN, &ver);
    if (err != 0) {
        return err;
    }
    size_t pos = 0;
    memset(out, 0, sizeof(*out));
    out->time_ms = (int64_t)get_u64(&r);
    uint8_t kind = get_u8(&r);
    out->kind = (enum store_audit_kind)kind;
    out->token = get_u64(&r);
    out->current = get_u64(&r);
    out->lock = get_scratch_str(&r, scratch, &pos, STORE_LOCK_MAX);
    out->principal = get_scratch_str(&r, scratch, &pos, STORE_PRINCIPAL_MAX);
    out->client = get_scratch_str(&r, scratch, &pos, STORE_CLIENT_MAX);
    out->method = get_scratch_str(&r, scratch, &pos, STORE_METHOD_MAX);
    out->bucket = get_scratch_str(&r, scratch, &pos, STORE_BUCKET_MAX);
    out->key = get_scratch_str(&r, scratch, &pos, STORE_KEY_MAX);
    out->operation = get_scratch_str(&r, scratch, &pos, STORE_OPERATION_MAX);
    out->request_id = get_scratch_str(&r, scratch, &pos, STORE_REQID_MAX);
    out->user_agent = get_scratch_str(&r, scratch, &pos, STORE_UA_MAX);
    out->trace_id = "";
    out->count = 1;
    out->last_ms = out->time_ms;
    if (ver >= 2) {
        out->trace_id = get_scratch_str(&r, scratch, &pos, STORE_TRACE_MAX);
        if (ver == 2 && out->trace_id[0] == '\0') {
            r.bad = true; /* written as version 1 when there is none: canonical */
        }
    }
    if (ver >= 3) {
        out->count = get_u64(&r);
        out->last_ms = (int64_t)get_u64(&r);
        if (out->count < 2) {
            r.bad = true; /* a record that never repeated is version 1 or 2: canonical */
        }
    }
    if (r.bad || r.off != r.len || kind < 1 || kind > STORE_AUDIT_KIND_MAX) {
        return ERR_INVAL;
    }
    return 0;
}

static void
be64_put(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (56 - 8 * i));
    }
}

static uint64_t
be64_get(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
        v = (v << 8) | p[i];
    }
    return v;
}

void
store_rec_audit_key(int64_t time_ms, uint64_t seq, uint8_t out[STORE_KEY_AUDIT_LEN])
{
    be64_put(out, time_ms < 0 ? 0 : (uint64_t)time_ms);
    be64_put(out + 8, seq);
}

int
store_rec_audit_key_decode(const uint8_t *p, size_t len, int64_t *time_ms, uint64_t *seq)
{
    if (len != STORE_KEY_AUDIT_LEN) {
        return ERR_INVAL;
    }
    uint64_t t = be64_get(p);
    if (t > (uint64_t)INT64_MAX) {
        return ERR_INVAL;
    }
    *time_ms = (int64_t)t;
    *seq = be64_get(p + 8);
    return 0;
}

size_t
store_rec_index_key(const char *lock, int64_t time_ms, uint64_t seq,
                    uint8_t out[STORE_KEY_INDEX_MAX])
{
    size_t n = lock == NULL ? 0 : store_rec_trunc_len(lock, STORE_LOCK_MAX);
    out[0] = (uint8_t)n;
    if (n > 0) {
        memcpy(out + 1, lock, n);
    }
    store_rec_audit_key(time_ms, seq, out + 1 + n);
    return 1 + n + STORE_KEY_AUDIT_LEN;
}

int
store_rec_index_key_decode(const uint8_t *p, size_t len, size_t *lock_len, int64_t *time_ms,
                           uint64_t *seq)
{
    if (len < 1 + STORE_KEY_AUDIT_LEN || p[0] > STORE_LOCK_MAX ||
        len != 1 + (size_t)p[0] + STORE_KEY_AUDIT_LEN) {
        return ERR_INVAL;
    }
    *lock_len = p[0];
    return store_rec_audit_key_decode(p + 1 + p[0], STORE_KEY_AUDIT_LEN, time_ms, seq);
}

int
store_rec_upload_encode(const struct store_upload *u, uint8_t *out, size_t cap, size_t *len)
{
    struct wr w = {.p = out, .cap = cap};
    put_u8(&w, STORE_REC_UPLOAD);
    put_u8(&w, STORE_REC_VERSION);
    put_u64(&w, u->epoch);
    put_u64(&w, (uint64_t)u->created_ms);
    put_str(&w, u->bucket, STORE_BUCKET_MAX);
    put_str(&w, u->key, STORE_KEY_MAX);
    return wr_result(&w, len);
}

int
store_rec_upload_decode(const uint8_t *p, size_t len, struct store_upload *out)
{
    struct rd r = {.p = p, .len = len};
    int err = get_header(&r, STORE_REC_UPLOAD);
    if (err != 0) {
        return err;
    }
    struct store_upload u;
    u.epoch = get_u64(&r);
    u.created_ms = (int64_t)get_u64(&r);
    get_str(&r, u.bucket, STORE_BUCKET_MAX);
    get_str(&r, u.key, STORE_KEY_MAX);
    if (r.bad || r.off != r.len || u.epoch == 0) {
        return ERR_INVAL;
    }
    *out = u;
    return 0;
}

size_t
store_rec_upload_key(const char *lock, const char *upload_id, uint8_t out[STORE_KEY_UPLOAD_MAX])
{
    size_t ll = strnlen(lock, STORE_LOCK_MAX + 1);
    size_t ul = strnlen(upload_id, STORE_UPLOAD_ID_MAX + 1);
    if (ll == 0 || ll > STORE_LOCK_MAX || ul == 0 || ul > STORE_UPLOAD_ID_MAX) {
        return 0;
    }
    out[0] = (uint8_t)ll;
    memcpy(out + 1, lock, ll);
    memcpy(out + 1 + ll, upload_id, ul);
    return 1 + ll + ul;
}
