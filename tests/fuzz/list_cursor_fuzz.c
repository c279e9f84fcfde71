/*
 * tests/fuzz/list_cursor_fuzz.c: gateway/api/cursor.c's parser on arbitrary
 * bytes (the after= of GET /locks and GET /fences comes from any client).
 * Every input is refused (ERR_INVAL) or names a valid lock; a parsed cursor
 * must format back to the same name, and that text must parse again; a
 * cursor of one listing is never accepted by the other.
 * Seeds: tests/fuzz/corpus/list_cursor/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/lockname.h"
#include "gateway/api/cursor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
one(enum gw_cursor_kind kind, enum gw_cursor_kind other, const char *s, size_t size)
{
    char lock[LOCK_NAME_MAX + 1];
    int rc = gw_cursor_parse(kind, s, size, lock);
    if (rc == ERR_INVAL) {
        return;
    }
    if (rc != 0 || !lock_name_valid(lock)) {
        abort();
    }
    char again[GW_CURSOR_MAX + 1];
    char back[LOCK_NAME_MAX + 1];
    if (gw_cursor_format(kind, lock, again) != 0 ||
        gw_cursor_parse(kind, again, strlen(again), back) != 0 || strcmp(back, lock) != 0) {
        abort();
    }
    if (gw_cursor_parse(other, again, strlen(again), back) != ERR_INVAL) {
        abort();
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a private copy: the parser must not read past size (no NUL is given) */
    char *s = malloc(size + 1);
    if (s == NULL) {
        return 0;
    }
    memcpy(s, data, size);
    one(GW_CURSOR_LOCKS, GW_CURSOR_FENCES, s, size);
    one(GW_CURSOR_FENCES, GW_CURSOR_LOCKS, s, size);
    free(s);
    return 0;
}
