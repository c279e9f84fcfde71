/*
 * election/backend.h: the object-store interface the election runs on.
 *
 * election/ declares it; implementations live elsewhere: election/backend_dir.c
 * (a local directory) and the gateway's S3 backend (gateway/, through its
 * libcurl upstream client; election/ never includes gateway/ headers).  The
 * election stores one small object per epoch under keys it builds itself
 * (`<prefix><lock>/epoch-<20 digits>.json`, see election/lockfile.h); the
 * backend sees only whole keys and opaque bodies.
 *
 * Shape.  An implementation embeds struct elect_backend (usually as its first
 * member) and points `ops` at a static table; the election calls the
 * elect_backend_* wrappers below, never the table directly.
 *
 * Threads and the loop.  Event-loop thread only.  Every operation is
 * asynchronous: it returns 0 when started, and then its callback runs exactly
 * once, on the loop, NEVER before the starting call has returned (the dir
 * backend defers with event_base_once(0 timeout); the S3 backend completes
 * from libcurl's multi callbacks).  A non-zero return means nothing was
 * started and the callback will never run.  Every operation ends in bounded
 * time (the S3 backend's transfer timeouts; the dir backend is local): the
 * election keeps no timers of its own for backend calls.
 *
 * Ownership.  Every pointer passed in (keys, bodies, etags, prefixes) is
 * borrowed only until the starting call returns: the backend copies what it
 * needs.  Everything handed to a callback (bodies, metas, key arrays) is
 * borrowed for the duration of that callback only.  elect_backend_free
 * cancels every operation still pending WITHOUT running its callback, then
 * frees the backend; after it returns no callback of that backend will run.
 *
 * Outcomes (the S3 mapping is the gateway's, given here as the contract):
 *   create-if-absent  PUT with `If-None-Match: *`
 *     0              created; meta->etag is the new object's ETag
 *     ERR_EXISTS     the key exists (S3 412 PreconditionFailed; dir EEXIST)
 *     ERR_UPSTREAM   AMBIGUOUS: 5xx, connection reset, protocol error: the
 *                    object may or may not have been created (RGW answers
 *                    some losing conditional PUTs with 500).  The election
 *                    reads the object back and compares its grant_id.
 *     ERR_TIMEOUT    AMBIGUOUS, as ERR_UPSTREAM.
 *     ERR_CONFLICT   S3 409 ConditionalRequestConflict (a concurrent
 *                    conditional write on the same key): not created; retry.
 *     other ERR_*    not created (ERR_DENIED 403, ERR_NOTFOUND no bucket,
 *                    ERR_INVAL, ERR_TOOBIG, ERR_IO, ERR_NOMEM).
 *   replace-if-match  PUT with `If-Match: <etag>`
 *     0              replaced; meta->etag is the new ETag (it always differs
 *                    from the old one because the election never writes the
 *                    same body twice: renewals bump a counter)
 *     ERR_CONFLICT   the ETag did not match (S3 412; also 409)
 *     ERR_NOTFOUND   the object does not exist (S3 404 NoSuchKey)
 *     ERR_UPSTREAM / ERR_TIMEOUT   AMBIGUOUS, as for create
 *     other ERR_*    not replaced.
 *   get               GET
 *     0              body, len and meta (etag, last_modified_ms, date_ms)
 *     ERR_NOTFOUND   no such object
 *     ERR_TOOBIG     the body is larger than ELECT_OBJ_MAX (not read further)
 *     other ERR_*    failure (ERR_UPSTREAM, ERR_TIMEOUT, ERR_DENIED, ERR_IO...)
 *   list              ListObjectsV2 prefix=, start-after=, max-keys=
 *     0              keys > start_after with the prefix, ascending byte order,
 *                    at most max; truncated says whether more may follow
 *                    (continue with start_after = the last key returned)
 *     other ERR_*    failure
 *   delete            DELETE (unconditional)
 *     0              deleted, or it did not exist (S3 answers 204 for both)
 *     other ERR_*    failure
 *
 * ETags.  ETags crossing this interface are always in their bare form: no
 * surrounding double quotes and no W/ prefix (the S3 backend strips them from
 * response headers).  How the If-Match header is spelled is chosen per call
 * by `form`: AWS S3 compares the quoted form `"abc"` (RFC 9110 entity-tag);
 * Ceph RGW's PUT If-Match accepts only the unquoted `abc`.  The backend does
 * not guess: the election core probes at start-up (elect_start in
 * election/elect.h: replace the probe object with the quoted form, and on
 * ERR_CONFLICT with the unquoted one; then check that a wrong ETag is refused
 * with ERR_CONFLICT) and uses the form that works for every later replace.
 * A backend that compares ETags itself (dir) accepts either form.
 *
 * Clocks (G6).  meta->date_ms is the store's own clock at the time of the
 * response (HTTP Date, 1 s resolution), meta->last_modified_ms the store's
 * own clock when the object was last written (Last-Modified, 1 s resolution).
 * The election compares these two with each other only, never with its own
 * clock.  Unknown values are -1.  The dir backend reports its local
 * CLOCK_REALTIME for both (it is one machine), at millisecond resolution.
 */
#ifndef ELECTION_BACKEND_H
#define ELECTION_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* Longest ETag (bare form) a backend may report; longer ones are ERR_UPSTREAM. */
#define ELECT_ETAG_MAX 128
/* Largest object body the election reads or writes (lock files are ~500 bytes). */
#define ELECT_OBJ_MAX 8192
/* Longest key (S3's limit). */
#define ELECT_KEY_MAX 1024
/* Largest max for elect_backend_list (S3's max-keys cap). */
#define ELECT_LIST_MAX 1000

struct elect_backend;

/* How to spell the ETag in an If-Match header (see "ETags" above). */
enum elect_etag_form {
    ELECT_ETAG_QUOTED = 0,   /* If-Match: "abc"  (AWS S3, RFC 9110) */
    ELECT_ETAG_UNQUOTED = 1, /* If-Match: abc    (Ceph RGW on PUT) */
};

/* What a write or a read learned about the object, from the store. */
struct elect_obj_meta {
    char etag[ELECT_ETAG_MAX + 1]; /* bare ETag; "" if the response carried none */
    int64_t last_modified_ms;      /* store clock: object last written (Unix ms), -1 unknown */
    int64_t date_ms;               /* store clock: when it answered (Unix ms), -1 unknown */
};

/*
 * elect_be_write_fn - a create or replace finished.
 * [in] arg   as given to the starting call
 * [in] err   0 or an ERR_* as in "Outcomes" above
 * [in] meta  on err 0: the new object's etag (never "") and date_ms; on
 *            failure it may be NULL.  Borrowed for the call.
 */
typedef void elect_be_write_fn(void *arg, int err, const struct elect_obj_meta *meta);

/*
 * elect_be_get_fn - a get finished.
 * [in] body, len  on err 0: the object's bytes (not NUL-terminated; len <=
 *                 ELECT_OBJ_MAX); otherwise NULL, 0.  Borrowed for the call.
 * [in] meta       on err 0: etag, last_modified_ms, date_ms; else NULL.
 */
typedef void elect_be_get_fn(void *arg, int err, const char *body, size_t len,
                             const struct elect_obj_meta *meta);

/*
 * elect_be_list_fn - a list finished.
 * [in] keys       on err 0: n full keys (prefix included), ascending byte
 *                 order, each > start_after; NULL when n is 0.  The array and
 *                 the strings are borrowed for the call.
 * [in] truncated  more keys may follow the last one.
 */
typedef void elect_be_list_fn(void *arg, int err, const char *const *keys, size_t n,
                              bool truncated);

/* elect_be_del_fn - a delete finished: err 0 (gone, or never there) or an ERR_*. */
typedef void elect_be_del_fn(void *arg, int err);

/* The operations table.  Every entry is required; arguments are checked by the wrappers. */
struct elect_backend_ops {
    int (*create)(struct elect_backend *be, const char *key, const char *body, size_t len,
                  elect_be_write_fn *cb, void *arg);
    int (*replace)(struct elect_backend *be, const char *key, const char *etag,
                   enum elect_etag_form form, const char *body, size_t len, elect_be_write_fn *cb,
                   void *arg);
    int (*get)(struct elect_backend *be, const char *key, elect_be_get_fn *cb, void *arg);
    int (*list)(struct elect_backend *be, const char *prefix, const char *start_after, uint32_t max,
                elect_be_list_fn *cb, void *arg);
    int (*del)(struct elect_backend *be, const char *key, elect_be_del_fn *cb, void *arg);
    /* Cancel everything pending without callbacks, free the backend.  be is never NULL. */
    void (*free)(struct elect_backend *be);
};

/* The operations, as elect_be_timing_fn names them. */
enum elect_be_op {
    ELECT_BE_CREATE = 0,
    ELECT_BE_REPLACE,
    ELECT_BE_GET,
    ELECT_BE_LIST,
    ELECT_BE_DEL,
};

/* elect_be_timing_fn - a call of op finished after ns nanoseconds (monotonic), whatever its err. */
typedef void elect_be_timing_fn(void *arg, enum elect_be_op op, uint64_t ns);

struct elect_be_timed;

/* Embedded by every implementation; filled in by its constructor (zeroed: no timing). */
struct elect_backend {
    const struct elect_backend_ops *ops; /* static table of the implementation */
    const char *name;             /* for logs and /readyz, e.g. "dir:/var/lib/x" or "s3:locks";
                                     owned by the implementation, valid until free */
    elect_be_timing_fn *timing;   /* NULL, or told of every call's duration */
    void *timing_arg;             /* its argument */
    struct elect_be_timed *timed; /* calls being timed, in flight (backend.c owns them) */
};

/*
 * elect_backend_set_timing - from now on, tell fn how long each call took
 * (for metrics).  Each timed call costs one small allocation; a call that
 * cannot get it runs untimed.  Loop thread only.
 */
void elect_backend_set_timing(struct elect_backend *be, elect_be_timing_fn *fn, void *arg);

/*
 * elect_backend_create - create key with body, only if key does not exist
 * (S3: PUT with If-None-Match: *).
 * [in] be        the backend
 * [in] key       full key, 1..ELECT_KEY_MAX bytes; borrowed until return
 * [in] body,len  the object's bytes, len <= ELECT_OBJ_MAX; borrowed until return
 * [in] cb        required; runs exactly once after this returns 0, never
 *                before this returns; err as in "Outcomes" (create-if-absent)
 * [in] arg       passed to cb
 * Returns 0 (started), ERR_INVAL (bad argument), ERR_TOOBIG (len), ERR_NOMEM,
 * or another ERR_* from the implementation; cb never runs on a non-zero return.
 */
MUST_USE int elect_backend_create(struct elect_backend *be, const char *key, const char *body,
                                  size_t len, elect_be_write_fn *cb, void *arg);

/*
 * elect_backend_replace - overwrite key with body only if its current ETag is
 * etag (S3: PUT with If-Match, spelled per form).
 * [in] etag  bare ETag, 1..ELECT_ETAG_MAX bytes; borrowed until return
 * [in] form  how to spell it in If-Match (the dir backend ignores it)
 * Other parameters, callback and returns as elect_backend_create; err as in
 * "Outcomes" (replace-if-match).
 */
MUST_USE int elect_backend_replace(struct elect_backend *be, const char *key, const char *etag,
                                   enum elect_etag_form form, const char *body, size_t len,
                                   elect_be_write_fn *cb, void *arg);

/*
 * elect_backend_get - read key: body, ETag, Last-Modified and the store's Date.
 * [in] cb  required; runs exactly once after this returns 0, never before
 * Returns as elect_backend_create.
 */
MUST_USE int elect_backend_get(struct elect_backend *be, const char *key, elect_be_get_fn *cb,
                               void *arg);

/*
 * elect_backend_list - keys beginning with prefix and greater than
 * start_after, ascending, at most max.
 * [in] prefix       may be "" (everything); borrowed until return
 * [in] start_after  NULL or "" for the beginning; need not exist
 * [in] max          1..ELECT_LIST_MAX
 * [in] cb           required; runs exactly once after this returns 0, never before
 * Returns as elect_backend_create.
 */
MUST_USE int elect_backend_list(struct elect_backend *be, const char *prefix,
                                const char *start_after, uint32_t max, elect_be_list_fn *cb,
                                void *arg);

/*
 * elect_backend_del - delete key unconditionally (used by GC and the probe).
 * [in] cb  required; runs exactly once after this returns 0, never before
 * Returns as elect_backend_create.
 */
MUST_USE int elect_backend_del(struct elect_backend *be, const char *key, elect_be_del_fn *cb,
                               void *arg);

/*
 * elect_backend_name - the backend's name for logs ("?" for NULL).  Valid
 * until the backend is freed.
 */
const char *elect_backend_name(const struct elect_backend *be);

/*
 * elect_backend_free - cancel every pending operation (their callbacks never
 * run) and free the backend.  NULL-safe.
 */
void elect_backend_free(struct elect_backend *be);

/*
 * elect_etag_bare - strip an ETag header value to the bare form used here:
 * optional "W/" and one pair of surrounding double quotes removed.  For
 * backends parsing ETag headers.
 * [in]  value  the header value (borrowed); leading/trailing spaces ignored
 * [out] out    the bare ETag, NUL-terminated; size outlen (ELECT_ETAG_MAX + 1 is enough)
 * Returns 0, ERR_INVAL (empty, unbalanced quotes, a '"' inside, control
 * bytes), or ERR_TOOBIG.
 */
MUST_USE int elect_etag_bare(const char *value, char *out, size_t outlen);

#endif
