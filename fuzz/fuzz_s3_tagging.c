/* Tag sets (src/s3/tagging.h): the first byte picks the parser, the rest is
 * an x-amz-tagging header value (even) or a Tagging body (odd, checked as a
 * bucket's set). Invariants: a refusal says why; an accepted set keeps S3's
 * limits (count, lengths, no aws: key, no key twice); its stored form
 * decodes to the same tags, in order, and counts them; its Tagging XML
 * parses back to the same tags (unless a key or value starts or ends with a
 * space: XML leaves are trimmed, docs/operations.md). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/buf.h"
#include "common/s3r_limits.h"
#include "fuzz_util.h"
#include "s3/tagging.h"

static void same(const s3_tags_t *a, const s3_tags_t *b)
{
    FUZZ_CHECK(a->n == b->n);
    for (size_t i = 0; i < a->n; i++)
        FUZZ_CHECK(strcmp(a->v[i].key, b->v[i].key) == 0 &&
                   strcmp(a->v[i].value, b->v[i].value) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    bool xml = data[0] & 1;
    char *in = fuzz_cstr(data + 1, size - 1);
    s3_tags_t t;
    const char *why = NULL;
    s3_error_t err = xml ? s3_tags_from_xml(in, size - 1, S3_TAGS_BUCKET, &t, &why)
                         : s3_tags_from_header(in, &t, &why);
    if (err != S3E_NONE) {
        FUZZ_CHECK(err == S3E_MALFORMED_XML || why != NULL);
        free(in);
        return 0;
    }
    FUZZ_CHECK(t.n <= (xml ? S3R_MAX_BUCKET_TAGS : S3R_MAX_OBJECT_TAGS));
    for (size_t i = 0; i < t.n; i++) {
        FUZZ_CHECK(t.v[i].key[0] != '\0' && strncmp(t.v[i].key, "aws:", 4) != 0);
        for (size_t j = 0; j < i; j++)
            FUZZ_CHECK(strcmp(t.v[i].key, t.v[j].key) != 0);
    }
    int nomem;
    char *stored = s3_tags_encode(&t, &nomem);
    FUZZ_CHECK(!nomem && (stored != NULL) == (t.n > 0));
    FUZZ_CHECK(s3_tags_count(stored) == t.n);
    s3_tags_t back;
    FUZZ_CHECK(s3_tags_from_stored(stored, &back) == 0);
    same(&t, &back);
    s3_tags_free(&back);
    bool spaced = false;
    for (size_t i = 0; i < t.n; i++) {
        const char *k = t.v[i].key, *v = t.v[i].value;
        size_t kl = strlen(k), vl = strlen(v);
        spaced |= k[0] == ' ' || k[kl - 1] == ' ' || (vl && (v[0] == ' ' || v[vl - 1] == ' '));
    }
    if (spaced) {
        free(stored);
        s3_tags_free(&t);
        free(in);
        return 0;
    }
    buf_t doc;
    buf_init(&doc, 1 << 20);
    buf_append_str(&doc, "<Tagging>");
    s3_tags_xml(&t, &doc);
    buf_append_str(&doc, "</Tagging>");
    FUZZ_CHECK(s3_tags_from_xml(doc.data, doc.len, S3_TAGS_BUCKET, &back, &why) == S3E_NONE);
    same(&t, &back);
    s3_tags_free(&back);
    buf_free(&doc);
    free(stored);
    s3_tags_free(&t);
    free(in);
    return 0;
}
