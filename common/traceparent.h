/*
 * common/traceparent.h: the W3C Trace Context traceparent header
 * (https://www.w3.org/TR/trace-context/ section 3.2).
 *
 *   traceparent = version "-" trace-id "-" parent-id "-" trace-flags
 *   e.g. 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
 *
 * Pure; any thread.
 */
#ifndef COMMON_TRACEPARENT_H
#define COMMON_TRACEPARENT_H

#include <stddef.h>

#include "common/err.h"

#define TRACEPARENT_ID_LEN 32 /* trace-id: 32 lowercase hex digits */

/*
 * traceparent_parse - the trace id of a traceparent value.
 * [in] v       the header value, len bytes (borrowed).
 * [out] trace  on success the trace id, NUL-terminated (TRACEPARENT_ID_LEN + 1 bytes).
 * Returns 0, or ERR_INVAL (trace unchanged) when the value breaks section 3.2:
 * a field that is not lowercase hex of its exact length, version ff, an
 * all-zero trace-id or parent-id, version 00 with anything after the flags, a
 * later version whose extra part does not start with '-'.
 */
MUST_USE int traceparent_parse(const char *v, size_t len, char trace[TRACEPARENT_ID_LEN + 1]);

#endif
