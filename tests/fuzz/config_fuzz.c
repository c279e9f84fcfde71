/*
 * tests/fuzz/config_fuzz.c: gw_config_load_string on arbitrary bytes.
 * Every input either loads (and is freed) or fails with an error message;
 * nothing crashes, leaks or reads out of bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/base/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text == NULL) {
        return 0;
    }
    memcpy(text, data, size);
    text[size] = '\0';
    char err[256];
    struct gw_config *cfg = NULL;
    int rc = gw_config_load_string(text, &cfg, err, sizeof(err));
    if (rc == 0) {
        /* exercise the lookups on whatever loaded */
        (void)gw_config_principal_by_key(cfg, "AK");
        (void)gw_config_fence_rule(cfg, "data", "orders/1");
        gw_config_free(cfg);
    } else if (cfg != NULL || err[0] == '\0') {
        abort(); /* a failure must leave no config and say why */
    }
    free(text);
    return 0;
}
