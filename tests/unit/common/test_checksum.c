/* Multipart checksums (common/checksum.h): CRC combination equals the CRC
 * of the joined bytes at every split, and the composite and full-object
 * values of a multipart object equal those computed from its bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/checksum.h"
#include "common/hash.h"

static uint8_t data[3001];

static void fill(void)
{
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 131 + (i >> 7));
}

static void test_crc_combine(void **state)
{
    (void)state;
    fill();
    uint32_t whole32 = hash_crc32_ieee_update(0, data, sizeof data);
    uint32_t whole32c = hash_crc32c_update(0, data, sizeof data);
    uint64_t whole64 = hash_crc64nvme_update(0, data, sizeof data);
    for (size_t cut = 0; cut <= sizeof data; cut += 97) {
        size_t rest = sizeof data - cut;
        assert_int_equal(checksum_crc32_ieee_combine(hash_crc32_ieee_update(0, data, cut),
                                                     hash_crc32_ieee_update(0, data + cut, rest),
                                                     rest),
                         whole32);
        assert_int_equal(checksum_crc32c_combine(hash_crc32c_update(0, data, cut),
                                                 hash_crc32c_update(0, data + cut, rest), rest),
                         whole32c);
        assert_true(checksum_crc64nvme_combine(hash_crc64nvme_update(0, data, cut),
                                               hash_crc64nvme_update(0, data + cut, rest),
                                               rest) == whole64);
    }
}

static void b64_be(uint64_t v, size_t len, char out[CHECKSUM_VALUE_MAX])
{
    uint8_t b[8];
    for (size_t i = len; i-- > 0; v >>= 8)
        b[i] = (uint8_t)v;
    hash_base64_encode(b, len, out);
}

static void test_of_parts(void **state)
{
    (void)state;
    fill();
    const size_t cut[] = {0, 1000, 2500, sizeof data}; /* three parts */
    char p32[3][CHECKSUM_VALUE_MAX], p64[3][CHECKSUM_VALUE_MAX], psha[3][CHECKSUM_VALUE_MAX];
    const char *c32[3], *c64[3], *csha[3];
    uint64_t sizes[3];
    uint8_t raw32[12], rawsha[3 * SHA256_LEN];
    for (int i = 0; i < 3; i++) {
        sizes[i] = cut[i + 1] - cut[i];
        uint32_t c = hash_crc32_ieee_update(0, data + cut[i], sizes[i]);
        b64_be(c, 4, p32[i]);
        for (int k = 0; k < 4; k++)
            raw32[4 * i + k] = (uint8_t)(c >> (24 - 8 * k));
        b64_be(hash_crc64nvme_update(0, data + cut[i], sizes[i]), 8, p64[i]);
        hash_sha256(data + cut[i], sizes[i], rawsha + SHA256_LEN * i);
        hash_base64_encode(rawsha + SHA256_LEN * i, SHA256_LEN, psha[i]);
        c32[i] = p32[i], c64[i] = p64[i], csha[i] = psha[i];
    }
    char out[CHECKSUM_VALUE_MAX], want[CHECKSUM_VALUE_MAX + 8], b64[CHECKSUM_VALUE_MAX];
    /* FULL_OBJECT: the CRC of all the bytes. */
    assert_int_equal(checksum_of_parts(CHECKSUM_CRC32, 1, c32, sizes, 3, out), 0);
    b64_be(hash_crc32_ieee_update(0, data, sizeof data), 4, want);
    assert_string_equal(out, want);
    assert_int_equal(checksum_of_parts(CHECKSUM_CRC64NVME, 1, c64, sizes, 3, out), 0);
    b64_be(hash_crc64nvme_update(0, data, sizeof data), 8, want);
    assert_string_equal(out, want);
    /* COMPOSITE: the algorithm over the parts' checksums, "-3". */
    assert_int_equal(checksum_of_parts(CHECKSUM_CRC32, 0, c32, sizes, 3, out), 0);
    b64_be(hash_crc32_ieee_update(0, raw32, sizeof raw32), 4, b64);
    snprintf(want, sizeof want, "%s-3", b64);
    assert_string_equal(out, want);
    assert_int_equal(checksum_of_parts(CHECKSUM_SHA256, 0, csha, sizes, 3, out), 0);
    uint8_t d[SHA256_LEN];
    hash_sha256(rawsha, sizeof rawsha, d);
    hash_base64_encode(d, SHA256_LEN, b64);
    snprintf(want, sizeof want, "%s-3", b64);
    assert_string_equal(out, want);
    /* The types S3 refuses, and a part checksum of the wrong length. */
    assert_int_equal(checksum_of_parts(CHECKSUM_SHA256, 1, csha, sizes, 3, out), -1);
    assert_int_equal(checksum_of_parts(CHECKSUM_CRC64NVME, 0, c64, sizes, 3, out), -1);
    assert_int_equal(checksum_of_parts(CHECKSUM_CRC32, 1, c64, sizes, 3, out), -1);
    assert_int_equal(checksum_of_parts(CHECKSUM_CRC32, 1, c32, sizes, 0, out), -1);
}

static void test_names(void **state)
{
    (void)state;
    assert_int_equal(checksum_alg_from_name("CRC64NVME"), CHECKSUM_CRC64NVME);
    assert_int_equal(checksum_alg_from_name("crc32"), CHECKSUM_NONE); /* S3's spelling only */
    assert_int_equal(checksum_alg_from_name(NULL), CHECKSUM_NONE);
    assert_string_equal(checksum_alg_name(CHECKSUM_SHA1), "SHA1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc_combine),
        cmocka_unit_test(test_of_parts),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
