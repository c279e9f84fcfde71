#include "common/traceparent.h"

#include <stdbool.h>
#include <string.h>

/* n lowercase hex digits at s (section 3.2.2: HEXDIGLC); *zero when all are '0'. */
static bool
lower_hex(const char *s, size_t n, bool *zero)
{
    bool z = true;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return false;
        }
        z = z && c == '0';
    }
    *zero = z;
    return true;
}

int
traceparent_parse(const char *v, size_t len, char trace[TRACEPARENT_ID_LEN + 1])
{
    /* 2 version, 32 trace-id, 16 parent-id, 2 flags, 3 dashes (section 3.2.2) */
    enum { VER = 0, TID = 3, PID = 36, FLG = 53, END = 55 };
    bool zero;
    if (v == NULL || len < END || v[2] != '-' || v[35] != '-' || v[52] != '-') {
        return ERR_INVAL;
    }
    if (!lower_hex(v + VER, 2, &zero) || memcmp(v, "ff", 2) == 0) {
        return ERR_INVAL; /* section 3.2.2.1: version ff is forbidden */
    }
    if (memcmp(v, "00", 2) == 0 ? len != END : (len > END && v[END] != '-')) {
        return ERR_INVAL; /* section 3.2.4: a later version may only add "-..." */
    }
    if (!lower_hex(v + TID, TRACEPARENT_ID_LEN, &zero) || zero) {
        return ERR_INVAL; /* section 3.2.2.3: all zeros is invalid */
    }
    if (!lower_hex(v + PID, 16, &zero) || zero) {
        return ERR_INVAL; /* section 3.2.2.4 */
    }
    if (!lower_hex(v + FLG, 2, &zero)) {
        return ERR_INVAL;
    }
    memcpy(trace, v + TID, TRACEPARENT_ID_LEN);
    trace[TRACEPARENT_ID_LEN] = '\0';
    return 0;
}
