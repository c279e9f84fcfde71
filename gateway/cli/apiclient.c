#include "gateway/cli/apiclient.h"

#define LOG_MODULE "upcli"

#include <curl/curl.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"

struct gw_apiclient {
    CURL *easy;                         /* one handle: its connection cache is reused */
    struct gw_sigv4_keycache *kc;       /* signing keys (owned) */
    struct gw_apiclient_base base;      /* the target, or base.url "" when none */
    const char *region;                 /* signing region (borrowed) */
    const struct gw_sigv4_creds *creds; /* borrowed, or NULL: unsigned */
    char errbuf[CURL_ERROR_SIZE];       /* libcurl's text for the last failure */
    struct gw_apiclient_resp *resp;     /* the response being received (borrowed) */
    const volatile sig_atomic_t *abort; /* the current request's abort flag, or NULL */
    bool toobig;                        /* the body passed GW_APICLIENT_MAX_BODY */
};

static bool curl_ready; /* curl_global_init done (start-up, one thread) */

void
gw_apiclient_resp_init(struct gw_apiclient_resp *r)
{
    r->status = 0;
    buf_init(&r->body, GW_APICLIENT_MAX_BODY);
}

void
gw_apiclient_resp_cleanup(struct gw_apiclient_resp *r)
{
    buf_cleanup(&r->body);
    r->status = 0;
}

struct gw_apiclient *
gw_apiclient_new(void)
{
    if (!curl_ready) {
        CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
        if (rc != CURLE_OK) {
            log_error("curl_global_init: %s", curl_easy_strerror(rc));
            return NULL;
        }
        curl_ready = true;
    }
    struct gw_apiclient *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    c->easy = curl_easy_init();
    if (c->easy == NULL) {
        log_error("curl_easy_init failed");
        free(c);
        return NULL;
    }
    return c;
}

void
gw_apiclient_free(struct gw_apiclient *c)
{
    if (c == NULL) {
        return;
    }
    curl_easy_cleanup(c->easy);
    gw_sigv4_keycache_free(c->kc);
    free(c);
}

/* CURLOPT_WRITEFUNCTION: keep the body, refusing more than the cap. */
static size_t
on_body(char *p, size_t size, size_t nmemb, void *arg)
{
    struct gw_apiclient *c = arg;
    size_t n = size * nmemb;
    int rc = buf_append(&c->resp->body, p, n);
    if (rc != 0) {
        c->toobig = rc == ERR_TOOBIG;
        return 0; /* CURLE_WRITE_ERROR */
    }
    return n;
}

/* CURLOPT_XFERINFOFUNCTION: called at least once a second; non-zero abandons. */
static int
on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    struct gw_apiclient *c = arg;
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    return c->abort != NULL && *c->abort != 0;
}

/* CURLOPT_SOCKOPTFUNCTION: no socket to the gateway leaks into `lock run`'s child. */
static int
on_sockopt(void *arg, curl_socket_t fd, curlsocktype purpose)
{
    (void)arg;
    (void)purpose;
    int flags = fcntl(fd, F_GETFD);
    if (flags >= 0) {
        (void)fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    }
    return CURL_SOCKOPT_OK;
}

#define SETOPT(opt, val)                                                                           \
    do {                                                                                           \
        CURLcode src_ = curl_easy_setopt(e, (opt), (val));                                         \
        if (src_ != CURLE_OK) {                                                                    \
            log_warn("curl_easy_setopt(%s): %s", #opt, curl_easy_strerror(src_));                  \
            rc = src_ == CURLE_OUT_OF_MEMORY ? ERR_NOMEM : ERR_INVAL;                              \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

static int
map_curl_error(struct gw_apiclient *c, CURLcode cc)
{
    switch (cc) {
    case CURLE_OPERATION_TIMEDOUT:
        return ERR_TIMEOUT;
    case CURLE_ABORTED_BY_CALLBACK:
        return ERR_CLOSED;
    case CURLE_OUT_OF_MEMORY:
        return ERR_NOMEM;
    case CURLE_WRITE_ERROR:
        return c->toobig ? ERR_TOOBIG : ERR_NOMEM;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return ERR_INVAL;
    default:
        return ERR_UPSTREAM;
    }
}

int
gw_apiclient_perform(struct gw_apiclient *c, const struct gw_apiclient_req *req,
                     struct gw_apiclient_resp *out)
{
    int rc = 0;
    struct curl_slist *hdrs = NULL;
    CURL *e = c->easy;
    if (req->method == NULL || req->url == NULL || req->timeout_ms == 0 ||
        req->nheaders > GW_APICLIENT_MAX_HEADERS || (req->nheaders > 0 && req->headers == NULL) ||
        (req->body == NULL && req->body_len > 0)) {
        return ERR_INVAL;
    }
    buf_reset(&out->body);
    out->status = 0;
    c->resp = out;
    c->abort = req->abort;
    c->toobig = false;
    c->errbuf[0] = '\0';
    for (size_t i = 0; i < req->nheaders; i++) {
        struct curl_slist *n = curl_slist_append(hdrs, req->headers[i]);
        if (n == NULL) {
            rc = ERR_NOMEM;
            goto fail;
        }
        hdrs = n;
    }
    /* No "Expect: 100-continue" round trip for our small bodies. */
    struct curl_slist *n = curl_slist_append(hdrs, "Expect:");
    if (n == NULL) {
        rc = ERR_NOMEM;
        goto fail;
    }
    hdrs = n;

    curl_easy_reset(e); /* keeps the connection cache */
    SETOPT(CURLOPT_ERRORBUFFER, c->errbuf);
    SETOPT(CURLOPT_URL, req->url);
    SETOPT(CURLOPT_PATH_AS_IS, 1L); /* the path signed is the path sent */
    SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
    SETOPT(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    SETOPT(CURLOPT_CUSTOMREQUEST, req->method);
    SETOPT(CURLOPT_HTTPHEADER, hdrs);
    SETOPT(CURLOPT_NOSIGNAL, 1L); /* our signal handlers stay ours */
    SETOPT(CURLOPT_PROXY, "");    /* no proxy from the environment */
    SETOPT(CURLOPT_FOLLOWLOCATION, 0L);
    SETOPT(CURLOPT_USERAGENT, "fencegate-cli");
    SETOPT(CURLOPT_CONNECTTIMEOUT_MS, (long)GW_APICLIENT_CONNECT_MS);
    SETOPT(CURLOPT_TIMEOUT_MS, (long)(req->timeout_ms > LONG_MAX ? LONG_MAX : req->timeout_ms));
    SETOPT(CURLOPT_WRITEFUNCTION, on_body);
    SETOPT(CURLOPT_WRITEDATA, (void *)c);
    SETOPT(CURLOPT_XFERINFOFUNCTION, on_progress);
    SETOPT(CURLOPT_XFERINFODATA, (void *)c);
    SETOPT(CURLOPT_NOPROGRESS, 0L);
    SETOPT(CURLOPT_SOCKOPTFUNCTION, on_sockopt);
    if (req->body != NULL) {
        SETOPT(CURLOPT_POSTFIELDS, req->body);
        SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    } else if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
        SETOPT(CURLOPT_POSTFIELDS, "");
        SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
    }
    if (strcmp(req->method, "HEAD") == 0) {
        SETOPT(CURLOPT_NOBODY, 1L);
    }

    CURLcode cc = curl_easy_perform(e);
    long status = 0;
    if (curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK) {
        out->status = status;
    }
    if (cc != CURLE_OK) {
        rc = map_curl_error(c, cc);
        if (rc != ERR_CLOSED) {
            log_warn("%s %s: %s", req->method, req->url,
                     c->errbuf[0] != '\0' ? c->errbuf : curl_easy_strerror(cc));
        }
        goto fail;
    }
    rc = 0;
fail:
    /* Detach everything the handle borrowed: it outlives this call. */
    (void)curl_easy_setopt(e, CURLOPT_HTTPHEADER, (struct curl_slist *)NULL);
    (void)curl_easy_setopt(e, CURLOPT_ERRORBUFFER, (char *)NULL);
    curl_slist_free_all(hdrs);
    c->resp = NULL;
    c->abort = NULL;
    return rc;
}

/* ---- base URL and signing ---- */

int
gw_apiclient_base_parse(const char *s, struct gw_apiclient_base *out)
{
    memset(out, 0, sizeof(*out));
    size_t skip;
    if (strncmp(s, "http://", 7) == 0) {
        skip = 7;
    } else if (strncmp(s, "https://", 8) == 0) {
        skip = 8;
    } else {
        return ERR_INVAL;
    }
    const char *host = s + skip;
    size_t hlen = strcspn(host, "/?#");
    if (hlen == 0 || hlen > GW_APICLIENT_MAX_HOST || memchr(host, '@', hlen) != NULL) {
        return ERR_INVAL;
    }
    for (size_t i = 0; i < hlen; i++) {
        unsigned char ch = (unsigned char)host[i];
        if (ch <= 0x20 || ch == 0x7f) {
            return ERR_INVAL;
        }
    }
    const char *path = host + hlen;
    if (strpbrk(path, "?#") != NULL) {
        return ERR_INVAL;
    }
    size_t plen = strlen(path);
    while (plen > 0 && path[plen - 1] == '/') {
        plen--;
    }
    for (size_t i = 0; i < plen; i++) {
        unsigned char ch = (unsigned char)path[i];
        if (ch <= 0x20 || ch == 0x7f) {
            return ERR_INVAL;
        }
    }
    if (skip + hlen >= sizeof(out->url) || plen >= sizeof(out->prefix)) {
        return ERR_INVAL;
    }
    memcpy(out->url, s, skip + hlen);
    memcpy(out->host, host, hlen);
    memcpy(out->prefix, path, plen);
    return 0;
}

/* Append "Name: value\0" to store and note its offset. */
static int
add_line(struct buf *store, size_t *offs, size_t *n, const char *name, const char *value)
{
    if (*n >= GW_APICLIENT_MAX_HEADERS) {
        return ERR_TOOBIG;
    }
    offs[*n] = store->len;
    int rc = buf_printf(store, "%s: %s", name, value);
    if (rc == 0) {
        rc = buf_append(store, "", 1); /* the line's own NUL */
    }
    if (rc == 0) {
        (*n)++;
    }
    return rc;
}

int
gw_apiclient_sign(struct gw_sigv4_keycache *kc, const struct gw_sigv4_creds *creds,
                  const char *region, int64_t now_ms, const char *method, const char *host,
                  const char *path, const char *query, const char *content_type, const void *body,
                  size_t len, const char *lines[GW_APICLIENT_MAX_HEADERS], size_t *nlines,
                  struct buf *store)
{
    size_t offs[GW_APICLIENT_MAX_HEADERS];
    size_t n = 0;
    char amz_date[GW_SIGV4_AMZ_DATE_LEN + 1];
    char sha[GW_SIGV4_HEX_LEN + 1];
    char authz[GW_SIGV4_MAX_AUTHZ];
    int rc;

    *nlines = 0;
    buf_reset(store);
    if (method == NULL || host == NULL || path == NULL || path[0] != '/' || region == NULL ||
        region[0] == '\0' || (body == NULL && len > 0)) {
        return ERR_INVAL;
    }
    rc = gw_sigv4_amz_date_format(now_ms / 1000, amz_date);
    if (rc != 0) {
        return rc;
    }
    rc = gw_sigv4_sha256_hex(body != NULL ? body : "", len, sha);
    if (rc != 0) {
        return rc;
    }
    const bool token = creds != NULL && creds->session_token != NULL;
    /* SigV4: the signed headers, sorted by lowercase name. */
    struct gw_sigv4_header h[5];
    size_t nh = 0;
    if (content_type != NULL) {
        h[nh++] = (struct gw_sigv4_header){"content-type", content_type};
    }
    h[nh++] = (struct gw_sigv4_header){"host", host};
    h[nh++] = (struct gw_sigv4_header){"x-amz-content-sha256", sha};
    h[nh++] = (struct gw_sigv4_header){"x-amz-date", amz_date};
    if (token) {
        h[nh++] = (struct gw_sigv4_header){"x-amz-security-token", creds->session_token};
    }
    for (size_t i = 0; i < nh; i++) {
        rc = add_line(store, offs, &n, h[i].name, h[i].value);
        if (rc != 0) {
            goto fail;
        }
    }
    if (creds != NULL) {
        const char *signed_hdrs =
            content_type != NULL
                ? (token ? "content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token"
                         : "content-type;host;x-amz-content-sha256;x-amz-date")
                : (token ? "host;x-amz-content-sha256;x-amz-date;x-amz-security-token"
                         : "host;x-amz-content-sha256;x-amz-date");
        struct gw_sigv4_input in = {
            .method = method,
            .path = path,
            .query = query,
            .headers = h,
            .nheaders = nh,
            .payload_hash = sha,
        };
        rc = gw_sigv4_sign(kc, creds, region, "s3", amz_date, &in, signed_hdrs, authz,
                           sizeof(authz));
        if (rc != 0) {
            goto fail;
        }
        rc = add_line(store, offs, &n, "Authorization", authz);
        if (rc != 0) {
            goto fail;
        }
    }
    /* Offsets become pointers only now: the buffer may have moved while growing. */
    for (size_t i = 0; i < n; i++) {
        lines[i] = store->data + offs[i];
    }
    *nlines = n;
    return 0;
fail:
    buf_cleanse(store);
    return rc;
}

int
gw_apiclient_set_target(struct gw_apiclient *c, const char *base_url, const char *region,
                        const struct gw_sigv4_creds *creds)
{
    if (region == NULL || region[0] == '\0' || strlen(region) > GW_SIGV4_MAX_REGION ||
        gw_apiclient_base_parse(base_url, &c->base) != 0) {
        c->base.url[0] = '\0';
        return ERR_INVAL;
    }
    if (c->kc == NULL) {
        c->kc = gw_sigv4_keycache_new();
        if (c->kc == NULL) {
            return ERR_NOMEM;
        }
    }
    c->region = region;
    c->creds = creds;
    return 0;
}

int
gw_apiclient_call(struct gw_apiclient *c, const char *method, const char *path, const char *query,
                  const char *content_type, const void *body, size_t len, uint64_t timeout_ms,
                  const volatile sig_atomic_t *abort, struct gw_apiclient_resp *out)
{
    char url[GW_APICLIENT_MAX_URL];
    char full[GW_APICLIENT_MAX_URL];
    const char *lines[GW_APICLIENT_MAX_HEADERS];
    size_t nlines = 0;
    struct buf hb;

    if (c->base.url[0] == '\0' || path == NULL) {
        return ERR_INVAL;
    }
    int n1 = snprintf(full, sizeof(full), "%s%s", c->base.prefix, path);
    int n2 = snprintf(url, sizeof(url), "%s%s%s%s", c->base.url, full, query != NULL ? "?" : "",
                      query != NULL ? query : "");
    if (n1 < 0 || (size_t)n1 >= sizeof(full) || n2 < 0 || (size_t)n2 >= sizeof(url)) {
        return ERR_TOOBIG;
    }
    buf_init(&hb, GW_APICLIENT_HEADER_BYTES);
    int rc = gw_apiclient_sign(c->kc, c->creds, c->region, clock_wall_ms(), method, c->base.host,
                               full, query, content_type, body, len, lines, &nlines, &hb);
    if (rc == 0) {
        struct gw_apiclient_req req = {
            .method = method,
            .url = url,
            .headers = lines,
            .nheaders = nlines,
            .body = body,
            .body_len = len,
            .timeout_ms = timeout_ms,
            .abort = abort,
        };
        rc = gw_apiclient_perform(c, &req, out);
    }
    buf_cleanse(&hb); /* it may hold a session token */
    return rc;
}
