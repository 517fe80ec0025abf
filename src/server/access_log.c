/* Access log lines. JSON:
 *   {"time":"2025-01-02T15:04:05.123Z","remote":"127.0.0.1:41234","access_key":"AK",
 *    "op":"GetObject","method":"GET","bucket":"b","key":"k","status":200,"error":null,
 *    "bytes_in":0,"bytes_out":4096,"duration_us":153,"transport":"http","request_id":"..."}
 * common (the Common Log Format's seven fields, then ours):
 *   127.0.0.1:41234 - AK [02/Jan/2025:15:04:05.123 +0000] "GET /b/k" 200 4096 GetObject 0 153
 *   http 0123456789ABCDEF -
 * Absent values are null (JSON) or "-" (common). */
#include "server/access_log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/date.h"
#include "common/log.h"
#include "s3/s3_util.h"

struct access_log {
    int fd;
    bool own_fd; /* a file we opened (not stdout) */
    char *path;  /* own_fd: the file's path, for access_log_reopen */
    access_format_t format;
    atomic_bool write_failed; /* reported once */
};

access_log_t *access_log_open(const char *where, access_format_t format)
{
    access_log_t *al = calloc(1, sizeof(*al));
    if (!al)
        return NULL;
    al->format = format;
    if (strcmp(where, "stdout") == 0) {
        al->fd = STDOUT_FILENO;
    } else {
        al->fd = open(where, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
        if (al->fd < 0) {
            fprintf(stderr, "s3rdmad: cannot open the access log %s: %s\n", where, strerror(errno));
            free(al);
            return NULL;
        }
        al->own_fd = true;
        if (!(al->path = strdup(where))) {
            close(al->fd);
            free(al);
            return NULL;
        }
    }
    return al;
}

int access_log_reopen(access_log_t *al)
{
    if (!al || !al->own_fd)
        return 0;
    int fd = open(al->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    /* dup3 swaps the file under al->fd atomically for the writing threads. */
    if (fd < 0 || dup3(fd, al->fd, O_CLOEXEC) < 0) {
        log_warn("access log: cannot reopen %s (%s); still writing to the old file", al->path,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    log_info("access log: reopened %s", al->path);
    return 0;
}

void access_log_close(access_log_t *al)
{
    if (!al)
        return;
    if (al->own_fd)
        close(al->fd);
    free(al->path);
    free(al);
}

/* ---- a line on the stack --------------------------------------------------------- */

/* Room for the longest line: a 1 KiB key escaped (6 bytes a byte at worst)
 * and everything else. A longer line is cut, never left without its end. */
#define LINE_MAX_BYTES 16384

typedef struct line {
    char buf[LINE_MAX_BYTES];
    size_t len;
} line_t;

static void put(line_t *l, const char *s, size_t n)
{
    if (n > sizeof(l->buf) - 2 - l->len) /* room kept for "}\n" or "\n" */
        n = sizeof(l->buf) - 2 - l->len;
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

static void puts_(line_t *l, const char *s)
{
    put(l, s, strlen(s));
}

static void putf(line_t *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(line_t *l, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n > 0)
        put(l, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* Appends s escaped: JSON string escapes (json) or \xNN (common) for
 * control characters, DEL, the quote and the backslash. Bytes from 0x80 up
 * pass as they are when s is UTF-8 and are escaped too when it is not, so
 * the line is always valid UTF-8. */
static void put_escaped(line_t *l, const char *s, bool json)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = strlen(s);
    bool utf8 = s3_utf8_valid(s, n);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned c = *p;
        bool esc = c < 0x20 || c == 0x7f || c == '"' || c == '\\' || (c >= 0x80 && !utf8);
        if (!esc) {
            put(l, (const char *)p, 1);
        } else if (json && (c == '"' || c == '\\')) {
            char e[2] = {'\\', (char)c};
            put(l, e, 2);
        } else if (json && c == '\n') {
            put(l, "\\n", 2);
        } else if (json) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            put(l, e, 6);
        } else {
            char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
            put(l, e, 4);
        }
    }
}

/* JSON: "name":"value" (escaped) or "name":null; sep precedes it. */
static void json_str(line_t *l, const char *sep, const char *name, const char *value)
{
    putf(l, "%s\"%s\":", sep, name);
    if (!value) {
        puts_(l, "null");
        return;
    }
    puts_(l, "\"");
    put_escaped(l, value, true);
    puts_(l, "\"");
}

/* common: value escaped, or "-" when absent or empty. */
static void common_field(line_t *l, const char *value)
{
    if (value && *value)
        put_escaped(l, value, false);
    else
        puts_(l, "-");
}

static void format_json(line_t *l, const s3_access_record_t *r)
{
    char when[32];
    date_format_iso8601(r->start_ms, when);
    putf(l, "{\"time\":\"%s\"", when);
    json_str(l, ",", "remote", r->remote);
    json_str(l, ",", "access_key", r->access_key);
    json_str(l, ",", "op", r->op);
    json_str(l, ",", "method", r->method);
    json_str(l, ",", "bucket", r->bucket);
    json_str(l, ",", "key", r->key);
    putf(l, ",\"status\":%d", r->status);
    json_str(l, ",", "error", r->error_code);
    putf(l, ",\"bytes_in\":%" PRIu64 ",\"bytes_out\":%" PRIu64 ",\"duration_us\":%" PRIu64,
         r->bytes_in, r->bytes_out, r->duration_us);
    json_str(l, ",", "transport", s3_transport_name(r->transport));
    json_str(l, ",", "request_id", r->request_id);
    l->buf[l->len++] = '}';
}

static void format_common(line_t *l, const s3_access_record_t *r, const struct tm *tm, int ms)
{
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    common_field(l, r->remote);
    puts_(l, " - ");
    common_field(l, r->access_key);
    putf(l, " [%02d/%s/%04d:%02d:%02d:%02d.%03d +0000] \"", tm->tm_mday, months[tm->tm_mon],
         tm->tm_year + 1900, tm->tm_hour, tm->tm_min, tm->tm_sec, ms);
    put_escaped(l, r->method, false);
    puts_(l, " ");
    common_field(l, r->resource);
    putf(l, "\" %d %" PRIu64 " ", r->status, r->bytes_out);
    common_field(l, r->op);
    putf(l, " %" PRIu64 " %" PRIu64 " %s %s ", r->bytes_in, r->duration_us,
         s3_transport_name(r->transport), r->request_id);
    common_field(l, r->error_code);
}

void access_log_write(void *ctx, const s3_access_record_t *rec)
{
    access_log_t *al = ctx;
    line_t l;
    l.len = 0;
    if (al->format == ACCESS_FORMAT_JSON) {
        format_json(&l, rec);
    } else {
        time_t secs = (time_t)(rec->start_ms / 1000);
        struct tm tm;
        gmtime_r(&secs, &tm);
        format_common(&l, rec, &tm, (int)(rec->start_ms % 1000));
    }
    l.buf[l.len++] = '\n';
    ssize_t n;
    do
        n = write(al->fd, l.buf, l.len);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)l.len && !atomic_exchange(&al->write_failed, true))
        log_error("access log: a line could not be written (%s); further failures are not "
                  "reported",
                  n < 0 ? strerror(errno) : "short write");
}
