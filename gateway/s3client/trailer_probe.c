/* gateway/s3client/trailer_probe.c: the start-up probe for checksum trailers (see trailer_probe.h).
 */
#define LOG_MODULE "trailers"
#include "gateway/s3client/trailer_probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/event.h>

#include "common/buf.h"
#include "common/log.h"
#include "common/rand.h"
#include "gateway/s3/checksum.h"
#include "gateway/s3/chunk_enc.h"
#include "gateway/s3/sigv4.h"
#include "gateway/s3client/s3client.h"

#define PROBE_BACKOFF_MIN_MS 1000
#define PROBE_BACKOFF_MAX_MS 300000

#define PROBE_KEY_MAX  1024 /* the probe object's key */
#define PROBE_READ_MAX 4096 /* bytes of the object read back */

static const char PROBE_PAYLOAD[] = "fencegate checksum-trailer probe: this object is deleted";

/* A best-effort DELETE of one attempt's object. */
struct probe_del {
    struct gw_trailer_probe *p;  /* owner */
    struct gw_s3client_op *call; /* the DELETE in flight */
    char key[PROBE_KEY_MAX + 1]; /* its object, for the log */
    LIST_ENTRY(probe_del) link;  /* in p->dels */
};

struct gw_trailer_probe {
    struct event_base *base;
    struct gw_s3client *s3c; /* borrowed */
    struct event *timer;     /* retry */
    gw_trailer_probe_done_fn *done;
    void *arg;
    char *bucket;                /* owned */
    char *prefix;                /* owned */
    char key[PROBE_KEY_MAX + 1]; /* this attempt's object */
    struct gw_s3client_op *call; /* this attempt's PUT or GET in flight, or NULL */
    struct buf read;             /* the GET's body (cap PROBE_READ_MAX) */
    LIST_HEAD(, probe_del) dels; /* deletes in flight */
    uint32_t backoff_ms;
};

static void attempt(struct gw_trailer_probe *p);

/* gw_s3client_cbs.on_done of a DELETE */
static void
on_deleted(void *arg, int err, int status, const char *code)
{
    struct probe_del *d = arg;
    if (err != 0 || ((status < 200 || status >= 300) && status != 404)) {
        log_warn("probe object %s not deleted: %s %d %s", d->key, err_str(err), status,
                 code != NULL ? code : "");
    }
    LIST_REMOVE(d, link);
    free(d);
}

static const struct gw_s3client_cbs del_cbs = {.on_done = on_deleted};

/* Best-effort delete of this attempt's object. */
static void
cleanup(struct gw_trailer_probe *p)
{
    struct probe_del *d = calloc(1, sizeof(*d));
    int err = ERR_NOMEM;
    if (d != NULL) {
        d->p = p;
        str_copy(d->key, sizeof(d->key), p->key);
        const struct gw_s3client_call call = {
            .method = "DELETE", .bucket = p->bucket, .key = p->key};
        err = gw_s3client_start(p->s3c, &call, &del_cbs, d, &d->call);
    }
    if (err != 0) {
        log_warn("probe object %s not deleted: %s", p->key, err_str(err));
        free(d);
        return;
    }
    LIST_INSERT_HEAD(&p->dels, d, link);
}

static void
answer(struct gw_trailer_probe *p, bool supported, const char *why)
{
    log_info("upstream %s aws-chunked checksum trailers (%s): client checksum trailers are %s",
             supported ? "takes" : "does not take", why,
             supported ? "verified and forwarded as trailers" : "verified here, not forwarded");
    cleanup(p);
    p->done(p->arg, supported);
}

static void
retry(struct gw_trailer_probe *p, const char *what, int err)
{
    p->backoff_ms = p->backoff_ms == 0 ? PROBE_BACKOFF_MIN_MS : p->backoff_ms * 2;
    if (p->backoff_ms > PROBE_BACKOFF_MAX_MS) {
        p->backoff_ms = PROBE_BACKOFF_MAX_MS;
    }
    log_warn("checksum-trailer probe: %s: %s; retrying in %u ms (trailers are verified, not "
             "forwarded, meanwhile)",
             what, err_str(err), (unsigned)p->backoff_ms);
    struct timeval tv = {.tv_sec = (time_t)(p->backoff_ms / 1000),
                         .tv_usec = (suseconds_t)(p->backoff_ms % 1000) * 1000};
    if (evtimer_add(p->timer, &tv) != 0) {
        log_error("checksum-trailer probe: cannot arm its timer; trailers stay unforwarded");
    }
}

/* gw_s3client_cbs.on_body: the object read back */
static int
on_read_body(void *arg, const char *data, size_t len)
{
    struct gw_trailer_probe *p = arg;
    return buf_append(&p->read, data, len); /* ERR_TOOBIG: not our payload anyway */
}

/* gw_s3client_cbs.on_done of the GET */
static void
on_read(void *arg, int err, int status, const char *code)
{
    struct gw_trailer_probe *p = arg;
    p->call = NULL;
    if (err == ERR_TOOBIG) {
        err = 0; /* more than PROBE_READ_MAX: the framing, or something else, not the payload */
    } else if (err == 0 && status != 200) {
        log_debug("probe object %s: GET %d %s", p->key, status, code != NULL ? code : "");
        err = status == 404 ? ERR_NOTFOUND : ERR_UPSTREAM;
    }
    if (err != 0) {
        cleanup(p);
        retry(p, "reading the probe object back", err);
        return;
    }
    size_t len = p->read.len;
    if (len == sizeof(PROBE_PAYLOAD) - 1 && memcmp(p->read.data, PROBE_PAYLOAD, len) == 0) {
        answer(p, true, "probe stored and read back");
    } else {
        log_error("the upstream accepted an aws-chunked upload but stored %zu bytes that are not "
                  "its payload",
                  len);
        answer(p, false, "it stored the framing");
    }
}

static const struct gw_s3client_cbs read_cbs = {.on_body = on_read_body, .on_done = on_read};

/*
 * The PUT's answer: 0 (stored), 1 (refused: the upstream does not take the
 * form; final), or an ERR_* that says nothing (retried): no answer, 5xx, 3xx,
 * 401/403 (credentials), 404 (no bucket), 408/409/412/429, 400 RequestTimeout.
 */
static int
put_verdict(int err, int status, const char *code)
{
    if (err != 0) {
        return err;
    }
    if (status >= 200 && status < 300) {
        return 0;
    }
    switch (status) {
    case 401:
    case 403:
        return ERR_DENIED;
    case 404:
        return ERR_NOTFOUND;
    case 408:
        return ERR_TIMEOUT;
    case 409:
    case 412:
    case 429:
        return ERR_UPSTREAM;
    case 501:
        return 1;
    default:
        break;
    }
    if (status == 400 && code != NULL && strcmp(code, "RequestTimeout") == 0) {
        return ERR_TIMEOUT;
    }
    return status >= 400 && status < 500 ? 1 : ERR_UPSTREAM;
}

/* gw_s3client_cbs.on_done of the PUT */
static void
on_put(void *arg, int err, int status, const char *code)
{
    struct gw_trailer_probe *p = arg;
    p->call = NULL;
    int v = put_verdict(err, status, code);
    if (v == 0) {
        buf_reset(&p->read);
        const struct gw_s3client_call call = {.method = "GET", .bucket = p->bucket, .key = p->key};
        int rc = gw_s3client_start(p->s3c, &call, &read_cbs, p, &p->call);
        if (rc != 0) {
            cleanup(p);
            retry(p, "reading the probe object back", rc);
        }
    } else if (v == 1) {
        log_info("checksum-trailer probe: the upload was answered %d %s", status,
                 code != NULL ? code : "");
        answer(p, false, "it refused the probe upload");
    } else {
        retry(p, "probe upload", v);
    }
}

static const struct gw_s3client_cbs put_cbs = {.on_done = on_put};

/* The probe body: PROBE_PAYLOAD re-framed with its CRC-32 as the trailer. */
struct mem_src {
    const char *data;
    size_t len, off;
};

static ssize_t
mem_read(void *arg, char *dst, size_t len)
{
    struct mem_src *m = arg;
    size_t n = m->len - m->off < len ? m->len - m->off : len;
    memcpy(dst, m->data + m->off, n);
    m->off += n;
    return (ssize_t)n;
}

static int
mem_value(void *arg, char *out, size_t outlen)
{
    struct mem_src *m = arg;
    return gw_checksum_b64(GW_CHECKSUM_CRC32, m->data, m->len, out, outlen);
}

static void
attempt(struct gw_trailer_probe *p)
{
    unsigned char rnd[8];
    char body[256];
    size_t blen = 0;
    struct mem_src m = {.data = PROBE_PAYLOAD, .len = sizeof(PROBE_PAYLOAD) - 1};
    const struct gw_chunk_src src = {.read = mem_read, .value = mem_value, .arg = &m};
    struct gw_chunk_enc enc;
    gw_chunk_enc_init(&enc, m.len, GW_CHECKSUM_CRC32);
    for (;;) {
        ssize_t n = gw_chunk_enc_read(&enc, body + blen, sizeof(body) - blen, &src);
        if (n <= 0) {
            if (n < 0) {
                retry(p, "encoding the probe", (int)n);
                return;
            }
            break;
        }
        blen += (size_t)n;
    }
    if (rand_bytes(rnd, sizeof(rnd)) != 0) {
        retry(p, "random probe key", ERR_NOMEM);
        return;
    }
    int w = snprintf(p->key, sizeof(p->key), "%s~probe/trailers-%02x%02x%02x%02x%02x%02x%02x%02x",
                     p->prefix, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
    if (w < 0 || (size_t)w >= sizeof(p->key)) {
        answer(p, false, "the prefix is too long for a probe key");
        return;
    }
    char decoded[24];
    (void)snprintf(decoded, sizeof(decoded), "%zu", m.len);
    const struct gw_sigv4_header extra[] = {
        {"Content-Encoding", "aws-chunked"},
        {"x-amz-decoded-content-length", decoded},
        {"x-amz-trailer", gw_checksum_header_name(GW_CHECKSUM_CRC32)},
    };
    const struct gw_s3client_call call = {
        .method = "PUT",
        .bucket = p->bucket,
        .key = p->key,
        .extra = extra,
        .nextra = sizeof(extra) / sizeof(extra[0]),
        .body = body,
        .body_len = blen,
        .has_body = true,
        .payload_hash = GW_SIGV4_STREAMING_UTRL,
    };
    int rc = gw_s3client_start(p->s3c, &call, &put_cbs, p, &p->call);
    if (rc != 0) {
        retry(p, "probe upload", rc);
    }
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    attempt(arg);
}

struct gw_trailer_probe *
gw_trailer_probe_start(struct event_base *base, struct gw_s3client *s3c, const char *bucket,
                       const char *prefix, gw_trailer_probe_done_fn *done, void *arg)
{
    struct gw_trailer_probe *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return NULL;
    }
    p->base = base;
    p->s3c = s3c;
    p->done = done;
    p->arg = arg;
    LIST_INIT(&p->dels);
    buf_init(&p->read, PROBE_READ_MAX);
    p->bucket = strdup(bucket);
    p->prefix = strdup(prefix);
    p->timer = evtimer_new(base, on_timer, p);
    if (p->bucket == NULL || p->prefix == NULL || p->timer == NULL) {
        gw_trailer_probe_free(p);
        return NULL;
    }
    /* first attempt from the loop, so that done never runs inside this call */
    struct timeval now = {0, 0};
    if (evtimer_add(p->timer, &now) != 0) {
        gw_trailer_probe_free(p);
        return NULL;
    }
    return p;
}

void
gw_trailer_probe_free(struct gw_trailer_probe *p)
{
    if (p == NULL) {
        return;
    }
    if (p->timer != NULL) {
        event_free(p->timer);
    }
    gw_s3client_cancel(p->call);
    while (!LIST_EMPTY(&p->dels)) {
        struct probe_del *d = LIST_FIRST(&p->dels);
        LIST_REMOVE(d, link);
        gw_s3client_cancel(d->call);
        free(d);
    }
    buf_cleanup(&p->read);
    free(p->bucket);
    free(p->prefix);
    free(p);
}

bool
gw_trailer_probe_forwards(enum gw_trailers setting, bool probed, bool supported)
{
    return setting == GW_TRAILERS_FORWARD || (setting == GW_TRAILERS_AUTO && probed && supported);
}
