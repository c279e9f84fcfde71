#define LOG_MODULE "router"
#include "gateway/router.h"

#include <string.h>

#include "common/buf.h"
#include "common/log.h"
#include "gateway/auth.h"
#include "gateway/config.h"
#include "gateway/http.h"
#include "gateway/metrics.h"
#include "gateway/proxy.h"
#include "gateway/s3err.h"
#include "gateway/s3req.h"

static void
send_text(struct gw_req *req, int status, const char *content_type, const char *text)
{
    gw_metrics_count_status(status);
    gw_resp_simple(req, status, content_type, text, strlen(text));
}

static void
serve_metrics(struct gw_req *req)
{
    struct buf b;
    buf_init(&b, (size_t)64 * 1024);
    if (gw_metrics_render(&b) != 0) {
        buf_cleanup(&b);
        gw_s3err_send_err(req, ERR_NOMEM, "Could not render metrics.");
        return;
    }
    gw_metrics_count_status(200);
    gw_resp_simple(req, 200, "text/plain; version=0.0.4", b.data, b.len);
    buf_cleanup(&b);
}

/* The gateway's own endpoints.  Returns true if req was answered. */
static bool
serve_own(struct gw_router *rt, struct gw_req *req, const char *method, const char *path)
{
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (strcmp(path, "/healthz") == 0 && get) {
        send_text(req, 200, "text/plain", "ok\n");
        return true;
    }
    if (strcmp(path, "/readyz") == 0 && get) {
        if (rt->ready) {
            send_text(req, 200, "text/plain", "ready\n");
        } else {
            send_text(req, 503, "text/plain",
                      rt->not_ready != NULL ? rt->not_ready : "not ready\n");
        }
        return true;
    }
    if (strcmp(path, "/metrics") == 0 && get) {
        serve_metrics(req);
        return true;
    }
    if (strncmp(path, "/_fencegate/", 12) == 0 || strcmp(path, "/_fencegate") == 0) {
        gw_metrics_count_status(404);
        gw_s3err_send(req, 404, "NoSuchResource", "No such gateway API resource.");
        return true;
    }
    return false;
}

void
gw_router_on_request(struct gw_req *req, void *arg)
{
    struct gw_router *rt = arg;
    const char *method = gw_req_method(req);
    const char *path = gw_req_path(req);

    gw_metrics.requests++;
    if (serve_own(rt, req, method, path)) {
        return;
    }
    struct gw_s3req s3;
    struct gw_s3req_in in = {
        .method = method,
        .path = path,
        .query = gw_req_query(req),
        .host = gw_req_header(req, "host"),
        .copy_source = gw_req_header(req, "x-amz-copy-source") != NULL,
        .virtual_host_domains = gw_req_config(req)->virtual_host_domains,
    };
    int rc = gw_s3req_parse(&in, &s3);
    if (rc != 0) {
        gw_metrics_count_status(400);
        gw_s3err_send(req, 400, "InvalidURI", "Couldn't parse the specified URI.");
        return;
    }
    if (s3.op == GW_S3_OP_GATEWAY_API) {
        gw_metrics_count_status(404);
        gw_s3err_send(req, 404, "NoSuchResource", "No such gateway resource.");
        return;
    }
    struct gw_auth auth;
    struct gw_auth_fail fail;
    rc = gw_auth_check(req, gw_req_config(req), &s3, rt->kc, &auth, &fail);
    if (rc != 0) {
        if (rc == ERR_NOMEM) {
            gw_metrics_count_status(503);
            gw_s3err_send_err(req, ERR_NOMEM, "Out of memory.");
        } else {
            gw_metrics_count_status(fail.status);
            gw_s3err_send(req, fail.status, fail.code, fail.message);
        }
        gw_auth_cleanup(&auth);
        gw_s3req_cleanup(&s3);
        return;
    }
    log_debug("req %s: %s %s bucket=%s principal=%s", gw_req_id(req), method, s3.name, s3.bucket,
              auth.principal != NULL ? auth.principal->name : "(anonymous)");
    gw_proxy_forward(rt->proxy, req, &s3, &auth);
    gw_auth_cleanup(&auth);
    gw_s3req_cleanup(&s3);
}
