/* Streaming decoder for aws-chunked request bodies (Content-Encoding:
 * aws-chunked), in the three forms S3 clients send:
 *   STREAMING-AWS4-HMAC-SHA256-PAYLOAD          chunks with chunk-signature, verified
 *   STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER  the same plus a signed trailer
 *   STREAMING-UNSIGNED-PAYLOAD-TRAILER          plain chunks plus x-amz-trailer headers
 * Wire form: hex-size[;chunk-signature=64hex]\r\n data \r\n ... 0[;chunk-signature=..]\r\n
 * [trailer-name:value\r\n ... [x-amz-trailer-signature:64hex\r\n]] \r\n
 *
 * The decoder is fed the raw body in pieces of any size and hands decoded
 * payload bytes to a callback; it never buffers more than one line. */
#ifndef S3R_S3_AWSCHUNKED_H
#define S3R_S3_AWSCHUNKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hash.h"

typedef enum awschunk_status {
    AWSCHUNK_OK = 0,
    AWSCHUNK_ERR_MALFORMED, /* bad size line, missing CRLF, chunk > limit: IncompleteBody /
                               InvalidRequest */
    AWSCHUNK_ERR_SIGNATURE, /* a chunk or trailer signature does not verify: SignatureDoesNotMatch
                             */
    AWSCHUNK_ERR_LENGTH,    /* decoded bytes != x-amz-decoded-content-length: IncompleteBody */
    AWSCHUNK_ERR_TRUNCATED, /* body ended before the final chunk / trailer: IncompleteBody */
    AWSCHUNK_ERR_CALLBACK,  /* the emit callback returned non-zero */
} awschunk_status_t;

typedef struct awschunk_params {
    bool signed_chunks; /* chunk-signature present and verified */
    bool trailer;       /* a trailer section follows the final chunk */
    /* For signed chunks: the request's signing key, x-amz-date, credential
     * scope and the seed signature (the Authorization header's signature). */
    const uint8_t *signing_key; /* SHA256_LEN bytes, copied */
    const char *amz_date;
    const char *scope;
    const char *seed_signature;
    uint64_t decoded_length; /* x-amz-decoded-content-length, UINT64_MAX if absent */
} awschunk_params_t;

/* Emits decoded payload; return non-zero to stop decoding. */
typedef int (*awschunk_emit_fn)(void *ctx, const void *data, size_t len);

typedef struct awschunk awschunk_t;

/* Returns NULL when out of memory. Strings in params are copied. */
awschunk_t *s3_awschunk_new(const awschunk_params_t *params, awschunk_emit_fn emit, void *ctx);
void s3_awschunk_free(awschunk_t *d);
/* Feeds the next len raw bytes. After an error every later call returns it again. */
awschunk_status_t s3_awschunk_feed(awschunk_t *d, const void *data, size_t len);
/* Called once the body has ended: AWSCHUNK_ERR_TRUNCATED unless the final
 * chunk (and trailer, when expected) were complete, AWSCHUNK_ERR_LENGTH on a
 * decoded-length mismatch. */
awschunk_status_t s3_awschunk_finish(awschunk_t *d);
/* A trailer header's value after a successful finish (name matched without
 * regard to case), or NULL. */
const char *s3_awschunk_trailer(const awschunk_t *d, const char *name);
/* Decoded payload bytes so far. */
uint64_t s3_awschunk_decoded_bytes(const awschunk_t *d);

#endif
