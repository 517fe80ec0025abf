#include "common/hash.h"

#include <endian.h>
#include <isa-l/crc.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void hash_sha256(const void *data, size_t len, uint8_t out[SHA256_LEN])
{
    unsigned int n = SHA256_LEN;
    EVP_Digest(data, len, out, &n, EVP_sha256(), NULL);
}

void hash_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
                      uint8_t out[SHA256_LEN])
{
    unsigned int n = SHA256_LEN;
    HMAC(EVP_sha256(), key, (int)key_len, data, len, out, &n);
}

void hash_hmac_sha1(const void *key, size_t key_len, const void *data, size_t len,
                    uint8_t out[SHA1_LEN])
{
    unsigned int n = SHA1_LEN;
    HMAC(EVP_sha1(), key, (int)key_len, data, len, out, &n);
}

struct digest {
    EVP_MD_CTX *ctx;
};

static digest_t *digest_new(const EVP_MD *md)
{
    digest_t *d = malloc(sizeof(*d));
    if (!d)
        return NULL;
    d->ctx = EVP_MD_CTX_new();
    if (!d->ctx || EVP_DigestInit_ex(d->ctx, md, NULL) != 1) {
        EVP_MD_CTX_free(d->ctx);
        free(d);
        return NULL;
    }
    return d;
}

/* The digests' implementations, fetched from OpenSSL's default provider
 * once. EVP_md5() and friends are the legacy handles: OpenSSL 3 looks the
 * implementation up again (EVP_MD_fetch) in every EVP_DigestInit_ex, which
 * took ~1.5 us, as long as the MD5 of 2 KiB, on every PUT (the server's
 * profile of native 4 KiB PUTs: 3 % of a PUT's CPU; docs/benchmarks.md). A
 * fetch that fails leaves the legacy handle. */
static const EVP_MD *md_md5, *md_sha256, *md_sha1;
static pthread_once_t md_once = PTHREAD_ONCE_INIT;

static void md_fetch(void)
{
    EVP_MD *m;
    md_md5 = (m = EVP_MD_fetch(NULL, "MD5", NULL)) ? m : EVP_md5();
    md_sha256 = (m = EVP_MD_fetch(NULL, "SHA256", NULL)) ? m : EVP_sha256();
    md_sha1 = (m = EVP_MD_fetch(NULL, "SHA1", NULL)) ? m : EVP_sha1();
}

digest_t *hash_digest_md5_new(void)
{
    pthread_once(&md_once, md_fetch);
    return digest_new(md_md5);
}

digest_t *hash_digest_sha256_new(void)
{
    pthread_once(&md_once, md_fetch);
    return digest_new(md_sha256);
}

digest_t *hash_digest_sha1_new(void)
{
    pthread_once(&md_once, md_fetch);
    return digest_new(md_sha1);
}

void hash_digest_update(digest_t *d, const void *data, size_t len)
{
    if (len)
        EVP_DigestUpdate(d->ctx, data, len);
}

void hash_digest_final(digest_t *d, uint8_t *out)
{
    EVP_DigestFinal_ex(d->ctx, out, NULL);
    hash_digest_free(d);
}

void hash_digest_free(digest_t *d)
{
    if (!d)
        return;
    EVP_MD_CTX_free(d->ctx);
    free(d);
}

uint32_t hash_crc32_ieee_update(uint32_t crc, const void *data, size_t len)
{
    return crc32_gzip_refl(crc, data, len);
}

uint32_t hash_crc32c_update(uint32_t crc, const void *data, size_t len)
{
    /* ISA-L's iSCSI CRC takes and returns the raw register: invert both ways
     * so the API chains like zlib's crc32(); its length is an int, so at most
     * 1 GiB a call. */
    const unsigned char *p = data;
    crc = ~crc;
    while (len > 0) {
        int n = len < (1u << 30) ? (int)len : 1 << 30;
        crc = crc32_iscsi((unsigned char *)p, n, crc);
        p += n;
        len -= (size_t)n;
    }
    return ~crc;
}

/* CRC-64/NVME, slicing by 8: crc64_table[0] is the byte-at-a-time table of
 * the reflected polynomial; crc64_table[k][b] is the CRC of byte b followed
 * by k zero bytes, so eight table lookups advance the CRC by eight bytes. */
#define CRC64NVME_POLY_REFLECTED 0x9A6C9329AC4BC9B5ull
static uint64_t crc64_table[8][256];
static pthread_once_t crc64_once = PTHREAD_ONCE_INIT;

static void crc64_table_init(void)
{
    for (unsigned b = 0; b < 256; b++) {
        uint64_t c = b;
        for (int i = 0; i < 8; i++)
            c = c & 1 ? (c >> 1) ^ CRC64NVME_POLY_REFLECTED : c >> 1;
        crc64_table[0][b] = c;
    }
    for (unsigned b = 0; b < 256; b++)
        for (int k = 1; k < 8; k++)
            crc64_table[k][b] =
                (crc64_table[k - 1][b] >> 8) ^ crc64_table[0][crc64_table[k - 1][b] & 0xff];
}

uint64_t hash_crc64nvme_update(uint64_t crc, const void *data, size_t len)
{
    pthread_once(&crc64_once, crc64_table_init);
    const uint8_t *p = data;
    uint64_t c = ~crc;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c ^= le64toh(w);
        c = crc64_table[7][c & 0xff] ^ crc64_table[6][(c >> 8) & 0xff] ^
            crc64_table[5][(c >> 16) & 0xff] ^ crc64_table[4][(c >> 24) & 0xff] ^
            crc64_table[3][(c >> 32) & 0xff] ^ crc64_table[2][(c >> 40) & 0xff] ^
            crc64_table[1][(c >> 48) & 0xff] ^ crc64_table[0][c >> 56];
    }
    for (; len; p++, len--)
        c = crc64_table[0][(c ^ *p) & 0xff] ^ (c >> 8);
    return ~c;
}

void hash_hex_encode(const uint8_t *in, size_t len, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * len] = '\0';
}

int hash_hex_digit_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int hash_hex_decode(const char *in, size_t in_len, uint8_t *out, size_t out_len)
{
    if (in_len != 2 * out_len)
        return -1;
    for (size_t i = 0; i < out_len; i++) {
        int hi = hash_hex_digit_value(in[2 * i]), lo = hash_hex_digit_value(in[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

size_t hash_base64_encode(const uint8_t *in, size_t len, char *out)
{
    return (size_t)EVP_EncodeBlock((unsigned char *)out, in, (int)len);
}

long hash_base64_decode(const char *in, size_t len, uint8_t *out, size_t out_max)
{
    if (len % 4 != 0)
        return -1;
    /* EVP_DecodeBlock is lenient about padding: accept only the alphabet,
     * with at most two '=' and only at the very end. */
    size_t pad = 0;
    while (pad < 2 && pad < len && in[len - 1 - pad] == '=')
        pad++;
    for (size_t i = 0; i < len - pad; i++) {
        char c = in[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '/'))
            return -1;
    }
    size_t raw = len / 4 * 3;
    uint8_t *tmp = malloc(raw + 1);
    if (!tmp)
        return -1;
    int n = EVP_DecodeBlock(tmp, (const unsigned char *)in, (int)len);
    if (n < 0) {
        free(tmp);
        return -1;
    }
    /* EVP_DecodeBlock counts the padding as zero bytes: take them off. */
    if (len >= 1 && in[len - 1] == '=')
        n--;
    if (len >= 2 && in[len - 2] == '=')
        n--;
    if ((size_t)n > out_max) {
        free(tmp);
        return -1;
    }
    memcpy(out, tmp, (size_t)n);
    free(tmp);
    return n;
}

size_t hash_base64url_encode(const uint8_t *in, size_t len, char *out)
{
    size_t n = hash_base64_encode(in, len, out);
    while (n > 0 && out[n - 1] == '=')
        out[--n] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (out[i] == '+')
            out[i] = '-';
        else if (out[i] == '/')
            out[i] = '_';
    }
    return n;
}

long hash_base64url_decode(const char *in, size_t len, uint8_t *out, size_t out_max)
{
    if (len % 4 == 1 || len > 16384)
        return -1;
    char tmp[16384 + 4];
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = in[i];
        if (c == '-')
            c = '+';
        else if (c == '_')
            c = '/';
        else if (c == '+' || c == '/' || c == '=')
            return -1;
        tmp[n++] = c;
    }
    while (n % 4)
        tmp[n++] = '=';
    return hash_base64_decode(tmp, n, out, out_max);
}

int hash_random_bytes(void *out, size_t len)
{
    return RAND_bytes(out, (int)len) == 1 ? 0 : -1;
}

int hash_random_hex(size_t len, char *out)
{
    uint8_t raw[32];
    out[0] = '\0';
    for (size_t done = 0; done < len;) {
        size_t n = len - done < sizeof raw ? len - done : sizeof raw;
        if (hash_random_bytes(raw, n) != 0)
            return -1;
        hash_hex_encode(raw, n, out + 2 * done);
        done += n;
    }
    return 0;
}

int hash_ct_equal(const void *a, const void *b, size_t len)
{
    return CRYPTO_memcmp(a, b, len) == 0;
}
