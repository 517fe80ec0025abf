/* The encoders/decoders of src/common/hash.h: hash_base64_decode, hash_base64url_decode
 * and hash_hex_decode on arbitrary input, plus encode/decode round trips of the
 * raw input. Invariants: a decode never reports more than out_max bytes (and
 * writes nothing past it: a canary follows the output), its length matches
 * the input length and padding, re-encoding a decoded value decodes to the
 * same bytes, and decode(encode(x)) == x for every x. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/hash.h"
#include "fuzz_util.h"

#define CANARY 16

static uint8_t *canary_buf(size_t n)
{
    uint8_t *b = malloc(n + CANARY);
    if (!b)
        abort();
    memset(b, 0xa5, n + CANARY);
    return b;
}

static void canary_ok(const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < CANARY; i++)
        FUZZ_CHECK(b[n + i] == 0xa5);
}

static void b64(const char *in, size_t len, size_t out_max, int url)
{
    uint8_t *out = canary_buf(out_max);
    long n = url ? hash_base64url_decode(in, len, out, out_max)
                 : hash_base64_decode(in, len, out, out_max);
    canary_ok(out, out_max);
    if (n >= 0) {
        FUZZ_CHECK((size_t)n <= out_max);
        FUZZ_CHECK((size_t)n <= len / 4 * 3 + 2);
        if (!url) {
            size_t pad = (len && in[len - 1] == '=') + (len > 1 && in[len - 2] == '=');
            FUZZ_CHECK((size_t)n == len / 4 * 3 - pad);
        } else {
            FUZZ_CHECK((size_t)n == len * 3 / 4);
        }
        char *enc = malloc(4 * (((size_t)n + 2) / 3) + 1);
        size_t e = url ? hash_base64url_encode(out, (size_t)n, enc)
                       : hash_base64_encode(out, (size_t)n, enc);
        FUZZ_CHECK(strlen(enc) == e);
        FUZZ_CHECK(url ? e == len : e == len);
        uint8_t *again = canary_buf((size_t)n);
        long m = url ? hash_base64url_decode(enc, e, again, (size_t)n)
                     : hash_base64_decode(enc, e, again, (size_t)n);
        FUZZ_CHECK(m == n && memcmp(again, out, (size_t)n) == 0);
        canary_ok(again, (size_t)n);
        free(again);
        free(enc);
    }
    free(out);
}

static void roundtrip(const uint8_t *data, size_t size)
{
    char *enc = malloc(4 * ((size + 2) / 3) + 1);
    for (int url = 0; url < 2; url++) {
        size_t e =
            url ? hash_base64url_encode(data, size, enc) : hash_base64_encode(data, size, enc);
        if (url && e > 16384)
            continue; /* hash_base64url_decode's documented input cap */
        uint8_t *out = canary_buf(size);
        long n =
            url ? hash_base64url_decode(enc, e, out, size) : hash_base64_decode(enc, e, out, size);
        FUZZ_CHECK(n == (long)size && memcmp(out, data, size) == 0);
        canary_ok(out, size);
        if (size) /* one byte short must fail */
            FUZZ_CHECK((url ? hash_base64url_decode(enc, e, out, size - 1)
                            : hash_base64_decode(enc, e, out, size - 1)) == -1);
        free(out);
    }
    free(enc);

    char *hex = malloc(2 * size + 1);
    hash_hex_encode(data, size, hex);
    FUZZ_CHECK(strlen(hex) == 2 * size);
    uint8_t *out = canary_buf(size);
    FUZZ_CHECK(hash_hex_decode(hex, 2 * size, out, size) == 0 && memcmp(out, data, size) == 0);
    canary_ok(out, size);
    free(out);
    free(hex);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t out_max = data[0]; /* byte 0: the decoder's output limit */
    char *in = fuzz_cstr(data + 1, size - 1);
    size_t len = size - 1;

    b64(in, len, out_max, 0);
    b64(in, len, out_max, 1);
    b64(in, len, len, 0);
    b64(in, len, len, 1);

    uint8_t *out = canary_buf(len / 2 + 1);
    if (hash_hex_decode(in, len, out, len / 2) == 0) {
        FUZZ_CHECK(len % 2 == 0);
        for (size_t i = 0; i < len; i++)
            FUZZ_CHECK(hash_hex_digit_value(in[i]) >= 0);
    }
    canary_ok(out, len / 2 + 1);
    free(out);
    free(in);

    roundtrip(data, size);
    return 0;
}
