/* Hashes, checksums and encodings against published test vectors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "common/hash.h"

static void test_crc32(void **state)
{
    (void)state;
    /* The CRC catalogue check values over "123456789". */
    assert_int_equal(hash_crc32_ieee_update(0, "123456789", 9), 0xCBF43926u);
    assert_int_equal(hash_crc32c_update(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(hash_crc32_ieee_update(0, "", 0), 0);
    assert_int_equal(hash_crc32c_update(0, "", 0), 0);
    /* RFC 3720 B.4: 32 bytes of zeros. */
    uint8_t zeros[32] = {0};
    assert_int_equal(hash_crc32c_update(0, zeros, sizeof(zeros)), 0x8A9136AAu);

    /* Chaining in pieces equals one shot, at every split point. */
    static uint8_t data[1000];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 31 + 7);
    uint32_t one = hash_crc32_ieee_update(0, data, sizeof(data));
    uint32_t onec = hash_crc32c_update(0, data, sizeof(data));
    for (size_t cut = 0; cut <= sizeof(data); cut += 37) {
        assert_int_equal(hash_crc32_ieee_update(hash_crc32_ieee_update(0, data, cut), data + cut,
                                                sizeof(data) - cut),
                         one);
        assert_int_equal(
            hash_crc32c_update(hash_crc32c_update(0, data, cut), data + cut, sizeof(data) - cut),
            onec);
    }
    uint32_t c = 0, cc = 0;
    for (size_t i = 0; i < sizeof(data); i++) {
        c = hash_crc32_ieee_update(c, data + i, 1);
        cc = hash_crc32c_update(cc, data + i, 1);
    }
    assert_int_equal(c, one);
    assert_int_equal(cc, onec);
}

/* Past 2 GiB in one call (ISA-L's iSCSI CRC takes an int length): the same
 * CRC as the pieces chained. The bytes are the zero page, mapped, not made. */
static void test_crc32c_beyond_int(void **state)
{
    (void)state;
    size_t len = ((size_t)2 << 30) + 16;
    void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    assert_true(m != MAP_FAILED);
    size_t half = (size_t)1 << 30;
    uint32_t pieces =
        hash_crc32c_update(hash_crc32c_update(0, m, half), (const uint8_t *)m + half, len - half);
    assert_int_equal(hash_crc32c_update(0, m, len), pieces);
    munmap(m, len);
}

/* CRC-64/NVME one bit at a time, straight from its definition: the
 * reference the table-driven hash_crc64nvme_update is checked against. */
static uint64_t crc64nvme_bitwise(const uint8_t *p, size_t n)
{
    uint64_t c = ~0ull;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int b = 0; b < 8; b++)
            c = c & 1 ? (c >> 1) ^ 0x9A6C9329AC4BC9B5ull : c >> 1;
    }
    return ~c;
}

static void test_crc64nvme(void **state)
{
    (void)state;
    /* The check value AWS documents for CRC64NVME (and the CRC catalogue). */
    assert_true(hash_crc64nvme_update(0, "123456789", 9) == 0xAE8B14860A799888ull);
    assert_true(hash_crc64nvme_update(0, "", 0) == 0);
    static uint8_t data[1003];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 131 + 17);
    /* Every length and alignment of the 8-byte path and its tail. */
    for (size_t off = 0; off < 9; off++)
        for (size_t n = 0; n + off <= sizeof(data); n += 61)
            assert_true(hash_crc64nvme_update(0, data + off, n) ==
                        crc64nvme_bitwise(data + off, n));
    uint64_t one = hash_crc64nvme_update(0, data, sizeof(data));
    for (size_t cut = 0; cut <= sizeof(data); cut += 37)
        assert_true(hash_crc64nvme_update(hash_crc64nvme_update(0, data, cut), data + cut,
                                          sizeof(data) - cut) == one);
}

static void expect_hex(const uint8_t *d, size_t n, const char *want)
{
    char hx[2 * SHA256_LEN + 1];
    hash_hex_encode(d, n, hx);
    assert_string_equal(hx, want);
}

static void test_digests(void **state)
{
    (void)state;
    uint8_t h[SHA256_LEN];
    hash_sha256("", 0, h);
    expect_hex(h, SHA256_LEN, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    hash_sha256("abc", 3, h);
    expect_hex(h, SHA256_LEN, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");

    /* RFC 4231 test case 2. */
    hash_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, h);
    expect_hex(h, SHA256_LEN, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");

    /* RFC 2202 HMAC-SHA1 test case 2 (Signature Version 2's MAC). */
    uint8_t h1[SHA1_LEN];
    hash_hmac_sha1("Jefe", 4, "what do ya want for nothing?", 28, h1);
    expect_hex(h1, SHA1_LEN, "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");

    /* RFC 1321 MD5 vectors, incrementally and in pieces. */
    uint8_t m[MD5_LEN];
    digest_t *d = hash_digest_md5_new();
    assert_non_null(d);
    hash_digest_final(d, m);
    expect_hex(m, MD5_LEN, "d41d8cd98f00b204e9800998ecf8427e");
    d = hash_digest_md5_new();
    hash_digest_update(d, "message ", 8);
    hash_digest_update(d, "", 0);
    hash_digest_update(d, "digest", 6);
    hash_digest_final(d, m);
    expect_hex(m, MD5_LEN, "f96b697d7cb7938d525a2f31aaf161d0");

    /* FIPS 180 SHA-1 "abc", in two pieces. */
    uint8_t s1[SHA1_LEN];
    d = hash_digest_sha1_new();
    assert_non_null(d);
    hash_digest_update(d, "a", 1);
    hash_digest_update(d, "bc", 2);
    hash_digest_final(d, s1);
    expect_hex(s1, SHA1_LEN, "a9993e364706816aba3e25717850c26c9cd0d89d");

    d = hash_digest_sha256_new();
    hash_digest_update(d, "a", 1);
    hash_digest_update(d, "bc", 2);
    hash_digest_final(d, h);
    expect_hex(h, SHA256_LEN, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");

    hash_digest_free(hash_digest_sha256_new());
    hash_digest_free(NULL);
}

static void test_hex(void **state)
{
    (void)state;
    const uint8_t in[] = {0x00, 0x01, 0xab, 0xff};
    char out[9];
    hash_hex_encode(in, 4, out);
    assert_string_equal(out, "0001abff");
    hash_hex_encode(in, 0, out);
    assert_string_equal(out, "");
    uint8_t back[4];
    assert_int_equal(hash_hex_decode("0001ABff", 8, back, 4), 0);
    assert_memory_equal(back, in, 4);
    assert_int_equal(hash_hex_decode("0001abf", 7, back, 4), -1);
    assert_int_equal(hash_hex_decode("0001abfg", 8, back, 4), -1);
    assert_int_equal(hash_hex_decode("0001abff00", 10, back, 4), -1);
    assert_int_equal(hash_hex_decode(" 001abff", 8, back, 4), -1);
}

static void test_base64(void **state)
{
    (void)state;
    /* RFC 4648 §10. */
    const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    const char *enc[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    const char *encu[] = {"", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE", "Zm9vYmFy"};
    for (size_t i = 0; i < 7; i++) {
        char out[16];
        uint8_t back[16];
        size_t n = strlen(plain[i]);
        assert_int_equal(hash_base64_encode((const uint8_t *)plain[i], n, out), strlen(enc[i]));
        assert_string_equal(out, enc[i]);
        assert_int_equal(hash_base64_decode(enc[i], strlen(enc[i]), back, sizeof(back)), (long)n);
        assert_memory_equal(back, plain[i], n);
        assert_int_equal(hash_base64url_encode((const uint8_t *)plain[i], n, out), strlen(encu[i]));
        assert_string_equal(out, encu[i]);
        assert_int_equal(hash_base64url_decode(encu[i], strlen(encu[i]), back, sizeof(back)),
                         (long)n);
        assert_memory_equal(back, plain[i], n);
    }

    /* base64url uses - and _ where base64 has + and /. */
    const uint8_t odd[] = {0xfb, 0xff, 0xbf};
    char out[8];
    hash_base64_encode(odd, 3, out);
    assert_string_equal(out, "+/+/");
    hash_base64url_encode(odd, 3, out);
    assert_string_equal(out, "-_-_");
    uint8_t back[8];
    assert_int_equal(hash_base64url_decode("-_-_", 4, back, sizeof(back)), 3);
    assert_memory_equal(back, odd, 3);

    /* Round trips over every length and byte value. */
    uint8_t data[300], dec[300];
    char txt[512];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(255 - i);
    for (size_t len = 0; len <= sizeof(data); len += 7) {
        size_t n = hash_base64_encode(data, len, txt);
        assert_int_equal(n, 4 * ((len + 2) / 3));
        assert_int_equal(hash_base64_decode(txt, n, dec, sizeof(dec)), (long)len);
        assert_memory_equal(dec, data, len);
        n = hash_base64url_encode(data, len, txt);
        assert_null(memchr(txt, '=', n));
        assert_int_equal(hash_base64url_decode(txt, n, dec, sizeof(dec)), (long)len);
        assert_memory_equal(dec, data, len);
    }

    /* Malformed. */
    const char *bad[] = {"Zg=", "Zm9", "Zm9v!A==", "Zm 9v", "Zm9v\nYmFy", "Zm9v-_==", "\x80\x80=="};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(hash_base64_decode(bad[i], strlen(bad[i]), back, sizeof(back)), -1);
    assert_int_equal(hash_base64url_decode("Z", 1, back, sizeof(back)), -1);
    assert_int_equal(hash_base64url_decode("Zg==", 4, back, sizeof(back)), -1);
    assert_int_equal(hash_base64url_decode("+/+/", 4, back, sizeof(back)), -1);
    assert_int_equal(hash_base64url_decode("Zm!v", 4, back, sizeof(back)), -1);
    /* Output bound respected. */
    assert_int_equal(hash_base64_decode("Zm9vYmFy", 8, back, 5), -1);
    assert_int_equal(hash_base64url_decode("Zm9vYmFy", 8, back, 5), -1);
    assert_int_equal(hash_base64_decode("Zm9vYmFy", 8, back, 6), 6);
}

/* Padding in the wrong place or too much of it (EVP_DecodeBlock alone
 * accepts these: hash_base64_decode must validate first). */
static void test_base64_strict_padding(void **state)
{
    (void)state;
    uint8_t back[16];
    const char *bad[] = {"Z===", "Zg=a", "=Zg=", "Zm9vYmFy====", "Zm=v"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(hash_base64_decode(bad[i], strlen(bad[i]), back, sizeof(back)), -1);
}

static void test_random_and_ct(void **state)
{
    (void)state;
    uint8_t a[32] = {0}, b[32] = {0};
    assert_int_equal(hash_random_bytes(a, sizeof(a)), 0);
    assert_int_equal(hash_random_bytes(b, sizeof(b)), 0);
    assert_memory_not_equal(a, b, sizeof(a));
    assert_int_equal(hash_ct_equal("abc", "abc", 3), 1);
    assert_int_equal(hash_ct_equal("abc", "abd", 3), 0);
    assert_int_equal(hash_ct_equal("abc", "xyz", 0), 1);
}

/* hash_random_hex: 2*len lower-case hex digits and a NUL, beyond one
 * 32-byte chunk too, and nothing written past them. */
static void test_random_hex(void **state)
{
    (void)state;
    char a[2 * 40 + 2], b[2 * 40 + 2];
    memset(a, 'x', sizeof a);
    assert_int_equal(hash_random_hex(40, a), 0);
    assert_int_equal(a[80], '\0');
    assert_int_equal(a[81], 'x');
    for (size_t i = 0; i < 80; i++)
        assert_true((a[i] >= '0' && a[i] <= '9') || (a[i] >= 'a' && a[i] <= 'f'));
    assert_int_equal(hash_random_hex(40, b), 0);
    assert_string_not_equal(a, b);
    assert_int_equal(hash_random_hex(0, b), 0);
    assert_string_equal(b, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32),
        cmocka_unit_test(test_crc32c_beyond_int),
        cmocka_unit_test(test_crc64nvme),
        cmocka_unit_test(test_digests),
        cmocka_unit_test(test_hex),
        cmocka_unit_test(test_base64),
        cmocka_unit_test(test_base64_strict_padding),
        cmocka_unit_test(test_random_and_ct),
        cmocka_unit_test(test_random_hex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
