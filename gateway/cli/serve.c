#define LOG_MODULE "serve"
#include "gateway/cli/serve.h"

#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "election/backend_dir.h"
#include "election/elect.h"
#include "gateway/base/config.h"
#include "gateway/base/inflight.h"
#include "gateway/base/metrics.h"
#include "gateway/cli/check_config.h"
#include "gateway/cli/sdnotify.h"
#include "gateway/cli/workers.h"
#include "gateway/fence/fence.h"
#include "gateway/fence/remote.h"
#include "gateway/http/access.h"
#include "gateway/http/http.h"
#include "gateway/http/relay.h"
#include "gateway/net/loopmsg.h"
#include "gateway/proxy/proxy.h"
#include "gateway/proxy/router.h"
#include "gateway/proxy/upload.h"
#include "gateway/s3/sigv4.h"
#include "gateway/s3client/bucket_probe.h"
#include "gateway/s3client/cond_probe.h"
#include "gateway/s3client/elect_s3.h"
#include "gateway/s3client/s3client.h"
#include "gateway/s3client/trailer_probe.h"
#include "gateway/upstream/upstream.h"
#include "store/store.h"

/* Configurations replaced by SIGHUP stay alive until exit: requests in flight
 * may still point into them.  A reload of an unchanged file (logrotate's) replaces
 * nothing, so only edits add one (a few KB each, and 576 bytes per loop). */

/* A reload's hold: what it waits for (DESIGN "The reload hold"). */
struct serve_hold {
    uint32_t gen;   /* the reload's configuration generation */
    uint64_t slots; /* the writes it waits for: those into its changed buckets' slots */
};

struct serve {
    struct event_base *base; /* the one event loop */
    struct gw_config *cfg;   /* owned; in force */
    struct gw_config **old;  /* owned; replaced ones (generations 0..nold-1), freed at exit */
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
    struct gw_cond_probe *cprobe;     /* owned; the conditional-write probe, or NULL */
    bool cprobe_on_reload;            /* it started at a SIGHUP: "on" unmet is not fatal */
    bool cond_failed;                 /* "on", and the store does not honour them: exit 1 */
    struct gw_http_heap_trim *trim;   /* owned; hands the heap back once load stops */
    struct event *sig_term;           /* SIGTERM */
    struct event *sig_int;            /* SIGINT */
    struct event *sig_hup;            /* SIGHUP */
    struct event *ready_ev;           /* owned; tells systemd once the gateway is ready */
    struct event *watchdog_ev;        /* owned; systemd's watchdog, or NULL */
    int stopping;                     /* how many stop signals were received */
    uint32_t loops;                   /* event loops serving clients (workers) */
    struct gw_loopq *ctlq;            /* owned; the worker loops' messages to this loop */
    struct gw_fence_hub *hub;         /* owned; the fence's side of their crossings */
    struct gw_relay_hub *relay;       /* owned; what they hand to this loop's server */
    struct gw_workers *workers;       /* owned; the loops beside this one, or NULL */
    struct gw_fair_table *fair;       /* a reference; the client table the loops share */
    struct gw_handout *handout;       /* owned; "accept": "acceptor" with several loops */
    struct gw_upstream_streak *reach; /* owned; the unreachable streak the loops share, or NULL */
    struct gw_upstream_cap *cap;      /* owned; the loops' cap on upstream connections, or NULL */
    bool drained;                     /* this loop's connections and detached writes have ended */
    struct serve_hold holding[GW_FENCE_HOLDS_MAX]; /* reloads waiting for older writes */
    size_t nholding;                               /* their number */
    struct event *hold_ev;                         /* owned; polls those writes while any waits */
    bool workers_ended;                            /* every worker loop has ended */
};

/* Exits once this loop's connections and every worker loop have ended: a
 * worker's fenced writes need this loop until their last release. */
static void
maybe_exit(struct serve *s)
{
    if (s->drained && (s->workers == NULL || s->workers_ended)) {
        log_info("all connections closed; exiting");
        (void)event_base_loopexit(s->base, NULL);
    }
}

/* gw_proxy_drain's done: no write of this loop runs on without its client. */
static void
on_writes_ended(void *arg)
{
    struct serve *s = arg;
    s->drained = true;
    maybe_exit(s);
}

/* gw_server_drain's done: this loop's last connection is gone. */
static void
on_drained(void *arg)
{
    struct serve *s = arg;
    gw_proxy_drain(s->proxy, on_writes_ended, s);
}

/* gw_workers_opts.exited */
static void
on_workers_ended(void *arg)
{
    struct serve *s = arg;
    s->workers_ended = true;
    maybe_exit(s);
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
        gw_workers_stop(s->workers);
        (void)event_base_loopbreak(s->base);
        return;
    }
    log_info("signal %d: draining (send it again to exit at once)", (int)sig);
    (void)gw_sdnotify_send("STOPPING=1\nSTATUS=draining");
    gw_workers_drain(s->workers);
    gw_server_drain(s->srv, on_drained, s);
}

/* Wires the trailer decision (gw_trailer_probe_forwards) into the proxy and /metrics. */
static void
apply_trailers(struct serve *s, const struct gw_config *cfg)
{
    bool on = gw_trailer_probe_forwards(cfg->upstream.checksum_trailers, s->trailers_probed,
                                        s->trailers_supported);
    gw_proxy_set_trailers(s->proxy, on);
    gw_workers_set_trailers(s->workers, on);
    GW_GAUGE_SET(checksum_trailers_forwarded, on ? 1 : 0);
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
    } else if (gw_s3client_probe_bucket(cfg) == NULL) {
        log_info("client checksum trailers are verified here, not forwarded: "
                 "upstream.checksum_trailers \"auto\" probes the upstream in the s3 election "
                 "bucket or a fenced bucket, and there is none (set \"forward\" for an upstream "
                 "that takes them)");
    } else {
        const char *prefix = cfg->election.prefix != NULL ? cfg->election.prefix : "fencegate/";
        s->trprobe = gw_trailer_probe_start(s->base, s->s3c, gw_s3client_probe_bucket(cfg), prefix,
                                            on_trailers_probed, s);
        if (s->trprobe == NULL) {
            log_error("out of memory");
            return ERR_NOMEM;
        }
    }
    return 0;
}

/* The lock table's bound, and every fences rule's lock labelled whatever it (metrics.h). */
static int
apply_metrics(const struct gw_config *cfg)
{
    int rc = gw_metrics_locks_init(cfg->metrics.max_locks);
    for (size_t i = 0; rc == 0 && i < cfg->nfences; i++) {
        rc = gw_metrics_lock_pin(cfg->fences[i].lock);
    }
    return rc;
}

/* gw_cond_probe_done_fn */
static void
on_cond_probed(void *arg, const struct gw_cond_caps *caps)
{
    struct serve *s = arg;
    gw_proxy_set_cond_caps(s->proxy, caps);
    gw_workers_set_cond_caps(s->workers, caps);
    bool active = gw_proxy_cond_active(s->proxy);
    GW_GAUGE_SET(conditional_writes, active ? 1 : 0);
    enum gw_cond_writes mode = s->cfg->fencing.conditional_writes;
    if (mode == GW_COND_ON && !caps->put && s->cprobe_on_reload) {
        log_error("fencing.conditional_writes is \"on\" but the store does not honour "
                  "conditional PutObjects: fenced writes go without conditions (a start with "
                  "this configuration stops; set \"auto\" or \"off\")");
    } else if (mode == GW_COND_ON && !caps->put) {
        log_error("fencing.conditional_writes is \"on\" but the store does not honour "
                  "conditional PutObjects: stopping (set \"auto\" or \"off\" to run without "
                  "them)");
        s->cond_failed = true;
        (void)event_base_loopbreak(s->base);
        return;
    }
    log_info("conditional writes %s (fencing.conditional_writes: %s)%s",
             active ? "ON: fenced overwrites carry If-Match / If-None-Match" : "OFF",
             mode == GW_COND_ON    ? "on"
             : mode == GW_COND_OFF ? "off"
                                   : "auto",
             active ? "" : (caps->put ? "" : "; the store does not honour conditional PutObjects"));
}

/* Whether cfg asks for conditional writes anywhere: not "off" everywhere (a
 * rule may still turn them on). */
static bool
cond_wanted(const struct gw_config *cfg)
{
    bool any_rule_on = false;
    for (size_t i = 0; i < cfg->nfences; i++) {
        any_rule_on = any_rule_on || cfg->fences[i].conditional_writes == GW_COND_RULE_ON;
    }
    return cfg->fencing.conditional_writes != GW_COND_OFF || any_rule_on;
}

/* Sets up what fencing.conditional_writes says: the probe unless "off"
 * everywhere.  At start, or at the first reload that asks for them. */
static int
start_cond(struct serve *s)
{
    const struct gw_config *cfg = s->cfg;
    if (!cond_wanted(cfg)) {
        log_info("conditional writes OFF (fencing.conditional_writes: off)");
        return 0;
    }
    if (gw_s3client_probe_bucket(cfg) == NULL) {
        if (cfg->fencing.conditional_writes == GW_COND_ON) {
            log_error("fencing.conditional_writes \"on\" probes the store in the s3 election "
                      "bucket or a fenced bucket, and there is none");
            return ERR_INVAL;
        }
        log_info("conditional writes OFF: \"auto\" probes the store in the s3 election bucket "
                 "or a fenced bucket, and there is none");
        return 0;
    }
    const char *prefix = cfg->election.prefix != NULL ? cfg->election.prefix : "fencegate/";
    s->cprobe = gw_cond_probe_start(s->base, s->s3c, gw_s3client_probe_bucket(cfg), prefix,
                                    on_cond_probed, s);
    if (s->cprobe == NULL) {
        log_error("out of memory");
        return ERR_NOMEM;
    }
    return 0;
}

/* gw_config_warn_fn: a configuration's warning, in the log */
static void
log_config_warning(void *arg, const char *text)
{
    (void)arg;
    log_warn("configuration: %s", text);
}

/* How often a reload's hold looks at the writes it waits for. */
#define SERVE_HOLD_POLL_MS 50L

static void
arm_hold_poll(struct serve *s)
{
    const struct timeval tv = {0, SERVE_HOLD_POLL_MS * 1000};
    (void)evtimer_add(s->hold_ev, &tv);
}

/* Whether every object write into h's buckets' slots classified under a configuration
 * older than h's has ended (the configurations replaced so far are s->old[],
 * generations 0..nold-1). */
static bool
older_writes_ended(const struct serve *s, const struct serve_hold *h)
{
    for (size_t i = 0; i < s->nold && s->old[i]->generation < h->gen; i++) {
        if (!gw_inflight_ended(s->old[i]->inflight, h->slots, NULL)) {
            return false;
        }
    }
    return true;
}

/* evtimer: the reload holds' poll */
static void
on_hold_poll(evutil_socket_t fd, short what, void *arg)
{
    struct serve *s = arg;
    (void)fd;
    (void)what;
    size_t kept = 0;
    for (size_t i = 0; i < s->nholding; i++) {
        if (older_writes_ended(s, &s->holding[i])) {
            log_info("reload %u: the object writes begun before it have ended; the locks it "
                     "widened take fenced writes again after the commit margin",
                     (unsigned)s->holding[i].gen);
            gw_fence_reload_ended(s->fence, s->holding[i].gen);
        } else {
            s->holding[kept++] = s->holding[i];
        }
    }
    s->nholding = kept;
    if (kept > 0) {
        arm_hold_poll(s);
    }
}

/*
 * The reload to cfg widens some locks (a key's lock changed, or a key is fenced that
 * was not): their fenced writes under cfg wait, in the fence, until every object
 * write classified under an older configuration into a bucket whose rules changed
 * has ended, on every loop, and then the commit margin (DESIGN "The reload hold").
 * Called before any loop serves cfg.  Returns 0, or an error: the reload must not
 * go on.
 */
static int
hold_widened(struct serve *s, const struct gw_config *cfg)
{
    size_t n = gw_config_locks_widened(s->cfg, cfg, NULL, 0);
    if (n == 0 || s->fence == NULL) {
        return 0;
    }
    const char **locks = calloc(n, sizeof(*locks));
    if (locks == NULL ||
        (s->hold_ev == NULL && (s->hold_ev = evtimer_new(s->base, on_hold_poll, s)) == NULL)) {
        free(locks);
        return ERR_NOMEM;
    }
    (void)gw_config_locks_widened(s->cfg, cfg, locks, n);
    int rc = gw_fence_reload_hold(s->fence, cfg->generation, locks, n);
    if (rc == 0) {
        log_info("reload %u: %zu lock(s) cover keys they did not (%s%s): their fenced writes "
                 "wait until the object writes begun before the reload into the buckets whose "
                 "rules changed have ended",
                 (unsigned)cfg->generation, n, locks[0], n > 1 ? ", ..." : "");
        struct serve_hold *h = &s->holding[s->nholding++];
        h->gen = cfg->generation;
        h->slots = gw_config_buckets_widened(s->cfg, cfg); /* the older writes it waits for */
        arm_hold_poll(s);
    }
    free(locks);
    return rc;
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
    /* systemd hears of every reload, failed or not: READY=1 ends it either way */
    (void)gw_sdnotify_reloading();
    if (gw_config_load(s->cfg->path, &cfg, errbuf, sizeof(errbuf)) != 0) {
        log_error("reload failed, keeping the running configuration: %s", errbuf);
        (void)gw_sdnotify_send("READY=1\nSTATUS=reload failed; the previous configuration runs");
        return;
    }
    /* "on" needs the probe's answer, and the probe a bucket: without one every fenced
     * write would be answered 503 (at start the same configuration is refused) */
    if (s->cprobe == NULL && cond_wanted(cfg) && cfg->fencing.conditional_writes == GW_COND_ON &&
        gw_s3client_probe_bucket(cfg) == NULL) {
        log_error("reload refused, keeping the running configuration: fencing.conditional_writes "
                  "\"on\" probes the store in the s3 election bucket or a fenced bucket, and "
                  "there is none");
        gw_config_free(cfg);
        (void)gw_sdnotify_send("READY=1\nSTATUS=reload failed; the previous configuration runs");
        return;
    }
    if (gw_config_same_source(s->cfg, cfg)) {
        /* the same bytes, the same settings: nothing to swap or hold */
        gw_config_free(cfg);
        if (gw_access_open(s->cfg->access_log, errbuf, sizeof(errbuf)) != 0) {
            log_error("%s; the access log goes on as before", errbuf);
        }
        log_info("configuration reloaded from %s (unchanged: the access log reopened)",
                 s->cfg->path);
        (void)gw_sdnotify_send("READY=1\nSTATUS=serving");
        return;
    }
    struct gw_config **old = realloc(s->old, (s->nold + 1) * sizeof(struct gw_config *));
    if (old == NULL) {
        log_error("reload refused, keeping the running configuration: out of memory");
        gw_config_free(cfg);
        (void)gw_sdnotify_send("READY=1\nSTATUS=reload failed; the previous configuration runs");
        return;
    }
    s->old = old;
    cfg->generation = s->cfg->generation + 1;
    int hrc =
        (cfg->inflight = gw_inflight_new(s->loops)) == NULL ? ERR_NOMEM : hold_widened(s, cfg);
    if (hrc != 0) {
        log_error("reload refused, keeping the running configuration: %s",
                  hrc == ERR_NOMEM ? "out of memory" : "too many reloads wait for older writes");
        gw_config_free(cfg);
        (void)gw_sdnotify_send("READY=1\nSTATUS=reload failed; the previous configuration runs");
        return;
    }
    /* Listeners and the data directory are bound at start: changing them needs a restart. */
    gw_server_set_config(s->srv, cfg);
    gw_inflight_moved_on(s->cfg->inflight, 0); /* this loop classifies under cfg from now */
    gw_proxy_set_config(s->proxy, cfg);
    gw_workers_set_config(s->workers, cfg);
    if (gw_config_workers(cfg) != s->loops) {
        log_warn("workers: %u event loops serve on until a restart (the new value takes one)",
                 (unsigned)s->loops);
    }
    if (s->loops > 1 && (cfg->accept == GW_ACCEPT_ACCEPTOR) != (s->handout != NULL)) {
        log_warn("accept: the loops keep getting connections as at start until a restart (the "
                 "new value takes one)");
    }
    if (s->uploads != NULL) {
        gw_upload_set_config(s->uploads, cfg);
    }
    /* The one signer: forwarded requests, the election, aborts and probes alike. */
    if (gw_s3client_set_config(s->s3c, cfg) != 0) {
        log_warn("requests to the upstream keep being signed with the previous upstream settings");
    }
    apply_trailers(s, cfg);
    if (apply_metrics(cfg) != 0) {
        log_warn("out of memory: some fences rules' locks may count under lock=\"_other\"");
    }
    (void)log_set_level(cfg->log_level);
    (void)log_set_format(cfg->log_format);
    /* reopened even when unchanged: logrotate renamed the file and sent SIGHUP */
    if (gw_access_open(cfg->access_log, errbuf, sizeof(errbuf)) != 0) {
        log_error("%s; the access log goes on as before", errbuf);
    }
    s->old[s->nold++] = s->cfg;
    s->cfg = cfg;
    if (s->cprobe == NULL && cond_wanted(cfg)) {
        /* off until now: the probe never ran, and "on" or a rule's "on" waits for it */
        s->cprobe_on_reload = true;
        if (start_cond(s) != 0) {
            log_error("conditional writes stay off: the probe could not start");
        }
    } else {
        GW_GAUGE_SET(conditional_writes, gw_proxy_cond_active(s->proxy) ? 1 : 0);
    }
    log_info("configuration reloaded from %s", cfg->path);
    gw_config_warnings(cfg, log_config_warning, NULL);
    (void)gw_sdnotify_send("READY=1\nSTATUS=serving");
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
    o.audit_max_per_principal = s->cfg->audit.max_records_per_principal;
    o.audit_coalesce_ms = s->cfg->audit.coalesce_window_ms;
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

/* elect_lease_fn: lease events become the per-lock series. */
static void
on_lease_event(void *arg, const char *lock, enum elect_lease_event ev, uint64_t epoch,
               uint64_t until_ms)
{
    (void)arg;
    static const enum gw_metrics_lease_event map[] = {
        [ELECT_EV_GRANT] = GW_LEASE_GRANT,       [ELECT_EV_RENEW] = GW_LEASE_RENEW,
        [ELECT_EV_RELEASE] = GW_LEASE_RELEASE,   [ELECT_EV_EXPIRE] = GW_LEASE_EXPIRE,
        [ELECT_EV_TAKEOVER] = GW_LEASE_TAKEOVER,
    };
    if ((unsigned)ev < sizeof(map) / sizeof(map[0])) {
        gw_metrics_lease(lock, map[ev], epoch, until_ms);
    }
}

/* elect_be_timing_fn: fencegate_election_backend_seconds{op}. */
static void
on_backend_timing(void *arg, enum elect_be_op op, uint64_t ns)
{
    (void)arg;
    if ((unsigned)op < GW_BEOP_COUNT) { /* the two enums list the operations alike */
        gw_histo_observe(&gw_metrics.backend_seconds[op], ns);
    }
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
    elect_backend_set_timing(be, on_backend_timing, s);
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
    gw_fence_follow_election(s->fence, s->elect, cfg->fencing.commit_margin_ms,
                             cfg->fencing.complete_margin_ms);
    elect_set_lease_observer(s->elect, on_lease_event, s);
    log_info("election on %s (%s; write windows: commit margin %u ms, complete margin %u ms%s)",
             cfg->election.backend == GW_ELECT_DIR ? cfg->election.path : cfg->election.bucket,
             cfg->election.shared ? "shared" : "this gateway only", cfg->fencing.commit_margin_ms,
             cfg->fencing.complete_margin_ms, cfg->election.shared ? ", shared window capped" : "");
    return 0;
}

/* The proxy's data path on upstream.client; the internal S3 client on libcurl
 * (one client when that is curl too).  Several loops: one unreachable streak
 * for every loop's proxy client, so /readyz answers for the process, and one
 * cap on upstream connections for every loop's lean proxy client (DESIGN
 * "Worker loops"), whose wake-ups need this loop's queue, made here; one
 * loop: the client's own.  Returns 0 or ERR_NOMEM. */
static int
open_upstreams(struct serve *s)
{
    if (s->loops > 1) {
        if ((s->reach = gw_upstream_streak_new()) == NULL ||
            (s->ctlq = gw_loopq_new(s->base)) == NULL ||
            (s->cap = gw_upstream_cap_new(s->cfg->upstream.max_connections, s->loops)) == NULL) {
            return ERR_NOMEM;
        }
    }
    struct gw_loop_up lu = {.loops = s->loops, .reach = s->reach, .cap = s->cap, .q = s->ctlq};
    return gw_loop_upstreams_open(s->base, s->cfg, &lu, &s->up, &s->up_s3);
}

/* The worker loops beside this one (workers > 1), once this loop's server is up. */
static int
start_workers(struct serve *s, char *errbuf, size_t errlen)
{
    if (s->loops <= 1) {
        return 0;
    }
    if ((s->hub = gw_fence_hub_new(s->fence, s->ctlq)) == NULL ||
        (s->relay = gw_relay_hub_new(s->srv, s->ctlq)) == NULL) {
        (void)snprintf(errbuf, errlen, "out of memory");
        return ERR_NOMEM;
    }
    struct gw_workers_opts o = {
        .cfg = s->cfg,
        .tmpl = &s->router,
        .ctl_srv = s->srv,
        .fair = s->fair,
        .handout = s->handout,
        .reach = s->reach,
        .cap = s->cap,
        .ctlq = s->ctlq,
        .hub = s->fence != NULL ? s->hub : NULL,
        .relay = s->relay,
        .n = s->loops - 1,
        .exited = on_workers_ended,
        .arg = s,
    };
    s->workers = gw_workers_start(&o, errbuf, errlen);
    if (s->workers == NULL) {
        return ERR_IO;
    }
    log_info("%u event loops serve clients (workers: %u)%s", (unsigned)s->loops,
             (unsigned)s->cfg->workers,
             s->handout != NULL ? ", the control loop handing out every connection (accept: "
                                  "acceptor)"
                                : "");
    return 0;
}

static void
serve_cleanup(struct serve *s)
{
    if (s->stopping != 1 || !s->workers_ended) {
        gw_workers_stop(s->workers); /* not drained: their requests are aborted */
    }
    gw_workers_join(s->workers); /* their last releases wait in ctlq */
    if (s->ctlq != NULL) {
        gw_loopq_close(s->ctlq); /* cancels what no loop will run: the hub ends the rest */
    }
    gw_relay_hub_free(s->relay); /* after the queue: no relay starts any more */
    gw_fence_hub_free(s->hub);   /* releases the tickets held for worker loops */
    gw_server_free(s->srv);
    gw_fair_table_unref(s->fair);
    elect_free(s->elect); /* before the S3 client: the s3 backend uses it */
    gw_metrics_locks_free();
    gw_trailer_probe_free(s->trprobe); /* before the S3 client: cancels its calls */
    gw_cond_probe_free(s->cprobe);
    gw_proxy_free(s->proxy);
    if (s->fence != NULL) {
        gw_fence_set_advance_hook(s->fence, NULL,
                                  NULL); /* the last store callbacks abort nothing */
    }
    gw_upload_free(s->uploads); /* before the S3 client: cancels its aborts */
    gw_bucket_probe_free(s->probe);
    gw_s3client_free(s->s3c); /* after its users, before the upstream */
    if (s->up_s3 != s->up) {
        gw_upstream_free(s->up_s3);
    }
    gw_upstream_free(s->up);
    gw_loopq_free(s->ctlq); /* closed above; after the upstream client, whose cap posts to it */
    if (s->store_ev != NULL) {
        event_free(s->store_ev);
    }
    gw_http_heap_trim_free(s->trim);
    if (s->ready_ev != NULL) {
        event_free(s->ready_ev);
    }
    if (s->watchdog_ev != NULL) {
        event_free(s->watchdog_ev);
    }
    store_close(s->store);       /* commits what is queued and runs the last callbacks, */
    gw_fence_free(s->fence);     /* ... some of them the fence's (advances in flight) */
    gw_workers_free(s->workers); /* after the last callbacks: some hop to a worker's queue */
    gw_handout_free(s->handout); /* after every server that joined it */
    /* after every loop's upstream client */
    gw_upstream_streak_free(s->reach);
    gw_upstream_cap_free(s->cap);
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
    if (s->hold_ev != NULL) {
        event_free(s->hold_ev);
    }
    if (s->base != NULL) {
        event_base_free(s->base);
    }
    for (size_t i = 0; i < s->nold; i++) {
        gw_config_free(s->old[i]);
    }
    free(s->old);
    gw_config_free(s->cfg);
}

/*
 * systemd's readiness: READY=1 once the listeners are bound (before the loop
 * starts), the store is open and the election's start-up self-test has
 * passed, which it does on the loop; so this polls until it has, then stops.
 * A gateway whose election never becomes ready never says READY=1, and
 * systemd's start timeout judges it.
 */
#define SERVE_READY_POLL_MS 50

/* evtimer: the ready poll */
static void
on_ready_tick(evutil_socket_t fd, short what, void *arg)
{
    struct serve *s = arg;
    (void)fd;
    (void)what;
    const char *why = NULL;
    if (s->elect != NULL && !elect_ready(s->elect, &why)) {
        return;
    }
    (void)event_del(s->ready_ev);
    log_info("ready");
    (void)gw_sdnotify_send("READY=1\nSTATUS=serving");
}

/* evtimer: systemd's watchdog, at half its interval */
static void
on_watchdog_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    (void)gw_sdnotify_send("WATCHDOG=1");
}

static int
start_notify(struct serve *s)
{
    struct timeval poll = {0, (suseconds_t)SERVE_READY_POLL_MS * 1000};
    s->ready_ev = event_new(s->base, -1, EV_PERSIST, on_ready_tick, s);
    if (s->ready_ev == NULL || event_add(s->ready_ev, &poll) != 0) {
        return ERR_NOMEM;
    }
    event_active(s->ready_ev, EV_TIMEOUT, 0); /* ready at once without an election */
    uint64_t half = gw_sdnotify_watchdog_usec() / 2;
    if (half == 0) {
        return 0;
    }
    struct timeval tv = {(time_t)(half / 1000000), (suseconds_t)(half % 1000000)};
    s->watchdog_ev = event_new(s->base, -1, EV_PERSIST, on_watchdog_tick, s);
    if (s->watchdog_ev == NULL || event_add(s->watchdog_ev, &tv) != 0) {
        return ERR_NOMEM;
    }
    log_info("systemd watchdog: WATCHDOG=1 every %llu ms", (unsigned long long)(half / 1000));
    return 0;
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
    s.loops = gw_config_workers(s.cfg);
    if (apply_metrics(s.cfg) != 0 || (s.cfg->inflight = gw_inflight_new(s.loops)) == NULL) {
        (void)fprintf(stderr, "fencegate: out of memory\n");
        return 1;
    }

    (void)log_set_format(s.cfg->log_format);
    gw_config_warnings(s.cfg, log_config_warning, NULL);
    (void)signal(SIGPIPE, SIG_IGN);
    /* before the first thread (the access log's writer): a thread's first malloc binds its arena */
    gw_http_heap_tune(s.loops);
    if (gw_access_open(s.cfg->access_log, errbuf, sizeof(errbuf)) != 0) {
        log_error("%s", errbuf);
        goto out;
    }

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
    if (start_trailers(&s) != 0 || start_cond(&s) != 0) {
        goto out;
    }
    s.uploads = gw_upload_new(s.store, s.s3c, s.cfg);
    if (s.uploads == NULL) {
        log_error("out of memory");
        goto out;
    }
    gw_fence_set_advance_hook(s.fence, gw_upload_on_advance, s.uploads);
    gw_proxy_set_uploads(s.proxy, s.uploads);
    s.probe = gw_bucket_probe_new(s.s3c);
    if (s.probe == NULL) {
        log_error("out of memory");
        goto out;
    }
    s.router.probe = s.probe;
    s.router.uploads = s.uploads;
    s.router.elect = s.elect;
    s.router.upstream = s.up;
    s.router.fence = s.fence;
    s.router.store = s.store;
    s.router.proxy = s.proxy;
    s.router.kc = s.kc;
    s.router.ready = true;
    /* several loops: one client table for all, and this loop's listeners shareable,
     * or this loop the acceptor that hands connections to the others */
    struct gw_server_opts so = {.loops = s.loops, .reuseport = s.loops > 1};
    if (s.loops > 1 && (so.fair = s.fair = gw_fair_table_new()) == NULL) {
        log_error("out of memory");
        goto out;
    }
    if (s.loops > 1 && s.cfg->accept == GW_ACCEPT_ACCEPTOR) {
        if ((so.handout = s.handout = gw_handout_new(s.loops, s.ctlq)) == NULL) {
            log_error("out of memory");
            goto out;
        }
        so.q = s.ctlq;
    }
    s.srv = gw_server_new_opts(s.base, s.cfg, gw_router_on_request, &s.router, &so, errbuf,
                               sizeof(errbuf));
    if (s.srv == NULL) {
        log_error("%s", errbuf);
        goto out;
    }
    if (start_workers(&s, errbuf, sizeof(errbuf)) != 0) {
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
    if ((s.trim = gw_http_heap_trim_start(s.base)) == NULL || start_notify(&s) != 0) {
        log_error("out of memory");
        goto out;
    }
    for (size_t i = 0; i < s.cfg->nlisten; i++) {
        log_info("listening on %s:%u%s (pid %ld)", s.cfg->listen[i].host,
                 (unsigned)gw_server_port(s.srv, i), s.cfg->listen[i].tls_cert ? " (TLS)" : "",
                 (long)getpid());
    }
    for (size_t i = 0; i < s.cfg->nadmin_listen; i++) {
        log_info("admin listener on %s:%u%s: /healthz, /readyz, /metrics and the admin API",
                 s.cfg->admin_listen[i].host, (unsigned)gw_server_admin_port(s.srv, i),
                 s.cfg->admin_listen[i].tls_cert ? " (TLS)" : "");
    }
    log_info("upstream %s, region %s", s.cfg->upstream.endpoint, s.cfg->upstream.region);
    if (event_base_dispatch(s.base) != 0) {
        log_error("event loop failed");
        goto out;
    }
    if (s.cond_failed) {
        goto out;
    }
    status = 0;
out:
    serve_cleanup(&s);
    gw_access_close(); /* the last lines, written before exit */
    return status;
}
