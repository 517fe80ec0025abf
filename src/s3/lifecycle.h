/* Lifecycle configurations (Put/Get/DeleteBucketLifecycleConfiguration)
 * and what they say about one object, as S3 does it. Pure: no I/O, no
 * request.
 *
 * A configuration travels as XML three ways: the LifecycleConfiguration a
 * client sends (s3_lc_from_xml validates it), the canonical document kept
 * with the bucket (its rules written by s3_lc_xml, read back by
 * s3_lc_from_xml), and the same document, which
 * GetBucketLifecycleConfiguration answers. */
#ifndef S3R_S3_LIFECYCLE_H
#define S3R_S3_LIFECYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "s3/s3_errors.h"

#define S3_LC_MAX_RULES 1000 /* S3's limit */
#define S3_LC_MAX_ID    255  /* bytes of a rule ID */
#define S3_LC_MAX_TAGS  10   /* tags in one rule's filter (an object has at most 10) */
#define S3_LC_MAX_NEWER 100  /* NewerNoncurrentVersions */
/* A rule's day, as S3 counts it. The runner's day is lifecycle.day_seconds
 * (shorter only to test rules); the x-amz-expiration and x-amz-abort-date
 * headers always count in this one, as S3 shows them. */
#define S3_LC_DAY_S 86400
#define S3_LC_MAX_BYTES (64 * 1024)

/* How a rule names the objects it applies to. */
typedef enum s3_lc_filter_kind {
    S3_LC_ALL,           /* neither Filter nor Prefix: every object */
    S3_LC_LEGACY_PREFIX, /* <Prefix> directly in the rule */
    S3_LC_FILTER_EMPTY,  /* <Filter/>: every object */
    S3_LC_FILTER_PREFIX,
    S3_LC_FILTER_TAG,
    S3_LC_FILTER_GT, /* ObjectSizeGreaterThan */
    S3_LC_FILTER_LT, /* ObjectSizeLessThan */
    S3_LC_FILTER_AND,
} s3_lc_filter_kind_t;

typedef struct s3_lc_tag {
    char *key, *value;
} s3_lc_tag_t;

typedef struct s3_lc_rule {
    char *id; /* "" when none was given */
    bool enabled;
    s3_lc_filter_kind_t kind;
    char *prefix; /* NULL when the filter has none */
    s3_lc_tag_t tags[S3_LC_MAX_TAGS];
    size_t n_tags;
    int64_t size_gt, size_lt; /* -1: no bound */
    /* Actions; 0 / -1 when absent. */
    int32_t exp_days;
    int64_t exp_date; /* unix seconds, a midnight UTC */
    bool exp_delete_marker;
    int32_t noncurrent_days, newer_noncurrent;
    int32_t abort_days;
} s3_lc_rule_t;

typedef struct s3_lc {
    s3_lc_rule_t *rules;
    size_t n_rules;
} s3_lc_t;

/* Validates a LifecycleConfiguration body as S3 does. Returns S3E_NONE with
 * *cfg filled (free with s3_lc_free), or the error S3 gives, with why (cap
 * bytes) saying what: MalformedXML (not XML, no rule or more than
 * S3_LC_MAX_RULES, a Status other than Enabled/Disabled, both Filter and
 * Prefix, a Filter or Expiration with more than one choice), InvalidArgument
 * (an ID over S3_LC_MAX_ID or given twice, days not positive, a Date not at
 * midnight UTC, bad sizes or NewerNoncurrentVersions), InvalidRequest (a
 * rule with no action, AbortIncompleteMultipartUpload or
 * ExpiredObjectDeleteMarker with tags, a tag key twice), NotImplemented
 * (Transition and NoncurrentVersionTransition: s3rdmad has no storage
 * classes to move objects to; answered only for a configuration otherwise
 * valid, its transitions included: a Date off midnight, negative days or
 * an unknown StorageClass get their 400 first, as S3 checks them). */
s3_error_t s3_lc_from_xml(const char *body, size_t len, s3_lc_t *cfg, char *why, size_t cap);
void s3_lc_free(s3_lc_t *cfg);

/* The rules of cfg as canonical XML (the Rule elements of a
 * LifecycleConfiguration), appended to xml. */
void s3_lc_xml(const s3_lc_t *cfg, buf_t *xml);

/* Looks up one tag of an object: its value, or NULL when it has none. */
typedef const char *(*s3_lc_tag_fn)(void *ctx, const char *key);

/* s3_lc_expiry and whether a rule applies, for a stored object: its size,
 * commit time and tags from meta (tags that do not decode: none). */
struct stor_meta;
int64_t s3_lc_expiry_of(const s3_lc_t *cfg, const char *key, const struct stor_meta *meta,
                        int64_t day_s, const s3_lc_rule_t **rule_p);
bool s3_lc_rule_matches_of(const s3_lc_rule_t *rule, const char *key, const struct stor_meta *meta);

/* The time days of day_s seconds after since_s falls due, as S3 counts
 * lifecycle days: rounded up to the next midnight (a multiple of day_s since
 * the epoch). */
int64_t s3_lc_due(int64_t since_s, int32_t days, int64_t day_s);

/* When the current version of an object written at mtime_s expires under
 * cfg, the earliest of its enabled Expiration rules that match: a Days rule
 * at the first midnight (a multiple of day_s since the epoch) at least
 * Days x day_s after mtime_s, as S3 rounds; a Date rule at its date.
 * Returns the time (unix seconds) with *rule_p the deciding rule, or -1
 * when no rule expires it. day_s is 86400 except for tests
 * (lifecycle.day_seconds). */
int64_t s3_lc_expiry(const s3_lc_t *cfg, const char *key, uint64_t size, int64_t mtime_s,
                     int64_t day_s, s3_lc_tag_fn tag_fn, void *ctx, const s3_lc_rule_t **rule_p);

/* When an upload of key initiated at initiated_s is aborted under cfg: the
 * earliest of its enabled AbortIncompleteMultipartUpload rules whose prefix
 * names key, as s3_lc_due counts; -1 (and *rule_p NULL) when none does. */
int64_t s3_lc_abort_due(const s3_lc_t *cfg, const char *key, int64_t initiated_s, int64_t day_s,
                        const s3_lc_rule_t **rule_p);

/* The x-amz-expiration header value for an expiry at t by rule:
 * expiry-date="<HTTP date>", rule-id="<id>". */
void s3_lc_expiration_header(int64_t t, const s3_lc_rule_t *rule, char *out, size_t cap);

#endif
