/*
 * gateway/s3client/elect_s3.h: the `s3` election backend: epoch lock files in a
 * bucket of the upstream, through the gateway's libcurl client.
 *
 * Implements struct elect_backend_ops (election/backend.h; its "Outcomes",
 * "ETags" and "Clocks" sections are the contract).  Each operation is one
 * call of the gateway's internal S3 client (gateway/s3client/s3client.h: its
 * signer, its upstream, its reload); request and response bodies are small
 * and buffered, capped (ELECT_OBJ_MAX for objects, GW_S3CLIENT_ERR_BODY_MAX
 * for error documents; listings are parsed as they stream, gateway/s3/s3xml.h).
 *
 *   create   PUT  If-None-Match: *
 *   replace  PUT  If-Match: "etag" or etag (per enum elect_etag_form)
 *   get      GET
 *   list     GET ?list-type=2&prefix=&start-after=&max-keys=&encoding-type=url
 *   del      DELETE
 *
 * Status mapping (the rest of the contract is in election/backend.h):
 *   2xx            0 (create/replace need an ETag in the answer, else
 *                  ERR_UPSTREAM: written, but we cannot tell the ETag)
 *   412            create ERR_EXISTS; replace ERR_CONFLICT
 *   409            ERR_CONFLICT (ConditionalRequestConflict: retry)
 *   404            ERR_NOTFOUND (NoSuchKey, NoSuchBucket); del: 0
 *   401, 403       ERR_DENIED
 *   400 RequestTimeout, 408   ERR_TIMEOUT (ambiguous for writes)
 *   413            ERR_TOOBIG
 *   other 4xx      ERR_INVAL (refused: nothing was written)
 *   501            ERR_UNSUPPORTED (e.g. a store without conditional PUT)
 *   3xx, 5xx, 429  ERR_UPSTREAM (ambiguous for writes)
 *   no answer      ERR_UPSTREAM (connect/protocol failure) or ERR_TIMEOUT
 *                  (the upstream client's transfer timeouts), ambiguous
 *
 * Ceph RGW (checked against Ceph 16.2 (pacific) RGW on Debian 12, see
 * tests/integration/test_elect_s3_backend.py):
 *   - PUT If-Match matches only the UNQUOTED ETag: the quoted form (what AWS
 *     and RFC 9110 want) gets 412, so replace answers ERR_CONFLICT.  The
 *     election's start-up probe picks ELECT_ETAG_UNQUOTED there.
 *   - PUT If-Match on a MISSING key answers 412, not 404 (AWS): on RGW a
 *     replace of a missing key is ERR_CONFLICT, never ERR_NOTFOUND.
 *   - Under contention losing conditional PUTs may get 500 UnknownError
 *     instead of 412: ERR_UPSTREAM (ambiguous), which the election resolves
 *     by reading the object back.  Seen often for racing If-Match PUTs (up
 *     to all 63 losers of 64), not (yet) for racing If-None-Match creates;
 *     a 200 went to exactly one contender every time.
 *   - DELETE answers 204 whether or not the key existed.
 *
 * Dates: Date and Last-Modified are parsed strictly as IMF-fixdate (RFC 9110
 * 5.6.7, "Sun, 06 Nov 1994 08:49:37 GMT", weekday checked); anything else is
 * "unknown" (-1).  No locale, no strptime.
 *
 * Event-loop thread only (the upstream's loop).  Callbacks run from the
 * upstream client's callbacks, so never before the starting call returns; a
 * call that fails synchronously returns the error and runs no callback.
 * elect_backend_free cancels every pending transfer (gw_upstream_xfer_cancel: a PUT
 * cut before its last byte is never committed) without callbacks.
 */
#ifndef GW_ELECT_S3_H
#define GW_ELECT_S3_H

#include <stddef.h>

#include "common/err.h"
#include "election/backend.h"

struct gw_s3client;

/*
 * gw_elect_s3_new - an s3 backend on bucket, through the internal S3 client.
 * [in]  s3c     the gateway's S3 client (its upstream settings and credentials,
 *               reloaded with gw_s3client_set_config); borrowed, must outlive
 *               the backend
 * [in]  bucket  bucket name ([A-Za-z0-9._-], 1..255 bytes); copied
 * [out] errbuf  on failure a one-line reason (errlen bytes; may be NULL)
 * Returns the backend (owned: elect_backend_free, or hand it to the
 * election), or NULL (bad bucket, out of memory).  Sends nothing: the
 * election's start-up probe is the first request.
 */
struct elect_backend *gw_elect_s3_new(struct gw_s3client *s3c, const char *bucket, char *errbuf,
                                      size_t errlen);

#endif
