/*
 * gateway/upstream/engine.h: the two engines behind gateway/upstream/upstream.h.
 *
 * struct gw_upstream and struct gw_xfer, opaque to callers, are defined here
 * as a tag only: each engine's client and transfer structs start with one
 * (member "pub"), so a pointer to the public struct is a pointer to the
 * engine's struct.  gateway/upstream/dispatch.c reads the tag and calls the
 * engine's function below.  Internal to gateway/upstream/.
 *
 *   GW_UPSTREAM_CURL  libcurl multi (upstream.c, xfer.c, internal.h): the
 *                     internal S3 client's engine, and the proxy's fallback
 *   GW_UPSTREAM_LEAN  HTTP/1.1 on bufferevents and llhttp (lean.c,
 *                     lean_conn.c, lean_tls.c, lean.h): the proxy's engine
 */
#ifndef GW_UPSTREAM_ENGINE_H
#define GW_UPSTREAM_ENGINE_H

#include "gateway/upstream/upstream.h"

struct gw_upstream {
    enum gw_upstream_engine engine;
};

struct gw_xfer {
    enum gw_upstream_engine engine;
};

struct gw_curl;
struct gw_curl_xfer;
struct gw_lean;
struct gw_lean_xfer;

/* The libcurl engine (gateway/upstream/upstream.c, xfer.c); contracts as in upstream.h. */
struct gw_curl *gw_curl_new(struct event_base *base, const struct gw_upstream_opts *opts);
void gw_curl_free(struct gw_curl *up);
bool gw_curl_unreachable(const struct gw_curl *up, const char **why);
MUST_USE int gw_curl_xfer_start(struct gw_curl *up, const struct gw_xfer_req *rq,
                                const struct gw_xfer_cbs *cbs, void *arg,
                                struct gw_curl_xfer **out);
void gw_curl_resume_send(struct gw_curl_xfer *x);
void gw_curl_resume_recv(struct gw_curl_xfer *x);
void gw_curl_xfer_cancel(struct gw_curl_xfer *x);
uint64_t gw_curl_body_sent(const struct gw_curl_xfer *x);

/* The lean engine (gateway/upstream/lean.c); contracts as in upstream.h. */
struct gw_lean *gw_lean_new(struct event_base *base, const struct gw_upstream_opts *opts);
void gw_lean_free(struct gw_lean *up);
bool gw_lean_unreachable(const struct gw_lean *up, const char **why);
MUST_USE int gw_lean_xfer_start(struct gw_lean *up, const struct gw_xfer_req *rq,
                                const struct gw_xfer_cbs *cbs, void *arg,
                                struct gw_lean_xfer **out);
void gw_lean_resume_send(struct gw_lean_xfer *x);
void gw_lean_resume_recv(struct gw_lean_xfer *x);
void gw_lean_xfer_cancel(struct gw_lean_xfer *x);
uint64_t gw_lean_body_sent(const struct gw_lean_xfer *x);

#endif
