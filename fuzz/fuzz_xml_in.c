/* The server's XML request-body parsers (src/s3/xml_in.h): CompleteMultipartUpload,
 * DeleteObjects and CreateBucketConfiguration. Every input goes to all three.
 * Invariants: on success the part numbers are 1..10000, there is at least one
 * part / object and at most 1000 objects, strings are NUL-terminated and no
 * longer than the body, quiet is 0 or 1, and the location constraint fits
 * the declared output size (checked with a canary past it). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "s3/xml_in.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *body = fuzz_copy(data, size);

    xml_complete_part_t *parts = NULL;
    size_t n = 0;
    if (s3_xml_parse_complete(body, size, &parts, &n) == 0) {
        FUZZ_CHECK(n >= 1 && parts);
        for (size_t i = 0; i < n; i++) {
            FUZZ_CHECK(parts[i].number >= 1 && parts[i].number <= 10000);
            FUZZ_CHECK(parts[i].etag && strlen(parts[i].etag) <= size);
            for (int k = 0; k < CHECKSUM_NONE; k++)
                FUZZ_CHECK(!parts[i].checksums[k] || strlen(parts[i].checksums[k]) <= size);
        }
        s3_xml_complete_parts_free(parts, n);
    }

    int quiet = -1;
    xml_delete_object_t *objs = NULL;
    n = 0;
    if (s3_xml_parse_delete(body, size, &quiet, &objs, &n) == 0) {
        FUZZ_CHECK(quiet == 0 || quiet == 1);
        FUZZ_CHECK(n >= 1 && n <= 1000 && objs);
        for (size_t i = 0; i < n; i++)
            FUZZ_CHECK(objs[i].key && strlen(objs[i].key) <= size);
        s3_xml_delete_objects_free(objs, n);
    }

    char loc[64 + 8];
    memset(loc, 0x5a, sizeof(loc));
    if (s3_xml_parse_create_bucket(body, size, loc, 64) == 0)
        FUZZ_CHECK(memchr(loc, '\0', 64) != NULL);
    for (size_t i = 64; i < sizeof(loc); i++)
        FUZZ_CHECK(loc[i] == 0x5a);

    free(body);
    return 0;
}
