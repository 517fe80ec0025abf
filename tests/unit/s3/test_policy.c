/* Unit tests for src/s3/policy.c: the bounds a policy must keep, IAM's
 * rules for keys a request lacks, the operators' types, wildcards. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "s3/policy.h"

/* The request's condition keys: "name=value" pairs. */
static const char *const *keys;

static const char *key_fn(void *ctx, const char *name, char *buf, size_t cap)
{
    (void)ctx, (void)buf, (void)cap;
    for (size_t i = 0; keys && keys[i]; i += 2)
        if (strcmp(keys[i], name) == 0)
            return keys[i + 1];
    return NULL;
}

static s3_policy_t *parse(const char *doc, char *why)
{
    return s3_policy_parse(doc, strlen(doc), "bkt", NULL, why, 256);
}

static s3_policy_effect_t eval(const s3_policy_t *p, const char *who, const char *action,
                               const char *resource, const char *const *k)
{
    keys = k;
    s3_policy_query_t q = {action, resource, who, key_fn, NULL};
    return s3_policy_eval(p, &q);
}

/* One Allow statement of GetObject on the bucket's objects with condition cond. */
static s3_policy_t *with_condition(const char *cond)
{
    char doc[2048], why[256];
    snprintf(doc, sizeof doc,
             "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
             "\"Resource\":\"arn:aws:s3:::bkt/*\",\"Condition\":%s}}",
             cond);
    s3_policy_t *p = parse(doc, why);
    if (!p)
        fail_msg("%s: %s", cond, why);
    return p;
}

static bool allowed(const char *cond, const char *const *k)
{
    s3_policy_t *p = with_condition(cond);
    bool r = eval(p, "AK", "s3:GetObject", "arn:aws:s3:::bkt/x", k) == S3_POLICY_ALLOW;
    s3_policy_free(p);
    return r;
}

static void test_missing_keys(void **state)
{
    (void)state;
    const char *const none[] = {NULL};
    const char *const has[] = {"s3:prefix", "a/b", NULL};
    /* A key the request lacks fails a positive operator... */
    assert_false(allowed("{\"StringEquals\":{\"s3:prefix\":\"a/b\"}}", none));
    assert_true(allowed("{\"StringEquals\":{\"s3:prefix\":\"a/b\"}}", has));
    /* ...and satisfies a negated one, ...IfExists and ForAllValues. */
    assert_true(allowed("{\"StringNotEquals\":{\"s3:prefix\":\"a/b\"}}", none));
    assert_false(allowed("{\"StringNotEquals\":{\"s3:prefix\":\"a/b\"}}", has));
    assert_true(allowed("{\"StringLikeIfExists\":{\"s3:prefix\":\"z*\"}}", none));
    assert_false(allowed("{\"StringLikeIfExists\":{\"s3:prefix\":\"z*\"}}", has));
    assert_true(allowed("{\"ForAllValues:StringEquals\":{\"s3:prefix\":\"z\"}}", none));
    assert_false(allowed("{\"ForAnyValue:StringEquals\":{\"s3:prefix\":\"z\"}}", none));
    /* Null tests presence. */
    assert_true(allowed("{\"Null\":{\"s3:prefix\":\"true\"}}", none));
    assert_false(allowed("{\"Null\":{\"s3:prefix\":\"true\"}}", has));
    assert_true(allowed("{\"Null\":{\"s3:prefix\":false}}", has));
}

static void test_operator_types(void **state)
{
    (void)state;
    const char *const k[] = {"aws:sourceip",
                             "2001:db8::7",
                             "s3:max-keys",
                             "25",
                             "aws:currenttime",
                             "2026-11-26T01:00:00Z",
                             "aws:securetransport",
                             "false",
                             "aws:username",
                             "Alice",
                             NULL};
    assert_true(
        allowed("{\"IpAddress\":{\"aws:SourceIp\":[\"10.0.0.0/8\",\"2001:db8::/32\"]}}", k));
    assert_false(allowed("{\"IpAddress\":{\"aws:SourceIp\":\"2001:db9::/32\"}}", k));
    assert_true(allowed("{\"NotIpAddress\":{\"aws:SourceIp\":\"127.0.0.1\"}}", k));
    assert_true(allowed("{\"NumericGreaterThan\":{\"s3:max-keys\":9}}", k)); /* not as strings */
    assert_false(allowed("{\"NumericLessThan\":{\"s3:max-keys\":\"9.5\"}}", k));
    assert_true(
        allowed("{\"DateLessThan\":{\"aws:CurrentTime\":\"2026-11-26T02:30:00+01:00\"}}", k));
    assert_false(
        allowed("{\"DateLessThan\":{\"aws:CurrentTime\":\"2026-11-26T01:30:00+01:00\"}}", k));
    assert_true(allowed("{\"DateGreaterThanEquals\":{\"aws:CurrentTime\":1700000000}}", k));
    assert_true(allowed("{\"Bool\":{\"aws:SecureTransport\":false}}", k));
    assert_true(allowed("{\"StringEqualsIgnoreCase\":{\"aws:username\":\"ALICE\"}}", k));
    assert_false(allowed("{\"StringEquals\":{\"aws:username\":\"ALICE\"}}", k));
    /* Two keys of one operator: both must hold. */
    assert_false(allowed("{\"StringEquals\":{\"aws:username\":\"Alice\",\"s3:prefix\":\"a\"}}", k));
}

static void test_principals_actions_resources(void **state)
{
    (void)state;
    char why[256];
    s3_policy_t *p =
        parse("{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":["
              "\"arn:aws:iam::123:user/path/AKALICE\",\"AKBOB\"]},\"Action\":\"s3:Get*\","
              "\"Resource\":\"arn:aws:s3:::bkt/pub/?.txt\"},"
              "{\"Effect\":\"Deny\",\"Principal\":\"*\",\"NotAction\":\"s3:GetObject\","
              "\"Resource\":\"arn:aws:s3:::bkt/pub/*\"}]}",
              why);
    assert_non_null(p);
    assert_int_equal(eval(p, "AKALICE", "s3:GetObject", "arn:aws:s3:::bkt/pub/a.txt", NULL),
                     S3_POLICY_ALLOW);
    assert_int_equal(eval(p, "AKBOB", "S3:GETOBJECTACL", "arn:aws:s3:::bkt/pub/a.txt", NULL),
                     S3_POLICY_DENY);
    assert_int_equal(eval(p, "AKBOB", "s3:GetObject", "arn:aws:s3:::bkt/pub/ab.txt", NULL),
                     S3_POLICY_NONE);
    assert_int_equal(eval(p, NULL, "s3:GetObject", "arn:aws:s3:::bkt/pub/a.txt", NULL),
                     S3_POLICY_NONE);
    assert_int_equal(eval(p, NULL, "s3:PutObject", "arn:aws:s3:::bkt/pub/a.txt", NULL),
                     S3_POLICY_DENY);
    assert_false(s3_policy_is_public(p));
    s3_policy_free(p);
}

/* A document at each bound is accepted and one past it refused. */
static void test_bounds(void **state)
{
    (void)state;
    char why[256];
    buf_t b;
    buf_init(&b, 1 << 20);
    buf_reserve(&b, S3R_POLICY_MAX_BYTES + 1);
    /* Statements: the shortest ones pass the size bound long before. */
    buf_append_str(&b, "{\"Statement\":[");
    for (int i = 0; i < S3R_POLICY_MAX_STATEMENTS + 1; i++)
        buf_printf(
            &b, "%s{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"*\",\"Resource\":\"*\"}",
            i ? "," : "");
    buf_append_str(&b, "]}");
    assert_true(b.len < S3R_POLICY_MAX_BYTES);
    assert_null(s3_policy_parse(b.data, b.len, "bkt", NULL, why, sizeof why));
    assert_non_null(strstr(why, "too many statements"));
    assert_null(s3_policy_parse(b.data, S3R_POLICY_MAX_BYTES + 1, "bkt", NULL, why, sizeof why));
    assert_non_null(strstr(why, "less than"));
    /* Values of one element. */
    buf_reset(&b);
    buf_append_str(&b, "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":[");
    for (int i = 0; i < S3R_POLICY_MAX_VALUES + 1; i++)
        buf_printf(&b, "%s\"s3:*\"", i ? "," : "");
    buf_append_str(&b, "],\"Resource\":\"*\"}}");
    assert_null(s3_policy_parse(b.data, b.len, "bkt", NULL, why, sizeof why));
    assert_non_null(strstr(why, "too many values"));
    /* Deep nesting is refused by the JSON parser's own depth bound, not by
     * a recursion of ours. */
    buf_reset(&b);
    for (int i = 0; i < 10000; i++)
        buf_append_str(&b, "[");
    assert_null(
        s3_policy_parse(b.data, b.len > 20000 ? 20000 : b.len, "bkt", NULL, why, sizeof why));
    buf_free(&b);
}

/* Many stars against a long key that almost matches: one backtrack point
 * keeps it at most len(pattern) * len(key) steps (this returns at once). */
static void test_wildcards_do_not_explode(void **state)
{
    (void)state;
    char res[1200], doc[2048], why[256];
    memset(res, 'a', sizeof res - 1);
    res[sizeof res - 1] = '\0';
    snprintf(doc, sizeof doc,
             "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
             "\"Resource\":\"arn:aws:s3:::bkt/*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b\"}}");
    s3_policy_t *p = parse(doc, why);
    assert_non_null(p);
    char arn[1300];
    snprintf(arn, sizeof arn, "arn:aws:s3:::bkt/%s", res);
    assert_int_equal(eval(p, NULL, "s3:GetObject", arn, NULL), S3_POLICY_NONE);
    arn[strlen(arn) - 1] = 'b';
    assert_int_equal(eval(p, NULL, "s3:GetObject", arn, NULL), S3_POLICY_ALLOW);
    assert_true(s3_policy_is_public(p));
    s3_policy_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_keys),
        cmocka_unit_test(test_operator_types),
        cmocka_unit_test(test_principals_actions_resources),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_wildcards_do_not_explode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
