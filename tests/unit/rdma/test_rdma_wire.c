/* The bootstrap frame codec, the token codec and the handshake MACs, without
 * UCX: round trips, every truncation, trailing bytes, bad lengths, and random
 * mutations (which must be rejected or parsed, never crash). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rdma/rdma_wire.h"

static void test_token_round_trip(void **state)
{
    (void)state;
    rdma_token_t t = {.region_id = 0xdeadbeef, .addr = 0x7f0011223344ull, .len = 16u << 20};
    for (int i = 0; i < 16; i++)
        t.session_id[i] = (uint8_t)(i * 17);
    char s[128];
    assert_int_equal(rdma_token_encode(&t, s, sizeof(s)), RDMA_TOKEN_LEN);
    assert_int_equal(strlen(s), RDMA_TOKEN_LEN);
    assert_memory_equal(s, "s3r1.", 5);
    rdma_token_t u;
    assert_int_equal(rdma_token_decode(s, &u), 0);
    assert_memory_equal(&t.session_id, &u.session_id, 16);
    assert_int_equal(u.region_id, t.region_id);
    assert_int_equal(u.addr, t.addr);
    assert_int_equal(u.len, t.len);
    assert_int_equal(rdma_token_encode(&t, s, RDMA_TOKEN_LEN), -1);

    /* Wrong prefix, short, long, bad alphabet, padding. */
    char b[128];
    strcpy(b, s);
    b[3] = '2';
    assert_int_equal(rdma_token_decode(b, &u), -1);
    strcpy(b, s);
    b[RDMA_TOKEN_LEN - 1] = '\0';
    assert_int_equal(rdma_token_decode(b, &u), -1);
    memcpy(b, s, RDMA_TOKEN_LEN);
    b[RDMA_TOKEN_LEN] = 'A';
    b[RDMA_TOKEN_LEN + 1] = '\0';
    assert_int_equal(rdma_token_decode(b, &u), -1);
    strcpy(b, s);
    b[10] = '+';
    assert_int_equal(rdma_token_decode(b, &u), -1);
    strcpy(b, s);
    b[10] = '=';
    assert_int_equal(rdma_token_decode(b, &u), -1);
    assert_int_equal(rdma_token_decode(NULL, &u), -1);
    /* A wrapping span decodes (the server's bounds check refuses it). */
    t.addr = UINT64_MAX - 5;
    t.len = 10;
    rdma_token_encode(&t, s, sizeof(s));
    assert_int_equal(rdma_token_decode(s, &u), 0);
    assert_int_equal(u.addr, UINT64_MAX - 5);
}

static void test_hello_round_trip_and_truncations(void **state)
{
    (void)state;
    uint8_t nonce[RDMA_NONCE_LEN], addr[300];
    memset(nonce, 7, sizeof(nonce));
    for (size_t i = 0; i < sizeof(addr); i++)
        addr[i] = (uint8_t)i;
    wire_out_t w = {0};
    assert_int_equal(rdma_wire_hello(&w, "AKID", nonce, addr, sizeof(addr)), 0);
    assert_int_equal(rdma_wire_frame_len(w.data), (long)(w.len - 4));
    const uint8_t *body = w.data + 4;
    size_t len = w.len - 4;
    rdma_hello_t h;
    assert_int_equal(rdma_wire_parse_hello(body, len, &h), 0);
    assert_string_equal(h.access_key, "AKID");
    assert_int_equal(h.worker_addr_len, sizeof(addr));
    assert_memory_equal(h.worker_addr, addr, sizeof(addr));
    /* Every truncation is rejected. */
    for (size_t n = 0; n < len; n++)
        assert_int_equal(rdma_wire_parse_hello(body, n, &h), -1);
    /* Trailing bytes are rejected. */
    uint8_t *longer = malloc(len + 1);
    memcpy(longer, body, len);
    longer[len] = 0;
    assert_int_equal(rdma_wire_parse_hello(longer, len + 1, &h), -1);
    free(longer);
    /* A HELLO is not an AUTH. */
    uint8_t mac[RDMA_MAC_LEN];
    assert_int_equal(rdma_wire_parse_nonce(body, len, RDMA_MSG_AUTH, mac), -1);
    rdma_wire_free(&w);
    /* Empty and oversized access keys are refused by the parser. */
    assert_int_equal(rdma_wire_hello(&w, "", nonce, addr, 1), 0);
    assert_int_equal(rdma_wire_parse_hello(w.data + 4, w.len - 4, &h), -1);
    rdma_wire_free(&w);
    char ak[RDMA_MAX_AK + 2];
    memset(ak, 'A', sizeof(ak) - 1);
    ak[sizeof(ak) - 1] = '\0';
    assert_int_equal(rdma_wire_hello(&w, ak, nonce, addr, 1), 0);
    assert_int_equal(rdma_wire_parse_hello(w.data + 4, w.len - 4, &h), -1);
    rdma_wire_free(&w);
}

static void test_frame_bounds(void **state)
{
    (void)state;
    uint8_t hdr[4] = {0, 0, 0, 7};
    assert_int_equal(rdma_wire_frame_len(hdr), -1);
    uint8_t ok[4] = {0, 0, 0, 8};
    assert_int_equal(rdma_wire_frame_len(ok), 8);
    uint8_t big[4] = {0, 1, 0, 1};
    assert_int_equal(rdma_wire_frame_len(big), -1);
    /* The builder refuses frames past the maximum. */
    wire_out_t w = {0};
    uint8_t *huge = calloc(1, RDMA_WIRE_MAX_FRAME);
    rdma_welcome_t hw = {.worker_addr = huge, .worker_addr_len = RDMA_WIRE_MAX_FRAME};
    assert_int_equal(rdma_wire_welcome(&w, &hw), -1);
    rdma_wire_free(&w);
    free(huge);
    /* Wrong version or non-zero flags. */
    uint8_t mac[RDMA_MAC_LEN] = {0};
    assert_int_equal(rdma_wire_nonce(&w, RDMA_MSG_AUTH, mac), 0);
    w.data[8] = 1; /* version 1 (before the probe) is no longer spoken */
    assert_int_equal(rdma_wire_frame_type(w.data + 4, w.len - 4), -1);
    w.data[8] = RDMA_WIRE_VERSION;
    w.data[11] = 1;
    assert_int_equal(rdma_wire_frame_type(w.data + 4, w.len - 4), -1);
    rdma_wire_free(&w);
}

static void test_other_messages(void **state)
{
    (void)state;
    wire_out_t w = {0};
    rdma_welcome_t m = {.err_mode = 1,
                        .max_regions = 3,
                        .max_registered = 1ull << 40,
                        .max_inflight = 9,
                        .chunk_bytes = 1 << 20};
    memset(m.session_id, 0xab, sizeof(m.session_id));
    memset(m.server_mac, 0xcd, sizeof(m.server_mac));
    uint8_t saddr[77];
    memset(saddr, 0x5e, sizeof(saddr));
    m.worker_addr = saddr;
    m.worker_addr_len = sizeof(saddr);
    assert_int_equal(rdma_wire_welcome(&w, &m), 0);
    rdma_welcome_t n;
    assert_int_equal(rdma_wire_parse_welcome(w.data + 4, w.len - 4, &n), 0);
    assert_memory_equal(&m.session_id, &n.session_id, 16);
    assert_int_equal(n.worker_addr_len, sizeof(saddr));
    assert_memory_equal(n.worker_addr, saddr, sizeof(saddr));
    assert_memory_equal(n.server_mac, m.server_mac, RDMA_MAC_LEN);
    assert_int_equal(n.max_registered, m.max_registered);
    assert_int_equal(n.err_mode, 1);
    rdma_wire_free(&w);

    uint8_t rkey[40] = {1, 2, 3};
    rdma_region_add_t ra = {
        .region_id = 5, .addr = 4096, .len = 8192, .rkey = rkey, .rkey_len = 40};
    assert_int_equal(rdma_wire_region_add(&w, &ra), 0);
    rdma_region_add_t rb;
    assert_int_equal(rdma_wire_parse_region_add(w.data + 4, w.len - 4, &rb), 0);
    assert_int_equal(rb.region_id, 5);
    assert_int_equal(rb.len, 8192);
    assert_int_equal(rb.rkey_len, 40);
    rdma_wire_free(&w);
    ra.len = 0;
    assert_int_equal(rdma_wire_region_add(&w, &ra), 0);
    assert_int_equal(rdma_wire_parse_region_add(w.data + 4, w.len - 4, &rb), -1);
    rdma_wire_free(&w);
    ra.len = 10;
    ra.addr = UINT64_MAX - 2;
    assert_int_equal(rdma_wire_region_add(&w, &ra), 0);
    assert_int_equal(rdma_wire_parse_region_add(w.data + 4, w.len - 4, &rb), -1);
    rdma_wire_free(&w);

    assert_int_equal(rdma_wire_error(&w, RDMA_ERR_MAX_REGIONS, "too many"), 0);
    uint32_t code;
    char msg[RDMA_MAX_ERR_MSG + 1];
    assert_int_equal(rdma_wire_parse_error(w.data + 4, w.len - 4, &code, msg), 0);
    assert_int_equal(code, RDMA_ERR_MAX_REGIONS);
    assert_string_equal(msg, "too many");
    rdma_wire_free(&w);
}

static void test_mutations_never_crash(void **state)
{
    (void)state;
    uint8_t nonce[RDMA_NONCE_LEN] = {0}, addr[64] = {0};
    wire_out_t w = {0};
    assert_int_equal(rdma_wire_hello(&w, "AKID", nonce, addr, sizeof(addr)), 0);
    size_t len = w.len - 4;
    uint8_t *b = malloc(len);
    srand(1234);
    for (int i = 0; i < 20000; i++) {
        memcpy(b, w.data + 4, len);
        int k = 1 + rand() % 4;
        while (k--)
            b[rand() % len] = (uint8_t)rand();
        size_t n = (size_t)rand() % (len + 1);
        rdma_hello_t h;
        rdma_welcome_t m;
        rdma_region_add_t r;
        uint8_t mac[RDMA_MAC_LEN];
        uint32_t id, code;
        char msg[RDMA_MAX_ERR_MSG + 1];
        if (rdma_wire_parse_hello(b, n, &h) == 0) {
            assert_true(h.worker_addr_len <= n);
            assert_true(strlen(h.access_key) <= RDMA_MAX_AK);
        }
        (void)rdma_wire_parse_nonce(b, n, RDMA_MSG_CHALLENGE, mac);
        (void)rdma_wire_parse_nonce(b, n, RDMA_MSG_PROVE, mac);
        (void)rdma_wire_parse_welcome(b, n, &m);
        (void)rdma_wire_parse_region_add(b, n, &r);
        (void)rdma_wire_parse_nonce(b, n, RDMA_MSG_AUTH, mac);
        (void)rdma_wire_parse_region_id(b, n, &id);
        (void)rdma_wire_parse_error(b, n, &code, msg);
    }
    free(b);
    rdma_wire_free(&w);
}

static void test_macs(void **state)
{
    (void)state;
    uint8_t k1[32], k2[32], cn[32] = {1}, sn[32] = {2}, m1[32], m2[32], m3[32];
    rdma_session_key("secret", k1);
    rdma_session_key("secret", k2);
    assert_memory_equal(k1, k2, 32);
    rdma_session_key("secreT", k2);
    assert_memory_not_equal(k1, k2, 32);
    /* Known answer (docs/protocol.md §1.3, computed independently): a change
     * here breaks every client and server of another build. */
    static const uint8_t want[32] = {0xc6, 0x5d, 0x05, 0x6a, 0x6a, 0x11, 0x16, 0xab,
                                     0xdf, 0x19, 0xf1, 0x0c, 0x15, 0xc2, 0xd7, 0x5c,
                                     0xcb, 0xa0, 0x98, 0x81, 0x14, 0x7e, 0x99, 0x5c,
                                     0x87, 0x34, 0x99, 0x81, 0x0d, 0xd2, 0xf3, 0xa5};
    rdma_session_key("secret", k2);
    assert_memory_equal(k2, want, 32);
    rdma_handshake_mac(k1, "client", cn, sn, "ab", 2, "c", 1, "AK", m1);
    rdma_handshake_mac(k1, "client", cn, sn, "a", 1, "bc", 2, "AK", m2);
    assert_memory_not_equal(m1, m2, 32); /* boundaries are length-prefixed */
    rdma_handshake_mac(k1, "server", cn, sn, "ab", 2, "c", 1, "AK", m3);
    assert_memory_not_equal(m1, m3, 32);
    /* The client MACs before it knows the server's address (empty). */
    rdma_handshake_mac(k1, "client", cn, sn, "ab", 2, NULL, 0, "AK", m2);
    assert_memory_not_equal(m1, m2, 32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_round_trip),
        cmocka_unit_test(test_hello_round_trip_and_truncations),
        cmocka_unit_test(test_frame_bounds),
        cmocka_unit_test(test_other_messages),
        cmocka_unit_test(test_mutations_never_crash),
        cmocka_unit_test(test_macs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
