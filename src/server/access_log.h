/* The access log (docs/operations.md): one line per finished request, JSON
 * or a common log format, to stdout or appended to a file. */
#ifndef S3R_SERVER_ACCESS_LOG_H
#define S3R_SERVER_ACCESS_LOG_H

#include "s3/s3_server.h"

typedef enum access_format { ACCESS_FORMAT_JSON = 0, ACCESS_FORMAT_COMMON } access_format_t;

typedef struct access_log access_log_t;

/* Opens the log: where is "stdout" or a file path (created 0640 if absent,
 * appended to). NULL with the reason printed to stderr. */
access_log_t *access_log_open(const char *where, access_format_t format);
/* Reopens a file log at its path (after logrotate moved it away), under
 * the same descriptor, so threads writing meanwhile write to the old file or
 * the new one, never nowhere. stdout and NULL: nothing to do. -1 (logged,
 * the old file kept) when the path cannot be opened. */
int access_log_reopen(access_log_t *al);
/* Closes the log; NULL is a no-op. No request may be logging any more. */
void access_log_close(access_log_t *al);

/* An s3_access_fn (ctx: the access_log_t): formats rec into one line on the
 * stack and writes it with one write(), so lines from many threads never
 * mix and no lock is taken (O_APPEND places each write at the end). Every
 * string from the client is escaped: a line is always one line. A write
 * error is reported once to the error log and the line is lost. */
void access_log_write(void *ctx, const s3_access_record_t *rec);

#endif
