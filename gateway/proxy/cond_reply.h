/*
 * gateway/proxy/cond_reply.h: the answer to the store's 412 on a condition
 * of ours (DESIGN "Conditional writes").
 *
 * A fenced write that carried our If-Match / If-None-Match (gateway/proxy/
 * cond.h) and got 412 was refused by the store: a write of the key came
 * first.  Who wrote it decides the answer:
 *   - the write's token is still the lock's highest (another gateway, or an
 *     unfenced writer, changed the key under the same epoch): 503 SlowDown
 *     with Retry-After, counted; SDKs retry with the same body, and the
 *     retry learns the key's new ETag;
 *   - the fence has moved on: the store stopped a late stale write.  409
 *     StaleFencingToken (or the window's refusal), audited store_refused.
 * The proxy (proxy_xfer.c) catches the 412 before a byte of it reaches the client,
 * learns the key's version, and calls these; each ends the response.
 *
 * Event-loop thread only.
 */
#ifndef GW_COND_REPLY_H
#define GW_COND_REPLY_H

#include <stdbool.h>
#include <stdint.h>

struct gw_fence;
struct gw_fence_ticket;
struct gw_req;
struct gw_s3req;
struct store;

/* Whose write came first, as this gateway can tell now. */
enum gw_cond_verdict {
    GW_COND_SUPERSEDED, /* the fence knows a newer token: gw_cond_store_refused */
    GW_COND_CURRENT,    /* the token may still finish: gw_cond_slow_down */
    GW_COND_UNDECIDED,  /* the window must say: resumed (current) or cut (superseded) */
};

/*
 * gw_cond_judge - after the store's 412 to our condition on a write of lock
 * (borrowed) with token, admitted under ticket (borrowed) by fence (borrowed).
 * [out] current  the lock's highest token, set for GW_COND_SUPERSEDED
 * Returns the verdict.
 */
enum gw_cond_verdict gw_cond_judge(struct gw_fence *fence, struct gw_fence_ticket *ticket,
                                   const char *lock, uint64_t token, uint64_t *current);

/*
 * gw_cond_reply_slowdown - answer req 503 SlowDown with Retry-After: 1 and
 * message (borrowed; SDKs retry it with the same body).  Counts nothing.
 * Ends the response: req must not be used after.
 */
void gw_cond_reply_slowdown(struct gw_req *req, const char *message);

/*
 * gw_cond_slow_down - answer req 503 SlowDown with Retry-After: 1 and count
 * it (fencegate_conditional_write_slowdowns_total).  s3 and lock (borrowed)
 * name the write in the log.  Ends the response: req must not be used after.
 */
void gw_cond_slow_down(struct gw_req *req, const struct gw_s3req *s3, const char *lock,
                       uint64_t token);

/*
 * gw_cond_store_refused - the store stopped a late stale write: refuse req
 * through gw_refuse (gateway/proxy/refuse.h), a 409 audited store_refused
 * and counted.
 * [in] st         the store for the audit record (borrowed)
 * [in] s3         the write (borrowed)
 * [in] principal  recorded (borrowed; NULL: anonymous)
 * [in] lock, token  the write's lock (borrowed) and token
 * [in] err        ERR_FENCED (current: the newer token) or the window's error
 * [in] counted    the fence already counted this refusal (a cut): not again
 * Ends the response: req must not be used after.
 */
void gw_cond_store_refused(struct store *st, struct gw_req *req, const struct gw_s3req *s3,
                           const char *principal, const char *lock, uint64_t token, int err,
                           uint64_t current, bool counted);

#endif /* GW_COND_REPLY_H */
