/* The CORS configuration (src/s3/cors.h): every input is a
 * PutBucketCors body. Invariants: a refusal says why; a body that validates
 * has a stored form that reads back, whose rules each allow at least one
 * origin and method, and whose GetBucketCors XML validates again to rules
 * with the same GetBucketCors XML; matching and the reply headers never fail on it, and
 * no header value holds a control character (the values go on the wire). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/buf.h"
#include "fuzz_util.h"
#include "s3/cors.h"

static void no_ctl(void *ctx, const char *name, const char *value)
{
    (void)ctx;
    FUZZ_CHECK(name && value);
    for (const unsigned char *c = (const unsigned char *)value; *c; c++)
        FUZZ_CHECK(*c >= 0x20 && *c != 0x7f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *body = fuzz_copy(data, size);
    buf_t stored;
    bool invalid = false;
    char why[256] = "";
    if (s3_cors_from_xml(body, size, &stored, &invalid, why, sizeof(why)) != 0) {
        FUZZ_CHECK(why[0] != '\0');
        free(body);
        return 0;
    }
    s3_cors_t cfg;
    FUZZ_CHECK(s3_cors_parse(stored.data, stored.len, &cfg) == 0);
    FUZZ_CHECK(cfg.n_rules >= 1);
    for (size_t i = 0; i < cfg.n_rules; i++)
        FUZZ_CHECK(cfg.rules[i].n_origins >= 1 && cfg.rules[i].methods != 0);
    buf_t xml, again;
    buf_init(&xml, 1 << 20);
    buf_append_str(&xml, "<CORSConfiguration>");
    s3_cors_xml(&cfg, &xml); /* the rules */
    buf_append_str(&xml, "</CORSConfiguration>");
    FUZZ_CHECK(s3_cors_from_xml(xml.data, xml.len, &again, &invalid, why, sizeof(why)) == 0);
    s3_cors_t cfg2;
    FUZZ_CHECK(s3_cors_parse(again.data, again.len, &cfg2) == 0);
    buf_t xml2;
    buf_init(&xml2, 1 << 20);
    buf_append_str(&xml2, "<CORSConfiguration>");
    s3_cors_xml(&cfg2, &xml2);
    buf_append_str(&xml2, "</CORSConfiguration>");
    FUZZ_CHECK(xml2.len == xml.len && memcmp(xml2.data, xml.data, xml.len) == 0);
    s3_cors_free(&cfg2);
    buf_free(&xml2);
    const char *origins[] = {"https://example.com", "http://a.b", "null"};
    for (size_t o = 0; o < 3; o++) {
        const s3_cors_rule_t *r =
            s3_cors_match(&cfg, origins[o], s3_cors_method_bit("GET"), "x-amz-date, range");
        if (r)
            s3_cors_headers(r, origins[o], true, "x-amz-date, range", no_ctl, NULL);
    }
    s3_cors_free(&cfg);
    buf_free(&again);
    buf_free(&xml);
    buf_free(&stored);
    free(body);
    return 0;
}
