/*
 * tests/fuzz/jsonstr_fuzz.c: common/jsonstr.c on arbitrary bytes.  The
 * literal it writes, inside an object as the access log writes it, must
 * always parse (jansson, strict), decode to exactly one string, and equal the
 * input whenever the input is valid UTF-8.  Seeds: tests/fuzz/corpus/jsonstr/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/jsonstr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
valid_utf8(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t k = jsonstr_utf8_len(p + i, n - i);
        if (k == 0) {
            return 0;
        }
        i += k;
    }
    return 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct buf b;
    buf_init(&b, 16 * size + 64);
    if (buf_append_str(&b, "{\"key\":") != 0 || jsonstr_append(&b, (const char *)data, size) != 0 ||
        buf_append_str(&b, "}") != 0) {
        abort(); /* the cap above always suffices (6 bytes per input byte) */
    }
    if (memchr(b.data, '\n', b.len) != NULL) {
        abort(); /* one line per record */
    }
    json_error_t err;
    json_t *o = json_loadb(b.data, b.len, JSON_ALLOW_NUL, &err);
    if (o == NULL) {
        abort();
    }
    json_t *v = json_object_get(o, "key");
    if (!json_is_string(v)) {
        abort();
    }
    if (valid_utf8(data, size) &&
        (json_string_length(v) != size || memcmp(json_string_value(v), data, size) != 0)) {
        abort(); /* valid UTF-8 must round-trip exactly */
    }
    json_decref(o);
    buf_cleanup(&b);
    return 0;
}
