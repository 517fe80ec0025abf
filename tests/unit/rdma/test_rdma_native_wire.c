/* The native protocol codec (src/rdma/rdma_native_wire.h), without UCX:
 * request and reply round trips, every limit at and past its boundary, every
 * truncation, trailing bytes, and each malformed field on its own. The
 * malformed messages are built by raw_req / raw_reply below, a second
 * encoder of docs/protocol.md §4 that lets every length, kind and byte be
 * chosen; it is checked against rdma_native_encode_req first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rdma/rdma_native_wire.h"

/* ---- helpers --------------------------------------------------------------- */

/* A malloc'ed copy of exactly n bytes, so ASan sees any read past them. */
static uint8_t *dup_exact(const void *p, size_t n)
{
    uint8_t *c = malloc(n ? n : 1);
    assert_non_null(c);
    if (n)
        memcpy(c, p, n);
    return c;
}

/* Encodes m and returns the message as an exact-size copy. */
static uint8_t *encode(const rdma_native_msg_t *m, size_t *len)
{
    wire_out_t w = {0};
    assert_int_equal(rdma_native_encode_req(&w, m), 0);
    uint8_t *c = dup_exact(w.data, w.len);
    *len = w.len;
    rdma_wire_free(&w);
    return c;
}

static int encode_rc(const rdma_native_msg_t *m)
{
    wire_out_t w = {0};
    int rc = rdma_native_encode_req(&w, m);
    rdma_wire_free(&w);
    return rc;
}

/* Parses len bytes (an exact copy) and expects a refusal for `reason`. */
static void expect_reject(const uint8_t *msg, size_t len, const char *reason)
{
    uint8_t *c = dup_exact(msg, len);
    rdma_native_msg_t m;
    const char *why = NULL;
    assert_int_equal(rdma_native_parse_req(c, len, &m, &why), -1);
    assert_non_null(why);
    if (reason)
        assert_string_equal(why, reason);
    assert_null(m.strings);
    free(c);
}

static const char *const MALFORMED = "malformed, truncated or oversized field";

static void same_ref(const rdma_native_ref_t *a, const rdma_native_ref_t *b)
{
    assert_int_equal(a->region_id, b->region_id);
    assert_int_equal(a->addr, b->addr);
    assert_int_equal(a->len, b->len);
}

static void same_msg(const rdma_native_msg_t *a, const rdma_native_msg_t *b)
{
    assert_int_equal(a->head.version, RDMA_NATIVE_VERSION);
    assert_int_equal(a->head.opcode, b->head.opcode);
    assert_int_equal(a->head.request_id, b->head.request_id);
    assert_memory_equal(a->head.session_id, b->head.session_id, RDMA_SESSION_ID_LEN);
    assert_string_equal(a->bucket, b->bucket);
    assert_string_equal(a->key, b->key);
    assert_int_equal(a->reply_inline_max, b->reply_inline_max);
    assert_int_equal(a->n_params, b->n_params);
    for (unsigned i = 0; i < a->n_params; i++) {
        assert_int_equal(a->params[i].kind, b->params[i].kind);
        assert_string_equal(a->params[i].name, b->params[i].name);
        assert_string_equal(a->params[i].value, b->params[i].value);
    }
    assert_int_equal(a->body_kind, b->body_kind);
    assert_int_equal(a->body_len, b->body_len);
    if (a->body_kind == RDMA_BODY_INLINE)
        assert_memory_equal(a->body, b->body, (size_t)a->body_len);
    if (a->body_kind == RDMA_BODY_REGION)
        same_ref(&a->body_ref, &b->body_ref);
    assert_int_equal(a->has_out, b->has_out);
    if (a->has_out)
        same_ref(&a->out, &b->out);
}

/* Encodes m, parses it back (equal to m, body inside the message),
 * re-encodes it (the same bytes) and checks every truncation is refused. */
static void round_trip(const rdma_native_msg_t *m, int truncations)
{
    size_t len;
    uint8_t *msg = encode(m, &len);
    rdma_native_msg_t p;
    const char *why = NULL;
    assert_int_equal(rdma_native_parse_req(msg, len, &p, &why), 0);
    same_msg(&p, m);
    if (p.body_kind == RDMA_BODY_INLINE)
        assert_true(p.body > msg && p.body + p.body_len == msg + len - 1 - (p.has_out ? 20 : 0));
    size_t len2;
    uint8_t *again = encode(&p, &len2);
    assert_int_equal(len2, len);
    assert_memory_equal(again, msg, len);
    free(again);
    rdma_native_msg_free(&p);
    assert_null(p.strings);
    for (size_t n = 0; truncations && n < len; n++)
        expect_reject(msg, n, NULL);
    free(msg);
}

static const uint8_t SID[RDMA_SESSION_ID_LEN] = {0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
                                                 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf};

/* A valid request with a header and a query parameter and no body. */
static rdma_native_msg_t base_msg(uint8_t op)
{
    rdma_native_msg_t m = {0};
    m.head.version = RDMA_NATIVE_VERSION;
    m.head.opcode = op;
    m.head.request_id = 0x0102030405060708ull;
    memcpy(m.head.session_id, SID, sizeof(SID));
    m.bucket = "bkt";
    m.key = "dir/obj.txt";
    m.reply_inline_max = 65536;
    m.params[0] = (rdma_native_param_t){RDMA_PARAM_HEADER, "content-type", "text/plain"};
    m.params[1] = (rdma_native_param_t){RDMA_PARAM_QUERY, "uploadId", "VXBsb2FkIElE"};
    m.params[2] = (rdma_native_param_t){RDMA_PARAM_QUERY, "delete", ""};
    m.n_params = 3;
    m.body_kind = RDMA_BODY_NONE;
    return m;
}

/* ---- a second request encoder, for malformed messages ---------------------- */

typedef struct raw_param {
    uint8_t kind;
    const char *name, *value;
    size_t name_len, value_len;
} raw_param_t;

typedef struct raw_req {
    uint32_t magic;
    uint8_t version, opcode;
    uint16_t flags;
    const char *bucket, *key;
    size_t bucket_len, key_len;
    unsigned n_params; /* written as is */
    const raw_param_t *params;
    unsigned params_present; /* how many of params are written */
    uint8_t body_kind;
    uint32_t body_len; /* inline: the length written; body_present bytes follow */
    size_t body_present;
    uint8_t out_kind;
} raw_req_t;

static const raw_param_t RAW_PARAMS[2] = {
    {RDMA_PARAM_HEADER, "content-type", "text/plain", 12, 10},
    {RDMA_PARAM_QUERY, "partNumber", "2", 10, 1},
};

static raw_req_t raw_default(void)
{
    return (raw_req_t){.magic = RDMA_NATIVE_MAGIC,
                       .version = RDMA_NATIVE_VERSION,
                       .opcode = RDMA_OP_PUT_OBJECT,
                       .bucket = "bkt",
                       .bucket_len = 3,
                       .key = "obj",
                       .key_len = 3,
                       .n_params = 2,
                       .params = RAW_PARAMS,
                       .params_present = 2,
                       .body_kind = RDMA_BODY_INLINE,
                       .body_len = 5,
                       .body_present = 5,
                       .out_kind = 1};
}

static void raw_str(wire_out_t *w, const char *s, size_t n)
{
    rdma_wire_put_u16(w, (uint16_t)n);
    rdma_wire_put_bytes(w, s, n);
}

static void raw_ref(wire_out_t *w)
{
    rdma_wire_put_u32(w, 7);
    rdma_wire_put_u64(w, 0x7f0000001000ull);
    rdma_wire_put_u64(w, 4096);
}

static uint8_t *raw_build(const raw_req_t *q, size_t *len)
{
    wire_out_t w = {.limit = 4u << 20};
    rdma_wire_put_u32(&w, q->magic);
    rdma_wire_put_u8(&w, q->version);
    rdma_wire_put_u8(&w, q->opcode);
    rdma_wire_put_u16(&w, q->flags);
    rdma_wire_put_u64(&w, 42);
    rdma_wire_put_bytes(&w, SID, sizeof(SID));
    raw_str(&w, q->bucket, q->bucket_len);
    raw_str(&w, q->key, q->key_len);
    rdma_wire_put_u32(&w, 1024);
    rdma_wire_put_u16(&w, (uint16_t)q->n_params);
    for (unsigned i = 0; i < q->params_present; i++) {
        rdma_wire_put_u8(&w, q->params[i].kind);
        raw_str(&w, q->params[i].name, q->params[i].name_len);
        raw_str(&w, q->params[i].value, q->params[i].value_len);
    }
    rdma_wire_put_u8(&w, q->body_kind);
    if (q->body_kind == RDMA_BODY_INLINE) {
        rdma_wire_put_u32(&w, q->body_len);
        uint8_t *b = rdma_wire_put_space(&w, q->body_present);
        if (b && q->body_present)
            memset(b, 'x', q->body_present);
    } else if (q->body_kind == RDMA_BODY_REGION) {
        raw_ref(&w);
    }
    rdma_wire_put_u8(&w, q->out_kind);
    if (q->out_kind == 1)
        raw_ref(&w);
    assert_int_equal(w.err, 0);
    uint8_t *c = dup_exact(w.data, w.len);
    *len = w.len;
    rdma_wire_free(&w);
    return c;
}

static void raw_reject(const raw_req_t *q, const char *reason)
{
    size_t len;
    uint8_t *msg = raw_build(q, &len);
    expect_reject(msg, len, reason);
    free(msg);
}

/* ---- requests -------------------------------------------------------------- */

static void test_req_every_opcode(void **state)
{
    (void)state;
    static const uint8_t body[] = "<Delete><Object><Key>a</Key></Object></Delete>";
    for (unsigned op = 1; op <= RDMA_OP_MAX; op++) {
        assert_non_null(rdma_native_op_name(op));
        rdma_native_msg_t m = base_msg((uint8_t)op);
        switch (op % 3) {
        case 0:
            m.body_kind = RDMA_BODY_INLINE;
            m.body = body;
            m.body_len = sizeof(body) - 1;
            break;
        case 1:
            m.body_kind = RDMA_BODY_REGION;
            m.body_ref = (rdma_native_ref_t){op, 0x7f0000000000ull + op, 1ull << op};
            m.body_len = m.body_ref.len;
            break;
        default:
            break;
        }
        if (op % 2 == 0) {
            m.has_out = 1;
            m.out = (rdma_native_ref_t){100 + op, 0x7f1000000000ull, 65536};
        }
        round_trip(&m, 1);
    }
    assert_string_equal(rdma_native_op_name(RDMA_OP_GET_OBJECT), "GetObject");
    assert_null(rdma_native_op_name(0));
    assert_null(rdma_native_op_name(RDMA_OP_MAX + 1));
    assert_null(rdma_native_op_name(~0u));
}

static void test_req_bodies_and_refs(void **state)
{
    (void)state;
    /* An inline body of exactly RDMA_NATIVE_MAX_INLINE bytes. */
    uint8_t *big = malloc(RDMA_NATIVE_MAX_INLINE);
    for (size_t i = 0; i < RDMA_NATIVE_MAX_INLINE; i++)
        big[i] = (uint8_t)(i * 31);
    rdma_native_msg_t m = base_msg(RDMA_OP_PUT_OBJECT);
    m.body_kind = RDMA_BODY_INLINE;
    m.body = big;
    m.body_len = RDMA_NATIVE_MAX_INLINE;
    round_trip(&m, 0);
    /* One byte: the smallest inline body. */
    m.body_len = 1;
    round_trip(&m, 1);
    free(big);
    /* A region body and an out ref at the extremes of their fields. */
    m = base_msg(RDMA_OP_UPLOAD_PART);
    m.body_kind = RDMA_BODY_REGION;
    m.body_ref = (rdma_native_ref_t){UINT32_MAX, UINT64_MAX, UINT64_MAX};
    m.body_len = UINT64_MAX;
    m.has_out = 1;
    m.out = (rdma_native_ref_t){0, 0, 0};
    round_trip(&m, 1);
    /* An out ref alone (GET into a registered region). */
    m = base_msg(RDMA_OP_GET_OBJECT);
    m.has_out = 1;
    m.out = (rdma_native_ref_t){3, 0x7f0000100000ull, 1u << 20};
    round_trip(&m, 1);
    /* No params, empty bucket and key (ListBuckets). */
    m = base_msg(RDMA_OP_LIST_BUCKETS);
    m.bucket = m.key = "";
    m.n_params = 0;
    round_trip(&m, 1);
}

static void test_req_limits_accepted(void **state)
{
    (void)state;
    static char bucket[RDMA_NATIVE_MAX_BUCKET + 1], key[RDMA_NATIVE_MAX_KEY + 1];
    static char name[RDMA_NATIVE_MAX_NAME + 1], value[RDMA_NATIVE_MAX_VALUE + 1];
    memset(bucket, 'b', RDMA_NATIVE_MAX_BUCKET);
    memset(key, 'k', RDMA_NATIVE_MAX_KEY);
    memset(name, 'n', RDMA_NATIVE_MAX_NAME);
    memset(value, 'v', RDMA_NATIVE_MAX_VALUE);
    rdma_native_msg_t m = base_msg(RDMA_OP_PUT_OBJECT);
    m.bucket = bucket;
    m.key = key;
    m.params[0].name = name;
    m.params[0].value = value;
    round_trip(&m, 0);
    /* RDMA_NATIVE_MAX_PARAMS params. */
    m = base_msg(RDMA_OP_LIST_OBJECTS);
    for (unsigned i = 0; i < RDMA_NATIVE_MAX_PARAMS; i++)
        m.params[i] = (rdma_native_param_t){i % 2 ? RDMA_PARAM_QUERY : RDMA_PARAM_HEADER, "p", "v"};
    m.n_params = RDMA_NATIVE_MAX_PARAMS;
    round_trip(&m, 0);
}

static void test_req_head(void **state)
{
    (void)state;
    rdma_native_msg_t m = base_msg(RDMA_OP_HEAD_OBJECT);
    size_t len;
    uint8_t *msg = encode(&m, &len);
    rdma_native_head_t h;
    assert_int_equal(rdma_native_parse_head(msg, len, &h), 0);
    assert_int_equal(h.version, RDMA_NATIVE_VERSION);
    assert_int_equal(h.opcode, RDMA_OP_HEAD_OBJECT);
    assert_int_equal(h.request_id, m.head.request_id);
    assert_memory_equal(h.session_id, SID, sizeof(SID));
    /* The head alone is enough; one byte less is not. */
    assert_int_equal(rdma_native_parse_head(msg, RDMA_NATIVE_FIXED, &h), 0);
    uint8_t *shorter = dup_exact(msg, RDMA_NATIVE_FIXED - 1);
    assert_int_equal(rdma_native_parse_head(shorter, RDMA_NATIVE_FIXED - 1, &h), -1);
    free(shorter);
    /* Version and opcode come back unchecked, so an error can name them. */
    msg[4] = 9;
    msg[5] = 200;
    assert_int_equal(rdma_native_parse_head(msg, len, &h), 0);
    assert_int_equal(h.version, 9);
    assert_int_equal(h.opcode, 200);
    free(msg);
}

static void test_req_reject_head_fields(void **state)
{
    (void)state;
    /* The raw encoder agrees with rdma_native_encode_req. */
    raw_req_t q = raw_default();
    size_t len;
    uint8_t *msg = raw_build(&q, &len);
    rdma_native_msg_t m;
    const char *why;
    assert_int_equal(rdma_native_parse_req(msg, len, &m, &why), 0);
    size_t len2;
    uint8_t *again = encode(&m, &len2);
    assert_int_equal(len2, len);
    assert_memory_equal(again, msg, len);
    free(again);
    rdma_native_msg_free(&m);
    rdma_native_head_t h;

    /* Wrong magic. */
    msg[0] ^= 1;
    assert_int_equal(rdma_native_parse_head(msg, len, &h), -1);
    expect_reject(msg, len, "truncated head or bad magic");
    free(msg);

    q = raw_default();
    q.version = RDMA_NATIVE_VERSION + 1;
    raw_reject(&q, "unsupported version");
    q.version = 0;
    raw_reject(&q, "unsupported version");

    q = raw_default();
    q.opcode = 0;
    raw_reject(&q, "unknown opcode");
    q.opcode = RDMA_OP_MAX + 1;
    raw_reject(&q, "unknown opcode");
    q.opcode = 255;
    raw_reject(&q, "unknown opcode");

    q = raw_default();
    q.flags = 2;
    raw_reject(&q, "unknown flags");
    q.flags = 0x8000;
    raw_reject(&q, "unknown flags");
    q.flags = RDMA_NATIVE_FLAG_PROGRESS | 0x8000;
    raw_reject(&q, "unknown flags");
}

/* RDMA_NATIVE_FLAG_PROGRESS is the one flag a request may carry: parsed,
 * kept, and encoded again as it came; the encoder refuses any other. */
static void test_req_progress_flag(void **state)
{
    (void)state;
    raw_req_t q = raw_default();
    q.flags = RDMA_NATIVE_FLAG_PROGRESS;
    size_t len;
    uint8_t *msg = raw_build(&q, &len);
    rdma_native_msg_t m;
    const char *why;
    assert_int_equal(rdma_native_parse_req(msg, len, &m, &why), 0);
    assert_int_equal(m.head.flags, RDMA_NATIVE_FLAG_PROGRESS);
    size_t len2;
    uint8_t *again = encode(&m, &len2);
    assert_int_equal(len2, len);
    assert_memory_equal(again, msg, len);
    free(again);
    m.head.flags = 2;
    wire_out_t w = {0};
    assert_int_equal(rdma_native_encode_req(&w, &m), -1);
    rdma_wire_free(&w);
    rdma_native_msg_free(&m);
    free(msg);
}

/* A progress message: the reply's head with flags 0, then a u64; exactly
 * that many bytes. */
static void test_progress_message(void **state)
{
    (void)state;
    uint8_t msg[RDMA_NATIVE_PROGRESS_LEN];
    rdma_native_encode_progress(msg, RDMA_OP_GET_OBJECT, 0x0102030405060708ull,
                                0x1122334455667788ull);
    static const uint8_t want[RDMA_NATIVE_PROGRESS_LEN] = {0x53,
                                                           0x33,
                                                           0x52,
                                                           0x4E,
                                                           RDMA_NATIVE_VERSION,
                                                           RDMA_OP_GET_OBJECT,
                                                           0,
                                                           0,
                                                           1,
                                                           2,
                                                           3,
                                                           4,
                                                           5,
                                                           6,
                                                           7,
                                                           8,
                                                           0x11,
                                                           0x22,
                                                           0x33,
                                                           0x44,
                                                           0x55,
                                                           0x66,
                                                           0x77,
                                                           0x88};
    assert_memory_equal(msg, want, sizeof(want));
    uint64_t id = 0, bytes = 0;
    assert_int_equal(rdma_native_parse_progress(msg, sizeof(msg), &id, &bytes), 0);
    assert_true(id == 0x0102030405060708ull && bytes == 0x1122334455667788ull);
    /* Truncated, trailing bytes, wrong magic, version or flags. */
    uint8_t longer[RDMA_NATIVE_PROGRESS_LEN + 1] = {0};
    memcpy(longer, msg, sizeof(msg));
    assert_int_equal(rdma_native_parse_progress(longer, sizeof(longer), &id, &bytes), -1);
    assert_int_equal(rdma_native_parse_progress(msg, sizeof(msg) - 1, &id, &bytes), -1);
    assert_int_equal(rdma_native_parse_progress(msg, 0, &id, &bytes), -1);
    for (size_t at = 0; at < 8; at++) {
        if (at == 5)
            continue; /* the opcode is not judged */
        uint8_t bad[RDMA_NATIVE_PROGRESS_LEN];
        memcpy(bad, msg, sizeof(bad));
        bad[at] ^= 0x40;
        assert_int_equal(rdma_native_parse_progress(bad, sizeof(bad), &id, &bytes), -1);
    }
}

static void test_req_reject_truncated_and_trailing(void **state)
{
    (void)state;
    raw_req_t q = raw_default();
    size_t len;
    uint8_t *msg = raw_build(&q, &len);
    for (size_t n = 0; n < len; n++)
        expect_reject(msg, n, NULL);
    /* A region body, no out ref. */
    q.body_kind = RDMA_BODY_REGION;
    q.out_kind = 0;
    uint8_t *msg2 = raw_build(&q, &len);
    for (size_t n = 0; n < len; n++)
        expect_reject(msg2, n, NULL);
    free(msg2);
    /* One trailing byte after a valid message. */
    q = raw_default();
    free(msg);
    msg = raw_build(&q, &len);
    uint8_t *longer = malloc(len + 1);
    memcpy(longer, msg, len);
    longer[len] = 0;
    expect_reject(longer, len + 1, MALFORMED);
    free(longer);
    free(msg);
}

static void test_req_reject_params(void **state)
{
    (void)state;
    static raw_param_t many[RDMA_NATIVE_MAX_PARAMS + 1];
    for (unsigned i = 0; i <= RDMA_NATIVE_MAX_PARAMS; i++)
        many[i] = (raw_param_t){RDMA_PARAM_QUERY, "p", "v", 1, 1};
    raw_req_t q = raw_default();
    q.params = many;
    q.n_params = q.params_present = RDMA_NATIVE_MAX_PARAMS + 1;
    raw_reject(&q, "too many parameters");
    q.n_params = q.params_present = RDMA_NATIVE_MAX_PARAMS; /* the limit itself parses */
    size_t len;
    uint8_t *msg = raw_build(&q, &len);
    rdma_native_msg_t m;
    const char *why;
    assert_int_equal(rdma_native_parse_req(msg, len, &m, &why), 0);
    assert_int_equal(m.n_params, RDMA_NATIVE_MAX_PARAMS);
    rdma_native_msg_free(&m);
    free(msg);

    /* The count says more params than there are. */
    q = raw_default();
    q.n_params = 3;
    raw_reject(&q, MALFORMED);

    static char name[RDMA_NATIVE_MAX_NAME + 1], value[RDMA_NATIVE_MAX_VALUE + 1];
    memset(name, 'n', sizeof(name));
    memset(value, 'v', sizeof(value));
    raw_param_t one[1];
    q = raw_default();
    q.params = one;
    q.n_params = q.params_present = 1;

    one[0] = (raw_param_t){RDMA_PARAM_HEADER, name, "v", RDMA_NATIVE_MAX_NAME + 1, 1};
    raw_reject(&q, MALFORMED); /* name too long */
    one[0] = (raw_param_t){RDMA_PARAM_HEADER, "n", value, 1, RDMA_NATIVE_MAX_VALUE + 1};
    raw_reject(&q, MALFORMED); /* value too long */
    one[0] = (raw_param_t){RDMA_PARAM_HEADER, "", "v", 0, 1};
    raw_reject(&q, MALFORMED); /* empty name */
    one[0] = (raw_param_t){0, "n", "v", 1, 1};
    raw_reject(&q, MALFORMED); /* kind 0 */
    one[0] = (raw_param_t){RDMA_PARAM_QUERY + 1, "n", "v", 1, 1};
    raw_reject(&q, MALFORMED); /* kind 3 */
    one[0] = (raw_param_t){RDMA_PARAM_HEADER, "a\0b", "v", 3, 1};
    raw_reject(&q, MALFORMED); /* NUL in a name */
    one[0] = (raw_param_t){RDMA_PARAM_HEADER, "n", "v\0w", 1, 3};
    raw_reject(&q, MALFORMED); /* NUL in a value */
    one[0] = (raw_param_t){RDMA_PARAM_HEADER, "n", "", 1, 0};
    size_t l2;
    uint8_t *ok = raw_build(&q, &l2); /* ... but an empty value is fine */
    assert_int_equal(rdma_native_parse_req(ok, l2, &m, &why), 0);
    rdma_native_msg_free(&m);
    free(ok);
}

static void test_req_reject_strings(void **state)
{
    (void)state;
    static char bucket[RDMA_NATIVE_MAX_BUCKET + 1], key[RDMA_NATIVE_MAX_KEY + 1];
    memset(bucket, 'b', sizeof(bucket));
    memset(key, 'k', sizeof(key));
    raw_req_t q = raw_default();
    q.bucket = bucket;
    q.bucket_len = RDMA_NATIVE_MAX_BUCKET + 1;
    raw_reject(&q, MALFORMED);
    q = raw_default();
    q.key = key;
    q.key_len = RDMA_NATIVE_MAX_KEY + 1;
    raw_reject(&q, MALFORMED);
    q = raw_default();
    q.bucket = "b\0t";
    q.bucket_len = 3;
    raw_reject(&q, MALFORMED); /* NUL in the bucket */
    q = raw_default();
    q.key = "\0";
    q.key_len = 1;
    raw_reject(&q, MALFORMED); /* NUL in the key */
}

static void test_req_reject_bodies(void **state)
{
    (void)state;
    raw_req_t q = raw_default();
    q.body_kind = 3;
    raw_reject(&q, MALFORMED); /* unknown body kind */
    q.body_kind = 0xff;
    raw_reject(&q, MALFORMED);

    q = raw_default();
    q.body_len = RDMA_NATIVE_MAX_INLINE + 1;
    q.body_present = RDMA_NATIVE_MAX_INLINE + 1;
    q.out_kind = 0;
    raw_reject(&q, MALFORMED); /* inline body over the maximum */

    q = raw_default();
    q.body_len = 0;
    q.body_present = 0;
    raw_reject(&q, MALFORMED); /* zero-length inline body */

    q = raw_default();
    q.body_len = 6; /* one byte more than present */
    raw_reject(&q, MALFORMED);

    q = raw_default();
    q.out_kind = 2;
    raw_reject(&q, MALFORMED); /* unknown out kind */
}

/* Fills the values of m's params (all of them, names already set) so the
 * encoded request is exactly target bytes; values point into store. */
static void fill_to(rdma_native_msg_t *m, size_t target, char *store)
{
    for (unsigned i = 0; i < m->n_params; i++)
        m->params[i].value = "";
    size_t len;
    free(encode(m, &len));
    assert_true(target >= len);
    size_t need = target - len, off = 0;
    for (unsigned i = 0; i < m->n_params; i++) {
        size_t n = need / m->n_params + (i < need % m->n_params);
        assert_true(n <= RDMA_NATIVE_MAX_VALUE);
        memset(store + off, 'v', n);
        store[off + n] = '\0';
        m->params[i].value = store + off;
        off += n + 1;
    }
}

static void test_req_meta_and_msg_limits(void **state)
{
    (void)state;
    static char store[RDMA_NATIVE_MAX_MSG];
    rdma_native_msg_t m = base_msg(RDMA_OP_PUT_OBJECT);
    m.n_params = 6;
    for (unsigned i = 0; i < m.n_params; i++)
        m.params[i] = (rdma_native_param_t){RDMA_PARAM_HEADER, "x-amz-meta-x", ""};

    /* Without a body: RDMA_NATIVE_MAX_META bytes parse, one more does not. */
    fill_to(&m, RDMA_NATIVE_MAX_META, store);
    round_trip(&m, 0);
    fill_to(&m, RDMA_NATIVE_MAX_META + 1, store);
    size_t len;
    assert_int_equal(encode_rc(&m), -1); /* the encoder refuses what the parser would */
    /* ... and the parser refuses it when another encoder sends it. */
    static char big[RDMA_NATIVE_MAX_VALUE];
    memset(big, 'v', sizeof(big));
    raw_param_t bigp[5];
    for (int i = 0; i < 5; i++)
        bigp[i] = (raw_param_t){RDMA_PARAM_HEADER, "x-amz-meta-x", big, 12, sizeof(big)};
    raw_req_t q = raw_default();
    q.params = bigp;
    q.n_params = q.params_present = 5;
    q.body_kind = RDMA_BODY_NONE;
    raw_reject(&q, "request fields too large");

    /* With an inline body of the maximum: a message of RDMA_NATIVE_MAX_MSG. */
    uint8_t *body = calloc(1, RDMA_NATIVE_MAX_INLINE);
    m.body_kind = RDMA_BODY_INLINE;
    m.body = body;
    m.body_len = RDMA_NATIVE_MAX_INLINE;
    fill_to(&m, RDMA_NATIVE_MAX_MSG, store);
    uint8_t *msg = encode(&m, &len);
    assert_int_equal(len, RDMA_NATIVE_MAX_MSG);
    rdma_native_msg_t p;
    const char *why;
    assert_int_equal(rdma_native_parse_req(msg, len, &p, &why), 0);
    rdma_native_msg_free(&p);
    /* ... and one byte more is a message over the maximum. */
    uint8_t *longer = malloc(len + 1);
    memcpy(longer, msg, len);
    longer[len] = 0;
    expect_reject(longer, len + 1, "message too large");
    free(longer);
    free(msg);
    /* The encoder refuses a message past RDMA_NATIVE_MAX_MSG. */
    fill_to(&m, RDMA_NATIVE_MAX_MSG + 1, store);
    assert_int_equal(encode_rc(&m), -1);
    free(body);
}

static void test_encode_refuses(void **state)
{
    (void)state;
    static char bucket[RDMA_NATIVE_MAX_BUCKET + 2], key[RDMA_NATIVE_MAX_KEY + 2];
    static char name[RDMA_NATIVE_MAX_NAME + 2], value[RDMA_NATIVE_MAX_VALUE + 2];
    memset(bucket, 'b', RDMA_NATIVE_MAX_BUCKET + 1);
    memset(key, 'k', RDMA_NATIVE_MAX_KEY + 1);
    memset(name, 'n', RDMA_NATIVE_MAX_NAME + 1);
    memset(value, 'v', RDMA_NATIVE_MAX_VALUE + 1);
    static uint8_t body[RDMA_NATIVE_MAX_INLINE + 1];

    rdma_native_msg_t m = base_msg(RDMA_OP_PUT_OBJECT);
    assert_int_equal(encode_rc(&m), 0);
    m.bucket = bucket;
    assert_int_equal(encode_rc(&m), -1);
    m = base_msg(RDMA_OP_PUT_OBJECT);
    m.key = key;
    assert_int_equal(encode_rc(&m), -1);
    m = base_msg(RDMA_OP_PUT_OBJECT);
    m.params[1].name = name;
    assert_int_equal(encode_rc(&m), -1);
    m = base_msg(RDMA_OP_PUT_OBJECT);
    m.params[1].value = value;
    assert_int_equal(encode_rc(&m), -1);
    m = base_msg(RDMA_OP_PUT_OBJECT);
    for (unsigned i = 0; i < RDMA_NATIVE_MAX_PARAMS; i++)
        m.params[i] = (rdma_native_param_t){RDMA_PARAM_QUERY, "p", "v"};
    m.n_params = RDMA_NATIVE_MAX_PARAMS + 1; /* the struct holds no more: never read */
    assert_int_equal(encode_rc(&m), -1);
    m = base_msg(RDMA_OP_PUT_OBJECT);
    m.body_kind = RDMA_BODY_INLINE;
    m.body = body;
    m.body_len = RDMA_NATIVE_MAX_INLINE + 1;
    assert_int_equal(encode_rc(&m), -1);
    m.body_len = 0;
    assert_int_equal(encode_rc(&m), -1);
    m.body_len = RDMA_NATIVE_MAX_INLINE;
    assert_int_equal(encode_rc(&m), 0);
}

/* ---- replies --------------------------------------------------------------- */

typedef struct raw_hdr {
    const char *name, *value;
    size_t name_len, value_len;
} raw_hdr_t;

typedef struct raw_reply {
    uint8_t version;
    uint16_t flags;
    const char *s3id;
    size_t s3id_len;
    unsigned n_headers;
    const raw_hdr_t *hdrs;
    unsigned hdrs_present;
    uint8_t body_kind;
    uint32_t body_len;
    size_t body_present;
} raw_reply_t;

static const raw_hdr_t RAW_HDRS[2] = {{"ETag", "\"abc\"", 4, 5}, {"Content-Length", "3", 14, 1}};

static raw_reply_t raw_reply_default(void)
{
    return (raw_reply_t){.version = RDMA_NATIVE_VERSION,
                         .s3id = "REQ1",
                         .s3id_len = 4,
                         .n_headers = 2,
                         .hdrs = RAW_HDRS,
                         .hdrs_present = 2,
                         .body_kind = RDMA_BODY_INLINE,
                         .body_len = 3,
                         .body_present = 3};
}

static uint8_t *raw_reply_build(const raw_reply_t *q, size_t *len)
{
    wire_out_t w = {.limit = 4u << 20};
    rdma_wire_put_u32(&w, RDMA_NATIVE_MAGIC);
    rdma_wire_put_u8(&w, q->version);
    rdma_wire_put_u8(&w, RDMA_OP_GET_OBJECT);
    rdma_wire_put_u16(&w, q->flags);
    rdma_wire_put_u64(&w, 77);
    rdma_wire_put_u16(&w, 200);
    rdma_wire_put_u16(&w, 0);
    raw_str(&w, q->s3id, q->s3id_len);
    rdma_wire_put_u16(&w, (uint16_t)q->n_headers);
    for (unsigned i = 0; i < q->hdrs_present; i++) {
        raw_str(&w, q->hdrs[i].name, q->hdrs[i].name_len);
        raw_str(&w, q->hdrs[i].value, q->hdrs[i].value_len);
    }
    rdma_wire_put_u8(&w, q->body_kind);
    if (q->body_kind == RDMA_BODY_INLINE) {
        rdma_wire_put_u32(&w, q->body_len);
        uint8_t *b = rdma_wire_put_space(&w, q->body_present);
        if (b && q->body_present)
            memset(b, 'y', q->body_present);
    } else if (q->body_kind == RDMA_BODY_REGION) {
        rdma_wire_put_u64(&w, 12345);
    }
    assert_int_equal(w.err, 0);
    uint8_t *c = dup_exact(w.data, w.len);
    *len = w.len;
    rdma_wire_free(&w);
    return c;
}

static int parse_reply_copy(const uint8_t *msg, size_t len)
{
    uint8_t *c = dup_exact(msg, len);
    rdma_native_reply_t r;
    int rc = rdma_native_parse_reply(c, len, &r);
    free(c);
    return rc;
}

static void raw_reply_reject(const raw_reply_t *q)
{
    size_t len;
    uint8_t *msg = raw_reply_build(q, &len);
    assert_int_equal(parse_reply_copy(msg, len), -1);
    free(msg);
}

static void test_reply_round_trip(void **state)
{
    (void)state;
    static const char hdrs[] = "ETag\0\"5eb63bbbe01eeed093cb22bb8f5acdc3\"\0"
                               "Content-Type\0text/plain\0"
                               "x-amz-meta-empty\0\0";
    wire_out_t w = {0};
    uint8_t *body = NULL;
    assert_int_equal(rdma_native_reply_begin(&w, RDMA_OP_GET_OBJECT, 99, 200, 0, "REQ-1", hdrs,
                                             sizeof(hdrs) - 1, RDMA_BODY_INLINE, 11, &body),
                     0);
    assert_non_null(body);
    memcpy(body, "hello world", 11);
    uint8_t *msg = dup_exact(w.data, w.len);
    size_t len = w.len;
    rdma_wire_free(&w);
    rdma_native_reply_t r;
    assert_int_equal(rdma_native_parse_reply(msg, len, &r), 0);
    assert_int_equal(r.opcode, RDMA_OP_GET_OBJECT);
    assert_int_equal(r.request_id, 99);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.error, 0);
    assert_string_equal(r.s3_request_id, "REQ-1");
    assert_int_equal(r.n_headers, 3);
    assert_int_equal(r.headers[0].name_len, 4);
    assert_memory_equal(r.headers[0].name, "ETag", 4);
    assert_int_equal(r.headers[0].value_len, 34);
    assert_memory_equal(r.headers[1].name, "Content-Type", 12);
    assert_memory_equal(r.headers[1].value, "text/plain", 10);
    assert_int_equal(r.headers[2].name_len, 16);
    assert_int_equal(r.headers[2].value_len, 0);
    assert_int_equal(r.body_kind, RDMA_BODY_INLINE);
    assert_int_equal(r.body_len, 11);
    assert_true(r.body == msg + len - 11);
    assert_memory_equal(r.body, "hello world", 11);
    /* Every truncation and a trailing byte are refused. */
    for (size_t n = 0; n < len; n++)
        assert_int_equal(parse_reply_copy(msg, n), -1);
    uint8_t *longer = malloc(len + 1);
    memcpy(longer, msg, len);
    longer[len] = 0;
    assert_int_equal(parse_reply_copy(longer, len + 1), -1);
    free(longer);
    free(msg);

    /* The body in the out region: only its length travels. */
    assert_int_equal(rdma_native_reply_begin(&w, RDMA_OP_GET_OBJECT, 5, 206, 0, "", NULL, 0,
                                             RDMA_BODY_REGION, 1ull << 40, NULL),
                     0);
    assert_int_equal(rdma_native_parse_reply(w.data, w.len, &r), 0);
    assert_int_equal(r.status, 206);
    assert_int_equal(r.n_headers, 0);
    assert_int_equal(r.body_kind, RDMA_BODY_REGION);
    assert_int_equal(r.body_len, 1ull << 40);
    assert_null(r.body);
    rdma_wire_free(&w);

    /* An error that never reached S3: no id, no headers, no body. */
    assert_int_equal(
        rdma_native_reply_begin(&w, 200, 6, 0, 9, NULL, NULL, 0, RDMA_BODY_NONE, 0, NULL), 0);
    assert_int_equal(w.len, 25);
    assert_int_equal(rdma_native_parse_reply(w.data, w.len, &r), 0);
    assert_int_equal(r.opcode, 200);
    assert_int_equal(r.error, 9);
    assert_string_equal(r.s3_request_id, "");
    assert_int_equal(r.body_kind, RDMA_BODY_NONE);
    rdma_wire_free(&w);

    /* An inline body of the maximum. */
    assert_int_equal(rdma_native_reply_begin(&w, 2, 7, 200, 0, "x", NULL, 0, RDMA_BODY_INLINE,
                                             RDMA_NATIVE_MAX_INLINE, &body),
                     0);
    memset(body, 'z', RDMA_NATIVE_MAX_INLINE);
    assert_int_equal(rdma_native_parse_reply(w.data, w.len, &r), 0);
    assert_int_equal(r.body_len, RDMA_NATIVE_MAX_INLINE);
    rdma_wire_free(&w);
}

static void test_reply_reject(void **state)
{
    (void)state;
    raw_reply_t q = raw_reply_default();
    size_t len;
    uint8_t *msg = raw_reply_build(&q, &len);
    assert_int_equal(parse_reply_copy(msg, len), 0);
    msg[0] ^= 1;
    assert_int_equal(parse_reply_copy(msg, len), -1); /* magic */
    free(msg);

    q.version = RDMA_NATIVE_VERSION + 1;
    raw_reply_reject(&q);
    q = raw_reply_default();
    q.flags = 1;
    raw_reply_reject(&q);
    q = raw_reply_default();
    q.body_kind = 3;
    raw_reply_reject(&q); /* unknown body kind */
    q = raw_reply_default();
    q.body_len = RDMA_NATIVE_MAX_INLINE + 1;
    q.body_present = RDMA_NATIVE_MAX_INLINE + 1;
    raw_reply_reject(&q); /* inline body over the maximum */
    q = raw_reply_default();
    q.body_len = 4;
    raw_reply_reject(&q); /* body shorter than its length */
    q = raw_reply_default();
    q.n_headers = 3;
    raw_reply_reject(&q); /* fewer headers than counted */
    static char id[64];
    memset(id, 'i', sizeof(id));
    q = raw_reply_default();
    q.s3id = id;
    q.s3id_len = 64;
    raw_reply_reject(&q); /* S3 request id over 63 bytes */
    q.s3id_len = 63;
    msg = raw_reply_build(&q, &len);
    assert_int_equal(parse_reply_copy(msg, len), 0);
    free(msg);

    static raw_hdr_t many[RDMA_NATIVE_MAX_HEADERS + 1];
    for (unsigned i = 0; i <= RDMA_NATIVE_MAX_HEADERS; i++)
        many[i] = (raw_hdr_t){"h", "v", 1, 1};
    q = raw_reply_default();
    q.hdrs = many;
    q.n_headers = q.hdrs_present = RDMA_NATIVE_MAX_HEADERS + 1;
    raw_reply_reject(&q); /* too many headers */
    q.n_headers = q.hdrs_present = RDMA_NATIVE_MAX_HEADERS;
    msg = raw_reply_build(&q, &len);
    assert_int_equal(parse_reply_copy(msg, len), 0);
    free(msg);

    /* Header names and values the server cannot send (the fuzzer's
     * regress-reply-nul-in-header-value): a NUL inside, an empty or
     * oversized name, an oversized value; and an empty inline body. */
    static char longname[RDMA_NATIVE_MAX_NAME + 1], longvalue[RDMA_NATIVE_MAX_VALUE + 1];
    memset(longname, 'n', sizeof(longname));
    memset(longvalue, 'v', sizeof(longvalue));
    static raw_hdr_t bad[][1] = {
        {{"etag", "a\0b", 4, 3}},
        {{"e\0tag", "x", 5, 1}},
        {{"", "x", 0, 1}},
        {{longname, "x", RDMA_NATIVE_MAX_NAME + 1, 1}},
        {{"etag", longvalue, 4, RDMA_NATIVE_MAX_VALUE + 1}},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        q = raw_reply_default();
        q.hdrs = bad[i];
        q.n_headers = q.hdrs_present = 1;
        raw_reply_reject(&q);
    }
    q = raw_reply_default();
    q.body_len = q.body_present = 0;
    raw_reply_reject(&q); /* an inline body of no bytes */

    /* A region-body reply, truncated everywhere. */
    q = raw_reply_default();
    q.body_kind = RDMA_BODY_REGION;
    msg = raw_reply_build(&q, &len);
    assert_int_equal(parse_reply_copy(msg, len), 0);
    for (size_t n = 0; n < len; n++)
        assert_int_equal(parse_reply_copy(msg, n), -1);
    free(msg);
}

static void test_reply_begin_refuses(void **state)
{
    (void)state;
    wire_out_t w = {0};
    char hdrs[4 * (RDMA_NATIVE_MAX_HEADERS + 1)];
    for (unsigned i = 0; i <= RDMA_NATIVE_MAX_HEADERS; i++)
        memcpy(hdrs + 4 * i, "h\0v", 4);
    assert_int_equal(rdma_native_reply_begin(&w, 2, 1, 200, 0, "", hdrs,
                                             4 * RDMA_NATIVE_MAX_HEADERS, RDMA_BODY_NONE, 0, NULL),
                     0);
    rdma_wire_free(&w);
    assert_int_equal(
        rdma_native_reply_begin(&w, 2, 1, 200, 0, "", hdrs, sizeof(hdrs), RDMA_BODY_NONE, 0, NULL),
        -1);
    rdma_wire_free(&w);

    static char big[RDMA_NATIVE_MAX_VALUE + 8];
    memset(big, 'n', RDMA_NATIVE_MAX_NAME + 1);
    big[RDMA_NATIVE_MAX_NAME + 1] = '\0';
    big[RDMA_NATIVE_MAX_NAME + 2] = 'v';
    big[RDMA_NATIVE_MAX_NAME + 3] = '\0';
    assert_int_equal(rdma_native_reply_begin(&w, 2, 1, 200, 0, "", big, RDMA_NATIVE_MAX_NAME + 4,
                                             RDMA_BODY_NONE, 0, NULL),
                     -1); /* name too long */
    rdma_wire_free(&w);
    big[0] = 'n';
    big[1] = '\0';
    memset(big + 2, 'v', RDMA_NATIVE_MAX_VALUE + 1);
    big[RDMA_NATIVE_MAX_VALUE + 3] = '\0';
    assert_int_equal(rdma_native_reply_begin(&w, 2, 1, 200, 0, "", big, RDMA_NATIVE_MAX_VALUE + 4,
                                             RDMA_BODY_NONE, 0, NULL),
                     -1); /* value too long */
    rdma_wire_free(&w);
    assert_int_equal(rdma_native_reply_begin(&w, 2, 1, 200, 0, "", NULL, 0, RDMA_BODY_INLINE,
                                             RDMA_NATIVE_MAX_INLINE + 1, NULL),
                     -1);
    rdma_wire_free(&w);
    assert_int_equal(rdma_native_reply_begin(&w, 2, 1, 200, 0, "", NULL, 0, 3, 0, NULL), -1);
    rdma_wire_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_req_every_opcode),
        cmocka_unit_test(test_req_bodies_and_refs),
        cmocka_unit_test(test_req_limits_accepted),
        cmocka_unit_test(test_req_head),
        cmocka_unit_test(test_req_reject_head_fields),
        cmocka_unit_test(test_req_progress_flag),
        cmocka_unit_test(test_progress_message),
        cmocka_unit_test(test_req_reject_truncated_and_trailing),
        cmocka_unit_test(test_req_reject_params),
        cmocka_unit_test(test_req_reject_strings),
        cmocka_unit_test(test_req_reject_bodies),
        cmocka_unit_test(test_req_meta_and_msg_limits),
        cmocka_unit_test(test_encode_refuses),
        cmocka_unit_test(test_reply_round_trip),
        cmocka_unit_test(test_reply_reject),
        cmocka_unit_test(test_reply_begin_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
