/*
 * gateway/s3/chunk_enc.h: the aws-chunked encoder for STREAMING-UNSIGNED-PAYLOAD-TRAILER.
 *
 * When a client sends its checksum as an aws-chunked trailer, the checksum
 * is only known after the whole body.  To hand it to an upstream that takes
 * trailers (AWS S3 does) without buffering the body, the gateway re-frames
 * the decoded (and verified) payload as S3's unsigned-trailer body:
 *
 *   hex(n) CRLF <n payload bytes> CRLF      one per chunk of GW_CHUNK_ENC_SIZE
 *   ...                                     (the last one shorter)
 *   "0" CRLF
 *   x-amz-checksum-<alg> ":" <base64> CRLF
 *   CRLF
 *
 * byte for byte what the AWS SDKs send (botocore's AwsChunkedWrapper with the
 * same chunk size).  Chunks have a fixed size and the checksum's base64 a
 * fixed length, so the whole length is known before the first byte
 * (gw_chunk_enc_length): the upstream request carries a Content-Length, and
 * "every byte handed over" still means "completely sent" to the epoch
 * barrier.  The trailer is written only after the source reported its end,
 * that is after the client's checksum verified: an unverified body never
 * reaches its last byte upstream.
 *
 * The encoder is a pull filter: the caller asks for up to len bytes, the
 * encoder asks its source for payload.  Nothing is allocated.  One thread.
 */
#ifndef GW_CHUNK_ENC_H
#define GW_CHUNK_ENC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "gateway/s3/checksum.h"

/* Payload bytes per chunk (the last may be shorter): the SDKs' 64 KiB. */
#define GW_CHUNK_ENC_SIZE ((uint64_t)64 * 1024)

/*
 * Payload source.  read: up to len payload bytes into dst; >0, 0 at the end
 * (the payload is complete and verified), ERR_AGAIN (nothing yet), or a
 * negative ERR_*.  value: after read returned 0, the verified checksum value
 * (base64) into out[outlen], NUL-terminated; 0 or a negative ERR_*.
 */
struct gw_chunk_src {
    ssize_t (*read)(void *arg, char *dst, size_t len);
    int (*value)(void *arg, char *out, size_t outlen);
    void *arg;
};

/* The encoder state; embedded by its owner. */
struct gw_chunk_enc {
    uint64_t payload_len;                /* x-amz-decoded-content-length */
    uint64_t passed;                     /* payload bytes handed on */
    uint64_t chunk_left;                 /* payload bytes left in the open chunk */
    enum gw_checksum_alg alg;            /* the trailer's checksum */
    bool in_chunk;                       /* a chunk header went out, its CRLF has not */
    bool done;                           /* the trailer went out */
    char pend[GW_CHECKSUM_B64_MAX + 64]; /* framing bytes not yet handed on */
    size_t pend_off, pend_len;           /* unread part of pend */
};

/*
 * gw_chunk_enc_length - bytes of the encoded body for payload_len payload
 * bytes and a trailer of alg (not GW_CHECKSUM_NONE).
 */
uint64_t gw_chunk_enc_length(uint64_t payload_len, enum gw_checksum_alg alg);

/* gw_chunk_enc_init - start encoding payload_len bytes with an alg trailer. */
void gw_chunk_enc_init(struct gw_chunk_enc *e, uint64_t payload_len, enum gw_checksum_alg alg);

/*
 * gw_chunk_enc_read - up to len encoded bytes into dst (len > 0).
 * Returns >0; 0 once the whole encoded body was handed on; ERR_AGAIN or the
 * source's error as the source returned it; ERR_INVAL if the source ended
 * short of payload_len or went past it, or gave a checksum value that is not
 * gw_checksum_b64_len(alg) long (the announced length would be wrong).
 */
MUST_USE ssize_t gw_chunk_enc_read(struct gw_chunk_enc *e, char *dst, size_t len,
                                   const struct gw_chunk_src *src);

#endif
