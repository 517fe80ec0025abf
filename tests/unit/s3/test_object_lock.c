/* Object lock as data (s3/object_lock.h): the configuration, retention and
 * legal-hold parsers with S3's error codes, the stored forms' round trips,
 * default retention (days and calendar years), and S3's two rules: what a
 * version's lock protects, and which retention changes are allowed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "s3/object_lock.h"

#define T2030 1893456000 /* 2030-01-01T00:00:00Z */

static void same_config(const s3_lock_config_t *a, const s3_lock_config_t *b)
{
    assert_int_equal(a->mode, b->mode);
    assert_int_equal(a->days, b->days);
    assert_int_equal(a->years, b->years);
}

static void same_retention(const s3_retention_t *a, const s3_retention_t *b)
{
    assert_int_equal(a->mode, b->mode);
    assert_int_equal(a->until, b->until);
}

static s3_error_t config(const char *xml, s3_lock_config_t *c)
{
    const char *why;
    return s3_lock_config_from_xml(xml, strlen(xml), c, &why);
}

static void test_config_parse(void **state)
{
    (void)state;
    s3_lock_config_t c;
    assert_int_equal(
        config("<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>"
               "</ObjectLockConfiguration>",
               &c),
        S3E_NONE);
    assert_int_equal(c.mode, S3_LOCK_NONE);
    assert_int_equal(
        config("<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>"
               "<Rule><DefaultRetention><Mode>COMPLIANCE</Mode><Years>2</Years>"
               "</DefaultRetention></Rule></ObjectLockConfiguration>",
               &c),
        S3E_NONE);
    assert_int_equal(c.mode, S3_LOCK_COMPLIANCE);
    assert_int_equal(c.years, 2);
    assert_int_equal(c.days, 0);
#define RULE(x)                                                                                    \
    "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule>"                \
    "<DefaultRetention>" x "</DefaultRetention></Rule></ObjectLockConfiguration>"
    /* The refusals S3 gives. */
    assert_int_equal(config(RULE("<Mode>GOVERNANCE</Mode><Days>1</Days><Years>1</Years>"), &c),
                     S3E_MALFORMED_XML);
    assert_int_equal(config(RULE("<Mode>GOVERNANCE</Mode><Days>0</Days>"), &c),
                     S3E_INVALID_RETENTION_PERIOD);
    assert_int_equal(config(RULE("<Mode>GOVERNANCE</Mode><Years>-1</Years>"), &c),
                     S3E_INVALID_RETENTION_PERIOD);
    assert_int_equal(config(RULE("<Mode>GOVERNANCE</Mode><Days>36501</Days>"), &c),
                     S3E_INVALID_RETENTION_PERIOD);
    assert_int_equal(config(RULE("<Mode>GOVERNANCE</Mode><Years>101</Years>"), &c),
                     S3E_INVALID_RETENTION_PERIOD);
    assert_int_equal(config(RULE("<Mode>GOVERNANCE</Mode><Days>x</Days>"), &c), S3E_MALFORMED_XML);
    assert_int_equal(config(RULE("<Mode>governance</Mode><Days>1</Days>"), &c), S3E_MALFORMED_XML);
    assert_int_equal(config(RULE("<Mode>abc</Mode><Years>1</Years>"), &c), S3E_MALFORMED_XML);
    assert_int_equal(config(RULE("<Days>1</Days>"), &c), S3E_MALFORMED_XML);
    assert_int_equal(config(RULE("<Mode>GOVERNANCE</Mode>"), &c), S3E_MALFORMED_XML);
    assert_int_equal(
        config("<ObjectLockConfiguration><ObjectLockEnabled>Disabled</ObjectLockEnabled>"
               "</ObjectLockConfiguration>",
               &c),
        S3E_MALFORMED_XML);
    assert_int_equal(config("<ObjectLockConfiguration/>", &c), S3E_MALFORMED_XML);
    assert_int_equal(config("<Other/>", &c), S3E_MALFORMED_XML);
    assert_int_equal(config("", &c), S3E_MALFORMED_XML);
}

static void test_config_stored(void **state)
{
    (void)state;
    const s3_lock_config_t cases[] = {
        {S3_LOCK_NONE, 0, 0}, {S3_LOCK_GOVERNANCE, 30, 0}, {S3_LOCK_COMPLIANCE, 0, 100}};
    for (size_t i = 0; i < 3; i++) {
        char s[64];
        size_t n = s3_lock_config_encode(&cases[i], s);
        s3_lock_config_t back;
        assert_int_equal(s3_lock_config_decode(s, n, &back), 0);
        same_config(&back, &cases[i]);
        buf_t xml;
        buf_init(&xml, 4096);
        s3_lock_config_xml(&cases[i], &xml);
        const char *why;
        s3_lock_config_t parsed;
        assert_int_equal(s3_lock_config_from_xml(xml.data, xml.len, &parsed, &why), S3E_NONE);
        same_config(&parsed, &cases[i]);
        buf_free(&xml);
    }
    s3_lock_config_t c;
    const char *bad[] = {"",
                         "Enabled ",
                         "Enabled GOVERNANCE Days 0",
                         "Enabled X Days 1",
                         "Enabled GOVERNANCE Weeks 1",
                         "Enabled COMPLIANCE Years 101",
                         "Enabled GOVERNANCE Days 1 x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(s3_lock_config_decode(bad[i], strlen(bad[i]), &c), -1);
}

static void test_default(void **state)
{
    (void)state;
    s3_lock_config_t d = {S3_LOCK_GOVERNANCE, 1, 0}, y = {S3_LOCK_COMPLIANCE, 0, 1};
    s3_retention_t r = s3_lock_config_default(&d, T2030);
    assert_int_equal(r.mode, S3_LOCK_GOVERNANCE);
    assert_int_equal(r.until, T2030 + 86400);
    /* Years are calendar years: 2028 has 366 days. */
    r = s3_lock_config_default(&y, 1830297600); /* 2028-01-01 */
    assert_int_equal(r.mode, S3_LOCK_COMPLIANCE);
    assert_int_equal(r.until, 1830297600 + 366 * 86400);
    s3_lock_config_t none = {S3_LOCK_NONE, 0, 0};
    assert_int_equal(s3_lock_config_default(&none, T2030).mode, S3_LOCK_NONE);
}

static void test_retention(void **state)
{
    (void)state;
    const char *why;
    s3_retention_t r;
    const char *ok = "<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>2030-01-01T00:00:00Z"
                     "</RetainUntilDate></Retention>";
    assert_int_equal(s3_retention_from_xml(ok, strlen(ok), &r, &why), S3E_NONE);
    assert_int_equal(r.mode, S3_LOCK_GOVERNANCE);
    assert_int_equal(r.until, T2030);
    assert_int_equal(s3_retention_from_xml("<Retention/>", 12, &r, &why), S3E_NONE);
    assert_int_equal(r.mode, S3_LOCK_NONE);
    const char *bad[] = {
        "<Retention><Mode>governance</Mode><RetainUntilDate>2030-01-01T00:00:00Z"
        "</RetainUntilDate></Retention>",
        "<Retention><Mode>GOVERNANCE</Mode></Retention>",
        "<Retention><RetainUntilDate>2030-01-01T00:00:00Z</RetainUntilDate></Retention>",
        "<Retention><Mode>COMPLIANCE</Mode><RetainUntilDate>soon</RetainUntilDate></Retention>",
        "<LegalHold/>"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(s3_retention_from_xml(bad[i], strlen(bad[i]), &r, &why),
                         S3E_MALFORMED_XML);
    /* Headers: both or neither, a known mode, a date in the future. */
    assert_int_equal(s3_retention_from_headers(NULL, NULL, 0, &r, &why), S3E_NONE);
    assert_int_equal(r.mode, S3_LOCK_NONE);
    assert_int_equal(
        s3_retention_from_headers("COMPLIANCE", "2030-01-01T00:00:00.123Z", T2030 - 1, &r, &why),
        S3E_NONE);
    assert_int_equal(r.mode, S3_LOCK_COMPLIANCE);
    assert_int_equal(r.until, T2030);
    assert_int_equal(
        s3_retention_from_headers("COMPLIANCE", "2030-01-01T00:00:00Z", T2030, &r, &why),
        S3E_INVALID_ARGUMENT);
    assert_int_equal(s3_retention_from_headers("COMPLIANCE", NULL, 0, &r, &why),
                     S3E_INVALID_ARGUMENT);
    assert_int_equal(s3_retention_from_headers(NULL, "2030-01-01T00:00:00Z", 0, &r, &why),
                     S3E_INVALID_ARGUMENT);
    assert_int_equal(s3_retention_from_headers("WORM", "2030-01-01T00:00:00Z", 0, &r, &why),
                     S3E_INVALID_ARGUMENT);
    assert_int_equal(s3_retention_from_headers("GOVERNANCE", "1/1/2030", 0, &r, &why),
                     S3E_INVALID_ARGUMENT);
    /* Stored form and XML. */
    s3_retention_t g = {S3_LOCK_GOVERNANCE, T2030}, back;
    char s[48];
    s3_retention_encode(&g, s);
    assert_string_equal(s, "GOVERNANCE 1893456000");
    assert_int_equal(s3_retention_decode(s, &back), 0);
    same_retention(&back, &g);
    assert_int_equal(s3_retention_decode(NULL, &back), 0);
    assert_int_equal(back.mode, S3_LOCK_NONE);
    const char *bad_s[] = {"",
                           "GOVERNANCE",
                           "GOVERNANCE ",
                           "X 1",
                           "COMPLIANCE 1x",
                           "COMPLIANCE -1",
                           "GOVERNANCE 1234567890123456789",
                           "GOVERNANCE 253402300800"};
    for (size_t i = 0; i < sizeof bad_s / sizeof bad_s[0]; i++)
        assert_int_equal(s3_retention_decode(bad_s[i], &back), -1);
    buf_t xml;
    buf_init(&xml, 4096);
    s3_retention_xml(&g, &xml);
    assert_non_null(
        strstr(xml.data, "<RetainUntilDate>2030-01-01T00:00:00.000Z</RetainUntilDate>"));
    assert_int_equal(s3_retention_from_xml(xml.data, xml.len, &back, &why), S3E_NONE);
    same_retention(&back, &g);
    buf_free(&xml);
}

static void test_legal_hold(void **state)
{
    (void)state;
    const char *why;
    bool on = false;
    const char *x = "<LegalHold><Status>ON</Status></LegalHold>";
    assert_int_equal(s3_legal_hold_from_xml(x, strlen(x), &on, &why), S3E_NONE);
    assert_true(on);
    x = "<LegalHold><Status>abc</Status></LegalHold>";
    assert_int_equal(s3_legal_hold_from_xml(x, strlen(x), &on, &why), S3E_MALFORMED_XML);
    assert_int_equal(s3_legal_hold_from_xml("<LegalHold/>", 12, &on, &why), S3E_MALFORMED_XML);
    assert_int_equal(s3_legal_hold_from_header("OFF", &on, &why), S3E_NONE);
    assert_false(on);
    assert_int_equal(s3_legal_hold_from_header("on", &on, &why), S3E_INVALID_ARGUMENT);
    assert_true(s3_legal_hold_on("ON"));
    assert_false(s3_legal_hold_on("OFF"));
    assert_false(s3_legal_hold_on(NULL));
}

static void test_protects(void **state)
{
    (void)state;
    int64_t now = T2030 - 10;
    assert_false(s3_lock_protects(NULL, NULL, now, false));
    assert_true(s3_lock_protects(NULL, "ON", now, true));
    assert_false(s3_lock_protects(NULL, "OFF", now, false));
    assert_true(s3_lock_protects("GOVERNANCE 1893456000", NULL, now, false));
    assert_false(s3_lock_protects("GOVERNANCE 1893456000", NULL, now, true));
    assert_true(s3_lock_protects("COMPLIANCE 1893456000", NULL, now, true));
    /* Expired retention protects nothing; a legal hold still does. */
    assert_false(s3_lock_protects("COMPLIANCE 1893456000", NULL, T2030, false));
    assert_true(s3_lock_protects("COMPLIANCE 1893456000", "ON", T2030, false));
    /* Damage protects. */
    assert_true(s3_lock_protects("COMPLIANCE soon", NULL, now, true));
}

static void test_change(void **state)
{
    (void)state;
    const char *why;
    int64_t now = T2030 - 1000;
    s3_retention_t gov = {S3_LOCK_GOVERNANCE, T2030}, comp = {S3_LOCK_COMPLIANCE, T2030};
    s3_retention_t none = {S3_LOCK_NONE, 0};
    s3_retention_t gov_later = {S3_LOCK_GOVERNANCE, T2030 + 1};
    s3_retention_t gov_sooner = {S3_LOCK_GOVERNANCE, T2030 - 1};
    s3_retention_t comp_later = {S3_LOCK_COMPLIANCE, T2030 + 1};
    /* Nothing to keep: anything goes. */
    assert_int_equal(s3_retention_change_check(&none, &gov_sooner, now, false, &why), S3E_NONE);
    /* Extending in the same mode: always. */
    assert_int_equal(s3_retention_change_check(&gov, &gov_later, now, false, &why), S3E_NONE);
    assert_int_equal(s3_retention_change_check(&comp, &comp_later, now, false, &why), S3E_NONE);
    assert_int_equal(s3_retention_change_check(&comp, &comp, now, false, &why), S3E_NONE);
    /* GOVERNANCE: shorter, removed or another mode only with bypass. */
    assert_int_equal(s3_retention_change_check(&gov, &gov_sooner, now, false, &why),
                     S3E_ACCESS_DENIED);
    assert_int_equal(s3_retention_change_check(&gov, &gov_sooner, now, true, &why), S3E_NONE);
    assert_int_equal(s3_retention_change_check(&gov, &none, now, false, &why), S3E_ACCESS_DENIED);
    assert_int_equal(s3_retention_change_check(&gov, &none, now, true, &why), S3E_NONE);
    assert_int_equal(s3_retention_change_check(&gov, &comp, now, false, &why), S3E_ACCESS_DENIED);
    assert_int_equal(s3_retention_change_check(&gov, &comp, now, true, &why), S3E_NONE);
    /* COMPLIANCE: never shorter, never removed, never another mode. */
    assert_int_equal(s3_retention_change_check(&comp, &gov_later, now, true, &why),
                     S3E_ACCESS_DENIED);
    assert_int_equal(s3_retention_change_check(&comp, &none, now, true, &why), S3E_ACCESS_DENIED);
    /* Once expired, anything. */
    assert_int_equal(s3_retention_change_check(&comp, &none, T2030, false, &why), S3E_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_parse), cmocka_unit_test(test_config_stored),
        cmocka_unit_test(test_default),      cmocka_unit_test(test_retention),
        cmocka_unit_test(test_legal_hold),   cmocka_unit_test(test_protects),
        cmocka_unit_test(test_change),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
