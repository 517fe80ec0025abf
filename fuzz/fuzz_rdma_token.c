/* The x-amz-rdma-token decoder (rdma_token_decode, src/rdma/rdma_wire.h),
 * given the input as a C string. Invariants: a token decodes only when it is
 * exactly RDMA_TOKEN_LEN characters starting "s3r1.", and re-encodes to the
 * identical string (the base64url form of 36 bytes has no slack bits); the
 * raw input bytes, read as a token structure, survive encode then decode. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "rdma/rdma_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    rdma_token_t t;
    if (rdma_token_decode(s, &t) == 0) {
        FUZZ_CHECK(strlen(s) == RDMA_TOKEN_LEN && strncmp(s, RDMA_TOKEN_PREFIX, 5) == 0);
        char out[RDMA_TOKEN_LEN + 1];
        FUZZ_CHECK(rdma_token_encode(&t, out, sizeof(out)) == RDMA_TOKEN_LEN);
        FUZZ_CHECK(strcmp(out, s) == 0);
    }
    free(s);

    if (size >= 36) {
        rdma_token_t in, back;
        memcpy(in.session_id, data, 16);
        memcpy(&in.region_id, data + 16, 4);
        memcpy(&in.addr, data + 20, 8);
        memcpy(&in.len, data + 28, 8);
        char out[RDMA_TOKEN_LEN + 1];
        FUZZ_CHECK(rdma_token_encode(&in, out, sizeof(out) - 1) == -1);
        FUZZ_CHECK(rdma_token_encode(&in, out, sizeof(out)) == RDMA_TOKEN_LEN);
        FUZZ_CHECK(rdma_token_decode(out, &back) == 0);
        FUZZ_CHECK(memcmp(in.session_id, back.session_id, 16) == 0 &&
                   in.region_id == back.region_id && in.addr == back.addr && in.len == back.len);
    }
    return 0;
}
