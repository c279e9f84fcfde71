/*
 * gateway/upstream/engine.h: the engine family behind gateway/upstream/upstream.h.
 *
 * struct gw_upstream and struct gw_xfer, opaque to callers, are defined here
 * as a header each engine's client and transfer structs start with (member
 * "pub"): a pointer to the public struct is a pointer to the engine's struct.
 * The header carries the engine's operations table, so the public API
 * (gateway/upstream/upstream.c) calls through it and never asks which
 * engine it holds, as h2o's httpclient and curl's vtls backends do.  The
 * client's header also holds what every engine keeps alike: the loop, a copy
 * of the options (gw_upstream_alloc, engine.c), and the unreachable streak
 * it feeds (its own, or the one its options name, shared by every loop's
 * client), which both engines feed through the gw_upstream_note_* calls
 * (streak.c) and gw_upstream_unreachable reads.  Internal to
 * gateway/upstream/.
 *
 *   curl.c, curl_xfer.c, curl.h   libcurl multi on the loop: the internal S3
 *                                  client's engine, and the proxy's fallback
 *   lean.c, lean_conn.c, lean_tls.c, lean.h
 *                                  HTTP/1.1 on bufferevents and llhttp: the
 *                                  proxy's engine
 */
#ifndef GW_UPSTREAM_ENGINE_H
#define GW_UPSTREAM_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>

#include "gateway/upstream/upstream.h"

/*
 * The unreachable streak (upstream.h), fed by the clients of every loop
 * that shares it: the count and the time are atomics, read and written
 * without a lock (a response ends the streak with one load when it is
 * already 0, so the loops' requests share no written cache line); the text
 * changes only at a failure, under the mutex.
 */
struct gw_upstream_streak {
    atomic_uint_least32_t fails;   /* transfers in a row that could not connect */
    atomic_uint_least64_t fail_ms; /* when the last of them ended (mono ms) */
    pthread_mutex_t mu;            /* guards why */
    char why[GW_UPSTREAM_WHY_MAX]; /* the text for the last connect failure */
};

/* gw_upstream_streak_init / _cleanup - an embedded streak, empty / its mutex destroyed. */
void gw_upstream_streak_init(struct gw_upstream_streak *s);
void gw_upstream_streak_cleanup(struct gw_upstream_streak *s);

/*
 * The streak's own feed, from any thread (the engines call the
 * gw_upstream_note_* wrappers below).
 * gw_upstream_streak_failed   one more transfer that could not connect, as of now_ms.
 * gw_upstream_streak_why      the text for the last failure (copied, cut to fit).
 * gw_upstream_streak_reached  a transfer got a response: the streak ends.
 */
void gw_upstream_streak_failed(struct gw_upstream_streak *s, uint64_t now_ms);
void gw_upstream_streak_why(struct gw_upstream_streak *s, const char *text);
void gw_upstream_streak_reached(struct gw_upstream_streak *s);

/*
 * A client's side of the cap (cap.c), each on its own loop's thread but for
 * take and give (any member's thread).
 * gw_upstream_cap_join       become a member: look(arg) runs on the client's loop
 *                            (from q) when a slot may be free or a shed was
 *                            asked; [out] slot its member number.  0, or ERR_INVAL
 *                            (more members than the cap was made for).
 * gw_upstream_cap_leave      no more wake-ups run look; the want is dropped.
 * gw_upstream_cap_take       reserve one connection's slot; false at max.
 * gw_upstream_cap_give       a connection closed: its slot back, every waiting
 *                            member woken.
 * gw_upstream_cap_wait       a transfer waits for a slot: the want goes up, the
 *                            member with the most idle connections is asked to
 *                            shed one, and the member is woken if a slot came
 *                            free meanwhile.
 * gw_upstream_cap_wait_done  nothing waits any more: the want goes down.
 * gw_upstream_cap_wanted     whether another member waits for a slot.
 * gw_upstream_cap_idle       publish how many idle connections the member holds.
 * gw_upstream_cap_shed_asked the sheds asked of the member since the last call.
 * gw_upstream_cap_held       publish how many connections the member holds.
 * gw_upstream_cap_share      max / loops, rounded up: a member's fair share.
 * gw_upstream_cap_hand_over  a connection of the member's is closing: its slot
 *                            goes to another member that waits (one that holds
 *                            no connection, with to_empty_only), still counted,
 *                            and that member is woken; false: none waits (the
 *                            caller gives the slot back as usual).
 * gw_upstream_cap_granted    the slots handed to the member since the last call:
 *                            its own now, to use or give back.
 */
typedef void gw_upstream_cap_look_fn(void *arg);
MUST_USE int gw_upstream_cap_join(struct gw_upstream_cap *c, struct gw_loopq *q,
                                  gw_upstream_cap_look_fn *look, void *arg, uint32_t *slot);
void gw_upstream_cap_leave(struct gw_upstream_cap *c, uint32_t slot);
MUST_USE bool gw_upstream_cap_take(struct gw_upstream_cap *c);
void gw_upstream_cap_give(struct gw_upstream_cap *c);
void gw_upstream_cap_wait(struct gw_upstream_cap *c, uint32_t slot);
void gw_upstream_cap_wait_done(struct gw_upstream_cap *c, uint32_t slot);
bool gw_upstream_cap_wanted(struct gw_upstream_cap *c, uint32_t slot);
void gw_upstream_cap_idle(struct gw_upstream_cap *c, uint32_t slot, size_t idle);
uint32_t gw_upstream_cap_shed_asked(struct gw_upstream_cap *c, uint32_t slot);
void gw_upstream_cap_held(struct gw_upstream_cap *c, uint32_t slot, size_t conns);
uint32_t gw_upstream_cap_share(const struct gw_upstream_cap *c);
/* gw_upstream_cap_waiting - would gw_upstream_cap_hand_over find a member to give to? */
MUST_USE bool gw_upstream_cap_waiting(struct gw_upstream_cap *c, uint32_t slot, bool to_empty_only);
MUST_USE bool gw_upstream_cap_hand_over(struct gw_upstream_cap *c, uint32_t slot,
                                        bool to_empty_only);
uint32_t gw_upstream_cap_granted(struct gw_upstream_cap *c, uint32_t slot);

/* What an engine does; each installs one table.  Contracts as in upstream.h. */
struct gw_upstream_ops {
    const char *name; /* "curl", "lean": for logs */
    MUST_USE int (*xfer_start)(struct gw_upstream *up, const struct gw_xfer_req *rq,
                               const struct gw_xfer_cbs *cbs, void *arg, struct gw_xfer **out);
    void (*resume_send)(struct gw_xfer *x);
    void (*resume_recv)(struct gw_xfer *x);
    void (*cancel)(struct gw_xfer *x);
    uint64_t (*body_sent)(const struct gw_xfer *x);
    void (*conns)(const struct gw_upstream *up, uint64_t *open, uint64_t *idle);
    void (*free)(struct gw_upstream *up);
};

struct gw_upstream {
    const struct gw_upstream_ops *ops;     /* the engine that made this client */
    struct event_base *base;               /* borrowed */
    struct gw_upstream_opts opts;          /* copied; opts.ca_file points at ca_file */
    char *ca_file;                         /* owned copy */
    struct gw_upstream_streak *streak;     /* borrowed: opts.streak, or &own_streak */
    struct gw_upstream_streak own_streak;  /* embedded; used when opts.streak is NULL */
    char connect_err[GW_UPSTREAM_WHY_MAX]; /* this client's last connect failure (its logs) */
};

struct gw_xfer {
    const struct gw_upstream_ops *ops; /* its client's */
};

/*
 * The set-up every engine's constructor shares (engine.c).
 * gw_upstream_alloc    a zeroed client of size bytes (the engine's struct,
 *                      pub first) with pub's ops, base and a copy of opts
 *                      (ca_file copied too) filled in; NULL when base or opts
 *                      is NULL or out of memory (logged).
 * gw_upstream_dealloc  frees what gw_upstream_alloc made, up included: the last
 *                      step of an engine's free, after its own resources.
 */
void *gw_upstream_alloc(size_t size, const struct gw_upstream_ops *ops, struct event_base *base,
                        const struct gw_upstream_opts *opts);
void gw_upstream_dealloc(struct gw_upstream *up);

/*
 * The unreachable streak (gw_upstream_unreachable), fed by both engines on
 * up's loop; each goes to the streak up feeds (up->streak).
 * gw_upstream_note_connect_err  sets the text for a connection that did not
 *                               come up (printf-style; cut to fit) in
 *                               up->connect_err and in the streak.  Does not count.
 * gw_upstream_note_connect_failed  a transfer ended without ever connecting:
 *                               one more in the streak, as of now.
 * gw_upstream_note_reached      a transfer got a response: the streak ends.
 */
void gw_upstream_note_connect_err(struct gw_upstream *up, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void gw_upstream_note_connect_failed(struct gw_upstream *up);
void gw_upstream_note_reached(struct gw_upstream *up);

/*
 * GW_UPSTREAM_ENGINE(eng, up_t, x_t) - in an engine's file, after its typed
 * functions: its operations table (static const struct gw_upstream_ops
 * eng##_ops, declared earlier with GW_UPSTREAM_OPS_DECL) over
 * gw_<eng>_xfer_start, _resume_send, _resume_recv, _xfer_cancel, _body_sent,
 * _conns and _free, and its constructor gw_<eng>_new over the file's static
 * <eng>_new.  Its client struct up_t and transfer struct x_t start with the
 * public headers (member "pub"), so the casts are exact.  Written once for
 * the family.
 */
#define GW_UPSTREAM_OPS_DECL(eng) static const struct gw_upstream_ops eng##_ops

#define GW_UPSTREAM_ENGINE(eng, up_t, x_t)                                                         \
    static int eng##_op_xfer_start(struct gw_upstream *up, const struct gw_xfer_req *rq,           \
                                   const struct gw_xfer_cbs *cbs, void *arg, struct gw_xfer **out) \
    {                                                                                              \
        struct x_t *x = NULL;                                                                      \
        int err = gw_##eng##_xfer_start((struct up_t *)(void *)up, rq, cbs, arg, &x);              \
        *out = x != NULL ? &x->pub : NULL;                                                         \
        return err;                                                                                \
    }                                                                                              \
    static void eng##_op_resume_send(struct gw_xfer *x)                                            \
    {                                                                                              \
        gw_##eng##_resume_send((struct x_t *)(void *)x);                                           \
    }                                                                                              \
    static void eng##_op_resume_recv(struct gw_xfer *x)                                            \
    {                                                                                              \
        gw_##eng##_resume_recv((struct x_t *)(void *)x);                                           \
    }                                                                                              \
    static void eng##_op_cancel(struct gw_xfer *x)                                                 \
    {                                                                                              \
        gw_##eng##_xfer_cancel((struct x_t *)(void *)x);                                           \
    }                                                                                              \
    static uint64_t eng##_op_body_sent(const struct gw_xfer *x)                                    \
    {                                                                                              \
        return gw_##eng##_body_sent((const struct x_t *)(const void *)x);                          \
    }                                                                                              \
    static void eng##_op_conns(const struct gw_upstream *up, uint64_t *open, uint64_t *idle)       \
    {                                                                                              \
        gw_##eng##_conns((const struct up_t *)(const void *)up, open, idle);                       \
    }                                                                                              \
    static void eng##_op_free(struct gw_upstream *up)                                              \
    {                                                                                              \
        gw_##eng##_free((struct up_t *)(void *)up);                                                \
    }                                                                                              \
    static const struct gw_upstream_ops eng##_ops = {                                              \
        .name = #eng,                                                                              \
        .xfer_start = eng##_op_xfer_start,                                                         \
        .resume_send = eng##_op_resume_send,                                                       \
        .resume_recv = eng##_op_resume_recv,                                                       \
        .cancel = eng##_op_cancel,                                                                 \
        .body_sent = eng##_op_body_sent,                                                           \
        .conns = eng##_op_conns,                                                                   \
        .free = eng##_op_free,                                                                     \
    };                                                                                             \
    struct gw_upstream *gw_##eng##_new(struct event_base *base,                                    \
                                       const struct gw_upstream_opts *opts)                        \
    {                                                                                              \
        struct up_t *up = eng##_new(base, opts);                                                   \
        return up != NULL ? &up->pub : NULL;                                                       \
    }

/*
 * The engines' constructors (the one place that names them: gw_upstream_new).
 * Each returns its client with pub.ops set to its table, or NULL (out of
 * memory, or its library would not start).
 */
struct gw_upstream *gw_curl_new(struct event_base *base, const struct gw_upstream_opts *opts);
struct gw_upstream *gw_lean_new(struct event_base *base, const struct gw_upstream_opts *opts);

#endif
