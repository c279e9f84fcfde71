/*
 * gateway/proxy/proxy.h: the proxy pipeline.
 *
 * Forwards one client request to the upstream: rewrites the header set
 * (drops hop-by-hop, client credentials and X-Fencing-*), re-signs it with
 * SigV4 and the upstream credentials, streams the request body up and the
 * response body down with back-pressure on both sides, and ends the client's
 * request with exactly one response on every path.
 *
 * Event-loop thread only.  One struct gw_proxy per loop, shared by requests.
 *
 * Room gateway/proxy/ (the request pipeline; with gateway/cli/ the only rooms
 * that may include every other, make check-deps):
 *   router.h / .c     every request's first stop: route (API, health, S3),
 *                     classify, authenticate, resolve the claim, admit
 *   create_bucket.h / .c   CreateBucket of an existing bucket, answered as S3
 *                     does while bucket writes are off
 *   delete_objects.h / .c  a fenced DeleteObjects' document read and parsed
 *                     before the router fences its keys as one write
 *   auth.h / .c       SigV4/SigV2 verification against the principals, their
 *                     buckets and locks
 *   refuse.h / .c     the one refusal path: counter, log line, audit record,
 *                     S3 error document (or 503 when the record cannot be queued)
 *   proxy.h / .c      the proxy object and its settings; proxy_int.h is what
 *                     its files share, and the order they call in:
 *     proxy_fwd.c     forwarding in named steps (bind, body, checksum, headers,
 *                     condition, sign, start)
 *     proxy_xfer.c    the upstream transfer: responses streamed back, windows,
 *                     cuts, client aborts, the answer to our condition's 412
 *   proxy_hdr.h / .c  which request and response headers cross
 *   body.h / .c       the request-body filter (hash checks, aws-chunked)
 *   upload.h / .c     multipart uploads under epochs, aborts of stale ones
 *   cond.h / .c       conditional writes: which condition a fenced write gets
 *                     (the ETag map, a HEAD on a miss)
 *   etag_map.h / .c   the bounded key -> ETag map (LRU, per lock and epoch)
 */
#ifndef GW_PROXY_H
#define GW_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct event_base;
struct gw_auth;
struct gw_cond_caps;
struct gw_config;
struct gw_fence;
struct gw_fport_ticket;
struct gw_upload;
struct gw_proxy;
struct gw_req;
struct gw_s3client;
struct gw_s3req;
struct gw_upstream;
struct store;

/*
 * gw_proxy_new - a proxy forwarding to cfg->upstream through up, re-signing
 * with s3c's signer (gateway/s3client/s3client.h: the gateway's one signer,
 * reloaded by its owner).
 * [in] cfg, up, s3c  borrowed; must outlive the proxy (cfg may be swapped
 *                    with gw_proxy_set_config).
 * Returns the proxy, or NULL with errbuf filled (no memory, no s3c).
 */
struct gw_proxy *gw_proxy_new(const struct gw_config *cfg, struct gw_upstream *up,
                              struct gw_s3client *s3c, char *errbuf, size_t errlen);

/* gw_proxy_set_config - use cfg (borrowed) for requests forwarded from now on. */
void gw_proxy_set_config(struct gw_proxy *px, const struct gw_config *cfg);

/*
 * gw_proxy_set_uploads - the multipart bookkeeping (gateway/proxy/upload.h;
 * borrowed, NULL for none): fenced uploads' answers are recorded in it
 * (which epoch created an upload, which were completed or aborted).
 */
void gw_proxy_set_uploads(struct gw_proxy *px, struct gw_upload *u);

/*
 * gw_proxy_set_trailers - whether the upstream takes aws-chunked checksum
 * trailers (config upstream.checksum_trailers, or the start-up probe): a
 * checksum a client sends as a trailer then goes upstream as a trailer of the
 * re-framed body (gateway/s3/chunk_enc.h); otherwise it is verified here only.
 * Applies to requests forwarded from now on.  Default false.
 */
void gw_proxy_set_trailers(struct gw_proxy *px, bool on);

/* gw_proxy_trailers - the current setting. */
bool gw_proxy_trailers(const struct gw_proxy *px);

/*
 * gw_proxy_set_cond_caps - what the store honours (the conditional-write
 * probe's answer, gateway/s3client/cond_probe.h; copied): fenced overwrites
 * forwarded from now on carry conditions as fencing.conditional_writes and
 * the rules say (gateway/proxy/cond.h).  Until it is called, "auto" adds
 * none and "on" answers fenced overwrites 503 SlowDown.
 */
void gw_proxy_set_cond_caps(struct gw_proxy *px, const struct gw_cond_caps *caps);

/*
 * gw_proxy_copy_settings - px takes from's switches (trailers, what the store
 * honours, the multipart bookkeeping) and shares what from learns of the
 * store's keys (gw_cond_share): a worker loop's proxy made from the control
 * loop's (on the control loop's thread; from is freed after px).
 */
void gw_proxy_copy_settings(struct gw_proxy *px, const struct gw_proxy *from);

/* gw_proxy_cond_active - whether fenced PutObjects get conditions now. */
bool gw_proxy_cond_active(const struct gw_proxy *px);

/*
 * gw_proxy_drain - calls done(arg) once no fenced write runs on without its
 * client (at once when none does; once).  A loop that ended sooner would
 * release those writes' tickets while the store may still commit them, and a
 * newer epoch's write held by the barrier on another loop would overtake
 * them (G3).  Each such write ends by the upstream's answer or its timeout.
 */
void gw_proxy_drain(struct gw_proxy *px, void (*done)(void *arg), void *arg);

/* gw_proxy_free - free the proxy (requests in flight must be gone; transfers still running
 * for clients that left are cancelled and their tickets released).  NULL-safe. */
void gw_proxy_free(struct gw_proxy *px);

/* An admitted fenced write (see gateway/fence/fence.h). */
struct gw_proxy_fence {
    struct gw_fence *fence;         /* borrowed; the fence */
    struct store *store;            /* borrowed; for audit records of a cut (NULL: none) */
    struct gw_fport_ticket *ticket; /* owned from the call on: released when the write ends */
    const char *lock;               /* borrowed for the call (copied) */
    uint64_t token;                 /* the admitted token */
};

/*
 * gw_proxy_forward - forward req (whose head is complete and whose body has
 * not been started) as the S3 request s3 describes, with the body checked
 * and decoded as auth says (both borrowed for the call).  fenced is NULL for
 * an unfenced request; for an admitted fenced write it hands over the ticket:
 * the proxy marks it sent once the whole request is with the upstream,
 * answers 409 StaleFencingToken and cuts the transfer if the barrier cuts it,
 * adds X-Fencing-Current-Token to the response, and releases the ticket when
 * the write ends.  If the client goes away after the whole fenced request was
 * sent, the transfer runs on without it (its answer discarded, a multipart
 * answer still recorded) and the ticket is released when the transfer ends
 * (DESIGN G3); otherwise a client hang-up cancels the transfer.
 * Takes over req: the proxy answers it on every path, including errors.
 */
void gw_proxy_forward(struct gw_proxy *px, struct gw_req *req, const struct gw_s3req *s3,
                      const struct gw_auth *auth, const struct gw_proxy_fence *fenced);

/*
 * gw_proxy_forward_body - as gw_proxy_forward, for a request whose body the
 * caller has already read completely and checked (gateway/proxy/body.h: hash,
 * aws-chunked signatures), e.g. a DeleteObjects document read to find its
 * keys.  The body goes upstream from memory with the client's headers
 * (Content-MD5 and checksums kept, framing headers dropped as usual).
 * [in] body, len  the decoded body (copied; body may be NULL when len is 0)
 * Takes over req as gw_proxy_forward does.
 */
void gw_proxy_forward_body(struct gw_proxy *px, struct gw_req *req, const struct gw_s3req *s3,
                           const struct gw_auth *auth, const struct gw_proxy_fence *fenced,
                           const char *body, size_t len);

#endif
