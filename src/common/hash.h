/* Hashes, MACs, checksums and encodings, over OpenSSL libcrypto (SHA-256,
 * SHA-1, HMAC, MD5, base64, CSPRNG) and ISA-L (CRC32, CRC32C), and CRC-64/NVME
 * (which this ISA-L lacks) computed here. Every function here is
 * thread-safe. */
#ifndef S3R_COMMON_HASH_H
#define S3R_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32
#define MD5_LEN    16
#define SHA1_LEN   20

void hash_sha256(const void *data, size_t len, uint8_t out[SHA256_LEN]);
void hash_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
                      uint8_t out[SHA256_LEN]);
/* HMAC-SHA1, for Signature Version 2 (the legacy S3 signing). */
void hash_hmac_sha1(const void *key, size_t key_len, const void *data, size_t len,
                    uint8_t out[SHA1_LEN]);

/* Incremental digests. *_init allocates; *_final writes the digest and frees
 * the context, so a context is used exactly once. *_free frees a context that
 * will not be finalised (NULL is a no-op). */
typedef struct digest digest_t;
digest_t *hash_digest_md5_new(void);
digest_t *hash_digest_sha256_new(void);
digest_t *hash_digest_sha1_new(void);
void hash_digest_update(digest_t *d, const void *data, size_t len);
void hash_digest_final(digest_t *d, uint8_t *out);
void hash_digest_free(digest_t *d);

/* CRC-32 (IEEE, as S3's x-amz-checksum-crc32) and CRC-32C (Castagnoli), both
 * chainable: pass 0 to start, the previous result to continue. */
uint32_t hash_crc32_ieee_update(uint32_t crc, const void *data, size_t len);
uint32_t hash_crc32c_update(uint32_t crc, const void *data, size_t len);
/* CRC-64/NVME (as S3's x-amz-checksum-crc64nvme: polynomial
 * 0xAD93D23594C93659, reflected, initial value and final XOR all ones; check
 * value 0xAE8B14860A799888), chainable the same way. */
uint64_t hash_crc64nvme_update(uint64_t crc, const void *data, size_t len);

/* The value of one hex digit (either case), or -1. */
int hash_hex_digit_value(char c);

/* Lower-case hex of len bytes into out (2*len+1 bytes, NUL-terminated). */
void hash_hex_encode(const uint8_t *in, size_t len, char *out);
/* Decodes exactly out_len bytes from 2*out_len hex digits; -1 on bad input. */
int hash_hex_decode(const char *in, size_t in_len, uint8_t *out, size_t out_len);

/* Standard base64 with padding. out needs 4*((len+2)/3)+1 bytes. Returns the
 * encoded length. */
size_t hash_base64_encode(const uint8_t *in, size_t len, char *out);
/* Decodes standard base64 (padding required). Returns the decoded length, or
 * -1 on malformed input or if the result would exceed out_max. */
long hash_base64_decode(const char *in, size_t len, uint8_t *out, size_t out_max);
/* base64url without padding (RFC 4648 §5); same contracts. */
size_t hash_base64url_encode(const uint8_t *in, size_t len, char *out);
long hash_base64url_decode(const char *in, size_t len, uint8_t *out, size_t out_max);

/* Fills out with cryptographically secure random bytes; -1 on failure. */
int hash_random_bytes(void *out, size_t len);
/* A random token: len such bytes as lower-case hex into out (2*len+1
 * bytes, NUL-terminated); -1 on failure. */
int hash_random_hex(size_t len, char *out);

/* Constant-time comparison; 1 when equal. */
int hash_ct_equal(const void *a, const void *b, size_t len);

#endif
