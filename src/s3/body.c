/* Request bodies: the raw bytes go through the payload hash (signed
 * payloads), the aws-chunked decoder (streaming payloads), then the digests
 * (MD5 for the ETag, the x-amz-checksum-* algorithms asked for) and finally
 * into the storage writer or the XML buffer. Every byte is hashed once. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/checksum.h"
#include "common/date.h"
#include "common/hash_pool.h"
#include "common/s3r_limits.h"
#include "s3/s3_request.h"
#include "s3/s3_util.h"
#include "s3/tagging.h"

/* Indexed by enum s3_checksum_alg. */
static const char *const ck_headers[S3_CK_COUNT] = {"x-amz-checksum-crc32", "x-amz-checksum-crc32c",
                                                    "x-amz-checksum-sha256", "x-amz-checksum-sha1",
                                                    "x-amz-checksum-crc64nvme"};
static const char *const ck_elems[S3_CK_COUNT] = {
    "ChecksumCRC32", "ChecksumCRC32C", "ChecksumSHA256", "ChecksumSHA1", "ChecksumCRC64NVME"};
#define CK_PREFIX_LEN 15 /* strlen("x-amz-checksum-") */

char **s3_meta_checksum(const stor_meta_t *meta, enum s3_checksum_alg alg)
{
    char *const *const slots[S3_CK_COUNT] = {&meta->checksum_crc32, &meta->checksum_crc32c,
                                             &meta->checksum_sha256, &meta->checksum_sha1,
                                             &meta->checksum_crc64nvme};
    return (char **)slots[alg];
}

enum s3_checksum_alg s3_checksum_alg_of(checksum_alg_t alg)
{
    switch (alg) {
    case CHECKSUM_CRC32:
        return S3_CK_CRC32;
    case CHECKSUM_CRC32C:
        return S3_CK_CRC32C;
    case CHECKSUM_CRC64NVME:
        return S3_CK_CRC64NVME;
    case CHECKSUM_SHA1:
        return S3_CK_SHA1;
    default:
        return S3_CK_SHA256;
    }
}

char **s3_part_checksum(const stor_part_t *part, enum s3_checksum_alg alg)
{
    char *const *const slots[S3_CK_COUNT] = {&part->checksum_crc32, &part->checksum_crc32c,
                                             &part->checksum_sha256, &part->checksum_sha1,
                                             &part->checksum_crc64nvme};
    return (char **)slots[alg];
}

const char *s3_checksum_elem(enum s3_checksum_alg alg)
{
    return ck_elems[alg];
}

/* The algorithm named alg ("CRC32", "crc32c"...), or -1. */
static int find_ck(const char *alg)
{
    for (int i = 0; i < S3_CK_COUNT; i++) {
        if (strcasecmp(alg, ck_headers[i] + CK_PREFIX_LEN) == 0)
            return i;
    }
    return -1;
}

void s3_reply_checksums(s3_req_t *req)
{
    for (int i = 0; i < S3_CK_COUNT; i++)
        if (req->checksums[i])
            s3_reply_header(req, ck_headers[i], req->checksums[i]);
}

/* The stored response headers and where they live in stor_meta_t. */
static const struct {
    const char *header;
    size_t offset;
} stored_headers[] = {
    {"Content-Type", offsetof(stor_meta_t, content_type)},
    {"Content-Encoding", offsetof(stor_meta_t, content_encoding)},
    {"Content-Disposition", offsetof(stor_meta_t, content_disposition)},
    {"Content-Language", offsetof(stor_meta_t, content_language)},
    {"Cache-Control", offsetof(stor_meta_t, cache_control)},
    {"Expires", offsetof(stor_meta_t, expires)},
};
#define N_STORED_HEADERS (sizeof(stored_headers) / sizeof(stored_headers[0]))

static char **stored_slot(const stor_meta_t *meta, size_t i)
{
    return (char **)((char *)meta + stored_headers[i].offset);
}

/* Decoded payload bytes, whoever carried them: the HTTP body, the
 * aws-chunked decoder, or a transport's own pull (the token path), whose bytes a
 * signed payload hash (x-amz-content-sha256) covers just as the HTTP body's
 * (aws-chunked has no payload hash: its chunks are signed). */
s3_error_t s3_checksums_begin(s3_req_t *req)
{
    if (req->want_ck[S3_CK_SHA256] && !req->sha256_ck &&
        !(req->sha256_ck = hash_digest_sha256_new()))
        return S3E_INTERNAL;
    if (req->want_ck[S3_CK_SHA1] && !req->sha1_ck && !(req->sha1_ck = hash_digest_sha1_new()))
        return S3E_INTERNAL;
    return S3E_NONE;
}

void s3_checksums_update(s3_req_t *req, const void *data, size_t len)
{
    if (req->want_ck[S3_CK_CRC32])
        req->crc32 = hash_crc32_ieee_update(req->crc32, data, len);
    if (req->want_ck[S3_CK_CRC32C])
        req->crc32c = hash_crc32c_update(req->crc32c, data, len);
    if (req->want_ck[S3_CK_CRC64NVME])
        req->crc64nvme = hash_crc64nvme_update(req->crc64nvme, data, len);
    if (req->sha256_ck)
        hash_digest_update(req->sha256_ck, data, len);
    if (req->sha1_ck)
        hash_digest_update(req->sha1_ck, data, len);
}

/* Counts len more bytes of req's buffered document against the server's
 * document memory (cfg.max_document_memory) and its user's half of it
 * (anonymous requests share one slot); false, counting nothing, past
 * either. Documents are buffered whole before they are parsed, up to
 * S3R_MAX_XML_BODY each, so without this bound the connections' documents
 * alone could hold gigabytes (docs/security.md). */
static bool document_hold(s3_req_t *req, size_t len)
{
    s3_server_t *srv = req->srv;
    unsigned long long total = srv->cfg.max_document_memory;
    unsigned long long user_max = (total + 1) / 2;
    if (!req->body_held_by && srv->user_doc_bytes) {
        size_t slot = req->user ? (size_t)(req->user - srv->cfg.users) : srv->cfg.n_users;
        req->body_held_by = &srv->user_doc_bytes[slot < srv->cfg.n_users ? slot : srv->cfg.n_users];
    }
    if (req->body_held_by && atomic_fetch_add(req->body_held_by, len) + len > user_max) {
        atomic_fetch_sub(req->body_held_by, len);
        return false;
    }
    if (atomic_fetch_add(&srv->doc_bytes, len) + len > total) {
        atomic_fetch_sub(&srv->doc_bytes, len);
        if (req->body_held_by)
            atomic_fetch_sub(req->body_held_by, len);
        return false;
    }
    req->body_held += len;
    return true;
}

void s3_body_release(s3_req_t *req)
{
    if (req->body_held) {
        atomic_fetch_sub(&req->srv->doc_bytes, req->body_held);
        if (req->body_held_by)
            atomic_fetch_sub(req->body_held_by, req->body_held);
        req->body_held = 0;
    }
    buf_free(&req->body);
}

int s3_body_sink(void *cls, const void *data, size_t len)
{
    s3_req_t *req = cls;
    if (len > req->body_limit - req->body_bytes) {
        req->body_error = req->body_kind == S3_BODY_XML ? S3E_MALFORMED_XML : S3E_ENTITY_TOO_LARGE;
        return -1;
    }
    req->body_bytes += len;
    /* A big chunk's MD5 (the slowest digest) runs on a pool thread while
     * this one does the rest and the write; the chunk is done with both
     * before the caller gets it back. */
    hash_job_t md5_job = {0};
    if (req->md5)
        hash_pool_job_start(len >= S3R_BODY_HASH_OFFLOAD_MIN ? req->srv->hashers : NULL, &md5_job,
                            req->md5, data, len);
    if (req->sha256_payload)
        hash_digest_update(req->sha256_payload, data, len);
    s3_checksums_update(req, data, len);
    int rc = 0;
    if (req->body_kind == S3_BODY_XML) {
        if (!document_hold(req, len)) {
            /* The rest is read and dropped; the client gets SlowDown. */
            s3_body_release(req);
            req->body_error = S3E_SLOW_DOWN;
            rc = -1;
        } else if (buf_append(&req->body, data, len) != 0) {
            req->body_error = S3E_MALFORMED_XML;
            rc = -1;
        }
    } else if (req->writer) {
        stor_status_t st = stor_writer_write(req->writer, data, len);
        if (st != STOR_OK) {
            req->body_error = s3_error_from_stor(st);
            rc = -1;
        }
    }
    hash_pool_job_wait(&md5_job);
    return rc;
}

static uint64_t parse_u64(const char *s, bool *ok)
{
    char *end;
    if (!s || !*s || *s == '-') {
        *ok = false;
        return 0;
    }
    unsigned long long v = strtoull(s, &end, 10);
    *ok = *end == '\0';
    return v;
}

s3_error_t s3_body_begin(s3_req_t *req)
{
    bool streaming = req->payload_mode == S3_PAYLOAD_STREAMING_SIGNED ||
                     req->payload_mode == S3_PAYLOAD_STREAMING_SIGNED_TRAILER ||
                     req->payload_mode == S3_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
    bool ok = true;
    const char *cl = s3_req_header(req, "Content-Length");
    const char *te = s3_req_header(req, "Transfer-Encoding");
    const char *dcl = s3_req_header(req, "x-amz-decoded-content-length");

    req->body_limit = req->body_kind == S3_BODY_XML ? S3R_MAX_XML_BODY : S3R_MAX_PUT_BYTES;
    if (req->body_kind == S3_BODY_FORM) {
        /* The raw body is the form; the op sinks its file's bytes, which get
         * the ETag's MD5 and nothing else (no Content-MD5, checksum or
         * payload-hash headers apply to them). */
        req->md5 = hash_digest_md5_new();
        return req->md5 ? S3E_NONE : S3E_INTERNAL;
    }
    /* A body the transport moves itself has no framing of the request's:
     * its length is declared as a streaming body's is. */
    if (streaming || req->body_via_transport) {
        if (!dcl)
            return S3E_MISSING_CONTENT_LENGTH;
        req->declared_len = parse_u64(dcl, &ok);
        if (!ok)
            return S3E_INVALID_ARGUMENT;
    } else if (cl) {
        req->declared_len = parse_u64(cl, &ok);
        if (!ok)
            return S3E_INVALID_ARGUMENT;
    } else if (!te && req->body_kind == S3_BODY_OBJECT) {
        return S3E_MISSING_CONTENT_LENGTH;
    }
    if (req->declared_len != UINT64_MAX && req->declared_len > req->body_limit) {
        /* An object over 5 GiB is refused from its headers. An oversized XML
         * body is read and discarded first, so the client (still sending)
         * gets the error instead of a reset connection. */
        if (req->body_kind != S3_BODY_XML)
            return S3E_ENTITY_TOO_LARGE;
        req->body_error = S3E_MALFORMED_XML;
    }

    if (req->payload_mode == S3_PAYLOAD_SIGNED) {
        req->sha256_payload = hash_digest_sha256_new();
        if (!req->sha256_payload)
            return S3E_INTERNAL;
    }

    const char *cmd5 = s3_req_header(req, "Content-MD5");
    if (cmd5) {
        if (hash_base64_decode(cmd5, strlen(cmd5), req->content_md5, MD5_LEN) != MD5_LEN)
            return S3E_INVALID_DIGEST;
        req->has_content_md5 = true;
    }
    /* MD5 for the ETag, unless etag: fast lets CRC32C stand for it (a
     * Content-MD5 sent is verified all the same). */
    if (!req->fast_etag || req->has_content_md5) {
        req->md5 = hash_digest_md5_new();
        if (!req->md5)
            return S3E_INTERNAL;
    }
    if (req->fast_etag)
        req->want_ck[S3_CK_CRC32C] = true;

    /* Checksums: a value in a header, an algorithm announced for the trailer,
     * or an algorithm the SDK asks us to compute. */
    for (int i = 0; i < S3_CK_COUNT && !req->checksums_of_object; i++) {
        req->expect_ck[i] = s3_req_header(req, ck_headers[i]);
        if (req->expect_ck[i])
            req->want_ck[i] = true;
    }
    const char *sdk_alg = s3_req_header(req, "x-amz-sdk-checksum-algorithm");
    if (sdk_alg) {
        int i = find_ck(sdk_alg);
        if (i >= 0)
            req->want_ck[i] = true;
    }
    const char *trailer = s3_req_header(req, "x-amz-trailer");
    if (trailer) {
        if (!streaming || req->payload_mode == S3_PAYLOAD_STREAMING_SIGNED)
            return S3E_INVALID_REQUEST;
        int alg = strncasecmp(trailer, ck_headers[0], CK_PREFIX_LEN) == 0
                      ? find_ck(trailer + CK_PREFIX_LEN)
                      : -1;
        if (alg < 0)
            return S3E_INVALID_REQUEST;
        req->want_ck[alg] = true;
    }
    s3_error_t err = s3_checksums_begin(req);
    if (err != S3E_NONE)
        return err;

    if (streaming) {
        awschunk_params_t p = {
            .signed_chunks = req->payload_mode != S3_PAYLOAD_STREAMING_UNSIGNED_TRAILER,
            .trailer = req->payload_mode != S3_PAYLOAD_STREAMING_SIGNED,
            .signing_key = req->signing_key,
            .amz_date = req->amz_date,
            .scope = req->scope,
            .seed_signature = req->seed_signature,
            .decoded_length = req->declared_len,
        };
        req->chunked = s3_awschunk_new(&p, s3_body_sink, req);
        if (!req->chunked)
            return S3E_INTERNAL;
    }
    return S3E_NONE;
}

static s3_error_t chunk_error(s3_req_t *req, awschunk_status_t st)
{
    switch (st) {
    case AWSCHUNK_OK:
        return S3E_NONE;
    case AWSCHUNK_ERR_SIGNATURE:
        return S3E_SIGNATURE_MISMATCH;
    case AWSCHUNK_ERR_CALLBACK:
        return req->body_error != S3E_NONE ? req->body_error : S3E_INTERNAL;
    case AWSCHUNK_ERR_MALFORMED:
    case AWSCHUNK_ERR_LENGTH:
    case AWSCHUNK_ERR_TRUNCATED:
    default:
        return S3E_INCOMPLETE_BODY;
    }
}

void s3_body_feed(s3_req_t *req, const char *data, size_t len)
{
    if (req->body_error != S3E_NONE)
        return;
    if (req->body_kind == S3_BODY_FORM) {
        req->form_feed(req, data, len);
        return;
    }
    if (req->chunked) {
        awschunk_status_t st = s3_awschunk_feed(req->chunked, data, len);
        if (st != AWSCHUNK_OK)
            req->body_error = chunk_error(req, st);
    } else {
        s3_body_sink(req, data, len);
    }
}

/* The big-endian base64 of a CRC's n low bytes, as S3 writes checksums. */
static void encode_crc(uint64_t crc, size_t n, char *out)
{
    uint8_t be[8];
    for (size_t i = 0; i < n; i++)
        be[i] = (uint8_t)(crc >> (8 * (n - 1 - i)));
    hash_base64_encode(be, n, out);
}

/* Finishes algorithm i's checksum into out (base64). */
static void checksum_final(s3_req_t *req, int i, char out[64])
{
    uint8_t sum[SHA256_LEN];
    switch (i) {
    case S3_CK_CRC32:
        encode_crc(req->crc32, 4, out);
        break;
    case S3_CK_CRC32C:
        encode_crc(req->crc32c, 4, out);
        break;
    case S3_CK_CRC64NVME:
        encode_crc(req->crc64nvme, 8, out);
        break;
    case S3_CK_SHA256:
        hash_digest_final(req->sha256_ck, sum);
        req->sha256_ck = NULL;
        hash_base64_encode(sum, SHA256_LEN, out);
        break;
    default:
        hash_digest_final(req->sha1_ck, sum);
        req->sha1_ck = NULL;
        hash_base64_encode(sum, SHA1_LEN, out);
        break;
    }
}

s3_error_t s3_checksums_end(s3_req_t *req)
{
    for (int i = 0; i < S3_CK_COUNT; i++) {
        if (!req->want_ck[i] || req->checksums[i])
            continue;
        char computed[64];
        checksum_final(req, i, computed);
        if (!(req->checksums[i] = strdup(computed)))
            return S3E_INTERNAL;
    }
    return S3E_NONE;
}

/* etag: fast's ETag: 32 hex digits of the body's CRC32C, its length and 4
 * random bytes, then "-1", the shape of a one-part multipart ETag, which S3
 * tools know is no MD5. A new write's ETag differs from the one it
 * replaces even when the bytes match (If-Match sees every write). */
static int fast_etag(s3_req_t *req)
{
    uint8_t raw[16];
    for (int i = 0; i < 4; i++)
        raw[i] = (uint8_t)(req->crc32c >> (24 - 8 * i));
    for (int i = 0; i < 8; i++)
        raw[4 + i] = (uint8_t)(req->body_bytes >> (56 - 8 * i));
    if (hash_random_bytes(raw + 12, 4) != 0)
        return -1;
    hash_hex_encode(raw, sizeof(raw), req->etag);
    memcpy(req->etag + 2 * sizeof(raw), "-1", 3);
    return 0;
}

s3_error_t s3_body_end(s3_req_t *req)
{
    if (req->body_kind == S3_BODY_FORM && req->body_error == S3E_NONE)
        req->form_feed(req, NULL, 0);
    if (req->body_error != S3E_NONE)
        return req->body_error;
    if (req->chunked) {
        s3_error_t err = chunk_error(req, s3_awschunk_finish(req->chunked));
        if (err != S3E_NONE)
            return err;
    } else if (req->declared_len != UINT64_MAX && req->body_bytes != req->declared_len) {
        return S3E_INCOMPLETE_BODY;
    }
    if (req->sha256_payload) {
        uint8_t sum[SHA256_LEN];
        char hex[65];
        hash_digest_final(req->sha256_payload, sum);
        req->sha256_payload = NULL;
        hash_hex_encode(sum, sizeof(sum), hex);
        if (strcmp(hex, req->payload_sha256) != 0)
            return S3E_SHA256_MISMATCH;
    }
    if (req->md5) {
        uint8_t md5[MD5_LEN];
        hash_digest_final(req->md5, md5);
        req->md5 = NULL;
        hash_hex_encode(md5, sizeof(md5), req->etag);
        if (req->has_content_md5 && !hash_ct_equal(md5, req->content_md5, MD5_LEN))
            return S3E_BAD_DIGEST;
    } else if (fast_etag(req) != 0) {
        return S3E_INTERNAL;
    }

    for (int i = 0; i < S3_CK_COUNT; i++) {
        if (!req->want_ck[i])
            continue;
        char computed[64];
        checksum_final(req, i, computed);
        const char *expected = req->expect_ck[i];
        if (!expected && req->chunked) {
            expected = s3_awschunk_trailer(req->chunked, ck_headers[i]);
            /* A checksum announced in x-amz-trailer must arrive in the trailer. */
            const char *declared = s3_req_header(req, "x-amz-trailer");
            if (!expected && declared && strcasecmp(declared, ck_headers[i]) == 0)
                return S3E_INCOMPLETE_BODY;
        }
        if (expected && strcmp(expected, computed) != 0)
            return S3E_CHECKSUM_MISMATCH;
        req->checksums[i] = strdup(computed);
        if (!req->checksums[i])
            return S3E_INTERNAL;
    }
    return S3E_NONE;
}

/* ---- metadata <-> headers ---------------------------------------------------- */

#define META_PREFIX     "x-amz-meta-"
#define META_PREFIX_LEN 11

/* What any reply of an object carries, at most, fits the reply limits
 * (common/s3r_limits.h): the write limits enforced here imply them, so no
 * stored object can make a reply that some transport cannot send. */
_Static_assert(N_STORED_HEADERS + S3R_MAX_USER_META_COUNT + S3R_REPLY_OWN_HEADERS <=
                   S3R_REPLY_MAX_HEADERS,
               "the headers of a reply fit its count");
_Static_assert(META_PREFIX_LEN + S3R_MAX_USER_META_NAME <= S3R_REPLY_MAX_NAME,
               "a metadata header's name fits a reply");
_Static_assert((S3R_REPLY_MAX_NAME + 2) * N_STORED_HEADERS + S3R_MAX_STORED_HEADER_BYTES +
                       S3R_MAX_USER_META_COUNT * (META_PREFIX_LEN + 2) + S3R_MAX_USER_META_BYTES +
                       S3R_REPLY_OWN_HEADERS *
                           (S3R_REPLY_MAX_NAME + S3R_REPLY_OWN_VALUE_BYTES + 2) <=
                   S3R_MAX_HEADER_BYTES,
               "the headers of a reply fit its bytes");
/* The messages below name these limits. */
_Static_assert(S3R_MAX_USER_META_NAME == 117 && S3R_MAX_USER_META_COUNT == 32 &&
                   S3R_MAX_STORED_HEADER_BYTES == 8192,
               "the error messages say 117, 32 and 8 KiB");

typedef struct meta_collect {
    stor_meta_t *meta;
    size_t bytes;
    s3_error_t err;
    const char *why;
} meta_collect_t;

/* Stops the walk with err (why: its message, NULL for the table's). */
static int meta_fail(meta_collect_t *mc, s3_error_t err, const char *why)
{
    mc->err = err;
    mc->why = why;
    return 1;
}

static int collect_user_meta(void *ctx, const char *key, const char *value)
{
    meta_collect_t *mc = ctx;
    if (strncasecmp(key, META_PREFIX, META_PREFIX_LEN) != 0)
        return 0;
    const char *name = key + META_PREFIX_LEN;
    size_t nlen = strlen(name);
    if (nlen == 0 || !s3_field_name_ok(key))
        return meta_fail(mc, S3E_INVALID_ARGUMENT,
                         "A metadata name (x-amz-meta-*) must be a token (RFC 9110).");
    if (!s3_field_value_ok(value))
        return meta_fail(mc, S3E_INVALID_ARGUMENT,
                         "A metadata value must be a field value (RFC 9110): no control "
                         "characters, no leading or trailing whitespace.");
    mc->bytes += nlen + strlen(value);
    if (mc->bytes > S3R_MAX_USER_META_BYTES)
        return meta_fail(mc, S3E_METADATA_TOO_LARGE, NULL);
    if (nlen > S3R_MAX_USER_META_NAME)
        return meta_fail(mc, S3E_METADATA_TOO_LARGE,
                         "A metadata name (after x-amz-meta-) is longer than "
                         "s3rdmad stores (117 bytes).");
    stor_meta_t *m = mc->meta;
    if (m->n_user_meta == S3R_MAX_USER_META_COUNT)
        return meta_fail(mc, S3E_METADATA_TOO_LARGE,
                         "An object has at most 32 metadata entries (x-amz-meta-*) here.");
    stor_kv_t *kv = realloc(m->user_meta, (m->n_user_meta + 1) * sizeof(*kv));
    if (!kv)
        return meta_fail(mc, S3E_INTERNAL, NULL);
    m->user_meta = kv;
    char *n = strdup(name), *v = strdup(value);
    if (!n || !v) {
        free(n);
        free(v);
        return meta_fail(mc, S3E_INTERNAL, NULL);
    }
    for (char *c = n; *c; c++)
        *c = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
    kv[m->n_user_meta].name = n;
    kv[m->n_user_meta].value = v;
    m->n_user_meta++;
    return 0;
}

s3_error_t s3_stored_headers_check(const stor_meta_t *meta, const char **why_p)
{
    size_t bytes = 0;
    for (size_t i = 0; i < N_STORED_HEADERS; i++) {
        const char *v = *stored_slot(meta, i);
        if (!v)
            continue;
        if (!s3_field_value_ok(v)) {
            *why_p = "A header value must be a field value (RFC 9110): no control characters, "
                     "no leading or trailing whitespace.";
            return S3E_INVALID_ARGUMENT;
        }
        bytes += strlen(v);
    }
    if (bytes > S3R_MAX_STORED_HEADER_BYTES) {
        *why_p = "Content-Type, Content-Encoding, Content-Disposition, Content-Language, "
                 "Cache-Control and Expires together exceed 8 KiB.";
        return S3E_INVALID_ARGUMENT;
    }
    return S3E_NONE;
}

/* Content-Encoding as S3 stores it: without the aws-chunked coding, the rest
 * exactly as sent ("aws-chunked, gzip" -> "gzip", "deflate, gzip" unchanged).
 * Each coding kept is preceded by the text that preceded it in enc, so the
 * client's separators survive. NULL when nothing is left. */
static char *strip_aws_chunked(const char *enc)
{
    buf_t out;
    buf_init(&out, S3R_MAX_HEADER_VALUE);
    const char *prev_end = enc; /* end of the previous coding, kept or not */
    for (const char *p = enc; *p;) {
        size_t n = strcspn(p, ",");
        const char *s = p, *e = p + n;
        while (s < e && (*s == ' ' || *s == '\t'))
            s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        bool chunked = (size_t)(e - s) == 11 && strncasecmp(s, "aws-chunked", 11) == 0;
        if (e > s && !chunked) {
            if (out.len)
                buf_append(&out, prev_end, (size_t)(s - prev_end));
            buf_append(&out, s, (size_t)(e - s));
        }
        if (e > s)
            prev_end = e;
        p += n;
        if (*p == ',')
            p++;
    }
    if (out.len == 0) {
        buf_free(&out);
        return NULL;
    }
    return buf_steal(&out, NULL);
}

s3_error_t s3_tags_from_request(s3_req_t *req, stor_meta_t *meta, const char **why_p)
{
    free(meta->tags);
    meta->tags = NULL;
    const char *v = s3_req_header(req, "x-amz-tagging");
    if (!v)
        return S3E_NONE;
    s3_tags_t t;
    s3_error_t err = s3_tags_from_header(v, &t, why_p);
    if (err != S3E_NONE)
        return err;
    int nomem;
    meta->tags = s3_tags_encode(&t, &nomem);
    s3_tags_free(&t);
    return nomem ? S3E_INTERNAL : S3E_NONE;
}

s3_error_t s3_storage_class_from_headers(s3_req_t *req, stor_meta_t *meta)
{
    /* S3's classes; s3rdmad keeps every object alike whatever its class. */
    static const char *const classes[] = {
        "STANDARD",       "REDUCED_REDUNDANCY", "STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING",
        "GLACIER",        "DEEP_ARCHIVE",       "OUTPOSTS",    "GLACIER_IR", "SNOW",
        "EXPRESS_ONEZONE"};
    const char *v = s3_req_header(req, "x-amz-storage-class");
    free(meta->storage_class);
    meta->storage_class = NULL;
    if (!v)
        return S3E_NONE;
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
        if (strcmp(v, classes[i]) != 0)
            continue;
        if (i == 0)
            return S3E_NONE; /* STANDARD is stored as no class */
        meta->storage_class = strdup(v);
        return meta->storage_class ? S3E_NONE : S3E_INTERNAL;
    }
    return S3E_INVALID_STORAGE_CLASS;
}

/* The type of the checksum meta's object carries: its multipart upload's
 * (COMPOSITE or FULL_OBJECT), FULL_OBJECT for any other object. */
static const char *s3_checksum_type(const stor_meta_t *meta)
{
    return meta->checksum_type ? meta->checksum_type : "FULL_OBJECT";
}

bool s3_part_checksum_of(const stor_meta_t *meta, uint32_t n, char out[CHECKSUM_VALUE_MAX])
{
    const char *p = meta->part_checksums;
    for (uint32_t i = 1; p && i < n; i++) {
        p = strchr(p, ',');
        if (p)
            p++;
    }
    if (!p || n < 1)
        return false;
    size_t len = strcspn(p, ",");
    if (len == 0 || len >= CHECKSUM_VALUE_MAX)
        return false;
    memcpy(out, p, len);
    out[len] = '\0';
    return true;
}

const char *s3_storage_class(const stor_meta_t *meta)
{
    return meta->storage_class ? meta->storage_class : "STANDARD";
}

s3_error_t s3_meta_from_headers(s3_req_t *req, stor_meta_t *meta, const char **why_p)
{
    *why_p = NULL;
    static const char *const canned[] = {
        "private",       "public-read",       "public-read-write",        "authenticated-read",
        "aws-exec-read", "bucket-owner-read", "bucket-owner-full-control"};
    const char *acl = s3_req_header(req, "x-amz-acl");
    if (acl) {
        bool known = false;
        for (size_t i = 0; i < sizeof(canned) / sizeof(canned[0]); i++)
            known |= strcmp(acl, canned[i]) == 0;
        if (!known)
            return S3E_INVALID_ARGUMENT;
    }
    static const char *const unsupported[] = {"x-amz-website-redirect-location"};
    for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
        if (s3_req_header(req, unsupported[i]))
            return S3E_NOT_IMPLEMENTED;
    }
    s3_error_t err = s3_storage_class_from_headers(req, meta);
    if (err != S3E_NONE)
        return err;

    for (size_t i = 0; i < N_STORED_HEADERS; i++) {
        const char *v = s3_req_header(req, stored_headers[i].header);
        if (!v)
            continue;
        /* Checked as sent: strip_aws_chunked holds S3R_MAX_HEADER_VALUE. */
        if (strlen(v) > S3R_MAX_HEADER_VALUE) {
            *why_p = "A header value exceeds 8 KiB.";
            return S3E_INVALID_ARGUMENT;
        }
        char **slot = stored_slot(meta, i);
        free(*slot);
        /* S3 stores Content-Encoding without the aws-chunked transfer coding. */
        *slot = stored_slot(meta, i) == &meta->content_encoding ? strip_aws_chunked(v) : strdup(v);
        if (!*slot && slot != &meta->content_encoding)
            return S3E_INTERNAL;
    }
    if (!meta->content_type) {
        meta->content_type = strdup("binary/octet-stream");
        if (!meta->content_type)
            return S3E_INTERNAL;
    }
    err = s3_stored_headers_check(meta, why_p);
    if (err == S3E_NONE)
        err = s3_tags_from_request(req, meta, why_p);
    if (err != S3E_NONE)
        return err;
    meta_collect_t mc = {.meta = meta, .err = S3E_NONE};
    s3_req_each_header(req, collect_user_meta, &mc);
    *why_p = mc.why;
    return mc.err;
}

void s3_meta_to_headers(s3_req_t *req, const stor_meta_t *meta)
{
    char date[40];
    s3_reply_headerf(req, "ETag", "\"%s\"", meta->etag);
    date_format_http(meta->mtime_ms / 1000, date);
    s3_reply_header(req, "Last-Modified", date);
    s3_reply_header(req, "Accept-Ranges", "bytes");
    if (meta->storage_class) /* S3 names no class for STANDARD */
        s3_reply_header(req, "x-amz-storage-class", meta->storage_class);
    for (size_t i = 0; i < N_STORED_HEADERS; i++) {
        const char *v = *stored_slot(meta, i);
        if (v)
            s3_reply_header(req, stored_headers[i].header, v);
    }
    for (size_t i = 0; i < meta->n_user_meta; i++) {
        char name[512];
        snprintf(name, sizeof(name), META_PREFIX "%s", meta->user_meta[i].name);
        s3_reply_header(req, name, meta->user_meta[i].value);
    }
    const char *mode = s3_req_header(req, "x-amz-checksum-mode");
    if (mode && strcasecmp(mode, "ENABLED") == 0) {
        bool any = false;
        for (int i = 0; i < S3_CK_COUNT; i++) {
            const char *ck = *s3_meta_checksum(meta, i);
            if (ck)
                s3_reply_header(req, ck_headers[i], ck);
            any = any || ck;
        }
        if (any)
            s3_reply_header(req, "x-amz-checksum-type", s3_checksum_type(meta));
    }
}
