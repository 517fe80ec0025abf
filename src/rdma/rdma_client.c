/* The client side of an RDMA session (see rdma_client.h): UCX context and
 * worker, the bootstrap handshake, the lifeline, regions and tokens.
 *
 * Native calls in flight and how callers wait for them: rdma_client_native.c.
 *
 * Threads: the session's progress thread is the only one that progresses the
 * worker (the server does all one-sided work; over TCP UCX emulates it with
 * messages this side must answer while the caller sits in an HTTP call).
 * Lifeline request/reply pairs are serialised by the session mutex.
 *
 * Fork. A session belongs to the process that opened it. In a process
 * forked from it the session is inherited: every call treats it as dead
 * and touches neither its UCX objects, its threads (they do not exist in
 * the child) nor its mutexes (a parent thread may have held one at the
 * fork), and closing it only closes this process's copies of its sockets
 * and frees its memory here. UCX 1.13 itself cannot be started again in
 * such a child: its async thread is process-global, and the child inherits
 * its state (in use, an epoll instance shared with the parent) but not the
 * thread, so a new worker's connections are never accepted and its events
 * reach the parent's thread. A session open in a process whose ancestor
 * started UCX therefore fails at once, without calling UCX. */
#include "rdma/rdma_client.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <ucp/api/ucp.h>
#include <ucs/config/global_opts.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/clock.h"
#include "rdma/rdma_net.h"
#include "rdma/rdma_ucx.h"
#include "rdma/rdma_wire.h"
#include "rdma/rdma_client_internal.h"

#define DEFAULT_TIMEOUT_MS 5000
/* The most rdma_session_close waits for UCX (ep_close). */
#define CLOSE_WAIT_MS 1000

/* The process that started UCX (its first ucp_init here); a forked child
 * inherits the value and so knows UCX is not usable in it. 0: none yet. */
static _Atomic pid_t ucx_owner;

void rdma_client_set_err(char *err, size_t err_len, const char *fmt, ...)
{
    if (!err || !err_len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

int rdma_session_inherited(rdma_session_t *s)
{
    return s != NULL && rdma_client_inherited(s);
}

static void *client_progress_main(void *arg)
{
    rdma_session_t *s = arg;
    while (!atomic_load(&s->stop)) {
        if (atomic_load(&s->waiters) > 0) {
            struct pollfd pfd = {.fd = s->stop_fd, .events = POLLIN};
            poll(&pfd, 1, 1);
            continue;
        }
        while (ucp_worker_progress(s->worker)) {
        }
        ucs_status_t st = ucp_worker_arm(s->worker);
        if (st == UCS_ERR_BUSY)
            continue;
        struct pollfd pfd[2] = {{.fd = s->efd, .events = POLLIN},
                                {.fd = s->stop_fd, .events = POLLIN}};
        poll(pfd, 2, 100);
    }
    return NULL;
}

static void client_ep_err(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    (void)status;
    rdma_session_t *s = arg;
    atomic_store(&s->dead, 1);
}

static void ep_lanes(rdma_session_t *s)
{
    char *text = NULL;
    size_t len = 0, used = 0;
    s->lanes[0] = '\0';
    s->tcp_only = 0;
    s->shm_only = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    ucp_ep_print_info(s->ep, f);
    fclose(f);
    int lanes = 0, tcp = 0, mm = 0, copy = 0;
    for (char *l = strstr(text, "lane["); l; l = strstr(l + 1, "lane[")) {
        char *colon = strchr(l, ':');
        if (!colon)
            break;
        /* "lane[0]:  1:tcp/lo.0 md[1] ..." */
        char *tl = strchr(colon + 1, ':');
        if (!tl)
            break;
        lanes++;
        tcp += strncmp(tl + 1, "tcp/", 4) == 0;
        mm += strncmp(tl + 1, "sysv/", 5) == 0 || strncmp(tl + 1, "posix/", 6) == 0;
        copy += strncmp(tl + 1, "cma/", 4) == 0 || strncmp(tl + 1, "knem/", 5) == 0 ||
                strncmp(tl + 1, "self/", 5) == 0;
        char name[64];
        size_t n = strcspn(tl + 1, " \t\n");
        if (n >= sizeof(name))
            n = sizeof(name) - 1;
        memcpy(name, tl + 1, n);
        name[n] = '\0';
        /* each name once: ",name," never inside ",lanes," */
        char probe[sizeof(name) + 2];
        snprintf(probe, sizeof probe, ",%s,", name);
        char have[sizeof(s->lanes) + 2];
        snprintf(have, sizeof have, ",%s,", s->lanes);
        if (strstr(have, probe) == NULL && used + n + 2 < sizeof(s->lanes))
            used += (size_t)snprintf(s->lanes + used, sizeof(s->lanes) - used, "%s%s",
                                     used ? "," : "", name);
    }
    free(text);
    s->tcp_only = lanes > 0 && tcp == lanes;
    s->shm_only = mm > 0 && mm + copy == lanes;
}

const char *rdma_session_lanes(rdma_session_t *s)
{
    return s->lanes;
}

const char *rdma_ucx_version(void)
{
    return ucp_get_version_string();
}

int rdma_session_tcp_only(rdma_session_t *s)
{
    return s->tcp_only;
}

int rdma_session_shm_only(rdma_session_t *s)
{
    return s->shm_only;
}

/* Receives one frame of the expected type; an ERROR frame becomes err. */
static long recv_expect(rdma_session_t *s, int type, uint8_t **body_p, char *err, size_t err_len)
{
    uint8_t *body = NULL;
    long n = rdma_net_recv_frame(s->fd, clock_mono_ms() + (uint64_t)s->timeout_ms, &body);
    if (n <= 0) {
        rdma_client_set_err(err, err_len, "session server closed the connection or timed out");
        return -1;
    }
    int t = rdma_wire_frame_type(body, (size_t)n);
    if (t == RDMA_MSG_ERROR) {
        uint32_t code = 0;
        char msg[RDMA_MAX_ERR_MSG + 1] = "";
        rdma_wire_parse_error(body, (size_t)n, &code, msg);
        rdma_client_set_err(err, err_len, "session server refused: %s (code %u)", msg, code);
        free(body);
        return -1;
    }
    if (t != type) {
        rdma_client_set_err(err, err_len, "unexpected reply from the session server (type %d)", t);
        free(body);
        return -1;
    }
    *body_p = body;
    return n;
}

/* The server's probe (an active message on our worker, docs/protocol.md
 * §1.3): kept when it carries our HELLO nonce, ignored otherwise. */
static ucs_status_t probe_recv(void *arg, const void *header, size_t header_length, void *data,
                               size_t length, const ucp_am_recv_param_t *param)
{
    rdma_session_t *s = arg;
    if (header_length == RDMA_NONCE_LEN && length == RDMA_NONCE_LEN &&
        !(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) &&
        memcmp(header, s->cnonce, RDMA_NONCE_LEN) == 0 && !atomic_load(&s->probe_got)) {
        memcpy(s->probe, data, RDMA_NONCE_LEN);
        atomic_store(&s->probe_got, 1);
    }
    return UCS_OK;
}

/* Progresses the worker until the probe arrives, watching the lifeline for
 * an ERROR meanwhile. 0, or -1 with err set. */
static int await_probe(rdma_session_t *s, char *err, size_t err_len)
{
    uint64_t deadline = clock_mono_ms() + (uint64_t)s->timeout_ms;
    while (!atomic_load(&s->probe_got)) {
        while (ucp_worker_progress(s->worker)) {
        }
        if (atomic_load(&s->probe_got))
            break;
        uint64_t now = clock_mono_ms();
        if (now >= deadline) {
            rdma_client_set_err(err, err_len,
                                "the session server's probe did not arrive (UCX unreachable?)");
            return -1;
        }
        if (ucp_worker_arm(s->worker) == UCS_ERR_BUSY)
            continue;
        struct pollfd pfd[2] = {{.fd = s->efd, .events = POLLIN}, {.fd = s->fd, .events = POLLIN}};
        int wait = deadline - now < 50 ? (int)(deadline - now) : 50;
        if (poll(pfd, 2, wait) > 0 && pfd[1].revents) {
            uint8_t *body = NULL;
            /* The server speaks before PROVE only to refuse. */
            if (recv_expect(s, RDMA_MSG_WELCOME, &body, err, err_len) >= 0) {
                free(body);
                rdma_client_set_err(err, err_len, "unexpected reply from the session server");
            }
            return -1;
        }
    }
    return 0;
}

/* Opens the lifeline: the Unix socket (cfg->socket, or by default
 * "@s3rdma.<port>" when the endpoint is loopback, falling back to TCP),
 * else TCP. Returns the fd, or -1 with err set. */
static int lifeline_connect(const rdma_client_config_t *cfg, int timeout_ms, char *err,
                            size_t err_len)
{
    if (cfg->socket && *cfg->socket)
        return rdma_net_connect_unix(cfg->socket, timeout_ms, err, err_len);
    if (!cfg->socket && rdma_net_host_is_loopback(cfg->host)) {
        char name[64];
        snprintf(name, sizeof(name), "@s3rdma.%d", cfg->port);
        int fd = rdma_net_connect_unix(name, timeout_ms, err, err_len);
        if (fd >= 0)
            return fd;
    }
    return rdma_net_connect(cfg->host, cfg->port, cfg->local_ip, timeout_ms, err, err_len);
}

static int send_frame(rdma_session_t *s, wire_out_t *w, int built)
{
    int rc = built == 0 ? rdma_net_send_all(s->fd, w->data, w->len,
                                            clock_mono_ms() + (uint64_t)s->timeout_ms)
                        : -1;
    rdma_wire_free(w);
    return rc;
}

int rdma_session_open(const rdma_client_config_t *cfg, rdma_session_t **out_p, char *err,
                      size_t err_len)
{
    rdma_session_t *s = calloc(1, sizeof(*s));
    uint8_t *body = NULL;
    ucp_address_t *caddr = NULL;
    size_t caddr_len = 0;
    if (!s) {
        rdma_client_set_err(err, err_len, "out of memory");
        return -1;
    }
    s->pid = getpid();
    s->fd = -1;
    s->stop_fd = -1;
    s->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : DEFAULT_TIMEOUT_MS;
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->calls_mu, NULL);
    if (!cfg->host || !cfg->access_key || !cfg->secret_key) {
        rdma_client_set_err(err, err_len, "host, access key and secret key are required");
        goto fail;
    }
    if (strlen(cfg->access_key) == 0 || strlen(cfg->access_key) > RDMA_MAX_AK) {
        rdma_client_set_err(err, err_len, "access key length must be 1..%d", RDMA_MAX_AK);
        goto fail;
    }
    const char *poll_mode = getenv("S3R_RDMA_POLL");
    if (poll_mode && *poll_mode) {
        if (strcmp(poll_mode, "busy") != 0 && strcmp(poll_mode, "adaptive") != 0) {
            rdma_client_set_err(err, err_len, "S3R_RDMA_POLL=%s: expected busy or adaptive",
                                poll_mode);
            goto fail;
        }
        s->busy_wait = strcmp(poll_mode, "busy") == 0;
    }

    pid_t owner = atomic_load(&ucx_owner);
    if (owner != 0 && owner != s->pid) {
        rdma_client_set_err(
            err, err_len,
            "UCX cannot run here: this process was forked from process %d after it had "
            "started UCX (docs/client.md, Fork)",
            (int)owner);
        goto fail;
    }

    /* UCX context and worker; knobs go into the config object, not the environment. */
    ucp_config_t *uc;
    ucs_status_t st = ucp_config_read(NULL, NULL, &uc);
    if (st != UCS_OK) {
        rdma_client_set_err(err, err_len, "ucp_config_read: %s", ucs_status_string(st));
        goto fail;
    }
    if (cfg->device && *cfg->device &&
        (st = ucp_config_modify(uc, "NET_DEVICES", cfg->device)) != UCS_OK) {
        rdma_client_set_err(err, err_len, "UCX_NET_DEVICES=%s: %s", cfg->device,
                            ucs_status_string(st));
        ucp_config_release(uc);
        goto fail;
    }
    if (cfg->log_level && *cfg->log_level &&
        ucp_config_modify(uc, "LOG_LEVEL", cfg->log_level) != UCS_OK &&
        (st = ucs_global_opts_set_value("LOG_LEVEL", cfg->log_level)) != UCS_OK) {
        rdma_client_set_err(err, err_len, "UCX_LOG_LEVEL=%s: %s", cfg->log_level,
                            ucs_status_string(st));
        ucp_config_release(uc);
        goto fail;
    }
    ucp_params_t up = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
        .features = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP,
        .mt_workers_shared = 1,
    };
    st = ucp_init(&up, uc, &s->ctx);
    ucp_config_release(uc);
    if (st != UCS_OK) {
        s->ctx = NULL;
        rdma_client_set_err(err, err_len, "ucp_init: %s", ucs_status_string(st));
        goto fail;
    }
    atomic_store(&ucx_owner, s->pid);
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_MULTI};
    if ((st = ucp_worker_create(s->ctx, &wp, &s->worker)) != UCS_OK ||
        (st = ucp_worker_get_efd(s->worker, &s->efd)) != UCS_OK ||
        (st = ucp_worker_get_address(s->worker, &caddr, &caddr_len)) != UCS_OK) {
        rdma_client_set_err(err, err_len, "UCX worker: %s", ucs_status_string(st));
        goto fail;
    }

    ucp_am_handler_param_t ah = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                      UCP_AM_HANDLER_PARAM_FIELD_ARG,
        .id = RDMA_AM_PROBE,
        .cb = probe_recv,
        .arg = s,
    };
    ucp_am_handler_param_t nh = ah, ph = ah;
    nh.id = RDMA_AM_NATIVE_REPLY;
    nh.cb = rdma_native_reply_recv;
    ph.id = RDMA_AM_NATIVE_PROGRESS;
    ph.cb = rdma_native_progress_recv;
    if ((st = ucp_worker_set_am_recv_handler(s->worker, &ah)) != UCS_OK ||
        (st = ucp_worker_set_am_recv_handler(s->worker, &nh)) != UCS_OK ||
        (st = ucp_worker_set_am_recv_handler(s->worker, &ph)) != UCS_OK) {
        rdma_client_set_err(err, err_len, "UCX active message handler: %s", ucs_status_string(st));
        goto fail;
    }

    /* Bootstrap handshake (docs/protocol.md §1.3). */
    s->fd = lifeline_connect(cfg, s->timeout_ms, err, err_len);
    if (s->fd < 0)
        goto fail;
    if (hash_random_bytes(s->cnonce, sizeof(s->cnonce)) < 0) {
        rdma_client_set_err(err, err_len, "no random bytes");
        goto fail;
    }
    wire_out_t w = {0};
    if (send_frame(s, &w, rdma_wire_hello(&w, cfg->access_key, s->cnonce, caddr, caddr_len)) < 0) {
        rdma_client_set_err(err, err_len, "sending HELLO failed");
        goto fail;
    }
    long n = recv_expect(s, RDMA_MSG_CHALLENGE, &body, err, err_len);
    if (n < 0)
        goto fail;
    uint8_t snonce[RDMA_NONCE_LEN];
    if (rdma_wire_parse_nonce(body, (size_t)n, RDMA_MSG_CHALLENGE, snonce) < 0) {
        rdma_client_set_err(err, err_len, "malformed CHALLENGE");
        goto fail;
    }
    free(body);
    body = NULL;
    uint8_t key[32], mac[RDMA_MAC_LEN], smac[RDMA_MAC_LEN];
    rdma_session_key(cfg->secret_key, key);
    rdma_handshake_mac(key, "client", s->cnonce, snonce, caddr, caddr_len, NULL, 0, cfg->access_key,
                       mac);
    if (send_frame(s, &w, rdma_wire_nonce(&w, RDMA_MSG_AUTH, mac)) < 0) {
        rdma_client_set_err(err, err_len, "sending AUTH failed");
        goto fail;
    }
    if (await_probe(s, err, err_len) < 0)
        goto fail;
    if (send_frame(s, &w, rdma_wire_nonce(&w, RDMA_MSG_PROVE, s->probe)) < 0) {
        rdma_client_set_err(err, err_len, "sending PROVE failed");
        goto fail;
    }
    n = recv_expect(s, RDMA_MSG_WELCOME, &body, err, err_len);
    if (n < 0 || rdma_wire_parse_welcome(body, (size_t)n, &s->welcome) < 0) {
        if (n >= 0)
            rdma_client_set_err(err, err_len, "malformed WELCOME");
        goto fail;
    }
    rdma_handshake_mac(key, "server", s->cnonce, snonce, caddr, caddr_len, s->welcome.worker_addr,
                       s->welcome.worker_addr_len, cfg->access_key, smac);
    if (!hash_ct_equal(smac, s->welcome.server_mac, RDMA_MAC_LEN)) {
        rdma_client_set_err(err, err_len, "the session server failed to prove it knows the secret");
        goto fail;
    }

    /* Our endpoint to the server's worker, in the error mode it chose. */
    s->err_mode = s->welcome.err_mode;
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
        .address = (const ucp_address_t *)s->welcome.worker_addr,
        .err_mode = s->err_mode == RDMA_WIRE_ERRMODE_PEER ? UCP_ERR_HANDLING_MODE_PEER
                                                          : UCP_ERR_HANDLING_MODE_NONE,
    };
    if (s->err_mode == RDMA_WIRE_ERRMODE_PEER) {
        ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep.err_handler.cb = client_ep_err;
        ep.err_handler.arg = s;
    }
    st = ucp_ep_create(s->worker, &ep, &s->ep);
    s->welcome.worker_addr = NULL; /* pointed into the frame */
    free(body);
    body = NULL;
    if (st != UCS_OK) {
        s->ep = NULL;
        rdma_client_set_err(err, err_len, "ucp_ep_create to the server: %s", ucs_status_string(st));
        goto fail;
    }
    ucp_worker_release_address(s->worker, caddr);
    caddr = NULL;
    ep_lanes(s);

    s->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s->stop_fd < 0 || pthread_create(&s->th, NULL, client_progress_main, s) != 0) {
        rdma_client_set_err(err, err_len, "cannot start the progress thread");
        goto fail;
    }
    s->th_started = 1;
    *out_p = s;
    return 0;
fail:
    free(body);
    if (caddr)
        ucp_worker_release_address(s->worker, caddr);
    rdma_session_close(s);
    return -1;
}

void rdma_session_disown(rdma_session_t *s)
{
    if (!s || !rdma_client_inherited(s))
        return;
    if (s->fd >= 0)
        close(s->fd);
    if (s->stop_fd >= 0)
        close(s->stop_fd);
    s->fd = s->stop_fd = -1;
}

/* Forgets a session inherited across fork: closes this process's copies of
 * its sockets (rdma_session_disown) and frees its memory here. No UCX call,
 * no thread join, no lock: all of them are the parent's. */
static void session_forget(rdma_session_t *s)
{
    rdma_session_disown(s);
    while (s->regions) {
        rdma_region_t *r = s->regions;
        s->regions = r->next;
        free(r);
    }
    free(s);
}

/* Closes the endpoint to a live server: flushes it, progressing the worker
 * on this thread, then closes it gracefully, within CLOSE_WAIT_MS for both.
 *
 * Why the flush comes first. UCX 1.13 aborts the process when it purges a
 * queued wireup reply from an endpoint (ucp_request.c:684, "got REP
 * message"; upstream dropped that assertion after 1.13, openucx/ucx#8175),
 * and a forced close, the server's endpoint going away (it goes when the
 * lifeline closes) and ucp_worker_destroy all purge. Over TCP such a reply
 * waits in the queue until the server has acknowledged our connection to
 * its UCX port. The flush completes only once the queue is empty, after
 * which no close purges anything. A flush that fails (the endpoint failed:
 * UCX already purged it) or does not complete in time (a server that
 * stopped answering) leaves the forced close (PEER mode), which does not
 * wait for the peer. */
static void ep_close(rdma_session_t *s)
{
    uint64_t deadline = clock_mono_ms() + CLOSE_WAIT_MS;
    ucp_request_param_t fp = {0};
    int flushed = rdma_ucx_wait(s->worker, ucp_ep_flush_nbx(s->ep, &fp), CLOSE_WAIT_MS) == UCS_OK;
    uint64_t now = clock_mono_ms();
    int left = now < deadline ? (int)(deadline - now) : 0;
    ucp_request_param_t cp = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
        .flags = !flushed && s->err_mode == RDMA_WIRE_ERRMODE_PEER ? UCP_EP_CLOSE_FLAG_FORCE : 0};
    rdma_ucx_wait(s->worker, ucp_ep_close_nbx(s->ep, &cp), left);
}

void rdma_session_close(rdma_session_t *s)
{
    if (!s)
        return;
    if (rdma_client_inherited(s)) {
        session_forget(s);
        return;
    }
    if (s->th_started) {
        atomic_store(&s->stop, 1);
        uint64_t one = 1;
        if (write(s->stop_fd, &one, sizeof(one)) < 0) {
            /* the thread polls with a timeout */
        }
        pthread_join(s->th, NULL);
    }
    rdma_native_calls_fail_all(s);
    /* A dead server cannot answer a flush: skip the close and let
     * ucp_worker_destroy reclaim the endpoint. */
    if (s->ep && s->fd >= 0 && rdma_session_alive(s))
        ep_close(s);
    /* The lifeline only now: the server drops the session, and its endpoint
     * with it, once ours has nothing left queued. Our memory is
     * unregistered after. */
    if (s->fd >= 0)
        close(s->fd);
    while (s->regions) {
        rdma_region_t *r = s->regions;
        s->regions = r->next;
        ucp_mem_unmap(s->ctx, r->memh);
        free(r);
    }
    if (s->worker)
        ucp_worker_destroy(s->worker);
    if (s->ctx)
        ucp_cleanup(s->ctx);
    if (s->stop_fd >= 0)
        close(s->stop_fd);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->calls_mu);
    free(s);
}

int rdma_session_alive(rdma_session_t *s)
{
    if (!s || atomic_load(&s->dead) || rdma_client_inherited(s))
        return 0;
    pthread_mutex_lock(&s->mu);
    struct pollfd pfd = {.fd = s->fd, .events = POLLIN};
    int alive = 1;
    if (poll(&pfd, 1, 0) > 0) {
        char c;
        /* The server never speaks unasked: readable here means EOF or an error. */
        ssize_t k = recv(s->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR) ||
            (pfd.revents & (POLLHUP | POLLERR)))
            alive = 0;
    }
    pthread_mutex_unlock(&s->mu);
    if (!alive)
        atomic_store(&s->dead, 1);
    return alive;
}

/* Announces r (REGION_ADD) and waits for REGION_OK. Called with s->mu held. */
static int region_announce(rdma_session_t *s, rdma_region_t *r, char *err, size_t err_len)
{
    void *rkey = NULL;
    size_t rkey_len = 0;
    ucs_status_t st = ucp_rkey_pack(s->ctx, r->memh, &rkey, &rkey_len);
    if (st != UCS_OK) {
        rdma_client_set_err(err, err_len, "ucp_rkey_pack: %s", ucs_status_string(st));
        return -1;
    }
    rdma_region_add_t m = {.region_id = r->id,
                           .addr = (uint64_t)(uintptr_t)r->addr,
                           .len = r->len,
                           .rkey = rkey,
                           .rkey_len = rkey_len};
    wire_out_t w = {0};
    int rc = send_frame(s, &w, rdma_wire_region_add(&w, &m));
    ucp_rkey_buffer_release(rkey);
    if (rc < 0) {
        atomic_store(&s->dead, 1);
        rdma_client_set_err(err, err_len, "sending REGION_ADD failed (lifeline down?)");
        return -1;
    }
    uint8_t *body = NULL;
    long n = recv_expect(s, RDMA_MSG_REGION_OK, &body, err, err_len);
    if (n < 0)
        return -1;
    uint32_t id = 0;
    rc = rdma_wire_parse_region_id(body, (size_t)n, &id) < 0 || id != r->id ? -1 : 0;
    free(body);
    if (rc < 0)
        rdma_client_set_err(err, err_len, "malformed REGION_OK");
    return rc;
}

static int region_map(rdma_session_t *s, void *addr, size_t len, int allocate,
                      rdma_region_t **out_p, char *err, size_t err_len)
{
    if (len == 0) {
        rdma_client_set_err(err, err_len, "region length must be > 0");
        return -1;
    }
    rdma_region_t *r = calloc(1, sizeof(*r));
    if (!r) {
        rdma_client_set_err(err, err_len, "out of memory");
        return -1;
    }
    ucp_mem_map_params_t mp = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                      UCP_MEM_MAP_PARAM_FIELD_FLAGS,
        .address = allocate ? NULL : addr,
        .length = len,
        .flags = allocate ? UCP_MEM_MAP_ALLOCATE : 0,
    };
    ucs_status_t st = ucp_mem_map(s->ctx, &mp, &r->memh);
    if (st != UCS_OK) {
        rdma_client_set_err(err, err_len, "ucp_mem_map of %zu bytes: %s", len,
                            ucs_status_string(st));
        free(r);
        return -1;
    }
    if (allocate) {
        ucp_mem_attr_t ma = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS};
        ucp_mem_query(r->memh, &ma);
        addr = ma.address;
    }
    r->addr = addr;
    r->len = len;
    pthread_mutex_lock(&s->mu);
    r->id = ++s->next_region_id;
    int rc = region_announce(s, r, err, err_len);
    if (rc == 0) {
        r->next = s->regions;
        s->regions = r;
    }
    pthread_mutex_unlock(&s->mu);
    if (rc < 0) {
        ucp_mem_unmap(s->ctx, r->memh);
        free(r);
        return -1;
    }
    *out_p = r;
    return 0;
}

int rdma_region_add(rdma_session_t *s, void *addr, size_t len, rdma_region_t **out_p, char *err,
                    size_t err_len)
{
    if (rdma_client_inherited(s)) {
        rdma_client_set_err(err, err_len, "the RDMA session belongs to the parent process");
        return -1;
    }
    if (!addr) {
        rdma_client_set_err(err, err_len, "NULL region address");
        return -1;
    }
    return region_map(s, addr, len, 0, out_p, err, err_len);
}

int rdma_region_alloc(rdma_session_t *s, size_t len, void **addr_p, rdma_region_t **out_p,
                      char *err, size_t err_len)
{
    rdma_region_t *r;
    if (rdma_client_inherited(s)) {
        rdma_client_set_err(err, err_len, "the RDMA session belongs to the parent process");
        return -1;
    }
    if (region_map(s, NULL, len, 1, &r, err, err_len) < 0)
        return -1;
    *addr_p = r->addr;
    *out_p = r;
    return 0;
}

void rdma_region_remove(rdma_session_t *s, rdma_region_t *r)
{
    if (!s || !r)
        return;
    if (rdma_client_inherited(s)) {
        /* The parent's registration: only this process's record goes. */
        for (rdma_region_t **pp = &s->regions; *pp; pp = &(*pp)->next) {
            if (*pp == r) {
                *pp = r->next;
                free(r);
                break;
            }
        }
        return;
    }
    pthread_mutex_lock(&s->mu);
    int found = 0;
    for (rdma_region_t **pp = &s->regions; *pp; pp = &(*pp)->next) {
        if (*pp == r) {
            *pp = r->next;
            found = 1;
            break;
        }
    }
    if (found && !atomic_load(&s->dead)) {
        /* Wait for the server to drop the rkey before unregistering. */
        wire_out_t w = {0};
        if (send_frame(s, &w, rdma_wire_region_id(&w, RDMA_MSG_REGION_REMOVE, r->id)) == 0) {
            uint8_t *body = NULL;
            char e[128];
            if (recv_expect(s, RDMA_MSG_REGION_OK, &body, e, sizeof(e)) >= 0)
                free(body);
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (found) {
        ucp_mem_unmap(s->ctx, r->memh);
        free(r);
    }
}

int rdma_region_ref(rdma_region_t *r, const void *addr, uint64_t len, rdma_native_ref_t *ref)
{
    uintptr_t a = (uintptr_t)addr, base = (uintptr_t)r->addr;
    if (a < base || a - base > r->len || len > r->len - (a - base))
        return -1;
    ref->region_id = r->id;
    ref->addr = a;
    ref->len = len;
    return 0;
}

int rdma_token_format(rdma_session_t *s, rdma_region_t *r, const void *addr, uint64_t len,
                      char *out, size_t out_len)
{
    rdma_native_ref_t ref;
    if (rdma_region_ref(r, addr, len, &ref) != 0)
        return -1;
    rdma_token_t t = {.region_id = ref.region_id, .addr = ref.addr, .len = ref.len};
    memcpy(t.session_id, s->welcome.session_id, RDMA_SESSION_ID_LEN);
    return rdma_token_encode(&t, out, out_len) < 0 ? -1 : 0;
}
