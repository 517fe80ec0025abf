/* The clocks (common/clock.h): the monotonic clock in ns and ms agree and
 * never go back, the wall clock is the one time() reads, and deadlines for
 * timed waits land where asked on both clocks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "common/clock.h"

static int64_t ts_ms(const struct timespec *ts)
{
    return (int64_t)ts->tv_sec * 1000 + ts->tv_nsec / 1000000;
}

static void test_mono_units_agree(void **state)
{
    (void)state;
    uint64_t ms0 = clock_mono_ms();
    uint64_t ns = clock_mono_ns();
    uint64_t ms1 = clock_mono_ms();
    assert_true(ms0 <= ns / 1000000u);
    assert_true(ns / 1000000u <= ms1);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    assert_true((int64_t)ms1 <= ts_ms(&ts));
}

static void test_mono_never_goes_back(void **state)
{
    (void)state;
    uint64_t prev = clock_mono_ns();
    for (int i = 0; i < 10000; i++) {
        uint64_t now = clock_mono_ns();
        assert_true(now >= prev);
        prev = now;
    }
}

static void test_wall_is_epoch_time(void **state)
{
    (void)state;
    time_t before = time(NULL);
    int64_t ms = clock_wall_ms();
    time_t after = time(NULL);
    assert_true(ms / 1000 >= (int64_t)before);
    assert_true(ms / 1000 <= (int64_t)after);
}

static void test_after_ms(void **state)
{
    (void)state;
    clockid_t ids[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
    uint64_t delays[] = {0, 1, 999, 1000, 1001, 2500, 86400000};
    for (size_t i = 0; i < 2; i++) {
        for (size_t j = 0; j < sizeof(delays) / sizeof(delays[0]); j++) {
            struct timespec before, after;
            clock_gettime(ids[i], &before);
            struct timespec at = clock_after_ms(ids[i], delays[j]);
            clock_gettime(ids[i], &after);
            assert_true(at.tv_nsec >= 0 && at.tv_nsec < 1000000000L);
            assert_true(ts_ms(&at) >= ts_ms(&before) + (int64_t)delays[j]);
            assert_true(ts_ms(&at) <= ts_ms(&after) + (int64_t)delays[j]);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mono_units_agree),
        cmocka_unit_test(test_mono_never_goes_back),
        cmocka_unit_test(test_wall_is_epoch_time),
        cmocka_unit_test(test_after_ms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
