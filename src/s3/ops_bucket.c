/* Bucket operations: ListBuckets, CreateBucket, HeadBucket, DeleteBucket,
 * GetBucketLocation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/date.h"
#include "common/hash.h"
#include "common/s3r_limits.h"
#include "s3/s3_request.h"
#include "s3/s3_util.h"
#include "s3/xml_in.h"

/* ListBuckets' page size when the request names none: all of a user's
 * buckets, as S3 answers for every parameter combination (its default page
 * is 10,000, S3R_MAX_BUCKETS_PER_USER here). */
#define LIST_BUCKETS_MAX S3R_MAX_BUCKETS_PER_USER

/* Reads ListBuckets' max-buckets into *max_p (LIST_BUCKETS_MAX when absent)
 * and its continuation-token into after (the name the last page ended at,
 * "" when absent); replies and returns false when one is invalid. The token
 * is the base64url of a bucket name: opaque to clients, as S3's is. */
static bool list_buckets_query(s3_req_t *req, long *max_p, char after[S3R_MAX_BUCKET_NAME + 1])
{
    const char *mb = s3_req_query(req, "max-buckets");
    const char *token = s3_req_query(req, "continuation-token");
    *max_p = LIST_BUCKETS_MAX;
    if (mb) {
        char *end;
        long v = strtol(mb, &end, 10);
        if (!*mb || *end || v < 1 || v > LIST_BUCKETS_MAX) {
            s3_reply_error(req, S3E_INVALID_ARGUMENT,
                           "Argument max-buckets must be an integer between 1 and 10000");
            return false;
        }
        *max_p = v;
    }
    after[0] = '\0';
    if (token && *token) {
        uint8_t raw[S3R_MAX_BUCKET_NAME + 1];
        long n = hash_base64url_decode(token, strlen(token), raw, S3R_MAX_BUCKET_NAME);
        if (n <= 0 || memchr(raw, '\0', (size_t)n)) {
            s3_reply_error(req, S3E_INVALID_ARGUMENT,
                           "The continuation token provided is incorrect");
            return false;
        }
        memcpy(after, raw, (size_t)n);
        after[n] = '\0';
    }
    return true;
}

/* ListBuckets: the requester's buckets in name order, those under prefix
 * after the continuation token, at most max-buckets of them, with a
 * ContinuationToken only when more remain (and Prefix echoed when sent), as
 * S3 answers. A bucket-region other than the server's lists none. */
static void list_buckets_begin(s3_req_t *req)
{
    if (!req->user) {
        s3_reply_error(req, S3E_ACCESS_DENIED, NULL);
        return;
    }
    long max;
    char after[S3R_MAX_BUCKET_NAME + 1];
    if (!list_buckets_query(req, &max, after))
        return;
    const char *prefix = s3_req_query(req, "prefix");
    const char *region = s3_req_query(req, "bucket-region");
    bool other_region = region && strcmp(region, req->srv->cfg.region) != 0;
    size_t plen = prefix ? strlen(prefix) : 0;
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
    s3_xml_principal(req->srv, &xml, "Owner", req->user->access_key);
    buf_append_str(&xml, "<Buckets>");
    long listed = 0;
    const char *last = NULL;
    bool more = false;
    for (size_t i = 0; i < n && !other_region; i++) {
        const stor_bucket_t *b = &buckets[i];
        if (strcmp(b->owner, req->user->access_key) != 0 ||
            strncmp(b->name, prefix ? prefix : "", plen) != 0 || strcmp(b->name, after) <= 0)
            continue;
        if (listed == max) {
            more = true;
            break;
        }
        char date[32];
        date_format_iso8601(b->created * 1000, date);
        buf_append_str(&xml, "<Bucket><Name>");
        buf_append_xml(&xml, b->name);
        buf_printf(&xml, "</Name><CreationDate>%s</CreationDate>", date);
        s3_xml_elem(&xml, "BucketRegion", req->srv->cfg.region);
        buf_append_str(&xml, "</Bucket>");
        last = b->name;
        listed++;
    }
    buf_append_str(&xml, "</Buckets>");
    if (more) {
        char tok[2 * S3R_MAX_BUCKET_NAME + 8];
        hash_base64url_encode((const uint8_t *)last, strlen(last), tok);
        s3_xml_elem(&xml, "ContinuationToken", tok);
    }
    if (prefix)
        s3_xml_elem(&xml, "Prefix", prefix);
    buf_append_str(&xml, "</ListAllMyBucketsResult>");
    free(buckets);
    s3_reply_xml(req, 200, &xml);
}

static void create_bucket_begin(s3_req_t *req)
{
    if (!s3_bucket_name_valid(req->bucket)) {
        s3_reply_error(req, S3E_INVALID_BUCKET_NAME, NULL);
        return;
    }
    if (!req->user) {
        s3_reply_error(req, S3E_ACCESS_DENIED, NULL);
        return;
    }
    s3_new_acl_t acl;
    const char *why = NULL;
    s3_error_t err = s3_acl_from_headers(req, false, &acl, &why);
    if (err != S3E_NONE) {
        s3_reply_error(req, err, why);
        return;
    }
    bool private = acl.canned == STOR_ACL_PRIVATE && !acl.grants;
    s3_new_acl_free(&acl);
    int own = s3_ownership_from_header(req);
    if (own < 0) {
        s3_reply_error(req, S3E_INVALID_ARGUMENT, "Invalid x-amz-object-ownership header.");
        return;
    }
    if (own == S3_OWNERSHIP_ENFORCED && !private) {
        s3_reply_error(req, S3E_ACL_WITH_OWNERSHIP, NULL);
        return;
    }
    req->body_kind = S3_BODY_XML;
}

/* Whether the requester owns max_buckets_per_user buckets already. The
 * count is read, not locked: creates racing at the bound may pass it by as
 * many as run at once (each needs a connection or a native slot). */
static bool user_bucket_quota_full(s3_req_t *req, s3_error_t *err_p)
{
    stor_bucket_t *buckets = NULL;
    size_t n = 0, mine = 0;
    stor_status_t st = stor_bucket_list(req->srv->cfg.store, &buckets, &n);
    *err_p = s3_error_from_stor(st);
    for (size_t i = 0; st == STOR_OK && i < n; i++)
        mine += strcmp(buckets[i].owner, req->user->access_key) == 0;
    free(buckets);
    unsigned max = req->srv->cfg.max_buckets_per_user ? req->srv->cfg.max_buckets_per_user
                                                      : S3R_MAX_BUCKETS_PER_USER;
    return st == STOR_OK && mine >= max;
}

/* CreateBucket's work once its body is read, with the ACL asked for. */
static void create_bucket_with(s3_req_t *req, const s3_new_acl_t *acl)
{
    const char *why = NULL;
    stor_t *store = req->srv->cfg.store;
    stor_bucket_t b;
    s3_error_t err = S3E_NONE;
    bool exists = stor_bucket_get(store, req->bucket, &b) == STOR_OK;
    if (!exists && user_bucket_quota_full(req, &err)) {
        s3_reply_error(req, S3E_TOO_MANY_BUCKETS, NULL);
        return;
    }
    if (err != S3E_NONE) {
        s3_reply_error(req, err, NULL);
        return;
    }
    stor_status_t st = stor_bucket_create(store, req->bucket, req->user->access_key);
    if (st == STOR_ERR_BUCKET_EXISTS) {
        bool mine = stor_bucket_get(store, req->bucket, &b) == STOR_OK &&
                    strcmp(b.owner, req->user->access_key) == 0;
        /* us-east-1's legacy answer to re-creating your own bucket: 200, the
         * contents untouched, the ACL reset to the one asked for. */
        if (!mine || strcmp(req->srv->cfg.region, "us-east-1") != 0) {
            s3_reply_error(req, mine ? S3E_BUCKET_OWNED : S3E_BUCKET_EXISTS, NULL);
            return;
        }
        req->authz_bucket = b; /* its public-access block and ownership controls apply */
        err = s3_acl_change_check(req, acl, &why);
        if (err != S3E_NONE) {
            s3_reply_error(req, err, why);
            return;
        }
        st = stor_bucket_set_acl(store, &b, acl->canned, acl->grants);
    } else if (st == STOR_OK) {
        /* Created private, without controls; the ACL and the ownership rule
         * follow (a crash in between leaves the bucket private, never more
         * open than asked). */
        uint8_t own = (uint8_t)s3_ownership_from_header(req);
        st = stor_bucket_get(store, req->bucket, &b);
        if (st == STOR_OK && (acl->canned != STOR_ACL_PRIVATE || acl->grants))
            st = stor_bucket_set_acl(store, &b, acl->canned, acl->grants);
        if (st == STOR_OK && own != S3_OWNERSHIP_NONE)
            st = stor_bucket_config_set(store, &b, STOR_BCFG_OWNERSHIP, &own, 1);
        /* Object lock last: on a store that cannot (no versioning), the
         * new bucket goes again, so a create never half succeeds. */
        const char *lock = s3_req_header(req, "x-amz-bucket-object-lock-enabled");
        if (st == STOR_OK && lock && strcasecmp(lock, "true") == 0 &&
            (st = s3_lock_bucket_create(req, &b)) != STOR_OK) {
            stor_bucket_delete(store, &b);
            if (st == STOR_ERR_UNSUPPORTED) {
                s3_reply_error(req, S3E_NOT_IMPLEMENTED,
                               "Object lock needs bucket versioning, which this storage backend "
                               "does not implement.");
                return;
            }
        }
    }
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return;
    }
    s3_reply_headerf(req, "Location", "/%s", req->bucket);
    s3_reply_empty(req, 200);
}

static void create_bucket_finish(s3_req_t *req)
{
    char location[64];
    if (s3_xml_parse_create_bucket(req->body.data ? req->body.data : "", req->body.len, location,
                                   sizeof(location)) != 0) {
        s3_reply_error(req, S3E_MALFORMED_XML, NULL);
        return;
    }
    /* One server is one region: a bucket can be made only where the request
     * was sent. The server's own region is accepted when named (S3 refuses an
     * explicit "us-east-1"; radosgw and MinIO accept their own region, and
     * tools written against them send it). */
    if (location[0] && strcmp(location, req->srv->cfg.region) != 0) {
        char msg[192];
        snprintf(msg, sizeof(msg),
                 "The %.64s location constraint is incompatible for the region specific endpoint "
                 "this request was sent to.",
                 location);
        s3_reply_error(req, S3E_ILLEGAL_LOCATION, msg);
        return;
    }
    s3_new_acl_t acl;
    const char *why = NULL;
    s3_error_t err = s3_acl_from_headers(req, false, &acl, &why); /* checked in begin() */
    if (err != S3E_NONE) { /* no memory now; or a grantee gone with a reload */
        s3_reply_error(req, err, why);
        return;
    }
    create_bucket_with(req, &acl);
    s3_new_acl_free(&acl);
}

static void head_bucket_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_READ, &req->authz_bucket))
        return;
    s3_reply_header(req, "x-amz-bucket-region", req->srv->cfg.region);
    s3_reply_empty(req, 200);
}

static void delete_bucket_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
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
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
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
