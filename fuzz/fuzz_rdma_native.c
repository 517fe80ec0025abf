/* The native protocol codec of src/rdma/rdma_native_wire.h: the whole input
 * to rdma_native_parse_head, rdma_native_parse_req and
 * rdma_native_parse_reply. Invariants: parse_head accepting reads back the
 * input's own bytes; parse_req accepting ⇒ version 1, a known opcode, zero
 * flags, at most RDMA_NATIVE_MAX_PARAMS params of a known kind, every string
 * NUL-terminated within its limit, a known body kind with the inline body
 * inside the input, no more than RDMA_NATIVE_MAX_META bytes besides it, and
 * rdma_native_encode_req re-encodes exactly the input; parse_reply accepting
 * ⇒ header and body pointers inside the input, and rdma_native_reply_begin
 * (headers as "name\0value\0" pairs, the inline body copied into the space
 * it reserves) re-encodes exactly the input. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "rdma/rdma_native_wire.h"

static uint64_t be(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* p[0..n) lies inside msg[0..len) (an empty span may sit at its end). */
static void inside(const uint8_t *p, size_t n, const uint8_t *msg, size_t len)
{
    FUZZ_CHECK(p != NULL && p >= msg && n <= len && p - msg <= (ptrdiff_t)(len - n));
}

/* A string of the parsed request: in the arena, NUL-terminated, within max. */
static void str_ok(const char *s, const rdma_native_msg_t *m, size_t arena, size_t min, size_t max)
{
    FUZZ_CHECK(s != NULL && s >= m->strings && s < m->strings + arena);
    size_t n = strnlen(s, (size_t)(m->strings + arena - s));
    FUZZ_CHECK(s + n < m->strings + arena); /* the NUL is inside the arena */
    FUZZ_CHECK(n >= min && n <= max);
}

static void check_req(const uint8_t *msg, size_t size, int head_rc, const rdma_native_head_t *h)
{
    rdma_native_msg_t m;
    const char *why = NULL;
    if (rdma_native_parse_req(msg, size, &m, &why) != 0) {
        FUZZ_CHECK(why != NULL && why[0] != '\0');
        FUZZ_CHECK(m.strings == NULL);
        rdma_native_msg_free(&m); /* harmless twice */
        return;
    }
    FUZZ_CHECK(head_rc == 0);
    FUZZ_CHECK(size <= RDMA_NATIVE_MAX_MSG);
    FUZZ_CHECK(m.head.version == RDMA_NATIVE_VERSION && h->version == m.head.version);
    FUZZ_CHECK(m.head.opcode >= 1 && m.head.opcode <= RDMA_OP_MAX && m.head.opcode == h->opcode);
    FUZZ_CHECK(rdma_native_op_name(m.head.opcode) != NULL);
    FUZZ_CHECK(m.head.request_id == h->request_id);
    FUZZ_CHECK(memcmp(m.head.session_id, h->session_id, RDMA_SESSION_ID_LEN) == 0);
    /* flags (big-endian): only the known ones, as parsed */
    uint16_t flags = (uint16_t)(msg[6] << 8 | msg[7]);
    FUZZ_CHECK((flags & ~RDMA_NATIVE_FLAG_PROGRESS) == 0 && m.head.flags == flags);

    /* The arena rdma_native_parse_req allocates (see there). */
    size_t arena = size + 2 + 2 * RDMA_NATIVE_MAX_PARAMS + 1;
    str_ok(m.bucket, &m, arena, 0, RDMA_NATIVE_MAX_BUCKET);
    str_ok(m.key, &m, arena, 0, RDMA_NATIVE_MAX_KEY);
    FUZZ_CHECK(m.n_params <= RDMA_NATIVE_MAX_PARAMS);
    for (unsigned i = 0; i < m.n_params; i++) {
        FUZZ_CHECK(m.params[i].kind == RDMA_PARAM_HEADER || m.params[i].kind == RDMA_PARAM_QUERY);
        str_ok(m.params[i].name, &m, arena, 1, RDMA_NATIVE_MAX_NAME);
        str_ok(m.params[i].value, &m, arena, 0, RDMA_NATIVE_MAX_VALUE);
    }
    size_t inline_len = 0;
    switch (m.body_kind) {
    case RDMA_BODY_NONE:
        FUZZ_CHECK(m.body == NULL && m.body_len == 0);
        break;
    case RDMA_BODY_INLINE:
        FUZZ_CHECK(m.body_len >= 1 && m.body_len <= RDMA_NATIVE_MAX_INLINE);
        inside(m.body, (size_t)m.body_len, msg, size);
        inline_len = (size_t)m.body_len;
        break;
    case RDMA_BODY_REGION:
        FUZZ_CHECK(m.body == NULL && m.body_len == m.body_ref.len);
        break;
    default:
        FUZZ_CHECK(!"unknown body kind accepted");
    }
    FUZZ_CHECK(m.has_out == 0 || m.has_out == 1);
    FUZZ_CHECK(size - inline_len <= RDMA_NATIVE_MAX_META);

    wire_out_t w = {0};
    FUZZ_CHECK(rdma_native_encode_req(&w, &m) == 0);
    FUZZ_CHECK(w.len == size);
    FUZZ_CHECK(memcmp(w.data, msg, size) == 0);
    rdma_wire_free(&w);
    rdma_native_msg_free(&m);
    FUZZ_CHECK(m.strings == NULL);
}

static void check_reply(const uint8_t *msg, size_t size, int head_rc, const rdma_native_head_t *h)
{
    rdma_native_reply_t r;
    if (rdma_native_parse_reply(msg, size, &r) != 0)
        return;
    /* A reply may be shorter than a request's head (no session id). */
    FUZZ_CHECK(size >= 25 && be(msg, 4) == RDMA_NATIVE_MAGIC && msg[4] == RDMA_NATIVE_VERSION);
    FUZZ_CHECK(msg[6] == 0 && msg[7] == 0);
    FUZZ_CHECK(r.opcode == msg[5] && r.request_id == be(msg + 8, 8));
    FUZZ_CHECK(head_rc != 0 || (r.opcode == h->opcode && r.request_id == h->request_id));
    FUZZ_CHECK(r.status == be(msg + 16, 2) && r.error == be(msg + 18, 2));
    FUZZ_CHECK(strnlen(r.s3_request_id, sizeof(r.s3_request_id)) < sizeof(r.s3_request_id));
    FUZZ_CHECK(r.n_headers <= RDMA_NATIVE_MAX_HEADERS);

    int reencodable = size <= RDMA_NATIVE_MAX_MSG;
    size_t hdrs_len = 0;
    for (unsigned i = 0; i < r.n_headers; i++) {
        inside(r.headers[i].name, r.headers[i].name_len, msg, size);
        inside(r.headers[i].value, r.headers[i].value_len, msg, size);
        hdrs_len += (size_t)r.headers[i].name_len + r.headers[i].value_len + 2;
        if (r.headers[i].name_len == 0 || r.headers[i].name_len > RDMA_NATIVE_MAX_NAME ||
            r.headers[i].value_len > RDMA_NATIVE_MAX_VALUE ||
            memchr(r.headers[i].name, '\0', r.headers[i].name_len) ||
            memchr(r.headers[i].value, '\0', r.headers[i].value_len))
            reencodable = 0;
    }
    switch (r.body_kind) {
    case RDMA_BODY_NONE:
        FUZZ_CHECK(r.body == NULL && r.body_len == 0);
        break;
    case RDMA_BODY_INLINE:
        FUZZ_CHECK(r.body_len <= RDMA_NATIVE_MAX_INLINE);
        inside(r.body, (size_t)r.body_len, msg, size);
        break;
    case RDMA_BODY_REGION:
        FUZZ_CHECK(r.body == NULL);
        break;
    default:
        FUZZ_CHECK(!"unknown body kind accepted");
    }
    FUZZ_CHECK(reencodable && "parse_reply accepted what reply_begin cannot encode");

    /* The headers as the server hands them to rdma_native_reply_begin. */
    char *hdrs = malloc(hdrs_len ? hdrs_len : 1);
    FUZZ_CHECK(hdrs != NULL);
    size_t off = 0;
    for (unsigned i = 0; i < r.n_headers; i++) {
        memcpy(hdrs + off, r.headers[i].name, r.headers[i].name_len);
        off += r.headers[i].name_len;
        hdrs[off++] = '\0';
        memcpy(hdrs + off, r.headers[i].value, r.headers[i].value_len);
        off += r.headers[i].value_len;
        hdrs[off++] = '\0';
    }
    wire_out_t w = {0};
    uint8_t *body = NULL;
    FUZZ_CHECK(rdma_native_reply_begin(&w, r.opcode, r.request_id, r.status, r.error,
                                       r.s3_request_id, hdrs, hdrs_len, r.body_kind, r.body_len,
                                       &body) == 0);
    if (r.body_kind == RDMA_BODY_INLINE) {
        FUZZ_CHECK(body != NULL && body >= w.data && body + r.body_len == w.data + w.len);
        if (r.body_len)
            memcpy(body, r.body, (size_t)r.body_len);
    }
    FUZZ_CHECK(w.len == size);
    FUZZ_CHECK(memcmp(w.data, msg, size) == 0);
    rdma_wire_free(&w);
    free(hdrs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *msg = fuzz_copy(data, size);

    rdma_native_head_t h;
    memset(&h, 0, sizeof(h));
    int head_rc = rdma_native_parse_head(msg, size, &h);
    FUZZ_CHECK(head_rc == 0 || head_rc == -1);
    if (head_rc == 0) {
        FUZZ_CHECK(size >= RDMA_NATIVE_FIXED && be(msg, 4) == RDMA_NATIVE_MAGIC);
        FUZZ_CHECK(h.version == msg[4] && h.opcode == msg[5] && h.request_id == be(msg + 8, 8));
        FUZZ_CHECK(memcmp(h.session_id, msg + 16, RDMA_SESSION_ID_LEN) == 0);
        const char *name = rdma_native_op_name(h.opcode);
        FUZZ_CHECK((name != NULL) == (h.opcode >= 1 && h.opcode <= RDMA_OP_MAX));
    } else {
        FUZZ_CHECK(size < RDMA_NATIVE_FIXED || be(msg, 4) != RDMA_NATIVE_MAGIC);
    }
    if (size >= 4)
        FUZZ_CHECK(rdma_native_op_name((unsigned)be(msg, 4)) == NULL || be(msg, 4) <= RDMA_OP_MAX);

    check_req(msg, size, head_rc, &h);
    check_reply(msg, size, head_rc, &h);
    free(msg);
    return 0;
}
