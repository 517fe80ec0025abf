/* Blocking socket helpers with deadlines for the session bootstrap: used by
 * the client (whose calls block) and the tests. The server's bootstrap thread
 * reads non-blocking and does not use the receive side. */
#ifndef S3R_RDMA_RDMA_NET_H
#define S3R_RDMA_RDMA_NET_H

#include <stddef.h>
#include <stdint.h>

/* Connects to host:port (numeric or resolvable), binding to local_ip if
 * given, within timeout_ms. Returns the fd (blocking, TCP_NODELAY,
 * close-on-exec), or -1 with a reason in err. */
int rdma_net_connect(const char *host, int port, const char *local_ip, int timeout_ms, char *err,
                     size_t err_len);
/* 1 when host names this machine's loopback ("localhost", "127.x.y.z",
 * "::1", "[::1]"); 0 otherwise or for NULL. */
int rdma_net_host_is_loopback(const char *host);
/* The sockaddr for a session Unix socket name: "@name" is Linux's abstract
 * namespace, anything else a path. 0, or -1 if the name is empty or too long. */
struct sockaddr_un;
int rdma_net_unix_addr(const char *name, struct sockaddr_un *sa, unsigned *len);
/* Connects to the Unix socket name within timeout_ms. Returns the fd
 * (blocking, close-on-exec), or -1 with a reason in err. */
int rdma_net_connect_unix(const char *name, int timeout_ms, char *err, size_t err_len);
/* Sends all n bytes before deadline_ms (clock_mono_ms clock). 0, or -1. */
int rdma_net_send_all(int fd, const void *p, size_t n, uint64_t deadline_ms);
/* Receives one whole frame (length prefix checked against
 * RDMA_WIRE_MAX_FRAME) before deadline_ms. Returns the body length with the
 * body in *body_p (caller frees), 0 on orderly EOF, -1 on error/timeout/bad length. */
long rdma_net_recv_frame(int fd, uint64_t deadline_ms, uint8_t **body_p);

#endif
