/* CORS configurations: validation of the XML, the stored form's round trip,
 * rule matching and the headers S3 answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "s3/cors.h"

static const char *const CONFIG =
    "<CORSConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<CORSRule><ID>app</ID><AllowedOrigin>https://app.example.com</AllowedOrigin>"
    "<AllowedOrigin>https://*.example.org</AllowedOrigin>"
    "<AllowedMethod>PUT</AllowedMethod><AllowedMethod>GET</AllowedMethod>"
    "<AllowedHeader>x-amz-*</AllowedHeader><AllowedHeader>Content-Type</AllowedHeader>"
    "<ExposeHeader>ETag</ExposeHeader><MaxAgeSeconds> 3000 </MaxAgeSeconds></CORSRule>"
    "<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>HEAD</AllowedMethod></CORSRule>"
    "</CORSConfiguration>";

/* Parses xml into cfg; returns what s3_cors_from_xml did. */
static int load(const char *xml, s3_cors_t *cfg, bool *invalid_p)
{
    buf_t doc;
    char why[256];
    bool invalid = false;
    int rc = s3_cors_from_xml(xml, strlen(xml), &doc, &invalid, why, sizeof why);
    if (invalid_p)
        *invalid_p = invalid;
    if (rc != 0)
        return rc;
    assert_int_equal(s3_cors_parse(doc.data, doc.len, cfg), 0);
    buf_free(&doc);
    return 0;
}

static void test_round_trip(void **state)
{
    (void)state;
    s3_cors_t cfg;
    assert_int_equal(load(CONFIG, &cfg, NULL), 0);
    assert_int_equal(cfg.n_rules, 2);
    const s3_cors_rule_t *r = &cfg.rules[0];
    assert_string_equal(r->id, "app");
    assert_int_equal(r->n_origins, 2);
    assert_int_equal(r->methods, s3_cors_method_bit("GET") | s3_cors_method_bit("PUT"));
    assert_string_equal(r->max_age, "3000");
    assert_string_equal(cfg.rules[1].id, "");
    buf_t xml;
    buf_init(&xml, 1 << 20);
    s3_cors_xml(&cfg, &xml);
    buf_append(&xml, "", 1);
    assert_string_equal(
        xml.data,
        "<CORSRule><ID>app</ID><AllowedHeader>x-amz-*</AllowedHeader>"
        "<AllowedHeader>Content-Type</AllowedHeader><AllowedMethod>GET</AllowedMethod>"
        "<AllowedMethod>PUT</AllowedMethod><AllowedOrigin>https://app.example.com</AllowedOrigin>"
        "<AllowedOrigin>https://*.example.org</AllowedOrigin><ExposeHeader>ETag</ExposeHeader>"
        "<MaxAgeSeconds>3000</MaxAgeSeconds></CORSRule>"
        "<CORSRule><AllowedMethod>HEAD</AllowedMethod><AllowedOrigin>*</AllowedOrigin>"
        "</CORSRule>");
    buf_free(&xml);
    s3_cors_free(&cfg);
}

static void test_invalid(void **state)
{
    (void)state;
    static const struct {
        const char *xml;
        bool invalid; /* InvalidRequest rather than MalformedXML */
    } cases[] = {
        {"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>"
         "<AllowedMethod>PATCH</AllowedMethod></CORSRule></CORSConfiguration>",
         true},
        {"<CORSConfiguration><CORSRule><AllowedOrigin>*.*</AllowedOrigin>"
         "<AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>",
         true},
        {"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedHeader>**"
         "</AllowedHeader><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>",
         true},
        {"<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule>"
         "</CORSConfiguration>",
         false},
        {"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin></CORSRule>"
         "</CORSConfiguration>",
         false},
        {"<CORSConfiguration/>", false},
        {"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET"
         "</AllowedMethod><MaxAgeSeconds>-1</MaxAgeSeconds></CORSRule></CORSConfiguration>",
         false},
        {"<CORSConfiguration><CORSRule><AllowedOrigin>a&#13;b</AllowedOrigin><AllowedMethod>GET"
         "</AllowedMethod></CORSRule></CORSConfiguration>",
         false},
        {"<CORSConfiguration><CORSRule><ID>a</ID><ID>b</ID><AllowedOrigin>*</AllowedOrigin>"
         "<AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>",
         false},
        {"<CORSConfiguration><CORSRule><AllowedOrigin><x/></AllowedOrigin>"
         "<AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>",
         false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        s3_cors_t cfg;
        bool invalid;
        assert_int_equal(load(cases[i].xml, &cfg, &invalid), -1);
        assert_int_equal(invalid, cases[i].invalid);
    }
}

static void test_rule_limit(void **state)
{
    (void)state;
    const char *rule = "<CORSRule><AllowedOrigin>*</AllowedOrigin>"
                       "<AllowedMethod>GET</AllowedMethod></CORSRule>";
    for (int n = 100; n <= 101; n++) {
        buf_t xml;
        buf_init(&xml, 1 << 20);
        buf_append_str(&xml, "<CORSConfiguration>");
        for (int i = 0; i < n; i++)
            buf_append_str(&xml, rule);
        buf_append_str(&xml, "</CORSConfiguration>");
        buf_append(&xml, "", 1);
        s3_cors_t cfg;
        bool invalid;
        assert_int_equal(load(xml.data, &cfg, &invalid), n == 100 ? 0 : -1);
        if (n == 100) {
            assert_int_equal(cfg.n_rules, 100);
            s3_cors_free(&cfg);
        }
        buf_free(&xml);
    }
}

static void test_stored_form_checked(void **state)
{
    (void)state;
    s3_cors_t cfg;
    assert_int_equal(s3_cors_parse("", 0, &cfg), 0);
    assert_int_equal(cfg.n_rules, 0);
    assert_int_equal(s3_cors_parse("Ox", 2, &cfg), -1);        /* no NUL */
    assert_int_equal(s3_cors_parse("O*\0", 3, &cfg), -1);      /* no rule first */
    assert_int_equal(s3_cors_parse("R\0Z*\0", 5, &cfg), -1);   /* unknown tag */
    assert_int_equal(s3_cors_parse("R\0MFOO\0", 7, &cfg), -1); /* unknown method */
}

static void test_match(void **state)
{
    (void)state;
    s3_cors_t cfg;
    assert_int_equal(load(CONFIG, &cfg, NULL), 0);
    unsigned get = s3_cors_method_bit("GET"), head = s3_cors_method_bit("HEAD");
    unsigned del = s3_cors_method_bit("DELETE");
    assert_int_equal(s3_cors_method_bit("OPTIONS"), 0);
    assert_ptr_equal(s3_cors_match(&cfg, "https://app.example.com", get, NULL), &cfg.rules[0]);
    assert_ptr_equal(s3_cors_match(&cfg, "https://a.b.example.org", get, NULL), &cfg.rules[0]);
    assert_null(s3_cors_match(&cfg, "https://example.org", get, NULL));
    assert_null(s3_cors_match(&cfg, "https://APP.example.com", get, NULL));
    assert_null(s3_cors_match(&cfg, "https://app.example.com", del, NULL));
    assert_ptr_equal(s3_cors_match(&cfg, "null", head, NULL), &cfg.rules[1]);
    assert_null(s3_cors_match(&cfg, NULL, get, NULL));
    /* Headers: each must match, case-insensitively. */
    assert_non_null(
        s3_cors_match(&cfg, "https://app.example.com", get, "X-Amz-Date , content-type,,"));
    assert_null(s3_cors_match(&cfg, "https://app.example.com", get, "x-amz-date, authorization"));
    assert_null(s3_cors_match(&cfg, "http://x", head, "x-amz-date")); /* rule 2 allows none */
    s3_cors_free(&cfg);
    /* Requested headers too long to echo in one reply header: refused. */
    assert_int_equal(load("<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>"
                          "<AllowedMethod>GET</AllowedMethod><AllowedHeader>*</AllowedHeader>"
                          "</CORSRule></CORSConfiguration>",
                          &cfg, NULL),
                     0);
    char *many = malloc(S3_CORS_MAX_REQUEST_HEADERS + 2);
    assert_non_null(many);
    memset(many, 'a', S3_CORS_MAX_REQUEST_HEADERS + 1);
    many[S3_CORS_MAX_REQUEST_HEADERS + 1] = '\0';
    assert_null(s3_cors_match(&cfg, "http://x", get, many));
    many[S3_CORS_MAX_REQUEST_HEADERS] = '\0';
    assert_non_null(s3_cors_match(&cfg, "http://x", get, many));
    free(many);
    s3_cors_free(&cfg);
}

typedef struct collected {
    char text[1024];
} collected_t;

static void collect(void *ctx, const char *name, const char *value)
{
    collected_t *c = ctx;
    size_t l = strlen(c->text);
    snprintf(c->text + l, sizeof c->text - l, "%s: %s\n", name, value);
}

static void test_headers(void **state)
{
    (void)state;
    s3_cors_t cfg;
    assert_int_equal(load(CONFIG, &cfg, NULL), 0);
    collected_t c = {{0}};
    s3_cors_headers(&cfg.rules[0], "https://a.example.org", true, "X-Amz-Date", collect, &c);
    assert_string_equal(c.text, "Access-Control-Allow-Origin: https://a.example.org\n"
                                "Access-Control-Allow-Methods: GET, PUT\n"
                                "Access-Control-Allow-Headers: x-amz-date\n"
                                "Access-Control-Expose-Headers: ETag\n"
                                "Access-Control-Max-Age: 3000\n"
                                "Access-Control-Allow-Credentials: true\n"
                                "Vary: Origin, Access-Control-Request-Headers, "
                                "Access-Control-Request-Method\n");
    memset(&c, 0, sizeof c);
    s3_cors_headers(&cfg.rules[1], "http://x", false, NULL, collect, &c);
    assert_string_equal(c.text, "Access-Control-Allow-Origin: *\n"
                                "Access-Control-Allow-Methods: HEAD\n"
                                "Vary: Origin, Access-Control-Request-Headers, "
                                "Access-Control-Request-Method\n");
    s3_cors_free(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip), cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_rule_limit), cmocka_unit_test(test_stored_form_checked),
        cmocka_unit_test(test_match),      cmocka_unit_test(test_headers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
