/* The bucket-policy language (src/s3/policy.h): every input is a policy
 * document PutBucketPolicy would receive. Invariants: a refusal says why; a
 * policy that parses has a canonical text that parses again to the same
 * canonical text; evaluating it for a request (condition keys answered
 * from the input's own bytes) gives one of the three effects. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "s3/policy.h"

/* Condition keys: a few fixed answers, the rest absent. */
static const char *key(void *ctx, const char *name, char *buf, size_t cap)
{
    (void)ctx;
    (void)buf;
    (void)cap;
    if (strcmp(name, "aws:sourceip") == 0)
        return "10.1.2.3";
    if (strcmp(name, "aws:currenttime") == 0)
        return "2026-11-26T01:02:03Z";
    if (strcmp(name, "aws:securetransport") == 0)
        return "false";
    if (strcmp(name, "s3:max-keys") == 0)
        return "1000";
    if (strcmp(name, "s3:prefix") == 0)
        return "a/";
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_copy(data, size);
    char why[256] = "";
    char *canon = NULL;
    s3_policy_t *p = s3_policy_parse(text, size, "bucket", &canon, why, sizeof(why));
    if (!p) {
        FUZZ_CHECK(why[0] != '\0');
        FUZZ_CHECK(canon == NULL);
        free(text);
        return 0;
    }
    FUZZ_CHECK(canon != NULL);
    char *canon2 = NULL;
    s3_policy_t *p2 = s3_policy_parse(canon, strlen(canon), "bucket", &canon2, why, sizeof(why));
    FUZZ_CHECK(p2 != NULL && canon2 != NULL && strcmp(canon, canon2) == 0);
    const char *actions[] = {"s3:GetObject", "s3:PutObject", "s3:ListBucket"};
    /* An object's short ARN and a long one (a key of 320 bytes with runs
     * a pattern's segments may almost match, and '?' and '*' of its own),
     * so segments longer than a machine word are matched too. */
    static char long_arn[400];
    if (!long_arn[0]) {
        size_t n = (size_t)snprintf(long_arn, sizeof long_arn, "arn:aws:s3:::bucket/");
        for (int i = 0; i < 20; i++)
            n += (size_t)snprintf(long_arn + n, sizeof long_arn - n, "aaaa/b?a*aaaab%02d", i);
    }
    const char *resources[] = {"arn:aws:s3:::bucket/k", long_arn, "arn:aws:s3:::bucket"};
    for (size_t a = 0; a < 3 * 2; a++) {
        for (size_t anon = 0; anon < 2; anon++) {
            s3_policy_query_t q = {.action = actions[a / 2],
                                   .resource = a / 2 == 2 ? resources[2] : resources[a % 2],
                                   .principal = anon ? NULL : "AKIDEXAMPLE",
                                   .key = key};
            s3_policy_effect_t e = s3_policy_eval(p, &q);
            FUZZ_CHECK(e == S3_POLICY_NONE || e == S3_POLICY_ALLOW || e == S3_POLICY_DENY);
            FUZZ_CHECK(e == s3_policy_eval(p2, &q));
        }
    }
    FUZZ_CHECK(s3_policy_is_public(p) == s3_policy_is_public(p2));
    s3_policy_free(p2);
    s3_policy_free(p);
    free(canon2);
    free(canon);
    free(text);
    return 0;
}
