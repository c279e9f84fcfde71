/*
 * gateway/proxy/refuse.h: the one way a request is refused (DESIGN
 * "The path of a request", G7).
 *
 * The code that decides a refusal describes it (struct gw_refusal,
 * gateway/s3/refusal.h); gw_refuse carries it out, the same way for every
 * refusal: the counter it names, one log line (for counted or audited
 * refusals), the audit record in the store, and, once that record has
 * committed, the S3 error document (with <Lock>, <Token> and <CurrentToken>
 * for the fence's refusals).  A refusal whose audit record cannot be stored
 * is answered 503 SlowDown instead: no refusal is given without its durable
 * record (G7).
 *
 * Event-loop thread only: the control loop's, or a worker loop's (DESIGN
 * "Worker loops").  A worker's audited refusal is answered on the worker's
 * thread: the store's callback, on the control loop, hops back to the
 * worker's queue (gateway/net/hop.h), which must be closed only after the
 * worker's requests are freed.
 */
#ifndef GW_REFUSE_H
#define GW_REFUSE_H

#include "common/err.h"
#include "gateway/s3/refusal.h"

struct gw_req;
struct gw_s3req;
struct store;

/*
 * gw_refuse - answer req with the refusal r.  Ends the response (req must
 * not be used afterwards): at once when nothing is recorded; when r is
 * audited, only once its record has committed (G7: a crash can lose the
 * answer, never the record), with 503 SlowDown instead if the record cannot
 * be queued or committed.  Meanwhile the refusal holds req (its ops are
 * replaced; a client that leaves only loses the answer).
 * [in] st         the store for r->audit's record (borrowed; NULL: not recorded)
 * [in] s3         the parsed request (bucket, key, operation for the log and the
 *                 record); may be NULL only when r is neither counted nor audited
 * [in] principal  recorded (borrowed; NULL: anonymous)
 * [in] r          the refusal (copied)
 */
void gw_refuse(struct store *st, struct gw_req *req, const struct gw_s3req *s3,
               const char *principal, const struct gw_refusal *r);

/*
 * gw_refuse_classified - refuse req before the fence (G9: not classified
 * exactly, a bucket-level write, a principal's bounds): counted as a
 * classification refusal and audited "refused" like gw_refuse, with
 * status, code and message as given (static strings or ones that outlive
 * the call), lock recorded when not NULL.
 */
void gw_refuse_classified(struct store *st, struct gw_req *req, const struct gw_s3req *s3,
                          const char *principal, const char *lock, int status, const char *code,
                          const char *message);

/*
 * gw_refuse_cut - gw_refuse for a refusal that can no longer be answered (the
 * response head is out): the counter, the log line and the record, then the
 * connection is cut (gw_resp_abort) once the record has committed, or at
 * once when it cannot be queued (logged and counted in audit_failures).
 */
void gw_refuse_cut(struct store *st, struct gw_req *req, const struct gw_s3req *s3,
                   const char *principal, const struct gw_refusal *r);

/*
 * gw_refuse_reply - answer req with an S3 error document (Content-Type
 * application/xml; <Resource> the raw request path, <RequestId> gw_req_id):
 * an error of the gateway's own, neither counted, logged nor audited.  If
 * the document cannot be built, a bare one with the same status and code
 * goes out (gw_s3err_build).  Ends the response.
 * [in] code, message  borrowed for the call; message may be NULL
 */
void gw_refuse_reply(struct gw_req *req, int status, const char *code, const char *message);

/*
 * gw_refuse_err - gw_refuse_reply for the error err: status and code from
 * gateway/s3/s3err.h's table, message as given (err_str(err) when NULL).
 */
void gw_refuse_err(struct gw_req *req, int err, const char *message);

#endif
