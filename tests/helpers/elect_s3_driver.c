/*
 * tests/helpers/elect_s3_driver.c: drives the s3 election backend
 * (gateway/s3client/elect_s3.c) against a real S3 for tests/integration/
 * test_elect_s3_backend.py.
 *
 * Environment: FG_S3_ENDPOINT (http://127.0.0.1:PORT), FG_S3_ACCESS_KEY,
 * FG_S3_SECRET_KEY, FG_S3_BUCKET; optional FG_S3_REGION (us-east-1),
 * FG_S3_ADDRESSING (path|virtual), FG_S3_TIMEOUT_MS (20000),
 * FG_S3_MAX_CONN (64).
 *
 * Reads one command per line from stdin, runs it to completion on its own
 * event_base and prints one JSON object per result on stdout:
 *   create KEY BODY                     {"op":"create","err":"OK","etag":...,"date_ms":...}
 *   replace KEY ETAG quoted|unquoted BODY
 *   get KEY                             ... "body", "etag", "last_modified_ms", "date_ms"
 *   list PREFIX|- START_AFTER|- MAX     ... "keys":[...], "truncated":bool
 *   del KEY
 *   race N KEY          N creates of KEY started at once (body "race-I"): N lines with "i"
 *   race_replace N KEY ETAG quoted|unquoted
 *                       N replaces of KEY with the same ETag at once (body "rr-I")
 *   cancel KEY          start a create of KEY and a get, free the backend at
 *                       once, run the loop 500 ms: {"op":"cancel","callbacks":0}
 *   bucket NAME         use a new backend on bucket NAME from now on
 *   secret SECRET       sign with another secret key from now on (gw_s3client_set_config)
 * "err" is "OK" or the ERR_* name; "rc" the number.  A callback that runs
 * before its starting call returned aborts the driver (a contract breach).
 */
#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"
#include "common/log.h"
#include "common/num.h"
#include "election/backend.h"
#include "gateway/base/config.h"
#include "gateway/s3client/elect_s3.h"
#include "gateway/s3client/s3client.h"
#include "gateway/upstream/upstream.h"

#define MAX_ARGS 8
#define MAX_RACE 256

static struct event_base *base;
static struct gw_upstream *up;
static struct gw_s3client *s3c;
static struct elect_backend *be;
static struct gw_config cfg;
static char *bucket_name;
static int pending;
static bool starting;
static int callbacks;

static const char *
err_name(int rc)
{
    static const char *const names[] = {
        "OK",           "ERR_NOMEM",   "ERR_INVAL",  "ERR_NOTFOUND", "ERR_TOOBIG",      "ERR_IO",
        "ERR_UPSTREAM", "ERR_TIMEOUT", "ERR_FENCED", "ERR_EXISTS",   "ERR_CONFLICT",    "ERR_AUTH",
        "ERR_DENIED",   "ERR_VERSION", "ERR_CLOSED", "ERR_AGAIN",    "ERR_UNSUPPORTED",
    };
    if (rc > 0 || -rc >= (int)(sizeof(names) / sizeof(names[0]))) {
        return "ERR_?";
    }
    return names[-rc];
}

static void
json_str(const char *s, size_t len)
{
    putchar('"');
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            printf("\\%c", c);
        } else if (c < 0x20 || c == 0x7f) { /* UTF-8 passes through */
            printf("\\u%04x", c);
        } else {
            putchar(c);
        }
    }
    putchar('"');
}

static void
print_head(const char *op, int rc, int idx)
{
    printf("{\"op\":\"%s\",\"err\":\"%s\",\"rc\":%d", op, err_name(rc), rc);
    if (idx >= 0) {
        printf(",\"i\":%d", idx);
    }
}

static void
print_meta(const struct elect_obj_meta *m)
{
    if (m == NULL) {
        return;
    }
    printf(",\"etag\":");
    json_str(m->etag, strlen(m->etag));
    printf(",\"last_modified_ms\":%lld,\"date_ms\":%lld", (long long)m->last_modified_ms,
           (long long)m->date_ms);
}

static void
one_done(void)
{
    if (starting) {
        (void)fprintf(stderr, "elect_s3_driver: callback before the call returned\n");
        abort();
    }
    callbacks++;
    if (--pending == 0) {
        (void)event_base_loopbreak(base);
    }
}

/* elect_be_write_fn; arg is the index (race) or -1 as intptr_t */
static void
on_write(void *arg, int err, const struct elect_obj_meta *meta)
{
    print_head("write", err, (int)(intptr_t)arg);
    print_meta(err == 0 ? meta : NULL);
    printf("}\n");
    one_done();
}

/* elect_be_get_fn */
static void
on_get(void *arg, int err, const char *body, size_t len, const struct elect_obj_meta *meta)
{
    (void)arg;
    print_head("get", err, -1);
    if (err == 0) {
        printf(",\"body\":");
        json_str(body, len);
        print_meta(meta);
    }
    printf("}\n");
    one_done();
}

/* elect_be_list_fn */
static void
on_list(void *arg, int err, const char *const *keys, size_t n, bool truncated)
{
    (void)arg;
    print_head("list", err, -1);
    if (err == 0) {
        printf(",\"keys\":[");
        for (size_t i = 0; i < n; i++) {
            if (i > 0) {
                putchar(',');
            }
            json_str(keys[i], strlen(keys[i]));
        }
        printf("],\"truncated\":%s", truncated ? "true" : "false");
    }
    printf("}\n");
    one_done();
}

/* elect_be_del_fn */
static void
on_del(void *arg, int err)
{
    (void)arg;
    print_head("del", err, -1);
    printf("}\n");
    one_done();
}

/* Counts a started op, or prints the synchronous failure. */
static void
started(const char *op, int rc, int idx)
{
    starting = false;
    if (rc == 0) {
        pending++;
    } else {
        print_head(op, rc, idx);
        printf(",\"sync\":true}\n");
    }
}

static void
run_loop(void)
{
    if (pending > 0) {
        (void)event_base_dispatch(base);
    }
    (void)fflush(stdout);
}

static int
new_backend(const char *bucket)
{
    char errbuf[256];
    elect_backend_free(be);
    be = gw_elect_s3_new(s3c, bucket, errbuf, sizeof(errbuf));
    if (be == NULL) {
        (void)fprintf(stderr, "elect_s3_driver: %s\n", errbuf);
        return -1;
    }
    return 0;
}

/* event_base_once: the end of the cancel command's wait. */
static void
on_wait_over(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    (void)event_base_loopbreak(base);
}

static int
run_command(char **av, int ac)
{
    const char *cmd = av[0];
    int rc;
    if (strcmp(cmd, "create") == 0 && ac == 3) {
        starting = true;
        rc = elect_backend_create(be, av[1], av[2], strlen(av[2]), on_write, (void *)(intptr_t)-1);
        started("write", rc, -1);
    } else if (strcmp(cmd, "replace") == 0 && ac == 5) {
        enum elect_etag_form form =
            strcmp(av[3], "quoted") == 0 ? ELECT_ETAG_QUOTED : ELECT_ETAG_UNQUOTED;
        starting = true;
        rc = elect_backend_replace(be, av[1], av[2], form, av[4], strlen(av[4]), on_write,
                                   (void *)(intptr_t)-1);
        started("write", rc, -1);
    } else if (strcmp(cmd, "get") == 0 && ac == 2) {
        starting = true;
        rc = elect_backend_get(be, av[1], on_get, NULL);
        started("get", rc, -1);
    } else if (strcmp(cmd, "list") == 0 && ac == 4) {
        uint64_t max;
        if (parse_u64(av[3], 0, UINT32_MAX, &max) != 0) {
            return -1;
        }
        const char *prefix = strcmp(av[1], "-") == 0 ? "" : av[1];
        const char *sa = strcmp(av[2], "-") == 0 ? NULL : av[2];
        starting = true;
        rc = elect_backend_list(be, prefix, sa, (uint32_t)max, on_list, NULL);
        started("list", rc, -1);
    } else if (strcmp(cmd, "del") == 0 && ac == 2) {
        starting = true;
        rc = elect_backend_del(be, av[1], on_del, NULL);
        started("del", rc, -1);
    } else if (strcmp(cmd, "race") == 0 && ac == 3) {
        uint64_t n;
        if (parse_u64(av[1], 1, MAX_RACE, &n) != 0) {
            return -1;
        }
        for (uint64_t i = 0; i < n; i++) {
            char body[64];
            (void)snprintf(body, sizeof(body), "race-%llu", (unsigned long long)i);
            starting = true;
            rc = elect_backend_create(be, av[2], body, strlen(body), on_write, (void *)(intptr_t)i);
            started("write", rc, (int)i);
        }
    } else if (strcmp(cmd, "race_replace") == 0 && ac == 5) {
        uint64_t n;
        if (parse_u64(av[1], 1, MAX_RACE, &n) != 0) {
            return -1;
        }
        enum elect_etag_form form =
            strcmp(av[4], "quoted") == 0 ? ELECT_ETAG_QUOTED : ELECT_ETAG_UNQUOTED;
        for (uint64_t i = 0; i < n; i++) {
            char body[64];
            (void)snprintf(body, sizeof(body), "rr-%llu", (unsigned long long)i);
            starting = true;
            rc = elect_backend_replace(be, av[2], av[3], form, body, strlen(body), on_write,
                                       (void *)(intptr_t)i);
            started("write", rc, (int)i);
        }
    } else if (strcmp(cmd, "cancel") == 0 && ac == 2) {
        callbacks = 0;
        starting = true;
        rc = elect_backend_create(be, av[1], "cancelled", 9, on_write, (void *)(intptr_t)-1);
        started("write", rc, -1);
        starting = true;
        rc = elect_backend_get(be, av[1], on_get, NULL);
        started("get", rc, -1);
        elect_backend_free(be);
        be = NULL;
        pending = 0;
        struct timeval tv = {0, 500 * 1000};
        if (event_base_once(base, -1, EV_TIMEOUT, on_wait_over, NULL, &tv) != 0) {
            return -1;
        }
        (void)event_base_dispatch(base);
        printf("{\"op\":\"cancel\",\"err\":\"OK\",\"rc\":0,\"callbacks\":%d}\n", callbacks);
        return new_backend(bucket_name);
    } else if (strcmp(cmd, "bucket") == 0 && ac == 2) {
        free(bucket_name);
        bucket_name = strdup(av[1]);
        if (bucket_name == NULL || new_backend(bucket_name) != 0) {
            return -1;
        }
        printf("{\"op\":\"bucket\",\"err\":\"OK\",\"rc\":0}\n");
    } else if (strcmp(cmd, "secret") == 0 && ac == 2) {
        static char secret[256];
        (void)snprintf(secret, sizeof(secret), "%s", av[1]);
        static struct gw_config cfg2;
        cfg2 = cfg;
        cfg2.upstream.secret_key = secret;
        rc = gw_s3client_set_config(s3c, &cfg2);
        print_head("secret", rc, -1);
        printf("}\n");
    } else {
        return -1;
    }
    run_loop();
    return 0;
}

static char *
need_env(const char *name)
{
    char *v = getenv(name);
    if (v == NULL || v[0] == '\0') {
        (void)fprintf(stderr, "elect_s3_driver: set %s\n", name);
        exit(2);
    }
    return v;
}

static uint32_t
env_u32(const char *name, uint32_t def)
{
    const char *v = getenv(name);
    uint64_t out;
    if (v == NULL || parse_u64(v, 0, UINT32_MAX, &out) != 0) {
        return def;
    }
    return (uint32_t)out;
}

int
main(void)
{
    (void)log_set_level(getenv("FG_LOG_LEVEL") != NULL ? getenv("FG_LOG_LEVEL") : "warn");
    cfg.upstream.endpoint = need_env("FG_S3_ENDPOINT");
    cfg.upstream.access_key = need_env("FG_S3_ACCESS_KEY");
    cfg.upstream.secret_key = need_env("FG_S3_SECRET_KEY");
    static char default_region[] = "us-east-1";
    cfg.upstream.region = getenv("FG_S3_REGION") != NULL ? getenv("FG_S3_REGION") : default_region;
    const char *addr = getenv("FG_S3_ADDRESSING");
    cfg.upstream.addressing =
        addr != NULL && strcmp(addr, "virtual") == 0 ? GW_ADDR_VIRTUAL : GW_ADDR_PATH;
    bucket_name = strdup(need_env("FG_S3_BUCKET"));

    base = event_base_new();
    struct gw_upstream_opts uo = {
        .connect_timeout_ms = 5000,
        .timeout_ms = env_u32("FG_S3_TIMEOUT_MS", 20000),
        .max_connections = env_u32("FG_S3_MAX_CONN", 64),
        .tls_verify = true,
    };
    up = base != NULL ? gw_upstream_new(base, &uo) : NULL;
    char errbuf[256];
    s3c = up != NULL ? gw_s3client_new(up, &cfg, errbuf, sizeof(errbuf)) : NULL;
    if (up != NULL && s3c == NULL) {
        (void)fprintf(stderr, "elect_s3_driver: %s\n", errbuf);
    }
    if (bucket_name == NULL || s3c == NULL || new_backend(bucket_name) != 0) {
        return 1;
    }
    char line[8192];
    int status = 0;
    while (fgets(line, sizeof(line), stdin) != NULL) {
        char *av[MAX_ARGS];
        int ac = 0;
        char *p = line;
        while (ac < MAX_ARGS) {
            p += strspn(p, " \t\r\n");
            if (*p == '\0') {
                break;
            }
            av[ac++] = p;
            p += strcspn(p, " \t\r\n");
            if (*p != '\0') {
                *p++ = '\0';
            }
        }
        if (ac == 0 || av[0][0] == '#') {
            continue;
        }
        if (run_command(av, ac) != 0) {
            printf("{\"op\":\"%s\",\"err\":\"BAD_COMMAND\",\"rc\":1}\n", av[0]);
            (void)fflush(stdout);
            status = 1;
        }
    }
    elect_backend_free(be);
    gw_s3client_free(s3c);
    gw_upstream_free(up);
    event_base_free(base);
    free(bucket_name);
    return status;
}
