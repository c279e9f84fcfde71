/*
 * election/elect.h: the embedded election: leases and fencing tokens (epochs)
 * on epoch lock files (DESIGN.md "The election", "Epoch lock file", G4-G6).
 *
 * One struct elect per gateway runs the election for every lock on one
 * backend (election/backend.h).  It keeps, per lock, the latest record it
 * has read or written, a FIFO of calls and a list of long-polling waiters.
 * At most one backend sequence per lock runs at a time in this process
 * (refresh = LIST start-after the latest known epoch + GET of the newest;
 * create; renew/release), so concurrent calls of one gateway never race
 * each other; gateways race each other only through the store's
 * conditional writes.
 *
 * Protocol (each step cites DESIGN.md "The election"):
 *   acquire  refresh; if there is no record, or it is released, or its
 *            lease ran out (election/lease.h, G6): create epoch+1 with
 *            create-if-absent, carrying a fresh grant_id and
 *            SHA-256(lease_id).  412/409 or an ambiguous outcome (timeout,
 *            5xx: RGW answers some losing conditional PUTs with 500) is
 *            followed by reading the file back: our grant_id = granted.
 *            The epoch is committed to the store's election cache
 *            (store_elect_advance) BEFORE the grant is answered (STYLE R7).
 *   renew    the holder's lease_id must hash to lease_sha256 (else
 *            ERR_DENIED); a newer epoch (LIST start-after) means superseded
 *            (ERR_CONFLICT); then replace-if-match with renewals+1 and a new
 *            renewed_at, so the ETag always changes (no ABA).
 *   release  as renew, with expired:true; the next acquire creates epoch+1
 *            at once.
 *   GC       after a grant, old epoch files are deleted in the background,
 *            keeping the last keep_epochs; never the latest, never anything
 *            in the store's fence table.
 *   probe    elect_start runs the precondition self-test (see there); until
 *            it passes, acquire/renew/release are refused with ERR_AGAIN.
 *
 * lease_id is 32 bytes from getrandom(2), sent as 64 lowercase hex digits;
 * only SHA-256 of those 64 ASCII digits is stored (lease_sha256).  SHA-256 is
 * election/sha256.c (no OpenSSL in election/, STYLE R1).
 *
 * Threads and the loop.  Event-loop thread only.  Every call below runs on the
 * loop and never blocks: backend operations are asynchronous, store reads are
 * LMDB read transactions, store writes are store_elect_advance (async).  The
 * owner of the loop must watch store_completion_fd and call
 * store_dispatch_completions (the gateway already does).  Callbacks never run
 * before the call that started them returns.  Time comes from common/clock.h
 * (clock_mono_ms for lease judgement, clock_wall_ms for the timestamps
 * written), so tests pin it; timers go through a thin libevent adapter
 * (election/elect_timer.c), and elect_on_timer lets tests run due work after
 * moving a pinned clock.
 *
 * Ownership.  Strings passed in are borrowed until the call returns.  The
 * struct elect_info handed to a callback is borrowed for that callback only;
 * its lease_id is a secret: copy it into the reply and do not log it.
 */
#ifndef ELECTION_ELECT_H
#define ELECTION_ELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "election/backend.h"
#include "election/lockfile.h"

struct event_base;
struct store;
struct elect;
struct elect_call;

#define ELECT_LEASE_ID_HEX 64 /* lease_id: 32 random bytes as lowercase hex */

struct elect_opts {
    struct event_base *base;       /* the loop (timers); borrowed, outlives the elect */
    struct elect_backend *backend; /* OWNED from elect_new on, even when it fails */
    struct store *store;           /* borrowed, outlives the elect; NULL = no election cache
                                      (tests and tools only: production passes the store) */
    const char *prefix;            /* key prefix, e.g. "fencegate/"; may be ""; copied */
    const char *granted_by;        /* this gateway's id for granted_by; 1..128 bytes; copied */
    uint32_t default_lease_ms;     /* lease when the request gives 0 (default 15000) */
    uint32_t min_lease_ms;         /* smallest lease granted (default 1000) */
    uint32_t max_lease_ms;         /* largest lease granted (default 300000) */
    uint32_t keep_epochs;          /* epoch files GC keeps per lock, >= 1 (default 5) */
    uint32_t max_wait_ms;          /* cap on wait_ms (default 60000) */
    uint32_t poll_ms;              /* while calls wait, re-read a lock at least this often to
                                      see other gateways' changes (default 1000; it is
                                      also bounded by lease_ms / 4, at least 50) */
    uint32_t gc_delay_ms;          /* GC runs this long after a grant (default 1000) */
    bool shared;                   /* other gateways share this election (DESIGN "Many
                                      gateways"): windows are capped at shared_window_ms and a
                                      released lock is handed over only after
                                      shared_window_ms + commit_margin_ms (default false) */
    uint32_t shared_window_ms;     /* see shared (default 5000) */
    uint32_t commit_margin_ms;     /* a renewal is written only with this much window left; the
                                      release hand-over waits this much longer (default 1000) */
};

/*
 * Write windows (DESIGN "Write windows").  For the latest epoch T of a lock
 * the election keeps `until`, an instant on this process's monotonic clock
 * before which no gateway can grant T+1:
 *   - own grant or renewal of T, request sent at s:  s + lease_ms;
 *   - a read of T's file sent at s, T not released:  s + lease_ms - age - slack,
 *     age = the response's Date - the file's Last-Modified (the store's own
 *     clock), slack 1000 ms when both are whole seconds (HTTP dates);
 *   - shared: never more than s + shared_window_ms.
 * Every observation only raises it (each bound stays true); a release or
 * expiry closes it.  Why it holds: an epoch is created only after the
 * previous record stayed unchanged for its lease on the granter's clock and
 * was then rewritten expired:true with If-Match on that very version (so a
 * renewal and a takeover are one compare-and-swap on one object: whichever
 * lands first makes the other fail), or after a release plus, when shared,
 * shared_window_ms + commit_margin_ms.
 */
enum elect_window_state {
    ELECT_WIN_OPEN = 0,    /* no gateway can grant epoch+1 before `until` */
    ELECT_WIN_ENDED,       /* the epoch's lease ended: released, expired or surely run out
                              (age less slack >= lease: no renewal can land any more); a
                              read whose window closed by less answers OPEN, until <= now */
    ELECT_WIN_SUPERSEDED,  /* a newer epoch exists (latest) */
    ELECT_WIN_NOT_GRANTED, /* no such epoch was ever granted */
    ELECT_WIN_FOREIGN,     /* not shared, yet the file was written by another gateway id */
};

struct elect_window {
    enum elect_window_state state;
    uint64_t until;  /* OPEN: monotonic ms (clock_mono_ms) */
    uint64_t latest; /* the latest epoch known */
};

/*
 * elect_window_fn - an elect_window_read finished.
 * [in] err  0 (w filled), or ERR_UPSTREAM / ERR_TIMEOUT / ERR_IO / ERR_INVAL /
 *           ERR_VERSION / ERR_NOMEM: unknown (refuse the write with 503)
 * [in] w    borrowed for the call
 */
typedef void elect_window_fn(void *arg, int err, const struct elect_window *w);

/*
 * elect_learn_fn - the election learned that epoch exists for lock (its own
 * grant, or a file it read); called once per rise of the lock's latest epoch,
 * on the loop, possibly from inside another elect call.
 */
typedef void elect_learn_fn(void *arg, const char *lock, uint64_t epoch);

/* What a call learned about a lock's latest epoch. */
struct elect_info {
    char lock[ELECT_LOCK_MAX + 1];
    uint64_t token; /* the latest epoch known; 0 = never granted */
    bool known;     /* the record of epoch `token` was read: live, holder and the times below are
                       real; false: only the epoch is known (not read since the restart) */
    bool live;      /* held now: not released, lease not run out (G6) */
    bool released;  /* the record says expired:true */
    char holder[ELECT_HOLDER_MAX + 1]; /* "" when token is 0 */
    uint32_t lease_ms;
    uint64_t expires_in_ms; /* when live: own estimate of the lease left */
    int64_t expires_at_ms;  /* wall clock of this gateway: now + expires_in_ms */
    int64_t acquired_at_ms; /* as written by the granting gateway (informational) */
    int64_t renewed_at_ms;  /* ditto, last renewal */
    uint64_t renewals;      /* renewals (and the release) so far */
    char granted_by[ELECT_GRANTED_BY_MAX + 1];
    char lease_id[ELECT_LEASE_ID_HEX + 1]; /* SECRET; only in a granted acquire, else "" */
};

/*
 * elect_done_fn - a call finished (exactly once, on the loop, never before the
 * starting call returned, never after elect_call_cancel or elect_free).
 * [in] err   per call, see below
 * [in] info  the lock's state as the call saw it; never NULL; borrowed
 */
typedef void elect_done_fn(void *arg, int err, const struct elect_info *info);

/*
 * elect_check_fn - an asynchronous G4 lookup finished.
 * [in] err      0, or ERR_UPSTREAM / ERR_TIMEOUT / ERR_IO...: unknown (refuse the write, 503)
 * [in] granted  on err 0: whether the epoch was granted (recorded in the
 *               election cache before this runs)
 */
typedef void elect_check_fn(void *arg, int err, bool granted);

/* elect_opts_init - the defaults above; base, backend, store, prefix, granted_by NULL. */
void elect_opts_init(struct elect_opts *o);

/*
 * elect_new - an election over o->backend.  Does no I/O; call elect_start.
 * [in]  o    borrowed for the call (strings copied); o->backend becomes owned
 * [out] out  the election (elect_free); NULL on failure
 * Returns 0, ERR_INVAL (missing base/backend, bad granted_by/prefix, bounds:
 * min <= default <= max <= ELECT_LEASE_MS_MAX, keep_epochs >= 1), ERR_NOMEM.
 * On failure the backend has been freed.
 */
MUST_USE int elect_new(const struct elect_opts *o, struct elect **out);

/*
 * elect_free - drop every pending call WITHOUT running its callback, free the
 * backend (cancelling its operations), the timers and the per-lock state.
 * Store callbacks still queued are detached (they run later and do nothing).
 * NULL-safe.  Loop thread; not from inside an elect callback.
 */
void elect_free(struct elect *e);

/*
 * elect_start - start the backend's precondition self-test (asynchronous):
 *   1. create a unique probe key `<prefix>~probe/<32 hex>` (must succeed);
 *   2. create it again: must be ERR_EXISTS (else the backend ignores
 *      If-None-Match: refuse, "backend ignores If-None-Match");
 *   3. replace it with If-Match spelled quoted, then unquoted: the first
 *      form accepted is used from then on (AWS: quoted; RGW: unquoted);
 *      neither accepted: refuse;
 *   4. the ETag must have changed, and a replace with the now-stale ETag
 *      must be ERR_CONFLICT (else "backend ignores If-Match": refuse);
 *   5. read it back (body and ETag must match), delete it.
 * A transient failure (ERR_UPSTREAM, ERR_TIMEOUT...) retries after 1 s,
 * doubling to 30 s; a refusal is final until restart.  The outcome is
 * logged and visible through elect_ready.
 * Returns 0 (started or already started), or ERR_* if the first backend
 * call could not start (it is retried by the timer all the same).
 */
MUST_USE int elect_start(struct elect *e);

/*
 * elect_ready - whether leases may be granted (the self-test passed).
 * [out] reason  may be NULL; when not ready: why ("self-test running",
 *               "backend ignores If-None-Match: ...", ...), static or owned
 *               by e, valid until the next elect call; "" when ready
 */
bool elect_ready(const struct elect *e, const char **reason);

/*
 * elect_acquire - ask for the lock (POST .../acquire).
 * [in] lock      lock_name_valid (common/lockname.h)
 * [in] holder    1..ELECT_HOLDER_MAX bytes, no control characters
 * [in] lease_ms  0 = default; otherwise within [min_lease_ms, max_lease_ms]
 * [in] wait_ms   0 = answer at once; else wait (no thread held) up to
 *                min(wait_ms, max_wait_ms) for the lock to become free
 * [in] cb, arg   required cb; err: 0 granted (info->lease_id set, token the
 *                new epoch, already in the election cache); ERR_CONFLICT held
 *                by another (info: holder, token, expires_in_ms); ERR_VERSION /
 *                ERR_INVAL (the latest lock file cannot be read: nothing is
 *                granted over it); ERR_UPSTREAM / ERR_TIMEOUT / ERR_IO /
 *                ERR_AGAIN / ERR_NOMEM (nothing known granted to this caller)
 * [out] callp    may be NULL; the handle for elect_call_cancel, valid until cb runs
 * Returns 0 (cb will run), ERR_INVAL (bad argument), ERR_AGAIN (self-test not
 * passed: see elect_ready), ERR_NOMEM.  cb never runs on a non-zero return.
 */
MUST_USE int elect_acquire(struct elect *e, const char *lock, const char *holder, uint32_t lease_ms,
                           uint32_t wait_ms, elect_done_fn *cb, void *arg,
                           struct elect_call **callp);

/*
 * elect_renew - extend the lease of epoch token (POST .../renew).
 * [in] lease_id  the secret from the acquire (64 hex digits)
 * cb err: 0 renewed (info: new expiry); ERR_DENIED (lease_id does not match:
 * 403); ERR_CONFLICT (superseded by a newer epoch, or released: info is the
 * current latest record, with its holder); ERR_NOTFOUND (no such epoch);
 * ERR_UPSTREAM / ERR_TIMEOUT (unknown: retry the renew, it is idempotent);
 * ERR_VERSION / ERR_INVAL (unreadable lock file); ERR_IO, ERR_NOMEM.
 * Returns and callp as elect_acquire (ERR_INVAL also for token 0).
 */
MUST_USE int elect_renew(struct elect *e, const char *lock, uint64_t token, const char *lease_id,
                         elect_done_fn *cb, void *arg, struct elect_call **callp);

/*
 * elect_release - end the lease of epoch token: the file is rewritten with
 * expired:true (POST .../release); the next acquire gets token+1 at once.
 * cb err as elect_renew; releasing an already released epoch is 0.
 */
MUST_USE int elect_release(struct elect *e, const char *lock, uint64_t token, const char *lease_id,
                           elect_done_fn *cb, void *arg, struct elect_call **callp);

/*
 * elect_revoke - end the lease of lock's latest epoch now, whoever holds it
 * (an admin's POST .../revoke): the lock is refreshed, then the latest epoch's
 * file is rewritten expired:true with If-Match on the version read, exactly as
 * a release (the holder's lease_id is not asked for).  Its write window closes
 * at once here (elect_window_peek: ELECT_WIN_ENDED, so the fence refuses its
 * writes); other gateways see it on their next read of the file.  The next
 * acquire is granted as after a release: at once, or when shared after
 * shared_window_ms + commit_margin_ms.  The holder's renew then fails with
 * ERR_CONFLICT (as after a release).
 * cb err: 0 (info: the epoch, now released, with the holder it had; an epoch
 * already ended is rewritten or left released: 0 too); ERR_NOTFOUND (never
 * granted); ERR_CONFLICT (a newer epoch was granted meanwhile: info names it);
 * ERR_UPSTREAM / ERR_TIMEOUT (unknown: revoke again); ERR_VERSION / ERR_INVAL
 * (unreadable lock file); ERR_IO, ERR_NOMEM.
 * Returns and callp as elect_acquire.
 */
MUST_USE int elect_revoke(struct elect *e, const char *lock, elect_done_fn *cb, void *arg,
                          struct elect_call **callp);

/*
 * elect_get - the lock's latest record (GET /_fencegate/v1/locks/{lock}),
 * read fresh from the backend.
 * [in] after    0: answer at once.  N > 0 with wait_ms > 0: answer when the
 *               latest epoch is > N, or epoch N is no longer live (released
 *               or lease run out), or when wait_ms (capped) passes, whichever
 *               is first; changes made or observed by this gateway wake it
 *               at once, others' are seen within poll_ms
 * cb err: 0 (info->token 0 when never acquired); ERR_UPSTREAM / ERR_TIMEOUT /
 * ERR_IO; ERR_VERSION / ERR_INVAL (unreadable lock file).  The self-test need
 * not have passed.  Returns and callp as elect_acquire.
 */
MUST_USE int elect_get(struct elect *e, const char *lock, uint64_t after, uint32_t wait_ms,
                       elect_done_fn *cb, void *arg, struct elect_call **callp);

/*
 * elect_peek - what this process knows about lock now, without I/O (for
 * GET /_fencegate/v1/locks, metrics, logs).
 * [out] info  filled (lease_id always ""); on ERR_NOTFOUND token is 0;
 *             info->known false when only the election cache knows the lock
 *             (not read since the restart): elect_get reads it
 * Returns 0, ERR_NOTFOUND (nothing known in memory or in the election
 * cache), ERR_INVAL (bad lock).
 */
MUST_USE int elect_peek(struct elect *e, const char *lock, struct elect_info *info);

/*
 * elect_epoch_check - G4: was epoch of lock ever granted?  The election
 * cache (and this process's memory) answer at once; an epoch newer than both
 * is looked up once by reading its lock file; if it exists it is recorded in
 * the election cache before cb says granted.
 * Returns 1 (granted, decided now: cb never runs), 0 (lookup started: cb
 * runs once, later), ERR_INVAL (bad lock, epoch 0 or > ELECT_EPOCH_MAX:
 * not granted; cb never runs), ERR_IO (cache unreadable), ERR_NOMEM, or a
 * backend error starting the read.
 */
MUST_USE int elect_epoch_check(struct elect *e, const char *lock, uint64_t epoch,
                               elect_check_fn *cb, void *arg);

/*
 * elect_set_learn - install the observer told of every new latest epoch (the
 * fence advances on it: DESIGN "the fence learns every epoch the election
 * learns").  NULL to remove.
 */
void elect_set_learn(struct elect *e, elect_learn_fn *fn, void *arg);

/* What happened to a lease, for elect_lease_fn (metrics). */
enum elect_lease_event {
    ELECT_EV_GRANT = 0, /* an acquire here was granted epoch */
    ELECT_EV_RENEW,     /* a renewal here succeeded */
    ELECT_EV_RELEASE,   /* a release here succeeded */
    ELECT_EV_EXPIRE,    /* epoch's lease ran out and was rewritten expired:true here */
    ELECT_EV_TAKEOVER,  /* a grant that followed such an expiry (after its ELECT_EV_GRANT) */
};

/*
 * elect_lease_fn - lease event ev of lock's epoch; until_ms is the lease's end
 * on the monotonic clock (clock_mono_ms) for grants and renewals, else 0.
 * Called on the loop just before the call's own callback.
 */
typedef void elect_lease_fn(void *arg, const char *lock, enum elect_lease_event ev, uint64_t epoch,
                            uint64_t until_ms);

/* elect_set_lease_observer - install the observer of lease events.  NULL to remove. */
void elect_set_lease_observer(struct elect *e, elect_lease_fn *fn, void *arg);

/*
 * elect_window_peek - what memory alone says of epoch's window at now.
 * [out] w  filled on 0
 * Returns 0 (decided: OPEN with until > now, SUPERSEDED, ENDED, FOREIGN, or NOT_GRANTED
 * for an epoch above ELECT_EPOCH_MAX, which no epoch file can hold),
 * ERR_NOTFOUND (read the file: elect_window_read), ERR_INVAL (bad lock or epoch).
 */
MUST_USE int elect_window_peek(struct elect *e, const char *lock, uint64_t epoch, uint64_t now,
                               struct elect_window *w);

/*
 * elect_window_read - read epoch's file (one GET; a LIST when it is missing)
 * and answer its window.  What it learns is kept (elect_window_peek sees it)
 * and a newer epoch is told to the learn observer.
 * Returns 0 (cb runs once, later, unless elect_free), ERR_INVAL, ERR_NOMEM, or
 * a backend error starting the read (cb never runs).
 */
MUST_USE int elect_window_read(struct elect *e, const char *lock, uint64_t epoch,
                               elect_window_fn *cb, void *arg);

/*
 * elect_call_cancel - the caller lost interest (client hang-up): cb will not
 * run.  A backend write already in flight completes (a grant nobody
 * receives simply expires).  call must be a live handle (cb not yet run).
 */
void elect_call_cancel(struct elect *e, struct elect_call *call);

/*
 * elect_on_timer - run work that is due at clock_mono_ms() (waits ending,
 * leases running out, polls, GC, self-test retries).  The libevent adapter
 * calls it; tests call it after moving a pinned clock.  Loop thread.
 */
void elect_on_timer(struct elect *e);

/*
 * elect_etag_form_used - the If-Match spelling the self-test chose
 * (ELECT_ETAG_QUOTED before it has run).  For logs and tests.
 */
enum elect_etag_form elect_etag_form_used(const struct elect *e);

#endif
