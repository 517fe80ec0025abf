/* Multipart checksums (checksum.h): composites over the parts' checksums and
 * CRC combination by GF(2) polynomial arithmetic (multiplying the first
 * CRC by x^(8 len_b) modulo the polynomial, then adding the second). */
#include "common/checksum.h"

#include <stdio.h>
#include <string.h>

#include "common/hash.h"

static const char *const alg_names[] = {"CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"};
/* Each algorithm's digest bytes. */
static const size_t alg_len[] = {4, 4, 8, SHA1_LEN, SHA256_LEN};

checksum_alg_t checksum_alg_from_name(const char *name)
{
    for (int i = 0; name && i < CHECKSUM_NONE; i++)
        if (strcmp(name, alg_names[i]) == 0)
            return (checksum_alg_t)i;
    return CHECKSUM_NONE;
}

const char *checksum_alg_name(checksum_alg_t alg)
{
    return alg < CHECKSUM_NONE ? alg_names[alg] : "";
}

int checksum_full_object_ok(checksum_alg_t alg)
{
    return alg == CHECKSUM_CRC32 || alg == CHECKSUM_CRC32C || alg == CHECKSUM_CRC64NVME;
}

int checksum_composite_ok(checksum_alg_t alg)
{
    return alg < CHECKSUM_NONE && alg != CHECKSUM_CRC64NVME;
}

/* a * b modulo the reflected polynomial poly of width bits (bit width-1 is
 * x^0). */
static uint64_t gf2_mul(uint64_t a, uint64_t b, uint64_t poly, int width)
{
    uint64_t m = 1ull << (width - 1), p = 0;
    while (m) {
        if (a & m)
            p ^= b;
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ poly : b >> 1;
    }
    return p;
}

/* x^(8 len) modulo poly, by squaring (x^k, k < width, is bit width-1-k). */
static uint64_t gf2_x8n(uint64_t len, uint64_t poly, int width)
{
    uint64_t result = 1ull << (width - 1); /* x^0 */
    uint64_t base = 1ull << (width - 9);   /* x^8: one byte */
    for (; len; len >>= 1) {
        if (len & 1)
            result = gf2_mul(result, base, poly, width);
        base = gf2_mul(base, base, poly, width);
    }
    return result;
}

static uint64_t crc_combine(uint64_t a, uint64_t b, uint64_t len_b, uint64_t poly, int width)
{
    return gf2_mul(gf2_x8n(len_b, poly, width), a, poly, width) ^ b;
}

uint32_t checksum_crc32_ieee_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
    return (uint32_t)crc_combine(crc_a, crc_b, len_b, 0xEDB88320u, 32);
}

uint32_t checksum_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
    return (uint32_t)crc_combine(crc_a, crc_b, len_b, 0x82F63B78u, 32);
}

uint64_t checksum_crc64nvme_combine(uint64_t crc_a, uint64_t crc_b, uint64_t len_b)
{
    return crc_combine(crc_a, crc_b, len_b, 0x9A6C9329AC4BC9B5ull, 64);
}

/* The big-endian bytes of a CRC value. */
static uint64_t be_value(const uint8_t *b, size_t len)
{
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++)
        v = v << 8 | b[i];
    return v;
}

static void be_bytes(uint64_t v, uint8_t *b, size_t len)
{
    for (size_t i = len; i-- > 0; v >>= 8)
        b[i] = (uint8_t)v;
}

int checksum_of_parts(checksum_alg_t alg, int full_object, const char *const *part_cks,
                      const uint64_t *sizes, size_t n, char out[CHECKSUM_VALUE_MAX])
{
    if (n == 0 || !(full_object ? checksum_full_object_ok(alg) : checksum_composite_ok(alg)))
        return -1;
    size_t dlen = alg_len[alg];
    digest_t *d = NULL;
    if (!full_object && (alg == CHECKSUM_SHA1 || alg == CHECKSUM_SHA256)) {
        d = alg == CHECKSUM_SHA1 ? hash_digest_sha1_new() : hash_digest_sha256_new();
        if (!d)
            return -1;
    }
    uint64_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t raw[SHA256_LEN];
        const char *ck = part_cks[i];
        if (!ck || hash_base64_decode(ck, strlen(ck), raw, sizeof raw) != (long)dlen) {
            hash_digest_free(d);
            return -1;
        }
        if (d) {
            hash_digest_update(d, raw, dlen);
        } else if (!full_object) {
            crc = alg == CHECKSUM_CRC32 ? hash_crc32_ieee_update((uint32_t)crc, raw, dlen)
                                        : hash_crc32c_update((uint32_t)crc, raw, dlen);
        } else {
            uint64_t v = be_value(raw, dlen);
            crc = i == 0 ? v
                  : alg == CHECKSUM_CRC32
                      ? checksum_crc32_ieee_combine((uint32_t)crc, (uint32_t)v, sizes[i])
                  : alg == CHECKSUM_CRC32C
                      ? checksum_crc32c_combine((uint32_t)crc, (uint32_t)v, sizes[i])
                      : checksum_crc64nvme_combine(crc, v, sizes[i]);
        }
    }
    uint8_t sum[SHA256_LEN];
    if (d)
        hash_digest_final(d, sum);
    else
        be_bytes(crc, sum, dlen);
    char b64[CHECKSUM_VALUE_MAX];
    hash_base64_encode(sum, dlen, b64);
    int len = full_object ? snprintf(out, CHECKSUM_VALUE_MAX, "%s", b64)
                          : snprintf(out, CHECKSUM_VALUE_MAX, "%s-%zu", b64, n);
    return len > 0 && len < CHECKSUM_VALUE_MAX ? 0 : -1;
}
