/*
 * tests/unit/gateway/proxy_harness.h: a gw_proxy behind the in-process
 * gw_server of http_harness.h, for the tests that send client requests
 * through the proxy (proxy/proxy_test.c, s3client/s3client_reload_test.c).
 *
 *   px_base_init()         th reset, a new base (before anything that needs it)
 *   px_open(handler, connect_ms, timeout_ms)
 *                          on http_harness's cfg (th_config_init first): the
 *                          server handing each request to handler, a
 *                          libcurl upstream client with these timeouts, the
 *                          internal S3 client and the proxy (up, s3c, px)
 *   px_close()             frees px, s3c and up (http_harness's teardown then
 *                          frees the server and the base)
 *   px_ask(raw, &r)        one request on a fresh connection; its response
 *                          into r (resp_cleanup), 3 s at most
 *   px_on_request          a handler for px_open: counts the request and
 *                          forwards it, classified as nothing (a service-level
 *                          request), with px_auth; px_with_body: through
 *                          gw_proxy_forward_body with an empty body, else
 *                          gw_proxy_forward (px_base_init clears both)
 *
 * Include this header once, first, from a *_test.c only (http_harness.h
 * #includes gateway/http/server.c); everything here is static inline.
 */
#ifndef TESTS_UNIT_GATEWAY_PROXY_HARNESS_H
#define TESTS_UNIT_GATEWAY_PROXY_HARNESS_H

#include "tests/unit/gateway/http_harness.h"

#include "gateway/proxy/auth.h"
#include "gateway/proxy/proxy.h"
#include "gateway/s3/s3req.h"
#include "gateway/s3client/s3client.h"
#include "gateway/upstream/upstream.h"

static struct gw_upstream *up;  /* the proxy's upstream client (libcurl) */
static struct gw_s3client *s3c; /* the internal S3 client, on up */
static struct gw_proxy *px;     /* the proxy, on up and s3c */
static struct gw_auth px_auth;  /* what px_on_request forwards with */
static bool px_with_body;       /* px_on_request: gw_proxy_forward_body, "" */

static inline void
px_base_init(void)
{
    memset(&th, 0, sizeof(th));
    memset(&px_auth, 0, sizeof(px_auth));
    px_with_body = false;
    buf_init(&th.body, 1024);
    base = event_base_new();
    assert_non_null(base);
}

static inline void
px_open(gw_request_fn *handler, uint32_t connect_timeout_ms, uint32_t timeout_ms)
{
    char err[256];
    srv = gw_server_new(base, &cfg, handler, NULL, err, sizeof(err));
    assert_non_null(srv);
    struct gw_upstream_opts o = {.connect_timeout_ms = connect_timeout_ms,
                                 .timeout_ms = timeout_ms};
    up = gw_upstream_new(base, &o);
    assert_non_null(up);
    s3c = gw_s3client_new(up, &cfg, err, sizeof(err));
    assert_non_null(s3c);
    px = gw_proxy_new(&cfg, up, s3c, err, sizeof(err));
    assert_non_null(px);
}

/* gw_request_fn */
static inline void
px_on_request(struct gw_req *req, void *arg)
{
    (void)arg;
    th.requests++;
    struct gw_s3req s3;
    memset(&s3, 0, sizeof(s3));
    if (px_with_body) {
        gw_proxy_forward_body(px, req, &s3, &px_auth, NULL, "", 0);
    } else {
        gw_proxy_forward(px, req, &s3, &px_auth, NULL);
    }
}

static inline void
px_close(void)
{
    gw_proxy_free(px);
    gw_s3client_free(s3c);
    gw_upstream_free(up);
}

static inline void
px_ask(const char *raw, struct resp *r)
{
    struct client cl;
    cl_open(&cl);
    cl_sends(&cl, raw);
    (void)wait_resp(&cl, 0, false, r, 3000);
    cl_close(&cl);
}

#endif /* TESTS_UNIT_GATEWAY_PROXY_HARNESS_H */
