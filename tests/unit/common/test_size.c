/* Human size parsing ("4KiB", "1MB", "2g"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/size.h"

static void expect(const char *s, uint64_t want)
{
    uint64_t v = 12345;
    assert_int_equal(size_parse(s, &v), 0);
    assert_int_equal(v, want);
}

static void test_valid(void **state)
{
    (void)state;
    expect("0", 0);
    expect("4096", 4096);
    expect("4096b", 4096);
    expect("4k", 4096);
    expect("4KB", 4096);
    expect("4KiB", 4096);
    expect("1m", 1 << 20);
    expect("1MB", 1 << 20);
    expect("1MiB", 1 << 20);
    expect("2g", 2ULL << 30);
    expect("2GiB", 2ULL << 30);
    expect("3t", 3ULL << 40);
    expect("3TB", 3ULL << 40);
    expect("18446744073709551615", UINT64_MAX);
    expect("16777215t", 16777215ULL << 40);
}

static void test_invalid(void **state)
{
    (void)state;
    const char *bad[] = {"",          "k",    "-1",  " 1",   "1 ", "1.5m",
                         "1x",        "1kbb", "1pb", "0x10", "+1", "18446744073709551616",
                         "16777216t", "1e3"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint64_t v = 777;
        assert_int_equal(size_parse(bad[i], &v), -1);
        assert_int_equal(v, 777);
    }
    uint64_t v;
    assert_int_equal(size_parse(NULL, &v), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
