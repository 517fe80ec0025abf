/* Object lock as data (docs/operations.md, "Object lock"): a bucket's
 * ObjectLockConfiguration, an object version's retention and legal hold,
 * parsed from the XML bodies and headers S3 defines, kept in stored forms,
 * written back as XML, and S3's two rules: whether a version is protected
 * from removal now, and whether a retention may change. Knows nothing of
 * requests; of storage only the metadata its guard reads (s3_lock_guard).
 * Times are unix seconds, UTC.
 *
 * Stored forms (short text, so a damaged record shows what it held):
 *  - the bucket's STOR_BCFG_OBJECT_LOCK document: "Enabled", or "Enabled
 *    GOVERNANCE|COMPLIANCE Days|Years N" with a default retention rule;
 *  - a version's retention (stor_meta_t.lock_retention): "GOVERNANCE
 *    <until>" or "COMPLIANCE <until>", until in decimal unix seconds;
 *  - a version's legal hold (stor_meta_t.legal_hold): "ON" or "OFF" (OFF
 *    kept once set, so that GetObjectLegalHold answers it). */
#ifndef S3R_S3_OBJECT_LOCK_H
#define S3R_S3_OBJECT_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "s3/s3_errors.h"
#include "storage/storage.h"

/* Bounds of a default retention period, as S3 sets them (beyond:
 * InvalidRetentionPeriod). */
#define S3_LOCK_MAX_DAYS  36500u
#define S3_LOCK_MAX_YEARS 100u
/* The latest retain-until date (9999-12-31T23:59:59Z: ISO 8601's four-digit
 * years); a stored one past it does not decode. */
#define S3_LOCK_MAX_UNTIL 253402300799LL

typedef enum s3_lock_mode {
    S3_LOCK_NONE = 0, /* no retention */
    S3_LOCK_GOVERNANCE,
    S3_LOCK_COMPLIANCE,
} s3_lock_mode_t;

/* A bucket's configuration (object lock enabled) with its default rule. */
typedef struct s3_lock_config {
    s3_lock_mode_t mode; /* the default retention's mode; NONE: no rule */
    uint32_t days;       /* with a rule: exactly one of days and years is non-zero */
    uint32_t years;
} s3_lock_config_t;

/* A version's retention. */
typedef struct s3_retention {
    s3_lock_mode_t mode; /* NONE: none (until is then 0) */
    int64_t until;       /* retain-until date */
} s3_retention_t;

/* The mode's S3 name ("GOVERNANCE", "COMPLIANCE"; NULL for NONE). */
const char *s3_lock_mode_name(s3_lock_mode_t mode);

/* ---- the bucket's configuration ---------------------------------------------- */

/* Parses a PutObjectLockConfiguration body: ObjectLockEnabled must be
 * "Enabled"; a Rule's DefaultRetention needs a Mode and exactly one of Days
 * and Years (MalformedXML otherwise, as S3 answers), a positive integer
 * within S3_LOCK_MAX_DAYS / S3_LOCK_MAX_YEARS (InvalidRetentionPeriod).
 * On error *why_p is the message (static; NULL: the table's). */
s3_error_t s3_lock_config_from_xml(const char *body, size_t len, s3_lock_config_t *out,
                                   const char **why_p);
/* The stored form of c into out (NUL-terminated); its length. */
size_t s3_lock_config_encode(const s3_lock_config_t *c, char out[64]);
/* Decodes a stored form of len bytes; -1 when it is not one. */
int s3_lock_config_decode(const char *stored, size_t len, s3_lock_config_t *out);
/* Appends the whole ObjectLockConfiguration document of c. */
void s3_lock_config_xml(const s3_lock_config_t *c, buf_t *xml);
/* The retention c's rule gives a version written at now (NONE without a
 * rule): its days, or its years as calendar years. */
s3_retention_t s3_lock_config_default(const s3_lock_config_t *c, int64_t now);

/* ---- a version's retention and legal hold --------------------------------- */

/* Parses a PutObjectRetention body: Mode and RetainUntilDate (ISO 8601),
 * both or neither (neither: *out NONE, the retention removed); MalformedXML
 * for anything else. Whether the date is in the future is the caller's
 * (it knows the time). */
s3_error_t s3_retention_from_xml(const char *body, size_t len, s3_retention_t *out,
                                 const char **why_p);
/* Parses the x-amz-object-lock-mode and -retain-until-date headers (NULL:
 * absent): both or neither, a known mode, an ISO 8601 date in the future
 * of now; InvalidArgument with S3's messages otherwise. */
s3_error_t s3_retention_from_headers(const char *mode, const char *until, int64_t now,
                                     s3_retention_t *out, const char **why_p);
/* The stored form of r (mode not NONE) into out; its length. */
size_t s3_retention_encode(const s3_retention_t *r, char out[48]);
/* Decodes a stored form (NULL: none, *out NONE); -1 when it is not one. */
int s3_retention_decode(const char *stored, s3_retention_t *out);
/* Appends <Retention><Mode>..</Mode><RetainUntilDate>..</RetainUntilDate></Retention>. */
void s3_retention_xml(const s3_retention_t *r, buf_t *xml);

/* Parses a PutObjectLegalHold body (Status ON or OFF; MalformedXML else). */
s3_error_t s3_legal_hold_from_xml(const char *body, size_t len, bool *on_p, const char **why_p);
/* Parses an x-amz-object-lock-legal-hold header (ON or OFF; InvalidArgument
 * else). */
s3_error_t s3_legal_hold_from_header(const char *value, bool *on_p, const char **why_p);
/* Whether a stored legal hold (NULL: none) is on. */
bool s3_legal_hold_on(const char *stored);

/* ---- S3's rules ------------------------------------------------------------- */

/* Whether a version with this stored retention and legal hold (NULL: none)
 * may not be removed at now: a legal hold on, a COMPLIANCE retention not
 * yet expired, or a GOVERNANCE one not yet expired unless bypass (the
 * requester sent x-amz-bypass-governance-retention and holds
 * s3:BypassGovernanceRetention). A stored form that does not decode
 * protects: damage never frees a version. */
bool s3_lock_protects(const char *retention, const char *legal_hold, int64_t now, bool bypass);
/* Whether a version's retention may change from old to new at now, as S3
 * rules: anything once old has expired (or there is none); while it runs,
 * a later or equal date in the same mode always, and under GOVERNANCE
 * with bypass also an earlier date, another mode or no retention; under
 * COMPLIANCE nothing else. S3E_NONE or AccessDenied (*why_p its message). */
s3_error_t s3_retention_change_check(const s3_retention_t *old, const s3_retention_t *new_r,
                                     int64_t now, bool bypass, const char **why_p);

/* The guard (stor_guard_fn) a removal of versions runs inside storage's
 * transaction: STOR_ERR_LOCKED when s3_lock_protects the version at now
 * (with bypass), else STOR_OK. arg is an s3_lock_guard_t. */
typedef struct s3_lock_guard {
    int64_t now;
    bool bypass;
} s3_lock_guard_t;
stor_status_t s3_lock_guard(const stor_meta_t *version, void *arg);

#endif
