/* Lifecycle configurations (src/s3/lifecycle.h): every input is a
 * PutBucketLifecycleConfiguration body. Invariants: a refusal says why; a
 * body that validates has at least one rule, and its canonical document
 * validates again to the same canonical document (what is stored is what
 * GetBucketLifecycleConfiguration answers); expiry times are total on it,
 * a midnight or a rule's date, and the x-amz-expiration value holds no
 * control character or stray quote. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/buf.h"
#include "fuzz_util.h"
#include "s3/lifecycle.h"

static void canonical(const s3_lc_t *cfg, buf_t *xml)
{
    buf_init(xml, 1 << 20);
    buf_append_str(xml, "<LifecycleConfiguration>");
    s3_lc_xml(cfg, xml);
    buf_append_str(xml, "</LifecycleConfiguration>");
}

static const char *tag_fn(void *ctx, const char *key)
{
    (void)ctx;
    return key[0] == 'a' ? "" : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *body = fuzz_copy(data, size);
    s3_lc_t cfg, again;
    char why[512] = "";
    if (s3_lc_from_xml(body, size, &cfg, why, sizeof why) != S3E_NONE) {
        FUZZ_CHECK(why[0] != '\0');
        free(body);
        return 0;
    }
    FUZZ_CHECK(cfg.n_rules >= 1 && cfg.n_rules <= S3_LC_MAX_RULES);
    buf_t xml, xml2;
    canonical(&cfg, &xml);
    FUZZ_CHECK(s3_lc_from_xml(xml.data, xml.len, &again, why, sizeof why) == S3E_NONE);
    canonical(&again, &xml2);
    FUZZ_CHECK(xml2.len == xml.len && memcmp(xml2.data, xml.data, xml.len) == 0);
    const char *keys[] = {"", "logs/a", "a"};
    for (size_t k = 0; k < 3; k++) {
        const s3_lc_rule_t *rule;
        int64_t t = s3_lc_expiry(&cfg, keys[k], k * 1000, 1700000123, 86400, tag_fn, NULL, &rule);
        if (t < 0) {
            FUZZ_CHECK(rule == NULL);
            continue;
        }
        FUZZ_CHECK(rule && rule->enabled);
        FUZZ_CHECK(t == rule->exp_date || t % 86400 == 0);
        char value[S3_LC_MAX_ID + 96];
        s3_lc_expiration_header(t, rule, value, sizeof value);
        size_t quotes = 0;
        for (const unsigned char *c = (const unsigned char *)value; *c; c++) {
            FUZZ_CHECK(*c >= 0x20 && *c != 0x7f);
            quotes += *c == '"';
        }
        FUZZ_CHECK(quotes == 4);
    }
    s3_lc_free(&again);
    s3_lc_free(&cfg);
    buf_free(&xml);
    buf_free(&xml2);
    free(body);
    return 0;
}
