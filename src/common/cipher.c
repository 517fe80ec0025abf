/* AES-256-CTR by byte offset and AES key wrap over EVP (cipher.h). */
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "common/cipher.h"

int aes256_ctr_at(const uint8_t key[AES256_KEY_LEN], const uint8_t iv[AES_BLOCK_LEN], uint64_t off,
                  const void *in, void *out, size_t len)
{
    if (len == 0)
        return 0;
    /* The counter block of the block holding off: iv + off / 16. */
    uint8_t ctr[AES_BLOCK_LEN];
    memcpy(ctr, iv, sizeof ctr);
    uint64_t add = off / AES_BLOCK_LEN;
    unsigned carry = 0;
    for (int i = AES_BLOCK_LEN - 1; i >= 0; i--) {
        unsigned v = ctr[i] + (unsigned)(add & 0xFF) + carry;
        ctr[i] = (uint8_t)v;
        carry = v >> 8;
        add >>= 8;
    }
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int ok = c && EVP_EncryptInit_ex(c, EVP_aes_256_ctr(), NULL, key, ctr) == 1;
    int n;
    /* Skip into the block: the keystream bytes before off are used up. */
    size_t skip = (size_t)(off % AES_BLOCK_LEN);
    if (ok && skip) {
        uint8_t pad[AES_BLOCK_LEN] = {0};
        ok = EVP_EncryptUpdate(c, pad, &n, pad, (int)skip) == 1;
    }
    const uint8_t *src = in;
    uint8_t *dst = out;
    while (ok && len) {
        int step = len > (1u << 30) ? 1 << 30 : (int)len;
        ok = EVP_EncryptUpdate(c, dst, &n, src, step) == 1 && n == step;
        src += step;
        dst += step;
        len -= (size_t)step;
    }
    EVP_CIPHER_CTX_free(c);
    return ok ? 0 : -1;
}

static int wrap(int enc, const uint8_t kek[AES256_KEY_LEN], const uint8_t *in, int in_len,
                uint8_t *out, int out_len)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (!c)
        return -1;
    EVP_CIPHER_CTX_set_flags(c, EVP_CIPHER_CTX_FLAG_WRAP_ALLOW);
    int n = 0, m = 0;
    int ok = EVP_CipherInit_ex(c, EVP_aes_256_wrap(), NULL, kek, NULL, enc) == 1 &&
             EVP_CipherUpdate(c, out, &n, in, in_len) == 1 &&
             EVP_CipherFinal_ex(c, out + n, &m) == 1 && n + m == out_len;
    EVP_CIPHER_CTX_free(c);
    return ok ? 0 : -1;
}

int aes256_wrap(const uint8_t kek[AES256_KEY_LEN], const uint8_t key[AES256_KEY_LEN],
                uint8_t out[AES256_WRAPPED_LEN])
{
    return wrap(1, kek, key, AES256_KEY_LEN, out, AES256_WRAPPED_LEN);
}

int aes256_unwrap(const uint8_t kek[AES256_KEY_LEN], const uint8_t in[AES256_WRAPPED_LEN],
                  uint8_t key[AES256_KEY_LEN])
{
    int rc = wrap(0, kek, in, AES256_WRAPPED_LEN, key, AES256_KEY_LEN);
    if (rc != 0)
        OPENSSL_cleanse(key, AES256_KEY_LEN);
    return rc;
}

void secure_zero(void *p, size_t len)
{
    OPENSSL_cleanse(p, len);
}
