/*
 * gateway/http/relay.c: control-only requests served for worker loops
 * (relay.h; DESIGN "Control-only requests: the relay").
 *
 * Three messages cross, each a heap object of its own: the request (worker
 * to control; it becomes the control half of the relay when it runs), the
 * cancel (worker to control, after the request: messages from one sender
 * run in order) and the answer (control to worker, addressed to the relay's
 * endpoint).  The worker half (struct wrel) is touched only on its loop, the
 * control half (struct chalf) only on the control loop; the answer carries a
 * pointer to the worker half that the control side never dereferences.
 */
#include "gateway/http/relay.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <llhttp.h>

#include "common/buf.h"
#include "common/log.h"
#include "gateway/http/internal.h"
#include "gateway/net/loopctx.h"
#include "gateway/net/loopmsg.h"

#define RELAY_READ  16384 /* request body bytes read per call */
#define RELAY_WRITE 65536 /* answer body bytes written per call */
#define RELAY_HDRS  256   /* answer headers kept, at most (more: 502) */

struct wrel;

/* The request message; the control half of the relay once it runs. */
struct chalf {
    struct gw_loopmsg m;
    TAILQ_ENTRY(chalf) link; /* in hub->halves while the pair is open */
    struct gw_relay_hub *hub;
    struct gw_loopq *wq;         /* the worker's queue */
    uint64_t ep;                 /* the worker half's endpoint on wq */
    struct wrel *w;              /* the worker half: carried back, never touched here */
    char *data;                  /* owned: request head and body, until written */
    size_t len;                  /* their length */
    char peer[64];               /* the client's "ip:port" */
    bool is_tls;                 /* the client's connection is TLS */
    enum gw_listener listener;   /* the listener kind that accepted the client */
    char id[GW_HTTP_ID_MAX + 1]; /* the worker request's id */
    struct bufferevent *bev;     /* owned: our end of the socketpair, NULL until open */
    struct evbuffer *ans;        /* owned: the answer read so far */
};
TAILQ_HEAD(chalf_list, chalf);

struct gw_relay_hub {
    struct gw_server *srv;    /* borrowed: the control loop's server */
    struct gw_loopq *q;       /* borrowed: the control loop's queue */
    struct chalf_list halves; /* relays with an open pair */
};

/* The cancel message: the worker's client left. */
struct cancel {
    struct gw_loopmsg m;
    struct gw_relay_hub *hub;
    struct gw_loopq *wq;
    uint64_t ep;
};

/* The answer message (control to worker). */
struct answer {
    struct gw_loopmsg m;
    struct wrel *w;
    int err;    /* 0, ERR_TOOBIG (past GW_RELAY_ANSWER_MAX), ERR_CLOSED (control loop
                   gone), ERR_IO (no pair) */
    char *data; /* owned: the answer's bytes */
    size_t len;
};

/* One answer header, pointing into the answer's bytes. */
struct hspan {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
};

/* The worker half: one relayed request on its worker loop. */
struct wrel {
    struct gw_req *req;
    struct gw_relay_hub *hub;
    struct gw_loopq *q;    /* the worker's queue */
    struct gw_loopq *cq;   /* the control loop's (hub->q, copied: at a hang-up the hub
                              may be gone, the queue outlives every worker) */
    uint64_t ep;           /* endpoint of this relay on q */
    struct evbuffer *body; /* owned: the request body read so far */
    bool posted;           /* the request crossed: a cancel must follow a hang-up */
    struct answer *a;      /* owned: the answer, while its body is written */
    struct evbuffer *out;  /* owned: the answer's body left to write */
    /* parsing the answer */
    struct hspan hdr[RELAY_HDRS];
    size_t nhdr;
    bool hdr_over; /* more than RELAY_HDRS headers */
    int last_cb;   /* 1 after a field span, 2 after a value span */
    bool complete; /* on_message_complete ran */
};

/* ---- shared ---- */

static bool
name_in(const char *name, size_t len, const char *const *list)
{
    for (; *list != NULL; list++) {
        if (strlen(*list) == len && strncasecmp(name, *list, len) == 0) {
            return true;
        }
    }
    return false;
}

/* Request headers the relay frames itself, or that make no sense past the first hop. */
static const char *const req_skip[] = {
    "connection",     "keep-alive", "proxy-connection", "transfer-encoding",
    "content-length", "te",         "trailer",          "upgrade",
    "expect",         NULL};
/* Answer headers the worker's server frames itself. */
static const char *const ans_skip[] = {
    "connection",       "content-length", "transfer-encoding", "keep-alive",
    "proxy-connection", "trailer",        "upgrade",           NULL};

/* ---- control side ---- */

static void
chalf_free(struct chalf *c)
{
    if (c->bev != NULL) {
        bufferevent_free(c->bev); /* closes our end: the relayed connection sees EOF */
    }
    if (c->ans != NULL) {
        evbuffer_free(c->ans);
    }
    free(c->data);
    free(c);
}

static void answer_run(struct gw_loopmsg *m);
static void answer_cancel(struct gw_loopmsg *m, int why);

/* Post the answer (err, or the bytes read) to the worker; c's part is over. */
static void
chalf_answer(struct chalf *c, int err)
{
    struct answer *a = calloc(1, sizeof(*a));
    if (a == NULL) {
        log_warn("%s: relay: out of memory for the answer", c->id);
        return; /* the worker's client waits for its own timeout or hang-up */
    }
    a->m.run = answer_run;
    a->m.cancel = answer_cancel;
    a->m.target = c->ep;
    a->w = c->w;
    a->err = err;
    if (err == 0 && c->ans != NULL) {
        a->len = evbuffer_get_length(c->ans);
        a->data = malloc(a->len + 1);
        if (a->data == NULL) {
            a->err = ERR_NOMEM;
            a->len = 0;
        } else {
            (void)evbuffer_remove(c->ans, a->data, a->len);
        }
    }
    if (gw_loopq_post(c->wq, &a->m) != 0) {
        free(a->data); /* the worker loop is gone */
        free(a);
    }
}

/* The relay on the control side is over: answered or not, close the pair. */
static void
chalf_end(struct chalf *c, int err, bool answer)
{
    if (answer) {
        chalf_answer(c, err);
    }
    TAILQ_REMOVE(&c->hub->halves, c, link);
    chalf_free(c);
}

/* Take what arrived; false when it passed GW_RELAY_ANSWER_MAX (c is freed: 502). */
static bool
chalf_take(struct chalf *c)
{
    (void)evbuffer_add_buffer(c->ans, bufferevent_get_input(c->bev));
    if (evbuffer_get_length(c->ans) > GW_RELAY_ANSWER_MAX) {
        log_warn("%s: relay: answer past %zu bytes", c->id, GW_RELAY_ANSWER_MAX);
        chalf_end(c, ERR_TOOBIG, true);
        return false;
    }
    return true;
}

static void
chalf_on_read(struct bufferevent *bev, void *arg)
{
    (void)bev;
    (void)chalf_take(arg);
}

static void
chalf_on_event(struct bufferevent *bev, short what, void *arg)
{
    struct chalf *c = arg;
    (void)bev;
    if (what & BEV_EVENT_EOF) {
        if (chalf_take(c)) { /* what came before the EOF, then the whole answer */
            chalf_end(c, 0, true);
        }
    } else if (what & BEV_EVENT_ERROR) {
        chalf_end(c, ERR_IO, true);
    }
}

/* The request arrived on the control loop: serve it through a socketpair. */
static void
req_run(struct gw_loopmsg *m)
{
    struct chalf *c = (struct chalf *)m;
    struct gw_relay_hub *h = c->hub;
    TAILQ_INSERT_TAIL(&h->halves, c, link);
    int fd[2];
    c->ans = evbuffer_new();
    if (c->ans == NULL ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd) != 0) {
        log_warn("%s: relay: no socketpair", c->id);
        chalf_end(c, ERR_IO, true);
        return;
    }
    c->bev = bufferevent_socket_new(h->srv->base, fd[1], BEV_OPT_CLOSE_ON_FREE);
    struct bufferevent *sbev = bufferevent_socket_new(h->srv->base, fd[0], BEV_OPT_CLOSE_ON_FREE);
    if (c->bev == NULL || sbev == NULL) {
        if (c->bev == NULL) {
            (void)close(fd[1]);
        }
        if (sbev == NULL) {
            (void)close(fd[0]);
        } else {
            bufferevent_free(sbev);
        }
        chalf_end(c, ERR_IO, true);
        return;
    }
    if (gw_http_conn_relay(h->srv, sbev, c->peer, c->is_tls, c->listener, c->id) != 0) {
        chalf_end(c, ERR_IO, true);
        return;
    }
    bufferevent_setcb(c->bev, chalf_on_read, NULL, chalf_on_event, c);
    if (bufferevent_write(c->bev, c->data, c->len) != 0 ||
        bufferevent_enable(c->bev, EV_READ | EV_WRITE) != 0) {
        chalf_end(c, ERR_IO, true);
        return;
    }
    free(c->data); /* the bufferevent holds a copy */
    c->data = NULL;
}

/* The request never ran (the control loop's queue closed): the worker answers 503. */
static void
req_cancel(struct gw_loopmsg *m, int why)
{
    struct chalf *c = (struct chalf *)m;
    chalf_answer(c, why);
    chalf_free(c);
}

static void
cancel_run(struct gw_loopmsg *m)
{
    struct cancel *k = (struct cancel *)m;
    struct chalf *c;
    TAILQ_FOREACH (c, &k->hub->halves, link) {
        if (c->wq == k->wq && c->ep == k->ep) {
            chalf_end(c, 0, false); /* the relayed connection's EOF aborts its request */
            break;
        }
    }
    free(k); /* a relay already answered is no longer listed: nothing to do */
}

static void
cancel_cancel(struct gw_loopmsg *m, int why)
{
    (void)why;
    free(m);
}

struct gw_relay_hub *
gw_relay_hub_new(struct gw_server *srv, struct gw_loopq *ctlq)
{
    struct gw_relay_hub *h = calloc(1, sizeof(*h));
    if (h == NULL) {
        return NULL;
    }
    h->srv = srv;
    h->q = ctlq;
    TAILQ_INIT(&h->halves);
    return h;
}

void
gw_relay_hub_free(struct gw_relay_hub *h)
{
    if (h == NULL) {
        return;
    }
    /* freeing a pair's bufferevent runs none of its callbacks: next stays valid */
    struct chalf *c, *next;
    for (c = TAILQ_FIRST(&h->halves); c != NULL; c = next) {
        next = TAILQ_NEXT(c, link);
        chalf_end(c, ERR_CLOSED, true);
    }
    free(h);
}

/* ---- worker side ---- */

static void
wrel_free(struct wrel *w)
{
    gw_loopq_ep_close(w->q, w->ep); /* an answer on its way is cancelled and freed */
    if (w->body != NULL) {
        evbuffer_free(w->body);
    }
    if (w->out != NULL) {
        evbuffer_free(w->out);
    }
    if (w->a != NULL) {
        free(w->a->data);
        free(w->a);
    }
    free(w);
}

static void
noop_abort(struct gw_req *req, int err, void *arg)
{
    (void)req;
    (void)err;
    (void)arg;
}

/* After the relay let go of a request whose answer is queued. */
static const struct gw_req_ops done_ops = {.on_abort = noop_abort};

/* Answer req with the server's S3 XML error and let it go. */
static void
wrel_fail(struct wrel *w, int status, const char *code, const char *msg)
{
    struct gw_req *req = w->req;
    gw_req_set_ops(req, &done_ops, NULL);
    gw_http_send_error(req->conn, req, status, code, msg);
    gw_http_conn_kick(req->conn);
    wrel_free(w);
}

static void
write_more(struct wrel *w)
{
    struct gw_req *req = w->req;
    char tmp[RELAY_WRITE];
    while (evbuffer_get_length(w->out) > 0) {
        int n = evbuffer_remove(w->out, tmp, sizeof(tmp));
        if (n <= 0) {
            break;
        }
        int rc = gw_resp_body_write(req, tmp, (size_t)n);
        if (rc == ERR_AGAIN) {
            return; /* on_output_drained goes on */
        }
        if (rc != 0) {
            return; /* the client is gone: on_abort follows */
        }
    }
    gw_req_set_ops(req, &done_ops, NULL);
    gw_resp_end(req);
    wrel_free(w);
}

static void
on_output_drained(struct gw_req *req, void *arg)
{
    (void)req;
    write_more(arg);
}

/* ---- parsing the answer (llhttp, HTTP_RESPONSE) ---- */

static int
on_hfield(llhttp_t *p, const char *at, size_t len)
{
    struct wrel *w = p->data;
    struct hspan *last = w->nhdr > 0 ? &w->hdr[w->nhdr - 1] : NULL;
    if (w->last_cb == 1 && last != NULL && at == last->name + last->name_len) {
        last->name_len += len; /* one buffer: spans of a name are adjacent */
    } else if (w->nhdr < RELAY_HDRS) {
        w->hdr[w->nhdr++] =
            (struct hspan){.name = at, .name_len = len, .value = "", .value_len = 0};
    } else {
        w->hdr_over = true;
    }
    w->last_cb = 1;
    return 0;
}

static int
on_hvalue(llhttp_t *p, const char *at, size_t len)
{
    struct wrel *w = p->data;
    if (w->nhdr > 0 && !w->hdr_over) {
        struct hspan *s = &w->hdr[w->nhdr - 1];
        if (w->last_cb == 2 && at == s->value + s->value_len) {
            s->value_len += len; /* one buffer: spans of a value are adjacent */
        } else {
            s->value = at;
            s->value_len = len;
        }
    }
    w->last_cb = 2;
    return 0;
}

static int
on_hdone(llhttp_t *p)
{
    struct wrel *w = p->data;
    return w->req->is_head ? 1 : 0; /* an answer to HEAD has no body, whatever it says */
}

static int
on_abody(llhttp_t *p, const char *at, size_t len)
{
    struct wrel *w = p->data;
    return evbuffer_add(w->out, at, len) == 0 ? 0 : -1;
}

static int
on_adone(llhttp_t *p)
{
    struct wrel *w = p->data;
    w->complete = true;
    return HPE_PAUSED; /* one message: bytes after it are not ours */
}

/* Whether [p, p + len) lies in a's bytes. */
static bool
within(const struct answer *a, const char *p, size_t len)
{
    return p >= a->data && len <= a->len && (size_t)(p - a->data) <= a->len - len;
}

static void
answer_client(struct wrel *w)
{
    struct gw_req *req = w->req;
    struct answer *a = w->a;
    llhttp_settings_t st;
    llhttp_settings_init(&st);
    st.on_header_field = on_hfield;
    st.on_header_value = on_hvalue;
    st.on_headers_complete = on_hdone;
    st.on_body = on_abody;
    st.on_message_complete = on_adone;
    llhttp_t p;
    llhttp_init(&p, HTTP_RESPONSE, &st);
    p.data = w;
    w->out = evbuffer_new();
    if (w->out == NULL) {
        wrel_fail(w, 503, "ServiceUnavailable", "Out of memory.");
        return;
    }
    llhttp_errno_t e = llhttp_execute(&p, a->data, a->len);
    if (e == HPE_OK) {
        e = llhttp_finish(&p); /* a body delimited by the close */
    }
    int status = p.status_code;
    if (!w->complete || w->hdr_over || status < 200 || status > 599) {
        log_warn("%s: relay: broken answer from the control loop (%s)", req->id,
                 llhttp_errno_name(e));
        gw_req_set_ops(req, &done_ops, NULL);
        gw_resp_abort(req); /* 502 */
        wrel_free(w);
        return;
    }
    gw_resp_start(req, status);
    for (size_t i = 0; i < w->nhdr; i++) {
        struct hspan *s = &w->hdr[i];
        if (name_in(s->name, s->name_len, ans_skip)) {
            continue;
        }
        char name[256];
        if (s->name_len >= sizeof(name) || !within(a, s->name, s->name_len) ||
            (s->value_len > 0 && !within(a, s->value, s->value_len))) {
            continue;
        }
        memcpy(name, s->name, s->name_len);
        name[s->name_len] = '\0';
        char *value = malloc(s->value_len + 1); /* the span is not NUL-terminated */
        if (value == NULL) {
            continue;
        }
        memcpy(value, s->value, s->value_len);
        value[s->value_len] = '\0';
        int rc = gw_resp_header(req, name, value); /* a bad or an excess header is dropped */
        (void)rc;
        free(value);
    }
    int64_t length = (int64_t)evbuffer_get_length(w->out);
    if (req->is_head || status == 204 || status == 304) {
        length = (p.flags & F_CONTENT_LENGTH) ? (int64_t)p.content_length : -1;
    }
    gw_resp_body_begin(req, length);
    free(a->data); /* parsed: the body is in w->out */
    free(a);
    w->a = NULL;
    write_more(w);
}

static void
answer_run(struct gw_loopmsg *m)
{
    struct answer *a = (struct answer *)m;
    struct wrel *w = a->w;
    w->a = a;
    if (a->err == ERR_TOOBIG) {
        gw_req_set_ops(w->req, &done_ops, NULL);
        gw_resp_abort(w->req); /* 502 */
        wrel_free(w);
        return;
    }
    if (a->err != 0) {
        wrel_fail(w, 503, "ServiceUnavailable", "Please reduce your request rate.");
        return;
    }
    answer_client(w);
}

static void
answer_cancel(struct gw_loopmsg *m, int why)
{
    (void)why;
    struct answer *a = (struct answer *)m;
    free(a->data);
    free(a);
}

/* The client left: cancel the relay on both sides. */
static void
on_abort(struct gw_req *req, int err, void *arg)
{
    (void)req;
    (void)err;
    struct wrel *w = arg;
    if (w->posted) {
        struct cancel *k = calloc(1, sizeof(*k));
        if (k != NULL) {
            k->m.run = cancel_run;
            k->m.cancel = cancel_cancel;
            k->hub = w->hub;
            k->wq = w->q;
            k->ep = w->ep;
            if (gw_loopq_post(w->cq, &k->m) != 0) {
                free(k); /* the control loop is gone, and its pairs with it */
            }
        }
    }
    wrel_free(w);
}

/* The whole body is here: write the request again and post it. */
static void
post_request(struct wrel *w)
{
    struct gw_req *req = w->req;
    struct chalf *c = calloc(1, sizeof(*c));
    struct evbuffer *out = evbuffer_new();
    bool ok = c != NULL && out != NULL;
    ok = ok && evbuffer_add_printf(out, "%s %s HTTP/1.%d\r\n", gw_req_method(req),
                                   gw_req_target(req), gw_req_version_minor(req)) > 0;
    for (size_t i = 0; ok && i < gw_req_header_count(req); i++) {
        const struct gw_header *hd = gw_req_header_at(req, i);
        if (name_in(hd->name, hd->name_len, req_skip)) {
            continue;
        }
        ok = evbuffer_add(out, hd->name, hd->name_len) == 0 && evbuffer_add(out, ": ", 2) == 0 &&
             evbuffer_add(out, hd->value, hd->value_len) == 0 && evbuffer_add(out, "\r\n", 2) == 0;
    }
    ok = ok && evbuffer_add_printf(out, "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                                   evbuffer_get_length(w->body)) > 0;
    ok = ok && evbuffer_add_buffer(out, w->body) == 0;
    if (ok) {
        c->len = evbuffer_get_length(out);
        c->data = malloc(c->len);
        ok = c->data != NULL && evbuffer_remove(out, c->data, c->len) == (int)c->len;
    }
    if (out != NULL) {
        evbuffer_free(out);
    }
    if (!ok) {
        if (c != NULL) {
            free(c->data);
            free(c);
        }
        wrel_fail(w, 503, "ServiceUnavailable", "Out of memory.");
        return;
    }
    c->m.run = req_run;
    c->m.cancel = req_cancel;
    c->hub = w->hub;
    c->wq = w->q;
    c->ep = w->ep;
    c->w = w;
    str_copy(c->peer, sizeof(c->peer), gw_req_peer(req));
    c->is_tls = gw_req_is_tls(req);
    c->listener = gw_req_listener(req);
    str_copy(c->id, sizeof(c->id), gw_req_id(req));
    if (gw_loopq_post(w->cq, &c->m) != 0) {
        free(c->data);
        free(c);
        wrel_fail(w, 503, "ServiceUnavailable", "The gateway is shutting down.");
        return;
    }
    w->posted = true;
}

static void
read_body(struct wrel *w)
{
    char tmp[RELAY_READ];
    for (;;) {
        ssize_t n = gw_req_body_read(w->req, tmp, sizeof(tmp));
        if (n > 0) {
            if (evbuffer_get_length(w->body) + (size_t)n > GW_RELAY_BODY_MAX ||
                evbuffer_add(w->body, tmp, (size_t)n) != 0) {
                wrel_fail(w, 413, "EntityTooLarge",
                          "Your proposed upload exceeds the maximum allowed size.");
                return;
            }
            continue;
        }
        if (n == 0) {
            post_request(w);
        }
        return; /* ERR_AGAIN: on_body_ready follows; else on_abort does */
    }
}

static void
on_body_ready(struct gw_req *req, void *arg)
{
    (void)req;
    struct wrel *w = arg;
    if (!w->posted) {
        read_body(w);
    }
}

static const struct gw_req_ops relay_ops = {
    .on_body_ready = on_body_ready,
    .on_output_drained = on_output_drained,
    .on_abort = on_abort,
};

int
gw_relay_request(struct gw_relay_hub *h, struct gw_req *req)
{
    struct gw_loopctx *lc = gw_loopctx_here;
    if (lc == NULL || h == NULL) {
        return ERR_INVAL;
    }
    struct wrel *w = calloc(1, sizeof(*w));
    if (w == NULL) {
        return ERR_NOMEM;
    }
    w->body = evbuffer_new();
    if (w->body == NULL || gw_loopq_ep_open(lc->q, &w->ep) != 0) {
        if (w->body != NULL) {
            evbuffer_free(w->body);
        }
        free(w);
        return ERR_NOMEM;
    }
    w->req = req;
    w->hub = h;
    w->q = lc->q;
    w->cq = h->q;
    gw_req_set_ops(req, &relay_ops, w);
    if (gw_req_content_length(req) > (int64_t)GW_RELAY_BODY_MAX) {
        wrel_fail(w, 413, "EntityTooLarge",
                  "Your proposed upload exceeds the maximum allowed size.");
        return 0;
    }
    read_body(w);
    return 0;
}
