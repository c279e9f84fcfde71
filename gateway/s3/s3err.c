/*
 * gateway/s3/s3err.c: S3 XML error documents and the ERR_* -> HTTP status map.
 */
#include "gateway/s3/s3err.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int
gw_s3err_status_from_err(int err)
{
    switch (err) {
    case ERR_OK:
        return 200;
    case ERR_INVAL:
        return 400;
    case ERR_AUTH:
    case ERR_DENIED:
        return 403;
    case ERR_NOTFOUND:
        return 404;
    case ERR_FENCED:
    case ERR_EXPIRED:
    case ERR_CONFLICT:
    case ERR_EXISTS:
        return 409;
    case ERR_TOOBIG:
        return 413;
    case ERR_UNSUPPORTED:
        return 501;
    case ERR_UPSTREAM:
        return 502;
    case ERR_NOMEM:
    case ERR_AGAIN:
        return 503;
    case ERR_TIMEOUT:
        return 504;
    default:
        return 500;
    }
}

const char *
gw_s3err_code_from_err(int err)
{
    switch (err) {
    case ERR_INVAL:
        return "InvalidRequest";
    case ERR_AUTH:
    case ERR_DENIED:
        return "AccessDenied";
    case ERR_NOTFOUND:
        return "NotFound";
    case ERR_FENCED:
        return "StaleFencingToken";
    case ERR_EXPIRED:
        return "FencingLeaseExpired";
    case ERR_CONFLICT:
        return "OperationAborted";
    case ERR_EXISTS:
        return "AlreadyExists";
    case ERR_TOOBIG:
        return "EntityTooLarge";
    case ERR_UNSUPPORTED:
        return "NotImplemented";
    case ERR_UPSTREAM:
        return "BadGateway";
    case ERR_NOMEM:
    case ERR_AGAIN:
        return "ServiceUnavailable";
    case ERR_TIMEOUT:
        return "GatewayTimeout";
    default:
        return "InternalError";
    }
}

/*
 * utf8_len - length of the well-formed UTF-8 sequence at s (at most n bytes),
 * or 0 if it is not one (overlong, surrogate, above U+10FFFF, truncated) or
 * is a noncharacter U+FFFE/U+FFFF, which XML 1.0 does not allow either.
 */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
    size_t len;
    uint32_t cp;
    if (s[0] < 0x80) {
        return 1;
    } else if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        len = 2;
        cp = s[0] & 0x1fu;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        len = 3;
        cp = s[0] & 0x0fu;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        len = 4;
        cp = s[0] & 0x07u;
    } else {
        return 0;
    }
    if (n < len) {
        return 0;
    }
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            return 0;
        }
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff) {
        return 0;
    }
    return len;
}

/* append_text - s, escaped for XML character data and attribute values. */
static int
append_text(struct buf *out, const char *s)
{
    static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    size_t i = 0;
    int rc = 0;

    while (i < n && rc == 0) {
        /* copy the longest run that needs no escaping in one go */
        size_t run = 0;
        while (i + run < n) {
            unsigned char ch = p[i + run];
            if (ch < 0x20 || ch == 0x7f || ch == '&' || ch == '<' || ch == '>' || ch == '"' ||
                ch == '\'') {
                break;
            }
            size_t l = utf8_len(p + i + run, n - i - run);
            if (l == 0) {
                break;
            }
            run += l;
        }
        if (run > 0) {
            rc = buf_append(out, p + i, run);
            i += run;
            continue;
        }
        unsigned char ch = p[i];
        switch (ch) {
        case '&':
            rc = buf_append_str(out, "&amp;");
            break;
        case '<':
            rc = buf_append_str(out, "&lt;");
            break;
        case '>':
            rc = buf_append_str(out, "&gt;");
            break;
        case '"':
            rc = buf_append_str(out, "&quot;");
            break;
        case '\'':
            rc = buf_append_str(out, "&apos;");
            break;
        case '\t':
        case '\n':
        case '\r':
            /* character references keep them through attribute/line-end normalisation */
            rc = buf_printf(out, "&#%u;", (unsigned)ch);
            break;
        default:
            /* other control bytes and invalid UTF-8: not representable in XML 1.0 */
            rc = buf_append_str(out, replacement);
            break;
        }
        i++;
    }
    return rc;
}

static bool
valid_element_name(const char *s)
{
    if (s == NULL || s[0] == '\0' ||
        !((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_')) {
        return false;
    }
    /* "xml" in any case is reserved as a name prefix (XML 1.0 section 2.3) */
    if (strncasecmp(s, "xml", 3) == 0) {
        return false;
    }
    for (const char *p = s; *p != '\0'; p++) {
        char ch = *p;
        bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                  (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.';
        if (!ok) {
            return false;
        }
    }
    return true;
}

/* plain_code - s is short ASCII alphanumerics, safe in XML without escaping. */
static bool
plain_code(const char *s)
{
    if (s == NULL || s[0] == '\0' || strlen(s) > 64) {
        return false;
    }
    for (const char *p = s; *p != '\0'; p++) {
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'))) {
            return false;
        }
    }
    return true;
}

static int
append_element(struct buf *out, const char *name, const char *text)
{
    int rc = buf_printf(out, "<%s>", name);
    if (rc == 0) {
        rc = append_text(out, text);
    }
    if (rc == 0) {
        rc = buf_printf(out, "</%s>", name);
    }
    return rc;
}

int
gw_s3err_format(struct buf *out, const char *code, const char *message, const char *resource,
                const char *request_id, const struct gw_s3err_extra *extra, size_t nextra)
{
    if (code == NULL || code[0] == '\0') {
        return ERR_INVAL;
    }
    for (size_t i = 0; i < nextra; i++) {
        if (!valid_element_name(extra[i].name) || extra[i].value == NULL) {
            return ERR_INVAL;
        }
    }
    int rc = buf_append_str(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>");
    if (rc == 0) {
        rc = append_element(out, "Code", code);
    }
    if (rc == 0) {
        rc = append_element(out, "Message", message != NULL ? message : "");
    }
    if (rc == 0 && resource != NULL) {
        rc = append_element(out, "Resource", resource);
    }
    if (rc == 0 && request_id != NULL) {
        rc = append_element(out, "RequestId", request_id);
    }
    for (size_t i = 0; rc == 0 && i < nextra; i++) {
        rc = append_element(out, extra[i].name, extra[i].value);
    }
    if (rc == 0) {
        rc = buf_append_str(out, "</Error>");
    }
    return rc;
}

const char *
gw_s3err_build(struct buf *body, char bare[GW_S3ERR_BARE_MAX], size_t *len, const char *code,
               const char *message, const char *resource, const char *request_id,
               const struct gw_s3err_extra *extra, size_t nextra)
{
    int rc = gw_s3err_format(body, code, message, resource, request_id, extra, nextra);
    if (rc == 0) {
        *len = body->len;
        return body->data;
    }
    /* The document could not be built (no memory, too long, bad extra): the bare code. */
    buf_cleanup(body);
    int n = snprintf(bare, GW_S3ERR_BARE_MAX,
                     "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code>"
                     "<Message></Message></Error>",
                     plain_code(code) ? code : gw_s3err_code_from_err(ERR_IO));
    *len = n > 0 && (size_t)n < GW_S3ERR_BARE_MAX ? (size_t)n : 0;
    return bare;
}
