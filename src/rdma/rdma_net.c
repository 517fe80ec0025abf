/* Deadline-bounded blocking socket I/O for the bootstrap (see rdma_net.h). */
#include "common/clock.h"
#include "rdma/rdma_net.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "rdma/rdma_wire.h"

static int wait_fd(int fd, short events, uint64_t deadline_ms)
{
    for (;;) {
        uint64_t now = clock_mono_ms();
        if (now >= deadline_ms)
            return -1;
        struct pollfd pfd = {.fd = fd, .events = events};
        int n = poll(&pfd, 1, (int)(deadline_ms - now));
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

int rdma_net_connect(const char *host, int port, const char *local_ip, int timeout_ms, char *err,
                     size_t err_len)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    char portstr[16];
    snprintf(portstr, sizeof(portstr), "%d", port);
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0) {
        snprintf(err, err_len, "resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    uint64_t deadline = clock_mono_ms() + (uint64_t)timeout_ms;
    int fd = -1;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            continue;
        if (local_ip && *local_ip) {
            struct addrinfo lh = {.ai_family = ai->ai_family,
                                  .ai_socktype = SOCK_STREAM,
                                  .ai_flags = AI_NUMERICHOST | AI_PASSIVE};
            struct addrinfo *lres = NULL;
            if (getaddrinfo(local_ip, NULL, &lh, &lres) != 0 ||
                bind(fd, lres->ai_addr, lres->ai_addrlen) < 0) {
                snprintf(err, err_len, "bind %s: %s", local_ip, strerror(errno));
                if (lres)
                    freeaddrinfo(lres);
                close(fd);
                fd = -1;
                continue;
            }
            freeaddrinfo(lres);
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ||
            (errno == EINPROGRESS && wait_fd(fd, POLLOUT, deadline) == 0)) {
            int soerr = 0;
            socklen_t sl = sizeof(soerr);
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
            if (soerr == 0)
                break;
            snprintf(err, err_len, "connect %s:%d: %s", host, port, strerror(soerr));
        } else {
            snprintf(err, err_len, "connect %s:%d: %s", host, port,
                     errno == EINPROGRESS ? "timed out" : strerror(errno));
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

int rdma_net_host_is_loopback(const char *host)
{
    return host && (strcmp(host, "localhost") == 0 || strncmp(host, "127.", 4) == 0 ||
                    strcmp(host, "::1") == 0 || strcmp(host, "[::1]") == 0);
}

int rdma_net_unix_addr(const char *name, struct sockaddr_un *sa, unsigned *len)
{
    size_t n = name ? strlen(name) : 0;
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    if (n == 0 || n >= sizeof(sa->sun_path))
        return -1;
    memcpy(sa->sun_path, name, n);
    if (name[0] == '@') {
        sa->sun_path[0] = '\0'; /* abstract: the name is exactly these bytes, no NUL */
        *len = (unsigned)(offsetof(struct sockaddr_un, sun_path) + n);
    } else {
        *len = (unsigned)sizeof(*sa);
    }
    return 0;
}

int rdma_net_connect_unix(const char *name, int timeout_ms, char *err, size_t err_len)
{
    struct sockaddr_un sa;
    unsigned sl;
    if (rdma_net_unix_addr(name, &sa, &sl) < 0) {
        snprintf(err, err_len, "bad unix socket name '%s'", name ? name : "");
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, err_len, "socket: %s", strerror(errno));
        return -1;
    }
    if (connect(fd, (struct sockaddr *)&sa, sl) < 0 &&
        !(errno == EINPROGRESS &&
          wait_fd(fd, POLLOUT, clock_mono_ms() + (uint64_t)timeout_ms) == 0)) {
        snprintf(err, err_len, "connect %s: %s", name, strerror(errno));
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

int rdma_net_send_all(int fd, const void *p, size_t n, uint64_t deadline_ms)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t k = send(fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k > 0) {
            b += k;
            n -= (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
            wait_fd(fd, POLLOUT, deadline_ms) == 0)
            continue;
        return -1;
    }
    return 0;
}

/* 1 when all n bytes arrived, 0 on EOF before the first byte, -1 otherwise. */
static int recv_all(int fd, uint8_t *b, size_t n, uint64_t deadline_ms)
{
    size_t got = 0;
    while (got < n) {
        if (wait_fd(fd, POLLIN, deadline_ms) < 0)
            return -1;
        ssize_t k = recv(fd, b + got, n - got, MSG_DONTWAIT);
        if (k > 0) {
            got += (size_t)k;
            continue;
        }
        if (k == 0)
            return got == 0 ? 0 : -1;
        if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
    }
    return 1;
}

long rdma_net_recv_frame(int fd, uint64_t deadline_ms, uint8_t **body_p)
{
    uint8_t hdr[4];
    int rc = recv_all(fd, hdr, 4, deadline_ms);
    if (rc <= 0)
        return rc;
    long n = rdma_wire_frame_len(hdr);
    if (n < 0)
        return -1;
    uint8_t *body = malloc((size_t)n);
    if (!body)
        return -1;
    if (recv_all(fd, body, (size_t)n, deadline_ms) != 1) {
        free(body);
        return -1;
    }
    *body_p = body;
    return n;
}
