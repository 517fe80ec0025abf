/* Object lock (docs/operations.md, "Object lock"): a bucket's configuration
 * (Get/PutObjectLockConfiguration, CreateBucket's
 * x-amz-bucket-object-lock-enabled), a version's retention and legal hold
 * (Get/PutObjectRetention, Get/PutObjectLegalHold, the x-amz-object-lock-*
 * headers of writes and reads) and the guard that keeps a protected
 * version from removal (DeleteObject, DeleteObjects, the lifecycle
 * runner). object_lock.c parses and rules; storage keeps the fields
 * (stor_meta_t.lock_retention, .legal_hold) and the bucket's document
 * (STOR_BCFG_OBJECT_LOCK), and runs the guards inside its own transactions,
 * so that no change of a version's lock slips between a check and the act
 * it allows. */

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/date.h"
#include "s3/object_lock.h"
#include "s3/s3_request.h"

#define NO_LOCK_MSG "Bucket is missing Object Lock Configuration"

/* Whether bucket has object lock enabled (its STOR_BCFG_OBJECT_LOCK
 * document is set): from the record, no lookup. */
static bool s3_lock_enabled(const stor_bucket_t *bucket)
{
    return (bucket->cfg_mask & (1u << STOR_BCFG_OBJECT_LOCK)) != 0;
}

/* The configuration of req->authz_bucket (object lock enabled: the caller
 * checked) into *c: S3E_NONE, or the error (InternalError when the document
 * is absent, which S3 never makes it, or damaged). */
static s3_error_t config_of(s3_req_t *req, s3_lock_config_t *c)
{
    buf_t doc;
    uint64_t gen;
    stor_status_t st = stor_bucket_config_get(req->srv->cfg.store, &req->authz_bucket,
                                              STOR_BCFG_OBJECT_LOCK, &doc, &gen);
    int rc = st == STOR_OK && doc.len ? s3_lock_config_decode(doc.data, doc.len, c) : -1;
    buf_free(&doc);
    if (st != STOR_OK)
        return s3_error_from_stor(st);
    return rc == 0 ? S3E_NONE : S3E_INTERNAL;
}

/* Whether the request may bypass GOVERNANCE retention on key:
 * x-amz-bypass-governance-retention: true and s3:BypassGovernanceRetention
 * (the bucket's owner holds it; a policy may grant or deny it). */
static bool bypass_governance(s3_req_t *req, const stor_bucket_t *bucket, const char *key)
{
    const char *v = s3_req_header(req, "x-amz-bypass-governance-retention");
    return v && strcasecmp(v, "true") == 0 &&
           s3_extra_action_allowed(req, bucket, key, "s3:BypassGovernanceRetention");
}

/* ---- writes and reads of objects ------------------------------------------------- */

static int find_checksum(void *ctx, const char *name, const char *value)
{
    (void)value;
    static const char *const algs[] = {"crc32", "crc32c", "crc64nvme", "sha1", "sha256"};
    bool *found = ctx;
    for (size_t i = 0; i < sizeof algs / sizeof algs[0] && !*found; i++)
        *found =
            strncasecmp(name, "x-amz-checksum-", 15) == 0 && strcasecmp(name + 15, algs[i]) == 0;
    return *found;
}

/* S3's rule for a PUT that locks its version: Content-MD5, or a checksum
 * header or trailer (x-amz-checksum-<algorithm>, x-amz-trailer,
 * x-amz-sdk-checksum-algorithm: the body layer verifies each), so that the
 * bytes kept are the bytes sent. */
bool s3_lock_integrity_given(s3_req_t *req)
{
    if (s3_req_header(req, "Content-MD5") || s3_req_header(req, "x-amz-trailer") ||
        s3_req_header(req, "x-amz-sdk-checksum-algorithm"))
        return true;
    bool found = false;
    s3_req_each_header(req, find_checksum, &found);
    return found;
}

s3_error_t s3_lock_for_write(s3_req_t *req, stor_meta_t *meta, bool put, const char **why_p)
{
    *why_p = NULL;
    free(meta->lock_retention);
    free(meta->legal_hold);
    meta->lock_retention = meta->legal_hold = NULL;
    const char *mode = s3_req_header(req, "x-amz-object-lock-mode");
    const char *until = s3_req_header(req, "x-amz-object-lock-retain-until-date");
    const char *hold = s3_req_header(req, "x-amz-object-lock-legal-hold");
    bool locked = s3_lock_enabled(&req->authz_bucket);
    if (!locked && (mode || until || hold)) {
        *why_p = "Bucket is missing ObjectLockConfiguration";
        return S3E_INVALID_REQUEST;
    }
    if (!locked)
        return S3E_NONE;
    s3_retention_t r;
    s3_error_t err = s3_retention_from_headers(mode, until, req->now_s, &r, why_p);
    bool on = false;
    if (err == S3E_NONE && hold)
        err = s3_legal_hold_from_header(hold, &on, why_p);
    if (err != S3E_NONE)
        return err;
    if (r.mode == S3_LOCK_NONE) {
        s3_lock_config_t c;
        if ((err = config_of(req, &c)) != S3E_NONE)
            return err;
        r = s3_lock_config_default(&c, req->now_s);
    }
    if (put && (r.mode != S3_LOCK_NONE || hold) && !s3_lock_integrity_given(req)) {
        *why_p = "Content-MD5 OR x-amz-checksum- HTTP header is required for Put Object requests "
                 "with Object Lock parameters";
        return S3E_INVALID_REQUEST;
    }
    char s[48];
    if (r.mode != S3_LOCK_NONE) {
        s3_retention_encode(&r, s);
        if (!(meta->lock_retention = strdup(s)))
            return S3E_INTERNAL;
    }
    if (hold && !(meta->legal_hold = strdup(on ? "ON" : "OFF")))
        return S3E_INTERNAL;
    return S3E_NONE;
}

void s3_lock_reply_headers(s3_req_t *req, const stor_bucket_t *bucket, const char *key,
                           const stor_meta_t *meta)
{
    s3_retention_t r;
    if (meta->lock_retention && s3_retention_decode(meta->lock_retention, &r) == 0 &&
        s3_extra_action_allowed(req, bucket, key, "s3:GetObjectRetention")) {
        char date[32];
        date_format_iso8601(r.until * 1000, date);
        s3_reply_header(req, "x-amz-object-lock-mode", s3_lock_mode_name(r.mode));
        s3_reply_header(req, "x-amz-object-lock-retain-until-date", date);
    }
    if (meta->legal_hold && s3_extra_action_allowed(req, bucket, key, "s3:GetObjectLegalHold"))
        s3_reply_header(req, "x-amz-object-lock-legal-hold",
                        s3_legal_hold_on(meta->legal_hold) ? "ON" : "OFF");
}

/* ---- deletes ------------------------------------------------------------------------- */

const stor_precond_t *s3_lock_delete_cond(s3_req_t *req, const stor_bucket_t *bucket,
                                          const char *key, s3_lock_guard_t *g, stor_precond_t *cond)
{
    if (!s3_lock_enabled(bucket))
        return NULL;
    g->now = req->now_s;
    g->bypass = bypass_governance(req, bucket, key);
    memset(cond, 0, sizeof *cond);
    cond->guard = s3_lock_guard;
    cond->guard_arg = g;
    return cond;
}

/* ---- the bucket's configuration -------------------------------------------------------- */

static void get_lock_config_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        return;
    if (!s3_lock_enabled(&req->authz_bucket)) {
        s3_reply_error(req, S3E_NO_OBJECT_LOCK_CONFIG, NULL);
        return;
    }
    s3_lock_config_t c;
    s3_error_t err = config_of(req, &c);
    if (err != S3E_NONE) {
        s3_reply_error(req, err, NULL);
        return;
    }
    buf_t xml;
    buf_init(&xml, 4096);
    s3_lock_config_xml(&c, &xml);
    s3_reply_xml(req, 200, &xml);
}

/* Makes sure the versioning of req->authz_bucket (looked up again) is
 * Enabled after its lock configuration was written: a Suspend that raced
 * the write (it checked for a configuration before there was one) is
 * undone, so a bucket with object lock always ends up Enabled. */
static stor_status_t keep_versioning_enabled(s3_req_t *req)
{
    stor_bucket_t b;
    stor_status_t st = stor_bucket_get(req->srv->cfg.store, req->bucket, &b);
    if (st == STOR_OK && b.id == req->authz_bucket.id && b.versioning != STOR_VERSIONING_ENABLED)
        st = stor_bucket_set_versioning(req->srv->cfg.store, &b, STOR_VERSIONING_ENABLED);
    return st;
}

/* On a bucket without object lock, S3 enables it only while versioning is
 * Enabled (InvalidBucketState otherwise); with it, the configuration (its
 * default rule) is replaced. Object lock is never disabled. */
static void put_lock_config_finish(s3_req_t *req)
{
    s3_lock_config_t c;
    const char *why = NULL;
    s3_error_t err = s3_lock_config_from_xml(req->body.data, req->body.len, &c, &why);
    if (err == S3E_NONE && !s3_lock_enabled(&req->authz_bucket) &&
        req->authz_bucket.versioning != STOR_VERSIONING_ENABLED) {
        err = S3E_INVALID_BUCKET_STATE;
        why = "Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration";
    }
    if (err != S3E_NONE) {
        s3_reply_error(req, err, why);
        return;
    }
    char doc[64];
    size_t n = s3_lock_config_encode(&c, doc);
    stor_status_t st = stor_bucket_config_set(req->srv->cfg.store, &req->authz_bucket,
                                              STOR_BCFG_OBJECT_LOCK, doc, n);
    if (st == STOR_OK)
        st = keep_versioning_enabled(req);
    if (st != STOR_OK)
        s3_reply_error(req, s3_error_from_stor(st), NULL);
    else
        s3_reply_empty(req, 200);
}

stor_status_t s3_lock_bucket_create(s3_req_t *req, const stor_bucket_t *bucket)
{
    s3_lock_config_t none = {S3_LOCK_NONE, 0, 0};
    char doc[64];
    size_t n = s3_lock_config_encode(&none, doc);
    stor_status_t st =
        stor_bucket_set_versioning(req->srv->cfg.store, bucket, STOR_VERSIONING_ENABLED);
    if (st == STOR_OK)
        st = stor_bucket_config_set(req->srv->cfg.store, bucket, STOR_BCFG_OBJECT_LOCK, doc, n);
    return st;
}

s3_error_t s3_lock_versioning_check(s3_req_t *req, stor_versioning_t state, const char **why_p)
{
    *why_p = NULL;
    if (state == STOR_VERSIONING_ENABLED)
        return S3E_NONE;
    stor_bucket_t b;
    stor_status_t st = stor_bucket_get(req->srv->cfg.store, req->bucket, &b);
    if (st != STOR_OK)
        return s3_error_from_stor(st);
    if (b.id != req->authz_bucket.id)
        return S3E_NO_SUCH_BUCKET;
    if (!s3_lock_enabled(&b))
        return S3E_NONE;
    /* Undo a Suspend that raced the configuration's write (see
     * keep_versioning_enabled, which the other side runs). */
    if (b.versioning != STOR_VERSIONING_ENABLED &&
        (st = stor_bucket_set_versioning(req->srv->cfg.store, &b, STOR_VERSIONING_ENABLED)) !=
            STOR_OK)
        return s3_error_from_stor(st);
    *why_p = "An Object Lock configuration is present on this bucket, so the versioning state "
             "cannot be changed.";
    return S3E_INVALID_BUCKET_STATE;
}

/* ---- a version's retention and legal hold ----------------------------------------------- */

/* The begin of the four per-version operations: the versionId checked, the
 * bucket looked up, and InvalidRequest on a bucket without object lock (as
 * S3 answers); then the body (PUTs) or the answer. */
static bool version_op_begin(s3_req_t *req)
{
    s3_error_t err = s3_version_check(s3_req_query(req, "versionId"));
    if (err != S3E_NONE) {
        s3_reply_error(req, err, NULL);
        return false;
    }
    if (!s3_bucket_lookup(req, req->bucket, &req->authz_bucket))
        return false;
    if (!s3_lock_enabled(&req->authz_bucket)) {
        s3_reply_error(req, S3E_INVALID_REQUEST, NO_LOCK_MSG);
        return false;
    }
    return true;
}

static void put_version_op_begin(s3_req_t *req)
{
    if (version_op_begin(req))
        req->body_kind = S3_BODY_XML;
}

static void get_retention_begin(s3_req_t *req)
{
    stor_meta_t meta;
    if (!version_op_begin(req) || !s3_object_version_for_request(req, S3_PERM_READ_ACP, &meta))
        return;
    s3_retention_t r;
    int rc = s3_retention_decode(meta.lock_retention, &r);
    stor_meta_free(&meta);
    if (rc != 0) {
        s3_reply_error(req, S3E_INTERNAL, NULL);
        return;
    }
    if (r.mode == S3_LOCK_NONE) {
        s3_reply_error(req, S3E_NO_OBJECT_LOCK, NULL);
        return;
    }
    buf_t xml;
    buf_init(&xml, 4096);
    s3_retention_xml(&r, &xml);
    s3_reply_xml(req, 200, &xml);
}

/* What a retention change's guard checks against the version as stored at
 * the change (s3_retention_change_check). */
typedef struct retention_change {
    s3_retention_t to;
    int64_t now;
    bool bypass;
    const char *why; /* the refusal's message */
} retention_change_t;

static stor_status_t retention_guard(const stor_meta_t *version, void *arg)
{
    retention_change_t *rc = arg;
    s3_retention_t from;
    if (s3_retention_decode(version->lock_retention, &from) != 0) {
        rc->why = "The object's stored retention is damaged.";
        return STOR_ERR_LOCKED;
    }
    return s3_retention_change_check(&from, &rc->to, rc->now, rc->bypass, &rc->why) == S3E_NONE
               ? STOR_OK
               : STOR_ERR_LOCKED;
}

/* Applies change to the version the request names (versionId; none: the
 * latest) and replies as PutObjectRetention and PutObjectLegalHold do: 405
 * MethodNotAllowed for a delete marker, the storage status's error (with
 * *locked_why, when locked_why is not NULL, for STOR_ERR_LOCKED: the
 * change's guard sets it), else 200. */
static void version_change(s3_req_t *req, stor_obj_change_t *change, const char *const *locked_why)
{
    change->version_id = s3_req_query(req, "versionId");
    stor_status_t st =
        stor_object_change(req->srv->cfg.store, &req->authz_bucket, req->key, change);
    if (st == STOR_ERR_DELETE_MARKER)
        s3_reply_error(req, S3E_METHOD_NOT_ALLOWED, NULL);
    else if (st != STOR_OK)
        s3_reply_error(req, s3_error_from_stor(st),
                       st == STOR_ERR_LOCKED && locked_why ? *locked_why : NULL);
    else
        s3_reply_empty(req, 200);
}

static void put_retention_finish(s3_req_t *req)
{
    retention_change_t rc = {.now = req->now_s};
    const char *why = NULL;
    s3_error_t err = s3_retention_from_xml(req->body.data, req->body.len, &rc.to, &why);
    if (err == S3E_NONE && rc.to.mode != S3_LOCK_NONE && rc.to.until <= req->now_s) {
        err = S3E_INVALID_ARGUMENT;
        why = "The retain until date must be in the future!";
    }
    if (err != S3E_NONE) {
        s3_reply_error(req, err, why);
        return;
    }
    stor_meta_t meta;
    if (!s3_object_version_for_request(req, S3_PERM_WRITE_ACP, &meta))
        return;
    stor_meta_free(&meta);
    rc.bypass = bypass_governance(req, &req->authz_bucket, req->key);
    char stored[48];
    if (rc.to.mode != S3_LOCK_NONE)
        s3_retention_encode(&rc.to, stored);
    stor_obj_change_t change = {.set_lock_retention = true,
                                .lock_retention = rc.to.mode != S3_LOCK_NONE ? stored : NULL,
                                .guard = retention_guard,
                                .guard_arg = &rc};
    version_change(req, &change, &rc.why);
}

static void get_legal_hold_begin(s3_req_t *req)
{
    stor_meta_t meta;
    if (!version_op_begin(req) || !s3_object_version_for_request(req, S3_PERM_READ_ACP, &meta))
        return;
    bool set = meta.legal_hold != NULL, on = s3_legal_hold_on(meta.legal_hold);
    stor_meta_free(&meta);
    if (!set) {
        s3_reply_error(req, S3E_NO_OBJECT_LOCK, NULL);
        return;
    }
    buf_t xml;
    buf_init(&xml, 4096);
    s3_xml_open(&xml, "LegalHold");
    s3_xml_elem(&xml, "Status", on ? "ON" : "OFF");
    buf_append_str(&xml, "</LegalHold>");
    s3_reply_xml(req, 200, &xml);
}

/* A legal hold is set and lifted by whoever holds s3:PutObjectLegalHold,
 * whatever the retention (S3's rule): no guard. */
static void put_legal_hold_finish(s3_req_t *req)
{
    bool on;
    const char *why = NULL;
    s3_error_t err = s3_legal_hold_from_xml(req->body.data, req->body.len, &on, &why);
    if (err != S3E_NONE) {
        s3_reply_error(req, err, why);
        return;
    }
    stor_meta_t meta;
    if (!s3_object_version_for_request(req, S3_PERM_WRITE_ACP, &meta))
        return;
    stor_meta_free(&meta);
    stor_obj_change_t change = {.set_legal_hold = true, .legal_hold = on ? "ON" : "OFF"};
    version_change(req, &change, NULL);
}

const s3_op_t s3_op_get_object_lock_config = {"GetObjectLockConfiguration", get_lock_config_begin,
                                              NULL};
const s3_op_t s3_op_put_object_lock_config = {"PutObjectLockConfiguration", s3_owner_config_begin,
                                              put_lock_config_finish};
const s3_op_t s3_op_get_object_retention = {"GetObjectRetention", get_retention_begin, NULL};
const s3_op_t s3_op_put_object_retention = {"PutObjectRetention", put_version_op_begin,
                                            put_retention_finish};
const s3_op_t s3_op_get_object_legal_hold = {"GetObjectLegalHold", get_legal_hold_begin, NULL};
const s3_op_t s3_op_put_object_legal_hold = {"PutObjectLegalHold", put_version_op_begin,
                                             put_legal_hold_finish};
