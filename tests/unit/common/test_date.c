/* Dates (common/date.h): the three HTTP date forms, ISO 8601 as S3 writes
 * it and SigV4's amz-date, parsed and written back; malformed text and
 * out-of-range fields refused with -1. The cases from the parsers this
 * module replaced (s3_util, post_policy, the client's xml.c, sigv4) are
 * kept here unchanged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "common/date.h"

#define NOW 1700000000 /* 2023-11-14T22:13:20Z */

static void test_http(void **state)
{
    (void)state;
    assert_int_equal(date_parse_http("Fri, 24 May 2013 00:00:00 GMT"), 1369353600);
    assert_int_equal(date_parse_http("Friday, 24-May-13 00:00:00 GMT"), 1369353600);
    assert_int_equal(date_parse_http("Fri May 24 00:00:00 2013"), 1369353600);
    assert_int_equal(date_parse_http("Tue, 02 Jan 2024 03:04:05 GMT"), 1704164645);
    const char *bad[] = {
        "yesterday",
        "02/01/2024",
        "",
        "Fri, 24 May 2013 00:00:00",          /* no zone */
        "Fri, 24 May 2013 00:00:00 GMT junk", /* trailing bytes */
        "Fri, 31 Feb 2013 00:00:00 GMT",      /* no such day */
        "Fri, 24 Foo 2013 00:00:00 GMT",
        "Fri, 24 May 2013 24:00:00 GMT",
        "Thu, 01 Jan 1969 00:00:00 GMT", /* before the epoch */
        "2013-05-24T00:00:00Z",          /* ISO is not an HTTP date */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(date_parse_http(bad[i]), -1);
    assert_int_equal(date_parse_http(NULL), -1);

    char out[40];
    date_format_http(1369353600, out);
    assert_string_equal(out, "Fri, 24 May 2013 00:00:00 GMT");
    for (int64_t t = 0; t < 4102444800LL; t += 86400 * 11 + 4093) {
        date_format_http(t, out);
        assert_int_equal(date_parse_http(out), t);
    }
}

static void test_iso8601(void **state)
{
    (void)state;
    assert_int_equal(date_parse_iso8601("1970-01-01T00:00:00Z"), 0);
    assert_int_equal(date_parse_iso8601("2024-01-02T03:04:05.123Z"), 1704164645);
    assert_int_equal(date_parse_iso8601("2023-11-14T22:13:20Z"), NOW);
    assert_int_equal(date_parse_iso8601("2023-11-14T22:13:20.123Z"), NOW);
    assert_int_equal(date_parse_iso8601("2013-05-24T00:00:00Z"), 1369353600);
    assert_int_equal(date_parse_iso8601("2016-12-31T23:59:60Z"), 1483228800); /* leap second */
    assert_int_equal(date_parse_iso8601("2000-02-29T00:00:00Z"), 951782400);
    const char *bad[] = {
        "yesterday",
        "",
        "2023-11-14T22:13:20",   /* the zone is required */
        "2023-11-14T22:13:20.Z", /* a fraction has digits */
        "2023-13-14T22:13:20Z",
        "2023-11-14 22:13:20Z",
        "2023-11-14T22:13:20+01:00",
        "2023-11-14T22:13:20ZZ",
        "2023-02-29T00:00:00Z", /* not a leap year */
        "2023-04-31T00:00:00Z",
        "2023-11-14T24:00:00Z",
        "2023-11-14T22:60:00Z",
        "2023-11-14T22:13:61Z",
        "+023-11-14T22:13:20Z", /* signs are not digits */
        "2023-1-14T22:13:20Z",  /* two-digit fields */
        "1969-12-31T23:59:59Z", /* before the epoch */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(date_parse_iso8601(bad[i]), -1);
    assert_int_equal(date_parse_iso8601(NULL), -1);

    char out[32];
    date_format_iso8601(1369353600123LL, out);
    assert_string_equal(out, "2013-05-24T00:00:00.123Z");
    for (int64_t t = 0; t < 4102444800LL; t += 86400 * 13 + 5003) {
        date_format_iso8601(t * 1000 + 7, out);
        assert_int_equal(date_parse_iso8601(out), t);
        /* The same text strftime gives. */
        time_t tt = (time_t)t;
        struct tm tm;
        gmtime_r(&tt, &tm);
        char want[32];
        strftime(want, sizeof want, "%Y-%m-%dT%H:%M:%S.007Z", &tm);
        assert_string_equal(out, want);
    }
    /* Years past four digits are clamped, not overflowed. */
    date_format_iso8601(300000000000000LL, out);
    assert_string_equal(out, "9999-12-31T23:59:59.999Z");
}

static void test_amz(void **state)
{
    (void)state;
    assert_int_equal(date_parse_amz("20130524T000000Z"), 1369353600);
    assert_int_equal(date_parse_amz("19700101T000000Z"), 0);
    assert_int_equal(date_parse_amz("20000229T235959Z"), 951868799);
    assert_int_equal(date_parse_amz("20380119T031408Z"), 2147483648LL);
    const char *bad[] = {
        "",
        "20130524",
        "20130524T000000",
        "20130524T000000ZZ",
        "20130524X000000Z",
        "2013052AT000000Z",
        "20131324T000000Z",
        "20130001T000000Z",
        "20130532T000000Z",
        "20130229T000000Z",
        "21000229T000000Z",
        "20130524T240000Z",
        "20130524T006000Z",
        "20130524T000060Z",
        "-0130524T000000Z",
        "19691231T235959Z",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(date_parse_amz(bad[i]), -1);
    assert_int_equal(date_parse_amz(NULL), -1);

    char out[17];
    date_format_amz(1369353600, out);
    assert_string_equal(out, "20130524T000000Z");
    date_format_amz(0, out);
    assert_string_equal(out, "19700101T000000Z");
    date_format_amz(951868799, out);
    assert_string_equal(out, "20000229T235959Z");
    date_format_amz(-1, out);
    assert_string_equal(out, "19691231T235959Z");
    /* Round trip across many days, leap years included. */
    for (int64_t t = 0; t < 4102444800LL; t += 86400 * 7 + 3671) {
        date_format_amz(t, out);
        assert_int_equal(date_parse_amz(out), t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http),
        cmocka_unit_test(test_iso8601),
        cmocka_unit_test(test_amz),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
