/*
 * gateway/base/metrics.h: the process's counters, gauges and histograms,
 * exported as Prometheus text (version 0.0.4) on GET /metrics.
 *
 * Names follow Prometheus's guide: counters end in _total, durations are
 * seconds, sizes bytes.  Every label takes its values from a closed set, so
 * no client can grow the exposition without limit (README "Metrics"):
 *   operation  the classifier's S3 operation (gw_s3_op_name), an index below
 *              GW_METRICS_OPS; the names come from the caller of the render;
 *   code       a known HTTP status, else its class ("4xx"), 499 for a request
 *              whose client left before any response head;
 *   lock       locks named by fences rules always; other locks up to
 *              metrics.max_locks, then "_other"; "_none" where no valid lock
 *              is known (metrics_lock.c);
 *   kind, op   fixed enums below.
 *
 * Loops.  Each event loop counts into a set of its own (struct
 * gw_metrics_set), reached through the thread-local pointer behind
 * `gw_metrics`; a thread that attached none counts into the main set (the
 * control loop's).  /metrics sums the sets when it renders (gw_metrics_sum),
 * as nginx's and Envoy's per-worker counters are.  A set has one writer, its
 * loop, so a count is a relaxed atomic load and store (GW_COUNT: plain moves
 * on x86-64 and arm64, no locked instruction), and the scrape reads other
 * loops' sets with relaxed loads: a scrape may see a request half counted,
 * as Prometheus allows, and never a torn value.  Store results are measured
 * on the loop when their callback runs.
 *
 * Cost.  A request costs two clock reads, a histogram observe (a bucket
 * search over GW_METRICS_BUCKETS bounds and three counts) and one counter,
 * with no allocation and no lock.
 *
 * The per-request state is struct gw_metrics_req, embedded in the HTTP
 * request (gateway/http) and nothing else.
 */
#ifndef GW_METRICS_H
#define GW_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"

#define GW_METRICS_BUCKETS           16 /* finite histogram bounds, 0.5 ms ... 60 s */
#define GW_METRICS_OPS               96 /* operation indexes (> GW_S3_OP_COUNT, checked in proxy/) */
#define GW_METRICS_OP_NONE           95 /* a request never classified: label "none" */
#define GW_METRICS_CODES             48 /* code label slots (metrics.c's table) */
#define GW_METRICS_MAX_LOCKS_DEFAULT 1000
#define GW_METRICS_MAX_LOCKS_MAX     100000 /* metrics.max_locks' upper bound */
/* The text's size is at most BASE + PER_LOCK per lock with series (checked by metrics_test). */
#define GW_METRICS_RENDER_BASE     ((size_t)1024 * 1024)
#define GW_METRICS_RENDER_PER_LOCK ((size_t)2048)

/* A histogram: counts per bucket (not cumulative; the last is +Inf), sum in ns. */
struct gw_histo {
    uint64_t counts[GW_METRICS_BUCKETS + 1]; /* observations per bucket */
    uint64_t sum_ns;                         /* sum of all observations, nanoseconds */
    uint64_t count;                          /* number of observations */
};

/* Why an upstream transfer failed (fencegate_upstream_errors_total{kind}). */
enum gw_metrics_upstream_error {
    GW_UPERR_CONNECT = 0, /* could not connect, or the transfer broke (ERR_UPSTREAM) */
    GW_UPERR_TIMEOUT,     /* timed out (ERR_TIMEOUT) */
    GW_UPERR_COUNT
};

/* The election backend's operations (fencegate_election_backend_seconds{op}). */
enum gw_metrics_backend_op {
    GW_BEOP_CREATE = 0,
    GW_BEOP_REPLACE,
    GW_BEOP_GET,
    GW_BEOP_LIST,
    GW_BEOP_DELETE,
    GW_BEOP_COUNT
};

/* What happened to a lock's lease (the election's events, per lock). */
enum gw_metrics_lease_event {
    GW_LEASE_GRANT = 0, /* this gateway granted an epoch */
    GW_LEASE_RENEW,     /* ... renewed one */
    GW_LEASE_RELEASE,   /* ... released one */
    GW_LEASE_EXPIRE,    /* a lease this gateway knew ran out unreleased */
    GW_LEASE_TAKEOVER,  /* a grant that first expired a run-out lease */
    GW_LEASE_EVENTS
};

/* The fence's refusal codes (fencegate_fence_refusals_total{code}); others count as "other". */
#define GW_METRICS_FENCE_CODES 8

/*
 * The counters of one event loop.  Every field is a uint64_t, or an array or
 * struct of them, and nothing else: gw_metrics_sum adds sets word by word.
 * Gauges sum too (each loop counts its own connections).  The two flags
 * (checksum_trailers_forwarded, conditional_writes) are written by the
 * control loop only, so their sum is the control loop's value.
 */
struct gw_metrics_set {
    uint64_t requests;                        /* requests whose head was parsed */
    uint64_t requests_active;                 /* requests forwarded and not yet finished */
    uint64_t proxied;                         /* requests forwarded upstream */
    uint64_t writes;                          /* forwarded requests classified as writes */
    uint64_t upstream_errors[GW_UPERR_COUNT]; /* failed transfers by kind */
    uint64_t internal_errors;                 /* requests failed by a step of our own (500) */
    uint64_t client_aborts;                   /* clients that hung up before their response ended */
    uint64_t bytes_in;                        /* request-body bytes handed upstream */
    uint64_t bytes_out;                       /* response-body bytes handed to clients */
    uint64_t audit_failures;    /* refusals answered 503: record not queued or committed */
    uint64_t classify_refusals; /* requests refused as not classified exactly (G9) */
    uint64_t window_reads;      /* epoch files read to open a write window */
    uint64_t window_holds;      /* last bytes held for a write window */
    uint64_t window_cuts;       /* writes cut before their last byte: no window */
    uint64_t checksum_trailers_forwarded; /* 1: client checksum trailers go upstream */
    uint64_t client_conns_refused;        /* connections refused: address over its share */
    uint64_t client_transfers_refused;    /* requests answered 503: address over its share */
    uint64_t idle_shed;                   /* idle connections closed at the connection limit */
    uint64_t slow_bodies_cut;             /* bodies cut under limits.min_body_rate */
    uint64_t client_conns_open;           /* client connections open now */
    /* requests by operation index and code slot, counted when the request ends */
    uint64_t requests_by[GW_METRICS_OPS][GW_METRICS_CODES];
    struct gw_histo request_seconds[GW_METRICS_OPS];  /* head parsed .. request freed */
    struct gw_histo upstream_seconds[GW_METRICS_OPS]; /* forwarded .. upstream's head */
    struct gw_histo fence_hold_seconds;               /* barrier and write-window holds */
    struct gw_histo audit_commit_seconds;             /* refusal record queued .. committed */
    struct gw_histo backend_seconds[GW_BEOP_COUNT];   /* election backend calls */

    uint64_t traceparent_invalid_total; /* traceparent headers ignored as malformed */
    uint64_t access_log_dropped_total;  /* access-log lines dropped: the writer was behind */
    uint64_t conditional_writes;        /* 1: fenced overwrites go as conditional writes */
    uint64_t cond_heads;                /* HEADs for a key's ETag (the map missed) */
    uint64_t cond_slowdowns;            /* our condition failed, token still highest: 503 */
    uint64_t cond_store_refused;        /* our condition failed, token superseded: 409 */
};

/* The calling thread's set: its loop's after gw_metrics_attach, else the main set. */
extern _Thread_local struct gw_metrics_set *gw_metrics_here;

/* gw_metrics - the calling thread's set, as an lvalue: read it freely; count with GW_COUNT. */
#define gw_metrics (*gw_metrics_here)

/*
 * gw_metrics_bump - add n to *c, a counter of the calling thread's own set.
 * One writer per set, so a relaxed load and store, not a read-modify-write:
 * the scrape's concurrent relaxed loads are well defined and cost nothing.
 */
static inline void
gw_metrics_bump(uint64_t *c, uint64_t n)
{
    __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

/* Count into the calling thread's set: one, n, minus one (gauges), or set a value. */
#define GW_COUNT(field)        gw_metrics_bump(&gw_metrics_here->field, 1)
#define GW_COUNT_ADD(field, n) gw_metrics_bump(&gw_metrics_here->field, (uint64_t)(n))
#define GW_GAUGE_DEC(field)    gw_metrics_bump(&gw_metrics_here->field, UINT64_MAX) /* -1 */
#define GW_GAUGE_SET(field, v)                                                                     \
    __atomic_store_n(&gw_metrics_here->field, (uint64_t)(v), __ATOMIC_RELAXED)

/* The most loops that attach a set at once (gw_metrics_attach). */
#define GW_METRICS_SETS_MAX 1024

/*
 * gw_metrics_attach - make s (zeroed here) the calling thread's set and add
 * it to the sum.  For a worker loop's thread, before it counts anything; s
 * must stay alive until gw_metrics_detach on the same thread.  Returns 0, or
 * ERR_AGAIN when GW_METRICS_SETS_MAX sets are attached.
 */
MUST_USE int gw_metrics_attach(struct gw_metrics_set *s);

/*
 * gw_metrics_detach - the calling thread's loop is done: its counts move to
 * the sum's retired part (so no counter ever falls), its set leaves the sum,
 * and the thread counts into the main set again.  No-op on the main set.
 */
void gw_metrics_detach(void);

/* gw_metrics_sum - out = every set's counts added: the main set, the attached ones, the retired. */
void gw_metrics_sum(struct gw_metrics_set *out);

/* gw_metrics_total - one field of every set added, e.g. GW_METRICS_TOTAL(requests). */
uint64_t gw_metrics_total(size_t offset);
#define GW_METRICS_TOTAL(field) gw_metrics_total(offsetof(struct gw_metrics_set, field))

/* gw_metrics_reset - zero every set and the retired part (unit tests; no loop may be counting). */
void gw_metrics_reset(void);

/*
 * One request's accounting, embedded in struct gw_req (gateway/http).  Zeroed
 * with the request; gw_metrics_req_begin stamps it.  This is the only
 * per-request metrics state.
 */
struct gw_metrics_req {
    uint64_t start_ns; /* monotonic ns when the head was parsed; 0 = not begun */
    uint16_t op;       /* operation index; GW_METRICS_OP_NONE until classified */
    int16_t status;    /* status of the response head that went out; 0 = none yet */
    bool counted;      /* gw_metrics_req_end ran */
};

/* gw_metrics_now_ns - the monotonic clock in ns (CLOCK_MONOTONIC; not pinned by tests). */
uint64_t gw_metrics_now_ns(void);

/* gw_metrics_req_begin - stamp m (a new request) with now; operation "none". */
void gw_metrics_req_begin(struct gw_metrics_req *m);

/* gw_metrics_req_set_op - m's operation index (>= GW_METRICS_OPS counts as "none"). */
void gw_metrics_req_set_op(struct gw_metrics_req *m, unsigned op);

/* gw_metrics_req_status - the response head with status went out (the first one counts). */
void gw_metrics_req_status(struct gw_metrics_req *m, int status);

/*
 * gw_metrics_req_end - the request is over: count it once in
 * requests_by[op][code], code its response's status or 499 when no response
 * head went out, and its duration.  Later calls do nothing; so does a request
 * never begun.
 */
void gw_metrics_req_end(struct gw_metrics_req *m);

/* gw_metrics_req_end_at - gw_metrics_req_end with the clock the caller read (now, ns). */
void gw_metrics_req_end_at(struct gw_metrics_req *m, uint64_t now);

/* gw_metrics_requests_of_class - requests counted with a code of class cls (4: 4xx, 499 too). */
uint64_t gw_metrics_requests_of_class(int cls);

/* gw_metrics_count_unparsed - a response to a request never parsed (a head
 * the server refused): counted under operation "none". */
void gw_metrics_count_unparsed(int status);

/* gw_metrics_code_slot - the code slot of an HTTP status (0 = "499"-less 0). */
unsigned gw_metrics_code_slot(int status);

/* gw_metrics_code_label - the label of a slot ("200", "4xx", "other"). */
const char *gw_metrics_code_label(unsigned slot);

/* gw_histo_observe - count one observation of ns nanoseconds. */
void gw_histo_observe(struct gw_histo *h, uint64_t ns);

/* gw_metrics_bucket_bound_ns - the upper bound of finite bucket i, in ns. */
uint64_t gw_metrics_bucket_bound_ns(unsigned i);

/* gw_metrics_upstream_duration - op's time from forwarding to the upstream's response head. */
void gw_metrics_upstream_duration(unsigned op, uint64_t ns);

/* ---- per lock (metrics_lock.c) ---- */

/*
 * gw_metrics_locks_init - (re)size the lock table for max_locks locks beyond
 * the pinned ones.  Called at start (and again on reload: entries are kept,
 * the bound changes for new names only).  Returns 0 or ERR_NOMEM.
 */
MUST_USE int gw_metrics_locks_init(uint32_t max_locks);

/* gw_metrics_lock_pin - lock (a fences rule's) is always labelled, whatever the bound.
 * Returns 0, ERR_INVAL (not a lock name) or ERR_NOMEM. */
MUST_USE int gw_metrics_lock_pin(const char *lock);

/* gw_metrics_locks_free - drop the table (process end, tests). */
void gw_metrics_locks_free(void);

/* gw_metrics_fence_refusal - the fence refused a write on lock (may be NULL) with S3 code. */
void gw_metrics_fence_refusal(const char *lock, const char *code);

/*
 * gw_metrics_lease - lock's lease event: epoch and, for grants and renewals,
 * until_ms (monotonic ms, common/clock.h) when the lease ends as this gateway
 * knows it.  A known lease that runs out unreleased counts one expiry, once
 * (checked at every event of the lock and at every render).
 */
void gw_metrics_lease(const char *lock, enum gw_metrics_lease_event ev, uint64_t epoch,
                      uint64_t until_ms);

/* gw_metrics_lock_epoch - the election learned that lock's epoch exists (its gauge only rises). */
void gw_metrics_lock_epoch(const char *lock, uint64_t epoch);

/* gw_metrics_fence_refusals - fence refusals counted so far, every lock and code. */
uint64_t gw_metrics_fence_refusals(void);

/* gw_metrics_lock_series - the number of lock label values in use (tests, bounds). */
size_t gw_metrics_lock_series(void);

/* ---- exposition (metrics_render.c) ---- */

/* gw_metrics_op_name_fn - the name of operation index op (a static string), NULL if none. */
typedef const char *gw_metrics_op_name_fn(unsigned op);

/* What the render reads from rooms base/ cannot see, filled by the caller. */
struct gw_metrics_live {
    gw_metrics_op_name_fn *op_name; /* operation names; NULL: "op<N>" */
    uint64_t upstream_open;         /* upstream connections open */
    uint64_t upstream_idle;         /* ... of which idle in the pool */
    uint64_t audit_queue_depth;     /* store operations queued or committing */
    uint64_t audit_appended;        /* audit appends committed by the store (all kinds;
                                       repeats counted into a run too) */
    bool ready;                     /* /readyz would answer 200 */
    const char *fences_digest;      /* the configuration's (gw_config_fences_digest); NULL: "" */
    uint32_t config_generation;     /* reloads that took effect (struct gw_config's generation) */
};

/* gw_metrics_render - append the Prometheus text exposition to out.
 * [in] live  borrowed for the call.  Returns 0 or a buf error. */
MUST_USE int gw_metrics_render(struct buf *out, const struct gw_metrics_live *live);

/* gw_metrics_escape - append v as a label value (\\, \", \n escaped).  Returns 0 or a buf error. */
MUST_USE int gw_metrics_escape(struct buf *out, const char *v);

#endif
