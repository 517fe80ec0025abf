/* Unit tests for src/http/http_router.c: which operation a method, path,
 * Host and query name, read through the frontend table (no server):
 * path-style and virtual-host buckets, percent-decoded keys,
 * sub-resources and the methods each allows, query parameters that name
 * no operation we have, and the server's own endpoints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../table_frontend.h"
#include "http/http_internal.h"

static const char *const domains[] = {"localhost"};

typedef struct routed {
    s3_error_t err;
    const s3_op_t *op;
    char bucket[64], key[64]; /* "" when absent */
    bool virtual_host;
} routed_t;

/* Routes method raw_url with headers (name, value, ..., NULL; NULL: none)
 * and query (raw name, value pairs, NULL-ended; NULL: none). */
static routed_t route(const char *method, const char *raw_url, const char *const *headers,
                      const char *const *query)
{
    static const char *const none[] = {NULL};
    static s3_server_t srv; /* zeroed; only its configuration is read */
    srv.cfg.domains = domains;
    srv.cfg.n_domains = 1;
    table_req_t t = {.headers = headers ? headers : none, .query = query ? query : none};
    table_req_init(&t, &srv, method);
    routed_t r = {.err = http_route(&t.req, raw_url), .op = t.req.op};
    snprintf(r.bucket, sizeof(r.bucket), "%s", t.req.bucket ? t.req.bucket : "");
    snprintf(r.key, sizeof(r.key), "%s", t.req.key ? t.req.key : "");
    r.virtual_host = t.req.virtual_host;
    table_req_release(&t);
    return r;
}

static void test_path_style(void **state)
{
    (void)state;
    routed_t r = route("GET", "/", NULL, NULL);
    assert_int_equal(r.err, S3E_NONE);
    assert_ptr_equal(r.op, &s3_op_list_buckets);
    r = route("PUT", "/", NULL, NULL);
    assert_int_equal(r.err, S3E_METHOD_NOT_ALLOWED);

    r = route("GET", "/photos/2024/a%20b.jpg", NULL, NULL);
    assert_int_equal(r.err, S3E_NONE);
    assert_ptr_equal(r.op, &s3_op_get_object);
    assert_string_equal(r.bucket, "photos");
    assert_string_equal(r.key, "2024/a b.jpg");
    assert_false(r.virtual_host);

    assert_ptr_equal(route("PUT", "/photos", NULL, NULL).op, &s3_op_create_bucket);
    assert_ptr_equal(route("GET", "/photos/", NULL, NULL).op, &s3_op_list_objects);
    assert_ptr_equal(route("HEAD", "/photos/k", NULL, NULL).op, &s3_op_head_object);
    assert_ptr_equal(route("DELETE", "/photos/k", NULL, NULL).op, &s3_op_delete_object);
    assert_ptr_equal(route("POST", "/photos", NULL, NULL).op, &s3_op_post_object);
    assert_int_equal(route("PATCH", "/photos/k", NULL, NULL).err, S3E_METHOD_NOT_ALLOWED);
    assert_int_equal(route("GET", "photos", NULL, NULL).err, S3E_INVALID_REQUEST);
}

static void test_virtual_host(void **state)
{
    (void)state;
    const char *const host[] = {"Host", "photos.localhost:9000", NULL};
    routed_t r = route("GET", "/2024/a.jpg", host, NULL);
    assert_int_equal(r.err, S3E_NONE);
    assert_ptr_equal(r.op, &s3_op_get_object);
    assert_string_equal(r.bucket, "photos");
    assert_string_equal(r.key, "2024/a.jpg");
    assert_true(r.virtual_host);

    /* A Host outside the configured domains: path-style. */
    const char *const other[] = {"Host", "photos.example.com", NULL};
    r = route("GET", "/2024/a.jpg", other, NULL);
    assert_string_equal(r.bucket, "2024");
    assert_string_equal(r.key, "a.jpg");
    assert_false(r.virtual_host);
}

static void test_subresources(void **state)
{
    (void)state;
    const char *const versioning[] = {"versioning", NULL, NULL};
    assert_ptr_equal(route("GET", "/b", NULL, versioning).op, &s3_op_get_bucket_versioning);
    assert_ptr_equal(route("PUT", "/b", NULL, versioning).op, &s3_op_put_bucket_versioning);
    assert_int_equal(route("DELETE", "/b", NULL, versioning).err, S3E_METHOD_NOT_ALLOWED);
    /* A bucket's sub-resource on an object: not implemented. */
    assert_int_equal(route("GET", "/b/k", NULL, versioning).err, S3E_NOT_IMPLEMENTED);

    const char *const acl[] = {"acl", "", NULL};
    assert_ptr_equal(route("GET", "/b/k", NULL, acl).op, &s3_op_get_object_acl);
    assert_int_equal(route("DELETE", "/b/k", NULL, acl).err, S3E_METHOD_NOT_ALLOWED);

    const char *const uploads[] = {"uploads", NULL, NULL};
    assert_ptr_equal(route("POST", "/b/k", NULL, uploads).op, &s3_op_create_mpu);
    assert_ptr_equal(route("GET", "/b", NULL, uploads).op, &s3_op_list_mpu);
    const char *const part[] = {"partNumber", "1", "uploadId", "u1", NULL};
    assert_ptr_equal(route("PUT", "/b/k", NULL, part).op, &s3_op_upload_part);
    const char *const copy[] = {"x-amz-copy-source", "/b/src", NULL};
    assert_ptr_equal(route("PUT", "/b/k", copy, part).op, &s3_op_upload_part_copy);
    assert_ptr_equal(route("PUT", "/b/k", copy, NULL).op, &s3_op_copy_object);
    const char *const upload[] = {"uploadId", "u1", NULL};
    assert_ptr_equal(route("POST", "/b/k", NULL, upload).op, &s3_op_complete_mpu);
    assert_ptr_equal(route("DELETE", "/b/k", NULL, upload).op, &s3_op_abort_mpu);
    assert_ptr_equal(route("GET", "/b/k", NULL, upload).op, &s3_op_list_parts);
    const char *const del[] = {"delete", NULL, NULL};
    assert_ptr_equal(route("POST", "/b", NULL, del).op, &s3_op_delete_objects);
    assert_ptr_equal(route("OPTIONS", "/b/k", NULL, acl).op, &s3_op_cors_preflight);
}

/* A sub-resource S3 has and this server does not names an operation we do
 * not have (501); a parameter S3 does not know is ignored, as S3 ignores it. */
static void test_unknown_parameter(void **state)
{
    (void)state;
    const char *const website[] = {"website", NULL, NULL};
    assert_int_equal(route("GET", "/b", NULL, website).err, S3E_NOT_IMPLEMENTED);
    const char *const plain[] = {"prefix", "a%2Fb", "max-keys", "2", NULL};
    assert_ptr_equal(route("GET", "/b", NULL, plain).op, &s3_op_list_objects);
    const char *const mixed[] = {"prefix", "a", "torrent", NULL, NULL};
    assert_int_equal(route("GET", "/b/k", NULL, mixed).err, S3E_NOT_IMPLEMENTED);
    const char *const redirect[] = {"bucket", "b", "key", "k", "etag", "%22e%22", NULL};
    assert_ptr_equal(route("GET", "/b", NULL, redirect).op, &s3_op_list_objects);
    assert_ptr_equal(route("GET", "/b/k", NULL, redirect).op, &s3_op_get_object);
}

static void test_own_endpoints(void **state)
{
    (void)state;
    static s3_server_t srv;
    const char *const none[] = {NULL};
    const char *const vhost[] = {"Host", "health.localhost", NULL};
    srv.cfg.domains = domains;
    srv.cfg.n_domains = 1;
    struct {
        const char *method, *url;
        const char *const *headers;
        bool metrics;
        const s3_op_t *want;
    } cases[] = {
        {"GET", "/health/live", none, false, &s3_op_health},
        {"HEAD", "/health/ready", none, false, &s3_op_health},
        {"PUT", "/health/live", none, false, NULL},
        {"GET", "/health/live", vhost, false, NULL}, /* a key of bucket "health" */
        {"GET", "/metrics", none, false, NULL},      /* off: an S3 path */
        {"GET", "/metrics", none, true, &s3_op_metrics},
        {"GET", "/_s3rdma/stats", none, false, &s3_op_stats},
        {"HEAD", "/_s3rdma/stats", none, false, NULL},
        {"GET", "/b/k", none, true, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        srv.cfg.metrics_enabled = cases[i].metrics;
        table_req_t t = {.headers = cases[i].headers, .query = none};
        table_req_init(&t, &srv, cases[i].method);
        assert_ptr_equal(http_own_endpoint(&t.req, cases[i].url), cases[i].want);
        table_req_release(&t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_style),    cmocka_unit_test(test_virtual_host),
        cmocka_unit_test(test_subresources),  cmocka_unit_test(test_unknown_parameter),
        cmocka_unit_test(test_own_endpoints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
