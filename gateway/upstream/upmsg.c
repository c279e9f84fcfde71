#include "gateway/upstream/upmsg.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/num.h"
#include "common/token.h"

struct gw_upmsg_head_off {
    size_t name;      /* offset of the NUL-terminated name in buf */
    size_t name_len;  /* its length */
    size_t value;     /* offset of the NUL-terminated, trimmed value */
    size_t value_len; /* its length */
};

/* RFC 9110 section 5.6.3: OWS is spaces and tabs. */
static void
trim(const char **s, size_t *len)
{
    while (*len > 0 && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*len)--;
    }
    while (*len > 0 && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t')) {
        (*len)--;
    }
}

/* ---- the response head ---- */

void
gw_upmsg_head_init(struct gw_upmsg_head *h)
{
    memset(h, 0, sizeof(*h));
    buf_init(&h->buf, GW_UPMSG_HEAD_MAX_BYTES);
}

void
gw_upmsg_head_reset(struct gw_upmsg_head *h, size_t keep_bytes)
{
    if (h->buf.alloc > keep_bytes) {
        buf_cleanup(&h->buf);
    }
    buf_reset(&h->buf);
    h->n = 0;
    h->bytes = 0;
    h->status = 0;
}

void
gw_upmsg_head_cleanup(struct gw_upmsg_head *h)
{
    if (h == NULL) {
        return;
    }
    buf_cleanup(&h->buf);
    free(h->off);
    free(h->hdrs);
    h->off = NULL;
    h->hdrs = NULL;
    h->n = 0;
    h->cap = 0;
}

static int
grow(struct gw_upmsg_head *h)
{
    size_t n = h->cap != 0 ? h->cap * 2 : 16;
    struct gw_upmsg_head_off *o = realloc(h->off, n * sizeof(*o));
    if (o == NULL) {
        return ERR_NOMEM;
    }
    h->off = o;
    struct gw_header *g = realloc(h->hdrs, n * sizeof(*g));
    if (g == NULL) {
        return ERR_NOMEM;
    }
    h->hdrs = g;
    h->cap = n;
    return 0;
}

/* buf_append's errors as ours: the cap of buf is the head's byte cap. */
static int
append(struct gw_upmsg_head *h, const char *p, size_t len)
{
    int err = buf_append(&h->buf, p, len);
    return err == ERR_NOMEM ? ERR_NOMEM : err != 0 ? ERR_TOOBIG : 0;
}

static int
add_field(struct gw_upmsg_head *h, const char *line, size_t len)
{
    if (line[0] == ' ' || line[0] == '\t') {
        /* obs-fold (RFC 9112 section 5.2): join to the previous value with one space */
        trim(&line, &len);
        if (h->n == 0) {
            return ERR_UPSTREAM;
        }
        if (len == 0) {
            return 0;
        }
        h->buf.len--; /* drop the previous value's NUL: it is the last thing in buf */
        int err = append(h, " ", 1);
        if (err == 0) {
            err = append(h, line, len);
        }
        if (err != 0) {
            return err;
        }
        h->off[h->n - 1].value_len += 1 + len;
        return append(h, "", 1);
    }
    const char *colon = memchr(line, ':', len);
    if (colon == NULL || !http_is_token(line, (size_t)(colon - line))) {
        return ERR_UPSTREAM; /* RFC 9112 section 5.1: no space before the colon either */
    }
    if (h->n == h->cap && grow(h) != 0) {
        return ERR_NOMEM;
    }
    const char *value = colon + 1;
    size_t vlen = len - (size_t)(value - line);
    trim(&value, &vlen);
    struct gw_upmsg_head_off *o = &h->off[h->n];
    size_t nlen = (size_t)(colon - line);
    /* "name\0value\0": one reservation, then plain copies (every header of every answer) */
    int err = buf_reserve(&h->buf, nlen + vlen + 2);
    if (err != 0) {
        return err == ERR_NOMEM ? ERR_NOMEM : ERR_TOOBIG;
    }
    char *d = h->buf.data + h->buf.len;
    memcpy(d, line, nlen);
    d[nlen] = '\0';
    memcpy(d + nlen + 1, value, vlen);
    d[nlen + 1 + vlen] = '\0';
    o->name = h->buf.len;
    o->name_len = nlen;
    o->value = h->buf.len + nlen + 1;
    o->value_len = vlen;
    h->buf.len += nlen + vlen + 2;
    h->buf.data[h->buf.len] = '\0'; /* the buffer's own NUL after its bytes */
    h->n++;
    return 0;
}

/* "HTTP/1.1 200 OK" -> 200 (RFC 9112 section 4: three digits, then SP or the end). */
static int
parse_status(const char *line, size_t len)
{
    const char *sp = memchr(line, ' ', len);
    if (sp == NULL) {
        return ERR_UPSTREAM;
    }
    size_t rest = len - (size_t)(sp - line) - 1;
    uint64_t code = 0;
    if (rest < 3 || (rest > 3 && sp[4] != ' ') || parse_u64n(sp + 1, 3, 100, 599, &code) != 0) {
        return ERR_UPSTREAM;
    }
    return (int)code;
}

int
gw_upmsg_head_line(struct gw_upmsg_head *h, const char *line, size_t len)
{
    if (len > GW_UPMSG_HEAD_MAX_BYTES - h->bytes) {
        return ERR_TOOBIG;
    }
    h->bytes += len;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) {
        len--;
    }
    if (len >= 5 && memcmp(line, "HTTP/", 5) == 0) {
        int status = parse_status(line, len);
        if (status < 0) {
            return status;
        }
        h->status = status;
        h->n = 0;
        buf_reset(&h->buf);
        return 0;
    }
    if (h->status == 0) {
        return ERR_UPSTREAM; /* anything before a status line */
    }
    if (len > 0) {
        return add_field(h, line, len);
    }
    if (h->status < 200) {
        h->status = 0; /* an interim response (100 Continue, 103 ...): not forwarded */
        h->n = 0;
        buf_reset(&h->buf);
        return 0;
    }
    for (size_t i = 0; i < h->n; i++) {
        h->hdrs[i].name = h->buf.data + h->off[i].name;
        h->hdrs[i].name_len = h->off[i].name_len;
        h->hdrs[i].value = h->buf.data + h->off[i].value;
        h->hdrs[i].value_len = h->off[i].value_len;
    }
    return 1;
}

/* ---- what we send ---- */

bool
gw_upmsg_req_url_ok(const char *url)
{
    size_t skip;
    if (strncasecmp(url, "http://", 7) == 0) {
        skip = 7;
    } else if (strncasecmp(url, "https://", 8) == 0) {
        skip = 8;
    } else {
        return false;
    }
    if (url[skip] == '\0' || url[skip] == '/' || url[skip] == '?') {
        return false;
    }
    for (const unsigned char *p = (const unsigned char *)url; *p != '\0'; p++) {
        if (*p <= 0x20 || *p >= 0x7f || *p == '#') {
            return false;
        }
    }
    return true;
}

bool
gw_upmsg_req_method_ok(const char *method)
{
    return http_is_token(method, strlen(method));
}

int
gw_upmsg_req_header_check(const char *h, int64_t body_length, enum gw_upmsg_req_hdr *kind,
                          bool *empty)
{
    static const struct {
        const char *name;
        size_t len;
    } names[] = {{"Accept", 6}, {"Expect", 6}, {"Transfer-Encoding", 17}, {"Content-Length", 14}};
    const char *colon = strchr(h, ':');
    if (colon == NULL || !http_is_token(h, (size_t)(colon - h))) {
        return ERR_INVAL;
    }
    size_t nlen = (size_t)(colon - h);
    const char *value = colon + 1;
    size_t vlen = strlen(value);
    if (!http_value_clean(value, vlen)) {
        return ERR_INVAL; /* CR, LF and other controls could split the request */
    }
    trim(&value, &vlen);
    *empty = vlen == 0;
    *kind = GW_UPMSG_REQ_HDR_OTHER;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (names[i].len == nlen && strncasecmp(h, names[i].name, nlen) == 0) {
            *kind = (enum gw_upmsg_req_hdr)i;
            break;
        }
    }
    if (*kind == GW_UPMSG_REQ_HDR_TE) {
        return ERR_INVAL; /* the body is framed by Content-Length, by us */
    }
    if (*kind == GW_UPMSG_REQ_HDR_CL) {
        uint64_t cl = 0;
        if (parse_u64n(value, vlen, 0, INT64_MAX, &cl) != 0 ||
            (int64_t)cl != (body_length < 0 ? 0 : body_length)) {
            return ERR_INVAL; /* would desynchronise the connection */
        }
    }
    return 0;
}
