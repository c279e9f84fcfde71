/*
 * gateway/base/config.c: the JSON configuration loader (STYLE R9).
 *
 * Every JSON object of the configuration is described by a table of fields
 * ({name, type, offset, min, max, default}) that gateway/base/json_table.c's
 * walker (gw_json_table_walk()) applies: unknown keys, wrong types and out-of-range
 * values fail naming the full key path ("upstream.regoin: unknown key"),
 * absent keys get their defaults.  This file holds the top-level table, the
 * plain sections' tables and the election section; the sections with arrays
 * of objects or rules of their own are config_listen.c, config_upstream.c
 * and config_access.c (principals, fences; config_int.h).  The cross-field
 * rules (lease ordering, the anonymous-access rule of DESIGN.md
 * "Authentication", the admin listeners' addresses) are checked here after
 * the walk.
 *
 * Secrets (upstream keys, session token, principal secrets) are wiped before
 * they are freed.  <jansson.h> stays in the loader's files and
 * gateway/base/json_table.*: json_error_t is turned into errbuf text here
 * (STYLE R4).
 */
#include "gateway/base/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/lockname.h"
#include "common/num.h"
#include "gateway/base/config_check.h"
#include "gateway/base/config_int.h"
#include "gateway/base/inflight.h"
#include "gateway/base/json_table.h"
#include "gateway/base/metrics.h"

#define CONFIG_MAX_FILE_BYTES                                                                      \
    ((size_t)4 * 1024 * 1024) /* a config file larger than this is refused */

/* ---- election ---- */

static const struct gw_json_table_choice backend_choices[] = {
    {"s3", GW_ELECT_S3},
    {"dir", GW_ELECT_DIR},
    {NULL, 0},
};

/* GW_JSON_TABLE_CUSTOM for "election.shared": its default depends on the backend,
 * so absence is kept (-1) and resolved by check_windows. */
static int
on_shared(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    int *opt = dst;
    if (v == NULL) {
        *opt = -1;
        return 0;
    }
    if (!json_is_boolean(v)) {
        return gw_json_table_err(c, path, "expected true or false");
    }
    *opt = json_is_true(v) ? 1 : 0;
    return 0;
}

#define EL(m)     offsetof(struct gw_config, election.m)
#define LEASE_MAX 86400000u /* one day */
static const struct gw_json_table_field election_fields[] = {
    FENUM("backend", EL(backend), REQ, GW_ELECT_NONE, backend_choices),
    FSTR("bucket", EL(bucket), 0, 1, 0, NULL, V_BUCKET),
    FSTR("prefix", EL(prefix), 0, 0, 512, "fencegate/", V_NONE),
    FSTR("path", EL(path), 0, 1, 0, NULL, V_NONE),
    FU32("default_lease_ms", EL(default_lease_ms), 10, LEASE_MAX, 15000),
    FU32("min_lease_ms", EL(min_lease_ms), 10, LEASE_MAX, 4500),
    FU32("max_lease_ms", EL(max_lease_ms), 10, LEASE_MAX, 300000),
    FU32("keep_epochs", EL(keep_epochs), 1, 1000000, 5),
    FCUSTOM("shared", EL(shared_opt), on_shared),
    FU32("shared_window_ms", EL(shared_window_ms), 100, LEASE_MAX, 5000),
};
#undef EL

/* GW_JSON_TABLE_CUSTOM for "election" (base: &cfg->election); absent means backend NONE */
static int
on_election(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    struct gw_config *cfg =
        (struct gw_config *)(void *)((char *)dst - offsetof(struct gw_config, election));
    char kpath[GW_JSON_TABLE_MAX_PATH];
    if (v == NULL) {
        /* defaults for the lease numbers; "backend" is the one required key */
        int rc = gw_json_table_walk(c, path, NULL, election_fields + 1,
                                    GW_JSON_TABLE_NFIELDS(election_fields) - 1, cfg, NULL, NULL);
        cfg->election.backend = GW_ELECT_NONE;
        return rc;
    }
    int rc = gw_json_table_walk(c, path, v, election_fields, GW_JSON_TABLE_NFIELDS(election_fields),
                                cfg, NULL, NULL);
    if (rc != 0) {
        return rc;
    }
    bool s3 = cfg->election.backend == GW_ELECT_S3;
    const char *need = s3 ? "bucket" : "path";
    const char *other = s3 ? "path" : "bucket";
    if ((s3 ? cfg->election.bucket : cfg->election.path) == NULL) {
        gw_json_table_join(kpath, sizeof(kpath), path, need);
        return gw_json_table_err(c, kpath, "required with backend \"%s\"", s3 ? "s3" : "dir");
    }
    if ((s3 ? cfg->election.path : cfg->election.bucket) != NULL) {
        gw_json_table_join(kpath, sizeof(kpath), path, other);
        return gw_json_table_err(c, kpath, "only for backend \"%s\"", s3 ? "dir" : "s3");
    }
    if (cfg->election.min_lease_ms > cfg->election.max_lease_ms) {
        gw_json_table_join(kpath, sizeof(kpath), path, "min_lease_ms");
        return gw_json_table_err(c, kpath, "larger than max_lease_ms");
    }
    if (cfg->election.default_lease_ms < cfg->election.min_lease_ms ||
        cfg->election.default_lease_ms > cfg->election.max_lease_ms) {
        gw_json_table_join(kpath, sizeof(kpath), path, "default_lease_ms");
        return gw_json_table_err(c, kpath,
                                 "must lie between min_lease_ms (%u) and max_lease_ms (%u)",
                                 cfg->election.min_lease_ms, cfg->election.max_lease_ms);
    }
    return 0;
}

static const struct gw_json_table_choice cond_choices[] = {
    {"auto", GW_COND_AUTO},
    {"on", GW_COND_ON},
    {"off", GW_COND_OFF},
    {NULL, 0},
};

static const struct gw_json_table_choice accept_choices[] = {
    {"acceptor", GW_ACCEPT_ACCEPTOR},
    {"reuseport", GW_ACCEPT_REUSEPORT},
    {NULL, 0},
};

/* ---- auth, fencing, limits, audit: plain sections ---- */

#define AUTH(m) offsetof(struct gw_config, auth.m)
static const struct gw_json_table_field auth_fields[] = {
    FBOOL("sigv2", AUTH(sigv2), true),
};
#undef AUTH

#define FE(m) offsetof(struct gw_config, fencing.m)
static const struct gw_json_table_field fencing_fields[] = {
    FBOOL("allow_unfenced_writes", FE(allow_unfenced_writes), true),
    FBOOL("record_epoch_metadata", FE(record_epoch_metadata), true),
    FBOOL("abort_stale_uploads", FE(abort_stale_uploads), true),
    FBOOL("allow_bucket_writes", FE(allow_bucket_writes), false),
    FU32("commit_margin_ms", FE(commit_margin_ms), 1, 600000, 1000),
    FU32("complete_margin_ms", FE(complete_margin_ms), 1, 600000, 3000),
    FENUM("conditional_writes", FE(conditional_writes), 0, GW_COND_AUTO, cond_choices),
    FU32("etag_cache_entries", FE(etag_cache_entries), 16, 16777216, 65536),
};
#undef FE

#define LI(m)   offsetof(struct gw_config, limits.m)
#define HOUR_MS 3600000u
static const struct gw_json_table_field limits_fields[] = {
    FU32("max_header_bytes", LI(max_header_bytes), 1024, 1048576, 65536),
    FU32("max_headers", LI(max_headers), 8, 10000, 100),
    FU32("max_url_bytes", LI(max_url_bytes), 256, 65536, 8192),
    FU32("header_timeout_ms", LI(header_timeout_ms), 100, HOUR_MS, 30000),
    FU32("body_timeout_ms", LI(body_timeout_ms), 100, HOUR_MS, 60000),
    FU32("idle_timeout_ms", LI(idle_timeout_ms), 100, HOUR_MS, 60000),
    FU32("write_timeout_ms", LI(write_timeout_ms), 100, HOUR_MS, 60000),
    FU32("max_connections", LI(max_connections), 1, 1000000, 4096),
    FU32("buffer_bytes", LI(buffer_bytes), 4096, 67108864, 262144),
    FU64("max_object_bytes", LI(max_object_bytes), 1, 5497558138880ull, GW_MAX_OBJECT_BYTES),
    FU64("discard_body_bytes", LI(discard_body_bytes), 1, 5368709120ull, 67108864),
    FU32("max_connections_per_client", LI(max_connections_per_client), 0, 1000000, 0),
    FU32("max_transfers_per_client", LI(max_transfers_per_client), 0, 1000000, 0),
    FU32("min_body_rate", LI(min_body_rate), 0, 1073741824, 1024),
    FU32("min_body_rate_window_ms", LI(min_body_rate_window_ms), 1000, HOUR_MS, 10000),
};
#undef LI

#define AU(m) offsetof(struct gw_config, audit.m)
static const struct gw_json_table_field audit_fields[] = {
    FU32("retention_days", AU(retention_days), 1, 36500, 30),
    FU64("max_records", AU(max_records), 1, 1000000000000ull, 1000000),
    FU64("max_records_per_lock", AU(max_records_per_lock), 2, 1000000000000ull, 10000),
    FU64("max_records_per_principal", AU(max_records_per_principal), 2, 1000000000000ull, 100000),
    FU32("queue_max", AU(queue_max), 1, 16777216, 65536),
    FU64("coalesce_window_ms", AU(coalesce_window_ms), 0, 86400000ull, 60000),
};
#undef AU

#define ME(m) offsetof(struct gw_config, metrics.m)
static const struct gw_json_table_field metrics_fields[] = {
    FU32("max_locks", ME(max_locks), 0, GW_METRICS_MAX_LOCKS_MAX, GW_METRICS_MAX_LOCKS_DEFAULT),
};
#undef ME

/* GW_JSON_TABLE_CUSTOM for "auth", "fencing", "limits", "audit" (base: that member of struct
 * gw_config) */
static int
on_auth(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    return gw_json_table_walk(c, path, v, auth_fields, GW_JSON_TABLE_NFIELDS(auth_fields),
                              (char *)dst - offsetof(struct gw_config, auth), NULL, NULL);
}

static int
on_fencing(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    return gw_json_table_walk(c, path, v, fencing_fields, GW_JSON_TABLE_NFIELDS(fencing_fields),
                              (char *)dst - offsetof(struct gw_config, fencing), NULL, NULL);
}

static int
on_limits(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    return gw_json_table_walk(c, path, v, limits_fields, GW_JSON_TABLE_NFIELDS(limits_fields),
                              (char *)dst - offsetof(struct gw_config, limits), NULL, NULL);
}

static int
on_audit(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    return gw_json_table_walk(c, path, v, audit_fields, GW_JSON_TABLE_NFIELDS(audit_fields),
                              (char *)dst - offsetof(struct gw_config, audit), NULL, NULL);
}

static int
on_metrics(struct gw_json_table_ctx *c, const char *path, json_t *v, void *dst)
{
    return gw_json_table_walk(c, path, v, metrics_fields, GW_JSON_TABLE_NFIELDS(metrics_fields),
                              (char *)dst - offsetof(struct gw_config, metrics), NULL, NULL);
}

/* ---- the top level ---- */

#define TOP(m) offsetof(struct gw_config, m)
static const struct gw_json_table_field top_fields[] = {
    FCUSTOM("listen", TOP(listen), gw_config_on_listen),
    FCUSTOM("admin_listen", TOP(admin_listen), gw_config_on_admin_listen),
    FSTR("data_dir", TOP(data_dir), REQ, 1, 0, NULL, V_NONE),
    FSTR("gateway_id", TOP(gateway_id), 0, 1, 255, NULL, V_TOKEN),
    FSTR("log_level", TOP(log_level), 0, 1, 0, "info", V_LOGLEVEL),
    FSTR("log_format", TOP(log_format), 0, 1, 0, "text", V_LOGFMT),
    FSTR("access_log", TOP(access_log), 0, 1, 0, "off", V_NONE),
    FBOOL("allow_anonymous", TOP(allow_anonymous), false),
    FU32("workers", TOP(workers), 0, GW_CONFIG_MAX_WORKERS, 0),
    FENUM("accept", TOP(accept), 0, GW_ACCEPT_ACCEPTOR, accept_choices),
    FLIST("virtual_host_domains", TOP(virtual_host_domains), V_DOMAIN),
    FCUSTOM("upstream", TOP(upstream), gw_config_on_upstream),
    FCUSTOM("auth", TOP(auth), on_auth),
    FCUSTOM("principals", TOP(principals), gw_config_on_principals),
    FCUSTOM("election", TOP(election), on_election),
    FCUSTOM("fences", TOP(fences), gw_config_on_fences),
    FCUSTOM("fencing", TOP(fencing), on_fencing),
    FCUSTOM("limits", TOP(limits), on_limits),
    FCUSTOM("audit", TOP(audit), on_audit),
    FCUSTOM("metrics", TOP(metrics), on_metrics),
};
#undef TOP

static int
default_gateway_id(struct gw_json_table_ctx *c, struct gw_config *cfg)
{
    char host[256];
    if (gethostname(host, sizeof(host)) != 0) {
        host[0] = '\0';
    }
    host[sizeof(host) - 1] = '\0';
    const char *id = gw_config_valid_token(host) ? host : "fencegate";
    cfg->gateway_id = strdup(id);
    return cfg->gateway_id == NULL ? gw_json_table_nomem(c) : 0;
}

/* check_anonymous - no principals on a non-loopback address needs consent (DESIGN.md
 * "Authentication"). */
static int
check_anonymous(struct gw_json_table_ctx *c, const struct gw_config *cfg)
{
    if (cfg->nprincipals > 0 || cfg->allow_anonymous) {
        return 0;
    }
    for (size_t i = 0; i < cfg->nlisten + cfg->nadmin_listen; i++) {
        const struct gw_listen *l =
            i < cfg->nlisten ? &cfg->listen[i] : &cfg->admin_listen[i - cfg->nlisten];
        if (!l->loopback) {
            bool v6 = strchr(l->host, ':') != NULL;
            return gw_json_table_err(
                c, "principals",
                "none configured and %s address %s%s%s:%u is not loopback; set "
                "\"allow_anonymous\": true to allow",
                i < cfg->nlisten ? "listen" : "admin_listen", v6 ? "[" : "", l->host, v6 ? "]" : "",
                (unsigned)l->port);
        }
    }
    return 0;
}

uint32_t
gw_config_min_lease_for_windows(const struct gw_config *cfg)
{
    /* Date and Last-Modified are both truncated to whole seconds: a read's age is
     * off by up to 1 s either way, and 1 s of slack covers the side that matters,
     * so a window from a read can be up to 2 s shorter than the lease left. */
    uint64_t resolution = cfg->election.backend == GW_ELECT_S3 ? 2000u : 0u;
    uint64_t need = (3u * ((uint64_t)cfg->fencing.commit_margin_ms + resolution) + 1u) / 2u;
    return need > UINT32_MAX ? UINT32_MAX : (uint32_t)need;
}

/* check_windows - DESIGN.md "Write windows": leases long enough to keep a
 * window open, a shared window longer than every margin. */
static int
check_windows(struct gw_json_table_ctx *c, struct gw_config *cfg)
{
    if (cfg->election.shared_opt < 0) {
        cfg->election.shared = cfg->election.backend == GW_ELECT_S3;
    } else {
        cfg->election.shared = cfg->election.shared_opt == 1;
    }
    if (cfg->election.backend == GW_ELECT_NONE) {
        return 0;
    }
    uint32_t need = gw_config_min_lease_for_windows(cfg);
    if (cfg->election.min_lease_ms < need) {
        return gw_json_table_err(
            c, "election.min_lease_ms",
            "%u is too short for fencing.commit_margin_ms %u: a holder renewing at a "
            "third of its lease needs at least %u ms to keep its write window open",
            cfg->election.min_lease_ms, cfg->fencing.commit_margin_ms, need);
    }
    uint32_t margin = cfg->fencing.commit_margin_ms > cfg->fencing.complete_margin_ms
                          ? cfg->fencing.commit_margin_ms
                          : cfg->fencing.complete_margin_ms;
    if (cfg->election.shared && cfg->election.shared_window_ms <= margin) {
        return gw_json_table_err(
            c, "election.shared_window_ms",
            "%u must be longer than the commit margins (%u ms), or no write could "
            "ever be forwarded",
            cfg->election.shared_window_ms, margin);
    }
    return 0;
}

/* load_json - parse text; path (or NULL) is recorded in the config. */
static int
load_json(const char *text, size_t len, const char *path, struct gw_config **out,
          struct gw_json_table_ctx *c)
{
    json_error_t jerr;
    struct gw_config *cfg = NULL;
    int rc;

    *out = NULL;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        return gw_json_table_err(c, NULL, "line %d column %d: %s", jerr.line, jerr.column,
                                 jerr.text);
    }
    if (!json_is_object(root)) {
        rc = gw_json_table_err(c, NULL, "the configuration must be a JSON object");
        goto fail;
    }
    cfg = calloc(1, sizeof(*cfg));
    if (cfg == NULL) {
        rc = gw_json_table_nomem(c);
        goto fail;
    }
    rc = gw_json_table_walk(c, "", root, top_fields, GW_JSON_TABLE_NFIELDS(top_fields), cfg, NULL,
                            NULL);
    if (rc != 0) {
        goto fail;
    }
    if (cfg->gateway_id == NULL) {
        rc = default_gateway_id(c, cfg);
        if (rc != 0) {
            goto fail;
        }
    }
    rc = check_anonymous(c, cfg);
    if (rc == 0) {
        rc = gw_config_check_admin_listen(c, cfg);
    }
    if (rc == 0) {
        rc = check_windows(c, cfg);
    }
    if (rc != 0) {
        goto fail;
    }
    gw_config_fences_digest(cfg, cfg->fences_digest);
    /* what it was made of: the text, then what else was read (gw_config_same_source) */
    size_t extra = c->inputs != NULL ? c->inputs->len : 0;
    cfg->source_len = len + 1 + extra;
    cfg->source = malloc(cfg->source_len);
    if (cfg->source == NULL) {
        rc = gw_json_table_nomem(c);
        goto fail;
    }
    memcpy(cfg->source, text, len);
    cfg->source[len] = '\0';
    if (extra > 0) {
        memcpy(cfg->source + len + 1, c->inputs->data, extra);
    }
    if (path != NULL) {
        cfg->path = strdup(path);
        if (cfg->path == NULL) {
            rc = gw_json_table_nomem(c);
            goto fail;
        }
    }
    json_decref(root);
    *out = cfg;
    return 0;
fail:
    json_decref(root);
    gw_config_free(cfg);
    return rc;
}

int
gw_config_load_string(const char *json, struct gw_config **out, char *errbuf, size_t errlen)
{
    struct buf inputs;
    buf_init(&inputs, CONFIG_MAX_FILE_BYTES);
    struct gw_json_table_ctx c = {errbuf, errlen, &inputs};
    if (errbuf != NULL && errlen > 0) {
        errbuf[0] = '\0';
    }
    int rc = load_json(json, strlen(json), NULL, out, &c);
    buf_cleanse(&inputs); /* secrets */
    return rc;
}

int
gw_config_load(const char *path, struct gw_config **out, char *errbuf, size_t errlen)
{
    struct buf inputs;
    buf_init(&inputs, CONFIG_MAX_FILE_BYTES);
    struct gw_json_table_ctx c = {errbuf, errlen, &inputs};
    struct buf text;
    int rc = 0;

    *out = NULL;
    if (errbuf != NULL && errlen > 0) {
        errbuf[0] = '\0';
    }
    buf_init(&text, CONFIG_MAX_FILE_BYTES);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        (void)gw_json_table_err(&c, path, "cannot open: %s", strerror(errno));
        buf_cleanup(&text);
        buf_cleanup(&inputs);
        return ERR_IO;
    }
    for (;;) {
        char chunk[16384];
        ssize_t r = read(fd, chunk, sizeof(chunk));
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            (void)gw_json_table_err(&c, path, "cannot read: %s", strerror(errno));
            rc = ERR_IO;
            goto fail;
        }
        if (r == 0) {
            break;
        }
        rc = buf_append(&text, chunk, (size_t)r);
        if (rc == ERR_TOOBIG) {
            rc = gw_json_table_err(&c, path, "larger than %zu bytes", CONFIG_MAX_FILE_BYTES);
            goto fail;
        }
        if (rc != 0) {
            rc = gw_json_table_nomem(&c);
            goto fail;
        }
    }
    rc = load_json(buf_cstr(&text), text.len, path, out, &c);
fail:
    /* the file may hold inline secrets, the inputs secret files' */
    buf_cleanse(&text);
    buf_cleanse(&inputs);
    (void)close(fd);
    return rc;
}

void
gw_config_free(struct gw_config *cfg)
{
    if (cfg == NULL) {
        return;
    }
    free(cfg->path);
    if (cfg->source != NULL) {
        gw_config_wipe(cfg->source, cfg->source_len); /* it may hold secrets */
        free(cfg->source);
    }
    for (size_t i = 0; i < cfg->nlisten; i++) {
        free(cfg->listen[i].host);
        free(cfg->listen[i].tls_cert);
        free(cfg->listen[i].tls_key);
    }
    for (size_t i = 0; i < cfg->nadmin_listen; i++) {
        free(cfg->admin_listen[i].host);
        free(cfg->admin_listen[i].tls_cert);
        free(cfg->admin_listen[i].tls_key);
    }
    free(cfg->data_dir);
    free(cfg->gateway_id);
    free(cfg->log_level);
    free(cfg->log_format);
    free(cfg->access_log);
    gw_json_table_strlist_free(cfg->virtual_host_domains);
    free(cfg->upstream.endpoint);
    free(cfg->upstream.region);
    free(cfg->upstream.access_key);
    gw_config_free_secret(cfg->upstream.secret_key);
    gw_config_free_secret(cfg->upstream.session_token);
    free(cfg->upstream.ca_file);
    for (size_t i = 0; i < cfg->nprincipals; i++) {
        struct gw_principal *p = &cfg->principals[i];
        free(p->name);
        free(p->access_key);
        gw_config_free_secret(p->secret_key);
        gw_json_table_strlist_free(p->buckets);
        gw_json_table_strlist_free(p->locks);
    }
    free(cfg->principals);
    free(cfg->election.bucket);
    free(cfg->election.prefix);
    free(cfg->election.path);
    for (size_t i = 0; i < cfg->nfences; i++) {
        free(cfg->fences[i].bucket);
        free(cfg->fences[i].prefix);
        free(cfg->fences[i].lock);
    }
    free(cfg->fences);
    gw_inflight_free(cfg->inflight);
    gw_config_wipe(cfg, sizeof(*cfg));
    free(cfg);
}

const struct gw_principal *
gw_config_principal_by_key(const struct gw_config *cfg, const char *access_key)
{
    for (size_t i = 0; i < cfg->nprincipals; i++) {
        if (strcmp(cfg->principals[i].access_key, access_key) == 0) {
            return &cfg->principals[i];
        }
    }
    return NULL;
}

const struct gw_fence_rule *
gw_config_fence_rule(const struct gw_config *cfg, const char *bucket, const char *key)
{
    for (size_t i = 0; i < cfg->nfences; i++) {
        const struct gw_fence_rule *r = &cfg->fences[i];
        if (strcmp(r->bucket, bucket) == 0 && strncmp(key, r->prefix, strlen(r->prefix)) == 0) {
            return r;
        }
    }
    return NULL;
}

/*
 * What a bucket's rules decide does not hang on their order except where it
 * shows (first match wins): a rule whose prefix starts with an earlier rule's
 * prefix (of its bucket) never matches, and of the rules that can match, two
 * both match a key only when one's prefix starts with the other's, and then
 * the longer comes first, so the first match is the longest matching prefix.
 * The live rules, as a set, decide.  (Redundant ones still count: "d/x/" under
 * "d/" with the same lock decides nothing "d/" does not, and makes the set
 * differ: a digest that differs or a hold that waits, never the reverse.)
 */

size_t
gw_config_fence_shadowed(const struct gw_config *cfg, size_t i)
{
    const struct gw_fence_rule *r = &cfg->fences[i];
    for (size_t k = 0; k < i; k++) {
        const struct gw_fence_rule *e = &cfg->fences[k];
        if (strcmp(e->bucket, r->bucket) == 0 &&
            strncmp(r->prefix, e->prefix, strlen(e->prefix)) == 0) {
            return k;
        }
    }
    return SIZE_MAX;
}

/* Whether cfg's rule i never matches: an earlier rule of its bucket takes its keys. */
static bool
rule_shadowed(const struct gw_config *cfg, size_t i)
{
    return gw_config_fence_shadowed(cfg, i) != SIZE_MAX;
}

void
gw_config_warnings(const struct gw_config *cfg, gw_config_warn_fn *warn, void *arg)
{
    for (size_t i = 0; i < cfg->nfences; i++) {
        size_t k = gw_config_fence_shadowed(cfg, i);
        if (k == SIZE_MAX) {
            continue;
        }
        char text[512];
        (void)snprintf(text, sizeof(text),
                       "fences[%zu] (bucket \"%s\", prefix \"%s\") never matches: fences[%zu] "
                       "(prefix \"%s\") comes first and takes its keys (first match wins)",
                       i, cfg->fences[i].bucket, cfg->fences[i].prefix, k, cfg->fences[k].prefix);
        warn(arg, text);
    }
}

/* cfg's live rule of bucket with exactly prefix (the first with it, if not shadowed), or NULL. */
static const struct gw_fence_rule *
live_rule(const struct gw_config *cfg, const char *bucket, const char *prefix)
{
    for (size_t i = 0; i < cfg->nfences; i++) {
        const struct gw_fence_rule *r = &cfg->fences[i];
        if (strcmp(r->bucket, bucket) == 0 && strcmp(r->prefix, prefix) == 0) {
            return rule_shadowed(cfg, i) ? NULL : r;
        }
    }
    return NULL;
}

/* How many live rules bucket has in cfg. */
static size_t
live_rules(const struct gw_config *cfg, const char *bucket)
{
    size_t n = 0;
    for (size_t i = 0; i < cfg->nfences; i++) {
        n += strcmp(cfg->fences[i].bucket, bucket) == 0 && !rule_shadowed(cfg, i);
    }
    return n;
}

/* Whether the live rules of bucket are the same in a and b: prefix, lock and
 * require_token, in any order (O(rules^2), once a reload). */
static bool
bucket_rules_equal(const struct gw_config *a, const struct gw_config *b, const char *bucket)
{
    for (size_t i = 0; i < a->nfences; i++) {
        const struct gw_fence_rule *x = &a->fences[i];
        if (strcmp(x->bucket, bucket) != 0 || rule_shadowed(a, i)) {
            continue;
        }
        const struct gw_fence_rule *y = live_rule(b, bucket, x->prefix);
        if (y == NULL || strcmp(x->lock, y->lock) != 0 || x->require_token != y->require_token) {
            return false;
        }
    }
    /* each of a's live rules has its own in b (a bucket's live prefixes differ) */
    return live_rules(a, bucket) == live_rules(b, bucket);
}

/* Whether cfg's rule i is the first of its bucket. */
static bool
first_of_bucket(const struct gw_config *cfg, size_t i)
{
    for (size_t k = 0; k < i; k++) {
        if (strcmp(cfg->fences[k].bucket, cfg->fences[i].bucket) == 0) {
            return false;
        }
    }
    return true;
}

#define FNV64_OFFSET 0xcbf29ce484222325ULL
#define FNV64_PRIME  0x100000001b3ULL

/* FNV-1a over len bytes at p, the terminating NUL of a string included by the callers */
static uint64_t
fnv64(uint64_t h, const void *p, size_t len)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < len; i++) {
        h = (h ^ c[i]) * FNV64_PRIME;
    }
    return h;
}

static uint64_t
fnv64_str(uint64_t h, const char *s)
{
    return fnv64(h, s, strlen(s) + 1);
}

void
gw_config_fences_digest(const struct gw_config *cfg, char out[GW_CONFIG_DIGEST_LEN + 1])
{
    uint64_t sum = 0; /* of each live rule's hash: neither order counts */
    for (size_t i = 0; i < cfg->nfences; i++) {
        const struct gw_fence_rule *r = &cfg->fences[i];
        if (rule_shadowed(cfg, i)) {
            continue;
        }
        unsigned char opts[2] = {r->require_token ? 1 : 0, (unsigned char)r->conditional_writes};
        uint64_t h = fnv64_str(fnv64_str(fnv64_str(FNV64_OFFSET, r->bucket), r->prefix), r->lock);
        sum += fnv64(h, opts, sizeof(opts));
    }
    (void)snprintf(out, GW_CONFIG_DIGEST_LEN + 1, "%016llx", (unsigned long long)sum);
}

bool
gw_config_same_source(const struct gw_config *a, const struct gw_config *b)
{
    return a->source != NULL && b->source != NULL && a->source_len == b->source_len &&
           memcmp(a->source, b->source, a->source_len) == 0;
}

uint64_t
gw_config_buckets_widened(const struct gw_config *from, const struct gw_config *to)
{
    uint64_t mask = 0;
    for (size_t i = 0; i < to->nfences; i++) {
        const char *bucket = to->fences[i].bucket;
        uint64_t bit = (uint64_t)1 << gw_inflight_slot(bucket);
        if ((mask & bit) == 0 && first_of_bucket(to, i) && !bucket_rules_equal(from, to, bucket)) {
            mask |= bit;
        }
    }
    return mask;
}

size_t
gw_config_locks_widened(const struct gw_config *from, const struct gw_config *to, const char **out,
                        size_t max)
{
    /* changed[i]: to's rule i is in a bucket whose rules differ (O(rules^2), once a reload) */
    bool *changed = calloc(to->nfences + 1, sizeof(*changed));
    size_t n = 0;
    for (size_t i = 0; i < to->nfences; i++) {
        const struct gw_fence_rule *r = &to->fences[i];
        bool same_bucket_seen = false;
        for (size_t k = 0; k < i && !same_bucket_seen; k++) {
            if (strcmp(to->fences[k].bucket, r->bucket) == 0) {
                same_bucket_seen = true;
                if (changed != NULL) {
                    changed[i] = changed[k];
                }
            }
        }
        bool ch = same_bucket_seen && changed != NULL ? changed[i]
                                                      : !bucket_rules_equal(from, to, r->bucket);
        if (changed != NULL) {
            changed[i] = ch;
        }
        if (!ch) {
            continue;
        }
        bool seen = false;
        for (size_t k = 0; k < i && !seen && changed != NULL; k++) {
            seen = changed[k] && strcmp(to->fences[k].lock, r->lock) == 0;
        }
        if (seen) {
            continue; /* named already by an earlier rule of a changed bucket */
        }
        if (n < max) {
            out[n] = r->lock;
        }
        n++;
    }
    free(changed);
    return n;
}
