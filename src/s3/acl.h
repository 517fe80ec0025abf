/* Access control lists of buckets and objects (docs/operations.md, "ACLs"):
 * canned ACLs (x-amz-acl), explicit grants from the x-amz-grant-* headers
 * and from AccessControlPolicy bodies, their stored form, the grant list a
 * canned ACL stands for, the permissions a list gives a requester, and the
 * AccessControlPolicy document written back. Knows nothing of requests or
 * storage: who the configured users are comes through a callback.
 *
 * A resource keeps a canned ACL (stor_acl_t, one byte) or, when its grants
 * are not exactly a canned ACL's, an explicit grant list in the stored form
 * below (stor_meta_t.grants for an object, the bucket's
 * STOR_BCFG_ACL_GRANTS document), which then replaces the canned ACL.
 *
 * The stored form: the line "G1\n" (its version), then one line per grant
 * in order, "<PERMISSION> <grantee>\n", with PERMISSION one of READ, WRITE,
 * READ_ACP, WRITE_ACP, FULL_CONTROL and grantee "user <id>", "AllUsers",
 * "AuthenticatedUsers" or "LogDelivery". An empty list is "G1\n" alone
 * (every grant revoked), never the absent form. */
#ifndef S3R_S3_ACL_H
#define S3R_S3_ACL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"
#include "s3/s3_errors.h"
#include "storage/storage.h"

/* Permission bits; FULL_CONTROL is all four. */
enum {
    S3_ACL_READ = 1,
    S3_ACL_WRITE = 2,
    S3_ACL_READ_ACP = 4,
    S3_ACL_WRITE_ACP = 8,
    S3_ACL_FULL = 15,
};

typedef enum s3_grantee_kind {
    S3_GRANTEE_USER,         /* a configured user, by access key (its canonical id) */
    S3_GRANTEE_ALL_USERS,    /* anyone, anonymous requests included */
    S3_GRANTEE_AUTH_USERS,   /* any request signed by a configured user */
    S3_GRANTEE_LOG_DELIVERY, /* kept and shown; s3rdmad delivers no logs, so it grants nothing */
} s3_grantee_kind_t;

#define S3_ACL_ID_MAX     128 /* a user id's bytes (access keys are 3-128) */
#define S3_ACL_CANNED_MAX 4   /* grants a canned ACL stands for, at most */

typedef struct s3_grant {
    s3_grantee_kind_t kind;
    int perm;                   /* one permission: S3_ACL_READ ... or S3_ACL_FULL */
    char id[S3_ACL_ID_MAX + 1]; /* S3_GRANTEE_USER: the user's id; "" otherwise */
} s3_grant_t;

typedef struct s3_acl {
    s3_grant_t *v;
    size_t n;   /* at most S3R_MAX_ACL_GRANTS */
    size_t cap; /* grants v has room for (0: v is not this list's to grow or free) */
} s3_acl_t;

/* Who the configured users are, asked by the parsers and the documents. */
typedef struct s3_acl_users {
    /* The display name of the user whose canonical id is id, or NULL for no
     * such user. */
    const char *(*name)(void *ctx, const char *id);
    /* The canonical id of the user with this e-mail address, or NULL for
     * none (NULL callback: no user has one). */
    const char *(*by_email)(void *ctx, const char *email);
    void *ctx;
} s3_acl_users_t;

/* The canned ACL x-amz-acl value name names, or -1 for one s3rdmad does not
 * keep. */
int s3_acl_canned_parse(const char *name);

/* The grant headers, in the order s3_acl_from_grant_headers takes their
 * values: x-amz-grant-read, -write, -read-acp, -write-acp, -full-control. */
#define S3_ACL_GRANT_HEADERS 5
extern const char *const s3_acl_grant_headers[S3_ACL_GRANT_HEADERS];

/* Parses the grant headers' values (values[i] for s3_acl_grant_headers[i],
 * NULL when absent): each a comma-separated list of id=..., uri=... or
 * emailAddress=..., the value optionally in double quotes. An e-mail
 * address becomes a grant to the user who has it, as S3 resolves one.
 * Fills *out (the caller frees it with s3_acl_free) or returns the error
 * with *why_p the message (static): InvalidArgument for a malformed list,
 * an unknown grantee type, an id no user has, a URI that is not one of the
 * three groups, or more than S3R_MAX_ACL_GRANTS grants;
 * UnresolvableGrantByEmailAddress for an address no user has. */
s3_error_t s3_acl_from_grant_headers(const char *const values[S3_ACL_GRANT_HEADERS],
                                     const s3_acl_users_t *users, s3_acl_t *out,
                                     const char **why_p);
/* Parses an AccessControlPolicy body: *owner_p gets its Owner's ID (NULL
 * when absent; the caller frees it) and *out its grants, in order (the
 * caller frees them with s3_acl_free). MalformedACLError for a body that is
 * not one, a permission S3 does not know or more than S3R_MAX_ACL_GRANTS
 * grants; then the grantee answers of s3_acl_from_grant_headers. *why_p is
 * the message (static; NULL: the default). */
s3_error_t s3_acl_from_xml(const char *body, size_t len, const s3_acl_users_t *users,
                           char **owner_p, s3_acl_t *out, const char **why_p);

/* The grant list canned ACL acl stands for on a resource with this owner
 * (bucket_owner: the object's bucket's owner; NULL for a bucket), in the
 * order GetBucketAcl lists it, into out; returns how many. The list points
 * nowhere: it may be wrapped as an s3_acl_t (cap 0) without freeing. */
size_t s3_acl_canned(stor_acl_t acl, bool object, const char *owner, const char *bucket_owner,
                     s3_grant_t out[S3_ACL_CANNED_MAX]);
/* The canned ACL whose grants are exactly a's (in any order), or -1. */
int s3_acl_match_canned(const s3_acl_t *a, bool object, const char *owner,
                        const char *bucket_owner);

/* Whether a grants anything to AllUsers or AuthenticatedUsers. */
bool s3_acl_is_public(const s3_acl_t *a);
/* The permission bits a gives requester (a user id; NULL: anonymous):
 * its own grants, AllUsers', and AuthenticatedUsers' when it is a user.
 * ignore_public (IgnorePublicAcls) drops the two groups' grants. */
int s3_acl_bits(const s3_acl_t *a, const char *requester, bool ignore_public);

/* The stored form of a (malloc'd; NULL only for want of memory). */
char *s3_acl_encode(const s3_acl_t *a);
/* Decodes len bytes of a stored form into *out (the caller frees it with
 * s3_acl_free); -1 when they do not decode (a damaged record: fail closed)
 * or on no memory. */
int s3_acl_decode(const char *stored, size_t len, s3_acl_t *out);
/* s3_acl_bits of the list len bytes of a stored form hold, read in place
 * (no allocation: every request on an object with grants asks), or -1 when
 * they do not decode. */
int s3_acl_stored_bits(const char *stored, size_t len, const char *requester, bool ignore_public);

/* Appends the AccessControlPolicy document of a resource with this owner
 * and grant list; display names come from users (an id no user has is its
 * own display name). */
void s3_acl_xml(buf_t *xml, const char *owner, const s3_acl_t *a, const s3_acl_users_t *users);

void s3_acl_free(s3_acl_t *a);

#endif
