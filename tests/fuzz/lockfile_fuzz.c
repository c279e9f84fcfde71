/*
 * tests/fuzz/lockfile_fuzz.c: election/lockfile.c's decoders on arbitrary
 * bytes (a lock file anyone with write access to the bucket could have
 * written).  Every input is refused (ERR_INVAL / ERR_VERSION / ERR_TOOBIG)
 * or decoded; a decoded file must encode, and that encoding must decode to
 * the same fields and re-encode to the same bytes (the encoding is
 * canonical).  The same bytes are also tried as a key (elect_lockfile_key_epoch)
 * and as a timestamp (elect_time_parse).  Seeds: tests/fuzz/corpus/lockfile/.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/date.h"
#include "common/log.h"
#include "election/backend.h"
#include "election/lockfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_err(int err)
{
    if (err != 0 && err != ERR_INVAL && err != ERR_VERSION && err != ERR_TOOBIG) {
        abort();
    }
}

/* Field by field (struct padding is not compared). */
static bool
same(const struct elect_lockfile *a, const struct elect_lockfile *b)
{
    return a->epoch == b->epoch && strcmp(a->lock, b->lock) == 0 &&
           strcmp(a->holder, b->holder) == 0 && a->lease_ms == b->lease_ms &&
           a->acquired_at_ms == b->acquired_at_ms && a->renewed_at_ms == b->renewed_at_ms &&
           a->expired == b->expired && strcmp(a->lease_sha256, b->lease_sha256) == 0 &&
           strcmp(a->granted_by, b->granted_by) == 0 && strcmp(a->grant_id, b->grant_id) == 0 &&
           a->renewals == b->renewals;
}

static void
roundtrip(const struct elect_lockfile *lf)
{
    char a[ELECT_LOCKFILE_MAX + 1];
    char b[ELECT_LOCKFILE_MAX + 1];
    size_t alen = 0;
    size_t blen = 0;
    if (elect_lockfile_encode(lf, a, sizeof(a), &alen) != 0) {
        abort(); /* whatever decodes must encode */
    }
    struct elect_lockfile back;
    if (elect_lockfile_decode(a, alen, &back) != 0 || !same(&back, lf)) {
        abort();
    }
    if (elect_lockfile_encode(&back, b, sizeof(b), &blen) != 0 || alen != blen ||
        memcmp(a, b, alen) != 0) {
        abort();
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    log_threshold = LOG_NONE;
    struct elect_lockfile lf;
    int err = elect_lockfile_decode((const char *)data, size, &lf);
    check_err(err);
    if (err == 0) {
        roundtrip(&lf);
    }
    /* as a key and as a timestamp (NUL-terminated copy) */
    char *s = malloc(size + 1);
    if (s == NULL) {
        return 0;
    }
    memcpy(s, data, size);
    s[size] = '\0';
    uint64_t ep;
    if (elect_lockfile_key_epoch("fg/", "orders", s, &ep) == 0) {
        char key[ELECT_KEY_MAX + 1];
        if (elect_lockfile_key("fg/", "orders", ep, key, sizeof(key)) != 0 || strcmp(key, s) != 0) {
            abort();
        }
    }
    int64_t ms;
    if (date_rfc3339_parse(s, &ms) == 0) {
        char t[DATE_RFC3339_LEN + 1];
        if (date_rfc3339_format(ms, t) != 0 || strcmp(t, s) != 0) {
            abort();
        }
    }
    (void)lock_name_valid(s);
    free(s);
    return 0;
}
