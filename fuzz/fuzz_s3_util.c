/* The S3 frontend's small parsers (src/s3/s3_util.h, common/date.h): s3_range_parse,
 * s3_url_decode (both '+' settings), s3_utf8_valid, date_parse_http and
 * s3_bucket_name_valid. The first 8 input bytes are the object size for the
 * range check (big-endian; their low byte alone when byte 0 is even, to keep
 * sizes small and interesting), the rest is the string. Invariants: an OK
 * range has first <= last < size; a decoded URL is no longer than its source,
 * has no NUL inside and is the identity on input without '%' (and '+');
 * a valid bucket name is 3..63 characters of [a-z0-9.-]; a parsed HTTP date
 * formats and parses back to the same time. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/date.h"
#include "fuzz_util.h"
#include "s3/s3_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    uint64_t osize = 0;
    for (int i = 0; i < 8; i++)
        osize = osize << 8 | data[i];
    if (!(data[0] & 1))
        osize &= 0xff;
    data += 8;
    size -= 8;
    char *s = fuzz_cstr(data, size);

    uint64_t first = UINT64_MAX, last = 0;
    s3_range_result_t r = s3_range_parse(s, osize, &first, &last);
    FUZZ_CHECK(r == S3_RANGE_NONE || r == S3_RANGE_OK || r == S3_RANGE_UNSATISFIABLE);
    if (r == S3_RANGE_OK)
        FUZZ_CHECK(first <= last && last < osize);

    for (int plus = 0; plus < 2; plus++) {
        char *d = s3_url_decode(data ? (const char *)data : "", size, plus);
        if (d) {
            size_t n = strlen(d);
            FUZZ_CHECK(n <= size);
            /* Raw NUL bytes pass through (callers hand it C strings), so the
             * identity is checked on NUL-free input only. */
            if (!memchr(data, '%', size) && !memchr(data, '\0', size) &&
                !(plus && memchr(data, '+', size)))
                FUZZ_CHECK(n == size && memcmp(d, data, size) == 0);
            free(d);
        }
    }

    bool utf8 = s3_utf8_valid((const char *)data, size);
    if (utf8)
        FUZZ_CHECK(strlen(s) == size); /* no NUL inside */

    int64_t t = date_parse_http(s);
    if (t >= 0) {
        char out[40];
        date_format_http(t, out);
        FUZZ_CHECK(date_parse_http(out) == t);
    }

    if (s3_bucket_name_valid(s)) {
        size_t n = strlen(s);
        FUZZ_CHECK(n >= 3 && n <= 63);
        for (size_t i = 0; i < n; i++)
            FUZZ_CHECK((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
                       s[i] == '.' || s[i] == '-');
    }

    free(s);
    return 0;
}
