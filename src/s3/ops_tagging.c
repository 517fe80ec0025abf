/* Tag sets of buckets and objects (tagging.c parses and bounds them; a
 * bucket's kept as a bucket configuration document, an object's in its
 * record): Get/Put/Delete BucketTagging and ObjectTagging. */

#include <stdlib.h>
#include <string.h>

#include "s3/s3_request.h"
#include "s3/tagging.h"

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
    if (!s3_config_read(req, STOR_BCFG_TAGGING, &doc))
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
    s3_config_write(req, STOR_BCFG_TAGGING, stored, stored ? strlen(stored) : 0, 204);
    free(stored);
}

static void delete_bucket_tagging_begin(s3_req_t *req)
{
    s3_config_delete(req, STOR_BCFG_TAGGING);
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
    /* The version asked for (its x-amz-version-id is set above), else the latest. */
    stor_obj_change_t change = {
        .version_id = s3_req_query(req, "versionId"), .set_tags = true, .tags = stored};
    stor_status_t st =
        stor_object_change(req->srv->cfg.store, &req->authz_bucket, req->key, &change);
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return;
    }
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

const s3_op_t s3_op_get_bucket_tagging = {"GetBucketTagging", get_bucket_tagging_begin, NULL};
const s3_op_t s3_op_put_bucket_tagging = {"PutBucketTagging", s3_owner_config_begin,
                                          put_bucket_tagging_finish};
const s3_op_t s3_op_delete_bucket_tagging = {"DeleteBucketTagging", delete_bucket_tagging_begin,
                                             NULL};
const s3_op_t s3_op_get_object_tagging = {"GetObjectTagging", get_object_tagging_begin, NULL};
const s3_op_t s3_op_put_object_tagging = {"PutObjectTagging", put_object_tagging_begin,
                                          put_object_tagging_finish};
const s3_op_t s3_op_delete_object_tagging = {"DeleteObjectTagging", delete_object_tagging_begin,
                                             NULL};
