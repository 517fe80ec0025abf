/* The objects s3rdma-bench writes describe themselves, so every read is
 * checked against what was written without remembering anything:
 *
 *   offset  0  "S3RBENCH"    magic (8 bytes)
 *           8  length        the object's total length (u64, little endian)
 *          16  key hash      FNV-1a 64 of the object's key
 *          24  seed          the body's pseudo-random stream
 *          32  checksum      a 64-bit hash of bytes 40..length, mixed with
 *                            the length, key hash and seed
 *          40  body          pseudo-random bytes from seed
 *
 * A read verifies the magic, that the length is what arrived, that the key
 * hash is the key asked for, and the checksum over every byte. The hash is
 * not cryptographic: it catches corruption, truncation and the wrong
 * object, not an adversary. */
#ifndef S3R_BENCH_PAYLOAD_H
#define S3R_BENCH_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#define PAYLOAD_HEADER 40
/* The smallest object size the bench writes (a header and a little body). */
#define PAYLOAD_MIN 64

typedef enum payload_result {
    PAYLOAD_OK = 0,
    PAYLOAD_BAD_HEADER, /* no magic: not an object this tool wrote, or overwritten */
    PAYLOAD_BAD_LENGTH, /* the length in the header is not what was read */
    PAYLOAD_WRONG_KEY,  /* the header names another key */
    PAYLOAD_BAD_CHECKSUM,
} payload_result_t;

/* A writer's body, generated once and stamped with a header per write. */
typedef struct payload_body {
    uint64_t seed;
    uint64_t hashed_len; /* the length body_hash covers; 0: not yet hashed */
    uint64_t body_hash;
} payload_body_t;

/* Fills buf[PAYLOAD_HEADER, cap) with the pseudo-random stream of seed and
 * readies body for stamping. */
void payload_body_init(payload_body_t *body, void *buf, uint64_t cap, uint64_t seed);
/* Writes the header of an object of len bytes (PAYLOAD_MIN <= len <= the cap
 * given to payload_body_init) named key into buf; hashes the body again only
 * when len differs from the previous stamp's. */
void payload_stamp(payload_body_t *body, void *buf, uint64_t len, const char *key);
/* Checks len bytes read from key. */
payload_result_t payload_verify(const void *buf, uint64_t len, const char *key);
/* A short name for a result ("checksum", "wrong_key", ...). */
const char *payload_result_name(payload_result_t r);

#endif
