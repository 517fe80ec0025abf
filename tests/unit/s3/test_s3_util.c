/* Unit tests for src/s3/s3_util.c: bucket names, UTF-8, URL decoding,
 * Range headers and dates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "s3/s3_util.h"

/* RFC 9110 field syntax: what may be stored and sent back as a header. */
static void test_field_syntax(void **state)
{
    (void)state;
    const char *good_names[] = {"x-amz-meta-a", "Content-Type", "a", "!#$%&'*+-.^_`|~09AZaz"};
    const char *bad_names[] = {"",     "a b", "a:b",  "a(b", "a\r\nb", "a\x01", "caf\xc3\xa9",
                               "a\"b", "a/b", "a\tb", "a=b"};
    for (size_t i = 0; i < sizeof(good_names) / sizeof(good_names[0]); i++)
        assert_true(s3_field_name_ok(good_names[i]));
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
        if (s3_field_name_ok(bad_names[i]))
            fail_msg("name %zu accepted", i);
    }
    const char *good_values[] = {"",
                                 "v",
                                 "text/plain; charset=utf-8",
                                 "a b\tc",
                                 "caf\xc3\xa9",
                                 "\xff\x80",
                                 "~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./"};
    const char *bad_values[] = {"a\r\nContent-Length: 1",
                                "a\nb",
                                "a\rb",
                                "\x01",
                                "a\x7f",
                                "\x1b[31m",
                                " a",
                                "a ",
                                "\ta",
                                "a\t",
                                " "};
    for (size_t i = 0; i < sizeof(good_values) / sizeof(good_values[0]); i++)
        assert_true(s3_field_value_ok(good_values[i]));
    for (size_t i = 0; i < sizeof(bad_values) / sizeof(bad_values[0]); i++) {
        if (s3_field_value_ok(bad_values[i]))
            fail_msg("value %zu accepted", i);
    }
}

static void test_bucket_names(void **state)
{
    (void)state;
    const char *good[] = {
        "abc",    "my-bucket", "my.bucket.name",
        "a1b2c3", "123",       "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
    const char *bad[] = {"ab",
                         "",
                         "My-Bucket",
                         "my_bucket",
                         "-abc",
                         "abc-",
                         ".abc",
                         "abc.",
                         "a..b",
                         "a.-b",
                         "a-.b",
                         "192.168.1.1",
                         "xn--abc",
                         "abc-s3alias",
                         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                         "a b c",
                         "abc/",
                         "_s3rdma"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_true(s3_bucket_name_valid(good[i]));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (s3_bucket_name_valid(bad[i]))
            fail_msg("'%s' accepted", bad[i]);
    }
}

static void test_utf8(void **state)
{
    (void)state;
    assert_true(s3_utf8_valid("plain/key.txt", 13));
    assert_true(s3_utf8_valid("caf\xc3\xa9", 5));
    assert_true(s3_utf8_valid("\xe6\x97\xa5\xe6\x9c\xac", 6));
    assert_true(s3_utf8_valid("\xf0\x9f\x98\x80", 4));
    assert_false(s3_utf8_valid("a\0b", 3));
    assert_false(s3_utf8_valid("\xff", 1));
    assert_false(s3_utf8_valid("\xc3", 1));             /* truncated */
    assert_false(s3_utf8_valid("\xc0\xaf", 2));         /* overlong '/' */
    assert_false(s3_utf8_valid("\xed\xa0\x80", 3));     /* surrogate */
    assert_false(s3_utf8_valid("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
}

static void test_url_decode(void **state)
{
    (void)state;
    char *s = s3_url_decode("a%20b%2Fc+d", 11, false);
    assert_string_equal(s, "a b/c+d");
    free(s);
    s = s3_url_decode("a%20b+d", 7, true);
    assert_string_equal(s, "a b d");
    free(s);
    s = s3_url_decode("%e6%97%A5", 9, false);
    assert_string_equal(s, "\xe6\x97\xa5");
    free(s);
    assert_null(s3_url_decode("%zz", 3, false));
    assert_null(s3_url_decode("%4", 2, false));
    assert_null(s3_url_decode("abc%", 4, false));
    assert_null(s3_url_decode("a%00b", 5, false));
    assert_null(s3_url_decode("a\0b", 3, false));
}

static void check_range(const char *h, uint64_t size, s3_range_result_t want, uint64_t a,
                        uint64_t b)
{
    uint64_t first = 999, last = 999;
    s3_range_result_t got = s3_range_parse(h, size, &first, &last);
    if (got != want)
        fail_msg("range '%s' size %llu: result %d, want %d", h ? h : "(null)",
                 (unsigned long long)size, got, want);
    if (want == S3_RANGE_OK && (first != a || last != b))
        fail_msg("range '%s': %llu-%llu, want %llu-%llu", h, (unsigned long long)first,
                 (unsigned long long)last, (unsigned long long)a, (unsigned long long)b);
}

static void test_ranges(void **state)
{
    (void)state;
    check_range(NULL, 100, S3_RANGE_NONE, 0, 0);
    check_range("bytes=0-9", 100, S3_RANGE_OK, 0, 9);
    check_range("bytes=10-", 100, S3_RANGE_OK, 10, 99);
    check_range("bytes=-10", 100, S3_RANGE_OK, 90, 99);
    check_range("bytes=-1000", 100, S3_RANGE_OK, 0, 99);
    check_range("bytes=50-5000", 100, S3_RANGE_OK, 50, 99);
    check_range("bytes=99-99", 100, S3_RANGE_OK, 99, 99);
    check_range("bytes=100-", 100, S3_RANGE_UNSATISFIABLE, 0, 0);
    check_range("bytes=100-200", 100, S3_RANGE_UNSATISFIABLE, 0, 0);
    check_range("bytes=-0", 100, S3_RANGE_UNSATISFIABLE, 0, 0);
    check_range("bytes=0-0", 0, S3_RANGE_UNSATISFIABLE, 0, 0);
    /* Syntactically invalid or multi-range: served whole, as S3 does. */
    check_range("bytes=9-0", 100, S3_RANGE_NONE, 0, 0);
    check_range("bytes=a-b", 100, S3_RANGE_NONE, 0, 0);
    check_range("items=0-9", 100, S3_RANGE_NONE, 0, 0);
    check_range("bytes=0-1,5-6", 100, S3_RANGE_NONE, 0, 0);
    check_range("bytes=0-9x", 100, S3_RANGE_NONE, 0, 0);
    check_range("bytes=--5", 100, S3_RANGE_NONE, 0, 0);
}

static void test_common_prefix(void **state)
{
    (void)state;
    const char *k = "photos/2024/jan/a.jpg";
    size_t n = strlen(k);
    assert_int_equal(s3_common_prefix_len(k, n, 0, "/"), 7);      /* "photos/" */
    assert_int_equal(s3_common_prefix_len(k, n, 7, "/"), 12);     /* "photos/2024/" */
    assert_int_equal(s3_common_prefix_len(k, n, 16, "/"), 0);     /* no '/' after "jan/" */
    assert_int_equal(s3_common_prefix_len(k, n, 0, "2024/"), 12); /* multi-byte delimiter */
    assert_int_equal(s3_common_prefix_len(k, n, 0, NULL), 0);
    assert_int_equal(s3_common_prefix_len(k, n, 0, ""), 0);
    assert_int_equal(s3_common_prefix_len("ab", 2, 5, "/"), 0); /* key shorter than prefix */
}

static void test_token_formats(void **state)
{
    (void)state;
    assert_int_equal(s3_token_format("s3r1.AAAA"), S3_TOKEN_S3R1);
    assert_int_equal(s3_token_format("00007f0000001000:00001000:0001a2b3:0001:00abcd:1:"
                                     "fe800000000000000000000000000001"),
                     S3_TOKEN_CUOBJ_DC);
    assert_int_equal(s3_token_format("7f0000001000:1000:a2b3:1:abcd"), S3_TOKEN_CUOBJ_DC);
    char rc[89];
    memset(rc, 'a', 88);
    rc[88] = '\0';
    assert_int_equal(s3_token_format(rc), S3_TOKEN_CUOBJ_RC);
    rc[87] = '\0';
    assert_int_equal(s3_token_format(rc), S3_TOKEN_UNKNOWN); /* 87 hex digits */
    const char *unknown[] = {"",          "a:b:c:d",  "a:b:c:d:",  ":a:b:c:d",
                             "a:b:c:d:x", "a::b:c:d", "s3r2.AAAA", "hello"};
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
        assert_int_equal(s3_token_format(unknown[i]), S3_TOKEN_UNKNOWN);
    assert_string_equal(s3_token_format_name(S3_TOKEN_CUOBJ_DC), "cuObject DC");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bucket_names),  cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_url_decode),    cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_common_prefix), cmocka_unit_test(test_token_formats),
        cmocka_unit_test(test_field_syntax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
