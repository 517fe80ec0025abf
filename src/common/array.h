/* Growable arrays: the one place that doubles an array's capacity when it
 * is full, so callers keep only their own (array, count, capacity) and say
 * what an element is. */
#ifndef S3R_COMMON_ARRAY_H
#define S3R_COMMON_ARRAY_H

#include <stddef.h>

/* Makes room for one more element in the array *arr_p points at (arr_p is
 * the address of the caller's pointer, of any object pointer type), which
 * holds n elements of elem bytes in *cap_p allocated: when n == *cap_p it
 * is reallocated to twice *cap_p elements (first, when *cap_p is 0), and
 * *arr_p and *cap_p are updated; when n < *cap_p nothing is done. Returns
 * 0, or -1 when out of memory or when the size would overflow; then *arr_p
 * and *cap_p are unchanged (the array still holds its n elements, and the
 * caller still frees it with free()). */
int array_grow(void *arr_p, size_t *cap_p, size_t n, size_t elem, size_t first);

#endif
