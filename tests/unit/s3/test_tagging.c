/* Tag sets: the header and XML parsers, S3's checks (counts, lengths in
 * characters, characters, UTF-8, aws: keys, duplicates), the stored form's
 * round trip and the XML written back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "s3/tagging.h"

static s3_error_t header(const char *v, s3_tags_t *t)
{
    const char *why = NULL;
    s3_error_t err = s3_tags_from_header(v, t, &why);
    assert_true(err == S3E_NONE || why != NULL);
    return err;
}

static void test_header(void **state)
{
    (void)state;
    s3_tags_t t;
    assert_int_equal(header("a=1&b+c=x%20y&d=&e", &t), S3E_NONE);
    assert_int_equal(t.n, 4);
    assert_string_equal(s3_tags_find(&t, "b c"), "x y");
    assert_string_equal(s3_tags_find(&t, "d"), "");
    assert_string_equal(s3_tags_find(&t, "e"), "");
    assert_null(s3_tags_find(&t, "B C"));
    s3_tags_free(&t);
    assert_int_equal(header("", &t), S3E_NONE);
    assert_int_equal(t.n, 0);
    /* The header's own errors: bad encoding, empty pairs, duplicates. */
    assert_int_equal(header("a=%zz", &t), S3E_INVALID_ARGUMENT);
    assert_int_equal(header("a=1&&b=2", &t), S3E_INVALID_ARGUMENT);
    assert_int_equal(header("a=1&a=2", &t), S3E_INVALID_ARGUMENT);
    assert_int_equal(header("a=%00", &t), S3E_INVALID_ARGUMENT);
    /* The tags' own. */
    assert_int_equal(header("=v", &t), S3E_INVALID_TAG);
    assert_int_equal(header("aws:k=v", &t), S3E_INVALID_TAG);
    assert_int_equal(header("k=v%21", &t), S3E_INVALID_TAG);
}

static void test_limits(void **state)
{
    (void)state;
    char v[2048];
    s3_tags_t t;
    /* 10 tags pass, 11 are BadRequest. */
    strcpy(v, "k0=");
    for (int i = 1; i < 10; i++)
        sprintf(v + strlen(v), "&k%d=", i);
    assert_int_equal(header(v, &t), S3E_NONE);
    s3_tags_free(&t);
    strcat(v, "&k10=");
    assert_int_equal(header(v, &t), S3E_BAD_REQUEST);
    /* 128 two-byte characters are a valid key (256 bytes); 129 are not. */
    strcpy(v, "");
    for (int i = 0; i < 128; i++)
        strcat(v, "%C3%A9");
    strcat(v, "=x");
    assert_int_equal(header(v, &t), S3E_NONE);
    assert_int_equal(strlen(t.v[0].key), 256);
    s3_tags_free(&t);
    memmove(v + 6, v, strlen(v) + 1);
    memcpy(v, "%C3%A9", 6);
    assert_int_equal(header(v, &t), S3E_INVALID_TAG);
    /* Values: 256 characters pass, 257 do not. */
    strcpy(v, "k=");
    memset(v + 2, 'v', 256);
    v[258] = '\0';
    assert_int_equal(header(v, &t), S3E_NONE);
    s3_tags_free(&t);
    strcat(v, "v");
    assert_int_equal(header(v, &t), S3E_INVALID_TAG);
    /* Invalid UTF-8: a lone continuation byte, an overlong form, a surrogate. */
    assert_int_equal(header("k=%80", &t), S3E_INVALID_TAG);
    assert_int_equal(header("k=%C0%AF", &t), S3E_INVALID_TAG);
    assert_int_equal(header("k=%ED%A0%80", &t), S3E_INVALID_TAG);
    /* U+FFFF and U+FFFE: no XML 1.0 character, so no GetObjectTagging
     * answer could carry them (found by fuzz_s3_tagging). */
    assert_int_equal(header("t%20%20w%EF%BF%BFr", &t), S3E_INVALID_TAG);
    assert_int_equal(header("k=%EF%BF%BE", &t), S3E_INVALID_TAG);
    /* Every allowed punctuation character. */
    assert_int_equal(header("k=%2B-%3D._%3A%2F%40%20", &t), S3E_NONE);
    assert_string_equal(t.v[0].value, "+-=._:/@ ");
    s3_tags_free(&t);
}

static void test_stored_round_trip(void **state)
{
    (void)state;
    s3_tags_t t, back;
    assert_int_equal(header("team=blue&a%2Bb=%E6%97%A5%20x&e=", &t), S3E_NONE);
    int nomem;
    char *stored = s3_tags_encode(&t, &nomem);
    assert_non_null(stored);
    /* Kept sorted by key, whatever the order sent. */
    assert_string_equal(stored, "a%2Bb=%E6%97%A5%20x&e=&team=blue");
    assert_int_equal(s3_tags_count(stored), 3);
    assert_int_equal(s3_tags_from_stored(stored, &back), 0);
    assert_int_equal(back.n, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(back.v[i].key, t.v[i].key);
        assert_string_equal(back.v[i].value, t.v[i].value);
    }
    s3_tags_free(&back);
    s3_tags_free(&t);
    free(stored);
    memset(&t, 0, sizeof t);
    assert_null(s3_tags_encode(&t, &nomem));
    assert_int_equal(nomem, 0);
    assert_int_equal(s3_tags_count(NULL), 0);
}

static void test_xml(void **state)
{
    (void)state;
    const char *why;
    s3_tags_t t;
    const char *doc = "<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet>"
                      "<Tag><Key>a</Key><Value>1 + 2</Value></Tag>"
                      "<Tag><Value></Value><Key>b</Key></Tag></TagSet></Tagging>";
    assert_int_equal(s3_tags_from_xml(doc, strlen(doc), S3_TAGS_OBJECT, &t, &why), S3E_NONE);
    assert_int_equal(t.n, 2);
    assert_string_equal(s3_tags_find(&t, "a"), "1 + 2");
    assert_string_equal(s3_tags_find(&t, "b"), "");
    buf_t xml;
    buf_init(&xml, 4096);
    s3_tags_xml(&t, &xml);
    assert_int_equal(buf_append(&xml, "", 1), 0);
    assert_string_equal(xml.data, "<TagSet><Tag><Key>a</Key><Value>1 + 2</Value></Tag>"
                                  "<Tag><Key>b</Key><Value></Value></Tag></TagSet>");
    buf_free(&xml);
    s3_tags_free(&t);
    static const char *const malformed[] = {
        "<Tagging><TagSet><Tag><Key>a</Key></Tag></TagSet></Tagging>",
        "<Tagging><TagSet><Tag><Value>a</Value></Tag></TagSet></Tagging>",
        "<Tagging><TagSet><Tag><Key>a</Key><Key>b</Key><Value/></Tag></TagSet></Tagging>",
        "<Tagging><Tag><Key>a</Key><Value>1</Value></Tag></Tagging>", /* no TagSet: no tags */
        "<Other><TagSet/></Other>",
        "<Tagging><TagSet><Tag><Key>a<b/></Key><Value/></Tag></TagSet></Tagging>",
    };
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        s3_error_t err =
            s3_tags_from_xml(malformed[i], strlen(malformed[i]), S3_TAGS_OBJECT, &t, &why);
        if (i == 3) { /* a Tag outside a TagSet is not a tag: an empty set */
            assert_int_equal(err, S3E_NONE);
            assert_int_equal(t.n, 0);
        } else {
            assert_int_equal(err, S3E_MALFORMED_XML);
        }
    }
    /* Bucket sets take 50 tags, and a duplicate is InvalidTag. */
    buf_t big;
    buf_init(&big, 1 << 20);
    buf_append_str(&big, "<Tagging><TagSet>");
    for (int i = 0; i < 51; i++) {
        char tag[80];
        snprintf(tag, sizeof tag, "<Tag><Key>k%d</Key><Value>v</Value></Tag>", i);
        buf_append_str(&big, tag);
        if (i == 49) {
            buf_t ok;
            buf_init(&ok, 1 << 20);
            buf_append(&ok, big.data, big.len);
            buf_append_str(&ok, "</TagSet></Tagging>");
            assert_int_equal(s3_tags_from_xml(ok.data, ok.len, S3_TAGS_BUCKET, &t, &why), S3E_NONE);
            assert_int_equal(t.n, 50);
            s3_tags_free(&t);
            assert_int_equal(s3_tags_from_xml(ok.data, ok.len, S3_TAGS_OBJECT, &t, &why),
                             S3E_BAD_REQUEST);
            buf_free(&ok);
        }
    }
    buf_append_str(&big, "</TagSet></Tagging>");
    assert_int_equal(s3_tags_from_xml(big.data, big.len, S3_TAGS_BUCKET, &t, &why),
                     S3E_INVALID_TAG);
    buf_free(&big);
    const char *dup = "<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag>"
                      "<Tag><Key>a</Key><Value>2</Value></Tag></TagSet></Tagging>";
    assert_int_equal(s3_tags_from_xml(dup, strlen(dup), S3_TAGS_BUCKET, &t, &why), S3E_INVALID_TAG);
    assert_string_equal(why, "Cannot provide multiple Tags with the same key");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_stored_round_trip),
        cmocka_unit_test(test_xml),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
