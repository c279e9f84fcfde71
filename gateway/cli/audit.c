#include "gateway/cli/audit.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/lockname.h"
#include "common/log.h"
#include "common/num.h"
#include "gateway/api/json_audit.h"
#include "gateway/cli/audit_merge.h"
#include "store/store.h"

#define DEFAULT_LIMIT 100
#define OUT_CAP       ((size_t)64 << 20)

#define SOURCE_WIDTH_MAX 40

/* Parsed command line. */
struct audit_args {
    const char *data_dirs[GW_AUDIT_MERGE_MAX]; /* --data-dir, at least one; borrowed from argv */
    size_t ndirs;                              /* how many */
    const char *lock;                          /* --lock or NULL */
    const char *who;                           /* --principal (NAME or @ADDRESS) or NULL */
    const char *request_id;                    /* --request-id or NULL */
    int64_t since_ms;                          /* --since (0 = start) */
    int64_t until_ms;                          /* --until (0 = none) */
    uint32_t limit;                            /* --limit */
    const char *after_arg;                     /* --after as given, or NULL */
    struct store_audit_cursor after;           /* --after, one data dir */
    struct gw_audit_merge_cursor mafter;       /* --after, several data dirs */
    bool json;                                 /* --json */
};

/* Output state while records stream in. */
struct audit_out {
    bool json;                  /* JSON or table */
    size_t n;                   /* records printed */
    struct buf buf;             /* JSON document being built */
    const char *const *sources; /* several data dirs: each record's source, by store
                                   index (borrowed); NULL: one, no source column */
    int source_width;           /* width of the SOURCE column */
    struct buf rec;             /* one record's JSON, before its source is put in front */
    const char *cur_source;     /* --request-id: the data dir being asked (several), or NULL */
};

static void
usage(FILE *f)
{
    (void)fprintf(f,
                  "usage: fencegate audit --data-dir DIR [--data-dir DIR ...] [--lock LOCK]\n"
                  "                       [--principal NAME|@ADDRESS] [--since T] [--until T]\n"
                  "                       [--limit N] [--after CURSOR] [--json]\n"
                  "       fencegate audit --data-dir DIR [...] --request-id ID [--json]\n"
                  "  Lists rejected writes from the audit log, oldest first (read-only; safe\n"
                  "  while a gateway runs).  T: RFC 3339 UTC (2026-11-21T10:00:00Z) or Unix ms.\n"
                  "  --request-id: the record of the refusal answered with ID (\"BASE.n\": the\n"
                  "  n-th of a run of identical refusals, counted in BASE's record: COUNT).\n"
                  "  --limit: 1..%d (default %d).  --after: the cursor a previous page printed.\n"
                  "  Several --data-dir (up to %d): one listing merged in time order, each\n"
                  "  record naming the data dir it came from (SOURCE; \"source\" in JSON).\n",
                  STORE_AUDIT_LIMIT_MAX, DEFAULT_LIMIT, GW_AUDIT_MERGE_MAX);
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

/* Refuse a data dir given twice (also through another path): its records would
 * be listed twice, and LMDB wants one environment handle per process. */
static int
same_dirs(const struct audit_args *a)
{
    struct stat st[GW_AUDIT_MERGE_MAX];
    bool ok[GW_AUDIT_MERGE_MAX];
    for (size_t i = 0; i < a->ndirs; i++) {
        /* a dir that cannot be stat'ed is reported by store_open, naming it */
        ok[i] = stat(a->data_dirs[i], &st[i]) == 0;
        for (size_t j = 0; ok[i] && j < i; j++) {
            if (ok[j] && st[j].st_dev == st[i].st_dev && st[j].st_ino == st[i].st_ino) {
                (void)fprintf(stderr, "fencegate audit: --data-dir '%s' and '%s' are the same\n",
                              a->data_dirs[j], a->data_dirs[i]);
                return -1;
            }
        }
    }
    return 0;
}

static int
parse_args(int argc, char **argv, struct audit_args *a)
{
    memset(a, 0, sizeof(*a));
    a->limit = DEFAULT_LIMIT;
    static const char *const valued[] = {"--data-dir", "--lock",  "--since",     "--until",
                                         "--limit",    "--after", "--principal", "--request-id"};
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
            if (a->ndirs == GW_AUDIT_MERGE_MAX) {
                (void)fprintf(stderr, "fencegate audit: at most %d --data-dir\n",
                              GW_AUDIT_MERGE_MAX);
                return -1;
            }
            a->data_dirs[a->ndirs++] = v;
            break;
        case 1:
            a->lock = v;
            err = lock_name_valid(v) ? 0 : ERR_INVAL;
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
        case 5:
            a->after_arg = v; /* its form depends on how many data dirs */
            break;
        case 6:
            a->who = v;
            err = v[0] != '\0' && strlen(v) <= STORE_WHO_MAX ? 0 : ERR_INVAL;
            break;
        default:
            a->request_id = v;
            err = v[0] != '\0' && strlen(v) <= STORE_REQID_MAX + 21 ? 0 : ERR_INVAL;
            break;
        }
        if (err != 0) {
            (void)fprintf(stderr, "fencegate audit: bad value for %s: '%s'\n", valued[which], v);
            return -1;
        }
    }
    if (a->ndirs == 0) {
        (void)fprintf(stderr, "fencegate audit: --data-dir is required\n");
        return -1;
    }
    if (a->who != NULL && a->lock != NULL) {
        (void)fprintf(stderr, "fencegate audit: --principal and --lock exclude each other\n");
        return -1;
    }
    if (a->after_arg != NULL) {
        int err = a->ndirs == 1 ? store_audit_cursor_parse(a->after_arg, &a->after)
                                : gw_audit_merge_cursor_parse(a->after_arg, a->ndirs, &a->mafter);
        if (err != 0) {
            (void)fprintf(stderr, "fencegate audit: bad value for --after: '%s'\n", a->after_arg);
            return -1;
        }
    }
    return same_dirs(a);
}

/* Print s for a terminal: control bytes become '?', so a hostile key or
 * User-Agent cannot emit escape sequences; empty (or NULL) is "-". */
static void
cell(const char *s, int width)
{
    char tmp[STORE_KEY_MAX + STORE_BUCKET_MAX + 2];
    size_t n = 0;
    for (const char *p = s != NULL ? s : ""; *p != '\0' && n < sizeof(tmp) - 1; p++) {
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

/* Print one record; source names its data dir when several are listed. */
static int
print_rec(struct audit_out *o, const char *source, const struct store_audit_rec *r)
{
    o->n++;
    if (o->json) {
        int err = o->n > 1 ? buf_append(&o->buf, ",", 1) : 0;
        if (err == 0 && source == NULL) {
            return gw_json_audit_rec_append(&o->buf, r);
        }
        /* {"source":"...", then the record's own fields */
        buf_reset(&o->rec);
        if (err == 0) {
            err = gw_json_audit_rec_append(&o->rec, r);
        }
        if (err == 0) {
            err = buf_append_str(&o->buf, "{\"source\":");
        }
        if (err == 0) {
            err = gw_json_audit_str_append(&o->buf, source);
        }
        if (err == 0) {
            err = buf_append(&o->buf, ",", 1);
        }
        if (err == 0) {
            err = buf_append_str(&o->buf, buf_cstr(&o->rec) + 1); /* past its '{' */
        }
        return err;
    }
    char t[GW_AUDIT_TIME_LEN];
    gw_json_audit_time_format(r->time_ms, t);
    cell(t, 24);
    if (source != NULL) {
        cell(source, o->source_width);
    }
    cell(store_audit_kind_name(r->kind), 13);
    num_cell(r->count > 0 ? r->count : 1, 6);
    cell(r->lock, 12);
    num_cell(r->token, 7);
    num_cell(r->current, 7);
    cell(r->principal, 10);
    cell(r->client, 21);
    cell(r->method, 6);
    cell(r->operation, 16);
    cell(r->request_id, 16);
    cell(r->trace_id, 32); /* the W3C trace id the request brought, "-" when none */
    char where[STORE_BUCKET_MAX + STORE_KEY_MAX + 2];
    if (r->kind == STORE_AUDIT_REVOKED) {
        (void)snprintf(where, sizeof(where), "holder %s", r->key);
    } else {
        (void)snprintf(where, sizeof(where), "%s/%s", r->bucket, r->key);
    }
    cell(where, 0);
    (void)printf("\n");
    return 0;
}

/* store_audit_each_fn: one data dir */
static int
on_record(void *arg, const struct store_audit_rec *r)
{
    return print_rec(arg, NULL, r);
}

/* store_audit_each_fn: store_audit_find's record (o->cur_source: its data dir) */
static int
on_found(void *arg, const struct store_audit_rec *r)
{
    struct audit_out *o = arg;
    return print_rec(o, o->cur_source, r);
}

/* gw_audit_merge_each_fn: several data dirs */
static int
on_merged_record(void *arg, size_t source, const struct store_audit_rec *r)
{
    struct audit_out *o = arg;
    return print_rec(o, o->sources[source], r);
}

/* Open dir read-only, printing the reason on failure (naming the dir). */
static int
open_store(const char *dir, struct store **out)
{
    /* The store logs its own errors; the CLI prints one clear line instead. */
    enum log_level saved = log_threshold;
    log_threshold = LOG_NONE;
    struct store_opts so;
    store_opts_init(&so);
    so.data_dir = dir;
    so.read_only = true;
    char errbuf[512] = "";
    int err = store_open(&so, out, errbuf, sizeof(errbuf));
    log_threshold = saved;
    if (err == 0) {
        return 0;
    }
    const char *why = errbuf[0] != '\0' ? errbuf : err_str(err);
    if (strstr(why, dir) != NULL) {
        (void)fprintf(stderr, "fencegate audit: %s\n", why);
    } else {
        (void)fprintf(stderr, "fencegate audit: %s: %s\n", dir, why);
    }
    return err;
}

static void
print_header(const struct audit_out *o)
{
    if (o->sources == NULL) {
        (void)printf("%-24s %-13s %-6s %-12s %-7s %-7s %-10s %-21s %-6s %-16s %-16s %-32s %s\n",
                     "TIME", "KIND", "COUNT", "LOCK", "TOKEN", "CURRENT", "PRINCIPAL", "CLIENT",
                     "METHOD", "OPERATION", "REQUEST-ID", "TRACE-ID", "BUCKET/KEY");
        return;
    }
    (void)printf("%-24s %-*s %-13s %-6s %-12s %-7s %-7s %-10s %-21s %-6s %-16s %-16s %-32s %s\n",
                 "TIME", o->source_width, "SOURCE", "KIND", "COUNT", "LOCK", "TOKEN", "CURRENT",
                 "PRINCIPAL", "CLIENT", "METHOD", "OPERATION", "REQUEST-ID", "TRACE-ID",
                 "BUCKET/KEY");
}

/* List the records of the n stores: one directly, several merged.  On success
 * cur holds the --after cursor of the next page, or "" at the end. */
static int
list(struct store *const *stores, const struct audit_args *a, struct audit_out *o, char *cur,
     size_t curlen)
{
    cur[0] = '\0';
    if (a->request_id != NULL) {
        /* one record at most per data dir: each is asked */
        for (size_t i = 0; i < a->ndirs; i++) {
            o->cur_source = a->ndirs > 1 ? a->data_dirs[i] : NULL;
            int err = store_audit_find(stores[i], a->request_id, on_found, o, NULL);
            if (err != 0 && err != ERR_NOTFOUND) {
                return err;
            }
        }
        return 0;
    }
    struct store_audit_query q = {.lock = a->lock,
                                  .who = a->who,
                                  .since_ms = a->since_ms,
                                  .until_ms = a->until_ms,
                                  .limit = a->limit,
                                  .after = a->after};
    cur[0] = '\0';
    if (a->ndirs == 1) {
        struct store_audit_cursor next;
        int err = store_audit_query(stores[0], &q, on_record, o, &next);
        if (err == 0 && next.set) {
            err = store_audit_cursor_format(&next, cur, curlen);
        }
        return err;
    }
    struct gw_audit_merge_cursor next;
    int err = gw_audit_merge_query(stores, a->ndirs, &q, &a->mafter, on_merged_record, o, &next);
    if (err == 0 && next.set) {
        err = gw_audit_merge_cursor_format(&next, cur, curlen);
    }
    return err;
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
    struct store *stores[GW_AUDIT_MERGE_MAX] = {NULL};
    for (size_t i = 0; i < a.ndirs; i++) {
        if (open_store(a.data_dirs[i], &stores[i]) != 0) {
            for (size_t j = 0; j < i; j++) {
                store_close(stores[j]);
            }
            return 1;
        }
    }
    struct audit_out o = {.json = a.json};
    buf_init(&o.buf, OUT_CAP);
    buf_init(&o.rec, OUT_CAP);
    if (a.ndirs > 1) {
        o.sources = a.data_dirs;
        o.source_width = (int)strlen("SOURCE");
        for (size_t i = 0; i < a.ndirs; i++) {
            size_t w = strlen(a.data_dirs[i]);
            if (w > (size_t)o.source_width) {
                o.source_width = w < SOURCE_WIDTH_MAX ? (int)w : SOURCE_WIDTH_MAX;
            }
        }
    }
    int err = 0;
    if (o.json) {
        err = buf_append_str(&o.buf, "{\"records\":[");
    } else {
        print_header(&o);
    }
    char cur[GW_AUDIT_MERGE_CURSOR_LEN] = "";
    if (err == 0) {
        err = list(stores, &a, &o, cur, sizeof(cur));
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
    buf_cleanup(&o.rec);
    buf_cleanup(&o.buf);
    for (size_t i = 0; i < a.ndirs; i++) {
        store_close(stores[i]);
    }
    if (fflush(stdout) != 0) {
        err = ERR_IO;
    }
    if (err != 0) {
        (void)fprintf(stderr, "fencegate audit: %s\n", err_str(err));
        return 1;
    }
    return 0;
}
