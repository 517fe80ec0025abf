/* The session bootstrap parsers of src/rdma/rdma_wire.h: rdma_wire_frame_len on
 * the first 4 bytes, rdma_wire_frame_type, and every message parser (HELLO,
 * CHALLENGE, AUTH, WELCOME, ERROR, REGION_ADD, REGION_REMOVE/OK), each given
 * the whole input as a frame body. Invariants: rdma_wire_frame_len is -1 or within
 * [RDMA_WIRE_HDR, RDMA_WIRE_MAX_FRAME]; a parser accepts only its own type;
 * pointers into the frame stay inside it; and whatever parses re-encodes
 * with the matching builder to exactly the input bytes (WELCOME's reserved
 * bytes included: the parser refuses them unless zero). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "rdma/rdma_wire.h"

/* The builder's frame is u32 length | body: compare the body with the input. */
static void same(wire_out_t *w, int rc, const uint8_t *body, size_t len)
{
    FUZZ_CHECK(rc == 0);
    FUZZ_CHECK(w->len == len + 4);
    FUZZ_CHECK(rdma_wire_frame_len(w->data) == (long)len);
    FUZZ_CHECK(memcmp(w->data + 4, body, len) == 0);
    rdma_wire_free(w);
}

static void inside(const uint8_t *p, size_t n, const uint8_t *body, size_t len)
{
    FUZZ_CHECK(p && n > 0 && p >= body && p + n <= body + len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *body = fuzz_copy(data, size);
    wire_out_t w = {0}; /* rdma_wire_begin reuses w->data: start zeroed */

    if (size >= 4) {
        long n = rdma_wire_frame_len(body);
        FUZZ_CHECK(n == -1 || (n >= RDMA_WIRE_HDR && n <= RDMA_WIRE_MAX_FRAME));
    }
    int type = rdma_wire_frame_type(body, size);
    FUZZ_CHECK(type >= -1 && type <= 255);

    rdma_hello_t h;
    if (rdma_wire_parse_hello(body, size, &h) == 0) {
        FUZZ_CHECK(type == RDMA_MSG_HELLO);
        FUZZ_CHECK(strlen(h.access_key) >= 1 && strlen(h.access_key) <= RDMA_MAX_AK);
        inside(h.worker_addr, h.worker_addr_len, body, size);
        FUZZ_CHECK(h.worker_addr_len <= RDMA_MAX_WORKER_ADDR);
        same(&w, rdma_wire_hello(&w, h.access_key, h.nonce, h.worker_addr, h.worker_addr_len), body,
             size);
    }

    static const uint8_t nonce_types[] = {RDMA_MSG_CHALLENGE, RDMA_MSG_AUTH, RDMA_MSG_PROVE};
    for (size_t i = 0; i < sizeof(nonce_types); i++) {
        uint8_t nonce[RDMA_NONCE_LEN];
        if (rdma_wire_parse_nonce(body, size, nonce_types[i], nonce) == 0) {
            FUZZ_CHECK(type == nonce_types[i]);
            same(&w, rdma_wire_nonce(&w, nonce_types[i], nonce), body, size);
        }
    }

    rdma_welcome_t wm;
    if (rdma_wire_parse_welcome(body, size, &wm) == 0) {
        FUZZ_CHECK(type == RDMA_MSG_WELCOME);
        FUZZ_CHECK(wm.err_mode <= RDMA_WIRE_ERRMODE_PEER);
        inside(wm.worker_addr, wm.worker_addr_len, body, size);
        FUZZ_CHECK(wm.worker_addr_len <= RDMA_MAX_WORKER_ADDR);
        same(&w, rdma_wire_welcome(&w, &wm), body, size); /* reserved bytes must have been zero */
    }

    uint32_t code;
    char msg[RDMA_MAX_ERR_MSG + 1];
    if (rdma_wire_parse_error(body, size, &code, msg) == 0) {
        FUZZ_CHECK(type == RDMA_MSG_ERROR);
        FUZZ_CHECK(strlen(msg) <= RDMA_MAX_ERR_MSG);
        same(&w, rdma_wire_error(&w, code, msg), body, size);
    }

    rdma_region_add_t ra;
    if (rdma_wire_parse_region_add(body, size, &ra) == 0) {
        FUZZ_CHECK(type == RDMA_MSG_REGION_ADD);
        FUZZ_CHECK(ra.len > 0 && ra.addr + ra.len > ra.addr);
        inside(ra.rkey, ra.rkey_len, body, size);
        FUZZ_CHECK(ra.rkey_len <= RDMA_MAX_RKEY);
        same(&w, rdma_wire_region_add(&w, &ra), body, size);
    }

    uint32_t rid;
    if (rdma_wire_parse_region_id(body, size, &rid) == 0) {
        FUZZ_CHECK(type == RDMA_MSG_REGION_REMOVE || type == RDMA_MSG_REGION_OK);
        same(&w, rdma_wire_region_id(&w, (uint8_t)type, rid), body, size);
    }

    free(body);
    return 0;
}
