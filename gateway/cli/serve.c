#define LOG_MODULE "serve"
#include "gateway/cli/serve.h"

#include <event2/event.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "election/backend_dir.h"
#include "election/elect.h"
#include "gateway/base/config.h"
#include "gateway/base/metrics.h"
#include "gateway/cli/check_config.h"
#include "gateway/fence/fence.h"
#include "gateway/http/http.h"
#include "gateway/proxy/proxy.h"
#include "gateway/proxy/router.h"
#include "gateway/proxy/upload.h"
#include "gateway/s3/sigv4.h"
#include "gateway/upstream/bucket_probe.h"
#include "gateway/upstream/elect_s3.h"
#include "gateway/upstream/s3client.h"
#include "gateway/upstream/trailer_probe.h"
#include "gateway/upstream/upstream.h"
#include "store/store.h"

/* Configurations replaced by SIGHUP stay alive until exit: requests in flight
 * may still point into them.  Reloads are rare; the list is capped. */
#define SERVE_MAX_OLD_CONFIGS 64

struct serve {
    struct event_base *base;                      /* the one event loop */
    struct gw_config *cfg;                        /* owned; in force */
    struct gw_config *old[SERVE_MAX_OLD_CONFIGS]; /* owned; replaced, freed at exit */
    size_t nold;
    struct gw_upstream *up;           /* owned; the proxy's (upstream.client) */
    struct gw_upstream *up_s3;        /* owned; libcurl, the S3 client's; or up if that is curl */
    struct gw_s3client *s3c;          /* owned; the one signer and internal S3 client */
    struct gw_proxy *proxy;           /* owned */
    struct gw_server *srv;            /* owned */
    struct gw_router router;          /* embedded */
    struct gw_sigv4_keycache *kc;     /* owned; inbound signing keys */
    struct store *store;              /* owned; fence table, election cache, audit log */
    struct event *store_ev;           /* owned; store completions become callbacks */
    struct gw_fence *fence;           /* owned */
    struct gw_upload *uploads;        /* owned; multipart uploads under epochs */
    struct gw_bucket_probe *probe;    /* owned; CreateBucket of an existing bucket */
    struct elect *elect;              /* owned; NULL without an "election" section */
    struct gw_trailer_probe *trprobe; /* owned; the checksum-trailer probe, or NULL */
    bool trailers_probed;             /* the probe answered ... */
    bool trailers_supported;          /* ... this */
    struct event *trim_ev;            /* owned; hands the heap back once load stops */
    uint64_t trim_seen;               /* gw_metrics.requests at its last tick */
    uint64_t trim_done;               /* ... when the heap was last handed back */
    struct event *sig_term;           /* SIGTERM */
    struct event *sig_int;            /* SIGINT */
    struct event *sig_hup;            /* SIGHUP */
    int stopping;                     /* how many stop signals were received */
};

static void
on_drained(void *arg)
{
    struct serve *s = arg;
    log_info("all connections closed; exiting");
    (void)event_base_loopexit(s->base, NULL);
}

/* evsignal_new: SIGTERM and SIGINT */
static void
on_stop_signal(evutil_socket_t sig, short what, void *arg)
{
    struct serve *s = arg;
    (void)what;
    s->stopping++;
    if (s->stopping > 1) {
        log_warn("second stop signal (%d): exiting now", (int)sig);
        (void)event_base_loopbreak(s->base);
        return;
    }
    log_info("signal %d: draining (send it again to exit at once)", (int)sig);
    gw_server_drain(s->srv, on_drained, s);
}

/* upstream.checksum_trailers of cfg, with the probe's answer for "auto". */
static void
apply_trailers(struct serve *s, const struct gw_config *cfg)
{
    bool on = cfg->upstream.checksum_trailers == GW_TRAILERS_FORWARD ||
              (cfg->upstream.checksum_trailers == GW_TRAILERS_AUTO && s->trailers_probed &&
               s->trailers_supported);
    gw_proxy_set_trailers(s->proxy, on);
    gw_metrics.checksum_trailers_forwarded = on ? 1 : 0;
}

/* gw_trailer_probe_done_fn */
static void
on_trailers_probed(void *arg, bool supported)
{
    struct serve *s = arg;
    s->trailers_probed = true;
    s->trailers_supported = supported;
    apply_trailers(s, s->cfg);
}

/* The bucket the trailer probe writes in: the s3 election's, else the first fence rule's. */
static const char *
probe_bucket(const struct gw_config *cfg)
{
    if (cfg->election.backend == GW_ELECT_S3) {
        return cfg->election.bucket;
    }
    return cfg->nfences > 0 ? cfg->fences[0].bucket : NULL;
}

/* Sets up what upstream.checksum_trailers says: the start-up probe for "auto". */
static int
start_trailers(struct serve *s)
{
    const struct gw_config *cfg = s->cfg;
    apply_trailers(s, cfg);
    if (cfg->upstream.checksum_trailers == GW_TRAILERS_FORWARD) {
        log_info("client checksum trailers are verified and forwarded as trailers "
                 "(upstream.checksum_trailers: forward)");
    } else if (cfg->upstream.checksum_trailers == GW_TRAILERS_VERIFY) {
        log_info("client checksum trailers are verified here, not forwarded "
                 "(upstream.checksum_trailers: verify)");
    } else if (probe_bucket(cfg) == NULL) {
        log_info("client checksum trailers are verified here, not forwarded: "
                 "upstream.checksum_trailers \"auto\" probes the upstream in the s3 election "
                 "bucket or a fenced bucket, and there is none (set \"forward\" for an upstream "
                 "that takes them)");
    } else {
        const char *prefix = cfg->election.prefix != NULL ? cfg->election.prefix : "fencegate/";
        s->trprobe = gw_trailer_probe_start(s->base, s->s3c, probe_bucket(cfg), prefix,
                                            on_trailers_probed, s);
        if (s->trprobe == NULL) {
            log_error("out of memory");
            return ERR_NOMEM;
        }
    }
    return 0;
}

/* evsignal_new: SIGHUP */
static void
on_reload_signal(evutil_socket_t sig, short what, void *arg)
{
    struct serve *s = arg;
    char errbuf[512];
    struct gw_config *cfg = NULL;
    (void)sig;
    (void)what;
    if (s->nold == SERVE_MAX_OLD_CONFIGS) {
        log_error("reload refused: too many reloads in this process; restart it");
        return;
    }
    if (gw_config_load(s->cfg->path, &cfg, errbuf, sizeof(errbuf)) != 0) {
        log_error("reload failed, keeping the running configuration: %s", errbuf);
        return;
    }
    /* Listeners and the data directory are bound at start: changing them needs a restart. */
    gw_server_set_config(s->srv, cfg);
    gw_proxy_set_config(s->proxy, cfg);
    if (s->uploads != NULL) {
        gw_upload_set_config(s->uploads, cfg);
    }
    /* The one signer: forwarded requests, the election, aborts and probes alike. */
    if (gw_s3client_set_config(s->s3c, cfg) != 0) {
        log_warn("requests to the upstream keep being signed with the previous upstream settings");
    }
    apply_trailers(s, cfg);
    (void)log_set_level(cfg->log_level);
    s->old[s->nold++] = s->cfg;
    s->cfg = cfg;
    log_info("configuration reloaded from %s", cfg->path);
}

/* EV_READ on store_completion_fd: run the finished store callbacks. */
static void
on_store_completion(evutil_socket_t fd, short what, void *arg)
{
    struct serve *s = arg;
    (void)fd;
    (void)what;
    (void)store_dispatch_completions(s->store);
}

static int
open_store(struct serve *s, char *errbuf, size_t errlen)
{
    struct store_opts o;
    store_opts_init(&o);
    o.data_dir = s->cfg->data_dir;
    o.audit_max_records = s->cfg->audit.max_records;
    o.audit_max_per_lock = s->cfg->audit.max_records_per_lock;
    if (s->cfg->audit.queue_max != 0) {
        o.queue_max = s->cfg->audit.queue_max;
    }
    o.audit_max_age_ms = (uint64_t)s->cfg->audit.retention_days * 24u * 3600u * 1000u;
    int rc = store_open(&o, &s->store, errbuf, errlen);
    if (rc != 0) {
        return rc;
    }
    s->store_ev = event_new(s->base, store_completion_fd(s->store), EV_READ | EV_PERSIST,
                            on_store_completion, s);
    if (s->store_ev == NULL || event_add(s->store_ev, NULL) != 0) {
        (void)snprintf(errbuf, errlen, "cannot watch the store's completion fd");
        return ERR_NOMEM;
    }
    s->fence = gw_fence_new(s->base, s->store);
    if (s->fence == NULL) {
        (void)snprintf(errbuf, errlen, "out of memory");
        return ERR_NOMEM;
    }
    return 0;
}

/* elect_check_fn: the asynchronous end of fence_lookup. */
struct lookup {
    gw_fence_granted_done_fn *done; /* the fence's callback */
    void *arg;                      /* and its argument */
};

static void
on_epoch_checked(void *arg, int err, bool granted)
{
    struct lookup *lu = arg;
    lu->done(lu->arg, err, granted);
    free(lu);
}

/* gw_fence_granted_fn: G4 through the election (cache, then the epoch file). */
static int
fence_lookup(void *arg, const char *lock, uint64_t epoch, gw_fence_granted_done_fn *done,
             void *done_arg)
{
    struct serve *s = arg;
    struct lookup *lu = malloc(sizeof(*lu));
    if (lu == NULL) {
        return ERR_NOMEM;
    }
    lu->done = done;
    lu->arg = done_arg;
    int rc = elect_epoch_check(s->elect, lock, epoch, on_epoch_checked, lu);
    if (rc != 0) {
        free(lu); /* decided now (1), or an error: no callback */
    }
    return rc;
}

/* gw_fence_windows.peek */
static int
window_peek(void *arg, const char *lock, uint64_t epoch, uint64_t now, struct elect_window *w)
{
    struct serve *s = arg;
    return elect_window_peek(s->elect, lock, epoch, now, w);
}

/* gw_fence_windows.read */
static int
window_read(void *arg, const char *lock, uint64_t epoch, elect_window_fn *cb, void *cb_arg)
{
    struct serve *s = arg;
    return elect_window_read(s->elect, lock, epoch, cb, cb_arg);
}

/* elect_learn_fn: the fence learns every epoch the election learns. */
static void
on_epoch_learned(void *arg, const char *lock, uint64_t epoch)
{
    struct serve *s = arg;
    gw_fence_learn(s->fence, lock, epoch);
}

static int
open_election(struct serve *s, char *errbuf, size_t errlen)
{
    const struct gw_config *cfg = s->cfg;
    struct elect_backend *be = NULL;
    if (cfg->election.backend == GW_ELECT_NONE) {
        return 0;
    }
    if (cfg->election.backend == GW_ELECT_DIR) {
        int rc = elect_backend_dir_new(s->base, cfg->election.path, &be, errbuf, errlen);
        if (rc != 0) {
            return rc;
        }
    } else {
        be = gw_elect_s3_new(s->s3c, cfg->election.bucket, errbuf, errlen);
        if (be == NULL) {
            return ERR_INVAL;
        }
    }
    struct elect_opts o;
    elect_opts_init(&o);
    o.base = s->base;
    o.backend = be;
    o.store = s->store;
    o.prefix = cfg->election.prefix;
    o.granted_by = cfg->gateway_id;
    o.default_lease_ms = cfg->election.default_lease_ms;
    o.min_lease_ms = cfg->election.min_lease_ms;
    o.max_lease_ms = cfg->election.max_lease_ms;
    o.keep_epochs = cfg->election.keep_epochs;
    o.shared = cfg->election.shared;
    o.shared_window_ms = cfg->election.shared_window_ms;
    o.commit_margin_ms = cfg->fencing.commit_margin_ms;
    int rc = elect_new(&o, &s->elect); /* owns be from here on, even on failure */
    if (rc != 0) {
        (void)snprintf(errbuf, errlen, "election: %s", err_str(rc));
        return rc;
    }
    rc = elect_start(s->elect); /* the precondition self-test; retried on its own */
    if (rc != 0) {
        log_warn("election self-test could not start yet (%s); it will be retried", err_str(rc));
    }
    gw_fence_set_lookup(s->fence, fence_lookup, s);
    const struct gw_fence_windows win = {
        .peek = window_peek,
        .read = window_read,
        .arg = s,
        .commit_margin_ms = cfg->fencing.commit_margin_ms,
        .complete_margin_ms = cfg->fencing.complete_margin_ms,
    };
    gw_fence_set_windows(s->fence, &win);
    elect_set_learn(s->elect, on_epoch_learned, s);
    log_info("election on %s (%s; write windows: commit margin %u ms, complete margin %u ms%s)",
             cfg->election.backend == GW_ELECT_DIR ? cfg->election.path : cfg->election.bucket,
             cfg->election.shared ? "shared" : "this gateway only", cfg->fencing.commit_margin_ms,
             cfg->fencing.complete_margin_ms, cfg->election.shared ? ", shared window capped" : "");
    return 0;
}

/* The proxy's data path on upstream.client; the internal S3 client on libcurl
 * (one client when that is curl too).  Returns 0 or ERR_NOMEM. */
static int
open_upstreams(struct serve *s)
{
    struct gw_upstream_opts uo = {
        .engine = s->cfg->upstream.client == GW_UPSTREAM_CLIENT_CURL ? GW_UPSTREAM_CURL
                                                                     : GW_UPSTREAM_LEAN,
        .connect_timeout_ms = s->cfg->upstream.connect_timeout_ms,
        .timeout_ms = s->cfg->upstream.timeout_ms,
        .max_connections = s->cfg->upstream.max_connections,
        .ca_file = s->cfg->upstream.ca_file,
        .tls_verify = s->cfg->upstream.tls_verify,
    };
    s->up = gw_upstream_new(s->base, &uo);
    if (s->up == NULL) {
        return ERR_NOMEM;
    }
    uo.engine = GW_UPSTREAM_CURL;
    s->up_s3 =
        s->cfg->upstream.client == GW_UPSTREAM_CLIENT_CURL ? s->up : gw_upstream_new(s->base, &uo);
    return s->up_s3 != NULL ? 0 : ERR_NOMEM;
}

static void
serve_cleanup(struct serve *s)
{
    gw_server_free(s->srv);
    elect_free(s->elect);              /* before the S3 client: the s3 backend uses it */
    gw_trailer_probe_free(s->trprobe); /* before the S3 client: cancels its calls */
    gw_proxy_free(s->proxy);
    if (s->fence != NULL) {
        gw_fence_set_uploads(s->fence, NULL, NULL); /* the last store callbacks abort nothing */
    }
    gw_upload_free(s->uploads); /* before the S3 client: cancels its aborts */
    gw_bucket_probe_free(s->probe);
    gw_s3client_free(s->s3c); /* after its users, before the upstream */
    if (s->up_s3 != s->up) {
        gw_upstream_free(s->up_s3);
    }
    gw_upstream_free(s->up);
    if (s->store_ev != NULL) {
        event_free(s->store_ev);
    }
    if (s->trim_ev != NULL) {
        event_free(s->trim_ev);
    }
    store_close(s->store);   /* commits what is queued and runs the last callbacks, */
    gw_fence_free(s->fence); /* ... some of them the fence's (advances in flight) */
    gw_sigv4_keycache_free(s->kc);
    if (s->sig_term != NULL) {
        event_free(s->sig_term);
    }
    if (s->sig_int != NULL) {
        event_free(s->sig_int);
    }
    if (s->sig_hup != NULL) {
        event_free(s->sig_hup);
    }
    if (s->base != NULL) {
        event_base_free(s->base);
    }
    for (size_t i = 0; i < s->nold; i++) {
        gw_config_free(s->old[i]);
    }
    gw_config_free(s->cfg);
}

/*
 * The heap's thresholds fixed instead of glibc's defaults.  Each upstream
 * transfer allocates read buffers (the lean client's reads of up to 128 KiB,
 * libcurl's 64 KiB receive and upload buffers) and frees them when done; with
 * tens of transfers in flight the heap's top moves by megabytes, and the
 * default 128 KiB trim threshold hands those pages back (brk) only to fault
 * them in again on the next request: at 64 connections that doubled the CPU
 * per PUT (make bench-proxy, README "Performance notes").  Keeping up to
 * SERVE_TRIM_BYTES of free heap stops the churn; setting M_MMAP_THRESHOLD also
 * stops glibc raising it (and the trim threshold with it) as it sees large
 * frees.
 */
#define SERVE_TRIM_BYTES (32 * 1024 * 1024)
#define SERVE_MMAP_BYTES (1024 * 1024)

static void
tune_malloc(void)
{
    if (mallopt(M_MMAP_THRESHOLD, SERVE_MMAP_BYTES) != 1 ||
        mallopt(M_TRIM_THRESHOLD, SERVE_TRIM_BYTES) != 1) {
        log_warn("mallopt failed; the heap keeps glibc's default thresholds");
    }
}

/*
 * The other side of SERVE_TRIM_BYTES: what the heap keeps under load it hands
 * back once load stops.  Every SERVE_IDLE_TRIM_MS, a gateway that received no
 * request since the last tick, has none in flight and received some since the
 * heap was last trimmed calls malloc_trim, which returns the free pages of the
 * whole heap, not only its top (make bench-proxy: 26 MiB resident after the
 * 64-connection runs, 14 MiB once trimmed).  A steady load never triggers it.
 */
#define SERVE_IDLE_TRIM_MS 1000

static void
on_trim_tick(evutil_socket_t fd, short what, void *arg)
{
    struct serve *s = arg;
    (void)fd;
    (void)what;
    uint64_t n = gw_metrics.requests;
    bool idle = n == s->trim_seen && gw_metrics.requests_active == 0;
    s->trim_seen = n;
    if (idle && n != s->trim_done) {
        s->trim_done = n;
        (void)malloc_trim(0);
    }
}

static int
start_idle_trim(struct serve *s)
{
    s->trim_ev = event_new(s->base, -1, EV_PERSIST, on_trim_tick, s);
    struct timeval tv = {SERVE_IDLE_TRIM_MS / 1000,
                         (suseconds_t)(SERVE_IDLE_TRIM_MS % 1000) * 1000};
    return s->trim_ev != NULL && event_add(s->trim_ev, &tv) == 0 ? 0 : ERR_NOMEM;
}

/*
 * The event loop, with epoll's changelist: event_del and event_add of one fd
 * within a loop iteration (libcurl's socket callback moving a connection
 * between read and write, bufferevents re-arming) reach the kernel as one
 * epoll_ctl, or none, at the next dispatch instead of one each: 8.0 -> 5.1
 * epoll_ctl per PUT (make bench-proxy BENCH_SYSCALLS).  libevent's epoll
 * backend retries a MOD of an fd closed and reopened meanwhile as an ADD; the
 * flag's caveat is fds dup()ed and watched under both numbers, which nothing
 * here does.  Other backends ignore the flag.
 */
static struct event_base *
new_event_base(void)
{
    struct event_config *ec = event_config_new();
    if (ec == NULL) {
        return NULL;
    }
    (void)event_config_set_flag(ec, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    struct event_base *base = event_base_new_with_config(ec);
    event_config_free(ec);
    return base;
}

int
gw_cmd_serve(int argc, char **argv)
{
    struct serve s = {0};
    char errbuf[512];
    const char *path = gw_cli_config_path(argc, argv);
    int status = 1;

    if (path == NULL) {
        (void)fprintf(stderr, "usage: fencegate serve -c FILE\n");
        return 2;
    }
    if (gw_config_load(path, &s.cfg, errbuf, sizeof(errbuf)) != 0) {
        (void)fprintf(stderr, "fencegate: %s: %s\n", path, errbuf);
        return 1;
    }
    (void)log_set_level(s.cfg->log_level);
    (void)signal(SIGPIPE, SIG_IGN);
    tune_malloc();

    s.base = new_event_base();
    if (s.base == NULL) {
        log_error("cannot create the event loop");
        goto out;
    }
    if (open_upstreams(&s) != 0) {
        log_error("cannot create the upstream client");
        goto out;
    }
    s.s3c = gw_s3client_new(s.up_s3, s.cfg, errbuf, sizeof(errbuf));
    if (s.s3c == NULL) {
        log_error("%s", errbuf);
        goto out;
    }
    s.proxy = gw_proxy_new(s.cfg, s.up, s.s3c, errbuf, sizeof(errbuf));
    if (s.proxy == NULL) {
        log_error("%s", errbuf);
        goto out;
    }
    s.kc = gw_sigv4_keycache_new();
    if (s.kc == NULL) {
        log_error("out of memory");
        goto out;
    }
    if (open_store(&s, errbuf, sizeof(errbuf)) != 0) {
        log_error("data_dir %s: %s", s.cfg->data_dir, errbuf);
        goto out;
    }
    if (open_election(&s, errbuf, sizeof(errbuf)) != 0) {
        log_error("%s", errbuf);
        goto out;
    }
    if (start_trailers(&s) != 0) {
        goto out;
    }
    s.uploads = gw_upload_new(s.store, s.s3c, s.cfg);
    if (s.uploads == NULL) {
        log_error("out of memory");
        goto out;
    }
    gw_fence_set_uploads(s.fence, s.uploads, gw_upload_on_advance);
    s.probe = gw_bucket_probe_new(s.s3c);
    if (s.probe == NULL) {
        log_error("out of memory");
        goto out;
    }
    s.router.probe = s.probe;
    s.router.elect = s.elect;
    s.router.upstream = s.up;
    s.router.fence = s.fence;
    s.router.store = s.store;
    s.router.proxy = s.proxy;
    s.router.kc = s.kc;
    s.router.ready = true;
    s.srv = gw_server_new(s.base, s.cfg, gw_router_on_request, &s.router, errbuf, sizeof(errbuf));
    if (s.srv == NULL) {
        log_error("%s", errbuf);
        goto out;
    }
    s.sig_term = evsignal_new(s.base, SIGTERM, on_stop_signal, &s);
    s.sig_int = evsignal_new(s.base, SIGINT, on_stop_signal, &s);
    s.sig_hup = evsignal_new(s.base, SIGHUP, on_reload_signal, &s);
    if (s.sig_term == NULL || s.sig_int == NULL || s.sig_hup == NULL ||
        evsignal_add(s.sig_term, NULL) != 0 || evsignal_add(s.sig_int, NULL) != 0 ||
        evsignal_add(s.sig_hup, NULL) != 0) {
        log_error("cannot install signal handlers");
        goto out;
    }
    if (start_idle_trim(&s) != 0) {
        log_error("out of memory");
        goto out;
    }
    for (size_t i = 0; i < s.cfg->nlisten; i++) {
        log_info("listening on %s:%u%s (pid %ld)", s.cfg->listen[i].host,
                 (unsigned)gw_server_port(s.srv, i), s.cfg->listen[i].tls_cert ? " (TLS)" : "",
                 (long)getpid());
    }
    log_info("upstream %s, region %s", s.cfg->upstream.endpoint, s.cfg->upstream.region);
    if (event_base_dispatch(s.base) != 0) {
        log_error("event loop failed");
        goto out;
    }
    status = 0;
out:
    serve_cleanup(&s);
    return status;
}
