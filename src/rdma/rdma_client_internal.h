/* Private to the client side of RDMA sessions: what rdma_client.c (the
 * session: UCX context and worker, handshake, lifeline, regions, tokens)
 * and rdma_client_native.c (native calls in flight and how callers wait for
 * them) share. */
#ifndef S3R_RDMA_CLIENT_INTERNAL_H
#define S3R_RDMA_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include "rdma/rdma_client.h"
#include "rdma/rdma_wire.h"

/* Native calls are told apart for the wait estimate by opcode and by their
 * bytes in powers of four from 4 KiB (<= 4 KiB, <= 16 KiB, ... > 16 MiB). */
#define WAIT_SIZE_STEPS 8
#define WAIT_CLASSES    ((RDMA_OP_MAX + 1) * WAIT_SIZE_STEPS)

struct rdma_region {
    uint32_t id;
    uint8_t *addr;
    size_t len;
    ucp_mem_h memh;
    struct rdma_region *next;
};

struct rdma_session {
    pid_t pid; /* the process that opened it */
    ucp_context_h ctx;
    ucp_worker_h worker;
    int efd;
    ucp_ep_h ep;
    int err_mode;
    int fd;
    int timeout_ms;
    pthread_mutex_t mu; /* the lifeline and the region list */
    rdma_welcome_t welcome;
    uint32_t next_region_id;
    rdma_region_t *regions;
    pthread_t th;
    int th_started;
    int stop_fd;
    _Atomic int stop;
    _Atomic int dead;
    /* handshake: the probe the server sends over UCX after AUTH */
    uint8_t cnonce[RDMA_NONCE_LEN];
    uint8_t probe[RDMA_NONCE_LEN];
    _Atomic int probe_got;
    /* native requests in flight, by id (calls_mu) */
    pthread_mutex_t calls_mu;
    rdma_native_call_t *calls[64];
    uint64_t next_call_id;
    int tcp_only;
    int shm_only; /* rdma_session_shm_only */
    /* The server refused RDMA_NATIVE_FLAG_PROGRESS (BAD_MESSAGE): an older
     * server; requests stop asking for progress (rdma_session_progress_ok). */
    _Atomic int progress_refused;
    char lanes[256]; /* the endpoint's "transport/device" names (ep_lanes) */
    /* Threads inside rdma_native_wait(_any): they progress the worker, so the
     * progress thread stands aside (it would only compete for the cores
     * and be woken by every reply). */
    _Atomic int waiters;
    /* How waiters wait (rdma_native_wait): 1 = never sleep (S3R_RDMA_POLL
     * =busy at open), 0 = busy-poll for the learned time, then sleep. */
    int busy_wait;
    /* What a call of each class (wait_class_of) has lately taken, in ns: a
     * high estimate, quick to rise and slow to fall (wait_learn). Updated
     * by the waiters without a lock: a lost update only costs precision. */
    _Atomic uint32_t wait_est_ns[WAIT_CLASSES];
};

/* Formats a message into err (NULL or 0 length: none). */
void rdma_client_set_err(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Whether s was opened by another process (inherited across fork). */
static inline int rdma_client_inherited(const rdma_session_t *s)
{
    return s->pid != getpid();
}

/* The UCX active-message handler of native replies (registered at open). */
ucs_status_t rdma_native_reply_recv(void *arg, const void *header, size_t header_length, void *data,
                                    size_t length, const ucp_am_recv_param_t *param);
/* A progress message (RDMA_AM_NATIVE_PROGRESS): records how much of a
 * call's reply body its out span holds. */
ucs_status_t rdma_native_progress_recv(void *arg, const void *header, size_t header_length,
                                       void *data, size_t length, const ucp_am_recv_param_t *param);
/* Finishes every native call still in flight on s as failed (s is dead). */
void rdma_native_calls_fail_all(rdma_session_t *s);

#endif
