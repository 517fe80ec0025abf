/* Request-body XML: CompleteMultipartUpload, DeleteObjects and
 * CreateBucketConfiguration, as SDKs send them and as attackers might. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/s3r_limits.h"
#include "s3/xml_in.h"

#define NS " xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""

static int complete(const char *body, xml_complete_part_t **parts, size_t *n)
{
    return s3_xml_parse_complete(body, strlen(body), parts, n);
}

static void test_complete_valid(void **state)
{
    (void)state;
    const char *bodies[] = {
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<CompleteMultipartUpload" NS ">\n"
        "  "
        "<Part><ETag>\"a54357aff0632cce46d942af68356b38\"</ETag><PartNumber>1</PartNumber></Part>\n"
        "  "
        "<Part><PartNumber>2</PartNumber><ETag>&quot;0c78aef83f66abc1fa1e8477f296d394&quot;</ETag>"
        "<ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part>\n"
        "  <Part>\n    <PartNumber> 10000 </PartNumber>\n    <ETag>plain-etag</ETag>\n  </Part>\n"
        "</CompleteMultipartUpload>",
        /* No namespace; a prefixed namespace. */
        "<CompleteMultipartUpload><Part><ETag>\"a54357aff0632cce46d942af68356b38\"</ETag>"
        "<PartNumber>1</PartNumber></Part><Part><PartNumber>2</PartNumber>"
        "<ETag>\"0c78aef83f66abc1fa1e8477f296d394\"</ETag></Part><Part><PartNumber>10000"
        "</PartNumber><ETag>plain-etag</ETag></Part></CompleteMultipartUpload>",
        "<s3:CompleteMultipartUpload xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<s3:Part><s3:ETag>\"a54357aff0632cce46d942af68356b38\"</s3:ETag>"
        "<s3:PartNumber>1</s3:PartNumber></s3:Part><s3:Part><s3:PartNumber>2</s3:PartNumber>"
        "<s3:ETag>\"0c78aef83f66abc1fa1e8477f296d394\"</s3:ETag></s3:Part><s3:Part>"
        "<s3:PartNumber>10000</s3:PartNumber><s3:ETag>plain-etag</s3:ETag></s3:Part>"
        "</s3:CompleteMultipartUpload>",
    };
    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        xml_complete_part_t *parts = NULL;
        size_t n = 0;
        assert_int_equal(complete(bodies[i], &parts, &n), 0);
        assert_int_equal(n, 3);
        assert_int_equal(parts[0].number, 1);
        assert_string_equal(parts[0].etag, "a54357aff0632cce46d942af68356b38");
        assert_int_equal(parts[1].number, 2);
        assert_string_equal(parts[1].etag, "0c78aef83f66abc1fa1e8477f296d394");
        assert_int_equal(parts[2].number, 10000);
        assert_string_equal(parts[2].etag, "plain-etag");
        s3_xml_complete_parts_free(parts, n);
    }
    /* Multipart ETags ("md5-N") and document order kept (order is the
     * caller's check). */
    xml_complete_part_t *parts;
    size_t n;
    assert_int_equal(complete("<CompleteMultipartUpload><Part><PartNumber>3</PartNumber>"
                              "<ETag>\"abc-2\"</ETag></Part><Part><PartNumber>1</PartNumber>"
                              "<ETag>x</ETag></Part></CompleteMultipartUpload>",
                              &parts, &n),
                     0);
    assert_int_equal(n, 2);
    assert_int_equal(parts[0].number, 3);
    assert_string_equal(parts[0].etag, "abc-2");
    s3_xml_complete_parts_free(parts, n);
    s3_xml_complete_parts_free(NULL, 0);
    /* Each part's checksums, by algorithm, trimmed; an unknown Checksum*
     * element is ignored like any other. */
    assert_int_equal(
        complete(
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>x</ETag>"
            "<ChecksumSHA256> c2hh </ChecksumSHA256><ChecksumCRC64NVME>Y3Jj</ChecksumCRC64NVME>"
            "<ChecksumMD5>bm8=</ChecksumMD5></Part><Part><PartNumber>2</PartNumber>"
            "<ETag>y</ETag></Part></CompleteMultipartUpload>",
            &parts, &n),
        0);
    assert_int_equal(n, 2);
    assert_string_equal(parts[0].checksums[CHECKSUM_SHA256], "c2hh");
    assert_string_equal(parts[0].checksums[CHECKSUM_CRC64NVME], "Y3Jj");
    assert_null(parts[0].checksums[CHECKSUM_CRC32]);
    for (int i = 0; i < CHECKSUM_NONE; i++)
        assert_null(parts[1].checksums[i]);
    s3_xml_complete_parts_free(parts, n);
}

static void test_complete_malformed(void **state)
{
    (void)state;
    const char *bad[] = {
        "",
        "not xml",
        "<CompleteMultipartUpload>",
        "<CompleteMultipartUpload></CompleteMultipartUpload>",
        "<Delete><Part><PartNumber>1</PartNumber><ETag>x</ETag></Part></Delete>",
        "<CompleteMultipartUpload><Part><ETag>x</ETag></Part></CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part></"
        "CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>0</PartNumber><ETag>x</ETag></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>10001</PartNumber><ETag>x</ETag></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>-1</PartNumber><ETag>x</ETag></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>1x</PartNumber><ETag>x</ETag></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber></PartNumber><ETag>x</ETag></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>99999999999</PartNumber><ETag>x</ETag></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><PartNumber>2</PartNumber>"
        "<ETag>x</ETag></Part></CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>x</ETag><ETag>y</ETag>"
        "</Part></CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>x</ETag>"
        "<ChecksumCRC32>a</ChecksumCRC32><ChecksumCRC32>b</ChecksumCRC32></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber><b>1</b></PartNumber><ETag>x</ETag></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>x</ETag></Part>"
        "</CompleteMultipartUpload><extra/>",
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&undefined;</ETag></Part>"
        "</CompleteMultipartUpload>",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        xml_complete_part_t *parts = (void *)0x1;
        size_t n = 77;
        if (complete(bad[i], &parts, &n) != -1)
            fail_msg("accepted: %s", bad[i]);
        /* Outputs untouched on failure. */
        assert_ptr_equal(parts, (void *)0x1);
        assert_int_equal(n, 77);
    }
}

static void test_delete_valid(void **state)
{
    (void)state;
    const char *body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
                       "<Delete" NS "><Quiet>true</Quiet>"
                       "<Object><Key>a&amp;b&lt;c&gt;&quot;d&apos;</Key></Object>"
                       "<Object><Key> spaced key </Key><VersionId>null</VersionId></Object>"
                       "<Object><Key>caf\xc3\xa9/\xe2\x82\xac/&#x1F600;</Key></Object>"
                       "<Object><Key>line&#10;break&#13;</Key></Object>"
                       "<Object><Key><![CDATA[<raw & cdata>]]></Key></Object>"
                       "</Delete>";
    int quiet = -1;
    xml_delete_object_t *objs = NULL;
    size_t n = 0;
    assert_int_equal(s3_xml_parse_delete(body, strlen(body), &quiet, &objs, &n), 0);
    assert_int_equal(quiet, 1);
    assert_int_equal(n, 5);
    assert_string_equal(objs[0].key, "a&b<c>\"d'");
    assert_string_equal(objs[1].key, " spaced key ");
    assert_string_equal(objs[2].key, "caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x98\x80");
    assert_string_equal(objs[3].key, "line\nbreak\r");
    assert_string_equal(objs[4].key, "<raw & cdata>");
    s3_xml_delete_objects_free(objs, n);

    /* No namespace, no Quiet, Quiet false. */
    const char *plain = "<Delete><Object><Key>k</Key></Object></Delete>";
    assert_int_equal(s3_xml_parse_delete(plain, strlen(plain), &quiet, &objs, &n), 0);
    assert_int_equal(quiet, 0);
    assert_int_equal(n, 1);
    assert_string_equal(objs[0].key, "k");
    s3_xml_delete_objects_free(objs, n);
    const char *loud = "<Delete><Quiet> False </Quiet><Object><Key>k</Key></Object></Delete>";
    assert_int_equal(s3_xml_parse_delete(loud, strlen(loud), &quiet, &objs, &n), 0);
    assert_int_equal(quiet, 0);
    s3_xml_delete_objects_free(objs, n);

    /* Conditional deletes: each Object's own ETag (quotes dropped) and the
     * directory buckets' conditions, never carried over to the next Object. */
    const char *cond = "<Delete><Object><Key>a</Key><ETag>&quot;e1&quot;</ETag>"
                       "<Size>3</Size></Object><Object><Key>b</Key></Object>"
                       "<Object><Key>c</Key><ETag>*</ETag>"
                       "<LastModifiedTime>2026-01-01T00:00:00Z</LastModifiedTime></Object>"
                       "</Delete>";
    assert_int_equal(s3_xml_parse_delete(cond, strlen(cond), &quiet, &objs, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(objs[0].etag, "e1");
    assert_true(objs[0].dir_cond);
    assert_null(objs[1].etag);
    assert_false(objs[1].dir_cond);
    assert_string_equal(objs[2].etag, "*");
    assert_true(objs[2].dir_cond);
    s3_xml_delete_objects_free(objs, n);
    const char *twice =
        "<Delete><Object><Key>a</Key><ETag>x</ETag><ETag>y</ETag></Object></Delete>";
    assert_int_equal(s3_xml_parse_delete(twice, strlen(twice), &quiet, &objs, &n), -1);
}

/* Text split across character-data callbacks: expat delivers text in pieces
 * around entities, and across XML_Parse buffer boundaries for long text. */
static void test_delete_long_key(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 1 << 20);
    buf_append_str(&b, "<Delete><Object><Key>");
    for (int i = 0; i < 1024 / 8; i++)
        buf_append_str(&b, "ab&amp;cd/e");
    buf_append_str(&b, "</Key></Object></Delete>");
    int quiet;
    xml_delete_object_t *objs;
    size_t n;
    assert_int_equal(s3_xml_parse_delete(b.data, b.len, &quiet, &objs, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(strlen(objs[0].key), 1024 / 8 * 7);
    assert_memory_equal(objs[0].key, "ab&cd/eab&cd/e", 14);
    s3_xml_delete_objects_free(objs, n);
    buf_free(&b);
}

static void delete_n(size_t count, int want)
{
    buf_t b;
    buf_init(&b, 1 << 21);
    buf_append_str(&b, "<Delete" NS "><Quiet>true</Quiet>");
    for (size_t i = 0; i < count; i++)
        buf_printf(&b, "<Object><Key>key-%zu</Key></Object>", i);
    buf_append_str(&b, "</Delete>");
    int quiet;
    xml_delete_object_t *objs = NULL;
    size_t n = 0;
    assert_int_equal(s3_xml_parse_delete(b.data, b.len, &quiet, &objs, &n), want);
    if (want == 0) {
        assert_int_equal(n, count);
        assert_string_equal(objs[count - 1].key, "key-999");
        s3_xml_delete_objects_free(objs, n);
    }
    buf_free(&b);
}

static void test_delete_limits(void **state)
{
    (void)state;
    delete_n(S3R_MAX_DELETE_KEYS, 0);
    delete_n(S3R_MAX_DELETE_KEYS + 1, -1);
    delete_n(0, -1);
}

static void test_delete_malformed(void **state)
{
    (void)state;
    const char *bad[] = {
        "",
        "<Delete>",
        "<Delete></Delete>",
        "<Delete><Quiet>true</Quiet></Delete>",
        "<Delete><Object></Object></Delete>",
        "<Delete><Object><VersionId>1</VersionId></Object></Delete>",
        "<Delete><Quiet>yes</Quiet><Object><Key>k</Key></Object></Delete>",
        "<Delete><Quiet>true</Quiet><Quiet>true</Quiet><Object><Key>k</Key></Object></Delete>",
        "<Delete><Object><Key>a</Key><Key>b</Key></Object></Delete>",
        "<Delete><Object><Key>a<i/>b</Key></Object></Delete>",
        "<DeleteObjects><Object><Key>k</Key></Object></DeleteObjects>",
        "<Delete><Object><Key>k</Key></Object>",
        "<Delete><Object><Key>k&#0;</Key></Object></Delete>",
        "<Delete><Object><Key>\xff\xfe</Key></Object></Delete>",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int quiet = 5;
        xml_delete_object_t *objs = NULL;
        size_t n = 0;
        if (s3_xml_parse_delete(bad[i], strlen(bad[i]), &quiet, &objs, &n) != -1)
            fail_msg("accepted: %s", bad[i]);
        assert_int_equal(quiet, 5);
        assert_null(objs);
    }
}

static void test_doctype_rejected(void **state)
{
    (void)state;
    const char *bomb =
        "<?xml version=\"1.0\"?>\n"
        "<!DOCTYPE lolz [\n"
        " <!ENTITY lol \"lol\">\n"
        " <!ENTITY lol1 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">\n"
        " <!ENTITY lol2 \"&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;\">\n"
        " <!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">\n"
        "]>\n"
        "<Delete><Object><Key>&lol3;</Key></Object></Delete>";
    const char *xxe = "<?xml version=\"1.0\"?>"
                      "<!DOCTYPE d [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>"
                      "<Delete><Object><Key>&x;</Key></Object></Delete>";
    const char *plain_doctype = "<!DOCTYPE Delete><Delete><Object><Key>k</Key></Object></Delete>";
    const char *external = "<!DOCTYPE Delete SYSTEM \"http://example.com/x.dtd\">"
                           "<Delete><Object><Key>k</Key></Object></Delete>";
    const char *cases[] = {bomb, xxe, plain_doctype, external};
    for (size_t i = 0; i < 4; i++) {
        int quiet;
        xml_delete_object_t *objs = NULL;
        size_t n = 0;
        assert_int_equal(s3_xml_parse_delete(cases[i], strlen(cases[i]), &quiet, &objs, &n), -1);
        xml_complete_part_t *parts = NULL;
        assert_int_equal(s3_xml_parse_complete(cases[i], strlen(cases[i]), &parts, &n), -1);
        char loc[64];
        assert_int_equal(s3_xml_parse_create_bucket(cases[i], strlen(cases[i]), loc, sizeof(loc)),
                         -1);
    }
}

static void test_body_size_cap(void **state)
{
    (void)state;
    /* Well-formed but over the cap: refused without parsing; one byte
     * shorter is fine. */
    for (int over = 1; over >= 0; over--) {
        size_t len = S3R_MAX_XML_BODY + (size_t)over;
        char *body = malloc(len + 1);
        const char *head = "<Delete><Object><Key>k</Key></Object>", *tail = "</Delete>";
        memcpy(body, head, strlen(head));
        memset(body + strlen(head), ' ', len - strlen(head));
        memcpy(body + len - strlen(tail), tail, strlen(tail));
        body[len] = '\0';
        int quiet;
        xml_delete_object_t *objs = NULL;
        size_t n = 0;
        assert_int_equal(s3_xml_parse_delete(body, len, &quiet, &objs, &n), over ? -1 : 0);
        s3_xml_delete_objects_free(objs, n);
        free(body);
    }

    /* A key over the capture cap is refused rather than buffered. */
    buf_t b;
    buf_init(&b, 1 << 20);
    buf_append_str(&b, "<Delete><Object><Key>");
    for (int i = 0; i < 10000; i++)
        buf_append_str(&b, "k");
    buf_append_str(&b, "</Key></Object></Delete>");
    int quiet;
    xml_delete_object_t *objs = NULL;
    size_t n = 0;
    assert_int_equal(s3_xml_parse_delete(b.data, b.len, &quiet, &objs, &n), -1);
    buf_free(&b);
}

static void test_create_bucket(void **state)
{
    (void)state;
    char loc[64];
    memset(loc, 'x', sizeof(loc));
    assert_int_equal(s3_xml_parse_create_bucket("", 0, loc, sizeof(loc)), 0);
    assert_string_equal(loc, "");
    assert_int_equal(s3_xml_parse_create_bucket(NULL, 0, loc, sizeof(loc)), 0);
    assert_string_equal(loc, "");
    assert_int_equal(s3_xml_parse_create_bucket(" \r\n", 3, loc, sizeof(loc)), 0);
    assert_string_equal(loc, "");

    const char *with_ns = "<CreateBucketConfiguration" NS ">"
                          "<LocationConstraint>eu-west-1</LocationConstraint>"
                          "</CreateBucketConfiguration>";
    assert_int_equal(s3_xml_parse_create_bucket(with_ns, strlen(with_ns), loc, sizeof(loc)), 0);
    assert_string_equal(loc, "eu-west-1");
    const char *no_ns = "<?xml version=\"1.0\"?><CreateBucketConfiguration>\n"
                        "  <LocationConstraint> us-west-2 </LocationConstraint>\n"
                        "</CreateBucketConfiguration>";
    assert_int_equal(s3_xml_parse_create_bucket(no_ns, strlen(no_ns), loc, sizeof(loc)), 0);
    assert_string_equal(loc, "us-west-2");
    const char *empty = "<CreateBucketConfiguration/>";
    assert_int_equal(s3_xml_parse_create_bucket(empty, strlen(empty), loc, sizeof(loc)), 0);
    assert_string_equal(loc, "");
    const char *empty_lc = "<CreateBucketConfiguration><LocationConstraint/>"
                           "</CreateBucketConfiguration>";
    assert_int_equal(s3_xml_parse_create_bucket(empty_lc, strlen(empty_lc), loc, sizeof(loc)), 0);
    assert_string_equal(loc, "");

    /* Too long for out, wrong root, not XML. */
    char small[4];
    assert_int_equal(s3_xml_parse_create_bucket(with_ns, strlen(with_ns), small, sizeof(small)),
                     -1);
    const char *bad[] = {
        "<Foo/>",
        "garbage",
        "<CreateBucketConfiguration>",
        "<CreateBucketConfiguration><LocationConstraint>a</LocationConstraint>"
        "<LocationConstraint>b</LocationConstraint></CreateBucketConfiguration>",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(s3_xml_parse_create_bucket(bad[i], strlen(bad[i]), loc, sizeof(loc)), -1);
}

/* Flat configuration documents: leaves at depth 2 and 3 (namespaced or
 * not), others ignored; a leaf twice, markup inside one or a wrong root is
 * malformed and leaves nothing behind. */
static void test_leaves(void **state)
{
    (void)state;
    static const char *const paths[] = {"A", "Rule/B"};
    char *v[2];
    const char *ok = "<Root xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><A> true </A>"
                     "<X><A>no</A></X><Rule><B>BucketOwnerEnforced</B><C>x</C></Rule></Root>";
    assert_int_equal(s3_xml_parse_leaves(ok, strlen(ok), "Root", paths, 2, v), 0);
    assert_string_equal(v[0], "true");
    assert_string_equal(v[1], "BucketOwnerEnforced");
    free(v[0]);
    free(v[1]);
    const char *some = "<Root><Z/></Root>";
    assert_int_equal(s3_xml_parse_leaves(some, strlen(some), "Root", paths, 2, v), 0);
    assert_null(v[0]);
    assert_null(v[1]);
    const char *bad[] = {"<Root><A>1</A><A>2</A></Root>", "<Root><A><b/></A></Root>",
                         "<Other><A>1</A></Other>", "<Root><A>1</A>", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(s3_xml_parse_leaves(bad[i], strlen(bad[i]), "Root", paths, 2, v), -1);
        assert_null(v[0]);
        assert_null(v[1]);
    }
}

static void test_list(void **state)
{
    (void)state;
    static const char *const fields[] = {"A", "B"};
    const char *body = "<Root" NS "><Item><A> 1 </A><B>2</B><A>3</A><C>x</C></Item><Other><A>9</A>"
                       "</Other><Item/><Item><B>4</B></Item></Root>";
    xml_list_entry_t *e;
    size_t n, items;
    assert_int_equal(
        s3_xml_parse_list(body, strlen(body), "Root", "Item", fields, 2, 10, &e, &n, &items), 0);
    assert_int_equal(items, 3);
    assert_int_equal(n, 4);
    static const struct {
        size_t item, field;
        const char *value;
    } want[] = {{0, 0, "1"}, {0, 1, "2"}, {0, 0, "3"}, {2, 1, "4"}};
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(e[i].item, want[i].item);
        assert_int_equal(e[i].field, want[i].field);
        assert_string_equal(e[i].value, want[i].value);
    }
    s3_xml_list_free(e, n);
    /* More leaves than allowed, markup inside a leaf, another root. */
    assert_int_equal(
        s3_xml_parse_list(body, strlen(body), "Root", "Item", fields, 2, 3, &e, &n, &items), -1);
    const char *nested = "<Root><Item><A><B/></A></Item></Root>";
    assert_int_equal(
        s3_xml_parse_list(nested, strlen(nested), "Root", "Item", fields, 2, 10, &e, &n, &items),
        -1);
    assert_int_equal(
        s3_xml_parse_list(body, strlen(body), "Other", "Item", fields, 2, 10, &e, &n, &items), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_complete_valid),
        cmocka_unit_test(test_complete_malformed),
        cmocka_unit_test(test_delete_valid),
        cmocka_unit_test(test_delete_long_key),
        cmocka_unit_test(test_delete_limits),
        cmocka_unit_test(test_delete_malformed),
        cmocka_unit_test(test_doctype_rejected),
        cmocka_unit_test(test_body_size_cap),
        cmocka_unit_test(test_create_bucket),
        cmocka_unit_test(test_leaves),
        cmocka_unit_test(test_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
