#include "common/date.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y_p, unsigned *m_p, unsigned *d_p)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t y = (int64_t)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    unsigned d = doy - (153 * mp + 2) / 5 + 1;
    unsigned m = mp < 10 ? mp + 3 : mp - 9;
    *y_p = y + (m <= 2);
    *m_p = m;
    *d_p = d;
}

static int digits(const char *s, size_t n)
{
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* Seconds since the epoch of a UTC date and time, or -1 when a field is out
 * of range (second 60, a leap second, is the next minute's first). */
static int64_t from_fields(int y, int mo, int d, int h, int mi, int se)
{
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 ||
        se > 60)
        return -1;
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[mo - 1] + (mo == 2 && leap))
        return -1;
    return days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + se;
}

int64_t date_parse_iso8601(const char *s)
{
    if (!s || strlen(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
        s[16] != ':')
        return -1;
    const char *rest = s + 19;
    if (*rest == '.') {
        size_t n = strspn(++rest, "0123456789");
        if (n == 0)
            return -1;
        rest += n;
    }
    if (strcmp(rest, "Z") != 0)
        return -1;
    return from_fields(digits(s, 4), digits(s + 5, 2), digits(s + 8, 2), digits(s + 11, 2),
                       digits(s + 14, 2), digits(s + 17, 2));
}

int64_t date_parse_http(const char *s)
{
    /* strptime reads day and month names in the C locale, which the
     * programs here never change. */
    static const char *const forms[] = {
        "%a, %d %b %Y %H:%M:%S GMT", /* RFC 1123 */
        "%A, %d-%b-%y %H:%M:%S GMT", /* RFC 850 */
        "%a %b %e %H:%M:%S %Y",      /* asctime */
    };
    if (!s)
        return -1;
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        struct tm tm;
        memset(&tm, 0, sizeof(tm));
        const char *end = strptime(s, forms[i], &tm);
        if (end && *end == '\0')
            return from_fields(tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                               tm.tm_sec);
    }
    return -1;
}

void date_format_http(int64_t unix_s, char out[40])
{
    time_t s = (time_t)unix_s;
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(out, 40, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

void date_format_iso8601(int64_t unix_ms, char out[32])
{
    time_t s = (time_t)(unix_ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    /* strftime bounds the year field where snprintf cannot prove it fits. */
    char base[24];
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 32, "%.20s.%03dZ", base, (int)(unix_ms % 1000));
}

int64_t date_parse_amz(const char *s)
{
    if (!s || strlen(s) != 16 || s[8] != 'T' || s[15] != 'Z')
        return -1;
    int se = digits(s + 13, 2);
    if (se > 59)
        return -1; /* SigV4 has no leap second */
    return from_fields(digits(s, 4), digits(s + 4, 2), digits(s + 6, 2), digits(s + 9, 2),
                       digits(s + 11, 2), se);
}

void date_format_amz(int64_t t, char out[17])
{
    int64_t days = t / 86400, secs = t % 86400;
    if (secs < 0) {
        secs += 86400;
        days--;
    }
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    if (y < 0 || y > 9999) {
        /* Unrepresentable in four digits: clamp rather than overflow out. */
        memcpy(out, y < 0 ? "00000101T000000Z" : "99991231T235959Z", 17);
        return;
    }
    unsigned s = (unsigned)secs;
    out[0] = (char)('0' + y / 1000);
    out[1] = (char)('0' + y / 100 % 10);
    out[2] = (char)('0' + y / 10 % 10);
    out[3] = (char)('0' + y % 10);
    out[4] = (char)('0' + m / 10);
    out[5] = (char)('0' + m % 10);
    out[6] = (char)('0' + d / 10);
    out[7] = (char)('0' + d % 10);
    out[8] = 'T';
    out[9] = (char)('0' + s / 36000);
    out[10] = (char)('0' + s / 3600 % 10);
    out[11] = (char)('0' + s % 3600 / 600);
    out[12] = (char)('0' + s % 3600 / 60 % 10);
    out[13] = (char)('0' + s % 60 / 10);
    out[14] = (char)('0' + s % 10);
    out[15] = 'Z';
    out[16] = '\0';
}
