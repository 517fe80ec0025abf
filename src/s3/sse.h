/* Server-side encryption at rest (docs/storage.md, "Encryption at rest";
 * threat model in docs/security.md): which key an object is written under
 * and read with, from the request's SSE-C headers, its
 * x-amz-server-side-encryption header or the bucket's default encryption,
 * with the errors S3 gives. The bytes themselves are encrypted and
 * decrypted by the store's writers and readers (stor_writer_set_cipher,
 * stor_reader_set_cipher), so every transport (HTTP, token, native, copies)
 * gets the same.
 *
 * Each object has its own 256-bit data key, used with AES-256-CTR from a
 * zero counter block. Its stored form (stor_meta_t.sse) never holds a key:
 *  - SSE-C  "C:<salt>:<mac>": the data key is HMAC-SHA256(customer key,
 *    "s3rdma-sse-c-key" || salt) and mac is HMAC-SHA256(customer key,
 *    "s3rdma-sse-c-check" || salt), which recognises a wrong key later;
 *    salt is 16 random bytes per write (hex).
 *  - SSE-S3 "S3:<id>:<wrapped>": a random data key wrapped (AES key wrap,
 *    RFC 3394) under the master key whose id is given (hex).
 *  - SSE-KMS "K:<id>:<wrapped>": the same under the key of the local
 *    keyring (sse.kms_keyring_file) named id: the built-in key provider, a
 *    file for tests and edge sites, not a KMS. */
#ifndef S3R_S3_SSE_H
#define S3R_S3_SSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cipher.h"
#include "s3/s3_errors.h"
#include "storage/storage.h"

struct s3_req;

#define S3_SSE_MAX_MASTER_KEYS 16
#define S3_SSE_KEY_ID_LEN      8  /* a master key's id: hex of the first 4 bytes of SHA-256(key) */
#define S3_SSE_KMS_ID_MAX      64 /* a keyring key's name: [A-Za-z0-9._-] */

/* Keys from an operator's file: the SSE-S3 master keys (the first encrypts
 * new objects, every one decrypts the objects written under it: rotation),
 * or the SSE-KMS keyring (named keys; the first is the default key). */
typedef struct s3_sse_keys {
    size_t n;
    uint8_t key[S3_SSE_MAX_MASTER_KEYS][AES256_KEY_LEN];
    char id[S3_SSE_MAX_MASTER_KEYS][S3_SSE_KMS_ID_MAX + 1];
} s3_sse_keys_t;

/* Reads path: one key per line, 64 hex digits (named: "NAME HEX", NAME of
 * 1..64 of [A-Za-z0-9._-], each once); empty lines and lines starting with
 * '#' skipped; at most S3_SSE_MAX_MASTER_KEYS. The file must not be
 * readable by group or others. 0, or -1 with why (cap bytes). */
int s3_sse_keys_load(const char *path, bool named, s3_sse_keys_t *out, char *why, size_t cap);

/* An object's data key, as the writer or reader is to use it. */
typedef struct s3_sse_key {
    bool on;
    uint8_t key[AES256_KEY_LEN];
    uint32_t part; /* a part of an upload (its counter block: stor_part_iv); 0: an object */
} s3_sse_key_t;

/* The encryption a write of an object asks: SSE-C headers, else
 * x-amz-server-side-encryption, else the bucket's default
 * (req->authz_bucket). Sets meta->sse to the stored form (NULL: none) and
 * *dk to the data key. Returns S3E_NONE or S3's error with *why_p. */
s3_error_t s3_sse_for_write(struct s3_req *req, stor_meta_t *meta, s3_sse_key_t *dk,
                            const char **why_p);
/* The keyring name a key id header or KMSMasterKeyID gives (an ARN
 * "arn:aws:kms:...:key/NAME" names NAME); points into given. */
const char *s3_sse_kms_key_name(const char *given);
/* The key to read an object with meta: checks the request's SSE-C headers
 * (copy_source: the x-amz-copy-source-server-side-encryption-customer-*
 * ones) against the object. Returns S3E_NONE with *dk (off for a plain
 * object), or S3's error. */
s3_error_t s3_sse_for_read(struct s3_req *req, const stor_meta_t *meta, bool copy_source,
                           s3_sse_key_t *dk, const char **why_p);
/* Applies dk to a writer (at dk->part's counter block) or to a reader (an
 * object assembled from parts: each part's own), nothing when it is off;
 * then zeroes dk. */
void s3_sse_apply_writer(s3_sse_key_t *dk, stor_writer_t *w);
void s3_sse_apply_reader(s3_sse_key_t *dk, stor_reader_t *r);
/* Adds the headers S3 answers about meta's encryption (PUT, GET, HEAD,
 * copies): x-amz-server-side-encryption, or the SSE-C algorithm and key MD5
 * (the request's: the MD5 is not stored). */
void s3_sse_reply_headers(struct s3_req *req, const stor_meta_t *meta);

#endif
