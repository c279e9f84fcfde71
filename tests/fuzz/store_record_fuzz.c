/*
 * tests/fuzz/store_record_fuzz.c: the decoders of store/record.c on arbitrary
 * bytes (a damaged LMDB value or key).  Every input is either refused
 * (ERR_INVAL / ERR_VERSION) or decoded; a decoded value must re-encode to
 * exactly the same bytes (the encoding is canonical), and nothing may crash
 * or read out of bounds.  A request id split as "BASE.n" must print back as
 * itself.  Seeds: tests/fuzz/corpus/store_record/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
same(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    if (alen != blen || memcmp(a, b, alen) != 0) {
        abort();
    }
}

static void
check_err(int err)
{
    if (err != 0 && err != ERR_INVAL && err != ERR_VERSION) {
        abort();
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t out[STORE_REC_AUDIT_MAX];
    size_t len = 0;

    struct store_fence f;
    int err = store_rec_fence_decode(data, size, &f);
    check_err(err);
    if (err == 0) {
        if (store_rec_fence_encode(&f, out, sizeof(out), &len) != 0) {
            abort();
        }
        same(data, size, out, len);
    }

    struct store_elect e;
    err = store_rec_elect_decode(data, size, &e);
    check_err(err);
    if (err == 0) {
        if (store_rec_elect_encode(&e, out, sizeof(out), &len) != 0) {
            abort();
        }
        same(data, size, out, len);
    }

    struct store_audit_rec r;
    struct store_rec_scratch sc;
    err = store_rec_audit_decode(data, size, &r, &sc);
    check_err(err);
    if (err == 0) {
        if (store_rec_audit_encode(&r, out, sizeof(out), &len) != 0) {
            abort();
        }
        same(data, size, out, len);
    }

    struct store_upload u;
    err = store_rec_upload_decode(data, size, &u);
    check_err(err);
    if (err == 0) {
        if (store_rec_upload_encode(&u, out, sizeof(out), &len) != 0) {
            abort();
        }
        same(data, size, out, len);
    }

    int64_t t;
    uint64_t seq;
    if (store_rec_audit_key_decode(data, size, &t, &seq) == 0) {
        uint8_t k[STORE_KEY_AUDIT_LEN];
        store_rec_audit_key(t, seq, k);
        same(data, size, k, sizeof(k));
    }
    size_t lock_len;
    if (store_rec_index_key_decode(data, size, &lock_len, &t, &seq) == 0 &&
        lock_len > STORE_LOCK_MAX) {
        abort();
    }

    /* cursors arrive as text from the CLI and the HTTP API */
    char text[64];
    size_t n = size < sizeof(text) - 1 ? size : sizeof(text) - 1;
    memcpy(text, data, n);
    text[n] = '\0';
    struct store_audit_cursor c;
    if (store_audit_cursor_parse(text, &c) == 0) {
        char back[64];
        if (store_audit_cursor_format(&c, back, sizeof(back)) != 0) {
            abort();
        }
    }

    /* request ids arrive as text too: a repeat's "BASE.n" has one spelling */
    size_t base_len = 0;
    uint64_t occ = 0;
    if (store_audit_reqid_split((const char *)data, size, &base_len, &occ)) {
        char back[STORE_REQID_MAX * 4];
        int w = snprintf(back, sizeof(back), ".%llu", (unsigned long long)occ);
        if (base_len == 0 || base_len >= size || occ < 2 || w < 0 || base_len + (size_t)w != size ||
            memcmp(data + base_len, back, (size_t)w) != 0) {
            abort();
        }
    }
    return 0;
}
