#define LOG_MODULE "fence"
#include "gateway/fence/fence.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/lockname.h"
#include "common/log.h"
#include "common/num.h"
#include "gateway/base/config.h"
#include "gateway/base/metrics.h"
#include "gateway/fence/internal.h"
#include "store/store.h"

#define FENCE_BUCKETS  256 /* hash buckets of the in-memory lock table */
#define FENCE_RETRY_MS 250 /* a live lease with too short a window: read it again after this */

enum tstate {
    T_LOOKUP,    /* waiting for the G4 lookup hook */
    T_ADVANCING, /* waiting for the durable advance */
    T_WAITING,   /* ready to be judged against the lock's highest (barrier) */
    T_ADMITTED,  /* forwarded: counts for the barrier until released */
};

struct flock;

struct gw_fence_ticket {
    struct flock *lk;  /* the lock */
    uint64_t epoch;    /* the token claimed */
    enum tstate state; /* where it is */
    bool sent;         /* the request was completely handed upstream */
    bool cancelled;    /* released while a store/lookup callback is pending */
    bool holding;      /* admitted, its last byte held for a window */
    bool parked;       /* skipped in this judge pass (waits for a read) */
    uint64_t hold_ns;  /* monotonic ns its hold began (window read, barrier, last byte); 0 none */
    uint32_t margin;   /* commit margin for its last byte (ms) */
    uint32_t gen;      /* the configuration generation it was claimed under */
    gw_fence_admit_fn *admitted;             /* verdict callback */
    gw_fence_cut_fn *cut;                    /* barrier / window callback */
    gw_fence_resume_fn *resume;              /* the held last byte may go */
    void *arg;                               /* their argument */
    char reqid[STORE_REQID_MAX + 1];         /* recorded with an advance */
    char principal[STORE_PRINCIPAL_MAX + 1]; /* likewise */
    TAILQ_ENTRY(gw_fence_ticket) link;       /* in lk->tickets */
};

TAILQ_HEAD(ticket_list, gw_fence_ticket);

/* A lock with writes in flight, or one of the GW_FENCE_IDLE_MAX without any
 * that were last used (idle: its highest, kept so that a lock's next write
 * does not read it from the store again; this fence is the only writer of
 * its table, so what it keeps stays what the store holds). */
struct flock {
    struct gw_fence *f;               /* owner */
    char name[GW_FENCE_LOCK_MAX + 1]; /* lock name */
    uint64_t highest;                 /* highest durably accepted token; 0 = none */
    struct ticket_list tickets;       /* every live ticket, in arrival order */
    unsigned pending;                 /* store/lookup/window/timer callbacks outstanding */
    bool judging;                     /* inside judge(): no re-entry */
    uint64_t abort_upto;              /* abort uploads of epochs below this once no older write
                                         is in flight here (0: none due) */
    bool reading;                     /* a window read is in flight */
    bool timer_armed;                 /* a delayed judge is scheduled */
    bool rd_fresh;                    /* rd_* hold a read that completed for this judge pass */
    uint64_t rd_epoch;                /* the epoch read */
    int rd_err;                       /* its error (0: rd_w valid) */
    struct elect_window rd_w;         /* its answer */
    bool idle;                        /* nothing in flight: on f->idle */
    LIST_ENTRY(flock) link;           /* in f->table[] */
    TAILQ_ENTRY(flock) idle_link;     /* in f->idle, oldest first */
};

LIST_HEAD(flock_list, flock);
TAILQ_HEAD(flock_queue, flock);

struct gw_fence {
    struct event_base *base;                /* borrowed */
    struct store *st;                       /* borrowed */
    gw_fence_granted_fn *lookup;            /* G4 hook, or NULL */
    void *lookup_arg;                       /* its argument */
    gw_fence_advance_fn *on_advance;        /* told of advances, or NULL */
    void *advance_arg;                      /* ... with this */
    struct gw_fence_windows win;            /* write windows (win.peek NULL: none) */
    uint64_t gate_until;                    /* mono ms: no fenced write admitted before */
    uint64_t created;                       /* mono ms of gw_fence_new */
    struct flock_list table[FENCE_BUCKETS]; /* locks with writes in flight, and the idle */
    struct flock_queue idle;                /* locks with nothing in flight, oldest first */
    size_t nidle;                           /* their number (<= GW_FENCE_IDLE_MAX) */
    struct gw_fence_holds holds;            /* reload holds not lifted yet (hold.c) */
};

static unsigned
hash(const char *s)
{
    unsigned h = 2166136261u; /* FNV-1a */
    for (; *s != '\0'; s++) {
        h = (h ^ (unsigned char)*s) * 16777619u;
    }
    return h % FENCE_BUCKETS;
}

struct gw_fence *
gw_fence_new(struct event_base *base, struct store *st)
{
    struct gw_fence *f = calloc(1, sizeof(*f));
    if (f == NULL) {
        return NULL;
    }
    f->base = base;
    f->st = st;
    f->created = clock_mono_ms();
    for (size_t i = 0; i < FENCE_BUCKETS; i++) {
        LIST_INIT(&f->table[i]);
    }
    TAILQ_INIT(&f->idle);
    return f;
}

int
gw_fence_reload_hold(struct gw_fence *f, uint32_t gen, const char *const *locks, size_t n)
{
    return gw_fence_holds_add(&f->holds, gen, locks, n);
}

/* The larger margin: what the store may still commit of a request cut after its last
 * byte, or of an earlier life's (gw_fence_set_windows). */
static uint32_t
larger_margin(const struct gw_fence *f)
{
    return f->win.commit_margin_ms > f->win.complete_margin_ms ? f->win.commit_margin_ms
                                                               : f->win.complete_margin_ms;
}

static void judge_later(struct flock *lk, uint64_t delay_ms);
static struct flock *flock_find(struct gw_fence *f, const char *lock);

struct rejudge {
    struct gw_fence *f;
    uint32_t delay_ms;
};

/* gw_fence_holds_end's each: the lock's held writes are judged again when it lifts. */
static void
rejudge_at_lift(void *arg, const char *lock)
{
    struct rejudge *r = arg;
    struct flock *lk = flock_find(r->f, lock);
    if (lk != NULL) {
        judge_later(lk, r->delay_ms);
    }
}

void
gw_fence_reload_ended(struct gw_fence *f, uint32_t gen)
{
    struct rejudge r = {.f = f, .delay_ms = larger_margin(f)};
    gw_fence_holds_end(&f->holds, gen, clock_mono_ms() + r.delay_ms, rejudge_at_lift, &r);
}

bool
gw_fence_reload_holding(const struct gw_fence *f)
{
    return gw_fence_holds_pending(&f->holds, clock_mono_ms());
}

/* Whether a reload hold keeps t (of lk) waiting; one that lifts at a known time
 * judges lk again then. */
static bool
reload_held(struct flock *lk, const struct gw_fence_ticket *t)
{
    uint64_t wake;
    bool held = gw_fence_holds_keep(&lk->f->holds, lk->name, t->gen, clock_mono_ms(), &wake);
    if (wake != 0) {
        judge_later(lk, wake);
    }
    return held;
}

void
gw_fence_set_lookup(struct gw_fence *f, gw_fence_granted_fn *fn, void *arg)
{
    f->lookup = fn;
    f->lookup_arg = arg;
}

void
gw_fence_set_advance_hook(struct gw_fence *f, gw_fence_advance_fn *on_advance, void *arg)
{
    f->on_advance = on_advance;
    f->advance_arg = arg;
}

void
gw_fence_set_windows(struct gw_fence *f, const struct gw_fence_windows *w)
{
    if (w == NULL || w->peek == NULL || w->read == NULL) {
        memset(&f->win, 0, sizeof(f->win));
        f->gate_until = 0;
        return;
    }
    f->win = *w;
    uint32_t m = larger_margin(f);
    /* An earlier life's completely sent writes commit within m of leaving (DESIGN
     * "Write windows": a restarted gateway treats its earlier life as another). */
    f->gate_until = f->created + m;
}

void
gw_fence_free(struct gw_fence *f)
{
    if (f == NULL) {
        return;
    }
    for (size_t i = 0; i < FENCE_BUCKETS; i++) {
        while (!LIST_EMPTY(&f->table[i])) {
            struct flock *lk = LIST_FIRST(&f->table[i]);
            while (!TAILQ_EMPTY(&lk->tickets)) {
                struct gw_fence_ticket *t = TAILQ_FIRST(&lk->tickets);
                TAILQ_REMOVE(&lk->tickets, t, link);
                free(t);
            }
            LIST_REMOVE(lk, link);
            free(lk);
        }
    }
    gw_fence_holds_clear(&f->holds);
    free(f);
}

/* Reads the durable highest of a lock from the store. */
static int
read_highest(struct gw_fence *f, const char *lock, uint64_t *out)
{
    struct store_fence sf;
    int rc = store_fence_get(f->st, lock, &sf, NULL);
    if (rc == ERR_NOTFOUND) {
        *out = 0;
        return 0;
    }
    if (rc == 0) {
        *out = sf.token;
    }
    return rc;
}

static struct flock *
flock_find(struct gw_fence *f, const char *lock)
{
    struct flock *lk;
    LIST_FOREACH (lk, &f->table[hash(lock)], link) {
        if (strcmp(lk->name, lock) == 0) {
            return lk;
        }
    }
    return NULL;
}

static int
flock_get(struct gw_fence *f, const char *lock, struct flock **out)
{
    struct flock *lk = flock_find(f, lock);
    if (lk != NULL) {
        if (lk->idle) {
            TAILQ_REMOVE(&f->idle, lk, idle_link);
            f->nidle--;
            lk->idle = false;
        }
        *out = lk;
        return 0;
    }
    uint64_t highest;
    int rc = read_highest(f, lock, &highest);
    if (rc != 0) {
        return rc;
    }
    lk = calloc(1, sizeof(*lk));
    if (lk == NULL) {
        return ERR_NOMEM;
    }
    lk->f = f;
    memcpy(lk->name, lock, strlen(lock) + 1);
    lk->highest = highest;
    TAILQ_INIT(&lk->tickets);
    LIST_INSERT_HEAD(&f->table[hash(lock)], lk, link);
    *out = lk;
    return 0;
}

/* A lock with nothing in flight joins the idle (its state is in the store);
 * past GW_FENCE_IDLE_MAX of them, the one unused longest is forgotten. */
static void
flock_maybe_free(struct flock *lk)
{
    if (lk->idle || !TAILQ_EMPTY(&lk->tickets) || lk->pending != 0 || lk->judging ||
        lk->abort_upto != 0) {
        return;
    }
    struct gw_fence *f = lk->f;
    lk->idle = true;
    TAILQ_INSERT_TAIL(&f->idle, lk, idle_link);
    if (++f->nidle > GW_FENCE_IDLE_MAX) {
        struct flock *old = TAILQ_FIRST(&f->idle);
        TAILQ_REMOVE(&f->idle, old, idle_link);
        f->nidle--;
        LIST_REMOVE(old, link);
        free(old);
    }
}

size_t
gw_fence_idle_locks(const struct gw_fence *f)
{
    return f->nidle;
}

int
gw_fence_current(struct gw_fence *f, const char *lock, uint64_t *out)
{
    if (!lock_name_valid(lock)) {
        return ERR_INVAL;
    }
    struct flock *lk = flock_find(f, lock);
    if (lk != NULL) {
        *out = lk->highest;
        return 0;
    }
    return read_highest(f, lock, out);
}

static void
ticket_drop(struct gw_fence_ticket *t)
{
    TAILQ_REMOVE(&t->lk->tickets, t, link);
    free(t);
}

/* Ends a ticket with a negative verdict. */
/* A hold of t (metrics.h fencegate_fence_hold_seconds) ended: observe it once. */
static void
hold_end(struct gw_fence_ticket *t)
{
    if (t->hold_ns != 0) {
        uint64_t now = gw_metrics_now_ns();
        gw_histo_observe(&gw_metrics.fence_hold_seconds, now > t->hold_ns ? now - t->hold_ns : 0);
        t->hold_ns = 0;
    }
}

static void
reject(struct gw_fence_ticket *t, int err, uint64_t current)
{
    hold_end(t);
    gw_fence_admit_fn *cb = t->admitted;
    void *arg = t->arg;
    ticket_drop(t);
    cb(arg, err, current);
}

/*
 * The lock's highest rose to h (durably): cut every admitted write of an
 * older epoch whose request is not completely sent (G3).
 */
static void
raise_highest(struct flock *lk, uint64_t h)
{
    if (h <= lk->highest) {
        return;
    }
    log_info("lock %s: highest token %llu -> %llu", lk->name, (unsigned long long)lk->highest,
             (unsigned long long)h);
    lk->highest = h;
    /* Uploads of older epochs can no longer complete: abort them upstream, once
     * this gateway's in-flight requests of those epochs have ended (an abort that
     * overtakes an already sent part or Complete would fail it). */
    lk->abort_upto = h;
    struct gw_fence_ticket *t, *next;
    for (t = TAILQ_FIRST(&lk->tickets); t != NULL; t = next) {
        next = TAILQ_NEXT(t, link);
        if (t->state == T_ADMITTED && t->epoch < h && !t->sent) {
            gw_fence_cut_fn *cut = t->cut;
            void *arg = t->arg;
            ticket_drop(t);
            cut(arg, ERR_FENCED, h);
        }
    }
}

static void start_advance(struct gw_fence_ticket *t);
static void judge(struct flock *lk);
static void advance(struct gw_fence_ticket *t);
static void on_admit_judge(evutil_socket_t fd, short what, void *arg);

/* event_base_once from gw_fence_admit and others: judge the lock from the loop. */
static void
on_deferred_judge(evutil_socket_t fd, short what, void *arg)
{
    struct flock *lk = arg;
    (void)fd;
    (void)what;
    lk->pending--;
    lk->timer_armed = false;
    judge(lk);
}

/* Judges lk from the loop after delay_ms (one at a time). */
static void
judge_later(struct flock *lk, uint64_t delay_ms)
{
    if (lk->timer_armed) {
        return;
    }
    struct timeval tv = {(time_t)(delay_ms / 1000), (suseconds_t)(delay_ms % 1000) * 1000};
    if (event_base_once(lk->f->base, -1, EV_TIMEOUT, on_deferred_judge, lk, &tv) != 0) {
        log_error("lock %s: cannot schedule the fence's next look", lk->name);
        return;
    }
    lk->timer_armed = true;
    lk->pending++;
}

/* True while an admitted write of an older epoch than e is still running. */
static bool
older_in_flight(struct flock *lk, uint64_t e)
{
    struct gw_fence_ticket *t;
    TAILQ_FOREACH (t, &lk->tickets, link) {
        if (t->state == T_ADMITTED && t->epoch < e) {
            return true;
        }
    }
    return false;
}

/* ---- write windows ---- */

enum wv {
    WV_YES,  /* the window covers now + margin */
    WV_WAIT, /* not yet: a read or a timer will judge again */
    WV_NO,   /* a final verdict: *err (and *current) */
};

/* elect_window_fn, registered by start_read */
static void
on_window(void *arg, int err, const struct elect_window *w)
{
    struct flock *lk = arg;
    lk->reading = false;
    lk->rd_fresh = true;
    lk->rd_err = err;
    if (err == 0) {
        lk->rd_w = *w;
    }
    if (err == 0 && w->state == ELECT_WIN_SUPERSEDED && w->latest > lk->highest) {
        gw_fence_learn(lk->f, lk->name, w->latest);
    }
    judge(lk); /* the pending count keeps lk alive through it */
    lk->rd_fresh = false;
    lk->pending--;
    flock_maybe_free(lk);
}

static void
start_read(struct flock *lk, uint64_t epoch)
{
    if (lk->reading) {
        return;
    }
    struct gw_fence *f = lk->f;
    lk->reading = true;
    lk->rd_epoch = epoch;
    lk->pending++;
    GW_COUNT(window_reads);
    int rc = f->win.read(f->win.arg, lk->name, epoch, on_window, lk);
    if (rc != 0) {
        lk->pending--;
        lk->reading = false;
        lk->rd_fresh = true;
        lk->rd_epoch = epoch;
        lk->rd_err = rc;
    }
}

/* A window answer as a verdict for a write of epoch needing margin ms. */
static enum wv
verdict_of(struct flock *lk, const struct elect_window *w, uint32_t margin, uint64_t now, int *err,
           uint64_t *current)
{
    *current = lk->highest > w->latest ? lk->highest : w->latest;
    switch (w->state) {
    case ELECT_WIN_OPEN:
        if (w->until >= now + margin) {
            return WV_YES;
        }
        return WV_WAIT; /* live, too short: the holder's next renewal may extend it */
    case ELECT_WIN_SUPERSEDED:
        *err = ERR_FENCED;
        return WV_NO;
    case ELECT_WIN_ENDED:
        *err = ERR_EXPIRED;
        return WV_NO;
    case ELECT_WIN_NOT_GRANTED:
        *err = ERR_DENIED;
        return WV_NO;
    case ELECT_WIN_FOREIGN:
    default:
        log_error("lock %s: its epoch file was granted by another gateway, but "
                  "election.shared is false: refusing its writes (set election.shared)",
                  lk->name);
        *err = ERR_CONFLICT;
        return WV_NO;
    }
}

/*
 * window_verdict's yes, and nothing else: it neither starts a read nor arms a
 * timer (for a decision that can also wait for the loop, which does both).
 */
static bool
window_covers_now(struct flock *lk, uint64_t epoch, uint32_t margin)
{
    struct gw_fence *f = lk->f;
    if (f->win.peek == NULL) {
        return true;
    }
    uint64_t now = clock_mono_ms();
    struct elect_window w;
    return now >= f->gate_until && f->win.peek(f->win.arg, lk->name, epoch, now, &w) == 0 &&
           w.state == ELECT_WIN_OPEN && w.until >= now + margin;
}

/*
 * Would the next judge admit t, just listed, as the first thing it does?  t
 * is of the lock's highest epoch (above it, the advance must be durable
 * first), no write waits before it (first come, first judged), no older write
 * is in flight (the barrier), and a window covers it: judge_one's admission.
 * Everything else (a refusal included) is left to judge, from the loop.
 */
static bool
admissible_now(struct flock *lk, struct gw_fence_ticket *t)
{
    if (lk->judging || t->epoch != lk->highest || lk->f->holds.n > 0) {
        return false; /* while a reload holds locks, every admission is the loop's */
    }
    struct gw_fence_ticket *o;
    TAILQ_FOREACH (o, &lk->tickets, link) {
        if (o != t && (o->state == T_WAITING || (o->state == T_ADMITTED && o->epoch < t->epoch))) {
            return false;
        }
    }
    return window_covers_now(lk, t->epoch, t->margin);
}

/*
 * Does a window cover a write of epoch with margin now?  Without windows
 * configured: yes.  Starts a read or arms a timer when it cannot say yet.
 */
static enum wv
window_verdict(struct flock *lk, uint64_t epoch, uint32_t margin, int *err, uint64_t *current)
{
    struct gw_fence *f = lk->f;
    *err = 0;
    *current = lk->highest;
    if (f->win.peek == NULL) {
        return WV_YES;
    }
    uint64_t now = clock_mono_ms();
    if (now < f->gate_until) {
        judge_later(lk, f->gate_until - now);
        return WV_WAIT;
    }
    struct elect_window w;
    int rc = f->win.peek(f->win.arg, lk->name, epoch, now, &w);
    enum wv v = WV_WAIT;
    if (rc == 0) {
        v = verdict_of(lk, &w, margin, now, err, current);
        if (v != WV_WAIT) {
            return v;
        }
    } else if (rc != ERR_NOTFOUND) {
        *err = rc;
        return WV_NO;
    }
    if (lk->rd_fresh && lk->rd_epoch == epoch) {
        /* a read just answered and memory alone still cannot decide */
        if (lk->rd_err != 0) {
            *err = ERR_IO; /* unknown, never a final verdict (elect_window_fn) */
            return WV_NO;
        }
        v = verdict_of(lk, &lk->rd_w, margin, now, err, current);
        if (v == WV_WAIT) {
            judge_later(lk, FENCE_RETRY_MS); /* live but short: look again soon */
        }
        return v;
    }
    if (lk->reading && lk->rd_epoch != epoch) {
        judge_later(lk, FENCE_RETRY_MS); /* another epoch's read first */
        return WV_WAIT;
    }
    start_read(lk, epoch);
    if (lk->rd_fresh && lk->rd_epoch == epoch && lk->rd_err != 0) {
        *err = ERR_IO; /* the read could not even start */
        return WV_NO;
    }
    return WV_WAIT;
}

/* The first ticket that can be decided now, or NULL. */
static struct gw_fence_ticket *
next_decidable(struct flock *lk)
{
    struct gw_fence_ticket *t;
    TAILQ_FOREACH (t, &lk->tickets, link) {
        /* clang-analyzer 14 cannot follow TAILQ_REMOVE updating the head through
         * tqe_prev, and takes a dropped ticket for the first one still listed */
        if (t->parked || t->cancelled) { /* NOLINT(clang-analyzer-unix.Malloc) */
            continue;
        }
        if (t->state == T_ADMITTED && t->holding) {
            return t;
        }
        if (t->state != T_WAITING) {
            continue;
        }
        if (t->epoch == lk->highest && older_in_flight(lk, t->epoch)) {
            continue; /* barrier: wait for the completely sent older writes */
        }
        return t;
    }
    return NULL;
}

static void
cut_ticket(struct gw_fence_ticket *t, int err, uint64_t current)
{
    gw_fence_cut_fn *cut = t->cut;
    void *arg = t->arg;
    hold_end(t);
    /* the code gw_fence_cut_refusal answers with */
    gw_metrics_fence_refusal(t->lk->name, err == ERR_FENCED    ? "StaleFencingToken"
                                          : err == ERR_EXPIRED ? "FencingLeaseExpired"
                                                               : "ServiceUnavailable");
    ticket_drop(t);
    cut(arg, err, current);
}

/* One verdict for t; it leaves the decidable set (verdict, parked or dropped). */
static void
judge_one(struct flock *lk, struct gw_fence_ticket *t)
{
    int err;
    uint64_t current;
    if (t->state == T_ADMITTED) { /* holding its last byte */
        if (t->epoch < lk->highest) {
            cut_ticket(t, ERR_FENCED, lk->highest);
            return;
        }
        enum wv v = window_verdict(lk, t->epoch, t->margin, &err, &current);
        if (v == WV_YES) {
            t->holding = false;
            hold_end(t);
            t->resume(t->arg);
        } else if (v == WV_NO) {
            GW_COUNT(window_cuts);
            cut_ticket(t, err, current);
        } else {
            t->parked = true;
        }
        return;
    }
    if (t->epoch < lk->highest) {
        reject(t, ERR_FENCED, lk->highest);
        return;
    }
    if (lk->f->holds.n > 0 && reload_held(lk, t)) {
        t->parked = true; /* a reload widened its lock: older writes end first */
        return;
    }
    enum wv v = window_verdict(lk, t->epoch, t->margin, &err, &current);
    if (v == WV_WAIT) {
        t->parked = true;
    } else if (v == WV_NO) {
        if (err == ERR_FENCED && current > lk->highest) {
            gw_fence_learn(lk->f, lk->name, current);
        }
        reject(t, err, current);
    } else if (t->epoch > lk->highest) {
        start_advance(t);
    } else {
        t->state = T_ADMITTED;
        hold_end(t);
        t->admitted(t->arg, 0, t->epoch);
    }
}

/* Judges every waiting ticket (and every held last byte) of the lock against its
 * highest, its window and the barrier.  Each verdict may change the list
 * (callbacks release tickets), so the next ticket is looked up afresh every time. */
static void
judge(struct flock *lk)
{
    if (lk->judging) {
        return;
    }
    lk->judging = true;
    struct gw_fence_ticket *t;
    TAILQ_FOREACH (t, &lk->tickets, link) {
        t->parked = false;
    }
    for (t = next_decidable(lk); t != NULL; t = next_decidable(lk)) {
        judge_one(lk, t);
    }
    /* what this pass could not decide is held (a window read, the barrier) from now */
    uint64_t now_ns = 0;
    TAILQ_FOREACH (t, &lk->tickets, link) {
        if (t->hold_ns == 0 && !t->cancelled && (t->state == T_WAITING || t->holding)) {
            now_ns = now_ns != 0 ? now_ns : gw_metrics_now_ns();
            t->hold_ns = now_ns;
        }
    }
    if (lk->abort_upto != 0 && !older_in_flight(lk, lk->abort_upto)) {
        uint64_t upto = lk->abort_upto;
        lk->abort_upto = 0;
        if (lk->f->on_advance != NULL) {
            lk->f->on_advance(lk->f->advance_arg, lk->name, upto);
        }
    }
    lk->rd_fresh = false; /* a read's answer serves the pass it completed in, no later one */
    lk->judging = false;
    flock_maybe_free(lk);
}

/* store_fence_done_fn */
static void
on_advanced(void *arg, int err, uint64_t highest)
{
    struct gw_fence_ticket *t = arg;
    struct flock *lk = t->lk;
    lk->pending--;
    if (err == 0 || err == ERR_FENCED) {
        raise_highest(lk, err == 0 ? t->epoch : highest);
    }
    if (t->cancelled) {
        ticket_drop(t);
    } else if (err != 0 && err != ERR_FENCED) {
        log_error("lock %s: durable advance to %llu failed: %s", lk->name,
                  (unsigned long long)t->epoch, err_str(err));
        reject(t, err, lk->highest);
    } else {
        t->state = T_WAITING;
    }
    judge(lk);
}

static void
advance(struct gw_fence_ticket *t)
{
    struct flock *lk = t->lk;
    t->state = T_ADVANCING;
    int rc =
        store_fence_advance(lk->f->st, lk->name, t->epoch, t->reqid, t->principal, on_advanced, t);
    if (rc != 0) {
        log_error("lock %s: cannot queue the advance to %llu: %s", lk->name,
                  (unsigned long long)t->epoch, err_str(rc));
        if (t->cancelled) {
            ticket_drop(t); /* a gw_fence_learn: nobody waits for it; it frees lk */
        } else {
            reject(t, rc, lk->highest);
        }
        return;
    }
    lk->pending++;
}

/* gw_fence_granted_done_fn */
static void
on_lookup(void *arg, int err, bool granted)
{
    struct gw_fence_ticket *t = arg;
    struct flock *lk = t->lk;
    lk->pending--;
    if (t->cancelled) {
        ticket_drop(t);
    } else if (err != 0) {
        log_warn("lock %s: cannot tell whether epoch %llu was granted: %s", lk->name,
                 (unsigned long long)t->epoch, err_str(err));
        reject(t, ERR_IO, lk->highest);
    } else if (!granted) {
        reject(t, ERR_DENIED, lk->highest);
    } else {
        advance(t);
    }
    judge(lk);
}

/* A token above the lock's highest: G4, then the durable advance. */
static void
start_advance(struct gw_fence_ticket *t)
{
    struct flock *lk = t->lk;
    if (lk->f->win.peek != NULL) {
        advance(t); /* an open window of this epoch proves it was granted (G4) */
        return;
    }
    struct store_elect se;
    int rc = store_elect_get(lk->f->st, lk->name, &se);
    if (rc == 0 && se.epoch >= t->epoch) {
        advance(t); /* the election cache knows this epoch was granted */
        return;
    }
    if (rc != 0 && rc != ERR_NOTFOUND) {
        reject(t, ERR_IO, lk->highest);
        return;
    }
    if (lk->f->lookup == NULL) {
        reject(t, ERR_DENIED, lk->highest);
        return;
    }
    t->state = T_LOOKUP;
    lk->pending++;
    rc = lk->f->lookup(lk->f->lookup_arg, lk->name, t->epoch, on_lookup, t);
    if (rc == 0) {
        return;
    }
    lk->pending--;
    if (rc == 1) {
        advance(t); /* granted, known at once */
    } else if (rc == ERR_INVAL) {
        reject(t, ERR_DENIED, lk->highest);
    } else {
        reject(t, ERR_IO, lk->highest);
    }
}

int
gw_fence_admit(struct gw_fence *f, const struct gw_fence_claim *claim, const char *reqid,
               const char *principal, gw_fence_admit_fn *admitted, gw_fence_cut_fn *cut, void *arg,
               struct gw_fence_ticket **out)
{
    if (!claim->fenced || claim->token == 0 || admitted == NULL || cut == NULL) {
        return ERR_INVAL;
    }
    struct flock *lk;
    int rc = flock_get(f, claim->lock, &lk);
    if (rc != 0) {
        return rc;
    }
    struct gw_fence_ticket *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        flock_maybe_free(lk);
        return ERR_NOMEM;
    }
    t->lk = lk;
    t->epoch = claim->token;
    t->state = T_WAITING;
    t->margin = claim->complete ? f->win.complete_margin_ms : f->win.commit_margin_ms;
    t->gen = claim->gen;
    t->admitted = admitted;
    t->cut = cut;
    t->arg = arg;
    str_copy(t->reqid, sizeof(t->reqid), reqid != NULL ? reqid : "");
    str_copy(t->principal, sizeof(t->principal), principal != NULL ? principal : "");
    TAILQ_INSERT_TAIL(&lk->tickets, t, link);
    *out = t;
    if (admissible_now(lk, t)) {
        t->state = T_ADMITTED; /* judge's own verdict, one turn of the loop early */
        return GW_FENCE_ADMITTED;
    }
    /* Any other verdict never arrives before this returns: judge from the loop.
     * The pending count keeps the lock entry alive until then. */
    static const struct timeval now = {0, 0};
    if (event_base_once(f->base, -1, EV_TIMEOUT, on_admit_judge, lk, &now) != 0) {
        ticket_drop(t);
        flock_maybe_free(lk);
        *out = NULL;
        return ERR_NOMEM;
    }
    lk->pending++;
    return 0;
}

/* event_base_once from gw_fence_admit / gw_fence_ticket_may_finish: judge from the loop. */
static void
on_admit_judge(evutil_socket_t fd, short what, void *arg)
{
    struct flock *lk = arg;
    (void)fd;
    (void)what;
    lk->pending--;
    judge(lk);
}

bool
gw_fence_ticket_may_finish(struct gw_fence_ticket *t)
{
    struct flock *lk = t->lk;
    struct gw_fence *f = lk->f;
    if (f->win.peek == NULL) {
        return true;
    }
    if (!t->holding && t->epoch >= lk->highest && window_covers_now(lk, t->epoch, t->margin)) {
        return true;
    }
    /* Held: judged from the loop (a read if need be), then resume or cut. */
    if (!t->holding) {
        GW_COUNT(window_holds);
        t->hold_ns = gw_metrics_now_ns();
    }
    t->holding = true;
    static const struct timeval soon = {0, 0};
    if (event_base_once(f->base, -1, EV_TIMEOUT, on_admit_judge, lk, &soon) == 0) {
        lk->pending++;
    } else {
        judge_later(lk, FENCE_RETRY_MS);
    }
    return false;
}

void
gw_fence_learn(struct gw_fence *f, const char *lock, uint64_t epoch)
{
    struct flock *lk;
    if (f == NULL || flock_get(f, lock, &lk) != 0) {
        return;
    }
    if (epoch <= lk->highest) {
        flock_maybe_free(lk);
        return;
    }
    struct gw_fence_ticket *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        flock_maybe_free(lk);
        return;
    }
    /* A ticket of no one: advanced like a write's, then dropped (cancelled). */
    t->lk = lk;
    t->epoch = epoch;
    t->cancelled = true;
    str_copy(t->principal, sizeof(t->principal), "election");
    TAILQ_INSERT_TAIL(&lk->tickets, t, link);
    advance(t);
    flock_maybe_free(lk); /* only if the advance could not even be queued */
}

void
gw_fence_ticket_sent(struct gw_fence_ticket *t)
{
    if (t == NULL || t->sent) {
        return;
    }
    t->sent = true;
}

void
gw_fence_ticket_release(struct gw_fence_ticket *t)
{
    if (t == NULL) {
        return;
    }
    struct flock *lk = t->lk;
    if (t->state == T_ADVANCING || t->state == T_LOOKUP) {
        t->cancelled = true; /* its store or lookup callback frees it */
        return;
    }
    ticket_drop(t);
    judge(lk); /* a finished older write may open the barrier */
}

void
gw_fence_ticket_rebind(struct gw_fence_ticket *t, gw_fence_cut_fn *cut, gw_fence_resume_fn *resume,
                       void *arg)
{
    t->cut = cut;
    t->resume = resume;
    t->arg = arg;
}
