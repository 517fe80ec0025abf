/* s3rdma-bench's histogram and self-verifying objects (src/tools/bench). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "tools/bench/hist.c"
#include "tools/bench/payload.c"

static hist_t *new_hist(void)
{
    hist_t *h = malloc(sizeof *h);
    assert_non_null(h);
    hist_reset(h);
    return h;
}

/* Every value maps to a bucket whose span holds it, within 1/64 above 128. */
static void test_bucket_bounds(void **state)
{
    (void)state;
    for (uint64_t v = 0; v < (UINT64_C(1) << 39); v = v < 4096 ? v + 1 : v + v / 7 + 1) {
        unsigned i = bucket_of(v);
        uint64_t low, width;
        bucket_span(i, &low, &width);
        assert_true(i < HIST_BUCKETS);
        assert_true(low <= v && v < low + width);
        assert_true(v < 128 ? width == 1 : width * 64 <= low);
    }
    assert_int_equal(bucket_of(UINT64_MAX), HIST_BUCKETS - 1);
}

static void test_percentiles(void **state)
{
    (void)state;
    hist_t *h = new_hist();
    assert_true(hist_percentile(h, 50) == 0.0);
    for (uint64_t v = 1; v <= 10000; v++)
        hist_record(h, v * 1000); /* 1 us .. 10 ms */
    assert_int_equal(hist_count(h), 10000);
    assert_int_equal(hist_min(h), 1000);
    assert_int_equal(hist_max(h), 10000000);
    double p50 = hist_percentile(h, 50), p99 = hist_percentile(h, 99),
           p999 = hist_percentile(h, 99.9);
    assert_true(p50 > 5000000 * 0.98 && p50 < 5000000 * 1.02);
    assert_true(p99 > 9900000 * 0.98 && p99 < 9900000 * 1.02);
    assert_true(p50 <= p99 && p99 <= p999 && p999 <= (double)hist_max(h));
    assert_true(hist_percentile(h, 0) >= (double)hist_min(h));
    assert_true(hist_percentile(h, 100) == (double)hist_max(h));
    free(h);
}

static void test_add_and_diff(void **state)
{
    (void)state;
    hist_t *a = new_hist(), *b = new_hist(), *d = new_hist();
    for (int i = 0; i < 100; i++)
        hist_record(a, 500);
    hist_add(b, a); /* b: a snapshot */
    for (int i = 0; i < 100; i++)
        hist_record(a, 80000);
    hist_diff(d, a, b);
    assert_int_equal(hist_count(d), 100);
    assert_true(hist_percentile(d, 1) > 79000); /* only the values after the snapshot */
    free(a);
    free(b);
    free(d);
}

static void test_payload_roundtrip_and_damage(void **state)
{
    (void)state;
    enum { CAP = 70000 };
    uint8_t *buf = malloc(CAP);
    assert_non_null(buf);
    payload_body_t body;
    payload_body_init(&body, buf, CAP, 7);
    for (uint64_t len = PAYLOAD_MIN; len <= CAP; len += 997) {
        payload_stamp(&body, buf, len, "k/1");
        assert_int_equal(payload_verify(buf, len, "k/1"), PAYLOAD_OK);
        assert_int_equal(payload_verify(buf, len, "k/2"), PAYLOAD_WRONG_KEY);
        assert_int_equal(payload_verify(buf, len - 1, "k/1"), PAYLOAD_BAD_LENGTH);
        buf[len - 1] ^= 0x40; /* the very last byte */
        assert_int_equal(payload_verify(buf, len, "k/1"), PAYLOAD_BAD_CHECKSUM);
        buf[len - 1] ^= 0x40;
        buf[PAYLOAD_HEADER] ^= 1; /* the first byte of the body */
        assert_int_equal(payload_verify(buf, len, "k/1"), PAYLOAD_BAD_CHECKSUM);
        buf[PAYLOAD_HEADER] ^= 1;
    }
    buf[0] = 'X';
    assert_int_equal(payload_verify(buf, CAP, "k/1"), PAYLOAD_BAD_HEADER);
    assert_int_equal(payload_verify(buf, 10, "k/1"), PAYLOAD_BAD_HEADER);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bucket_bounds),
        cmocka_unit_test(test_percentiles),
        cmocka_unit_test(test_add_and_diff),
        cmocka_unit_test(test_payload_roundtrip_and_damage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
