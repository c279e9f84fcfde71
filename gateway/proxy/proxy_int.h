/*
 * gateway/proxy/proxy_int.h: what the proxy's files share; not for use
 * outside gateway/proxy/proxy*.c (the rest of the room uses proxy.h).
 *
 * One forwarded request (struct preq) passes through three files, whose
 * calls go one way, top to bottom:
 *   proxy.c       the proxy object (struct gw_proxy): new, settings, free
 *   proxy_fwd.c   forward in named steps: bind, body, checksum, headers,
 *                 condition, sign, start (gw_proxy_forward*)
 *   proxy_xfer.c  the upstream transfer and the request's end: the
 *                 transfer's callbacks, the client's (back-pressure, abort),
 *                 the fence's (cut, resume), the answer to our condition's 412
 * proxy_xfer.c calls neither of the others: the steps a HEAD left pending
 * (struct fwd, proxy_fwd.c's own) are freed with their request through the
 * pointer p->fwd_free that forward installs beside p->fwd.
 *
 * The structs are defined here rather than kept opaque because each file
 * reads and writes the same request's fields; none leaves these files.
 *
 * Event-loop thread only.
 */
#ifndef GW_PROXY_INT_H
#define GW_PROXY_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "common/buf.h"
#include "gateway/fence/fence.h"
#include "gateway/fence/port.h"
#include "gateway/http/http.h"
#include "gateway/proxy/cond.h"
#include "gateway/proxy/etag_map.h"
#include "gateway/proxy/proxy.h"
#include "gateway/s3client/s3client.h"

struct preq;
struct fwd;

/* The proxy: one per loop, shared by its requests. */
struct gw_proxy {
    const struct gw_config *cfg; /* borrowed; in force for new requests */
    struct gw_upstream *up;      /* borrowed */
    struct gw_s3client *s3c;     /* borrowed; the one signer: addressing, SigV4, reload */
    bool trailers;               /* the upstream takes aws-chunked checksum trailers */
    struct gw_upload *uploads;   /* borrowed; multipart bookkeeping, or NULL */
    struct gw_cond *cond;        /* owned; conditional writes: the ETag map, HEADs */
    /* owned; fenced writes running on without their client (on_abort) */
    TAILQ_HEAD(preq_list, preq) detached;
    size_t ndetached;              /* their number */
    void (*drain_done)(void *arg); /* gw_proxy_drain's, until the last of them ends */
    void *drain_arg;
};

/* gw_proxy_fwd_free_fn - frees the steps left to forward (proxy_fwd.c's fwd_free). */
typedef void gw_proxy_fwd_free_fn(struct fwd *f);

/* One forwarded request. */
struct preq {
    struct gw_proxy *px;  /* the proxy */
    struct gw_req *req;   /* the client request (owned by the server) */
    struct gw_xfer *x;    /* the upstream transfer, NULL once done or cancelled */
    struct gw_body *body; /* the request-body filter (checks hashes, decodes aws-chunked);
                             NULL when the body was buffered (mem) */
    char *mem;            /* owned; a body already read and checked (gw_proxy_forward_body) */
    size_t mem_len;       /* its length */
    size_t mem_off;       /* bytes of it handed to the upstream */
    bool body_waiting;    /* read_body returned ERR_AGAIN: resume on body_ready */
    bool recv_paused;     /* on_body returned ERR_AGAIN: resume on output drained */
    bool head_sent;       /* the response head went to the client */
    bool is_head;         /* a HEAD request: no response body */
    uint64_t body_length; /* bytes the upstream's Content-Length announces */
    uint64_t body_passed; /* bytes handed to the upstream so far */
    struct gw_fport_ticket *ticket;   /* fenced write: its ticket, NULL otherwise */
    struct gw_fence *fence;           /* fenced write: its fence (upload bookkeeping) */
    struct store *store;              /* fenced write: for the audit of a cut, or NULL */
    struct gw_s3req *s3;              /* fenced write: a copy, for the audit of a cut */
    char lock[GW_FENCE_LOCK_MAX + 1]; /* fenced write: the lock */
    char etag[GW_ETAG_MAX + 1];       /* fenced write: the answer's ETag (bare), "" if none */
    uint64_t token;                   /* fenced write: the admitted token */
    char principal[64];               /* fenced write: for the audit */
    struct gw_s3xml *tap;      /* owned; fenced Create/Complete: the answer parsed on its way */
    char *query;               /* owned; fenced Create/Complete/Abort: the raw query, for
                                  gw_upload_response (also once the client is gone) */
    bool hold_answer;          /* fenced Create: the answer's body waits in answer until the
                                  upload is recorded (on_done), so no client holds its id
                                  before every loop can claim parts with it */
    struct buf answer;         /* owned; that body (capped at GW_UPLOAD_TAP_MAX) */
    int status;                /* the upstream's status */
    uint64_t sent_ns;          /* monotonic ns the transfer started; 0 before */
    unsigned op;               /* the request's operation index (metrics.h) */
    enum gw_cond_use cond_use; /* what conditional writes do with it (gateway/proxy/cond.h) */
    bool cond;                 /* a condition of ours rides on it */
    bool cond_failed;          /* the store answered 412 to it: nothing goes to the client */
    bool cond_wait;            /* after that 412: the fence says whether the token is current */
    bool held;                 /* fenced: the body's last byte is held for a write window */
    char held_byte;            /* ... that byte */
    bool start_pending;        /* fenced, body-less: the head waits for a write window */
    /* the signed upstream request until its transfer starts */
    struct gw_s3client_msg msg;
    const char *method;       /* the client's method (borrowed from req) */
    int64_t up_length;        /* the upstream body length, -1 for none */
    bool is_write;            /* for the metrics */
    struct gw_client *client; /* its address's transfer share (gw_http_fair_transfer_begin) */
    bool detached;            /* the client left after the whole request was sent: the transfer
                                 runs on for the barrier (G3), its answer discarded */
    char reqid[24];           /* detached: the request id, for the log */
    const struct gw_config *write_cfg; /* detached: the write counts in flight under it
                                          until the transfer ends (gw_req_write_take) */
    unsigned write_slot;               /* ... in this bucket slot (gw_inflight_slot) */
    struct gw_cond_head *head;         /* the HEAD for the key's ETag while it runs */
    struct fwd *fwd;                   /* owned while the HEAD runs: the steps left to forward */
    struct gw_cond_hdr cond_hdr;       /* our condition */
    /* frees fwd, set with it: a pointer, as proxy_xfer.c calls nothing in proxy_fwd.c */
    gw_proxy_fwd_free_fn *fwd_free;
    /* detached: in px->detached */
    TAILQ_ENTRY(preq) link;
};

/*
 * gw_proxy_preq_free - end p: cancel its transfer and its HEAD, free the
 * steps left to forward, release its transfer share and its ticket, and free
 * it.  p->req is not touched: the caller answers the client (and clears
 * p->req) first.  NULL-safe.
 */
void gw_proxy_preq_free(struct preq *p);

/*
 * gw_proxy_own_failure - the error to answer when a step of our own
 * (checksum, signing, starting the transfer) failed with rc: rc itself for
 * ERR_NOMEM, ERR_AGAIN, ERR_UPSTREAM, ERR_TIMEOUT and ERR_TOOBIG; otherwise
 * ERR_IO (500 InternalError, counted in internal_errors).
 */
int gw_proxy_own_failure(int rc);

/*
 * gw_proxy_start_transfer - start the upstream transfer of p's signed request
 * (p->msg, cleaned up on every path).  Returns 0, or the upstream's error
 * (p is then the caller's to answer and free).
 */
int gw_proxy_start_transfer(struct preq *p);

/* gw_proxy_on_cut - gw_fence_cut_fn of a fenced request; arg is its struct preq. */
void gw_proxy_on_cut(void *arg, int err, uint64_t current);

/* gw_proxy_on_resume - gw_fence_resume_fn of a fenced request; arg is its struct preq. */
void gw_proxy_on_resume(void *arg);

/* gw_proxy_preq_ops - a forwarded request's client-side callbacks (gw_req_set_ops). */
extern const struct gw_req_ops gw_proxy_preq_ops;

#endif
