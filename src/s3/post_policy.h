/* The POST policy of a browser form upload (S3 "Creating a POST policy"):
 * the base64 JSON document with an expiration and conditions that the form's
 * fields must meet. Pure: no I/O, no request; unit-tested in
 * tests/unit/s3/test_post_policy.c. post_object.c verifies the policy's
 * signature before asking this module whether the form meets it. */
#ifndef S3R_S3_POST_POLICY_H
#define S3R_S3_POST_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "s3/s3_errors.h"

/* The form as the policy sees it: its fields (names as sent, any case) in
 * the order received, the bucket the form is posted to, and the key after
 * ${filename} was substituted. */
typedef struct post_form_view {
    const char *const *names;
    const char *const *values;
    size_t n;
    const char *bucket;
    const char *key;
} post_form_view_t;

/* Checks the base64 policy document policy_b64 against form at now_s:
 *  - it must decode to a JSON object with "expiration" (ISO 8601, UTC) and
 *    "conditions" (an array), else 400 InvalidPolicyDocument;
 *  - it must not have expired: 403 AccessDenied "Invalid according to
 *    Policy: Policy expired.";
 *  - every condition must hold ({"name": "value"}, ["eq", "$name", "value"],
 *    ["starts-with", "$name", "prefix"]; names compared without case, an
 *    absent field is ""): 403 AccessDenied "Invalid according to Policy:
 *    Policy Condition failed: ...";
 *  - every form field but policy, x-amz-signature (or V2's signature and
 *    AWSAccessKeyId), file and x-ignore-* must
 *    be named by a condition: 403 AccessDenied "... Extra input fields: ...".
 * ["content-length-range", min, max] is not checked here (the file's size is
 * known only once it was received): its bounds go to *min_p / *max_p (0 and
 * UINT64_MAX when the policy has none). Returns S3E_NONE, or the error with
 * its message, malloc'd, in *why_p (the caller frees it). */
s3_error_t s3_post_policy_check(const char *policy_b64, int64_t now_s, const post_form_view_t *form,
                                uint64_t *min_p, uint64_t *max_p, char **why_p);

#endif
