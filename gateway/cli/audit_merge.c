#include "gateway/cli/audit_merge.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/num.h"

/* Records fetched from one store per page: bounds memory to
 * GW_AUDIT_MERGE_MAX * PAGE copies (about 2 KiB each) whatever the limit. */
#define PAGE 64

/* One record copied out of its store: query views die with the callback.
 * The arrays hold the store's caps, so nothing is truncated again. */
struct mrec {
    struct store_audit_rec rec;              /* strings point into the arrays below */
    char lock[STORE_LOCK_MAX + 1];           /* rec.lock */
    char principal[STORE_PRINCIPAL_MAX + 1]; /* rec.principal */
    char client[STORE_CLIENT_MAX + 1];       /* rec.client */
    char method[STORE_METHOD_MAX + 1];       /* rec.method */
    char bucket[STORE_BUCKET_MAX + 1];       /* rec.bucket */
    char key[STORE_KEY_MAX + 1];             /* rec.key */
    char operation[STORE_OPERATION_MAX + 1]; /* rec.operation */
    char request_id[STORE_REQID_MAX + 1];    /* rec.request_id */
    char user_agent[STORE_UA_MAX + 1];       /* rec.user_agent */
    char trace_id[STORE_TRACE_MAX + 1];      /* rec.trace_id */
};

/* One store's side of the merge. */
struct source {
    struct store *s;                 /* borrowed */
    struct mrec *page;               /* owned; PAGE records */
    size_t n;                        /* records in page */
    size_t pos;                      /* next record of page to hand out */
    struct store_audit_cursor after; /* where the next page starts */
    bool more;                       /* the store holds matching records past after */
};

static void
copy_str(char *dst, size_t cap, const char *s)
{
    str_copy(dst, cap, s != NULL ? s : "");
}

/* store_audit_each_fn: copy one record into the source's page. */
static int
on_page_rec(void *arg, const struct store_audit_rec *r)
{
    struct source *src = arg;
    struct mrec *m = &src->page[src->n++];
    copy_str(m->lock, sizeof(m->lock), r->lock);
    copy_str(m->principal, sizeof(m->principal), r->principal);
    copy_str(m->client, sizeof(m->client), r->client);
    copy_str(m->method, sizeof(m->method), r->method);
    copy_str(m->bucket, sizeof(m->bucket), r->bucket);
    copy_str(m->key, sizeof(m->key), r->key);
    copy_str(m->operation, sizeof(m->operation), r->operation);
    copy_str(m->request_id, sizeof(m->request_id), r->request_id);
    copy_str(m->user_agent, sizeof(m->user_agent), r->user_agent);
    copy_str(m->trace_id, sizeof(m->trace_id), r->trace_id);
    m->rec = *r;
    m->rec.lock = m->lock;
    m->rec.principal = m->principal;
    m->rec.client = m->client;
    m->rec.method = m->method;
    m->rec.bucket = m->bucket;
    m->rec.key = m->key;
    m->rec.operation = m->operation;
    m->rec.request_id = m->request_id;
    m->rec.user_agent = m->user_agent;
    m->rec.trace_id = m->trace_id;
    return 0;
}

/* Fetch the source's next page if it has handed out the last one and the
 * store holds more.  Returns 0 or store_audit_query's error. */
static int
refill(struct source *src, const struct store_audit_query *q, uint32_t page)
{
    if (src->pos < src->n || !src->more) {
        return 0;
    }
    struct store_audit_query pq = *q;
    pq.limit = page;
    pq.after = src->after;
    struct store_audit_cursor next;
    src->n = 0;
    src->pos = 0;
    int err = store_audit_query(src->s, &pq, on_page_rec, src, &next);
    if (err != 0) {
        return err;
    }
    src->more = next.set;
    if (src->n > 0) {
        const struct store_audit_rec *last = &src->page[src->n - 1].rec;
        src->after =
            (struct store_audit_cursor){.set = true, .time_ms = last->time_ms, .seq = last->seq};
    }
    return 0;
}

/* Where store i resumes after the merged position c, which lies in store
 * c->source: the merged order is (time, source, seq), and the store's cursor
 * means "after (time, seq)", so a seq of UINT64_MAX means "after that
 * millisecond" (store_audit_query moves on to the next one). */
static struct store_audit_cursor
resume_at(const struct gw_audit_merge_cursor *c, size_t i)
{
    struct store_audit_cursor a = {.set = false};
    if (!c->set) {
        return a;
    }
    if (i == c->source) {
        return (struct store_audit_cursor){.set = true, .time_ms = c->time_ms, .seq = c->seq};
    }
    if (i < c->source) {
        /* its records at c->time_ms came before c: resume past them */
        return (struct store_audit_cursor){.set = true, .time_ms = c->time_ms, .seq = UINT64_MAX};
    }
    if (c->time_ms > 0) {
        /* its records at c->time_ms come after c: resume at that millisecond */
        return (struct store_audit_cursor){
            .set = true, .time_ms = c->time_ms - 1, .seq = UINT64_MAX};
    }
    return a; /* c at time 0: every record of a later store follows it */
}

/* Whether a (from source ia) sorts before b (from source ib). */
static bool
before(const struct store_audit_rec *a, size_t ia, const struct store_audit_rec *b, size_t ib)
{
    if (a->time_ms != b->time_ms) {
        return a->time_ms < b->time_ms;
    }
    if (ia != ib) {
        return ia < ib;
    }
    return a->seq < b->seq;
}

/* Refill every source that needs it and return the index of the one whose
 * next record comes first, or n when all are exhausted; *err on failure. */
static size_t
pick(struct source *srcs, size_t n, const struct store_audit_query *q, uint32_t page, int *err)
{
    size_t best = n;
    for (size_t i = 0; i < n; i++) {
        *err = refill(&srcs[i], q, page);
        if (*err != 0) {
            return n;
        }
        if (srcs[i].pos == srcs[i].n) {
            continue;
        }
        if (best == n ||
            before(&srcs[i].page[srcs[i].pos].rec, i, &srcs[best].page[srcs[best].pos].rec, best)) {
            best = i;
        }
    }
    return best;
}

int
gw_audit_merge_query(struct store *const *stores, size_t n, const struct store_audit_query *q,
                     const struct gw_audit_merge_cursor *after, gw_audit_merge_each_fn *fn,
                     void *arg, struct gw_audit_merge_cursor *next)
{
    /* after may be next (the usual way to page on): read it before clearing next */
    struct gw_audit_merge_cursor from = {.set = false};
    if (after != NULL) {
        from = *after;
    }
    if (next != NULL) {
        memset(next, 0, sizeof(*next));
    }
    if (n < 1 || n > GW_AUDIT_MERGE_MAX || q->limit < 1 || q->limit > STORE_AUDIT_LIMIT_MAX ||
        fn == NULL || (from.set && from.source >= n)) {
        return ERR_INVAL;
    }
    uint32_t page = q->limit < PAGE ? q->limit : PAGE;
    struct source srcs[GW_AUDIT_MERGE_MAX];
    memset(srcs, 0, sizeof(srcs));
    int err = 0;
    for (size_t i = 0; i < n; i++) {
        srcs[i].s = stores[i];
        srcs[i].after = resume_at(&from, i);
        srcs[i].more = true; /* unknown until the first page */
        srcs[i].page = calloc(page, sizeof(struct mrec));
        if (srcs[i].page == NULL) {
            err = ERR_NOMEM;
            goto done;
        }
    }
    struct gw_audit_merge_cursor last = {.set = false};
    for (uint32_t count = 0; count < q->limit; count++) {
        size_t i = pick(srcs, n, q, page, &err);
        if (err != 0) {
            goto done;
        }
        if (i == n) {
            goto done; /* all exhausted: no next */
        }
        const struct store_audit_rec *r = &srcs[i].page[srcs[i].pos++].rec;
        last = (struct gw_audit_merge_cursor){
            .set = true, .time_ms = r->time_ms, .seq = r->seq, .source = i};
        int rc = fn(arg, i, r);
        if (rc < 0) {
            err = rc;
            goto done;
        }
    }
    /* The limit was reached: more follow if any store has one left. */
    if (next != NULL && pick(srcs, n, q, page, &err) != n) {
        *next = last;
    }
done:
    for (size_t i = 0; i < n; i++) {
        free(srcs[i].page);
    }
    return err;
}

int
gw_audit_merge_cursor_format(const struct gw_audit_merge_cursor *c, char *out, size_t len)
{
    int n = snprintf(out, len, "%" PRId64 ".%" PRIu64 ".%zu", c->time_ms, c->seq, c->source + 1);
    if (n < 0 || (size_t)n >= len) {
        return ERR_TOOBIG;
    }
    return 0;
}

int
gw_audit_merge_cursor_parse(const char *s, size_t n, struct gw_audit_merge_cursor *out)
{
    const char *dot1 = strchr(s, '.');
    const char *dot2 = dot1 != NULL ? strchr(dot1 + 1, '.') : NULL;
    if (dot2 == NULL) {
        return ERR_INVAL;
    }
    uint64_t t;
    uint64_t seq;
    uint64_t src;
    if (parse_u64n(s, (size_t)(dot1 - s), 0, INT64_MAX, &t) != 0 ||
        parse_u64n(dot1 + 1, (size_t)(dot2 - dot1 - 1), 0, UINT64_MAX, &seq) != 0 ||
        parse_u64(dot2 + 1, 1, n, &src) != 0) {
        return ERR_INVAL;
    }
    out->set = true;
    out->time_ms = (int64_t)t;
    out->seq = seq;
    out->source = (size_t)(src - 1);
    return 0;
}
