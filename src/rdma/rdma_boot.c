/* The bootstrap thread: the session listeners (TCP, and the Unix socket for
 * local clients), every connection on them, admission, output queues, and
 * killing a session when its lifeline drops. The handshake is in
 * rdma_handshake.c, region frames in rdma_region.c. Threads and ownership:
 * rdma_server_internal.h; limits: docs/protocol.md §1.5.
 *
 * Nothing a peer does can stall this thread: reads and writes never block,
 * each connection's output is a bounded queue (a peer that does not read is
 * closed when it overflows), at most FRAMES_PER_WAKEUP frames are handled
 * per connection per wakeup, and a handshake has one deadline from accept to
 * WELCOME.
 *
 * Admission: unauthenticated connections (pending: before WELCOME) are
 * bounded per source (IP address, or uid on the Unix socket) and globally;
 * when the global bound is reached the oldest pending connection of the
 * source holding the most is evicted, so a flood from some sources cannot
 * keep a client from another source out. Only authenticated sessions count
 * against max_sessions (rdma_handshake.c). */
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
#include <sys/stat.h>
#include <sys/un.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include "common/addr.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/s3r_limits.h"
#include "rdma/rdma_net.h"
#include "rdma/rdma_wire.h"

#define HANDSHAKE_TIMEOUT_MS 5000
#define FRAMES_PER_WAKEUP    16

/* ==== output ============================================================= */

/* Sends what the kernel takes now. -1 on a hard error. */
static int conn_flush(bconn_t *c)
{
    while (c->out_off < c->out_len) {
        ssize_t k =
            send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            return -1;
        }
        c->out_off += (size_t)k;
    }
    c->out_off = c->out_len = 0;
    return 0;
}

void rdma_conn_send(bconn_t *c, wire_out_t *w)
{
    if (c->broken || w->err || !w->data) {
        rdma_wire_free(w);
        return;
    }
    if (c->out_off > 0 && c->out_off == c->out_len)
        c->out_off = c->out_len = 0;
    if (c->out_len - c->out_off + w->len > S3R_RDMA_CONN_OUTQ) {
        log_warn("rdma: %s: peer does not read its replies (%zu bytes queued); closing", c->peer,
                 c->out_len - c->out_off);
        c->broken = 1;
        rdma_wire_free(w);
        return;
    }
    if (c->out_off > 0) { /* compact */
        memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
        c->out_len -= c->out_off;
        c->out_off = 0;
    }
    uint8_t *n = realloc(c->out, c->out_len + w->len);
    if (!n) {
        c->broken = 1;
        rdma_wire_free(w);
        return;
    }
    c->out = n;
    memcpy(c->out + c->out_len, w->data, w->len);
    c->out_len += w->len;
    rdma_wire_free(w);
    if (conn_flush(c) < 0)
        c->broken = 1;
}

/* The refusal an ERROR code sent before WELCOME stands for. */
static rdma_refusal_t refusal_of(uint32_t code)
{
    switch (code) {
    case RDMA_ERR_AUTH:
        return RDMA_REFUSED_AUTH;
    case RDMA_ERR_MAX_SESSIONS:
        return RDMA_REFUSED_MAX_SESSIONS;
    case RDMA_ERR_BUSY:
        return RDMA_REFUSED_BUSY;
    case RDMA_ERR_BAD_MESSAGE:
    case RDMA_ERR_PROBE:
        return RDMA_REFUSED_PROTOCOL;
    default:
        return RDMA_REFUSED_INTERNAL;
    }
}

void rdma_conn_send_error(bconn_t *c, uint32_t code, const char *msg)
{
    /* The first error before WELCOME is why the connection ends (counted
     * by conn_free); a live session's errors (regions) end nothing. */
    if (c->state != CONN_LIVE && c->refusal < 0)
        c->refusal = (int)refusal_of(code);
    wire_out_t w = {0};
    if (rdma_wire_error(&w, code, msg) == 0)
        rdma_conn_send(c, &w);
    else
        rdma_wire_free(&w);
}

/* Releases what a connection holds; its session (proving or live) is killed
 * and the lifeline's reference dropped. Whatever output is queued gets one
 * last non-blocking try (so an ERROR before a close usually arrives). */
static void conn_free(struct rdma_server *srv, bconn_t *c)
{
    if (c->state != CONN_LIVE && c->refusal >= 0)
        atomic_fetch_add(&srv->refused[c->refusal], 1);
    if (!c->broken)
        conn_flush(c);
    if (c->sess) {
        rdma_session_kill(srv, c->sess);
        rdma_session_put(c->sess);
        c->sess = NULL;
    }
    memset(c->key, 0, sizeof(c->key));
    free(c->caddr);
    free(c->body);
    free(c->out);
    close(c->fd);
    free(c);
}

static void conn_unlink(struct rdma_server *srv, bconn_t *c)
{
    for (bconn_t **pp = &srv->conns; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            srv->n_conns--;
            return;
        }
    }
}

/* ==== input ============================================================== */

static int on_frame(struct rdma_server *srv, bconn_t *c, const uint8_t *body, size_t len)
{
    int type = rdma_wire_frame_type(body, len);
    if (type < 0) {
        log_warn("rdma: %s: bad magic/version/flags; closing", c->peer);
        rdma_conn_send_error(c, RDMA_ERR_BAD_MESSAGE, "bad magic or unsupported version");
        return -1;
    }
    switch (c->state) {
    case CONN_HELLO:
        if (type == RDMA_MSG_HELLO)
            return rdma_on_hello(srv, c, body, len);
        break;
    case CONN_AUTH:
        if (type == RDMA_MSG_AUTH)
            return rdma_on_auth(srv, c, body, len);
        break;
    case CONN_PROBE:
        if (type == RDMA_MSG_PROVE)
            return rdma_on_prove(srv, c, body, len);
        break;
    case CONN_LIVE:
        if (type == RDMA_MSG_REGION_ADD)
            return rdma_on_region_add(srv, c, body, len);
        if (type == RDMA_MSG_REGION_REMOVE)
            return rdma_on_region_remove(c, body, len);
        break;
    }
    log_warn("rdma: %s: unexpected message type %d in state %d; closing", c->peer, type, c->state);
    rdma_conn_send_error(c, RDMA_ERR_BAD_MESSAGE, "unexpected message");
    return -1;
}

/* Reads what is available, a bounded number of frames per call so one
 * connection cannot hold the thread; returns -1 when the connection must
 * close. */
static int conn_readable(struct rdma_server *srv, bconn_t *c)
{
    for (int frames = 0; frames < FRAMES_PER_WAKEUP && !c->broken;) {
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
                long n = rdma_wire_frame_len(c->hdr);
                if (n < 0) {
                    log_warn("rdma: %s: frame length out of bounds; closing", c->peer);
                    rdma_conn_send_error(c, RDMA_ERR_BAD_MESSAGE, "frame length out of bounds");
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
            frames++;
            free(c->body);
            c->body = NULL;
            c->hdr_got = 0;
            if (rc < 0)
                return -1;
        }
    }
    return c->broken ? -1 : 0;
}

/* ==== admission ========================================================== */

/* Connections from source still before WELCOME. */
static unsigned pending_from(struct rdma_server *srv, const char *source)
{
    unsigned n = 0;
    for (bconn_t *c = srv->conns; c; c = c->next)
        n += c->state != CONN_LIVE && strcmp(c->source, source) == 0;
    return n;
}

static int by_source_then_age(const void *a, const void *b)
{
    const bconn_t *x = *(bconn_t *const *)a, *y = *(bconn_t *const *)b;
    int d = strcmp(x->source, y->source);
    if (d)
        return d;
    return x->accepted_ms < y->accepted_ms ? -1 : x->accepted_ms > y->accepted_ms;
}

/* The pending connection to evict when the global bound is reached: the
 * oldest of the source with the most pending connections (ties: the older
 * one). Sorting by source keeps this O(n log n) in the pending count, which
 * a flood holds at its bound on every accept. */
static bconn_t *eviction_victim(struct rdma_server *srv, unsigned n_pending)
{
    bconn_t **p = malloc(n_pending * sizeof(*p));
    if (!p || !n_pending) {
        free(p);
        return NULL;
    }
    unsigned n = 0;
    for (bconn_t *c = srv->conns; c && n < n_pending; c = c->next)
        if (c->state != CONN_LIVE)
            p[n++] = c;
    qsort(p, n, sizeof(*p), by_source_then_age);
    bconn_t *victim = NULL;
    unsigned most = 0;
    for (unsigned i = 0, run; i < n; i += run) {
        for (run = 1; i + run < n && strcmp(p[i]->source, p[i + run]->source) == 0; run++) {
        }
        if (run > most || (run == most && p[i]->accepted_ms < victim->accepted_ms)) {
            most = run;
            victim = p[i]; /* the run's oldest */
        }
    }
    free(p);
    return victim;
}

static unsigned pending_total(struct rdma_server *srv)
{
    unsigned n = 0;
    for (bconn_t *c = srv->conns; c; c = c->next)
        n += c->state != CONN_LIVE;
    return n;
}

/* Refuses a connection at once with an ERROR it may or may not read. */
static void refuse_fd(int fd, uint32_t code, const char *msg)
{
    wire_out_t w = {0};
    if (rdma_wire_error(&w, code, msg) == 0) {
        ssize_t k = send(fd, w.data, w.len, MSG_DONTWAIT | MSG_NOSIGNAL);
        (void)k;
    }
    rdma_wire_free(&w);
    close(fd);
}

/* Fills peer, source and local for an accepted fd. unix_peer: it came in on
 * the Unix socket. 0, or -1 when the peer cannot be identified. */
static int conn_identify(struct rdma_server *srv, bconn_t *c, int unix_peer,
                         const struct sockaddr_storage *ss)
{
    if (unix_peer) {
        struct ucred cr;
        socklen_t cl = sizeof(cr);
        if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0)
            return -1;
        c->local = 0;
        for (unsigned i = 0; i < srv->cfg.n_trusted_uids; i++)
            c->local |= srv->cfg.trusted_uids[i] == cr.uid;
        /* The server's own uid can read its memory anyway. */
        c->local |= cr.uid == geteuid();
        snprintf(c->peer, sizeof(c->peer), "unix:uid=%u,pid=%d", (unsigned)cr.uid, (int)cr.pid);
        snprintf(c->source, sizeof(c->source), "uid:%u", (unsigned)cr.uid);
        return 0;
    }
    char host[INET6_ADDRSTRLEN];
    int port;
    addr_from_sockaddr((const struct sockaddr *)ss, host, sizeof(host), &port);
    addr_format(c->peer, sizeof(c->peer), host, port);
    snprintf(c->source, sizeof(c->source), "%s", host);
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return 0;
}

static void conn_accept(struct rdma_server *srv, int lfd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return;
    bconn_t *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        return;
    }
    c->fd = fd;
    c->refusal = -1;
    if (conn_identify(srv, c, lfd == srv->unix_fd, &ss) < 0) {
        free(c);
        close(fd);
        return;
    }
    if (pending_from(srv, c->source) >= srv->cfg.max_pending_per_source) {
        log_warn("rdma: %s: %u handshakes already pending from %s; refusing", c->peer,
                 srv->cfg.max_pending_per_source, c->source);
        refuse_fd(fd, RDMA_ERR_BUSY, "too many pending handshakes from this address");
        atomic_fetch_add(&srv->refused[RDMA_REFUSED_BUSY], 1);
        free(c);
        return;
    }
    unsigned n_pending = pending_total(srv);
    if (n_pending >= srv->cfg.max_pending) {
        bconn_t *v = eviction_victim(srv, n_pending);
        if (v) {
            log_warn("rdma: %s: pending handshakes at the limit (%u); evicting %s", c->peer,
                     srv->cfg.max_pending, v->peer);
            rdma_conn_send_error(v, RDMA_ERR_BUSY, "too many pending handshakes; evicted");
            conn_unlink(srv, v);
            conn_free(srv, v);
        }
    }
    c->state = CONN_HELLO;
    c->accepted_ms = clock_mono_ms();
    c->deadline_ms = c->accepted_ms + HANDSHAKE_TIMEOUT_MS;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    c->next = srv->conns;
    srv->conns = c;
    srv->n_conns++;
}

void *rdma_boot_main(void *arg)
{
    struct rdma_server *srv = arg;
    struct pollfd *pfds = NULL;
    bconn_t **map = NULL;
    size_t cap = 0;
    while (!atomic_load(&srv->stop)) {
        size_t need = srv->n_conns + 3;
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
        pfds[n++] = (struct pollfd){.fd = srv->unix_fd, .events = POLLIN}; /* -1: ignored */
        for (bconn_t *c = srv->conns; c; c = c->next) {
            map[n] = c;
            short ev = POLLIN | (c->out_len > c->out_off ? POLLOUT : 0);
            pfds[n++] = (struct pollfd){.fd = c->fd, .events = ev};
        }
        int k = poll(pfds, n, 200);
        if (k < 0 && errno != EINTR) {
            log_error("rdma: poll: %s", strerror(errno));
            break;
        }
        uint64_t now = clock_mono_ms();
        for (size_t i = 3; i < n; i++) {
            bconn_t *c = map[i];
            int close_it = 0;
            if ((pfds[i].revents & POLLOUT) && conn_flush(c) < 0)
                close_it = 1;
            if (!close_it && (pfds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                close_it = conn_readable(srv, c) < 0;
            if (!close_it && c->state != CONN_LIVE && now > c->deadline_ms) {
                log_warn("rdma: %s: handshake timed out; closing", c->peer);
                if (c->refusal < 0)
                    c->refusal = RDMA_REFUSED_TIMEOUT;
                close_it = 1;
            }
            if (close_it || c->broken) {
                conn_unlink(srv, c);
                conn_free(srv, c);
            }
        }
        if (k > 0 && (pfds[1].revents & POLLIN))
            conn_accept(srv, srv->listen_fd);
        if (k > 0 && srv->unix_fd >= 0 && (pfds[2].revents & POLLIN))
            conn_accept(srv, srv->unix_fd);
    }
    while (srv->conns) {
        bconn_t *c = srv->conns;
        conn_unlink(srv, c);
        conn_free(srv, c);
    }
    free(pfds);
    free(map);
    return NULL;
}

/* ==== listeners ========================================================== */

static int listen_tcp(struct rdma_server *srv)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE},
                    *res = NULL;
    char portstr[16];
    snprintf(portstr, sizeof(portstr), "%d", srv->cfg.port);
    const char *host = srv->cfg.listen_host && *srv->cfg.listen_host ? srv->cfg.listen_host : NULL;
    /* Every address (no host): one dual-stack IPv6 socket, so IPv6 and IPv4
     * clients both reach it (as the HTTP listeners); IPv4 alone where the
     * host has no IPv6. */
    if (!host)
        hints.ai_family = AF_INET6;
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0 && !host) {
        hints.ai_family = AF_INET;
        rc = getaddrinfo(host, portstr, &hints, &res);
    }
    if (rc != 0) {
        log_error("rdma: resolve %s: %s", host ? host : "*", gai_strerror(rc));
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1, zero = 0;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd >= 0 && res->ai_family == AF_INET6 && !host)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
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

/* The Unix socket: "@name" is Linux's abstract namespace, anything else a
 * path (a stale socket file left by a dead server is replaced). Anyone may
 * connect; trust comes from the peer's uid (SO_PEERCRED), never from the
 * socket's permissions, and every peer still authenticates. */
static int listen_unix(struct rdma_server *srv)
{
    struct sockaddr_un sa;
    socklen_t sl;
    if (rdma_net_unix_addr(srv->unix_name, &sa, &sl) < 0) {
        log_error("rdma: unix socket name '%s' is too long", srv->unix_name);
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    if (srv->unix_name[0] != '@') {
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sl) < 0 && errno == ECONNREFUSED)
            unlink(srv->unix_name);
        if (probe >= 0)
            close(probe);
    }
    if (bind(fd, (struct sockaddr *)&sa, sl) < 0 || listen(fd, 128) < 0) {
        log_error("rdma: listen on unix socket %s: %s", srv->unix_name, strerror(errno));
        close(fd);
        return -1;
    }
    if (srv->unix_name[0] != '@')
        chmod(srv->unix_name, 0666);
    srv->unix_fd = fd;
    return 0;
}

int rdma_listen_on(struct rdma_server *srv)
{
    if (listen_tcp(srv) < 0)
        return -1;
    const char *u = srv->cfg.unix_socket;
    if (u && !*u)
        return 0;
    if (u)
        snprintf(srv->unix_name, sizeof(srv->unix_name), "%s", u);
    else
        snprintf(srv->unix_name, sizeof(srv->unix_name), "@s3rdma.%d", srv->port);
    return listen_unix(srv);
}
