/* AWS Signature Version 4, the pieces shared by the server's verifier
 * (src/s3/auth.c) and the client's signer (src/client). Pure functions: no
 * I/O, no clock, no global state.
 *
 * Reference: "Signature Version 4 signing process" and "Authenticating
 * Requests (AWS Signature Version 4)" in the Amazon S3 API reference. */
#ifndef S3R_COMMON_SIGV4_H
#define S3R_COMMON_SIGV4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/hash.h"

#define SIGV4_ALGORITHM                  "AWS4-HMAC-SHA256"
#define SIGV4_UNSIGNED                   "UNSIGNED-PAYLOAD"
#define SIGV4_STREAMING                  "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
#define SIGV4_STREAMING_TRAILER          "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
#define SIGV4_STREAMING_UNSIGNED_TRAILER "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
#define SIGV4_EMPTY_SHA256               "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* A header as it goes into the canonical request: name lower-case, value
 * with leading/trailing spaces trimmed and inner runs of spaces collapsed
 * (sigv4_canonical_request does the trimming; names must already be
 * lower-case). */
typedef struct sigv4_header {
    const char *name;
    const char *value;
} sigv4_header_t;

typedef struct sigv4_request {
    const char *method;            /* "GET" */
    const char *canonical_uri;     /* already encoded, see sigv4_uri_encode_path */
    const char *canonical_query;   /* already canonical, see sigv4_canonical_query */
    const sigv4_header_t *headers; /* exactly the signed headers, sorted by name */
    size_t n_headers;
    const char *signed_headers; /* "host;x-amz-content-sha256;x-amz-date" */
    const char *payload_hash;   /* hex SHA-256, or one of the special strings above */
} sigv4_request_t;

/* S3's URI encoding: unreserved characters (A-Z a-z 0-9 - . _ ~) kept, every
 * other byte as %XY upper-case; '/' kept when encode_slash is false. Appends
 * to out; -1 if out is full. */
int sigv4_uri_encode(const char *s, size_t len, bool encode_slash, buf_t *out);
/* Percent-decodes s[0..len) into tmp (reset first). '+' stays '+': S3
 * treats the query as RFC 3986, not as a form. 0, or -1 on a malformed
 * escape or a full buffer. */
int sigv4_percent_decode(const char *s, size_t len, buf_t *tmp);

/* The canonical URI of an S3 request path given decoded ("/bucket/a b"):
 * each segment encoded once, slashes kept. */
int sigv4_uri_encode_path(const char *decoded_path, buf_t *out);
/* Canonical query string from a raw query string as received ("b=2&a=1&x"):
 * each name and value percent-decoded then re-encoded, sorted by name then
 * value, "x" becomes "x=". If skip_signature, X-Amz-Signature is left out (for
 * presigned URLs). -1 on malformed percent-encoding or a full buffer. */
int sigv4_canonical_query(const char *raw_query, bool skip_signature, buf_t *out);

/* Appends the canonical request text to out. -1 if out is full. */
int sigv4_canonical_request(const sigv4_request_t *req, buf_t *out);

/* scope is "YYYYMMDD/region/service/aws4_request"; amz_date "YYYYMMDDTHHMMSSZ".
 * Appends "AWS4-HMAC-SHA256\n<amz_date>\n<scope>\n<hex sha256(canonical)>". */
int sigv4_string_to_sign(const char *amz_date, const char *scope, const char *canonical_request,
                         size_t canonical_len, buf_t *out);

/* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4"+secret, date8), region), service), "aws4_request") */
void sigv4_signing_key(const char *secret, const char *date8, const char *region,
                       const char *service, uint8_t key[SHA256_LEN]);

/* Hex HMAC-SHA256 of msg under key (65 bytes with the NUL). */
void sigv4_sign(const uint8_t key[SHA256_LEN], const char *msg, size_t len, char sig_hex[65]);

/* String to sign of one aws-chunked chunk:
 * "AWS4-HMAC-SHA256-PAYLOAD\n<amz_date>\n<scope>\n<prev_sig>\n<sha256("")>\n<hex sha256(chunk)>" */
int sigv4_chunk_string_to_sign(const char *amz_date, const char *scope, const char *prev_sig,
                               const uint8_t chunk_sha256[SHA256_LEN], buf_t *out);
/* String to sign of the trailer chunk:
 * "AWS4-HMAC-SHA256-TRAILER\n<amz_date>\n<scope>\n<prev_sig>\n<hex sha256(trailer headers)>" */
int sigv4_trailer_string_to_sign(const char *amz_date, const char *scope, const char *prev_sig,
                                 const uint8_t trailer_sha256[SHA256_LEN], buf_t *out);

/* A parsed "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request,
 * SignedHeaders=host;range;x-amz-date, Signature=..." header, or the same
 * fields from a presigned URL's X-Amz-Credential / X-Amz-SignedHeaders /
 * X-Amz-Signature. */
typedef struct sigv4_auth {
    char access_key[129];
    char date8[9];
    char region[64];
    char service[32];
    char scope[256]; /* "date8/region/service/aws4_request" */
    char signed_headers[1024];
    char signature[65];
} sigv4_auth_t;

/* 0 on success; -1 on anything malformed (missing field, bad scope, wrong
 * terminator, oversized field). */
int sigv4_parse_authorization(const char *header_value, sigv4_auth_t *out);
/* Fills access_key/date8/region/service/scope from "AK/date8/region/service/aws4_request". */
int sigv4_parse_credential(const char *credential, sigv4_auth_t *out);

#endif
