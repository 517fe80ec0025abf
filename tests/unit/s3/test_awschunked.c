/* aws-chunked decoding against the Amazon S3 documentation's examples
 * ("Transferring Payload in Multiple Chunks" and "Including Trailing
 * Headers"), the SDKs' unsigned-trailer form, and broken input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/sigv4.h"
#include "s3/awschunked.h"

#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define DATE   "20130524T000000Z"
#define SCOPE  "20130524/us-east-1/s3/aws4_request"

#define SEED       "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
#define SIG1       "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
#define SIG2       "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
#define SIG3       "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"
#define T_SEED     "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e"
#define T_SIG1     "b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2"
#define T_SIG2     "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7"
#define T_SIG3     "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992"
#define T_TRAILSIG "d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435"

static uint8_t g_key[SHA256_LEN];

typedef struct sink {
    buf_t out;
    int fail_after; /* calls before the callback refuses; -1 never */
} sink_t;

static int collect(void *ctx, const void *data, size_t len)
{
    sink_t *s = ctx;
    if (s->fail_after == 0)
        return 1;
    if (s->fail_after > 0)
        s->fail_after--;
    return buf_append(&s->out, data, len);
}

/* The documentation's body: 64 KiB and 1 KiB of 'a', then the final chunk
 * and, in the trailer form, the signed trailer. */
static void doc_body(buf_t *b, bool trailer)
{
    static char a[65536];
    memset(a, 'a', sizeof(a));
    buf_init(b, 1 << 20);
    buf_printf(b, "10000;chunk-signature=%s\r\n", trailer ? T_SIG1 : SIG1);
    buf_append(b, a, 65536);
    buf_printf(b, "\r\n400;chunk-signature=%s\r\n", trailer ? T_SIG2 : SIG2);
    buf_append(b, a, 1024);
    buf_printf(b, "\r\n0;chunk-signature=%s\r\n", trailer ? T_SIG3 : SIG3);
    if (trailer)
        buf_printf(b, "x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:%s\r\n",
                   T_TRAILSIG);
    buf_append_str(b, "\r\n");
}

static awschunk_params_t signed_params(bool trailer)
{
    awschunk_params_t p = {
        .signed_chunks = true,
        .trailer = trailer,
        .signing_key = g_key,
        .amz_date = DATE,
        .scope = SCOPE,
        .seed_signature = trailer ? T_SEED : SEED,
        .decoded_length = 66560,
    };
    return p;
}

static awschunk_params_t unsigned_params(uint64_t decoded_length)
{
    awschunk_params_t p = {.trailer = true, .decoded_length = decoded_length};
    return p;
}

/* Feeds body in pieces of `step` bytes (0: all at once) and finishes. */
static awschunk_status_t decode(const awschunk_params_t *p, const char *body, size_t len,
                                size_t step, sink_t *s, awschunk_t **d_p)
{
    buf_init(&s->out, 1 << 20);
    awschunk_t *d = s3_awschunk_new(p, collect, s);
    assert_non_null(d);
    awschunk_status_t st = AWSCHUNK_OK;
    if (step == 0)
        step = len ? len : 1;
    for (size_t off = 0; off < len && st == AWSCHUNK_OK; off += step)
        st = s3_awschunk_feed(d, body + off, len - off < step ? len - off : step);
    if (st == AWSCHUNK_OK)
        st = s3_awschunk_finish(d);
    if (d_p)
        *d_p = d;
    else
        s3_awschunk_free(d);
    return st;
}

static void check_doc_payload(const sink_t *s)
{
    assert_int_equal(s->out.len, 66560);
    for (size_t i = 0; i < s->out.len; i++) {
        if (s->out.data[i] != 'a')
            fail_msg("byte %zu is %d", i, s->out.data[i]);
    }
}

static void test_doc_example(void **state)
{
    (void)state;
    buf_t body;
    doc_body(&body, false);
    assert_int_equal(body.len, 66824); /* the documented Content-Length */
    awschunk_params_t p = signed_params(false);
    const size_t steps[] = {0, 1, 2, 3, 7, 100, 4096, 65537};
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        sink_t s = {.fail_after = -1};
        awschunk_t *d;
        assert_int_equal(decode(&p, body.data, body.len, steps[i], &s, &d), AWSCHUNK_OK);
        check_doc_payload(&s);
        assert_int_equal(s3_awschunk_decoded_bytes(d), 66560);
        assert_null(s3_awschunk_trailer(d, "x-amz-checksum-crc32"));
        s3_awschunk_free(d);
        buf_free(&s.out);
    }
    buf_free(&body);
}

static void test_doc_example_random_splits(void **state)
{
    (void)state;
    buf_t body;
    doc_body(&body, false);
    awschunk_params_t p = signed_params(false);
    srand(12345);
    for (int round = 0; round < 200; round++) {
        sink_t s = {.fail_after = -1};
        buf_init(&s.out, 1 << 20);
        awschunk_t *d = s3_awschunk_new(&p, collect, &s);
        size_t off = 0;
        while (off < body.len) {
            size_t n = (size_t)rand() % 300 + 1;
            if (round % 2)
                n = (size_t)rand() % 70000 + 1;
            if (n > body.len - off)
                n = body.len - off;
            assert_int_equal(s3_awschunk_feed(d, body.data + off, n), AWSCHUNK_OK);
            off += n;
        }
        assert_int_equal(s3_awschunk_finish(d), AWSCHUNK_OK);
        check_doc_payload(&s);
        s3_awschunk_free(d);
        buf_free(&s.out);
    }
    buf_free(&body);
}

static void test_params_are_copied(void **state)
{
    (void)state;
    buf_t body;
    doc_body(&body, false);
    char date[] = DATE, scope[] = SCOPE, seed[] = SEED;
    uint8_t key[SHA256_LEN];
    memcpy(key, g_key, SHA256_LEN);
    awschunk_params_t p = signed_params(false);
    p.amz_date = date;
    p.scope = scope;
    p.seed_signature = seed;
    p.signing_key = key;
    sink_t s = {.fail_after = -1};
    buf_init(&s.out, 1 << 20);
    awschunk_t *d = s3_awschunk_new(&p, collect, &s);
    memset(date, 'x', sizeof(date) - 1);
    memset(scope, 'x', sizeof(scope) - 1);
    memset(seed, 'x', sizeof(seed) - 1);
    memset(key, 0, sizeof(key));
    assert_int_equal(s3_awschunk_feed(d, body.data, body.len), AWSCHUNK_OK);
    assert_int_equal(s3_awschunk_finish(d), AWSCHUNK_OK);
    s3_awschunk_free(d);
    buf_free(&s.out);
    buf_free(&body);
}

static void tamper_expect(buf_t *body, const char *find, size_t at, char with,
                          awschunk_status_t want)
{
    char *hit = memmem(body->data, body->len, find, strlen(find));
    assert_non_null(hit);
    char saved = hit[at];
    hit[at] = with;
    awschunk_params_t p = signed_params(false);
    sink_t s = {.fail_after = -1};
    assert_int_equal(decode(&p, body->data, body->len, 0, &s, NULL), want);
    buf_free(&s.out);
    s.fail_after = -1;
    assert_int_equal(decode(&p, body->data, body->len, 1, &s, NULL), want);
    buf_free(&s.out);
    hit[at] = saved;
}

static void test_tampered(void **state)
{
    (void)state;
    buf_t body;
    doc_body(&body, false);
    tamper_expect(&body, SIG1, 10, SIG1[10] == '0' ? '1' : '0', AWSCHUNK_ERR_SIGNATURE);
    tamper_expect(&body, SIG2, 63, SIG2[63] == '0' ? '1' : '0', AWSCHUNK_ERR_SIGNATURE);
    tamper_expect(&body, SIG3, 0, SIG3[0] == '0' ? '1' : '0', AWSCHUNK_ERR_SIGNATURE);
    /* A data byte changed: the chunk's hash no longer matches. */
    tamper_expect(&body, "aaaa\r\n0;", 0, 'b', AWSCHUNK_ERR_SIGNATURE);
    /* Chunks swapped in order would chain wrongly: seed from elsewhere. */
    awschunk_params_t p = signed_params(false);
    p.seed_signature = T_SEED;
    sink_t s = {.fail_after = -1};
    assert_int_equal(decode(&p, body.data, body.len, 0, &s, NULL), AWSCHUNK_ERR_SIGNATURE);
    buf_free(&s.out);
    /* The wrong key. */
    uint8_t saved[SHA256_LEN];
    memcpy(saved, g_key, SHA256_LEN);
    g_key[0] ^= 1;
    p = signed_params(false);
    assert_int_equal(decode(&p, body.data, body.len, 0, &s, NULL), AWSCHUNK_ERR_SIGNATURE);
    buf_free(&s.out);
    memcpy(g_key, saved, SHA256_LEN);
    /* Upper-case hex signatures are the same signatures. */
    char *hit = memmem(body.data, body.len, SIG2, 64);
    for (int i = 0; i < 64; i++)
        hit[i] = (char)(hit[i] >= 'a' && hit[i] <= 'f' ? hit[i] - 'a' + 'A' : hit[i]);
    assert_int_equal(decode(&p, body.data, body.len, 0, &s, NULL), AWSCHUNK_OK);
    buf_free(&s.out);
    buf_free(&body);
}

static void test_truncated(void **state)
{
    (void)state;
    buf_t body;
    doc_body(&body, false);
    awschunk_params_t p = signed_params(false);
    /* Every cut short of the end, sampled: in a size line, in data, in the
     * CRLFs, and just before the last byte. */
    const size_t cuts[] = {0,     1,     5,     86,    87,    1000,  65622, 65623,
                           65624, 65700, 66720, 66722, 66730, 66821, 66822, 66823};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        sink_t s = {.fail_after = -1};
        awschunk_status_t st = decode(&p, body.data, cuts[i], 0, &s, NULL);
        if (st != AWSCHUNK_ERR_TRUNCATED)
            fail_msg("cut at %zu: status %d", cuts[i], st);
        buf_free(&s.out);
    }
    buf_free(&body);

    /* Unsigned trailer form cut before its closing blank line. */
    const char *u = "3\r\nabc\r\n0\r\nx-amz-checksum-crc32:NSRBwg==\r\n";
    awschunk_params_t up = unsigned_params(3);
    sink_t s = {.fail_after = -1};
    assert_int_equal(decode(&up, u, strlen(u), 0, &s, NULL), AWSCHUNK_ERR_TRUNCATED);
    buf_free(&s.out);
    assert_int_equal(decode(&up, u, strlen(u) - 1, 0, &s, NULL), AWSCHUNK_ERR_TRUNCATED);
    buf_free(&s.out);
}

static void expect_unsigned(const char *body, bool trailer, uint64_t dlen, awschunk_status_t want)
{
    awschunk_params_t p = unsigned_params(dlen);
    p.trailer = trailer;
    for (size_t step = 0; step <= 1; step++) {
        sink_t s = {.fail_after = -1};
        awschunk_status_t st = decode(&p, body, strlen(body), step, &s, NULL);
        if (st != want)
            fail_msg("%s: status %d, want %d", body, st, want);
        buf_free(&s.out);
    }
}

static void test_malformed(void **state)
{
    (void)state;
    const awschunk_status_t M = AWSCHUNK_ERR_MALFORMED;
    expect_unsigned("zz\r\nabc\r\n0\r\n\r\n", false, UINT64_MAX, M);
    expect_unsigned("\r\n", false, UINT64_MAX, M);
    expect_unsigned(";x\r\n", false, UINT64_MAX, M);
    expect_unsigned("3 \r\nabc\r\n0\r\n\r\n", false, UINT64_MAX, M);
    expect_unsigned("ffffffffffffffffffffffff\r\n", false, UINT64_MAX, M);
    expect_unsigned("10000000000000001\r\n", false, UINT64_MAX, M);
    expect_unsigned("1000001\r\n", false, UINT64_MAX, M); /* 16 MiB + 1 */
    expect_unsigned("3\nabc\r\n0\r\n\r\n", false, UINT64_MAX, M);
    expect_unsigned("3\rabc\r\n0\r\n\r\n", false, UINT64_MAX, M);
    expect_unsigned("3\r\nabcX\r\n0\r\n\r\n", false, UINT64_MAX, M);
    expect_unsigned("3\r\nabc\rX0\r\n\r\n", false, UINT64_MAX, M);
    expect_unsigned("3\r\nabc\r\n0\r\nX\r\n", false, UINT64_MAX, M);
    expect_unsigned("3\r\nabc\r\n0\r\n\r\nextra", false, UINT64_MAX, M);
    expect_unsigned("3\r\nabc\r\n0\r\nno-colon\r\n\r\n", true, UINT64_MAX, M);
    expect_unsigned("3\r\nabc\r\n0\r\n:v\r\n\r\n", true, UINT64_MAX, M);
    expect_unsigned("3\r\nabc\r\n0\r\nbad name:v\r\n\r\n", true, UINT64_MAX, M);
    expect_unsigned("3\r\nabc\r\n0\r\nx:a\x01b\r\n\r\n", true, UINT64_MAX, M);
    /* Extensions on unsigned chunks are allowed and ignored. */
    expect_unsigned("3;foo=bar\r\nabc\r\n0\r\n\r\n", false, UINT64_MAX, AWSCHUNK_OK);
    /* Exactly the limit is fine as a size (and then truncated here). */
    expect_unsigned("1000000\r\n", false, UINT64_MAX, AWSCHUNK_ERR_TRUNCATED);

    /* An over-long line, size or trailer. */
    char *longline = malloc(5000);
    memset(longline, '0', 4990);
    strcpy(longline + 4990, "3\r\nabc\r\n");
    expect_unsigned(longline, false, UINT64_MAX, M);
    strcpy(longline, "0\r\nx-amz-a:");
    memset(longline + 11, 'v', 4000);
    strcpy(longline + 4011, "\r\n\r\n");
    expect_unsigned(longline, true, UINT64_MAX, M);
    free(longline);

    /* Too many trailers. */
    buf_t b;
    buf_init(&b, 1 << 16);
    buf_append_str(&b, "0\r\n");
    for (int i = 0; i < 40; i++)
        buf_printf(&b, "x-amz-t%d:v\r\n", i);
    buf_append_str(&b, "\r\n");
    expect_unsigned(b.data, true, UINT64_MAX, M);
    buf_free(&b);

    /* Signed chunks: the signature extension is required and exact. */
    awschunk_params_t p = signed_params(false);
    p.decoded_length = UINT64_MAX;
    const char *bad[] = {
        "0\r\n\r\n",
        "0;chunk-signature=\r\n\r\n",
        "0;chunk-signature=" SIG3 "0\r\n\r\n",
        "0;chunk-signature=" SIG3 ";x=y\r\n\r\n",
        "0;chunk-signatur=" SIG3 "\r\n\r\n",
        "0;chunk-signature=zz6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sink_t s = {.fail_after = -1};
        assert_int_equal(decode(&p, bad[i], strlen(bad[i]), 0, &s, NULL), M);
        buf_free(&s.out);
    }
}

static void test_length(void **state)
{
    (void)state;
    buf_t body;
    doc_body(&body, false);
    awschunk_params_t p = signed_params(false);
    sink_t s = {.fail_after = -1};
    p.decoded_length = 66561;
    assert_int_equal(decode(&p, body.data, body.len, 0, &s, NULL), AWSCHUNK_ERR_LENGTH);
    buf_free(&s.out);
    /* Too much is caught as soon as a size line says so, before any data. */
    p.decoded_length = 1000;
    assert_int_equal(decode(&p, body.data, body.len, 0, &s, NULL), AWSCHUNK_ERR_LENGTH);
    assert_int_equal(s.out.len, 0);
    buf_free(&s.out);
    /* Absent length: anything goes. */
    p.decoded_length = UINT64_MAX;
    assert_int_equal(decode(&p, body.data, body.len, 0, &s, NULL), AWSCHUNK_OK);
    buf_free(&s.out);
    buf_free(&body);

    expect_unsigned("3\r\nabc\r\n0\r\n\r\n", true, 4, AWSCHUNK_ERR_LENGTH);
    expect_unsigned("3\r\nabc\r\n0\r\n\r\n", true, 2, AWSCHUNK_ERR_LENGTH);
}

static void test_unsigned_trailer(void **state)
{
    (void)state;
    /* CRC-32 of "abc" is 0x352441c2, base64 "NSRBwg==". */
    uint8_t crc[4];
    uint32_t c = hash_crc32_ieee_update(0, "abc", 3);
    crc[0] = (uint8_t)(c >> 24);
    crc[1] = (uint8_t)(c >> 16);
    crc[2] = (uint8_t)(c >> 8);
    crc[3] = (uint8_t)c;
    char b64[16];
    hash_base64_encode(crc, 4, b64);
    assert_string_equal(b64, "NSRBwg==");

    const char *body = "3\r\nabc\r\n0\r\nx-amz-checksum-crc32:NSRBwg==\r\n\r\n";
    awschunk_params_t p = unsigned_params(3);
    for (size_t step = 0; step <= 1; step++) {
        sink_t s = {.fail_after = -1};
        awschunk_t *d;
        buf_init(&s.out, 1024);
        d = s3_awschunk_new(&p, collect, &s);
        for (size_t off = 0; off < strlen(body); off += step ? step : strlen(body)) {
            size_t n = step ? step : strlen(body);
            assert_int_equal(s3_awschunk_feed(d, body + off, n), AWSCHUNK_OK);
            /* Not readable before the body has been finished. */
            assert_null(s3_awschunk_trailer(d, "x-amz-checksum-crc32"));
        }
        assert_int_equal(s3_awschunk_finish(d), AWSCHUNK_OK);
        assert_int_equal(s.out.len, 3);
        assert_memory_equal(s.out.data, "abc", 3);
        assert_string_equal(s3_awschunk_trailer(d, "x-amz-checksum-crc32"), "NSRBwg==");
        assert_string_equal(s3_awschunk_trailer(d, "X-Amz-Checksum-CRC32"), "NSRBwg==");
        assert_null(s3_awschunk_trailer(d, "x-amz-checksum-crc32c"));
        s3_awschunk_free(d);
        buf_free(&s.out);
    }

    /* The empty object as the AWS SDKs send it. */
    const char *empty = "0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n";
    p = unsigned_params(0);
    sink_t s = {.fail_after = -1};
    awschunk_t *d;
    assert_int_equal(decode(&p, empty, strlen(empty), 1, &s, &d), AWSCHUNK_OK);
    assert_string_equal(s3_awschunk_trailer(d, "x-amz-checksum-crc32"), "AAAAAA==");
    s3_awschunk_free(d);
    buf_free(&s.out);

    /* Several trailers, spaces around values, mixed-case names, and the
     * blank line some encoders put right after the final chunk. */
    const char *multi = "5\r\nhello\r\n0\r\n\r\nX-Amz-Checksum-Crc32C: abc=  \r\n"
                        "x-amz-checksum-sha256:xyz\r\n\r\n";
    p = unsigned_params(5);
    assert_int_equal(decode(&p, multi, strlen(multi), 0, &s, &d), AWSCHUNK_OK);
    assert_string_equal(s3_awschunk_trailer(d, "x-amz-checksum-crc32c"), "abc=");
    assert_string_equal(s3_awschunk_trailer(d, "x-amz-checksum-sha256"), "xyz");
    s3_awschunk_free(d);
    buf_free(&s.out);

    /* A trailer form with no trailer at all. */
    expect_unsigned("3\r\nabc\r\n0\r\n\r\n", true, 3, AWSCHUNK_OK);
    /* Several data chunks of different sizes. */
    expect_unsigned("1\r\na\r\nA\r\n0123456789\r\n0\r\nx-amz-checksum-crc32:x\r\n\r\n", true, 11,
                    AWSCHUNK_OK);
}

static void test_signed_trailer(void **state)
{
    (void)state;
    buf_t body;
    doc_body(&body, true);
    awschunk_params_t p = signed_params(true);
    for (size_t step = 0; step <= 1; step++) {
        sink_t s = {.fail_after = -1};
        awschunk_t *d;
        assert_int_equal(decode(&p, body.data, body.len, step, &s, &d), AWSCHUNK_OK);
        check_doc_payload(&s);
        assert_string_equal(s3_awschunk_trailer(d, "x-amz-checksum-crc32c"), "sOO8/Q==");
        /* The signature itself is not a trailer the caller sees. */
        assert_null(s3_awschunk_trailer(d, "x-amz-trailer-signature"));
        s3_awschunk_free(d);
        buf_free(&s.out);
    }

    /* A changed trailer value no longer verifies. */
    char *v = memmem(body.data, body.len, "sOO8/Q==", 8);
    v[0] = 'X';
    sink_t s = {.fail_after = -1};
    assert_int_equal(decode(&p, body.data, body.len, 0, &s, NULL), AWSCHUNK_ERR_SIGNATURE);
    buf_free(&s.out);
    v[0] = 's';

    /* A trailer without its signature is refused. */
    buf_t nosig;
    buf_init(&nosig, 1 << 20);
    char *t = memmem(body.data, body.len, "x-amz-trailer-signature", 23);
    buf_append(&nosig, body.data, (size_t)(t - body.data));
    buf_append_str(&nosig, "\r\n");
    assert_int_equal(decode(&p, nosig.data, nosig.len, 0, &s, NULL), AWSCHUNK_ERR_SIGNATURE);
    buf_free(&s.out);
    buf_free(&nosig);

    /* Nothing may follow the trailer signature but the blank line. */
    buf_t after;
    buf_init(&after, 1 << 20);
    buf_append(&after, body.data, body.len - 2);
    buf_append_str(&after, "x-amz-checksum-crc32:AAAAAA==\r\n\r\n");
    assert_int_equal(decode(&p, after.data, after.len, 0, &s, NULL), AWSCHUNK_ERR_MALFORMED);
    buf_free(&s.out);
    buf_free(&after);

    /* Truncated in the trailer. */
    assert_int_equal(decode(&p, body.data, body.len - 3, 0, &s, NULL), AWSCHUNK_ERR_TRUNCATED);
    buf_free(&s.out);
    buf_free(&body);
}

static void test_callback_stops_and_errors_stick(void **state)
{
    (void)state;
    buf_t body;
    doc_body(&body, false);
    awschunk_params_t p = signed_params(false);
    sink_t s = {.fail_after = 2};
    buf_init(&s.out, 1 << 20);
    awschunk_t *d = s3_awschunk_new(&p, collect, &s);
    awschunk_status_t st = AWSCHUNK_OK;
    for (size_t off = 0; off < body.len && st == AWSCHUNK_OK; off += 1000)
        st = s3_awschunk_feed(d, body.data + off, body.len - off < 1000 ? body.len - off : 1000);
    assert_int_equal(st, AWSCHUNK_ERR_CALLBACK);
    assert_int_equal(s3_awschunk_feed(d, "x", 1), AWSCHUNK_ERR_CALLBACK);
    assert_int_equal(s3_awschunk_finish(d), AWSCHUNK_ERR_CALLBACK);
    s3_awschunk_free(d);
    buf_free(&s.out);
    buf_free(&body);

    /* Zero-length feeds are harmless; free(NULL) is a no-op. */
    awschunk_params_t up = unsigned_params(UINT64_MAX);
    s.fail_after = -1;
    buf_init(&s.out, 64);
    d = s3_awschunk_new(&up, collect, &s);
    assert_int_equal(s3_awschunk_feed(d, "", 0), AWSCHUNK_OK);
    assert_int_equal(s3_awschunk_feed(d, "zz", 2), AWSCHUNK_OK);
    assert_int_equal(s3_awschunk_feed(d, "\r\n", 2), AWSCHUNK_ERR_MALFORMED);
    assert_int_equal(s3_awschunk_feed(d, "0\r\n\r\n", 5), AWSCHUNK_ERR_MALFORMED);
    s3_awschunk_free(d);
    s3_awschunk_free(NULL);
    buf_free(&s.out);
}

static void test_garbage_never_crashes(void **state)
{
    (void)state;
    /* Random bytes and random mutations of valid bodies, in random pieces,
     * in every mode: any status is fine, a crash or leak is not (ASan). */
    buf_t valid;
    doc_body(&valid, true);
    srand(777);
    static char junk[70000];
    for (int round = 0; round < 300; round++) {
        size_t len;
        if (round % 3 == 0) {
            len = (size_t)rand() % 2000;
            const char alphabet[] = "0123456789abcdefxz;=:\r\n -chunk-signature";
            for (size_t i = 0; i < len; i++)
                junk[i] =
                    round % 2 ? (char)rand() : alphabet[(size_t)rand() % (sizeof(alphabet) - 1)];
        } else {
            len = valid.len;
            memcpy(junk, valid.data, len);
            for (int m = 0; m < 1 + rand() % 4; m++)
                junk[(size_t)rand() % len] = (char)rand();
            if (rand() % 2)
                len = (size_t)rand() % len;
        }
        awschunk_params_t p =
            round % 2 ? signed_params(round % 4 == 1) : unsigned_params(UINT64_MAX);
        p.trailer = round % 5 != 0;
        sink_t s = {.fail_after = -1};
        buf_init(&s.out, 1 << 20);
        awschunk_t *d = s3_awschunk_new(&p, collect, &s);
        size_t off = 0;
        awschunk_status_t st = AWSCHUNK_OK;
        while (off < len && st == AWSCHUNK_OK) {
            size_t n = (size_t)rand() % 5000 + 1;
            if (n > len - off)
                n = len - off;
            st = s3_awschunk_feed(d, junk + off, n);
            off += n;
        }
        st = s3_awschunk_finish(d);
        (void)s3_awschunk_trailer(d, "x-amz-checksum-crc32c");
        s3_awschunk_free(d);
        buf_free(&s.out);
    }
    buf_free(&valid);
}

static int setup(void **state)
{
    (void)state;
    sigv4_signing_key(SECRET, "20130524", "us-east-1", "s3", g_key);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_doc_example),
        cmocka_unit_test(test_doc_example_random_splits),
        cmocka_unit_test(test_params_are_copied),
        cmocka_unit_test(test_tampered),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_length),
        cmocka_unit_test(test_unsigned_trailer),
        cmocka_unit_test(test_signed_trailer),
        cmocka_unit_test(test_callback_stops_and_errors_stick),
        cmocka_unit_test(test_garbage_never_crashes),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
