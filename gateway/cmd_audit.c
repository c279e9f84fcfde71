#include "gateway/cmd_audit.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "common/log.h"
#include "common/num.h"
#include "gateway/json_audit.h"
#include "store/store.h"

#define DEFAULT_LIMIT 100
#define OUT_CAP       ((size_t)64 << 20)

/* Parsed command line. */
struct audit_args {
    const char *data_dir;            /* --data-dir, required */
    const char *lock;                /* --lock or NULL */
    int64_t since_ms;                /* --since (0 = start) */
    int64_t until_ms;                /* --until (0 = none) */
    uint32_t limit;                  /* --limit */
    struct store_audit_cursor after; /* --after */
    bool json;                       /* --json */
};

/* Output state while records stream in. */
struct audit_out {
    bool json;      /* JSON or table */
    size_t n;       /* records printed */
    struct buf buf; /* JSON document being built */
};

static void
usage(FILE *f)
{
    (void)fprintf(f,
                  "usage: fencegate audit --data-dir DIR [--lock LOCK] [--since T] [--until T]\n"
                  "                       [--limit N] [--after CURSOR] [--json]\n"
                  "  Lists rejected writes from the audit log, oldest first (read-only; safe\n"
                  "  while a gateway runs).  T: RFC 3339 UTC (2026-11-21T10:00:00Z) or Unix ms.\n"
                  "  --limit: 1..%d (default %d).  --after: the cursor a previous page printed.\n",
                  STORE_AUDIT_LIMIT_MAX, DEFAULT_LIMIT);
}

/* The value of option name: "--name=value" or "--name value". */
static const char *
opt_value(int argc, char **argv, int *i, const char *name, bool *matched)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    *matched = false;
    if (strncmp(a, name, n) != 0) {
        return NULL;
    }
    if (a[n] == '=') {
        *matched = true;
        return a + n + 1;
    }
    if (a[n] != '\0') {
        return NULL;
    }
    *matched = true;
    if (*i + 1 >= argc) {
        return NULL;
    }
    (*i)++;
    return argv[*i];
}

static int
parse_args(int argc, char **argv, struct audit_args *a)
{
    memset(a, 0, sizeof(*a));
    a->limit = DEFAULT_LIMIT;
    static const char *const valued[] = {"--data-dir", "--lock",  "--since",
                                         "--until",    "--limit", "--after"};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            a->json = true;
            continue;
        }
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 1;
        }
        const char *v = NULL;
        size_t which = 0;
        bool matched = false;
        for (; which < sizeof(valued) / sizeof(valued[0]); which++) {
            v = opt_value(argc, argv, &i, valued[which], &matched);
            if (matched) {
                break;
            }
        }
        if (!matched) {
            (void)fprintf(stderr, "fencegate audit: unknown argument '%s'\n", argv[i]);
            return -1;
        }
        if (v == NULL) {
            (void)fprintf(stderr, "fencegate audit: %s needs a value\n", valued[which]);
            return -1;
        }
        int err = 0;
        uint64_t u = 0;
        switch (which) {
        case 0:
            a->data_dir = v;
            break;
        case 1:
            a->lock = v;
            err = store_lock_valid(v) ? 0 : ERR_INVAL;
            break;
        case 2:
            err = gw_json_audit_time_parse(v, &a->since_ms);
            break;
        case 3:
            err = gw_json_audit_time_parse(v, &a->until_ms);
            break;
        case 4:
            err = parse_u64(v, 1, STORE_AUDIT_LIMIT_MAX, &u);
            a->limit = (uint32_t)u;
            break;
        default:
            err = store_audit_cursor_parse(v, &a->after);
            break;
        }
        if (err != 0) {
            (void)fprintf(stderr, "fencegate audit: bad value for %s: '%s'\n", valued[which], v);
            return -1;
        }
    }
    if (a->data_dir == NULL) {
        (void)fprintf(stderr, "fencegate audit: --data-dir is required\n");
        return -1;
    }
    return 0;
}

/* Print s for a terminal: control bytes become '?', so a hostile key or
 * User-Agent cannot emit escape sequences; empty is "-". */
static void
cell(const char *s, int width)
{
    char tmp[STORE_KEY_MAX + STORE_BUCKET_MAX + 2];
    size_t n = 0;
    for (const char *p = s; *p != '\0' && n < sizeof(tmp) - 1; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == 0x7f) {
            tmp[n++] = '?';
        } else {
            tmp[n++] = *p;
        }
    }
    tmp[n] = '\0';
    (void)printf("%-*s ", width, n == 0 ? "-" : tmp);
}

static void
num_cell(uint64_t v, int width)
{
    if (v == 0) {
        (void)printf("%-*s ", width, "-");
    } else {
        (void)printf("%-*" PRIu64 " ", width, v);
    }
}

/* store_audit_each_fn */
static int
on_record(void *arg, const struct store_audit_rec *r)
{
    struct audit_out *o = arg;
    o->n++;
    if (o->json) {
        int err = o->n > 1 ? buf_append(&o->buf, ",", 1) : 0;
        if (err == 0) {
            err = gw_json_audit_rec_append(&o->buf, r);
        }
        return err;
    }
    char t[GW_AUDIT_TIME_LEN];
    gw_json_audit_time_format(r->time_ms, t);
    cell(t, 24);
    cell(store_audit_kind_name(r->kind), 13);
    cell(r->lock, 12);
    num_cell(r->token, 7);
    num_cell(r->current, 7);
    cell(r->principal, 10);
    cell(r->client, 21);
    cell(r->method, 6);
    cell(r->operation, 16);
    cell(r->request_id, 16);
    char where[STORE_BUCKET_MAX + STORE_KEY_MAX + 2];
    (void)snprintf(where, sizeof(where), "%s/%s", r->bucket, r->key);
    cell(where, 0);
    (void)printf("\n");
    return 0;
}

int
gw_cmd_audit(int argc, char **argv)
{
    struct audit_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != 0) {
        if (rc < 0) {
            usage(stderr);
            return 2;
        }
        return 0;
    }
    /* The store logs its own errors; the CLI prints one clear line instead. */
    enum log_level saved = log_threshold;
    log_threshold = LOG_NONE;
    struct store_opts so;
    store_opts_init(&so);
    so.data_dir = a.data_dir;
    so.read_only = true;
    struct store *s = NULL;
    char errbuf[512] = "";
    int err = store_open(&so, &s, errbuf, sizeof(errbuf));
    log_threshold = saved;
    if (err != 0) {
        (void)fprintf(stderr, "fencegate audit: %s\n", errbuf[0] != '\0' ? errbuf : err_str(err));
        return 1;
    }
    struct store_audit_query q = {.lock = a.lock,
                                  .since_ms = a.since_ms,
                                  .until_ms = a.until_ms,
                                  .limit = a.limit,
                                  .after = a.after};
    struct audit_out o = {.json = a.json};
    buf_init(&o.buf, OUT_CAP);
    if (o.json) {
        err = buf_append_str(&o.buf, "{\"records\":[");
    } else {
        (void)printf("%-24s %-13s %-12s %-7s %-7s %-10s %-21s %-6s %-16s %-16s %s\n", "TIME",
                     "KIND", "LOCK", "TOKEN", "CURRENT", "PRINCIPAL", "CLIENT", "METHOD",
                     "OPERATION", "REQUEST-ID", "BUCKET/KEY");
    }
    struct store_audit_cursor next;
    if (err == 0) {
        err = store_audit_query(s, &q, on_record, &o, &next);
    }
    char cur[48] = "";
    if (err == 0 && next.set) {
        err = store_audit_cursor_format(&next, cur, sizeof(cur));
    }
    if (err == 0 && o.json) {
        err = buf_append_str(&o.buf, "],\"next\":");
        if (err == 0) {
            err = cur[0] != '\0' ? buf_printf(&o.buf, "\"%s\"}\n", cur)
                                 : buf_append_str(&o.buf, "null}\n");
        }
        if (err == 0) {
            (void)fputs(buf_cstr(&o.buf), stdout);
        }
    } else if (err == 0) {
        if (cur[0] != '\0') {
            (void)printf("# more records: --after %s\n", cur);
        } else if (o.n == 0) {
            (void)printf("# no matching records\n");
        }
    }
    buf_cleanup(&o.buf);
    store_close(s);
    if (fflush(stdout) != 0) {
        err = ERR_IO;
    }
    if (err != 0) {
        (void)fprintf(stderr, "fencegate audit: %s\n", err_str(err));
        return 1;
    }
    return 0;
}
