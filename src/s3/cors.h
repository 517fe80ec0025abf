/* CORS configurations (PutBucketCors / GetBucketCors) and the matching of
 * browser requests against them, as S3 does it. Pure: no I/O, no request.
 *
 * A configuration travels three ways: the CORSConfiguration XML a client
 * sends (s3_cors_from_xml validates it and gives the stored form), the
 * stored form kept with the bucket (s3_cors_parse reads it), and the XML
 * GetBucketCors answers (s3_cors_xml). The stored form is a sequence of
 * fields, each one tag byte then its NUL-terminated text: 'R' starts a rule
 * (text: its ID, may be empty), then 'O' AllowedOrigin, 'M' AllowedMethod,
 * 'H' AllowedHeader, 'E' ExposeHeader, 'A' MaxAgeSeconds. */
#ifndef S3R_S3_CORS_H
#define S3R_S3_CORS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"

#define S3_CORS_MAX_RULES 100         /* S3's limit */
#define S3_CORS_MAX_BYTES (64 * 1024) /* S3's limit on the configuration XML */
/* Longest Access-Control-Request-Headers a preflight may be allowed: it is
 * echoed in one reply header, whose values are at most 8 KiB (limits.md). */
#define S3_CORS_MAX_REQUEST_HEADERS (8 * 1024)

/* The methods a rule may allow: GET PUT POST DELETE HEAD (bit i: the i-th). */
#define S3_CORS_N_METHODS 5

typedef struct s3_cors_rule {
    const char *id; /* "" when none */
    const char **origins, **headers, **expose;
    size_t n_origins, n_headers, n_expose;
    unsigned methods;    /* bit mask over the S3_CORS_N_METHODS methods */
    const char *max_age; /* decimal seconds, NULL when none */
} s3_cors_rule_t;

typedef struct s3_cors {
    char *blob; /* a copy of the stored form: the rules' strings point into it */
    s3_cors_rule_t *rules;
    size_t n_rules;
} s3_cors_t;

/* Validates a CORSConfiguration body as S3 does. Returns 0 with the stored
 * form in *out (initialised here; caller frees), or -1 with *invalid_p set:
 * true for InvalidRequest (an unsupported method, an origin or header with
 * more than one '*'), false for MalformedXML (not XML, no rule, more than
 * S3_CORS_MAX_RULES, a rule without AllowedOrigin or AllowedMethod, a bad
 * MaxAgeSeconds, a body over S3_CORS_MAX_BYTES); why (cap bytes) says what. */
int s3_cors_from_xml(const char *body, size_t len, buf_t *out, bool *invalid_p, char *why,
                     size_t cap);

/* Reads the stored form (len 0: no configuration, an empty *cfg). Returns 0,
 * or -1 if it is not one (cfg left empty). Free with s3_cors_free. */
int s3_cors_parse(const void *data, size_t len, s3_cors_t *cfg);
void s3_cors_free(s3_cors_t *cfg);

/* The GetBucketCors XML of cfg, appended to xml. */
void s3_cors_xml(const s3_cors_t *cfg, buf_t *xml);

/* The bit of method in S3_CORS_* order, or 0 when it is none of them. */
unsigned s3_cors_method_bit(const char *method);

/* The first rule that allows a request from origin with method (a bit of
 * s3_cors_method_bit) and, for a preflight, every header of req_headers
 * (the comma-separated Access-Control-Request-Headers; NULL: none; past
 * S3_CORS_MAX_REQUEST_HEADERS bytes no rule allows them), or NULL. Origins and headers match with
 * their '*' standing for any run of characters; origins case-sensitively, headers not, as S3 does.
 */
const s3_cors_rule_t *s3_cors_match(const s3_cors_t *cfg, const char *origin, unsigned method,
                                    const char *req_headers);

typedef void (*s3_cors_header_fn)(void *ctx, const char *name, const char *value);

/* The Access-Control-* and Vary headers S3 answers for rule to a request
 * from origin: Allow-Origin ("*" when the rule allows any origin, else the
 * origin, with Allow-Credentials: true), Allow-Methods, Expose-Headers and
 * Max-Age when the rule has them, and for a preflight Allow-Headers echoing
 * req_headers (lowercased, when given). Each goes to fn. */
void s3_cors_headers(const s3_cors_rule_t *rule, const char *origin, bool preflight,
                     const char *req_headers, s3_cors_header_fn fn, void *ctx);

#endif
