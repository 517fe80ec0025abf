/* Bucket operations: ListBuckets, CreateBucket, HeadBucket, DeleteBucket,
 * GetBucketLocation, and the ownership check every bucket-scoped request
 * goes through. */
#include <stdlib.h>
#include <string.h>

#include "s3/s3_request.h"
#include "s3/s3_util.h"
#include "s3/xml_in.h"

s3_error_t s3_bucket_access(s3_req_t *req, const char *bucket, stor_bucket_t *bucket_p)
{
    stor_bucket_t b;
    stor_status_t st = stor_bucket_get(req->srv->cfg.store, bucket, &b);
    if (st != STOR_OK)
        return s3_error_from_stor(st);
    if (strcmp(b.owner, req->user->access_key) != 0)
        return S3E_ACCESS_DENIED;
    if (bucket_p)
        *bucket_p = b;
    return S3E_NONE;
}

bool s3_bucket_authorize(s3_req_t *req, const char *bucket, stor_bucket_t *bucket_p)
{
    s3_error_t err = s3_bucket_access(req, bucket, bucket_p);
    if (err != S3E_NONE)
        s3_reply_error(req, err, NULL);
    return err == S3E_NONE;
}

static void list_buckets_begin(s3_req_t *req)
{
    stor_bucket_t *buckets = NULL;
    size_t n = 0;
    stor_status_t st = stor_bucket_list(req->srv->cfg.store, &buckets, &n);
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return;
    }
    buf_t xml;
    buf_init(&xml, 64 * 1024 * 1024);
    s3_xml_open(&xml, "ListAllMyBucketsResult");
    s3_xml_principal(&xml, "Owner", req->user->access_key);
    buf_append_str(&xml, "<Buckets>");
    for (size_t i = 0; i < n; i++) {
        if (strcmp(buckets[i].owner, req->user->access_key) != 0)
            continue;
        char date[32];
        s3_time_iso8601(buckets[i].created * 1000, date);
        buf_append_str(&xml, "<Bucket><Name>");
        buf_append_xml(&xml, buckets[i].name);
        buf_printf(&xml, "</Name><CreationDate>%s</CreationDate></Bucket>", date);
    }
    buf_append_str(&xml, "</Buckets></ListAllMyBucketsResult>");
    free(buckets);
    s3_reply_xml(req, 200, &xml);
}

static void create_bucket_begin(s3_req_t *req)
{
    if (!s3_bucket_name_valid(req->bucket)) {
        s3_reply_error(req, S3E_INVALID_BUCKET_NAME, NULL);
        return;
    }
    const char *acl = s3_req_header(req, "x-amz-acl");
    if (acl && strcmp(acl, "private") != 0 && strcmp(acl, "public-read") != 0 &&
        strcmp(acl, "public-read-write") != 0 && strcmp(acl, "authenticated-read") != 0) {
        s3_reply_error(req, S3E_INVALID_ARGUMENT, NULL);
        return;
    }
    if (s3_req_header(req, "x-amz-bucket-object-lock-enabled")) {
        s3_reply_error(req, S3E_NOT_IMPLEMENTED, "Object lock is not implemented.");
        return;
    }
    req->body_kind = S3_BODY_XML;
}

static void create_bucket_finish(s3_req_t *req)
{
    char location[64];
    if (xml_parse_create_bucket(req->body.data ? req->body.data : "", req->body.len, location,
                                sizeof(location)) != 0) {
        s3_reply_error(req, S3E_MALFORMED_XML, NULL);
        return;
    }
    stor_status_t st = stor_bucket_create(req->srv->cfg.store, req->bucket, req->user->access_key);
    if (st == STOR_ERR_BUCKET_EXISTS) {
        stor_bucket_t b;
        bool mine = stor_bucket_get(req->srv->cfg.store, req->bucket, &b) == STOR_OK &&
                    strcmp(b.owner, req->user->access_key) == 0;
        s3_reply_error(req, mine ? S3E_BUCKET_OWNED : S3E_BUCKET_EXISTS, NULL);
        return;
    }
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return;
    }
    s3_reply_headerf(req, "Location", "/%s", req->bucket);
    s3_reply_empty(req, 200);
}

static void head_bucket_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, &req->authz_bucket))
        return;
    s3_reply_header(req, "x-amz-bucket-region", req->srv->cfg.region);
    s3_reply_empty(req, 200);
}

static void delete_bucket_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, &req->authz_bucket))
        return;
    stor_status_t st = stor_bucket_delete(req->srv->cfg.store, &req->authz_bucket);
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return;
    }
    s3_reply_empty(req, 204);
}

static void get_location_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, &req->authz_bucket))
        return;
    buf_t xml;
    buf_init(&xml, 4096);
    s3_xml_open(&xml, "LocationConstraint");
    /* us-east-1 is reported as an empty constraint, as S3 does. */
    if (strcmp(req->srv->cfg.region, "us-east-1") != 0)
        buf_append_xml(&xml, req->srv->cfg.region);
    buf_append_str(&xml, "</LocationConstraint>");
    s3_reply_xml(req, 200, &xml);
}

const s3_op_t s3_op_list_buckets = {"ListBuckets", list_buckets_begin, NULL};
const s3_op_t s3_op_create_bucket = {"CreateBucket", create_bucket_begin, create_bucket_finish};
const s3_op_t s3_op_head_bucket = {"HeadBucket", head_bucket_begin, NULL};
const s3_op_t s3_op_delete_bucket = {"DeleteBucket", delete_bucket_begin, NULL};
const s3_op_t s3_op_get_bucket_location = {"GetBucketLocation", get_location_begin, NULL};
