/*
 * gateway/proxy/proxy_hdr.c: which headers the proxy forwards, both ways, and the
 * Content-Encoding rewrite for aws-chunked bodies (see proxy_hdr.h).
 */
#include "gateway/proxy/proxy_hdr.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/token.h"

/* Request headers that are not forwarded (RFC 9110 7.6.1 hop-by-hop, the client's
 * credentials, which are replaced, and the fencing headers, which are ours). */
static const struct strlit drop_request[] = {
    STRLIT("connection"),
    STRLIT("keep-alive"),
    STRLIT("proxy-connection"),
    STRLIT("proxy-authorization"),
    STRLIT("te"),
    STRLIT("trailer"),
    STRLIT("transfer-encoding"),
    STRLIT("upgrade"),
    STRLIT("expect"),
    STRLIT("host"),
    STRLIT("content-length"),
    STRLIT("authorization"),
    STRLIT("x-amz-date"),
    STRLIT("x-amz-security-token"),
    STRLIT("x-amz-content-sha256"),
    STRLIT("x-fencing-token"),
    STRLIT("x-fencing-lock"),
    {NULL, 0},
};

/* Headers that describe the aws-chunked framing, which the upstream never sees. */
static const struct strlit drop_chunked[] = {
    STRLIT("x-amz-decoded-content-length"),
    STRLIT("x-amz-trailer"),
    {NULL, 0},
};

/* Response headers the server frames itself or that are hop-by-hop. */
static const struct strlit drop_response[] = {
    STRLIT("connection"), STRLIT("keep-alive"),     STRLIT("proxy-connection"),
    STRLIT("te"),         STRLIT("trailer"),        STRLIT("transfer-encoding"),
    STRLIT("upgrade"),    STRLIT("content-length"), {NULL, 0},
};

/* The lengths first: most names of a request are compared to none. */
static bool
in_list(const struct strlit *list, const char *name, size_t nlen)
{
    for (size_t i = 0; list[i].s != NULL; i++) {
        if (http_name_is(name, nlen, list[i].s, list[i].n)) {
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
    size_t nlen = strlen(name);
    return in_list(drop_request, name, nlen) || named_by_connection(connection, name) ||
           (chunked && in_list(drop_chunked, name, nlen));
}

bool
gw_proxy_hdr_drop_response(const char *name)
{
    return in_list(drop_response, name, strlen(name));
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
