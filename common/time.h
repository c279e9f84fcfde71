/*
 * common/time.h: calendar arithmetic and HTTP dates, one home for both.
 *
 * Pure functions of their arguments: no clock, no locale, any thread.
 */
#ifndef COMMON_TIME_H
#define COMMON_TIME_H

#include <stdint.h>

#include "common/err.h"

#define TIME_HTTP_DATE_LEN 29 /* "Sun, 06 Nov 1994 08:49:37 GMT" */

/*
 * time_days_from_civil - days from 1970-01-01 to y-m-d (proleptic Gregorian;
 * H. Hinnant's days_from_civil).  m is 1..12, d 1..31; not validated.
 */
int64_t time_days_from_civil(int64_t y, unsigned m, unsigned d);

/*
 * time_http_date_parse - an IMF-fixdate (RFC 9110 5.6.7): "Sun, 06 Nov 1994
 * 08:49:37 GMT", exactly 29 bytes, case-sensitive names, a weekday that
 * matches the date, seconds up to 60 (a leap second counts as :59).  Nothing
 * else (no RFC 850 or asctime forms).
 * [out] ms  the time in Unix milliseconds (whole seconds)
 * Returns 0, or ERR_INVAL (*ms untouched).
 */
MUST_USE int time_http_date_parse(const char *s, int64_t *ms);

#endif
