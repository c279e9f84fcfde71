/* gateway/upstream/trailer_probe.c: the start-up probe for checksum trailers (see trailer_probe.h).
 */
#define LOG_MODULE "trailers"
#include "gateway/upstream/trailer_probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "common/log.h"
#include "common/rand.h"
#include "election/backend.h"
#include "gateway/s3/checksum.h"
#include "gateway/s3/chunk_enc.h"
#include "gateway/s3/sigv4.h"
#include "gateway/upstream/elect_s3.h"

#define PROBE_BACKOFF_MIN_MS 1000
#define PROBE_BACKOFF_MAX_MS 300000

static const char PROBE_PAYLOAD[] = "fencegate checksum-trailer probe: this object is deleted";

struct gw_trailer_probe {
    struct event_base *base;
    struct elect_backend *be; /* borrowed */
    struct event *timer;      /* retry */
    gw_trailer_probe_done_fn *done;
    void *arg;
    char *prefix;                /* owned */
    char key[ELECT_KEY_MAX + 1]; /* this attempt's object */
    uint32_t backoff_ms;
};

static void attempt(struct gw_trailer_probe *p);

static void
on_deleted(void *arg, int err)
{
    struct gw_trailer_probe *p = arg;
    if (err != 0) {
        log_warn("probe object %s not deleted: %s", p->key, err_str(err));
    }
}

/* Best-effort delete of this attempt's object. */
static void
cleanup(struct gw_trailer_probe *p)
{
    int err = elect_backend_del(p->be, p->key, on_deleted, p);
    if (err != 0) {
        log_warn("probe object %s not deleted: %s", p->key, err_str(err));
    }
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

static void
on_read(void *arg, int err, const char *body, size_t len, const struct elect_obj_meta *meta)
{
    struct gw_trailer_probe *p = arg;
    (void)meta;
    if (err != 0) {
        cleanup(p);
        retry(p, "reading the probe object back", err);
        return;
    }
    if (len == sizeof(PROBE_PAYLOAD) - 1 && memcmp(body, PROBE_PAYLOAD, len) == 0) {
        answer(p, true, "probe stored and read back");
    } else {
        log_error("the upstream accepted an aws-chunked upload but stored %zu bytes that are not "
                  "its payload",
                  len);
        answer(p, false, "it stored the framing");
    }
}

static void
on_put(void *arg, int err)
{
    struct gw_trailer_probe *p = arg;
    if (err == 0) {
        int rc = elect_backend_get(p->be, p->key, on_read, p);
        if (rc != 0) {
            cleanup(p);
            retry(p, "reading the probe object back", rc);
        }
    } else if (err == ERR_INVAL || err == ERR_UNSUPPORTED || err == ERR_TOOBIG) {
        answer(p, false, "it refused the probe upload");
    } else {
        retry(p, "probe upload", err);
    }
}

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
        answer(p, false, "the election prefix is too long for a probe key");
        return;
    }
    char decoded[24];
    (void)snprintf(decoded, sizeof(decoded), "%zu", m.len);
    const struct gw_sigv4_header extra[] = {
        {"Content-Encoding", "aws-chunked"},
        {"x-amz-decoded-content-length", decoded},
        {"x-amz-trailer", gw_checksum_header_name(GW_CHECKSUM_CRC32)},
    };
    int rc = gw_elect_s3_put(p->be, p->key, body, blen, extra, sizeof(extra) / sizeof(extra[0]),
                             GW_SIGV4_STREAMING_UTRL, on_put, p);
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
gw_trailer_probe_start(struct event_base *base, struct elect_backend *be, const char *prefix,
                       gw_trailer_probe_done_fn *done, void *arg)
{
    struct gw_trailer_probe *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return NULL;
    }
    p->base = base;
    p->be = be;
    p->done = done;
    p->arg = arg;
    p->prefix = strdup(prefix);
    p->timer = evtimer_new(base, on_timer, p);
    if (p->prefix == NULL || p->timer == NULL) {
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
    free(p->prefix);
    free(p);
}
