/*
 * gateway/base/config.h: the one immutable configuration, parsed from JSON.
 *
 * gw_config_load() parses a file through a table of known keys (STYLE R9):
 * unknown keys, wrong types and out-of-range values fail naming the key
 * ("upstream.region: expected a string").  Secrets named by *_env or *_file
 * keys are resolved at load time into owned, wipe-on-free buffers.  A loaded
 * config is never changed; SIGHUP builds a new one and swaps it between
 * requests.  Pure data: no event loop; any thread.
 */
#ifndef GW_CONFIG_H
#define GW_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct gw_inflight;

#define GW_CONFIG_MAX_WORKERS 256 /* "workers" */
#define GW_CONFIG_MAX_LISTEN  16
#define GW_MAX_OBJECT_BYTES   5368709120ull /* limits.max_object_bytes default: S3's 5 GiB */

enum gw_addressing {
    GW_ADDR_PATH = 0,    /* http://endpoint/bucket/key */
    GW_ADDR_VIRTUAL = 1, /* http://bucket.endpoint/key */
};

enum gw_election_backend {
    GW_ELECT_NONE = 0, /* no "election" section: the election API answers 503 */
    GW_ELECT_DIR = 1,
    GW_ELECT_S3 = 2,
};

struct gw_listen {
    char *host;     /* owned; numeric address or name, e.g. "127.0.0.1" or "::1" */
    uint16_t port;  /* TCP port */
    char *tls_cert; /* owned; PEM certificate chain file, NULL for plain HTTP */
    char *tls_key;  /* owned; PEM private key file, NULL for plain HTTP */
    bool loopback;  /* host is a loopback address (127.0.0.0/8, ::1, localhost) */
};

struct gw_principal {
    char *name;       /* owned; shown in logs and audit records */
    char *access_key; /* owned */
    char *secret_key; /* owned secret: wiped on free */
    char **buckets;   /* owned, NULL-terminated; NULL means every bucket */
    char **locks;     /* owned, NULL-terminated; NULL means every lock */
    bool admin;       /* "admin": sees every lock, fence and audit record; may revoke */
};

/* "accept": how connections reach the worker loops (DESIGN "Worker loops", "Accepting"). */
enum gw_accept {
    GW_ACCEPT_ACCEPTOR = 0, /* the control loop accepts, and hands each connection to the
                               loop with room and the fewest (default) */
    GW_ACCEPT_REUSEPORT,    /* every loop its own SO_REUSEPORT socket; the kernel's hash picks */
};

/* fencing.conditional_writes: fenced overwrites sent as conditional writes
 * (DESIGN "Conditional writes"). */
enum gw_cond_writes {
    GW_COND_AUTO = 0, /* on when the start-up probe finds the store honours conditional PUTs */
    GW_COND_ON = 1,   /* on; start-up fails when the probe finds the store does not */
    GW_COND_OFF = 2,  /* off */
};

/* A fences rule's "conditional_writes". */
enum gw_cond_rule {
    GW_COND_RULE_INHERIT = 0, /* absent: fencing.conditional_writes decides */
    GW_COND_RULE_ON = 1,      /* on where the store honours them (as "auto" for this rule) */
    GW_COND_RULE_OFF = 2,     /* off for this rule's keys */
};

struct gw_fence_rule {
    char *bucket;       /* owned; exact bucket name */
    char *prefix;       /* owned; key prefix, "" matches every key */
    char *lock;         /* owned; lock name */
    bool require_token; /* a write under this rule without a token gets 428 */
    enum gw_cond_rule
        conditional_writes; /* overrides fencing.conditional_writes; default inherit */
};

/* What happens to a checksum a client sends as an aws-chunked trailer. */
enum gw_trailers {
    GW_TRAILERS_AUTO = 0,    /* probe the upstream at start-up (s3 election bucket) */
    GW_TRAILERS_FORWARD = 1, /* re-frame: the upstream gets it as a trailer */
    GW_TRAILERS_VERIFY = 2,  /* verified here, not forwarded */
};

/* The upstream client of the proxy's data path (the internal S3 client is always libcurl). */
enum gw_upstream_client {
    GW_UPSTREAM_CLIENT_LEAN = 0, /* bufferevents + llhttp */
    GW_UPSTREAM_CLIENT_CURL = 1, /* libcurl, the fallback */
};

#define GW_CONFIG_DIGEST_LEN 16 /* hex digits of gw_config_fences_digest */

struct gw_config {
    char *path; /* owned; the file it was loaded from, or NULL */

    struct gw_listen listen[GW_CONFIG_MAX_LISTEN]; /* listen[0..nlisten) */
    size_t nlisten;
    struct gw_listen admin_listen[GW_CONFIG_MAX_LISTEN]; /* the operator endpoints' listeners
                                                            (admin_listen[0..nadmin_listen));
                                                            none: they are on the S3 ones */
    size_t nadmin_listen;
    uint32_t workers;      /* event loops serving clients; 0: the CPUs this process may use
                              (gw_config_workers, the default); 1: one loop, the control loop */
    enum gw_accept accept; /* how the loops get their connections; default acceptor */

    /* Set by serve, not read from the file: which configuration this is (0 at start, n
     * at the n-th reload), and the object writes in flight under it (owned, or NULL
     * outside serve: gateway/base/inflight.h).  A request's fenced writes carry the
     * generation (struct gw_fence_claim's gen) for the fence's reload hold. */
    uint32_t generation;
    struct gw_inflight *inflight;

    char *data_dir; /* owned; LMDB environment and other state */
    char
        *gateway_id; /* owned; this gateway's name in lock files ("granted_by"); default hostname */
    char *log_level; /* owned; "debug", "info", "warn", "error" */
    char *log_format;     /* owned; "text" (default) or "json": one object per line */
    char *access_log;     /* owned; "off" (default), "stderr" or a file path (reopened on SIGHUP) */
    bool allow_anonymous; /* no principals and a non-loopback listener are allowed together */
    char **virtual_host_domains; /* owned, NULL-terminated: "s3.example.com" means
                                    bucket.s3.example.com is virtual-hosted style */

    struct {
        char *endpoint; /* owned; "http://127.0.0.1:7480" (scheme, host, port; no path) */
        char *region;   /* owned; signing region, default "us-east-1" */
        enum gw_addressing addressing;
        char *access_key;            /* owned; resolved from access_key or access_key_env */
        char *secret_key;            /* owned secret; resolved from secret_key or secret_key_env */
        char *session_token;         /* owned secret or NULL; from session_token_env */
        char *ca_file;               /* owned or NULL; CA bundle for https upstreams */
        bool tls_verify;             /* verify the upstream's certificate (default true) */
        uint32_t connect_timeout_ms; /* default 5000 */
        uint32_t timeout_ms; /* no progress for this long ends a transfer with 504; default 60000 */
        uint32_t max_connections;           /* cap on open upstream connections; default 256 */
        enum gw_trailers checksum_trailers; /* default auto */
        enum gw_upstream_client client;     /* default lean; read at start only */
    } upstream;

    struct {
        bool sigv2; /* accept AWS Signature Version 2 from principals; default true */
    } auth;

    struct gw_principal *principals; /* owned array of nprincipals */
    size_t nprincipals;

    struct {
        enum gw_election_backend backend;
        char *bucket;              /* owned; s3 backend bucket */
        char *prefix;              /* owned; key prefix, default "fencegate/" */
        char *path;                /* owned; dir backend directory */
        uint32_t default_lease_ms; /* default 15000 */
        uint32_t min_lease_ms;     /* default 4500 (gw_config_min_lease_for_windows) */
        uint32_t max_lease_ms;     /* default 300000 */
        uint32_t keep_epochs;      /* epoch files kept per lock by GC; default 5 */
        int shared_opt;            /* "shared" as given: -1 absent, 0 false, 1 true */
        bool shared; /* several gateways share the election (default: true on s3, false on dir) */
        uint32_t shared_window_ms; /* shared: a write window lasts at most this; default 5000 */
    } election;

    struct gw_fence_rule *fences; /* owned array of nfences, first match wins */
    size_t nfences;
    /* What the rules decide, as 16 hex digits (gw_config_fences_digest, at load): equal for
     * two files whose rules put every key under the same lock with the same options. */
    char fences_digest[GW_CONFIG_DIGEST_LEN + 1];
    /* What it was made of (owned): the text, a NUL, then each secret file's path and
     * bytes, NUL-terminated, as read (gw_config_same_source); wiped when freed. */
    char *source;
    size_t source_len;

    struct {
        bool allow_unfenced_writes; /* writes no rule covers and with no token pass; default true */
        bool record_epoch_metadata; /* add x-amz-meta-fencing-epoch to fenced PUTs; default true */
        bool abort_stale_uploads;   /* abort multipart uploads of superseded epochs; default true */
        bool allow_bucket_writes;   /* bucket-level writes (CreateBucket, ...); default false */
        uint32_t commit_margin_ms;  /* the store commits a write within this of its last byte
                                       leaving the gateway (DESIGN "Write windows"); default 1000 */
        uint32_t complete_margin_ms; /* the same for CompleteMultipartUpload; default 3000 */
        enum gw_cond_writes conditional_writes; /* default auto */
        uint32_t etag_cache_entries;            /* key -> ETag map bound (LRU); default 65536 */
    } fencing;

    struct {
        uint32_t max_header_bytes;   /* request line + headers; 431 past it; default 65536 */
        uint32_t max_headers;        /* header count; 431 past it; default 100 */
        uint32_t max_url_bytes;      /* request target; 414 past it; default 8192 */
        uint32_t header_timeout_ms;  /* to receive a whole head; default 30000 */
        uint32_t body_timeout_ms;    /* without body progress; default 60000 */
        uint32_t idle_timeout_ms;    /* keep-alive idle; default 60000 */
        uint32_t write_timeout_ms;   /* without output progress; default 60000 */
        uint32_t max_connections;    /* client connections; default 4096; split evenly
                                        among event loops (rounded up) */
        uint32_t buffer_bytes;       /* per-direction body buffer watermark; default 262144 */
        uint64_t max_object_bytes;   /* request body (decoded length for aws-chunked) past it:
                                        400 EntityTooLarge before forwarding; default 5 GiB
                                        (S3's PutObject/UploadPart limit) */
        uint64_t discard_body_bytes; /* unread body of a refused request read and dropped
                                        so the client sees the error; default 67108864 */
        uint32_t max_connections_per_client; /* connections from one address; 0 (default): a
                                                quarter of max_connections */
        uint32_t max_transfers_per_client;   /* forwarded requests in flight from one address;
                                                0 (default): half of upstream.max_connections */
        uint32_t min_body_rate;              /* request body bytes/s the client must keep up over
                                                each window while the gateway waits for it; 0 = off;
                                                default 1024 */
        uint32_t min_body_rate_window_ms;    /* that window; default 10000 */
    } limits;

    struct {
        uint32_t retention_days;       /* audit records older than this are deleted; default 30 */
        uint64_t max_records;          /* and beyond this count, oldest first; default 1000000 */
        uint64_t max_records_per_lock; /* a lock's first and newest records kept at most;
                                          the middle ones are dropped and counted
                                          (DESIGN.md "Audit retention under a flood");
                                          default 10000 */
        uint64_t max_records_per_principal; /* the same per principal, or per client address
                                               when unauthenticated; default 100000 */
        uint64_t coalesce_window_ms;        /* an identical refusal (principal, lock, token, bucket,
                                               key, method, operation, kind) within this of its run's last
                                               occurrence counts into the run's record;
                                               0 = off; default 60000 */
        uint32_t queue_max; /* store operations queued at most; a refusal whose record
                               cannot be queued is answered 503 SlowDown; default 65536 */
    } audit;

    struct {
        uint32_t max_locks; /* locks not named by a fences rule that get series of their own on
                               /metrics; later ones count as lock="_other"; default 1000 */
    } metrics;
};

/*
 * gw_config_load - read and validate the JSON file at path.
 * [out] out     on success, a new config owned by the caller (gw_config_free).
 * [out] errbuf  on failure, one line naming the key and the problem.
 * Returns 0, ERR_IO (cannot read), ERR_INVAL (any validation error), ERR_NOMEM.
 */
MUST_USE int gw_config_load(const char *path, struct gw_config **out, char *errbuf, size_t errlen);

/* gw_config_load_string - as gw_config_load, from a NUL-terminated JSON text (tests, fuzzing). */
MUST_USE int gw_config_load_string(const char *json, struct gw_config **out, char *errbuf,
                                   size_t errlen);

/*
 * gw_config_min_lease_for_windows - the shortest lease with which a holder
 * renewing at a third of its lease keeps a write window open on a gateway
 * that learns of its renewals only by reading the epoch file: two thirds of
 * the lease must cover the commit margin plus 2 s for the whole-second
 * resolution of the store's Date and Last-Modified (s3 backend; the dir
 * backend has one fine clock).
 */
uint32_t gw_config_min_lease_for_windows(const struct gw_config *cfg);

/* gw_config_free - free cfg and wipe its secrets.  NULL-safe. */
void gw_config_free(struct gw_config *cfg);

/*
 * gw_config_principal_by_key - the principal whose access key is access_key.
 * Returns a pointer borrowed from cfg (valid while cfg lives), or NULL.
 */
const struct gw_principal *gw_config_principal_by_key(const struct gw_config *cfg,
                                                      const char *access_key);

/*
 * gw_config_fence_rule - the first rule whose bucket equals bucket and whose
 * prefix starts key (key is the decoded object key; may be "").
 * Returns a pointer borrowed from cfg, or NULL.
 */
const struct gw_fence_rule *gw_config_fence_rule(const struct gw_config *cfg, const char *bucket,
                                                 const char *key);

/*
 * gw_config_fences_digest - what cfg's fence rules decide, as GW_CONFIG_DIGEST_LEN lowercase
 * hex digits and a NUL into out: the sum of a 64-bit FNV-1a of each live rule (bucket, prefix,
 * lock, require_token, conditional_writes).  A rule is live unless an earlier rule of its
 * bucket has a prefix its own starts with (first match wins: it never matches); the live
 * rules decide alike in any order, so no order counts.  Not a secret's hash: for seeing that
 * gateways agree (fencegate_config_info).
 */
void gw_config_fences_digest(const struct gw_config *cfg, char out[GW_CONFIG_DIGEST_LEN + 1]);

/*
 * gw_config_same_source - a and b were made of the same bytes: the same text and the
 * same secret files' contents (the environment a process reads does not change), so
 * they hold the same settings.  A reload of an unchanged file (logrotate's SIGHUP)
 * keeps the configuration in force.
 */
bool gw_config_same_source(const struct gw_config *a, const struct gw_config *b);

/*
 * gw_config_fence_shadowed - the index of the earlier rule of rule i's bucket
 * whose prefix rule i's prefix starts with: it takes every key rule i would, so
 * rule i never matches (first match wins).  SIZE_MAX: rule i is live.
 */
size_t gw_config_fence_shadowed(const struct gw_config *cfg, size_t i);

/* What is allowed in a configuration but most likely not meant: one line of text a call. */
typedef void gw_config_warn_fn(void *arg, const char *text);

/* gw_config_warnings - warn(arg, text) for each rule that never matches (check-config, serve). */
void gw_config_warnings(const struct gw_config *cfg, gw_config_warn_fn *warn, void *arg);

/*
 * gw_config_locks_widened - the locks to may cover keys that from did not
 * map to them: every lock of to's rules in a bucket whose live rules (prefix,
 * lock and require_token; live as in gw_config_fences_digest, in any order)
 * differ between the two.  A key's lock can change only in such a bucket, so
 * no other lock gains a key.
 * [out] out  up to max lock names, borrowed from to, each once
 * Returns how many (may exceed max: then out holds the first max).
 */
size_t gw_config_locks_widened(const struct gw_config *from, const struct gw_config *to,
                               const char **out, size_t max);

/*
 * gw_config_buckets_widened - the buckets of gw_config_locks_widened, as a
 * mask of their slots (bit gw_inflight_slot(bucket)): to's buckets whose
 * rules differ from from's.  The older writes a reload's hold waits for are
 * those into these slots.  0: no rule changed.
 */
uint64_t gw_config_buckets_widened(const struct gw_config *from, const struct gw_config *to);

#endif
