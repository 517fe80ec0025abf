/* A raw session client for the RDMA tests: a bare UCX worker that answers
 * the server's probe, and blocking helpers that speak the bootstrap protocol
 * frame by frame over a socket, so a test can send what the real client
 * (rdma_client.c) never would, and the regions and tokens such a client
 * makes. Used by test_rdma_session.c, test_rdma_attack.c,
 * test_rdma_native.c and test_rdma_share.c; include it after
 * rdma_test_util.h. */
#ifndef S3R_TESTS_RDMA_RAW_CLIENT_H
#define S3R_TESTS_RDMA_RAW_CLIENT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/clock.h"
#include "rdma/rdma_net.h"
#include "rdma/rdma_server.h"
#include "rdma/rdma_wire.h"

/* A bare UCX worker standing in for a client on a raw socket; it keeps the
 * payload of the last probe it receives. */
typedef struct raw_ucx {
    ucp_context_h ctx;
    ucp_worker_h w;
    ucp_address_t *addr;
    size_t addr_len;
    uint8_t probe[RDMA_NONCE_LEN];
    int probe_got;
} raw_ucx_t;

static inline ucs_status_t raw_probe_cb(void *arg, const void *header, size_t header_length,
                                        void *data, size_t length, const ucp_am_recv_param_t *param)
{
    (void)header, (void)header_length, (void)param;
    raw_ucx_t *u = arg;
    if (length == RDMA_NONCE_LEN) {
        memcpy(u->probe, data, RDMA_NONCE_LEN);
        u->probe_got = 1;
    }
    return UCS_OK;
}

/* Creates u's context and worker; tls, when not NULL, restricts the
 * transports (a UCX_TLS value) of this worker alone. */
static inline void raw_ucx_init_tls(raw_ucx_t *u, const char *tls)
{
    memset(u, 0, sizeof(*u));
    ucp_config_t *uc;
    assert_int_equal(ucp_config_read(NULL, NULL, &uc), UCS_OK);
    if (tls)
        assert_int_equal(ucp_config_modify(uc, "TLS", tls), UCS_OK);
    ucp_params_t p = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                      .features = UCP_FEATURE_RMA | UCP_FEATURE_AM};
    assert_int_equal(ucp_init(&p, uc, &u->ctx), UCS_OK);
    ucp_config_release(uc);
    ucp_worker_params_t wp = {0};
    assert_int_equal(ucp_worker_create(u->ctx, &wp, &u->w), UCS_OK);
    assert_int_equal(ucp_worker_get_address(u->w, &u->addr, &u->addr_len), UCS_OK);
    ucp_am_handler_param_t ah = {.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                                               UCP_AM_HANDLER_PARAM_FIELD_CB |
                                               UCP_AM_HANDLER_PARAM_FIELD_ARG,
                                 .id = RDMA_AM_PROBE,
                                 .cb = raw_probe_cb,
                                 .arg = u};
    assert_int_equal(ucp_worker_set_am_recv_handler(u->w, &ah), UCS_OK);
}

static inline void raw_ucx_init(raw_ucx_t *u)
{
    raw_ucx_init_tls(u, NULL);
}

/* Progresses u's worker until the server's probe arrives (or 5 s pass). */
static inline int raw_await_probe(raw_ucx_t *u)
{
    uint64_t deadline = clock_mono_ms() + 5000;
    while (!u->probe_got && clock_mono_ms() < deadline) {
        if (!ucp_worker_progress(u->w))
            usleep(100);
    }
    return u->probe_got;
}

static inline void raw_ucx_fini(raw_ucx_t *u)
{
    ucp_worker_release_address(u->w, u->addr);
    ucp_worker_destroy(u->w);
    ucp_cleanup(u->ctx);
}

static inline int raw_connect(rdma_server_t *srv)
{
    char err[128];
    int fd = rdma_net_connect("127.0.0.1", rdma_server_port(srv), NULL, 2000, err, sizeof(err));
    assert_true(fd >= 0);
    return fd;
}

static inline void raw_send(int fd, const void *p, size_t n)
{
    assert_int_equal(rdma_net_send_all(fd, p, n, clock_mono_ms() + 2000), 0);
}

static inline void raw_send_frame(int fd, wire_out_t *w, int built)
{
    assert_int_equal(built, 0);
    raw_send(fd, w->data, w->len);
    rdma_wire_free(w);
}

/* Returns the type of the next frame (body in *body_p), 0 on EOF, -1 on error. */
static inline int raw_recv(int fd, uint8_t **body_p, size_t *len_p)
{
    uint8_t *body = NULL;
    long n = rdma_net_recv_frame(fd, clock_mono_ms() + 7000, &body);
    if (n <= 0)
        return (int)n;
    int t = rdma_wire_frame_type(body, (size_t)n);
    if (body_p) {
        *body_p = body;
        *len_p = (size_t)n;
    } else {
        free(body);
    }
    return t;
}

/* After a refusal the server closes: an ERROR frame may come first, then EOF. */
static inline void expect_refused_and_closed(int fd)
{
    int t = raw_recv(fd, NULL, NULL);
    if (t == RDMA_MSG_ERROR)
        t = raw_recv(fd, NULL, NULL);
    assert_int_equal(t, 0);
}

/* Runs HELLO/CHALLENGE for ak announcing the worker address addr and
 * returns the AUTH MAC made with secret. */
static inline void raw_hello_addr(int fd, const void *addr, size_t addr_len, const char *ak,
                                  const char *secret, const uint8_t cnonce[RDMA_NONCE_LEN],
                                  uint8_t mac[RDMA_MAC_LEN])
{
    wire_out_t w = {0};
    raw_send_frame(fd, &w, rdma_wire_hello(&w, ak, cnonce, addr, addr_len));
    uint8_t *body = NULL;
    size_t len = 0;
    assert_int_equal(raw_recv(fd, &body, &len), RDMA_MSG_CHALLENGE);
    uint8_t snonce[RDMA_NONCE_LEN];
    assert_int_equal(rdma_wire_parse_nonce(body, len, RDMA_MSG_CHALLENGE, snonce), 0);
    uint8_t key[32];
    rdma_session_key(secret, key);
    rdma_handshake_mac(key, "client", cnonce, snonce, addr, addr_len, NULL, 0, ak, mac);
    free(body);
}

/* Runs HELLO/CHALLENGE for ak (announcing u's worker) and returns the AUTH
 * MAC made with secret. */
static inline void raw_hello(int fd, raw_ucx_t *u, const char *ak, const char *secret,
                             uint8_t cnonce[RDMA_NONCE_LEN], uint8_t mac[RDMA_MAC_LEN])
{
    raw_hello_addr(fd, u->addr, u->addr_len, ak, secret, cnonce, mac);
}

/* What a raw client keeps of its WELCOME. */
typedef struct raw_sess {
    uint8_t id[RDMA_SESSION_ID_LEN];
    uint8_t *saddr; /* the server's worker address */
    size_t saddr_len;
    uint8_t err_mode; /* RDMA_WIRE_ERRMODE_* */
} raw_sess_t;

/* Serves u's worker as a real client's progress thread would, until it
 * has been quiet for 50 ms (1 s at most). Over TCP the server's endpoint
 * exchanges wireup messages with this worker after the probe, and again
 * when it unpacks an rkey (UCX then emulates RMA and asks for this side's
 * endpoint id); UCX 1.13 aborts the process when an endpoint whose wireup
 * reply is still queued fails or is destroyed, so a raw client answers
 * promptly, like the real one. */
static inline void raw_settle(raw_ucx_t *u)
{
    uint64_t now = clock_mono_ms(), quiet_since = now, give_up = now + 1000;
    while (now < give_up && now - quiet_since < 50) {
        if (ucp_worker_progress(u->w))
            quiet_since = clock_mono_ms();
        else
            usleep(100);
        now = clock_mono_ms();
    }
}

/* The whole v2 handshake of a raw client announcing its own worker u:
 * HELLO, CHALLENGE, AUTH, the probe over UCX, PROVE, WELCOME. */
static inline void raw_handshake(int fd, raw_ucx_t *u, const char *ak, const char *secret,
                                 raw_sess_t *rs)
{
    uint8_t cnonce[RDMA_NONCE_LEN], mac[RDMA_MAC_LEN];
    assert_int_equal(hash_random_bytes(cnonce, sizeof(cnonce)), 0);
    u->probe_got = 0;
    raw_hello(fd, u, ak, secret, cnonce, mac);
    wire_out_t w = {0};
    raw_send_frame(fd, &w, rdma_wire_nonce(&w, RDMA_MSG_AUTH, mac));
    assert_true(raw_await_probe(u));
    raw_send_frame(fd, &w, rdma_wire_nonce(&w, RDMA_MSG_PROVE, u->probe));
    uint8_t *body = NULL;
    size_t len = 0;
    assert_int_equal(raw_recv(fd, &body, &len), RDMA_MSG_WELCOME);
    rdma_welcome_t wm;
    assert_int_equal(rdma_wire_parse_welcome(body, len, &wm), 0);
    memcpy(rs->id, wm.session_id, RDMA_SESSION_ID_LEN);
    rs->saddr = malloc(wm.worker_addr_len);
    assert_non_null(rs->saddr);
    memcpy(rs->saddr, wm.worker_addr, wm.worker_addr_len);
    rs->saddr_len = wm.worker_addr_len;
    rs->err_mode = wm.err_mode;
    free(body);
    raw_settle(u);
}

static inline void send_region_add(int fd, uint32_t id, uint64_t addr, uint64_t len,
                                   const void *rkey, size_t rkey_len)
{
    rdma_region_add_t m = {
        .region_id = id, .addr = addr, .len = len, .rkey = rkey, .rkey_len = rkey_len};
    wire_out_t w = {0};
    raw_send_frame(fd, &w, rdma_wire_region_add(&w, &m));
}

static inline void make_token(const raw_sess_t *rs, uint32_t id, uint64_t addr, uint64_t len,
                              char out[RDMA_TOKEN_LEN + 1])
{
    rdma_token_t t = {.region_id = id, .addr = addr, .len = len};
    memcpy(t.session_id, rs->id, RDMA_SESSION_ID_LEN);
    assert_int_equal(rdma_token_encode(&t, out, RDMA_TOKEN_LEN + 1), RDMA_TOKEN_LEN);
}

/* Client memory UCX allocates (shared memory when UCX has a shared-memory
 * transport, so a local server can map it), with its packed rkey. */
typedef struct raw_mem {
    ucp_mem_h memh;
    uint8_t *p;
    void *rkey;
    size_t rkey_len;
} raw_mem_t;

static inline void raw_mem_alloc(raw_ucx_t *u, size_t len, raw_mem_t *m)
{
    ucp_mem_map_params_t mp = {.field_mask =
                                   UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS,
                               .length = len,
                               .flags = UCP_MEM_MAP_ALLOCATE};
    assert_int_equal(ucp_mem_map(u->ctx, &mp, &m->memh), UCS_OK);
    ucp_mem_attr_t ma = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH};
    assert_int_equal(ucp_mem_query(m->memh, &ma), UCS_OK);
    assert_true(ma.length >= len);
    m->p = ma.address;
    assert_int_equal(ucp_rkey_pack(u->ctx, m->memh, &m->rkey, &m->rkey_len), UCS_OK);
}

static inline void raw_mem_free(raw_ucx_t *u, raw_mem_t *m)
{
    ucp_rkey_buffer_release(m->rkey);
    ucp_mem_unmap(u->ctx, m->memh);
}

#endif
