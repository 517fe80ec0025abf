/* Session bootstrap frames, tokens and handshake MACs (see rdma_wire.h and
 * docs/protocol.md). Nothing here does I/O. */
#include "rdma/rdma_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/sigv4.h"

/* ---- output ------------------------------------------------------------ */

static void wire_grow(wire_out_t *w, size_t n)
{
    if (w->err)
        return;
    if (w->len + n > (w->limit ? w->limit : 4 + RDMA_WIRE_MAX_FRAME)) {
        w->err = 1;
        return;
    }
    if (w->len + n <= w->cap)
        return;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < w->len + n)
        cap *= 2;
    uint8_t *p = realloc(w->data, cap);
    if (!p) {
        w->err = 1;
        return;
    }
    w->data = p;
    w->cap = cap;
}

void rdma_wire_put_bytes(wire_out_t *w, const void *p, size_t n)
{
    wire_grow(w, n);
    if (w->err)
        return;
    if (n)
        memcpy(w->data + w->len, p, n);
    w->len += n;
}

void rdma_wire_reserve(wire_out_t *w, size_t n)
{
    wire_grow(w, n);
}

uint8_t *rdma_wire_put_space(wire_out_t *w, size_t n)
{
    wire_grow(w, n);
    if (w->err)
        return NULL;
    uint8_t *p = w->data + w->len;
    w->len += n;
    return p;
}

void rdma_wire_put_u8(wire_out_t *w, uint8_t v)
{
    rdma_wire_put_bytes(w, &v, 1);
}

void rdma_wire_put_u16(wire_out_t *w, uint16_t v)
{
    uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};
    rdma_wire_put_bytes(w, b, 2);
}

void rdma_wire_put_u32(wire_out_t *w, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    rdma_wire_put_bytes(w, b, 4);
}

void rdma_wire_put_u64(wire_out_t *w, uint64_t v)
{
    rdma_wire_put_u32(w, (uint32_t)(v >> 32));
    rdma_wire_put_u32(w, (uint32_t)v);
}

void rdma_wire_put_str16(wire_out_t *w, const char *s)
{
    size_t n = strlen(s);
    if (n > UINT16_MAX) {
        w->err = 1;
        return;
    }
    rdma_wire_put_u16(w, (uint16_t)n);
    rdma_wire_put_bytes(w, s, n);
}

void rdma_wire_put_blob32(wire_out_t *w, const void *p, size_t n)
{
    if (n > UINT32_MAX) {
        w->err = 1;
        return;
    }
    rdma_wire_put_u32(w, (uint32_t)n);
    rdma_wire_put_bytes(w, p, n);
}

/* Starts a frame of the given type: its header, the length filled in by
 * rdma_wire_end. */
static void rdma_wire_begin(wire_out_t *w, uint8_t type)
{
    w->len = 0;
    w->err = 0;
    rdma_wire_put_u32(w, 0); /* length, filled in by rdma_wire_end */
    rdma_wire_put_u32(w, RDMA_WIRE_MAGIC);
    rdma_wire_put_u8(w, RDMA_WIRE_VERSION);
    rdma_wire_put_u8(w, type);
    rdma_wire_put_u16(w, 0);
}

/* Fills in the length: 0 with the frame complete, or -1 (w->data is freed
 * either way by rdma_wire_free). */
static int rdma_wire_end(wire_out_t *w)
{
    if (w->err || w->len < 4 + RDMA_WIRE_HDR || w->len - 4 > RDMA_WIRE_MAX_FRAME)
        return -1;
    uint32_t n = (uint32_t)(w->len - 4);
    w->data[0] = (uint8_t)(n >> 24);
    w->data[1] = (uint8_t)(n >> 16);
    w->data[2] = (uint8_t)(n >> 8);
    w->data[3] = (uint8_t)n;
    return 0;
}

void rdma_wire_free(wire_out_t *w)
{
    free(w->data);
    w->data = NULL;
    w->len = w->cap = 0;
}

/* ---- input ------------------------------------------------------------- */

const uint8_t *rdma_wire_take(wire_in_t *r, size_t n)
{
    if (r->err || n > r->len - r->off) {
        r->err = 1;
        return NULL;
    }
    const uint8_t *p = r->p + r->off;
    r->off += n;
    return p;
}

uint8_t rdma_wire_get_u8(wire_in_t *r)
{
    const uint8_t *p = rdma_wire_take(r, 1);
    return p ? p[0] : 0;
}

uint16_t rdma_wire_get_u16(wire_in_t *r)
{
    const uint8_t *p = rdma_wire_take(r, 2);
    return p ? (uint16_t)(p[0] << 8 | p[1]) : 0;
}

uint32_t rdma_wire_get_u32(wire_in_t *r)
{
    const uint8_t *p = rdma_wire_take(r, 4);
    return p ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3] : 0;
}

uint64_t rdma_wire_get_u64(wire_in_t *r)
{
    uint64_t hi = rdma_wire_get_u32(r);
    return hi << 32 | rdma_wire_get_u32(r);
}

void rdma_wire_get_bytes(wire_in_t *r, void *out, size_t n)
{
    const uint8_t *p = rdma_wire_take(r, n);
    if (p)
        memcpy(out, p, n);
}

void rdma_wire_get_str16(wire_in_t *r, char *out, size_t max, int allow_empty)
{
    uint16_t n = rdma_wire_get_u16(r);
    if (r->err || n > max || (!allow_empty && n == 0)) {
        r->err = 1;
        return;
    }
    const uint8_t *p = rdma_wire_take(r, n);
    if (!p)
        return;
    if (memchr(p, '\0', n)) {
        r->err = 1;
        return;
    }
    memcpy(out, p, n);
    out[n] = '\0';
}

const uint8_t *rdma_wire_get_blob32(wire_in_t *r, size_t max, size_t *len_p)
{
    uint32_t n = rdma_wire_get_u32(r);
    if (r->err || n == 0 || n > max) {
        r->err = 1;
        return NULL;
    }
    *len_p = n;
    return rdma_wire_take(r, n);
}

long rdma_wire_frame_len(const uint8_t hdr[4])
{
    uint32_t n = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
    if (n < RDMA_WIRE_HDR || n > RDMA_WIRE_MAX_FRAME)
        return -1;
    return (long)n;
}

int rdma_wire_frame_type(const uint8_t *body, size_t len)
{
    wire_in_t r = {body, len, 0, 0};
    uint32_t magic = rdma_wire_get_u32(&r);
    uint8_t ver = rdma_wire_get_u8(&r);
    uint8_t type = rdma_wire_get_u8(&r);
    uint16_t flags = rdma_wire_get_u16(&r);
    if (r.err || magic != RDMA_WIRE_MAGIC || ver != RDMA_WIRE_VERSION || flags != 0)
        return -1;
    return type;
}

static int wire_open(wire_in_t *r, const uint8_t *body, size_t len, int type)
{
    r->p = body;
    r->len = len;
    r->off = RDMA_WIRE_HDR;
    r->err = 0;
    return rdma_wire_frame_type(body, len) == type ? 0 : -1;
}

static int wire_close(wire_in_t *r)
{
    return r->err || r->off != r->len ? -1 : 0;
}

/* ---- messages ---------------------------------------------------------- */

int rdma_wire_hello(wire_out_t *w, const char *ak, const uint8_t nonce[RDMA_NONCE_LEN],
                    const void *addr, size_t addr_len)
{
    rdma_wire_begin(w, RDMA_MSG_HELLO);
    rdma_wire_put_str16(w, ak);
    rdma_wire_put_bytes(w, nonce, RDMA_NONCE_LEN);
    rdma_wire_put_blob32(w, addr, addr_len);
    return rdma_wire_end(w);
}

int rdma_wire_parse_hello(const uint8_t *body, size_t len, rdma_hello_t *m)
{
    wire_in_t r;
    if (wire_open(&r, body, len, RDMA_MSG_HELLO) < 0)
        return -1;
    rdma_wire_get_str16(&r, m->access_key, RDMA_MAX_AK, 0);
    rdma_wire_get_bytes(&r, m->nonce, RDMA_NONCE_LEN);
    m->worker_addr = rdma_wire_get_blob32(&r, RDMA_MAX_WORKER_ADDR, &m->worker_addr_len);
    return wire_close(&r);
}

int rdma_wire_nonce(wire_out_t *w, uint8_t type, const uint8_t bytes[RDMA_NONCE_LEN])
{
    rdma_wire_begin(w, type);
    rdma_wire_put_bytes(w, bytes, RDMA_NONCE_LEN);
    return rdma_wire_end(w);
}

int rdma_wire_parse_nonce(const uint8_t *body, size_t len, uint8_t type,
                          uint8_t bytes[RDMA_NONCE_LEN])
{
    wire_in_t r;
    if (wire_open(&r, body, len, type) < 0)
        return -1;
    rdma_wire_get_bytes(&r, bytes, RDMA_NONCE_LEN);
    return wire_close(&r);
}

int rdma_wire_welcome(wire_out_t *w, const rdma_welcome_t *m)
{
    rdma_wire_begin(w, RDMA_MSG_WELCOME);
    rdma_wire_put_bytes(w, m->session_id, RDMA_SESSION_ID_LEN);
    rdma_wire_put_u8(w, m->err_mode);
    rdma_wire_put_u8(w, 0);
    rdma_wire_put_u16(w, 0);
    rdma_wire_put_u32(w, m->max_regions);
    rdma_wire_put_u64(w, m->max_registered);
    rdma_wire_put_u32(w, m->max_inflight);
    rdma_wire_put_u32(w, m->chunk_bytes);
    rdma_wire_put_blob32(w, m->worker_addr, m->worker_addr_len);
    rdma_wire_put_bytes(w, m->server_mac, RDMA_MAC_LEN);
    return rdma_wire_end(w);
}

int rdma_wire_parse_welcome(const uint8_t *body, size_t len, rdma_welcome_t *m)
{
    wire_in_t r;
    if (wire_open(&r, body, len, RDMA_MSG_WELCOME) < 0)
        return -1;
    rdma_wire_get_bytes(&r, m->session_id, RDMA_SESSION_ID_LEN);
    m->err_mode = rdma_wire_get_u8(&r);
    uint8_t reserved8 = rdma_wire_get_u8(&r);
    uint16_t reserved16 = rdma_wire_get_u16(&r);
    m->max_regions = rdma_wire_get_u32(&r);
    m->max_registered = rdma_wire_get_u64(&r);
    m->max_inflight = rdma_wire_get_u32(&r);
    m->chunk_bytes = rdma_wire_get_u32(&r);
    m->worker_addr = rdma_wire_get_blob32(&r, RDMA_MAX_WORKER_ADDR, &m->worker_addr_len);
    rdma_wire_get_bytes(&r, m->server_mac, RDMA_MAC_LEN);
    /* Reserved fields must be zero (docs/protocol.md §1.2). */
    if (m->err_mode > RDMA_WIRE_ERRMODE_PEER || reserved8 != 0 || reserved16 != 0)
        return -1;
    return wire_close(&r);
}

int rdma_wire_error(wire_out_t *w, uint32_t code, const char *msg)
{
    char tmp[RDMA_MAX_ERR_MSG + 1];
    snprintf(tmp, sizeof(tmp), "%s", msg);
    rdma_wire_begin(w, RDMA_MSG_ERROR);
    rdma_wire_put_u32(w, code);
    rdma_wire_put_str16(w, tmp);
    return rdma_wire_end(w);
}

int rdma_wire_parse_error(const uint8_t *body, size_t len, uint32_t *code,
                          char msg[RDMA_MAX_ERR_MSG + 1])
{
    wire_in_t r;
    if (wire_open(&r, body, len, RDMA_MSG_ERROR) < 0)
        return -1;
    *code = rdma_wire_get_u32(&r);
    rdma_wire_get_str16(&r, msg, RDMA_MAX_ERR_MSG, 1);
    return wire_close(&r);
}

int rdma_wire_region_add(wire_out_t *w, const rdma_region_add_t *m)
{
    rdma_wire_begin(w, RDMA_MSG_REGION_ADD);
    rdma_wire_put_u32(w, m->region_id);
    rdma_wire_put_u64(w, m->addr);
    rdma_wire_put_u64(w, m->len);
    rdma_wire_put_blob32(w, m->rkey, m->rkey_len);
    return rdma_wire_end(w);
}

int rdma_wire_parse_region_add(const uint8_t *body, size_t len, rdma_region_add_t *m)
{
    wire_in_t r;
    if (wire_open(&r, body, len, RDMA_MSG_REGION_ADD) < 0)
        return -1;
    m->region_id = rdma_wire_get_u32(&r);
    m->addr = rdma_wire_get_u64(&r);
    m->len = rdma_wire_get_u64(&r);
    m->rkey = rdma_wire_get_blob32(&r, RDMA_MAX_RKEY, &m->rkey_len);
    if (m->len == 0 || m->addr + m->len < m->addr)
        return -1;
    return wire_close(&r);
}

int rdma_wire_region_id(wire_out_t *w, uint8_t type, uint32_t region_id)
{
    rdma_wire_begin(w, type);
    rdma_wire_put_u32(w, region_id);
    return rdma_wire_end(w);
}

int rdma_wire_parse_region_id(const uint8_t *body, size_t len, uint32_t *region_id)
{
    wire_in_t r = {body, len, RDMA_WIRE_HDR, 0};
    int type = rdma_wire_frame_type(body, len);
    if (type != RDMA_MSG_REGION_REMOVE && type != RDMA_MSG_REGION_OK)
        return -1;
    *region_id = rdma_wire_get_u32(&r);
    return wire_close(&r);
}

/* ---- keys and MACs ----------------------------------------------------- */

void rdma_session_key(const char *secret, uint8_t key[32])
{
    sigv4_signing_key(secret, RDMA_KDF_DATE, RDMA_KDF_REGION, RDMA_KDF_SERVICE, key);
}

void rdma_handshake_mac(const uint8_t key[32], const char *role,
                        const uint8_t cnonce[RDMA_NONCE_LEN], const uint8_t snonce[RDMA_NONCE_LEN],
                        const void *caddr, size_t caddr_len, const void *saddr, size_t saddr_len,
                        const char *ak, uint8_t mac[RDMA_MAC_LEN])
{
    wire_out_t w = {0};
    rdma_wire_put_bytes(&w, role, strlen(role));
    rdma_wire_put_bytes(&w, cnonce, RDMA_NONCE_LEN);
    rdma_wire_put_bytes(&w, snonce, RDMA_NONCE_LEN);
    rdma_wire_put_blob32(&w, caddr, caddr_len);
    rdma_wire_put_blob32(&w, saddr, saddr_len);
    rdma_wire_put_str16(&w, ak);
    if (w.err)
        hash_random_bytes(mac, RDMA_MAC_LEN); /* never matches */
    else
        hash_hmac_sha256(key, 32, w.data, w.len, mac);
    rdma_wire_free(&w);
}

/* ---- tokens ------------------------------------------------------------ */

static void be_put(uint8_t *p, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static uint64_t be_get(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

int rdma_token_encode(const rdma_token_t *t, char *out, size_t out_len)
{
    uint8_t raw[RDMA_TOKEN_RAW];
    char b64[64];
    if (out_len < RDMA_TOKEN_LEN + 1)
        return -1;
    memcpy(raw, t->session_id, RDMA_SESSION_ID_LEN);
    be_put(raw + 16, t->region_id, 4);
    be_put(raw + 20, t->addr, 8);
    be_put(raw + 28, t->len, 8);
    size_t n = hash_base64url_encode(raw, sizeof(raw), b64);
    memcpy(out, RDMA_TOKEN_PREFIX, 5);
    memcpy(out + 5, b64, n + 1);
    return (int)(5 + n);
}

int rdma_token_decode(const char *s, rdma_token_t *t)
{
    uint8_t raw[RDMA_TOKEN_RAW + 4];
    if (!s || strncmp(s, RDMA_TOKEN_PREFIX, 5) != 0)
        return -1;
    size_t n = strnlen(s, RDMA_TOKEN_LEN + 1);
    if (n != RDMA_TOKEN_LEN)
        return -1;
    if (hash_base64url_decode(s + 5, n - 5, raw, sizeof(raw)) != RDMA_TOKEN_RAW)
        return -1;
    memcpy(t->session_id, raw, RDMA_SESSION_ID_LEN);
    t->region_id = (uint32_t)be_get(raw + 16, 4);
    t->addr = be_get(raw + 20, 8);
    t->len = be_get(raw + 28, 8);
    /* A span that wraps past 2^64 is well-formed but lies outside every
     * region: the server's overflow-safe bounds check refuses it (400), it is
     * not a decline. */
    return 0;
}
