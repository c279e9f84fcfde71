/*
 * gateway/s3/s3.h: the room of the S3 protocol.
 *
 * What S3 means by a request, with no sockets and no event loop: everything
 * here is a pure function of bytes (or a streaming state machine fed bytes),
 * so it is unit-tested and fuzzed without a server.  It includes nothing of
 * gateway/http/ or gateway/upstream/ (make check-deps).
 *
 *   s3req.h / s3req.c       classification: operation, bucket, every key a write
 *                           touches, exactly as S3/RGW read the query; anything
 *                           not a read or one known write is refused (fail closed)
 *   sigv4.h / sigv4.c       AWS Signature Version 4: canonical request, signing
 *                           keys (cached per day and scope), verification, signing
 *   sigv4_parse.c           parsing of Authorization headers and presigned queries
 *   sigv4_chunked.c         the aws-chunked decoder (chunk signatures, trailers)
 *   chunk_enc.h / .c        the aws-chunked encoder (unsigned payload with trailer)
 *   checksum.h / .c         CRC32, CRC32C, SHA-1, SHA-256 checksums and their headers
 *   digest.h / digest.c     SHA-256 and HMAC on algorithms fetched from OpenSSL once
 *   sigv2.h / sigv2.c       AWS Signature Version 2 (header and presigned), inbound only
 *   s3xml.h / s3xml.c       the S3 XML the gateway reads and writes (DeleteObjects,
 *                           CompleteMultipartUpload, errors from the upstream)
 *   s3err.h / s3err.c       S3 error documents, and the one ERR_* -> status map
 *   refusal.h               a refusal as the code deciding it describes it (status,
 *                           code, message, audit kind, counter, lock and tokens);
 *                           carried out by gateway/proxy/refuse.h
 *
 * A change to what is refused goes in s3req.c; to how a request is signed or
 * verified, in sigv4*.c or sigv2.c.
 */
#ifndef GW_S3_H
#define GW_S3_H

#include "gateway/s3/checksum.h"
#include "gateway/s3/chunk_enc.h"
#include "gateway/s3/refusal.h"
#include "gateway/s3/s3err.h"
#include "gateway/s3/s3req.h"
#include "gateway/s3/s3xml.h"
#include "gateway/s3/sigv2.h"
#include "gateway/s3/sigv4.h"

#endif
