/* The server side of the RDMA layer: the session port (TCP bootstrap +
 * lifeline), UCX workers and sessions, client regions, the registered staging
 * pool and the data mover. src/s3 uses only this header.
 *
 * Threads: rdma_server_* calls are thread-safe. A transfer handle belongs to
 * the thread that opened it; its calls block that thread until the RDMA work
 * is done (the progress threads do the UCX work). */
#ifndef S3R_RDMA_RDMA_SERVER_H
#define S3R_RDMA_RDMA_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "rdma/rdma_native_wire.h"

typedef enum rdma_status {
    RDMA_OK = 0,
    RDMA_DECLINE,       /* no such/dead session, malformed token, RDMA off: 501 decline */
    RDMA_FORBIDDEN,     /* session authenticated by another access key: 403 AccessDenied */
    RDMA_OUT_OF_BOUNDS, /* token addr/len outside the session's region: 400 InvalidArgument */
    RDMA_BUSY,          /* in-flight transfer limit reached: 503 SlowDown */
    RDMA_TRANSPORT,     /* the transfer failed (peer died, UCX error): 500 / decline */
    RDMA_CALLBACK,      /* the caller's callback failed; its error stands */
} rdma_status_t;

const char *rdma_strerror(rdma_status_t st);

/* Looks up an access key's secret for the session handshake: copies it into
 * secret (NUL-terminated, at most max bytes) and returns 0, or -1 if the key
 * is unknown. Called from the bootstrap thread. */
typedef int (*rdma_secret_lookup_fn)(void *ctx, const char *access_key, char *secret, size_t max);

typedef struct rdma_native_req rdma_native_req_t;
/* Runs one native request (docs/protocol.md §4) on an executor thread (or,
 * for reads and small PUTs, on a progress thread: see local_put_max) and
 * answers it with rdma_native_reply (once; a request left unanswered gets
 * a 500 InternalError). */
typedef void (*rdma_native_fn)(void *ctx, rdma_native_req_t *req);

/* How the progress threads wait for work. */
typedef enum rdma_poll {
    /* Poll while there is work and for RDMA_BUSY_POLL_NS after the last,
     * then sleep in epoll until a worker has an event: no core spent on an
     * idle server, one thread wake-up for a request that finds it asleep. */
    RDMA_POLL_ADAPTIVE = 0,
    /* Never sleep: every progress thread polls its workers all the time
     * (one core each, busy or idle), so no request waits for a wake-up. */
    RDMA_POLL_BUSY,
} rdma_poll_t;

typedef struct rdma_server_config {
    const char *listen_host; /* "127.0.0.1", "0.0.0.0" */
    int port;                /* 9100; 0 picks a free port (see rdma_server_port) */
    int n_workers;           /* progress threads; 0 = one per core */
    /* 1 (default): serve net-domain sessions (TCP bootstrap, untrusted uids);
     * 0: only trusted local sessions (s3rdmad sets 0 when it cannot refuse
     * inbound software RMA: docs/security.md). */
    int net_sessions;
    size_t staging_bytes; /* registered staging pool size */
    size_t chunk_bytes;   /* data mover pipeline chunk */
    /* The Unix socket for local clients: NULL means "@s3rdma.<port>" (Linux's
     * abstract namespace), "" none, "@name" an abstract name, else a path. */
    const char *unix_socket;
    /* uids (besides the server's own) whose Unix-socket sessions
     * are trusted with every UCX transport, shared memory included
     * (docs/security.md). Copied by rdma_server_start. */
    const unsigned *trusted_uids;
    unsigned n_trusted_uids;
    unsigned max_sessions; /* authenticated sessions */
    unsigned max_sessions_per_user;
    unsigned max_pending;            /* connections before WELCOME, server-wide */
    unsigned max_pending_per_source; /* ... from one IP address or uid */
    unsigned max_regions_per_session;
    uint64_t max_registered_per_session;
    unsigned max_inflight; /* concurrent token transfers, server-wide */
    rdma_secret_lookup_fn lookup_secret;
    void *lookup_ctx;
    /* Native requests (the handler is set by rdma_server_set_native). */
    unsigned native_threads;         /* executor threads */
    unsigned max_native_per_session; /* requests in flight per session: more get SlowDown */
    unsigned max_native_queued;      /* requests in flight (admitted, not answered), server-wide */
    /* Fair shares (rdma_share.c): the percent of each server-wide pool (native
     * requests in flight, executor threads, transfer handles, staging chunks)
     * one access key may hold; 100 = no share. */
    unsigned user_share;
    /* A transfer whose RDMA operation makes no progress this long fails
     * (RDMA_TRANSPORT) and gives its resources back. */
    unsigned stall_ms;
    /* How progress threads wait for work (docs/deploy.md, rdma.poll). */
    rdma_poll_t poll;
    /* The scheduler slice (µs) each progress thread asks for
     * (rdma_thread_set_slice; docs/deploy.md, rdma.slice_us); 0: the
     * kernel's default. */
    unsigned slice_us;
    /* Nice levels each progress thread takes below the process's
     * (rdma_thread_raise_priority; docs/deploy.md, rdma.priority): a
     * progress thread serves every native session on its worker, so on a
     * contended core it needs the weight of many threads. 0: none. Not
     * permitted (no CAP_SYS_NICE nor RLIMIT_NICE): logged, kept 0. */
    unsigned priority;
    /* A native PutObject whose body travels inline and is at most this many
     * bytes runs on its session's progress thread, as reads do, instead of
     * going to an executor (no hand-off, no thread wake-up): for a store
     * whose small writes wait for no disk (relaxed durability on a local
     * file system). 0 (the default): every write goes to the executors. */
    size_t local_put_max;
} rdma_server_config_t;

/* Fills cfg with the defaults of src/common/s3r_limits.h. */
void rdma_server_config_defaults(rdma_server_config_t *cfg);

typedef struct rdma_server rdma_server_t;

/* Creates the UCX context, workers and staging pool and starts listening.
 * Returns 0, or -1 with the reason logged. */
int rdma_server_start(const rdma_server_config_t *cfg, rdma_server_t **out_p);
/* Closes every session and frees everything; NULL is a no-op. */
void rdma_server_stop(rdma_server_t *srv);
int rdma_server_port(const rdma_server_t *srv);
/* The Unix socket local clients use ("@name" or a path), or NULL when off. */
const char *rdma_server_unix_socket(const rdma_server_t *srv);
/* Native messages dropped (nobody to answer: no head, wrong magic, no such
 * session on that worker, a rendezvous; or a request refused while its
 * session does not read its replies) and malformed requests answered
 * with BAD_MESSAGE, since start (for the stats endpoint and tests). */
void rdma_server_native_counts(rdma_server_t *srv, unsigned long *dropped_p,
                               unsigned long *malformed_p);
/* Why a session-port connection ended before it became a session. */
typedef enum rdma_refusal {
    RDMA_REFUSED_AUTH = 0,     /* unknown access key or wrong MAC */
    RDMA_REFUSED_MAX_SESSIONS, /* max_sessions or max_sessions_per_user reached */
    RDMA_REFUSED_BUSY,         /* pending handshakes over their bounds (refused or evicted) */
    RDMA_REFUSED_PROTOCOL,     /* malformed or unexpected message, probe not answered */
    RDMA_REFUSED_TIMEOUT,      /* the handshake did not finish in time */
    RDMA_REFUSED_INTERNAL,     /* out of memory, UCX failure */
    RDMA_REFUSED_COUNT
} rdma_refusal_t;
/* "auth", "max_sessions", "busy", "protocol", "timeout", "internal". */
const char *rdma_refusal_name(rdma_refusal_t r);

/* Counters since start, for metrics (each read once, without a lock
 * across them). */
typedef struct rdma_server_stats {
    unsigned sessions;             /* live now */
    unsigned sessions_closing;     /* closed, endpoint waiting for stalled requests */
    unsigned long sessions_opened; /* WELCOMEs sent */
    unsigned long refused[RDMA_REFUSED_COUNT];
    unsigned transfers_inflight;     /* token and native transfer handles in use */
    unsigned staging_busy;           /* staging chunks out of the pool (quarantined included) */
    unsigned staging_quarantined;    /* ... orphaned by a session that is gone */
    unsigned long transfers_stalled; /* transfers failed for making no progress */
    /* Bytes transfers (token and native bodies, both directions) moved in
     * place, in a client region mapped into the server (one copy), and
     * through staging chunks and UCX RMA (the client's memory not mappable:
     * RDMA NIC, TCP, or a same-host client buffer UCX did not allocate). */
    unsigned long long bytes_mapped, bytes_staged;
    unsigned native_inflight;    /* native requests admitted whose reply is not yet sent */
    unsigned native_sending;     /* native replies (and refusals) UCX is still sending */
    size_t native_sending_bytes; /* ... their bytes */
    unsigned long native_dropped, native_malformed; /* as rdma_server_native_counts */
} rdma_server_stats_t;
void rdma_server_get_stats(rdma_server_t *srv, rdma_server_stats_t *out_p);
/* The peer of the session a native request came on: "ip:port" or
 * "unix:uid=U,pid=P" (for access logs). */
const char *rdma_native_peer(const rdma_native_req_t *r);

/* Live sessions (for the stats endpoint and tests). */
unsigned rdma_server_session_count(rdma_server_t *srv);
/* Sessions not yet destroyed: live ones plus those whose lifeline dropped
 * but whose teardown (deferred until no transfer holds them) has not run,
 * plus handshakes in progress. For leak checks in tests. */
unsigned rdma_server_session_resident(rdma_server_t *srv);

/* ---- Token transfers (docs/protocol.md §2, §3) -------------------------- */

typedef struct rdma_xfer rdma_xfer_t;

/* Resolves an x-amz-rdma-token for a request signed by access_key. The
 * session must be alive, authenticated by the same access key, and the
 * token's [addr, addr+len) must lie inside one of its regions. */
rdma_status_t rdma_xfer_open(rdma_server_t *srv, const char *token, const char *access_key,
                             rdma_xfer_t **out_p);
/* The client buffer's length as the token gives it. */
uint64_t rdma_xfer_length(const rdma_xfer_t *x);

/* PUT: RDMA-READs len bytes (len <= rdma_xfer_length) from the client
 * buffer, chunk by chunk, into registered staging memory and hands each chunk
 * to sink in order, overlapping the next read with the sink's work. sink
 * returns 0 to go on. */
typedef int (*rdma_sink_fn)(void *ctx, const void *data, size_t len);
rdma_status_t rdma_xfer_pull(rdma_xfer_t *x, uint64_t len, rdma_sink_fn sink, void *ctx);

/* GET: asks fill for the bytes at [off, off+len) of the payload, chunk by
 * chunk, straight into registered staging memory, and RDMA-WRITEs them to
 * the client buffer at the same offsets, then flushes, so when it returns
 * RDMA_OK the bytes are in the client's memory. fill returns 0 to go on. */
typedef int (*rdma_fill_fn)(void *ctx, void *dst, size_t len, uint64_t off);
rdma_status_t rdma_xfer_push(rdma_xfer_t *x, uint64_t len, rdma_fill_fn fill, void *ctx);

void rdma_xfer_close(rdma_xfer_t *x);

/* ---- Native requests (docs/protocol.md §4) --------------------------------- */

/* Sets the handler native requests run in (after start: the S3 frontend
 * that runs them is composed after this server), once; set back to NULL, it
 * waits for the handlers running to return. Without a handler, requests are
 * answered 503 ServiceUnavailable. */
void rdma_server_set_native(rdma_server_t *srv, rdma_native_fn fn, void *ctx);

/* The decoded request; valid until the handler returns. */
const rdma_native_msg_t *rdma_native_request(const rdma_native_req_t *r);
/* The access key that authenticated the request's session. */
const char *rdma_native_access_key(const rdma_native_req_t *r);
/* Feeds the request body (m->body_len bytes) to sink: an inline body at
 * once, a region body RDMA-READ chunk by chunk (bounds-checked against the
 * session's regions: RDMA_OUT_OF_BOUNDS). No body: RDMA_OK, sink not called. */
rdma_status_t rdma_native_body(rdma_native_req_t *r, rdma_sink_fn sink, void *ctx);
/* The largest reply body that travels inline (what the client asked for,
 * capped at RDMA_NATIVE_MAX_INLINE), and the length of the client's out
 * region (0: none). A larger body must fit the out region. */
uint64_t rdma_native_inline_max(const rdma_native_req_t *r);
uint64_t rdma_native_out_len(const rdma_native_req_t *r);
/* Answers the request: HTTP-equivalent status, the S3 request id, headers
 * ("name\0value\0" pairs, hdrs_len bytes) and a body of body_len bytes that
 * fill supplies: inline when it fits rdma_native_inline_max, or for a
 * status outside 2xx (an error) RDMA_NATIVE_MAX_INLINE (fill writes
 * straight into the reply message), else RDMA-WRITTEN into the out region
 * before the reply is sent. On anything but RDMA_OK nothing was sent and the
 * handler answers again (an error): RDMA_OUT_OF_BOUNDS (no out region or too
 * small), RDMA_CALLBACK (fill failed), RDMA_DECLINE (headers too many or too
 * long), RDMA_BUSY / RDMA_TRANSPORT (the RDMA write). */
rdma_status_t rdma_native_reply(rdma_native_req_t *r, int status, const char *s3_request_id,
                                const char *hdrs, size_t hdrs_len, uint64_t body_len,
                                rdma_fill_fn fill, void *ctx);

/* A reply made now and sent later, from any thread: the handler's thread
 * goes on to other requests while what the reply acknowledges completes
 * (a write becoming durable). */
typedef struct rdma_native_held rdma_native_held_t;
/* rdma_native_reply, except that the reply is made (a body that goes by
 * RDMA is written now) and held: on RDMA_OK, *held_p has it and the request
 * counts as answered (the handler replies no more). Until it is sent it
 * holds what the request held: its count in the session's, the user's and
 * the server's bounds of requests in flight (max_native_per_session,
 * the user's share, max_native_queued: held replies are bounded as
 * requests in flight are) and a reference on the session. RDMA_BUSY: out
 * of memory, nothing held. Exactly one of the two calls below must follow;
 * rdma_server_stop waits for it. */
rdma_status_t rdma_native_reply_held(rdma_native_req_t *r, int status, const char *s3_request_id,
                                     const char *hdrs, size_t hdrs_len, uint64_t body_len,
                                     rdma_fill_fn fill, void *ctx, rdma_native_held_t **held_p);
/* Sends h's reply and frees h (any thread; dropped if the session died
 * meanwhile). */
void rdma_native_held_send(rdma_native_held_t *h);
/* Sends a 500 InternalError with msg instead of h's reply, and frees h. */
void rdma_native_held_fail(rdma_native_held_t *h, const char *msg);

#endif
