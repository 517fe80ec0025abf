/* Who may do what: the one decision every request goes through, whatever
 * carried it (HTTP, token, native): the requester (a configured user, or
 * anonymous) against the bucket's policy, public-access block and
 * ownership controls, and the owner and ACL (canned, or explicit grants) of
 * the bucket or object (docs/security.md has the table). Also the cache of
 * the buckets' parsed access configurations, and the ACLs a request sets
 * (their syntax is acl.c's). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/date.h"
#include "common/s3r_limits.h"
#include "s3/acl.h"
#include "s3/lifecycle.h"
#include "s3/policy.h"
#include "s3/s3_request.h"
#include "s3/s3_util.h"
#include "s3/tagging.h"
#include "s3/xml_in.h"

static int perm_bit(s3_perm_t perm)
{
    switch (perm) {
    case S3_PERM_READ:
        return S3_ACL_READ;
    case S3_PERM_WRITE:
        return S3_ACL_WRITE;
    case S3_PERM_READ_ACP:
        return S3_ACL_READ_ACP;
    case S3_PERM_WRITE_ACP:
        return S3_ACL_WRITE_ACP;
    case S3_PERM_OWNER:
        break;
    }
    return S3_ACL_FULL + 1; /* granted to no grantee: owners only */
}

static bool is(const s3_req_t *req, const char *who)
{
    return req->user && who && strcmp(req->user->access_key, who) == 0;
}

/* ---- the buckets' access configurations, parsed, cached --------------------------
 * Keyed by bucket id and configuration generation (stor_bucket_t.cfg_gen),
 * which every request's bucket lookup reads from the bucket's record: a
 * change made through any gateway (RADOS) is seen by the next request
 * everywhere, with no invalidation message. Buckets with no configuration
 * (cfg_mask 0, or only their versioning state) never come here. */

typedef struct access_cfg {
    atomic_int refs;
    uint64_t id, gen;
    s3_policy_t *policy; /* NULL: none */
    bool policy_public;
    unsigned pab;             /* S3_PAB_* */
    s3_ownership_t ownership; /* S3_OWNERSHIP_NONE when unset */
    /* The bucket's explicit grant list, which replaces its canned ACL. */
    bool has_grants;
    s3_acl_t grants;
    /* Not an access document, but read on every GET, HEAD and PUT of a
     * bucket that has one (x-amz-expiration): parsed once here too. */
    s3_lc_t lifecycle; /* no rules when none */
} access_cfg_t;

#define CFG_SLOTS S3R_POLICY_CACHE

static struct {
    pthread_mutex_t lock;
    access_cfg_t *slot[CFG_SLOTS];
} cfg_cache = {PTHREAD_MUTEX_INITIALIZER, {NULL}};

static void cfg_release(access_cfg_t *c)
{
    if (c && atomic_fetch_sub(&c->refs, 1) == 1) {
        s3_policy_free(c->policy);
        s3_lc_free(&c->lifecycle);
        s3_acl_free(&c->grants);
        free(c);
    }
}

/* Parses document kind into c: S3E_NONE, or InternalError for a stored
 * document that no longer parses (a damaged record fails closed). */
static s3_error_t cfg_parse(access_cfg_t *c, int kind, const buf_t *doc, const char *bucket)
{
    const uint8_t *d = (const uint8_t *)doc->data;
    if (doc->len == 0)
        return S3E_NONE;
    if (kind == STOR_BCFG_POLICY) {
        char why[160];
        c->policy = s3_policy_parse(doc->data, doc->len, bucket, NULL, why, sizeof why);
        if (!c->policy)
            return S3E_INTERNAL;
        c->policy_public = s3_policy_is_public(c->policy);
    } else if (kind == STOR_BCFG_PUBLIC_ACCESS_BLOCK && doc->len == 1) {
        c->pab = d[0] & S3_PAB_ALL;
    } else if (kind == STOR_BCFG_OWNERSHIP && doc->len == 1 && d[0] < S3_OWNERSHIP_COUNT) {
        c->ownership = (s3_ownership_t)d[0];
    } else if (kind == STOR_BCFG_ACL_GRANTS) {
        if (s3_acl_decode(doc->data, doc->len, &c->grants) != 0)
            return S3E_INTERNAL;
        c->has_grants = true;
    } else if (kind == STOR_BCFG_LIFECYCLE) {
        char why[256];
        if (s3_lc_from_xml(doc->data, doc->len, &c->lifecycle, why, sizeof why) != S3E_NONE)
            return S3E_INTERNAL;
    } else if (kind == STOR_BCFG_CORS || kind == STOR_BCFG_VERSIONING ||
               kind == STOR_BCFG_TAGGING || kind == STOR_BCFG_ENCRYPTION ||
               kind == STOR_BCFG_OBJECT_LOCK) {
        /* Not access documents: CORS, bucket tags, default encryption and
         * object lock never grant or deny (ops_cors.c, ops_tagging.c,
         * ops_encryption.c, ops_lock.c); the versioning state is storage's. */
    } else {
        return S3E_INTERNAL;
    }
    return S3E_NONE;
}

/* Reads every document of bucket in one read of its record (so all of one
 * generation, which may be newer than the lookup's: a change that landed
 * since is the one to apply) and parses them. */
static s3_error_t cfg_load(s3_req_t *req, const stor_bucket_t *bucket, access_cfg_t **out)
{
    buf_t docs[STOR_BCFG_COUNT];
    uint64_t gen = 0;
    stor_status_t st = stor_bucket_configs_get(req->srv->cfg.store, bucket, docs, &gen);
    s3_error_t err = st == STOR_OK ? S3E_NONE : s3_error_from_stor(st);
    access_cfg_t *c = NULL;
    if (err == S3E_NONE && !(c = calloc(1, sizeof *c)))
        err = S3E_INTERNAL;
    if (c) {
        atomic_init(&c->refs, 1);
        c->id = bucket->id;
        c->gen = gen;
    }
    for (int k = 0; k < STOR_BCFG_COUNT; k++) {
        if (err == S3E_NONE)
            err = cfg_parse(c, k, &docs[k], bucket->name);
        buf_free(&docs[k]);
    }
    if (err != S3E_NONE) {
        cfg_release(c);
        return err;
    }
    *out = c;
    return S3E_NONE;
}

/* The parsed configuration of bucket (a reference: cfg_release it), or
 * NULL in *out when it has none. */
static s3_error_t cfg_get(s3_req_t *req, const stor_bucket_t *bucket, access_cfg_t **out)
{
    *out = NULL;
    if ((bucket->cfg_mask & ~(1u << STOR_BCFG_VERSIONING)) == 0)
        return S3E_NONE; /* nothing that decides access */
    size_t i = (size_t)((bucket->id * 0x9E3779B97F4A7C15ULL) >> 56) % CFG_SLOTS;
    pthread_mutex_lock(&cfg_cache.lock);
    access_cfg_t *c = cfg_cache.slot[i];
    if (c && c->id == bucket->id && c->gen == bucket->cfg_gen)
        atomic_fetch_add(&c->refs, 1);
    else
        c = NULL;
    pthread_mutex_unlock(&cfg_cache.lock);
    if (c) {
        *out = c;
        return S3E_NONE;
    }
    s3_error_t err = cfg_load(req, bucket, &c);
    if (err != S3E_NONE)
        return err;
    pthread_mutex_lock(&cfg_cache.lock);
    access_cfg_t *old = cfg_cache.slot[i];
    /* A newer generation of the same bucket stays; anything else yields. */
    if (!old || old->id != c->id || old->gen < c->gen) {
        atomic_fetch_add(&c->refs, 1);
        cfg_cache.slot[i] = c;
    } else {
        old = NULL;
    }
    pthread_mutex_unlock(&cfg_cache.lock);
    cfg_release(old);
    *out = c;
    return S3E_NONE;
}

s3_error_t s3_bucket_lifecycle(s3_req_t *req, const stor_bucket_t *bucket, s3_lc_fn fn, void *ctx)
{
    static const s3_lc_t none;
    access_cfg_t *cfg;
    s3_error_t err = cfg_get(req, bucket, &cfg);
    if (err == S3E_NONE)
        fn(ctx, cfg ? &cfg->lifecycle : &none);
    cfg_release(cfg);
    return err;
}

/* ---- the request as policy conditions see it --------------------------------------- */

/* What the condition keys of one request are answered from: the request,
 * and its source address, worked out once. */
typedef struct key_ctx {
    s3_req_t *req;
    bool ip_done;
    char ip[64];             /* "" when the client has no address */
    const stor_meta_t *meta; /* the object the request acts on; NULL: none */
    const char *prefix;      /* s3:prefix (see decide) */
    /* Tag sets, decoded on first use (key_ctx_free frees them). */
    bool existing_done, request_done;
    s3_tags_t existing, request;
} key_ctx_t;

static void key_ctx_free(key_ctx_t *k)
{
    s3_tags_free(&k->existing);
    s3_tags_free(&k->request);
}

/* The value of the tag whose key is name, compared without regard to case
 * (policy condition keys are lower-cased when parsed), in t. */
static const char *tag_value(const s3_tags_t *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcasecmp(t->v[i].key, name) == 0)
            return t->v[i].value;
    return NULL;
}

/* s3:ExistingObjectTag/<name>: the tags of the object acted on. */
static const char *existing_tag(key_ctx_t *k, const char *name)
{
    if (!k->meta)
        return NULL;
    if (!k->existing_done) {
        k->existing_done = true;
        if (s3_tags_from_stored(k->meta->tags, &k->existing) != 0)
            memset(&k->existing, 0, sizeof k->existing);
    }
    return tag_value(&k->existing, name);
}

/* s3:RequestObjectTag/<name>: the tags the request sets (a PutObjectTagging
 * body, or x-amz-tagging). */
static const char *request_tag(key_ctx_t *k, const char *name)
{
    if (k->req->request_tags)
        return tag_value(k->req->request_tags, name);
    if (!k->request_done) {
        k->request_done = true;
        if (s3_tags_from_stored(s3_req_header(k->req, "x-amz-tagging"), &k->request) != 0)
            memset(&k->request, 0, sizeof k->request);
    }
    return tag_value(&k->request, name);
}

/* The client's address: from the frontend's "ip:port" or "[ip6]:port"
 * (common/addr.h: an IPv4 client of a dual-stack listener is its IPv4
 * address), or a native session over the server's Unix socket: this host,
 * 127.0.0.1. */
static const char *source_ip(key_ctx_t *k)
{
    if (!k->ip_done) {
        char remote[80];
        k->req->fe->remote(k->req, remote, sizeof remote);
        const char *h = strncmp(remote, "unix:", 5) == 0 ? "127.0.0.1" : remote;
        size_t n;
        if (*h == '[') {
            h++;
            n = strcspn(h, "]");
        } else {
            const char *colon = strrchr(h, ':');
            n = colon ? (size_t)(colon - h) : strlen(h);
        }
        if (n >= sizeof k->ip)
            n = 0;
        memcpy(k->ip, h, n);
        k->ip[n] = '\0';
        k->ip_done = true;
    }
    return k->ip[0] ? k->ip : NULL;
}

/* Condition keys (docs/security.md lists them): answered from the request
 * as it came, over any transport. */
static const char *condition_key(void *ctx, const char *name, char *buf, size_t cap)
{
    key_ctx_t *k = ctx;
    s3_req_t *req = k->req;
    if (strcmp(name, "aws:sourceip") == 0)
        return source_ip(k);
    if (strcmp(name, "aws:securetransport") == 0)
        return req->fe->secure && req->fe->secure(req) ? "true" : "false";
    if (strcmp(name, "aws:currenttime") == 0) {
        char t[32];
        date_format_iso8601(req->now_s * 1000, t);
        snprintf(buf, cap, "%s", t);
        return buf;
    }
    if (strcmp(name, "aws:epochtime") == 0) {
        snprintf(buf, cap, "%lld", (long long)req->now_s);
        return buf;
    }
    if (strcmp(name, "aws:username") == 0 || strcmp(name, "aws:userid") == 0)
        return req->user ? req->user->access_key : NULL;
    if (strcmp(name, "aws:principaltype") == 0)
        return req->user ? "User" : "Anonymous";
    if (strcmp(name, "aws:referer") == 0)
        return s3_req_header(req, "referer");
    if (strcmp(name, "aws:useragent") == 0)
        return s3_req_header(req, "user-agent");
    if (strcmp(name, "s3:prefix") == 0)
        return k->prefix;
    if (strcmp(name, "s3:delimiter") == 0)
        return s3_req_query(req, "delimiter");
    if (strcmp(name, "s3:max-keys") == 0)
        return s3_req_query(req, "max-keys");
    if (strcmp(name, "s3:versionid") == 0)
        return s3_req_query(req, "versionId");
    if (strcmp(name, "s3:signatureversion") == 0)
        return req->user ? "AWS4-HMAC-SHA256" : NULL;
    if (strncmp(name, "s3:x-amz-", 9) == 0 || strcmp(name, "s3:if-match") == 0 ||
        strcmp(name, "s3:if-none-match") == 0)
        return s3_req_header(req, name + 3);
    if (strncmp(name, "s3:existingobjecttag/", 21) == 0)
        return existing_tag(k, name + 21);
    if (strncmp(name, "s3:requestobjecttag/", 20) == 0)
        return request_tag(k, name + 20);
    return NULL; /* not known here */
}

/* ---- which action a request is ------------------------------------------------------- */

/* Operations whose IAM action is not "s3:" and the operation's name. */
static const struct {
    const s3_op_t *op;
    const char *action;
} op_actions[] = {
    {&s3_op_list_objects, "s3:ListBucket"},
    {&s3_op_head_bucket, "s3:ListBucket"},
    {&s3_op_list_object_versions, "s3:ListBucketVersions"},
    {&s3_op_list_mpu, "s3:ListBucketMultipartUploads"},
    {&s3_op_list_parts, "s3:ListMultipartUploadParts"},
    {&s3_op_head_object, "s3:GetObject"},
    {&s3_op_copy_object, "s3:PutObject"},
    {&s3_op_create_mpu, "s3:PutObject"},
    {&s3_op_upload_part, "s3:PutObject"},
    {&s3_op_upload_part_copy, "s3:PutObject"},
    {&s3_op_complete_mpu, "s3:PutObject"},
    {&s3_op_post_object, "s3:PutObject"},
    {&s3_op_delete_objects, "s3:DeleteObject"},
    {&s3_op_get_bucket_cors, "s3:GetBucketCORS"},
    {&s3_op_put_bucket_cors, "s3:PutBucketCORS"},
    {&s3_op_delete_bucket_cors, "s3:PutBucketCORS"},
    {&s3_op_get_bucket_lifecycle, "s3:GetLifecycleConfiguration"},
    {&s3_op_put_bucket_lifecycle, "s3:PutLifecycleConfiguration"},
    {&s3_op_delete_bucket_lifecycle, "s3:PutLifecycleConfiguration"},
    {&s3_op_get_object_lock_config, "s3:GetBucketObjectLockConfiguration"},
    {&s3_op_put_object_lock_config, "s3:PutBucketObjectLockConfiguration"},
    {&s3_op_get_bucket_encryption, "s3:GetEncryptionConfiguration"},
    {&s3_op_get_public_access_block, "s3:GetBucketPublicAccessBlock"},
    {&s3_op_put_public_access_block, "s3:PutBucketPublicAccessBlock"},
    {&s3_op_delete_public_access_block, "s3:PutBucketPublicAccessBlock"},
    {&s3_op_delete_bucket_ownership, "s3:PutBucketOwnershipControls"},
    {&s3_op_delete_bucket_tagging, "s3:PutBucketTagging"},
    {&s3_op_put_bucket_encryption, "s3:PutEncryptionConfiguration"},
    {&s3_op_delete_bucket_encryption, "s3:PutEncryptionConfiguration"},
};

/* The action of a check on the bucket (object false) or on an object the
 * request names (copy sources included) with perm, into buf. */
static const char *request_action(s3_req_t *req, s3_perm_t perm, bool object, char *buf, size_t cap)
{
    const s3_op_t *op = req->op;
    if (object && perm == S3_PERM_READ && op != &s3_op_get_object_tagging &&
        op != &s3_op_get_object_attributes)
        return "s3:GetObject"; /* a GET, or a copy's source */
    for (size_t i = 0; i < sizeof op_actions / sizeof op_actions[0]; i++)
        if (op_actions[i].op == op)
            return op_actions[i].action;
    snprintf(buf, cap, "s3:%s", op ? op->name : "Unknown");
    return buf;
}

/* The bucket-policy actions: its owner keeps them whatever the policy says
 * (so a policy cannot lock the owner out), and only the owner has them. */
static bool policy_action(const char *action)
{
    return strcmp(action, "s3:GetBucketPolicy") == 0 || strcmp(action, "s3:PutBucketPolicy") == 0 ||
           strcmp(action, "s3:DeleteBucketPolicy") == 0;
}

/* ---- the decision ---------------------------------------------------------------------- */

/* What the ACLs say: the resource's owner and ACL (its canned ACL, or the
 * explicit grants that replace it), the permission asked. bucket_owner
 * only for objects. */
typedef struct acl_ask {
    const char *owner;
    stor_acl_t acl;
    const char *bucket_owner;
    bool object;
    s3_perm_t perm;
    const stor_meta_t *meta; /* the object's, when object: its grants */
} acl_ask_t;

/* The requester's permission bits on a resource, with the bucket's
 * controls applied: under BucketOwnerEnforced ACLs are off and the bucket's
 * owner holds everything; IgnorePublicAcls drops the grants to AllUsers and
 * AuthenticatedUsers. The resource's owner may always read and change its
 * ACL (S3's implicit READ_ACP and WRITE_ACP); every other permission,
 * the owner's included, comes from the grants (a canned ACL's list grants
 * the owner FULL_CONTROL). A stored list that does not decode grants
 * nothing (fails closed). An object's list is read in place, with no
 * allocation, on every request. */
static int granted(const s3_req_t *req, const acl_ask_t *a, const access_cfg_t *cfg)
{
    if (cfg && cfg->ownership == S3_OWNERSHIP_ENFORCED)
        return is(req, a->object ? a->bucket_owner : a->owner) ? S3_ACL_FULL : 0;
    const char *requester = req->user ? req->user->access_key : NULL;
    bool ignore_public = cfg && (cfg->pab & S3_PAB_IGNORE_PUBLIC_ACLS);
    int bits;
    if (!a->object && cfg && cfg->has_grants) {
        bits = s3_acl_bits(&cfg->grants, requester, ignore_public);
    } else if (a->object && a->meta && a->meta->grants) {
        bits =
            s3_acl_stored_bits(a->meta->grants, strlen(a->meta->grants), requester, ignore_public);
        if (bits < 0)
            bits = 0; /* damaged: grants nothing, but its owner may still reset it */
    } else {
        s3_grant_t v[S3_ACL_CANNED_MAX];
        s3_acl_t canned = {v, s3_acl_canned(a->acl, a->object, a->owner, a->bucket_owner, v), 0};
        bits = s3_acl_bits(&canned, requester, ignore_public);
    }
    if (is(req, a->owner))
        bits |= S3_ACL_READ_ACP | S3_ACL_WRITE_ACP;
    return bits;
}

static bool allows(int bits, s3_perm_t perm)
{
    int want = perm_bit(perm);
    return want <= S3_ACL_FULL && (bits & want) == want;
}

/* THE decision (docs/security.md, "Who may do what"): an explicit Deny in
 * the bucket's policy refuses (but for the bucket's owner on the policy
 * actions); then an Allow in the policy, or the ACLs, grant. An Allow of a
 * public policy counts only for the bucket's owner under
 * RestrictPublicBuckets; the policy actions are the owner's alone. */
/* Whether the request names an owner other than bucket's: x-amz-expected-bucket-owner
 * for the bucket the request addresses, x-amz-source-expected-bucket-owner for the
 * bucket a copy reads from. S3 then denies whatever the ACLs and policies say. */
static bool unexpected_owner(s3_req_t *req, const stor_bucket_t *bucket)
{
    const char *want = s3_req_header(req, "x-amz-expected-bucket-owner");
    if (want && req->bucket && strcmp(bucket->name, req->bucket) == 0 &&
        strcmp(want, bucket->owner) != 0)
        return true;
    want = s3_req_header(req, "x-amz-source-expected-bucket-owner");
    if (!want || strcmp(want, bucket->owner) == 0)
        return false;
    const char *src = s3_req_header(req, "x-amz-copy-source");
    if (!src)
        return false;
    src += *src == '/'; /* "[/]bucket/key": a bucket name needs no URL decoding */
    size_t n = strlen(bucket->name);
    return strncmp(src, bucket->name, n) == 0 && src[n] == '/';
}

static s3_error_t decide(s3_req_t *req, const stor_bucket_t *bucket, const char *key,
                         const char *action, const acl_ask_t *a)
{
    if (unexpected_owner(req, bucket))
        return S3E_ACCESS_DENIED;
    access_cfg_t *cfg;
    s3_error_t err = cfg_get(req, bucket, &cfg);
    if (err != S3E_NONE)
        return err;
    bool owner = is(req, bucket->owner);
    s3_policy_effect_t eff = S3_POLICY_NONE;
    if (cfg && cfg->policy) {
        /* "arn:aws:s3:::bucket[/key]", built without printf: it runs on
         * every request to a bucket with a policy. */
        char arn[sizeof "arn:aws:s3:::" + sizeof bucket->name + 1 + S3R_MAX_KEY_BYTES + 1];
        size_t blen = strnlen(bucket->name, sizeof bucket->name - 1);
        size_t klen = key ? strlen(key) : 0;
        if (klen > S3R_MAX_KEY_BYTES) { /* fail closed: never a cut name */
            cfg_release(cfg);
            return S3E_ACCESS_DENIED;
        }
        char *w = arn;
        memcpy(w, "arn:aws:s3:::", 13);
        memcpy(w += 13, bucket->name, blen);
        w += blen;
        if (key) {
            *w++ = '/';
            memcpy(w, key, klen);
            w += klen;
        }
        *w = '\0';
        /* s3:ListBucket asked about an object request is the check of a
         * missing object (s3_object_lookup_error): its key is the prefix
         * the listing would have needed, as S3 evaluates it. */
        bool probe = key == NULL && req->key && strcmp(action, "s3:ListBucket") == 0;
        key_ctx_t kc = {.req = req,
                        .meta = a->meta,
                        .prefix = probe ? req->key : s3_req_query(req, "prefix")};
        s3_policy_query_t q = {action, arn, req->user ? req->user->access_key : NULL, condition_key,
                               &kc};
        eff = s3_policy_eval(cfg->policy, &q);
        key_ctx_free(&kc);
        if (eff == S3_POLICY_ALLOW && !owner &&
            (policy_action(action) ||
             (cfg->policy_public && (cfg->pab & S3_PAB_RESTRICT_PUBLIC_BUCKETS))))
            eff = S3_POLICY_NONE;
    }
    bool ok;
    if (eff == S3_POLICY_DENY)
        ok = owner && policy_action(action);
    else
        ok = eff == S3_POLICY_ALLOW || allows(granted(req, a, cfg), a->perm) ||
             (a->perm == S3_PERM_OWNER && owner);
    cfg_release(cfg);
    return ok ? S3E_NONE : S3E_ACCESS_DENIED;
}

const char *s3_object_owner(const stor_bucket_t *bucket, const stor_meta_t *meta)
{
    return meta->owner ? meta->owner : bucket->owner;
}

bool s3_bucket_lookup(s3_req_t *req, const char *bucket, stor_bucket_t *bucket_p)
{
    stor_status_t st = stor_bucket_get(req->srv->cfg.store, bucket, bucket_p);
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return false;
    }
    return true;
}

/* A check on the bucket itself, or on key in it with a bucket permission. */
static s3_error_t bucket_decide(s3_req_t *req, const stor_bucket_t *bucket, const char *key,
                                const char *action, s3_perm_t perm)
{
    acl_ask_t a = {bucket->owner, bucket->acl, NULL, false, perm, NULL};
    return decide(req, bucket, key, action, &a);
}

s3_error_t s3_object_lookup_error(s3_req_t *req, const stor_bucket_t *bucket, stor_status_t st)
{
    if (st == STOR_ERR_NO_KEY &&
        bucket_decide(req, bucket, NULL, "s3:ListBucket", S3_PERM_READ) != S3E_NONE)
        return S3E_ACCESS_DENIED;
    return s3_error_from_stor(st);
}

s3_error_t s3_bucket_access(s3_req_t *req, const char *bucket, s3_perm_t perm,
                            stor_bucket_t *bucket_p)
{
    stor_bucket_t b;
    stor_status_t st = stor_bucket_get(req->srv->cfg.store, bucket, &b);
    if (st != STOR_OK)
        return s3_error_from_stor(st);
    /* DeleteObjects under a policy decides key by key (s3_key_access):
     * only the body's keys say what it deletes. */
    bool per_key = req->op == &s3_op_delete_objects && (b.cfg_mask & (1u << STOR_BCFG_POLICY));
    char buf[80];
    s3_error_t err = per_key
                         ? S3E_NONE
                         : bucket_decide(req, &b, req->key,
                                         request_action(req, perm, false, buf, sizeof buf), perm);
    if (err != S3E_NONE)
        return err;
    if (bucket_p)
        *bucket_p = b;
    return S3E_NONE;
}

s3_error_t s3_key_access(s3_req_t *req, const stor_bucket_t *bucket, const char *key,
                         s3_perm_t perm)
{
    char buf[80];
    return bucket_decide(req, bucket, key, request_action(req, perm, false, buf, sizeof buf), perm);
}

bool s3_extra_action_allowed(s3_req_t *req, const stor_bucket_t *bucket, const char *key,
                             const char *action)
{
    return bucket_decide(req, bucket, key, action, S3_PERM_OWNER) == S3E_NONE;
}

bool s3_bucket_authorize(s3_req_t *req, const char *bucket, s3_perm_t perm, stor_bucket_t *bucket_p)
{
    s3_error_t err = s3_bucket_access(req, bucket, perm, bucket_p);
    if (err != S3E_NONE)
        s3_reply_error(req, err, NULL);
    return err == S3E_NONE;
}

bool s3_object_authorize(s3_req_t *req, const stor_bucket_t *bucket, const char *key,
                         const stor_meta_t *meta, s3_perm_t perm)
{
    acl_ask_t a = {s3_object_owner(bucket, meta), meta->acl, bucket->owner, true, perm, meta};
    char buf[80];
    s3_error_t err = decide(req, bucket, key, request_action(req, perm, true, buf, sizeof buf), &a);
    if (err == S3E_NONE)
        return true;
    s3_reply_error(req, err, NULL);
    return false;
}

/* ---- the ACLs requests set ------------------------------------------------------------ */

/* The configured users as acl.c asks for them. */
static const char *user_name(void *ctx, const char *id)
{
    return s3_display_name(ctx, id);
}

static const char *user_by_email(void *ctx, const char *email)
{
    const s3_server_t *srv = ctx;
    for (size_t i = 0; i < srv->cfg.n_users; i++)
        if (srv->cfg.users[i].email && strcasecmp(srv->cfg.users[i].email, email) == 0)
            return srv->cfg.users[i].access_key;
    return NULL;
}

static s3_acl_users_t configured_users(s3_req_t *req)
{
    s3_acl_users_t u = {user_name, user_by_email, (void *)req->srv};
    return u;
}

void s3_new_acl_free(s3_new_acl_t *acl)
{
    free(acl->grants);
    acl->grants = NULL;
}

/* Keeps list as acl's explicit grants (its stored form); takes no
 * ownership of list. */
static s3_error_t new_acl_grants(const s3_acl_t *list, s3_new_acl_t *acl)
{
    acl->canned = STOR_ACL_PRIVATE;
    acl->grants = s3_acl_encode(list);
    acl->public_grants = s3_acl_is_public(list);
    return acl->grants ? S3E_NONE : S3E_INTERNAL;
}

bool s3_acl_headers_given(s3_req_t *req)
{
    if (s3_req_header(req, "x-amz-acl"))
        return true;
    for (size_t i = 0; i < S3_ACL_GRANT_HEADERS; i++)
        if (s3_req_header(req, s3_acl_grant_headers[i]))
            return true;
    return false;
}

s3_error_t s3_acl_from_headers(s3_req_t *req, bool object, s3_new_acl_t *out, const char **why_p)
{
    memset(out, 0, sizeof *out);
    *why_p = NULL;
    const char *values[S3_ACL_GRANT_HEADERS];
    bool grants = false;
    for (size_t i = 0; i < S3_ACL_GRANT_HEADERS; i++)
        grants |= (values[i] = s3_req_header(req, s3_acl_grant_headers[i])) != NULL;
    const char *v = s3_req_header(req, "x-amz-acl");
    if (v && grants) {
        *why_p = "Specifying both Canned ACLs and Header Grants is not allowed";
        return S3E_INVALID_REQUEST;
    }
    if (grants) {
        s3_acl_t list;
        s3_acl_users_t users = configured_users(req);
        s3_error_t err = s3_acl_from_grant_headers(values, &users, &list, why_p);
        if (err == S3E_NONE)
            err = new_acl_grants(&list, out);
        s3_acl_free(&list);
        return err;
    }
    if (!v)
        return S3E_NONE; /* private */
    int a = s3_acl_canned_parse(v);
    if (a >= 0) {
        /* S3 ignores the bucket-owner-* ACLs on a bucket: it is its owner's. */
        bool owner_only =
            a == STOR_ACL_BUCKET_OWNER_READ || a == STOR_ACL_BUCKET_OWNER_FULL_CONTROL;
        out->canned = !object && owner_only ? STOR_ACL_PRIVATE : (stor_acl_t)a;
        return S3E_NONE;
    }
    if (strcmp(v, "aws-exec-read") == 0 || strcmp(v, "log-delivery-write") == 0) {
        *why_p = "This canned ACL is not implemented.";
        return S3E_NOT_IMPLEMENTED;
    }
    return S3E_INVALID_ARGUMENT;
}

s3_error_t s3_acl_from_body(s3_req_t *req, bool object, const char *owner, const char *bucket_owner,
                            s3_new_acl_t *out, const char **why_p)
{
    memset(out, 0, sizeof *out);
    char *xml_owner = NULL;
    s3_acl_t list;
    s3_acl_users_t users = configured_users(req);
    s3_error_t err =
        s3_acl_from_xml(req->body.data, req->body.len, &users, &xml_owner, &list, why_p);
    if (err != S3E_NONE)
        return err;
    if (xml_owner && strcmp(xml_owner, owner) != 0) {
        err = S3E_ACCESS_DENIED;
        *why_p = "The Owner in the ACL is not the resource's owner.";
    } else {
        /* A list equal to a canned ACL's is kept as that canned ACL. */
        int c = s3_acl_match_canned(&list, object, owner, bucket_owner);
        if (c >= 0)
            out->canned = (stor_acl_t)c;
        else
            err = new_acl_grants(&list, out);
    }
    free(xml_owner);
    s3_acl_free(&list);
    return err;
}

static bool canned_public(stor_acl_t acl)
{
    return acl == STOR_ACL_PUBLIC_READ || acl == STOR_ACL_PUBLIC_READ_WRITE ||
           acl == STOR_ACL_AUTHENTICATED_READ;
}

/* The bucket's controls on an ACL being set: S3E_NONE or the refusal.
 * Under BucketOwnerEnforced only bucket-owner-full-control (x-amz-acl) or
 * a body meaning private or bucket-owner-full-control passes; under
 * BlockPublicAcls nothing that grants AllUsers or AuthenticatedUsers. */
static s3_error_t acl_controls(s3_req_t *req, const access_cfg_t *cfg, const s3_new_acl_t *acl,
                               bool explicit_acl, const char **why_p)
{
    if (!cfg)
        return S3E_NONE;
    if (cfg->ownership == S3_OWNERSHIP_ENFORCED && explicit_acl) {
        const char *v = s3_req_header(req, "x-amz-acl");
        bool owner_full = v ? strcmp(v, "bucket-owner-full-control") == 0
                            : !acl->grants && (acl->canned == STOR_ACL_PRIVATE ||
                                               acl->canned == STOR_ACL_BUCKET_OWNER_FULL_CONTROL);
        if (!owner_full) {
            *why_p = NULL;
            return S3E_ACL_NOT_SUPPORTED;
        }
    }
    if ((cfg->pab & S3_PAB_BLOCK_PUBLIC_ACLS) &&
        (acl->grants ? acl->public_grants : canned_public(acl->canned))) {
        *why_p = "The bucket's public access block (BlockPublicAcls) refuses public ACLs.";
        return S3E_ACCESS_DENIED;
    }
    return S3E_NONE;
}

s3_error_t s3_new_object_access(s3_req_t *req, stor_meta_t *meta, const char **why_p)
{
    s3_new_acl_t acl;
    s3_error_t err = s3_acl_from_headers(req, true, &acl, why_p);
    if (err != S3E_NONE)
        return err;
    const stor_bucket_t *bucket = &req->authz_bucket;
    access_cfg_t *cfg;
    if ((err = cfg_get(req, bucket, &cfg)) != S3E_NONE) {
        s3_new_acl_free(&acl);
        return err;
    }
    err = acl_controls(req, cfg, &acl, s3_acl_headers_given(req), why_p);
    s3_ownership_t own = cfg ? cfg->ownership : S3_OWNERSHIP_NONE;
    cfg_release(cfg);
    if (err != S3E_NONE) {
        s3_new_acl_free(&acl);
        return err;
    }
    bool to_bucket_owner = !req->user || own == S3_OWNERSHIP_ENFORCED ||
                           (own == S3_OWNERSHIP_PREFERRED && !acl.grants &&
                            acl.canned == STOR_ACL_BUCKET_OWNER_FULL_CONTROL);
    if (own == S3_OWNERSHIP_ENFORCED) { /* ACLs are off: the owner's alone */
        s3_new_acl_free(&acl);
        acl.canned = STOR_ACL_PRIVATE;
    }
    /* A copy's metadata came from its source: its grants are replaced too. */
    meta->acl = acl.canned;
    free(meta->grants);
    meta->grants = acl.grants;
    free(meta->owner);
    meta->owner = strdup(to_bucket_owner ? bucket->owner : req->user->access_key);
    return meta->owner ? S3E_NONE : S3E_INTERNAL;
}

static const char *const ownership_names[S3_OWNERSHIP_COUNT] = {
    [S3_OWNERSHIP_OBJECT_WRITER] = "ObjectWriter",
    [S3_OWNERSHIP_PREFERRED] = "BucketOwnerPreferred",
    [S3_OWNERSHIP_ENFORCED] = "BucketOwnerEnforced",
};

const char *s3_ownership_name(int rule)
{
    return rule > S3_OWNERSHIP_NONE && rule < S3_OWNERSHIP_COUNT ? ownership_names[rule] : NULL;
}

int s3_ownership_parse(const char *name)
{
    for (int i = S3_OWNERSHIP_NONE + 1; i < S3_OWNERSHIP_COUNT && name; i++)
        if (strcmp(name, ownership_names[i]) == 0)
            return i;
    return -1;
}

int s3_ownership_from_header(s3_req_t *req)
{
    const char *v = s3_req_header(req, "x-amz-object-ownership");
    return v ? s3_ownership_parse(v) : S3_OWNERSHIP_NONE;
}

s3_error_t s3_acl_change_check(s3_req_t *req, const s3_new_acl_t *acl, const char **why_p)
{
    access_cfg_t *cfg;
    s3_error_t err = cfg_get(req, &req->authz_bucket, &cfg);
    if (err != S3E_NONE)
        return err;
    err = acl_controls(req, cfg, acl, true, why_p);
    cfg_release(cfg);
    return err;
}

/* ---- the ACLs read (GetBucketAcl, GetObjectAcl) ---------------------------------------- */

/* Appends the AccessControlPolicy of a resource: its explicit list when
 * stored is one (a stored form; explicit for a bucket's parsed list), or
 * its canned ACL's. */
static s3_error_t acl_xml(s3_req_t *req, buf_t *xml, const s3_acl_t *explicit_list,
                          const char *stored, stor_acl_t acl, bool object, const char *owner,
                          const char *bucket_owner)
{
    s3_grant_t canned_v[S3_ACL_CANNED_MAX];
    s3_acl_t decoded = {NULL, 0, 0}, list;
    if (explicit_list) {
        list = *explicit_list;
    } else if (stored) {
        if (s3_acl_decode(stored, strlen(stored), &decoded) != 0)
            return S3E_INTERNAL;
        list = decoded;
    } else {
        list = (s3_acl_t){canned_v, s3_acl_canned(acl, object, owner, bucket_owner, canned_v), 0};
    }
    s3_acl_users_t users = configured_users(req);
    s3_acl_xml(xml, owner, &list, &users);
    s3_acl_free(&decoded);
    return S3E_NONE;
}

s3_error_t s3_bucket_acl_xml(s3_req_t *req, const stor_bucket_t *bucket, buf_t *xml)
{
    access_cfg_t *cfg;
    s3_error_t err = cfg_get(req, bucket, &cfg);
    if (err != S3E_NONE)
        return err;
    err = acl_xml(req, xml, cfg && cfg->has_grants ? &cfg->grants : NULL, NULL, bucket->acl, false,
                  bucket->owner, NULL);
    cfg_release(cfg);
    return err;
}

s3_error_t s3_object_acl_xml(s3_req_t *req, const stor_bucket_t *bucket, const stor_meta_t *meta,
                             buf_t *xml)
{
    return acl_xml(req, xml, NULL, meta->grants, meta->acl, true, s3_object_owner(bucket, meta),
                   bucket->owner);
}
