/* The HTTP frontend's routing: which S3 operation a request's method,
 * path, Host and query name (virtual-host and path-style buckets, the
 * sub-resources, the sub-resources that name an operation we do not have), and
 * which URLs are the server's own endpoints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/http_internal.h"
#include "http/http_own.h"
#include "s3/s3_util.h"

/* S3 sub-resources this server does not implement (the query names S3
 * routes to an operation of their own). A request naming one gets 501
 * NotImplemented rather than being taken for the plain operation; any other
 * query parameter S3 does not know is ignored, as S3 ignores it (a POST
 * form's success_action_redirect lands on the bucket's URL with bucket, key
 * and etag parameters, for one). */
static const char *const unimplemented_subresources[] = {
    "accelerate",
    "analytics",
    "intelligent-tiering",
    "inventory",
    "logging",
    "metrics",
    "notification",
    "replication",
    "requestPayment",
    "restore",
    "select",
    "select-type",
    "torrent",
    "website",
    "session",
    "metadataTable",
    "metadataConfiguration",
    "renameObject",
};

typedef struct query_scan {
    bool unknown;
    char unknown_name[64];
} query_scan_t;

static int scan_query(void *ctx, const char *name, const char *raw_value)
{
    (void)raw_value;
    query_scan_t *qs = ctx;
    for (size_t i = 0;
         i < sizeof(unimplemented_subresources) / sizeof(unimplemented_subresources[0]); i++) {
        if (strcmp(unimplemented_subresources[i], name) == 0) {
            qs->unknown = true;
            snprintf(qs->unknown_name, sizeof(qs->unknown_name), "%s", name);
            return 1;
        }
    }
    return 0;
}

/* Splits the virtual-host bucket off the Host header when it ends in one of
 * the configured domains ("photos.localhost:9000" -> "photos"). */
static char *vhost_bucket(s3_req_t *req)
{
    const char *host = s3_req_header(req, "Host");
    if (!host)
        return NULL;
    size_t len = strcspn(host, ":");
    for (size_t i = 0; i < req->srv->cfg.n_domains; i++) {
        const char *dom = req->srv->cfg.domains[i];
        size_t dlen = strlen(dom);
        if (len > dlen + 1 && host[len - dlen - 1] == '.' &&
            strncasecmp(host + len - dlen, dom, dlen) == 0) {
            return strndup(host, len - dlen - 1);
        }
    }
    return NULL;
}

/* Bucket subresources (?name) and the operation each method runs on them;
 * NULL: 405 MethodNotAllowed. The first subresource present decides. All
 * but ?uploads (CreateMultipartUpload) are the bucket's alone: on an object
 * they are not implemented. */
typedef struct bucket_subresource {
    const char *name;
    const s3_op_t *get, *put, *del;
} bucket_subresource_t;

static const bucket_subresource_t bucket_subresources[] = {
    {"uploads", &s3_op_list_mpu, NULL, NULL},
    {"location", &s3_op_get_bucket_location, NULL, NULL},
    {"versions", &s3_op_list_object_versions, NULL, NULL},
    {"versioning", &s3_op_get_bucket_versioning, &s3_op_put_bucket_versioning, NULL},
    {"acl", &s3_op_get_bucket_acl, &s3_op_put_bucket_acl, NULL},
    {"policy", &s3_op_get_bucket_policy, &s3_op_put_bucket_policy, &s3_op_delete_bucket_policy},
    {"policyStatus", &s3_op_get_bucket_policy_status, NULL, NULL},
    {"publicAccessBlock", &s3_op_get_public_access_block, &s3_op_put_public_access_block,
     &s3_op_delete_public_access_block},
    {"ownershipControls", &s3_op_get_bucket_ownership, &s3_op_put_bucket_ownership,
     &s3_op_delete_bucket_ownership},
    {"cors", &s3_op_get_bucket_cors, &s3_op_put_bucket_cors, &s3_op_delete_bucket_cors},
    {"tagging", &s3_op_get_bucket_tagging, &s3_op_put_bucket_tagging, &s3_op_delete_bucket_tagging},
    {"lifecycle", &s3_op_get_bucket_lifecycle, &s3_op_put_bucket_lifecycle,
     &s3_op_delete_bucket_lifecycle},
    {"object-lock", &s3_op_get_object_lock_config, &s3_op_put_object_lock_config, NULL},
    {"encryption", &s3_op_get_bucket_encryption, &s3_op_put_bucket_encryption,
     &s3_op_delete_bucket_encryption},
};

static s3_error_t route_bucket(s3_req_t *req, bool get, bool head, bool put, bool post, bool del)
{
    for (size_t i = 0; i < sizeof(bucket_subresources) / sizeof(bucket_subresources[0]); i++) {
        const bucket_subresource_t *sr = &bucket_subresources[i];
        if (!s3_req_has_query(req, sr->name))
            continue;
        req->op = get ? sr->get : put ? sr->put : del ? sr->del : NULL;
        return req->op ? S3E_NONE : S3E_METHOD_NOT_ALLOWED;
    }
    if (get)
        req->op = &s3_op_list_objects;
    else if (head)
        req->op = &s3_op_head_bucket;
    else if (put)
        req->op = &s3_op_create_bucket;
    else if (del)
        req->op = &s3_op_delete_bucket;
    else if (post && s3_req_has_query(req, "delete"))
        req->op = &s3_op_delete_objects;
    else if (post)
        req->op = &s3_op_post_object; /* a browser form upload */
    else
        return S3E_METHOD_NOT_ALLOWED;
    return S3E_NONE;
}

s3_error_t http_route(s3_req_t *req, const char *raw_url)
{
    const char *path = raw_url;
    if (*path != '/')
        return S3E_INVALID_REQUEST;
    char *decoded = s3_url_decode(path, strlen(path), false);
    if (!decoded)
        return S3E_INVALID_REQUEST;
    req->path = decoded;

    char *vbucket = vhost_bucket(req);
    if (vbucket) {
        req->bucket = vbucket;
        req->virtual_host = true;
        if (decoded[1] != '\0')
            req->key = strdup(decoded + 1);
    } else if (decoded[1] != '\0') {
        char *slash = strchr(decoded + 1, '/');
        if (slash) {
            req->bucket = strndup(decoded + 1, (size_t)(slash - decoded - 1));
            if (slash[1] != '\0')
                req->key = strdup(slash + 1);
        } else {
            req->bucket = strdup(decoded + 1);
        }
    }

    req->resource = s3_resource_path(req->bucket, req->key);

    s3_error_t err = s3_key_check(req->key);
    if (err != S3E_NONE)
        return err;

    query_scan_t qs = {0};
    s3_req_each_raw_query(req, scan_query, &qs);
    if (qs.unknown)
        return S3E_NOT_IMPLEMENTED;

    const char *m = req->method;
    bool get = strcmp(m, "GET") == 0, head = strcmp(m, "HEAD") == 0;
    bool put = strcmp(m, "PUT") == 0, post = strcmp(m, "POST") == 0;
    bool del = strcmp(m, "DELETE") == 0;

    if (req->bucket && strcmp(m, "OPTIONS") == 0) {
        req->op = &s3_op_cors_preflight; /* a bucket's or an object's, whatever the query */
        return S3E_NONE;
    }
    if (!req->bucket) {
        if (get || head)
            req->op = &s3_op_list_buckets;
        else
            return S3E_METHOD_NOT_ALLOWED;
        return S3E_NONE;
    }
    if (!req->key)
        return route_bucket(req, get, head, put, post, del);
    bool upload_id = s3_req_has_query(req, "uploadId");
    bool copy = s3_req_header(req, "x-amz-copy-source") != NULL;
    if (s3_req_has_query(req, "acl")) {
        req->op = get ? &s3_op_get_object_acl : put ? &s3_op_put_object_acl : NULL;
        return req->op ? S3E_NONE : S3E_METHOD_NOT_ALLOWED;
    }
    if (s3_req_has_query(req, "retention")) {
        req->op = get ? &s3_op_get_object_retention : put ? &s3_op_put_object_retention : NULL;
        return req->op ? S3E_NONE : S3E_METHOD_NOT_ALLOWED;
    }
    if (s3_req_has_query(req, "legal-hold")) {
        req->op = get ? &s3_op_get_object_legal_hold : put ? &s3_op_put_object_legal_hold : NULL;
        return req->op ? S3E_NONE : S3E_METHOD_NOT_ALLOWED;
    }
    if (s3_req_has_query(req, "attributes")) {
        req->op = get ? &s3_op_get_object_attributes : NULL;
        return req->op ? S3E_NONE : S3E_METHOD_NOT_ALLOWED;
    }
    if (s3_req_has_query(req, "tagging")) {
        req->op = get   ? &s3_op_get_object_tagging
                  : put ? &s3_op_put_object_tagging
                  : del ? &s3_op_delete_object_tagging
                        : NULL;
        return req->op ? S3E_NONE : S3E_METHOD_NOT_ALLOWED;
    }
    /* The other subresources are the bucket's. */
    for (size_t i = 1; i < sizeof(bucket_subresources) / sizeof(bucket_subresources[0]); i++)
        if (s3_req_has_query(req, bucket_subresources[i].name))
            return S3E_NOT_IMPLEMENTED;
    if (get && upload_id)
        req->op = &s3_op_list_parts;
    else if (get)
        req->op = &s3_op_get_object;
    else if (head)
        req->op = &s3_op_head_object;
    else if (put && upload_id && s3_req_has_query(req, "partNumber"))
        req->op = copy ? &s3_op_upload_part_copy : &s3_op_upload_part;
    else if (put && !upload_id)
        req->op = copy ? &s3_op_copy_object : &s3_op_put_object;
    else if (del && upload_id)
        req->op = &s3_op_abort_mpu;
    else if (del)
        req->op = &s3_op_delete_object;
    else if (post && s3_req_has_query(req, "uploads"))
        req->op = &s3_op_create_mpu;
    else if (post && upload_id)
        req->op = &s3_op_complete_mpu;
    else
        return S3E_METHOD_NOT_ALLOWED;
    return S3E_NONE;
}

/* Which of the server's own endpoints url names, or NULL for an S3 path.
 * Health answers GET and HEAD, the others GET; /metrics only when enabled.
 * A virtual-host request (its Host names a bucket) is always S3's: its
 * path is a key. */
const s3_op_t *http_own_endpoint(s3_req_t *req, const char *url)
{
    bool get = strcmp(req->method, "GET") == 0, head = strcmp(req->method, "HEAD") == 0;
    const s3_op_t *op = NULL;
    if (get && strcmp(url, HTTP_OWN_STATS_PATH) == 0)
        op = &s3_op_stats;
    else if (get && req->srv->cfg.metrics_enabled && strcmp(url, HTTP_OWN_METRICS_PATH) == 0)
        op = &s3_op_metrics;
    else if ((get || head) &&
             (strcmp(url, HTTP_OWN_HEALTH_LIVE) == 0 || strcmp(url, HTTP_OWN_HEALTH_READY) == 0))
        op = &s3_op_health;
    if (!op || op == &s3_op_stats)
        return op;
    char *vb = vhost_bucket(req);
    free(vb);
    return vb ? NULL : op;
}
