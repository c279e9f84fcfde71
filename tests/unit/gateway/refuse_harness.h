/*
 * tests/unit/gateway/refuse_harness.h: the gateway/http/http.h and access.h
 * functions that gateway/proxy/refuse.c calls, stubbed, for the tests that
 * #include refuse.c (STYLE R12) and so link without the server
 * (proxy/refuse_test.c, proxy/refuse_worker_test.c).
 *
 *   struct gw_req      a request: what the test gives it (path, id, trace)
 *                      and what refuse.c did to it (the answer's status,
 *                      content type and body, aborts, notes for the access
 *                      log), with the store's committed audit records at the
 *                      moment it was answered or cut (G7)
 *   rf_bind(st)        the store those commits are counted in (NULL: none,
 *                      0) and the thread the requests belong to (the caller):
 *                      a stub run on any other counts in req->wrong_thread
 *
 * Include this header once, after gateway/proxy/refuse.c, from a *_test.c
 * only: it defines the stubbed functions.
 */
#ifndef TESTS_UNIT_GATEWAY_REFUSE_HARNESS_H
#define TESTS_UNIT_GATEWAY_REFUSE_HARNESS_H

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/http/access.h"
#include "gateway/http/http.h"
#include "gateway/s3/s3err.h"
#include "store/store.h"

struct gw_req {
    const char *path;                 /* what gw_req_path answers */
    const char *id;                   /* gw_req_id; gw_req_set_id points it at idbuf */
    char idbuf[GW_REQ_ID_MAX + 1];    /* gw_req_set_id */
    const char *trace;                /* what gw_access_trace_id answers */
    int status;                       /* gw_resp_simple: the status sent */
    char ctype[64];                   /* gw_resp_simple: the content type */
    char body[GW_S3ERR_MAX_BODY + 1]; /* gw_resp_simple: the body, NUL-terminated */
    size_t len;                       /* gw_resp_simple: the body's length */
    int calls;                        /* gw_resp_simple calls */
    int aborts;                       /* gw_resp_abort calls */
    int wrong_thread;                 /* stub calls off rf_bind's thread */
    uint64_t committed_at_end;    /* the store's committed records when it was answered or cut */
    const struct gw_req_ops *ops; /* gw_req_set_ops */
    void *ops_arg;                /* gw_req_set_ops */
    char noted_code[64];          /* gw_access_note_error */
    char noted_lock[64];          /* gw_access_note_fence */
    uint64_t noted_token;         /* gw_access_note_fence */
};

static struct store *rf_store; /* rf_bind: the store whose commits are counted */
static pthread_t rf_thread;    /* rf_bind: the requests' thread */

/* The stubs count st's committed audit records (NULL: 0); the calling thread owns the requests. */
static inline void
rf_bind(struct store *st)
{
    rf_store = st;
    rf_thread = pthread_self();
}

static inline uint64_t
rf_committed(void)
{
    struct store_stats st;
    if (rf_store == NULL) {
        return 0;
    }
    store_stats_get(rf_store, &st);
    return st.audit_appended;
}

static inline void
rf_touch(struct gw_req *req)
{
    req->wrong_thread += !pthread_equal(pthread_self(), rf_thread);
}

/* ---- gateway/http/access.h ---- */

void
gw_access_note_error(struct gw_req *req, const char *code)
{
    rf_touch(req);
    (void)snprintf(req->noted_code, sizeof(req->noted_code), "%s", code);
}

void
gw_access_note_fence(struct gw_req *req, const char *lock, uint64_t token)
{
    rf_touch(req);
    (void)snprintf(req->noted_lock, sizeof(req->noted_lock), "%s", lock != NULL ? lock : "");
    req->noted_token = token;
}

const char *
gw_access_trace_id(const struct gw_req *req)
{
    return req->trace;
}

/* ---- gateway/http/http.h ---- */

void
gw_req_set_ops(struct gw_req *req, const struct gw_req_ops *ops, void *arg)
{
    rf_touch(req);
    req->ops = ops;
    req->ops_arg = arg;
}

void
gw_resp_abort(struct gw_req *req)
{
    rf_touch(req);
    req->aborts++;
    req->committed_at_end = rf_committed();
}

const char *
gw_req_path(const struct gw_req *req)
{
    return req->path;
}

const char *
gw_req_id(const struct gw_req *req)
{
    return req->id;
}

int
gw_req_set_id(struct gw_req *req, const char *id)
{
    rf_touch(req);
    assert_true(strlen(id) <= GW_REQ_ID_MAX);
    (void)snprintf(req->idbuf, sizeof(req->idbuf), "%s", id);
    req->id = req->idbuf;
    return 0;
}

const char *
gw_req_method(const struct gw_req *req)
{
    (void)req;
    return "PUT";
}

const char *
gw_req_peer(const struct gw_req *req)
{
    (void)req;
    return "192.0.2.7:51234";
}

const char *
gw_req_header(const struct gw_req *req, const char *name)
{
    (void)req;
    return strcmp(name, "user-agent") == 0 ? "test-agent/1" : NULL;
}

void
gw_resp_simple(struct gw_req *req, int status, const char *content_type, const void *body,
               size_t len)
{
    rf_touch(req);
    req->calls++;
    req->committed_at_end = rf_committed();
    req->status = status;
    (void)snprintf(req->ctype, sizeof(req->ctype), "%s", content_type);
    assert_true(len <= GW_S3ERR_MAX_BODY);
    memcpy(req->body, body, len);
    req->body[len] = '\0';
    req->len = len;
}

#endif /* TESTS_UNIT_GATEWAY_REFUSE_HARNESS_H */
