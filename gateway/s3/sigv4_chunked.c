/*
 * gateway/s3/sigv4_chunked.c: chunk and trailer signatures, and the incremental
 * aws-chunked decoder.
 *
 * Source: Amazon S3 API Reference, "Signature Calculations for the
 * Authorization Header: Transferring Payload in Multiple Chunks (Chunked
 * Upload)" and "... Including Trailing Headers" (sigv4-streaming,
 * sigv4-streaming-trailers).  Wire form, signed:
 *     <hex size>;chunk-signature=<64 hex>\r\n<data>\r\n ... 0;chunk-signature=<sig>\r\n
 * then "\r\n", or trailers ("name:value\r\n", x-amz-trailer-signature last
 * for the signed form) and "\r\n".  Unsigned: "<hex size>\r\n<data>\r\n" ...
 * "0\r\n", trailers, "\r\n".
 */
#include "gateway/s3/sigv4.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "common/codec.h"
#include "common/num.h"
#include "gateway/s3/checksum.h"
#include "gateway/s3/digest.h"

#define CHUNK_SIG_EXT   ";chunk-signature="
#define TRAILER_SIG_HDR "x-amz-trailer-signature"
#define CHUNK_ALG       "AWS4-HMAC-SHA256-PAYLOAD"
#define TRAILER_ALG     "AWS4-HMAC-SHA256-TRAILER"

/* ---- signatures ---- */

/*
 * A chunk's or the trailer's string to sign is
 *     alg "\n" amz_date "\n" scope "\n" prev_sig "\n" tail
 * under the request's signing key.  The key's HMAC pads are hashed once
 * (struct gw_digest_hmac) and the first three lines, the same for every
 * chunk of a body, are hashed once after them (struct chain): each chunk
 * then costs the SHA-256 blocks of its own lines, with nothing allocated.
 */
struct chain {
    struct gw_digest_hmac key;      /* the signing key, prepared (secret) */
    struct gw_digest_sha256 prefix; /* the inner hash after key pad, alg, date and scope */
};

/* Check the request's date and scope as a chain needs them.  Returns 0 or ERR_INVAL. */
static int
chain_check(const char *amz_date, const char *scope)
{
    int64_t t;
    if (gw_sigv4_amz_date_parse(amz_date, &t) != 0 || scope == NULL || scope[0] == '\0') {
        return ERR_INVAL;
    }
    return 0;
}

/* Start c's prefix for alg's chain under c->key; date and scope already checked.
 * Returns 0 or ERR_NOMEM. */
static int
chain_prefix(struct chain *c, const char *alg, const char *amz_date, const char *scope)
{
    gw_digest_hmac_begin(&c->key, &c->prefix);
    if (gw_digest_sha256_update(&c->prefix, alg, strlen(alg)) != 0 ||
        gw_digest_sha256_update(&c->prefix, "\n", 1) != 0 ||
        gw_digest_sha256_update(&c->prefix, amz_date, strlen(amz_date)) != 0 ||
        gw_digest_sha256_update(&c->prefix, "\n", 1) != 0 ||
        gw_digest_sha256_update(&c->prefix, scope, strlen(scope)) != 0 ||
        gw_digest_sha256_update(&c->prefix, "\n", 1) != 0) {
        OPENSSL_cleanse(c, sizeof(*c));
        return ERR_NOMEM;
    }
    return 0;
}

/* Prepare c for alg's chain under key; date and scope already checked.  Returns 0 or ERR_NOMEM. */
static int
chain_init(struct chain *c, const unsigned char key[GW_SIGV4_KEY_LEN], const char *alg,
           const char *amz_date, const char *scope)
{
    int err = gw_digest_hmac_init(&c->key, key, GW_SIGV4_KEY_LEN);
    return err != 0 ? err : chain_prefix(c, alg, amz_date, scope);
}

/* The HMAC of c's prefix, prev_sig[64] "\n" and tail[tlen], into mac.  Returns 0 or ERR_NOMEM. */
static int
chain_mac(const struct chain *c, const char *prev_sig, const char *tail, size_t tlen,
          unsigned char mac[GW_DIGEST_SHA256_LEN])
{
    struct gw_digest_sha256 s = c->prefix;
    if (gw_digest_sha256_update(&s, prev_sig, GW_SIGV4_HEX_LEN) != 0 ||
        gw_digest_sha256_update(&s, "\n", 1) != 0 || gw_digest_sha256_update(&s, tail, tlen) != 0) {
        OPENSSL_cleanse(&s, sizeof(s));
        return ERR_NOMEM;
    }
    return gw_digest_hmac_end(&c->key, &s, mac);
}

/* The chunk tail: hex(SHA-256("")) "\n" and the chunk data's hex SHA-256. */
static void
chunk_tail(const unsigned char data_md[GW_DIGEST_SHA256_LEN], char tail[2 * GW_SIGV4_HEX_LEN + 2])
{
    memcpy(tail, GW_SIGV4_EMPTY_SHA256 "\n", GW_SIGV4_HEX_LEN + 1);
    hex_encode(data_md, GW_DIGEST_SHA256_LEN, tail + GW_SIGV4_HEX_LEN + 1);
}

/* One signature of a chain, from the raw key: the public functions below. */
static int
chain_signature(const unsigned char key[GW_SIGV4_KEY_LEN], const char *alg, const char *amz_date,
                const char *scope, const char *prev_sig, const char *tail, size_t tlen,
                char sig[GW_SIGV4_HEX_LEN + 1])
{
    struct chain c;
    unsigned char mac[GW_DIGEST_SHA256_LEN];

    if (chain_check(amz_date, scope) != 0 || prev_sig == NULL ||
        strlen(prev_sig) != GW_SIGV4_HEX_LEN) {
        return ERR_INVAL;
    }
    int err = chain_init(&c, key, alg, amz_date, scope);
    if (err == 0) {
        err = chain_mac(&c, prev_sig, tail, tlen, mac);
    }
    if (err == 0) {
        hex_encode(mac, sizeof(mac), sig);
    }
    OPENSSL_cleanse(&c, sizeof(c));
    OPENSSL_cleanse(mac, sizeof(mac));
    return err;
}

int
gw_sigv4_chunk_signature(const unsigned char key[GW_SIGV4_KEY_LEN], const char *amz_date,
                         const char *scope, const char *prev_sig, const char *data_sha256,
                         char sig[GW_SIGV4_HEX_LEN + 1])
{
    char tail[2 * GW_SIGV4_HEX_LEN + 2];

    if (data_sha256 == NULL || strlen(data_sha256) != GW_SIGV4_HEX_LEN) {
        return ERR_INVAL;
    }
    memcpy(tail, GW_SIGV4_EMPTY_SHA256 "\n", GW_SIGV4_HEX_LEN + 1);
    memcpy(tail + GW_SIGV4_HEX_LEN + 1, data_sha256, GW_SIGV4_HEX_LEN + 1);
    return chain_signature(key, CHUNK_ALG, amz_date, scope, prev_sig, tail,
                           2 * GW_SIGV4_HEX_LEN + 1, sig);
}

int
gw_sigv4_trailer_signature(const unsigned char key[GW_SIGV4_KEY_LEN], const char *amz_date,
                           const char *scope, const char *prev_sig, const void *trailers,
                           size_t len, char sig[GW_SIGV4_HEX_LEN + 1])
{
    char hash[GW_SIGV4_HEX_LEN + 1];

    int err = gw_sigv4_sha256_hex(trailers, len, hash);
    if (err != 0) {
        return err;
    }
    return chain_signature(key, TRAILER_ALG, amz_date, scope, prev_sig, hash, GW_SIGV4_HEX_LEN,
                           sig);
}

/* ---- decoder ---- */

enum state {
    ST_SIZE,    /* reading a chunk-size line */
    ST_DATA,    /* inside chunk data */
    ST_DATA_CR, /* expecting the CR after chunk data */
    ST_DATA_LF, /* expecting the LF after chunk data */
    ST_TRAILER, /* reading trailer lines after the final chunk */
    ST_DONE,    /* complete and verified */
    ST_FAILED,  /* stopped on an error */
};

struct gw_sigv4_chunked {
    enum gw_sigv4_chunked_mode mode;          /* framing */
    enum state st;                            /* where we are */
    enum gw_sigv4_chunked_fail fail;          /* why we stopped */
    char amz_date[GW_SIGV4_AMZ_DATE_LEN + 1]; /* request time */
    char scope[GW_SIGV4_MAX_SCOPE + 1];       /* credential scope */
    int chain_ok;                             /* date and scope fit a chain (else INTERNAL) */
    struct chain chunk_chain;                 /* chunk signatures' key and prefix (secret) */
    char prev_sig[GW_SIGV4_HEX_LEN + 1];      /* seed, then the last verified chunk signature */
    unsigned char claimed[32];                /* current chunk's chunk-signature, decoded */
    struct gw_digest_sha256 chunk_sha;        /* SHA-256 of the current chunk's data */
    struct gw_digest_sha256 trl_sha;          /* SHA-256 of the canonical trailers */
    uint64_t remain;                          /* data bytes left in the current chunk */
    int final;                                /* the 0-size chunk has been read */
    uint64_t decoded;                         /* payload bytes taken so far */
    uint64_t decoded_len;                     /* expected total, UINT64_MAX if unknown */
    int held_valid;                           /* held holds the payload's last byte */
    char held;                                /* the last payload byte, emitted at the end */
    int bytes_follow;                         /* more bytes follow the one being read */
    char line[GW_SIGV4_CHUNKED_MAX_LINE];     /* the line being read */
    size_t linelen;                           /* bytes in line */
    size_t trailer_bytes;                     /* trailer bytes so far */
    enum gw_checksum_alg ck_alg;              /* expected checksum trailer, NONE if none */
    struct gw_checksum ck;                    /* running checksum of the payload */
    int ck_seen;                              /* the checksum trailer arrived */
    int trl_sig_seen;                         /* x-amz-trailer-signature arrived */
    char ck_name[32];                         /* checksum trailer name, lowercase */
    char ck_value[GW_CHECKSUM_B64_MAX + 16];  /* checksum trailer value as received */
};

static int
is_signed(const struct gw_sigv4_chunked *d)
{
    return d->mode == GW_SIGV4_CHUNKED_SIGNED || d->mode == GW_SIGV4_CHUNKED_SIGNED_TRAILER;
}

static int
has_trailers(const struct gw_sigv4_chunked *d)
{
    return d->mode != GW_SIGV4_CHUNKED_SIGNED;
}

struct gw_sigv4_chunked *
gw_sigv4_chunked_new(enum gw_sigv4_chunked_mode mode, const struct gw_sigv4_verified *v,
                     uint64_t decoded_len, const char *trailer)
{
    struct gw_sigv4_chunked *d = calloc(1, sizeof(*d));
    if (d == NULL) {
        return NULL;
    }
    d->mode = mode;
    d->decoded_len = decoded_len;
    switch (mode) {
    case GW_SIGV4_CHUNKED_SIGNED:
    case GW_SIGV4_CHUNKED_SIGNED_TRAILER:
        if (v == NULL || (mode == GW_SIGV4_CHUNKED_SIGNED && trailer != NULL)) {
            goto fail;
        }
        memcpy(d->amz_date, v->amz_date, sizeof(d->amz_date));
        memcpy(d->scope, v->scope, sizeof(d->scope));
        memcpy(d->prev_sig, v->signature, sizeof(d->prev_sig));
        d->amz_date[GW_SIGV4_AMZ_DATE_LEN] = '\0';
        d->scope[GW_SIGV4_MAX_SCOPE] = '\0';
        d->prev_sig[GW_SIGV4_HEX_LEN] = '\0';
        if (strlen(d->prev_sig) != GW_SIGV4_HEX_LEN) {
            goto fail;
        }
        /* A bad date or scope fails the first signature check (INTERNAL), as
         * it always has: the decoder itself is still made. */
        d->chain_ok = chain_check(d->amz_date, d->scope) == 0;
        if ((d->chain_ok &&
             chain_init(&d->chunk_chain, v->key, CHUNK_ALG, d->amz_date, d->scope) != 0) ||
            gw_digest_sha256_init(&d->chunk_sha) != 0 || gw_digest_sha256_init(&d->trl_sha) != 0) {
            goto fail;
        }
        break;
    case GW_SIGV4_CHUNKED_UNSIGNED_TRAILER:
        break;
    default:
        goto fail;
    }
    if (trailer != NULL) {
        if (gw_checksum_alg_from_header(trailer, &d->ck_alg) != 0 ||
            gw_checksum_init(&d->ck, d->ck_alg) != 0) {
            goto fail;
        }
    }
    d->st = ST_SIZE;
    return d;
fail:
    gw_sigv4_chunked_free(d);
    return NULL;
}

void
gw_sigv4_chunked_free(struct gw_sigv4_chunked *d)
{
    if (d == NULL) {
        return;
    }
    gw_checksum_cleanup(&d->ck);
    OPENSSL_cleanse(d, sizeof(*d));
    free(d);
}

static int
stop(struct gw_sigv4_chunked *d, enum gw_sigv4_chunked_fail why)
{
    d->st = ST_FAILED;
    d->fail = why;
    switch (why) {
    case GW_SIGV4_CHUNKED_SIGNATURE:
        return ERR_AUTH;
    case GW_SIGV4_CHUNKED_INTERNAL:
        return ERR_NOMEM;
    default:
        return ERR_INVAL;
    }
}

/* Compare the claimed signature of the chunk just ended with the computed one. */
static int
check_chunk_sig(struct gw_sigv4_chunked *d)
{
    unsigned char md[GW_DIGEST_SHA256_LEN];
    char tail[2 * GW_SIGV4_HEX_LEN + 2];
    unsigned char mac[GW_DIGEST_SHA256_LEN];

    if (gw_digest_sha256_final(&d->chunk_sha, md) != 0 ||
        gw_digest_sha256_init(&d->chunk_sha) != 0) {
        return stop(d, GW_SIGV4_CHUNKED_INTERNAL);
    }
    chunk_tail(md, tail);
    if (!d->chain_ok || chain_mac(&d->chunk_chain, d->prev_sig, tail, sizeof(tail) - 1, mac) != 0) {
        return stop(d, GW_SIGV4_CHUNKED_INTERNAL);
    }
    if (CRYPTO_memcmp(mac, d->claimed, sizeof(mac)) != 0) {
        return stop(d, GW_SIGV4_CHUNKED_SIGNATURE);
    }
    hex_encode(mac, sizeof(mac), d->prev_sig);
    return 0;
}

/* A complete chunk-size line (without CRLF) in d->line. */
static int
on_size_line(struct gw_sigv4_chunked *d)
{
    const char *l = d->line;
    size_t n = d->linelen;
    size_t hexlen = 0;
    uint64_t size;

    while (hexlen < n && l[hexlen] != ';') {
        hexlen++;
    }
    if (parse_hex_u64n(l, hexlen, &size) != 0) {
        return stop(d, GW_SIGV4_CHUNKED_FRAMING);
    }
    if (is_signed(d)) {
        size_t extlen = sizeof(CHUNK_SIG_EXT) - 1;
        if (n - hexlen != extlen + GW_SIGV4_HEX_LEN ||
            memcmp(l + hexlen, CHUNK_SIG_EXT, extlen) != 0 ||
            hex_decode(l + hexlen + extlen, GW_SIGV4_HEX_LEN, d->claimed, sizeof(d->claimed)) !=
                0) {
            return stop(d, GW_SIGV4_CHUNKED_FRAMING);
        }
    } else if (hexlen != n) {
        return stop(d, GW_SIGV4_CHUNKED_FRAMING); /* no chunk extensions in the unsigned form */
    }
    if (d->decoded_len != UINT64_MAX && size > d->decoded_len - d->decoded) {
        return stop(d, GW_SIGV4_CHUNKED_LENGTH);
    }
    if (size > 0) {
        d->remain = size;
        d->st = ST_DATA;
        return 0;
    }
    /* The final chunk: its signature covers empty data. */
    d->final = 1;
    if (is_signed(d)) {
        int err = check_chunk_sig(d);
        if (err != 0) {
            return err;
        }
    }
    d->st = ST_TRAILER;
    return 0;
}

/* Everything has arrived: lengths, checksum, then release the held byte. */
static int
on_end(struct gw_sigv4_chunked *d, gw_sigv4_chunked_data_fn *on_data, void *arg)
{
    if (d->decoded_len != UINT64_MAX && d->decoded != d->decoded_len) {
        return stop(d, GW_SIGV4_CHUNKED_LENGTH);
    }
    if (d->mode == GW_SIGV4_CHUNKED_SIGNED_TRAILER && !d->trl_sig_seen) {
        return stop(d, GW_SIGV4_CHUNKED_FRAMING);
    }
    if (d->ck_alg != GW_CHECKSUM_NONE) {
        char want[GW_CHECKSUM_B64_MAX];
        if (!d->ck_seen) {
            return stop(d, GW_SIGV4_CHUNKED_FRAMING);
        }
        if (gw_checksum_final_b64(&d->ck, want, sizeof(want)) != 0) {
            return stop(d, GW_SIGV4_CHUNKED_INTERNAL);
        }
        if (strcmp(want, d->ck_value) != 0) {
            return stop(d, GW_SIGV4_CHUNKED_CHECKSUM);
        }
    }
    if (d->bytes_follow) {
        return stop(d, GW_SIGV4_CHUNKED_FRAMING); /* bytes after the end: the held byte stays */
    }
    d->st = ST_DONE;
    if (d->held_valid) {
        d->held_valid = 0;
        int err = on_data(arg, &d->held, 1);
        if (err != 0) {
            d->st = ST_FAILED;
            return err;
        }
    }
    return 1;
}

/* A complete trailer line (without CRLF) in d->line; an empty one ends the body. */
static int
on_trailer_line(struct gw_sigv4_chunked *d, gw_sigv4_chunked_data_fn *on_data, void *arg)
{
    if (d->linelen == 0) {
        return on_end(d, on_data, arg);
    }
    if (!has_trailers(d) || d->trl_sig_seen) {
        return stop(d, GW_SIGV4_CHUNKED_FRAMING); /* nothing may follow the trailer signature */
    }
    d->line[d->linelen] = '\0';
    char *colon = memchr(d->line, ':', d->linelen);
    if (colon == NULL || colon == d->line) {
        return stop(d, GW_SIGV4_CHUNKED_FRAMING);
    }
    *colon = '\0';
    char *name = d->line;
    char *value = colon + 1;
    while (*value == ' ' || *value == '\t') {
        value++;
    }
    size_t vlen = strlen(value);
    while (vlen > 0 && (value[vlen - 1] == ' ' || value[vlen - 1] == '\t')) {
        value[--vlen] = '\0';
    }
    for (char *p = name; *p != '\0'; p++) {
        if (*p >= 'A' && *p <= 'Z') {
            *p = (char)(*p - 'A' + 'a');
        }
    }
    if (d->mode == GW_SIGV4_CHUNKED_SIGNED_TRAILER && strcmp(name, TRAILER_SIG_HDR) == 0) {
        /* Signed trailers: HMAC over the canonical trailers "name:value\n"... */
        unsigned char md[GW_DIGEST_SHA256_LEN];
        unsigned char claimed[32];
        unsigned char mac[GW_DIGEST_SHA256_LEN];
        char hex[GW_SIGV4_HEX_LEN + 1];
        struct chain trl; /* once per body: its prefix is not the chunks' */
        d->trl_sig_seen = 1;
        if (hex_decode(value, vlen, claimed, sizeof(claimed)) != 0) {
            return stop(d, GW_SIGV4_CHUNKED_FRAMING);
        }
        if (gw_digest_sha256_final(&d->trl_sha, md) != 0) {
            return stop(d, GW_SIGV4_CHUNKED_INTERNAL);
        }
        hex_encode(md, sizeof(md), hex);
        int err = ERR_INVAL;
        if (d->chain_ok) {
            trl.key = d->chunk_chain.key;
            err = chain_prefix(&trl, TRAILER_ALG, d->amz_date, d->scope);
        }
        if (err == 0) {
            err = chain_mac(&trl, d->prev_sig, hex, GW_SIGV4_HEX_LEN, mac);
            OPENSSL_cleanse(&trl, sizeof(trl));
        }
        if (err != 0) {
            return stop(d, GW_SIGV4_CHUNKED_INTERNAL);
        }
        if (CRYPTO_memcmp(mac, claimed, sizeof(mac)) != 0) {
            return stop(d, GW_SIGV4_CHUNKED_SIGNATURE);
        }
        return 0;
    }
    /* Only the trailer announced in x-amz-trailer is accepted, once. */
    enum gw_checksum_alg alg;
    if (d->ck_alg == GW_CHECKSUM_NONE || d->ck_seen ||
        gw_checksum_alg_from_header(name, &alg) != 0 || alg != d->ck_alg ||
        vlen >= sizeof(d->ck_value) || strlen(name) >= sizeof(d->ck_name)) {
        return stop(d, GW_SIGV4_CHUNKED_FRAMING);
    }
    d->ck_seen = 1;
    memcpy(d->ck_name, name, strlen(name) + 1);
    memcpy(d->ck_value, value, vlen + 1);
    if (is_signed(d) && (gw_digest_sha256_update(&d->trl_sha, name, strlen(name)) != 0 ||
                         gw_digest_sha256_update(&d->trl_sha, ":", 1) != 0 ||
                         gw_digest_sha256_update(&d->trl_sha, value, vlen) != 0 ||
                         gw_digest_sha256_update(&d->trl_sha, "\n", 1) != 0)) {
        return stop(d, GW_SIGV4_CHUNKED_INTERNAL);
    }
    return 0;
}

/* Take data bytes: hash them, count them, emit all but a held-back last byte. */
static int
take_data(struct gw_sigv4_chunked *d, const char *p, size_t n, gw_sigv4_chunked_data_fn *on_data,
          void *arg)
{
    if (is_signed(d) && gw_digest_sha256_update(&d->chunk_sha, p, n) != 0) {
        return stop(d, GW_SIGV4_CHUNKED_INTERNAL);
    }
    if (d->ck_alg != GW_CHECKSUM_NONE && gw_checksum_update(&d->ck, p, n) != 0) {
        return stop(d, GW_SIGV4_CHUNKED_INTERNAL);
    }
    d->decoded += n;
    size_t emit = n;
    if (d->decoded_len != UINT64_MAX && d->decoded == d->decoded_len) {
        /* The payload's last byte: keep it until the whole body has verified. */
        emit = n - 1;
        d->held = p[n - 1];
        d->held_valid = 1;
    }
    if (emit > 0) {
        int err = on_data(arg, p, emit);
        if (err != 0) {
            d->st = ST_FAILED;
            return err;
        }
    }
    return 0;
}

/* Add one byte to the current line; at LF (after CR) dispatch the line. */
static int
line_byte(struct gw_sigv4_chunked *d, char c, gw_sigv4_chunked_data_fn *on_data, void *arg)
{
    if (d->st == ST_TRAILER && ++d->trailer_bytes > GW_SIGV4_CHUNKED_MAX_TRAILERS) {
        return stop(d, GW_SIGV4_CHUNKED_FRAMING);
    }
    if (c == '\n') {
        if (d->linelen == 0 || d->line[d->linelen - 1] != '\r') {
            return stop(d, GW_SIGV4_CHUNKED_FRAMING); /* bare LF */
        }
        d->linelen--;
        int err = d->st == ST_SIZE ? on_size_line(d) : on_trailer_line(d, on_data, arg);
        d->linelen = 0;
        return err;
    }
    if (d->linelen > 0 && d->line[d->linelen - 1] == '\r') {
        return stop(d, GW_SIGV4_CHUNKED_FRAMING); /* bare CR */
    }
    if (d->linelen + 1 >= sizeof(d->line)) {
        return stop(d, GW_SIGV4_CHUNKED_FRAMING); /* line too long */
    }
    d->line[d->linelen++] = c;
    return 0;
}

int
gw_sigv4_chunked_feed(struct gw_sigv4_chunked *d, const void *buf, size_t n,
                      gw_sigv4_chunked_data_fn *on_data, void *arg)
{
    const char *p = buf;
    size_t i = 0;

    if (d->st == ST_FAILED) {
        return ERR_INVAL;
    }
    if (d->st == ST_DONE) {
        if (n == 0) {
            return 1;
        }
        return stop(d, GW_SIGV4_CHUNKED_FRAMING); /* bytes after the end */
    }
    while (i < n) {
        int err = 0;
        switch (d->st) {
        case ST_DATA: {
            size_t take = n - i;
            if (take > d->remain) {
                take = (size_t)d->remain;
            }
            err = take_data(d, p + i, take, on_data, arg);
            i += take;
            d->remain -= take;
            if (err == 0 && d->remain == 0) {
                d->st = ST_DATA_CR;
            }
            break;
        }
        case ST_DATA_CR:
            if (p[i++] != '\r') {
                return stop(d, GW_SIGV4_CHUNKED_FRAMING);
            }
            d->st = ST_DATA_LF;
            break;
        case ST_DATA_LF:
            if (p[i++] != '\n') {
                return stop(d, GW_SIGV4_CHUNKED_FRAMING);
            }
            err = is_signed(d) ? check_chunk_sig(d) : 0;
            if (err == 0) {
                d->st = ST_SIZE;
            }
            break;
        case ST_SIZE:
        case ST_TRAILER:
            /* on_end must know, before it releases the held byte, whether
             * bytes follow the end in this buffer (a framing error) */
            d->bytes_follow = i + 1 < n;
            err = line_byte(d, p[i++], on_data, arg);
            break;
        case ST_DONE:
        case ST_FAILED:
        default:
            return stop(d, GW_SIGV4_CHUNKED_FRAMING);
        }
        if (err != 0) {
            return err;
        }
    }
    return d->st == ST_DONE ? 1 : 0;
}

int
gw_sigv4_chunked_finish(struct gw_sigv4_chunked *d)
{
    if (d->st == ST_DONE) {
        return 0;
    }
    if (d->st != ST_FAILED) {
        (void)stop(d, GW_SIGV4_CHUNKED_INCOMPLETE);
    }
    return ERR_INVAL;
}

enum gw_sigv4_chunked_fail
gw_sigv4_chunked_fail(const struct gw_sigv4_chunked *d)
{
    return d->fail;
}

void
gw_sigv4_chunked_checksum(const struct gw_sigv4_chunked *d, const char **name, const char **value)
{
    if (d->ck_seen) {
        *name = d->ck_name;
        *value = d->ck_value;
    } else {
        *name = NULL;
        *value = NULL;
    }
}

uint64_t
gw_sigv4_chunked_decoded(const struct gw_sigv4_chunked *d)
{
    return d->decoded;
}
