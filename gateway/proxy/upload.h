/*
 * gateway/proxy/upload.h: multipart uploads under epochs (DESIGN "Tokens on the wire").
 *
 * A fenced CreateMultipartUpload that succeeds is recorded in the store's
 * upload table with the epoch (token) that created it.  From then on:
 *  - an UploadPart / UploadPartCopy / CompleteMultipartUpload into an upload
 *    created under an epoch older than the lock's highest is refused (409
 *    StaleFencingToken), even when it carries the current token: a new leader
 *    must not commit a zombie's parts (gw_upload_check);
 *  - a successful Complete or Abort forgets the upload (gw_upload_response);
 *  - when a lock's highest advances, uploads created under older epochs are
 *    aborted at the upstream in the background (DELETE ?uploadId=), at most
 *    GW_UPLOAD_REAP_MAX at a time; one that fails stays recorded and is tried
 *    again at the lock's next advance (gw_upload_on_advance, hooked to the
 *    fence; only with fencing.abort_stale_uploads).
 *
 * Threads (DESIGN "Worker loops"): one object is shared by every loop.
 * gw_upload_claim, gw_upload_check and gw_upload_response may be called from
 * any loop's thread at once (a mutex guards the bookkeeping); gw_upload_new,
 * gw_upload_set_config, gw_upload_on_advance and gw_upload_free run on the
 * control loop, which also dispatches the store's completions, and
 * gw_upload_free only once the worker loops are joined (no call in flight).
 * The store, the internal S3 client
 * (gateway/s3client/s3client.h, which signs the aborts) and the
 * configuration are borrowed and must outlive the object (the configuration
 * until the next gw_upload_set_config).
 */
#ifndef GW_UPLOAD_H
#define GW_UPLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct gw_config;
struct gw_s3req;
struct gw_s3xml;
struct gw_s3client;
struct gw_upload;
struct store;

#define GW_UPLOAD_REAP_MAX 8     /* background aborts in flight at most */
#define GW_UPLOAD_TAP_MAX  65536 /* bytes of a Create/Complete answer parsed */

/*
 * gw_upload_new - the upload bookkeeping over st, aborting through s3c.
 * [in] st, s3c, cfg  borrowed (cfg until gw_upload_set_config)
 * Returns the object (owned: gw_upload_free) or NULL (out of memory).
 */
struct gw_upload *gw_upload_new(struct store *st, struct gw_s3client *s3c,
                                const struct gw_config *cfg);

/* gw_upload_set_config - use cfg (borrowed; fencing.abort_stale_uploads) from now on. */
void gw_upload_set_config(struct gw_upload *u, const struct gw_config *cfg);

/* gw_upload_free - cancel the aborts in flight and free (the last store
 * callback frees if some are owed).  Control loop, after the worker loops are
 * joined: no other call may be in flight or come later.  NULL-safe. */
void gw_upload_free(struct gw_upload *u);

/* gw_upload_tracked - whether responses of s3's operation are tapped (Create, Complete, Abort). */
bool gw_upload_tracked(const struct gw_s3req *s3);

/*
 * gw_upload_claim - the epoch recorded for the upload a tokenless
 * UploadPart / UploadPartCopy / Complete / Abort under lock writes into
 * (DESIGN "Tokens on the wire": such writes are claimed with it).
 * [in]  lock      the lock of the write (rule or header)
 * [in]  s3, query the request and its raw query (uploadId)
 * [out] epoch     on 0, the epoch that created the upload
 * Returns 0, ERR_NOTFOUND (no upload id, or an upload the gateway did not
 * see created under lock), ERR_IO (the table could not be read: 503).
 */
MUST_USE int gw_upload_claim(struct gw_upload *u, const char *lock, const struct gw_s3req *s3,
                             const char *query, uint64_t *epoch);

/*
 * gw_upload_check - may this admitted write go into its upload?
 * [in]  lock, token  the admitted claim
 * [in]  s3, query    the request and its raw query (uploadId)
 * [out] created      on ERR_FENCED, the epoch that created the upload
 * Returns 0 (not an UploadPart/Complete/Abort, an upload not recorded, one of
 * this epoch, or an Abort by a newer epoch: that only removes what could
 * never be committed), ERR_FENCED (the token and the upload's epoch differ:
 * refuse with 409; *created < token: a newer leader must not add to or
 * commit an older epoch's upload; *created > token: the token is older than
 * the upload), ERR_IO (the table could not be read: 503).
 */
MUST_USE int gw_upload_check(struct gw_upload *u, const char *lock, uint64_t token,
                             const struct gw_s3req *s3, const char *query, uint64_t *created);

/*
 * gw_upload_response - a fenced Create/Complete/Abort got its complete answer:
 * record or forget the upload.
 * [in] status  the upstream's status
 * [in] tap     the parsed answer body (finished by this call), or NULL; borrowed
 */
void gw_upload_response(struct gw_upload *u, const char *lock, uint64_t token,
                        const struct gw_s3req *s3, const char *query, int status,
                        struct gw_s3xml *tap);

/*
 * gw_upload_on_advance - a lock's highest rose to highest (durably): abort
 * its uploads of older epochs at the upstream, in the background.  Matches
 * gw_fence_advance_fn (arg is the struct gw_upload).
 */
void gw_upload_on_advance(void *arg, const char *lock, uint64_t highest);

#endif
