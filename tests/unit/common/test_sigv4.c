/* SigV4 against the worked examples in the Amazon S3 API reference
 * ("Signature Calculations for the Authorization Header", "Authenticating
 * Requests: Using Query Parameters", "Transferring Payload in Multiple
 * Chunks", "Including Trailing Headers"), plus the edges of each parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/sigv4.h"

#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define DATE   "20130524T000000Z"
#define SCOPE  "20130524/us-east-1/s3/aws4_request"

/* Signs a request the way the server's verifier will: canonical request,
 * string to sign, signing key, HMAC. */
static void sign_request(const sigv4_request_t *req, char sig[65])
{
    buf_t canon, sts;
    buf_init(&canon, 1 << 16);
    buf_init(&sts, 1 << 16);
    assert_int_equal(sigv4_canonical_request(req, &canon), 0);
    assert_int_equal(sigv4_string_to_sign(DATE, SCOPE, canon.data, canon.len, &sts), 0);
    uint8_t key[SHA256_LEN];
    sigv4_signing_key(SECRET, "20130524", "us-east-1", "s3", key);
    sigv4_sign(key, sts.data, sts.len, sig);
    buf_free(&canon);
    buf_free(&sts);
}

static void test_get_object_example(void **state)
{
    (void)state;
    const sigv4_header_t h[] = {
        {"host", "examplebucket.s3.amazonaws.com"},
        {"range", "bytes=0-9"},
        {"x-amz-content-sha256", SIGV4_EMPTY_SHA256},
        {"x-amz-date", DATE},
    };
    buf_t uri;
    buf_init(&uri, 1024);
    assert_int_equal(sigv4_uri_encode_path("/test.txt", &uri), 0);
    sigv4_request_t req = {
        .method = "GET",
        .canonical_uri = uri.data,
        .canonical_query = "",
        .headers = h,
        .n_headers = 4,
        .signed_headers = "host;range;x-amz-content-sha256;x-amz-date",
        .payload_hash = SIGV4_EMPTY_SHA256,
    };
    buf_t canon;
    buf_init(&canon, 4096);
    assert_int_equal(sigv4_canonical_request(&req, &canon), 0);
    assert_string_equal(canon.data,
                        "GET\n/test.txt\n\n"
                        "host:examplebucket.s3.amazonaws.com\n"
                        "range:bytes=0-9\n"
                        "x-amz-content-sha256:" SIGV4_EMPTY_SHA256 "\n"
                        "x-amz-date:20130524T000000Z\n\n"
                        "host;range;x-amz-content-sha256;x-amz-date\n" SIGV4_EMPTY_SHA256);
    buf_t sts;
    buf_init(&sts, 4096);
    assert_int_equal(sigv4_string_to_sign(DATE, SCOPE, canon.data, canon.len, &sts), 0);
    assert_string_equal(sts.data,
                        "AWS4-HMAC-SHA256\n20130524T000000Z\n"
                        "20130524/us-east-1/s3/aws4_request\n"
                        "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
    char sig[65];
    sign_request(&req, sig);
    assert_string_equal(sig, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
    buf_free(&uri);
    buf_free(&canon);
    buf_free(&sts);
}

static void test_put_object_example(void **state)
{
    (void)state;
    const sigv4_header_t h[] = {
        {"date", "Fri, 24 May 2013 00:00:00 GMT"},
        {"host", "examplebucket.s3.amazonaws.com"},
        {"x-amz-content-sha256",
         "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"},
        {"x-amz-date", DATE},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
    };
    /* The body hash is the SHA-256 of "Welcome to Amazon S3." */
    uint8_t body_hash[SHA256_LEN];
    char body_hex[65];
    hash_sha256("Welcome to Amazon S3.", 21, body_hash);
    hash_hex_encode(body_hash, SHA256_LEN, body_hex);
    assert_string_equal(body_hex, h[2].value);

    buf_t uri;
    buf_init(&uri, 1024);
    assert_int_equal(sigv4_uri_encode_path("/test$file.text", &uri), 0);
    assert_string_equal(uri.data, "/test%24file.text");
    sigv4_request_t req = {
        .method = "PUT",
        .canonical_uri = uri.data,
        .canonical_query = "",
        .headers = h,
        .n_headers = 5,
        .signed_headers = "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
        .payload_hash = body_hex,
    };
    char sig[65];
    sign_request(&req, sig);
    assert_string_equal(sig, "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
    buf_free(&uri);
}

static void sign_bucket_get(const char *raw_query, char sig[65])
{
    const sigv4_header_t h[] = {
        {"host", "examplebucket.s3.amazonaws.com"},
        {"x-amz-content-sha256", SIGV4_EMPTY_SHA256},
        {"x-amz-date", DATE},
    };
    buf_t q;
    buf_init(&q, 4096);
    assert_int_equal(sigv4_canonical_query(raw_query, false, &q), 0);
    sigv4_request_t req = {
        .method = "GET",
        .canonical_uri = "/",
        .canonical_query = q.data ? q.data : "",
        .headers = h,
        .n_headers = 3,
        .signed_headers = "host;x-amz-content-sha256;x-amz-date",
        .payload_hash = SIGV4_EMPTY_SHA256,
    };
    sign_request(&req, sig);
    buf_free(&q);
}

static void test_lifecycle_and_list_examples(void **state)
{
    (void)state;
    char sig[65];
    sign_bucket_get("lifecycle", sig);
    assert_string_equal(sig, "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
    /* Any order in, sorted out. */
    sign_bucket_get("prefix=J&max-keys=2", sig);
    assert_string_equal(sig, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
    sign_bucket_get("max-keys=2&prefix=J", sig);
    assert_string_equal(sig, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

static void test_presigned_example(void **state)
{
    (void)state;
    const char *raw =
        "X-Amz-Algorithm=AWS4-HMAC-SHA256"
        "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
        "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
        "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
    buf_t q;
    buf_init(&q, 4096);
    assert_int_equal(sigv4_canonical_query(raw, true, &q), 0);
    assert_null(strstr(q.data, "X-Amz-Signature"));
    const sigv4_header_t h[] = {{"host", "examplebucket.s3.amazonaws.com"}};
    sigv4_request_t req = {
        .method = "GET",
        .canonical_uri = "/test.txt",
        .canonical_query = q.data,
        .headers = h,
        .n_headers = 1,
        .signed_headers = "host",
        .payload_hash = SIGV4_UNSIGNED,
    };
    char sig[65];
    sign_request(&req, sig);
    assert_string_equal(sig, "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
    buf_free(&q);

    /* Without skip_signature it stays in (sorted last among X-Amz-S*). */
    buf_init(&q, 4096);
    assert_int_equal(sigv4_canonical_query(raw, false, &q), 0);
    assert_non_null(strstr(q.data, "&X-Amz-Signature=aeeed9bb"));
    buf_free(&q);

    /* The credential from the URL parses like the header's. */
    sigv4_auth_t a;
    memset(&a, 0, sizeof(a));
    assert_int_equal(
        sigv4_parse_credential("AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request", &a), 0);
    assert_string_equal(a.access_key, "AKIAIOSFODNN7EXAMPLE");
    assert_string_equal(a.scope, SCOPE);
}

static void test_chunked_seed_and_chunks(void **state)
{
    (void)state;
    const sigv4_header_t h[] = {
        {"content-encoding", "aws-chunked"},
        {"content-length", "66824"},
        {"host", "s3.amazonaws.com"},
        {"x-amz-content-sha256", SIGV4_STREAMING},
        {"x-amz-date", DATE},
        {"x-amz-decoded-content-length", "66560"},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
    };
    sigv4_request_t req = {
        .method = "PUT",
        .canonical_uri = "/examplebucket/chunkObject.txt",
        .canonical_query = "",
        .headers = h,
        .n_headers = 7,
        .signed_headers = "content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;"
                          "x-amz-decoded-content-length;x-amz-storage-class",
        .payload_hash = SIGV4_STREAMING,
    };
    char sig[65];
    sign_request(&req, sig);
    assert_string_equal(sig, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");

    static char data[65536];
    memset(data, 'a', sizeof(data));
    const size_t sizes[] = {65536, 1024, 0};
    const char *expect[] = {
        "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
        "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
        "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
    };
    uint8_t key[SHA256_LEN];
    sigv4_signing_key(SECRET, "20130524", "us-east-1", "s3", key);
    char prev[65];
    memcpy(prev, sig, 65);
    for (int i = 0; i < 3; i++) {
        uint8_t hsh[SHA256_LEN];
        hash_sha256(data, sizes[i], hsh);
        buf_t sts;
        buf_init(&sts, 1024);
        assert_int_equal(sigv4_chunk_string_to_sign(DATE, SCOPE, prev, hsh, &sts), 0);
        sigv4_sign(key, sts.data, sts.len, prev);
        assert_string_equal(prev, expect[i]);
        buf_free(&sts);
    }
}

/* The trailing-header example: same object, x-amz-trailer:
 * x-amz-checksum-crc32c, trailer "x-amz-checksum-crc32c:sOO8/Q==". */
static void test_trailer_example(void **state)
{
    (void)state;
    const sigv4_header_t h[] = {
        {"content-encoding", "aws-chunked"},
        {"host", "s3.amazonaws.com"},
        {"x-amz-content-sha256", SIGV4_STREAMING_TRAILER},
        {"x-amz-date", DATE},
        {"x-amz-decoded-content-length", "66560"},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
        {"x-amz-trailer", "x-amz-checksum-crc32c"},
    };
    sigv4_request_t req = {
        .method = "PUT",
        .canonical_uri = "/examplebucket/chunkObject.txt",
        .canonical_query = "",
        .headers = h,
        .n_headers = 7,
        .signed_headers = "content-encoding;host;x-amz-content-sha256;x-amz-date;"
                          "x-amz-decoded-content-length;x-amz-storage-class;x-amz-trailer",
        .payload_hash = SIGV4_STREAMING_TRAILER,
    };
    char sig[65];
    sign_request(&req, sig);
    assert_string_equal(sig, "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e");

    uint8_t key[SHA256_LEN];
    sigv4_signing_key(SECRET, "20130524", "us-east-1", "s3", key);
    /* The final chunk's signature, then the trailer signed over it. */
    const char *final_sig = "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992";
    const char *trailer = "x-amz-checksum-crc32c:sOO8/Q==\n";
    uint8_t th[SHA256_LEN];
    hash_sha256(trailer, strlen(trailer), th);
    buf_t sts;
    buf_init(&sts, 1024);
    assert_int_equal(sigv4_trailer_string_to_sign(DATE, SCOPE, final_sig, th, &sts), 0);
    assert_true(strncmp(sts.data, "AWS4-HMAC-SHA256-TRAILER\n" DATE "\n" SCOPE "\n", 60) == 0);
    sigv4_sign(key, sts.data, sts.len, sig);
    assert_string_equal(sig, "d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435");
    buf_free(&sts);
}

static void expect_query(const char *raw, const char *canon)
{
    buf_t q;
    buf_init(&q, 4096);
    assert_int_equal(sigv4_canonical_query(raw, false, &q), 0);
    assert_string_equal(q.data ? q.data : "", canon);
    buf_free(&q);
}

static void test_canonical_query(void **state)
{
    (void)state;
    expect_query("", "");
    expect_query("b=2&a=1&x", "a=1&b=2&x=");
    expect_query("uploads", "uploads=");
    expect_query("a=2&a=1&a=10", "a=1&a=10&a=2");
    /* Decoded, then re-encoded the one canonical way. */
    expect_query("prefix=a%2fb&delimiter=/", "delimiter=%2F&prefix=a%2Fb");
    expect_query("k=a%20b+c", "k=a%20b%2Bc");
    expect_query("k=%7e~", "k=~~");
    expect_query("k=%E2%82%AC", "k=%E2%82%AC");
    expect_query("v=a=b", "v=a%3Db");
    /* Empty pieces between separators are nothing. */
    expect_query("&&a=1&", "a=1");
    /* Upper-case sorts before lower-case (byte order). */
    expect_query("b=1&B=2&X-Amz-Date=3", "B=2&X-Amz-Date=3&b=1");

    buf_t q;
    buf_init(&q, 4096);
    assert_int_equal(sigv4_canonical_query("a=%zz", false, &q), -1);
    assert_int_equal(sigv4_canonical_query("a=%2", false, &q), -1);
    assert_int_equal(sigv4_canonical_query("a=%", false, &q), -1);
    buf_free(&q);
    /* A buffer too small for the result fails. */
    buf_init(&q, 4);
    assert_int_equal(sigv4_canonical_query("abc=def", false, &q), -1);
    buf_free(&q);
}

static void expect_path(const char *decoded, const char *canon)
{
    buf_t b;
    buf_init(&b, 4096);
    assert_int_equal(sigv4_uri_encode_path(decoded, &b), 0);
    assert_string_equal(b.data, canon);
    buf_free(&b);
}

static void test_uri_encoding(void **state)
{
    (void)state;
    expect_path("", "/");
    expect_path("/", "/");
    expect_path("/bucket/a b", "/bucket/a%20b");
    expect_path("/bucket/dir/sub/key.txt", "/bucket/dir/sub/key.txt");
    expect_path("/bucket/a+b=c&d", "/bucket/a%2Bb%3Dc%26d");
    expect_path("/bucket/caf\xc3\xa9", "/bucket/caf%C3%A9");
    expect_path("/bucket/\xe2\x82\xac~-._", "/bucket/%E2%82%AC~-._");
    expect_path("/bucket//double", "/bucket//double");
    expect_path("/bucket/%41", "/bucket/%2541");

    buf_t b;
    buf_init(&b, 64);
    assert_int_equal(sigv4_uri_encode("a/b c", 5, true, &b), 0);
    assert_string_equal(b.data, "a%2Fb%20c");
    buf_reset(&b);
    assert_int_equal(sigv4_uri_encode("a/b", 3, false, &b), 0);
    assert_string_equal(b.data, "a/b");
    buf_reset(&b);
    /* Bytes with the high bit and NUL are encoded too. */
    assert_int_equal(sigv4_uri_encode("\x00\xff", 2, true, &b), 0);
    assert_string_equal(b.data, "%00%FF");
    buf_free(&b);
    /* A full buffer fails and leaves what was there. */
    buf_init(&b, 5);
    assert_int_equal(buf_append_str(&b, "ab"), 0);
    assert_int_equal(sigv4_uri_encode("  ", 2, true, &b), -1);
    assert_string_equal(b.data, "ab");
    buf_free(&b);
}

static void test_header_trimming(void **state)
{
    (void)state;
    const sigv4_header_t h[] = {
        {"x-a", "  a   b\t c  "},
        {"x-b", ""},
        {"x-c", "\t\t"},
    };
    sigv4_request_t req = {
        .method = "GET",
        .canonical_uri = "",
        .canonical_query = "",
        .headers = h,
        .n_headers = 3,
        .signed_headers = "x-a;x-b;x-c",
        .payload_hash = SIGV4_UNSIGNED,
    };
    buf_t c;
    buf_init(&c, 4096);
    assert_int_equal(sigv4_canonical_request(&req, &c), 0);
    assert_string_equal(c.data, "GET\n/\n\nx-a:a b c\nx-b:\nx-c:\n\nx-a;x-b;x-c\nUNSIGNED-PAYLOAD");
    buf_free(&c);
    /* Too small: fails, leaves nothing behind. */
    buf_init(&c, 16);
    assert_int_equal(sigv4_canonical_request(&req, &c), -1);
    assert_int_equal(c.len, 0);
    buf_free(&c);
}

static void test_parse_authorization(void **state)
{
    (void)state;
    sigv4_auth_t a;
    const char *good =
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;range;x-amz-date, "
        "Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024";
    assert_int_equal(sigv4_parse_authorization(good, &a), 0);
    assert_string_equal(a.access_key, "AKIAIOSFODNN7EXAMPLE");
    assert_string_equal(a.date8, "20130524");
    assert_string_equal(a.region, "us-east-1");
    assert_string_equal(a.service, "s3");
    assert_string_equal(a.scope, SCOPE);
    assert_string_equal(a.signed_headers, "host;range;x-amz-date");
    assert_string_equal(a.signature,
                        "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024");

    /* No spaces after commas, any field order, upper-case hex normalised. */
    assert_int_equal(
        sigv4_parse_authorization(
            "AWS4-HMAC-SHA256 "
            "Signature=FE5F80F77D5FA3BECA038A248FF027D0445342FE2855DDC963176630326F1024,"
            "SignedHeaders=host,Credential=AK/20130524/eu-west-1/s3/aws4_request",
            &a),
        0);
    assert_string_equal(a.access_key, "AK");
    assert_string_equal(a.region, "eu-west-1");
    assert_string_equal(a.signature,
                        "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024");

    const char *sig = "Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024";
    char bad[1024];
    const char *cases[] = {
        "",
        "AWS4-HMAC-SHA256",
        "AWS4-HMAC-SHA1 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, %s",
        "AWS4-HMAC-SHA256Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, %s",
        "AWS4-HMAC-SHA256 SignedHeaders=host, %s",
        "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, %s",
        "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=host",
        "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_requesx, SignedHeaders=host, %s",
        "AWS4-HMAC-SHA256 Credential=AK/2013052/us-east-1/s3/aws4_request, SignedHeaders=host, %s",
        "AWS4-HMAC-SHA256 Credential=AK/2013052x/us-east-1/s3/aws4_request, SignedHeaders=host, %s",
        "AWS4-HMAC-SHA256 Credential=AK/20130524//s3/aws4_request, SignedHeaders=host, %s",
        "AWS4-HMAC-SHA256 Credential=/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, %s",
        "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/aws4_request, SignedHeaders=host, %s",
        "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=, %s",
        "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;;x, "
        "%s",
        "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=Host, %s",
        "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;, "
        "%s",
        "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, "
        "Signature=abc",
        "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, "
        "Signature=ge5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024",
        "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, "
        "%s, %s",
        "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, "
        "%s, "
        "Extra=1",
        "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, "
        "junk",
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(bad, sizeof(bad), cases[i], sig, sig);
        memset(&a, 0x5a, sizeof(a));
        assert_int_equal(sigv4_parse_authorization(bad, &a), -1);
    }
    assert_int_equal(sigv4_parse_authorization(NULL, &a), -1);

    /* Oversized fields are refused, not truncated. */
    char big[4096];
    int n = snprintf(big, sizeof(big), "AWS4-HMAC-SHA256 Credential=");
    memset(big + n, 'A', 200);
    snprintf(big + n + 200, sizeof(big) - (size_t)n - 200,
             "/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, %s", sig);
    assert_int_equal(sigv4_parse_authorization(big, &a), -1);
    n = snprintf(big, sizeof(big),
                 "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, "
                 "SignedHeaders=");
    memset(big + n, 'h', 1100);
    snprintf(big + n + 1100, sizeof(big) - (size_t)n - 1100, ", %s", sig);
    assert_int_equal(sigv4_parse_authorization(big, &a), -1);
}

static void test_signing_key_long_secret(void **state)
{
    (void)state;
    /* A secret longer than the stack buffer derives the same way. */
    char secret[600];
    memset(secret, 'k', sizeof(secret) - 1);
    secret[sizeof(secret) - 1] = '\0';
    uint8_t k1[SHA256_LEN], k2[SHA256_LEN];
    sigv4_signing_key(secret, "20130524", "us-east-1", "s3", k1);
    char aws4[605] = "AWS4";
    memcpy(aws4 + 4, secret, sizeof(secret));
    uint8_t a[SHA256_LEN], b[SHA256_LEN];
    hash_hmac_sha256(aws4, strlen(aws4), "20130524", 8, a);
    hash_hmac_sha256(a, SHA256_LEN, "us-east-1", 9, b);
    hash_hmac_sha256(b, SHA256_LEN, "s3", 2, a);
    hash_hmac_sha256(a, SHA256_LEN, "aws4_request", 12, k2);
    assert_memory_equal(k1, k2, SHA256_LEN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_object_example),
        cmocka_unit_test(test_put_object_example),
        cmocka_unit_test(test_lifecycle_and_list_examples),
        cmocka_unit_test(test_presigned_example),
        cmocka_unit_test(test_chunked_seed_and_chunks),
        cmocka_unit_test(test_trailer_example),
        cmocka_unit_test(test_canonical_query),
        cmocka_unit_test(test_uri_encoding),
        cmocka_unit_test(test_header_trimming),
        cmocka_unit_test(test_parse_authorization),
        cmocka_unit_test(test_signing_key_long_secret),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
