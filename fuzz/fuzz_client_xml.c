/* The client library's S3 response parsers (src/client/xml.c, internal to
 * libs3rdma, so the file is included here the way tests/unit/client does):
 * s3c_xml_parse_error, s3c_xml_is_error, s3c_xml_parse_bucket_list,
 * s3c_xml_parse_object_list (twice, to exercise appending a second page),
 * s3c_xml_parse_upload_id, and the date parsers date_parse_iso8601 /
 * date_parse_http on the input as a string. Invariants: the fixed-size
 * error fields are NUL-terminated inside their arrays, list entries have
 * non-NULL strings no longer than the document, appending a page adds its
 * entries to the previous ones, and a truncated listing's token is a string. */
#include "../src/client/xml.c"

#include "fuzz_util.h"

#define TERMINATED(a) FUZZ_CHECK(memchr((a), '\0', sizeof(a)) != NULL)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *xml = fuzz_copy(data, size);

    s3c_error_doc_t e;
    memset(&e, 0x5a, sizeof(e));
    if (s3c_xml_parse_error(xml, size, &e) == 0) {
        TERMINATED(e.code);
        TERMINATED(e.message);
        TERMINATED(e.request_id);
    }
    int is_err = s3c_xml_is_error(xml, size);
    FUZZ_CHECK(is_err == 0 || is_err == 1 || is_err == -1);

    s3r_bucket_list_t *bl = NULL;
    if (s3c_xml_parse_bucket_list(xml, size, &bl) == 0) {
        FUZZ_CHECK(bl != NULL);
        for (size_t i = 0; i < bl->n_buckets; i++)
            FUZZ_CHECK(bl->buckets[i].name && strlen(bl->buckets[i].name) <= size);
    }
    s3r_bucket_list_free(bl);

    s3r_object_list_t *ol = NULL;
    if (s3c_xml_parse_object_list(xml, size, &ol) == 0) {
        FUZZ_CHECK(ol != NULL);
        size_t n1 = ol->n_objects, p1 = ol->n_prefixes;
        for (size_t i = 0; i < ol->n_objects; i++)
            FUZZ_CHECK(ol->objects[i].key && strlen(ol->objects[i].key) <= size);
        for (size_t i = 0; i < ol->n_prefixes; i++)
            FUZZ_CHECK(ol->prefixes[i] && strlen(ol->prefixes[i]) <= size);
        if (ol->next_token)
            FUZZ_CHECK(strlen(ol->next_token) <= size);
        if (s3c_xml_parse_object_list(xml, size, &ol) == 0)
            FUZZ_CHECK(ol->n_objects == 2 * n1 && ol->n_prefixes == 2 * p1);
    }
    s3r_object_list_free(ol);

    char *uid = NULL;
    if (s3c_xml_parse_upload_id(xml, size, &uid) == 0) {
        FUZZ_CHECK(uid != NULL && strlen(uid) <= size);
    }
    free(uid);

    char *s = fuzz_cstr(data, size);
    (void)date_parse_iso8601(s);
    (void)date_parse_http(s);
    free(s);
    free(xml);
    return 0;
}
