/* Metrics primitives: histogram buckets (upper bounds inclusive, +Inf past
 * the last) and the exposition text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/metrics.h"

static void test_hist_buckets(void **state)
{
    (void)state;
    metrics_hist_t h;
    memset(&h, 0, sizeof(h));
    metrics_hist_observe(&h, 0);        /* first bucket */
    metrics_hist_observe(&h, 100);      /* on the bound: still the first */
    metrics_hist_observe(&h, 101);      /* the second */
    metrics_hist_observe(&h, 10000000); /* the last bound */
    metrics_hist_observe(&h, 10000001); /* +Inf */
    assert_int_equal(h.bucket[0], 2);
    assert_int_equal(h.bucket[1], 1);
    assert_int_equal(h.bucket[METRICS_LATENCY_BUCKETS - 1], 1);
    assert_int_equal(h.bucket[METRICS_LATENCY_BUCKETS], 1);
    assert_int_equal(h.sum_us, 0 + 100 + 101 + 10000000 + 10000001);
}

static void test_exposition(void **state)
{
    (void)state;
    metrics_hist_t h;
    memset(&h, 0, sizeof(h));
    metrics_hist_observe(&h, 150);
    metrics_hist_observe(&h, 2000000);
    metrics_counter_t c = {0};
    metrics_add(&c, 41);
    metrics_add(&c, 1);
    buf_t b;
    buf_init(&b, 1 << 16);
    metrics_write_family(&b, "x_total", "counter", "Things.");
    metrics_write_sample(&b, "x_total", "", metrics_get(&c));
    metrics_write_sample(&b, "x_total", "op=\"Get\"", 7);
    metrics_write_hist(&b, "d_seconds", "op=\"Get\"", &h);
    buf_append(&b, "", 1);
    const char *t = b.data;
    assert_non_null(strstr(t, "# HELP x_total Things.\n# TYPE x_total counter\n"));
    assert_non_null(strstr(t, "\nx_total 42\n"));
    assert_non_null(strstr(t, "\nx_total{op=\"Get\"} 7\n"));
    assert_non_null(strstr(t, "d_seconds_bucket{op=\"Get\",le=\"0.0001\"} 0\n"));
    assert_non_null(strstr(t, "d_seconds_bucket{op=\"Get\",le=\"0.00025\"} 1\n"));
    assert_non_null(strstr(t, "d_seconds_bucket{op=\"Get\",le=\"1\"} 1\n"));
    assert_non_null(strstr(t, "d_seconds_bucket{op=\"Get\",le=\"2.5\"} 2\n"));
    assert_non_null(strstr(t, "d_seconds_bucket{op=\"Get\",le=\"+Inf\"} 2\n"));
    assert_non_null(strstr(t, "d_seconds_sum{op=\"Get\"} 2.000150\n"));
    assert_non_null(strstr(t, "d_seconds_count{op=\"Get\"} 2\n"));
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hist_buckets),
        cmocka_unit_test(test_exposition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
