#define LOG_MODULE "upload"
#include "gateway/proxy/upload.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "common/buf.h"
#include "common/log.h"
#include "gateway/base/config.h"
#include "gateway/s3/s3req.h"
#include "gateway/s3/s3xml.h"
#include "gateway/s3client/s3client.h"
#include "store/store.h"

/* One background abort of a stale upload. */
struct reap_op {
    struct gw_upload *u;               /* owner */
    struct gw_s3client_op *call;       /* the DELETE in flight; NULL before start */
    char lock[STORE_LOCK_MAX + 1];     /* the upload's lock */
    char id[STORE_UPLOAD_ID_MAX + 1];  /* its upload id */
    uint64_t epoch;                    /* the epoch that created it */
    char bucket[STORE_BUCKET_MAX + 1]; /* its bucket */
    char key[STORE_KEY_MAX + 1];       /* its key */
    LIST_ENTRY(reap_op) link;          /* in u->ops, or a start list */
};

LIST_HEAD(reap_list, reap_op);

/* A recorded upload whose creation may have raced an advance.  Until the
 * store has it, lookups find it here (the client may use the upload id as soon
 * as it has the answer). */
struct put_ctx {
    struct gw_upload *u;              /* owner */
    char lock[STORE_LOCK_MAX + 1];    /* the lock */
    char id[STORE_UPLOAD_ID_MAX + 1]; /* the upload id */
    uint64_t epoch;                   /* the creating epoch */
    bool gone;                        /* completed or aborted since: lookups skip it */
    LIST_ENTRY(put_ctx) link;         /* in u->puts */
};

LIST_HEAD(put_list, put_ctx);

/*
 * Threads (DESIGN "Worker loops"): every loop calls gw_upload_claim,
 * gw_upload_check and gw_upload_response on one shared object; the store's
 * callbacks (on_put), the fence's gw_upload_on_advance, the background
 * aborts and gw_upload_set_config / gw_upload_free run on the control loop.
 * mu guards puts, pending, closing and cfg.  It is held for a walk of puts
 * and for the store calls made with it, which are quick: an LMDB read is a
 * read of the memory map (no disk wait, no writer lock), and a write only
 * queues the change for the store's writer thread.  It is never held across
 * a call into another module that may call back (the S3 client), nor while
 * a callback of ours runs.  ops and nops are the control loop's alone.
 */
struct gw_upload {
    pthread_mutex_t mu;          /* see above */
    struct store *st;            /* borrowed; thread-safe calls */
    struct gw_s3client *s3c;     /* borrowed; the aborts (control loop) */
    const struct gw_config *cfg; /* borrowed; in force (mu) */
    struct reap_list ops;        /* aborts in flight (control loop) */
    unsigned nops;               /* their number (control loop) */
    unsigned pending;            /* store callbacks outstanding (they hold u) (mu) */
    struct put_list puts;        /* recorded creations the store has not committed yet (mu) */
    bool closing;                /* gw_upload_free ran: the last callback frees (mu) */
};

struct gw_upload *
gw_upload_new(struct store *st, struct gw_s3client *s3c, const struct gw_config *cfg)
{
    struct gw_upload *u = calloc(1, sizeof(*u));
    if (u == NULL) {
        return NULL;
    }
    if (pthread_mutex_init(&u->mu, NULL) != 0) {
        free(u);
        return NULL;
    }
    u->st = st;
    u->s3c = s3c;
    u->cfg = cfg;
    LIST_INIT(&u->ops);
    LIST_INIT(&u->puts);
    return u;
}

void
gw_upload_set_config(struct gw_upload *u, const struct gw_config *cfg)
{
    (void)pthread_mutex_lock(&u->mu);
    u->cfg = cfg;
    (void)pthread_mutex_unlock(&u->mu);
}

static void
really_free(struct gw_upload *u)
{
    (void)pthread_mutex_destroy(&u->mu);
    free(u);
}

void
gw_upload_free(struct gw_upload *u)
{
    if (u == NULL) {
        return;
    }
    while (!LIST_EMPTY(&u->ops)) {
        struct reap_op *op = LIST_FIRST(&u->ops);
        LIST_REMOVE(op, link);
        gw_s3client_cancel(op->call);
        free(op);
    }
    u->nops = 0;
    (void)pthread_mutex_lock(&u->mu);
    bool owed = u->pending > 0;
    u->closing = true; /* the store still owes callbacks: the last one frees */
    (void)pthread_mutex_unlock(&u->mu);
    if (!owed) {
        really_free(u);
    }
}

bool
gw_upload_tracked(const struct gw_s3req *s3)
{
    return s3->op == GW_S3_OP_CREATE_MULTIPART || s3->op == GW_S3_OP_COMPLETE_MULTIPART ||
           s3->op == GW_S3_OP_ABORT_MULTIPART;
}

static int
upload_id_of(const char *query, char *id, size_t len)
{
    return gw_s3req_query_get(query, "uploadId", id, len);
}

static bool
in_upload(const struct gw_s3req *s3)
{
    return s3->op == GW_S3_OP_UPLOAD_PART || s3->op == GW_S3_OP_UPLOAD_PART_COPY ||
           s3->op == GW_S3_OP_COMPLETE_MULTIPART || s3->op == GW_S3_OP_ABORT_MULTIPART;
}

/* The record of the request's upload: 0, ERR_NOTFOUND (none we know of), ERR_IO.
 * Any loop; takes mu for the walk and the store's read (a memory-map read). */
static int
lookup(struct gw_upload *u, const char *lock, const struct gw_s3req *s3, const char *query,
       struct store_upload *rec)
{
    char id[STORE_UPLOAD_ID_MAX + 1];
    if (!in_upload(s3) || upload_id_of(query, id, sizeof(id)) != 0 || id[0] == '\0') {
        return ERR_NOTFOUND; /* not one we could have recorded: the upstream decides */
    }
    (void)pthread_mutex_lock(&u->mu);
    const struct put_ctx *pc;
    LIST_FOREACH (pc, &u->puts, link) {
        if (!pc->gone && strcmp(pc->id, id) == 0 && strcmp(pc->lock, lock) == 0) {
            rec->epoch = pc->epoch; /* recorded, not committed yet */
            (void)pthread_mutex_unlock(&u->mu);
            return 0;
        }
    }
    /* under mu: a creation leaves puts (on_put) only once the store has it */
    int rc = store_upload_get(u->st, lock, id, rec);
    (void)pthread_mutex_unlock(&u->mu);
    if (rc == ERR_NOTFOUND || rc == ERR_INVAL) {
        return ERR_NOTFOUND; /* created unfenced, before this table, or under another lock */
    }
    return rc != 0 ? ERR_IO : 0;
}

int
gw_upload_claim(struct gw_upload *u, const char *lock, const struct gw_s3req *s3, const char *query,
                uint64_t *epoch)
{
    struct store_upload rec;
    int rc = lookup(u, lock, s3, query, &rec);
    if (rc == 0) {
        *epoch = rec.epoch;
    }
    return rc;
}

int
gw_upload_check(struct gw_upload *u, const char *lock, uint64_t token, const struct gw_s3req *s3,
                const char *query, uint64_t *created)
{
    struct store_upload rec;
    int rc = lookup(u, lock, s3, query, &rec);
    if (rc == ERR_NOTFOUND) {
        return 0;
    }
    if (rc != 0) {
        return rc;
    }
    bool newer_abort = s3->op == GW_S3_OP_ABORT_MULTIPART && rec.epoch < token;
    if (rec.epoch != token && !newer_abort) {
        *created = rec.epoch;
        return ERR_FENCED;
    }
    return 0;
}

/* store_upload_done_fn: a recorded creation is durable; if the lock moved on
 * meanwhile (the answer raced an advance), reap at once rather than at the
 * next advance.  Control loop (the store's completions), while workers may be
 * in lookup or record: mu held for the list. */
static void
on_put(void *arg, int err)
{
    struct put_ctx *pc = arg;
    struct gw_upload *u = pc->u;
    (void)pthread_mutex_lock(&u->mu);
    u->pending--;
    LIST_REMOVE(pc, link);
    bool closing = u->closing;
    bool last = closing && u->pending == 0;
    (void)pthread_mutex_unlock(&u->mu);
    if (closing) { /* gw_upload_free ran: no worker calls any more */
        if (last) {
            really_free(u);
        }
        free(pc);
        return;
    }
    struct store_fence f;
    if (err != 0) {
        log_warn("lock %s: upload of epoch %llu not recorded: %s", pc->lock,
                 (unsigned long long)pc->epoch, err_str(err));
    } else if (store_fence_get(u->st, pc->lock, &f, NULL) == 0 && f.token > pc->epoch) {
        gw_upload_on_advance(u, pc->lock, f.token);
    }
    free(pc);
}

static void
record(struct gw_upload *u, const char *lock, uint64_t token, const struct gw_s3req *s3,
       const char *id)
{
    struct put_ctx *pc = calloc(1, sizeof(*pc));
    if (pc == NULL) {
        log_error("lock %s: upload %s not recorded: out of memory", lock, id);
        return;
    }
    pc->u = u;
    pc->epoch = token;
    str_copy(pc->lock, sizeof(pc->lock), lock);
    str_copy(pc->id, sizeof(pc->id), id);
    /* mu held across the queuing: on_put (control loop) may run as soon as it
     * is queued, and must find pc listed */
    (void)pthread_mutex_lock(&u->mu);
    int rc = store_upload_put(u->st, lock, id, token, s3->bucket, s3->key, on_put, pc);
    if (rc == 0) {
        u->pending++;
        LIST_INSERT_HEAD(&u->puts, pc, link);
    }
    (void)pthread_mutex_unlock(&u->mu);
    if (rc != 0) {
        log_warn("lock %s: upload %.64s of epoch %llu not recorded: %s", lock, id,
                 (unsigned long long)token, err_str(rc));
        free(pc);
        return;
    }
    log_debug("lock %s: upload %.64s created by epoch %llu", lock, id, (unsigned long long)token);
}

static void
forget(struct gw_upload *u, const char *lock, const char *query)
{
    char id[STORE_UPLOAD_ID_MAX + 1];
    if (upload_id_of(query, id, sizeof(id)) != 0 || id[0] == '\0') {
        return;
    }
    (void)pthread_mutex_lock(&u->mu);
    struct put_ctx *pc;
    LIST_FOREACH (pc, &u->puts, link) {
        if (strcmp(pc->id, id) == 0 && strcmp(pc->lock, lock) == 0) {
            pc->gone = true; /* the delete below is queued after its put */
        }
    }
    /* queued under mu: after any put record() queued for this id */
    int rc = store_upload_del(u->st, lock, id, NULL, NULL);
    (void)pthread_mutex_unlock(&u->mu);
    if (rc != 0 && rc != ERR_INVAL) {
        log_warn("lock %s: ended upload %.64s not forgotten: %s", lock, id, err_str(rc));
    }
}

void
gw_upload_response(struct gw_upload *u, const char *lock, uint64_t token, const struct gw_s3req *s3,
                   const char *query, int status, struct gw_s3xml *tap)
{
    bool parsed = tap != NULL && gw_s3xml_finish(tap) == 0;
    switch (s3->op) {
    case GW_S3_OP_CREATE_MULTIPART:
        if (status == 200 && parsed && gw_s3xml_root(tap) == GW_S3XML_ROOT_INITIATE &&
            gw_s3xml_upload_id(tap) != NULL) {
            record(u, lock, token, s3, gw_s3xml_upload_id(tap));
        }
        break;
    case GW_S3_OP_COMPLETE_MULTIPART:
        /* S3 may answer 200 with an Error document: then nothing was completed */
        if (status == 200 && parsed && gw_s3xml_root(tap) != GW_S3XML_ROOT_ERROR) {
            forget(u, lock, query);
        }
        break;
    case GW_S3_OP_ABORT_MULTIPART:
        if (status == 204 || status == 200 || status == 404) {
            forget(u, lock, query);
        }
        break;
    default:
        break;
    }
}

/* ---- background aborts ---- */

static void
op_end(struct reap_op *op)
{
    struct gw_upload *u = op->u;
    LIST_REMOVE(op, link);
    u->nops--;
    free(op);
}

/* gw_s3client_cbs.on_done */
static void
on_reap_done(void *arg, int err, int status, const char *code)
{
    struct reap_op *op = arg;
    op->call = NULL;
    /* 404 NoSuchUpload: already completed or aborted; either way nothing is left */
    if (err == 0 && (status == 204 || status == 200 || status == 404)) {
        log_info("lock %s: aborted upload %.64s of epoch %llu (%s/%.200s): %d", op->lock, op->id,
                 (unsigned long long)op->epoch, op->bucket, op->key, status);
        int rc = store_upload_del(op->u->st, op->lock, op->id, NULL, NULL);
        if (rc != 0) {
            log_warn("lock %s: aborted upload %.64s not forgotten: %s", op->lock, op->id,
                     err_str(rc));
        }
    } else {
        log_warn("lock %s: abort of upload %.64s failed (%s, status %d %s); retried at the next "
                 "advance",
                 op->lock, op->id, err_str(err), status, code != NULL ? code : "");
    }
    op_end(op);
}

static const struct gw_s3client_cbs reap_cbs = {
    .on_done = on_reap_done,
};

struct collect {
    struct gw_upload *u;    /* owner */
    const char *lock;       /* the lock listed */
    struct reap_list found; /* new candidates */
    unsigned room;          /* how many more may start */
    int err;                /* ERR_NOMEM if a candidate could not be kept */
};

static bool
in_flight(const struct gw_upload *u, const char *lock, const char *id)
{
    const struct reap_op *op;
    LIST_FOREACH (op, &u->ops, link) {
        if (strcmp(op->lock, lock) == 0 && strcmp(op->id, id) == 0) {
            return true;
        }
    }
    return false;
}

/* store_upload_each_fn: runs inside a read transaction; only copies. */
static int
on_older(void *arg, const char *upload_id, const struct store_upload *rec)
{
    struct collect *c = arg;
    if (in_flight(c->u, c->lock, upload_id)) {
        return 0;
    }
    struct reap_op *op = calloc(1, sizeof(*op));
    if (op == NULL) {
        c->err = ERR_NOMEM;
        return 1;
    }
    op->u = c->u;
    op->epoch = rec->epoch;
    str_copy(op->lock, sizeof(op->lock), c->lock);
    str_copy(op->id, sizeof(op->id), upload_id);
    str_copy(op->bucket, sizeof(op->bucket), rec->bucket);
    str_copy(op->key, sizeof(op->key), rec->key);
    LIST_INSERT_HEAD(&c->found, op, link);
    return --c->room == 0 ? 1 : 0;
}

void
gw_upload_on_advance(void *arg, const char *lock, uint64_t highest)
{
    struct gw_upload *u = arg;
    if (u == NULL) {
        return;
    }
    (void)pthread_mutex_lock(&u->mu);
    bool off = u->closing || !u->cfg->fencing.abort_stale_uploads;
    (void)pthread_mutex_unlock(&u->mu);
    if (off || u->nops >= GW_UPLOAD_REAP_MAX) {
        return; /* a full pipe: what is left waits for the lock's next advance */
    }
    struct collect c = {.u = u, .lock = lock, .room = GW_UPLOAD_REAP_MAX - u->nops};
    LIST_INIT(&c.found);
    /* the limit counts entries already in flight too: ask for enough */
    int rc = store_upload_list_older(u->st, lock, highest, 2 * GW_UPLOAD_REAP_MAX, on_older, &c);
    if (rc != 0 || c.err != 0) {
        log_warn("lock %s: stale uploads not listed: %s", lock, err_str(rc != 0 ? rc : c.err));
    }
    while (!LIST_EMPTY(&c.found)) {
        struct reap_op *op = LIST_FIRST(&c.found);
        LIST_REMOVE(op, link);
        LIST_INSERT_HEAD(&u->ops, op, link);
        u->nops++;
        rc =
            gw_s3client_abort_upload(u->s3c, op->bucket, op->key, op->id, &reap_cbs, op, &op->call);
        if (rc != 0) {
            log_warn("lock %s: abort of upload %.64s not started: %s", lock, op->id, err_str(rc));
            op_end(op);
        }
    }
}
