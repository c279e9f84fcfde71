/*
 * tests/fuzz/traceparent_fuzz.c: common/traceparent.c on arbitrary bytes.
 * Every input is refused or yields 32 lowercase hex digits, not all zero,
 * that appear in the input at offset 3; nothing reads past size.
 * Seeds: tests/fuzz/corpus/traceparent/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/traceparent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly size bytes, so ASan sees any read past the end */
    char *v = malloc(size > 0 ? size : 1);
    if (v == NULL) {
        return 0;
    }
    if (size > 0) {
        memcpy(v, data, size);
    }
    char t[TRACEPARENT_ID_LEN + 1];
    if (traceparent_parse(v, size, t) == 0) {
        if (strlen(t) != TRACEPARENT_ID_LEN || memcmp(t, v + 3, TRACEPARENT_ID_LEN) != 0 ||
            strspn(t, "0123456789abcdef") != TRACEPARENT_ID_LEN ||
            strspn(t, "0") == TRACEPARENT_ID_LEN) {
            abort();
        }
    }
    free(v);
    return 0;
}
