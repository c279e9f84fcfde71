/*
 * common/date.h: calendar dates and the two text forms the project uses, one
 * home for all of them (UTC only; proleptic Gregorian; years 1970..9999).
 *
 *  - RFC 3339 with milliseconds, "2026-11-21T10:15:30.123Z": epoch files,
 *    audit records, logs;
 *  - IMF-fixdate (RFC 9110 section 5.6.7), "Sun, 06 Nov 1994 08:49:37 GMT":
 *    the Date header we send, and the Date/Last-Modified the store sends.
 *
 * The day arithmetic is Howard Hinnant's days_from_civil / civil_from_days.
 * Pure functions; any thread.
 */
#ifndef COMMON_DATE_H
#define COMMON_DATE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

#define DATE_RFC3339_LEN 24                       /* "YYYY-MM-DDTHH:MM:SS.mmmZ" */
#define DATE_HTTP_LEN    29                       /* "Sun, 06 Nov 1994 08:49:37 GMT" */
#define DATE_MAX_MS      INT64_C(253402300799999) /* 9999-12-31T23:59:59.999Z */

/* date_days_from_civil - days since 1970-01-01 of y-m-d (m 1..12, d 1..31; not checked). */
int64_t date_days_from_civil(int64_t y, unsigned m, unsigned d);

/* date_civil_from_days - the inverse: y-m-d of days since 1970-01-01. */
void date_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);

/* date_valid_ymd - y in 1970..9999, m in 1..12, d within that month. */
bool date_valid_ymd(int64_t y, unsigned m, unsigned d);

/*
 * date_rfc3339_format - ms since the epoch as "YYYY-MM-DDTHH:MM:SS.mmmZ".
 * Returns 0; ERR_INVAL for ms outside 0..DATE_MAX_MS (out is then "").
 */
MUST_USE int date_rfc3339_format(int64_t ms, char out[DATE_RFC3339_LEN + 1]);

/*
 * date_rfc3339_parse - exactly "YYYY-MM-DDTHH:MM:SS.mmmZ" (the form
 * date_rfc3339_format writes; upper-case T and Z, three fraction digits).
 * Returns 0 with *ms; ERR_INVAL otherwise (*ms untouched).
 */
MUST_USE int date_rfc3339_parse(const char *s, int64_t *ms);

/*
 * date_http_format - whole seconds since the epoch as IMF-fixdate.
 * Returns 0; ERR_INVAL for a time outside 1970..9999 (out is then "").
 */
MUST_USE int date_http_format(int64_t sec, char out[DATE_HTTP_LEN + 1]);

/*
 * date_http_parse - IMF-fixdate only (S3 sends nothing else): exactly 29
 * bytes, case-sensitive names, a weekday that matches the date, seconds up to
 * 60 (a leap second counts as :59).  Returns 0 with *ms (a whole second);
 * ERR_INVAL otherwise.
 */
MUST_USE int date_http_parse(const char *s, int64_t *ms);

#endif
