/* Values of the bucket-policy language (policy_form.h): wildcard matching,
 * lower-casing, addresses, numbers and dates, as the parser checks them and
 * evaluation compares them. Pure functions; the one allocation is a
 * matching table for a long segment with '?' (s3_policy_glob). */
#include <arpa/inet.h>
#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "s3/policy_form.h"

_Thread_local unsigned long s3_policy_glob_steps;

/* Whether segment q (l characters, '?' any one) matches s at its start. */
static bool seg_at(const char *q, size_t l, const char *s)
{
    for (size_t j = 0; j < l; j++) {
        s3_policy_glob_steps++;
        if (q[j] != '?' && q[j] != s[j])
            return false;
    }
    return true;
}

/* The leftmost place in t (m characters) where segment q (l >= 1
 * characters, with '?' in it) matches, or -1: Shift-And, one bit per
 * character of q, so each character of t costs l / 64 word operations
 * whatever q is. */
static ptrdiff_t seg_find_wild(const char *q, size_t l, const char *t, size_t m)
{
    size_t words = (l + 63) / 64;
    uint64_t one_table[256], *table = one_table; /* table[c * words + w] */
    uint64_t one_state, *state = &one_state;
    if (words > 1) {
        table = calloc(256 * words + words, sizeof *table);
        if (!table)
            return -2;
        state = table + 256 * words;
    } else {
        memset(one_table, 0, sizeof one_table);
        one_state = 0;
    }
    s3_policy_glob_steps += 256 * words;
    for (size_t j = 0; j < l; j++) {
        uint64_t bit = (uint64_t)1 << (j % 64);
        if (q[j] == '?')
            for (unsigned c = 0; c < 256; c++)
                table[c * words + j / 64] |= bit;
        else
            table[(unsigned char)q[j] * words + j / 64] |= bit;
    }
    ptrdiff_t at = -1;
    uint64_t last = (uint64_t)1 << ((l - 1) % 64);
    for (size_t i = 0; i < m && at < 0; i++) {
        const uint64_t *b = table + (unsigned char)t[i] * words;
        for (size_t w = words; w-- > 0;)
            state[w] = ((state[w] << 1) | (w ? state[w - 1] >> 63 : 1)) & b[w];
        s3_policy_glob_steps += words;
        if (state[words - 1] & last)
            at = (ptrdiff_t)(i + 1 - l);
    }
    if (table != one_table)
        free(table);
    return at;
}

/* The leftmost place in t (m characters) where segment q (l >= 1) matches,
 * or -1. Linear in m: memmem (glibc's two-way search) without '?', else
 * Shift-And. */
static ptrdiff_t seg_find(const char *q, size_t l, const char *t, size_t m)
{
    if (l > m)
        return -1;
    ptrdiff_t at = -2;
    if (!memchr(q, '?', l)) {
        const char *f = memmem(t, m, q, l);
        at = f ? f - t : -1;
        s3_policy_glob_steps += (f ? (size_t)(f - t) : m) + l;
    } else {
        at = seg_find_wild(q, l, t, m);
    }
    for (size_t i = 0; at == -2 && i + l <= m; i++) /* out of memory: one place at a time */
        if (seg_at(q, l, t + i))
            at = (ptrdiff_t)i;
    return at == -2 ? -1 : at;
}

/* Whether s matches pattern p, where '*' stands for any run of characters
 * and '?' for one, case-sensitive (actions are matched lower-cased on both
 * sides). The segments between stars are placed from the left, each at
 * the first place it matches after the one before (the leftmost place
 * leaves the most room for the rest, so this finds a match when there is
 * one); the first is held to the start of s and the last to its end. Each
 * search is linear, so a pattern costs about len(s) + len(p) steps (times
 * len/64 for a segment with '?'), never len(s) * len(p): a bucket policy
 * cannot make a request's evaluation quadratic (docs/security.md). */
bool s3_policy_glob(const char *p, const char *s)
{
    size_t n = strlen(s);
    s3_policy_glob_steps += n;
    const char *first = strchr(p, '*');
    size_t l0 = first ? (size_t)(first - p) : strlen(p);
    if (!first)
        return l0 == n && seg_at(p, l0, s);
    const char *last = strrchr(p, '*');
    size_t lk = strlen(last + 1);
    if (l0 + lk > n || !seg_at(p, l0, s) || !seg_at(last + 1, lk, s + n - lk))
        return false;
    size_t pos = l0, end = n - lk;
    for (const char *q = first + 1; q < last;) {
        const char *star = strchr(q, '*');
        size_t l = (size_t)(star - q);
        if (l) {
            ptrdiff_t at = seg_find(q, l, s + pos, end - pos);
            if (at < 0)
                return false;
            pos += (size_t)at + l;
        }
        q = star + 1;
    }
    return true;
}

/* s lower-cased into out (cap bytes); false if it does not fit. */
bool s3_policy_lower(const char *s, char *out, size_t cap)
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

bool s3_policy_parse_cidr(const char *s, cidr_t *c)
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

bool s3_policy_cidr_match(const cidr_t *c, const cidr_t *ip)
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
bool s3_policy_parse_date(const char *s, double *out)
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

bool s3_policy_parse_number(const char *s, double *out)
{
    char *end;
    if (!*s)
        return false;
    *out = strtod(s, &end);
    return *end == '\0';
}

bool s3_policy_is_numeric(cmp_kind_t k)
{
    return k >= CMP_NUM_EQ && k <= CMP_NUM_GE;
}

bool s3_policy_is_date(cmp_kind_t k)
{
    return k >= CMP_DATE_EQ && k <= CMP_DATE_GE;
}
