/*
 * gateway/upstream/cap.c: upstream.max_connections for the process, when
 * several loops' lean clients share it (upstream.h, engine.h; DESIGN
 * "Worker loops", "The upstream pool across loops").
 *
 * One counter of the connections open on every loop, idle ones included,
 * taken before a loop opens one and given back when it closes one, so the
 * process never holds more than max.  A loop whose transfer finds no slot
 * and no idle connection of its own queues the transfer (lean.c) and raises
 * its want.  Two things then free a slot for it:
 *   - the loop that gives a slot back wakes every loop that wants one (a
 *     message to its queue), which takes it from its loop;
 *   - the waiting loop asks the loop with the most idle connections to close
 *     its oldest (shed), and a loop that would park a connection while
 *     another loop wants one closes it instead.
 * A loop whose transfers wait while it holds more than its share of max
 * (rounded up), or while another waiting loop holds none, hands the slot of
 * each connection it finishes to a waiting loop instead of reusing it: the
 * slot stays counted and goes to that loop alone (granted), so a loop that
 * keeps its own line full cannot starve another at the cap, and loops at
 * their share keep their connections (no churn when every loop waits).
 * Both sides use sequentially consistent atomics in the order "write mine,
 * then read theirs" (want then open and idle; open and idle then want), so
 * of two loops crossing, at least one sees the other: no loop waits while a
 * slot is free or an idle connection sits elsewhere.  nginx keeps its
 * keepalive cache per worker and its max_conns shared through a zone; this
 * is the same cap with the idle connections counted, as the option says.
 *
 * Each loop's wake-up is one message embedded in its member, posted at most
 * once at a time (posted), run on the loop's own thread, which calls the
 * client's look function if the client is still a member.
 */
#define LOG_MODULE "upstream"
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "gateway/net/loopmsg.h"
#include "gateway/upstream/engine.h"

/* One loop's member: its own cache line, written by its loop and read by the others. */
struct cap_member {
    atomic_bool want;              /* this loop has transfers waiting for a slot */
    atomic_uint_least32_t idle;    /* idle connections this loop holds (published) */
    atomic_uint_least32_t shed;    /* idle connections other loops asked it to close */
    atomic_uint_least32_t conns;   /* connections this loop holds (published) */
    atomic_uint_least32_t granted; /* slots other loops handed to it, not yet taken */
    atomic_bool left;              /* its client is gone: a slot handed over now goes back */
    atomic_bool posted;            /* msg is on q (or running) */
    struct gw_loopq *q;            /* the loop's queue, set at join */
    gw_upstream_cap_look_fn *look; /* the owner's thread only: NULL once it left */
    void *arg;
    struct gw_loopmsg msg; /* the wake-up */
} __attribute__((aligned(64)));

/* The counts every loop writes first, on a line of their own; then what join set. */
struct gw_upstream_cap {
    atomic_uint_least32_t open;    /* connections open on every loop */
    atomic_uint_least32_t wanting; /* members whose want is up */
    atomic_uint_least32_t turn;    /* where the next hand-over starts looking */
    atomic_uint_least32_t joined;  /* members handed out */
    uint32_t max;                  /* upstream.max_connections (0: none, only counted) */
    uint32_t nmembers;             /* room in m */
    uint32_t share;                /* ceil(max / nmembers): a loop's fair share */
    struct cap_member *m;          /* nmembers of them */
} __attribute__((aligned(64)));

struct gw_upstream_cap *
gw_upstream_cap_new(uint32_t max, uint32_t loops)
{
    struct gw_upstream_cap *c = aligned_alloc(64, sizeof(*c));
    if (c == NULL || loops == 0) {
        free(c);
        return NULL;
    }
    memset(c, 0, sizeof(*c));
    c->m = aligned_alloc(64, sizeof(*c->m) * loops);
    if (c->m == NULL) {
        free(c);
        return NULL;
    }
    memset(c->m, 0, sizeof(*c->m) * loops);
    c->max = max;
    c->nmembers = loops;
    c->share = (max + loops - 1) / loops;
    atomic_init(&c->turn, 0);
    atomic_init(&c->joined, 0);
    atomic_init(&c->open, 0);
    atomic_init(&c->wanting, 0);
    for (uint32_t i = 0; i < loops; i++) {
        atomic_init(&c->m[i].want, false);
        atomic_init(&c->m[i].idle, 0);
        atomic_init(&c->m[i].shed, 0);
        atomic_init(&c->m[i].conns, 0);
        atomic_init(&c->m[i].granted, 0);
        atomic_init(&c->m[i].posted, false);
    }
    return c;
}

void
gw_upstream_cap_free(struct gw_upstream_cap *c)
{
    if (c == NULL) {
        return;
    }
    free(c->m);
    free(c);
}

/* The wake-up arrived, on the member's own loop. */
static void
on_look(struct gw_loopmsg *msg)
{
    struct cap_member *m = GW_LOOPMSG_OWNER(msg, struct cap_member, msg);
    atomic_store(&m->posted, false); /* first: a later poke posts again */
    if (m->look != NULL) {
        m->look(m->arg);
    }
}

static void
on_look_cancel(struct gw_loopmsg *msg, int why)
{
    struct cap_member *m = GW_LOOPMSG_OWNER(msg, struct cap_member, msg);
    (void)why;
    atomic_store(&m->posted, false); /* the queue closed: its loop is ending */
}

/* Wake member m's loop (any thread), unless a wake-up is on its way already. */
static void
poke(struct cap_member *m)
{
    if (m->q == NULL || atomic_exchange(&m->posted, true)) {
        return;
    }
    if (gw_loopq_post(m->q, &m->msg) != 0) {
        atomic_store(&m->posted, false); /* its loop has ended */
    }
}

int
gw_upstream_cap_join(struct gw_upstream_cap *c, struct gw_loopq *q, gw_upstream_cap_look_fn *look,
                     void *arg, uint32_t *slot)
{
    uint32_t i = atomic_fetch_add(&c->joined, 1);
    if (i >= c->nmembers || q == NULL) {
        log_error("upstream.max_connections: more loops than the cap was made for (%u)",
                  (unsigned)c->nmembers);
        return ERR_INVAL;
    }
    struct cap_member *m = &c->m[i];
    m->q = q;
    m->look = look;
    m->arg = arg;
    m->msg = (struct gw_loopmsg){.run = on_look, .cancel = on_look_cancel};
    *slot = i;
    return 0;
}

void
gw_upstream_cap_wait_done(struct gw_upstream_cap *c, uint32_t slot)
{
    struct cap_member *m = &c->m[slot];
    if (atomic_load_explicit(&m->want, memory_order_relaxed)) {
        atomic_store(&m->want, false);
        atomic_fetch_sub(&c->wanting, 1);
    }
}

/* The slots handed to m and not taken, back to the count (each exactly once:
 * whoever exchanges them gives them). */
static void
give_back_granted(struct gw_upstream_cap *c, struct cap_member *m)
{
    for (uint_least32_t n = atomic_exchange(&m->granted, 0); n > 0; n--) {
        gw_upstream_cap_give(c);
    }
}

void
gw_upstream_cap_leave(struct gw_upstream_cap *c, uint32_t slot)
{
    struct cap_member *m = &c->m[slot];
    gw_upstream_cap_wait_done(c, slot);
    atomic_store(&m->idle, 0);
    atomic_store(&m->conns, 0);
    m->look = NULL; /* a wake-up still on its way does nothing */
    /* slots handed to it that it never took go back.  A loop that picked it
     * while its want was up may still add one after this exchange: that loop
     * then sees left and gives it back (gw_upstream_cap_hand_over) */
    atomic_store(&m->left, true);
    give_back_granted(c, m);
}

bool
gw_upstream_cap_take(struct gw_upstream_cap *c)
{
    uint_least32_t open = atomic_load(&c->open);
    do {
        if (c->max != 0 && open >= c->max) {
            return false;
        }
    } while (!atomic_compare_exchange_weak(&c->open, &open, open + 1));
    return true;
}

void
gw_upstream_cap_give(struct gw_upstream_cap *c)
{
    atomic_fetch_sub(&c->open, 1);
    if (atomic_load(&c->wanting) == 0) {
        return;
    }
    for (uint32_t i = 0; i < c->nmembers; i++) {
        if (atomic_load(&c->m[i].want)) {
            poke(&c->m[i]);
        }
    }
}

void
gw_upstream_cap_wait(struct gw_upstream_cap *c, uint32_t slot)
{
    struct cap_member *me = &c->m[slot];
    if (!atomic_load_explicit(&me->want, memory_order_relaxed)) {
        atomic_store(&me->want, true);
        atomic_fetch_add(&c->wanting, 1);
    }
    /* ask the loop with the most idle connections to close one */
    struct cap_member *most = NULL;
    uint_least32_t n = 0;
    for (uint32_t i = 0; i < c->nmembers; i++) {
        uint_least32_t idle = atomic_load(&c->m[i].idle);
        if (i != slot && idle > n) {
            most = &c->m[i];
            n = idle;
        }
    }
    if (most != NULL) {
        atomic_fetch_add(&most->shed, 1);
        poke(most);
    }
    /* a slot given back before the want went up woke nobody: look again */
    if (c->max == 0 || atomic_load(&c->open) < c->max) {
        poke(me);
    }
}

bool
gw_upstream_cap_wanted(struct gw_upstream_cap *c, uint32_t slot)
{
    uint_least32_t mine = atomic_load_explicit(&c->m[slot].want, memory_order_relaxed) ? 1 : 0;
    return atomic_load(&c->wanting) > mine;
}

void
gw_upstream_cap_idle(struct gw_upstream_cap *c, uint32_t slot, size_t idle)
{
    atomic_store(&c->m[slot].idle, (uint_least32_t)idle);
}

void
gw_upstream_cap_held(struct gw_upstream_cap *c, uint32_t slot, size_t conns)
{
    atomic_store_explicit(&c->m[slot].conns, (uint_least32_t)conns, memory_order_relaxed);
}

uint32_t
gw_upstream_cap_share(const struct gw_upstream_cap *c)
{
    return c->share;
}

/* A member other than slot whose transfers wait (holding no connection, with
 * to_empty_only), in turn from c->turn; NULL: none. */
static struct cap_member *
pick(struct gw_upstream_cap *c, uint32_t slot, bool to_empty_only, uint32_t start)
{
    for (uint32_t k = 0; k < c->nmembers; k++) {
        uint32_t i = (start + k) % c->nmembers;
        struct cap_member *m = &c->m[i];
        if (i == slot || !atomic_load(&m->want) ||
            (to_empty_only && atomic_load_explicit(&m->conns, memory_order_relaxed) != 0)) {
            continue;
        }
        return m;
    }
    return NULL;
}

bool
gw_upstream_cap_waiting(struct gw_upstream_cap *c, uint32_t slot, bool to_empty_only)
{
    return pick(c, slot, to_empty_only, 0) != NULL;
}

bool
gw_upstream_cap_hand_over(struct gw_upstream_cap *c, uint32_t slot, bool to_empty_only)
{
    uint32_t start = (uint32_t)atomic_fetch_add_explicit(&c->turn, 1, memory_order_relaxed);
    struct cap_member *m = pick(c, slot, to_empty_only, start);
    if (m == NULL) {
        return false;
    }
    atomic_fetch_add(&m->granted, 1);
    /* m may have left since pick saw its want: "add, then read left" against
     * leave's "set left, then exchange", so one of the two gives it back */
    if (atomic_load(&m->left)) {
        give_back_granted(c, m);
        return true; /* handed over all the same: the slot is back in the count */
    }
    poke(m);
    return true;
}

uint32_t
gw_upstream_cap_granted(struct gw_upstream_cap *c, uint32_t slot)
{
    return (uint32_t)atomic_exchange(&c->m[slot].granted, 0);
}

uint32_t
gw_upstream_cap_shed_asked(struct gw_upstream_cap *c, uint32_t slot)
{
    return (uint32_t)atomic_exchange(&c->m[slot].shed, 0);
}

void
gw_upstream_cap_conns(struct gw_upstream_cap *c, uint64_t *open, uint64_t *idle)
{
    *open = atomic_load_explicit(&c->open, memory_order_relaxed);
    *idle = 0;
    for (uint32_t i = 0; i < c->nmembers; i++) {
        *idle += atomic_load_explicit(&c->m[i].idle, memory_order_relaxed);
    }
}
