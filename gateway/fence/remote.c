/*
 * gateway/fence/remote.c: the fence as a worker loop sees it (remote.h).
 *
 * Every crossing is one heap message (struct msg), never shared state: the
 * worker half of a ticket is touched only on the worker's thread, the
 * control half only on the control loop's.  A message carries pointers to
 * both halves, but each side dereferences only its own.
 */
#include "gateway/fence/remote.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "common/buf.h"
#include "gateway/net/loopmsg.h"

/* What a message asks for; the first four go to the control loop. */
enum kind {
    M_ADMIT,      /* gw_fence_admit */
    M_MAY_FINISH, /* gw_fence_ticket_may_finish, and sent on a yes */
    M_SENT,       /* gw_fence_ticket_sent */
    M_RELEASE,    /* gw_fence_ticket_release, and the control half's end */
    M_JUDGE,      /* the store refused our condition (412): is the token still current? */
    M_VERDICT,    /* to the worker: admitted(err, current) */
    M_JUDGED,     /* to the worker: judged(err, current) */
    M_CUT,        /* to the worker: cut(err, current) */
    M_RESUME,     /* to the worker: the last byte may go */
};

/*
 * The control half of a ticket.  The worker allocates it with the admission
 * and never touches it again; the control side owns it from the admission
 * message on, and frees it at the release message (or at gw_fence_hub_free).
 */
struct half {
    TAILQ_ENTRY(half) link; /* in hub->halves, from the admission on */
    struct gw_fence_hub *hub;
    struct gw_fence_ticket
        *t;              /* the real ticket; NULL once the fence freed it or it was released */
    struct gw_loopq *wq; /* the worker's queue */
    uint64_t ep;         /* the worker half's endpoint on wq */
    struct gw_fence_rticket *rt; /* the worker half: carried back in answers, not touched here */
    bool granted;                /* may_finish said yes (and the write counts as sent) */
    bool judging;                /* a judgement waits for the window: c_resume answers it */
    char lock[GW_FENCE_LOCK_MAX + 1]; /* the claim's lock (M_JUDGE reads its highest) */
    uint64_t token;                   /* the claim's token */
};
TAILQ_HEAD(half_list, half);

struct gw_fence_hub {
    struct gw_fence *f;
    struct gw_loopq *q; /* the control loop's */
    struct half_list halves;
    uint64_t n;
};

struct gw_fence_remote {
    struct gw_fence_hub *hub; /* carried in the control halves, never touched here */
    struct gw_loopq *cq;      /* the control loop's queue (hub->q, copied at creation) */
    struct gw_loopq *q;       /* the worker loop's */
};

/* The worker half of a ticket. */
struct gw_fence_rticket {
    struct gw_fence_remote *r;
    struct half *half; /* the control half: carried in messages, not touched here */
    uint64_t ep;       /* its endpoint on r->q: answers to a ended ticket are cancelled */
    gw_fence_admit_fn *admitted;
    gw_fence_cut_fn *cut;
    gw_fence_resume_fn *resume;
    gw_fence_judged_fn *judged; /* M_JUDGED's callback, while a judgement is asked */
    void *arg;
    bool asked;   /* a may-finish message is on its way or answered with a hold */
    bool granted; /* the control side said yes */
};

struct msg {
    struct gw_loopmsg m; /* first: the queue's view */
    enum kind kind;
    struct half *half;
    struct gw_fence_rticket *rt;
    int err;
    uint64_t current;
    struct gw_fence_claim claim; /* M_ADMIT */
    const char *reqid;           /* M_ADMIT: into strs */
    const char *principal;
    char strs[];
};

static void on_control(struct gw_loopmsg *m);
static void on_worker(struct gw_loopmsg *m);
static void on_cancel(struct gw_loopmsg *m, int why);

static struct msg *
msg_new(enum kind kind, size_t extra)
{
    struct msg *m = calloc(1, sizeof(*m) + extra);
    if (m != NULL) {
        m->kind = kind;
        m->m.run = kind <= M_JUDGE ? on_control : on_worker;
        m->m.cancel = on_cancel;
    }
    return m;
}

/* Posts m to q; a queue that is closed (shutting down) drops it. */
static void
post(struct gw_loopq *q, struct msg *m)
{
    if (gw_loopq_post(q, &m->m) != 0) {
        free(m);
    }
}

/* ---- the control side ---- */

struct gw_fence_hub *
gw_fence_hub_new(struct gw_fence *f, struct gw_loopq *q)
{
    struct gw_fence_hub *h = calloc(1, sizeof(*h));
    if (h != NULL) {
        h->f = f;
        h->q = q;
        TAILQ_INIT(&h->halves);
    }
    return h;
}

static void
half_free(struct half *c)
{
    TAILQ_REMOVE(&c->hub->halves, c, link);
    c->hub->n--;
    free(c);
}

void
gw_fence_hub_free(struct gw_fence_hub *h)
{
    if (h == NULL) {
        return;
    }
    /* A release may cut or admit the others: their callbacks only clear their
     * half's ticket and post an answer, so the next half stays valid. */
    struct half *c, *next;
    for (c = TAILQ_FIRST(&h->halves); c != NULL; c = next) {
        next = TAILQ_NEXT(c, link);
        struct gw_fence_ticket *t = c->t;
        c->t = NULL;
        half_free(c);
        gw_fence_ticket_release(t);
    }
    free(h);
}

uint64_t
gw_fence_hub_tickets(const struct gw_fence_hub *h)
{
    return h->n;
}

/* An answer to c's worker half, addressed to its endpoint. */
static void
answer(struct half *c, enum kind kind, int err, uint64_t current)
{
    struct msg *m = msg_new(kind, 0);
    if (m == NULL) {
        /* Out of memory: the worker's request waits for its client's timeout
         * or the drain; the control half still ends at its release. */
        return;
    }
    m->m.target = c->ep;
    m->rt = c->rt;
    m->err = err;
    m->current = current;
    post(c->wq, m);
}

/* The last byte may go: sent at once, so the barrier awaits it from now on (G3). */
static void
grant(struct half *c)
{
    c->granted = true;
    gw_fence_ticket_sent(c->t);
    answer(c, M_RESUME, 0, 0);
}

/* gw_fence_admit_fn */
static void
c_admitted(void *arg, int err, uint64_t current)
{
    struct half *c = arg;
    if (err != 0) {
        c->t = NULL; /* freed by the fence */
    }
    answer(c, M_VERDICT, err, current);
}

/* gw_fence_cut_fn */
static void
c_cut(void *arg, int err, uint64_t current)
{
    struct half *c = arg;
    c->t = NULL; /* freed by the fence */
    answer(c, M_CUT, err, current);
}

/* gw_fence_resume_fn: the fence's hold ended; ask again, as the proxy would. */
static void
c_resume(void *arg)
{
    struct half *c = arg;
    if (c->judging) {
        /* the write was sent: the window's answer is the judgement's */
        if (c->t != NULL && gw_fence_ticket_may_finish(c->t)) {
            c->judging = false;
            answer(c, M_JUDGED, 0, 0);
        }
        return;
    }
    if (c->t != NULL && !c->granted && gw_fence_ticket_may_finish(c->t)) {
        grant(c);
    }
}

/* M_JUDGE: gw_cond_judge's questions, asked of the real ticket (gateway/proxy/cond_reply.c). */
static void
c_judge(struct half *c)
{
    uint64_t current = 0;
    if (c->t == NULL) {
        return; /* cut: the worker hears of it by M_CUT */
    }
    if (gw_fence_current(c->hub->f, c->lock, &current) == 0 && current > c->token) {
        answer(c, M_JUDGED, ERR_FENCED, current);
    } else if (gw_fence_ticket_may_finish(c->t)) {
        answer(c, M_JUDGED, 0, current);
    } else {
        c->judging = true; /* c_resume answers, or c_cut does (M_CUT) */
    }
}

static void
c_admit(struct gw_fence_hub *h, struct msg *m)
{
    struct half *c = m->half;
    TAILQ_INSERT_TAIL(&h->halves, c, link);
    h->n++;
    int rc = gw_fence_admit(h->f, &m->claim, m->reqid, m->principal, c_admitted, c_cut, c, &c->t);
    if (rc < 0) {
        c->t = NULL;
        answer(c, M_VERDICT, rc, 0);
        return;
    }
    gw_fence_ticket_rebind(c->t, c_cut, c_resume, c);
    if (rc == GW_FENCE_ADMITTED) {
        c_admitted(c, 0, m->claim.token);
    }
}

static void
on_control(struct gw_loopmsg *lm)
{
    struct msg *m = (struct msg *)lm;
    struct half *c = m->half;
    switch (m->kind) {
    case M_ADMIT:
        c_admit(c->hub, m);
        break;
    case M_MAY_FINISH:
        if (c->t != NULL && !c->granted && gw_fence_ticket_may_finish(c->t)) {
            grant(c);
        } /* else: cut already, or held: the fence calls c_resume or c_cut */
        break;
    case M_JUDGE:
        c_judge(c);
        break;
    case M_SENT:
        if (c->t != NULL) {
            gw_fence_ticket_sent(c->t);
        }
        break;
    case M_RELEASE: {
        struct gw_fence_ticket *t = c->t;
        half_free(c);
        gw_fence_ticket_release(t);
        break;
    }
    default:
        break;
    }
    free(m);
}

/* ---- the worker side ---- */

struct gw_fence_remote *
gw_fence_remote_new(struct gw_fence_hub *h, struct gw_loopq *q)
{
    struct gw_fence_remote *r = calloc(1, sizeof(*r));
    if (r != NULL) {
        r->hub = h;
        r->cq = h->q;
        r->q = q;
    }
    return r;
}

void
gw_fence_remote_free(struct gw_fence_remote *r)
{
    free(r);
}

/* The worker half ends: no answer reaches it any more; the control half ends too. */
static void
rt_end(struct gw_fence_rticket *t)
{
    gw_loopq_ep_close(t->r->q, t->ep);
    struct msg *m = msg_new(M_RELEASE, 0);
    if (m != NULL) {
        m->half = t->half;
        post(t->r->cq, m);
    }
    /* Out of memory: the control half (and its ticket) stays until
     * gw_fence_hub_free; the barrier may wait on it until then. */
    free(t);
}

int
gw_fence_remote_admit(struct gw_fence_remote *r, const struct gw_fence_claim *claim,
                      const char *reqid, const char *principal, gw_fence_admit_fn *admitted,
                      gw_fence_cut_fn *cut, void *arg, struct gw_fence_rticket **out)
{
    if (claim == NULL || !claim->fenced) {
        return ERR_INVAL;
    }
    reqid = reqid != NULL ? reqid : "";
    principal = principal != NULL ? principal : "";
    size_t rl = strlen(reqid) + 1, pl = strlen(principal) + 1;
    struct gw_fence_rticket *t = calloc(1, sizeof(*t));
    struct half *c = calloc(1, sizeof(*c));
    struct msg *m = msg_new(M_ADMIT, rl + pl);
    if (t == NULL || c == NULL || m == NULL || gw_loopq_ep_open(r->q, &t->ep) != 0) {
        free(t);
        free(c);
        free(m);
        return ERR_NOMEM;
    }
    t->r = r;
    t->half = c;
    t->admitted = admitted;
    t->cut = cut;
    t->arg = arg;
    c->hub = r->hub;
    c->wq = r->q;
    c->ep = t->ep;
    c->rt = t;
    str_copy(c->lock, sizeof(c->lock), claim->lock);
    c->token = claim->token;
    m->half = c;
    m->claim = *claim;
    m->reqid = memcpy(m->strs, reqid, rl);
    m->principal = memcpy(m->strs + rl, principal, pl);
    if (gw_loopq_post(r->cq, &m->m) != 0) {
        gw_loopq_ep_close(r->q, t->ep);
        free(t);
        free(c);
        free(m);
        return ERR_CLOSED;
    }
    *out = t;
    return 0;
}

void
gw_fence_rticket_rebind(struct gw_fence_rticket *t, gw_fence_cut_fn *cut,
                        gw_fence_resume_fn *resume, void *arg)
{
    t->cut = cut;
    t->resume = resume;
    t->arg = arg;
}

bool
gw_fence_rticket_may_finish(struct gw_fence_rticket *t)
{
    if (t->granted) {
        return true;
    }
    if (!t->asked) {
        struct msg *m = msg_new(M_MAY_FINISH, 0);
        if (m == NULL) {
            return false; /* asked again at the next read */
        }
        m->half = t->half;
        t->asked = true;
        post(t->r->cq, m);
    }
    return false;
}

void
gw_fence_rticket_sent(struct gw_fence_rticket *t)
{
    if (t == NULL || t->granted) {
        return; /* a granted write counted as sent when the yes was given */
    }
    struct msg *m = msg_new(M_SENT, 0);
    if (m != NULL) {
        m->half = t->half;
        post(t->r->cq, m);
    }
}

void
gw_fence_rticket_judge(struct gw_fence_rticket *t, gw_fence_judged_fn *judged)
{
    struct msg *m = msg_new(M_JUDGE, 0);
    if (m == NULL) {
        /* out of memory: the write's client waits for its timeout; the ticket
         * ends with the request, as any */
        return;
    }
    t->judged = judged;
    m->half = t->half;
    post(t->r->cq, m);
}

void
gw_fence_rticket_release(struct gw_fence_rticket *t)
{
    if (t != NULL) {
        rt_end(t);
    }
}

static void
on_worker(struct gw_loopmsg *lm)
{
    struct msg *m = (struct msg *)lm;
    struct gw_fence_rticket *t = m->rt; /* alive: its endpoint is open */
    int err = m->err;
    uint64_t current = m->current;
    enum kind kind = m->kind;
    free(m);
    void *arg = t->arg;
    if (kind == M_VERDICT) {
        gw_fence_admit_fn *admitted = t->admitted;
        if (err != 0) {
            rt_end(t); /* "on a non-zero err the ticket is already freed" */
        }
        admitted(arg, err, current);
    } else if (kind == M_CUT) {
        gw_fence_cut_fn *cut = t->cut;
        rt_end(t); /* "the ticket is already freed" */
        cut(arg, err, current);
    } else if (kind == M_JUDGED) {
        gw_fence_judged_fn *judged = t->judged;
        t->judged = NULL;
        if (judged != NULL) {
            judged(arg, err, current);
        }
    } else if (kind == M_RESUME) {
        t->granted = true;
        if (t->resume != NULL) {
            t->resume(arg);
        }
    }
}

/* gw_loopmsg_cancel_fn: a queue closed, or the worker half ended first. */
static void
on_cancel(struct gw_loopmsg *lm, int why)
{
    struct msg *m = (struct msg *)lm;
    (void)why;
    if (m->kind == M_ADMIT) {
        free(m->half); /* never reached the control side: nobody else holds it */
    }
    free(m);
}
