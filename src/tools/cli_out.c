/* What the CLI prints for people. Every line of its human-readable output
 * (listings, transfer lines, stat, warnings, errors) goes through cli_line,
 * and the progress bar's label through cli_mask_controls. Keys, prefixes,
 * bucket names, metadata and server messages are chosen by others (any
 * writer of a shared bucket, the server): printed raw, their escape
 * sequences would drive the reader's terminal (rewrite the screen, set the
 * window title, hide text). So on a terminal each control character is
 * shown as '?', as GNU ls does there; into a pipe or a file a line keeps
 * its exact bytes, so scripts get keys as they are (as aws s3 ls prints
 * them). Object data written to stdout (cp s3://b/k -) is not a line and
 * never comes here. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/cli.h"

/* The length of the well-formed UTF-8 sequence at s (len bytes left,
 * s[0] >= 0x80), or 0 if it is malformed: a stray continuation byte, an
 * overlong form, a surrogate, a code point above U+10FFFF or a sequence cut
 * short (RFC 3629). */
static size_t utf8_seq_len(const unsigned char *s, size_t len)
{
    size_t n;
    unsigned char lo = 0x80, hi = 0xbf; /* where the second byte may lie */
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        n = 2;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        n = 3;
        lo = s[0] == 0xe0 ? 0xa0 : lo; /* no overlong forms */
        hi = s[0] == 0xed ? 0x9f : hi; /* no surrogates */
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        n = 4;
        lo = s[0] == 0xf0 ? 0x90 : lo; /* no overlong forms */
        hi = s[0] == 0xf4 ? 0x8f : hi; /* nothing above U+10FFFF */
    } else {
        return 0;
    }
    if (len < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return n;
}

size_t cli_mask_controls(char *s, size_t len)
{
    unsigned char *in = (unsigned char *)s, *out = in;
    for (size_t i = 0; i < len;) {
        unsigned char c = in[i];
        if (c < 0x80) {
            *out++ = c < 0x20 || c == 0x7f ? '?' : c;
            i++;
            continue;
        }
        size_t n = utf8_seq_len(in + i, len - i);
        if (n == 0) { /* one '?' per byte, as ls does: 8-bit terminals read 0x80-0x9f as C1 */
            *out++ = '?';
            i++;
        } else if (c == 0xc2 && in[i + 1] <= 0x9f) { /* U+0080..U+009F, the C1 controls */
            *out++ = '?';
            i += n;
        } else {
            memmove(out, in + i, n); /* out never passes in + i */
            out += n;
            i += n;
        }
    }
    return (size_t)(out - in);
}

/* isatty of stream, asked once for stdout and stderr (every line asks). */
static bool is_terminal(FILE *stream)
{
    static int known[3] = {-1, -1, -1}; /* by descriptor; -1: not asked yet */
    int fd = fileno(stream);
    if (fd < 0 || fd > 2)
        return fd >= 0 && isatty(fd);
    if (known[fd] < 0)
        known[fd] = isatty(fd);
    return known[fd] == 1;
}

void cli_line(FILE *stream, const char *fmt, ...)
{
    va_list ap;
    char *line;
    va_start(ap, fmt);
    int n = vasprintf(&line, fmt, ap);
    va_end(ap);
    if (n < 0) {
        fputs("s3rdma: out of memory printing a line\n", stderr);
        return;
    }
    size_t len = is_terminal(stream) ? cli_mask_controls(line, (size_t)n) : (size_t)n;
    fwrite(line, 1, len, stream);
    putc('\n', stream);
    free(line);
}
