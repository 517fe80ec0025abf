/* A growable byte buffer with a hard maximum, always NUL-terminated so text
 * built in it can be used as a C string. Appending past the maximum fails and
 * leaves the buffer unchanged. */
#ifndef S3R_COMMON_BUF_H
#define S3R_COMMON_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct buf {
    char *data; /* NULL until the first append */
    size_t len; /* bytes used, not counting the terminating NUL */
    size_t cap; /* bytes allocated */
    size_t max; /* hard limit on len */
} buf_t;

/* Initialises an empty buffer that may grow to max bytes. Allocates nothing. */
void buf_init(buf_t *b, size_t max);
/* Frees the storage; the buffer is empty and reusable afterwards. */
void buf_free(buf_t *b);
/* Empties the buffer, keeping its storage. */
void buf_reset(buf_t *b);
/* Each returns 0, or -1 when memory runs out or max would be exceeded. */
int buf_reserve(buf_t *b, size_t extra);
int buf_append(buf_t *b, const void *data, size_t len);
int buf_append_str(buf_t *b, const char *s);
int buf_printf(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s with the five XML special characters escaped. */
int buf_append_xml(buf_t *b, const char *s);
/* Takes the storage out of the buffer (caller frees it with free()); the
 * buffer is left empty. Returns "" duplicated if nothing was appended. */
char *buf_steal(buf_t *b, size_t *len_p);

#endif
