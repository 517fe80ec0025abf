/* aws-chunked body decoder (src/s3/awschunked.h) in its three modes: signed
 * chunks, signed chunks + signed trailer, unsigned chunks + trailer. Each
 * input runs through all three. Byte 0 picks where the body is split into
 * two feeds (so line and chunk state must survive a boundary anywhere);
 * the rest is the body. Signed modes use a fixed key (the Amazon S3
 * documentation's example secret, date and scope; seeds below) so corpus
 * entries with valid signatures get past verification. Invariants: the
 * bytes handed to the callback equal s3_awschunk_decoded_bytes() and never
 * exceed the raw body length; errors are sticky; finish after an OK feed
 * returns a defined status. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/sigv4.h"
#include "fuzz_util.h"
#include "s3/awschunked.h"

#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define DATE   "20130524T000000Z"
#define SCOPE  "20130524/us-east-1/s3/aws4_request"
#define SEED   "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
#define T_SEED "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e"

static uint8_t g_key[SHA256_LEN];

typedef struct sink {
    uint64_t bytes;
    uint8_t last; /* touch every byte so ASan sees reads past the chunk */
} sink_t;

static int emit(void *ctx, const void *data, size_t len)
{
    sink_t *s = ctx;
    const uint8_t *p = data;
    for (size_t i = 0; i < len; i++)
        s->last ^= p[i];
    s->bytes += len;
    return 0;
}

static void run(const awschunk_params_t *p, const uint8_t *body, size_t len, size_t split)
{
    sink_t sink = {0, 0};
    awschunk_t *d = s3_awschunk_new(p, emit, &sink);
    if (!d)
        return;
    awschunk_status_t st = s3_awschunk_feed(d, body, split);
    awschunk_status_t st2 = s3_awschunk_feed(d, body + split, len - split);
    if (st != AWSCHUNK_OK)
        FUZZ_CHECK(st2 == st); /* errors are sticky */
    awschunk_status_t fin = s3_awschunk_finish(d);
    FUZZ_CHECK(fin <= AWSCHUNK_ERR_CALLBACK);
    if (st2 != AWSCHUNK_OK)
        FUZZ_CHECK(fin != AWSCHUNK_OK);
    FUZZ_CHECK(sink.bytes == s3_awschunk_decoded_bytes(d));
    FUZZ_CHECK(sink.bytes <= len);
    if (fin == AWSCHUNK_OK && p->trailer) {
        const char *v = s3_awschunk_trailer(d, "x-amz-checksum-crc32c");
        if (v)
            FUZZ_CHECK(strlen(v) < len);
    }
    s3_awschunk_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static bool init;
    if (!init) {
        sigv4_signing_key(SECRET, "20130524", "us-east-1", "s3", g_key);
        init = true;
    }
    const uint8_t *body = data + 1;
    size_t len = size - 1;
    size_t split = len ? (size_t)data[0] * len / 255 : 0;

    awschunk_params_t signed_p = {
        .signed_chunks = true,
        .trailer = false,
        .signing_key = g_key,
        .amz_date = DATE,
        .scope = SCOPE,
        .seed_signature = SEED,
        .decoded_length = UINT64_MAX,
    };
    run(&signed_p, body, len, split);

    awschunk_params_t signed_t = signed_p;
    signed_t.trailer = true;
    signed_t.seed_signature = T_SEED;
    run(&signed_t, body, len, split);

    awschunk_params_t unsigned_t = {
        .signed_chunks = false,
        .trailer = true,
        .decoded_length = UINT64_MAX,
    };
    run(&unsigned_t, body, len, split);
    /* And once with a declared decoded length (the low bits of byte 0). */
    unsigned_t.decoded_length = data[0] & 0x3f;
    run(&unsigned_t, body, len, split);
    return 0;
}
