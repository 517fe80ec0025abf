#include "common/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/date.h"

int log_current_level = LOG_LVL_INFO;

const char *const log_level_names[] = {"error", "warn", "info", "debug", NULL};

void log_set_level(int level)
{
    log_current_level = level;
}

size_t log_escape(const char *in, char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    if (cap == 0)
        return 0;
    for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
        char esc[4];
        size_t n = 0;
        if (*p == '\n') {
            esc[n++] = '\\';
            esc[n++] = 'n';
        } else if (*p == '\r') {
            esc[n++] = '\\';
            esc[n++] = 'r';
        } else if (*p == '\t') {
            esc[n++] = '\\';
            esc[n++] = 't';
        } else if (*p < 0x20 || *p == 0x7f) {
            esc[n++] = '\\';
            esc[n++] = 'x';
            esc[n++] = hex[*p >> 4];
            esc[n++] = hex[*p & 0xf];
        } else {
            esc[n++] = (char)*p;
        }
        if (o + n > cap - 1)
            break; /* truncated, never in the middle of an escape */
        memcpy(out + o, esc, n);
        o += n;
    }
    out[o] = '\0';
    return o;
}

void log_write(int level, const char *fmt, ...)
{
    /* The message is formatted, then copied into the line with its control
     * characters escaped: the arguments carry client text (keys, bucket
     * names, access keys, user agents), and a raw newline in one would
     * start a line of the client's making. */
    char msg[2048];
    char line[2048];
    char when[32];
    date_format_iso8601(clock_wall_ms(), when);
    int n = snprintf(line, sizeof(line), "%s %-5s ", when, log_level_names[level]);
    va_list ap;
    va_start(ap, fmt);
    if (vsnprintf(msg, sizeof(msg), fmt, ap) < 0)
        msg[0] = '\0';
    va_end(ap);
    /* Room for the '\n' is kept back. */
    size_t len = (size_t)n + log_escape(msg, line + n, sizeof(line) - (size_t)n - 1);
    line[len++] = '\n';
    /* One write per line keeps lines from different threads whole. */
    fwrite(line, 1, len, stderr);
}
