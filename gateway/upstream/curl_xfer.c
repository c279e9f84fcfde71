/*
 * gateway/upstream/curl_xfer.c: one transfer's side of the curl engine (curl.c):
 * the callbacks libcurl calls for it (request body, response head and body,
 * with backpressure through CURL_READFUNC_PAUSE / CURL_WRITEFUNC_PAUSE), its
 * request setup (headers copied once, options on the easy handle), and
 * pause/resume.  The re-entrancy rules are in gateway/upstream/curl.c.
 */
#define LOG_MODULE "upstream"
#include "gateway/upstream/curl.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define GW_UPSTREAM_IO_BUFFER (64 * 1024L) /* libcurl's receive and upload buffers */

/* Apply x's pause state to libcurl now, or after the current libcurl call returns. */
void
gw_curl_xfer_sync_pause(struct gw_curl_xfer *x)
{
    struct gw_curl *up = x->up;
    if (!x->in_multi && !x->add_pending) {
        return; /* finished or never started: nothing to tell libcurl */
    }
    if (up->depth > 0 || !x->in_multi) {
        x->pause_dirty = true;
        gw_curl_xfer_queue_pending(x);
        return;
    }
    x->pause_dirty = false;
    up->depth++;
    /* may deliver response bytes libcurl held back, through on_write */
    CURLcode rc = curl_easy_pause(x->easy, (int)gw_curl_xfer_pause_bits(x));
    up->depth--;
    if (!x->cancelled && (rc != CURLE_OK || x->cb_err != 0)) {
        /* an error inside curl_easy_pause does not end the transfer in the multi: we do */
        x->fail_err = x->cb_err != 0 ? x->cb_err : gw_curl_xfer_result(x, rc);
        gw_curl_xfer_queue_pending(x);
    }
    gw_curl_after(up);
}

/* ---- the transfer callbacks libcurl calls ---- */

/* CURLOPT_READFUNCTION: pull request-body bytes from the caller */
static size_t
on_read(char *dst, size_t size, size_t nitems, void *arg)
{
    struct gw_curl_xfer *x = arg;
    if (x->cancelled || x->cb_err != 0) {
        return CURL_READFUNC_ABORT;
    }
    if (x->send_paused) {
        return CURL_READFUNC_PAUSE;
    }
    uint64_t left = (uint64_t)x->body_length - x->body_sent;
    size_t want = size * nitems;
    if (want > left) {
        want = (size_t)left; /* never more than the declared Content-Length */
    }
    if (want == 0) {
        return 0;
    }
    ssize_t n = x->cbs.read_body(x->arg, dst, want);
    if (x->cancelled) {
        return CURL_READFUNC_ABORT;
    }
    if (n > 0 && (size_t)n <= want) {
        x->body_sent += (uint64_t)n;
        gw_curl_xfer_touch(x);
        return (size_t)n;
    }
    if (n == ERR_AGAIN) {
        x->send_paused = true;
        return CURL_READFUNC_PAUSE;
    }
    if (n >= 0) {
        /* a body of the wrong length must not complete at the upstream: abort closes it */
        log_warn("read_body gave %zd bytes at %llu of %lld (room for %zu) -> %s", n,
                 (unsigned long long)x->body_sent, (long long)x->body_length, want,
                 err_str(ERR_INVAL));
        x->cb_err = ERR_INVAL;
    } else {
        x->cb_err = (int)n;
    }
    return CURL_READFUNC_ABORT;
}

/* CURLOPT_HEADERFUNCTION: one complete header line (status line and blank line included) */
static size_t
on_header(char *data, size_t size, size_t nitems, void *arg)
{
    struct gw_curl_xfer *x = arg;
    size_t len = size * nitems;
    if (x->cancelled || x->cb_err != 0) {
        return 0;
    }
    if (x->head_done) {
        return len; /* trailers of a chunked body: not forwarded */
    }
    gw_curl_xfer_touch(x);
    int rc = gw_upmsg_head_line(&x->head, data, len);
    if (rc == 1) {
        x->head_done = true;
        rc = x->cbs.on_head == NULL
                 ? 0
                 : x->cbs.on_head(x->arg, x->head.status, x->head.hdrs, x->head.n);
        if (x->cancelled) {
            return 0;
        }
    } else if (rc == ERR_TOOBIG || rc == ERR_UPSTREAM) {
        if (rc == ERR_TOOBIG) {
            log_warn("response head over %zu bytes -> %s", GW_UPMSG_HEAD_MAX_BYTES,
                     err_str(ERR_UPSTREAM));
        } else {
            log_warn("malformed response head -> %s", err_str(ERR_UPSTREAM));
        }
        rc = ERR_UPSTREAM;
    }
    if (rc < 0) {
        x->cb_err = rc;
        return 0;
    }
    return len;
}

/* CURLOPT_WRITEFUNCTION: response-body bytes for the caller */
static size_t
on_write(char *data, size_t size, size_t nitems, void *arg)
{
    struct gw_curl_xfer *x = arg;
    size_t len = size * nitems;
    if (x->cancelled || x->cb_err != 0) {
        return 0;
    }
    if (x->recv_paused) {
        /* not delivered yet (the rest of a buffer after we paused): libcurl keeps it */
        return CURL_WRITEFUNC_PAUSE;
    }
    if (len == 0) {
        return 0;
    }
    if (!x->head_done) {
        log_warn("response body before its head -> %s", err_str(ERR_UPSTREAM));
        x->cb_err = ERR_UPSTREAM;
        return 0;
    }
    gw_curl_xfer_touch(x);
    int rc = x->cbs.on_body != NULL ? x->cbs.on_body(x->arg, data, len) : 0;
    if (x->cancelled) {
        return 0;
    }
    if (rc == ERR_AGAIN) {
        /* consumed; pause receiving from here (libcurl allows this inside the callback) */
        x->recv_paused = true;
        CURLcode pc = curl_easy_pause(x->easy, (int)gw_curl_xfer_pause_bits(x));
        if (pc != CURLE_OK) {
            log_error("curl_easy_pause: %s", curl_easy_strerror(pc));
            x->cb_err = ERR_UPSTREAM;
            return 0;
        }
        return len;
    }
    if (rc < 0) {
        x->cb_err = rc;
        return 0;
    }
    return len;
}

/* ---- request setup ---- */

static int
slist_reserve(struct gw_curl_xfer *x, size_t n)
{
    if (n <= x->slist_cap) {
        return 0;
    }
    size_t cap = x->slist_cap != 0 ? x->slist_cap : 16;
    while (cap < n) {
        cap *= 2;
    }
    struct curl_slist *s = realloc(x->slist, cap * sizeof(*s));
    if (s == NULL) {
        return ERR_NOMEM;
    }
    x->slist = s;
    x->slist_cap = cap;
    return 0;
}

/*
 * Copy the caller's headers into x->rqbuf and chain x->slist over them.
 * "Name:" with an empty value becomes "Name;" (libcurl's spelling for "send
 * it empty"; "Name:" would delete the header).  "Accept:", "Expect:" and
 * "Transfer-Encoding:" are added unless given, so libcurl adds none of its own.
 */
static int
build_headers(struct gw_curl_xfer *x, const struct gw_xfer_req *rq)
{
    static const char *const quiet[] = {"Accept:", "Expect:", "Transfer-Encoding:"};
    bool given[3] = {false, false, false};
    size_t n = 0;
    buf_reset(&x->rqbuf);
    for (size_t i = 0; i < rq->nheaders; i++) {
        const char *h = rq->headers[i];
        if (h == NULL) {
            return ERR_INVAL;
        }
        bool empty = false;
        enum gw_upmsg_req_hdr kind = GW_UPMSG_REQ_HDR_OTHER;
        int err = gw_upmsg_req_header_check(h, rq->body_length, &kind, &empty);
        if (err != 0) {
            return err;
        }
        if (kind < 3) {
            given[kind] = true; /* kind indexes quiet[] */
        }
        if (empty) {
            err = buf_append(&x->rqbuf, h, (size_t)(strchr(h, ':') - h));
            if (err == 0) {
                err = buf_append(&x->rqbuf, ";", 2);
            }
        } else {
            err = buf_append(&x->rqbuf, h, strlen(h) + 1);
        }
        if (err != 0) {
            return err == ERR_NOMEM ? ERR_NOMEM : ERR_INVAL;
        }
        n++;
    }
    for (size_t i = 0; i < 3; i++) {
        if (!given[i]) {
            if (buf_append(&x->rqbuf, quiet[i], strlen(quiet[i]) + 1) != 0) {
                return ERR_NOMEM;
            }
            n++;
        }
    }
    if (slist_reserve(x, n) != 0) {
        return ERR_NOMEM;
    }
    char *p = x->rqbuf.data;
    for (size_t i = 0; i < n; i++) {
        x->slist[i].data = p;
        x->slist[i].next = i + 1 < n ? &x->slist[i + 1] : NULL;
        p += strlen(p) + 1;
    }
    return 0;
}

#define SETOPT(opt, val)                                                                           \
    do {                                                                                           \
        CURLcode rc_ = curl_easy_setopt(e, opt, val);                                              \
        if (rc_ != CURLE_OK) {                                                                     \
            log_error("curl_easy_setopt(%s): %s", #opt, curl_easy_strerror(rc_));                  \
            return rc_ == CURLE_OUT_OF_MEMORY ? ERR_NOMEM : ERR_INVAL;                             \
        }                                                                                          \
    } while (0)

static int
setup_easy(struct gw_curl_xfer *x, const struct gw_xfer_req *rq)
{
    CURL *e = x->easy;
    const struct gw_upstream_opts *o = &x->up->pub.opts;
    SETOPT(CURLOPT_PRIVATE, (void *)x);
    SETOPT(CURLOPT_ERRORBUFFER, x->errbuf);
    SETOPT(CURLOPT_URL, rq->url);
    SETOPT(CURLOPT_PATH_AS_IS, 1L); /* S3 keys a/../b and a//b are keys of their own */
    SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
    SETOPT(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    SETOPT(CURLOPT_CUSTOMREQUEST, rq->method);
    SETOPT(CURLOPT_HTTPHEADER, x->slist);
    SETOPT(CURLOPT_NOSIGNAL, 1L);
    SETOPT(CURLOPT_PROXY, ""); /* no proxy from the environment */
    SETOPT(CURLOPT_FOLLOWLOCATION, 0L);
    SETOPT(CURLOPT_HTTP_CONTENT_DECODING, 0L); /* bodies pass through as stored */
    SETOPT(CURLOPT_HTTP_TRANSFER_DECODING, 1L);
    SETOPT(CURLOPT_TCP_KEEPALIVE, 1L);
    SETOPT(CURLOPT_BUFFERSIZE, GW_UPSTREAM_IO_BUFFER);
    SETOPT(CURLOPT_UPLOAD_BUFFERSIZE, GW_UPSTREAM_IO_BUFFER);
    if (o->connect_timeout_ms != 0) {
        SETOPT(CURLOPT_CONNECTTIMEOUT_MS, (long)o->connect_timeout_ms);
    }
    SETOPT(CURLOPT_SSL_VERIFYPEER, o->tls_verify ? 1L : 0L);
    SETOPT(CURLOPT_SSL_VERIFYHOST, o->tls_verify ? 2L : 0L);
    if (o->ca_file != NULL) {
        SETOPT(CURLOPT_CAINFO, o->ca_file);
    }
    SETOPT(CURLOPT_HEADERFUNCTION, on_header);
    SETOPT(CURLOPT_HEADERDATA, (void *)x);
    SETOPT(CURLOPT_WRITEFUNCTION, on_write);
    SETOPT(CURLOPT_WRITEDATA, (void *)x);
    if (strcmp(rq->method, "HEAD") == 0) {
        SETOPT(CURLOPT_NOBODY, 1L); /* do not wait for the body a Content-Length announces */
    }
    SETOPT(CURLOPT_FORBID_REUSE, rq->no_reuse ? 1L : 0L); /* the handle may be reused */
    if (rq->body_length >= 0) {
        SETOPT(CURLOPT_UPLOAD, 1L);
        SETOPT(CURLOPT_INFILESIZE_LARGE, (curl_off_t)rq->body_length);
        SETOPT(CURLOPT_READFUNCTION, on_read);
        SETOPT(CURLOPT_READDATA, (void *)x);
    }
    return 0;
}

int
gw_curl_xfer_setup(struct gw_curl_xfer *x, const struct gw_xfer_req *rq)
{
    int err = build_headers(x, rq);
    if (err == 0) {
        err = setup_easy(x, rq);
    }
    return err;
}

/* ---- the API ---- */

void
gw_curl_resume_send(struct gw_curl_xfer *x)
{
    if (x == NULL || x->cancelled || x->finishing || !x->send_paused) {
        return;
    }
    x->send_paused = false;
    gw_curl_xfer_touch(x);
    gw_curl_xfer_arm_idle(x, x->up->pub.opts.timeout_ms);
    gw_curl_xfer_sync_pause(x);
}

void
gw_curl_resume_recv(struct gw_curl_xfer *x)
{
    if (x == NULL || x->cancelled || x->finishing || !x->recv_paused) {
        return;
    }
    x->recv_paused = false;
    gw_curl_xfer_touch(x);
    gw_curl_xfer_arm_idle(x, x->up->pub.opts.timeout_ms);
    gw_curl_xfer_sync_pause(x);
}

uint64_t
gw_curl_body_sent(const struct gw_curl_xfer *x)
{
    return x != NULL ? x->body_sent : 0;
}
