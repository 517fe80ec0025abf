/* Small pure helpers of the S3 frontend: name rules, ranges, dates, URL
 * decoding. No I/O; unit-tested in tests/unit/s3/test_s3_util.c. */
#ifndef S3R_S3_UTIL_H
#define S3R_S3_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "s3/s3_errors.h"

/* S3 bucket naming rules (3-63 chars, lower-case letters, digits, '.', '-',
 * starts and ends with a letter or digit, no "..", not an IPv4 address, no
 * "xn--" prefix or "-s3alias" suffix). */
bool s3_bucket_name_valid(const char *name);

/* 1 if s (len bytes) is well-formed UTF-8 without NUL bytes. */
bool s3_utf8_valid(const char *s, size_t len);
/* Field syntax (RFC 9110 §5): what every header name and value the server
 * stores and sends back must be, whichever path it came in by (HTTP, a
 * native param, a POST form field), so that every transport can carry it
 * back unchanged and no reader can take it for something else.
 *
 * A name is a token: one or more tchar ("!#$%&'*+-.^_`|~", digits,
 * letters). */
bool s3_field_name_ok(const char *name);
/* A value is VCHAR, obs-text (bytes 0x80-0xFF), SP and HTAB, without
 * leading or trailing SP/HTAB (HTTP strips those: kept, the value would read
 * differently over HTTP and over native). "" is a value. No CR, LF or other
 * control character (0x00-0x1F but HTAB, 0x7F). value is NUL-terminated:
 * an input with a length must refuse NUL bytes itself. */
bool s3_field_value_ok(const char *value);

/* The checks every request's key gets (NULL: none to check): at most
 * S3R_MAX_KEY_BYTES (KeyTooLongError) of valid UTF-8 (InvalidArgument). */
s3_error_t s3_key_check(const char *key);
/* "/", "/bucket" or "/bucket/key" (key only with a bucket), malloc'd, as
 * error bodies name the resource; NULL when out of memory. */
char *s3_resource_path(const char *bucket, const char *key);

/* GetObject's response-* query parameters, each replacing one stored header
 * in the reply: X(parameter, the stor_meta_t field it replaces). The one
 * list of them: HTTP's known parameters, the native GET's allowed ones and
 * the GET handler all expand it. */
#define S3_RESPONSE_OVERRIDES(X)                                                                   \
    X("response-content-type", content_type)                                                       \
    X("response-content-language", content_language)                                               \
    X("response-expires", expires)                                                                 \
    X("response-cache-control", cache_control)                                                     \
    X("response-content-disposition", content_disposition)                                         \
    X("response-content-encoding", content_encoding)
/* Expands an S3_RESPONSE_OVERRIDES entry to its parameter name, for lists. */
#define S3_RESPONSE_OVERRIDE_NAME(param, field) param,

/* Percent-decodes src (len bytes) into a new malloc'ed NUL-terminated string;
 * plus_is_space decodes '+' as ' ' (query strings). NULL on malformed input
 * ("%zz", "%4") or a decoded NUL byte. */
char *s3_url_decode(const char *src, size_t len, bool plus_is_space);

typedef enum s3_range_result {
    S3_RANGE_NONE = 0,      /* no Range header, or one S3 ignores: serve it whole */
    S3_RANGE_OK,            /* *first_p..*last_p inclusive, 206 */
    S3_RANGE_UNSATISFIABLE, /* 416 InvalidRange */
} s3_range_result_t;

/* Parses a Range header ("bytes=a-b", "bytes=a-", "bytes=-n") against an
 * object of size bytes. Syntactically invalid or multi-range headers are
 * ignored as S3 does (S3_RANGE_NONE). */
s3_range_result_t s3_range_parse(const char *header, uint64_t size, uint64_t *first_p,
                                 uint64_t *last_p);

/* Listing with a delimiter: the length of the common prefix key rolls up
 * into (prefix + everything up to and including the first delimiter after
 * it), or 0 when the key has none (or no delimiter is given). key must start
 * with the prefix of length prefix_len. */
size_t s3_common_prefix_len(const char *key, size_t key_len, size_t prefix_len, const char *delim);

/* The format of an x-amz-rdma-token value (docs/protocol.md §2). s3rdmad
 * serves only its own; the others are declined so their clients fall back. */
typedef enum s3_token_format {
    S3_TOKEN_S3R1 = 0, /* "s3r1." + ...: ours (well-formed or not: rdma_xfer_open decides) */
    S3_TOKEN_CUOBJ_DC, /* NVIDIA cuObject DC descriptor: >= 5 ':'-separated hex fields */
    S3_TOKEN_CUOBJ_RC, /* NVIDIA cuObject RC descriptor: 88 hex characters */
    S3_TOKEN_UNKNOWN,  /* anything else */
} s3_token_format_t;

s3_token_format_t s3_token_format(const char *token);
/* "s3r1", "cuObject DC", "cuObject RC" or "unknown". */
const char *s3_token_format_name(s3_token_format_t f);

#endif
