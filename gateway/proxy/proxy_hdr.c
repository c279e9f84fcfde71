/*
 * gateway/proxy/proxy_hdr.c: which headers the proxy forwards, both ways, and the
 * Content-Encoding rewrite for aws-chunked bodies (see proxy_hdr.h).
 */
#include "gateway/proxy/proxy_hdr.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"

/* Request headers that are not forwarded (RFC 9110 7.6.1 hop-by-hop, the client's
 * credentials, which are replaced, and the fencing headers, which are ours). */
static const char *const drop_request[] = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "expect",
    "host",
    "content-length",
    "authorization",
    "x-amz-date",
    "x-amz-security-token",
    "x-amz-content-sha256",
    "x-fencing-token",
    "x-fencing-lock",
    NULL,
};

/* Headers that describe the aws-chunked framing, which the upstream never sees. */
static const char *const drop_chunked[] = {
    "x-amz-decoded-content-length",
    "x-amz-trailer",
    NULL,
};

/* Response headers the server frames itself or that are hop-by-hop. */
static const char *const drop_response[] = {
    "connection",        "keep-alive", "proxy-connection", "te", "trailer",
    "transfer-encoding", "upgrade",    "content-length",   NULL,
};

static bool
in_list(const char *const *list, const char *name)
{
    for (size_t i = 0; list[i] != NULL; i++) {
        if (str_caseeq(list[i], name)) {
            return true;
        }
    }
    return false;
}

/* True if name appears as a token of the client's Connection header (RFC 9110 7.6.1). */
static bool
named_by_connection(const char *connection, const char *name)
{
    if (connection == NULL) {
        return false;
    }
    size_t nlen = strlen(name);
    const char *p = connection;
    while (*p != '\0') {
        while (*p == ' ' || *p == '\t' || *p == ',') {
            p++;
        }
        const char *start = p;
        while (*p != '\0' && *p != ',' && *p != ' ' && *p != '\t') {
            p++;
        }
        if ((size_t)(p - start) == nlen && strncasecmp(start, name, nlen) == 0) {
            return true;
        }
    }
    return false;
}

bool
gw_proxy_hdr_drop_request(const char *name, const char *connection, bool chunked)
{
    return in_list(drop_request, name) || named_by_connection(connection, name) ||
           (chunked && in_list(drop_chunked, name));
}

bool
gw_proxy_hdr_drop_response(const char *name)
{
    return in_list(drop_response, name);
}

/*
 * Content-Encoding without its "aws-chunked" token (the framing is removed
 * here); NULL when nothing is left.  Writes into out[outlen].
 */
const char *
gw_proxy_hdr_strip_aws_chunked(const char *value, char *out, size_t outlen)
{
    size_t used = 0;
    const char *p = value;
    out[0] = '\0';
    while (*p != '\0') {
        while (*p == ' ' || *p == '\t' || *p == ',') {
            p++;
        }
        const char *start = p;
        while (*p != '\0' && *p != ',') {
            p++;
        }
        const char *end = p;
        while (end > start && (end[-1] == ' ' || end[-1] == '\t')) {
            end--;
        }
        size_t n = (size_t)(end - start);
        if (n == 0 || (n == 11 && strncasecmp(start, "aws-chunked", 11) == 0)) {
            continue;
        }
        int w = snprintf(out + used, outlen - used, "%s%.*s", used > 0 ? ", " : "", (int)n, start);
        if (w < 0 || (size_t)w >= outlen - used) {
            break;
        }
        used += (size_t)w;
    }
    return used > 0 ? out : NULL;
}
