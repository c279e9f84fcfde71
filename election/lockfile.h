/*
 * election/lockfile.h: the epoch lock file: its JSON body, its key, lock
 * names and timestamps.
 *
 * One object per epoch, key `<prefix><lock>/epoch-<epoch, 20 digits
 * zero-padded>.json` (lexical order is numeric order), body (DESIGN.md
 * "The election", plus grant_id and renewals):
 *
 *   {"version":1,"lock":"orders","epoch":42,"holder":"w1","lease_ms":15000,
 *    "acquired_at":"2026-11-21T10:15:30.123Z","renewed_at":"2026-11-21T10:15:35.120Z",
 *    "expired":false,"lease_sha256":"<64 hex>","granted_by":"gw-1",
 *    "grant_id":"<32 hex>","renewals":3}
 *
 * acquired_at / renewed_at are the granting gateway's wall clock, for humans
 * only: expiry is never judged from them (G6, see election/lease.h).
 * renewals grows by one on every renewal and release, so every rewrite has a
 * different body and therefore a different ETag (no ABA on If-Match).
 *
 * This file is the only place in election/ that uses jansson (STYLE R1,
 * `make check-deps`).  Pure functions; any thread; no allocation survives a call.
 */
#ifndef ELECTION_LOCKFILE_H
#define ELECTION_LOCKFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "store/store.h"

#define ELECT_LOCKFILE_VERSION 1
#define ELECT_LOCK_MAX         STORE_LOCK_MAX /* 128 */
#define ELECT_HOLDER_MAX       128            /* bytes of holder (UTF-8, no control chars) */
#define ELECT_GRANTED_BY_MAX   128            /* bytes of granted_by */
#define ELECT_GRANT_ID_HEX     32             /* 16 random bytes, lowercase hex */
#define ELECT_LEASE_MS_MAX     86400000u      /* the codec's bound; config narrows it */
#define ELECT_EPOCH_MAX        INT64_MAX      /* JSON integers are int64 in jansson */
/* The longest body elect_lockfile_encode can produce (all fields at their caps). */
#define ELECT_LOCKFILE_MAX 2048

/* One decoded lock file.  Plain data: copy it freely. */
struct elect_lockfile {
    uint64_t epoch;                            /* 1..ELECT_EPOCH_MAX */
    char lock[ELECT_LOCK_MAX + 1];             /* valid per lock_name_valid */
    char holder[ELECT_HOLDER_MAX + 1];         /* 1..ELECT_HOLDER_MAX bytes */
    uint32_t lease_ms;                         /* 1..ELECT_LEASE_MS_MAX */
    int64_t acquired_at_ms;                    /* granter's wall clock, Unix ms (>= 0) */
    int64_t renewed_at_ms;                     /* granter's wall clock at the last write */
    bool expired;                              /* released: the next acquire takes epoch+1 */
    char lease_sha256[64 + 1];                 /* SHA-256(lease_id), 64 lowercase hex */
    char granted_by[ELECT_GRANTED_BY_MAX + 1]; /* gateway id, 1..ELECT_GRANTED_BY_MAX bytes */
    char grant_id[ELECT_GRANT_ID_HEX + 1];     /* random per grant, 32 lowercase hex */
    uint64_t renewals;                         /* writes after the create, 0..INT64_MAX */
};

/*
 * elect_lockfile_encode - the JSON body of lf, keys in the order shown above,
 * no spaces, no trailing newline.
 * [in]  lf      validated first (every field within its bounds)
 * [out] out     the body, NUL-terminated; size outlen (ELECT_LOCKFILE_MAX + 1 is enough)
 * [out] outlen_used  the body's length (NUL not counted)
 * Returns 0, ERR_INVAL (a field out of bounds or not UTF-8), ERR_TOOBIG
 * (outlen too small), ERR_NOMEM.
 */
MUST_USE int elect_lockfile_encode(const struct elect_lockfile *lf, char *out, size_t outlen,
                                   size_t *outlen_used);

/*
 * elect_lockfile_decode - parse and validate a lock-file body (strict).
 * [in]  body, len  the bytes (borrowed; need not be NUL-terminated)
 * [out] lf         the fields; untouched on failure
 * Returns 0; ERR_VERSION ("version" is an integer other than 1); ERR_INVAL
 * (not JSON, not an object, duplicate/unknown/missing key, wrong type, value
 * out of bounds, bad timestamp); ERR_TOOBIG (len > ELECT_OBJ_MAX); ERR_NOMEM.
 */
MUST_USE int elect_lockfile_decode(const char *body, size_t len, struct elect_lockfile *lf);

/*
 * elect_lockfile_key - the key of epoch's lock file: `<prefix><lock>/epoch-%020llu.json`.
 * [in]  prefix  may be "" (borrowed)
 * [out] out     NUL-terminated; size outlen
 * Returns 0, ERR_INVAL (bad lock, epoch 0, prefix NULL), ERR_TOOBIG.
 */
MUST_USE int elect_lockfile_key(const char *prefix, const char *lock, uint64_t epoch, char *out,
                                size_t outlen);

/*
 * elect_lockfile_dir - the listing prefix of a lock's files: `<prefix><lock>/`.
 * Returns 0, ERR_INVAL, ERR_TOOBIG.
 */
MUST_USE int elect_lockfile_dir(const char *prefix, const char *lock, char *out, size_t outlen);

/*
 * elect_lockfile_key_epoch - the epoch of a key of lock's files.
 * [in]  key     a full key as listed
 * [out] epoch   1..ELECT_EPOCH_MAX; untouched on failure
 * Returns 0, or ERR_INVAL if key is not exactly `<prefix><lock>/epoch-<20 digits>.json`
 * (other objects under the prefix are not lock files and are ignored by callers).
 */
MUST_USE int elect_lockfile_key_epoch(const char *prefix, const char *lock, const char *key,
                                      uint64_t *epoch);

#endif
