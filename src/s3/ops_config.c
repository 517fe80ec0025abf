/* Bucket configuration: versioning (the bucket's state, kept by storage:
 * stor_bucket_set_versioning), bucket policies (policy.c parses them, the
 * store keeps their canonical text with the bucket), public-access blocks and
 * ownership controls. Also the helpers every configuration's operations
 * share (s3_config_*, s3_object_for_request); the other configurations have
 * their own ops_<name>.c. */

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "s3/policy.h"
#include "s3/s3_request.h"
#include "s3/xml_in.h"

/* ---- what every configuration's operations share ------------------------------- */

bool s3_config_read(s3_req_t *req, stor_bucket_cfg_t kind, buf_t *doc)
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

void s3_config_write(s3_req_t *req, stor_bucket_cfg_t kind, const void *data, size_t len,
                     int status)
{
    stor_status_t st =
        stor_bucket_config_set(req->srv->cfg.store, &req->authz_bucket, kind, data, len);
    if (st != STOR_OK)
        s3_reply_error(req, s3_error_from_stor(st), NULL);
    else
        s3_reply_empty(req, status);
}

void s3_config_delete(s3_req_t *req, stor_bucket_cfg_t kind)
{
    if (s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        s3_config_write(req, kind, NULL, 0, 204);
}

void s3_owner_config_begin(s3_req_t *req)
{
    if (s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        req->body_kind = S3_BODY_XML;
}

bool s3_object_version_for_request(s3_req_t *req, s3_perm_t perm, stor_meta_t *meta_p)
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
    return true;
}

bool s3_object_for_request(s3_req_t *req, s3_perm_t perm, stor_meta_t *meta_p)
{
    if (!s3_object_version_for_request(req, perm, meta_p))
        return false;
    if (s3_req_query(req, "versionId"))
        s3_version_headers(req, &req->authz_bucket, meta_p, true);
    return true;
}

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
    if (s3_xml_parse_leaves(req->body.data ? req->body.data : "", req->body.len,
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
    if (err == S3E_NONE)
        err = s3_lock_versioning_check(req, state, &why);
    if (err == S3E_NONE) {
        err = s3_error_from_stor(
            stor_bucket_set_versioning(req->srv->cfg.store, &req->authz_bucket, state));
    }
    /* Again after: object lock enabled meanwhile keeps the bucket Enabled. */
    if (err == S3E_NONE)
        err = s3_lock_versioning_check(req, state, &why);
    if (err != S3E_NONE) {
        s3_reply_error(req, err, why);
        return;
    }
    s3_reply_empty(req, 200);
}

/* ---- bucket policies ------------------------------------------------------------- */

/* The bucket's public-access block flags (S3_PAB_*; 0 when unset), or -1
 * after replying an error. */
static int bucket_pab(s3_req_t *req)
{
    buf_t doc;
    if (!s3_config_read(req, STOR_BCFG_PUBLIC_ACCESS_BLOCK, &doc))
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
    if (!s3_config_read(req, STOR_BCFG_POLICY, &doc))
        return;
    if (doc.len == 0) {
        buf_free(&doc);
        s3_reply_error(req, S3E_NO_SUCH_BUCKET_POLICY, NULL);
        return;
    }
    s3_reply_header(req, "Content-Type", "application/json");
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
        s3_config_write(req, STOR_BCFG_POLICY, canon, strlen(canon), 204);
    free(canon);
}

static void delete_policy_begin(s3_req_t *req)
{
    s3_config_delete(req, STOR_BCFG_POLICY);
}

static void get_policy_status_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        return;
    buf_t doc;
    if (!s3_config_read(req, STOR_BCFG_POLICY, &doc))
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

/* The one-byte document kind holds, or -1 (absent: replied err_absent) or
 * -2 (replied an error). */
static int byte_config(s3_req_t *req, stor_bucket_cfg_t kind, s3_error_t err_absent)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        return -2;
    buf_t doc;
    if (!s3_config_read(req, kind, &doc))
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
    if (s3_xml_parse_leaves(req->body.data ? req->body.data : "", req->body.len,
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
        s3_config_write(req, STOR_BCFG_PUBLIC_ACCESS_BLOCK, &flags, 1, 200);
}

static void delete_pab_begin(s3_req_t *req)
{
    s3_config_delete(req, STOR_BCFG_PUBLIC_ACCESS_BLOCK);
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
    if (s3_xml_parse_leaves(req->body.data ? req->body.data : "", req->body.len,
                            "OwnershipControls", path, 1, &v) != 0) {
        s3_reply_error(req, S3E_MALFORMED_XML, NULL);
        return;
    }
    int rule = s3_ownership_parse(v);
    free(v);
    uint8_t byte = (uint8_t)rule;
    /* BucketOwnerEnforced turns ACLs off: S3 refuses it while the bucket's
     * own ACL grants anything beyond its owner's full control. */
    const stor_bucket_t *b = &req->authz_bucket;
    bool bucket_acl = b->acl != STOR_ACL_PRIVATE || (b->cfg_mask & (1u << STOR_BCFG_ACL_GRANTS));
    if (rule < 0)
        s3_reply_error(req, S3E_MALFORMED_XML, NULL);
    else if (rule == S3_OWNERSHIP_ENFORCED && bucket_acl)
        s3_reply_error(req, S3E_ACL_WITH_OWNERSHIP, NULL);
    else
        s3_config_write(req, STOR_BCFG_OWNERSHIP, &byte, 1, 200);
}

static void delete_ownership_begin(s3_req_t *req)
{
    s3_config_delete(req, STOR_BCFG_OWNERSHIP);
}

const s3_op_t s3_op_get_bucket_versioning = {"GetBucketVersioning", get_versioning_begin, NULL};
const s3_op_t s3_op_put_bucket_versioning = {"PutBucketVersioning", put_versioning_begin,
                                             put_versioning_finish};
const s3_op_t s3_op_get_bucket_policy = {"GetBucketPolicy", get_policy_begin, NULL};
const s3_op_t s3_op_put_bucket_policy = {"PutBucketPolicy", put_policy_begin, put_policy_finish};
const s3_op_t s3_op_delete_bucket_policy = {"DeleteBucketPolicy", delete_policy_begin, NULL};
const s3_op_t s3_op_get_bucket_policy_status = {"GetBucketPolicyStatus", get_policy_status_begin,
                                                NULL};
const s3_op_t s3_op_get_public_access_block = {"GetPublicAccessBlock", get_pab_begin, NULL};
const s3_op_t s3_op_put_public_access_block = {"PutPublicAccessBlock", s3_owner_config_begin,
                                               put_pab_finish};
const s3_op_t s3_op_delete_public_access_block = {"DeletePublicAccessBlock", delete_pab_begin,
                                                  NULL};
const s3_op_t s3_op_get_bucket_ownership = {"GetBucketOwnershipControls", get_ownership_begin,
                                            NULL};
const s3_op_t s3_op_put_bucket_ownership = {"PutBucketOwnershipControls", s3_owner_config_begin,
                                            put_ownership_finish};
const s3_op_t s3_op_delete_bucket_ownership = {"DeleteBucketOwnershipControls",
                                               delete_ownership_begin, NULL};
