/* Growable arrays (array_grow): doubling from the first capacity, nothing
 * done while there is room, and a refused size leaving the array as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "common/array.h"

typedef struct pair {
    int a, b;
} pair_t;

static void test_grows_by_doubling(void **state)
{
    (void)state;
    pair_t *arr = NULL;
    size_t n = 0, cap = 0;
    for (int i = 0; i < 100; i++) {
        assert_int_equal(array_grow(&arr, &cap, n, sizeof *arr, 4), 0);
        assert_true(n < cap);
        arr[n++] = (pair_t){i, -i};
    }
    /* 4, 8, 16, 32, 64, 128. */
    assert_int_equal(cap, 128);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(arr[i].a, i);
        assert_int_equal(arr[i].b, -i);
    }
    free(arr);
}

static void test_room_left_changes_nothing(void **state)
{
    (void)state;
    char *arr = malloc(8);
    assert_non_null(arr);
    char *before = arr;
    size_t cap = 8;
    assert_int_equal(array_grow(&arr, &cap, 7, 1, 16), 0);
    assert_ptr_equal(arr, before);
    assert_int_equal(cap, 8);
    free(arr);
}

static void test_refused_size_keeps_the_array(void **state)
{
    (void)state;
    uint64_t *arr = malloc(2 * sizeof *arr);
    assert_non_null(arr);
    arr[0] = 7;
    uint64_t *before = arr;
    /* Doubling past SIZE_MAX elements, and an element size that overflows. */
    size_t cap = SIZE_MAX / 2 + 1;
    assert_int_equal(array_grow(&arr, &cap, cap, sizeof *arr, 16), -1);
    assert_int_equal(cap, SIZE_MAX / 2 + 1);
    cap = 2;
    assert_int_equal(array_grow(&arr, &cap, 2, SIZE_MAX / 3, 16), -1);
    assert_int_equal(cap, 2);
    /* No first capacity. */
    uint64_t *none = NULL;
    size_t ncap = 0;
    assert_int_equal(array_grow(&none, &ncap, 0, sizeof *none, 0), -1);
    assert_null(none);
    assert_ptr_equal(arr, before);
    assert_int_equal(arr[0], 7);
    free(arr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grows_by_doubling),
        cmocka_unit_test(test_room_left_changes_nothing),
        cmocka_unit_test(test_refused_size_keeps_the_array),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
