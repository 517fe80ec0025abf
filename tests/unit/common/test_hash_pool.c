/* The hash pool gives the digest a caller would get in line, whether its
 * jobs run on a pool thread or (pool busy, or none) in the caller, with
 * many callers at once. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/hash_pool.h"

#define DATA_LEN (3u << 20)
#define CHUNK    (256u << 10)

static uint8_t *data;
static uint8_t expect[MD5_LEN];

/* MD5 of data, chunk by chunk through the pool. */
static void pooled_md5(hash_pool_t *p, uint8_t out[MD5_LEN])
{
    digest_t *d = hash_digest_md5_new();
    assert_non_null(d);
    for (size_t off = 0; off < DATA_LEN; off += CHUNK) {
        hash_job_t job = {0};
        hash_pool_job_start(p, &job, d, data + off, CHUNK);
        hash_pool_job_wait(&job);
    }
    hash_digest_final(d, out);
}

static void test_pool_digests_as_in_line(void **state)
{
    (void)state;
    uint8_t got[MD5_LEN];
    pooled_md5(NULL, got); /* no pool: every job in line */
    assert_memory_equal(got, expect, MD5_LEN);
    for (unsigned threads = 0; threads <= 2; threads++) {
        hash_pool_t *p = hash_pool_new(threads);
        assert_non_null(p);
        pooled_md5(p, got);
        assert_memory_equal(got, expect, MD5_LEN);
        hash_pool_free(p);
    }
}

typedef struct shared_run {
    hash_pool_t *pool;
    uint8_t out[MD5_LEN];
} shared_run_t;

static void *pooled_caller(void *arg)
{
    shared_run_t *r = arg;
    pooled_md5(r->pool, r->out);
    return NULL;
}

/* More callers than pool threads: some jobs find none idle and run in their
 * caller; every digest still comes out right. */
static void test_pool_shared_by_more_callers_than_threads(void **state)
{
    (void)state;
    hash_pool_t *p = hash_pool_new(2);
    assert_non_null(p);
    enum { CALLERS = 5 };
    shared_run_t runs[CALLERS];
    pthread_t t[CALLERS];
    for (int i = 0; i < CALLERS; i++) {
        runs[i].pool = p;
        assert_int_equal(pthread_create(&t[i], NULL, pooled_caller, &runs[i]), 0);
    }
    for (int i = 0; i < CALLERS; i++) {
        pthread_join(t[i], NULL);
        assert_memory_equal(runs[i].out, expect, MD5_LEN);
    }
    hash_pool_free(p);
}

int main(void)
{
    data = malloc(DATA_LEN);
    for (size_t i = 0; i < DATA_LEN; i++)
        data[i] = (uint8_t)(i * 2654435761u >> 13);
    digest_t *d = hash_digest_md5_new();
    hash_digest_update(d, data, DATA_LEN);
    hash_digest_final(d, expect);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_digests_as_in_line),
        cmocka_unit_test(test_pool_shared_by_more_callers_than_threads),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(data);
    return rc;
}
