/* Bucket and object configuration: versioning (the bucket's state, kept by
 * storage: stor_bucket_set_versioning), ACLs
 * (canned ACLs, read and set), bucket policies (policy.c parses them, the
 * store keeps their canonical text with the bucket), CORS configurations
 * (cors.c; kept the same way), lifecycle configurations (lifecycle.c; kept
 * as canonical XML), tag sets of buckets and objects (tagging.c; a bucket's
 * kept as CORS is, an object's in its record), default encryption (sse.c
 * does the encrypting), and the configurations s3rdmad does not keep
 * (object lock), which answer
 * as S3 does for a bucket that has none: 404 with the configuration's own
 * error code to a GET, 204 to a DELETE, 501 NotImplemented to a PUT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/date.h"
#include "s3/cors.h"
#include "s3/lifecycle.h"
#include "s3/policy.h"
#include "s3/s3_request.h"
#include "s3/sse.h"
#include "s3/tagging.h"
#include "s3/xml_in.h"

/* ---- versioning ----------------------------------------------------------------- */

static void get_versioning_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        return;
    /* Never enabled: the configuration has no Status at all. */
    buf_t xml;
    buf_init(&xml, 4096);
    s3_xml_open(&xml, "VersioningConfiguration");
    int v = req->authz_bucket.versioning;
    if (v != STOR_VERSIONING_OFF)
        s3_xml_elem(&xml, "Status", v == STOR_VERSIONING_ENABLED ? "Enabled" : "Suspended");
    buf_append_str(&xml, "</VersioningConfiguration>");
    s3_reply_xml(req, 200, &xml);
}

static void put_versioning_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        return;
    req->body_kind = S3_BODY_XML;
}

/* VersioningConfiguration: Status Enabled or Suspended; MfaDelete Disabled
 * or absent (MFA delete needs MFA devices s3rdmad does not have: refused
 * with NotImplemented, as other S3 servers without them do). */
static void put_versioning_finish(s3_req_t *req)
{
    static const char *const paths[] = {"Status", "MfaDelete"};
    char *v[2] = {NULL, NULL};
    if (xml_parse_leaves(req->body.data ? req->body.data : "", req->body.len,
                         "VersioningConfiguration", paths, 2, v) != 0) {
        s3_reply_error(req, S3E_MALFORMED_XML, NULL);
        return;
    }
    stor_versioning_t state = STOR_VERSIONING_OFF;
    if (v[0] && strcmp(v[0], "Enabled") == 0)
        state = STOR_VERSIONING_ENABLED;
    else if (v[0] && strcmp(v[0], "Suspended") == 0)
        state = STOR_VERSIONING_SUSPENDED;
    s3_error_t err = S3E_NONE;
    const char *why = NULL;
    if (v[1] && strcmp(v[1], "Enabled") == 0) {
        err = S3E_NOT_IMPLEMENTED;
        why = "MFA delete is not supported: s3rdmad has no MFA devices.";
    } else if (state == STOR_VERSIONING_OFF || (v[1] && strcmp(v[1], "Disabled") != 0)) {
        err = S3E_ILLEGAL_VERSIONING;
    }
    free(v[0]);
    free(v[1]);
    if (err == S3E_NONE) {
        err = s3_error_from_stor(
            stor_bucket_set_versioning(req->srv->cfg.store, &req->authz_bucket, state));
    }
    if (err != S3E_NONE) {
        s3_reply_error(req, err, why);
        return;
    }
    s3_reply_empty(req, 200);
}

/* ---- ACLs ------------------------------------------------------------------------ */

static void get_bucket_acl_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_READ_ACP, &req->authz_bucket))
        return;
    buf_t xml;
    buf_init(&xml, 16 * 1024);
    s3_acl_xml(&xml, req->authz_bucket.acl, false, req->authz_bucket.owner, NULL);
    s3_reply_xml(req, 200, &xml);
}

/* The ACL a PutBucketAcl / PutObjectAcl sets: x-amz-acl, or the body. */
static void put_acl_begin(s3_req_t *req)
{
    req->body_kind = S3_BODY_XML;
}

/* Decides the new ACL of a resource with this owner from the request;
 * replies and returns false on error. */
static bool acl_requested(s3_req_t *req, bool object, const char *owner, const char *bucket_owner,
                          stor_acl_t *acl_p)
{
    const char *why = NULL;
    s3_error_t err;
    bool has_body = req->body.len > 0;
    if (s3_req_header(req, "x-amz-acl") || !has_body) {
        if (has_body) {
            s3_reply_error(req, S3E_UNEXPECTED_CONTENT,
                           "This request does not support content with x-amz-acl.");
            return false;
        }
        if (!s3_req_header(req, "x-amz-acl") && !s3_req_header(req, "x-amz-grant-read") &&
            !s3_req_header(req, "x-amz-grant-write") &&
            !s3_req_header(req, "x-amz-grant-read-acp") &&
            !s3_req_header(req, "x-amz-grant-write-acp") &&
            !s3_req_header(req, "x-amz-grant-full-control")) {
            s3_reply_error(req, S3E_MISSING_SECURITY_HEADER,
                           "Your request was missing a required header: x-amz-acl or an "
                           "AccessControlPolicy body.");
            return false;
        }
        err = s3_acl_from_headers(req, object, acl_p, &why);
    } else {
        err = s3_acl_from_xml(req->body.data, req->body.len, object, owner, bucket_owner, acl_p,
                              &why);
    }
    if (err != S3E_NONE) {
        s3_reply_error(req, err, why);
        return false;
    }
    return true;
}

static void put_bucket_acl_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_WRITE_ACP, &req->authz_bucket))
        return;
    put_acl_begin(req);
}

static void put_bucket_acl_finish(s3_req_t *req)
{
    stor_acl_t acl;
    if (!acl_requested(req, false, req->authz_bucket.owner, NULL, &acl))
        return;
    const char *why = NULL;
    s3_error_t err = s3_acl_change_check(req, acl, &why);
    if (err != S3E_NONE) {
        s3_reply_error(req, err, why);
        return;
    }
    stor_status_t st = stor_bucket_set_acl(req->srv->cfg.store, &req->authz_bucket, acl);
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return;
    }
    s3_reply_empty(req, 200);
}

static bool same_version(const stor_meta_t *a, const stor_meta_t *b)
{
    char va[STOR_VERSION_ID_LEN + 1], vb[STOR_VERSION_ID_LEN + 1];
    stor_version_id(a, va);
    stor_version_id(b, vb);
    return strcmp(va, vb) == 0;
}

bool s3_object_for_request(s3_req_t *req, s3_perm_t perm, stor_meta_t *meta_p)
{
    const char *vid = s3_req_query(req, "versionId");
    s3_error_t err = s3_version_check(vid);
    if (err != S3E_NONE) {
        s3_reply_error(req, err, NULL);
        return false;
    }
    if (!s3_bucket_lookup(req, req->bucket, &req->authz_bucket))
        return false;
    stor_status_t st = stor_head_version(req->srv->cfg.store, req->bucket, req->key, vid, meta_p);
    if (st == STOR_OK && meta_p->delete_marker) {
        stor_meta_free(meta_p);
        st = STOR_ERR_DELETE_MARKER;
    }
    if (s3_delete_marker_reply(req, &req->authz_bucket, req->key, vid, st, S3E_METHOD_NOT_ALLOWED))
        return false;
    if (st != STOR_OK) {
        s3_reply_error(req, s3_object_lookup_error(req, &req->authz_bucket, st), NULL);
        return false;
    }
    if (!s3_object_authorize(req, &req->authz_bucket, req->key, meta_p, perm)) {
        stor_meta_free(meta_p);
        return false;
    }
    if (vid && perm != S3_PERM_READ && perm != S3_PERM_READ_ACP) {
        stor_meta_t cur;
        bool latest = false;
        if (stor_head(req->srv->cfg.store, req->bucket, req->key, &cur) == STOR_OK) {
            latest = same_version(&cur, meta_p);
            stor_meta_free(&cur);
        }
        if (!latest) {
            stor_meta_free(meta_p);
            s3_reply_error(req, S3E_NOT_IMPLEMENTED,
                           "Only the latest version of an object can be changed.");
            return false;
        }
    }
    if (vid)
        s3_version_headers(req, &req->authz_bucket, meta_p, true);
    return true;
}

static void get_object_acl_begin(s3_req_t *req)
{
    stor_meta_t meta;
    if (!s3_object_for_request(req, S3_PERM_READ_ACP, &meta))
        return;
    buf_t xml;
    buf_init(&xml, 16 * 1024);
    s3_acl_xml(&xml, meta.acl, true, s3_object_owner(&req->authz_bucket, &meta),
               req->authz_bucket.owner);
    stor_meta_free(&meta);
    s3_reply_xml(req, 200, &xml);
}

/* Authorized before the body is read, like every operation with an XML
 * body: a body the requester may not send is never buffered. */
static void put_object_acl_begin(s3_req_t *req)
{
    stor_meta_t meta;
    if (!s3_object_for_request(req, S3_PERM_WRITE_ACP, &meta))
        return;
    stor_meta_free(&meta);
    put_acl_begin(req);
}

/* Looks the object up again: it may have been replaced (another owner)
 * or deleted while the body came. */
static void put_object_acl_finish(s3_req_t *req)
{
    stor_meta_t meta;
    if (!s3_object_for_request(req, S3_PERM_WRITE_ACP, &meta))
        return;
    stor_acl_t acl;
    bool ok = acl_requested(req, true, s3_object_owner(&req->authz_bucket, &meta),
                            req->authz_bucket.owner, &acl);
    stor_meta_free(&meta);
    if (!ok)
        return;
    const char *why = NULL;
    s3_error_t err = s3_acl_change_check(req, acl, &why);
    if (err != S3E_NONE) {
        s3_reply_error(req, err, why);
        return;
    }
    stor_obj_change_t change = {.set_acl = true, .acl = acl};
    stor_status_t st =
        stor_object_change(req->srv->cfg.store, &req->authz_bucket, req->key, &change);
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return;
    }
    s3_reply_empty(req, 200);
}

/* ---- bucket policies ------------------------------------------------------------- */

/* Reads configuration document kind of req->authz_bucket into *doc (the
 * caller frees it; len 0: not set). Replies and returns false on error. */
static bool config_read(s3_req_t *req, stor_bucket_cfg_t kind, buf_t *doc)
{
    uint64_t gen;
    stor_status_t st =
        stor_bucket_config_get(req->srv->cfg.store, &req->authz_bucket, kind, doc, &gen);
    if (st == STOR_OK)
        return true;
    buf_free(doc);
    s3_reply_error(req, s3_error_from_stor(st), NULL);
    return false;
}

/* Sets (len > 0) or removes (data NULL) document kind of req->authz_bucket
 * and replies status, or the error. */
static void config_write(s3_req_t *req, stor_bucket_cfg_t kind, const void *data, size_t len,
                         int status)
{
    stor_status_t st =
        stor_bucket_config_set(req->srv->cfg.store, &req->authz_bucket, kind, data, len);
    if (st != STOR_OK)
        s3_reply_error(req, s3_error_from_stor(st), NULL);
    else
        s3_reply_empty(req, status);
}

/* Delete<Config>: the owner removes the bucket's kind document; 204 even
 * when there was none, as S3 answers. */
static void config_delete(s3_req_t *req, stor_bucket_cfg_t kind)
{
    if (s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        config_write(req, kind, NULL, 0, 204);
}

/* The bucket's public-access block flags (S3_PAB_*; 0 when unset), or -1
 * after replying an error. */
static int bucket_pab(s3_req_t *req)
{
    buf_t doc;
    if (!config_read(req, STOR_BCFG_PUBLIC_ACCESS_BLOCK, &doc))
        return -1;
    int pab = doc.len == 1 ? ((const uint8_t *)doc.data)[0] & S3_PAB_ALL : 0;
    buf_free(&doc);
    return pab;
}

static void get_policy_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        return;
    buf_t doc;
    if (!config_read(req, STOR_BCFG_POLICY, &doc))
        return;
    if (doc.len == 0) {
        buf_free(&doc);
        s3_reply_error(req, S3E_NO_SUCH_BUCKET_POLICY, NULL);
        return;
    }
    s3_reply_header(req, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    s3_out_t out = {.kind = S3_OUT_BUFFER};
    out.data = buf_steal(&doc, &out.len);
    s3_reply_send(req, 200, &out);
}

static void put_policy_begin(s3_req_t *req)
{
    if (s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        req->body_kind = S3_BODY_XML; /* the JSON document, buffered the same way */
}

/* Validated as S3 does (MalformedPolicy with its message); stored as its
 * canonical compact text. Refused (AccessDenied) when public under
 * BlockPublicPolicy. */
static void put_policy_finish(s3_req_t *req)
{
    char why[256], *canon = NULL;
    s3_policy_t *p = s3_policy_parse(req->body.data ? req->body.data : "", req->body.len,
                                     req->bucket, &canon, why, sizeof why);
    if (!p) {
        s3_reply_error(req, S3E_MALFORMED_POLICY, why);
        return;
    }
    bool public = s3_policy_is_public(p);
    s3_policy_free(p);
    int pab = public ? bucket_pab(req) : 0;
    if (pab < 0) {
        free(canon);
        return;
    }
    if (pab & S3_PAB_BLOCK_PUBLIC_POLICY)
        s3_reply_error(req, S3E_ACCESS_DENIED,
                       "The bucket's public access block (BlockPublicPolicy) refuses public "
                       "policies.");
    else
        config_write(req, STOR_BCFG_POLICY, canon, strlen(canon), 204);
    free(canon);
}

static void delete_policy_begin(s3_req_t *req)
{
    config_delete(req, STOR_BCFG_POLICY);
}

static void get_policy_status_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        return;
    buf_t doc;
    if (!config_read(req, STOR_BCFG_POLICY, &doc))
        return;
    char why[256];
    s3_policy_t *p =
        doc.len ? s3_policy_parse(doc.data, doc.len, req->bucket, NULL, why, sizeof why) : NULL;
    buf_free(&doc);
    if (!p) {
        s3_reply_error(req, S3E_NO_SUCH_BUCKET_POLICY, NULL);
        return;
    }
    buf_t xml;
    buf_init(&xml, 4096);
    s3_xml_open(&xml, "PolicyStatus");
    s3_xml_elem(&xml, "IsPublic", s3_policy_is_public(p) ? "true" : "false");
    buf_append_str(&xml, "</PolicyStatus>");
    s3_policy_free(p);
    s3_reply_xml(req, 200, &xml);
}

/* ---- public-access block and ownership controls ------------------------------------ */

static const char *const pab_fields[] = {"BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy",
                                         "RestrictPublicBuckets"};
static const unsigned pab_bits[] = {S3_PAB_BLOCK_PUBLIC_ACLS, S3_PAB_IGNORE_PUBLIC_ACLS,
                                    S3_PAB_BLOCK_PUBLIC_POLICY, S3_PAB_RESTRICT_PUBLIC_BUCKETS};

static void owner_config_begin(s3_req_t *req)
{
    if (s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        req->body_kind = S3_BODY_XML;
}

/* The one-byte document kind holds, or -1 (absent: replied err_absent) or
 * -2 (replied an error). */
static int byte_config(s3_req_t *req, stor_bucket_cfg_t kind, s3_error_t err_absent)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        return -2;
    buf_t doc;
    if (!config_read(req, kind, &doc))
        return -2;
    int v = doc.len == 1 ? ((const uint8_t *)doc.data)[0] : -1;
    buf_free(&doc);
    if (v < 0)
        s3_reply_error(req, err_absent, NULL);
    return v;
}

static void get_pab_begin(s3_req_t *req)
{
    int v = byte_config(req, STOR_BCFG_PUBLIC_ACCESS_BLOCK, S3E_NO_SUCH_PAB);
    if (v < 0)
        return;
    buf_t xml;
    buf_init(&xml, 4096);
    s3_xml_open(&xml, "PublicAccessBlockConfiguration");
    for (size_t i = 0; i < 4; i++)
        s3_xml_elem(&xml, pab_fields[i], (unsigned)v & pab_bits[i] ? "true" : "false");
    buf_append_str(&xml, "</PublicAccessBlockConfiguration>");
    s3_reply_xml(req, 200, &xml);
}

/* Each flag "true" or "false" (absent: false), as S3 takes them. */
static void put_pab_finish(s3_req_t *req)
{
    char *v[4];
    if (xml_parse_leaves(req->body.data ? req->body.data : "", req->body.len,
                         "PublicAccessBlockConfiguration", pab_fields, 4, v) != 0) {
        s3_reply_error(req, S3E_MALFORMED_XML, NULL);
        return;
    }
    uint8_t flags = 0;
    bool ok = true;
    for (size_t i = 0; i < 4; i++) {
        if (v[i] && strcasecmp(v[i], "true") == 0)
            flags |= (uint8_t)pab_bits[i];
        else if (v[i] && strcasecmp(v[i], "false") != 0)
            ok = false;
        free(v[i]);
    }
    if (!ok)
        s3_reply_error(req, S3E_MALFORMED_XML, NULL);
    else
        config_write(req, STOR_BCFG_PUBLIC_ACCESS_BLOCK, &flags, 1, 200);
}

static void delete_pab_begin(s3_req_t *req)
{
    config_delete(req, STOR_BCFG_PUBLIC_ACCESS_BLOCK);
}

static void get_ownership_begin(s3_req_t *req)
{
    int v = byte_config(req, STOR_BCFG_OWNERSHIP, S3E_NO_OWNERSHIP);
    if (v < 0)
        return;
    if (!s3_ownership_name(v)) {
        s3_reply_error(req, S3E_INTERNAL, NULL);
        return;
    }
    buf_t xml;
    buf_init(&xml, 4096);
    s3_xml_open(&xml, "OwnershipControls");
    buf_append_str(&xml, "<Rule>");
    s3_xml_elem(&xml, "ObjectOwnership", s3_ownership_name(v));
    buf_append_str(&xml, "</Rule></OwnershipControls>");
    s3_reply_xml(req, 200, &xml);
}

static void put_ownership_finish(s3_req_t *req)
{
    static const char *const path[] = {"Rule/ObjectOwnership"};
    char *v;
    if (xml_parse_leaves(req->body.data ? req->body.data : "", req->body.len, "OwnershipControls",
                         path, 1, &v) != 0) {
        s3_reply_error(req, S3E_MALFORMED_XML, NULL);
        return;
    }
    int rule = s3_ownership_parse(v);
    free(v);
    uint8_t byte = (uint8_t)rule;
    if (rule < 0)
        s3_reply_error(req, S3E_MALFORMED_XML, NULL);
    else
        config_write(req, STOR_BCFG_OWNERSHIP, &byte, 1, 200);
}

static void delete_ownership_begin(s3_req_t *req)
{
    config_delete(req, STOR_BCFG_OWNERSHIP);
}

/* ---- CORS ---------------------------------------------------------------------------- */

static void get_cors_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        return;
    buf_t doc;
    if (!config_read(req, STOR_BCFG_CORS, &doc))
        return;
    s3_cors_t cfg;
    int rc = s3_cors_parse(doc.data, doc.len, &cfg);
    buf_free(&doc);
    if (rc != 0 || cfg.n_rules == 0) {
        s3_cors_free(&cfg);
        s3_reply_error(req, rc != 0 ? S3E_INTERNAL : S3E_NO_SUCH_CORS, NULL);
        return;
    }
    buf_t xml;
    buf_init(&xml, 2 * S3_CORS_MAX_BYTES);
    s3_xml_open(&xml, "CORSConfiguration");
    s3_cors_xml(&cfg, &xml);
    buf_append_str(&xml, "</CORSConfiguration>");
    s3_cors_free(&cfg);
    s3_reply_xml(req, 200, &xml);
}

static void put_cors_finish(s3_req_t *req)
{
    buf_t doc;
    bool invalid;
    char why[512];
    if (s3_cors_from_xml(req->body.data, req->body.len, &doc, &invalid, why, sizeof why) != 0) {
        s3_reply_error(req, invalid ? S3E_INVALID_REQUEST : S3E_MALFORMED_XML,
                       invalid ? why : NULL);
        return;
    }
    config_write(req, STOR_BCFG_CORS, doc.data, doc.len, 200);
    buf_free(&doc);
}

static void delete_cors_begin(s3_req_t *req)
{
    config_delete(req, STOR_BCFG_CORS);
}

/* The CORS configuration of bucket name (empty when it has none). Returns
 * STOR_OK or the store's error (STOR_ERR_NO_BUCKET: no such bucket); a
 * stored document that does not parse is STOR_ERR_IO. The bucket record
 * this request was authorized against, when it is name's, saves a read. */
static stor_status_t cors_of(s3_req_t *req, const char *name, s3_cors_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    stor_bucket_t b;
    stor_status_t st = STOR_OK;
    if (req->authz_bucket.name[0] && strcmp(req->authz_bucket.name, name) == 0)
        b = req->authz_bucket;
    else
        st = stor_bucket_get(req->srv->cfg.store, name, &b);
    if (st != STOR_OK || !(b.cfg_mask & (1u << STOR_BCFG_CORS)))
        return st;
    buf_t doc;
    uint64_t gen;
    st = stor_bucket_config_get(req->srv->cfg.store, &b, STOR_BCFG_CORS, &doc, &gen);
    if (st == STOR_OK && s3_cors_parse(doc.data, doc.len, cfg) != 0)
        st = STOR_ERR_IO;
    buf_free(&doc);
    return st;
}

static void add_reply_header(void *ctx, const char *name, const char *value)
{
    s3_reply_header(ctx, name, value);
}

/* OPTIONS on a bucket or an object: unauthenticated, as in S3. */
static void preflight_begin(s3_req_t *req)
{
    const char *origin = s3_req_header(req, "Origin");
    const char *method = s3_req_header(req, "Access-Control-Request-Method");
    const char *headers = s3_req_header(req, "Access-Control-Request-Headers");
    char why[160];
    if (!origin) {
        s3_reply_error(req, S3E_CORS_BAD_REQUEST, NULL);
        return;
    }
    if (!method || !s3_cors_method_bit(method)) {
        snprintf(why, sizeof why, "Invalid Access-Control-Request-Method: %.64s",
                 method ? method : "null");
        s3_reply_error(req, S3E_CORS_BAD_REQUEST, why);
        return;
    }
    s3_cors_t cfg;
    stor_status_t st = cors_of(req, req->bucket, &cfg);
    if (st == STOR_ERR_NO_BUCKET) {
        s3_reply_error(req, S3E_CORS_FORBIDDEN, "CORSResponse: Bucket not found");
        return;
    }
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return;
    }
    if (cfg.n_rules == 0) {
        s3_reply_error(req, S3E_CORS_FORBIDDEN, NULL);
        return;
    }
    const s3_cors_rule_t *rule = s3_cors_match(&cfg, origin, s3_cors_method_bit(method), headers);
    if (rule) {
        s3_cors_headers(rule, origin, true, headers, add_reply_header, req);
        s3_reply_empty(req, 200);
    } else {
        s3_reply_error_elem(req, "Method", method);
        s3_reply_error_elem(req, "ResourceType", req->key ? "OBJECT" : "BUCKET");
        s3_reply_error(req, S3E_CORS_FORBIDDEN,
                       "CORSResponse: This CORS request is not allowed. This is usually because "
                       "the evalution of Origin, request method / Access-Control-Request-Method "
                       "or Access-Control-Request-Headers are not whitelisted by the resource's "
                       "CORS spec.");
    }
    s3_cors_free(&cfg);
}

void s3_cors_reply_headers(s3_req_t *req)
{
    const char *origin = s3_req_header(req, "Origin");
    unsigned method = s3_cors_method_bit(req->method);
    if (!origin || !method || !req->bucket || req->op == &s3_op_cors_preflight)
        return;
    s3_cors_t cfg;
    if (cors_of(req, req->bucket, &cfg) != STOR_OK)
        return;
    const s3_cors_rule_t *rule = s3_cors_match(&cfg, origin, method, NULL);
    if (rule)
        s3_cors_headers(rule, origin, false, NULL, add_reply_header, req);
    s3_cors_free(&cfg);
}

/* ---- tagging ------------------------------------------------------------------------- */

/* Replies a tag set (stored form; NULL: none) as a Tagging document. */
static void reply_tags(s3_req_t *req, const char *stored)
{
    s3_tags_t t;
    if (s3_tags_from_stored(stored, &t) != 0) {
        s3_reply_error(req, S3E_INTERNAL, NULL);
        return;
    }
    buf_t xml;
    buf_init(&xml, 256 * 1024);
    s3_xml_open(&xml, "Tagging");
    s3_tags_xml(&t, &xml);
    buf_append_str(&xml, "</Tagging>");
    s3_tags_free(&t);
    s3_reply_xml(req, 200, &xml);
}

/* Parses the request's Tagging body into the stored form *stored_p (NULL:
 * an empty set; the caller frees it). Replies and returns false on error. */
static bool body_tags(s3_req_t *req, s3_tags_of_t of, s3_tags_t *t, char **stored_p)
{
    const char *why = NULL;
    s3_error_t err = s3_tags_from_xml(req->body.data, req->body.len, of, t, &why);
    int nomem = 0;
    *stored_p = err == S3E_NONE ? s3_tags_encode(t, &nomem) : NULL;
    if (nomem) {
        s3_tags_free(t);
        err = S3E_INTERNAL;
    }
    if (err != S3E_NONE)
        s3_reply_error(req, err, why);
    return err == S3E_NONE;
}

static void get_bucket_tagging_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        return;
    buf_t doc;
    if (!config_read(req, STOR_BCFG_TAGGING, &doc))
        return;
    char *stored = doc.len ? strndup(doc.data, doc.len) : NULL;
    if (!stored)
        s3_reply_error(req, doc.len ? S3E_INTERNAL : S3E_NO_SUCH_TAG_SET, NULL);
    else
        reply_tags(req, stored);
    free(stored);
    buf_free(&doc);
}

/* An empty TagSet removes the bucket's tags, as S3 does. */
static void put_bucket_tagging_finish(s3_req_t *req)
{
    s3_tags_t t;
    char *stored;
    if (!body_tags(req, S3_TAGS_BUCKET, &t, &stored))
        return;
    s3_tags_free(&t);
    config_write(req, STOR_BCFG_TAGGING, stored, stored ? strlen(stored) : 0, 204);
    free(stored);
}

static void delete_bucket_tagging_begin(s3_req_t *req)
{
    config_delete(req, STOR_BCFG_TAGGING);
}

static void get_object_tagging_begin(s3_req_t *req)
{
    stor_meta_t meta;
    if (!s3_object_for_request(req, S3_PERM_READ, &meta))
        return;
    if (s3_req_query(req, "versionId"))
        s3_reply_header(req, "x-amz-version-id", "null");
    reply_tags(req, meta.tags);
    stor_meta_free(&meta);
}

/* Authorized once the (bounded) body is read, not before as other XML
 * bodies are: s3:RequestObjectTag conditions are answered from it. The
 * key must exist first. */
static void put_object_tagging_begin(s3_req_t *req)
{
    s3_error_t err = s3_version_check(s3_req_query(req, "versionId"));
    if (err != S3E_NONE) {
        s3_reply_error(req, err, NULL);
        return;
    }
    if (!s3_bucket_lookup(req, req->bucket, &req->authz_bucket))
        return;
    stor_meta_t meta;
    stor_status_t st = stor_head(req->srv->cfg.store, req->bucket, req->key, &meta);
    if (st != STOR_OK) {
        s3_reply_error(req, s3_object_lookup_error(req, &req->authz_bucket, st), NULL);
        return;
    }
    stor_meta_free(&meta);
    req->body_kind = S3_BODY_XML;
}

/* Sets (t: a new set, possibly empty) or removes (t NULL) the object's tags
 * after checking the requester may, and replies status. */
static void object_tags_write(s3_req_t *req, const s3_tags_t *t, const char *stored, int status)
{
    req->request_tags = t;
    stor_meta_t meta;
    bool ok = s3_object_for_request(req, S3_PERM_WRITE_ACP, &meta);
    req->request_tags = NULL;
    if (!ok)
        return;
    stor_meta_free(&meta);
    stor_obj_change_t change = {.set_tags = true, .tags = stored};
    stor_status_t st =
        stor_object_change(req->srv->cfg.store, &req->authz_bucket, req->key, &change);
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return;
    }
    if (s3_req_query(req, "versionId"))
        s3_reply_header(req, "x-amz-version-id", "null");
    s3_reply_empty(req, status);
}

static void put_object_tagging_finish(s3_req_t *req)
{
    s3_tags_t t;
    char *stored;
    if (!body_tags(req, S3_TAGS_OBJECT, &t, &stored))
        return;
    object_tags_write(req, &t, stored, 200);
    s3_tags_free(&t);
    free(stored);
}

static void delete_object_tagging_begin(s3_req_t *req)
{
    object_tags_write(req, NULL, NULL, 204);
}

/* ---- default encryption ------------------------------------------------------------ */

/* The document: one byte, 1 (AES256) or 2 (aws:kms, then the keyring key's
 * name, none for the default key). */
static void get_encryption_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        return;
    buf_t doc;
    if (!config_read(req, STOR_BCFG_ENCRYPTION, &doc))
        return;
    int v = doc.len >= 1 ? ((const uint8_t *)doc.data)[0] : 0;
    if (v != 1 && v != 2) {
        buf_free(&doc);
        s3_reply_error(req, S3E_NO_SSE_CONFIG, NULL);
        return;
    }
    char kms_id[S3_SSE_KMS_ID_MAX + 1] = "";
    if (v == 2 && doc.len - 1 <= S3_SSE_KMS_ID_MAX) {
        memcpy(kms_id, (const char *)doc.data + 1, doc.len - 1);
        kms_id[doc.len - 1] = '\0';
    }
    buf_free(&doc);
    buf_t xml;
    buf_init(&xml, 4096);
    s3_xml_open(&xml, "ServerSideEncryptionConfiguration");
    buf_append_str(&xml, "<Rule><ApplyServerSideEncryptionByDefault>");
    s3_xml_elem(&xml, "SSEAlgorithm", v == 2 ? "aws:kms" : "AES256");
    if (kms_id[0])
        s3_xml_elem(&xml, "KMSMasterKeyID", kms_id);
    buf_append_str(&xml, "</ApplyServerSideEncryptionByDefault>");
    s3_xml_elem(&xml, "BucketKeyEnabled", "false");
    buf_append_str(&xml, "</Rule></ServerSideEncryptionConfiguration>");
    s3_reply_xml(req, 200, &xml);
}

/* One rule whose default is AES256 (SSE-S3) or aws:kms (with or without a
 * KMSMasterKeyID of the keyring); refused when this server could not honour
 * it on a write (no master keys, no keyring, no such key). */
static void put_encryption_finish(s3_req_t *req)
{
    static const char *const fields[] = {"ApplyServerSideEncryptionByDefault/SSEAlgorithm",
                                         "ApplyServerSideEncryptionByDefault/KMSMasterKeyID"};
    xml_list_entry_t *e;
    size_t n, n_items;
    if (xml_parse_list(req->body.data ? req->body.data : "", req->body.len,
                       "ServerSideEncryptionConfiguration", "Rule", fields, 2, 8, &e, &n,
                       &n_items) != 0) {
        s3_reply_error(req, S3E_MALFORMED_XML, NULL);
        return;
    }
    const char *alg = NULL, *kid = NULL;
    bool ok = n_items == 1;
    for (size_t i = 0; i < n && ok; i++) {
        const char **slot = e[i].field == 0 ? &alg : &kid;
        ok = !*slot;
        *slot = e[i].value;
    }
    const s3_sse_keys_t *ring = req->srv->cfg.sse_kms_keys;
    if (ok && alg && strcmp(alg, "aws:kms") == 0) {
        uint8_t doc[1 + S3_SSE_KMS_ID_MAX] = {2};
        const char *name = kid ? s3_sse_kms_key_name(kid) : "";
        bool known = false;
        for (size_t i = 0; ring && i < ring->n; i++)
            known |= !*name || strcmp(ring->id[i], name) == 0;
        if (!ring || ring->n == 0)
            s3_reply_error(req, S3E_NOT_IMPLEMENTED,
                           "SSE-KMS needs a key provider, and this server has none: its operator "
                           "sets sse.kms_keyring_file (a local keyring).");
        else if (!known || strlen(name) > S3_SSE_KMS_ID_MAX)
            s3_reply_error(req, S3E_KMS_NOT_FOUND, NULL);
        else {
            memcpy(doc + 1, name, strlen(name));
            config_write(req, STOR_BCFG_ENCRYPTION, doc, 1 + strlen(name), 200);
        }
        xml_list_free(e, n);
        return;
    }
    uint8_t byte = 1;
    if (!ok || !alg || kid)
        s3_reply_error(req, S3E_MALFORMED_XML, NULL);
    else if (strcmp(alg, "aws:kms:dsse") == 0)
        s3_reply_error(req, S3E_NOT_IMPLEMENTED,
                       "Dual-layer SSE-KMS (aws:kms:dsse) is not implemented by s3rdmad.");
    else if (strcmp(alg, "AES256") != 0)
        s3_reply_error(req, S3E_MALFORMED_XML, NULL);
    else if (!req->srv->cfg.sse_keys || req->srv->cfg.sse_keys->n == 0)
        s3_reply_error(req, S3E_NOT_IMPLEMENTED,
                       "Server-side encryption with server-managed keys (SSE-S3) is not "
                       "configured on this server: its operator sets sse.master_key_file.");
    else
        config_write(req, STOR_BCFG_ENCRYPTION, &byte, 1, 200);
    xml_list_free(e, n);
}

static void delete_encryption_begin(s3_req_t *req)
{
    config_delete(req, STOR_BCFG_ENCRYPTION);
}

/* ---- lifecycle ------------------------------------------------------------------------ */

/* The whole LifecycleConfiguration document of cfg, appended to xml. */
static void lifecycle_xml(const s3_lc_t *cfg, buf_t *xml)
{
    s3_xml_open(xml, "LifecycleConfiguration");
    s3_lc_xml(cfg, xml);
    buf_append_str(xml, "</LifecycleConfiguration>");
}

static void reply_lifecycle(void *ctx, const s3_lc_t *cfg)
{
    s3_req_t *req = ctx;
    if (cfg->n_rules == 0) {
        s3_reply_error(req, S3E_NO_SUCH_LIFECYCLE, NULL);
        return;
    }
    buf_t xml;
    buf_init(&xml, 2 * S3_LC_MAX_BYTES);
    lifecycle_xml(cfg, &xml);
    s3_reply_xml(req, 200, &xml);
}

static void get_lifecycle_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        return;
    s3_error_t err = s3_bucket_lifecycle(req, &req->authz_bucket, reply_lifecycle, req);
    if (err != S3E_NONE)
        s3_reply_error(req, err, NULL);
}

static void put_lifecycle_finish(s3_req_t *req)
{
    s3_lc_t cfg;
    char why[512];
    s3_error_t err = s3_lc_from_xml(req->body.data, req->body.len, &cfg, why, sizeof why);
    if (err != S3E_NONE) {
        s3_reply_error(req, err, why);
        return;
    }
    buf_t doc;
    buf_init(&doc, 2 * S3_LC_MAX_BYTES);
    lifecycle_xml(&cfg, &doc);
    s3_lc_free(&cfg);
    config_write(req, STOR_BCFG_LIFECYCLE, doc.data, doc.len, 200);
    buf_free(&doc);
}

static void delete_lifecycle_begin(s3_req_t *req)
{
    config_delete(req, STOR_BCFG_LIFECYCLE);
}

/* What x-amz-expiration or the abort headers are worked out for. */
typedef struct lc_ask {
    s3_req_t *req;
    const char *key;
    const stor_meta_t *meta; /* NULL: an upload initiated at initiated_s */
    int64_t initiated_s;
} lc_ask_t;

static void add_lifecycle_headers(void *ctx, const s3_lc_t *cfg)
{
    const lc_ask_t *a = ctx;
    s3_req_t *req = a->req;
    const s3_lc_rule_t *rule;
    if (a->meta) {
        int64_t t = s3_lc_expiry_of(cfg, a->key, a->meta, req->srv->cfg.lifecycle_day_s, &rule);
        char value[S3_LC_MAX_ID + 96];
        if (t >= 0) {
            s3_lc_expiration_header(t, rule, value, sizeof value);
            s3_reply_header(req, "x-amz-expiration", value);
        }
        return;
    }
    int64_t t = s3_lc_abort_due(cfg, a->key, a->initiated_s, req->srv->cfg.lifecycle_day_s, &rule);
    if (t >= 0) {
        char date[40];
        date_format_http(t, date);
        s3_reply_header(req, "x-amz-abort-date", date);
        s3_reply_header(req, "x-amz-abort-rule-id", rule->id);
    }
}

void s3_lifecycle_reply_header(s3_req_t *req, const char *key, const stor_meta_t *meta)
{
    if (!(req->authz_bucket.cfg_mask & (1u << STOR_BCFG_LIFECYCLE)))
        return;
    lc_ask_t a = {req, key, meta, 0};
    s3_bucket_lifecycle(req, &req->authz_bucket, add_lifecycle_headers, &a);
}

void s3_lifecycle_abort_headers(s3_req_t *req, const char *key, int64_t initiated_s)
{
    if (!(req->authz_bucket.cfg_mask & (1u << STOR_BCFG_LIFECYCLE)))
        return;
    lc_ask_t a = {req, key, NULL, initiated_s};
    s3_bucket_lifecycle(req, &req->authz_bucket, add_lifecycle_headers, &a);
}

/* ---- configurations s3rdmad does not keep ------------------------------------------- */

static void reply_absent(s3_req_t *req, s3_error_t err)
{
    if (s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        s3_reply_error(req, err, NULL);
}

static void get_object_lock_begin(s3_req_t *req)
{
    reply_absent(req, S3E_NO_OBJECT_LOCK_CONFIG);
}

static void put_config_begin(s3_req_t *req)
{
    if (s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        s3_reply_error(req, S3E_NOT_IMPLEMENTED,
                       "This bucket configuration is not implemented by s3rdmad.");
}

static void delete_config_begin(s3_req_t *req)
{
    /* Nothing is configured, so there is nothing to delete: S3's answer. */
    if (s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        s3_reply_empty(req, 204);
}

const s3_op_t s3_op_get_bucket_versioning = {"GetBucketVersioning", get_versioning_begin, NULL};
const s3_op_t s3_op_put_bucket_versioning = {"PutBucketVersioning", put_versioning_begin,
                                             put_versioning_finish};
const s3_op_t s3_op_get_bucket_acl = {"GetBucketAcl", get_bucket_acl_begin, NULL};
const s3_op_t s3_op_put_bucket_acl = {"PutBucketAcl", put_bucket_acl_begin, put_bucket_acl_finish};
const s3_op_t s3_op_get_object_acl = {"GetObjectAcl", get_object_acl_begin, NULL};
const s3_op_t s3_op_put_object_acl = {"PutObjectAcl", put_object_acl_begin, put_object_acl_finish};
const s3_op_t s3_op_get_bucket_policy = {"GetBucketPolicy", get_policy_begin, NULL};
const s3_op_t s3_op_put_bucket_policy = {"PutBucketPolicy", put_policy_begin, put_policy_finish};
const s3_op_t s3_op_delete_bucket_policy = {"DeleteBucketPolicy", delete_policy_begin, NULL};
const s3_op_t s3_op_get_bucket_policy_status = {"GetBucketPolicyStatus", get_policy_status_begin,
                                                NULL};
const s3_op_t s3_op_get_public_access_block = {"GetPublicAccessBlock", get_pab_begin, NULL};
const s3_op_t s3_op_put_public_access_block = {"PutPublicAccessBlock", owner_config_begin,
                                               put_pab_finish};
const s3_op_t s3_op_delete_public_access_block = {"DeletePublicAccessBlock", delete_pab_begin,
                                                  NULL};
const s3_op_t s3_op_get_bucket_ownership = {"GetBucketOwnershipControls", get_ownership_begin,
                                            NULL};
const s3_op_t s3_op_put_bucket_ownership = {"PutBucketOwnershipControls", owner_config_begin,
                                            put_ownership_finish};
const s3_op_t s3_op_delete_bucket_ownership = {"DeleteBucketOwnershipControls",
                                               delete_ownership_begin, NULL};
const s3_op_t s3_op_get_bucket_cors = {"GetBucketCors", get_cors_begin, NULL};
const s3_op_t s3_op_put_bucket_cors = {"PutBucketCors", owner_config_begin, put_cors_finish};
const s3_op_t s3_op_delete_bucket_cors = {"DeleteBucketCors", delete_cors_begin, NULL};
const s3_op_t s3_op_cors_preflight = {"CorsPreflight", preflight_begin, NULL};
const s3_op_t s3_op_get_bucket_tagging = {"GetBucketTagging", get_bucket_tagging_begin, NULL};
const s3_op_t s3_op_put_bucket_tagging = {"PutBucketTagging", owner_config_begin,
                                          put_bucket_tagging_finish};
const s3_op_t s3_op_delete_bucket_tagging = {"DeleteBucketTagging", delete_bucket_tagging_begin,
                                             NULL};
const s3_op_t s3_op_get_bucket_lifecycle = {"GetBucketLifecycleConfiguration", get_lifecycle_begin,
                                            NULL};
const s3_op_t s3_op_put_bucket_lifecycle = {"PutBucketLifecycleConfiguration", owner_config_begin,
                                            put_lifecycle_finish};
const s3_op_t s3_op_delete_bucket_lifecycle = {"DeleteBucketLifecycle", delete_lifecycle_begin,
                                               NULL};
const s3_op_t s3_op_get_object_lock_config = {"GetObjectLockConfiguration", get_object_lock_begin,
                                              NULL};
const s3_op_t s3_op_get_bucket_encryption = {"GetBucketEncryption", get_encryption_begin, NULL};
const s3_op_t s3_op_put_bucket_encryption = {"PutBucketEncryption", owner_config_begin,
                                             put_encryption_finish};
const s3_op_t s3_op_delete_bucket_encryption = {"DeleteBucketEncryption", delete_encryption_begin,
                                                NULL};
const s3_op_t s3_op_put_bucket_config = {"PutBucketConfiguration", put_config_begin, NULL};
const s3_op_t s3_op_delete_bucket_config = {"DeleteBucketConfiguration", delete_config_begin, NULL};
const s3_op_t s3_op_get_object_tagging = {"GetObjectTagging", get_object_tagging_begin, NULL};
const s3_op_t s3_op_put_object_tagging = {"PutObjectTagging", put_object_tagging_begin,
                                          put_object_tagging_finish};
const s3_op_t s3_op_delete_object_tagging = {"DeleteObjectTagging", delete_object_tagging_begin,
                                             NULL};
