/* Dates as text, parsed and written in one place: HTTP dates (RFC 9110
 * §5.6.7: the preferred RFC 1123 form and the obsolete RFC 850 and asctime
 * forms), ISO 8601 as S3 writes it in XML and POST policies, and SigV4's
 * amz-date. Every time is UTC, in seconds (or milliseconds where said)
 * since the Unix epoch; the parsers return -1 for malformed text and for
 * dates before 1970, so -1 never doubles as a time. */
#ifndef S3R_COMMON_DATE_H
#define S3R_COMMON_DATE_H

#include <stdint.h>

/* "Fri, 03 Feb 2006 16:45:09 GMT", "Friday, 03-Feb-06 16:45:09 GMT" or
 * "Fri Feb  3 16:45:09 2006", the whole string; -1 otherwise. */
int64_t date_parse_http(const char *s);
/* "2006-02-03T16:45:09Z" with optional fractional seconds
 * ("...09.123Z", at least one digit, ignored); the 'Z' is required. -1 for
 * anything else, out-of-range fields included (Feb 30, hour 24). */
int64_t date_parse_iso8601(const char *s);
/* SigV4's "YYYYMMDDTHHMMSSZ"; -1 for anything else. */
int64_t date_parse_amz(const char *s);

/* "Fri, 03 Feb 2006 16:45:09 GMT" (30 bytes with the NUL). */
void date_format_http(int64_t unix_s, char out[40]);
/* "2006-02-03T16:45:09.000Z" (25 bytes with the NUL). */
void date_format_iso8601(int64_t unix_ms, char out[32]);
/* "YYYYMMDDTHHMMSSZ" (17 bytes with the NUL); years past 9999 or before 0
 * are clamped to the last or first representable second. */
void date_format_amz(int64_t unix_s, char out[17]);

#endif
