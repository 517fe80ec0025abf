/* The session bootstrap wire format, the x-amz-rdma-token format and the
 * handshake MACs, shared by the server (rdma_boot.c, rdma_xfer.c), rdma_client.c and the tests.
 * docs/protocol.md is the normative description; keep both in step.
 *
 * Every multi-byte integer is big-endian. A frame is
 *   u32 body_len | u32 magic "S3RS" | u8 version | u8 type | u16 flags(0) | payload
 * where body_len counts everything after itself (8 header bytes + payload)
 * and never exceeds RDMA_WIRE_MAX_FRAME. Decoders check every length against
 * the bytes actually present and reject trailing bytes. */
#ifndef S3R_RDMA_RDMA_WIRE_H
#define S3R_RDMA_RDMA_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define RDMA_WIRE_MAGIC     0x53335253u /* "S3RS" */
#define RDMA_WIRE_VERSION   2
#define RDMA_WIRE_HDR       8           /* magic + version + type + flags */
#define RDMA_WIRE_MAX_FRAME (64 * 1024) /* body bytes, header included */

#define RDMA_NONCE_LEN       32
#define RDMA_MAC_LEN         32
#define RDMA_SESSION_ID_LEN  16
#define RDMA_MAX_AK          128
#define RDMA_MAX_WORKER_ADDR (48 * 1024)
#define RDMA_MAX_RKEY        (16 * 1024)
#define RDMA_MAX_ERR_MSG     256

enum rdma_msg_type {
    RDMA_MSG_HELLO = 1,
    RDMA_MSG_CHALLENGE = 2,
    RDMA_MSG_AUTH = 3,
    RDMA_MSG_WELCOME = 4,
    RDMA_MSG_ERROR = 5,
    RDMA_MSG_REGION_ADD = 6,
    RDMA_MSG_REGION_REMOVE = 7,
    RDMA_MSG_REGION_OK = 8,
    RDMA_MSG_PROVE = 9,
};

/* The UCX active message the server sends over its new endpoint after AUTH
 * (docs/protocol.md §1.3): header = the client nonce of HELLO, payload = a
 * fresh 32-byte probe nonce the client must return in PROVE. */
#define RDMA_AM_PROBE 0

/* Codes carried by RDMA_MSG_ERROR. */
enum rdma_err_code {
    RDMA_ERR_BAD_MESSAGE = 1, /* malformed, truncated, unexpected type or version */
    RDMA_ERR_AUTH = 2,        /* unknown key or wrong MAC (deliberately not told apart) */
    RDMA_ERR_MAX_SESSIONS = 3,
    RDMA_ERR_MAX_REGIONS = 4,
    RDMA_ERR_MAX_REGISTERED = 5,
    RDMA_ERR_BAD_RKEY = 6,
    RDMA_ERR_DUP_REGION = 7,
    RDMA_ERR_NO_REGION = 8,
    RDMA_ERR_INTERNAL = 9,
    RDMA_ERR_BUSY = 10,  /* too many handshakes from this source, or evicted: retry later */
    RDMA_ERR_PROBE = 11, /* the UCX endpoint did not reach the client that authenticated */
};

/* Endpoint error-handling mode the server chose, told to the client in
 * WELCOME so both ends of the pair agree. */
enum rdma_wire_err_mode { RDMA_WIRE_ERRMODE_NONE = 0, RDMA_WIRE_ERRMODE_PEER = 1 };

typedef struct rdma_hello {
    char access_key[RDMA_MAX_AK + 1];
    uint8_t nonce[RDMA_NONCE_LEN];
    const uint8_t *worker_addr; /* points into the frame */
    size_t worker_addr_len;
} rdma_hello_t;

typedef struct rdma_welcome {
    uint8_t session_id[RDMA_SESSION_ID_LEN];
    uint8_t err_mode;
    uint32_t max_regions;
    uint64_t max_registered;
    uint32_t max_inflight;
    uint32_t chunk_bytes;
    const uint8_t *worker_addr; /* the server's UCX worker; points into the frame */
    size_t worker_addr_len;
    uint8_t server_mac[RDMA_MAC_LEN];
} rdma_welcome_t;

typedef struct rdma_region_add {
    uint32_t region_id;
    uint64_t addr;
    uint64_t len;
    const uint8_t *rkey;
    size_t rkey_len;
} rdma_region_add_t;

/* A growable output frame. The message builders below start a frame of
 * their type and fill in its length; the put functions append. Any failure
 * (allocation, size past the limit) sticks in err. limit 0 means a
 * bootstrap frame (4 + RDMA_WIRE_MAX_FRAME bytes); the native messages
 * (rdma_native_wire.h) set their own and use only the put functions. */
typedef struct wire_out {
    uint8_t *data;
    size_t len, cap;
    size_t limit;
    int err;
} wire_out_t;

void rdma_wire_put_u8(wire_out_t *w, uint8_t v);
void rdma_wire_put_u16(wire_out_t *w, uint16_t v);
void rdma_wire_put_u32(wire_out_t *w, uint32_t v);
void rdma_wire_put_u64(wire_out_t *w, uint64_t v);
void rdma_wire_put_bytes(wire_out_t *w, const void *p, size_t n);
/* Makes room for n more bytes at once (one allocation instead of several
 * doublings); a failure sticks in err like any other. */
void rdma_wire_reserve(wire_out_t *w, size_t n);
/* Appends n bytes for the caller to fill and returns them (valid until the
 * next put), or NULL on failure. */
uint8_t *rdma_wire_put_space(wire_out_t *w, size_t n);
void rdma_wire_put_str16(wire_out_t *w, const char *s);            /* u16 len | bytes */
void rdma_wire_put_blob32(wire_out_t *w, const void *p, size_t n); /* u32 len | bytes */
void rdma_wire_free(wire_out_t *w);

/* A reader over received bytes. Every get checks the bytes present; the
 * first failure sticks in err and later gets return zeroes/NULL, so a
 * parser reads its fields and checks err once (and off == len: no trailing
 * bytes) at the end. */
typedef struct wire_in {
    const uint8_t *p;
    size_t len, off;
    int err;
} wire_in_t;

/* The next n bytes (pointing into the input), or NULL. */
const uint8_t *rdma_wire_take(wire_in_t *r, size_t n);
uint8_t rdma_wire_get_u8(wire_in_t *r);
uint16_t rdma_wire_get_u16(wire_in_t *r);
uint32_t rdma_wire_get_u32(wire_in_t *r);
uint64_t rdma_wire_get_u64(wire_in_t *r);
void rdma_wire_get_bytes(wire_in_t *r, void *out, size_t n);
/* A u16-prefixed string of at most max bytes (at least 1 unless
 * allow_empty) with no NUL inside, copied into out (max + 1 bytes) with a
 * NUL. */
void rdma_wire_get_str16(wire_in_t *r, char *out, size_t max, int allow_empty);
/* A u32-prefixed blob of 1..max bytes; points into the input. */
const uint8_t *rdma_wire_get_blob32(wire_in_t *r, size_t max, size_t *len_p);

/* Reads the 4-byte length prefix: returns the body length, or -1 if it is
 * below RDMA_WIRE_HDR or above RDMA_WIRE_MAX_FRAME. */
long rdma_wire_frame_len(const uint8_t hdr[4]);
/* Checks magic and version of a body; returns the type, or -1. */
int rdma_wire_frame_type(const uint8_t *body, size_t len);

/* Message builders: return 0 and a finished frame in *w, or -1. */
int rdma_wire_hello(wire_out_t *w, const char *ak, const uint8_t nonce[RDMA_NONCE_LEN],
                    const void *addr, size_t addr_len);
/* CHALLENGE (server nonce), AUTH (client MAC) and PROVE (the probe nonce)
 * are one 32-byte field each. */
int rdma_wire_nonce(wire_out_t *w, uint8_t type, const uint8_t bytes[RDMA_NONCE_LEN]);
int rdma_wire_welcome(wire_out_t *w, const rdma_welcome_t *m);
int rdma_wire_error(wire_out_t *w, uint32_t code, const char *msg);
int rdma_wire_region_add(wire_out_t *w, const rdma_region_add_t *m);
int rdma_wire_region_id(wire_out_t *w, uint8_t type, uint32_t region_id); /* REMOVE / OK */

/* Parsers take a whole body (header included) and return 0, or -1 on any
 * malformed, truncated or oversized field, or trailing bytes. */
int rdma_wire_parse_hello(const uint8_t *body, size_t len, rdma_hello_t *m);
int rdma_wire_parse_nonce(const uint8_t *body, size_t len, uint8_t type,
                          uint8_t bytes[RDMA_NONCE_LEN]);
int rdma_wire_parse_welcome(const uint8_t *body, size_t len, rdma_welcome_t *m);
int rdma_wire_parse_error(const uint8_t *body, size_t len, uint32_t *code,
                          char msg[RDMA_MAX_ERR_MSG + 1]);
int rdma_wire_parse_region_add(const uint8_t *body, size_t len, rdma_region_add_t *m);
int rdma_wire_parse_region_id(const uint8_t *body, size_t len, uint32_t *region_id);

/* The session key: SigV4's signing-key chain with a fixed scope
 * (RDMA_KDF_DATE / RDMA_KDF_REGION / RDMA_KDF_SERVICE), so it is derived from
 * the secret exactly as an S3 request's signing key is. */
#define RDMA_KDF_DATE    "20240101"
#define RDMA_KDF_REGION  "s3rdma"
#define RDMA_KDF_SERVICE "s3rdma-session"
void rdma_session_key(const char *secret, uint8_t key[32]);

/* The client's AUTH MAC (role "client") and the server's WELCOME MAC (role
 * "server") over the transcript:
 *   role | cnonce | snonce | u32 len | caddr | u32 len | saddr | u16 len | ak
 * The client MACs before it knows the server's worker: saddr is empty
 * (saddr_len 0) for role "client"; the server's MAC covers its address. */
void rdma_handshake_mac(const uint8_t key[32], const char *role,
                        const uint8_t cnonce[RDMA_NONCE_LEN], const uint8_t snonce[RDMA_NONCE_LEN],
                        const void *caddr, size_t caddr_len, const void *saddr, size_t saddr_len,
                        const char *ak, uint8_t mac[RDMA_MAC_LEN]);

/* Tokens: "s3r1." + base64url(session id 16 | region id u32 | addr u64 | len u64). */
#define RDMA_TOKEN_PREFIX "s3r1."
#define RDMA_TOKEN_RAW    36
#define RDMA_TOKEN_LEN    (5 + 48) /* characters, without the NUL */
typedef struct rdma_token {
    uint8_t session_id[RDMA_SESSION_ID_LEN];
    uint32_t region_id;
    uint64_t addr;
    uint64_t len;
} rdma_token_t;

/* Returns the token length, or -1 if out_len < RDMA_TOKEN_LEN + 1. */
int rdma_token_encode(const rdma_token_t *t, char *out, size_t out_len);
/* 0, or -1 on anything but a well-formed token (prefix, length, alphabet). */
int rdma_token_decode(const char *s, rdma_token_t *t);

#endif
