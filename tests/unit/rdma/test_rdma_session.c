/* Session bootstrap: the handshake with the real client, refusals driven
 * over raw sockets (wrong secret, unknown key, truncated and garbage frames,
 * a replayed AUTH), lifeline teardown and the per-session limits. */
#include "rdma_test_util.h"

#include <sys/socket.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include "common/hash.h"
#include "rdma/rdma_net.h"
#include "rdma/rdma_wire.h"

#define OPEN_OK(cfg, s)                                                                            \
    do {                                                                                           \
        char e_[256] = "";                                                                         \
        int rc_ = rdma_session_open((cfg), (s), e_, sizeof(e_));                                   \
        if (rc_ != 0)                                                                              \
            print_message("session open: %s\n", e_);                                               \
        assert_int_equal(rc_, 0);                                                                  \
    } while (0)

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

static ucs_status_t raw_probe_cb(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ucp_am_recv_param_t *param)
{
    (void)header, (void)header_length, (void)param;
    raw_ucx_t *u = arg;
    if (length == RDMA_NONCE_LEN) {
        memcpy(u->probe, data, RDMA_NONCE_LEN);
        u->probe_got = 1;
    }
    return UCS_OK;
}

static void raw_ucx_init(raw_ucx_t *u)
{
    memset(u, 0, sizeof(*u));
    ucp_config_t *uc;
    assert_int_equal(ucp_config_read(NULL, NULL, &uc), UCS_OK);
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

/* Progresses u's worker until the server's probe arrives (or 5 s pass). */
static int raw_await_probe(raw_ucx_t *u)
{
    uint64_t deadline = rdma_now_ms() + 5000;
    while (!u->probe_got && rdma_now_ms() < deadline) {
        if (!ucp_worker_progress(u->w))
            usleep(100);
    }
    return u->probe_got;
}

static void raw_ucx_fini(raw_ucx_t *u)
{
    ucp_worker_release_address(u->w, u->addr);
    ucp_worker_destroy(u->w);
    ucp_cleanup(u->ctx);
}

static int raw_connect(rdma_server_t *srv)
{
    char err[128];
    int fd = rdma_net_connect("127.0.0.1", rdma_server_port(srv), NULL, 2000, err, sizeof(err));
    assert_true(fd >= 0);
    return fd;
}

static void raw_send(int fd, const void *p, size_t n)
{
    assert_int_equal(rdma_net_send_all(fd, p, n, rdma_now_ms() + 2000), 0);
}

static void raw_send_frame(int fd, wire_out_t *w, int built)
{
    assert_int_equal(built, 0);
    raw_send(fd, w->data, w->len);
    wire_free(w);
}

/* Returns the type of the next frame (body in *body_p), 0 on EOF, -1 on error. */
static int raw_recv(int fd, uint8_t **body_p, size_t *len_p)
{
    uint8_t *body = NULL;
    long n = rdma_net_recv_frame(fd, rdma_now_ms() + 7000, &body);
    if (n <= 0)
        return (int)n;
    int t = wire_frame_type(body, (size_t)n);
    if (body_p) {
        *body_p = body;
        *len_p = (size_t)n;
    } else {
        free(body);
    }
    return t;
}

/* After a refusal the server closes: an ERROR frame may come first, then EOF. */
static void expect_refused_and_closed(int fd)
{
    int t = raw_recv(fd, NULL, NULL);
    if (t == RDMA_MSG_ERROR)
        t = raw_recv(fd, NULL, NULL);
    assert_int_equal(t, 0);
}

/* Runs HELLO/CHALLENGE for ak and returns the AUTH MAC made with secret. */
static void raw_hello(int fd, raw_ucx_t *u, const char *ak, const char *secret,
                      uint8_t cnonce[RDMA_NONCE_LEN], uint8_t mac[RDMA_MAC_LEN])
{
    wire_out_t w = {0};
    raw_send_frame(fd, &w, wire_hello(&w, ak, cnonce, u->addr, u->addr_len));
    uint8_t *body = NULL;
    size_t len = 0;
    assert_int_equal(raw_recv(fd, &body, &len), RDMA_MSG_CHALLENGE);
    uint8_t snonce[RDMA_NONCE_LEN];
    assert_int_equal(wire_parse_nonce(body, len, RDMA_MSG_CHALLENGE, snonce), 0);
    uint8_t key[32];
    rdma_session_key(secret, key);
    rdma_handshake_mac(key, "client", cnonce, snonce, u->addr, u->addr_len, NULL, 0, ak, mac);
    free(body);
}

static void test_handshake_ok(void **state)
{
    (void)state;
    rdma_server_t *srv;
    TEST_SERVER_OR_SKIP(srv, 0, 0);
    rdma_client_config_t cfg = test_client_cfg(srv, "AKIDONE", "secret-one");
    rdma_session_t *s = NULL;
    OPEN_OK(&cfg, &s);
    assert_int_equal(rdma_session_alive(s), 1);
    assert_int_equal(test_wait_count(srv, 1), 1);
    /* A second session, other user, at the same time. */
    rdma_client_config_t cfg2 = test_client_cfg(srv, "AKIDTWO", "secret-two");
    rdma_session_t *s2 = NULL;
    OPEN_OK(&cfg2, &s2);
    assert_int_equal(test_wait_count(srv, 2), 2);
    rdma_session_close(s);
    assert_int_equal(test_wait_count(srv, 1), 1);
    rdma_session_close(s2);
    assert_int_equal(test_wait_count(srv, 0), 0);
    rdma_server_stop(srv);
}

static void test_wrong_secret_and_unknown_key(void **state)
{
    (void)state;
    rdma_server_t *srv;
    TEST_SERVER_OR_SKIP(srv, 0, 0);
    char err[256] = "";
    rdma_session_t *s = NULL;
    rdma_client_config_t cfg = test_client_cfg(srv, "AKIDONE", "not-the-secret");
    assert_int_equal(rdma_session_open(&cfg, &s, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "authentication failed"));
    cfg = test_client_cfg(srv, "AKIDNOBODY", "secret-one");
    assert_int_equal(rdma_session_open(&cfg, &s, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "authentication failed"));
    assert_int_equal(rdma_server_session_count(srv), 0);
    rdma_server_stop(srv);
}

static void test_truncated_and_garbage(void **state)
{
    (void)state;
    rdma_server_t *srv;
    TEST_SERVER_OR_SKIP(srv, 0, 0);
    raw_ucx_t u;
    raw_ucx_init(&u);
    uint8_t nonce[RDMA_NONCE_LEN] = {1};

    /* A HELLO whose inner length runs past the frame. */
    wire_out_t w = {0};
    assert_int_equal(wire_hello(&w, "AKIDONE", nonce, u.addr, u.addr_len), 0);
    size_t cut = w.len - 10;
    w.data[0] = (uint8_t)((cut - 4) >> 24);
    w.data[1] = (uint8_t)((cut - 4) >> 16);
    w.data[2] = (uint8_t)((cut - 4) >> 8);
    w.data[3] = (uint8_t)(cut - 4);
    int fd = raw_connect(srv);
    raw_send(fd, w.data, cut);
    wire_free(&w);
    expect_refused_and_closed(fd);
    close(fd);

    /* Garbage: a length within bounds, then no magic. */
    fd = raw_connect(srv);
    uint8_t junk[64];
    memset(junk, 0xA5, sizeof(junk));
    junk[0] = 0, junk[1] = 0, junk[2] = 0, junk[3] = 60;
    raw_send(fd, junk, sizeof(junk));
    expect_refused_and_closed(fd);
    close(fd);

    /* An oversized length prefix. */
    fd = raw_connect(srv);
    uint8_t big[4] = {0x7f, 0xff, 0xff, 0xff};
    raw_send(fd, big, sizeof(big));
    expect_refused_and_closed(fd);
    close(fd);

    /* AUTH before HELLO. */
    fd = raw_connect(srv);
    uint8_t mac[RDMA_MAC_LEN] = {0};
    raw_send_frame(fd, &w, wire_nonce(&w, RDMA_MSG_AUTH, mac));
    expect_refused_and_closed(fd);
    close(fd);

    /* Half a frame, then the client goes away. */
    fd = raw_connect(srv);
    raw_send(fd, big, 2);
    close(fd);

    assert_int_equal(rdma_server_session_count(srv), 0);
    raw_ucx_fini(&u);
    rdma_server_stop(srv);
}

static void test_replayed_auth(void **state)
{
    (void)state;
    rdma_server_t *srv;
    TEST_SERVER_OR_SKIP(srv, 0, 0);
    raw_ucx_t u;
    raw_ucx_init(&u);
    uint8_t cnonce[RDMA_NONCE_LEN], mac[RDMA_MAC_LEN], mac2[RDMA_MAC_LEN];
    random_bytes(cnonce, sizeof(cnonce));

    /* An honest handshake. */
    int fd = raw_connect(srv);
    raw_hello(fd, &u, "AKIDONE", "secret-one", cnonce, mac);
    wire_out_t w = {0};
    raw_send_frame(fd, &w, wire_nonce(&w, RDMA_MSG_AUTH, mac));
    assert_true(raw_await_probe(&u));
    raw_send_frame(fd, &w, wire_nonce(&w, RDMA_MSG_PROVE, u.probe));
    uint8_t *body = NULL;
    size_t len = 0;
    assert_int_equal(raw_recv(fd, &body, &len), RDMA_MSG_WELCOME);
    free(body);
    assert_int_equal(test_wait_count(srv, 1), 1);

    /* The same HELLO and the recorded AUTH on a new connection: the server's
     * nonce is fresh, so the MAC no longer matches. */
    int fd2 = raw_connect(srv);
    raw_hello(fd2, &u, "AKIDONE", "wrong-secret-for-this-leg", cnonce, mac2);
    raw_send_frame(fd2, &w, wire_nonce(&w, RDMA_MSG_AUTH, mac));
    expect_refused_and_closed(fd2);
    close(fd2);
    assert_int_equal(rdma_server_session_count(srv), 1);

    /* The lifeline is the raw socket: closing it ends the session. */
    close(fd);
    assert_int_equal(test_wait_count(srv, 0), 0);
    raw_ucx_fini(&u);
    rdma_server_stop(srv);
}

static void test_region_limits(void **state)
{
    (void)state;
    rdma_server_t *srv;
    TEST_SERVER_OR_SKIP(srv, 3, 0);
    rdma_client_config_t cfg = test_client_cfg(srv, "AKIDONE", "secret-one");
    char err[256] = "";
    rdma_session_t *s = NULL;
    OPEN_OK(&cfg, &s);
    static uint8_t bufs[4][4096];
    rdma_region_t *r[4] = {0};
    for (int i = 0; i < 3; i++)
        assert_int_equal(rdma_region_add(s, bufs[i], sizeof(bufs[i]), &r[i], err, sizeof(err)), 0);
    assert_int_equal(rdma_region_add(s, bufs[3], sizeof(bufs[3]), &r[3], err, sizeof(err)), -1);
    assert_non_null(strstr(err, "too many regions"));
    /* Removing one makes room again; the session survives the refusal. */
    rdma_region_remove(s, r[1]);
    assert_int_equal(rdma_region_add(s, bufs[3], sizeof(bufs[3]), &r[3], err, sizeof(err)), 0);
    void *mem = NULL;
    rdma_region_t *ra = NULL;
    assert_int_equal(rdma_region_alloc(s, 4096, &mem, &ra, err, sizeof(err)), -1);
    assert_int_equal(rdma_session_alive(s), 1);
    assert_int_equal(rdma_server_session_count(srv), 1);
    rdma_session_close(s);
    assert_int_equal(test_wait_count(srv, 0), 0);
    rdma_server_stop(srv);
}

static void test_session_limit(void **state)
{
    (void)state;
    rdma_server_t *srv;
    TEST_SERVER_OR_SKIP(srv, 0, 2);
    rdma_client_config_t cfg = test_client_cfg(srv, "AKIDONE", "secret-one");
    char err[256] = "";
    rdma_session_t *s[3] = {0};
    OPEN_OK(&cfg, &s[0]);
    OPEN_OK(&cfg, &s[1]);
    assert_int_equal(rdma_session_open(&cfg, &s[2], err, sizeof(err)), -1);
    assert_non_null(strstr(err, "too many RDMA sessions"));
    assert_int_equal(rdma_server_session_count(srv), 2);
    rdma_session_close(s[0]);
    rdma_session_close(s[1]);
    assert_int_equal(test_wait_count(srv, 0), 0);
    rdma_server_stop(srv);
}

static void test_stop_with_live_sessions(void **state)
{
    (void)state;
    rdma_server_t *srv;
    TEST_SERVER_OR_SKIP(srv, 0, 0);
    rdma_client_config_t cfg = test_client_cfg(srv, "AKIDONE", "secret-one");
    rdma_session_t *s = NULL;
    OPEN_OK(&cfg, &s);
    rdma_server_stop(srv);
    /* The server is gone: the client notices the lifeline dropped. */
    int alive = 1;
    for (int i = 0; i < 200 && alive; i++) {
        alive = rdma_session_alive(s);
        usleep(10000);
    }
    assert_int_equal(alive, 0);
    rdma_session_close(s);
}

int main(void)
{
    log_set_level(LOG_LVL_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handshake_ok),
        cmocka_unit_test(test_wrong_secret_and_unknown_key),
        cmocka_unit_test(test_truncated_and_garbage),
        cmocka_unit_test(test_replayed_auth),
        cmocka_unit_test(test_region_limits),
        cmocka_unit_test(test_session_limit),
        cmocka_unit_test(test_stop_with_live_sessions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
