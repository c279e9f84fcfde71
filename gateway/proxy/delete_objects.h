/*
 * gateway/proxy/delete_objects.h: reading and judging a fenced DeleteObjects.
 *
 * DeleteObjects names its keys in its body, so the gateway reads the whole
 * document before anything is forwarded (capped at 1 MiB, S3's 1000 keys;
 * hashes and aws-chunked checked by the body filter), parses it strictly
 * (gateway/s3/s3xml.h: exact element names, no prefixes, 1 to 1000 keys) and
 * hands the keys and the document to its caller, which fences them as one
 * write.  A document it cannot read exactly is refused 400 MalformedXML,
 * audited (G9).  Event-loop thread only.
 */
#ifndef GW_PROXY_DELETE_OBJECTS_H
#define GW_PROXY_DELETE_OBJECTS_H

#include <stddef.h>

struct buf;
struct gw_auth;
struct gw_req;
struct gw_s3req;
struct store;

/*
 * gw_delete_objects_fn - the document is read and its keys are known: judge
 * and answer req.  s3 and auth are the request's (borrowed for the call);
 * keys (n of them, 1..1000) live for the call; doc is the document, to
 * forward from memory: the callee may move it (buf) and must then leave doc
 * empty.
 */
typedef void gw_delete_objects_fn(void *arg, struct gw_req *req, const struct gw_s3req *s3,
                                  const struct gw_auth *auth, const char *const *keys, size_t n,
                                  struct buf *doc);

/*
 * gw_delete_objects_start - read req's DeleteObjects document, then call
 * judged (once, unless req was already answered: refused, or the client
 * left).  s3 and auth are copied (auth's signing key is wiped when done).
 * [in] audit  the store for refusals' records (borrowed; NULL: none)
 */
void gw_delete_objects_start(struct gw_req *req, const struct gw_s3req *s3,
                             const struct gw_auth *auth, struct store *audit,
                             gw_delete_objects_fn *judged, void *arg);

#endif
