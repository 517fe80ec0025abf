/* The bootstrap thread: the session port's listener, every TCP connection
 * (non-blocking reads, handshake deadline), the handshake (HELLO, CHALLENGE,
 * AUTH, WELCOME) that creates a session, REGION_ADD/REMOVE on a lifeline, and
 * killing a session when its lifeline drops. Threads and ownership:
 * rdma_server_internal.h. */
#include "rdma/rdma_server_internal.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/log.h"
#include "rdma/rdma_net.h"
#include "rdma/rdma_wire.h"

#define HANDSHAKE_TIMEOUT_MS 5000
#define EXTRA_PENDING_CONNS  16 /* handshakes in progress beyond max_sessions */

/* ==== bootstrap connections ============================================== */

enum conn_state {
    CONN_HELLO, /* waiting for HELLO */
    CONN_AUTH,  /* CHALLENGE sent, waiting for AUTH */
    CONN_LIVE,  /* WELCOME sent: the session's lifeline */
};

typedef struct bconn {
    int fd;
    enum conn_state state;
    uint64_t deadline_ms;
    uint8_t hdr[4];
    size_t hdr_got;
    uint8_t *body;
    size_t body_len, body_got;
    char peer[64];
    /* handshake */
    int reserved; /* holds one n_alloc slot */
    char ak[RDMA_MAX_AK + 1];
    uint8_t cnonce[RDMA_NONCE_LEN], snonce[RDMA_NONCE_LEN];
    uint8_t *caddr;
    size_t caddr_len;
    int same_host;
    rprog_t *prog;
    rworker_t pend;       /* own worker created at HELLO (same host) */
    ucp_address_t *saddr; /* own worker's address (shared ones live in rprog) */
    size_t saddr_len;
    rsession_t *sess; /* when LIVE */
    struct bconn *next;
} bconn_t;

/* The whole region as one local mapping, or NULL when UCX cannot map it
 * (ucp_rkey_ptr fails for RDMA NIC and CMA rkeys) or it is not contiguous. */
static uint8_t *region_map(rregion_t *r)
{
    void *first = NULL, *last = NULL;
    if (ucp_rkey_ptr(r->rkey, r->addr, &first) != UCS_OK ||
        ucp_rkey_ptr(r->rkey, r->addr + r->len - 1, &last) != UCS_OK ||
        (uint8_t *)last - (uint8_t *)first != (ptrdiff_t)(r->len - 1))
        return NULL;
    return first;
}

static void ep_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    rsession_t *s = arg;
    atomic_store(&s->dead, 1);
    log_info("rdma: session endpoint failed: %s", ucs_status_string(status));
}

/* ==== bootstrap: messages ================================================ */

static int conn_send(bconn_t *c, wire_out_t *w)
{
    int rc = rdma_net_send_all(c->fd, w->data, w->len, rdma_now_ms() + 1000);
    wire_free(w);
    return rc;
}

static void conn_send_error(bconn_t *c, uint32_t code, const char *msg)
{
    wire_out_t w = {0};
    if (wire_error(&w, code, msg) == 0)
        conn_send(c, &w);
    else
        wire_free(&w);
}

/* Releases what a connection holds; a live session is killed and the
 * lifeline's reference dropped. */
static void conn_free(struct rdma_server *srv, bconn_t *c)
{
    if (c->sess) {
        session_kill(srv, c->sess);
        session_put(c->sess);
        c->sess = NULL;
    }
    if (c->saddr)
        ucp_worker_release_address(c->pend.w, c->saddr);
    worker_destroy(&c->pend);
    if (c->reserved) {
        pthread_mutex_lock(&srv->mu);
        srv->n_alloc--;
        pthread_mutex_unlock(&srv->mu);
    }
    free(c->caddr);
    free(c->body);
    close(c->fd);
    free(c);
}

/* Each handler returns 0 to keep the connection, -1 to close it (after
 * logging why). */
static int on_hello(struct rdma_server *srv, bconn_t *c, const uint8_t *body, size_t len)
{
    rdma_hello_t h;
    if (wire_parse_hello(body, len, &h) < 0) {
        log_warn("rdma: %s: malformed HELLO; closing", c->peer);
        conn_send_error(c, RDMA_ERR_BAD_MESSAGE, "malformed HELLO");
        return -1;
    }
    pthread_mutex_lock(&srv->mu);
    int ok = srv->n_alloc < srv->cfg.max_sessions;
    if (ok)
        srv->n_alloc++;
    pthread_mutex_unlock(&srv->mu);
    if (!ok) {
        log_warn("rdma: %s: session limit (%u) reached; refusing", c->peer, srv->cfg.max_sessions);
        conn_send_error(c, RDMA_ERR_MAX_SESSIONS, "too many RDMA sessions");
        return -1;
    }
    c->reserved = 1;
    snprintf(c->ak, sizeof(c->ak), "%s", h.access_key);
    memcpy(c->cnonce, h.nonce, RDMA_NONCE_LEN);
    c->caddr = malloc(h.worker_addr_len);
    if (!c->caddr || random_bytes(c->snonce, RDMA_NONCE_LEN) < 0) {
        conn_send_error(c, RDMA_ERR_INTERNAL, "out of memory");
        return -1;
    }
    memcpy(c->caddr, h.worker_addr, h.worker_addr_len);
    c->caddr_len = h.worker_addr_len;
    c->same_host = strcmp(h.host_id, srv->host_id) == 0;
    pthread_mutex_lock(&srv->mu);
    c->prog = &srv->progs[srv->next_prog++ % (unsigned)srv->n_progs];
    pthread_mutex_unlock(&srv->mu);

    const void *saddr;
    size_t saddr_len;
    if (c->same_host) {
        if (worker_create(srv, &c->pend) < 0 ||
            ucp_worker_get_address(c->pend.w, &c->saddr, &c->saddr_len) != UCS_OK) {
            c->saddr = NULL;
            conn_send_error(c, RDMA_ERR_INTERNAL, "cannot create a UCX worker");
            return -1;
        }
        saddr = c->saddr;
        saddr_len = c->saddr_len;
    } else {
        saddr = c->prog->shared_addr;
        saddr_len = c->prog->shared_addr_len;
    }
    wire_out_t w = {0};
    if (wire_challenge(&w, c->snonce, saddr, saddr_len) < 0 || conn_send(c, &w) < 0) {
        wire_free(&w);
        log_warn("rdma: %s: cannot send CHALLENGE; closing", c->peer);
        return -1;
    }
    c->state = CONN_AUTH;
    return 0;
}

static int on_auth(struct rdma_server *srv, bconn_t *c, const uint8_t *body, size_t len)
{
    uint8_t mac[RDMA_MAC_LEN], want[RDMA_MAC_LEN], key[32];
    char secret[256];
    if (wire_parse_auth(body, len, mac) < 0) {
        log_warn("rdma: %s: malformed AUTH; closing", c->peer);
        conn_send_error(c, RDMA_ERR_BAD_MESSAGE, "malformed AUTH");
        return -1;
    }
    const void *saddr = c->same_host ? (const void *)c->saddr : (const void *)c->prog->shared_addr;
    size_t saddr_len = c->same_host ? c->saddr_len : c->prog->shared_addr_len;
    int known = srv->cfg.lookup_secret &&
                srv->cfg.lookup_secret(srv->cfg.lookup_ctx, c->ak, secret, sizeof(secret)) == 0;
    if (known) {
        secret[sizeof(secret) - 1] = '\0';
        rdma_session_key(secret, key);
        rdma_handshake_mac(key, "client", c->cnonce, c->snonce, c->caddr, c->caddr_len, saddr,
                           saddr_len, c->ak, want);
    }
    if (!known || !ct_equal(mac, want, RDMA_MAC_LEN)) {
        log_warn("rdma: %s: session authentication failed for access key '%s' (%s); closing",
                 c->peer, c->ak, known ? "bad MAC" : "unknown key");
        conn_send_error(c, RDMA_ERR_AUTH, "authentication failed");
        memset(secret, 0, sizeof(secret));
        return -1;
    }
    memset(secret, 0, sizeof(secret));

    rsession_t *s = calloc(1, sizeof(*s));
    if (!s) {
        conn_send_error(c, RDMA_ERR_INTERNAL, "out of memory");
        return -1;
    }
    pthread_mutex_init(&s->mu, NULL);
    s->srv = srv;
    s->prog = c->prog;
    atomic_init(&s->refs, 1); /* the lifeline's */
    snprintf(s->access_key, sizeof(s->access_key), "%s", c->ak);
    s->own_worker = c->same_host;
    if (s->own_worker) {
        s->own = c->pend;
        s->worker = s->own.w;
    } else {
        s->worker = c->prog->shared.w;
    }
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
        .address = (const ucp_address_t *)c->caddr,
        .err_mode = s->own_worker ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER,
    };
    if (!s->own_worker) {
        ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep.err_handler.cb = ep_err_cb;
        ep.err_handler.arg = s;
    }
    ucs_status_t st = ucp_ep_create(s->worker, &ep, &s->ep);
    if (st != UCS_OK) {
        log_warn("rdma: %s: ucp_ep_create to the client: %s; closing", c->peer,
                 ucs_status_string(st));
        conn_send_error(c, RDMA_ERR_INTERNAL, "cannot reach the client's UCX worker");
        pthread_mutex_destroy(&s->mu);
        free(s);
        return -1;
    }
    rdma_welcome_t wm = {
        .err_mode = s->own_worker ? RDMA_WIRE_ERRMODE_NONE : RDMA_WIRE_ERRMODE_PEER,
        .max_regions = srv->cfg.max_regions_per_session,
        .max_registered = srv->cfg.max_registered_per_session,
        .max_inflight = srv->cfg.max_inflight,
        .chunk_bytes = (uint32_t)srv->chunk_bytes,
    };
    random_bytes(wm.session_id, RDMA_SESSION_ID_LEN);
    memcpy(s->id, wm.session_id, RDMA_SESSION_ID_LEN);
    rdma_handshake_mac(key, "server", c->cnonce, c->snonce, c->caddr, c->caddr_len, saddr,
                       saddr_len, c->ak, wm.server_mac);

    /* From here the session owns the worker and the slot; the address (which
     * the MAC above covers) is no longer needed. */
    if (c->saddr) {
        ucp_worker_release_address(c->pend.w, c->saddr);
        c->saddr = NULL;
    }
    c->pend.w = NULL;
    c->reserved = 0;

    pthread_mutex_lock(&srv->mu);
    rsession_t **b = session_bucket(srv, s->id);
    s->hnext = *b;
    *b = s;
    srv->n_live++;
    pthread_mutex_unlock(&srv->mu);
    c->sess = s;
    c->state = CONN_LIVE;
    if (s->own_worker)
        prog_post(s->prog, CMD_ADD, s);

    wire_out_t w = {0};
    if (wire_welcome(&w, &wm) < 0 || conn_send(c, &w) < 0) {
        wire_free(&w);
        log_warn("rdma: %s: cannot send WELCOME; closing", c->peer);
        return -1;
    }
    log_info("rdma: %s: session up for '%s' (%s)", c->peer, c->ak,
             s->own_worker ? "same host, own worker" : "remote, shared worker");
    return 0;
}

static int on_region_add(struct rdma_server *srv, bconn_t *c, const uint8_t *body, size_t len)
{
    rsession_t *s = c->sess;
    rdma_region_add_t m;
    if (wire_parse_region_add(body, len, &m) < 0) {
        log_warn("rdma: %s: malformed REGION_ADD; closing", c->peer);
        conn_send_error(c, RDMA_ERR_BAD_MESSAGE, "malformed REGION_ADD");
        return -1;
    }
    uint32_t code = 0;
    const char *msg = NULL;
    pthread_mutex_lock(&s->mu);
    for (rregion_t *r = s->regions; r; r = r->next) {
        if (r->id == m.region_id) {
            code = RDMA_ERR_DUP_REGION;
            msg = "region id already in use";
        }
    }
    if (!code && s->n_regions >= srv->cfg.max_regions_per_session) {
        code = RDMA_ERR_MAX_REGIONS;
        msg = "too many regions in this session";
    } else if (!code && m.len > srv->cfg.max_registered_per_session - s->reg_bytes) {
        code = RDMA_ERR_MAX_REGISTERED;
        msg = "registered bytes limit of this session reached";
    }
    rregion_t *r = NULL;
    if (!code) {
        r = calloc(1, sizeof(*r));
        ucs_status_t st = r ? ucp_ep_rkey_unpack(s->ep, m.rkey, &r->rkey) : UCS_ERR_NO_MEMORY;
        if (st != UCS_OK) {
            free(r);
            code = RDMA_ERR_BAD_RKEY;
            msg = "cannot unpack the region's rkey";
            log_warn("rdma: %s: rkey unpack: %s", c->peer, ucs_status_string(st));
        } else {
            r->id = m.region_id;
            r->addr = m.addr;
            r->len = m.len;
            r->refs = 1;
            r->local = srv->no_map ? NULL : region_map(r);
            r->next = s->regions;
            s->regions = r;
            s->n_regions++;
            s->reg_bytes += m.len;
        }
    }
    pthread_mutex_unlock(&s->mu);
    wire_out_t w = {0};
    if (code) {
        log_info("rdma: %s: REGION_ADD %u refused: %s", c->peer, m.region_id, msg);
        conn_send_error(c, code, msg);
        return 0;
    }
    if (wire_region_id(&w, RDMA_MSG_REGION_OK, m.region_id) < 0 || conn_send(c, &w) < 0) {
        wire_free(&w);
        return -1;
    }
    return 0;
}

static int on_region_remove(bconn_t *c, const uint8_t *body, size_t len)
{
    rsession_t *s = c->sess;
    uint32_t id;
    if (wire_parse_region_id(body, len, &id) < 0 ||
        wire_frame_type(body, len) != RDMA_MSG_REGION_REMOVE) {
        log_warn("rdma: %s: malformed REGION_REMOVE; closing", c->peer);
        conn_send_error(c, RDMA_ERR_BAD_MESSAGE, "malformed REGION_REMOVE");
        return -1;
    }
    int found = 0;
    pthread_mutex_lock(&s->mu);
    for (rregion_t **pp = &s->regions; *pp; pp = &(*pp)->next) {
        rregion_t *r = *pp;
        if (r->id == id) {
            *pp = r->next;
            s->n_regions--;
            s->reg_bytes -= r->len;
            region_put_locked(r);
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (!found) {
        conn_send_error(c, RDMA_ERR_NO_REGION, "no such region");
        return 0;
    }
    wire_out_t w = {0};
    if (wire_region_id(&w, RDMA_MSG_REGION_OK, id) < 0 || conn_send(c, &w) < 0) {
        wire_free(&w);
        return -1;
    }
    return 0;
}

static int on_frame(struct rdma_server *srv, bconn_t *c, const uint8_t *body, size_t len)
{
    int type = wire_frame_type(body, len);
    if (type < 0) {
        log_warn("rdma: %s: bad magic/version/flags; closing", c->peer);
        conn_send_error(c, RDMA_ERR_BAD_MESSAGE, "bad magic or unsupported version");
        return -1;
    }
    switch (c->state) {
    case CONN_HELLO:
        if (type == RDMA_MSG_HELLO)
            return on_hello(srv, c, body, len);
        break;
    case CONN_AUTH:
        if (type == RDMA_MSG_AUTH)
            return on_auth(srv, c, body, len);
        break;
    case CONN_LIVE:
        if (type == RDMA_MSG_REGION_ADD)
            return on_region_add(srv, c, body, len);
        if (type == RDMA_MSG_REGION_REMOVE)
            return on_region_remove(c, body, len);
        break;
    }
    log_warn("rdma: %s: unexpected message type %d in state %d; closing", c->peer, type, c->state);
    conn_send_error(c, RDMA_ERR_BAD_MESSAGE, "unexpected message");
    return -1;
}

/* Reads what is available; returns -1 when the connection must close. */
static int conn_readable(struct rdma_server *srv, bconn_t *c)
{
    for (;;) {
        uint8_t *dst;
        size_t want;
        if (c->hdr_got < 4) {
            dst = c->hdr + c->hdr_got;
            want = 4 - c->hdr_got;
        } else {
            dst = c->body + c->body_got;
            want = c->body_len - c->body_got;
        }
        ssize_t k = recv(c->fd, dst, want, MSG_DONTWAIT);
        if (k == 0) {
            if (c->state == CONN_LIVE)
                log_info("rdma: %s: lifeline closed; ending session", c->peer);
            else
                log_warn("rdma: %s: closed during handshake", c->peer);
            return -1;
        }
        if (k < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return 0;
            log_info("rdma: %s: %s; ending session", c->peer, strerror(errno));
            return -1;
        }
        if (c->hdr_got < 4) {
            c->hdr_got += (size_t)k;
            if (c->hdr_got == 4) {
                long n = wire_frame_len(c->hdr);
                if (n < 0) {
                    log_warn("rdma: %s: frame length out of bounds; closing", c->peer);
                    conn_send_error(c, RDMA_ERR_BAD_MESSAGE, "frame length out of bounds");
                    return -1;
                }
                c->body = malloc((size_t)n);
                if (!c->body)
                    return -1;
                c->body_len = (size_t)n;
                c->body_got = 0;
            }
            continue;
        }
        c->body_got += (size_t)k;
        if (c->body_got == c->body_len) {
            int rc = on_frame(srv, c, c->body, c->body_len);
            free(c->body);
            c->body = NULL;
            c->hdr_got = 0;
            if (rc < 0)
                return -1;
        }
    }
}

static void conn_accept(struct rdma_server *srv)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int fd = accept4(srv->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return;
    char host[48] = "?", serv[16] = "?";
    getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), serv, sizeof(serv),
                NI_NUMERICHOST | NI_NUMERICSERV);
    if (srv->n_conns >= srv->cfg.max_sessions + EXTRA_PENDING_CONNS) {
        log_warn("rdma: %s:%s: too many session connections; refusing", host, serv);
        close(fd);
        return;
    }
    bconn_t *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        return;
    }
    c->fd = fd;
    c->state = CONN_HELLO;
    c->deadline_ms = rdma_now_ms() + HANDSHAKE_TIMEOUT_MS;
    snprintf(c->peer, sizeof(c->peer), "%s:%s", host, serv);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    c->next = srv->conns;
    srv->conns = c;
    srv->n_conns++;
}

void *boot_main(void *arg)
{
    struct rdma_server *srv = arg;
    struct pollfd *pfds = NULL;
    bconn_t **map = NULL;
    size_t cap = 0;
    while (!atomic_load(&srv->stop)) {
        size_t need = srv->n_conns + 2;
        if (need > cap) {
            cap = need * 2;
            free(pfds);
            free(map);
            pfds = calloc(cap, sizeof(*pfds));
            map = calloc(cap, sizeof(*map));
            if (!pfds || !map) {
                log_error("rdma: out of memory in the session listener");
                cap = 0;
                sleep(1);
                continue;
            }
        }
        size_t n = 0;
        pfds[n++] = (struct pollfd){.fd = srv->boot_evfd, .events = POLLIN};
        pfds[n++] = (struct pollfd){.fd = srv->listen_fd, .events = POLLIN};
        for (bconn_t *c = srv->conns; c; c = c->next) {
            map[n] = c;
            pfds[n++] = (struct pollfd){.fd = c->fd, .events = POLLIN};
        }
        int k = poll(pfds, n, 200);
        if (k < 0 && errno != EINTR) {
            log_error("rdma: poll: %s", strerror(errno));
            break;
        }
        uint64_t now = rdma_now_ms();
        for (size_t i = 2; i < n; i++) {
            bconn_t *c = map[i];
            int close_it = 0;
            if (pfds[i].revents & (POLLIN | POLLHUP | POLLERR))
                close_it = conn_readable(srv, c) < 0;
            if (!close_it && c->state != CONN_LIVE && now > c->deadline_ms) {
                log_warn("rdma: %s: handshake timed out; closing", c->peer);
                close_it = 1;
            }
            if (close_it) {
                for (bconn_t **pp = &srv->conns; *pp; pp = &(*pp)->next) {
                    if (*pp == c) {
                        *pp = c->next;
                        break;
                    }
                }
                srv->n_conns--;
                conn_free(srv, c);
            }
        }
        if (k > 0 && (pfds[1].revents & POLLIN))
            conn_accept(srv);
    }
    while (srv->conns) {
        bconn_t *c = srv->conns;
        srv->conns = c->next;
        srv->n_conns--;
        conn_free(srv, c);
    }
    free(pfds);
    free(map);
    return NULL;
}

int listen_on(struct rdma_server *srv)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE},
                    *res = NULL;
    char portstr[16];
    snprintf(portstr, sizeof(portstr), "%d", srv->cfg.port);
    const char *host = srv->cfg.listen_host && *srv->cfg.listen_host ? srv->cfg.listen_host : NULL;
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0) {
        log_error("rdma: resolve %s: %s", host ? host : "*", gai_strerror(rc));
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 128) < 0) {
        log_error("rdma: listen on %s:%d: %s", host ? host : "*", srv->cfg.port, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    srv->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
    srv->listen_fd = fd;
    return 0;
}
