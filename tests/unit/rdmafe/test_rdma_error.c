/* The S3 error of each RDMA transfer status (rdmafe/rdma_error.h), as the table
 * in docs/protocol.md gives it; the statuses a frontend answers its own way
 * leave the message untouched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rdmafe/rdma_error.h"

static void test_client_errors(void **state)
{
    (void)state;
    const struct {
        rdma_status_t st;
        s3_error_t err;
        int http;
    } cases[] = {
        {RDMA_FORBIDDEN, S3E_ACCESS_DENIED, 403},
        {RDMA_OUT_OF_BOUNDS, S3E_INVALID_ARGUMENT, 400},
        {RDMA_BUSY, S3E_SLOW_DOWN, 503},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *msg = NULL;
        assert_int_equal(rdmafe_s3_error(cases[i].st, &msg), cases[i].err);
        assert_int_equal(s3_error_status(cases[i].err), cases[i].http);
        assert_non_null(msg);
        assert_true(msg[0] != '\0');
    }
}

static void test_frontend_decides(void **state)
{
    (void)state;
    const rdma_status_t left[] = {RDMA_OK, RDMA_DECLINE, RDMA_TRANSPORT, RDMA_CALLBACK};
    for (size_t i = 0; i < sizeof(left) / sizeof(left[0]); i++) {
        const char *msg = "unchanged";
        assert_int_equal(rdmafe_s3_error(left[i], &msg), S3E_NONE);
        assert_string_equal(msg, "unchanged");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client_errors),
        cmocka_unit_test(test_frontend_decides),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
