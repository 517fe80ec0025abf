/* Lifecycle configurations; see lifecycle.h. */
#include "s3/lifecycle.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/date.h"
#include "s3/tagging.h"
#include "storage/storage.h"
#include "s3/xml_in.h"

/* The fields of a Rule, as paths below it ('/' at the end: a container). */
static const char *const rule_fields[] = {
    "ID",
    "Status",
    "Prefix",
    "Filter/",
    "Filter/Prefix",
    "Filter/Tag/",
    "Filter/Tag/Key",
    "Filter/Tag/Value",
    "Filter/ObjectSizeGreaterThan",
    "Filter/ObjectSizeLessThan",
    "Filter/And/",
    "Filter/And/Prefix",
    "Filter/And/Tag/",
    "Filter/And/Tag/Key",
    "Filter/And/Tag/Value",
    "Filter/And/ObjectSizeGreaterThan",
    "Filter/And/ObjectSizeLessThan",
    "Expiration/",
    "Expiration/Days",
    "Expiration/Date",
    "Expiration/ExpiredObjectDeleteMarker",
    "NoncurrentVersionExpiration/",
    "NoncurrentVersionExpiration/NoncurrentDays",
    "NoncurrentVersionExpiration/NewerNoncurrentVersions",
    "AbortIncompleteMultipartUpload/",
    "AbortIncompleteMultipartUpload/DaysAfterInitiation",
    "Transition/",
    "Transition/Days",
    "Transition/Date",
    "Transition/StorageClass",
    "NoncurrentVersionTransition/",
    "NoncurrentVersionTransition/NoncurrentDays",
    "NoncurrentVersionTransition/NewerNoncurrentVersions",
    "NoncurrentVersionTransition/StorageClass",
};
enum {
    F_ID,
    F_STATUS,
    F_LEGACY_PREFIX,
    F_FILTER,
    F_PREFIX,
    F_TAG,
    F_TAG_KEY,
    F_TAG_VALUE,
    F_GT,
    F_LT,
    F_AND,
    F_AND_PREFIX,
    F_AND_TAG,
    F_AND_TAG_KEY,
    F_AND_TAG_VALUE,
    F_AND_GT,
    F_AND_LT,
    F_EXP,
    F_EXP_DAYS,
    F_EXP_DATE,
    F_EXP_MARKER,
    F_NC,
    F_NC_DAYS,
    F_NC_NEWER,
    F_ABORT,
    F_ABORT_DAYS,
    F_TRANSITION,
    F_TR_DAYS,
    F_TR_DATE,
    F_TR_CLASS,
    F_NC_TRANSITION,
    F_NCT_DAYS,
    F_NCT_NEWER,
    F_NCT_CLASS,
    N_FIELDS
};

#define MALFORMED_WHY                                                                              \
    "The XML you provided was not well-formed or did not validate against our published schema"

void s3_lc_free(s3_lc_t *cfg)
{
    for (size_t i = 0; cfg && i < cfg->n_rules; i++) {
        s3_lc_rule_t *r = &cfg->rules[i];
        free(r->id);
        free(r->prefix);
        for (size_t t = 0; t < r->n_tags; t++) {
            free(r->tags[t].key);
            free(r->tags[t].value);
        }
    }
    if (cfg) {
        free(cfg->rules);
        memset(cfg, 0, sizeof *cfg);
    }
}

/* A decimal integer in [lo, hi] (no sign, no spaces), or -1. */
static int64_t parse_int(const char *s, int64_t lo, int64_t hi)
{
    if (!*s || strlen(s) > 19)
        return -1;
    for (const char *c = s; *c; c++)
        if (!isdigit((unsigned char)*c))
            return -1;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    return errno || v < lo || v > hi ? -1 : v;
}

/* A Date as S3 takes it: ISO 8601 at midnight UTC, with or without the
 * time ("2030-01-01", "2030-01-01T00:00:00Z", "...00.000Z"). Returns the
 * time, -1 when it is no date, -2 when not at midnight. */
static int64_t parse_date(const char *s)
{
    char full[48];
    if (strlen(s) == 10 && snprintf(full, sizeof full, "%sT00:00:00Z", s) < (int)sizeof full)
        s = full;
    int64_t t = date_parse_iso8601(s);
    if (t < 0)
        return -1;
    return t % S3_LC_DAY_S ? -2 : t;
}

/* The storage classes a Transition may name (S3's TransitionStorageClass). */
static bool transition_class(const char *v)
{
    static const char *const classes[] = {"GLACIER",      "STANDARD_IA",
                                          "ONEZONE_IA",   "INTELLIGENT_TIERING",
                                          "DEEP_ARCHIVE", "GLACIER_IR"};
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (strcmp(v, classes[i]) == 0)
            return true;
    return false;
}

/* Checks the Transition and NoncurrentVersionTransition actions of a rule
 * (entries e[0..n)) as S3 does, though s3rdmad cannot apply them: each has
 * one of Days (not negative) or Date (at midnight UTC), or NoncurrentDays
 * (not negative) and at most one NewerNoncurrentVersions (1..100), and one
 * StorageClass S3 knows. S3E_NONE when they are well-formed; the caller
 * refuses them later (NotImplemented), so that a configuration with another
 * fault gets S3's 400 for it first. */
static s3_error_t check_transitions(const xml_list_entry_t *e, size_t n, char *why, size_t cap)
{
    /* Leaves of the container being read: [0] Days/NoncurrentDays, [1]
     * Date/NewerNoncurrentVersions, [2] StorageClass; open < 0: none. */
    int open = -1;
    unsigned seen[3] = {0};
    for (size_t i = 0; i <= n; i++) {
        size_t f = i < n ? e[i].field : N_FIELDS;
        bool child = f == F_TR_DAYS || f == F_TR_DATE || f == F_TR_CLASS || f == F_NCT_DAYS ||
                     f == F_NCT_NEWER || f == F_NCT_CLASS;
        if (!child && (f == F_TRANSITION || f == F_NC_TRANSITION || i == n) && open >= 0) {
            bool ok = open == F_TRANSITION ? seen[0] + seen[1] == 1 : seen[0] == 1 && seen[1] <= 1;
            if (!ok || seen[2] != 1) {
                snprintf(why, cap, "%s", MALFORMED_WHY);
                return S3E_MALFORMED_XML;
            }
            open = -1;
        }
        if (f == F_TRANSITION || f == F_NC_TRANSITION) {
            open = (int)f;
            memset(seen, 0, sizeof seen);
        }
        if (!child)
            continue;
        const char *v = e[i].value;
        int64_t t;
        switch (f) {
        case F_TR_DAYS:
        case F_NCT_DAYS:
            seen[0]++;
            if (parse_int(v, 0, INT32_MAX) < 0) {
                snprintf(why, cap, "'%s' in %s action must be nonnegative",
                         f == F_TR_DAYS ? "Days" : "NoncurrentDays",
                         f == F_TR_DAYS ? "Transition" : "NoncurrentVersionTransition");
                return S3E_INVALID_ARGUMENT;
            }
            break;
        case F_TR_DATE:
            seen[1]++;
            t = parse_date(v);
            if (t < 0) {
                snprintf(why, cap,
                         t == -2 ? "'Date' must be at midnight GMT" : "Invalid date: '%.64s'", v);
                return S3E_INVALID_ARGUMENT;
            }
            break;
        case F_NCT_NEWER:
            seen[1]++;
            if (parse_int(v, 1, S3_LC_MAX_NEWER) < 0) {
                snprintf(why, cap, "'NewerNoncurrentVersions' must be between 1 and %d",
                         S3_LC_MAX_NEWER);
                return S3E_INVALID_ARGUMENT;
            }
            break;
        default: /* StorageClass */
            seen[2]++;
            if (!transition_class(v)) {
                snprintf(why, cap, "%s", MALFORMED_WHY);
                return S3E_MALFORMED_XML;
            }
            break;
        }
    }
    return S3E_NONE;
}

/* Builds one rule from its entries e[0..n); returns S3E_NONE or the error.
 * *transitions_p says whether the rule has (well-formed) transitions, which
 * s3rdmad cannot apply. */
static s3_error_t build_rule(const xml_list_entry_t *e, size_t n, s3_lc_rule_t *r,
                             bool *transitions_p, char *why, size_t cap)
{
    size_t count[N_FIELDS] = {0};
    for (size_t i = 0; i < n; i++)
        count[e[i].field]++;
    r->size_gt = r->size_lt = -1;
    r->exp_date = -1;
    *transitions_p = count[F_TRANSITION] || count[F_NC_TRANSITION];
    s3_error_t err = check_transitions(e, n, why, cap);
    if (err != S3E_NONE)
        return err;
    /* Leaves and containers other than tags and transitions come at most
     * once. */
    for (size_t f = 0; f < N_FIELDS; f++) {
        bool repeatable = f == F_TAG || f == F_TAG_KEY || f == F_TAG_VALUE || f == F_AND_TAG ||
                          f == F_AND_TAG_KEY || f == F_AND_TAG_VALUE || f >= F_TRANSITION;
        if (count[f] > 1 && !repeatable) {
            snprintf(why, cap, "%s", MALFORMED_WHY);
            return S3E_MALFORMED_XML;
        }
    }
    size_t filter_choices =
        count[F_PREFIX] + count[F_TAG] + count[F_GT] + count[F_LT] + count[F_AND];
    if (count[F_STATUS] != 1 || (count[F_FILTER] && count[F_LEGACY_PREFIX]) || filter_choices > 1 ||
        count[F_TAG] > 1 ||
        (count[F_EXP] && count[F_EXP_DAYS] + count[F_EXP_DATE] + count[F_EXP_MARKER] != 1) ||
        (count[F_NC] && !count[F_NC_DAYS]) || (count[F_ABORT] && !count[F_ABORT_DAYS])) {
        snprintf(why, cap, "%s", MALFORMED_WHY);
        return S3E_MALFORMED_XML;
    }
    r->kind = count[F_LEGACY_PREFIX] ? S3_LC_LEGACY_PREFIX
              : !count[F_FILTER]     ? S3_LC_ALL
              : count[F_PREFIX]      ? S3_LC_FILTER_PREFIX
              : count[F_TAG]         ? S3_LC_FILTER_TAG
              : count[F_GT]          ? S3_LC_FILTER_GT
              : count[F_LT]          ? S3_LC_FILTER_LT
              : count[F_AND]         ? S3_LC_FILTER_AND
                                     : S3_LC_FILTER_EMPTY;
    s3_lc_tag_t *tag = NULL; /* the Tag being filled */
    for (size_t i = 0; i < n; i++) {
        const char *v = e[i].value;
        int64_t num;
        switch (e[i].field) {
        case F_ID:
            if (strlen(v) > S3_LC_MAX_ID) {
                snprintf(why, cap, "ID length should not exceed allowed limit of %d", S3_LC_MAX_ID);
                return S3E_INVALID_ARGUMENT;
            }
            r->id = strdup(v);
            break;
        case F_STATUS:
            if (strcmp(v, "Enabled") != 0 && strcmp(v, "Disabled") != 0) {
                snprintf(why, cap, "%s", MALFORMED_WHY);
                return S3E_MALFORMED_XML;
            }
            r->enabled = v[0] == 'E';
            break;
        case F_LEGACY_PREFIX:
        case F_PREFIX:
        case F_AND_PREFIX:
            if (r->prefix) {
                snprintf(why, cap, "%s", MALFORMED_WHY);
                return S3E_MALFORMED_XML;
            }
            r->prefix = strdup(v);
            break;
        case F_TAG:
        case F_AND_TAG:
            if (r->n_tags == S3_LC_MAX_TAGS) {
                snprintf(why, cap, "A rule's filter has at most %d tags.", S3_LC_MAX_TAGS);
                return S3E_INVALID_REQUEST;
            }
            tag = &r->tags[r->n_tags++];
            break;
        case F_TAG_KEY:
        case F_AND_TAG_KEY:
        case F_TAG_VALUE:
        case F_AND_TAG_VALUE: {
            bool key = e[i].field == F_TAG_KEY || e[i].field == F_AND_TAG_KEY;
            char **slot = tag ? (key ? &tag->key : &tag->value) : NULL;
            if (!slot || *slot) {
                snprintf(why, cap, "%s", MALFORMED_WHY);
                return S3E_MALFORMED_XML;
            }
            if (key ? (!*v || strlen(v) > 128) : strlen(v) > 256) {
                snprintf(why, cap, "The TagKey you have provided is invalid");
                return S3E_INVALID_ARGUMENT;
            }
            *slot = strdup(v);
            break;
        }
        case F_GT:
        case F_AND_GT:
        case F_LT:
        case F_AND_LT:
            num = parse_int(v, 0, INT64_MAX);
            if (num < 0) {
                snprintf(why, cap, "Object size must be a non-negative whole number of bytes.");
                return S3E_INVALID_ARGUMENT;
            }
            if (e[i].field == F_GT || e[i].field == F_AND_GT)
                r->size_gt = num;
            else
                r->size_lt = num;
            break;
        case F_EXP_DAYS:
            r->exp_days = (int32_t)parse_int(v, 1, INT32_MAX);
            if (r->exp_days < 0) {
                snprintf(why, cap, "'Days' for Expiration action must be a positive integer");
                return S3E_INVALID_ARGUMENT;
            }
            break;
        case F_EXP_DATE:
            r->exp_date = parse_date(v);
            if (r->exp_date < 0) {
                snprintf(why, cap,
                         r->exp_date == -2 ? "'Date' must be at midnight GMT"
                                           : "Invalid date: '%.64s'",
                         v);
                return S3E_INVALID_ARGUMENT;
            }
            break;
        case F_EXP_MARKER:
            if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0) {
                snprintf(why, cap, "%s", MALFORMED_WHY);
                return S3E_MALFORMED_XML;
            }
            r->exp_delete_marker = v[0] == 't';
            break;
        case F_NC_DAYS:
            r->noncurrent_days = (int32_t)parse_int(v, 1, INT32_MAX);
            if (r->noncurrent_days < 0) {
                snprintf(why, cap,
                         "'NoncurrentDays' for NoncurrentVersionExpiration action must be a "
                         "positive integer");
                return S3E_INVALID_ARGUMENT;
            }
            break;
        case F_NC_NEWER:
            r->newer_noncurrent = (int32_t)parse_int(v, 1, S3_LC_MAX_NEWER);
            if (r->newer_noncurrent < 0) {
                snprintf(why, cap, "'NewerNoncurrentVersions' must be between 1 and %d",
                         S3_LC_MAX_NEWER);
                return S3E_INVALID_ARGUMENT;
            }
            break;
        case F_ABORT_DAYS:
            r->abort_days = (int32_t)parse_int(v, 1, INT32_MAX);
            if (r->abort_days < 0) {
                snprintf(why, cap,
                         "'DaysAfterInitiation' for AbortIncompleteMultipartUpload action must "
                         "be a positive integer");
                return S3E_INVALID_ARGUMENT;
            }
            break;
        default:
            break;
        }
    }
    for (size_t t = 0; t < r->n_tags; t++) {
        if (!r->tags[t].key) {
            snprintf(why, cap, "%s", MALFORMED_WHY);
            return S3E_MALFORMED_XML;
        }
        if (!r->tags[t].value && !(r->tags[t].value = strdup("")))
            return S3E_INTERNAL;
        for (size_t u = 0; u < t; u++) {
            if (strcmp(r->tags[u].key, r->tags[t].key) == 0) {
                snprintf(why, cap, "Duplicate Tag Keys are not allowed.");
                return S3E_INVALID_REQUEST;
            }
        }
    }
    if (r->size_gt >= 0 && r->size_lt >= 0 && r->size_gt >= r->size_lt) {
        snprintf(why, cap, "ObjectSizeGreaterThan must be less than ObjectSizeLessThan.");
        return S3E_INVALID_ARGUMENT;
    }
    bool expires = r->exp_days > 0 || r->exp_date >= 0 || count[F_EXP_MARKER];
    if (!expires && !count[F_NC] && !count[F_ABORT] && !*transitions_p) {
        snprintf(why, cap, "At least one action needs to be specified in a rule");
        return S3E_INVALID_REQUEST;
    }
    if (r->n_tags && count[F_ABORT]) {
        snprintf(why, cap, "AbortIncompleteMultipartUpload cannot be specified with Tags.");
        return S3E_INVALID_REQUEST;
    }
    if (r->n_tags && count[F_EXP_MARKER]) {
        snprintf(why, cap, "ExpiredObjectDeleteMarker cannot be specified with Tags.");
        return S3E_INVALID_REQUEST;
    }
    if ((r->id == NULL && count[F_ID]) ||
        (count[F_PREFIX] + count[F_LEGACY_PREFIX] + count[F_AND_PREFIX] && !r->prefix))
        return S3E_INTERNAL; /* out of memory */
    return S3E_NONE;
}

s3_error_t s3_lc_from_xml(const char *body, size_t len, s3_lc_t *cfg, char *why, size_t cap)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(why, cap, "%s", MALFORMED_WHY);
    if (len > S3_LC_MAX_BYTES)
        return S3E_MALFORMED_XML;
    xml_list_entry_t *e = NULL;
    size_t n = 0, n_rules = 0;
    if (s3_xml_parse_list(body, len, "LifecycleConfiguration", "Rule", rule_fields, N_FIELDS,
                          S3_LC_MAX_BYTES / 8, &e, &n, &n_rules) != 0)
        return S3E_MALFORMED_XML;
    s3_error_t err = S3E_NONE;
    bool transitions = false; /* some rule has them: refused once all else is valid */
    if (n_rules == 0 || n_rules > S3_LC_MAX_RULES)
        err = S3E_MALFORMED_XML;
    else if (!(cfg->rules = calloc(n_rules, sizeof *cfg->rules)))
        err = S3E_INTERNAL;
    /* Entries come grouped by rule, in document order. */
    for (size_t r = 0, i = 0; err == S3E_NONE && r < n_rules; r++) {
        size_t first = i;
        while (i < n && e[i].item == r)
            i++;
        cfg->n_rules++;
        /* A rule with no fields at all: no entries, e may be NULL. */
        bool has;
        err = build_rule(i > first ? e + first : NULL, i - first, &cfg->rules[r], &has, why, cap);
        transitions |= has;
    }
    for (size_t r = 0; err == S3E_NONE && r < cfg->n_rules; r++) {
        const char *id = cfg->rules[r].id;
        for (size_t q = 0; id && *id && q < r; q++) {
            if (cfg->rules[q].id && strcmp(cfg->rules[q].id, id) == 0) {
                snprintf(why, cap, "Rule ID must be unique. Found same ID for more than one rule");
                err = S3E_INVALID_ARGUMENT;
                break;
            }
        }
        if (!id && !(cfg->rules[r].id = strdup("")))
            err = S3E_INTERNAL;
    }
    s3_xml_list_free(e, n);
    if (err == S3E_NONE && transitions) {
        snprintf(why, cap,
                 "Storage-class transitions are not supported: s3rdmad has one storage class.");
        err = S3E_NOT_IMPLEMENTED;
    }
    if (err != S3E_NONE)
        s3_lc_free(cfg);
    return err;
}

static void xml_leaf(buf_t *xml, const char *name, const char *text)
{
    buf_printf(xml, "<%s>", name);
    buf_append_xml(xml, text);
    buf_printf(xml, "</%s>", name);
}

static void xml_tag(buf_t *xml, const s3_lc_tag_t *t)
{
    buf_append_str(xml, "<Tag>");
    xml_leaf(xml, "Key", t->key);
    xml_leaf(xml, "Value", t->value);
    buf_append_str(xml, "</Tag>");
}

static void xml_filter(buf_t *xml, const s3_lc_rule_t *r)
{
    if (r->kind == S3_LC_ALL)
        return;
    if (r->kind == S3_LC_LEGACY_PREFIX) {
        xml_leaf(xml, "Prefix", r->prefix);
        return;
    }
    buf_append_str(xml, "<Filter>");
    bool and = r->kind == S3_LC_FILTER_AND;
    if (and)
        buf_append_str(xml, "<And>");
    if (r->prefix)
        xml_leaf(xml, "Prefix", r->prefix);
    for (size_t t = 0; t < r->n_tags; t++)
        xml_tag(xml, &r->tags[t]);
    if (r->size_gt >= 0)
        buf_printf(xml, "<ObjectSizeGreaterThan>%lld</ObjectSizeGreaterThan>",
                   (long long)r->size_gt);
    if (r->size_lt >= 0)
        buf_printf(xml, "<ObjectSizeLessThan>%lld</ObjectSizeLessThan>", (long long)r->size_lt);
    if (and)
        buf_append_str(xml, "</And>");
    buf_append_str(xml, "</Filter>");
}

void s3_lc_xml(const s3_lc_t *cfg, buf_t *xml)
{
    for (size_t i = 0; i < cfg->n_rules; i++) {
        const s3_lc_rule_t *r = &cfg->rules[i];
        buf_append_str(xml, "<Rule>");
        if (r->id[0])
            xml_leaf(xml, "ID", r->id);
        xml_filter(xml, r);
        buf_printf(xml, "<Status>%s</Status>", r->enabled ? "Enabled" : "Disabled");
        if (r->exp_days > 0) {
            buf_printf(xml, "<Expiration><Days>%d</Days></Expiration>", (int)r->exp_days);
        } else if (r->exp_date >= 0) {
            char date[32];
            date_format_iso8601(r->exp_date * 1000, date);
            buf_printf(xml, "<Expiration><Date>%s</Date></Expiration>", date);
        } else if (r->exp_delete_marker) {
            buf_append_str(xml, "<Expiration><ExpiredObjectDeleteMarker>true"
                                "</ExpiredObjectDeleteMarker></Expiration>");
        }
        if (r->noncurrent_days > 0) {
            buf_printf(xml, "<NoncurrentVersionExpiration><NoncurrentDays>%d</NoncurrentDays>",
                       (int)r->noncurrent_days);
            if (r->newer_noncurrent > 0)
                buf_printf(xml, "<NewerNoncurrentVersions>%d</NewerNoncurrentVersions>",
                           (int)r->newer_noncurrent);
            buf_append_str(xml, "</NoncurrentVersionExpiration>");
        }
        if (r->abort_days > 0)
            buf_printf(xml,
                       "<AbortIncompleteMultipartUpload><DaysAfterInitiation>%d"
                       "</DaysAfterInitiation></AbortIncompleteMultipartUpload>",
                       (int)r->abort_days);
        buf_append_str(xml, "</Rule>");
    }
}

/* Whether rule applies to an object of this key and size whose tags
 * tag_fn(ctx, key) gives (NULL tag_fn: an object without tags). */
static bool s3_lc_rule_matches(const s3_lc_rule_t *rule, const char *key, uint64_t size,
                               s3_lc_tag_fn tag_fn, void *ctx)
{
    if (rule->prefix && strncmp(key, rule->prefix, strlen(rule->prefix)) != 0)
        return false;
    if (rule->size_gt >= 0 && size <= (uint64_t)rule->size_gt)
        return false;
    if (rule->size_lt >= 0 && size >= (uint64_t)rule->size_lt)
        return false;
    for (size_t t = 0; t < rule->n_tags; t++) {
        const char *v = tag_fn ? tag_fn(ctx, rule->tags[t].key) : NULL;
        if (!v || strcmp(v, rule->tags[t].value) != 0)
            return false;
    }
    return true;
}

int64_t s3_lc_due(int64_t since_s, int32_t days, int64_t day_s)
{
    int64_t due = since_s + (int64_t)days * day_s;
    return (due + day_s - 1) / day_s * day_s;
}

int64_t s3_lc_expiry(const s3_lc_t *cfg, const char *key, uint64_t size, int64_t mtime_s,
                     int64_t day_s, s3_lc_tag_fn tag_fn, void *ctx, const s3_lc_rule_t **rule_p)
{
    int64_t best = -1;
    *rule_p = NULL;
    for (size_t i = 0; cfg && i < cfg->n_rules; i++) {
        const s3_lc_rule_t *r = &cfg->rules[i];
        if (!r->enabled || (r->exp_days <= 0 && r->exp_date < 0) ||
            !s3_lc_rule_matches(r, key, size, tag_fn, ctx))
            continue;
        int64_t t = r->exp_days > 0 ? s3_lc_due(mtime_s, r->exp_days, day_s) : r->exp_date;
        if (best < 0 || t < best) {
            best = t;
            *rule_p = r;
        }
    }
    return best;
}

/* s3_lc_tag_fn over an object's decoded tag set. */
static const char *tag_of(void *ctx, const char *key)
{
    return s3_tags_find(ctx, key);
}

int64_t s3_lc_expiry_of(const s3_lc_t *cfg, const char *key, const stor_meta_t *meta, int64_t day_s,
                        const s3_lc_rule_t **rule_p)
{
    s3_tags_t tags;
    bool tagged = meta->tags && s3_tags_from_stored(meta->tags, &tags) == 0;
    int64_t t = s3_lc_expiry(cfg, key, meta->size, meta->mtime_ms / 1000, day_s,
                             tagged ? tag_of : NULL, tagged ? &tags : NULL, rule_p);
    if (tagged)
        s3_tags_free(&tags);
    return t;
}

bool s3_lc_rule_matches_of(const s3_lc_rule_t *rule, const char *key, const stor_meta_t *meta)
{
    s3_tags_t tags;
    bool tagged = rule->n_tags && meta->tags && s3_tags_from_stored(meta->tags, &tags) == 0;
    bool m =
        s3_lc_rule_matches(rule, key, meta->size, tagged ? tag_of : NULL, tagged ? &tags : NULL);
    if (tagged)
        s3_tags_free(&tags);
    return m;
}

int64_t s3_lc_abort_due(const s3_lc_t *cfg, const char *key, int64_t initiated_s, int64_t day_s,
                        const s3_lc_rule_t **rule_p)
{
    int64_t best = -1;
    *rule_p = NULL;
    for (size_t i = 0; cfg && i < cfg->n_rules; i++) {
        const s3_lc_rule_t *r = &cfg->rules[i];
        if (!r->enabled || r->abort_days <= 0 ||
            (r->prefix && strncmp(key, r->prefix, strlen(r->prefix)) != 0))
            continue;
        int64_t t = s3_lc_due(initiated_s, r->abort_days, day_s);
        if (best < 0 || t < best) {
            best = t;
            *rule_p = r;
        }
    }
    return best;
}

void s3_lc_expiration_header(int64_t t, const s3_lc_rule_t *rule, char *out, size_t cap)
{
    char date[40];
    date_format_http(t, date);
    /* The rule ID goes into a header: quotes and controls cannot (IDs come
     * from XML text, which may hold them). */
    char id[S3_LC_MAX_ID + 1];
    size_t n = 0;
    for (const char *c = rule->id; *c && n < S3_LC_MAX_ID; c++)
        id[n++] = ((unsigned char)*c < 0x20 || *c == 0x7f || *c == '"') ? '_' : *c;
    id[n] = '\0';
    snprintf(out, cap, "expiry-date=\"%s\", rule-id=\"%s\"", date, id);
}
