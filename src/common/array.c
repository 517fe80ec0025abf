/* Growable arrays (array.h). */
#include "common/array.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int array_grow(void *arr_p, size_t *cap_p, size_t n, size_t elem, size_t first)
{
    if (n < *cap_p)
        return 0;
    if (*cap_p > SIZE_MAX / 2)
        return -1;
    size_t cap = *cap_p ? 2 * *cap_p : first;
    if (cap == 0 || elem == 0 || cap > SIZE_MAX / elem)
        return -1;
    /* The caller's pointer is read and written as bytes: arr_p may point at
     * any object pointer type (all of them are alike on POSIX). */
    void *arr;
    memcpy(&arr, arr_p, sizeof arr);
    void *grown = realloc(arr, cap * elem);
    if (!grown)
        return -1;
    memcpy(arr_p, &grown, sizeof grown);
    *cap_p = cap;
    return 0;
}
