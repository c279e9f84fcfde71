/*
 * tests/unit/gateway/s3client/s3client_reload_test.c: one signer, one reload.
 *
 * Every user of the internal S3 client (gateway/s3client/s3client.h) signs
 * with it: the proxy re-signing a forwarded client request, the s3 election
 * backend, the background abort of a stale multipart upload, the bucket
 * probe.  After gw_s3client_set_config with new credentials (what serve's
 * SIGHUP handler calls, once), each of them must sign with the new access
 * key; a user that kept a signer of its own would still send the old one.
 *
 * Also the calls' contract: the request body goes as given, a 2xx body goes
 * to on_body, an error document's Code to on_done, never before the start
 * returns; free and cancel run no callback.
 *
 * A fake upstream on 127.0.0.1, on the test's event loop, records the
 * credential and body of every request it gets and answers 200 with an ETag
 * (a key with "err" in it: 412 with an S3 error document; "body": 200 with a
 * body; "silent": nothing).  The
 * proxy runs behind an in-process gw_server (proxy_harness.h); the upload
 * bookkeeping over a real store in a temporary directory.
 */
#include "tests/unit/gateway/proxy_harness.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/socket.h>

#include "election/backend.h"
#include "gateway/proxy/auth.h"
#include "gateway/proxy/upload.h"
#include "gateway/s3/s3req.h"
#include "gateway/s3client/bucket_probe.h"
#include "gateway/s3client/elect_s3.h"
#include "store/store.h"
#include "tests/unit/testlib.h"

#define MAX_SEEN 32

/* ---- the fake upstream ---- */

static struct {
    struct evconnlistener *lis;
    uint16_t port;
    int n;                               /* requests seen */
    char line[MAX_SEEN][256];            /* their request lines */
    char cred[MAX_SEEN][64];             /* the access key of their Credential= */
    char body[MAX_SEEN][64];             /* the start of their bodies */
    struct bufferevent *conns[MAX_SEEN]; /* open connections (NULL: closed) */
} fk;

/* The access key in "...Credential=AK/date/..." of head, into out. */
static void
credential_of(const char *head, char *out, size_t len)
{
    out[0] = '\0';
    const char *c = strstr(head, "Credential=");
    if (c == NULL) {
        return;
    }
    c += strlen("Credential=");
    size_t n = strcspn(c, "/\r\n");
    (void)snprintf(out, len, "%.*s", (int)n, c);
}

/* Content-Length of head, 0 if none. */
static size_t
content_length_of(const char *head)
{
    for (const char *p = head; *p != '\0'; p++) {
        if ((p == head || p[-1] == '\n') && strncasecmp(p, "content-length:", 15) == 0) {
            return (size_t)strtoull(p + 15, NULL, 10);
        }
    }
    return 0;
}

/* bufferevent read callback: whole requests in, one 200 out each. */
static void
fk_on_read(struct bufferevent *bev, void *arg)
{
    (void)arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    for (;;) {
        struct evbuffer_ptr p = evbuffer_search(in, "\r\n\r\n", 4, NULL);
        if (p.pos < 0) {
            return;
        }
        size_t hl = (size_t)p.pos + 4;
        char *head = malloc(hl + 1);
        assert_non_null(head);
        assert_int_equal(evbuffer_copyout(in, head, hl), (ev_ssize_t)hl);
        head[hl] = '\0';
        size_t cl = content_length_of(head);
        if (evbuffer_get_length(in) < hl + cl) {
            free(head);
            return;
        }
        size_t keep = cl < sizeof(fk.body[0]) - 1 ? cl : sizeof(fk.body[0]) - 1;
        assert_int_equal(evbuffer_drain(in, hl), 0);
        assert_int_equal(evbuffer_remove(in, fk.body[fk.n], keep), (int)keep);
        fk.body[fk.n][keep] = '\0';
        assert_int_equal(evbuffer_drain(in, cl - keep), 0);
        assert_true(fk.n < MAX_SEEN);
        (void)snprintf(fk.line[fk.n], sizeof(fk.line[0]), "%.*s", (int)strcspn(head, "\r"), head);
        credential_of(head, fk.cred[fk.n], sizeof(fk.cred[0]));
        fk.n++;
        const char *line = fk.line[fk.n - 1];
        struct evbuffer *out = bufferevent_get_output(bev);
        if (strstr(line, "silent") != NULL) {
            /* never answered */
        } else if (strstr(line, "err") != NULL) {
            static const char doc[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error>"
                                      "<Code>PreconditionFailed</Code></Error>";
            evbuffer_add_printf(out,
                                "HTTP/1.1 412 Precondition Failed\r\nContent-Length: %zu\r\n\r\n%s",
                                sizeof(doc) - 1, doc);
        } else if (strstr(line, "body") != NULL) {
            evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
        } else {
            evbuffer_add_printf(
                out, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nETag: \"0123abcd\"\r\n\r\n");
        }
        free(head);
    }
}

static void
fk_on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)arg;
    if ((what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) != 0) {
        for (size_t i = 0; i < MAX_SEEN; i++) {
            fk.conns[i] = fk.conns[i] == bev ? NULL : fk.conns[i];
        }
        bufferevent_free(bev);
    }
}

/* evconnlistener callback */
static void
fk_on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa, int salen,
             void *arg)
{
    (void)lis;
    (void)sa;
    (void)salen;
    (void)arg;
    struct bufferevent *bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
    assert_non_null(bev);
    bufferevent_setcb(bev, fk_on_read, NULL, fk_on_event, NULL);
    size_t slot = 0;
    while (slot < MAX_SEEN && fk.conns[slot] != NULL) {
        slot++;
    }
    assert_true(slot < MAX_SEEN);
    fk.conns[slot] = bev;
    assert_int_equal(bufferevent_enable(bev, EV_READ), 0);
}

static void
fk_start(void)
{
    memset(&fk, 0, sizeof(fk));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    fk.lis =
        evconnlistener_new_bind(base, fk_on_accept, NULL, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
                                -1, (struct sockaddr *)&sa, sizeof(sa));
    assert_non_null(fk.lis);
    socklen_t sl = sizeof(sa);
    assert_int_equal(getsockname(evconnlistener_get_fd(fk.lis), (struct sockaddr *)&sa, &sl), 0);
    fk.port = ntohs(sa.sin_port);
}

/* ---- the users ---- */

static struct elect_backend *be;
static struct gw_upload *uploads;
static struct gw_bucket_probe *bprobe;
static struct store *st;
static char *data_dir;
static struct gw_config cfg2; /* the reloaded configuration */

static char endpoint[64];
static char region[] = "us-east-1";
static char ak1[] = "AKOLD";
static char sk1[] = "old-secret";
static char ak2[] = "AKNEW";
static char sk2[] = "new-secret";

static void
run_until(const int *flag)
{
    TL_RUN_UNTIL(base, st, *flag != 0, 2000);
}

static int
rl_setup(void **state)
{
    (void)state;
    px_base_init();
    fk_start();
    (void)snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%u", (unsigned)fk.port);
    th_config_init(&cfg, endpoint, region, ak1, sk1);
    cfg.fencing.abort_stale_uploads = true;
    cfg2 = cfg;
    cfg2.upstream.access_key = ak2;
    cfg2.upstream.secret_key = sk2;

    px_open(px_on_request, 2000, 5000);
    char err[256];
    be = gw_elect_s3_new(s3c, "locks", err, sizeof(err));
    assert_non_null(be);
    bprobe = gw_bucket_probe_new(s3c);
    assert_non_null(bprobe);

    data_dir = tl_dir_new("s3client-reload");
    struct store_opts so;
    store_opts_init(&so);
    so.data_dir = data_dir;
    assert_int_equal(store_open(&so, &st, err, sizeof(err)), 0);
    uploads = gw_upload_new(st, s3c, &cfg);
    assert_non_null(uploads);
    return 0;
}

static int
rl_teardown(void **state)
{
    gw_upload_free(uploads);
    store_close(st);
    gw_bucket_probe_free(bprobe);
    elect_backend_free(be);
    px_close();
    evconnlistener_free(fk.lis);
    for (size_t i = 0; i < MAX_SEEN; i++) {
        if (fk.conns[i] != NULL) {
            bufferevent_free(fk.conns[i]);
        }
    }
    tl_dir_free(data_dir);
    data_dir = NULL;
    return teardown(state);
}

/* The credential of the one request the fake got since seen_before. */
static const char *
last_cred(int seen_before, const char *what)
{
    if (fk.n != seen_before + 1) {
        fail_msg("%s: %d requests reached the upstream, wanted 1", what, fk.n - seen_before);
    }
    return fk.cred[fk.n - 1];
}

/* The proxy forwards one client request. */
static const char *
via_proxy(void)
{
    int before = fk.n;
    struct resp r;
    px_ask("GET /b/k HTTP/1.1\r\nHost: x\r\n\r\n", &r);
    assert_int_equal(r.status, 200);
    resp_cleanup(&r);
    return last_cred(before, "proxy");
}

static void
on_got(void *arg, int err, const char *body, size_t len, const struct elect_obj_meta *meta)
{
    int *done = arg;
    (void)body;
    (void)len;
    (void)meta;
    assert_int_equal(err, 0);
    *done = 1;
}

/* The election backend reads a lock file. */
static const char *
via_election(void)
{
    int before = fk.n;
    int done = 0;
    assert_int_equal(elect_backend_get(be, "fencegate/orders/1", on_got, &done), 0);
    run_until(&done);
    return last_cred(before, "election");
}

static void
on_probed(void *arg, int err, int status)
{
    int *done = arg;
    assert_int_equal(err, 0);
    assert_int_equal(status, 200);
    *done = 1;
}

/* The bucket probe asks for a bucket. */
static const char *
via_bucket_probe(void)
{
    int before = fk.n;
    int done = 0;
    struct gw_bucket_probe_op *op = NULL;
    assert_int_equal(gw_bucket_probe_head(bprobe, "data", on_probed, &done, &op), 0);
    run_until(&done);
    return last_cred(before, "bucket probe");
}

static void
on_recorded(void *arg, int err)
{
    int *done = arg;
    assert_int_equal(err, 0);
    *done = 1;
}

/* An upload of epoch `epoch` is aborted in the background when its lock moves on. */
static const char *
via_upload_abort(uint64_t epoch, const char *id)
{
    int done = 0;
    assert_int_equal(store_upload_put(st, "orders", id, epoch, "data", "k", on_recorded, &done), 0);
    run_until(&done);
    int before = fk.n;
    gw_upload_on_advance(uploads, "orders", epoch + 1);
    int seen = 0;
    for (int i = 0; i < 2000 && seen == 0; i++) {
        (void)event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        seen = fk.n > before && gw_s3client_pending(s3c) == 0;
    }
    assert_true(strstr(fk.line[fk.n - 1], "DELETE /data/k?uploadId=") == fk.line[fk.n - 1]);
    return last_cred(before, "upload abort");
}

static void
test_reload_reaches_every_user(void **state)
{
    (void)state;
    assert_string_equal(via_proxy(), ak1);
    assert_string_equal(via_election(), ak1);
    assert_string_equal(via_bucket_probe(), ak1);
    assert_string_equal(via_upload_abort(1, "up-1"), ak1);

    /* SIGHUP: the one reload path (serve.c also hands cfg2 to the proxy and
     * the uploads for their other settings, never for signing). */
    assert_int_equal(gw_s3client_set_config(s3c, &cfg2), 0);

    assert_string_equal(via_proxy(), ak2);
    assert_string_equal(via_election(), ak2);
    assert_string_equal(via_bucket_probe(), ak2);
    assert_string_equal(via_upload_abort(2, "up-2"), ak2);
}

/* A reload that does not validate keeps the old credentials for everyone. */
static void
test_bad_reload_keeps_the_old_signer(void **state)
{
    (void)state;
    struct gw_config bad = cfg2;
    bad.upstream.secret_key = NULL;
    assert_int_equal(gw_s3client_set_config(s3c, &bad), ERR_INVAL);
    assert_string_equal(via_proxy(), ak1);
    assert_string_equal(via_election(), ak1);
}

/* ---- the calls' contract ---- */

struct seen {
    bool in_start; /* gw_s3client_start is running */
    int done;      /* on_done calls */
    int err;       /* its err */
    int status;    /* its status */
    char code[64]; /* its code, "" for NULL */
    char body[64]; /* what on_body got */
};

static int
on_call_body(void *arg, const char *data, size_t len)
{
    struct seen *s = arg;
    size_t have = strlen(s->body);
    assert_true(have + len < sizeof(s->body));
    memcpy(s->body + have, data, len);
    s->body[have + len] = '\0';
    return 0;
}

static void
on_call_done(void *arg, int err, int status, const char *code)
{
    struct seen *s = arg;
    assert_false(s->in_start);
    s->done++;
    s->err = err;
    s->status = status;
    (void)snprintf(s->code, sizeof(s->code), "%s", code != NULL ? code : "");
}

static const struct gw_s3client_cbs seen_cbs = {.on_body = on_call_body, .on_done = on_call_done};

static void
call(struct seen *s, const struct gw_s3client_call *c, struct gw_s3client_op **op)
{
    memset(s, 0, sizeof(*s));
    s->in_start = true;
    assert_int_equal(gw_s3client_start(s3c, c, &seen_cbs, s, op), 0);
    s->in_start = false;
}

static void
test_calls(void **state)
{
    (void)state;
    struct seen s;
    /* A PUT: the body goes as given, with its SHA-256 signed; 2xx. */
    char body[] = "lock file";
    const struct gw_s3client_call put = {.method = "PUT",
                                         .bucket = "b",
                                         .key = "a key/x",
                                         .body = body,
                                         .body_len = 9,
                                         .has_body = true};
    call(&s, &put, NULL);
    body[0] = 'X'; /* copied at the start */
    run_until(&s.done);
    assert_int_equal(s.err, 0);
    assert_int_equal(s.status, 200);
    assert_string_equal(s.code, "");
    assert_string_equal(fk.line[fk.n - 1], "PUT /b/a%20key/x HTTP/1.1");
    assert_string_equal(fk.body[fk.n - 1], "lock file");
    /* A 2xx body goes to on_body. */
    const struct gw_s3client_call get = {.method = "GET", .bucket = "b", .key = "body"};
    call(&s, &get, NULL);
    run_until(&s.done);
    assert_int_equal(s.status, 200);
    assert_string_equal(s.body, "hello");
    /* An error document: its Code to on_done, nothing to on_body. */
    const struct gw_s3client_call bad = {.method = "GET", .bucket = "b", .key = "err"};
    call(&s, &bad, NULL);
    run_until(&s.done);
    assert_int_equal(s.err, 0);
    assert_int_equal(s.status, 412);
    assert_string_equal(s.code, "PreconditionFailed");
    assert_string_equal(s.body, "");
    /* Refused at the start: no callback, nothing pending. */
    const struct gw_s3client_call nobucket = {.method = "GET", .bucket = "", .key = "k"};
    assert_int_equal(gw_s3client_start(s3c, &nobucket, &seen_cbs, &s, NULL), ERR_INVAL);
    const struct gw_s3client_call badkey = {.method = "GET", .bucket = "b/c", .key = "k"};
    assert_int_equal(gw_s3client_start(s3c, &badkey, &seen_cbs, &s, NULL), ERR_INVAL);
    char err[128];
    struct gw_s3client *signing_only = gw_s3client_new(NULL, &cfg, err, sizeof(err));
    assert_non_null(signing_only);
    assert_int_equal(gw_s3client_start(signing_only, &get, &seen_cbs, &s, NULL), ERR_INVAL);
    gw_s3client_free(signing_only);
    assert_int_equal(gw_s3client_pending(s3c), 0);
    /* Cancelled, or still pending at free: no callback. */
    struct gw_s3client_op *op = NULL;
    const struct gw_s3client_call silent = {.method = "GET", .bucket = "b", .key = "silent"};
    call(&s, &silent, &op);
    struct seen s2;
    call(&s2, &silent, NULL);
    assert_int_equal(gw_s3client_pending(s3c), 2);
    gw_s3client_cancel(op);
    assert_int_equal(gw_s3client_pending(s3c), 1);
    for (int i = 0; i < 50; i++) {
        (void)event_base_loop(base, EVLOOP_NONBLOCK);
    }
    gw_s3client_free(s3c);
    s3c = NULL;
    for (int i = 0; i < 50; i++) {
        (void)event_base_loop(base, EVLOOP_NONBLOCK);
    }
    assert_int_equal(s.done + s2.done, 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reload_reaches_every_user, rl_setup, rl_teardown),
        cmocka_unit_test_setup_teardown(test_bad_reload_keeps_the_old_signer, rl_setup,
                                        rl_teardown),
        cmocka_unit_test_setup_teardown(test_calls, rl_setup, rl_teardown),
    };
    return cmocka_run_group_tests_name("s3client_reload", tests, NULL, NULL);
}
