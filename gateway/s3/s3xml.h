/*
 * gateway/s3/s3xml.h: streaming parsers for the S3 response documents the
 * gateway reads itself (expat; <expat.h> only in gateway/s3/s3xml.c).
 *
 * One parser reads one response body, fed in pieces as they arrive, and
 * recognises its root element:
 *   ListBucketResult  (ListObjectsV2): the Key of every Contents, IsTruncated,
 *                     NextContinuationToken, and EncodingType; with
 *                     EncodingType "url" the keys are percent-decoded ('+' is a
 *                     space, as AWS encodes it) when the document ends.
 *   Error             the error document: Code and Message.
 *   InitiateMultipartUploadResult  (CreateMultipartUpload): UploadId.
 *   Delete            a DeleteObjects request body: the Key of every Object
 *                     (never url-encoded), through gw_s3xml_keys.  Strict
 *                     (fail closed): only Delete, Object, Quiet, Key and
 *                     VersionId, exactly so spelled, at their places; each
 *                     Object has exactly one Key; no namespace prefix and no
 *                     attribute but xmlns="http://s3.amazonaws.com/doc/2006-03-01/";
 *                     anything else is ERR_INVAL.
 * Other roots parse (so a caller can tell) but yield nothing.
 *
 * Limits: total input bytes (max_bytes), number of keys (max_keys), and any
 * one text value (GW_S3XML_MAX_TEXT).  A DOCTYPE (and with it every entity
 * declaration) is refused: S3 never sends one, and refusing it rules out
 * entity-expansion attacks.  Namespaces are not processed: elements are
 * matched by their names as written (S3 uses a default namespace), so a
 * prefixed name ("s3:Key") is not the S3 name.
 *
 * Ownership: struct gw_s3xml is owned by its creator (gw_s3xml_new /
 * gw_s3xml_free).  Strings and arrays it returns are owned by it and valid
 * until gw_s3xml_free.  No event loop; one thread.
 */
#ifndef GW_S3XML_H
#define GW_S3XML_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

/* Longest text value kept (a url-encoded 1024-byte key takes up to 3072). */
#define GW_S3XML_MAX_TEXT 4096

struct gw_s3xml;

/* The document's root element. */
enum gw_s3xml_root {
    GW_S3XML_ROOT_NONE = 0,     /* no root element seen yet */
    GW_S3XML_ROOT_LIST = 1,     /* ListBucketResult */
    GW_S3XML_ROOT_ERROR = 2,    /* Error */
    GW_S3XML_ROOT_OTHER = 3,    /* anything else */
    GW_S3XML_ROOT_DELETE = 4,   /* Delete (a DeleteObjects request body) */
    GW_S3XML_ROOT_INITIATE = 5, /* InitiateMultipartUploadResult */
};

/*
 * gw_s3xml_new - a parser for one document.
 * [in] max_keys   most Contents keys accepted (more: ERR_TOOBIG)
 * [in] max_bytes  most input bytes accepted (more: ERR_TOOBIG)
 * Returns the parser (owned: gw_s3xml_free), or NULL on OOM.
 */
struct gw_s3xml *gw_s3xml_new(size_t max_keys, size_t max_bytes);

/* gw_s3xml_free - free the parser and everything it returned.  NULL-safe. */
void gw_s3xml_free(struct gw_s3xml *x);

/*
 * gw_s3xml_feed - parse len more bytes at data (borrowed for the call).
 * Returns 0; ERR_INVAL (not well-formed XML, a DOCTYPE, a bad IsTruncated,
 * an empty or NUL-containing key); ERR_TOOBIG (a limit); ERR_NOMEM.  After
 * an error every later call returns the same error.
 */
MUST_USE int gw_s3xml_feed(struct gw_s3xml *x, const char *data, size_t len);

/*
 * gw_s3xml_finish - the body ended: check the document is complete and
 * finish it (url-decoding keys for EncodingType url).
 * Returns 0 or as gw_s3xml_feed (ERR_INVAL also for a truncated document or
 * a bad percent escape).  The getters below are meaningful only after 0.
 */
MUST_USE int gw_s3xml_finish(struct gw_s3xml *x);

/* gw_s3xml_root - the root element seen so far. */
enum gw_s3xml_root gw_s3xml_root(const struct gw_s3xml *x);

/*
 * gw_s3xml_keys - the keys of a ListBucketResult or a Delete, in document order.
 * [out] n  the number of keys
 * Returns an array of n NUL-terminated keys (NULL when n is 0), owned by x.
 */
const char *const *gw_s3xml_keys(const struct gw_s3xml *x, size_t *n);

/* gw_s3xml_truncated - IsTruncated was "true". */
bool gw_s3xml_truncated(const struct gw_s3xml *x);

/* gw_s3xml_next_token - NextContinuationToken, or NULL if none; owned by x. */
const char *gw_s3xml_next_token(const struct gw_s3xml *x);

/* gw_s3xml_error_code - an Error document's Code, or NULL; owned by x. */
const char *gw_s3xml_error_code(const struct gw_s3xml *x);

/* gw_s3xml_error_message - an Error document's Message, or NULL; owned by x. */
const char *gw_s3xml_error_message(const struct gw_s3xml *x);

/* gw_s3xml_upload_id - an InitiateMultipartUploadResult's UploadId, or NULL; owned by x. */
const char *gw_s3xml_upload_id(const struct gw_s3xml *x);

#endif
