/* The S3 bucket-policy language (docs/security.md has what is supported):
 * a policy document parsed and validated as PutBucketPolicy does, and
 * evaluated for one request. Knows nothing of requests, users or storage:
 * the caller (access.c) says what the request asks and answers condition
 * keys through a callback. */
#ifndef S3R_S3_POLICY_H
#define S3R_S3_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "common/s3r_limits.h" /* S3R_POLICY_*: the bounds a policy must keep */

typedef struct s3_policy s3_policy_t;

typedef enum s3_policy_effect {
    S3_POLICY_NONE = 0, /* no statement applies: the decision is the ACL's */
    S3_POLICY_ALLOW,
    S3_POLICY_DENY, /* an explicit Deny: wins over every Allow */
} s3_policy_effect_t;

/* Answers condition key name (lower-case, e.g. "aws:sourceip") for the
 * request: its value (a string; numbers, dates and booleans as text), or
 * NULL when the request has none. buf (cap bytes) may hold the value. */
typedef const char *(*s3_policy_key_fn)(void *ctx, const char *name, char *buf, size_t cap);

/* What one request asks. */
typedef struct s3_policy_query {
    const char *action;    /* "s3:GetObject" */
    const char *resource;  /* "arn:aws:s3:::bucket" or "arn:aws:s3:::bucket/key" */
    const char *principal; /* the requester's access key; NULL: anonymous */
    s3_policy_key_fn key;
    void *ctx;
} s3_policy_query_t;

/* Parses and validates len bytes of text as the policy of bucket. On
 * success returns the policy and *canon_p its canonical text (compact JSON;
 * malloc'd: the caller frees it) when canon_p is not NULL. On failure
 * returns NULL with why (cap bytes) the MalformedPolicy message, as S3
 * words it where known. */
s3_policy_t *s3_policy_parse(const char *text, size_t len, const char *bucket, char **canon_p,
                             char *why, size_t cap);
void s3_policy_free(s3_policy_t *p);

/* Deny if a Deny statement applies to q, else Allow if an Allow statement
 * does, else none. */
s3_policy_effect_t s3_policy_eval(const s3_policy_t *p, const s3_policy_query_t *q);

/* Whether the policy grants anyone (a wildcard principal; NotPrincipal only
 * denies) something without a condition that narrows who (source address, account,
 * user...): GetBucketPolicyStatus's IsPublic, BlockPublicPolicy's test. */
bool s3_policy_is_public(const s3_policy_t *p);

#endif
