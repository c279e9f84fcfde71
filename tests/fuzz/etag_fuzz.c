/*
 * tests/fuzz/etag_fuzz.c: gateway/proxy/etag_map.c on arbitrary bytes (an
 * ETag header an upstream sent).  gw_etag_map_bare either refuses it or
 * gives a bare ETag that can go back in a header as is (printable, no quote,
 * not empty, at most GW_ETAG_MAX); put then get in a map of a few entries
 * must return exactly that ETag.  Seeds: tests/fuzz/corpus/etag/.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/proxy/etag_map.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s == NULL) {
        return 0;
    }
    memcpy(s, data, size);
    s[size] = '\0';
    char bare[GW_ETAG_MAX + 1];
    int rc = gw_etag_map_bare(s, bare, sizeof(bare));
    struct gw_etag_map *m = gw_etag_map_new(2);
    if (m == NULL) {
        free(s);
        return 0;
    }
    int prc = gw_etag_map_put(m, "L", 1, "b", s, s); /* the bytes as key and ETag */
    if ((prc == 0) != (rc == 0)) {
        abort();
    }
    if (rc == 0) {
        size_t n = strlen(bare);
        if (n == 0 || n > GW_ETAG_MAX) {
            abort();
        }
        for (size_t i = 0; i < n; i++) {
            if (bare[i] == '"' || bare[i] < 0x21 || bare[i] > 0x7e) {
                abort();
            }
        }
        char got[GW_ETAG_MAX + 1];
        bool absent = true;
        if (gw_etag_map_get(m, "L", 1, "b", s, got, sizeof(got), &absent) != 0 || absent ||
            strcmp(got, bare) != 0) {
            abort();
        }
    }
    gw_etag_map_free(m);
    free(s);
    return 0;
}
