/* gateway/s3client/cond_probe.c: the start-up probe for conditional writes (see cond_probe.h). */
#define LOG_MODULE "condprobe"
#include "gateway/s3client/cond_probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/event.h>

#include "common/buf.h"
#include "common/log.h"
#include "common/rand.h"
#include "gateway/net/net.h"
#include "gateway/s3/sigv4.h"
#include "gateway/s3client/s3client.h"

#define PROBE_BACKOFF_MIN_MS 1000
#define PROBE_BACKOFF_MAX_MS 300000
#define PROBE_KEY_MAX        1024
#define PROBE_ETAG_MAX       128
#define PROBE_SRC_MAX        (3 * PROBE_KEY_MAX + 300)
#define PROBE_XML_MAX        4096 /* CreateMultipartUpload's answer, kept for its UploadId */
#define PROBE_UPLOAD_MAX     512  /* an UploadId */

/* An ETag no object of the probe ever has (MD5s are 32 hex digits). */
#define PROBE_WRONG_ETAG "00000000000000000000000000000000"

static const char PROBE_BODY[] = "fencegate conditional-write probe: this object is deleted";

/* The steps, in order (cond_probe.h). */
enum step {
    STEP_CREATE = 0,
    STEP_INM,
    STEP_WRONG,
    STEP_QUOTED,
    STEP_BARE,
    STEP_COPY,
    STEP_MP_CREATE,   /* CreateMultipartUpload on the object's key */
    STEP_MP_PART,     /* its one part */
    STEP_MP_COMPLETE, /* CompleteMultipartUpload with If-None-Match: * (the key exists) */
    STEP_MP_ABORT,    /* the upload aborted, whatever Complete did (best effort) */
    STEP_DELETE,
    STEP_DONE,
};

struct gw_cond_probe {
    struct gw_s3client *s3c; /* borrowed */
    struct event *timer;     /* retry */
    gw_cond_probe_done_fn *done;
    void *arg;
    char *bucket;                          /* owned */
    char *prefix;                          /* owned */
    char key[PROBE_KEY_MAX + 1];           /* this attempt's object */
    char etag[PROBE_ETAG_MAX + 1];         /* its ETag (bare) */
    char src[PROBE_SRC_MAX];               /* x-amz-copy-source of it */
    char xml[PROBE_XML_MAX + 1];           /* CreateMultipartUpload's answer so far */
    size_t xml_len;                        /* its length */
    char upload[PROBE_UPLOAD_MAX + 1];     /* the probe upload's UploadId, "" if none */
    char part_etag[PROBE_ETAG_MAX + 1];    /* its part's ETag (bare) */
    char query[3 * PROBE_UPLOAD_MAX + 64]; /* the multipart steps' query */
    enum step step;                        /* the step in flight */
    struct gw_cond_caps caps;              /* what was found so far */
    struct gw_s3client_op *call;           /* the call in flight, or NULL */
    struct gw_s3client_op *del;            /* the clean-up DELETE, or NULL */
    uint32_t backoff_ms;
};

static void run(struct gw_cond_probe *p);

static void
retry(struct gw_cond_probe *p, const char *what, int err, int status)
{
    p->backoff_ms = p->backoff_ms == 0 ? PROBE_BACKOFF_MIN_MS : p->backoff_ms * 2;
    if (p->backoff_ms > PROBE_BACKOFF_MAX_MS) {
        p->backoff_ms = PROBE_BACKOFF_MAX_MS;
    }
    log_warn("conditional-write probe: %s: %s, status %d; retrying in %u ms (conditional "
             "writes are off meanwhile)",
             what, err_str(err), status, (unsigned)p->backoff_ms);
    struct timeval tv = {.tv_sec = (time_t)(p->backoff_ms / 1000),
                         .tv_usec = (suseconds_t)(p->backoff_ms % 1000) * 1000};
    if (evtimer_add(p->timer, &tv) != 0) {
        log_error("conditional-write probe: cannot arm its timer; conditional writes stay off");
    }
}

/* gw_s3client_cbs.on_done of the clean-up DELETE */
static void
on_cleaned(void *arg, int err, int status, const char *code)
{
    struct gw_cond_probe *p = arg;
    p->del = NULL;
    if (err != 0 || ((status < 200 || status >= 300) && status != 404)) {
        log_warn("probe object %s not deleted: %s %d %s", p->key, err_str(err), status,
                 code != NULL ? code : "");
    }
}

static const struct gw_s3client_cbs clean_cbs = {.on_done = on_cleaned};

static void
finish(struct gw_cond_probe *p)
{
    const struct gw_cond_caps *c = &p->caps;
    log_info("conditional-write probe: PutObject %s (If-Match %s), CopyObject %s, "
             "CompleteMultipartUpload %s, DeleteObject %s",
             c->put ? "honours conditions" : "does NOT honour conditions",
             c->quoted ? "quoted" : "bare", c->copy ? "honours them" : "ignores them",
             c->complete ? "honours them" : "ignores them",
             c->del ? "honours If-Match" : "ignores If-Match");
    const struct gw_s3client_call call = {.method = "DELETE", .bucket = p->bucket, .key = p->key};
    if (gw_s3client_start(p->s3c, &call, &clean_cbs, p, &p->del) != 0) {
        log_warn("probe object %s not deleted", p->key);
    }
    p->done(p->arg, &p->caps);
}

/* gw_s3client_cbs.on_head: the ETag of the created object, or of the upload's part */
static int
on_head(void *arg, int status, const struct gw_header *headers, size_t n)
{
    struct gw_cond_probe *p = arg;
    if ((p->step != STEP_CREATE && p->step != STEP_MP_PART) || status < 200 || status >= 300) {
        return 0;
    }
    char *dst = p->step == STEP_CREATE ? p->etag : p->part_etag;
    for (size_t i = 0; i < n; i++) {
        if (strcasecmp(headers[i].name, "etag") != 0) {
            continue;
        }
        const char *v = headers[i].value;
        size_t len = strlen(v);
        if (len >= 2 && v[0] == '"' && v[len - 1] == '"') {
            v++;
            len -= 2;
        }
        if (len == 0 || len > PROBE_ETAG_MAX || memchr(v, '"', len) != NULL) {
            return 0;
        }
        memcpy(dst, v, len);
        dst[len] = '\0';
    }
    return 0;
}

/* gw_s3client_cbs.on_body: CreateMultipartUpload's answer, kept up to its cap */
static int
on_body(void *arg, const char *data, size_t len)
{
    struct gw_cond_probe *p = arg;
    if (p->step != STEP_MP_CREATE) {
        return 0;
    }
    size_t room = PROBE_XML_MAX - p->xml_len;
    size_t n = len < room ? len : room;
    memcpy(p->xml + p->xml_len, data, n);
    p->xml_len += n;
    p->xml[p->xml_len] = '\0';
    return 0;
}

/* The UploadId in CreateMultipartUpload's answer (p->xml) into p->upload; false if none. */
static bool
take_upload_id(struct gw_cond_probe *p)
{
    static const char open_tag[] = "<UploadId>";
    const char *a = strstr(p->xml, open_tag);
    const char *b = a != NULL ? strstr(a, "</UploadId>") : NULL;
    if (b == NULL) {
        return false;
    }
    a += sizeof(open_tag) - 1;
    size_t len = (size_t)(b - a);
    if (len == 0 || len > PROBE_UPLOAD_MAX) {
        return false;
    }
    memcpy(p->upload, a, len);
    p->upload[len] = '\0';
    return true;
}

/*
 * The multipart steps: an answer that is neither 2xx nor 412 (a store without
 * multipart, an error) says nothing about conditions, but only of Complete:
 * it is reported not honoured and the probe goes on, so PutObject's verdict
 * never waits on it.  Returns the next step.
 */
static enum step
mp_step(struct gw_cond_probe *p, bool ok, bool failed, int status)
{
    enum step next = STEP_DELETE;
    switch (p->step) {
    case STEP_MP_CREATE:
        if (ok && take_upload_id(p)) {
            return STEP_MP_PART;
        }
        break;
    case STEP_MP_PART:
        if (ok && p->part_etag[0] != '\0') {
            return STEP_MP_COMPLETE;
        }
        next = STEP_MP_ABORT;
        break;
    case STEP_MP_COMPLETE:
        /* 412: the key exists, so If-None-Match: * failed and Complete was refused */
        p->caps.complete = failed;
        next = STEP_MP_ABORT;
        if (ok || failed) {
            return next;
        }
        break;
    default: /* STEP_MP_ABORT: best effort, whatever the answer */
        return STEP_DELETE;
    }
    log_warn("conditional-write probe: multipart step %d answered %d; CompleteMultipartUpload "
             "is treated as not honouring conditions",
             (int)p->step, status);
    return next;
}

/* gw_s3client_cbs.on_done of every step */
static void
on_step(void *arg, int err, int status, const char *code)
{
    struct gw_cond_probe *p = arg;
    p->call = NULL;
    bool ok = err == 0 && status >= 200 && status < 300;
    bool failed = err == 0 && status == 412; /* the condition failed: honoured */
    if (p->step >= STEP_MP_CREATE && p->step <= STEP_MP_ABORT) {
        p->step = mp_step(p, ok, failed, status);
        run(p);
        return;
    }
    if (!ok && !failed) {
        log_debug("probe step %d: %s %d %s", (int)p->step, err_str(err), status,
                  code != NULL ? code : "");
        retry(p, "a probe request was not answered 2xx or 412", err != 0 ? err : ERR_UPSTREAM,
              status);
        return;
    }
    switch (p->step) {
    case STEP_CREATE:
        if (!ok || p->etag[0] == '\0') {
            retry(p, "the probe object was not created with an ETag", ERR_UPSTREAM, status);
            return;
        }
        p->step = STEP_INM;
        break;
    case STEP_INM:
    case STEP_WRONG:
        if (ok) {
            log_warn("conditional-write probe: PutObject with a failing %s was accepted",
                     p->step == STEP_INM ? "If-None-Match: *" : "If-Match");
            p->step = STEP_DONE; /* PutObject ignores conditions: nothing else matters */
            break;
        }
        p->step = p->step == STEP_INM ? STEP_WRONG : STEP_QUOTED;
        break;
    case STEP_QUOTED:
        if (ok) {
            p->caps.put = true;
            p->caps.quoted = true;
            p->step = STEP_COPY;
        } else {
            p->step = STEP_BARE;
        }
        break;
    case STEP_BARE:
        p->caps.put = ok;
        p->step = ok ? STEP_COPY : STEP_DONE;
        if (!ok) {
            log_warn("conditional-write probe: If-Match with the object's own ETag was refused, "
                     "quoted and bare");
        }
        break;
    case STEP_COPY:
        p->caps.copy = failed;
        p->step = STEP_MP_CREATE;
        break;
    case STEP_DELETE:
        p->caps.del = failed;
        p->step = STEP_DONE;
        break;
    default:
        p->step = STEP_DONE;
        break;
    }
    run(p);
}

static const struct gw_s3client_cbs step_cbs = {
    .on_head = on_head, .on_body = on_body, .on_done = on_step};

/* The query of a multipart step ("" for the others); 0 or ERR_TOOBIG. */
static int
mp_query(struct gw_cond_probe *p)
{
    p->query[0] = '\0';
    if (p->step == STEP_MP_CREATE) {
        (void)snprintf(p->query, sizeof(p->query), "uploads");
        return 0;
    }
    if (p->step != STEP_MP_PART && p->step != STEP_MP_COMPLETE && p->step != STEP_MP_ABORT) {
        return 0;
    }
    struct buf q;
    buf_init(&q, sizeof(p->query) - 1);
    int rc = buf_printf(&q, "%suploadId=", p->step == STEP_MP_PART ? "partNumber=1&" : "");
    if (rc == 0) {
        rc = gw_s3client_encode(p->upload, false, &q);
    }
    if (rc == 0) {
        str_copy(p->query, sizeof(p->query), buf_cstr(&q));
    }
    buf_cleanup(&q);
    return rc;
}

/* Starts the call of p->step (or ends the probe). */
static void
run(struct gw_cond_probe *p)
{
    if (p->step == STEP_DONE) {
        finish(p);
        return;
    }
    char quoted[PROBE_ETAG_MAX + 3];
    (void)snprintf(quoted, sizeof(quoted), "\"%s\"", p->etag);
    struct gw_sigv4_header extra[3];
    size_t ne = 0;
    const char *method = "PUT";
    bool body = true;
    const char *data = PROBE_BODY;
    size_t data_len = sizeof(PROBE_BODY) - 1;
    char complete[PROBE_ETAG_MAX + 160];
    if (mp_query(p) != 0) {
        p->step = p->step == STEP_MP_CREATE ? STEP_DELETE : STEP_MP_ABORT;
        run(p);
        return;
    }
    switch (p->step) {
    case STEP_CREATE:
        break;
    case STEP_INM:
        extra[ne++] = (struct gw_sigv4_header){"If-None-Match", "*"};
        break;
    case STEP_WRONG:
        extra[ne++] = (struct gw_sigv4_header){"If-Match", PROBE_WRONG_ETAG};
        break;
    case STEP_QUOTED:
        extra[ne++] = (struct gw_sigv4_header){"If-Match", quoted};
        break;
    case STEP_BARE:
        extra[ne++] = (struct gw_sigv4_header){"If-Match", p->etag};
        break;
    case STEP_COPY:
        extra[ne++] = (struct gw_sigv4_header){"x-amz-copy-source", p->src};
        extra[ne++] = (struct gw_sigv4_header){"x-amz-metadata-directive", "REPLACE"};
        extra[ne++] = (struct gw_sigv4_header){"If-None-Match", "*"};
        body = false;
        break;
    case STEP_MP_CREATE:
        method = "POST";
        data_len = 0;
        break;
    case STEP_MP_PART:
        break;
    case STEP_MP_COMPLETE:
        method = "POST";
        extra[ne++] = (struct gw_sigv4_header){"If-None-Match", "*"};
        (void)snprintf(complete, sizeof(complete),
                       "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>"
                       "<ETag>\"%s\"</ETag></Part></CompleteMultipartUpload>",
                       p->part_etag);
        data = complete;
        data_len = strlen(complete);
        break;
    case STEP_MP_ABORT:
        method = "DELETE";
        body = false;
        break;
    case STEP_DELETE:
        method = "DELETE";
        extra[ne++] = (struct gw_sigv4_header){"If-Match", PROBE_WRONG_ETAG};
        body = false;
        break;
    default:
        return;
    }
    const struct gw_s3client_call call = {
        .method = method,
        .bucket = p->bucket,
        .key = p->key,
        .query = p->query[0] != '\0' ? p->query : NULL,
        .extra = extra,
        .nextra = ne,
        .body = body ? data : NULL,
        .body_len = body ? data_len : 0,
        .has_body = body,
    };
    int rc = gw_s3client_start(p->s3c, &call, &step_cbs, p, &p->call);
    if (rc != 0) {
        retry(p, "a probe request could not start", rc, 0);
    }
}

/* A fresh attempt: a new object, from the first step. */
static void
attempt(struct gw_cond_probe *p)
{
    unsigned char rnd[8];
    if (rand_bytes(rnd, sizeof(rnd)) != 0) {
        retry(p, "random probe key", ERR_NOMEM, 0);
        return;
    }
    int w = snprintf(p->key, sizeof(p->key), "%s~probe/cond-%02x%02x%02x%02x%02x%02x%02x%02x",
                     p->prefix, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
    if (w < 0 || (size_t)w >= sizeof(p->key)) {
        log_error("conditional-write probe: the prefix is too long for a probe key");
        p->step = STEP_DONE;
        p->done(p->arg, &p->caps);
        return;
    }
    struct buf src;
    buf_init(&src, sizeof(p->src) - 1);
    int rc = buf_printf(&src, "/%s/", p->bucket);
    if (rc == 0) {
        rc = gw_s3client_encode(p->key, true, &src);
    }
    if (rc != 0) {
        buf_cleanup(&src);
        retry(p, "the copy source", rc, 0);
        return;
    }
    str_copy(p->src, sizeof(p->src), buf_cstr(&src));
    buf_cleanup(&src);
    memset(&p->caps, 0, sizeof(p->caps));
    p->etag[0] = '\0';
    p->xml_len = 0;
    p->xml[0] = '\0';
    p->upload[0] = '\0';
    p->part_etag[0] = '\0';
    p->step = STEP_CREATE;
    run(p);
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    attempt(arg);
}

struct gw_cond_probe *
gw_cond_probe_start(struct event_base *base, struct gw_s3client *s3c, const char *bucket,
                    const char *prefix, gw_cond_probe_done_fn *done, void *arg)
{
    struct gw_cond_probe *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return NULL;
    }
    p->s3c = s3c;
    p->done = done;
    p->arg = arg;
    p->bucket = strdup(bucket);
    p->prefix = strdup(prefix);
    p->timer = evtimer_new(base, on_timer, p);
    if (p->bucket == NULL || p->prefix == NULL || p->timer == NULL) {
        gw_cond_probe_free(p);
        return NULL;
    }
    /* first attempt from the loop, so that done never runs inside this call */
    struct timeval now = {0, 0};
    if (evtimer_add(p->timer, &now) != 0) {
        gw_cond_probe_free(p);
        return NULL;
    }
    return p;
}

void
gw_cond_probe_free(struct gw_cond_probe *p)
{
    if (p == NULL) {
        return;
    }
    if (p->timer != NULL) {
        event_free(p->timer);
    }
    gw_s3client_cancel(p->call);
    gw_s3client_cancel(p->del);
    free(p->bucket);
    free(p->prefix);
    free(p);
}
