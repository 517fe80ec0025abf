/* The native protocol's messages (docs/protocol.md §4): whole S3 operations
 * carried by UCX active messages on an RDMA session. Shared by the server
 * (rdma_native.c), the client (rdma_client.c) and the fuzz target. Nothing
 * here does I/O.
 *
 * A request is one active message RDMA_AM_NATIVE_REQ from the client's
 * endpoint to the server's worker; its reply one RDMA_AM_NATIVE_REPLY on the
 * server's endpoint to the client. Both are payload only (no AM header),
 * big-endian, with every length checked against the bytes present and no
 * trailing bytes:
 *
 * request:  u32 magic "S3RN" | u8 version | u8 opcode | u16 flags (0 or PROGRESS)
 *           | u64 request id | u8[16] session id
 *           | str16 bucket | str16 key | u32 reply_inline_max
 *           | u16 n_params | n_params x (u8 kind | str16 name | str16 value)
 *           | u8 body (0 none | 1 inline: u32 len, bytes | 2 region: ref)
 *           | u8 out (0 none | 1 region: ref)
 *   ref:    u32 region id | u64 addr | u64 len
 * reply:    u32 magic | u8 version | u8 opcode (the request's) | u16 flags (0)
 *           | u64 request id | u16 status | u16 error
 *           | str16 s3 request id | u16 n_headers | n x (str16 name | str16 value)
 *           | u8 body (0 none | 1 inline: u32 len, bytes | 2 in the out region: u64 len)
 * progress: u32 magic | u8 version | u8 opcode (the request's) | u16 flags (0)
 *           | u64 request id | u64 bytes (RDMA_AM_NATIVE_PROGRESS, only to a request
 *           with RDMA_NATIVE_FLAG_PROGRESS: the out span's first bytes hold the
 *           reply body's first bytes, final)
 */
#ifndef S3R_RDMA_RDMA_NATIVE_WIRE_H
#define S3R_RDMA_RDMA_NATIVE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "common/s3r_limits.h"
#include "rdma/rdma_wire.h"

#define RDMA_NATIVE_MAGIC   0x5333524Eu /* "S3RN" */
#define RDMA_NATIVE_VERSION 1

/* UCX active-message ids of the native protocol (the probe is 0). */
#define RDMA_AM_NATIVE_REQ      1
#define RDMA_AM_NATIVE_REPLY    2
#define RDMA_AM_NATIVE_PROGRESS 3

/* Request flags. PROGRESS: "while you write the reply body into my out
 * span, tell me how much of it is there" (progress messages, best effort;
 * a server that does not know the flag refuses the request, BAD_MESSAGE). */
#define RDMA_NATIVE_FLAG_PROGRESS 0x0001u
/* The size of a progress message. */
#define RDMA_NATIVE_PROGRESS_LEN 24

/* Limits (docs/protocol.md §4.4, docs/limits.md). */
#define RDMA_NATIVE_FIXED       32          /* magic .. session id */
#define RDMA_NATIVE_MAX_INLINE  (64 * 1024) /* an inline request or reply body */
#define RDMA_NATIVE_MAX_META    (32 * 1024) /* a message without its inline body */
#define RDMA_NATIVE_MAX_MSG     (RDMA_NATIVE_MAX_META + RDMA_NATIVE_MAX_INLINE)
#define RDMA_NATIVE_MAX_PARAMS  64
#define RDMA_NATIVE_MAX_NAME    128
#define RDMA_NATIVE_MAX_VALUE   8192
#define RDMA_NATIVE_MAX_BUCKET  255  /* longer than any valid name: the S3 layer judges it */
#define RDMA_NATIVE_MAX_KEY     4096 /* ditto (S3 keys are at most 1024 bytes) */
#define RDMA_NATIVE_MAX_HEADERS 64
#define RDMA_NATIVE_MAX_RID     63 /* the S3 request id in a reply */

/* Every reply the S3 layer can build fits a reply message: its headers
 * within the count, name and value limits, and all of them with their
 * lengths and the fixed fields within RDMA_NATIVE_MAX_META, so that with an
 * inline body it stays within RDMA_NATIVE_MAX_MSG (the S3 layer refuses at
 * write time what would not fit: common/s3r_limits.h). */
_Static_assert(RDMA_NATIVE_MAX_HEADERS >= S3R_REPLY_MAX_HEADERS, "reply header count");
_Static_assert(RDMA_NATIVE_MAX_NAME >= S3R_REPLY_MAX_NAME, "reply header name");
_Static_assert(RDMA_NATIVE_MAX_VALUE >= S3R_REPLY_MAX_VALUE, "reply header value");
_Static_assert(RDMA_NATIVE_MAX_META >=
                   64 + RDMA_NATIVE_MAX_RID + S3R_MAX_HEADER_BYTES + 2 * S3R_REPLY_MAX_HEADERS,
               "reply headers fit a message");

enum rdma_native_op {
    RDMA_OP_PUT_OBJECT = 1,
    RDMA_OP_GET_OBJECT = 2,
    RDMA_OP_HEAD_OBJECT = 3,
    RDMA_OP_DELETE_OBJECT = 4,
    RDMA_OP_DELETE_OBJECTS = 5,
    RDMA_OP_LIST_OBJECTS = 6,
    RDMA_OP_COPY_OBJECT = 7,
    RDMA_OP_CREATE_BUCKET = 8,
    RDMA_OP_DELETE_BUCKET = 9,
    RDMA_OP_HEAD_BUCKET = 10,
    RDMA_OP_LIST_BUCKETS = 11,
    RDMA_OP_CREATE_MPU = 12,
    RDMA_OP_UPLOAD_PART = 13,
    RDMA_OP_COMPLETE_MPU = 14,
    RDMA_OP_ABORT_MPU = 15,
    RDMA_OP_LIST_PARTS = 16,
    RDMA_OP_LIST_MPU = 17,
    RDMA_OP_UPLOAD_PART_COPY = 18,
    RDMA_OP_GET_BUCKET_LOCATION = 19,
    RDMA_OP_LIST_OBJECT_VERSIONS = 20,
    /* The configuration subresources of an object (?tagging, ?retention,
     * ?legal-hold, ?acl) and of a bucket: one opcode per operation. */
    RDMA_OP_GET_OBJECT_TAGGING = 21,
    RDMA_OP_PUT_OBJECT_TAGGING = 22,
    RDMA_OP_DELETE_OBJECT_TAGGING = 23,
    RDMA_OP_GET_OBJECT_RETENTION = 24,
    RDMA_OP_PUT_OBJECT_RETENTION = 25,
    RDMA_OP_GET_OBJECT_LEGAL_HOLD = 26,
    RDMA_OP_PUT_OBJECT_LEGAL_HOLD = 27,
    RDMA_OP_GET_OBJECT_ACL = 28,
    RDMA_OP_PUT_OBJECT_ACL = 29,
    RDMA_OP_GET_BUCKET_VERSIONING = 30,
    RDMA_OP_PUT_BUCKET_VERSIONING = 31,
    RDMA_OP_GET_BUCKET_LIFECYCLE = 32,
    RDMA_OP_PUT_BUCKET_LIFECYCLE = 33,
    RDMA_OP_DELETE_BUCKET_LIFECYCLE = 34,
    RDMA_OP_GET_OBJECT_LOCK_CONFIG = 35,
    RDMA_OP_PUT_OBJECT_LOCK_CONFIG = 36,
    RDMA_OP_GET_BUCKET_TAGGING = 37,
    RDMA_OP_PUT_BUCKET_TAGGING = 38,
    RDMA_OP_DELETE_BUCKET_TAGGING = 39,
    RDMA_OP_GET_BUCKET_POLICY = 40,
    RDMA_OP_PUT_BUCKET_POLICY = 41,
    RDMA_OP_DELETE_BUCKET_POLICY = 42,
    RDMA_OP_GET_BUCKET_CORS = 43,
    RDMA_OP_PUT_BUCKET_CORS = 44,
    RDMA_OP_DELETE_BUCKET_CORS = 45,
    RDMA_OP_GET_BUCKET_ENCRYPTION = 46,
    RDMA_OP_PUT_BUCKET_ENCRYPTION = 47,
    RDMA_OP_DELETE_BUCKET_ENCRYPTION = 48,
    RDMA_OP_GET_BUCKET_ACL = 49,
    RDMA_OP_PUT_BUCKET_ACL = 50,
    RDMA_OP_MAX = 50,
};

enum rdma_native_param_kind { RDMA_PARAM_HEADER = 1, RDMA_PARAM_QUERY = 2 };
enum rdma_native_body_kind { RDMA_BODY_NONE = 0, RDMA_BODY_INLINE = 1, RDMA_BODY_REGION = 2 };

/* A span of a registered client region. */
typedef struct rdma_native_ref {
    uint32_t region_id;
    uint64_t addr, len;
} rdma_native_ref_t;

typedef struct rdma_native_param {
    uint8_t kind;
    const char *name, *value; /* NUL-terminated */
} rdma_native_param_t;

/* The fixed head every request starts with: what the server reads before it
 * knows whether the rest is well formed, so even a malformed request from a
 * live session gets an error reply naming its id. */
typedef struct rdma_native_head {
    uint8_t version;
    uint8_t opcode;
    uint16_t flags; /* requests: RDMA_NATIVE_FLAG_* */
    uint64_t request_id;
    uint8_t session_id[RDMA_SESSION_ID_LEN];
} rdma_native_head_t;

/* A parsed request. Strings point into `strings` (owned by the struct, freed
 * by rdma_native_req_free); the inline body points into the message. */
typedef struct rdma_native_msg {
    rdma_native_head_t head;
    const char *bucket, *key; /* "" when absent */
    uint32_t reply_inline_max;
    rdma_native_param_t params[RDMA_NATIVE_MAX_PARAMS];
    unsigned n_params;
    uint8_t body_kind;
    const uint8_t *body; /* RDMA_BODY_INLINE */
    uint64_t body_len;   /* inline bytes, or the region span's length */
    rdma_native_ref_t body_ref;
    int has_out;
    rdma_native_ref_t out;
    char *strings;
    int strings_owned; /* strings was allocated for m (rdma_native_msg_free frees it) */
} rdma_native_msg_t;

/* Reads the fixed head (magic, version, opcode, flags, ids). 0, or -1 when
 * the message is too short or the magic is wrong (then nothing can be
 * answered); the version and opcode are given back unchecked. */
int rdma_native_parse_head(const uint8_t *msg, size_t len, rdma_native_head_t *h);

/* Parses a whole request of len bytes (at most RDMA_NATIVE_MAX_MSG). 0, or
 * -1 with a static reason in *why: unknown version or opcode, unknown
 * flags, a truncated or oversized field, too many params, an unknown kind,
 * trailing bytes. On success free m with rdma_native_msg_free; m->body points
 * into msg, which must outlive m. */
int rdma_native_parse_req(const uint8_t *msg, size_t len, rdma_native_msg_t *m, const char **why);
/* The bytes a request of len bytes needs for its strings (each shorter than
 * the message, plus its NUL). */
#define RDMA_NATIVE_STRINGS_LEN(len) ((len) + 2 + 2 * RDMA_NATIVE_MAX_PARAMS + 1)
/* rdma_native_parse_req with the strings in the caller's arena of
 * arena_len bytes when it holds RDMA_NATIVE_STRINGS_LEN(len) (no
 * allocation; the arena must outlive m), else in one allocated as there. */
int rdma_native_parse_req_in(const uint8_t *msg, size_t len, rdma_native_msg_t *m, char *arena,
                             size_t arena_len, const char **why);
void rdma_native_msg_free(rdma_native_msg_t *m);

/* Encodes a request into w (a fresh wire_out_t {0}). 0, or -1 when a field
 * is over its limit or the parser would refuse the result (unknown kinds,
 * an empty param name, fields over RDMA_NATIVE_MAX_META). */
int rdma_native_encode_req(wire_out_t *w, const rdma_native_msg_t *m);

/* A parsed reply: strings and the inline body point into the message. */
typedef struct rdma_native_reply {
    uint8_t opcode;
    uint64_t request_id;
    uint16_t status; /* the S3 answer's HTTP status */
    uint16_t error;  /* 0, or an rdma_err_code when the request never reached S3 */
    char s3_request_id[RDMA_NATIVE_MAX_RID + 1];
    unsigned n_headers;
    struct {
        const uint8_t *name, *value; /* not NUL-terminated */
        uint16_t name_len, value_len;
    } headers[RDMA_NATIVE_MAX_HEADERS];
    uint8_t body_kind;   /* RDMA_BODY_NONE, _INLINE, or _REGION (in the out region) */
    const uint8_t *body; /* RDMA_BODY_INLINE */
    uint64_t body_len;
} rdma_native_reply_t;

int rdma_native_parse_reply(const uint8_t *msg, size_t len, rdma_native_reply_t *r);

/* Encodes the progress message of request (opcode, request_id): bytes of
 * its reply body are in its out span. */
void rdma_native_encode_progress(uint8_t out[RDMA_NATIVE_PROGRESS_LEN], uint8_t opcode,
                                 uint64_t request_id, uint64_t bytes);
/* Parses one: 0, or -1 when it is not exactly a well-formed progress message. */
int rdma_native_parse_progress(const uint8_t *msg, size_t len, uint64_t *request_id,
                               uint64_t *bytes);

/* Reply encoding, in two steps so an inline body can be written straight
 * into the message: rdma_native_reply_begin encodes everything before the
 * body (headers: "name\0value\0" pairs, hdrs_len bytes; a malformed list,
 * an empty or oversized name or value, a request id over
 * RDMA_NATIVE_MAX_RID, an empty inline body is refused) and the body's kind
 * and length, and reserves body_len bytes when body_kind is
 * RDMA_BODY_INLINE; *body_p (may be NULL) then points at them. 0, or -1
 * (oversized, out of memory). */
int rdma_native_reply_begin(wire_out_t *w, uint8_t opcode, uint64_t request_id, uint16_t status,
                            uint16_t error, const char *s3_request_id, const char *hdrs,
                            size_t hdrs_len, uint8_t body_kind, uint64_t body_len,
                            uint8_t **body_p);

/* Static name of an opcode ("GetObject"), or NULL when unknown. */
const char *rdma_native_op_name(unsigned opcode);

#endif
