#include "common/time.h"

#include <stdbool.h>
#include <string.h>

#include "common/num.h"

int64_t
time_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static bool
two_digits(const char *s, unsigned *out)
{
    uint64_t v;
    if (parse_u64n(s, 2, 0, 99, &v) != 0) {
        return false;
    }
    *out = (unsigned)v;
    return true;
}

int
time_http_date_parse(const char *s, int64_t *ms)
{
    static const char days[7][4] = {"Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    static const unsigned mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (s == NULL || strlen(s) != TIME_HTTP_DATE_LEN || s[3] != ',' || s[4] != ' ' || s[7] != ' ' ||
        s[11] != ' ' || s[16] != ' ' || s[19] != ':' || s[22] != ':' || s[25] != ' ' ||
        strcmp(s + 26, "GMT") != 0) {
        return ERR_INVAL;
    }
    unsigned day;
    unsigned hh;
    unsigned mm;
    unsigned ss;
    uint64_t year;
    if (!two_digits(s + 5, &day) || parse_u64n(s + 12, 4, 1970, 9999, &year) != 0 ||
        !two_digits(s + 17, &hh) || !two_digits(s + 20, &mm) || !two_digits(s + 23, &ss)) {
        return ERR_INVAL;
    }
    unsigned mon = 12;
    for (unsigned i = 0; i < 12; i++) {
        if (memcmp(s + 8, months[i], 3) == 0) {
            mon = i;
        }
    }
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (mon == 12 || day == 0 || day > mdays[mon] || (mon == 1 && day == 29 && !leap) || hh > 23 ||
        mm > 59 || ss > 60) {
        return ERR_INVAL;
    }
    int64_t d = time_days_from_civil((int64_t)year, mon + 1, day);
    if (memcmp(s, days[d % 7], 3) != 0) {
        return ERR_INVAL; /* 1970-01-01 was a Thursday */
    }
    ss = ss == 60 ? 59 : ss;
    *ms = ((d * 24 + hh) * 60 + mm) * 60 * 1000 + (int64_t)ss * 1000;
    return 0;
}
