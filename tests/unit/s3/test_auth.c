/* Unit tests for src/s3/auth.c: SigV4 verification of a request read
 * through the frontend table alone (no HTTP server), with the examples of
 * AWS's SigV4 documentation for S3 (header auth with a Range header, a
 * bucket listing whose query is canonicalised from the raw arguments, a
 * presigned URL), changed requests that must fail, and an x-amz-* header
 * outside SignedHeaders. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "../table_frontend.h"

#define EXAMPLE_TIME 1369353600 /* 2013-05-24T00:00:00Z, the examples' x-amz-date */
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define CREDENTIAL   "AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request"

static const s3_user_t example_user = {.access_key = "AKIAIOSFODNN7EXAMPLE",
                                       .secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"};

/* Verifies the request (method GET, decoded path) and returns the result;
 * *user_p gets the user it authenticated (NULL when none), *unsigned_p a
 * copy of the headers it found unsigned (NULL when none; free it). */
static s3_error_t verify(const char *path, const char *const *headers, const char *const *query,
                         const s3_user_t **user_p, char **unsigned_p)
{
    static s3_server_t srv; /* zeroed; only its configuration is read */
    srv.cfg.region = "us-east-1";
    srv.cfg.users = &example_user;
    srv.cfg.n_users = 1;
    table_req_t t = {.headers = headers, .query = query};
    table_req_init(&t, &srv, "GET");
    t.req.now_s = EXAMPLE_TIME + 60;
    t.req.path = strdup(path);
    const char *why = NULL;
    s3_error_t err = s3_auth_verify(&t.req, &why);
    if (user_p)
        *user_p = t.req.user;
    if (unsigned_p)
        *unsigned_p = t.req.headers_not_signed ? strdup(t.req.headers_not_signed) : NULL;
    table_req_release(&t);
    return err;
}

static const char *const no_query[] = {NULL};

/* AWS's "GET Object" example's headers (name, value, ...). */
#define GET_OBJECT_HEADERS                                                                         \
    "Host", "examplebucket.s3.amazonaws.com", "Authorization",                                     \
        "AWS4-HMAC-SHA256 Credential=" CREDENTIAL ",SignedHeaders=host;range;"                     \
        "x-amz-content-sha256;x-amz-date,Signature="                                               \
        "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",                        \
        "x-amz-date", "20130524T000000Z", "Range", "bytes=0-9", "x-amz-content-sha256",            \
        EMPTY_SHA256

/* AWS's "GET Object" example: a Range header among the signed ones. */
static void test_header_auth_example(void **state)
{
    (void)state;
    const char *const headers[] = {GET_OBJECT_HEADERS, NULL};
    const s3_user_t *user;
    assert_int_equal(verify("/test.txt", headers, no_query, &user, NULL), S3E_NONE);
    assert_ptr_equal(user, &example_user);

    /* The same signature over another range, or another path: refused. */
    const char *const other_range[] = {
        "Host",  headers[1],   "Authorization",        headers[3],   "x-amz-date", headers[5],
        "Range", "bytes=0-99", "x-amz-content-sha256", EMPTY_SHA256, NULL};
    assert_int_equal(verify("/test.txt", other_range, no_query, &user, NULL),
                     S3E_SIGNATURE_MISMATCH);
    assert_null(user);
    assert_int_equal(verify("/test2.txt", headers, no_query, NULL, NULL), S3E_SIGNATURE_MISMATCH);
}

/* AWS's "GET Bucket (List Objects)" example: the canonical query is built
 * from the raw arguments (sorted: max-keys before prefix). */
static void test_raw_query_example(void **state)
{
    (void)state;
    const char *const headers[] = {
        "Host",
        "examplebucket.s3.amazonaws.com",
        "Authorization",
        "AWS4-HMAC-SHA256 Credential=" CREDENTIAL ",SignedHeaders=host;x-amz-content-sha256;"
        "x-amz-date,Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
        "x-amz-date",
        "20130524T000000Z",
        "x-amz-content-sha256",
        EMPTY_SHA256,
        NULL};
    const char *const query[] = {"prefix", "J", "max-keys", "2", NULL};
    assert_int_equal(verify("/", headers, query, NULL, NULL), S3E_NONE);
    const char *const other[] = {"prefix", "K", "max-keys", "2", NULL};
    assert_int_equal(verify("/", headers, other, NULL, NULL), S3E_SIGNATURE_MISMATCH);
    const char *const more[] = {"prefix", "J", "max-keys", "2", "marker", NULL, NULL};
    assert_int_equal(verify("/", headers, more, NULL, NULL), S3E_SIGNATURE_MISMATCH);
}

/* AWS's presigned URL example: the credential arrives percent-encoded in
 * the raw query. */
static void test_presigned_example(void **state)
{
    (void)state;
    const char *const headers[] = {"Host", "examplebucket.s3.amazonaws.com", NULL};
    const char *const query[] = {"X-Amz-Algorithm",
                                 "AWS4-HMAC-SHA256",
                                 "X-Amz-Credential",
                                 "AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request",
                                 "X-Amz-Date",
                                 "20130524T000000Z",
                                 "X-Amz-Expires",
                                 "86400",
                                 "X-Amz-SignedHeaders",
                                 "host",
                                 "X-Amz-Signature",
                                 "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404",
                                 NULL};
    const s3_user_t *user;
    assert_int_equal(verify("/test.txt", headers, query, &user, NULL), S3E_NONE);
    assert_ptr_equal(user, &example_user);
    const char *const longer[] = {"X-Amz-Algorithm",
                                  query[1],
                                  "X-Amz-Credential",
                                  query[3],
                                  "X-Amz-Date",
                                  query[5],
                                  "X-Amz-Expires",
                                  "86401",
                                  "X-Amz-SignedHeaders",
                                  query[9],
                                  "X-Amz-Signature",
                                  query[11],
                                  NULL};
    assert_int_equal(verify("/test.txt", headers, longer, NULL, NULL), S3E_SIGNATURE_MISMATCH);
}

/* An x-amz-* header outside SignedHeaders refuses a request whose signature
 * is right, naming the header. */
static void test_unsigned_amz_header(void **state)
{
    (void)state;
    const char *const headers[] = {GET_OBJECT_HEADERS, "X-Amz-Meta-Colour", "blue", NULL};
    char *names;
    assert_int_equal(verify("/test.txt", headers, no_query, NULL, &names), S3E_ACCESS_DENIED);
    assert_non_null(names);
    assert_string_equal(names, "x-amz-meta-colour");
    free(names);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_auth_example),
        cmocka_unit_test(test_raw_query_example),
        cmocka_unit_test(test_presigned_example),
        cmocka_unit_test(test_unsigned_amz_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
