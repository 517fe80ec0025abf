/* ACLs of buckets and objects (canned ACLs and explicit grants, read and
 * set): GetBucketAcl, PutBucketAcl, GetObjectAcl, PutObjectAcl. The ACLs
 * themselves (parsed, decided, written) are access.c's and acl.c's. */

#include "s3/s3_request.h"

static void get_bucket_acl_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_READ_ACP, &req->authz_bucket))
        return;
    buf_t xml;
    buf_init(&xml, 64 * 1024);
    s3_error_t err = s3_bucket_acl_xml(req, &req->authz_bucket, &xml);
    if (err != S3E_NONE) {
        buf_free(&xml);
        s3_reply_error(req, err, NULL);
        return;
    }
    s3_reply_xml(req, 200, &xml);
}

/* The ACL a PutBucketAcl / PutObjectAcl sets: x-amz-acl or x-amz-grant-*
 * headers, or the body. */
static void put_acl_begin(s3_req_t *req)
{
    req->body_kind = S3_BODY_XML;
}

/* Decides the new ACL of a resource with this owner from the request, and
 * checks the bucket's controls allow it; replies and returns false on
 * error (*acl_p then holds nothing). */
static bool acl_requested(s3_req_t *req, bool object, const char *owner, const char *bucket_owner,
                          s3_new_acl_t *acl_p)
{
    const char *why = NULL;
    s3_error_t err;
    bool has_body = req->body.len > 0;
    bool by_header = s3_acl_headers_given(req);
    if (by_header && has_body) {
        s3_reply_error(req, S3E_UNEXPECTED_CONTENT,
                       "This request does not support content with x-amz-acl or x-amz-grant-*.");
        return false;
    }
    if (!by_header && !has_body) {
        s3_reply_error(req, S3E_MISSING_SECURITY_HEADER,
                       "Your request was missing a required header: x-amz-acl, x-amz-grant-* or "
                       "an AccessControlPolicy body.");
        return false;
    }
    err = by_header ? s3_acl_from_headers(req, object, acl_p, &why)
                    : s3_acl_from_body(req, object, owner, bucket_owner, acl_p, &why);
    if (err == S3E_NONE && (err = s3_acl_change_check(req, acl_p, &why)) != S3E_NONE)
        s3_new_acl_free(acl_p);
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
    s3_new_acl_t acl;
    if (!acl_requested(req, false, req->authz_bucket.owner, NULL, &acl))
        return;
    stor_status_t st =
        stor_bucket_set_acl(req->srv->cfg.store, &req->authz_bucket, acl.canned, acl.grants);
    s3_new_acl_free(&acl);
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return;
    }
    s3_reply_empty(req, 200);
}

static void get_object_acl_begin(s3_req_t *req)
{
    stor_meta_t meta;
    if (!s3_object_for_request(req, S3_PERM_READ_ACP, &meta))
        return;
    buf_t xml;
    buf_init(&xml, 64 * 1024);
    s3_error_t err = s3_object_acl_xml(req, &req->authz_bucket, &meta, &xml);
    stor_meta_free(&meta);
    if (err != S3E_NONE) {
        buf_free(&xml);
        s3_reply_error(req, err, NULL);
        return;
    }
    s3_reply_xml(req, 200, &xml);
}

/* Authorized before the body is read, like every operation with an XML
 * body: a body the requester may not send is never buffered. */
static void put_object_acl_begin(s3_req_t *req)
{
    stor_meta_t meta; /* the reply's version header comes with the finish's look */
    if (!s3_object_version_for_request(req, S3_PERM_WRITE_ACP, &meta))
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
    s3_new_acl_t acl;
    bool ok = acl_requested(req, true, s3_object_owner(&req->authz_bucket, &meta),
                            req->authz_bucket.owner, &acl);
    stor_meta_free(&meta);
    if (!ok)
        return;
    stor_obj_change_t change = {.version_id = s3_req_query(req, "versionId"),
                                .set_acl = true,
                                .acl = acl.canned,
                                .grants = acl.grants};
    stor_status_t st =
        stor_object_change(req->srv->cfg.store, &req->authz_bucket, req->key, &change);
    s3_new_acl_free(&acl);
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return;
    }
    s3_reply_empty(req, 200);
}

const s3_op_t s3_op_get_bucket_acl = {"GetBucketAcl", get_bucket_acl_begin, NULL};
const s3_op_t s3_op_put_bucket_acl = {"PutBucketAcl", put_bucket_acl_begin, put_bucket_acl_finish};
const s3_op_t s3_op_get_object_acl = {"GetObjectAcl", get_object_acl_begin, NULL};
const s3_op_t s3_op_put_object_acl = {"PutObjectAcl", put_object_acl_begin, put_object_acl_finish};
