/* CORS configurations and matching; see cors.h. */
#include "s3/cors.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "s3/xml_in.h"

/* The methods a rule may allow, in the order of their bits in s3_cors_rule_t. */
static const char *const s3_cors_methods[S3_CORS_N_METHODS] = {"GET", "PUT", "POST", "DELETE",
                                                               "HEAD"};

/* The XML leaves of a CORSRule, in the order of their stored tags. */
static const char *const rule_fields[] = {
    "ID", "AllowedOrigin", "AllowedMethod", "AllowedHeader", "ExposeHeader", "MaxAgeSeconds"};
static const char rule_tags[] = "ROMHEA";
enum { FIELD_ID, FIELD_ORIGIN, FIELD_METHOD, FIELD_HEADER, FIELD_EXPOSE, FIELD_MAX_AGE };

unsigned s3_cors_method_bit(const char *method)
{
    for (unsigned i = 0; method && i < S3_CORS_N_METHODS; i++)
        if (strcmp(method, s3_cors_methods[i]) == 0)
            return 1u << i;
    return 0;
}

static size_t count_char(const char *s, char c)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == c;
    return n;
}

static bool is_seconds(const char *s)
{
    size_t len = strlen(s);
    if (len == 0 || len > 10)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return strtoull(s, NULL, 10) <= 2147483647ull;
}

static void put_field(buf_t *out, char tag, const char *text)
{
    buf_append(out, &tag, 1);
    buf_append(out, text, strlen(text) + 1);
}

/* Checks one entry; returns 0, or -1 with *invalid_p and why set. */
static int check_entry(const xml_list_entry_t *e, bool *invalid_p, char *why, size_t cap)
{
    const char *v = e->value;
    if (e->field != FIELD_ID && !*v) {
        snprintf(why, cap, "An empty %s is not allowed.", rule_fields[e->field]);
        return -1;
    }
    for (const char *c = v; *c; c++) {
        /* The values go into response headers: no line breaks, no controls. */
        if ((unsigned char)*c < 0x20 || *c == 0x7f) {
            snprintf(why, cap, "%s has a control character.", rule_fields[e->field]);
            return -1;
        }
    }
    switch (e->field) {
    case FIELD_METHOD:
        if (!s3_cors_method_bit(v)) {
            *invalid_p = true;
            snprintf(why, cap,
                     "Found unsupported HTTP method in CORS config. Unsupported method is %s", v);
            return -1;
        }
        break;
    case FIELD_ORIGIN:
    case FIELD_HEADER:
        if (count_char(v, '*') > 1) {
            *invalid_p = true;
            snprintf(why, cap, "%s \"%s\" can not have more than one wildcard.",
                     rule_fields[e->field], v);
            return -1;
        }
        break;
    case FIELD_MAX_AGE:
        if (!is_seconds(v)) {
            snprintf(why, cap, "MaxAgeSeconds must be a whole number of seconds.");
            return -1;
        }
        break;
    default:
        break;
    }
    return 0;
}

int s3_cors_from_xml(const char *body, size_t len, buf_t *out, bool *invalid_p, char *why,
                     size_t cap)
{
    *invalid_p = false;
    buf_init(out, S3_CORS_MAX_BYTES);
    if (len > S3_CORS_MAX_BYTES) {
        snprintf(why, cap, "The CORS configuration is larger than %d bytes.", S3_CORS_MAX_BYTES);
        return -1;
    }
    xml_list_entry_t *e = NULL;
    size_t n = 0, n_rules = 0;
    if (s3_xml_parse_list(body, len, "CORSConfiguration", "CORSRule", rule_fields,
                          sizeof rule_fields / sizeof rule_fields[0], S3_CORS_MAX_BYTES / 8, &e, &n,
                          &n_rules) != 0) {
        snprintf(why, cap,
                 "The XML you provided was not well-formed or did not validate against "
                 "our published schema");
        return -1;
    }
    int rc = 0;
    if (n_rules == 0 || n_rules > S3_CORS_MAX_RULES) {
        snprintf(why, cap, "A CORS configuration has 1 to %d CORSRule elements.",
                 S3_CORS_MAX_RULES);
        rc = -1;
    }
    /* Entries come grouped by rule, in document order. */
    for (size_t r = 0, i = 0; rc == 0 && r < n_rules; r++) {
        size_t first = i, count[6] = {0};
        for (; i < n && e[i].item == r; i++) {
            count[e[i].field]++;
            if (check_entry(&e[i], invalid_p, why, cap) != 0)
                rc = -1;
        }
        if (rc != 0)
            break;
        if (count[FIELD_ORIGIN] == 0 || count[FIELD_METHOD] == 0 || count[FIELD_ID] > 1 ||
            count[FIELD_MAX_AGE] > 1) {
            snprintf(why, cap,
                     "Each CORSRule has at least one AllowedOrigin and AllowedMethod, "
                     "at most one ID and MaxAgeSeconds.");
            rc = -1;
            break;
        }
        const char *id = "";
        for (size_t k = first; k < i; k++)
            if (e[k].field == FIELD_ID)
                id = e[k].value;
        if (strlen(id) > 255) {
            snprintf(why, cap, "A CORSRule ID is at most 255 characters.");
            rc = -1;
            break;
        }
        put_field(out, 'R', id);
        for (size_t k = first; k < i; k++)
            if (e[k].field != FIELD_ID)
                put_field(out, rule_tags[e[k].field], e[k].value);
    }
    s3_xml_list_free(e, n);
    if (rc == 0 && out->len == 0)
        rc = -1;
    if (rc != 0)
        buf_free(out);
    return rc;
}

void s3_cors_free(s3_cors_t *cfg)
{
    for (size_t i = 0; i < cfg->n_rules; i++) {
        free(cfg->rules[i].origins);
        free(cfg->rules[i].headers);
        free(cfg->rules[i].expose);
    }
    free(cfg->rules);
    free(cfg->blob);
    memset(cfg, 0, sizeof *cfg);
}

/* Appends s to the list (*list_p, *n_p); -1 when out of memory. */
static int list_add(const char ***list_p, size_t *n_p, const char *s)
{
    const char **l = realloc(*list_p, (*n_p + 1) * sizeof *l);
    if (!l)
        return -1;
    l[(*n_p)++] = s;
    *list_p = l;
    return 0;
}

int s3_cors_parse(const void *data, size_t len, s3_cors_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    if (len == 0)
        return 0;
    const char *d = data;
    if (d[len - 1] != '\0' || d[0] != 'R')
        return -1;
    cfg->blob = malloc(len);
    if (!cfg->blob)
        return -1;
    memcpy(cfg->blob, data, len);
    size_t n_rules = 0;
    for (size_t i = 0; i < len; i += strlen(cfg->blob + i) + 1)
        n_rules += cfg->blob[i] == 'R';
    cfg->rules = calloc(n_rules, sizeof *cfg->rules);
    if (!cfg->rules) {
        s3_cors_free(cfg);
        return -1;
    }
    s3_cors_rule_t *r = NULL;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < len; i += strlen(cfg->blob + i) + 1) {
        char tag = cfg->blob[i];
        const char *text = cfg->blob + i + 1;
        if (tag == 'R') {
            r = &cfg->rules[cfg->n_rules++];
            r->id = text;
        } else if (tag == 'O') {
            rc = list_add(&r->origins, &r->n_origins, text);
        } else if (tag == 'H') {
            rc = list_add(&r->headers, &r->n_headers, text);
        } else if (tag == 'E') {
            rc = list_add(&r->expose, &r->n_expose, text);
        } else if (tag == 'M' && s3_cors_method_bit(text)) {
            r->methods |= s3_cors_method_bit(text);
        } else if (tag == 'A') {
            r->max_age = text;
        } else {
            rc = -1;
        }
    }
    if (rc != 0)
        s3_cors_free(cfg);
    return rc;
}

static void xml_elem(buf_t *xml, const char *name, const char *value)
{
    buf_printf(xml, "<%s>", name);
    buf_append_xml(xml, value);
    buf_printf(xml, "</%s>", name);
}

static void xml_list(buf_t *xml, const char *name, const char **l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        xml_elem(xml, name, l[i]);
}

void s3_cors_xml(const s3_cors_t *cfg, buf_t *xml)
{
    for (size_t i = 0; i < cfg->n_rules; i++) {
        const s3_cors_rule_t *r = &cfg->rules[i];
        buf_append_str(xml, "<CORSRule>");
        if (*r->id)
            xml_elem(xml, "ID", r->id);
        xml_list(xml, "AllowedHeader", r->headers, r->n_headers);
        for (unsigned m = 0; m < S3_CORS_N_METHODS; m++)
            if (r->methods & (1u << m))
                xml_elem(xml, "AllowedMethod", s3_cors_methods[m]);
        xml_list(xml, "AllowedOrigin", r->origins, r->n_origins);
        xml_list(xml, "ExposeHeader", r->expose, r->n_expose);
        if (r->max_age)
            xml_elem(xml, "MaxAgeSeconds", r->max_age);
        buf_append_str(xml, "</CORSRule>");
    }
}

/* Whether s (n bytes) matches pattern, whose one '*' (if any) stands for
 * any run of characters. */
static bool wild_match(const char *pattern, const char *s, size_t n, bool nocase)
{
    int (*cmp)(const char *, const char *, size_t) = nocase ? strncasecmp : strncmp;
    const char *star = strchr(pattern, '*');
    size_t plen = strlen(pattern);
    if (!star)
        return plen == n && cmp(pattern, s, n) == 0;
    size_t pre = (size_t)(star - pattern), post = plen - pre - 1;
    return n >= pre + post && cmp(pattern, s, pre) == 0 && cmp(star + 1, s + n - post, post) == 0;
}

static bool any_match(const char **patterns, size_t np, const char *s, size_t n, bool nocase)
{
    for (size_t i = 0; i < np; i++)
        if (wild_match(patterns[i], s, n, nocase))
            return true;
    return false;
}

static bool headers_allowed(const s3_cors_rule_t *r, const char *req_headers)
{
    const char *p = req_headers;
    while (p && *p) {
        p += strspn(p, " \t,");
        size_t n = strcspn(p, ",");
        size_t t = n;
        while (t && (p[t - 1] == ' ' || p[t - 1] == '\t'))
            t--;
        if (t && !any_match(r->headers, r->n_headers, p, t, true))
            return false;
        p += n;
    }
    return true;
}

const s3_cors_rule_t *s3_cors_match(const s3_cors_t *cfg, const char *origin, unsigned method,
                                    const char *req_headers)
{
    if (!origin || !method || (req_headers && strlen(req_headers) > S3_CORS_MAX_REQUEST_HEADERS))
        return NULL;
    for (size_t i = 0; i < cfg->n_rules; i++) {
        const s3_cors_rule_t *r = &cfg->rules[i];
        if ((r->methods & method) &&
            any_match(r->origins, r->n_origins, origin, strlen(origin), false) &&
            headers_allowed(r, req_headers))
            return r;
    }
    return NULL;
}

/* Calls fn with name and the comma-separated join of l (nothing when empty). */
static void joined(const char *name, const char **l, size_t n, s3_cors_header_fn fn, void *ctx)
{
    if (n == 0)
        return;
    buf_t v;
    buf_init(&v, S3_CORS_MAX_BYTES);
    for (size_t i = 0; i < n; i++)
        buf_printf(&v, "%s%s", i ? ", " : "", l[i]);
    if (buf_append(&v, "", 1) == 0)
        fn(ctx, name, v.data);
    buf_free(&v);
}

void s3_cors_headers(const s3_cors_rule_t *rule, const char *origin, bool preflight,
                     const char *req_headers, s3_cors_header_fn fn, void *ctx)
{
    bool any_origin = false;
    for (size_t i = 0; i < rule->n_origins; i++)
        any_origin |= strcmp(rule->origins[i], "*") == 0;
    fn(ctx, "Access-Control-Allow-Origin", any_origin ? "*" : origin);
    const char *methods[S3_CORS_N_METHODS];
    size_t nm = 0;
    for (unsigned m = 0; m < S3_CORS_N_METHODS; m++)
        if (rule->methods & (1u << m))
            methods[nm++] = s3_cors_methods[m];
    joined("Access-Control-Allow-Methods", methods, nm, fn, ctx);
    if (preflight && req_headers && *req_headers) {
        char *lower = strdup(req_headers);
        if (lower) {
            for (char *c = lower; *c; c++)
                *c = (char)tolower((unsigned char)*c);
            fn(ctx, "Access-Control-Allow-Headers", lower);
            free(lower);
        }
    }
    joined("Access-Control-Expose-Headers", rule->expose, rule->n_expose, fn, ctx);
    if (rule->max_age)
        fn(ctx, "Access-Control-Max-Age", rule->max_age);
    if (!any_origin)
        fn(ctx, "Access-Control-Allow-Credentials", "true");
    fn(ctx, "Vary", "Origin, Access-Control-Request-Headers, Access-Control-Request-Method");
}
