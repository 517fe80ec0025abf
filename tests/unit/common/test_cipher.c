/* AES-256-CTR by offset and AES key wrap: the published vectors (NIST SP
 * 800-38A F.5.5, RFC 3394 4.6), the counter carrying across bytes, and any
 * split of a stream at any offsets giving the same bytes as one pass. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/cipher.h"
#include "common/hash.h"

static void unhex(const char *h, uint8_t *out)
{
    assert_int_equal(hash_hex_decode(h, strlen(h), out, strlen(h) / 2), 0);
}

static void test_ctr_vector(void **state)
{
    (void)state;
    uint8_t key[32], iv[16], pt[32], ct[32], want[32];
    unhex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4", key);
    unhex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff", iv);
    unhex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51", pt);
    unhex("601ec313775789a5b7a7f504bbf3d228f443e3ca4d62b59aca84e990cacaf5c5", want);
    assert_int_equal(cipher_aes256_ctr_at(key, iv, 0, pt, ct, 32), 0);
    assert_memory_equal(ct, want, 32);
    /* The second block alone, from its offset; and from inside it. */
    assert_int_equal(cipher_aes256_ctr_at(key, iv, 16, pt + 16, ct, 16), 0);
    assert_memory_equal(ct, want + 16, 16);
    assert_int_equal(cipher_aes256_ctr_at(key, iv, 21, pt + 21, ct, 11), 0);
    assert_memory_equal(ct, want + 21, 11);
    /* In place: decrypting gives the plaintext back. */
    memcpy(ct, want, 32);
    assert_int_equal(cipher_aes256_ctr_at(key, iv, 0, ct, ct, 32), 0);
    assert_memory_equal(ct, pt, 32);
}

static void test_ctr_splits(void **state)
{
    (void)state;
    uint8_t key[32], iv[16];
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)(i * 7 + 1);
    /* The counter's low bytes about to carry into the higher ones. */
    memset(iv, 0, sizeof iv);
    memset(iv + 8, 0xFF, 8);
    iv[15] = 0xF0;
    enum { N = 5000 };
    static uint8_t pt[N], whole[N], parts[N];
    for (int i = 0; i < N; i++)
        pt[i] = (uint8_t)(i * 31 + (i >> 8));
    assert_int_equal(cipher_aes256_ctr_at(key, iv, 0, pt, whole, N), 0);
    static const size_t cuts[] = {1, 15, 16, 17, 33, 1000, 4096, N};
    size_t at = 0;
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0] && at < N; c++) {
        size_t end = cuts[c] < N ? cuts[c] : N;
        if (end <= at)
            continue;
        assert_int_equal(cipher_aes256_ctr_at(key, iv, at, pt + at, parts + at, end - at), 0);
        at = end;
    }
    assert_memory_equal(parts, whole, N);
    /* A block past the carry equals one computed from the carried counter. */
    uint8_t iv2[16];
    memcpy(iv2, iv, 16);
    memset(iv2 + 8, 0, 8);
    iv2[7] = 1; /* iv + 16 blocks */
    uint8_t a[16], b[16];
    assert_int_equal(cipher_aes256_ctr_at(key, iv, 16 * 16, pt, a, 16), 0);
    assert_int_equal(cipher_aes256_ctr_at(key, iv2, 0, pt, b, 16), 0);
    assert_memory_equal(a, b, 16);
    assert_int_equal(cipher_aes256_ctr_at(key, iv, 7, pt, a, 0), 0);
}

static void test_wrap_vector(void **state)
{
    (void)state;
    uint8_t kek[32], key[32], want[40], got[40], back[32];
    unhex("000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F", kek);
    unhex("00112233445566778899AABBCCDDEEFF000102030405060708090A0B0C0D0E0F", key);
    unhex("28C9F404C4B810F4CBCCB35CFB87F8263F5786E2D80ED326CBC7F0E71A99F43BFB988B9B7A02DD21", want);
    assert_int_equal(cipher_aes256_wrap(kek, key, got), 0);
    assert_memory_equal(got, want, 40);
    assert_int_equal(cipher_aes256_unwrap(kek, got, back), 0);
    assert_memory_equal(back, key, 32);
    /* Another KEK, or a changed byte: refused, and nothing leaks out. */
    kek[0] ^= 1;
    assert_int_equal(cipher_aes256_unwrap(kek, got, back), -1);
    kek[0] ^= 1;
    got[39] ^= 0x80;
    assert_int_equal(cipher_aes256_unwrap(kek, got, back), -1);
    static const uint8_t zero[32];
    assert_memory_equal(back, zero, 32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctr_vector),
        cmocka_unit_test(test_ctr_splits),
        cmocka_unit_test(test_wrap_vector),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
