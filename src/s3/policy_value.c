/* Values of the bucket-policy language (policy_form.h): wildcard matching,
 * lower-casing, addresses, numbers and dates, as the parser checks them and
 * evaluation compares them. Pure functions, no allocation. */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "s3/policy_form.h"

/* Whether s matches pattern p, where '*' stands for any run of characters
 * and '?' for one, case-sensitive (actions are matched lower-cased on both
 * sides). One backtrack point: linear space, at most len(p) * len(s) steps. */
bool policy_glob(const char *p, const char *s)
{
    const char *star = NULL, *mark = NULL;
    while (*s) {
        if (*p == '*') {
            star = p++;
            mark = s;
        } else if (*p && (*p == '?' || *p == *s)) {
            p++;
            s++;
        } else if (star) {
            p = star + 1;
            s = ++mark;
        } else {
            return false;
        }
    }
    while (*p == '*')
        p++;
    return *p == '\0';
}

/* s lower-cased into out (cap bytes); false if it does not fit. */
bool policy_lower(const char *s, char *out, size_t cap)
{
    size_t i = 0;
    for (; s[i]; i++) {
        if (i + 1 >= cap)
            return false;
        out[i] = (char)tolower((unsigned char)s[i]);
    }
    out[i] = '\0';
    return true;
}

bool policy_parse_cidr(const char *s, cidr_t *c)
{
    char host[64];
    const char *slash = strchr(s, '/');
    size_t hlen = slash ? (size_t)(slash - s) : strlen(s);
    if (hlen == 0 || hlen >= sizeof host)
        return false;
    memcpy(host, s, hlen);
    host[hlen] = '\0';
    memset(c, 0, sizeof *c);
    if (inet_pton(AF_INET, host, c->addr) == 1)
        c->family = AF_INET, c->bits = 32;
    else if (inet_pton(AF_INET6, host, c->addr) == 1)
        c->family = AF_INET6, c->bits = 128;
    else
        return false;
    if (slash) {
        char *end;
        long b = strtol(slash + 1, &end, 10);
        if (end == slash + 1 || *end || b < 0 || b > c->bits)
            return false;
        c->bits = (int)b;
    }
    return true;
}

bool policy_cidr_match(const cidr_t *c, const cidr_t *ip)
{
    if (c->family != ip->family)
        return false;
    int full = c->bits / 8, rest = c->bits % 8;
    if (memcmp(c->addr, ip->addr, (size_t)full) != 0)
        return false;
    if (!rest)
        return true;
    uint8_t mask = (uint8_t)(0xFF << (8 - rest));
    return (c->addr[full] & mask) == (ip->addr[full] & mask);
}

/* Unix seconds of an ISO 8601 date ("2026-11-26", "...T01:02:03Z", with
 * fractions, or an offset) or of an epoch number; -1 if neither. */
bool policy_parse_date(const char *s, double *out)
{
    char *end;
    if (*s && strspn(s, "0123456789") == strlen(s)) {
        *out = strtod(s, &end);
        return true;
    }
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *p = strptime(s, "%Y-%m-%d", &tm);
    if (!p)
        return false;
    double frac = 0;
    long off = 0;
    if (*p == 'T') {
        p = strptime(p + 1, "%H:%M:%S", &tm);
        if (!p)
            return false;
        if (*p == '.') {
            frac = strtod(p, &end);
            p = end;
        }
        if (*p == 'Z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            int hh, mm;
            if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2 || strlen(p) != 6)
                return false;
            off = (*p == '+' ? 1 : -1) * (hh * 3600L + mm * 60L);
            p += 6;
        }
    }
    if (*p)
        return false;
    *out = (double)timegm(&tm) - (double)off + frac;
    return true;
}

bool policy_parse_number(const char *s, double *out)
{
    char *end;
    if (!*s)
        return false;
    *out = strtod(s, &end);
    return *end == '\0';
}

bool policy_is_numeric(cmp_kind_t k)
{
    return k >= CMP_NUM_EQ && k <= CMP_NUM_GE;
}

bool policy_is_date(cmp_kind_t k)
{
    return k >= CMP_DATE_EQ && k <= CMP_DATE_GE;
}
