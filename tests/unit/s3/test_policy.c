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
#include "s3/policy_form.h"

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

/* Many stars against a long key that almost matches (this returns at
 * once). */
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

/* The matching a bucket's owner can make every request to the bucket pay:
 * Resource patterns built to backtrack (a long run after a star that
 * almost matches the key), filling a 20 KiB policy, against a 1,000-byte
 * key. The work stays near a scan of the key per pattern (an ordinary
 * policy's cost), not the key's length times the pattern's. */
static void test_matching_stays_linear(void **state)
{
    (void)state;
    static const struct {
        const char *run; /* repeated after the pattern's first star */
        int times;
        const char *tail;
    } shapes[] = {
        {"a", 500, "b"},  /* the last segment */
        {"a", 500, "b*"}, /* a middle one */
        {"a?", 250, "b*"}, {"a?", 30, "b*"}, {"a?", 250, "b"},
    };
    char key[1100], why[256];
    memset(key, 'a', 1000);
    key[1000] = '\0';
    char arn[1200];
    snprintf(arn, sizeof arn, "arn:aws:s3:::bkt/%s", key);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        buf_t pat, doc;
        buf_init(&pat, 4096);
        buf_init(&doc, 32768);
        buf_printf(&pat, "arn:aws:s3:::bkt/*");
        for (int t = 0; t < shapes[i].times; t++)
            buf_append_str(&pat, shapes[i].run);
        buf_append_str(&pat, shapes[i].tail);
        buf_printf(&doc, "{\"Statement\":{\"Effect\":\"Deny\",\"Principal\":\"*\","
                         "\"Action\":\"s3:GetObject\",\"Resource\":[");
        int n = 0;
        while (doc.len + pat.len + 16 < 20000) {
            buf_printf(&doc, "%s\"%s\"", n ? "," : "", pat.data);
            n++;
        }
        buf_append_str(&doc, "]}}");
        s3_policy_t *p = s3_policy_parse(doc.data, doc.len, "bkt", NULL, why, sizeof why);
        if (!p)
            fail_msg("shape %zu: %s", i, why);
        unsigned long before = s3_policy_glob_steps;
        assert_int_equal(eval(p, NULL, "s3:GetObject", arn, NULL), S3_POLICY_NONE);
        unsigned long steps = s3_policy_glob_steps - before;
        print_message("shape %zu: %d patterns, %lu steps\n", i, n, steps);
        /* A scan of the ARN per pattern is n * 1,017; allow sixteen. */
        if (steps > 16ul * (unsigned long)n * strlen(arn))
            fail_msg("shape %zu: %d patterns took %lu steps", i, n, steps);
        s3_policy_free(p);
        buf_free(&pat);
        buf_free(&doc);
    }
}

/* The matcher as first written (one backtrack point), the reference for
 * what matches. */
static bool glob_reference(const char *p, const char *s)
{
    const char *star = NULL, *mark = NULL;
    while (*s) {
        if (*p == '*') {
            star = p++;
            mark = s;
        } else if (*p && (*p == '?' || *p == *s)) {
            p++;
            s++;
        } else if (star) {
            p = star + 1;
            s = ++mark;
        } else {
            return false;
        }
    }
    while (*p == '*')
        p++;
    return *p == '\0';
}

/* Every pattern of up to 5 characters over "ab?*" against every subject of
 * up to 6 over "ab?*", and long random ones (segments over 64 characters,
 * fixed seed): s3_policy_glob decides as the reference does. */
static void test_glob_as_reference(void **state)
{
    (void)state;
    static const char alpha[] = "ab?*";
    char p[6], s[7];
    for (int pl = 0; pl <= 5; pl++) {
        for (long pi = 0; pi < 1L << (2 * pl); pi++) {
            for (int k = 0; k < pl; k++)
                p[k] = alpha[(pi >> (2 * k)) & 3];
            p[pl] = '\0';
            for (int sl = 0; sl <= 6; sl++) {
                for (long si = 0; si < 1L << (2 * sl); si++) {
                    for (int k = 0; k < sl; k++)
                        s[k] = alpha[(si >> (2 * k)) & 3];
                    s[sl] = '\0';
                    if (s3_policy_glob(p, s) != glob_reference(p, s))
                        fail_msg("\"%s\" against \"%s\"", p, s);
                }
            }
        }
    }
    srand(2611);
    char lp[400], ls[2048]; /* a built subject: at most 4 characters per star */
    for (int round = 0; round < 20000; round++) {
        int pl = rand() % (int)(sizeof lp - 1), sl = rand() % 300;
        int stars = rand() % 4, quest = rand() % 8;
        for (int k = 0; k < pl; k++) {
            int r = rand() % 64;
            lp[k] = r < stars ? '*' : r < stars + quest ? '?' : "aab"[rand() % 3];
        }
        lp[pl] = '\0';
        for (int k = 0; k < sl; k++)
            ls[k] = "aab"[rand() % 3];
        ls[sl] = '\0';
        /* Half the subjects are built to match: the pattern with its
         * wildcards filled in. */
        if (round & 1) {
            int n = 0;
            for (int k = 0; k < pl; k++) {
                if (lp[k] == '*')
                    for (int f = rand() % 5; f > 0; f--)
                        ls[n++] = "ab"[rand() % 2];
                else
                    ls[n++] = lp[k] == '?' ? 'b' : lp[k];
            }
            ls[n] = '\0';
            assert_true(glob_reference(lp, ls));
        }
        if (s3_policy_glob(lp, ls) != glob_reference(lp, ls))
            fail_msg("\"%s\" against \"%s\"", lp, ls);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_keys),
        cmocka_unit_test(test_operator_types),
        cmocka_unit_test(test_principals_actions_resources),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_wildcards_do_not_explode),
        cmocka_unit_test(test_matching_stays_linear),
        cmocka_unit_test(test_glob_as_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
