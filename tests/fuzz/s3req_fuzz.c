/*
 * tests/fuzz/s3req_fuzz.c: the S3 request model on arbitrary input.
 *
 * Input: "METHOD\nTARGET\nHOST\nFLAGS\nCONTENT-TYPE" (missing lines are
 * empty; FLAGS[0] = '1' sets copy_source, an 'O' anywhere in FLAGS a
 * method-override header).  Checks, beyond memory safety: a parsed key is
 * within limits and NUL-free; re-encoding the decoded key and parsing again
 * gives the same key (decoding happens exactly once); and the classifier's
 * invariant (DESIGN.md G9, fail closed): a request let through as a read has
 * a read method (GET/HEAD/OPTIONS, or POST ?select&select-type=2 on an
 * object); a write let through has a write method and names exactly one known
 * operation and its keys (a bucket; object writes other than DeleteObjects a
 * key; bucket writes none); a refusal carries its status, code and message;
 * method overrides and POST form uploads are never let through.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/s3/s3req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The sub-resources that select an operation (every GW_S3_Q_* but the modifiers). */
#define SELECTING                                                                                  \
    (((UINT64_C(1) << 38) - 1) & ~(GW_S3_Q_PART_NUMBER | GW_S3_Q_VERSION_ID | GW_S3_Q_X_ID |       \
                                   GW_S3_Q_SELECT_TYPE | GW_S3_Q_ID))

static char domain0[] = "s3.example.com";
static char domain1[] = "example.com";
static char *const domains[] = {domain0, domain1, NULL};

/* next_line - the next '\n'-terminated field of buf (NUL-terminated in place). */
static char *
next_line(char **p)
{
    char *s = *p;
    if (s == NULL) {
        return NULL;
    }
    char *nl = strchr(s, '\n');
    if (nl != NULL) {
        *nl = '\0';
        *p = nl + 1;
    } else {
        *p = NULL;
    }
    return s;
}

static void
check_reencode(const struct gw_s3req *r)
{
    static const char hex[] = "0123456789ABCDEF";
    static char path[1 + GW_S3_MAX_BUCKET + 1 + 3 * GW_S3_MAX_KEY + 1];
    size_t n = 0;
    path[n++] = '/';
    memcpy(path + n, r->bucket, r->bucket_len);
    n += r->bucket_len;
    path[n++] = '/';
    for (size_t i = 0; i < r->key_len; i++) {
        unsigned char c = (unsigned char)r->key[i];
        path[n++] = '%';
        path[n++] = hex[c >> 4];
        path[n++] = hex[c & 15];
    }
    path[n] = '\0';
    struct gw_s3req again;
    struct gw_s3req_in in = {.method = "GET", .path = path, .query = ""};
    if (gw_s3req_parse(&in, &again) != 0 || again.key_len != r->key_len ||
        memcmp(again.key, r->key, r->key_len) != 0 || strcmp(again.bucket, r->bucket) != 0) {
        abort();
    }
}

static bool
is(const char *m, const char *want)
{
    return strcmp(m, want) == 0;
}

static unsigned
nbits(uint64_t v)
{
    unsigned n = 0;
    for (; v != 0; v &= v - 1) {
        n++;
    }
    return n;
}

/* The classifier's invariant (see the top of this file); aborts when broken. */
static void
check_invariant(const struct gw_s3req_in *in, const struct gw_s3req *r, int rc)
{
    const char *m = in->method;
    bool read_method = is(m, "GET") || is(m, "HEAD") || is(m, "OPTIONS");
    bool write_method = is(m, "PUT") || is(m, "POST") || is(m, "DELETE");
    if (rc != 0) {
        if ((rc != ERR_INVAL && rc != ERR_TOOBIG && rc != ERR_DENIED) || r->refuse_code == NULL ||
            r->refuse_msg == NULL || r->refuse_status < 400 || r->refuse_status > 501) {
            abort();
        }
        return;
    }
    if (r->op == GW_S3_OP_GATEWAY_API) {
        return; /* the gateway's own API, never forwarded */
    }
    bool form = false;
    for (const char *c = in->content_type; c != NULL && *c != '\0'; c++) {
        form = form || strncasecmp(c, "multipart", 9) == 0;
    }
    if (in->method_override || (is(m, "POST") && form) || (!read_method && !write_method)) {
        abort(); /* never let through */
    }
    if (!r->write) {
        bool select = is(m, "POST") && r->op == GW_S3_OP_SELECT_OBJECT_CONTENT && r->key_len > 0 &&
                      (r->query & SELECTING) == GW_S3_Q_SELECT &&
                      (r->query & GW_S3_Q_SELECT_TYPE) != 0;
        if (!read_method && !select) {
            abort(); /* a read with a write method */
        }
        return;
    }
    if (!write_method || r->op == GW_S3_OP_UNKNOWN || r->bucket_len == 0 ||
        r->object_write == r->bucket_write || nbits(r->query & SELECTING) > 1) {
        abort(); /* a write that does not name one operation */
    }
    if (r->object_write && r->key_len == 0 && r->op != GW_S3_OP_DELETE_OBJECTS) {
        abort(); /* an object write without its key */
    }
    if ((r->bucket_write || r->op == GW_S3_OP_DELETE_OBJECTS) && r->key_len != 0) {
        abort(); /* a bucket-level write with a key */
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (buf == NULL) {
        return 0;
    }
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *p = buf;
    char *method = next_line(&p);
    char *target = next_line(&p);
    char *host = next_line(&p);
    char *flags = next_line(&p);
    if (target == NULL) {
        target = method;
    }
    const char *query = NULL;
    char *q = strchr(target, '?');
    if (q != NULL) {
        *q = '\0';
        query = q + 1;
    }
    struct gw_s3req_in in = {
        .method = method,
        .path = target,
        .query = query,
        .host = host,
        .virtual_host_domains = domains,
        .copy_source = flags != NULL && flags[0] == '1',
    };
    char *ctype = next_line(&p);
    in.content_type = ctype;
    in.method_override = flags != NULL && strchr(flags, 'O') != NULL;
    struct gw_s3req r;
    int rc = gw_s3req_parse(&in, &r);
    check_invariant(&in, &r, rc);
    if (rc == 0) {
        if (r.key_len > GW_S3_MAX_KEY || strlen(r.key) != r.key_len ||
            strlen(r.bucket) != r.bucket_len || r.raw_key_off > strlen(target) || r.name == NULL ||
            r.op >= GW_S3_OP_COUNT) {
            abort();
        }
        if (r.write != gw_s3_op_is_write(r.op) ||
            r.object_write != gw_s3_op_is_object_write(r.op) ||
            r.bucket_write != gw_s3_op_is_bucket_write(r.op)) {
            abort();
        }
        if (r.bucket_len > 0 && r.op != GW_S3_OP_GATEWAY_API) {
            check_reencode(&r);
        }
    }
    char v[16];
    (void)gw_s3req_query_get(query, "uploadId", v, sizeof(v));
    (void)gw_s3req_query_get(query, "partNumber", v, 1);
    gw_s3req_cleanup(&r);
    free(buf);
    return 0;
}
