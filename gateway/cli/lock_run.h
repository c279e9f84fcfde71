/*
 * gateway/cli/lock_run.h: the process side of `fencegate lock` (gateway/cli/lock.h)
 * that needs no JSON: the SIGINT/SIGTERM/SIGCHLD self-pipe every sub-command
 * sleeps on, and `lock run`'s machinery: the renew scheduler on the local
 * monotonic clock (pure, so the unit test drives it without sleeping), the
 * child started in its own process group, and its supervision, which stops
 * the group when the lease is lost.  The renew request itself is a callback
 * supplied by gateway/cli/lock.c, which owns the JSON.
 *
 * Main thread only, blocking, no event loop.  The signal state is
 * process-global: install once per process, close once at the end.
 * Every string is borrowed from the caller for the duration of the call.
 */
#ifndef GW_LOCKCLI_RUN_H
#define GW_LOCKCLI_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

/* Request timeout beyond the time the gateway may wait; also the cap on one renew. */
#define GW_LOCKRUN_REQ_EXTRA_MS 10000u

/*
 * The last SIGINT/SIGTERM received, 0 if none.  Written only by the signal
 * handler; callers read it, or pass its address as a cancel flag.
 */
extern volatile sig_atomic_t gw_lock_run_stop_sig;

/*
 * One renew of the lease being kept, within timeout_ms.
 * [in]  arg            the gw_lockrun's renew_arg
 * [out] lease_ms       on GW_LOCK_EXIT_OK: the lease granted (0: not said)
 * [out] expires_in_ms  on GW_LOCK_EXIT_OK: the gateway's own remaining time (0: not said)
 * Returns GW_LOCK_EXIT_OK, GW_LOCK_EXIT_HELD (the lease is not ours any more:
 * stop), or GW_LOCK_EXIT_ERROR (may succeed if tried again).
 */
typedef int gw_lock_run_renew_fn(void *arg, uint64_t timeout_ms, uint64_t *lease_ms,
                                 uint64_t *expires_in_ms);

/* What `lock run` keeps and runs once it holds the lease.  All pointers borrowed. */
struct gw_lockrun {
    const char *name;            /* "fencegate lock run", for messages */
    const char *lock;            /* the lock held; exported as FENCING_LOCK */
    const char *gateway;         /* the gateway URL; exported as FENCING_GATEWAY */
    char **cmd;                  /* CMD and its arguments, NULL-terminated */
    uint64_t token;              /* the fencing token; exported as FENCING_TOKEN */
    uint64_t grace_ms;           /* SIGTERM to SIGKILL delay once the lease is lost */
    gw_lock_run_renew_fn *renew; /* sends one renew */
    void *renew_arg;             /* passed to renew */
};

/*
 * gw_lock_run_signals_install - create the self-pipe and install the handlers
 * for SIGINT, SIGTERM (no SA_RESTART) and SIGCHLD.
 * Returns 0 or ERR_IO.  Call gw_lock_run_signals_close() in either case.
 */
MUST_USE int gw_lock_run_signals_install(void);

/* gw_lock_run_signals_close - close the self-pipe (the handlers stay, harmless). */
void gw_lock_run_signals_close(void);

/* gw_lock_run_wait_signal - sleep up to ms, waking early on any signal; drains the pipe. */
void gw_lock_run_wait_signal(uint64_t ms);

/*
 * gw_lock_run_child - run r->cmd while keeping the lease granted at sent_at
 * (lease_ms, and the gateway's expires_in_ms or 0): renew on schedule through
 * r->renew; when the lease is lost, SIGTERM the child's group, SIGKILL after
 * r->grace_ms.  Does not start the child when a stop signal already arrived.
 * [out] lost  whether the lease was lost (nothing left to release)
 * Returns CMD's exit status (128+N for signal N), 128+signal when stopped
 * before the start, GW_LOCK_EXIT_LOST, or GW_LOCK_EXIT_ERROR (cannot start;
 * reported on stderr).
 */
int gw_lock_run_child(const struct gw_lockrun *r, uint64_t sent_at, uint64_t lease_ms,
                      uint64_t expires_in_ms, bool *lost);

#endif
