/* gateway/s3/chunk_enc.c: the aws-chunked unsigned-trailer encoder (see chunk_enc.h). */
#include "gateway/s3/chunk_enc.h"

#include <stdio.h>
#include <string.h>

#define CRLF "\r\n"

/* Characters of n in lowercase hex without leading zeros ("0" for 0). */
static size_t
hex_digits(uint64_t n)
{
    size_t d = 1;
    while (n >= 16) {
        n >>= 4;
        d++;
    }
    return d;
}

/* Bytes of one chunk with n payload bytes: hex(n) CRLF payload CRLF. */
static uint64_t
chunk_bytes(uint64_t n)
{
    return hex_digits(n) + 2 + n + 2;
}

/* Bytes after the last data chunk: "0" CRLF name ":" value CRLF CRLF. */
static uint64_t
tail_bytes(enum gw_checksum_alg alg)
{
    return 3 + strlen(gw_checksum_header_name(alg)) + 1 + gw_checksum_b64_len(alg) + 4;
}

uint64_t
gw_chunk_enc_length(uint64_t payload_len, enum gw_checksum_alg alg)
{
    uint64_t full = payload_len / GW_CHUNK_ENC_SIZE;
    uint64_t rest = payload_len % GW_CHUNK_ENC_SIZE;
    uint64_t n = full * chunk_bytes(GW_CHUNK_ENC_SIZE) + tail_bytes(alg);
    if (rest > 0) {
        n += chunk_bytes(rest);
    }
    return n;
}

void
gw_chunk_enc_init(struct gw_chunk_enc *e, uint64_t payload_len, enum gw_checksum_alg alg)
{
    memset(e, 0, sizeof(*e));
    e->payload_len = payload_len;
    e->alg = alg;
}

/* Queues framing bytes (they always fit: at most the trailer line). */
static void
pend_set(struct gw_chunk_enc *e, int n)
{
    e->pend_off = 0;
    e->pend_len = n > 0 && (size_t)n < sizeof(e->pend) ? (size_t)n : 0;
}

/* After the payload: the source must report its verified end, then the trailer. */
static ssize_t
start_trailer(struct gw_chunk_enc *e, char *dst, size_t len, const struct gw_chunk_src *src)
{
    ssize_t n = src->read(src->arg, dst, len);
    if (n != 0) {
        return n > 0 ? ERR_INVAL : n; /* more payload than announced, or not yet / failed */
    }
    char value[GW_CHECKSUM_B64_MAX];
    int rc = src->value(src->arg, value, sizeof(value));
    if (rc != 0) {
        return rc;
    }
    if (strlen(value) != gw_checksum_b64_len(e->alg)) {
        return ERR_INVAL;
    }
    pend_set(e, snprintf(e->pend, sizeof(e->pend), "0" CRLF "%s:%s" CRLF CRLF,
                         gw_checksum_header_name(e->alg), value));
    e->done = true;
    return 0;
}

ssize_t
gw_chunk_enc_read(struct gw_chunk_enc *e, char *dst, size_t len, const struct gw_chunk_src *src)
{
    for (;;) {
        if (e->pend_off < e->pend_len) {
            size_t n = e->pend_len - e->pend_off;
            n = n < len ? n : len;
            memcpy(dst, e->pend + e->pend_off, n);
            e->pend_off += n;
            return (ssize_t)n;
        }
        if (e->done) {
            return 0;
        }
        if (e->in_chunk && e->chunk_left == 0) {
            e->in_chunk = false;
            pend_set(e, snprintf(e->pend, sizeof(e->pend), CRLF));
            continue;
        }
        if (!e->in_chunk) {
            uint64_t left = e->payload_len - e->passed;
            if (left == 0) {
                ssize_t rc = start_trailer(e, dst, len, src);
                if (rc != 0) {
                    return rc;
                }
                continue;
            }
            e->chunk_left = left < GW_CHUNK_ENC_SIZE ? left : GW_CHUNK_ENC_SIZE;
            e->in_chunk = true;
            pend_set(e, snprintf(e->pend, sizeof(e->pend), "%llx" CRLF,
                                 (unsigned long long)e->chunk_left));
            continue;
        }
        size_t want = len < e->chunk_left ? len : (size_t)e->chunk_left;
        ssize_t n = src->read(src->arg, dst, want);
        if (n == 0) {
            return ERR_INVAL; /* the source ended short of payload_len */
        }
        if (n < 0) {
            return n;
        }
        e->chunk_left -= (uint64_t)n;
        e->passed += (uint64_t)n;
        return n;
    }
}
