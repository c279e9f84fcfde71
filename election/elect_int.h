/*
 * election/elect_int.h: internals shared by the files of election/'s state
 * machine.  Calls go one way, top to bottom:
 *   elect.c        API, per-lock queues, the pump, the timer's callback
 *   elect_seq.c    backend sequences: refresh, create, rewrite
 *   elect_probe.c  self-test, GC, G4 lookups and window reads
 *   elect_sched.c  when the timer fires next (elect_reschedule)
 *   elect_call.c   a call's answer, unlinking and freeing
 *   elect_window.c what an observation tells: latest epoch, lease, window
 *   elect_lock.c   the lock table and the election cache
 * A sequence that ends hands its lock back to the pump through e->pump; a
 * grant's cache commit reports through the elect_granted_fn its caller passed.
 * Not for use outside election/.
 *
 * Per lock (struct elect_lock) the process keeps the latest record it knows,
 * a FIFO of calls (`queue`) and the calls that wait for a change (`waiting`).
 * At most one backend sequence per lock is in flight (`busy`); its owner is
 * a call (acquire create, renew, release) or the lock itself (a refresh).
 */
#ifndef ELECTION_ELECT_INT_H
#define ELECTION_ELECT_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "election/backend.h"
#include "election/elect.h"
#include "election/elect_timer.h"
#include "election/lease.h"
#include "election/lockfile.h"

#define ELECT_NBUCKETS     256  /* lock table buckets */
#define ELECT_MAX_ATTEMPTS 3    /* creates / rewrites tried per call after ambiguity or races */
#define ELECT_GC_BATCH     100  /* deletes per GC run */
#define ELECT_PROBE_MIN_MS 1000 /* self-test retry backoff */
#define ELECT_PROBE_MAX_MS 30000

enum call_kind {
    CALL_ACQUIRE,
    CALL_RENEW,
    CALL_RELEASE,
    CALL_GET,
};

/* Where a call's backend sequence stands (for the callbacks). */
enum call_step {
    STEP_NONE = 0,
    STEP_GUARD_LIST, /* acquire: LIST for epochs newer than the one we will succeed */
    STEP_CREATE,     /* acquire: create-if-absent of epoch+1 */
    STEP_READBACK,   /* acquire: GET of epoch+1 after 412 or an ambiguous create */
    STEP_W_GET,      /* renew/release: GET of the epoch's file */
    STEP_W_LIST,     /* renew/release: LIST for a newer epoch */
    STEP_W_PUT,      /* renew/release: replace-if-match */
    STEP_W_CHECK,    /* renew/release: GET after an ambiguous replace */
    STEP_STORE,      /* acquire: waiting for store_elect_advance */
    STEP_EXPIRE,     /* acquire: rewrite of a run-out latest epoch with expired:true */
};

struct elect;
struct elect_lock;
struct elect_call;

/* elect_pump_fn - run lk's queue again (elect_pump), installed by elect_new as e->pump. */
typedef void elect_pump_fn(struct elect *e, struct elect_lock *lk);

/* elect_granted_fn - a grant's epoch is committed to the election cache (err 0) or not. */
typedef void elect_granted_fn(struct elect_call *c, int err);

struct elect_call {
    TAILQ_ENTRY(elect_call) link; /* in lk->queue or lk->waiting */
    struct elect *e;
    struct elect_lock *lk;
    enum call_kind kind;
    enum call_step step;
    bool waiting;      /* in lk->waiting rather than lk->queue */
    bool done;         /* answered (or cancelled); freed when its sequence ends */
    elect_done_fn *cb; /* NULL once cancelled */
    void *arg;
    uint64_t arrived;                  /* mono ms */
    uint64_t seq;                      /* order of creation (e->call_seq) */
    uint64_t deadline;                 /* mono ms when waiting ends (acquire, get) */
    char holder[ELECT_HOLDER_MAX + 1]; /* acquire */
    uint32_t lease_ms;                 /* acquire */
    uint64_t token; /* renew/release: the epoch; acquire: the epoch being created */
    uint64_t after; /* get */
    char lease_id[ELECT_LEASE_ID_HEX + 1]; /* renew/release: presented; acquire: generated */
    char grant_id[ELECT_GRANT_ID_HEX + 1]; /* acquire: of the create in flight */
    int attempts;                          /* creates / rewrites started */
    uint64_t sent;                         /* mono ms the first create / the rewrite was sent */
    uint64_t read_sent;                    /* mono ms the last GET of this call was sent */
    int expire_attempts;                   /* acquire: takeover rewrites refused so far (bounded) */
    bool read_fresh;                       /* renew: the record was read by this call */
    bool took_over;                        /* acquire: it expired a run-out lease first */
    bool superseded; /* renew/release: a newer epoch exists; answer after a refresh */
    bool revoke;     /* release by an admin (elect_revoke): no lease_id check; token 0 until the
                        latest epoch is known, then that epoch */
    struct elect_lockfile rec;     /* renew/release: the epoch's record as read; acquire: written */
    char etag[ELECT_ETAG_MAX + 1]; /* renew/release: its etag */
    char body[ELECT_LOCKFILE_MAX + 1]; /* the body written last */
    size_t body_len;
};

TAILQ_HEAD(elect_call_list, elect_call);

struct elect_lock {
    struct elect_lock *next;          /* hash chain */
    struct elect *e;                  /* the owner (backend callbacks get the lock as arg) */
    LIST_ENTRY(elect_lock) gc_link;   /* in e->gc_list while gc_wanted */
    LIST_ENTRY(elect_lock) wait_link; /* in e->wait_locks while waiting is not empty */
    bool wait_listed;                 /* linked by wait_link */
    char name[ELECT_LOCK_MAX + 1];
    uint64_t latest; /* latest epoch known to exist (0 = none seen) */
    uint64_t cached; /* highest epoch known to be in the election cache */
    bool known;      /* a refresh (or own write) has set the state */
    bool have;       /* rec/etag hold epoch `latest`'s record */
    struct elect_lockfile rec;
    char etag[ELECT_ETAG_MAX + 1];
    struct elect_obs obs;           /* lease judgement inputs for rec */
    uint64_t win_until;             /* mono ms before which no gateway can grant latest+1
                                       (elect.h "Write windows"); 0 = none */
    bool ran_out;                   /* a window read found rec's lease run out */
    bool expired_by_us;             /* rec is expired:true by our own takeover (no hand-over
                                       wait: its lease had run out already) */
    uint64_t valid_from;            /* mono ms: the state reflects the store at or after this */
    bool just_listed;               /* a refresh just completed and nothing happened since */
    bool busy;                      /* a backend sequence is in flight */
    bool refreshing;                /* ... and it is the lock's own refresh */
    uint64_t refresh_start;         /* mono ms of that refresh's start */
    uint64_t refresh_seq;           /* calls with seq <= this were queued before it started */
    uint64_t refresh_from;          /* epoch the refresh's LIST started after */
    uint64_t refresh_newest;        /* newest epoch its LIST has found so far */
    uint64_t refresh_get_sent;      /* mono ms its GET was sent */
    bool poll_due;                  /* waiting calls need a re-read */
    uint64_t last_read;             /* mono ms of the last refresh start */
    bool pumping;                   /* elect_pump is running for this lock */
    bool repump;                    /* ... and was asked to run again */
    struct elect_call_list queue;   /* calls in arrival order */
    struct elect_call_list waiting; /* calls waiting for a change */
    bool gc_wanted;                 /* in e->gc_list */
    uint64_t gc_at;                 /* mono ms when its GC may run */
};

/* A store_elect_advance in flight; outlives the elect if need be (elect_free detaches). */
struct elect_ticket {
    LIST_ENTRY(elect_ticket) link;
    struct elect *e;           /* NULL once detached */
    elect_granted_fn *granted; /* told of the commit with call, or NULL */
    struct elect_call *call;   /* acquire waiting for the commit, or NULL */
    elect_check_fn *check_cb;  /* G4 lookup waiting for the commit, or NULL */
    void *check_arg;
};

/* A G4 lookup or a window read of an epoch file. */
struct elect_check {
    LIST_ENTRY(elect_check) link;
    struct elect *e;
    char lock[ELECT_LOCK_MAX + 1];
    uint64_t epoch;
    elect_check_fn *cb;   /* G4 lookup, or NULL */
    elect_window_fn *wcb; /* window read, or NULL */
    void *arg;
    uint64_t sent; /* mono ms the GET was sent */
};

/* Self-test states. */
enum probe_state {
    PROBE_IDLE = 0, /* not started */
    PROBE_RUNNING,
    PROBE_WAIT, /* a transient failure; retry at probe_at */
    PROBE_OK,
    PROBE_REFUSED,
};

struct elect {
    struct event_base *base;
    struct elect_backend *be; /* owned */
    struct store *store;      /* borrowed, may be NULL */
    char *prefix;             /* owned */
    char *granted_by;         /* owned */
    struct elect_opts opts;   /* copy; its strings point at the owned copies above */
    struct elect_timer *timer;
    elect_pump_fn *pump;   /* elect_pump; the sequences call it when they end */
    uint64_t call_seq;     /* last call sequence number handed out */
    uint64_t started;      /* mono ms of elect_new */
    elect_learn_fn *learn; /* told of every new latest epoch, or NULL */
    void *learn_arg;
    elect_lease_fn *lease_obs; /* told of grants, renewals, releases, expiries; or NULL */
    void *lease_obs_arg;
    uint64_t timer_at; /* mono ms the timer is armed for (0 = disarmed) */
    struct elect_lock *table[ELECT_NBUCKETS];
    LIST_HEAD(elect_gc_list, elect_lock) gc_list;
    LIST_HEAD(elect_wait_list, elect_lock) wait_locks;
    bool gc_running;
    struct elect_lock *gc_lock;                      /* lock being collected */
    uint64_t gc_floor;                               /* delete epochs <= this */
    char gc_keys[ELECT_GC_BATCH][ELECT_KEY_MAX + 1]; /* keys to delete in this run */
    size_t gc_n, gc_i;
    LIST_HEAD(elect_ticket_list, elect_ticket) tickets;
    LIST_HEAD(elect_check_list, elect_check) checks;
    /* self-test */
    enum probe_state probe;
    int probe_step;
    uint64_t probe_at;
    uint32_t probe_backoff;
    char probe_key[ELECT_KEY_MAX + 1];
    char probe_etag[ELECT_ETAG_MAX + 1];
    char probe_stale[ELECT_ETAG_MAX + 1]; /* the ETag before the rewrite (step 5) */
    enum elect_etag_form form;
    char reason[256];
};

/* elect.c */
void elect_pump(struct elect *e, struct elect_lock *lk);
bool elect_lock_free_now(struct elect_lock *lk, uint64_t now, bool *need_read);

/* elect_call.c */
void elect_call_complete(struct elect_call *c, int err, bool with_lease);
void elect_call_finish(struct elect_call *c);
void elect_call_unlink(struct elect_call *c);
void elect_call_free(struct elect_call *c);
void elect_info_fill(struct elect *e, struct elect_lock *lk, uint64_t now, struct elect_info *info);

/* elect_sched.c */
void elect_reschedule(struct elect *e);
uint64_t elect_poll_interval(struct elect *e, struct elect_lock *lk);

/* elect_window.c */
void elect_observe(struct elect_lock *lk, const struct elect_lockfile *rec, const char *etag,
                   const struct elect_obj_meta *meta, uint64_t sent, uint64_t now);
void elect_latest_raise(struct elect_lock *lk, uint64_t epoch);
uint64_t elect_free_at(const struct elect_lock *lk);

/* elect_lock.c */
struct elect_lock *elect_lock_find(struct elect *e, const char *name, bool create);
void elect_cache_note(struct elect *e, struct elect_lock *lk, uint64_t epoch);
MUST_USE int elect_cache_advance(struct elect *e, struct elect_lock *lk, uint64_t epoch,
                                 elect_granted_fn *granted, struct elect_call *call,
                                 elect_check_fn *check_cb, void *check_arg);

/* elect_seq.c */
void elect_seq_refresh(struct elect *e, struct elect_lock *lk);
void elect_seq_end(struct elect_call *c, int err, bool answer);
void elect_seq_create(struct elect_call *c);
void elect_seq_rewrite(struct elect_call *c);

/* elect_probe.c */
void elect_probe_run(struct elect *e);
void elect_gc_want(struct elect *e, struct elect_lock *lk, uint64_t now);
void elect_gc_run(struct elect *e, uint64_t now);
void elect_checks_free(struct elect *e);

#endif
