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

/* The UTC fields of t (unix seconds) as digits: year (4), month, day, hour,
 * minute, second (2 each) into the 14 bytes of digits; false, with the
 * first or last representable second written, for a year outside
 * 0..9999 (clamped rather than overflowing a four-digit field). */
static bool utc_digits(int64_t t, char digits[14])
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
        memcpy(digits, y < 0 ? "00000101000000" : "99991231235959", 14);
        return false;
    }
    unsigned sec = (unsigned)secs;
    unsigned v[6] = {(unsigned)y, m, d, sec / 3600, sec % 3600 / 60, sec % 60};
    char *o = digits;
    for (int k = 0; k < 6; k++) {
        if (k == 0) {
            *o++ = (char)('0' + v[0] / 1000);
            *o++ = (char)('0' + v[0] / 100 % 10);
        }
        *o++ = (char)('0' + v[k] / 10 % 10);
        *o++ = (char)('0' + v[k] % 10);
    }
    return true;
}

void date_format_iso8601(int64_t unix_ms, char out[32])
{
    int64_t s = unix_ms / 1000, ms = unix_ms % 1000;
    if (ms < 0) {
        ms += 1000;
        s--;
    }
    char g[14];
    if (!utc_digits(s, g))
        ms = s < 0 ? 0 : 999;
    /* YYYY-MM-DDTHH:MM:SS.mmmZ */
    memcpy(out, g, 4);
    out[4] = '-';
    memcpy(out + 5, g + 4, 2);
    out[7] = '-';
    memcpy(out + 8, g + 6, 2);
    out[10] = 'T';
    memcpy(out + 11, g + 8, 2);
    out[13] = ':';
    memcpy(out + 14, g + 10, 2);
    out[16] = ':';
    memcpy(out + 17, g + 12, 2);
    out[19] = '.';
    out[20] = (char)('0' + ms / 100);
    out[21] = (char)('0' + ms / 10 % 10);
    out[22] = (char)('0' + ms % 10);
    out[23] = 'Z';
    out[24] = '\0';
}

void date_format_amz(int64_t t, char out[17])
{
    char g[14];
    utc_digits(t, g);
    memcpy(out, g, 8);
    out[8] = 'T';
    memcpy(out + 9, g + 8, 6);
    out[15] = 'Z';
    out[16] = '\0';
}
