/*
 * tests/unit/gateway/cli/lock_test.c: `fencegate lock` without a gateway:
 * argument parsing (and its refusals), credentials and region from the
 * environment, the renew scheduler driven by a fake `now`, the watch change
 * key, secret stripping, exit statuses, the child's environment and process
 * group, and the CLI's HTTP pieces (base URL parsing, SigV4 signing checked
 * by the gateway's own verifier).
 *
 * Includes gateway/cli/lock.c and gateway/cli/lock_run.c to reach their
 * statics (STYLE R12).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "gateway/cli/lock.c"
#include "gateway/cli/lock_run.c"

/* argv for parse_args: writable copies that live until the next parse (or pool_free). */
static char *pool[32];

static void
pool_free(void)
{
    for (size_t i = 0; i < sizeof(pool) / sizeof(pool[0]); i++) {
        free(pool[i]);
        pool[i] = NULL;
    }
}

static int
parse_strs(struct lock_opts *o, const char *const *args)
{
    pool_free();
    int n = 0;
    for (; args[n] != NULL; n++) {
        assert_true(n < 31);
        pool[n] = strdup(args[n]);
        assert_non_null(pool[n]);
    }
    return parse_args(n, pool, o);
}

#define PARSE(o, ...) parse_strs((o), (const char *const[]){__VA_ARGS__, NULL})

/* Silence the refusals' stderr lines while a test expects them. */
static int saved_stderr = -1;

static void
quiet(void)
{
    (void)fflush(stderr);
    saved_stderr = dup(2);
    int fd = open("/dev/null", O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(dup2(fd, 2), 2);
    (void)close(fd);
}

static void
loud(void)
{
    (void)fflush(stderr);
    assert_int_equal(dup2(saved_stderr, 2), 2);
    (void)close(saved_stderr);
}

static void
test_parse_acquire(void **state)
{
    (void)state;
    struct lock_opts o;
    assert_int_equal(PARSE(&o, "lock", "acquire", "orders", "--holder", "w1", "--lease-ms=15000",
                           "--wait-ms", "250", "--gateway", "http://h:1"),
                     0);
    assert_int_equal(o.sub, SUB_ACQUIRE);
    assert_string_equal(o.lock, "orders");
    assert_string_equal(o.holder, "w1");
    assert_int_equal(o.lease_ms, 15000);
    assert_int_equal(o.wait_ms, 250);
    assert_string_equal(o.gateway, "http://h:1");
    assert_null(o.cmd);
    /* options before the lock, defaults */
    assert_int_equal(PARSE(&o, "lock", "acquire", "--region", "eu-west-1", "a.b-c_9"), 0);
    assert_string_equal(o.lock, "a.b-c_9");
    assert_string_equal(o.region, "eu-west-1");
    assert_int_equal(o.wait_ms, 0);
    assert_int_equal(o.lease_ms, 0);
    assert_null(o.holder);
}

static void
test_parse_renew_release_show_watch(void **state)
{
    (void)state;
    struct lock_opts o;
    assert_int_equal(PARSE(&o, "lock", "renew", "L", "--token", "42", "--lease-id", "ab12"), 0);
    assert_int_equal(o.sub, SUB_RENEW);
    assert_int_equal(o.token, 42);
    assert_string_equal(o.lease_id, "ab12");
    assert_int_equal(PARSE(&o, "lock", "release", "L", "--token=7", "--lease-id=x"), 0);
    assert_int_equal(o.sub, SUB_RELEASE);
    assert_int_equal(o.token, 7);
    assert_int_equal(PARSE(&o, "lock", "revoke", "L", "--gateway", "http://127.0.0.1:9001"), 0);
    assert_int_equal(o.sub, SUB_REVOKE);
    assert_string_equal(o.lock, "L");
    assert_string_equal(o.gateway, "http://127.0.0.1:9001");
    assert_int_equal(PARSE(&o, "lock", "show"), 0);
    assert_int_equal(o.sub, SUB_SHOW);
    assert_null(o.lock);
    assert_int_equal(PARSE(&o, "lock", "show", "L"), 0);
    assert_string_equal(o.lock, "L");
    assert_int_equal(PARSE(&o, "lock", "watch", "L"), 0);
    assert_int_equal(o.sub, SUB_WATCH);
}

static void
test_parse_run(void **state)
{
    (void)state;
    struct lock_opts o;
    assert_int_equal(PARSE(&o, "lock", "run", "L", "--grace-ms", "100", "--", "sh", "-c", "x"), 0);
    assert_int_equal(o.sub, SUB_RUN);
    assert_int_equal(o.grace_ms, 100);
    assert_int_equal(o.wait_ms, UINT64_MAX); /* waits forever by default */
    assert_string_equal(o.cmd[0], "sh");
    assert_string_equal(o.cmd[1], "-c"); /* options of CMD are CMD's */
    assert_string_equal(o.cmd[2], "x");
    assert_null(o.cmd[3]);
    /* the first word after LOCK starts CMD, "--" or not */
    assert_int_equal(PARSE(&o, "lock", "run", "L", "--wait-ms", "5", "sleep", "--x"), 0);
    assert_int_equal(o.wait_ms, 5);
    assert_int_equal(o.grace_ms, DEFAULT_GRACE_MS);
    assert_string_equal(o.cmd[0], "sleep");
    assert_string_equal(o.cmd[1], "--x");
}

static void
test_parse_refusals(void **state)
{
    (void)state;
    struct lock_opts o;
    quiet();
    assert_int_equal(PARSE(&o, "lock"), -1);
    assert_int_equal(PARSE(&o, "lock", "grab", "L"), -1);
    assert_int_equal(PARSE(&o, "lock", "acquire"), -1);                          /* no LOCK */
    assert_int_equal(PARSE(&o, "lock", "acquire", "a/b"), -1);                   /* bad name */
    assert_int_equal(PARSE(&o, "lock", "acquire", "L", "M"), -1);                /* two locks */
    assert_int_equal(PARSE(&o, "lock", "acquire", "L", "--lease-ms"), -1);       /* no value */
    assert_int_equal(PARSE(&o, "lock", "acquire", "L", "--lease-ms", "0"), -1);  /* range */
    assert_int_equal(PARSE(&o, "lock", "acquire", "L", "--lease-ms", "-1"), -1); /* sign */
    assert_int_equal(PARSE(&o, "lock", "acquire", "L", "--wait-ms", "1x"), -1);
    assert_int_equal(PARSE(&o, "lock", "acquire", "L", "--grace-ms", "1"), -1); /* run only */
    assert_int_equal(PARSE(&o, "lock", "acquire", "L", "--token", "1"), -1);
    assert_int_equal(PARSE(&o, "lock", "acquire", "L", "--bogus"), -1);
    assert_int_equal(PARSE(&o, "lock", "acquire", "L", "--holder="), -1);
    assert_int_equal(PARSE(&o, "lock", "acquire", "L", "--", "x"), -1);
    assert_int_equal(PARSE(&o, "lock", "renew", "L", "--token", "1"), -1); /* no lease-id */
    assert_int_equal(PARSE(&o, "lock", "renew", "L", "--lease-id", "x"), -1);
    assert_int_equal(PARSE(&o, "lock", "renew", "L", "--token", "0", "--lease-id", "x"), -1);
    assert_int_equal(
        PARSE(&o, "lock", "release", "L", "--token", "99999999999999999999", "--lease-id", "x"),
        -1);
    assert_int_equal(PARSE(&o, "lock", "run", "L"), -1); /* no command */
    assert_int_equal(PARSE(&o, "lock", "run", "L", "--"), -1);
    assert_int_equal(PARSE(&o, "lock", "watch"), -1);
    assert_int_equal(PARSE(&o, "lock", "revoke"), -1);                      /* LOCK required */
    assert_int_equal(PARSE(&o, "lock", "revoke", "L", "--token", "1"), -1); /* not its option */
    assert_int_equal(PARSE(&o, "lock", "revoke", "a/b"), -1);
    assert_int_equal(PARSE(&o, "lock", "acquire", "L", "--region", ""), -1);
    loud();
}

static void
clear_env(void)
{
    static const char *const vars[] = {
        "AWS_ACCESS_KEY_ID",  "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
        "AWS_DEFAULT_REGION", "FENCEGATE_URL",         "MY_SECRET"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        assert_int_equal(unsetenv(vars[i]), 0);
    }
}

static void
test_env(void **state)
{
    (void)state;
    struct lock_opts o;
    struct lockcli c;
    clear_env();
    assert_int_equal(PARSE(&o, "lock", "show"), 0);
    memset(&c, 0, sizeof(c));
    assert_int_equal(resolve_env(&o, &c), 0);
    assert_false(c.sign); /* anonymous */
    assert_string_equal(c.gateway, DEFAULT_GATEWAY);
    assert_string_equal(c.region, "us-east-1");

    assert_int_equal(setenv("AWS_ACCESS_KEY_ID", "AK", 1), 0);
    assert_int_equal(setenv("AWS_SECRET_ACCESS_KEY", "SK", 1), 0);
    assert_int_equal(setenv("AWS_SESSION_TOKEN", "TOK", 1), 0);
    assert_int_equal(setenv("AWS_DEFAULT_REGION", "eu-central-1", 1), 0);
    assert_int_equal(setenv("FENCEGATE_URL", "http://gw:9", 1), 0);
    assert_int_equal(resolve_env(&o, &c), 0);
    assert_true(c.sign);
    assert_string_equal(c.creds.access_key, "AK");
    assert_string_equal(c.creds.secret_key, "SK");
    assert_string_equal(c.creds.session_token, "TOK");
    assert_string_equal(c.region, "eu-central-1");
    assert_string_equal(c.gateway, "http://gw:9");
    assert_int_equal(setenv("AWS_REGION", "ap-south-1", 1), 0); /* AWS_REGION wins */
    assert_int_equal(resolve_env(&o, &c), 0);
    assert_string_equal(c.region, "ap-south-1");

    /* options win over the environment */
    assert_int_equal(setenv("MY_SECRET", "SK2", 1), 0);
    assert_int_equal(PARSE(&o, "lock", "show", "--access-key", "AK2", "--secret-key-env",
                           "MY_SECRET", "--region", "r1", "--gateway", "http://x"),
                     0);
    assert_int_equal(resolve_env(&o, &c), 0);
    assert_string_equal(c.creds.access_key, "AK2");
    assert_string_equal(c.creds.secret_key, "SK2");
    assert_string_equal(c.region, "r1");
    assert_string_equal(c.gateway, "http://x");

    /* half a pair is an error, not a silent unsigned request */
    assert_int_equal(PARSE(&o, "lock", "show", "--secret-key-env", "NOPE_UNSET"), 0);
    assert_int_equal(resolve_env(&o, &c), ERR_INVAL);
    clear_env();
    assert_int_equal(setenv("AWS_ACCESS_KEY_ID", "AK", 1), 0);
    assert_int_equal(PARSE(&o, "lock", "show"), 0);
    assert_int_equal(resolve_env(&o, &c), ERR_INVAL);
    clear_env();
}

static void
test_sched(void **state)
{
    (void)state;
    struct renew_sched s;
    uint64_t wait = 0;
    sched_granted(&s, 1000, 15000, 0);
    assert_int_equal(s.deadline, 16000);
    assert_int_equal(s.next, 6000); /* a third of the lease */
    assert_int_equal(sched_next(&s, 1000, &wait), SCHED_WAIT);
    assert_int_equal(wait, 5000);
    assert_int_equal(sched_next(&s, 5999, &wait), SCHED_WAIT);
    assert_int_equal(wait, 1);
    assert_int_equal(sched_next(&s, 6000, &wait), SCHED_RENEW);
    /* a renew answered: the lease counts from when it was SENT */
    sched_granted(&s, 6000, 15000, 0);
    assert_int_equal(s.deadline, 21000);
    assert_int_equal(s.next, 11000);
    /* the gateway's remaining time is used when shorter than the lease */
    sched_granted(&s, 6000, 15000, 9000);
    assert_int_equal(s.deadline, 15000);
    assert_int_equal(s.next, 9000);
    assert_int_equal(s.lease_ms, 15000);
    sched_granted(&s, 6000, 15000, 99000); /* never longer */
    assert_int_equal(s.deadline, 21000);

    /* transient failures retry at lease/10 (100..1000 ms) until the deadline */
    sched_failed(&s, 11500);
    assert_int_equal(s.next, 12500);
    assert_int_equal(sched_next(&s, 12000, &wait), SCHED_WAIT);
    assert_int_equal(wait, 500);
    assert_int_equal(sched_request_timeout(&s, 12500), 8500);
    assert_int_equal(sched_request_timeout(&s, 1000), GW_LOCKRUN_REQ_EXTRA_MS); /* capped */
    assert_int_equal(sched_request_timeout(&s, 20999), 1);
    assert_int_equal(sched_request_timeout(&s, 30000), 1);
    assert_int_equal(sched_next(&s, 20999, &wait), SCHED_RENEW);
    assert_int_equal(sched_next(&s, 21000, &wait), SCHED_LOST); /* no renew in time */
    assert_int_equal(sched_next(&s, 99999, &wait), SCHED_LOST);

    /* a retry never waits past the deadline */
    sched_granted(&s, 0, 1000, 0);
    sched_failed(&s, 900);
    assert_int_equal(s.next, 1000); /* 100 ms minimum */
    assert_int_equal(sched_next(&s, 950, &wait), SCHED_WAIT);
    assert_int_equal(wait, 50);
    assert_int_equal(sched_next(&s, 1000, &wait), SCHED_LOST);
    sched_granted(&s, 0, 600000, 0);
    sched_failed(&s, 10);
    assert_int_equal(s.next, 1010); /* 1 s maximum */
}

static void
test_watch_key_and_secrets(void **state)
{
    (void)state;
    json_t *a = json_pack("{s:s,s:I,s:b,s:I,s:s,s:I,s:s}", "lock", "L", "token", (json_int_t)3,
                          "live", 1, "expires_in_ms", (json_int_t)900, "renewed_at", "t1",
                          "renewals", (json_int_t)1, "lease_id", "SECRET");
    json_t *b =
        json_pack("{s:I,s:s,s:b,s:I,s:s,s:I}", "token", (json_int_t)3, "lock", "L", "live", 1,
                  "expires_in_ms", (json_int_t)100, "renewed_at", "t2", "renewals", (json_int_t)2);
    char *ka = watch_key(a);
    char *kb = watch_key(b);
    assert_non_null(ka);
    assert_string_equal(ka, kb); /* renewals and time are not changes */
    assert_null(strstr(ka, "SECRET"));
    free(kb);
    assert_int_equal(json_object_set_new(b, "live", json_false()), 0);
    kb = watch_key(b);
    assert_string_not_equal(ka, kb); /* the lease running out is */
    free(ka);
    free(kb);

    strip_secrets(a);
    assert_null(json_object_get(a, "lease_id"));
    json_t *list =
        json_pack("{s:[{s:s,s:s},{s:s}]}", "locks", "lock", "x", "lease_id", "S", "lock", "y");
    strip_secrets(list);
    char *s = json_dumps(list, JSON_COMPACT);
    assert_null(strstr(s, "lease_id"));
    free(s);
    json_decref(list);
    json_decref(a);
    json_decref(b);
}

static void
test_exit_status(void **state)
{
    (void)state;
    pid_t p = fork();
    if (p == 0) {
        _exit(7);
    }
    int st;
    assert_int_equal(waitpid(p, &st, 0), p);
    assert_int_equal(exit_status(st), 7);
    p = fork();
    if (p == 0) {
        (void)raise(SIGKILL);
        _exit(0);
    }
    assert_int_equal(waitpid(p, &st, 0), p);
    assert_int_equal(exit_status(st), 128 + SIGKILL);
    assert_int_equal(transient(ERR_TIMEOUT, 0), true);
    assert_int_equal(transient(ERR_UPSTREAM, 0), true);
    assert_int_equal(transient(0, 503), true);
    assert_int_equal(transient(0, 409), false);
    assert_int_equal(transient(ERR_INVAL, 0), false);
    assert_int_equal(backoff_ms(0), 1000);
    assert_int_equal(backoff_ms(10), MAX_BACKOFF_MS);
}

static void
test_spawn_env_and_group(void **state)
{
    (void)state;
    char path[] = "/tmp/lockcli-test-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    (void)close(fd);
    char script[512];
    (void)snprintf(script, sizeof(script),
                   "printf '%%s %%s %%s %%s' \"$FENCING_LOCK\" \"$FENCING_TOKEN\" "
                   "\"$FENCING_GATEWAY\" \"$(cut -d' ' -f5 /proc/$$/stat)\" > %s",
                   path);
    char sh[] = "/bin/sh";
    char dash_c[] = "-c";
    char *cmd[] = {sh, dash_c, script, NULL};
    struct gw_lockrun r;
    memset(&r, 0, sizeof(r));
    r.lock = "orders";
    r.cmd = cmd;
    r.gateway = "http://127.0.0.1:1";
    r.token = 12345678901ULL;
    pid_t pid = spawn(&r);
    assert_true(pid > 0);
    assert_int_equal(child_pg, pid);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    child_pg = 0;
    assert_int_equal(exit_status(st), 0);
    char got[256] = {0};
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(got, 1, sizeof(got) - 1, f);
    (void)fclose(f);
    (void)unlink(path);
    got[n] = '\0';
    char want[256];
    (void)snprintf(want, sizeof(want), "orders 12345678901 http://127.0.0.1:1 %ld", (long)pid);
    assert_string_equal(got, want); /* its own process group */

    char nowhere[] = "/nonexistent/fencegate-test";
    char *missing[] = {nowhere, NULL};
    r.cmd = missing;
    r.token = 1;
    quiet();
    pid = spawn(&r);
    assert_true(pid > 0);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    loud();
    child_pg = 0;
    assert_int_equal(exit_status(st), 127);
}

static void
test_base_parse(void **state)
{
    (void)state;
    struct gw_apiclient_base b;
    assert_int_equal(gw_apiclient_base_parse("http://127.0.0.1:9000", &b), 0);
    assert_string_equal(b.url, "http://127.0.0.1:9000");
    assert_string_equal(b.host, "127.0.0.1:9000");
    assert_string_equal(b.prefix, "");
    assert_int_equal(gw_apiclient_base_parse("https://gw.example/fg//", &b), 0);
    assert_string_equal(b.url, "https://gw.example");
    assert_string_equal(b.host, "gw.example");
    assert_string_equal(b.prefix, "/fg");
    assert_int_equal(gw_apiclient_base_parse("http://h/", &b), 0);
    assert_string_equal(b.prefix, "");
    assert_int_equal(gw_apiclient_base_parse("ftp://h", &b), ERR_INVAL);
    assert_int_equal(gw_apiclient_base_parse("127.0.0.1:9000", &b), ERR_INVAL);
    assert_int_equal(gw_apiclient_base_parse("http://", &b), ERR_INVAL);
    assert_int_equal(gw_apiclient_base_parse("http:///x", &b), ERR_INVAL);
    assert_int_equal(gw_apiclient_base_parse("http://u:p@h", &b), ERR_INVAL);
    assert_int_equal(gw_apiclient_base_parse("http://h/?q", &b), ERR_INVAL);
    assert_int_equal(gw_apiclient_base_parse("http://h#f", &b), ERR_INVAL);
    assert_int_equal(gw_apiclient_base_parse("http://h x", &b), ERR_INVAL);
    char long_host[GW_APICLIENT_MAX_HOST + 16] = "http://";
    memset(long_host + 7, 'a', GW_APICLIENT_MAX_HOST + 1);
    long_host[7 + GW_APICLIENT_MAX_HOST + 1] = '\0';
    assert_int_equal(gw_apiclient_base_parse(long_host, &b), ERR_INVAL);
}

/* Find header name in "Name: value" lines; returns the value or NULL. */
static const char *
line_value(const char *const *lines, size_t n, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < n; i++) {
        if (strncasecmp(lines[i], name, len) == 0 && lines[i][len] == ':') {
            return lines[i] + len + 2;
        }
    }
    return NULL;
}

/* Sign like the CLI, then verify like the gateway (gw_sigv4_verify). */
static void
sign_and_verify(const char *token, const char *ctype, const char *body, const char *query)
{
    const int64_t now_ms = 1763769600000; /* 2025-11-22T00:00:00Z */
    struct gw_sigv4_creds cr = {"AKIAWORKER", "worker-secret", token};
    const char *lines[GW_APICLIENT_MAX_HEADERS];
    size_t n = 0;
    struct buf store;
    buf_init(&store, GW_APICLIENT_HEADER_BYTES);
    const char *path = "/_fencegate/v1/locks/orders/acquire";
    assert_int_equal(gw_apiclient_sign(NULL, &cr, "us-east-1", now_ms, "POST", "127.0.0.1:9000",
                                       path, query, ctype, body, body != NULL ? strlen(body) : 0,
                                       lines, &n, &store),
                     0);
    const char *authz = line_value(lines, n, "Authorization");
    assert_non_null(authz);
    assert_null(strstr(authz, "worker-secret"));
    assert_string_equal(line_value(lines, n, "host"), "127.0.0.1:9000");
    assert_string_equal(line_value(lines, n, "x-amz-date"), "20251122T000000Z");
    char sha[GW_SIGV4_HEX_LEN + 1];
    assert_int_equal(
        gw_sigv4_sha256_hex(body != NULL ? body : "", body != NULL ? strlen(body) : 0, sha), 0);
    assert_string_equal(line_value(lines, n, "x-amz-content-sha256"), sha);
    if (token != NULL) {
        assert_string_equal(line_value(lines, n, "x-amz-security-token"), token);
    }

    /* The gateway's side: headers as received. */
    struct gw_sigv4_header h[GW_APICLIENT_MAX_HEADERS];
    char names[GW_APICLIENT_MAX_HEADERS][64];
    for (size_t i = 0; i < n; i++) {
        const char *colon = strchr(lines[i], ':');
        size_t nl = (size_t)(colon - lines[i]);
        memcpy(names[i], lines[i], nl);
        names[i][nl] = '\0';
        h[i].name = names[i];
        h[i].value = colon + 2;
    }
    struct gw_sigv4_authz a;
    assert_int_equal(gw_sigv4_authz_parse(authz, &a), 0);
    assert_string_equal(a.access_key, "AKIAWORKER");
    assert_string_equal(a.region, "us-east-1");
    assert_string_equal(a.service, "s3");
    struct gw_sigv4_input in = {.method = "POST",
                                .path = path,
                                .query = query,
                                .headers = h,
                                .nheaders = n,
                                .payload_hash = NULL};
    struct gw_sigv4_verify_opts vo = {.region = "us-east-1", .service = "s3", .now_ms = now_ms};
    enum gw_sigv4_fail why;
    assert_int_equal(gw_sigv4_verify(NULL, "worker-secret", &a, &in, &vo, NULL, &why), 0);
    /* a wrong secret or another body does not verify */
    assert_int_equal(gw_sigv4_verify(NULL, "other", &a, &in, &vo, NULL, &why), ERR_AUTH);
    in.payload_hash = GW_SIGV4_EMPTY_SHA256;
    if (body != NULL) {
        assert_int_equal(gw_sigv4_verify(NULL, "worker-secret", &a, &in, &vo, NULL, &why),
                         ERR_AUTH);
    }
    buf_cleanse(&store);
}

static void
test_sign_verify(void **state)
{
    (void)state;
    sign_and_verify(NULL, "application/json", "{\"holder\":\"w1\",\"wait_ms\":0}", NULL);
    sign_and_verify("session-token/+=", "application/json", "{}", NULL);
    sign_and_verify(NULL, NULL, NULL, "wait_ms=30000&after=4");
}

static void
test_sign_unsigned_and_refusals(void **state)
{
    (void)state;
    const char *lines[GW_APICLIENT_MAX_HEADERS];
    size_t n = 0;
    struct buf store;
    buf_init(&store, GW_APICLIENT_HEADER_BYTES);
    assert_int_equal(gw_apiclient_sign(NULL, NULL, "us-east-1", 0, "GET", "h", "/x", NULL, NULL,
                                       NULL, 0, lines, &n, &store),
                     0);
    assert_int_equal(n, 3); /* host, date, content hash */
    assert_null(line_value(lines, n, "Authorization"));
    assert_string_equal(line_value(lines, n, "x-amz-content-sha256"), GW_SIGV4_EMPTY_SHA256);
    assert_int_equal(gw_apiclient_sign(NULL, NULL, "us-east-1", 0, "GET", "h", "x", NULL, NULL,
                                       NULL, 0, lines, &n, &store),
                     ERR_INVAL);
    assert_int_equal(gw_apiclient_sign(NULL, NULL, "", 0, "GET", "h", "/x", NULL, NULL, NULL, 0,
                                       lines, &n, &store),
                     ERR_INVAL);
    assert_int_equal(gw_apiclient_sign(NULL, NULL, "r", 0, "GET", "h", "/x", NULL, NULL, NULL, 5,
                                       lines, &n, &store),
                     ERR_INVAL);
    buf_cleanup(&store);
}

/* The client against nothing: connection refused is ERR_UPSTREAM, and no target is ERR_INVAL. */
static void
test_client_errors(void **state)
{
    (void)state;
    struct gw_apiclient *c = gw_apiclient_new();
    assert_non_null(c);
    struct gw_apiclient_resp r;
    gw_apiclient_resp_init(&r);
    assert_int_equal(gw_apiclient_call(c, "GET", "/x", NULL, NULL, NULL, 0, 1000, NULL, &r),
                     ERR_INVAL);
    assert_int_equal(gw_apiclient_set_target(c, "nope", "us-east-1", NULL), ERR_INVAL);
    assert_int_equal(gw_apiclient_set_target(c, "http://127.0.0.1:1", "", NULL), ERR_INVAL);
    assert_int_equal(gw_apiclient_set_target(c, "http://127.0.0.1:1", "us-east-1", NULL), 0);
    quiet();
    assert_int_equal(gw_apiclient_call(c, "GET", "/x", NULL, NULL, NULL, 0, 2000, NULL, &r),
                     ERR_UPSTREAM);
    loud();
    struct gw_apiclient_req bad = {.method = "GET", .url = "http://127.0.0.1:1/", .timeout_ms = 0};
    assert_int_equal(gw_apiclient_perform(c, &bad, &r), ERR_INVAL);
    gw_apiclient_resp_cleanup(&r);
    gw_apiclient_free(c);
    gw_apiclient_free(NULL);
}

/*
 * A one-shot HTTP server in a child process: accepts one connection, reads
 * the request head, and answers with `status` and body_len bytes of 'x' (or
 * never answers when status is 0).  Returns its pid; *port is where it listens.
 */
static pid_t
serve_once(int status, size_t body_len, int *port)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(ls >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(ls, 4), 0);
    socklen_t sl = sizeof(sa);
    assert_int_equal(getsockname(ls, (struct sockaddr *)&sa, &sl), 0);
    *port = ntohs(sa.sin_port);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid != 0) {
        (void)close(ls);
        return pid;
    }
    int s = accept(ls, NULL, NULL);
    char req[8192];
    size_t got = 0;
    while (got < sizeof(req) - 1) {
        ssize_t n = read(s, req + got, sizeof(req) - 1 - got);
        if (n <= 0) {
            break;
        }
        got += (size_t)n;
        req[got] = '\0';
        if (strstr(req, "\r\n\r\n") != NULL) {
            break;
        }
    }
    if (status == 0) {
        (void)pause(); /* never answer: the client must time out */
        _exit(0);
    }
    char head[128];
    int hl = snprintf(head, sizeof(head), "HTTP/1.1 %d X\r\nContent-Length: %zu\r\n\r\n", status,
                      body_len);
    if (write(s, head, (size_t)hl) != hl) {
        _exit(1);
    }
    static char chunk[65536];
    memset(chunk, 'x', sizeof(chunk));
    for (size_t left = body_len; left > 0;) {
        size_t n = left < sizeof(chunk) ? left : sizeof(chunk);
        ssize_t w = write(s, chunk, n);
        if (w <= 0) {
            break;
        }
        left -= (size_t)w;
    }
    (void)close(s);
    _exit(0);
}

static void
end_server(pid_t pid)
{
    (void)kill(pid, SIGKILL);
    int st;
    (void)waitpid(pid, &st, 0);
}

static volatile sig_atomic_t abort_now = 1;

static void
test_client_against_a_server(void **state)
{
    (void)state;
    struct gw_apiclient *c = gw_apiclient_new();
    assert_non_null(c);
    struct gw_apiclient_resp r;
    gw_apiclient_resp_init(&r);
    char url[64];
    int port;

    pid_t srv = serve_once(409, 5, &port);
    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    assert_int_equal(gw_apiclient_set_target(c, url, "us-east-1", NULL), 0);
    assert_int_equal(
        gw_apiclient_call(c, "POST", "/x", NULL, "application/json", "{}", 2, 5000, NULL, &r), 0);
    assert_int_equal(r.status, 409); /* any status is a response */
    assert_string_equal(buf_cstr(&r.body), "xxxxx");
    end_server(srv);

    srv = serve_once(200, GW_APICLIENT_MAX_BODY + 1, &port); /* over the cap */
    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    assert_int_equal(gw_apiclient_set_target(c, url, "us-east-1", NULL), 0);
    quiet();
    assert_int_equal(gw_apiclient_call(c, "GET", "/x", NULL, NULL, NULL, 0, 5000, NULL, &r),
                     ERR_TOOBIG);
    loud();
    end_server(srv);

    srv = serve_once(0, 0, &port); /* silent */
    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    assert_int_equal(gw_apiclient_set_target(c, url, "us-east-1", NULL), 0);
    uint64_t t0 = clock_mono_ms();
    quiet();
    assert_int_equal(gw_apiclient_call(c, "GET", "/x", NULL, NULL, NULL, 0, 300, NULL, &r),
                     ERR_TIMEOUT);
    loud();
    uint64_t took = clock_mono_ms() - t0;
    assert_true(took >= 250 && took < 3000);
    end_server(srv);

    srv = serve_once(0, 0, &port); /* silent, and the caller gives up */
    (void)snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    assert_int_equal(gw_apiclient_set_target(c, url, "us-east-1", NULL), 0);
    assert_int_equal(gw_apiclient_call(c, "GET", "/x", NULL, NULL, NULL, 0, 10000, &abort_now, &r),
                     ERR_CLOSED);
    end_server(srv);

    gw_apiclient_resp_cleanup(&r);
    gw_apiclient_free(c);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_acquire),
        cmocka_unit_test(test_parse_renew_release_show_watch),
        cmocka_unit_test(test_parse_run),
        cmocka_unit_test(test_parse_refusals),
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_sched),
        cmocka_unit_test(test_watch_key_and_secrets),
        cmocka_unit_test(test_exit_status),
        cmocka_unit_test(test_spawn_env_and_group),
        cmocka_unit_test(test_base_parse),
        cmocka_unit_test(test_sign_verify),
        cmocka_unit_test(test_sign_unsigned_and_refusals),
        cmocka_unit_test(test_client_errors),
        cmocka_unit_test(test_client_against_a_server),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    pool_free();
    return rc;
}
