/* Object lock as data; see object_lock.h. */
#include "s3/object_lock.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/date.h"
#include "s3/s3_request.h"
#include "s3/xml_in.h"

const char *s3_lock_mode_name(s3_lock_mode_t mode)
{
    return mode == S3_LOCK_GOVERNANCE   ? "GOVERNANCE"
           : mode == S3_LOCK_COMPLIANCE ? "COMPLIANCE"
                                        : NULL;
}

/* The mode an S3 name stands for (NONE for any other text: S3's names are
 * upper case). */
static s3_lock_mode_t s3_lock_mode_parse(const char *name)
{
    if (name && strcmp(name, "GOVERNANCE") == 0)
        return S3_LOCK_GOVERNANCE;
    if (name && strcmp(name, "COMPLIANCE") == 0)
        return S3_LOCK_COMPLIANCE;
    return S3_LOCK_NONE;
}

/* A decimal integer, the whole string, of at most 9 digits (an optional
 * '-' kept, so a negative period is told from text): 0 and *v, or -1. */
static int parse_int(const char *s, long *v)
{
    const char *p = s + (*s == '-');
    size_t n = strspn(p, "0123456789");
    if (n == 0 || n > 9 || p[n])
        return -1;
    *v = strtol(s, NULL, 10);
    return 0;
}

static void free_all(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
}

/* ---- the bucket's configuration ---------------------------------------------- */

s3_error_t s3_lock_config_from_xml(const char *body, size_t len, s3_lock_config_t *out,
                                   const char **why_p)
{
    static const char *const paths[] = {"ObjectLockEnabled", "Rule/DefaultRetention/Mode",
                                        "Rule/DefaultRetention/Days",
                                        "Rule/DefaultRetention/Years"};
    enum { N = sizeof paths / sizeof paths[0] };
    char *v[N];
    *why_p = NULL;
    memset(out, 0, sizeof *out);
    if (s3_xml_parse_leaves(body ? body : "", len, "ObjectLockConfiguration", paths, N, v) != 0)
        return S3E_MALFORMED_XML;
    s3_error_t err = S3E_NONE;
    long days = 0, years = 0;
    if (!v[0] || strcmp(v[0], "Enabled") != 0) {
        err = S3E_MALFORMED_XML;
        *why_p = "ObjectLockEnabled must be Enabled.";
    } else if (v[1] || v[2] || v[3]) {
        out->mode = s3_lock_mode_parse(v[1]);
        if (out->mode == S3_LOCK_NONE || !v[2] == !v[3] || (v[2] && parse_int(v[2], &days) != 0) ||
            (v[3] && parse_int(v[3], &years) != 0)) {
            err = S3E_MALFORMED_XML;
            *why_p = "A DefaultRetention needs a Mode (GOVERNANCE or COMPLIANCE) and either "
                     "Days or Years.";
        } else if ((v[2] && (days < 1 || days > (long)S3_LOCK_MAX_DAYS)) ||
                   (v[3] && (years < 1 || years > (long)S3_LOCK_MAX_YEARS))) {
            err = S3E_INVALID_RETENTION_PERIOD;
        }
    }
    free_all(v, N);
    if (err != S3E_NONE) {
        memset(out, 0, sizeof *out);
        return err;
    }
    out->days = (uint32_t)days;
    out->years = (uint32_t)years;
    return S3E_NONE;
}

size_t s3_lock_config_encode(const s3_lock_config_t *c, char out[64])
{
    int n = c->mode == S3_LOCK_NONE
                ? snprintf(out, 64, "Enabled")
                : snprintf(out, 64, "Enabled %s %s %" PRIu32, s3_lock_mode_name(c->mode),
                           c->days ? "Days" : "Years", c->days ? c->days : c->years);
    return (size_t)n;
}

int s3_lock_config_decode(const char *stored, size_t len, s3_lock_config_t *out)
{
    char s[64], mode[16], unit[8];
    memset(out, 0, sizeof *out);
    if (len == 0 || len >= sizeof s)
        return -1;
    memcpy(s, stored, len);
    s[len] = '\0';
    if (strcmp(s, "Enabled") == 0)
        return 0;
    unsigned long n;
    int end = 0;
    if (sscanf(s, "Enabled %15s %7s %lu%n", mode, unit, &n, &end) != 3 || s[end] != '\0')
        return -1;
    out->mode = s3_lock_mode_parse(mode);
    bool days = strcmp(unit, "Days") == 0;
    if (out->mode == S3_LOCK_NONE || (!days && strcmp(unit, "Years") != 0) || n < 1 ||
        n > (days ? S3_LOCK_MAX_DAYS : S3_LOCK_MAX_YEARS)) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    *(days ? &out->days : &out->years) = (uint32_t)n;
    return 0;
}

void s3_lock_config_xml(const s3_lock_config_t *c, buf_t *xml)
{
    s3_xml_open(xml, "ObjectLockConfiguration");
    s3_xml_elem(xml, "ObjectLockEnabled", "Enabled");
    if (c->mode != S3_LOCK_NONE) {
        buf_append_str(xml, "<Rule><DefaultRetention>");
        s3_xml_elem(xml, "Mode", s3_lock_mode_name(c->mode));
        buf_printf(xml, c->days ? "<Days>%" PRIu32 "</Days>" : "<Years>%" PRIu32 "</Years>",
                   c->days ? c->days : c->years);
        buf_append_str(xml, "</DefaultRetention></Rule>");
    }
    buf_append_str(xml, "</ObjectLockConfiguration>");
}

s3_retention_t s3_lock_config_default(const s3_lock_config_t *c, int64_t now)
{
    s3_retention_t r = {S3_LOCK_NONE, 0};
    if (c->mode == S3_LOCK_NONE)
        return r;
    r.mode = c->mode;
    if (c->days) {
        r.until = now + (int64_t)c->days * 86400;
        return r;
    }
    time_t t = (time_t)now;
    struct tm tm;
    gmtime_r(&t, &tm);
    tm.tm_year += (int)c->years; /* timegm normalises Feb 29 of a year that has none */
    r.until = (int64_t)timegm(&tm);
    return r;
}

/* ---- a version's retention and legal hold --------------------------------- */

s3_error_t s3_retention_from_xml(const char *body, size_t len, s3_retention_t *out,
                                 const char **why_p)
{
    static const char *const paths[] = {"Mode", "RetainUntilDate"};
    char *v[2];
    *why_p = NULL;
    out->mode = S3_LOCK_NONE;
    out->until = 0;
    if (s3_xml_parse_leaves(body ? body : "", len, "Retention", paths, 2, v) != 0)
        return S3E_MALFORMED_XML;
    s3_error_t err = S3E_NONE;
    if (v[0] || v[1]) {
        out->mode = s3_lock_mode_parse(v[0]);
        out->until = v[1] ? date_parse_iso8601(v[1]) : -1;
        if (out->mode == S3_LOCK_NONE || out->until < 0) {
            err = S3E_MALFORMED_XML;
            *why_p = "A Retention needs a Mode (GOVERNANCE or COMPLIANCE) and a RetainUntilDate "
                     "in ISO 8601.";
            out->mode = S3_LOCK_NONE;
            out->until = 0;
        }
    }
    free_all(v, 2);
    return err;
}

s3_error_t s3_retention_from_headers(const char *mode, const char *until, int64_t now,
                                     s3_retention_t *out, const char **why_p)
{
    *why_p = NULL;
    out->mode = S3_LOCK_NONE;
    out->until = 0;
    if (!mode && !until)
        return S3E_NONE;
    if (!mode || !until) {
        *why_p = "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be "
                 "supplied.";
        return S3E_INVALID_ARGUMENT;
    }
    s3_lock_mode_t m = s3_lock_mode_parse(mode);
    if (m == S3_LOCK_NONE) {
        *why_p = "Unknown wormMode directive.";
        return S3E_INVALID_ARGUMENT;
    }
    int64_t t = date_parse_iso8601(until);
    if (t < 0) {
        *why_p = "The retain until date must be provided in ISO 8601 format.";
        return S3E_INVALID_ARGUMENT;
    }
    if (t <= now) {
        *why_p = "The retain until date must be in the future!";
        return S3E_INVALID_ARGUMENT;
    }
    out->mode = m;
    out->until = t;
    return S3E_NONE;
}

size_t s3_retention_encode(const s3_retention_t *r, char out[48])
{
    return (size_t)snprintf(out, 48, "%s %" PRId64, s3_lock_mode_name(r->mode), r->until);
}

int s3_retention_decode(const char *stored, s3_retention_t *out)
{
    out->mode = S3_LOCK_NONE;
    out->until = 0;
    if (!stored)
        return 0;
    const char *sp = strchr(stored, ' ');
    if (!sp || (size_t)(sp - stored) > 10)
        return -1;
    char mode[11];
    memcpy(mode, stored, (size_t)(sp - stored));
    mode[sp - stored] = '\0';
    s3_lock_mode_t m = s3_lock_mode_parse(mode);
    size_t n = strspn(sp + 1, "0123456789");
    if (m == S3_LOCK_NONE || n == 0 || n > 18 || sp[1 + n] != '\0')
        return -1;
    long long until = strtoll(sp + 1, NULL, 10);
    if (until > S3_LOCK_MAX_UNTIL)
        return -1;
    out->mode = m;
    out->until = until;
    return 0;
}

void s3_retention_xml(const s3_retention_t *r, buf_t *xml)
{
    char date[32];
    date_format_iso8601(r->until * 1000, date);
    s3_xml_open(xml, "Retention");
    s3_xml_elem(xml, "Mode", s3_lock_mode_name(r->mode));
    s3_xml_elem(xml, "RetainUntilDate", date);
    buf_append_str(xml, "</Retention>");
}

/* "ON" or "OFF" into *on_p: 0, or -1 for anything else. */
static int on_off(const char *v, bool *on_p)
{
    if (v && strcmp(v, "ON") == 0)
        *on_p = true;
    else if (v && strcmp(v, "OFF") == 0)
        *on_p = false;
    else
        return -1;
    return 0;
}

s3_error_t s3_legal_hold_from_xml(const char *body, size_t len, bool *on_p, const char **why_p)
{
    static const char *const paths[] = {"Status"};
    char *v;
    *why_p = NULL;
    if (s3_xml_parse_leaves(body ? body : "", len, "LegalHold", paths, 1, &v) != 0)
        return S3E_MALFORMED_XML;
    int rc = on_off(v, on_p);
    free(v);
    if (rc != 0)
        *why_p = "A LegalHold Status must be ON or OFF.";
    return rc == 0 ? S3E_NONE : S3E_MALFORMED_XML;
}

s3_error_t s3_legal_hold_from_header(const char *value, bool *on_p, const char **why_p)
{
    *why_p = NULL;
    if (on_off(value, on_p) == 0)
        return S3E_NONE;
    *why_p = "Legal Hold must be either of 'ON' or 'OFF'.";
    return S3E_INVALID_ARGUMENT;
}

bool s3_legal_hold_on(const char *stored)
{
    return stored && strcmp(stored, "OFF") != 0; /* damage holds */
}

/* ---- S3's rules ------------------------------------------------------------- */

bool s3_lock_protects(const char *retention, const char *legal_hold, int64_t now, bool bypass)
{
    if (s3_legal_hold_on(legal_hold))
        return true;
    s3_retention_t r;
    if (s3_retention_decode(retention, &r) != 0)
        return true;
    if (r.mode == S3_LOCK_NONE || r.until <= now)
        return false;
    return r.mode == S3_LOCK_COMPLIANCE || !bypass;
}

s3_error_t s3_retention_change_check(const s3_retention_t *old, const s3_retention_t *new_r,
                                     int64_t now, bool bypass, const char **why_p)
{
    *why_p = NULL;
    if (old->mode == S3_LOCK_NONE || old->until <= now)
        return S3E_NONE;
    bool same_or_later = new_r->mode == old->mode && new_r->until >= old->until;
    if (same_or_later)
        return S3E_NONE;
    if (old->mode == S3_LOCK_GOVERNANCE && bypass)
        return S3E_NONE;
    *why_p = old->mode == S3_LOCK_COMPLIANCE
                 ? "The object is under COMPLIANCE retention: its retention can only be extended."
                 : "The object is under GOVERNANCE retention: shortening, removing or changing "
                   "its mode needs x-amz-bypass-governance-retention and "
                   "s3:BypassGovernanceRetention.";
    return S3E_ACCESS_DENIED;
}

stor_status_t s3_lock_guard(const stor_meta_t *version, void *arg)
{
    const s3_lock_guard_t *g = arg;
    return s3_lock_protects(version->lock_retention, version->legal_hold, g->now, g->bypass)
               ? STOR_ERR_LOCKED
               : STOR_OK;
}
