/* Unit tests of the client's S3 XML response parsing (expat). The file
 * under test is included, SPDK style. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "../../../src/client/xml.c"

#define XML(s) s, strlen(s)

static void test_error(void **state)
{
    (void)state;
    s3c_error_doc_t e;
    assert_int_equal(s3c_xml_parse_error(XML("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                                             "<Error><Code>NoSuchKey</Code>"
                                             "<Message>The specified key does not exist.</Message>"
                                             "<Key>a/b</Key><RequestId>r-1</RequestId></Error>"),
                                         &e),
                     0);
    assert_string_equal(e.code, "NoSuchKey");
    assert_string_equal(e.message, "The specified key does not exist.");
    assert_string_equal(e.request_id, "r-1");
    assert_int_equal(e.needed_bytes, 0);

    assert_int_equal(s3c_xml_parse_error(XML("<Error><Code>InvalidArgument</Code>"
                                             "<Message>m &amp; n</Message>"
                                             "<RequiredBytes>3000000</RequiredBytes></Error>"),
                                         &e),
                     0);
    assert_string_equal(e.message, "m & n");
    assert_int_equal(e.needed_bytes, 3000000);

    /* A long message is truncated, not overflowed. */
    char big[4096];
    strcpy(big, "<Error><Code>X</Code><Message>");
    memset(big + strlen(big), 'm', 2000);
    strcpy(big + 30 + 2000, "</Message></Error>");
    assert_int_equal(s3c_xml_parse_error(big, strlen(big), &e), 0);
    assert_int_equal(strlen(e.message), sizeof(e.message) - 1);

    assert_int_equal(s3c_xml_parse_error(XML("<Error><Code>x</Cod></Error>"), &e), -1);
    assert_int_equal(s3c_xml_parse_error(XML("not xml"), &e), -1);
    assert_int_equal(s3c_xml_is_error(XML("<Error><Code>x</Code></Error>")), 1);
    assert_int_equal(s3c_xml_is_error(XML("<CompleteMultipartUploadResult/>")), 0);
}

static void test_bucket_list(void **state)
{
    (void)state;
    s3r_bucket_list_t *l = NULL;
    const char *doc =
        "<ListAllMyBucketsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<Owner><ID>o</ID><DisplayName>o</DisplayName></Owner><Buckets>"
        "<Bucket><Name>alpha</Name><CreationDate>2024-01-02T03:04:05.000Z</CreationDate></Bucket>"
        "<Bucket><Name>beta</Name><CreationDate>2024-01-02T03:04:06Z</CreationDate></Bucket>"
        "</Buckets></ListAllMyBucketsResult>";
    assert_int_equal(s3c_xml_parse_bucket_list(doc, strlen(doc), &l), 0);
    assert_int_equal(l->n_buckets, 2);
    assert_string_equal(l->buckets[0].name, "alpha");
    assert_int_equal(l->buckets[0].created, 1704164645);
    assert_string_equal(l->buckets[1].name, "beta");
    assert_int_equal(l->buckets[1].created, 1704164646);
    s3r_bucket_list_free(l);
    l = NULL;
    assert_int_equal(s3c_xml_parse_bucket_list(XML("<ListAllMyBucketsResult><Buckets/>"
                                                   "</ListAllMyBucketsResult>"),
                                               &l),
                     0);
    assert_int_equal(l->n_buckets, 0);
    s3r_bucket_list_free(l);
    /* A bucket without a name is malformed. */
    l = NULL;
    assert_int_equal(s3c_xml_parse_bucket_list(XML("<ListAllMyBucketsResult><Buckets><Bucket>"
                                                   "</Bucket></Buckets></ListAllMyBucketsResult>"),
                                               &l),
                     -1);
    assert_null(l);
    s3r_bucket_list_free(NULL);
}

static void test_object_list(void **state)
{
    (void)state;
    s3r_object_list_t *l = NULL;
    const char *p1 =
        "<?xml version=\"1.0\"?><ListBucketResult "
        "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<Name>b</Name><Prefix></Prefix><KeyCount>3</KeyCount><MaxKeys>2</MaxKeys>"
        "<Delimiter>/</Delimiter><IsTruncated>true</IsTruncated>"
        "<NextContinuationToken>tok+/=1</NextContinuationToken>"
        "<Contents><Key>a &lt;1&gt;</Key><LastModified>2024-01-02T03:04:05.000Z</LastModified>"
        "<ETag>&quot;abc&quot;</ETag><Size>12345678901</Size><StorageClass>STANDARD</StorageClass>"
        "</Contents>"
        "<Contents><Key>b</Key><Size>0</Size></Contents>"
        "<CommonPrefixes><Prefix>dir/</Prefix></CommonPrefixes>"
        "</ListBucketResult>";
    assert_int_equal(s3c_xml_parse_object_list(p1, strlen(p1), &l), 0);
    assert_int_equal(l->n_objects, 2);
    assert_string_equal(l->objects[0].key, "a <1>");
    assert_string_equal(l->objects[0].etag, "\"abc\"");
    assert_int_equal(l->objects[0].size, 12345678901ULL);
    assert_int_equal(l->objects[0].mtime, 1704164645);
    assert_string_equal(l->storage_classes[0], "STANDARD");
    assert_null(l->storage_classes[1]); /* the listing named none */
    assert_int_equal(l->n_prefixes, 1);
    assert_string_equal(l->prefixes[0], "dir/");
    assert_true(l->truncated);
    assert_string_equal(l->next_token, "tok+/=1");

    /* A second page appends and replaces the paging state. */
    const char *p2 = "<ListBucketResult><IsTruncated>false</IsTruncated>"
                     "<Contents><Key>c</Key><Size>7</Size>"
                     "<StorageClass>GLACIER</StorageClass></Contents>"
                     "<CommonPrefixes><Prefix>e/</Prefix></CommonPrefixes></ListBucketResult>";
    assert_int_equal(s3c_xml_parse_object_list(p2, strlen(p2), &l), 0);
    assert_int_equal(l->n_objects, 3);
    assert_string_equal(l->objects[2].key, "c");
    assert_string_equal(l->storage_classes[0], "STANDARD");
    assert_string_equal(l->storage_classes[2], "GLACIER");
    assert_int_equal(l->n_prefixes, 2);
    assert_false(l->truncated);
    assert_null(l->next_token);
    s3r_object_list_free(l);

    /* Wrong root, bad size, malformed. */
    l = NULL;
    assert_int_equal(s3c_xml_parse_object_list(XML("<Error><Code>x</Code></Error>"), &l), -1);
    assert_null(l);
    assert_int_equal(s3c_xml_parse_object_list(XML("<ListBucketResult><Contents><Key>k</Key>"
                                                   "<Size>-1</Size></Contents></ListBucketResult>"),
                                               &l),
                     -1);
    assert_int_equal(s3c_xml_parse_object_list(XML("<ListBucketResult><Contents>"), &l), -1);
    assert_null(l);
}

/* encoding-type=url pages: Key and CommonPrefixes/Prefix are decoded ('+'
 * is a space, %2B a '+'); EncodingType may come after the entries; a page
 * without it is taken as it is; a bad escape or %00 is malformed. */
static void test_object_list_url_encoded(void **state)
{
    (void)state;
    s3r_object_list_t *l = NULL;
    const char *p1 = "<ListBucketResult><Prefix>c%01</Prefix>"
                     "<Contents><Key>c%01%1F%0D+x%2B%25.txt</Key><Size>1</Size></Contents>"
                     "<CommonPrefixes><Prefix>d%0A/</Prefix></CommonPrefixes>"
                     "<EncodingType>url</EncodingType></ListBucketResult>";
    assert_int_equal(s3c_xml_parse_object_list(p1, strlen(p1), &l), 0);
    assert_string_equal(l->objects[0].key, "c\x01\x1f\r x+%.txt");
    assert_string_equal(l->prefixes[0], "d\n/");
    /* The next page is decoded only if it says so itself. */
    const char *p2 = "<ListBucketResult><Contents><Key>raw%41+</Key><Size>1</Size></Contents>"
                     "</ListBucketResult>";
    assert_int_equal(s3c_xml_parse_object_list(p2, strlen(p2), &l), 0);
    assert_string_equal(l->objects[0].key, "c\x01\x1f\r x+%.txt");
    assert_string_equal(l->objects[1].key, "raw%41+");
    s3r_object_list_free(l);

    const char *bad[] = {"%", "a%4", "%G1", "%00", "a%0"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char xml[256];
        snprintf(xml, sizeof(xml),
                 "<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>%s</Key>"
                 "</Contents></ListBucketResult>",
                 bad[i]);
        l = NULL;
        assert_int_equal(s3c_xml_parse_object_list(xml, strlen(xml), &l), -1);
        assert_null(l);
    }
}

static void test_upload_id(void **state)
{
    (void)state;
    char *id = NULL;
    assert_int_equal(s3c_xml_parse_upload_id(XML("<InitiateMultipartUploadResult><Bucket>b</Bucket>"
                                                 "<Key>k</Key><UploadId>u-1/2+3</UploadId>"
                                                 "</InitiateMultipartUploadResult>"),
                                             &id),
                     0);
    assert_string_equal(id, "u-1/2+3");
    free(id);
    id = NULL;
    assert_int_equal(s3c_xml_parse_upload_id(XML("<InitiateMultipartUploadResult>"
                                                 "</InitiateMultipartUploadResult>"),
                                             &id),
                     -1);
    assert_null(id);
}

static void test_delete_result(void **state)
{
    (void)state;
    s3r_delete_errors_t *e = NULL;
    /* Deleted entries are skipped; errors of two pages accumulate. */
    assert_int_equal(
        s3c_xml_parse_delete_result(XML("<DeleteResult><Deleted><Key>ok</Key></Deleted>"
                                        "<Error><Key>a&amp;b</Key><Code>AccessDenied</Code>"
                                        "<Message>Access Denied</Message></Error></DeleteResult>"),
                                    &e),
        0);
    assert_int_equal(s3c_xml_parse_delete_result(
                         XML("<DeleteResult><Error><Key>k2</Key><Code>InternalError</Code>"
                             "<Message>m</Message></Error></DeleteResult>"),
                         &e),
                     0);
    assert_int_equal(e->n_errors, 2);
    assert_string_equal(e->errors[0].key, "a&b");
    assert_string_equal(e->errors[0].code, "AccessDenied");
    assert_string_equal(e->errors[0].message, "Access Denied");
    assert_string_equal(e->errors[1].key, "k2");
    s3r_delete_errors_free(e);
    /* Another document, or an error naming no key, is malformed. */
    e = NULL;
    assert_int_equal(s3c_xml_parse_delete_result(XML("<Error><Code>x</Code></Error>"), &e), -1);
    assert_null(e);
    assert_int_equal(s3c_xml_parse_delete_result(
                         XML("<DeleteResult><Error><Code>x</Code></Error></DeleteResult>"), &e),
                     -1);
    assert_null(e);
}

static void test_billion_laughs(void **state)
{
    (void)state;
    /* Entity expansion attacks are refused by expat (>= 2.4), not expanded. */
    const char *doc = "<!DOCTYPE e [<!ENTITY a \"aaaaaaaaaa\">"
                      "<!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">"
                      "<!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">"
                      "<!ENTITY d \"&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;\">"
                      "<!ENTITY e \"&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;\">"
                      "<!ENTITY f \"&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;\">"
                      "<!ENTITY g \"&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;\">]>"
                      "<Error><Code>&g;</Code></Error>";
    s3c_error_doc_t e;
    assert_int_equal(s3c_xml_parse_error(doc, strlen(doc), &e), -1);
    assert_string_equal(e.code, "");
}

/* Versions and delete markers keep the listing's order in one array;
 * names and NextKeyMarker are decoded under encoding-type=url; a second
 * page appends and replaces the paging fields; an entry without a
 * VersionId is refused. */
static void test_version_list(void **state)
{
    (void)state;
    s3r_version_list_t *l = NULL;
    assert_int_equal(
        s3c_xml_parse_version_list(
            XML("<ListVersionsResult><EncodingType>url</EncodingType>"
                "<IsTruncated>true</IsTruncated><NextKeyMarker>b%0Ac</NextKeyMarker>"
                "<NextVersionIdMarker>v3</NextVersionIdMarker>"
                "<DeleteMarker><Key>a%20b</Key><VersionId>v9</VersionId>"
                "<IsLatest>true</IsLatest><LastModified>2026-11-26T10:00:00.000Z</LastModified>"
                "</DeleteMarker>"
                "<Version><Key>a%20b</Key><VersionId>v8</VersionId><IsLatest>false</IsLatest>"
                "<ETag>&quot;e&quot;</ETag><Size>12</Size>"
                "<StorageClass>STANDARD_IA</StorageClass></Version>"
                "<CommonPrefixes><Prefix>d%2F</Prefix></CommonPrefixes>"
                "</ListVersionsResult>"),
            &l),
        0);
    assert_int_equal(l->n_versions, 2);
    assert_string_equal(l->versions[0].key, "a b");
    assert_string_equal(l->versions[0].version_id, "v9");
    assert_true(l->versions[0].delete_marker && l->versions[0].is_latest);
    assert_int_equal(l->versions[0].mtime, 1795687200);
    assert_null(l->versions[0].etag);
    assert_false(l->versions[1].delete_marker || l->versions[1].is_latest);
    assert_int_equal(l->versions[1].size, 12);
    assert_string_equal(l->versions[1].etag, "\"e\"");
    assert_null(l->storage_classes[0]); /* a delete marker */
    assert_string_equal(l->storage_classes[1], "STANDARD_IA");
    assert_string_equal(l->prefixes[0], "d/");
    assert_true(l->truncated);
    assert_string_equal(l->next_key_marker, "b\nc");
    assert_string_equal(l->next_version_id_marker, "v3");
    assert_int_equal(
        s3c_xml_parse_version_list(XML("<ListVersionsResult><IsTruncated>false</IsTruncated>"
                                       "<Version><Key>z</Key><VersionId>null</VersionId></Version>"
                                       "</ListVersionsResult>"),
                                   &l),
        0);
    assert_int_equal(l->n_versions, 3);
    assert_string_equal(l->versions[2].version_id, "null");
    assert_false(l->truncated);
    assert_null(l->next_key_marker);
    assert_null(l->next_version_id_marker);
    s3r_version_list_free(l);
    l = NULL;
    assert_int_equal(s3c_xml_parse_version_list(XML("<ListVersionsResult><Version><Key>z</Key>"
                                                    "</Version></ListVersionsResult>"),
                                                &l),
                     -1);
    assert_null(l);
    assert_int_equal(s3c_xml_parse_version_list(XML("<ListBucketResult/>"), &l), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error),          cmocka_unit_test(test_bucket_list),
        cmocka_unit_test(test_object_list),    cmocka_unit_test(test_object_list_url_encoded),
        cmocka_unit_test(test_upload_id),      cmocka_unit_test(test_delete_result),
        cmocka_unit_test(test_billion_laughs), cmocka_unit_test(test_version_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
