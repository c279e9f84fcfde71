/*
 * store/worker.c: the write worker.  One thread per writable store takes
 * queued operations in groups of up to STORE_BATCH_MAX, applies them in one
 * write transaction, commits (one fsync for the group), and hands the
 * finished operations to the completion list, signalling an eventfd.
 *
 * Grouping: a fence or election operation is committed at once, together
 * with everything queued behind it (including audit records).  Audit records
 * alone wait up to opts.audit_flush_ms for companions.  Whatever arrives
 * while a commit is in progress forms the next group, so under load the
 * group grows instead of the fsync rate.  Every opts.retention_interval_ms
 * (sooner while a backlog remains) the worker runs age and count retention in
 * one bounded step (STORE_PRUNE_STEP records, one transaction) between groups;
 * each group of audit records also trims the count cap by what it added.
 */
#define LOG_MODULE "store"
#include "store/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "store/store_int.h"

/* Real monotonic time (the injectable clock may be pinned by tests). */
static uint64_t
mono_ns(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wait on qcond (qlock held) until deadline_ns or a signal. */
static void
wait_until(struct store *s, uint64_t deadline_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(deadline_ns / 1000000000u),
                          .tv_nsec = (long)(deadline_ns % 1000000000u)};
    (void)pthread_cond_timedwait(&s->qcond, &s->qlock, &ts);
}

/* One group of operations (store_write_fn argument). */
struct batch {
    struct store_op *head; /* the operations, in queue order */
    uint64_t pruned;       /* audit records deleted by count retention */
};

/* store_write_fn: apply every operation of the group. */
static int
batch_write(struct store *s, MDB_txn *txn, void *arg)
{
    struct batch *b = arg;
    int64_t now = clock_wall_ms();
    uint64_t naudit = 0;
    b->pruned = 0;
    store_audit_txn_begin(s); /* this group's records are not retention's to drop */
    for (struct store_op *op = b->head; op != NULL; op = op->next) {
        op->err = 0;
        op->result = 0;
        int rc;
        switch (op->type) {
        case STORE_OP_FENCE:
            rc = s->apply->fence(s, txn, op->lock, op->value, op->request_id, op->principal, now,
                                 &op->result);
            break;
        case STORE_OP_ELECT:
            rc = s->apply->elect(s, txn, op->lock, op->value, now, &op->result);
            break;
        case STORE_OP_AUDIT:
            rc = s->apply->audit(s, txn, op);
            naudit++;
            break;
        case STORE_OP_UPLOAD_PUT:
        case STORE_OP_UPLOAD_DEL:
            rc = s->apply->upload(s, txn, op);
            break;
        default:
            rc = ERR_INVAL;
            break;
        }
        if (store_is_err_code(rc)) {
            op->err = rc; /* this operation only (e.g. a damaged entry: fail closed) */
        } else if (rc != 0) {
            return rc; /* LMDB: the whole group is retried or fails */
        }
    }
    if (naudit > 0 && s->opts.audit_max_records > 0) {
        bool more = false;
        int rc = s->apply->prune_txn(s, txn, -1, (uint32_t)naudit + 64, &b->pruned, &more);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

/* Results, counters, and hand-over to the completion list. */
static void
finish(struct store *s, struct batch *b, int err)
{
    struct store_op *done = NULL;
    struct store_op **tail = &done;
    size_t n = 0;
    if (err == 0) {
        atomic_fetch_add(&s->st_pruned, b->pruned);
    }
    for (struct store_op *op = b->head, *next; op != NULL; op = next) {
        next = op->next;
        op->next = NULL;
        n++;
        if (err != 0) {
            op->err = err;
        } else if (op->err == 0 && op->type == STORE_OP_FENCE) {
            atomic_fetch_add(&s->st_fence, 1);
            if (op->result > op->value) {
                op->err = ERR_FENCED;
            }
        } else if (op->err == 0 && op->type == STORE_OP_ELECT) {
            atomic_fetch_add(&s->st_elect, 1);
        } else if (op->err == 0 && op->type == STORE_OP_AUDIT) {
            atomic_fetch_add(&s->st_audit, 1);
        }
        if (op->type == STORE_OP_AUDIT && op->audit_cb == NULL) {
            if (op->err != 0) {
                log_error("audit record lost: %s", err_str(op->err));
            }
            free(op);
            continue;
        }
        if ((op->type == STORE_OP_UPLOAD_PUT || op->type == STORE_OP_UPLOAD_DEL) &&
            op->upload_cb == NULL) {
            if (op->err != 0) {
                log_error("upload table write (lock %s) lost: %s", op->lock, err_str(op->err));
            }
            free(op);
            continue;
        }
        *tail = op;
        tail = &op->next;
    }
    if (done != NULL) {
        (void)pthread_mutex_lock(&s->dlock);
        if (s->chead == NULL) {
            s->chead = done;
        } else {
            s->ctail->next = done;
        }
        s->ctail = done;
        while (s->ctail->next != NULL) {
            s->ctail = s->ctail->next;
        }
        (void)pthread_mutex_unlock(&s->dlock);
        uint64_t one = 1;
        ssize_t w = write(s->efd, &one, sizeof(one));
        (void)w; /* EAGAIN means the counter is already non-zero: readable anyway */
    }
    (void)pthread_mutex_lock(&s->qlock);
    s->qlen -= n;
    (void)pthread_mutex_unlock(&s->qlock);
}

/* Take up to STORE_BATCH_MAX queued operations (qlock held). */
static struct store_op *
take(struct store *s)
{
    struct store_op *head = s->qhead;
    struct store_op *last = NULL;
    size_t n = 0;
    for (struct store_op *op = head; op != NULL && n < STORE_BATCH_MAX; op = op->next) {
        if (op->type != STORE_OP_AUDIT) {
            s->qurgent--;
        }
        last = op;
        n++;
    }
    if (last == NULL) {
        return NULL;
    }
    s->qhead = last->next;
    if (s->qhead == NULL) {
        s->qtail = NULL;
    }
    last->next = NULL;
    s->qpending -= n;
    return head;
}

/* One retention step.  Returns true if more remains to delete. */
static bool
retention_step(struct store *s)
{
    if (s->opts.audit_max_age_ms == 0 && s->opts.audit_max_records == 0) {
        return false;
    }
    uint64_t deleted = 0;
    bool more = false;
    int err = s->apply->prune_sync(s, clock_wall_ms(), STORE_PRUNE_STEP, &deleted, &more);
    if (err != 0) {
        log_warn("audit retention failed: %s", err_str(err));
        return false;
    }
    if (deleted > 0) {
        log_debug("audit retention deleted %llu record(s)", (unsigned long long)deleted);
    }
    return more;
}

/* pthread_create (store_worker_start) */
static void *
on_worker(void *arg)
{
    struct store *s = arg;
    uint64_t flush_ns = (uint64_t)s->opts.audit_flush_ms * 1000000u;
    uint64_t interval_ns = (uint64_t)s->opts.retention_interval_ms * 1000000u;
    uint64_t next_retention = mono_ns() + interval_ns;
    (void)pthread_mutex_lock(&s->qlock);
    for (;;) {
        uint64_t now = mono_ns();
        if (!s->stopping && now >= next_retention) {
            /* Also under a steady flood: one bounded step between groups. */
            (void)pthread_mutex_unlock(&s->qlock);
            bool more = retention_step(s);
            next_retention = mono_ns() + (more ? 0 : interval_ns);
            (void)pthread_mutex_lock(&s->qlock);
            continue;
        }
        if (s->qhead == NULL && !s->stopping) {
            wait_until(s, next_retention);
            continue;
        }
        if (s->qhead == NULL) {
            break; /* stopping and drained */
        }
        /* Only audit records queued: let them gather, at most flush_ms. */
        uint64_t due = s->qhead->enq_ns + flush_ns;
        if (!s->stopping && s->qurgent == 0 && s->qpending < STORE_BATCH_MAX && now < due) {
            wait_until(s, due);
            continue;
        }
        struct batch b = {.head = take(s)};
        (void)pthread_mutex_unlock(&s->qlock);
        int err = store_write_run(s, batch_write, &b);
        if (err != 0) {
            log_error("write group failed: %s", err_str(err));
        }
        finish(s, &b, err);
        (void)pthread_mutex_lock(&s->qlock);
    }
    (void)pthread_mutex_unlock(&s->qlock);
    return NULL;
}

int
store_worker_start(struct store *s, const struct store_apply_ops *ops)
{
    s->apply = ops;
    s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s->efd < 0) {
        log_error("eventfd: %s", strerror(errno));
        return ERR_IO;
    }
    int rc = pthread_create(&s->worker, NULL, on_worker, s);
    if (rc != 0) {
        log_error("pthread_create: %s", strerror(rc));
        return ERR_IO;
    }
    s->worker_running = true;
    return 0;
}

void
store_worker_stop(struct store *s)
{
    if (s->worker_running) {
        (void)pthread_mutex_lock(&s->qlock);
        s->stopping = true;
        (void)pthread_cond_signal(&s->qcond);
        (void)pthread_mutex_unlock(&s->qlock);
        (void)pthread_join(s->worker, NULL);
        s->worker_running = false;
        (void)store_dispatch_completions(s);
    }
    if (s->efd >= 0) {
        (void)close(s->efd);
        s->efd = -1;
    }
}

int
store_worker_submit(struct store *s, struct store_op *op)
{
    op->next = NULL;
    op->enq_ns = mono_ns();
    (void)pthread_mutex_lock(&s->qlock);
    if (!s->worker_running || s->stopping) {
        (void)pthread_mutex_unlock(&s->qlock);
        return ERR_CLOSED;
    }
    if (s->qlen >= s->opts.queue_max) {
        (void)pthread_mutex_unlock(&s->qlock);
        atomic_fetch_add(&s->st_rejected, 1);
        return ERR_AGAIN;
    }
    if (s->qtail == NULL) {
        s->qhead = op;
    } else {
        s->qtail->next = op;
    }
    s->qtail = op;
    s->qlen++;
    s->qpending++;
    bool wake = op->type != STORE_OP_AUDIT || s->qpending == 1 || s->qpending >= STORE_BATCH_MAX;
    if (op->type != STORE_OP_AUDIT) {
        s->qurgent++;
    }
    if (wake) {
        (void)pthread_cond_signal(&s->qcond);
    }
    (void)pthread_mutex_unlock(&s->qlock);
    return 0;
}

int
store_completion_fd(const struct store *s)
{
    return s->efd;
}

size_t
store_dispatch_completions(struct store *s)
{
    if (s->efd < 0) {
        return 0;
    }
    uint64_t v;
    ssize_t r = read(s->efd, &v, sizeof(v)); /* reset the counter before taking the list */
    (void)r;
    (void)pthread_mutex_lock(&s->dlock);
    struct store_op *op = s->chead;
    s->chead = NULL;
    s->ctail = NULL;
    (void)pthread_mutex_unlock(&s->dlock);
    size_t n = 0;
    while (op != NULL) {
        struct store_op *next = op->next;
        switch (op->type) {
        case STORE_OP_FENCE:
            op->fence_cb(op->arg, op->err, op->result);
            break;
        case STORE_OP_ELECT:
            op->elect_cb(op->arg, op->err, op->result);
            break;
        case STORE_OP_AUDIT:
            if (op->err != 0) {
                op->audit_cb(op->arg, op->err, NULL);
            } else {
                const struct store_audit_done d = {
                    .seq = op->result,
                    .occurrence = op->value,
                    .run_request_id = op->value > 1 ? op->request_id : "",
                };
                op->audit_cb(op->arg, 0, &d);
            }
            break;
        case STORE_OP_UPLOAD_PUT:
        case STORE_OP_UPLOAD_DEL:
            op->upload_cb(op->arg, op->err);
            break;
        default:
            break;
        }
        free(op);
        n++;
        op = next;
    }
    return n;
}
