/*
 * store/record.h: the byte layout of what the store keeps in LMDB.
 *
 * Values are versioned and length-prefixed:
 *     u8 tag ('F' fence, 'E' election, 'A' audit, 'U' upload), u8 version (1), fields.
 * Audit records are version 1, or version 2 when they carry a trace id: the
 * same fields with the trace id (a string) appended.  A record without a
 * trace id is still written as version 1, byte for byte as before, so older
 * fencegates read it; a version 2 record with an empty trace id is malformed
 * (the encoding stays canonical).  A record that coalesced repeats
 * (count >= 2) is version 3: the trace id (possibly empty), then count (u64)
 * and last_ms (i64); count < 2 in version 3 is malformed.  Older fencegates
 * skip version 3 records as newer (ERR_VERSION).
 * Integers are little-endian u64 (times as two's-complement i64); strings are
 * a u16 length and that many bytes (no NUL inside, at most the field's cap).
 * A value must be consumed exactly.  Keys are big-endian so that LMDB's byte
 * order is time order:
 *     audit        be64 time_ms (negative clamped to 0), be64 seq
 *     audit index  u8 lock length, lock bytes, be64 time_ms, be64 seq
 *     upload       u8 lock length, lock bytes, upload id bytes
 * Decoders never trust their input: anything malformed is ERR_INVAL, a
 * newer version ERR_VERSION; they never read past len nor write past their
 * output (tests/fuzz/store_record_fuzz.c).  Pure functions, thread-safe.
 */
#ifndef STORE_RECORD_H
#define STORE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "store/store.h"

#define STORE_REC_VERSION       1 /* every record without a trace id */
#define STORE_REC_AUDIT_VERSION 2 /* an audit record with a trace id */
#define STORE_REC_AUDIT_RUN     3 /* an audit record that coalesced repeats */
#define STORE_REC_FENCE         'F'
#define STORE_REC_ELECT         'E'
#define STORE_REC_AUDIT         'A'
#define STORE_REC_UPLOAD        'U'

/* Largest encodings, in bytes. */
#define STORE_REC_FENCE_MAX (2 + 8 + 8 + 2 + STORE_REQID_MAX + 2 + STORE_PRINCIPAL_MAX)
#define STORE_REC_ELECT_MAX (2 + 8 + 8)
#define STORE_REC_AUDIT_MAX                                                                        \
    (2 + 8 + 1 + 8 + 8 + 9 * 2 + STORE_LOCK_MAX + STORE_PRINCIPAL_MAX + STORE_CLIENT_MAX +         \
     STORE_METHOD_MAX + STORE_BUCKET_MAX + STORE_KEY_MAX + STORE_OPERATION_MAX + STORE_REQID_MAX + \
     STORE_UA_MAX + 2 + STORE_TRACE_MAX + 16)
#define STORE_REC_UPLOAD_MAX (2 + 8 + 8 + 2 + STORE_BUCKET_MAX + 2 + STORE_KEY_MAX)
#define STORE_KEY_AUDIT_LEN  16
#define STORE_KEY_UPLOAD_MAX (1 + STORE_LOCK_MAX + STORE_UPLOAD_ID_MAX)
#define STORE_KEY_INDEX_MAX  (1 + STORE_LOCK_MAX + 16)

/* Room for the NUL-terminated strings of one decoded audit record. */
struct store_rec_scratch {
    char text[STORE_REC_AUDIT_MAX + 16]; /* strings, each followed by a NUL */
};

/*
 * store_rec_fence_encode - encode f into out (cap bytes; STORE_REC_FENCE_MAX
 * always suffices).  Strings longer than their caps are truncated.
 * [out] len  bytes written
 * Returns 0 or ERR_TOOBIG (cap too small).
 */
MUST_USE int store_rec_fence_encode(const struct store_fence *f, uint8_t *out, size_t cap,
                                    size_t *len);

/* store_rec_fence_decode - decode p[0..len) into *out (untouched on failure).
 * Returns 0, ERR_INVAL (damaged, token 0), ERR_VERSION (newer version). */
MUST_USE int store_rec_fence_decode(const uint8_t *p, size_t len, struct store_fence *out);

/* store_rec_elect_encode / _decode - as for fences, for election entries. */
MUST_USE int store_rec_elect_encode(const struct store_elect *e, uint8_t *out, size_t cap,
                                    size_t *len);
MUST_USE int store_rec_elect_decode(const uint8_t *p, size_t len, struct store_elect *out);

/*
 * store_rec_audit_encode - encode r (all but seq) into out (cap bytes;
 * STORE_REC_AUDIT_MAX suffices).  NULL strings are "", long ones truncated at
 * a UTF-8 boundary.  Returns 0, ERR_INVAL (kind out of range), ERR_TOOBIG.
 */
MUST_USE int store_rec_audit_encode(const struct store_audit_rec *r, uint8_t *out, size_t cap,
                                    size_t *len);

/*
 * store_rec_audit_decode - decode p[0..len) into *out, whose strings point
 * into *scratch (valid while scratch is); out->seq is set to 0 (it lives in
 * the key).  Returns 0, ERR_INVAL, ERR_VERSION; *out is unspecified on failure.
 */
MUST_USE int store_rec_audit_decode(const uint8_t *p, size_t len, struct store_audit_rec *out,
                                    struct store_rec_scratch *scratch);

/* store_rec_audit_key - the 16-byte audit key of (time_ms, seq) into out. */
void store_rec_audit_key(int64_t time_ms, uint64_t seq, uint8_t out[STORE_KEY_AUDIT_LEN]);

/* store_rec_audit_key_decode - the inverse.  Returns 0 or ERR_INVAL (len != 16). */
MUST_USE int store_rec_audit_key_decode(const uint8_t *p, size_t len, int64_t *time_ms,
                                        uint64_t *seq);

/*
 * store_rec_index_key - the index key of (lock, time_ms, seq) into out
 * (STORE_KEY_INDEX_MAX bytes); lock is cut at STORE_LOCK_MAX.  Returns its length.
 */
size_t store_rec_index_key(const char *lock, int64_t time_ms, uint64_t seq,
                           uint8_t out[STORE_KEY_INDEX_MAX]);

/*
 * store_rec_index_key_decode - split an index key: *lock_len bytes of lock
 * name at p + 1 (not NUL-terminated, borrowed from p), then time and seq.
 * Returns 0 or ERR_INVAL.
 */
MUST_USE int store_rec_index_key_decode(const uint8_t *p, size_t len, size_t *lock_len,
                                        int64_t *time_ms, uint64_t *seq);

/*
 * store_rec_upload_encode / _decode - as for fences, for multipart-upload
 * entries (decode: ERR_INVAL also for epoch 0).
 */
MUST_USE int store_rec_upload_encode(const struct store_upload *u, uint8_t *out, size_t cap,
                                     size_t *len);
MUST_USE int store_rec_upload_decode(const uint8_t *p, size_t len, struct store_upload *out);

/*
 * store_rec_upload_key - the key of (lock, upload_id) into out
 * (STORE_KEY_UPLOAD_MAX bytes).  Returns its length, or 0 if lock or
 * upload_id is empty or over its cap.
 */
size_t store_rec_upload_key(const char *lock, const char *upload_id,
                            uint8_t out[STORE_KEY_UPLOAD_MAX]);

/* store_rec_trunc_len - the length of s cut to at most cap bytes without
 * splitting a UTF-8 sequence. */
size_t store_rec_trunc_len(const char *s, size_t cap);

#endif
