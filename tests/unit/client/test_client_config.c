/* Unit tests of the client's configuration: defaults, endpoint parsing and
 * the SPT environment overrides (docs/client.md). The file under test is
 * included, SPDK style, so its internals are reachable without the rest of
 * libs3rdma (no curl, no UCX). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../../src/client/config.c"

/* A fake environment: NAME=VALUE pairs. */
static const char *fake_env[16];

static const char *fake_getenv(const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; fake_env[i]; i++)
        if (strncmp(fake_env[i], name, n) == 0 && fake_env[i][n] == '=')
            return fake_env[i] + n + 1;
    return NULL;
}

static void base_cfg(s3r_config_t *cfg)
{
    s3r_config_init(cfg);
    cfg->endpoint = "http://127.0.0.1:9000";
    cfg->access_key = "AK";
    cfg->secret_key = "SK";
    memset(fake_env, 0, sizeof(fake_env));
}

static void test_defaults(void **state)
{
    (void)state;
    s3r_config_t cfg;
    s3c_settings_t s;
    char err[256];
    base_cfg(&cfg);
    assert_int_equal(s3c_settings_build(&cfg, fake_getenv, &s, err, sizeof(err)), S3R_OK);
    assert_int_equal(s.n_http, 1);
    assert_string_equal(s.http[0].url, "http://127.0.0.1:9000");
    assert_string_equal(s.http[0].hostport, "127.0.0.1:9000");
    assert_int_equal(s.http[0].port, 9000);
    /* The RDMA endpoint defaults to the HTTP host, port 9100, until the
     * server says otherwise (rdma_derived: it is asked). */
    assert_int_equal(s.n_rdma, 1);
    assert_string_equal(s.rdma[0].host, "127.0.0.1");
    assert_int_equal(s.rdma[0].port, 9100);
    assert_true(s.rdma_derived);
    assert_null(s.ca_bundle);
    assert_string_equal(s.region, "us-east-1");
    assert_int_equal(s.transport, S3R_TRANSPORT_AUTO);
    assert_int_equal(s.rdma_threshold, 1024 * 1024);
    assert_true(s.rdma_fallback);
    assert_true(s.use_rdma);
    assert_int_equal(s.part_size, 8 * 1024 * 1024);
    assert_int_equal(s.multipart_threshold, 16 * 1024 * 1024);
    assert_int_equal(s.parts_in_flight, 4);
    assert_true(s.put_checksum);
    s3c_settings_free(&s);
}

static void test_endpoints(void **state)
{
    (void)state;
    s3r_config_t cfg;
    s3c_settings_t s;
    char err[256];
    base_cfg(&cfg);
    cfg.endpoint = " http://a:1 , https://b , http://[::1]:9000/ ";
    cfg.rdma_endpoint = "a:7,b";
    cfg.ca_bundle = "/etc/ca.pem";
    assert_int_equal(s3c_settings_build(&cfg, fake_getenv, &s, err, sizeof(err)), S3R_OK);
    assert_false(s.rdma_derived); /* configured: never replaced by what a server says */
    assert_string_equal(s.ca_bundle, "/etc/ca.pem");
    assert_int_equal(s.n_http, 3);
    assert_string_equal(s.http[1].host, "b");
    assert_int_equal(s.http[1].port, 443);
    assert_string_equal(s.http[2].host, "::1");
    assert_string_equal(s.http[2].hostport, "[::1]:9000");
    assert_string_equal(s.http[2].url, "http://[::1]:9000");
    assert_int_equal(s.n_rdma, 2);
    assert_int_equal(s.rdma[0].port, 7);
    assert_int_equal(s.rdma[1].port, 9100);
    s3c_settings_free(&s);

    const char *bad[] = {
        "ftp://x", "http://", "http://h:0", "http://h:99999", "http://h/path", "h:9000",
        "",        ",",       NULL};
    for (int i = 0; bad[i]; i++) {
        base_cfg(&cfg);
        cfg.endpoint = bad[i];
        assert_int_equal(s3c_settings_build(&cfg, fake_getenv, &s, err, sizeof(err)),
                         S3R_ERR_INVALID_ARG);
    }
    base_cfg(&cfg);
    cfg.rdma_endpoint = "host:port";
    assert_int_equal(s3c_settings_build(&cfg, fake_getenv, &s, err, sizeof(err)),
                     S3R_ERR_INVALID_ARG);
    base_cfg(&cfg);
    cfg.secret_key = NULL;
    assert_int_equal(s3c_settings_build(&cfg, fake_getenv, &s, err, sizeof(err)),
                     S3R_ERR_INVALID_ARG);
    base_cfg(&cfg);
    cfg.part_size = 1024;
    assert_int_equal(s3c_settings_build(&cfg, fake_getenv, &s, err, sizeof(err)),
                     S3R_ERR_INVALID_ARG);
    base_cfg(&cfg);
    cfg.parts_in_flight = 65;
    assert_int_equal(s3c_settings_build(&cfg, fake_getenv, &s, err, sizeof(err)),
                     S3R_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "parts_in_flight"));
}

static void test_env_overrides(void **state)
{
    (void)state;
    s3r_config_t cfg;
    s3c_settings_t s;
    char err[256];
    base_cfg(&cfg);
    cfg.rdma_device = "mlx5_0:1";
    fake_env[0] = "RDMA_THRESHOLD_BYTES=4KB";
    fake_env[1] = "RDMA_FALLBACK_ENABLED=false";
    fake_env[2] = "RDMA_TIMEOUT_MS=250";
    fake_env[3] = "RDMA_DEVICE=mlx5_1:1";
    fake_env[4] = "RDMA_LOCAL_IP=10.0.0.5";
    fake_env[5] = "RDMA_LOG_LEVEL=debug";
    assert_int_equal(s3c_settings_build(&cfg, fake_getenv, &s, err, sizeof(err)), S3R_OK);
    assert_int_equal(s.rdma_threshold, 4096);
    assert_false(s.rdma_fallback);
    assert_int_equal(s.rdma_timeout_ms, 250);
    assert_string_equal(s.rdma_device, "mlx5_1:1");
    assert_string_equal(s.rdma_local_ip, "10.0.0.5");
    assert_string_equal(s.rdma_log_level, "debug");
    assert_int_equal(s.transport, S3R_TRANSPORT_AUTO);
    s3c_settings_free(&s);

    /* SPT_RDMA_ENABLED=0 forces HTTP whatever the transport. */
    base_cfg(&cfg);
    cfg.transport = S3R_TRANSPORT_TOKEN;
    fake_env[0] = "SPT_RDMA_ENABLED=0";
    assert_int_equal(s3c_settings_build(&cfg, fake_getenv, &s, err, sizeof(err)), S3R_OK);
    assert_false(s.use_rdma);
    assert_int_equal(s.transport, S3R_TRANSPORT_HTTP);
    s3c_settings_free(&s);

    /* RDMA_THRESHOLD_BYTES=0 means everything goes by RDMA. */
    base_cfg(&cfg);
    fake_env[0] = "RDMA_THRESHOLD_BYTES=0";
    assert_int_equal(s3c_settings_build(&cfg, fake_getenv, &s, err, sizeof(err)), S3R_OK);
    assert_int_equal(s.rdma_threshold, 0);
    s3c_settings_free(&s);

    const char *bad[] = {"SPT_RDMA_ENABLED=maybe",    "RDMA_FALLBACK_ENABLED=2",
                         "RDMA_THRESHOLD_BYTES=lots", "RDMA_TIMEOUT_MS=-5",
                         "RDMA_TIMEOUT_MS=1x",        NULL};
    for (int i = 0; bad[i]; i++) {
        base_cfg(&cfg);
        fake_env[0] = bad[i];
        assert_int_equal(s3c_settings_build(&cfg, fake_getenv, &s, err, sizeof(err)),
                         S3R_ERR_INVALID_ARG);
        assert_true(strlen(err) > 0);
    }
}

static void test_transport_names(void **state)
{
    (void)state;
    s3r_transport_t t;
    assert_int_equal(s3r_transport_parse("http", &t), S3R_OK);
    assert_int_equal(t, S3R_TRANSPORT_HTTP);
    assert_int_equal(s3r_transport_parse("rdma-token", &t), S3R_OK);
    assert_int_equal(t, S3R_TRANSPORT_TOKEN);
    assert_int_equal(s3r_transport_parse("AUTO", &t), S3R_OK);
    assert_int_equal(t, S3R_TRANSPORT_AUTO);
    assert_int_equal(s3r_transport_parse("carrier-pigeon", &t), S3R_ERR_INVALID_ARG);
    assert_string_equal(s3r_transport_name(S3R_TRANSPORT_NATIVE), "native");
    assert_int_equal(s3c_parse_bool("on"), 1);
    assert_int_equal(s3c_parse_bool("No"), 0);
    assert_int_equal(s3c_parse_bool(""), -1);
}

/* Where the keys come from: given (at most S3C_KEY_MAX bytes), none
 * (anonymous: HTTP only, no keys kept), or loaded later (aws_credentials:
 * none may be given). */
static void test_credentials(void **state)
{
    (void)state;
    s3r_config_t cfg;
    s3c_settings_t s;
    char err[256];
    base_cfg(&cfg);
    cfg.access_key = NULL;
    assert_int_equal(s3c_settings_build(&cfg, fake_getenv, &s, err, sizeof(err)),
                     S3R_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "no credentials"));
    assert_non_null(strstr(err, "anonymous"));

    cfg.anonymous = 1; /* no keys needed; RDMA off; given keys dropped */
    cfg.secret_key = "SK";
    assert_int_equal(s3c_settings_build(&cfg, fake_getenv, &s, err, sizeof(err)), S3R_OK);
    assert_true(s.anonymous);
    assert_false(s.use_rdma);
    assert_int_equal(s.transport, S3R_TRANSPORT_HTTP);
    assert_null(s.access_key);
    assert_null(s.secret_key);
    s3c_settings_free(&s);
    for (s3r_transport_t t = S3R_TRANSPORT_TOKEN; t <= S3R_TRANSPORT_NATIVE; t++) {
        cfg.transport = t;
        assert_int_equal(s3c_settings_build(&cfg, fake_getenv, &s, err, sizeof(err)),
                         S3R_ERR_INVALID_ARG);
        assert_non_null(strstr(err, "needs credentials"));
    }

    base_cfg(&cfg);
    cfg.aws_credentials = 1;
    cfg.aws_profile = "dev";
    assert_int_equal(s3c_settings_build(&cfg, fake_getenv, &s, err, sizeof(err)),
                     S3R_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "leave access_key and secret_key NULL"));
    cfg.access_key = cfg.secret_key = NULL;
    assert_int_equal(s3c_settings_build(&cfg, fake_getenv, &s, err, sizeof(err)), S3R_OK);
    assert_true(s.aws_credentials);
    assert_string_equal(s.aws_profile, "dev");
    s3c_settings_free(&s);

    base_cfg(&cfg);
    char longkey[S3C_KEY_MAX + 2];
    memset(longkey, 'k', sizeof(longkey) - 1);
    longkey[sizeof(longkey) - 1] = '\0';
    cfg.secret_key = longkey;
    assert_int_equal(s3c_settings_build(&cfg, fake_getenv, &s, err, sizeof(err)),
                     S3R_ERR_INVALID_ARG);
    longkey[S3C_KEY_MAX] = '\0'; /* the longest taken */
    assert_int_equal(s3c_settings_build(&cfg, fake_getenv, &s, err, sizeof(err)), S3R_OK);
    s3c_settings_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),      cmocka_unit_test(test_endpoints),
        cmocka_unit_test(test_env_overrides), cmocka_unit_test(test_transport_names),
        cmocka_unit_test(test_credentials),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
