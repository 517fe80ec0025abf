/* AES-256 for encryption at rest, over OpenSSL libcrypto (AES-NI where the
 * CPU has it): CTR mode addressed by byte offset, so any range of an object
 * is encrypted or decrypted on its own, and AES key wrap (RFC 3394) for data
 * keys under a master key. Thread-safe; nothing here keeps a key. */
#ifndef S3R_COMMON_CIPHER_H
#define S3R_COMMON_CIPHER_H

#include <stddef.h>
#include <stdint.h>

#define AES256_KEY_LEN     32
#define AES_BLOCK_LEN      16
#define AES256_WRAPPED_LEN 40 /* a wrapped 32-byte key */

/* XORs len bytes of the AES-256-CTR keystream, starting at byte off of the
 * stream, into out from in (they may be the same buffer). The counter block
 * of bytes [16k, 16k+16) is iv + k (big-endian, 128-bit). 0, or -1 on an
 * OpenSSL failure (out then undefined). */
int cipher_aes256_ctr_at(const uint8_t key[AES256_KEY_LEN], const uint8_t iv[AES_BLOCK_LEN],
                         uint64_t off, const void *in, void *out, size_t len);
/* Wraps a 32-byte key under kek (RFC 3394); 0 or -1. */
int cipher_aes256_wrap(const uint8_t kek[AES256_KEY_LEN], const uint8_t key[AES256_KEY_LEN],
                       uint8_t out[AES256_WRAPPED_LEN]);
/* Unwraps; -1 when the integrity check fails (another kek, damaged bytes). */
int cipher_aes256_unwrap(const uint8_t kek[AES256_KEY_LEN], const uint8_t in[AES256_WRAPPED_LEN],
                         uint8_t key[AES256_KEY_LEN]);
/* Zeroes len bytes in a way the compiler keeps. */
void cipher_secure_zero(void *p, size_t len);

#endif
