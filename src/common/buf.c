#include "common/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(buf_t *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

void buf_free(buf_t *b)
{
    free(b->data);
    buf_init(b, b->max);
}

void buf_reset(buf_t *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

int buf_reserve(buf_t *b, size_t extra)
{
    if (extra > b->max - b->len)
        return -1;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return -1;
    /* Keep the buffer a C string even when reserving is all that happens
     * (a first reserve would otherwise leave uninitialised storage). */
    p[b->len] = '\0';
    b->data = p;
    b->cap = cap;
    return 0;
}

int buf_append(buf_t *b, const void *data, size_t len)
{
    if (buf_reserve(b, len) != 0)
        return -1;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int buf_append_str(buf_t *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

static int buf_vprintf(buf_t *b, const char *fmt, va_list ap)
{
    /* Formatted once into the room there is; a second time only when it
     * did not fit. */
    size_t room = b->cap > b->len ? b->cap - b->len : 0;
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(room ? b->data + b->len : NULL, room, fmt, ap2);
    va_end(ap2);
    if (n < 0 || (size_t)n > b->max - b->len) {
        if (room)
            b->data[b->len] = '\0';
        return -1;
    }
    if ((size_t)n >= room) {
        if (buf_reserve(b, (size_t)n) != 0) {
            if (room)
                b->data[b->len] = '\0';
            return -1;
        }
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    }
    b->len += (size_t)n;
    return 0;
}

int buf_printf(buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

int buf_append_xml(buf_t *b, const char *s)
{
    while (*s) {
        /* The run of bytes that need no escaping, then one that does. */
        size_t run = strcspn(s, "&<>\"'");
        if (run && buf_append(b, s, run) != 0)
            return -1;
        s += run;
        if (!*s)
            break;
        const char *rep = *s == '&'   ? "&amp;"
                          : *s == '<' ? "&lt;"
                          : *s == '>' ? "&gt;"
                          : *s == '"' ? "&quot;"
                                      : "&apos;";
        if (buf_append_str(b, rep) != 0)
            return -1;
        s++;
    }
    return 0;
}

char *buf_steal(buf_t *b, size_t *len_p)
{
    char *p = b->data ? b->data : strdup("");
    if (len_p)
        *len_p = b->len;
    buf_init(b, b->max);
    return p;
}
