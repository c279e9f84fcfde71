/*
 * gateway/upstream/engine.h: the two engines behind gateway/upstream/upstream.h.
 *
 * struct gw_upstream and struct gw_xfer, opaque to callers, are defined here
 * as a tag only: each engine's client and transfer structs start with one
 * (member "pub"), so a pointer to the public struct is a pointer to the
 * engine's struct.  gateway/upstream/dispatch.c reads the tag and calls the
 * engine's function below.  The client's tag also keeps the unreachable
 * streak, which both engines feed through the gw_upstream_note_* calls and
 * dispatch.c reads for gw_upstream_unreachable.  Internal to gateway/upstream/.
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
    enum gw_upstream_engine engine; /* which engine's client this starts */
    uint32_t connect_fails;         /* transfers in a row that could not connect */
    uint64_t connect_fail_ms;       /* when the last of them ended (mono ms) */
    char connect_err[160];          /* the text for the last connect failure */
};

struct gw_xfer {
    enum gw_upstream_engine engine;
};

/*
 * The unreachable streak (gw_upstream_unreachable), fed by both engines.
 * gw_upstream_note_connect_err  sets the text for a connection that did not
 *                               come up (printf-style; cut to fit).  Does not count.
 * gw_upstream_note_connect_failed  a transfer ended without ever connecting:
 *                               one more in the streak, as of now.
 * gw_upstream_note_reached      a transfer got a response: the streak ends.
 */
void gw_upstream_note_connect_err(struct gw_upstream *up, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void gw_upstream_note_connect_failed(struct gw_upstream *up);
void gw_upstream_note_reached(struct gw_upstream *up);

struct gw_curl;
struct gw_curl_xfer;
struct gw_lean;
struct gw_lean_xfer;

/* The libcurl engine (gateway/upstream/upstream.c, xfer.c); contracts as in upstream.h. */
struct gw_curl *gw_curl_new(struct event_base *base, const struct gw_upstream_opts *opts);
void gw_curl_free(struct gw_curl *up);
MUST_USE int gw_curl_xfer_start(struct gw_curl *up, const struct gw_xfer_req *rq,
                                const struct gw_xfer_cbs *cbs, void *arg,
                                struct gw_curl_xfer **out);
void gw_curl_resume_send(struct gw_curl_xfer *x);
void gw_curl_resume_recv(struct gw_curl_xfer *x);
void gw_curl_xfer_cancel(struct gw_curl_xfer *x);
uint64_t gw_curl_sockets(const struct gw_curl *up); /* sockets watched (gw_upstream_conns) */
uint64_t gw_lean_conns_open(const struct gw_lean *up);
uint64_t gw_lean_conns_idle(const struct gw_lean *up);
uint64_t gw_curl_body_sent(const struct gw_curl_xfer *x);

/* The lean engine (gateway/upstream/lean.c); contracts as in upstream.h. */
struct gw_lean *gw_lean_new(struct event_base *base, const struct gw_upstream_opts *opts);
void gw_lean_free(struct gw_lean *up);
MUST_USE int gw_lean_xfer_start(struct gw_lean *up, const struct gw_xfer_req *rq,
                                const struct gw_xfer_cbs *cbs, void *arg,
                                struct gw_lean_xfer **out);
void gw_lean_resume_send(struct gw_lean_xfer *x);
void gw_lean_resume_recv(struct gw_lean_xfer *x);
void gw_lean_xfer_cancel(struct gw_lean_xfer *x);
uint64_t gw_lean_body_sent(const struct gw_lean_xfer *x);

#endif
