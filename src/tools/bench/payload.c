/* The self-describing objects of payload.h. */
#include "tools/bench/payload.h"

#include <string.h>

static const char MAGIC[8] = {'S', '3', 'R', 'B', 'E', 'N', 'C', 'H'};

#define P1 UINT64_C(0x9E3779B185EBCA87)
#define P2 UINT64_C(0xC2B2AE3D27D4EB4F)

static inline uint64_t rotl(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v; /* little-endian hosts only, as the rest of s3rdma */
}

static inline void wr64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

static inline uint64_t mix(uint64_t h, uint64_t w)
{
    return rotl(h ^ (w * P2), 31) * P1;
}

static inline uint64_t fmix(uint64_t h)
{
    h ^= h >> 33;
    h *= UINT64_C(0xFF51AFD7ED558CCD);
    h ^= h >> 33;
    h *= UINT64_C(0xC4CEB9FE1A85EC53);
    return h ^ (h >> 33);
}

/* Four independent lanes so the multiplies overlap (several GB/s). */
static uint64_t body_hash(const uint8_t *p, size_t n, uint64_t seed)
{
    uint64_t a = seed ^ P1, b = seed ^ P2, c = ~seed, d = seed + P1;
    for (; n >= 32; p += 32, n -= 32) {
        a = mix(a, rd64(p));
        b = mix(b, rd64(p + 8));
        c = mix(c, rd64(p + 16));
        d = mix(d, rd64(p + 24));
    }
    uint64_t h = a ^ rotl(b, 17) ^ rotl(c, 31) ^ rotl(d, 47);
    for (; n >= 8; p += 8, n -= 8)
        h = mix(h, rd64(p));
    uint64_t tail = (uint64_t)n << 56;
    for (size_t i = 0; i < n; i++)
        tail |= (uint64_t)p[i] << (8 * i);
    return fmix(mix(h, tail));
}

static uint64_t key_hash(const char *key)
{
    uint64_t h = UINT64_C(0xCBF29CE484222325);
    for (const unsigned char *k = (const unsigned char *)key; *k; k++)
        h = (h ^ *k) * UINT64_C(0x100000001B3);
    return h;
}

static uint64_t checksum(uint64_t body, uint64_t len, uint64_t khash, uint64_t seed)
{
    return fmix(mix(mix(mix(body, len), khash), seed));
}

void payload_body_init(payload_body_t *body, void *buf, uint64_t cap, uint64_t seed)
{
    uint8_t *p = buf;
    uint64_t x = seed;
    for (uint64_t i = PAYLOAD_HEADER; i < cap; i += 8) {
        x += P1; /* splitmix64 */
        uint64_t z = fmix(x);
        memcpy(p + i, &z, cap - i < 8 ? cap - i : 8);
    }
    body->seed = seed;
    body->hashed_len = 0;
    body->body_hash = 0;
}

void payload_stamp(payload_body_t *body, void *buf, uint64_t len, const char *key)
{
    uint8_t *p = buf;
    if (body->hashed_len != len) {
        body->body_hash = body_hash(p + PAYLOAD_HEADER, len - PAYLOAD_HEADER, body->seed);
        body->hashed_len = len;
    }
    uint64_t kh = key_hash(key);
    memcpy(p, MAGIC, sizeof MAGIC);
    wr64(p + 8, len);
    wr64(p + 16, kh);
    wr64(p + 24, body->seed);
    wr64(p + 32, checksum(body->body_hash, len, kh, body->seed));
}

payload_result_t payload_verify(const void *buf, uint64_t len, const char *key)
{
    const uint8_t *p = buf;
    if (len < PAYLOAD_HEADER || memcmp(p, MAGIC, sizeof MAGIC) != 0)
        return PAYLOAD_BAD_HEADER;
    if (rd64(p + 8) != len)
        return PAYLOAD_BAD_LENGTH;
    uint64_t kh = rd64(p + 16), seed = rd64(p + 24);
    if (kh != key_hash(key))
        return PAYLOAD_WRONG_KEY;
    uint64_t h = body_hash(p + PAYLOAD_HEADER, len - PAYLOAD_HEADER, seed);
    return rd64(p + 32) == checksum(h, len, kh, seed) ? PAYLOAD_OK : PAYLOAD_BAD_CHECKSUM;
}

const char *payload_result_name(payload_result_t r)
{
    switch (r) {
    case PAYLOAD_OK:
        return "ok";
    case PAYLOAD_BAD_HEADER:
        return "verify_bad_header";
    case PAYLOAD_BAD_LENGTH:
        return "verify_bad_length";
    case PAYLOAD_WRONG_KEY:
        return "verify_wrong_key";
    case PAYLOAD_BAD_CHECKSUM:
        return "verify_checksum";
    }
    return "verify_unknown";
}
