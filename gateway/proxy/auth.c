#define LOG_MODULE "auth"
#include "gateway/proxy/auth.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/mem.h"
#include "common/num.h"
#include "gateway/base/config.h"
#include "gateway/http/http.h"
#include "gateway/s3/s3req.h"
#include "gateway/s3/sigv2.h"

static int
refuse(struct gw_refusal *fail, int status, const char *code, const char *message)
{
    *fail = (struct gw_refusal){.status = status, .code = code, .message = message};
    return ERR_AUTH;
}

/* Reads the payload mode from x-amz-content-sha256 (SigV4 for S3: "Signature
 * Calculations for the Authorization Header", payload options). */
static int
payload_mode(struct gw_req *req, bool header_form, struct gw_auth *out, struct gw_refusal *fail)
{
    const char *h = gw_req_header(req, "x-amz-content-sha256");
    if (h == NULL) {
        if (header_form) {
            return refuse(fail, 400, "InvalidRequest",
                          "Missing required header for this request: x-amz-content-sha256.");
        }
        out->payload = GW_PAYLOAD_NONE;
        return 0;
    }
    if (strcmp(h, GW_SIGV4_UNSIGNED) == 0) {
        out->payload = GW_PAYLOAD_NONE;
        return 0;
    }
    if (strlen(h) == GW_SIGV4_HEX_LEN && strspn(h, "0123456789abcdefABCDEF") == GW_SIGV4_HEX_LEN) {
        for (size_t i = 0; i <= GW_SIGV4_HEX_LEN; i++) {
            char c = h[i];
            out->sha256[i] = (char)((c >= 'A' && c <= 'F') ? c - 'A' + 'a' : c);
        }
        out->payload = GW_PAYLOAD_SHA256;
        if (gw_req_content_length(req) == 0 && strcmp(out->sha256, GW_SIGV4_EMPTY_SHA256) != 0) {
            return refuse(fail, 400, "XAmzContentSHA256Mismatch",
                          "The provided 'x-amz-content-sha256' header does not match what was "
                          "computed.");
        }
        return 0;
    }
    if (strcmp(h, GW_SIGV4_STREAMING) == 0) {
        out->payload = GW_PAYLOAD_CHUNKED_SIGNED;
    } else if (strcmp(h, GW_SIGV4_STREAMING_TRL) == 0) {
        out->payload = GW_PAYLOAD_CHUNKED_SIGNED_TRL;
    } else if (strcmp(h, GW_SIGV4_STREAMING_UTRL) == 0) {
        out->payload = GW_PAYLOAD_CHUNKED_UNSIGNED_TRL;
    } else {
        return refuse(fail, 400, "InvalidArgument",
                      "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, a STREAMING-* value, or "
                      "the body's SHA-256 in hex.");
    }
    const char *dl = gw_req_header(req, "x-amz-decoded-content-length");
    if (dl == NULL || parse_u64(dl, 0, INT64_MAX, &out->decoded_length) != 0) {
        return refuse(fail, 411, "MissingContentLength",
                      "aws-chunked uploads need a valid x-amz-decoded-content-length header.");
    }
    out->trailer = gw_req_header(req, "x-amz-trailer");
    return 0;
}

static bool
bucket_allowed(const struct gw_principal *p, const struct gw_s3req *s3)
{
    if (p->buckets == NULL || s3->bucket_len == 0) {
        return true;
    }
    for (char **b = p->buckets; *b != NULL; b++) {
        if (strcmp(*b, s3->bucket) == 0) {
            return true;
        }
    }
    return false;
}

/* A verifier's reason for a refusal and the S3 error it is answered with. */
struct fail_row {
    int why;             /* enum gw_sigv4_fail or enum gw_sigv2_fail */
    int status;          /* HTTP status */
    const char *code;    /* S3 <Code> */
    const char *message; /* S3 <Message> */
};

static const struct fail_row sigv4_fails[] = {
    {GW_SIGV4_FAIL_MALFORMED, 400, "AuthorizationHeaderMalformed",
     "The authorization header is malformed."},
    {GW_SIGV4_FAIL_QUERY, 400, "AuthorizationQueryParametersError",
     "The presigned URL's X-Amz-* parameters are malformed."},
    {GW_SIGV4_FAIL_SKEW, 403, "RequestTimeTooSkewed",
     "The difference between the request time and the current time is too large."},
    {GW_SIGV4_FAIL_EXPIRED, 403, "AccessDenied", "Request has expired."},
    {GW_SIGV4_FAIL_MISMATCH, 403, "SignatureDoesNotMatch",
     "The request signature we calculated does not match the signature you provided. Check "
     "your key and signing method."},
};

static const struct fail_row sigv2_fails[] = {
    {GW_SIGV2_FAIL_NODATE, 403, "AccessDenied",
     "AWS authentication requires a valid Date or x-amz-date header"},
    {GW_SIGV2_FAIL_SKEW, 403, "RequestTimeTooSkewed",
     "The difference between the request time and the current time is too large."},
    {GW_SIGV2_FAIL_EXPIRED, 403, "AccessDenied", "Request has expired"},
    {GW_SIGV2_FAIL_MISMATCH, 403, "SignatureDoesNotMatch",
     "The request signature we calculated does not match the signature you provided. Check "
     "your key and signing method."},
    {GW_SIGV2_FAIL_INTERNAL, 400, "InvalidRequest", "The request is too large to authenticate."},
};

/* The request's headers as signer input (owned array, borrowed strings), or NULL (OOM). */
static struct gw_sigv4_header *
headers_view(struct gw_req *req)
{
    size_t n = gw_req_header_count(req);
    struct gw_sigv4_header *hs = mem_zalloc_array(n > 0 ? n : 1, sizeof(*hs));
    for (size_t i = 0; hs != NULL && i < n; i++) {
        const struct gw_header *h = gw_req_header_at(req, i);
        hs[i].name = h->name;
        hs[i].value = h->value;
    }
    return hs;
}

struct cred;

/* One verification: the request, the principal's secret and where the outcome goes. */
struct verify_call {
    struct gw_req *req;               /* the request, head complete */
    const struct gw_s3req *s3;        /* its bucket and addressing style */
    struct gw_sigv4_keycache *kc;     /* SigV4 signing-key cache (borrowed) */
    const struct cred *cred;          /* the parsed credential */
    const char *secret;               /* the principal's secret key (borrowed) */
    const struct gw_sigv4_header *hs; /* the request's headers, hs[0..nheaders) */
    size_t nheaders;                  /* entries in hs */
    struct gw_auth *out;              /* SigV4: receives the verified signing state */
};

/*
 * A signature scheme's part in gw_auth_check: everything else (principal
 * lookup, payload mode, bucket list, logging and refusals) is one path.
 */
struct scheme {
    /* Checks the signature.  0; ERR_NOMEM; another error with *why set (a fails row's why). */
    int (*verify)(const struct verify_call *vc, int *why);
    /* The refusal reason as logged ("SignatureDoesNotMatch", ...) for why. */
    const char *(*log_reason)(int why);
    const struct fail_row *fails; /* why -> S3 error; a why not listed: 500 InternalError */
    size_t nfails;                /* entries in fails */
    bool chunk_signatures;        /* its seed signature can check signed aws-chunked bodies */
};

/* A parsed credential of either scheme (gw_auth_check's local; never copied). */
struct cred {
    const struct scheme *sc; /* how to verify it */
    const char *access_key;  /* borrowed from a */
    bool hash_header;        /* x-amz-content-sha256 is required (SigV4 header form) */
    union {
        struct gw_sigv2_authz v2; /* sc == &sigv2 */
        struct gw_sigv4_authz v4; /* sc == &sigv4 */
    } a;
};

/* struct scheme.verify for SigV4 (gateway/s3/sigv4.h); fills out->v on success. */
static int
verify_sigv4(const struct verify_call *vc, int *why)
{
    const struct gw_sigv4_authz *a = &vc->cred->a.v4;
    struct gw_sigv4_input in = {
        .method = gw_req_method(vc->req),
        .path = gw_req_path(vc->req),
        .query = gw_req_query(vc->req),
        .headers = vc->hs,
        .nheaders = vc->nheaders,
        .payload_hash = a->presigned ? NULL : gw_req_header(vc->req, "x-amz-content-sha256"),
    };
    struct gw_sigv4_verify_opts opts = {
        .region = NULL, /* any region: the scope is signed, and a gateway has no one region */
        .service = "s3",
        .now_ms = clock_wall_ms(),
        .skew_s = 0,
    };
    enum gw_sigv4_fail w = GW_SIGV4_FAIL_NONE;
    int rc = gw_sigv4_verify(vc->kc, vc->secret, a, &in, &opts, &vc->out->v, &w);
    *why = (int)w;
    vc->out->verified = rc == 0;
    return rc;
}

/* struct scheme.log_reason for SigV4 */
static const char *
log_sigv4(int why)
{
    return gw_sigv4_fail_s3code((enum gw_sigv4_fail)why);
}

/* struct scheme.verify for SigV2 (gateway/s3/sigv2.h) */
static int
verify_sigv2(const struct verify_call *vc, int *why)
{
    const struct gw_s3req *s3 = vc->s3;
    struct gw_sigv2_input in = {
        .method = gw_req_method(vc->req),
        .path = gw_req_path(vc->req),
        .query = gw_req_query(vc->req),
        .headers = vc->hs,
        .nheaders = vc->nheaders,
        .vhost_bucket = s3->style == GW_S3_STYLE_VIRTUAL ? s3->bucket : NULL,
    };
    enum gw_sigv2_fail w = GW_SIGV2_FAIL_NONE;
    int rc = gw_sigv2_verify(vc->secret, &vc->cred->a.v2, &in, clock_wall_ms(), &w);
    *why = (int)w;
    return rc;
}

/* struct scheme.log_reason for SigV2 */
static const char *
log_sigv2(int why)
{
    return why == GW_SIGV2_FAIL_MISMATCH ? "SigV2 SignatureDoesNotMatch" : "SigV2 refused";
}

static const struct scheme sigv4 = {
    .verify = verify_sigv4,
    .log_reason = log_sigv4,
    .fails = sigv4_fails,
    .nfails = sizeof(sigv4_fails) / sizeof(sigv4_fails[0]),
    .chunk_signatures = true,
};

static const struct scheme sigv2 = {
    .verify = verify_sigv2,
    .log_reason = log_sigv2,
    .fails = sigv2_fails,
    .nfails = sizeof(sigv2_fails) / sizeof(sigv2_fails[0]),
    .chunk_signatures = false,
};

static int
refuse_verify(const struct scheme *sc, int why, struct gw_refusal *fail)
{
    for (size_t i = 0; i < sc->nfails; i++) {
        if (sc->fails[i].why == why) {
            return refuse(fail, sc->fails[i].status, sc->fails[i].code, sc->fails[i].message);
        }
    }
    return refuse(fail, 500, "InternalError", "The signature could not be checked.");
}

/*
 * SigV2: the Authorization header "AWS AK:sig" (presigned false) or
 * AWSAccessKeyId/Signature/Expires in the query.  A query without them is
 * anonymous.  The body is passed through as sent (SigV2 signs no payload
 * hash; Content-MD5, if sent, is signed and checked upstream).
 * Returns 0 (c filled) or ERR_AUTH.
 */
static int
parse_sigv2(struct gw_req *req, const struct gw_config *cfg, bool presigned, struct cred *c,
            struct gw_refusal *fail)
{
    int rc = presigned ? gw_sigv2_presigned_parse(gw_req_query(req), &c->a.v2)
                       : gw_sigv2_authz_parse(gw_req_header(req, "authorization"), &c->a.v2);
    if (rc == ERR_NOTFOUND) {
        return refuse(fail, 403, "AccessDenied", "Anonymous access is not allowed.");
    }
    if (!cfg->auth.sigv2) {
        return refuse(fail, 400, "InvalidRequest",
                      "SigV2 is disabled on this gateway; use SigV4 (AWS4-HMAC-SHA256).");
    }
    if (rc != 0) {
        return presigned ? refuse(fail, 403, "AccessDenied",
                                  "Query-string authentication requires the Signature, Expires "
                                  "and AWSAccessKeyId parameters")
                         : refuse(fail, 400, "InvalidArgument",
                                  "Authorization header is invalid -- one and only one ' ' "
                                  "(space) required");
    }
    c->sc = &sigv2;
    c->access_key = c->a.v2.access_key;
    c->hash_header = false;
    return 0;
}

/*
 * SigV4: the Authorization header authz, or (authz NULL) the presigned query.
 * Returns 0 (c filled), ERR_AUTH, or ERR_NOTFOUND: no authz and no X-Amz-*
 * credentials in the query.
 */
static int
parse_sigv4(struct gw_req *req, const char *authz, struct cred *c, struct gw_refusal *fail)
{
    if (authz != NULL) {
        int rc = gw_sigv4_authz_parse(authz, &c->a.v4);
        if (rc == ERR_UNSUPPORTED) {
            return refuse(fail, 400, "InvalidRequest",
                          "The authorization mechanism you have provided is not supported. "
                          "Please use AWS4-HMAC-SHA256.");
        }
        if (rc != 0) {
            return refuse(fail, 400, "AuthorizationHeaderMalformed",
                          "The authorization header is malformed.");
        }
    } else {
        int rc = gw_sigv4_presigned_parse(gw_req_query(req), &c->a.v4);
        if (rc == ERR_NOTFOUND) {
            return ERR_NOTFOUND;
        }
        if (rc == ERR_UNSUPPORTED) {
            return refuse(fail, 400, "AuthorizationQueryParametersError",
                          "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\".");
        }
        if (rc != 0) {
            return refuse(fail, 400, "AuthorizationQueryParametersError",
                          "The presigned URL's X-Amz-* parameters are malformed.");
        }
    }
    c->sc = &sigv4;
    c->access_key = c->a.v4.access_key;
    c->hash_header = !c->a.v4.presigned;
    return 0;
}

/* The one path after parsing, for either scheme: principal, payload mode, signature, bucket. */
static int
check_signed(struct gw_req *req, const struct gw_config *cfg, const struct gw_s3req *s3,
             struct gw_sigv4_keycache *kc, const struct cred *c, struct gw_auth *out,
             struct gw_refusal *fail)
{
    const struct gw_principal *p = gw_config_principal_by_key(cfg, c->access_key);
    if (p == NULL) {
        return refuse(fail, 403, "InvalidAccessKeyId",
                      "The AWS Access Key Id you provided does not exist in our records.");
    }
    int rc = payload_mode(req, c->hash_header, out, fail);
    if (rc != 0) {
        return rc;
    }
    if (!c->sc->chunk_signatures && (out->payload == GW_PAYLOAD_CHUNKED_SIGNED ||
                                     out->payload == GW_PAYLOAD_CHUNKED_SIGNED_TRL)) {
        return refuse(fail, 400, "InvalidRequest",
                      "Signed aws-chunked uploads need SigV4 (AWS4-HMAC-SHA256).");
    }
    struct gw_sigv4_header *hs = headers_view(req);
    if (hs == NULL) {
        return ERR_NOMEM;
    }
    struct verify_call vc = {.req = req,
                             .s3 = s3,
                             .kc = kc,
                             .cred = c,
                             .secret = p->secret_key,
                             .hs = hs,
                             .nheaders = gw_req_header_count(req),
                             .out = out};
    int why = 0;
    rc = c->sc->verify(&vc, &why);
    free(hs);
    if (rc == ERR_NOMEM) {
        return ERR_NOMEM;
    }
    if (rc != 0) {
        log_info("req %s: %s for access key %s (principal %s)", gw_req_id(req),
                 c->sc->log_reason(why), c->access_key, p->name);
        gw_auth_cleanup(out);
        return refuse_verify(c->sc, why, fail);
    }
    out->principal = p;
    if (!bucket_allowed(p, s3)) {
        gw_auth_cleanup(out);
        return refuse(fail, 403, "AccessDenied", "Access Denied.");
    }
    return 0;
}

/* Query parameters that carry a presigned URL's credentials. */
static const struct strlit auth_params[] = {
    STRLIT("AWSAccessKeyId"),       STRLIT("Signature"),           STRLIT("Expires"),
    STRLIT("X-Amz-Algorithm"),      STRLIT("X-Amz-Credential"),    STRLIT("X-Amz-Date"),
    STRLIT("X-Amz-Expires"),        STRLIT("X-Amz-SignedHeaders"), STRLIT("X-Amz-Signature"),
    STRLIT("X-Amz-Security-Token"),
};

static bool
is_auth_param(const char *p, size_t n)
{
    for (size_t i = 0; i < sizeof(auth_params) / sizeof(auth_params[0]); i++) {
        if (auth_params[i].n == n && memcmp(auth_params[i].s, p, n) == 0) {
            return true;
        }
    }
    return false;
}

/* Whether query (raw) carries a presigned URL's credentials. */
static bool
has_auth_param(const char *query)
{
    for (const char *p = query != NULL ? query : ""; *p != '\0';) {
        if (is_auth_param(p, strcspn(p, "=&"))) {
            return true;
        }
        p += strcspn(p, "&");
        p += *p == '&';
    }
    return false;
}

/*
 * A browser's CORS preflight: OPTIONS on a bucket or object with Origin and
 * Access-Control-Request-Method, no credentials (browsers never sign one) and
 * no body.  S3 answers it from the bucket's CORS rules without
 * authentication, so it passes as the anonymous read it is: forwarded
 * re-signed, and it can neither write nor read an object.
 */
static bool
cors_preflight(struct gw_req *req, const struct gw_s3req *s3)
{
    return s3->op == GW_S3_OP_OPTIONS && gw_req_header(req, "origin") != NULL &&
           gw_req_header(req, "access-control-request-method") != NULL &&
           gw_req_header(req, "authorization") == NULL &&
           gw_req_header(req, "transfer-encoding") == NULL && gw_req_content_length(req) <= 0 &&
           !has_auth_param(gw_req_query(req));
}

int
gw_auth_check(struct gw_req *req, const struct gw_config *cfg, const struct gw_s3req *s3,
              struct gw_sigv4_keycache *kc, struct gw_auth *out, struct gw_refusal *fail)
{
    memset(out, 0, sizeof(*out));
    if (cfg->nprincipals == 0 || cors_preflight(req, s3)) {
        /* Anonymous mode: nothing to verify against, but the body framing still
         * has to be understood.  Signed chunks cannot be checked without a key. */
        int rc = payload_mode(req, false, out, fail);
        if (rc == 0 && (out->payload == GW_PAYLOAD_CHUNKED_SIGNED ||
                        out->payload == GW_PAYLOAD_CHUNKED_SIGNED_TRL)) {
            rc = refuse(fail, 400, "InvalidRequest",
                        "Signed aws-chunked uploads need principals in the gateway's "
                        "configuration; use UNSIGNED-PAYLOAD or a body hash.");
        }
        return rc;
    }
    const char *authz = gw_req_header(req, "authorization");
    struct cred c;
    int rc;
    if (authz != NULL && strncmp(authz, "AWS ", 4) == 0) {
        rc = parse_sigv2(req, cfg, false, &c, fail);
    } else {
        rc = parse_sigv4(req, authz, &c, fail);
        if (rc == ERR_NOTFOUND) {
            rc = parse_sigv2(req, cfg, true, &c, fail);
        }
    }
    if (rc != 0) {
        return rc;
    }
    return check_signed(req, cfg, s3, kc, &c, out, fail);
}

void
gw_auth_cleanup(struct gw_auth *a)
{
    if (a == NULL) {
        return;
    }
    gw_sigv4_wipe(&a->v, sizeof(a->v));
    a->verified = false;
}

int
gw_auth_query_strip(const char *query, struct buf *out)
{
    int rc = 0;
    for (const char *p = query != NULL ? query : ""; rc == 0 && *p != '\0';) {
        size_t plen = strcspn(p, "&");
        const char *eq = memchr(p, '=', plen);
        if (!is_auth_param(p, eq != NULL ? (size_t)(eq - p) : plen) && plen > 0) {
            rc = out->len > 0 ? buf_append(out, "&", 1) : 0;
            rc = rc == 0 ? buf_append(out, p, plen) : rc;
        }
        p += plen;
        p += *p == '&';
    }
    return rc;
}
