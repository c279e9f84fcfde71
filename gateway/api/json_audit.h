/*
 * gateway/api/json_audit.h: audit records as JSON, and the audit time format.
 *
 * Shared by `fencegate audit --json` and GET /_fencegate/v1/audit so both
 * print the same shape:
 *   {"time":"2026-11-21T10:15:30.123Z","time_ms":1795256130123,"seq":7,
 *    "kind":"stale","count":1,"last_time":"2026-11-21T10:15:30.123Z",
 *    "last_ms":1795256130123,"lock":"orders","token":41,"current_token":42,
 *    "principal":"worker","client":"192.0.2.7:51234","method":"PUT",
 *    "bucket":"data","key":"orders/1","operation":"PutObject",
 *    "request_id":"...","user_agent":"...","trace_id":"4bf9..."}
 * ("count" is how many identical refusals the record stands for: the
 * first at "time", the last at "last_time"; a record that never repeated
 * has count 1 and last_time = time.  "token"/"current_token" are null when 0, "trace_id" null when
 * the request brought no valid traceparent).  Strings are escaped per RFC 8259 section 7; bytes
 * that are not valid UTF-8 become U+FFFD, so the output is always valid JSON whatever a client put
 * in its key or User-Agent. Written by hand (no jansson needed).  Pure functions, any thread.
 */
#ifndef GW_JSON_AUDIT_H
#define GW_JSON_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "store/store.h"

/* Room for gw_json_audit_time_format's output, NUL included. */
#define GW_AUDIT_TIME_LEN 80

/*
 * gw_json_audit_rec_append - append rec (borrowed) as one JSON object to b.
 * Returns 0, or buf_append's ERR_TOOBIG / ERR_NOMEM (b may hold a partial object).
 */
MUST_USE int gw_json_audit_rec_append(struct buf *b, const struct store_audit_rec *rec);

/*
 * gw_json_audit_str_append - append s as a quoted, escaped JSON string.
 * Returns as gw_json_audit_rec_append.
 */
MUST_USE int gw_json_audit_str_append(struct buf *b, const char *s);

/*
 * gw_json_audit_time_format - ms since the epoch as RFC 3339 UTC with
 * milliseconds ("2026-11-21T10:15:30.123Z") into out.
 */
void gw_json_audit_time_format(int64_t ms, char out[GW_AUDIT_TIME_LEN]);

/*
 * gw_json_audit_time_parse - parse a time bound: RFC 3339 UTC
 * ("2026-11-21T10:00:00Z", optional fraction ".123", "Z" required) or a
 * count of Unix milliseconds ("1795256130123").
 * Returns 0 (*ms set) or ERR_INVAL (*ms untouched).
 */
MUST_USE int gw_json_audit_time_parse(const char *s, int64_t *ms);

#endif
