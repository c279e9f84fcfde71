/*
 * gateway/base/metrics_render.c: the Prometheus text exposition (format
 * 0.0.4: "# HELP", "# TYPE", one line per sample; label values escaped) of
 * the sum of every loop's struct gw_metrics_set, the lock table and the process (/proc/self).
 *
 * Series that would only ever read 0 and carry an open-ended label (an
 * operation never seen) are left out; every family always has its HELP and
 * TYPE lines, so dashboards and `promtool check metrics` see all of them.
 */
#include "gateway/base/metrics.h"
#include "gateway/base/metrics_int.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/clock.h"

#ifndef FENCEGATE_VERSION
#define FENCEGATE_VERSION "0.1.0-dev"
#endif
#ifndef FENCEGATE_COMMIT
#define FENCEGATE_COMMIT "unknown" /* the Makefile passes `git rev-parse` when it can */
#endif

/* The text being built; the first error sticks and later writes do nothing. */
struct out {
    struct buf *b;
    int rc;
};

/* Formatted text into o (our own formats; label values go through label()). */
#define EMIT(o, ...)                                                                               \
    do {                                                                                           \
        if ((o)->rc == 0) {                                                                        \
            (o)->rc = buf_printf((o)->b, __VA_ARGS__);                                             \
        }                                                                                          \
    } while (0)

static void
text(struct out *o, const char *s)
{
    if (o->rc == 0) {
        o->rc = buf_append_str(o->b, s);
    }
}

int
gw_metrics_escape(struct buf *out, const char *v)
{
    /* text format: in label values \ " and newline are escaped, nothing else */
    const char *run = v;
    for (const char *p = v;; p++) {
        if (*p != '\\' && *p != '"' && *p != '\n' && *p != '\0') {
            continue;
        }
        int rc = buf_append(out, run, (size_t)(p - run));
        if (rc == 0 && *p != '\0') {
            rc = buf_append_str(out, *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" : "\\n");
        }
        if (rc != 0 || *p == '\0') {
            return rc;
        }
        run = p + 1;
    }
}

/* name{key="value"... (no closing brace) */
static void
label(struct out *o, const char *sep, const char *key, const char *value)
{
    text(o, sep);
    text(o, key);
    text(o, "=\"");
    if (o->rc == 0) {
        o->rc = gw_metrics_escape(o->b, value);
    }
    text(o, "\"");
}

static void
family(struct out *o, const char *name, const char *type, const char *help)
{
    EMIT(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
scalar(struct out *o, const char *name, const char *type, const char *help, uint64_t v)
{
    family(o, name, type, help);
    EMIT(o, "%s %llu\n", name, (unsigned long long)v);
}

/* Seconds from ns, exactly. */
static void
seconds(struct out *o, uint64_t ns)
{
    EMIT(o, "%llu.%09llu", (unsigned long long)(ns / 1000000000ULL),
         (unsigned long long)(ns % 1000000000ULL));
}

/* One histogram's samples; key/value: its one label, or key NULL for none. */
static void
histo(struct out *o, const char *name, const char *key, const char *value, const struct gw_histo *h)
{
    uint64_t cum = 0;
    for (unsigned i = 0; i <= GW_METRICS_BUCKETS; i++) {
        cum += h->counts[i];
        char le[32];
        if (i < GW_METRICS_BUCKETS) {
            (void)snprintf(le, sizeof(le), "%g", (double)gw_metrics_bucket_bound_ns(i) / 1e9);
        } else {
            (void)snprintf(le, sizeof(le), "+Inf");
        }
        EMIT(o, "%s_bucket", name);
        if (key != NULL) {
            label(o, "{", key, value);
        }
        label(o, key != NULL ? "," : "{", "le", le);
        EMIT(o, "} %llu\n", (unsigned long long)cum);
    }
    const char *sfx[2] = {"_sum", "_count"};
    for (int k = 0; k < 2; k++) {
        EMIT(o, "%s%s", name, sfx[k]);
        if (key != NULL) {
            label(o, "{", key, value);
            text(o, "}");
        }
        text(o, " ");
        if (k == 0) {
            seconds(o, h->sum_ns);
        } else {
            EMIT(o, "%llu", (unsigned long long)h->count);
        }
        text(o, "\n");
    }
}

static const char *
op_label(const struct gw_metrics_live *live, unsigned op, char *tmp, size_t n)
{
    if (op == GW_METRICS_OP_NONE) {
        return "none";
    }
    const char *name = live->op_name != NULL ? live->op_name(op) : NULL;
    if (name == NULL) {
        (void)snprintf(tmp, n, "op%u", op);
        return tmp;
    }
    return name;
}

static void
requests(struct out *o, const struct gw_metrics_live *live, const struct gw_metrics_set *m)
{
    char tmp[16];
    family(o, "fencegate_requests_total", "counter",
           "Requests answered, by S3 operation and HTTP status (499: the client left first).");
    for (unsigned op = 0; op < GW_METRICS_OPS; op++) {
        for (unsigned c = 0; c < GW_METRICS_CODES; c++) {
            uint64_t v = m->requests_by[op][c];
            if (v == 0) {
                continue;
            }
            text(o, "fencegate_requests_total");
            label(o, "{", "operation", op_label(live, op, tmp, sizeof(tmp)));
            label(o, ",", "code", gw_metrics_code_label(c));
            EMIT(o, "} %llu\n", (unsigned long long)v);
        }
    }
    const struct {
        const char *name;
        const char *help;
        const struct gw_histo *h;
    } per_op[] = {
        {"fencegate_request_duration_seconds",
         "Time from a request's parsed head to its end, by S3 operation.", m->request_seconds},
        {"fencegate_upstream_duration_seconds",
         "Time from forwarding a request to the upstream's response head, by S3 operation.",
         m->upstream_seconds},
    };
    for (size_t k = 0; k < sizeof(per_op) / sizeof(per_op[0]); k++) {
        family(o, per_op[k].name, "histogram", per_op[k].help);
        for (unsigned op = 0; op < GW_METRICS_OPS; op++) {
            if (per_op[k].h[op].count != 0) {
                histo(o, per_op[k].name, "operation", op_label(live, op, tmp, sizeof(tmp)),
                      &per_op[k].h[op]);
            }
        }
    }
}

static void
locks(struct out *o)
{
    uint64_t now = clock_mono_ms();
    for (struct gw_metrics_lock *e = gw_metrics_lock_first(); e != NULL; e = e->order) {
        gw_metrics_lock_expire_check(e, now);
    }
    family(o, "fencegate_fence_refusals_total", "counter",
           "Writes refused by the fence, by lock and S3 error code.");
    for (struct gw_metrics_lock *e = gw_metrics_lock_first(); e != NULL; e = e->order) {
        for (unsigned c = 0; c < GW_METRICS_FENCE_CODES; c++) {
            if (e->refusals[c] != 0) {
                text(o, "fencegate_fence_refusals_total");
                label(o, "{", "lock", e->name);
                label(o, ",", "code", gw_metrics_fence_code(c));
                EMIT(o, "} %llu\n", (unsigned long long)e->refusals[c]);
            }
        }
    }
    family(o, "fencegate_lock_epoch", "gauge",
           "The highest epoch (fencing token) this gateway knows, by lock: granted here or "
           "learned from the epoch files.");
    for (struct gw_metrics_lock *e = gw_metrics_lock_first(); e != NULL; e = e->order) {
        if (!e->special && e->epoch != 0) {
            text(o, "fencegate_lock_epoch");
            label(o, "{", "lock", e->name);
            EMIT(o, "} %llu\n", (unsigned long long)e->epoch);
        }
    }
    family(o, "fencegate_lock_lease_remaining_seconds", "gauge",
           "Lease left on the lock's latest epoch as this gateway knows it (0: none).");
    for (struct gw_metrics_lock *e = gw_metrics_lock_first(); e != NULL; e = e->order) {
        if (!e->special && e->epoch != 0) {
            text(o, "fencegate_lock_lease_remaining_seconds");
            label(o, "{", "lock", e->name);
            text(o, "} ");
            seconds(o, e->until_ms > now ? (e->until_ms - now) * 1000000ULL : 0);
            text(o, "\n");
        }
    }
    static const char *const ev_names[GW_LEASE_EVENTS][2] = {
        {"fencegate_lease_grants_total", "Epochs granted by this gateway, by lock."},
        {"fencegate_lease_renewals_total", "Leases renewed by this gateway, by lock."},
        {"fencegate_lease_releases_total", "Leases released through this gateway, by lock."},
        {"fencegate_lease_expiries_total",
         "Leases this gateway knew that ran out unreleased, by lock."},
        {"fencegate_lease_takeovers_total",
         "Grants that first expired a lease that had run out, by lock."},
    };
    for (unsigned ev = 0; ev < GW_LEASE_EVENTS; ev++) {
        family(o, ev_names[ev][0], "counter", ev_names[ev][1]);
        for (struct gw_metrics_lock *e = gw_metrics_lock_first(); e != NULL; e = e->order) {
            if (e->special && e->events[ev] == 0) {
                continue;
            }
            text(o, ev_names[ev][0]);
            label(o, "{", "lock", e->name);
            EMIT(o, "} %llu\n", (unsigned long long)e->events[ev]);
        }
    }
}

/* utime + stime (s, as ns), start time (Unix s), RSS bytes, from /proc/self/stat. */
static void
proc_stat(uint64_t *cpu_ns, uint64_t *start_s, uint64_t *rss)
{
    *cpu_ns = 0;
    *start_s = 0;
    *rss = 0;
    char st[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (f == NULL) {
        return;
    }
    size_t n = fread(st, 1, sizeof(st) - 1, f);
    (void)fclose(f);
    st[n] = '\0';
    const char *p = strrchr(st, ')'); /* the command name may hold spaces */
    if (p == NULL) {
        return;
    }
    uint64_t field[24] = {0}; /* field[k]: /proc's field k + 3 */
    unsigned k = 0;
    for (p++; *p != '\0' && k < 24; k++) {
        while (*p == ' ') {
            p++;
        }
        uint64_t v = 0;
        for (; *p >= '0' && *p <= '9'; p++) {
            v = v * 10 + (uint64_t)(*p - '0');
        }
        field[k] = v;
        while (*p != ' ' && *p != '\0') {
            p++;
        }
    }
    long hz = sysconf(_SC_CLK_TCK);
    long page = sysconf(_SC_PAGESIZE);
    if (hz <= 0 || page <= 0) {
        return;
    }
    *cpu_ns = (field[11] + field[12]) * (1000000000ULL / (uint64_t)hz); /* utime, stime */
    *rss = field[21] * (uint64_t)page;
    /* starttime is ticks after boot; boot time is btime in /proc/stat */
    f = fopen("/proc/stat", "r");
    if (f == NULL) {
        return;
    }
    char line[256];
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "btime ", 6) == 0) {
            uint64_t bt = 0;
            for (const char *q = line + 6; *q >= '0' && *q <= '9'; q++) {
                bt = bt * 10 + (uint64_t)(*q - '0');
            }
            *start_s = bt + field[19] / (uint64_t)hz;
            break;
        }
    }
    (void)fclose(f);
}

static void
process(struct out *o)
{
    uint64_t cpu_ns, start_s, rss;
    proc_stat(&cpu_ns, &start_s, &rss);
    scalar(o, "process_start_time_seconds", "gauge",
           "Start time of the process since the Unix epoch, in seconds.", start_s);
    family(o, "process_cpu_seconds_total", "counter", "User and system CPU time, in seconds.");
    text(o, "process_cpu_seconds_total ");
    seconds(o, cpu_ns);
    text(o, "\n");
    scalar(o, "process_resident_memory_bytes", "gauge", "Resident memory size, in bytes.", rss);
    uint64_t fds = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d != NULL) {
        while (readdir(d) != NULL) {
            fds++;
        }
        (void)closedir(d);
        fds = fds >= 3 ? fds - 3 : 0; /* ".", ".." and the directory's own descriptor */
    }
    scalar(o, "process_open_fds", "gauge", "Open file descriptors.", fds);
    struct rlimit rl;
    uint64_t max = 0;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        max = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
    }
    scalar(o, "process_max_fds", "gauge", "Most open file descriptors allowed.", max);
}

int
gw_metrics_render(struct buf *b, const struct gw_metrics_live *live)
{
    struct out o = {.b = b, .rc = 0};
    /* the loops' sets added up (about 64 KiB: on the heap, once per scrape) */
    struct gw_metrics_set *m = malloc(sizeof(*m));
    if (m == NULL) {
        return ERR_NOMEM;
    }
    gw_metrics_sum(m);
    family(&o, "fencegate_build_info", "gauge", "Always 1: the version and commit built.");
    text(&o, "fencegate_build_info");
    label(&o, "{", "version", FENCEGATE_VERSION);
    label(&o, ",", "commit", FENCEGATE_COMMIT);
    text(&o, "} 1\n");
    family(&o, "fencegate_config_info", "gauge",
           "Always 1: a digest of the fence rules in force (equal on gateways that agree).");
    text(&o, "fencegate_config_info");
    label(&o, "{", "fences", live->fences_digest != NULL ? live->fences_digest : "");
    text(&o, "} 1\n");
    scalar(&o, "fencegate_config_reloads_total", "counter",
           "Reloads (SIGHUP) whose configuration took effect (an unchanged file replaces nothing).",
           live->config_generation);
    scalar(&o, "fencegate_ready", "gauge", "1 while GET /readyz answers 200.", live->ready ? 1 : 0);
    requests(&o, live, m);
    scalar(&o, "fencegate_requests_received_total", "counter", "Request heads parsed.",
           m->requests);
    scalar(&o, "fencegate_requests_in_flight", "gauge", "Forwarded requests not yet finished.",
           m->requests_active);
    scalar(&o, "fencegate_requests_forwarded_total", "counter", "Requests forwarded upstream.",
           m->proxied);
    scalar(&o, "fencegate_writes_forwarded_total", "counter", "Forwarded write requests.",
           m->writes);
    scalar(&o, "fencegate_internal_errors_total", "counter",
           "Requests failed by the gateway's own fault (500).", m->internal_errors);
    scalar(&o, "fencegate_client_aborts_total", "counter",
           "Clients that hung up before their response ended.", m->client_aborts);
    scalar(&o, "fencegate_request_body_bytes_total", "counter", "Request body bytes sent upstream.",
           m->bytes_in);
    scalar(&o, "fencegate_response_body_bytes_total", "counter",
           "Response body bytes sent to clients.", m->bytes_out);
    family(&o, "fencegate_upstream_errors_total", "counter",
           "Upstream transfers that failed: connect (could not connect, or broke) or timeout.");
    EMIT(&o, "fencegate_upstream_errors_total{kind=\"connect\"} %llu\n",
         (unsigned long long)m->upstream_errors[GW_UPERR_CONNECT]);
    EMIT(&o, "fencegate_upstream_errors_total{kind=\"timeout\"} %llu\n",
         (unsigned long long)m->upstream_errors[GW_UPERR_TIMEOUT]);
    scalar(&o, "fencegate_upstream_connections_open", "gauge",
           "Upstream connections open (busy and idle).", live->upstream_open);
    scalar(&o, "fencegate_upstream_connections_idle", "gauge",
           "Upstream connections idle in the pool.", live->upstream_idle);
    scalar(&o, "fencegate_client_connections_open", "gauge", "Client connections open.",
           m->client_conns_open);
    gw_metrics_locks_hold(); /* the table is written by every loop (metrics_lock.c) */
    locks(&o);
    gw_metrics_locks_release();
    family(&o, "fencegate_fence_hold_seconds", "histogram",
           "Time a write was held: its last byte for a write window, or its start behind the "
           "epoch barrier.");
    histo(&o, "fencegate_fence_hold_seconds", NULL, NULL, &m->fence_hold_seconds);
    scalar(&o, "fencegate_classify_refusals_total", "counter",
           "Requests refused before the fence: method, query, form upload, bucket-level write, "
           "principal's bounds (G9).",
           m->classify_refusals);
    scalar(&o, "fencegate_write_window_reads_total", "counter",
           "Epoch files read to open a write window.", m->window_reads);
    scalar(&o, "fencegate_write_window_holds_total", "counter",
           "Last bytes held until a write window was confirmed.", m->window_holds);
    scalar(&o, "fencegate_write_window_cuts_total", "counter",
           "Writes cut before their last byte: no write window.", m->window_cuts);
    scalar(&o, "fencegate_audit_queue_depth", "gauge",
           "Store operations (audit records among them) queued or committing.",
           live->audit_queue_depth);
    scalar(&o, "fencegate_audit_records_stored_total", "counter",
           "Audit appends committed to the store (a repeat counted into its run's record too).",
           live->audit_appended);
    scalar(&o, "fencegate_audit_failures_total", "counter",
           "Refusals answered 503 SlowDown: their audit record could not be queued or committed.",
           m->audit_failures);
    family(&o, "fencegate_audit_commit_seconds", "histogram",
           "Time from queueing a refusal's audit record to its commit callback.");
    histo(&o, "fencegate_audit_commit_seconds", NULL, NULL, &m->audit_commit_seconds);
    static const char *const beops[GW_BEOP_COUNT] = {"create", "replace", "get", "list", "delete"};
    family(&o, "fencegate_election_backend_seconds", "histogram",
           "Election backend calls (the epoch files), by operation.");
    for (unsigned i = 0; i < GW_BEOP_COUNT; i++) {
        histo(&o, "fencegate_election_backend_seconds", "op", beops[i], &m->backend_seconds[i]);
    }
    scalar(&o, "fencegate_checksum_trailers_forwarded", "gauge",
           "1 if client checksum trailers are forwarded upstream, 0 if only verified.",
           m->checksum_trailers_forwarded);
    scalar(&o, "fencegate_client_connections_refused_total", "counter",
           "Connections closed at accept: their address held max_connections_per_client.",
           m->client_conns_refused);
    scalar(&o, "fencegate_client_transfers_refused_total", "counter",
           "Requests answered 503 SlowDown: their address held max_transfers_per_client.",
           m->client_transfers_refused);
    scalar(&o, "fencegate_idle_connections_shed_total", "counter",
           "Idle connections closed to admit new ones at max_connections.", m->idle_shed);
    scalar(&o, "fencegate_slow_bodies_cut_total", "counter",
           "Request bodies cut: slower than min_body_rate.", m->slow_bodies_cut);
    scalar(&o, "fencegate_conditional_writes", "gauge",
           "1: fenced overwrites are sent as conditional writes.", m->conditional_writes);
    scalar(&o, "fencegate_conditional_write_heads_total", "counter",
           "HEADs of a key for its ETag: the ETag map missed.", m->cond_heads);
    scalar(&o, "fencegate_conditional_write_slowdowns_total", "counter",
           "Fenced writes whose condition failed at the store, token current: 503 SlowDown.",
           m->cond_slowdowns);
    scalar(&o, "fencegate_conditional_write_store_refused_total", "counter",
           "Late fenced writes the store refused (condition failed, token superseded): 409.",
           m->cond_store_refused);
    scalar(&o, "fencegate_traceparent_invalid_total", "counter",
           "Malformed W3C traceparent headers, ignored (still forwarded).",
           m->traceparent_invalid_total);
    scalar(&o, "fencegate_access_log_dropped_total", "counter",
           "Access-log lines dropped because the writer was behind.", m->access_log_dropped_total);
    process(&o);
    free(m);
    return o.rc;
}
