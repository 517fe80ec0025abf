/* CORS configurations (cors.c parses and matches them; kept as a bucket
 * configuration document): Get/Put/DeleteBucketCors, the OPTIONS preflight,
 * and the Access-Control-* headers of every HTTP reply. */

#include <stdio.h>
#include <string.h>

#include "s3/cors.h"
#include "s3/s3_request.h"

static void get_cors_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        return;
    buf_t doc;
    if (!s3_config_read(req, STOR_BCFG_CORS, &doc))
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
    s3_config_write(req, STOR_BCFG_CORS, doc.data, doc.len, 200);
    buf_free(&doc);
}

static void delete_cors_begin(s3_req_t *req)
{
    s3_config_delete(req, STOR_BCFG_CORS);
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

const s3_op_t s3_op_get_bucket_cors = {"GetBucketCors", get_cors_begin, NULL};
const s3_op_t s3_op_put_bucket_cors = {"PutBucketCors", s3_owner_config_begin, put_cors_finish};
const s3_op_t s3_op_delete_bucket_cors = {"DeleteBucketCors", delete_cors_begin, NULL};
const s3_op_t s3_op_cors_preflight = {"CorsPreflight", preflight_begin, NULL};
