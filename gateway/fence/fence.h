/*
 * gateway/fence/fence.h: fencing every write (DESIGN.md G1-G4, G7).
 *
 * Two steps per write:
 *  1. gw_fence_resolve() reads the claim from the request: which lock (a
 *     config rule for bucket/prefix, or X-Fencing-Lock / x-amz-meta-fencing-lock)
 *     and which token (X-Fencing-Token / x-amz-meta-fencing-token), and
 *     refuses contradictions (FencingLockMismatch, MissingFencingToken,
 *     InvalidFencingToken).
 *  2. gw_fence_admit() decides, asynchronously, whether a claimed write may
 *     be forwarded, and returns a ticket that the write holds until it ends:
 *       token <  highest       ERR_FENCED (StaleFencingToken), nothing forwarded
 *       token >  highest       G4: granted?  (election cache, then the lookup
 *                              hook, which reads the epoch file once); if not:
 *                              ERR_DENIED (FencingTokenNotGranted).  If granted,
 *                              the highest is advanced durably (store/, fsync)
 *                              BEFORE the write is admitted (G2).
 *       token == highest       admitted.
 *     The epoch barrier (G3): when a lock's highest rises to e, every
 *     admitted write of an older epoch whose body has not been completely
 *     handed to the upstream (gw_fence_ticket_sent not yet called) is cut: its
 *     cut callback runs and the writer closes its upstream transfer before the
 *     last byte, so S3 never commits it.  Older writes that were completely
 *     sent are awaited: no epoch-e write is admitted until they have ended
 *     (gw_fence_ticket_release).  So at S3 every write of an older epoch
 *     completes before any write of a newer one starts.
 *
 * Write windows (DESIGN "Write windows", gw_fence_set_windows): across
 * crashes, pauses and several gateways the barrier is not enough, so a write
 * of token T is admitted, and its last byte handed upstream, only inside T's
 * window, an instant on this process's clock before which no gateway can
 * grant T+1 (the election computes it; this module asks).  The fence also
 * learns every epoch the election learns (gw_fence_learn).
 *
 * Reload holds (gw_fence_reload_hold): a reload that changes which lock some
 * keys fall under holds those locks' writes claimed under it until the writes
 * classified before it have ended (the wiring says when) and the larger
 * margin has passed.
 *
 * The fence decides and says nothing to clients: a refusal it decides is
 * described as a struct gw_refusal (gw_fence_resolve, gw_fence_refusal,
 * gw_fence_cut_refusal, gw_fence_upload_refusal: claim.c, verdict.c) and
 * carried out by gateway/proxy/refuse.h.
 *
 * The highest token per lock lives in LMDB (store/); this module keeps the
 * locks with writes in flight in memory, seeded from the store.
 * Event-loop thread only; store callbacks arrive through
 * store_dispatch_completions() on the same thread.
 *
 * Room gateway/fence/ (decisions only: make check-deps keeps http/, upstream/
 * and proxy/ out):
 *   fence.c    admission, the highest per lock, write windows, the barrier
 *   claim.c    which lock and which token a write claims (from the fencing
 *              headers the router hands over, and the config's rules)
 *   verdict.c  the fence's refusals, described as struct gw_refusal
 *   hold.c     the reload holds (gw_fence_reload_hold; internal.h)
 *   follow.c   the fence wired to an election (gw_fence_follow_election)
 */
#ifndef GW_FENCE_H
#define GW_FENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/lockname.h"
#include "election/elect.h"
#include "gateway/s3/refusal.h"

struct event_base;
struct gw_config;
struct gw_fence;
struct gw_fence_ticket;
struct gw_s3req;
struct store;

#define GW_FENCE_LOCK_MAX LOCK_NAME_MAX /* longest lock name (common/lockname.h) */

/* What a write claims. */
struct gw_fence_claim {
    bool fenced;                      /* the write is under a lock and carries a token */
    char lock[GW_FENCE_LOCK_MAX + 1]; /* the lock ("" when not fenced and not by_upload) */
    uint64_t token;                   /* the token presented (>= 1 when fenced) */
    bool complete;                    /* CompleteMultipartUpload: fencing.complete_margin_ms */
    bool by_upload; /* UploadPart(Copy)/Complete/Abort under lock without a token: the
                       caller may claim it with its upload's recorded epoch
                       (gw_upload_claim), whatever gw_fence_resolve returned */
    uint32_t gen;   /* the generation of the configuration it was resolved under
                       (gw_config's; gw_fence_reload_hold) */
};

/* The fencing headers of a request, as received (borrowed; NULL: absent). */
struct gw_fence_headers {
    const char *lock;       /* X-Fencing-Lock */
    const char *meta_lock;  /* x-amz-meta-fencing-lock */
    const char *token;      /* X-Fencing-Token */
    const char *meta_token; /* x-amz-meta-fencing-token */
};

/*
 * gw_fence_resolve - the claim of a request.  Only writes are fenced; reads
 * and gateway API requests come back not fenced.
 * [in]  h     the request's fencing headers (borrowed for the call)
 * [in]  cfg   the config in force (fence rules, fencing.*)
 * [in]  s3    the parsed request (bucket, key, operation)
 * [out] claim filled on success
 * [out] r     on refusal: status and S3 code (MissingFencingToken 428,
 *             FencingLockMismatch 400, InvalidFencingToken 400, AccessDenied 403
 *             for bucket-level writes unless fencing.allow_bucket_writes), the
 *             audit kind (enum store_audit_kind; "refused" for bucket-level
 *             writes), counted as a fence rejection; r->lock points into claim
 * A write into a multipart upload (UploadPart, UploadPartCopy, Complete,
 * Abort) that names a lock (rule or header) but no token comes back with
 * claim->by_upload and claim->lock set, and the result it would have had
 * otherwise (428 MissingFencingToken, or not fenced): the caller claims it
 * with the epoch recorded for its upload if there is one (DESIGN "Wire
 * protocol"), else uses that result.
 * Returns 0 or ERR_AUTH (refused).
 */
MUST_USE int gw_fence_resolve(const struct gw_fence_headers *h, const struct gw_config *cfg,
                              const struct gw_s3req *s3, struct gw_fence_claim *claim,
                              struct gw_refusal *r);

/*
 * gw_fence_resolve_keys - the claim of a write that names several keys
 * (DeleteObjects, fenced as one write): every key must fall under the same
 * lock (keys no rule covers count as "no lock"), else FencingLockMismatch;
 * then the claim is resolved as for one key under that lock, with the
 * request's X-Fencing-* headers.
 * [in]  h, cfg      as for gw_fence_resolve
 * [in]  s3          the parsed request (bucket)
 * [in]  keys, nkeys the keys (borrowed for the call); nkeys >= 1
 * [out] claim, r    as for gw_fence_resolve
 * Returns 0 or ERR_AUTH (refused).
 */
MUST_USE int gw_fence_resolve_keys(const struct gw_fence_headers *h, const struct gw_config *cfg,
                                   const struct gw_s3req *s3, const char *const *keys, size_t nkeys,
                                   struct gw_fence_claim *claim, struct gw_refusal *r);

/*
 * gw_fence_granted_fn - the G4 lookup hook: is epoch of lock granted?  Called
 * when a token is above the election cache's latest epoch.
 * Returns 1 (granted, decided now: done never runs), 0 (started: done runs
 * once, never before this returns), ERR_INVAL (not granted), or another ERR_*
 * (unknown: the write is refused with 503, never with a final 409).
 * done: err 0 with granted; or err != 0 (unknown, 503).
 */
typedef void gw_fence_granted_done_fn(void *done_arg, int err, bool granted);
typedef int gw_fence_granted_fn(void *arg, const char *lock, uint64_t epoch,
                                gw_fence_granted_done_fn *done, void *done_arg);

/*
 * gw_fence_admit_fn - the verdict on a claim.
 * err 0: admitted (current == the claim's token); ERR_FENCED: stale (current
 * is the higher token); ERR_DENIED: never granted (current: the lock's
 * highest); ERR_EXPIRED: the token's lease ended and no write window can be
 * opened (409 FencingLeaseExpired); ERR_CONFLICT: the election is configured
 * as this gateway's alone but another gateway granted the epoch (503); ERR_IO /
 * ERR_NOMEM / ERR_AGAIN: the fence could not be checked or advanced (answer
 * 503, forward nothing).  On a non-zero err the ticket is already freed.
 */
typedef void gw_fence_admit_fn(void *arg, int err, uint64_t current);

/*
 * gw_fence_cut_fn - this admitted write must not complete: the barrier cut it
 * (a newer epoch was accepted while its body was not completely sent:
 * err ERR_FENCED), or its last byte was due and no write window could be
 * had (ERR_FENCED: superseded; ERR_EXPIRED: the lease ended; ERR_CONFLICT:
 * granted by another gateway though not shared; ERR_IO: the window could not
 * be checked).  The ticket is already
 * freed; the writer must cancel its upstream transfer now, before its last
 * byte, and answer (409 StaleFencingToken / FencingLeaseExpired, or 503;
 * current: the lock's highest).
 */
typedef void gw_fence_cut_fn(void *arg, int err, uint64_t current);

/*
 * gw_fence_resume_fn - a write whose last byte gw_fence_ticket_may_finish
 * held may now send it (the window is open again).  Runs from the loop,
 * never from inside gw_fence_ticket_may_finish.
 */
typedef void gw_fence_resume_fn(void *arg);

/*
 * Write windows (DESIGN "Write windows"): the election's answers for a
 * lock's epoch, as hooks so tests can drive the fence without an election.
 * peek answers from memory (0, or ERR_NOTFOUND: read); read reads the epoch
 * file and answers later (elect_window_peek / elect_window_read).
 */
struct gw_fence_windows {
    int (*peek)(void *arg, const char *lock, uint64_t epoch, uint64_t now, struct elect_window *w);
    int (*read)(void *arg, const char *lock, uint64_t epoch, elect_window_fn *cb, void *cb_arg);
    void *arg;
    uint32_t commit_margin_ms;   /* fencing.commit_margin_ms */
    uint32_t complete_margin_ms; /* fencing.complete_margin_ms */
};

/*
 * gw_fence_new - the fencing state over an open store.
 * [in] base, st  borrowed; must outlive the fence
 * Returns the object or NULL (out of memory).
 */
struct gw_fence *gw_fence_new(struct event_base *base, struct store *st);

/* gw_fence_set_lookup - install the G4 lookup hook (NULL: only the election cache counts). */
void gw_fence_set_lookup(struct gw_fence *f, gw_fence_granted_fn *fn, void *arg);

/*
 * gw_fence_set_windows - enforce write windows (copied; NULL: none, the G4
 * lookup alone decides).  With windows a fenced write of token T is admitted,
 * and its last byte handed upstream, only while now + margin is before T's
 * window end; a window the election does not have is read (one GET per lock
 * at a time); an ended lease is ERR_EXPIRED, a newer epoch ERR_FENCED, an
 * epoch never granted ERR_DENIED.  No fenced write is admitted before the
 * larger margin has passed since gw_fence_new: what an earlier life of this
 * gateway had completely sent has committed by then.
 */
void gw_fence_set_windows(struct gw_fence *f, const struct gw_fence_windows *w);

/*
 * gw_fence_follow_election - wire the fence to the election e (borrowed;
 * must outlive the fence's use of it): the G4 lookup through
 * elect_epoch_check, write windows through elect_window_peek and
 * elect_window_read with these margins (fencing.commit_margin_ms,
 * complete_margin_ms), and gw_fence_learn of every epoch e learns
 * (elect_set_learn).  gateway/fence/follow.c.
 */
void gw_fence_follow_election(struct gw_fence *f, struct elect *e, uint32_t commit_margin_ms,
                              uint32_t complete_margin_ms);

/*
 * gw_fence_learn - the election learned that epoch exists for lock: advance
 * the lock's highest durably (the barrier then cuts this gateway's unsent
 * older writes), as a write with that token would.  Fire and forget.
 */
void gw_fence_learn(struct gw_fence *f, const char *lock, uint64_t epoch);

/*
 * gw_fence_advance_fn - a lock's highest rose to highest durably and no
 * older write of it is in flight here any more (the multipart bookkeeping
 * aborts older epochs' uploads then: gw_upload_on_advance).
 */
typedef void gw_fence_advance_fn(void *arg, const char *lock, uint64_t highest);

/*
 * gw_fence_set_advance_hook - on_advance(arg, ...) is told of every durable
 * advance of a lock's highest once no older write of it is in flight here
 * (the wiring, gateway/cli/serve.c, passes the multipart bookkeeping's
 * gw_upload_on_advance); NULL: nobody is told.
 */
void gw_fence_set_advance_hook(struct gw_fence *f, gw_fence_advance_fn *on_advance, void *arg);

/*
 * gw_fence_reload_hold - the reload to configuration generation gen made
 * each of locks[0..n) cover keys it did not cover before (gw_config_locks_widened):
 * writes of those locks claimed under gen or a later one (claim->gen) wait
 * before their admission, after the stale check, until gw_fence_reload_ended(f, gen)
 * and then the larger margin (what the store may commit of a transfer cut after
 * its last byte).  Writes claimed under an older generation are not held: they
 * are among those the hold waits for.  Returns 0, ERR_NOMEM or ERR_AGAIN (too
 * many holds at once: GW_FENCE_HOLDS_MAX); on error nothing is held.
 */
#define GW_FENCE_HOLDS_MAX 64
MUST_USE int gw_fence_reload_hold(struct gw_fence *f, uint32_t gen, const char *const *locks,
                                  size_t n);

/*
 * gw_fence_reload_ended - every object write classified under a generation
 * older than gen has ended (gateway/base/inflight.h): gen's hold lifts once
 * the margin has passed from now.
 */
void gw_fence_reload_ended(struct gw_fence *f, uint32_t gen);

/* gw_fence_reload_holding - whether a reload hold has not lifted yet (for tests and status). */
bool gw_fence_reload_holding(const struct gw_fence *f);

/* Locks with nothing in flight whose highest the fence keeps in memory, the
 * ones used last: a lock's writes one after the other read the store once. */
#define GW_FENCE_IDLE_MAX 1024

/* gw_fence_idle_locks - how many it keeps now (at most GW_FENCE_IDLE_MAX). */
size_t gw_fence_idle_locks(const struct gw_fence *f);

/* gw_fence_free - free; every ticket must have been released or cancelled.  NULL-safe. */
void gw_fence_free(struct gw_fence *f);

/*
 * gw_fence_admit - ask to forward a fenced write.
 * [in]  claim     a fenced claim (copied)
 * [in]  reqid, principal  recorded with a fence advance (copied)
 * [in]  admitted  runs once with the verdict, never before this returns
 * [in]  cut       runs at most once, after admission, if the barrier cuts the write
 * [out] out       the ticket: hold it until the write ends, then release it
 * Returns GW_FENCE_ADMITTED (admitted now, as the loop's next judgement would:
 * admitted will not run), 0 (started: admitted runs later), or ERR_INVAL /
 * ERR_NOMEM (no callback will run).
 */
#define GW_FENCE_ADMITTED 1 /* gw_fence_admit: admitted at once */
MUST_USE int gw_fence_admit(struct gw_fence *f, const struct gw_fence_claim *claim,
                            const char *reqid, const char *principal, gw_fence_admit_fn *admitted,
                            gw_fence_cut_fn *cut, void *arg, struct gw_fence_ticket **out);

/* gw_fence_ticket_rebind - send a later cut or resume to cut(arg) / resume(arg) instead
 * (the proxy takes over; resume may be NULL when the writer never holds its last byte). */
void gw_fence_ticket_rebind(struct gw_fence_ticket *t, gw_fence_cut_fn *cut,
                            gw_fence_resume_fn *resume, void *arg);

/*
 * gw_fence_ticket_may_finish - may the write's last byte (for a body-less
 * request: its head) go upstream now?  true: yes, now.  false: hold it; the
 * fence re-reads the window and later calls resume (then ask again) or cut.
 */
MUST_USE bool gw_fence_ticket_may_finish(struct gw_fence_ticket *t);

/* gw_fence_ticket_sent - the write's request is completely handed to the upstream. */
void gw_fence_ticket_sent(struct gw_fence_ticket *t);

/*
 * gw_fence_ticket_release - the write ended (answered, failed or abandoned);
 * frees t.  Also cancels a ticket still waiting for its verdict (its admitted
 * callback then never runs).  NULL-safe.
 */
void gw_fence_ticket_release(struct gw_fence_ticket *t);

/*
 * gw_fence_current - the lock's highest accepted token as this gateway acts
 * on it (0 if none).  Returns 0, ERR_INVAL (bad lock), ERR_IO.
 */
MUST_USE int gw_fence_current(struct gw_fence *f, const char *lock, uint64_t *out);

/*
 * gw_fence_refusal - the refusal of a write the fence did not admit
 * (gw_fence_admit_fn's err and current, for claim c): 409 StaleFencingToken
 * (ERR_FENCED), FencingTokenNotGranted (ERR_DENIED), FencingLeaseExpired
 * (ERR_EXPIRED), audited and counted as fence rejections, with <Lock>, <Token>
 * and <CurrentToken>; 503 ServiceUnavailable for ERR_CONFLICT and anything
 * else (the fence could not be checked), neither audited nor counted.
 * [out] r  r->lock points into c
 */
void gw_fence_refusal(int err, const struct gw_fence_claim *c, uint64_t current,
                      struct gw_refusal *r);

/*
 * gw_fence_cut_refusal - the refusal of an admitted write the fence cut
 * (gw_fence_cut_fn's err and current; the token and lock it was admitted
 * with): 409 StaleFencingToken (ERR_FENCED, audited "cut") or
 * FencingLeaseExpired (ERR_EXPIRED, audited "lease_expired"), else 503.  Not
 * counted: the fence counts its cuts where it makes them.
 * [out] r  r->lock is lock (borrowed)
 */
void gw_fence_cut_refusal(int err, const char *lock, uint64_t token, uint64_t current,
                          struct gw_refusal *r);

/*
 * gw_fence_upload_refusal - the refusal of an admitted write into a
 * multipart upload created under another epoch (created) than its claim c's
 * token: 409 StaleFencingToken, audited "stale", counted.  A newer upload
 * than the token records <Token> c->token and <CurrentToken> created; an
 * older one (aborted in the background) <Token> created and <CurrentToken>
 * c->token.
 * [out] r  r->lock points into c
 */
void gw_fence_upload_refusal(const struct gw_fence_claim *c, uint64_t created,
                             struct gw_refusal *r);

#endif
