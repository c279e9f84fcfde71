#define LOG_MODULE "auth"
#include "gateway/proxy/auth.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/clock.h"
#include "common/log.h"
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

static int
fail_from_verify(enum gw_sigv4_fail why, struct gw_refusal *fail)
{
    switch (why) {
    case GW_SIGV4_FAIL_MALFORMED:
        return refuse(fail, 400, "AuthorizationHeaderMalformed",
                      "The authorization header is malformed.");
    case GW_SIGV4_FAIL_QUERY:
        return refuse(fail, 400, "AuthorizationQueryParametersError",
                      "The presigned URL's X-Amz-* parameters are malformed.");
    case GW_SIGV4_FAIL_SKEW:
        return refuse(fail, 403, "RequestTimeTooSkewed",
                      "The difference between the request time and the current time is too "
                      "large.");
    case GW_SIGV4_FAIL_EXPIRED:
        return refuse(fail, 403, "AccessDenied", "Request has expired.");
    case GW_SIGV4_FAIL_MISMATCH:
        return refuse(fail, 403, "SignatureDoesNotMatch",
                      "The request signature we calculated does not match the signature you "
                      "provided. Check your key and signing method.");
    case GW_SIGV4_FAIL_NONE:
    case GW_SIGV4_FAIL_INTERNAL:
    default:
        return refuse(fail, 500, "InternalError", "The signature could not be checked.");
    }
}

/* The request's headers as signer input (owned array, borrowed strings), or NULL (OOM). */
static struct gw_sigv4_header *
headers_view(struct gw_req *req)
{
    size_t n = gw_req_header_count(req);
    struct gw_sigv4_header *hs = calloc(n > 0 ? n : 1, sizeof(*hs));
    for (size_t i = 0; hs != NULL && i < n; i++) {
        const struct gw_header *h = gw_req_header_at(req, i);
        hs[i].name = h->name;
        hs[i].value = h->value;
    }
    return hs;
}

static int
fail_from_sigv2(enum gw_sigv2_fail why, struct gw_refusal *fail)
{
    switch (why) {
    case GW_SIGV2_FAIL_NODATE:
        return refuse(fail, 403, "AccessDenied",
                      "AWS authentication requires a valid Date or x-amz-date header");
    case GW_SIGV2_FAIL_SKEW:
        return refuse(fail, 403, "RequestTimeTooSkewed",
                      "The difference between the request time and the current time is too "
                      "large.");
    case GW_SIGV2_FAIL_EXPIRED:
        return refuse(fail, 403, "AccessDenied", "Request has expired");
    case GW_SIGV2_FAIL_MISMATCH:
        return refuse(fail, 403, "SignatureDoesNotMatch",
                      "The request signature we calculated does not match the signature you "
                      "provided. Check your key and signing method.");
    case GW_SIGV2_FAIL_INTERNAL:
        return refuse(fail, 400, "InvalidRequest", "The request is too large to authenticate.");
    case GW_SIGV2_FAIL_NONE:
    default:
        return refuse(fail, 500, "InternalError", "The signature could not be checked.");
    }
}

/*
 * SigV2 (gateway/s3/sigv2.h): the Authorization header "AWS AK:sig" (presigned
 * false) or AWSAccessKeyId/Signature/Expires in the query.  A query without
 * them is anonymous.  The body is passed through as sent (SigV2 signs no
 * payload hash; Content-MD5, if sent, is signed and checked upstream).
 */
static int
check_sigv2(struct gw_req *req, const struct gw_config *cfg, const struct gw_s3req *s3,
            bool presigned, struct gw_auth *out, struct gw_refusal *fail)
{
    struct gw_sigv2_authz a;
    int rc = presigned ? gw_sigv2_presigned_parse(gw_req_query(req), &a)
                       : gw_sigv2_authz_parse(gw_req_header(req, "authorization"), &a);
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
    const struct gw_principal *p = gw_config_principal_by_key(cfg, a.access_key);
    if (p == NULL) {
        return refuse(fail, 403, "InvalidAccessKeyId",
                      "The AWS Access Key Id you provided does not exist in our records.");
    }
    rc = payload_mode(req, false, out, fail);
    if (rc != 0) {
        return rc;
    }
    if (out->payload == GW_PAYLOAD_CHUNKED_SIGNED ||
        out->payload == GW_PAYLOAD_CHUNKED_SIGNED_TRL) {
        return refuse(fail, 400, "InvalidRequest",
                      "Signed aws-chunked uploads need SigV4 (AWS4-HMAC-SHA256).");
    }
    size_t n = gw_req_header_count(req);
    struct gw_sigv4_header *hs = headers_view(req);
    if (hs == NULL) {
        return ERR_NOMEM;
    }
    struct gw_sigv2_input in = {
        .method = gw_req_method(req),
        .path = gw_req_path(req),
        .query = gw_req_query(req),
        .headers = hs,
        .nheaders = n,
        .vhost_bucket = s3->style == GW_S3_STYLE_VIRTUAL ? s3->bucket : NULL,
    };
    enum gw_sigv2_fail why = GW_SIGV2_FAIL_NONE;
    rc = gw_sigv2_verify(p->secret_key, &a, &in, clock_wall_ms(), &why);
    free(hs);
    if (rc == ERR_NOMEM) {
        return ERR_NOMEM;
    }
    if (rc != 0) {
        log_info("req %s: SigV2 %s for access key %s (principal %s)", gw_req_id(req),
                 why == GW_SIGV2_FAIL_MISMATCH ? "SignatureDoesNotMatch" : "refused", a.access_key,
                 p->name);
        return fail_from_sigv2(why, fail);
    }
    out->principal = p;
    if (!bucket_allowed(p, s3)) {
        return refuse(fail, 403, "AccessDenied", "Access Denied.");
    }
    return 0;
}

int
gw_auth_check(struct gw_req *req, const struct gw_config *cfg, const struct gw_s3req *s3,
              struct gw_sigv4_keycache *kc, struct gw_auth *out, struct gw_refusal *fail)
{
    struct gw_sigv4_authz a;
    struct gw_sigv4_header *hs = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    const char *authz = gw_req_header(req, "authorization");

    if (cfg->nprincipals == 0) {
        /* Anonymous mode: nothing to verify against, but the body framing still
         * has to be understood.  Signed chunks cannot be checked without a key. */
        rc = payload_mode(req, false, out, fail);
        if (rc == 0 && (out->payload == GW_PAYLOAD_CHUNKED_SIGNED ||
                        out->payload == GW_PAYLOAD_CHUNKED_SIGNED_TRL)) {
            rc = refuse(fail, 400, "InvalidRequest",
                        "Signed aws-chunked uploads need principals in the gateway's "
                        "configuration; use UNSIGNED-PAYLOAD or a body hash.");
        }
        return rc;
    }

    if (authz != NULL && strncmp(authz, "AWS ", 4) == 0) {
        return check_sigv2(req, cfg, s3, false, out, fail);
    }
    if (authz != NULL) {
        rc = gw_sigv4_authz_parse(authz, &a);
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
        rc = gw_sigv4_presigned_parse(gw_req_query(req), &a);
        if (rc == ERR_NOTFOUND) {
            return check_sigv2(req, cfg, s3, true, out, fail);
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

    const struct gw_principal *p = gw_config_principal_by_key(cfg, a.access_key);
    if (p == NULL) {
        return refuse(fail, 403, "InvalidAccessKeyId",
                      "The AWS Access Key Id you provided does not exist in our records.");
    }
    rc = payload_mode(req, !a.presigned, out, fail);
    if (rc != 0) {
        return rc;
    }

    size_t n = gw_req_header_count(req);
    hs = headers_view(req);
    if (hs == NULL) {
        return ERR_NOMEM;
    }
    struct gw_sigv4_input in = {
        .method = gw_req_method(req),
        .path = gw_req_path(req),
        .query = gw_req_query(req),
        .headers = hs,
        .nheaders = n,
        .payload_hash = a.presigned ? NULL : gw_req_header(req, "x-amz-content-sha256"),
    };
    struct gw_sigv4_verify_opts opts = {
        .region = NULL, /* any region: the scope is signed, and a gateway has no one region */
        .service = "s3",
        .now_ms = clock_wall_ms(),
        .skew_s = 0,
    };
    enum gw_sigv4_fail why = GW_SIGV4_FAIL_NONE;
    rc = gw_sigv4_verify(kc, p->secret_key, &a, &in, &opts, &out->v, &why);
    free(hs);
    if (rc == ERR_NOMEM) {
        return ERR_NOMEM;
    }
    if (rc != 0) {
        log_info("req %s: %s for access key %s (principal %s)", gw_req_id(req),
                 gw_sigv4_fail_s3code(why), a.access_key, p->name);
        gw_auth_cleanup(out);
        return fail_from_verify(why, fail);
    }
    out->verified = true;
    out->principal = p;
    if (!bucket_allowed(p, s3)) {
        gw_auth_cleanup(out);
        return refuse(fail, 403, "AccessDenied", "Access Denied.");
    }
    return 0;
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

/* Query parameters that carry a presigned URL's credentials. */
static const char *const auth_params[] = {
    "AWSAccessKeyId",       "Signature",           "Expires",
    "X-Amz-Algorithm",      "X-Amz-Credential",    "X-Amz-Date",
    "X-Amz-Expires",        "X-Amz-SignedHeaders", "X-Amz-Signature",
    "X-Amz-Security-Token",
};

static bool
is_auth_param(const char *p, size_t n)
{
    for (size_t i = 0; i < sizeof(auth_params) / sizeof(auth_params[0]); i++) {
        if (strlen(auth_params[i]) == n && memcmp(auth_params[i], p, n) == 0) {
            return true;
        }
    }
    return false;
}

int
gw_auth_query_strip(const char *query, struct buf *out)
{
    int rc = 0;
    for (const char *p = query != NULL ? query : ""; rc == 0 && *p != '\0';) {
        size_t plen = strcspn(p, "&");
        if (!is_auth_param(p, strcspn(p, "=&")) && plen > 0) {
            rc = out->len > 0 ? buf_append(out, "&", 1) : 0;
            rc = rc == 0 ? buf_append(out, p, plen) : rc;
        }
        p += plen;
        p += *p == '&';
    }
    return rc;
}
