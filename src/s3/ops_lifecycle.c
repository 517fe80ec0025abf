/* Lifecycle configurations (lifecycle.c parses them; kept as canonical XML;
 * lifecycle_run.c applies them): Get/Put/DeleteBucketLifecycleConfiguration,
 * and the x-amz-expiration / x-amz-abort-* reply headers they imply. */

#include <stdlib.h>

#include "common/date.h"
#include "common/hash.h"
#include "s3/lifecycle.h"
#include "s3/s3_request.h"

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

/* Gives each rule without an ID one, as S3 does: 32 random hex digits
 * (unique among the rules with overwhelming odds). -1 when out of memory or
 * randomness. */
static int name_rules(s3_lc_t *cfg)
{
    for (size_t i = 0; i < cfg->n_rules; i++) {
        s3_lc_rule_t *r = &cfg->rules[i];
        if (r->id[0])
            continue;
        char *id = malloc(2 * 16 + 1);
        if (!id || hash_random_hex(16, id) != 0) {
            free(id);
            return -1;
        }
        free(r->id);
        r->id = id;
    }
    return 0;
}

static void put_lifecycle_finish(s3_req_t *req)
{
    s3_lc_t cfg;
    char why[512];
    s3_error_t err = s3_lc_from_xml(req->body.data, req->body.len, &cfg, why, sizeof why);
    if (err == S3E_NONE && name_rules(&cfg) != 0) {
        s3_lc_free(&cfg);
        err = S3E_INTERNAL;
    }
    if (err != S3E_NONE) {
        s3_reply_error(req, err, err == S3E_INTERNAL ? NULL : why);
        return;
    }
    buf_t doc;
    buf_init(&doc, 2 * S3_LC_MAX_BYTES);
    lifecycle_xml(&cfg, &doc);
    s3_lc_free(&cfg);
    s3_config_write(req, STOR_BCFG_LIFECYCLE, doc.data, doc.len, 200);
    buf_free(&doc);
}

static void delete_lifecycle_begin(s3_req_t *req)
{
    s3_config_delete(req, STOR_BCFG_LIFECYCLE);
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
        int64_t t = s3_lc_expiry_of(cfg, a->key, a->meta, S3_LC_DAY_S, &rule);
        char value[S3_LC_MAX_ID + 96];
        if (t >= 0) {
            s3_lc_expiration_header(t, rule, value, sizeof value);
            s3_reply_header(req, "x-amz-expiration", value);
        }
        return;
    }
    int64_t t = s3_lc_abort_due(cfg, a->key, a->initiated_s, S3_LC_DAY_S, &rule);
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

const s3_op_t s3_op_get_bucket_lifecycle = {"GetBucketLifecycleConfiguration", get_lifecycle_begin,
                                            NULL};
const s3_op_t s3_op_put_bucket_lifecycle = {"PutBucketLifecycleConfiguration",
                                            s3_owner_config_begin, put_lifecycle_finish};
const s3_op_t s3_op_delete_bucket_lifecycle = {"DeleteBucketLifecycle", delete_lifecycle_begin,
                                               NULL};
