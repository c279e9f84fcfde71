#define LOG_MODULE "body"
#include "gateway/proxy/body.h"

#include <stdlib.h>
#include <string.h>

#include "common/codec.h"
#include "common/log.h"
#include "common/mem.h"
#include "gateway/http/http.h"
#include "gateway/s3/checksum.h"
#include "gateway/s3/chunk_enc.h"
#include "gateway/s3/digest.h"

struct gw_body {
    struct gw_req *req;              /* borrowed */
    enum gw_payload payload;         /* mode */
    int64_t client_length;           /* Content-Length, -1 if chunked */
    uint64_t decoded_length;         /* chunked modes: the upstream's Content-Length */
    uint64_t passed;                 /* bytes handed to the upstream so far */
    struct gw_digest_sha256 sha;     /* GW_PAYLOAD_SHA256: running hash (no allocation) */
    char want[GW_SIGV4_HEX_LEN + 1]; /* GW_PAYLOAD_SHA256: claimed hex hash */
    struct gw_sigv4_chunked *dec;    /* chunked modes: the decoder */
    bool dec_done;                   /* the decoder verified the whole body */
    bool reframe;                    /* the upstream gets an unsigned-trailer body (enc) */
    struct gw_chunk_enc enc;         /* reframe: the encoder */
    char *out;                       /* decoded bytes not yet handed on (GW_BODY_STAGE) */
    size_t out_off, out_len;         /* unread part of out */
    struct gw_refusal fail;          /* set when a read failed */
    bool failed;
};

static int
set_fail(struct gw_body *b, int err, int status, const char *code, const char *message)
{
    b->failed = true;
    b->fail.status = status;
    b->fail.code = code;
    b->fail.message = message;
    return err;
}

struct gw_body *
gw_body_new(struct gw_req *req, const struct gw_auth *auth, bool trailers_upstream)
{
    struct gw_body *b = mem_zalloc(sizeof(*b));
    if (b == NULL) {
        return NULL;
    }
    b->req = req;
    b->payload = auth->payload;
    b->client_length = gw_req_content_length(req);
    switch (auth->payload) {
    case GW_PAYLOAD_SHA256:
        memcpy(b->want, auth->sha256, sizeof(b->want));
        if (gw_digest_sha256_init(&b->sha) != 0) {
            goto fail;
        }
        break;
    case GW_PAYLOAD_CHUNKED_SIGNED:
    case GW_PAYLOAD_CHUNKED_SIGNED_TRL:
    case GW_PAYLOAD_CHUNKED_UNSIGNED_TRL: {
        enum gw_sigv4_chunked_mode mode =
            auth->payload == GW_PAYLOAD_CHUNKED_SIGNED       ? GW_SIGV4_CHUNKED_SIGNED
            : auth->payload == GW_PAYLOAD_CHUNKED_SIGNED_TRL ? GW_SIGV4_CHUNKED_SIGNED_TRAILER
                                                             : GW_SIGV4_CHUNKED_UNSIGNED_TRAILER;
        b->decoded_length = auth->decoded_length;
        b->dec = gw_sigv4_chunked_new(mode, auth->verified ? &auth->v : NULL, auth->decoded_length,
                                      auth->trailer);
        b->out = malloc(GW_BODY_STAGE);
        if (b->dec == NULL || b->out == NULL) {
            goto fail;
        }
        enum gw_checksum_alg alg;
        if (trailers_upstream && auth->trailer != NULL &&
            gw_checksum_alg_from_header(auth->trailer, &alg) == 0) {
            b->reframe = true;
            gw_chunk_enc_init(&b->enc, auth->decoded_length, alg);
        }
        break;
    }
    case GW_PAYLOAD_NONE:
    default:
        break;
    }
    return b;
fail:
    gw_body_free(b);
    return NULL;
}

void
gw_body_free(struct gw_body *b)
{
    if (b == NULL) {
        return;
    }
    gw_sigv4_chunked_free(b->dec);
    free(b->out);
    free(b);
}

int64_t
gw_body_upstream_length(const struct gw_body *b)
{
    if (b->reframe) {
        return (int64_t)gw_chunk_enc_length(b->decoded_length, b->enc.alg);
    }
    if (b->dec != NULL) {
        return (int64_t)b->decoded_length;
    }
    return b->client_length;
}

const char *
gw_body_upstream_trailer(const struct gw_body *b)
{
    return b->reframe ? gw_checksum_header_name(b->enc.alg) : NULL;
}

bool
gw_body_fail(const struct gw_body *b, struct gw_refusal *out)
{
    if (!b->failed) {
        return false;
    }
    *out = b->fail;
    return true;
}

/* GW_PAYLOAD_SHA256: hand on everything but the last byte until the hash is known. */
static ssize_t
read_hashed(struct gw_body *b, char *dst, size_t len)
{
    uint64_t total = (uint64_t)b->client_length;
    if (b->passed == total) {
        return 0;
    }
    size_t want = len;
    if (b->passed + want >= total) {
        want = (size_t)(total - b->passed); /* up to and including the last byte */
    }
    ssize_t n = gw_req_body_read(b->req, dst, want);
    if (n <= 0) {
        if (n == 0) {
            return set_fail(b, ERR_INVAL, 400, "IncompleteBody",
                            "You did not provide the number of bytes specified by the "
                            "Content-Length HTTP header.");
        }
        return n;
    }
    if (gw_digest_sha256_update(&b->sha, dst, (size_t)n) != 0) {
        return set_fail(b, ERR_NOMEM, 500, "InternalError", "Out of memory.");
    }
    b->passed += (uint64_t)n;
    if (b->passed < total) {
        return n;
    }
    /* The last byte is in dst and has not been returned yet: check first. */
    unsigned char raw[GW_DIGEST_SHA256_LEN];
    char hex[GW_SIGV4_HEX_LEN + 1];
    if (gw_digest_sha256_final(&b->sha, raw) != 0) {
        return set_fail(b, ERR_NOMEM, 500, "InternalError", "Could not hash the body.");
    }
    hex_encode(raw, sizeof(raw), hex);
    if (strcmp(hex, b->want) != 0) {
        log_info("req %s: body SHA-256 %s does not match the signed %s", gw_req_id(b->req), hex,
                 b->want);
        return set_fail(b, ERR_AUTH, 400, "XAmzContentSHA256Mismatch",
                        "The provided 'x-amz-content-sha256' header does not match what was "
                        "computed.");
    }
    return n;
}

/* gw_sigv4_chunked_data_fn: decoded bytes go to the staging buffer. */
static int
on_decoded(void *arg, const char *p, size_t n)
{
    struct gw_body *b = arg;
    if (n > GW_BODY_STAGE - b->out_len) {
        return ERR_TOOBIG; /* cannot happen: decoded bytes never outnumber wire bytes */
    }
    memcpy(b->out + b->out_len, p, n);
    b->out_len += n;
    return 0;
}

static int
chunked_fail(struct gw_body *b, int rc)
{
    switch (gw_sigv4_chunked_fail(b->dec)) {
    case GW_SIGV4_CHUNKED_SIGNATURE:
        return set_fail(b, rc, 403, "SignatureDoesNotMatch",
                        "A chunk signature of the aws-chunked body does not match.");
    case GW_SIGV4_CHUNKED_CHECKSUM:
        return set_fail(b, rc, 400, "BadDigest",
                        "The checksum in the trailer does not match the body.");
    case GW_SIGV4_CHUNKED_LENGTH:
    case GW_SIGV4_CHUNKED_INCOMPLETE:
        return set_fail(b, rc, 400, "IncompleteBody",
                        "The decoded body length does not match x-amz-decoded-content-length.");
    case GW_SIGV4_CHUNKED_INTERNAL:
        return set_fail(b, rc, 500, "InternalError", "Out of memory.");
    case GW_SIGV4_CHUNKED_FRAMING:
    case GW_SIGV4_CHUNKED_OK:
    default:
        return set_fail(b, rc, 400, "IncompleteBody", "The aws-chunked body framing is invalid.");
    }
}

static ssize_t
read_chunked(struct gw_body *b, char *dst, size_t len)
{
    for (;;) {
        if (b->out_off < b->out_len) {
            size_t n = b->out_len - b->out_off;
            if (n > len) {
                n = len;
            }
            memcpy(dst, b->out + b->out_off, n);
            b->out_off += n;
            b->passed += n;
            return (ssize_t)n;
        }
        b->out_off = 0;
        b->out_len = 0;
        if (b->dec_done) {
            return 0;
        }
        char wire[GW_BODY_STAGE];
        ssize_t n = gw_req_body_read(b->req, wire, sizeof(wire));
        if (n == 0) {
            /* the wire body ended before the decoder saw the end of the payload */
            int rc = gw_sigv4_chunked_finish(b->dec);
            return chunked_fail(b, rc != 0 ? rc : ERR_INVAL);
        }
        if (n < 0) {
            return n;
        }
        int rc = gw_sigv4_chunked_feed(b->dec, wire, (size_t)n, on_decoded, b);
        if (rc == 1) {
            b->dec_done = true;
        } else if (rc < 0) {
            return chunked_fail(b, rc);
        }
    }
}

/* gw_chunk_src for the encoder: the decoded, verified payload. */
static ssize_t
src_read(void *arg, char *dst, size_t len)
{
    return read_chunked(arg, dst, len);
}

static int
src_value(void *arg, char *out, size_t outlen)
{
    struct gw_body *b = arg;
    const char *name;
    const char *value;
    gw_sigv4_chunked_checksum(b->dec, &name, &value);
    if (value == NULL || strlen(value) >= outlen) {
        return set_fail(b, ERR_INVAL, 400, "BadDigest", "The checksum trailer is missing.");
    }
    memcpy(out, value, strlen(value) + 1);
    return 0;
}

static ssize_t
read_reframed(struct gw_body *b, char *dst, size_t len)
{
    const struct gw_chunk_src src = {.read = src_read, .value = src_value, .arg = b};
    ssize_t n = gw_chunk_enc_read(&b->enc, dst, len, &src);
    if (n < 0 && n != ERR_AGAIN && !b->failed) {
        return set_fail(b, (int)n, 500, "InternalError",
                        "The body could not be re-framed for the upstream.");
    }
    return n;
}

ssize_t
gw_body_read(struct gw_body *b, char *dst, size_t len)
{
    if (b->failed) {
        return ERR_INVAL;
    }
    switch (b->payload) {
    case GW_PAYLOAD_SHA256:
        return read_hashed(b, dst, len);
    case GW_PAYLOAD_CHUNKED_SIGNED:
    case GW_PAYLOAD_CHUNKED_SIGNED_TRL:
    case GW_PAYLOAD_CHUNKED_UNSIGNED_TRL:
        return b->reframe ? read_reframed(b, dst, len) : read_chunked(b, dst, len);
    case GW_PAYLOAD_NONE:
    default: {
        ssize_t n = gw_req_body_read(b->req, dst, len);
        if (n > 0) {
            b->passed += (uint64_t)n;
        }
        return n;
    }
    }
}
