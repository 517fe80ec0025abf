/* Unit tests for src/http/http_tls.c: certificate and key checks at load and reload,
 * a failed reload keeping the current generation, and generations freed only
 * when no connection accepted under them (or earlier) is open. Certificates
 * come from the openssl CLI into a temporary directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <unistd.h>

#include "http/http_tls.c"

static char dir[64];
static char cert_a[128], key_a[128], cert_b[128], key_b[128], cert[128], key[128];

/* A self-signed P-256 certificate and its key. */
static void make_cert(const char *crt, const char *k, const char *cn)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 "
             "-subj /CN=%s -keyout %s -out %s 2>/dev/null",
             cn, k, crt);
    assert_int_equal(system(cmd), 0);
}

static void copy_file(const char *from, const char *to)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "cp %s %s", from, to);
    assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/s3r-tls-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(cert_a, sizeof(cert_a), "%s/a.crt", dir);
    snprintf(key_a, sizeof(key_a), "%s/a.key", dir);
    snprintf(cert_b, sizeof(cert_b), "%s/b.crt", dir);
    snprintf(key_b, sizeof(key_b), "%s/b.key", dir);
    snprintf(cert, sizeof(cert), "%s/server.crt", dir);
    snprintf(key, sizeof(key), "%s/server.key", dir);
    make_cert(cert_a, key_a, "a");
    make_cert(cert_b, key_b, "b");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static unsigned generations(const http_tls_t *tls)
{
    unsigned n = 0;
    for (const http_tls_cert_t *c = tls->oldest; c; c = c->newer)
        n++;
    return n;
}

/* What a handshake would be handed now. */
static gnutls_pcert_st *served(void)
{
    gnutls_pcert_st *pcert = NULL;
    unsigned n = 0;
    gnutls_privkey_t pkey = NULL;
    assert_int_equal(http_tls_retrieve(NULL, NULL, 0, NULL, 0, &pcert, &n, &pkey), 0);
    assert_int_equal(n, 1);
    assert_non_null(pkey);
    return pcert;
}

static void test_load_checks_the_files(void **state)
{
    (void)state;
    assert_null(http_tls_create(cert_a, key_b));  /* the key of another certificate */
    assert_null(http_tls_create(key_a, key_a));   /* no certificate in the file */
    assert_null(http_tls_create(cert_a, cert_a)); /* no key in the file */
    assert_null(http_tls_create("/nonexistent.crt", key_a));
    http_tls_t *tls = http_tls_create(cert_a, key_a);
    assert_non_null(tls);
    assert_null(http_tls_create(cert_b, key_b)); /* one per process */
    http_tls_destroy(tls);
    http_tls_destroy(NULL);
}

static void test_generations_live_while_connections_may_use_them(void **state)
{
    (void)state;
    copy_file(cert_a, cert);
    copy_file(key_a, key);
    http_tls_t *tls = http_tls_create(cert, key);
    assert_non_null(tls);
    gnutls_pcert_st *first = served();

    http_tls_cert_t *early = http_tls_hold(tls); /* accepted before the reloads */
    copy_file(cert_b, cert);
    copy_file(key_b, key);
    assert_int_equal(http_tls_reload(tls), 0);
    gnutls_pcert_st *second = served();
    assert_ptr_not_equal(first, second);
    http_tls_cert_t *later = http_tls_hold(tls);
    assert_ptr_equal(later, tls->current);

    /* A key that does not match: refused, the current generation stays. */
    copy_file(key_a, key);
    assert_int_equal(http_tls_reload(tls), -1);
    assert_ptr_equal(served(), second);
    assert_int_equal(generations(tls), 2);

    copy_file(key_b, key);
    assert_int_equal(http_tls_reload(tls), 0); /* a third generation */
    assert_int_equal(generations(tls), 3);
    /* The early connection may have shaken hands with any generation from
     * its own on: while it is open, none is freed. */
    http_tls_release(tls, later);
    assert_int_equal(generations(tls), 3);
    http_tls_release(tls, early);
    assert_int_equal(generations(tls), 1);
    assert_ptr_equal(tls->oldest, tls->current);

    /* With no connection open a reload frees the old generation at once. */
    assert_int_equal(http_tls_reload(tls), 0);
    assert_int_equal(generations(tls), 1);
    http_tls_destroy(tls);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_checks_the_files),
        cmocka_unit_test(test_generations_live_while_connections_may_use_them),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
