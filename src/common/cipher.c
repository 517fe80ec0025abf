/* AES-256-CTR by byte offset and AES key wrap over EVP (cipher.h). */
#include <pthread.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "common/cipher.h"

/* The cipher, fetched from the provider once (an implicit fetch on every
 * init costs more than encrypting a few KiB). */
static EVP_CIPHER *ctr_cipher;
static pthread_once_t ctr_once = PTHREAD_ONCE_INIT;

static void ctr_fetch(void)
{
    ctr_cipher = EVP_CIPHER_fetch(NULL, "AES-256-CTR", NULL);
}

static const EVP_CIPHER *aes256_ctr(void)
{
    pthread_once(&ctr_once, ctr_fetch);
    return ctr_cipher;
}

/* One context per thread, re-keyed by every call and freed with the
 * thread: no allocation per call. The key schedule it holds between calls
 * is overwritten by the next one and cleansed at the thread's end. */
static pthread_key_t ctx_key;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;

static void ctx_free(void *c)
{
    EVP_CIPHER_CTX_free(c);
}

static void ctx_key_make(void)
{
    if (pthread_key_create(&ctx_key, ctx_free) != 0)
        ctx_key = (pthread_key_t)-1;
}

static EVP_CIPHER_CTX *thread_ctx(void)
{
    pthread_once(&ctx_once, ctx_key_make);
    if (ctx_key == (pthread_key_t)-1)
        return NULL;
    EVP_CIPHER_CTX *c = pthread_getspecific(ctx_key);
    if (!c && (c = EVP_CIPHER_CTX_new()) != NULL && pthread_setspecific(ctx_key, c) != 0) {
        EVP_CIPHER_CTX_free(c);
        c = NULL;
    }
    return c;
}

int cipher_aes256_ctr_at(const uint8_t key[AES256_KEY_LEN], const uint8_t iv[AES_BLOCK_LEN],
                         uint64_t off, const void *in, void *out, size_t len)
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
    EVP_CIPHER_CTX *c = thread_ctx();
    int ok = c && EVP_EncryptInit_ex2(c, aes256_ctr(), key, ctr, NULL) == 1;
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

int cipher_aes256_wrap(const uint8_t kek[AES256_KEY_LEN], const uint8_t key[AES256_KEY_LEN],
                       uint8_t out[AES256_WRAPPED_LEN])
{
    return wrap(1, kek, key, AES256_KEY_LEN, out, AES256_WRAPPED_LEN);
}

int cipher_aes256_unwrap(const uint8_t kek[AES256_KEY_LEN], const uint8_t in[AES256_WRAPPED_LEN],
                         uint8_t key[AES256_KEY_LEN])
{
    int rc = wrap(0, kek, in, AES256_WRAPPED_LEN, key, AES256_KEY_LEN);
    if (rc != 0)
        OPENSSL_cleanse(key, AES256_KEY_LEN);
    return rc;
}

void cipher_secure_zero(void *p, size_t len)
{
    OPENSSL_cleanse(p, len);
}
