/* Small helpers shared by the fuzz targets (header only). */
#ifndef S3R_FUZZ_UTIL_H
#define S3R_FUZZ_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failed invariant: report and abort so libFuzzer records the input. */
#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* A malloc'ed NUL-terminated copy of the input, so ASan catches reads past it. */
static inline char *fuzz_cstr(const unsigned char *data, size_t len)
{
    char *s = malloc(len + 1);
    if (!s)
        abort();
    if (len)
        memcpy(s, data, len);
    s[len] = '\0';
    return s;
}

/* A malloc'ed copy of exactly len bytes (no NUL after it), so ASan catches a
 * parser that reads past the (body, len) it was given. */
static inline void *fuzz_copy(const unsigned char *data, size_t len)
{
    void *p = malloc(len ? len : 1);
    if (!p)
        abort();
    if (len)
        memcpy(p, data, len);
    return p;
}

/* Splits the input at the first NUL-free field boundaries: returns the next
 * '\n'-terminated field (NUL-terminated, malloc'ed) and advances. */
static inline char *fuzz_next_field(const unsigned char **data, size_t *len)
{
    const unsigned char *p = *data, *nl = memchr(p, '\n', *len);
    size_t n = nl ? (size_t)(nl - p) : *len;
    char *s = fuzz_cstr(p, n);
    *data += nl ? n + 1 : n;
    *len -= nl ? n + 1 : n;
    return s;
}

#endif
