/*
 * tests/fuzz/s3req_fuzz.c: the S3 request model on arbitrary input.
 *
 * Input: "METHOD\nTARGET\nHOST\nC" (missing lines are empty; C = '1' sets
 * copy_source).  Checks, beyond memory safety: a parsed key is within limits
 * and NUL-free; re-encoding the decoded key and parsing again gives the same
 * key (decoding happens exactly once); every method other than GET/HEAD/
 * OPTIONS is classified as a write (fail safe; SelectObjectContent excepted).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/s3req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
    struct gw_s3req r;
    int rc = gw_s3req_parse(&in, &r);
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
        bool read = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0 ||
                    strcmp(method, "OPTIONS") == 0;
        if (!read && !r.write && r.op != GW_S3_OP_GATEWAY_API &&
            r.op != GW_S3_OP_SELECT_OBJECT_CONTENT) {
            abort();
        }
        if (read && r.write) {
            abort();
        }
        if (r.bucket_len > 0 && r.op != GW_S3_OP_GATEWAY_API) {
            check_reencode(&r);
        }
    } else if (rc != ERR_INVAL && rc != ERR_TOOBIG) {
        abort();
    }
    char v[16];
    (void)gw_s3req_query_get(query, "uploadId", v, sizeof(v));
    (void)gw_s3req_query_get(query, "partNumber", v, 1);
    gw_s3req_cleanup(&r);
    free(buf);
    return 0;
}
