/*
 * gateway/s3/s3err.h: S3-style XML error responses, and the one mapping from
 * ERR_* codes to HTTP status (STYLE R4).
 *
 * Every error the gateway itself produces is an S3 error document, so SDKs
 * surface it like one of S3's own:
 *
 *   <?xml version="1.0" encoding="UTF-8"?>
 *   <Error><Code>..</Code><Message>..</Message><Resource>..</Resource>
 *   <RequestId>..</RequestId>[<Lock>..</Lock>...]</Error>
 *
 * (one line after the XML declaration).  Text is XML-escaped; bytes that XML
 * 1.0 cannot carry (control bytes other than TAB/LF/CR, invalid UTF-8) become
 * U+FFFD, so the document always parses.
 *
 * Default codes for gw_s3err_code_from_err() (and gw_refuse_err, gateway/proxy/refuse.h):
 *
 *   err               status  <Code>
 *   ERR_INVAL          400    InvalidRequest
 *   ERR_AUTH           403    AccessDenied     (sigv4 sends the precise code itself:
 *                                              SignatureDoesNotMatch, InvalidAccessKeyId)
 *   ERR_DENIED         403    AccessDenied
 *   ERR_NOTFOUND       404    NotFound         (not NoSuchKey: the gateway does not know
 *                                              what was missing; callers that do pass
 *                                              NoSuchKey/NoSuchUpload themselves)
 *   ERR_FENCED         409    StaleFencingToken (the fence sends its own body, with
 *                                              <Lock>/<Token>/<CurrentToken>)
 *   ERR_CONFLICT       409    OperationAborted (S3's "conflicting operation, try again")
 *   ERR_EXISTS         409    AlreadyExists    (gateway-specific)
 *   ERR_TOOBIG         413    EntityTooLarge
 *   ERR_UNSUPPORTED    501    NotImplemented
 *   ERR_UPSTREAM       502    BadGateway       (gateway-specific; SDKs retry any 502)
 *   ERR_NOMEM          503    ServiceUnavailable (SDKs retry it; not SlowDown, which
 *   ERR_AGAIN          503    ServiceUnavailable  signals throttling)
 *   ERR_TIMEOUT        504    GatewayTimeout   (gateway-specific; SDKs retry any 504)
 *   anything else      500    InternalError
 *
 * Pure functions; answering a request with a document is gateway/proxy/refuse.h's.
 */
#ifndef GW_S3ERR_H
#define GW_S3ERR_H

#include <stddef.h>

#include "common/buf.h"
#include "common/err.h"

/* Largest error document gw_s3err_build will build; longer text is refused by the builder. */
#define GW_S3ERR_MAX_BODY 16384

/* One extra child element of <Error>, e.g. {"CurrentToken", "42"}. */
struct gw_s3err_extra {
    const char *name;  /* borrowed; element name: [A-Za-z_][A-Za-z0-9._-]* */
    const char *value; /* borrowed; text, escaped on output */
};

/*
 * gw_s3err_status_from_err - the HTTP status for an ERR_* code (the table above).
 * [in] err  0 or a negative ERR_* code.
 * Returns 200 for 0, else the status from the table; 500 for any unknown code.
 */
int gw_s3err_status_from_err(int err);

/*
 * gw_s3err_code_from_err - the default S3 <Code> for an ERR_* code (the table above).
 * Returns a static string, never NULL ("InternalError" for unknown codes and 0).
 */
const char *gw_s3err_code_from_err(int err);

/*
 * gw_s3err_format - append an S3 error document to out.
 * [in] out        the buffer to append to (its cap bounds the document).
 * [in] code       required; the S3 error code, e.g. "NoSuchKey".
 * [in] message    human-readable text, or NULL for an empty <Message/>.
 * [in] resource   the request path as received, or NULL to leave <Resource> out.
 * [in] request_id the request id, or NULL to leave <RequestId> out.
 * [in] extra      nextra additional elements, appended in order after <RequestId>
 *                 (NULL when nextra is 0).
 * All pointers are borrowed for the call only.
 * Returns 0; ERR_INVAL when code is NULL or empty or an extra's name is not a
 * valid element name; ERR_TOOBIG when out's cap is passed; ERR_NOMEM.  On
 * failure out may hold a partial document: reset it before reuse.
 */
MUST_USE int gw_s3err_format(struct buf *out, const char *code, const char *message,
                             const char *resource, const char *request_id,
                             const struct gw_s3err_extra *extra, size_t nextra);

/* Room for the bare document gw_s3err_build falls back to. */
#define GW_S3ERR_BARE_MAX 256

/*
 * gw_s3err_build - the error document to answer with: gw_s3err_format's
 * (into body, which the caller initialised with cap GW_S3ERR_MAX_BODY and
 * cleans up after), or, when that cannot be built (no memory, text too long,
 * a bad extra), a bare document with the same code (if it is plain
 * alphanumerics, else InternalError) and an empty message, written into bare.
 * [out] len  the document's length
 * Returns the document (body->data or bare), never NULL.
 */
const char *gw_s3err_build(struct buf *body, char bare[GW_S3ERR_BARE_MAX], size_t *len,
                           const char *code, const char *message, const char *resource,
                           const char *request_id, const struct gw_s3err_extra *extra,
                           size_t nextra);

#endif
