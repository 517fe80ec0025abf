#include "common/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, log_level_names[level]);
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
