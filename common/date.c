/* common/date.c: calendar arithmetic, RFC 3339 and IMF-fixdate (see date.h). */
#include "common/date.h"

#include <stdio.h>
#include <string.h>

#include "common/num.h"

static const char wdays[7][4] = {"Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"}; /* 1970-01-01 */
static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

int64_t
date_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

void
date_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

bool
date_valid_ymd(int64_t y, unsigned m, unsigned d)
{
    static const unsigned mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1970 || y > 9999 || m < 1 || m > 12 || d < 1) {
        return false;
    }
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return d <= mdays[m - 1] + (m == 2 && leap ? 1u : 0u);
}

int
date_rfc3339_format(int64_t ms, char out[DATE_RFC3339_LEN + 1])
{
    out[0] = '\0';
    if (ms < 0 || ms > DATE_MAX_MS) {
        return ERR_INVAL;
    }
    int64_t rem = ms % 86400000;
    int64_t y;
    unsigned m;
    unsigned d;
    date_civil_from_days(ms / 86400000, &y, &m, &d);
    int n = snprintf(out, DATE_RFC3339_LEN + 1, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", (int)y, m, d,
                     (int)(rem / 3600000), (int)(rem / 60000 % 60), (int)(rem / 1000 % 60),
                     (int)(rem % 1000));
    return n == DATE_RFC3339_LEN ? 0 : ERR_INVAL;
}

/* n decimal digits at s, at most max. */
static bool
digits(const char *s, size_t n, uint64_t max, uint64_t *out)
{
    return parse_u64n(s, n, 0, max, out) == 0;
}

int
date_rfc3339_parse(const char *s, int64_t *ms)
{
    if (s == NULL || strlen(s) != DATE_RFC3339_LEN || s[4] != '-' || s[7] != '-' || s[10] != 'T' ||
        s[13] != ':' || s[16] != ':' || s[19] != '.' || s[23] != 'Z') {
        return ERR_INVAL;
    }
    uint64_t y, mo, d, h, mi, se, f;
    if (!digits(s, 4, 9999, &y) || !digits(s + 5, 2, 12, &mo) || !digits(s + 8, 2, 31, &d) ||
        !digits(s + 11, 2, 23, &h) || !digits(s + 14, 2, 59, &mi) || !digits(s + 17, 2, 59, &se) ||
        !digits(s + 20, 3, 999, &f) || !date_valid_ymd((int64_t)y, (unsigned)mo, (unsigned)d)) {
        return ERR_INVAL;
    }
    int64_t days = date_days_from_civil((int64_t)y, (unsigned)mo, (unsigned)d);
    *ms = days * 86400000 + (int64_t)h * 3600000 + (int64_t)mi * 60000 + (int64_t)se * 1000 +
          (int64_t)f;
    return 0;
}

int
date_http_format(int64_t sec, char out[DATE_HTTP_LEN + 1])
{
    out[0] = '\0';
    if (sec < 0 || sec > DATE_MAX_MS / 1000) {
        return ERR_INVAL;
    }
    int64_t days = sec / 86400;
    int64_t rem = sec % 86400;
    int64_t y;
    unsigned m;
    unsigned d;
    date_civil_from_days(days, &y, &m, &d);
    int n =
        snprintf(out, DATE_HTTP_LEN + 1, "%s, %02u %s %04d %02d:%02d:%02d GMT", wdays[days % 7], d,
                 months[m - 1], (int)y, (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60));
    return n == DATE_HTTP_LEN ? 0 : ERR_INVAL;
}

int
date_http_parse(const char *s, int64_t *ms)
{
    if (s == NULL || strlen(s) != DATE_HTTP_LEN || s[3] != ',' || s[4] != ' ' || s[7] != ' ' ||
        s[11] != ' ' || s[16] != ' ' || s[19] != ':' || s[22] != ':' || s[25] != ' ' ||
        strcmp(s + 26, "GMT") != 0) {
        return ERR_INVAL;
    }
    uint64_t day, year, hh, mm, ss;
    if (!digits(s + 5, 2, 31, &day) || !digits(s + 12, 4, 9999, &year) ||
        !digits(s + 17, 2, 23, &hh) || !digits(s + 20, 2, 59, &mm) || !digits(s + 23, 2, 60, &ss)) {
        return ERR_INVAL;
    }
    unsigned mon = 12;
    for (unsigned i = 0; i < 12; i++) {
        if (memcmp(s + 8, months[i], 3) == 0) {
            mon = i;
        }
    }
    if (mon == 12 || !date_valid_ymd((int64_t)year, mon + 1, (unsigned)day)) {
        return ERR_INVAL;
    }
    int64_t days = date_days_from_civil((int64_t)year, mon + 1, (unsigned)day);
    if (memcmp(s, wdays[days % 7], 3) != 0) {
        return ERR_INVAL;
    }
    ss = ss == 60 ? 59 : ss;
    *ms = ((days * 24 + (int64_t)hh) * 60 + (int64_t)mm) * 60000 + (int64_t)ss * 1000;
    return 0;
}
