/* The SigV4 parsers and canonicalisers of src/common/sigv4.h, all fed the
 * same input as a C string: sigv4_parse_authorization, sigv4_parse_credential,
 * sigv4_canonical_query (both skip_signature settings), sigv4_uri_encode_path
 * and date_parse_amz. Invariants: parsed fields are NUL-terminated
 * inside their arrays and the scope is date8/region/service/aws4_request;
 * canonical_query is idempotent and emits only name=value pairs; the encoded
 * path uses only unreserved characters, '/' and %XY, and decodes back to the
 * input ("" gives "/"); a parsed x-amz-date formats back to the same string. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/date.h"
#include "common/sigv4.h"
#include "fuzz_util.h"
#include "s3/s3_util.h"

#define TERMINATED(a) FUZZ_CHECK(memchr((a), '\0', sizeof(a)) != NULL)

static void check_auth(const sigv4_auth_t *a, bool full)
{
    TERMINATED(a->access_key);
    TERMINATED(a->date8);
    TERMINATED(a->region);
    TERMINATED(a->service);
    TERMINATED(a->scope);
    FUZZ_CHECK(strlen(a->date8) == 8);
    char scope[sizeof(a->scope) + 64];
    snprintf(scope, sizeof(scope), "%s/%s/%s/aws4_request", a->date8, a->region, a->service);
    FUZZ_CHECK(strcmp(scope, a->scope) == 0);
    if (full) {
        TERMINATED(a->signed_headers);
        TERMINATED(a->signature);
    }
}

static bool unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    sigv4_auth_t a;

    memset(&a, 0x5a, sizeof(a));
    if (sigv4_parse_authorization(s, &a) == 0)
        check_auth(&a, true);

    memset(&a, 0x5a, sizeof(a));
    if (sigv4_parse_credential(s, &a) == 0)
        check_auth(&a, false);

    for (int skip = 0; skip < 2; skip++) {
        buf_t q1, q2;
        buf_init(&q1, 4 * size + 64);
        buf_init(&q2, 12 * size + 64);
        if (sigv4_canonical_query(s, skip, &q1) == 0) {
            const char *c = q1.data ? q1.data : "";
            FUZZ_CHECK(strlen(c) == q1.len);
            FUZZ_CHECK(sigv4_canonical_query(c, skip, &q2) == 0);
            FUZZ_CHECK(q1.len == q2.len && (q1.len == 0 || memcmp(q1.data, q2.data, q1.len) == 0));
            if (skip)
                FUZZ_CHECK(q1.len == 0 || strncmp(c, "X-Amz-Signature=", 16) != 0);
        }
        buf_free(&q1);
        buf_free(&q2);
    }

    buf_t path;
    buf_init(&path, 3 * size + 16);
    if (sigv4_uri_encode_path(s, &path) == 0 && path.len) {
        for (size_t i = 0; i < path.len; i++) {
            unsigned char c = (unsigned char)path.data[i];
            if (c == '%') {
                FUZZ_CHECK(i + 2 < path.len);
                FUZZ_CHECK(hash_hex_digit_value(path.data[i + 1]) >= 0 &&
                           hash_hex_digit_value(path.data[i + 2]) >= 0);
                i += 2;
            } else {
                FUZZ_CHECK(c == '/' || unreserved(c));
            }
        }
        char *back = s3_url_decode(path.data, path.len, false);
        /* "" is documented to encode as "/". */
        FUZZ_CHECK(back && strcmp(back, *s ? s : "/") == 0);
        free(back);
    }
    buf_free(&path);

    int64_t t = date_parse_amz(s);
    if (t >= 0) {
        char out[17];
        date_format_amz(t, out);
        FUZZ_CHECK(strcmp(out, s) == 0);
    }

    free(s);
    return 0;
}
