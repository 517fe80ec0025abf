/* Native protocol messages (see rdma_native_wire.h, docs/protocol.md §4). */
#include "rdma/rdma_native_wire.h"

#include <stdlib.h>
#include <string.h>

static const char *const op_names[RDMA_OP_MAX + 1] = {
    [RDMA_OP_PUT_OBJECT] = "PutObject",
    [RDMA_OP_GET_OBJECT] = "GetObject",
    [RDMA_OP_HEAD_OBJECT] = "HeadObject",
    [RDMA_OP_DELETE_OBJECT] = "DeleteObject",
    [RDMA_OP_DELETE_OBJECTS] = "DeleteObjects",
    [RDMA_OP_LIST_OBJECTS] = "ListObjects",
    [RDMA_OP_COPY_OBJECT] = "CopyObject",
    [RDMA_OP_CREATE_BUCKET] = "CreateBucket",
    [RDMA_OP_DELETE_BUCKET] = "DeleteBucket",
    [RDMA_OP_HEAD_BUCKET] = "HeadBucket",
    [RDMA_OP_LIST_BUCKETS] = "ListBuckets",
    [RDMA_OP_CREATE_MPU] = "CreateMultipartUpload",
    [RDMA_OP_UPLOAD_PART] = "UploadPart",
    [RDMA_OP_COMPLETE_MPU] = "CompleteMultipartUpload",
    [RDMA_OP_ABORT_MPU] = "AbortMultipartUpload",
    [RDMA_OP_LIST_PARTS] = "ListParts",
    [RDMA_OP_LIST_MPU] = "ListMultipartUploads",
    [RDMA_OP_UPLOAD_PART_COPY] = "UploadPartCopy",
    [RDMA_OP_GET_BUCKET_LOCATION] = "GetBucketLocation",
    [RDMA_OP_LIST_OBJECT_VERSIONS] = "ListObjectVersions",
    [RDMA_OP_GET_OBJECT_TAGGING] = "GetObjectTagging",
    [RDMA_OP_PUT_OBJECT_TAGGING] = "PutObjectTagging",
    [RDMA_OP_DELETE_OBJECT_TAGGING] = "DeleteObjectTagging",
    [RDMA_OP_GET_OBJECT_RETENTION] = "GetObjectRetention",
    [RDMA_OP_PUT_OBJECT_RETENTION] = "PutObjectRetention",
    [RDMA_OP_GET_OBJECT_LEGAL_HOLD] = "GetObjectLegalHold",
    [RDMA_OP_PUT_OBJECT_LEGAL_HOLD] = "PutObjectLegalHold",
    [RDMA_OP_GET_OBJECT_ACL] = "GetObjectAcl",
    [RDMA_OP_PUT_OBJECT_ACL] = "PutObjectAcl",
    [RDMA_OP_GET_BUCKET_VERSIONING] = "GetBucketVersioning",
    [RDMA_OP_PUT_BUCKET_VERSIONING] = "PutBucketVersioning",
    [RDMA_OP_GET_BUCKET_LIFECYCLE] = "GetBucketLifecycleConfiguration",
    [RDMA_OP_PUT_BUCKET_LIFECYCLE] = "PutBucketLifecycleConfiguration",
    [RDMA_OP_DELETE_BUCKET_LIFECYCLE] = "DeleteBucketLifecycle",
    [RDMA_OP_GET_OBJECT_LOCK_CONFIG] = "GetObjectLockConfiguration",
    [RDMA_OP_PUT_OBJECT_LOCK_CONFIG] = "PutObjectLockConfiguration",
    [RDMA_OP_GET_BUCKET_TAGGING] = "GetBucketTagging",
    [RDMA_OP_PUT_BUCKET_TAGGING] = "PutBucketTagging",
    [RDMA_OP_DELETE_BUCKET_TAGGING] = "DeleteBucketTagging",
    [RDMA_OP_GET_BUCKET_POLICY] = "GetBucketPolicy",
    [RDMA_OP_PUT_BUCKET_POLICY] = "PutBucketPolicy",
    [RDMA_OP_DELETE_BUCKET_POLICY] = "DeleteBucketPolicy",
    [RDMA_OP_GET_BUCKET_CORS] = "GetBucketCors",
    [RDMA_OP_PUT_BUCKET_CORS] = "PutBucketCors",
    [RDMA_OP_DELETE_BUCKET_CORS] = "DeleteBucketCors",
    [RDMA_OP_GET_BUCKET_ENCRYPTION] = "GetBucketEncryption",
    [RDMA_OP_PUT_BUCKET_ENCRYPTION] = "PutBucketEncryption",
    [RDMA_OP_DELETE_BUCKET_ENCRYPTION] = "DeleteBucketEncryption",
    [RDMA_OP_GET_BUCKET_ACL] = "GetBucketAcl",
    [RDMA_OP_PUT_BUCKET_ACL] = "PutBucketAcl",
};

const char *rdma_native_op_name(unsigned opcode)
{
    return opcode <= RDMA_OP_MAX ? op_names[opcode] : NULL;
}

/* ---- the fixed head ------------------------------------------------------- */

static void put_head(wire_out_t *w, uint8_t opcode, uint16_t flags, uint64_t request_id)
{
    w->limit = RDMA_NATIVE_MAX_MSG;
    rdma_wire_put_u32(w, RDMA_NATIVE_MAGIC);
    rdma_wire_put_u8(w, RDMA_NATIVE_VERSION);
    rdma_wire_put_u8(w, opcode);
    rdma_wire_put_u16(w, flags);
    rdma_wire_put_u64(w, request_id);
}

/* Reads magic .. request id; the flags are returned for the caller to judge. */
static int get_head(wire_in_t *r, uint8_t *version, uint8_t *opcode, uint16_t *flags,
                    uint64_t *request_id)
{
    if (rdma_wire_get_u32(r) != RDMA_NATIVE_MAGIC)
        return -1;
    *version = rdma_wire_get_u8(r);
    *opcode = rdma_wire_get_u8(r);
    *flags = rdma_wire_get_u16(r);
    *request_id = rdma_wire_get_u64(r);
    return r->err ? -1 : 0;
}

int rdma_native_parse_head(const uint8_t *msg, size_t len, rdma_native_head_t *h)
{
    wire_in_t r = {msg, len, 0, 0};
    uint16_t flags;
    if (get_head(&r, &h->version, &h->opcode, &flags, &h->request_id) < 0)
        return -1;
    rdma_wire_get_bytes(&r, h->session_id, RDMA_SESSION_ID_LEN);
    return r.err ? -1 : 0;
}

/* ---- requests --------------------------------------------------------------- */

static void put_ref(wire_out_t *w, const rdma_native_ref_t *ref)
{
    rdma_wire_put_u32(w, ref->region_id);
    rdma_wire_put_u64(w, ref->addr);
    rdma_wire_put_u64(w, ref->len);
}

static void get_ref(wire_in_t *r, rdma_native_ref_t *ref)
{
    ref->region_id = rdma_wire_get_u32(r);
    ref->addr = rdma_wire_get_u64(r);
    ref->len = rdma_wire_get_u64(r);
}

/* A str16 of at most max bytes into the string arena at *cur (max + 1
 * bytes reserved by the caller); returns the copy. */
static const char *get_str(wire_in_t *r, char **cur, size_t max, int allow_empty)
{
    char *s = *cur;
    rdma_wire_get_str16(r, s, max, allow_empty);
    if (r->err)
        return "";
    *cur += strlen(s) + 1;
    return s;
}

static int fail(const char **why, const char *reason)
{
    *why = reason;
    return -1;
}

int rdma_native_parse_req(const uint8_t *msg, size_t len, rdma_native_msg_t *m, const char **why)
{
    return rdma_native_parse_req_in(msg, len, m, NULL, 0, why);
}

int rdma_native_parse_req_in(const uint8_t *msg, size_t len, rdma_native_msg_t *m, char *arena,
                             size_t arena_len, const char **why)
{
    memset(m, 0, sizeof(*m));
    if (len > RDMA_NATIVE_MAX_MSG)
        return fail(why, "message too large");
    wire_in_t r = {msg, len, 0, 0};
    uint16_t flags;
    if (get_head(&r, &m->head.version, &m->head.opcode, &flags, &m->head.request_id) < 0)
        return fail(why, "truncated head or bad magic");
    rdma_wire_get_bytes(&r, m->head.session_id, RDMA_SESSION_ID_LEN);
    if (r.err)
        return fail(why, "truncated head");
    if (m->head.version != RDMA_NATIVE_VERSION)
        return fail(why, "unsupported version");
    if (!rdma_native_op_name(m->head.opcode))
        return fail(why, "unknown opcode");
    if (flags & ~RDMA_NATIVE_FLAG_PROGRESS)
        return fail(why, "unknown flags");
    m->head.flags = flags;
    /* Every string of the message is shorter than the message itself, so an
     * arena of len + (strings * 1) bytes holds them all with their NULs. */
    m->strings_owned = !arena || arena_len < RDMA_NATIVE_STRINGS_LEN(len);
    m->strings = m->strings_owned ? malloc(RDMA_NATIVE_STRINGS_LEN(len)) : arena;
    if (!m->strings)
        return fail(why, "out of memory");
    char *cur = m->strings;
    m->bucket = get_str(&r, &cur, RDMA_NATIVE_MAX_BUCKET, 1);
    m->key = get_str(&r, &cur, RDMA_NATIVE_MAX_KEY, 1);
    m->reply_inline_max = rdma_wire_get_u32(&r);
    unsigned n = rdma_wire_get_u16(&r);
    if (r.err)
        goto bad;
    if (n > RDMA_NATIVE_MAX_PARAMS) {
        rdma_native_msg_free(m);
        return fail(why, "too many parameters");
    }
    for (unsigned i = 0; i < n && !r.err; i++) {
        rdma_native_param_t *p = &m->params[i];
        p->kind = rdma_wire_get_u8(&r);
        if (p->kind != RDMA_PARAM_HEADER && p->kind != RDMA_PARAM_QUERY)
            r.err = 1;
        p->name = get_str(&r, &cur, RDMA_NATIVE_MAX_NAME, 0);
        p->value = get_str(&r, &cur, RDMA_NATIVE_MAX_VALUE, 1);
    }
    m->n_params = n;
    m->body_kind = rdma_wire_get_u8(&r);
    if (m->body_kind == RDMA_BODY_INLINE) {
        size_t blen = 0;
        m->body = rdma_wire_get_blob32(&r, RDMA_NATIVE_MAX_INLINE, &blen);
        m->body_len = blen;
    } else if (m->body_kind == RDMA_BODY_REGION) {
        get_ref(&r, &m->body_ref);
        m->body_len = m->body_ref.len;
    } else if (m->body_kind != RDMA_BODY_NONE) {
        r.err = 1;
    }
    uint8_t out = rdma_wire_get_u8(&r);
    if (out == 1) {
        m->has_out = 1;
        get_ref(&r, &m->out);
    } else if (out != 0) {
        r.err = 1;
    }
    if (r.err || r.off != r.len)
        goto bad;
    if (len - (m->body_kind == RDMA_BODY_INLINE ? m->body_len : 0) > RDMA_NATIVE_MAX_META) {
        rdma_native_msg_free(m);
        return fail(why, "request fields too large");
    }
    return 0;
bad:
    rdma_native_msg_free(m);
    return fail(why, "malformed, truncated or oversized field");
}

void rdma_native_msg_free(rdma_native_msg_t *m)
{
    if (m) {
        if (m->strings_owned)
            free(m->strings);
        m->strings = NULL;
        m->strings_owned = 0;
    }
}

int rdma_native_encode_req(wire_out_t *w, const rdma_native_msg_t *m)
{
    if (m->head.flags & ~RDMA_NATIVE_FLAG_PROGRESS)
        return -1;
    put_head(w, m->head.opcode, m->head.flags, m->head.request_id);
    rdma_wire_put_bytes(w, m->head.session_id, RDMA_SESSION_ID_LEN);
    if (strlen(m->bucket) > RDMA_NATIVE_MAX_BUCKET || strlen(m->key) > RDMA_NATIVE_MAX_KEY ||
        m->n_params > RDMA_NATIVE_MAX_PARAMS || m->body_kind > RDMA_BODY_REGION)
        return -1;
    rdma_wire_put_str16(w, m->bucket);
    rdma_wire_put_str16(w, m->key);
    rdma_wire_put_u32(w, m->reply_inline_max);
    rdma_wire_put_u16(w, (uint16_t)m->n_params);
    for (unsigned i = 0; i < m->n_params; i++) {
        const rdma_native_param_t *p = &m->params[i];
        if ((p->kind != RDMA_PARAM_HEADER && p->kind != RDMA_PARAM_QUERY) || !p->name[0] ||
            strlen(p->name) > RDMA_NATIVE_MAX_NAME || strlen(p->value) > RDMA_NATIVE_MAX_VALUE)
            return -1;
        rdma_wire_put_u8(w, p->kind);
        rdma_wire_put_str16(w, p->name);
        rdma_wire_put_str16(w, p->value);
    }
    rdma_wire_put_u8(w, m->body_kind);
    if (m->body_kind == RDMA_BODY_INLINE) {
        if (m->body_len == 0 || m->body_len > RDMA_NATIVE_MAX_INLINE)
            return -1;
        rdma_wire_put_blob32(w, m->body, (size_t)m->body_len);
    } else if (m->body_kind == RDMA_BODY_REGION) {
        put_ref(w, &m->body_ref);
    }
    rdma_wire_put_u8(w, m->has_out ? 1 : 0);
    if (m->has_out)
        put_ref(w, &m->out);
    /* What the parser would refuse is not sent. */
    size_t inline_len = m->body_kind == RDMA_BODY_INLINE ? (size_t)m->body_len : 0;
    return w->err || w->len - inline_len > RDMA_NATIVE_MAX_META ? -1 : 0;
}

/* ---- replies --------------------------------------------------------------------- */

int rdma_native_reply_begin(wire_out_t *w, uint8_t opcode, uint64_t request_id, uint16_t status,
                            uint16_t error, const char *s3_request_id, const char *hdrs,
                            size_t hdrs_len, uint8_t body_kind, uint64_t body_len, uint8_t **body_p)
{
    /* One allocation for the whole reply, head included: 64 bytes for the
     * head and the fixed fields, and a header costs its bytes plus two u16
     * lengths instead of two NULs (a pair is at least 3 bytes: at most
     * twice its bytes). */
    w->limit = RDMA_NATIVE_MAX_MSG;
    rdma_wire_reserve(w, 64 + (s3_request_id ? strlen(s3_request_id) : 0) + 2 * hdrs_len +
                             (body_kind == RDMA_BODY_INLINE && body_len <= RDMA_NATIVE_MAX_INLINE
                                  ? (size_t)body_len
                                  : 0));
    put_head(w, opcode, 0, request_id);
    rdma_wire_put_u16(w, status);
    rdma_wire_put_u16(w, error);
    if (s3_request_id && strlen(s3_request_id) > RDMA_NATIVE_MAX_RID)
        return -1;
    rdma_wire_put_str16(w, s3_request_id ? s3_request_id : "");
    /* The pairs are counted first (the count precedes them); every string
     * is bounded by end, so a malformed list is refused, not overread. */
    const char *end = hdrs_len ? hdrs + hdrs_len : hdrs; /* hdrs may be NULL when empty */
    unsigned n = 0;
    for (const char *h = hdrs; h < end; n++) {
        size_t nl = strnlen(h, (size_t)(end - h));
        if (nl == 0 || nl > RDMA_NATIVE_MAX_NAME || h + nl == end)
            return -1;
        const char *v = h + nl + 1;
        size_t vl = strnlen(v, (size_t)(end - v));
        if (vl > RDMA_NATIVE_MAX_VALUE || v + vl == end)
            return -1;
        h = v + vl + 1;
    }
    if (n > RDMA_NATIVE_MAX_HEADERS)
        return -1;
    rdma_wire_put_u16(w, (uint16_t)n);
    for (const char *h = hdrs; h < end;) {
        const char *v = h + strlen(h) + 1;
        rdma_wire_put_str16(w, h);
        rdma_wire_put_str16(w, v);
        h = v + strlen(v) + 1;
    }
    rdma_wire_put_u8(w, body_kind);
    if (body_kind == RDMA_BODY_INLINE) {
        if (body_len == 0 || body_len > RDMA_NATIVE_MAX_INLINE)
            return -1;
        rdma_wire_put_u32(w, (uint32_t)body_len);
        uint8_t *body = rdma_wire_put_space(w, (size_t)body_len);
        if (body_p)
            *body_p = body;
    } else if (body_kind == RDMA_BODY_REGION) {
        rdma_wire_put_u64(w, body_len);
    } else if (body_kind != RDMA_BODY_NONE) {
        return -1;
    }
    return w->err ? -1 : 0;
}

int rdma_native_parse_reply(const uint8_t *msg, size_t len, rdma_native_reply_t *m)
{
    memset(m, 0, sizeof(*m));
    wire_in_t r = {msg, len, 0, 0};
    uint8_t version;
    uint16_t flags;
    if (get_head(&r, &version, &m->opcode, &flags, &m->request_id) < 0 ||
        version != RDMA_NATIVE_VERSION || flags != 0)
        return -1;
    m->status = rdma_wire_get_u16(&r);
    m->error = rdma_wire_get_u16(&r);
    rdma_wire_get_str16(&r, m->s3_request_id, sizeof(m->s3_request_id) - 1, 1);
    m->n_headers = rdma_wire_get_u16(&r);
    if (m->n_headers > RDMA_NATIVE_MAX_HEADERS || len > RDMA_NATIVE_MAX_MSG)
        return -1;
    /* Names 1..RDMA_NATIVE_MAX_NAME and values up to RDMA_NATIVE_MAX_VALUE
     * bytes, no NUL inside: what the server can send, and what the client
     * turns into text lines safely. */
    for (unsigned i = 0; i < m->n_headers && !r.err; i++) {
        uint16_t nl = rdma_wire_get_u16(&r);
        const uint8_t *name = rdma_wire_take(&r, nl);
        uint16_t vl = rdma_wire_get_u16(&r);
        const uint8_t *value = rdma_wire_take(&r, vl);
        if (r.err || nl == 0 || nl > RDMA_NATIVE_MAX_NAME || vl > RDMA_NATIVE_MAX_VALUE ||
            memchr(name, '\0', nl) || (vl && memchr(value, '\0', vl)))
            return -1;
        m->headers[i].name = name;
        m->headers[i].name_len = nl;
        m->headers[i].value = value;
        m->headers[i].value_len = vl;
    }
    m->body_kind = rdma_wire_get_u8(&r);
    if (m->body_kind == RDMA_BODY_INLINE) {
        m->body_len = rdma_wire_get_u32(&r);
        if (m->body_len == 0 || m->body_len > RDMA_NATIVE_MAX_INLINE)
            return -1;
        m->body = rdma_wire_take(&r, (size_t)m->body_len);
    } else if (m->body_kind == RDMA_BODY_REGION) {
        m->body_len = rdma_wire_get_u64(&r);
    } else if (m->body_kind != RDMA_BODY_NONE) {
        return -1;
    }
    return r.err || r.off != r.len ? -1 : 0;
}

void rdma_native_encode_progress(uint8_t out[RDMA_NATIVE_PROGRESS_LEN], uint8_t opcode,
                                 uint64_t request_id, uint64_t bytes)
{
    /* The head put_head writes (flags 0), then the count, big-endian. */
    uint64_t head = (uint64_t)RDMA_NATIVE_MAGIC << 32 | (uint64_t)RDMA_NATIVE_VERSION << 24 |
                    (uint64_t)opcode << 16;
    const uint64_t words[3] = {head, request_id, bytes};
    for (int i = 0; i < 24; i++)
        out[i] = (uint8_t)(words[i / 8] >> (56 - 8 * (i % 8)));
}

int rdma_native_parse_progress(const uint8_t *msg, size_t len, uint64_t *request_id,
                               uint64_t *bytes)
{
    wire_in_t r = {msg, len, 0, 0};
    uint8_t version, opcode;
    uint16_t flags;
    if (get_head(&r, &version, &opcode, &flags, request_id) < 0 || version != RDMA_NATIVE_VERSION ||
        flags != 0)
        return -1;
    *bytes = rdma_wire_get_u64(&r);
    return r.err || r.off != r.len ? -1 : 0;
}
