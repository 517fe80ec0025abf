/* Who may do what: the requester (a configured user, or anonymous) against
 * the owner and canned ACL of a bucket or an object, as S3's ACLs grant
 * (docs/security.md has the table). Also the canned-ACL vocabulary
 * (x-amz-acl values, ACL XML grants, the GetBucketAcl/GetObjectAcl body). */
#include <stdlib.h>
#include <string.h>

#include "s3/s3_request.h"
#include "s3/xml_in.h"

#define ALL_USERS  "http://acs.amazonaws.com/groups/global/AllUsers"
#define AUTH_USERS "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"

/* Permission bits; FULL_CONTROL is all of them. */
enum {
    P_READ = 1,
    P_WRITE = 2,
    P_READ_ACP = 4,
    P_WRITE_ACP = 8,
    P_FULL = 15,
};

static const char *const acl_names[STOR_ACL_COUNT] = {
    [STOR_ACL_PRIVATE] = "private",
    [STOR_ACL_PUBLIC_READ] = "public-read",
    [STOR_ACL_PUBLIC_READ_WRITE] = "public-read-write",
    [STOR_ACL_AUTHENTICATED_READ] = "authenticated-read",
    [STOR_ACL_BUCKET_OWNER_READ] = "bucket-owner-read",
    [STOR_ACL_BUCKET_OWNER_FULL_CONTROL] = "bucket-owner-full-control",
};

/* Who a canned ACL grants what, beyond the resource owner's FULL_CONTROL. */
typedef struct canned_grants {
    int all_users, auth_users, bucket_owner;
} canned_grants_t;

static canned_grants_t canned(stor_acl_t acl, bool object)
{
    canned_grants_t g = {0, 0, 0};
    switch (acl) {
    case STOR_ACL_PUBLIC_READ:
        g.all_users = P_READ;
        break;
    case STOR_ACL_PUBLIC_READ_WRITE:
        g.all_users = P_READ | P_WRITE;
        break;
    case STOR_ACL_AUTHENTICATED_READ:
        g.auth_users = P_READ;
        break;
    case STOR_ACL_BUCKET_OWNER_READ:
        g.bucket_owner = object ? P_READ : 0;
        break;
    case STOR_ACL_BUCKET_OWNER_FULL_CONTROL:
        g.bucket_owner = object ? P_FULL : 0;
        break;
    default:
        break;
    }
    return g;
}

static int perm_bit(s3_perm_t perm)
{
    switch (perm) {
    case S3_PERM_READ:
        return P_READ;
    case S3_PERM_WRITE:
        return P_WRITE;
    case S3_PERM_READ_ACP:
        return P_READ_ACP;
    case S3_PERM_WRITE_ACP:
        return P_WRITE_ACP;
    case S3_PERM_OWNER:
        break;
    }
    return P_FULL + 1; /* granted to no grantee: owners only */
}

static bool is(const s3_req_t *req, const char *who)
{
    return req->user && who && strcmp(req->user->access_key, who) == 0;
}

/* The requester's permission bits on a resource owned by owner with acl;
 * bucket_owner only for objects. */
static int granted(const s3_req_t *req, const char *owner, stor_acl_t acl, const char *bucket_owner,
                   bool object)
{
    if (is(req, owner))
        return P_FULL;
    canned_grants_t g = canned(acl, object);
    int bits = g.all_users;
    if (req->user)
        bits |= g.auth_users;
    if (object && is(req, bucket_owner))
        bits |= g.bucket_owner;
    return bits;
}

static bool allows(int bits, s3_perm_t perm)
{
    int want = perm_bit(perm);
    return want <= P_FULL && (bits & want) == want;
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

/* Whether the requester has perm on bucket (as looked up already). */
static bool bucket_permits(const s3_req_t *req, const stor_bucket_t *bucket, s3_perm_t perm)
{
    return is(req, bucket->owner) ||
           allows(granted(req, bucket->owner, bucket->acl, NULL, false), perm);
}

s3_error_t s3_object_lookup_error(const s3_req_t *req, const stor_bucket_t *bucket,
                                  stor_status_t st)
{
    if (st == STOR_ERR_NO_KEY && !bucket_permits(req, bucket, S3_PERM_READ))
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
    if (!bucket_permits(req, &b, perm))
        return S3E_ACCESS_DENIED;
    if (bucket_p)
        *bucket_p = b;
    return S3E_NONE;
}

bool s3_bucket_authorize(s3_req_t *req, const char *bucket, s3_perm_t perm, stor_bucket_t *bucket_p)
{
    s3_error_t err = s3_bucket_access(req, bucket, perm, bucket_p);
    if (err != S3E_NONE)
        s3_reply_error(req, err, NULL);
    return err == S3E_NONE;
}

bool s3_object_authorize(s3_req_t *req, const stor_bucket_t *bucket, const stor_meta_t *meta,
                         s3_perm_t perm)
{
    const char *owner = s3_object_owner(bucket, meta);
    if (is(req, owner) || allows(granted(req, owner, meta->acl, bucket->owner, true), perm))
        return true;
    s3_reply_error(req, S3E_ACCESS_DENIED, NULL);
    return false;
}

const char *s3_new_object_owner(const s3_req_t *req, const stor_bucket_t *bucket)
{
    return req->user ? req->user->access_key : bucket->owner;
}

s3_error_t s3_acl_from_headers(s3_req_t *req, bool object, stor_acl_t *acl_p, const char **why_p)
{
    static const char *const grants[] = {"x-amz-grant-read", "x-amz-grant-write",
                                         "x-amz-grant-read-acp", "x-amz-grant-write-acp",
                                         "x-amz-grant-full-control"};
    for (size_t i = 0; i < sizeof(grants) / sizeof(grants[0]); i++) {
        if (s3_req_header(req, grants[i])) {
            *why_p = "Explicit grants (x-amz-grant-*) are not implemented; use a canned ACL "
                     "(x-amz-acl).";
            return S3E_NOT_IMPLEMENTED;
        }
    }
    *acl_p = STOR_ACL_PRIVATE;
    const char *v = s3_req_header(req, "x-amz-acl");
    if (!v)
        return S3E_NONE;
    for (int a = 0; a < STOR_ACL_COUNT; a++) {
        if (strcmp(v, acl_names[a]) != 0)
            continue;
        /* S3 ignores the bucket-owner-* ACLs on a bucket: it is its owner's. */
        bool owner_only =
            a == STOR_ACL_BUCKET_OWNER_READ || a == STOR_ACL_BUCKET_OWNER_FULL_CONTROL;
        *acl_p = !object && owner_only ? STOR_ACL_PRIVATE : (stor_acl_t)a;
        return S3E_NONE;
    }
    if (strcmp(v, "aws-exec-read") == 0 || strcmp(v, "log-delivery-write") == 0) {
        *why_p = "This canned ACL is not implemented.";
        return S3E_NOT_IMPLEMENTED;
    }
    *why_p = NULL;
    return S3E_INVALID_ARGUMENT;
}

/* The grant set a canned ACL stands for, in the order GetBucketAcl lists
 * it: who (a user id, or a group URI) and the permission name. */
typedef struct grant_view {
    const char *user, *group, *permission;
} grant_view_t;

static size_t canned_view(stor_acl_t acl, bool object, const char *owner, const char *bucket_owner,
                          grant_view_t out[4])
{
    size_t n = 0;
    out[n++] = (grant_view_t){owner, NULL, "FULL_CONTROL"};
    canned_grants_t g = canned(acl, object);
    if (g.all_users & P_READ)
        out[n++] = (grant_view_t){NULL, ALL_USERS, "READ"};
    if (g.all_users & P_WRITE)
        out[n++] = (grant_view_t){NULL, ALL_USERS, "WRITE"};
    if (g.auth_users & P_READ)
        out[n++] = (grant_view_t){NULL, AUTH_USERS, "READ"};
    if (g.bucket_owner && bucket_owner && strcmp(bucket_owner, owner) != 0)
        out[n++] =
            (grant_view_t){bucket_owner, NULL, g.bucket_owner == P_FULL ? "FULL_CONTROL" : "READ"};
    return n;
}

void s3_acl_xml(buf_t *xml, stor_acl_t acl, bool object, const char *owner,
                const char *bucket_owner)
{
    grant_view_t v[4];
    size_t n = canned_view(acl, object, owner, bucket_owner, v);
    s3_xml_open(xml, "AccessControlPolicy");
    s3_xml_principal(xml, "Owner", owner);
    buf_append_str(xml, "<AccessControlList>");
    for (size_t i = 0; i < n; i++) {
        buf_append_str(xml, "<Grant><Grantee "
                            "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" ");
        if (v[i].user) {
            buf_append_str(xml, "xsi:type=\"CanonicalUser\"><ID>");
            buf_append_xml(xml, v[i].user);
            buf_append_str(xml, "</ID><DisplayName>");
            buf_append_xml(xml, v[i].user);
            buf_append_str(xml, "</DisplayName>");
        } else {
            buf_append_str(xml, "xsi:type=\"Group\"><URI>");
            buf_append_xml(xml, v[i].group);
            buf_append_str(xml, "</URI>");
        }
        buf_append_str(xml, "</Grantee><Permission>");
        buf_append_str(xml, v[i].permission);
        buf_append_str(xml, "</Permission></Grant>");
    }
    buf_append_str(xml, "</AccessControlList></AccessControlPolicy>");
}

/* Whether grants (in any order) are exactly the set v holds. */
static bool same_grants(const xml_grant_t *grants, size_t n, const grant_view_t *v, size_t nv)
{
    if (n != nv)
        return false;
    bool used[4] = {false, false, false, false};
    for (size_t i = 0; i < n; i++) {
        bool found = false;
        for (size_t j = 0; j < nv && !found; j++) {
            if (used[j] || strcmp(grants[i].permission, v[j].permission) != 0)
                continue;
            if (v[j].user ? grants[i].id && strcmp(grants[i].id, v[j].user) == 0
                          : grants[i].uri && strcmp(grants[i].uri, v[j].group) == 0)
                used[j] = found = true;
        }
        if (!found)
            return false;
    }
    return true;
}

s3_error_t s3_acl_from_xml(const char *body, size_t len, bool object, const char *owner,
                           const char *bucket_owner, stor_acl_t *acl_p, const char **why_p)
{
    char *xml_owner = NULL;
    xml_grant_t *grants = NULL;
    size_t n = 0;
    *why_p = NULL;
    if (xml_parse_acl(body, len, &xml_owner, &grants, &n) != 0)
        return S3E_MALFORMED_ACL;
    s3_error_t err = S3E_NONE;
    if (xml_owner && strcmp(xml_owner, owner) != 0) {
        err = S3E_ACCESS_DENIED;
        *why_p = "The Owner in the ACL is not the resource's owner.";
    } else {
        /* A grant set equal to a canned ACL's is that canned ACL. */
        err = S3E_NOT_IMPLEMENTED;
        *why_p = "Only grant sets equal to a canned ACL (private, public-read, "
                 "public-read-write, authenticated-read, bucket-owner-read, "
                 "bucket-owner-full-control) are implemented.";
        for (int a = 0; a < STOR_ACL_COUNT && err != S3E_NONE; a++) {
            grant_view_t v[4];
            size_t nv = canned_view((stor_acl_t)a, object, owner, bucket_owner, v);
            if (same_grants(grants, n, v, nv)) {
                *acl_p = (stor_acl_t)a;
                err = S3E_NONE;
                *why_p = NULL;
            }
        }
    }
    xml_acl_free(xml_owner, grants, n);
    return err;
}
