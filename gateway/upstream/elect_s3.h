/*
 * gateway/upstream/elect_s3.h: the `s3` election backend: epoch lock files in a
 * bucket of the upstream, through the gateway's libcurl client.
 *
 * Implements struct elect_backend_ops (election/backend.h; its "Outcomes",
 * "ETags" and "Clocks" sections are the contract).  Each operation is one
 * signed request (gateway/upstream/s3sign.h) started with gw_xfer_start on the
 * gateway's struct gw_upstream; request and response bodies are small and
 * buffered in the operation, capped (ELECT_OBJ_MAX for objects, 16 KiB for
 * error documents; listings are parsed as they stream, gateway/s3/s3xml.h).
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
 * elect_backend_free cancels every pending transfer (gw_xfer_cancel: a PUT
 * cut before its last byte is never committed) without callbacks.
 */
#ifndef GW_ELECT_S3_H
#define GW_ELECT_S3_H

#include <stddef.h>

#include "common/err.h"
#include "election/backend.h"
#include "gateway/s3/sigv4.h"

struct gw_config;
struct gw_upstream;

/*
 * gw_elect_s3_new - an s3 backend on bucket of cfg's upstream.
 * [in]  up      the gateway's upstream client; borrowed, must outlive the backend
 * [in]  cfg     upstream endpoint, region, addressing and credentials; borrowed
 *               until gw_elect_s3_set_config or the backend is freed
 * [in]  bucket  bucket name ([A-Za-z0-9._-], 1..255 bytes); copied
 * [out] errbuf  on failure a one-line reason (errlen bytes; may be NULL)
 * Returns the backend (owned: elect_backend_free, or hand it to the
 * election), or NULL (bad bucket or upstream configuration, out of memory).
 * Sends nothing: the election's start-up probe is the first request.
 */
struct elect_backend *gw_elect_s3_new(struct gw_upstream *up, const struct gw_config *cfg,
                                      const char *bucket, char *errbuf, size_t errlen);

/*
 * gw_elect_s3_put - a PUT of body (sent as given) on key with extra headers
 * (all signed) and payload_hash as x-amz-content-sha256 (borrowed until the
 * callback; NULL: the body's SHA-256).  Not part of the election: the
 * gateway's own probes of its upstream (gateway/upstream/trailer_probe.c) use the
 * election's bucket through it.
 * [in] cb  cb(arg, err) with err mapped as for create (2xx is 0; no ETag needed)
 * Returns 0 (cb follows), ERR_INVAL (not an s3 backend, bad argument), ERR_NOMEM.
 */
MUST_USE int gw_elect_s3_put(struct elect_backend *be, const char *key, const char *body,
                             size_t len, const struct gw_sigv4_header *extra, size_t nextra,
                             const char *payload_hash, elect_be_del_fn *cb, void *arg);

/*
 * gw_elect_s3_set_config - sign requests started from now on with cfg's
 * upstream settings (SIGHUP).  be must come from gw_elect_s3_new.
 * [in] cfg  borrowed as for gw_elect_s3_new
 * Returns 0, or ERR_INVAL (unusable upstream settings: the old ones stay,
 * and the old configuration must stay alive; logged).
 */
MUST_USE int gw_elect_s3_set_config(struct elect_backend *be, const struct gw_config *cfg);

#endif
