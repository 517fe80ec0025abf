/* Unit tests for src/s3/post_policy.c: policy documents, expiration and
 * conditions against a form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/hash.h"
#include "s3/post_policy.h"

#define NOW 1700000000 /* 2023-11-14T22:13:20Z */

static const char *const names[] = {"key", "Content-Type", "x-amz-meta-a", "policy", "x-ignore-x"};
static const char *const values[] = {"uploads/a.txt", "text/plain, text/html", "1", "...", "y"};
static const post_form_view_t form = {
    .names = names, .values = values, .n = 5, .bucket = "bkt", .key = "uploads/a.txt"};

/* Checks the JSON document doc against form; *why_p gets the message. */
static s3_error_t check(const char *doc, uint64_t *min_p, uint64_t *max_p, char **why_p)
{
    char b64[4096];
    hash_base64_encode((const uint8_t *)doc, strlen(doc), b64);
    *why_p = NULL;
    return s3_post_policy_check(b64, NOW, &form, min_p, max_p, why_p);
}

#define ALL_FIELDS "{\"key\":\"uploads/a.txt\"},[\"starts-with\",\"$x-amz-meta-a\",\"\"]"

static void test_accepted(void **state)
{
    (void)state;
    uint64_t lo = 7, hi = 7;
    char *why;
    assert_int_equal(check("{\"expiration\":\"2023-11-14T22:13:21.000Z\",\"conditions\":["
                           "{\"bucket\":\"bkt\"},[\"starts-with\",\"$key\",\"uploads/\"],"
                           "[\"starts-with\",\"$Content-Type\",\"text/\"],"
                           "[\"eq\",\"$X-Amz-Meta-A\",\"1\"],[\"content-length-range\",1,10]]}",
                           &lo, &hi, &why),
                     S3E_NONE);
    assert_int_equal(lo, 1);
    assert_int_equal(hi, 10);
    assert_int_equal(check("{\"expiration\":\"2023-11-14T22:13:21Z\",\"conditions\":[" ALL_FIELDS
                           ",[\"starts-with\",\"$Content-Type\",\"\"]]}",
                           &lo, &hi, &why),
                     S3E_NONE);
    assert_int_equal(lo, 0);
    assert_true(hi == UINT64_MAX);
}

static void expect(const char *doc, s3_error_t err, const char *why_prefix)
{
    uint64_t lo, hi;
    char *why;
    assert_int_equal(check(doc, &lo, &hi, &why), err);
    assert_non_null(why);
    assert_true(strncmp(why, why_prefix, strlen(why_prefix)) == 0);
    free(why);
}

static void test_refused(void **state)
{
    (void)state;
    expect("{\"expiration\":\"2023-11-14T22:13:20Z\",\"conditions\":[" ALL_FIELDS
           ",[\"starts-with\",\"$Content-Type\",\"\"]]}",
           S3E_ACCESS_DENIED, "Invalid according to Policy: Policy expired.");
    expect("{\"expiration\":\"2099-01-01T00:00:00Z\",\"conditions\":[" ALL_FIELDS
           ",{\"Content-Type\":\"text/plain\"}]}",
           S3E_ACCESS_DENIED, "Invalid according to Policy: Policy Condition failed: ");
    /* starts-with on a Content-Type list: every type must match */
    expect("{\"expiration\":\"2099-01-01T00:00:00Z\",\"conditions\":[" ALL_FIELDS
           ",[\"starts-with\",\"$Content-Type\",\"text/plain\"]]}",
           S3E_ACCESS_DENIED, "Invalid according to Policy: Policy Condition failed: ");
    expect("{\"expiration\":\"2099-01-01T00:00:00Z\",\"conditions\":[" ALL_FIELDS
           ",{\"bucket\":\"other\"},[\"starts-with\",\"$Content-Type\",\"\"]]}",
           S3E_ACCESS_DENIED, "Invalid according to Policy: Policy Condition failed: ");
    expect("{\"expiration\":\"2099-01-01T00:00:00Z\",\"conditions\":[" ALL_FIELDS "]}",
           S3E_ACCESS_DENIED, "Invalid according to Policy: Extra input fields: Content-Type");
    expect("not json", S3E_INVALID_POLICY, "Invalid Policy: Invalid JSON.");
    expect("[1]", S3E_INVALID_POLICY, "Invalid Policy: Invalid JSON.");
    expect("{\"conditions\":[]}", S3E_INVALID_POLICY, "Invalid Policy: Policy missing expiration.");
    expect("{\"expiration\":\"2099-01-01T00:00:00Z\"}", S3E_INVALID_POLICY,
           "Invalid Policy: Policy missing conditions.");
    expect("{\"expiration\":\"soon\",\"conditions\":[]}", S3E_INVALID_POLICY,
           "Invalid Policy: Invalid 'expiration'");
    expect("{\"expiration\":\"2099-01-01T00:00:00Z\",\"conditions\":[[\"content-length-range\","
           "10,1]]}",
           S3E_INVALID_POLICY, "Invalid Policy: Invalid content-length-range");
    expect("{\"expiration\":\"2099-01-01T00:00:00Z\",\"conditions\":[[\"matches\",\"$key\","
           "\"x\"]]}",
           S3E_INVALID_POLICY, "Invalid Policy: Invalid Condition");
    expect("{\"expiration\":\"2099-01-01T00:00:00Z\",\"conditions\":[{\"key\":1}]}",
           S3E_INVALID_POLICY, "Invalid Policy: Invalid Simple-Condition");
}

static void test_bad_base64(void **state)
{
    (void)state;
    uint64_t lo, hi;
    char *why = NULL;
    assert_int_equal(s3_post_policy_check("!!!", NOW, &form, &lo, &hi, &why), S3E_INVALID_POLICY);
    free(why);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepted),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_bad_base64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
