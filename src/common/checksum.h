/* S3's checksum of a multipart object, from its parts' checksums: the
 * COMPOSITE form (the algorithm over the parts' checksums, "-N") and the
 * FULL_OBJECT form of the CRCs (the CRC of the whole object, combined from
 * the parts' CRCs and sizes, as if the bytes had been read in one go).
 * Values are base64, as S3 sends them. Pure and thread-safe. */
#ifndef S3R_COMMON_CHECKSUM_H
#define S3R_COMMON_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/* The algorithms, as S3 names them. */
typedef enum checksum_alg {
    CHECKSUM_CRC32,
    CHECKSUM_CRC32C,
    CHECKSUM_CRC64NVME,
    CHECKSUM_SHA1,
    CHECKSUM_SHA256,
    CHECKSUM_NONE
} checksum_alg_t;

/* The algorithm S3 names name ("CRC32", ... upper case), or CHECKSUM_NONE. */
checksum_alg_t checksum_alg_from_name(const char *name);
const char *checksum_alg_name(checksum_alg_t alg);
/* Whether S3 allows the FULL_OBJECT type with alg (the CRCs) and the
 * COMPOSITE type (all but CRC64NVME). */
int checksum_full_object_ok(checksum_alg_t alg);
int checksum_composite_ok(checksum_alg_t alg);

/* Room for any value checksum_of_parts writes, NUL included. */
#define CHECKSUM_VALUE_MAX 64

/* The checksum of an object made of n parts (n >= 1) whose checksums of alg
 * are part_cks[i] (base64) and sizes sizes[i] (needed for full_object
 * only): composite (full_object 0, checksum_composite_ok): base64 of alg over
 * the parts' decoded checksums, then "-<n>"; full object (full_object 1,
 * checksum_full_object_ok): base64 of the whole object's CRC. -1 when a
 * part's checksum is not alg's base64 or the type does not fit alg. */
int checksum_of_parts(checksum_alg_t alg, int full_object, const char *const *part_cks,
                      const uint64_t *sizes, size_t n, char out[CHECKSUM_VALUE_MAX]);

/* CRC(A || B) from CRC(A), CRC(B) and B's length, for S3's CRCs (reflected,
 * initial value and final XOR all ones: crc*_update's chaining form). */
uint32_t checksum_crc32_ieee_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);
uint32_t checksum_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);
uint64_t checksum_crc64nvme_combine(uint64_t crc_a, uint64_t crc_b, uint64_t len_b);

#endif
