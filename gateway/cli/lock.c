/*
 * gateway/cli/lock.c: `fencegate lock ...` (gateway/cli/lock.h): the
 * election API's client side.  Arguments, one signed JSON call, the
 * sub-commands, and `run`'s grant, renew and release calls; its scheduler,
 * child supervision and the signal self-pipe are in gateway/cli/lock_run.c.
 */
#include "gateway/cli/lock.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/lockname.h"
#include "common/num.h"
#include "gateway/api/cursor.h"
#include "gateway/cli/apiclient.h"
#include "gateway/cli/lock_run.h"
#include "gateway/s3/sigv4.h"
#include "store/store.h"

#define DEFAULT_GATEWAY  "http://127.0.0.1:9000"
#define DEFAULT_REGION   "us-east-1"
#define API_PREFIX       "/_fencegate/v1/locks"
#define WAIT_SLICE_MS    30000u /* one long-poll; the gateway caps waits (60 s by default) */
#define MIN_POLL_MS      1000u  /* never two polls closer than this when nothing changed */
#define MAX_BACKOFF_MS   5000u  /* retry delay cap after transport errors */
#define DEFAULT_GRACE_MS 5000u
#define MAX_MS           ((uint64_t)1 << 40)
#define LEASE_ID_MAX     128 /* longest lease_id accepted from the gateway */

/* Sub-commands, as bits so each option can say where it is allowed. */
enum lock_sub {
    SUB_ACQUIRE = 1 << 0,
    SUB_RENEW = 1 << 1,
    SUB_RELEASE = 1 << 2,
    SUB_SHOW = 1 << 3,
    SUB_WATCH = 1 << 4,
    SUB_RUN = 1 << 5,
    SUB_REVOKE = 1 << 6,
};
#define SUB_ALL                                                                                    \
    (SUB_ACQUIRE | SUB_RENEW | SUB_RELEASE | SUB_SHOW | SUB_WATCH | SUB_RUN | SUB_REVOKE)

/* The parsed command line.  Strings are borrowed from argv. */
struct lock_opts {
    enum lock_sub sub;     /* the sub-command */
    const char *lock;      /* LOCK, or NULL (show: all locks) */
    const char *holder;    /* --holder, or NULL for "<hostname>-<pid>" */
    uint64_t lease_ms;     /* --lease-ms, 0 = the gateway's default */
    uint64_t wait_ms;      /* --wait-ms; UINT64_MAX = forever (run's default) */
    uint64_t grace_ms;     /* --grace-ms (run) */
    uint64_t token;        /* --token (renew, release) */
    const char *lease_id;  /* --lease-id (renew, release) */
    const char *gateway;   /* --gateway, or NULL */
    const char *region;    /* --region, or NULL */
    const char *access_ak; /* --access-key, or NULL */
    const char *secret_ev; /* --secret-key-env, or NULL */
    char **cmd;            /* run: CMD and its arguments, NULL-terminated (argv's tail) */
};

/* One process's client state. */
struct lockcli {
    struct gw_apiclient *http;   /* owned */
    const char *gateway;         /* the gateway URL as given (borrowed) */
    const char *region;          /* signing region (borrowed) */
    struct gw_sigv4_creds creds; /* borrowed from the environment */
    bool sign;                   /* creds are set: sign requests */
    const char *name;            /* "fencegate lock <sub>", for messages */
};

/* ---- arguments ---- */

enum opt_id {
    O_GATEWAY,
    O_REGION,
    O_AK,
    O_SK_ENV,
    O_HOLDER,
    O_LEASE,
    O_WAIT,
    O_GRACE,
    O_TOKEN,
    O_LID
};

static const struct {
    const char *name; /* "--name" */
    unsigned subs;    /* where it is allowed */
} opt_defs[] = {
    [O_GATEWAY] = {"--gateway", SUB_ALL},
    [O_REGION] = {"--region", SUB_ALL},
    [O_AK] = {"--access-key", SUB_ALL},
    [O_SK_ENV] = {"--secret-key-env", SUB_ALL},
    [O_HOLDER] = {"--holder", SUB_ACQUIRE | SUB_RUN},
    [O_LEASE] = {"--lease-ms", SUB_ACQUIRE | SUB_RUN},
    [O_WAIT] = {"--wait-ms", SUB_ACQUIRE | SUB_RUN},
    [O_GRACE] = {"--grace-ms", SUB_RUN},
    [O_TOKEN] = {"--token", SUB_RENEW | SUB_RELEASE},
    [O_LID] = {"--lease-id", SUB_RENEW | SUB_RELEASE},
};

static const struct {
    const char *name;
    enum lock_sub sub;
} sub_defs[] = {
    {"acquire", SUB_ACQUIRE}, {"renew", SUB_RENEW}, {"release", SUB_RELEASE}, {"show", SUB_SHOW},
    {"watch", SUB_WATCH},     {"run", SUB_RUN},     {"revoke", SUB_REVOKE},
};

static void
usage(FILE *f)
{
    (void)fprintf(
        f, "usage: fencegate lock acquire LOCK [--holder H] [--lease-ms N] [--wait-ms N]\n"
           "       fencegate lock renew LOCK --token N --lease-id ID\n"
           "       fencegate lock release LOCK --token N --lease-id ID\n"
           "       fencegate lock revoke LOCK   (an admin principal: ends the current lease)\n"
           "       fencegate lock show [LOCK]\n"
           "       fencegate lock watch LOCK\n"
           "       fencegate lock run LOCK [--holder H] [--lease-ms N] [--wait-ms N]\n"
           "                          [--grace-ms N] -- CMD [ARGS...]\n"
           "options: --gateway URL ($FENCEGATE_URL, default " DEFAULT_GATEWAY ")\n"
           "         --region R ($AWS_REGION, $AWS_DEFAULT_REGION, us-east-1)\n"
           "         --access-key AK ($AWS_ACCESS_KEY_ID)  --secret-key-env VAR "
           "(AWS_SECRET_ACCESS_KEY)\n"
           "exit: 0 ok, 1 error, 2 usage, 3 held / not ours, 4 lease lost (run), else CMD's\n");
}

static int
set_opt(struct lock_opts *o, enum opt_id id, const char *v)
{
    switch (id) {
    case O_GATEWAY:
        o->gateway = v;
        return 0;
    case O_REGION:
        o->region = v;
        return v[0] != '\0' && strlen(v) <= GW_SIGV4_MAX_REGION ? 0 : ERR_INVAL;
    case O_AK:
        o->access_ak = v;
        return v[0] != '\0' ? 0 : ERR_INVAL;
    case O_SK_ENV:
        o->secret_ev = v;
        return v[0] != '\0' ? 0 : ERR_INVAL;
    case O_HOLDER:
        o->holder = v;
        return v[0] != '\0' ? 0 : ERR_INVAL;
    case O_LEASE:
        return parse_u64(v, 1, UINT32_MAX, &o->lease_ms);
    case O_WAIT:
        return parse_u64(v, 0, MAX_MS, &o->wait_ms);
    case O_GRACE:
        return parse_u64(v, 0, MAX_MS, &o->grace_ms);
    case O_TOKEN:
        return parse_u64(v, 1, INT64_MAX, &o->token);
    case O_LID:
        o->lease_id = v;
        return v[0] != '\0' && strlen(v) <= LEASE_ID_MAX ? 0 : ERR_INVAL;
    default:
        return ERR_INVAL;
    }
}

/* An option at argv[*i] ("--name value" or "--name=value").  Returns 0 or -1 (reported). */
static int
parse_opt(int argc, char **argv, int *i, struct lock_opts *o)
{
    const char *a = argv[*i];
    for (size_t id = 0; id < sizeof(opt_defs) / sizeof(opt_defs[0]); id++) {
        size_t n = strlen(opt_defs[id].name);
        if (strncmp(a, opt_defs[id].name, n) != 0 || (a[n] != '\0' && a[n] != '=')) {
            continue;
        }
        if ((opt_defs[id].subs & o->sub) == 0) {
            (void)fprintf(stderr, "fencegate lock: %s does not apply here\n", opt_defs[id].name);
            return -1;
        }
        const char *v = a[n] == '=' ? a + n + 1 : NULL;
        if (v == NULL) {
            if (*i + 1 >= argc) {
                (void)fprintf(stderr, "fencegate lock: %s needs a value\n", opt_defs[id].name);
                return -1;
            }
            v = argv[++(*i)];
        }
        if (set_opt(o, (enum opt_id)id, v) != 0) {
            (void)fprintf(stderr, "fencegate lock: bad value for %s\n", opt_defs[id].name);
            return -1;
        }
        return 0;
    }
    (void)fprintf(stderr, "fencegate lock: unknown option '%s'\n", a);
    return -1;
}

/*
 * Parse `lock SUB ...`.  Returns 0, 1 (help was asked for and printed), or -1
 * (usage error, reported on stderr).
 */
static int
parse_args(int argc, char **argv, struct lock_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->grace_ms = DEFAULT_GRACE_MS;
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? -1 : 1;
    }
    for (size_t k = 0; k < sizeof(sub_defs) / sizeof(sub_defs[0]); k++) {
        if (strcmp(argv[1], sub_defs[k].name) == 0) {
            o->sub = sub_defs[k].sub;
        }
    }
    if (o->sub == 0) {
        (void)fprintf(stderr, "fencegate lock: unknown sub-command '%s'\n", argv[1]);
        return -1;
    }
    o->wait_ms = o->sub == SUB_RUN ? UINT64_MAX : 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 1;
        }
        if (strcmp(a, "--") == 0 || (a[0] != '-' && o->lock != NULL && o->sub == SUB_RUN)) {
            if (o->sub != SUB_RUN) {
                (void)fprintf(stderr, "fencegate lock: unexpected '%s'\n", a);
                return -1;
            }
            o->cmd = argv + i + (strcmp(a, "--") == 0 ? 1 : 0);
            break;
        }
        if (a[0] == '-' && a[1] != '\0') {
            if (parse_opt(argc, argv, &i, o) != 0) {
                return -1;
            }
            continue;
        }
        if (o->lock != NULL) {
            (void)fprintf(stderr, "fencegate lock: unexpected argument '%s'\n", a);
            return -1;
        }
        o->lock = a;
    }
    if (o->lock == NULL && o->sub != SUB_SHOW) {
        (void)fprintf(stderr, "fencegate lock %s: LOCK is required\n", argv[1]);
        return -1;
    }
    if (o->lock != NULL && !lock_name_valid(o->lock)) {
        (void)fprintf(stderr, "fencegate lock: bad lock name (want [A-Za-z0-9._-]{1,128})\n");
        return -1;
    }
    if ((o->sub & (SUB_RENEW | SUB_RELEASE)) != 0 && (o->token == 0 || o->lease_id == NULL)) {
        (void)fprintf(stderr, "fencegate lock %s: --token and --lease-id are required\n", argv[1]);
        return -1;
    }
    if (o->sub == SUB_RUN && (o->cmd == NULL || o->cmd[0] == NULL)) {
        (void)fprintf(stderr, "fencegate lock run: no command (LOCK [options] -- CMD ...)\n");
        return -1;
    }
    return 0;
}

/*
 * Credentials and region from the options and the environment.  Returns 0
 * (c->sign tells whether there are credentials) or ERR_INVAL (half a pair).
 */
static int
resolve_env(const struct lock_opts *o, struct lockcli *c)
{
    const char *ak = o->access_ak != NULL ? o->access_ak : getenv("AWS_ACCESS_KEY_ID");
    const char *sk = getenv(o->secret_ev != NULL ? o->secret_ev : "AWS_SECRET_ACCESS_KEY");
    const char *tok = getenv("AWS_SESSION_TOKEN");
    bool have_ak = ak != NULL && ak[0] != '\0';
    bool have_sk = sk != NULL && sk[0] != '\0';
    c->gateway = o->gateway != NULL ? o->gateway : getenv("FENCEGATE_URL");
    if (c->gateway == NULL || c->gateway[0] == '\0') {
        c->gateway = DEFAULT_GATEWAY;
    }
    c->region = o->region;
    const char *envs[] = {"AWS_REGION", "AWS_DEFAULT_REGION"};
    for (size_t i = 0; i < 2 && c->region == NULL; i++) {
        const char *r = getenv(envs[i]);
        c->region = r != NULL && r[0] != '\0' ? r : NULL;
    }
    if (c->region == NULL) {
        c->region = DEFAULT_REGION;
    }
    c->sign = have_ak || have_sk || o->access_ak != NULL || o->secret_ev != NULL;
    if (c->sign && (!have_ak || !have_sk)) {
        return ERR_INVAL;
    }
    c->creds.access_key = ak;
    c->creds.secret_key = sk;
    c->creds.session_token = c->sign && tok != NULL && tok[0] != '\0' ? tok : NULL;
    return 0;
}

/* ---- one API call ---- */

/*
 * Send method path?query with an optional JSON body; wait at most timeout_ms.
 * [out] status  the HTTP status (0 when none arrived)
 * [out] out     the answer parsed as JSON (owned: json_decref), NULL if none
 *               or not JSON (then *raw holds the start of the body)
 * Returns 0 when an answer arrived, else an ERR_* from the transport.
 */
static int
api_call(struct lockcli *c, const char *method, const char *path, const char *query, json_t *body,
         uint64_t timeout_ms, const volatile sig_atomic_t *abort_flag, long *status, json_t **out,
         char raw[128])
{
    char *text = NULL;
    struct gw_apiclient_resp resp;
    int rc = 0;

    gw_apiclient_resp_init(&resp);
    *status = 0;
    *out = NULL;
    raw[0] = '\0';
    if (body != NULL) {
        text = json_dumps(body, JSON_COMPACT);
        if (text == NULL) {
            rc = ERR_NOMEM;
            goto fail;
        }
    }
    rc = gw_apiclient_call(c->http, method, path, query, text != NULL ? "application/json" : NULL,
                           text, text != NULL ? strlen(text) : 0, timeout_ms, abort_flag, &resp);
    if (rc != 0) {
        goto fail;
    }
    *status = resp.status;
    json_error_t jerr;
    *out = json_loadb(buf_cstr(&resp.body), resp.body.len, 0, &jerr);
    if (*out == NULL || !json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        size_t k = 0;
        for (const char *p = buf_cstr(&resp.body); *p != '\0' && k < 127; p++) {
            unsigned char ch = (unsigned char)*p;
            raw[k++] = *p;
            if (ch < 0x20 || ch >= 0x7f) {
                raw[k - 1] = ' '; /* nothing for the terminal */
            }
        }
        raw[k] = '\0';
    }
fail:
    free(text);
    gw_apiclient_resp_cleanup(&resp);
    return rc;
}

static uint64_t
json_u64(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

static const char *
json_str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s != NULL ? s : "";
}

/* Print obj as one line on stdout (compact JSON escapes every control byte). */
static int
print_json(const json_t *obj)
{
    char *s = json_dumps(obj, JSON_COMPACT);
    if (s == NULL) {
        return ERR_NOMEM;
    }
    (void)printf("%s\n", s);
    (void)fflush(stdout);
    free(s);
    return 0;
}

/* Tell why a call did not give 200.  Strings from the gateway are printed JSON-escaped. */
static void
report(const struct lockcli *c, int rc, long status, const json_t *js, const char *raw)
{
    if (rc != 0) {
        (void)fprintf(stderr, "%s: %s: %s\n", c->name, c->gateway,
                      rc == ERR_CLOSED ? "interrupted" : err_str(rc));
        return;
    }
    if (js == NULL) {
        (void)fprintf(stderr, "%s: HTTP %ld: %s\n", c->name, status, raw);
        return;
    }
    char *s = json_dumps(js, JSON_COMPACT);
    (void)fprintf(stderr, "%s: HTTP %ld: %s\n", c->name, status, s != NULL ? s : "");
    free(s);
}

static bool
is_error(const json_t *js, const char *code)
{
    return strcmp(json_str(js, "error"), code) == 0;
}

/* Transport failures and 5xx/429 are worth retrying; other answers are final. */
static bool
transient(int rc, long status)
{
    return rc == ERR_TIMEOUT || rc == ERR_UPSTREAM || (rc == 0 && (status >= 500 || status == 429));
}

static uint64_t
backoff_ms(unsigned failures)
{
    uint64_t ms = (uint64_t)MIN_POLL_MS << (failures > 3 ? 3 : failures);
    return ms > MAX_BACKOFF_MS ? MAX_BACKOFF_MS : ms;
}

/* ---- acquire ---- */

/*
 * Acquire o->lock, waiting up to o->wait_ms (UINT64_MAX: forever) in slices.
 * [out] grant    the 200 answer (owned)
 * [out] sent_at  clock_mono_ms() when the granting request was sent
 * Returns GW_LOCK_EXIT_OK, _HELD (refusal reported), _ERROR (reported), or
 * 128+N when interrupted by signal N.
 */
static int
acquire_wait(struct lockcli *c, const struct lock_opts *o, const char *holder, json_t **grant,
             uint64_t *sent_at)
{
    char path[256];
    (void)snprintf(path, sizeof(path), API_PREFIX "/%s/acquire", o->lock);
    uint64_t start = clock_mono_ms();
    unsigned failures = 0;
    *grant = NULL;
    for (;;) {
        uint64_t now = clock_mono_ms();
        uint64_t left = o->wait_ms == UINT64_MAX    ? UINT64_MAX
                        : now - start >= o->wait_ms ? 0
                                                    : o->wait_ms - (now - start);
        uint64_t slice = left > WAIT_SLICE_MS ? WAIT_SLICE_MS : left;
        json_t *body = json_pack("{s:s, s:I, s:I}", "holder", holder, "wait_ms", (json_int_t)slice,
                                 "lease_ms", (json_int_t)o->lease_ms);
        if (body != NULL && o->lease_ms == 0) {
            (void)json_object_del(body, "lease_ms"); /* the gateway's default */
        }
        if (body == NULL) {
            return GW_LOCK_EXIT_ERROR;
        }
        long status;
        json_t *js;
        char raw[128];
        *sent_at = clock_mono_ms();
        int rc = api_call(c, "POST", path, NULL, body, slice + GW_LOCKRUN_REQ_EXTRA_MS,
                          &gw_lock_run_stop_sig, &status, &js, raw);
        json_decref(body);
        if (rc == 0 && status == 200 && js != NULL && json_u64(js, "token") != 0) {
            *grant = js; /* even when a signal came meanwhile: the caller must see it */
            return GW_LOCK_EXIT_OK;
        }
        if (gw_lock_run_stop_sig != 0) {
            json_decref(js);
            return 128 + gw_lock_run_stop_sig;
        }
        bool held = rc == 0 && status == 409 && js != NULL;
        bool done = o->wait_ms != UINT64_MAX && clock_mono_ms() - start >= o->wait_ms;
        if (held && done) {
            (void)fprintf(
                stderr, "%s: %s is held by \"%s\" (token %" PRIu64 ", expires in %" PRIu64 " ms)\n",
                c->name, o->lock, json_str(js, "holder"), json_u64(js, "token"),
                json_u64(js, "expires_in_ms"));
            json_decref(js);
            return GW_LOCK_EXIT_HELD;
        }
        if (!held && (!transient(rc, status) || done)) {
            report(c, rc, status, js, raw);
            json_decref(js);
            return GW_LOCK_EXIT_ERROR;
        }
        /* Held: the long-poll ended, go again, but never faster than MIN_POLL_MS
         * (a gateway that does not wait must not make this a busy loop). */
        failures = held ? 0 : failures + 1;
        uint64_t pause = held ? MIN_POLL_MS : backoff_ms(failures);
        if (!held) {
            report(c, rc, status, js, raw);
            (void)fprintf(stderr, "%s: retrying in %" PRIu64 " ms\n", c->name, pause);
        }
        json_decref(js);
        uint64_t since = clock_mono_ms() - *sent_at;
        if (since < pause) {
            gw_lock_run_wait_signal(pause - since);
        }
    }
}

static void
default_holder(char *out, size_t len)
{
    char host[64];
    if (gethostname(host, sizeof(host)) != 0) {
        host[0] = '\0';
    }
    host[sizeof(host) - 1] = '\0';
    (void)snprintf(out, len, "%s-%ld", host[0] != '\0' ? host : "worker", (long)getpid());
}

static int
cmd_acquire(struct lockcli *c, const struct lock_opts *o, const char *holder)
{
    json_t *grant = NULL;
    uint64_t sent_at;
    int ex = acquire_wait(c, o, holder, &grant, &sent_at);
    if (ex == GW_LOCK_EXIT_OK) {
        ex = print_json(grant) == 0 ? GW_LOCK_EXIT_OK : GW_LOCK_EXIT_ERROR;
    }
    json_decref(grant);
    return ex;
}

/* ---- renew, release, show, watch ---- */

/*
 * POST renew or release of (token, lease_id).
 * [out] out  on 200 the answer (owned), else NULL
 * Returns GW_LOCK_EXIT_OK, _HELD (409, 403 denied, 404: not ours), or _ERROR
 * (anything else: run retries those until its deadline).  Reports failures.
 */
static int
lease_call(struct lockcli *c, const char *lock, const char *op, uint64_t token,
           const char *lease_id, uint64_t timeout_ms, json_t **out)
{
    char path[256];
    (void)snprintf(path, sizeof(path), API_PREFIX "/%s/%s", lock, op);
    json_t *body = json_pack("{s:I, s:s}", "token", (json_int_t)token, "lease_id", lease_id);
    long status = 0;
    json_t *js = NULL;
    char raw[128];
    *out = NULL;
    if (body == NULL) {
        return GW_LOCK_EXIT_ERROR;
    }
    int rc = api_call(c, "POST", path, NULL, body, timeout_ms, NULL, &status, &js, raw);
    json_decref(body);
    if (rc == 0 && status == 200 && js != NULL) {
        (void)json_object_del(js, "lease_id");
        *out = js;
        return GW_LOCK_EXIT_OK;
    }
    int ex = GW_LOCK_EXIT_ERROR;
    if (rc == 0 && (status == 409 || status == 404 || (status == 403 && is_error(js, "denied")))) {
        ex = GW_LOCK_EXIT_HELD;
    }
    report(c, rc, status, js, raw);
    json_decref(js);
    return ex;
}

static int
cmd_lease(struct lockcli *c, const struct lock_opts *o)
{
    json_t *js;
    const char *op = o->sub == SUB_RENEW ? "renew" : "release";
    int ex = lease_call(c, o->lock, op, o->token, o->lease_id, GW_LOCKRUN_REQ_EXTRA_MS, &js);
    if (ex == GW_LOCK_EXIT_OK && print_json(js) != 0) {
        ex = GW_LOCK_EXIT_ERROR;
    }
    json_decref(js);
    return ex;
}

/*
 * POST revoke (an admin's): the current lease of LOCK ends now.  Prints the
 * revoked record.  Exit: OK, _HELD (403: not an admin; 404: never granted;
 * 409: a newer epoch was granted meanwhile), or _ERROR.
 */
static int
cmd_revoke(struct lockcli *c, const struct lock_opts *o)
{
    char path[256];
    (void)snprintf(path, sizeof(path), API_PREFIX "/%s/revoke", o->lock);
    long status = 0;
    json_t *js = NULL;
    char raw[128];
    int rc = api_call(c, "POST", path, NULL, NULL, GW_LOCKRUN_REQ_EXTRA_MS, &gw_lock_run_stop_sig,
                      &status, &js, raw);
    int ex = GW_LOCK_EXIT_ERROR;
    if (rc == 0 && status == 200 && js != NULL) {
        ex = print_json(js) == 0 ? GW_LOCK_EXIT_OK : GW_LOCK_EXIT_ERROR;
    } else {
        if (rc == 0 && (status == 403 || status == 404 || status == 409)) {
            ex = GW_LOCK_EXIT_HELD;
        }
        report(c, rc, status, js, raw);
    }
    json_decref(js);
    return ex;
}

/* Never show a lease_id outside acquire: also inside a list of locks. */
static void
strip_secrets(json_t *js)
{
    (void)json_object_del(js, "lease_id");
    size_t i;
    json_t *v;
    json_t *locks = json_object_get(js, "locks");
    json_array_foreach(locks, i, v)
    {
        (void)json_object_del(v, "lease_id");
    }
}

/* One lock: GET /locks/LOCK, printed as is (without secrets). */
static int
show_one(struct lockcli *c, const char *lock)
{
    char path[256];
    (void)snprintf(path, sizeof(path), API_PREFIX "/%s", lock);
    long status;
    json_t *js;
    char raw[128];
    int rc = api_call(c, "GET", path, NULL, NULL, GW_LOCKRUN_REQ_EXTRA_MS, &gw_lock_run_stop_sig,
                      &status, &js, raw);
    int ex = GW_LOCK_EXIT_ERROR;
    if (rc == 0 && status == 200 && js != NULL) {
        strip_secrets(js);
        ex = print_json(js) == 0 ? GW_LOCK_EXIT_OK : GW_LOCK_EXIT_ERROR;
    } else {
        report(c, rc, status, js, raw);
    }
    json_decref(js);
    return ex;
}

/*
 * Every lock: GET /locks page by page (limit=, after= the previous page's
 * "next") until a page says no more, printed as one {"locks":[...]}.  A page
 * that fails fails the command: never a silently short list.
 */
static int
show_all(struct lockcli *c)
{
    json_t *all = json_array();
    /* pages of 1000: one fits GW_APICLIENT_MAX_BODY (1 MiB) even with the
     * longest holders; 10,000 would not */
    char query[GW_CURSOR_MAX + 64] = "limit=1000";
    int ex = GW_LOCK_EXIT_ERROR;
    for (;;) {
        long status;
        json_t *js = NULL;
        char raw[128];
        int rc = api_call(c, "GET", API_PREFIX, query, NULL, GW_LOCKRUN_REQ_EXTRA_MS,
                          &gw_lock_run_stop_sig, &status, &js, raw);
        json_t *locks = json_object_get(js, "locks");
        json_t *next = json_object_get(js, "next");
        if (rc != 0 || status != 200 || !json_is_array(locks) || all == NULL) {
            report(c, rc, status, js, raw);
            json_decref(js);
            goto out;
        }
        strip_secrets(js);
        if (json_array_extend(all, locks) != 0) {
            json_decref(js);
            goto out;
        }
        bool more = json_is_string(next) && strlen(json_string_value(next)) <= GW_CURSOR_MAX;
        if (more) {
            (void)snprintf(query, sizeof(query), "limit=1000&after=%s", json_string_value(next));
        }
        json_decref(js);
        if (!more) {
            break;
        }
    }
    json_t *out = json_pack("{s:O}", "locks", all);
    ex = out != NULL && print_json(out) == 0 ? GW_LOCK_EXIT_OK : GW_LOCK_EXIT_ERROR;
    json_decref(out);
out:
    json_decref(all);
    return ex;
}

static int
cmd_show(struct lockcli *c, const struct lock_opts *o)
{
    return o->lock != NULL ? show_one(c, o->lock) : show_all(c);
}

/*
 * What makes a record different for watch: everything but the fields that
 * move on every renewal or with time.  Returns a string (owned) or NULL.
 */
static char *
watch_key(const json_t *js)
{
    static const char *const volatile_keys[] = {"expires_in_ms", "expires_at", "expires_at_ms",
                                                "renewed_at",    "renewals",   "lease_id"};
    json_t *copy = json_deep_copy(js);
    if (copy == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < sizeof(volatile_keys) / sizeof(volatile_keys[0]); i++) {
        (void)json_object_del(copy, volatile_keys[i]);
    }
    char *s = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(copy);
    return s;
}

static int
cmd_watch(struct lockcli *c, const struct lock_opts *o)
{
    char path[256];
    char query[96];
    (void)snprintf(path, sizeof(path), API_PREFIX "/%s", o->lock);
    char *last = NULL;
    uint64_t after = 0;
    unsigned failures = 0;
    int ex = GW_LOCK_EXIT_OK;
    while (gw_lock_run_stop_sig == 0) {
        /* after=N long-polls until epoch N changes; with nothing held (N == 0)
         * the gateway answers at once and MIN_POLL_MS paces the loop. */
        (void)snprintf(query, sizeof(query), "wait_ms=%u&after=%" PRIu64, WAIT_SLICE_MS, after);
        uint64_t t0 = clock_mono_ms();
        long status;
        json_t *js;
        char raw[128];
        int rc = api_call(c, "GET", path, after != 0 ? query : NULL, NULL,
                          WAIT_SLICE_MS + GW_LOCKRUN_REQ_EXTRA_MS, &gw_lock_run_stop_sig, &status,
                          &js, raw);
        if (gw_lock_run_stop_sig != 0) {
            json_decref(js);
            break;
        }
        if (!(rc == 0 && status == 200 && js != NULL)) {
            report(c, rc, status, js, raw);
            json_decref(js);
            if (!transient(rc, status)) {
                ex = GW_LOCK_EXIT_ERROR;
                break;
            }
            gw_lock_run_wait_signal(backoff_ms(failures++));
            continue;
        }
        failures = 0;
        strip_secrets(js);
        char *key = watch_key(js);
        bool changed = key == NULL || last == NULL || strcmp(key, last) != 0;
        if (changed && print_json(js) != 0) {
            ex = GW_LOCK_EXIT_ERROR;
        }
        free(last);
        last = key;
        after = json_u64(js, "token");
        json_decref(js);
        if (ex != GW_LOCK_EXIT_OK) {
            break;
        }
        uint64_t took = clock_mono_ms() - t0;
        if (!changed && took < MIN_POLL_MS) {
            gw_lock_run_wait_signal(MIN_POLL_MS - took);
        }
    }
    free(last);
    return ex;
}

/* ---- run ---- */

/* What on_renew needs: the lease being kept (all borrowed). */
struct run_lease {
    struct lockcli *c;    /* the client */
    const char *lock;     /* the lock held */
    uint64_t token;       /* its fencing token */
    const char *lease_id; /* its lease_id */
};

/* gw_lock_run_renew_fn: one renew for gw_lock_run_child (registered by cmd_run). */
static int
on_renew(void *arg, uint64_t timeout_ms, uint64_t *lease_ms, uint64_t *expires_in_ms)
{
    struct run_lease *rl = arg;
    json_t *js;
    int ex = lease_call(rl->c, rl->lock, "renew", rl->token, rl->lease_id, timeout_ms, &js);
    if (ex == GW_LOCK_EXIT_OK) {
        *lease_ms = json_u64(js, "lease_ms");
        *expires_in_ms = json_u64(js, "expires_in_ms");
    }
    json_decref(js);
    return ex;
}

static int
cmd_run(struct lockcli *c, const struct lock_opts *o, const char *holder)
{
    json_t *grant = NULL;
    uint64_t sent_at;
    int ex = acquire_wait(c, o, holder, &grant, &sent_at);
    if (ex != GW_LOCK_EXIT_OK) {
        return ex;
    }
    char lease_id[LEASE_ID_MAX + 1];
    const char *lid = json_str(grant, "lease_id");
    uint64_t token = json_u64(grant, "token");
    uint64_t lease_ms = json_u64(grant, "lease_ms");
    if (lid[0] == '\0' || strlen(lid) > LEASE_ID_MAX || lease_ms == 0) {
        (void)fprintf(stderr, "%s: the grant lacks lease_id or lease_ms\n", c->name);
        json_decref(grant);
        return GW_LOCK_EXIT_ERROR;
    }
    str_copy(lease_id, sizeof(lease_id), lid);
    uint64_t expires_in_ms = json_u64(grant, "expires_in_ms");
    json_decref(grant);

    struct run_lease rl = {c, o->lock, token, lease_id};
    struct gw_lockrun r = {
        .name = c->name,
        .lock = o->lock,
        .gateway = c->gateway,
        .cmd = o->cmd,
        .token = token,
        .grace_ms = o->grace_ms,
        .renew = on_renew,
        .renew_arg = &rl,
    };
    bool lost = false;
    ex = gw_lock_run_child(&r, sent_at, lease_ms, expires_in_ms, &lost);
    if (!lost) { /* a lost lease has nothing of ours left to release */
        json_t *js;
        if (lease_call(c, o->lock, "release", token, lease_id, GW_LOCKRUN_REQ_EXTRA_MS, &js) !=
                GW_LOCK_EXIT_OK &&
            ex == GW_LOCK_EXIT_OK) {
            ex = GW_LOCK_EXIT_ERROR;
        }
        json_decref(js);
    }
    gw_sigv4_wipe(lease_id, sizeof(lease_id));
    return ex;
}

/* ---- entry ---- */

int
gw_cmd_lock(int argc, char **argv)
{
    struct lock_opts o;
    struct lockcli c;
    char name[48];
    char holder[128];
    int r = parse_args(argc, argv, &o);
    if (r != 0) {
        return r > 0 ? GW_LOCK_EXIT_OK : GW_LOCK_EXIT_USAGE;
    }
    memset(&c, 0, sizeof(c));
    (void)snprintf(name, sizeof(name), "fencegate lock %s", argv[1]);
    c.name = name;
    if (resolve_env(&o, &c) != 0) {
        (void)fprintf(stderr, "%s: an access key needs a secret key and vice versa\n", name);
        return GW_LOCK_EXIT_USAGE;
    }
    if (o.holder == NULL) {
        default_holder(holder, sizeof(holder));
        o.holder = holder;
    }
    int ex = GW_LOCK_EXIT_ERROR;
    c.http = gw_apiclient_new();
    if (c.http == NULL || gw_lock_run_signals_install() != 0) {
        (void)fprintf(stderr, "%s: cannot start (out of memory or resources)\n", name);
        goto fail;
    }
    r = gw_apiclient_set_target(c.http, c.gateway, c.region, c.sign ? &c.creds : NULL);
    if (r != 0) {
        (void)fprintf(stderr, "%s: bad gateway URL (want http[s]://host[:port][/path])\n", name);
        ex = GW_LOCK_EXIT_USAGE;
        goto fail;
    }
    switch (o.sub) {
    case SUB_ACQUIRE:
        ex = cmd_acquire(&c, &o, o.holder);
        break;
    case SUB_RENEW:
    case SUB_RELEASE:
        ex = cmd_lease(&c, &o);
        break;
    case SUB_SHOW:
        ex = cmd_show(&c, &o);
        break;
    case SUB_REVOKE:
        ex = cmd_revoke(&c, &o);
        break;
    case SUB_WATCH:
        ex = cmd_watch(&c, &o);
        break;
    case SUB_RUN:
        ex = cmd_run(&c, &o, o.holder);
        break;
    default:
        break;
    }
fail:
    gw_apiclient_free(c.http);
    gw_lock_run_signals_close();
    return ex;
}
