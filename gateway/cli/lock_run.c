/*
 * gateway/cli/lock_run.c: the signal self-pipe and `fencegate lock run`'s
 * renew scheduler and child supervision (gateway/cli/lock_run.h).  The
 * scheduler is a pure function of `now`; the renew call is the caller's.
 */
#include "gateway/cli/lock_run.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "gateway/cli/lock.h"

/* ---- signals (self-pipe) ---- */

volatile sig_atomic_t gw_lock_run_stop_sig; /* last SIGINT/SIGTERM received, 0 if none */
static volatile sig_atomic_t child_pg;      /* > 0: run's child process group (forward to it) */
static int sig_pipe[2] = {-1, -1};          /* written by on_signal, polled by the main loop */

/* sigaction handler for SIGINT, SIGTERM, SIGCHLD (installed by gw_lock_run_signals_install). */
static void
on_signal(int sig)
{
    int saved = errno;
    if (sig != SIGCHLD) {
        gw_lock_run_stop_sig = sig;
        if (child_pg > 0) {
            (void)kill(-(pid_t)child_pg, sig); /* forwarded at once, even mid-request */
        }
    }
    unsigned char b = (unsigned char)sig;
    if (sig_pipe[1] >= 0) {
        ssize_t w = write(sig_pipe[1], &b, 1); /* full pipe: a wake-up is pending anyway */
        (void)w;
    }
    errno = saved;
}

int
gw_lock_run_signals_install(void)
{
    if (pipe(sig_pipe) != 0) {
        return ERR_IO;
    }
    for (int i = 0; i < 2; i++) {
        if (fcntl(sig_pipe[i], F_SETFD, FD_CLOEXEC) != 0 ||
            fcntl(sig_pipe[i], F_SETFL, O_NONBLOCK) != 0) {
            return ERR_IO;
        }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    (void)sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: poll() returns EINTR */
    if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0) {
        return ERR_IO;
    }
    sa.sa_flags = SA_NOCLDSTOP | SA_RESTART;
    if (sigaction(SIGCHLD, &sa, NULL) != 0) {
        return ERR_IO;
    }
    return 0;
}

void
gw_lock_run_signals_close(void)
{
    for (int i = 0; i < 2; i++) {
        int fd = sig_pipe[i];
        sig_pipe[i] = -1; /* before close: a late signal must not write to a reused fd */
        if (fd >= 0) {
            (void)close(fd);
        }
    }
}

void
gw_lock_run_wait_signal(uint64_t ms)
{
    struct pollfd p = {.fd = sig_pipe[0], .events = POLLIN};
    int r = poll(&p, 1, ms > INT32_MAX ? INT32_MAX : (int)ms);
    if (r > 0) {
        unsigned char b[64];
        while (read(sig_pipe[0], b, sizeof(b)) > 0) {
        }
    }
}
/* ---- run: the renew scheduler (pure) ---- */

/* When to renew and when the lease is gone, on the local monotonic clock. */
struct renew_sched {
    uint64_t lease_ms; /* the lease as last granted */
    uint64_t deadline; /* the lease may be gone from here on: kill the child */
    uint64_t next;     /* send the next renew at this time */
};

enum sched_action {
    SCHED_WAIT,  /* nothing due: sleep *wait_ms (or until a signal) */
    SCHED_RENEW, /* send a renew now */
    SCHED_LOST,  /* the deadline passed without a successful renew */
};

/*
 * A grant or renewal succeeded.  The lease is counted from sent_at, the time
 * the request was SENT (the gateway granted it later), so the local deadline
 * never falls after the gateway's (G6: one clock, ours, judged conservatively).
 * [in] expires_in_ms  the gateway's own remaining time if it gave one (0: none)
 */
static void
sched_granted(struct renew_sched *s, uint64_t sent_at, uint64_t lease_ms, uint64_t expires_in_ms)
{
    uint64_t lease = expires_in_ms != 0 && expires_in_ms < lease_ms ? expires_in_ms : lease_ms;
    s->lease_ms = lease_ms;
    s->deadline = sent_at + lease;
    s->next = sent_at + lease / 3;
}

/* A renew failed but may succeed if tried again (timeout, 5xx): retry soon. */
static void
sched_failed(struct renew_sched *s, uint64_t now)
{
    uint64_t delay = s->lease_ms / 10;
    delay = delay < 100 ? 100 : delay > 1000 ? 1000 : delay;
    s->next = now + delay;
}

static enum sched_action
sched_next(const struct renew_sched *s, uint64_t now, uint64_t *wait_ms)
{
    *wait_ms = 0;
    if (now >= s->deadline) {
        return SCHED_LOST;
    }
    if (now >= s->next) {
        return SCHED_RENEW;
    }
    *wait_ms = (s->next < s->deadline ? s->next : s->deadline) - now;
    return SCHED_WAIT;
}

/* How long one renew may take: never past the deadline, never over GW_LOCKRUN_REQ_EXTRA_MS. */
static uint64_t
sched_request_timeout(const struct renew_sched *s, uint64_t now)
{
    uint64_t left = s->deadline > now ? s->deadline - now : 1;
    return left > GW_LOCKRUN_REQ_EXTRA_MS ? GW_LOCKRUN_REQ_EXTRA_MS : left;
}

/* The exit status of a shell for a wait(2) status. */
static int
exit_status(int st)
{
    if (WIFEXITED(st)) {
        return WEXITSTATUS(st);
    }
    if (WIFSIGNALED(st)) {
        return 128 + WTERMSIG(st);
    }
    return GW_LOCK_EXIT_ERROR;
}

/* ---- run: the child ---- */

/* Start r->cmd in its own process group with the FENCING_* variables.  Returns its pid or -1. */
static pid_t
spawn(const struct gw_lockrun *r)
{
    char tok[24];
    (void)snprintf(tok, sizeof(tok), "%" PRIu64, r->token);
    if (setenv("FENCING_LOCK", r->lock, 1) != 0 || setenv("FENCING_TOKEN", tok, 1) != 0 ||
        setenv("FENCING_GATEWAY", r->gateway, 1) != 0) {
        return -1;
    }
    sigset_t block, old;
    (void)sigemptyset(&block);
    (void)sigaddset(&block, SIGINT);
    (void)sigaddset(&block, SIGTERM);
    (void)sigaddset(&block, SIGCHLD);
    (void)sigprocmask(SIG_BLOCK, &block, &old);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        /* Child: async-signal-safe calls only until exec. */
        (void)setpgid(0, 0);
        (void)prctl(PR_SET_PDEATHSIG, SIGTERM); /* run died: nobody renews any more */
        if (getppid() != parent) {
            _exit(GW_LOCK_EXIT_LOST);
        }
        struct sigaction dfl;
        memset(&dfl, 0, sizeof(dfl));
        dfl.sa_handler = SIG_DFL;
        (void)sigaction(SIGINT, &dfl, NULL);
        (void)sigaction(SIGTERM, &dfl, NULL);
        (void)sigaction(SIGCHLD, &dfl, NULL);
        (void)sigprocmask(SIG_SETMASK, &old, NULL);
        execvp(r->cmd[0], r->cmd);
        static const char msg[] = "fencegate lock run: cannot execute the command\n";
        ssize_t w = write(2, msg, sizeof(msg) - 1);
        (void)w;
        _exit(errno == ENOENT ? 127 : 126);
    }
    if (pid > 0) {
        (void)setpgid(pid, pid); /* either side may win the race; both set it */
        child_pg = pid;
    }
    (void)sigprocmask(SIG_SETMASK, &old, NULL);
    return pid;
}

/* Why run lost its lease (for the message). */
static const char *
lost_reason(int renew_ex)
{
    return renew_ex == GW_LOCK_EXIT_HELD ? "superseded or not ours any more"
                                         : "no successful renew before the lease ran out";
}

/*
 * Keep the lease while the child runs: renew on schedule; when the lease is
 * lost, SIGTERM the child's group, then SIGKILL after the grace period.
 * Returns when the child has been reaped; *st is its wait status, *lost
 * whether the lease was lost.
 */
static void
supervise(const struct gw_lockrun *r, pid_t pid, struct renew_sched *s, int *st, bool *lost)
{
    int renew_ex = GW_LOCK_EXIT_OK;
    uint64_t kill_at = 0; /* when lost: SIGKILL at this time (0: sent) */
    *lost = false;
    *st = 0;
    for (;;) {
        pid_t w = waitpid(pid, st, WNOHANG);
        if (w == pid || (w < 0 && errno == ECHILD)) {
            return;
        }
        uint64_t now = clock_mono_ms();
        uint64_t wait_ms = 0;
        enum sched_action a = *lost ? SCHED_WAIT : sched_next(s, now, &wait_ms);
        if (a == SCHED_RENEW) {
            uint64_t lm = 0;
            uint64_t expires_in = 0;
            renew_ex = r->renew(r->renew_arg, sched_request_timeout(s, now), &lm, &expires_in);
            if (renew_ex == GW_LOCK_EXIT_OK) {
                sched_granted(s, now, lm != 0 ? lm : s->lease_ms, expires_in);
            } else if (renew_ex == GW_LOCK_EXIT_HELD) {
                a = SCHED_LOST;
            } else {
                sched_failed(s, clock_mono_ms());
            }
            if (a != SCHED_LOST) {
                continue;
            }
        }
        if (a == SCHED_LOST && !*lost) {
            *lost = true;
            (void)fprintf(stderr, "%s: lease on %s (token %" PRIu64 ") lost: %s; stopping %ld\n",
                          r->name, r->lock, r->token, lost_reason(renew_ex), (long)pid);
            (void)kill(-pid, SIGTERM);
            kill_at = clock_mono_ms() + r->grace_ms;
        }
        if (*lost) {
            now = clock_mono_ms();
            if (kill_at != 0 && now >= kill_at) {
                (void)kill(-pid, SIGKILL);
                kill_at = 0;
            }
            wait_ms = kill_at != 0 ? kill_at - now : 1000;
        }
        gw_lock_run_wait_signal(wait_ms);
    }
}

int
gw_lock_run_child(const struct gw_lockrun *r, uint64_t sent_at, uint64_t lease_ms,
                  uint64_t expires_in_ms, bool *lost)
{
    int ex;
    struct renew_sched s;
    sched_granted(&s, sent_at, lease_ms, expires_in_ms);

    *lost = false;
    pid_t pid = gw_lock_run_stop_sig == 0 ? spawn(r) : 0;
    if (pid == 0) { /* told to stop while the grant was on its way: give it back */
        ex = 128 + gw_lock_run_stop_sig;
    } else if (pid < 0) {
        (void)fprintf(stderr, "%s: cannot start the command: %s\n", r->name, strerror(errno));
        ex = GW_LOCK_EXIT_ERROR;
    } else {
        int st;
        supervise(r, pid, &s, &st, lost);
        child_pg = 0;
        ex = *lost ? GW_LOCK_EXIT_LOST : exit_status(st);
    }
    return ex;
}
