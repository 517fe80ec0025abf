/* Internal to the RDMA session server (rdma_server.c, rdma_boot.c,
 * rdma_session.c, rdma_xfer.c): the shared types, the staging defaults and
 * the functions one of those files calls in another. Nothing outside
 * src/rdma includes it; src/s3 uses rdma_server.h only.
 *
 * The server: bootstrap listener and lifelines, UCX workers and
 * progress threads, sessions and regions, the staging pool and the token
 * data mover. docs/protocol.md has the wire format; src/rdma/README.md the
 * thread model in prose.
 *
 * Trust (docs/security.md): a session is *local* when it bootstrapped over
 * the Unix socket from a uid the server trusts (SO_PEERCRED); it then lives
 * in the local domain, whose UCX context has every transport (shared memory,
 * CMA: the server itself touches the client's memory). Every other session
 * lives in the net domain, whose context has only transports where the
 * client's side or its NIC performs the access (TCP, InfiniBand/RoCE), so
 * nothing a stranger announces can make the server touch its own memory.
 *
 * Lock order: a progress thread holds a worker's lock while its callbacks
 * take srv->mu (rdma_session_find); so nothing may wait for a worker's lock
 * (any UCX call on it: rkey destroy, progress, sends) while holding srv->mu
 * or a session's mu, and srv->mu and s->mu are never held together.
 *
 * Threads and ownership, in short:
 *   - The bootstrap thread owns every bootstrap connection (handshakes and
 *     lifelines) and is the only thread that creates sessions, adds or
 *     removes regions, and marks a session dead when its lifeline drops.
 *   - Progress thread i owns one shared worker of the net domain (PEER mode)
 *     and the per-session workers of local sessions (NONE mode) handed to
 *     it. Only it destroys a session, and only once the session's
 *     reference count is zero, so no other thread can be inside the worker.
 *   - HTTP threads (rdma_xfer_*) hold a session reference for the life of a
 *     transfer, post RMA on the session's endpoint and progress the worker
 *     themselves while waiting (workers are UCS_THREAD_MODE_MULTI).
 *   - Staging chunks and their completion state live in memory that outlives
 *     every session, so a request that completes (or is purged) after its
 *     transfer gave up writes only there; see chunk_release.
 *
 * Files:
 *   rdma_server.c    start/stop, config defaults, counters, rdma_strerror
 *   rdma_domain.c    the two UCX contexts (local, net) and their transport lists
 *   rdma_boot.c      the bootstrap thread: listeners, connections, admission
 *                    (per-source caps, eviction), output queues, lifeline loss
 *   rdma_handshake.c HELLO / AUTH / probe / PROVE / WELCOME: creating a session
 *   rdma_region.c    REGION_ADD / REGION_REMOVE on a lifeline
 *   rdma_mapcheck.c  is a span of this process's memory one shared mapping?
 *   rdma_session.c   workers, session references and teardown, progress threads
 *   rdma_xfer.c      the staging chunk pool and the token data mover (rdma_xfer_*)
 *   rdma_native.c    native requests: admission, executor threads, replies
 */
#ifndef S3R_RDMA_RDMA_SERVER_INTERNAL_H
#define S3R_RDMA_RDMA_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <ucp/api/ucp.h>

#include "rdma/rdma_server.h"
#include "rdma/rdma_wire.h"

typedef struct rsession rsession_t;
typedef struct rprog rprog_t;
typedef struct ruser ruser_t;
typedef struct bconn bconn_t;

/* A UCX context with the staging pool registered in it. */
typedef struct rdma_domain {
    ucp_context_h ctx;
    ucp_mem_h staging_memh;
    int local; /* 1: the local (trusted) domain */
} rdma_domain_t;

/* ==== staging chunks ===================================================== */

/* A chunk's state. Transitions to FREE and out of FREE happen under the
 * pool lock; INFLIGHT -> DONE/ERROR happens in the UCX callback and
 * INFLIGHT -> ORPHANED in a transfer that gives up, both by CAS, so exactly
 * one of them decides who returns the chunk. */
enum chunk_state {
    CH_FREE,     /* in the pool */
    CH_OWNED,    /* held by a transfer, no request outstanding */
    CH_INFLIGHT, /* a request (get/put/flush) is outstanding on it */
    CH_DONE,     /* the request completed */
    CH_ERROR,    /* the request failed */
    CH_ORPHANED, /* outstanding, but its transfer gave up: whoever sees it finish frees it */
};

typedef struct rchunk {
    _Atomic int state;
    uint8_t *buf;
    rsession_t *owner; /* the session of the last transfer that held it */
    /* The user it counts against while out of the pool (orphaned included);
     * NULL for a quarantined chunk (its session is gone). Under pool_mu. */
    ruser_t *user;
    struct rdma_server *srv;
    struct rchunk *next_free;
} rchunk_t;

/* ==== users (rdma_share.c) =============================================== */

/* What one access key holds of the server-wide pools, across its sessions:
 * each count is bounded by the user's share of its pool (cfg.user_share,
 * rdma_share.c), so one tenant that stops serving its RDMA (SIGSTOP, a hung
 * process) leaves the rest of every pool to the others. */
struct ruser {
    char ak[RDMA_MAX_AK + 1];
    unsigned sessions;       /* sessions of this key not yet destroyed; under srv->mu */
    _Atomic unsigned native; /* native requests in flight (reply not yet sent) */
    unsigned running;        /* native requests on executor threads; under native_mu */
    unsigned xfers;          /* transfer handles; under srv->mu */
    unsigned chunks;         /* staging chunks held, orphaned ones included; under pool_mu */
    struct ruser *next;      /* srv->users; under srv->mu */
};

/* ==== sessions =========================================================== */

typedef struct rregion {
    uint32_t id;
    uint64_t addr, len;
    ucp_rkey_h rkey;
    /* The region mapped into this process (ucp_rkey_ptr), when UCX can: a
     * local client's UCX-allocated memory over shared memory, verified at
     * REGION_ADD to lie inside one shared mapping (rdma_region.c). Transfers
     * then read and write it in place, one copy instead of two; NULL means
     * every byte goes through staging and an RMA operation (RDMA NICs, CMA,
     * TCP). */
    uint8_t *local;
    int refs; /* the session's region list + each open transfer; under session mu */
    struct rregion *next;
} rregion_t;

typedef struct rworker {
    ucp_worker_h w;
    int efd;
} rworker_t;

struct rsession {
    uint8_t id[RDMA_SESSION_ID_LEN];
    char access_key[RDMA_MAX_AK + 1];
    char peer[80]; /* the lifeline's peer, as bconn's */
    struct rdma_server *srv;
    ruser_t *user; /* its access key's share of the pools; held until destroyed */
    rprog_t *prog;
    _Atomic int refs;
    _Atomic int dead;      /* lifeline dropped or the endpoint failed */
    _Atomic int ep_failed; /* UCX reported the endpoint failed (peer gone) */
    _Atomic int orphans;   /* chunks orphaned with a request on this session */
    /* Native requests admitted whose reply UCX has not finished sending
     * (rdma_native.c): bounded by cfg.max_native_per_session. */
    _Atomic unsigned native_inflight;
    /* Bytes of refusals (SlowDown at admission) UCX is still sending:
     * bounded by S3R_NATIVE_UNSENT_REFUSAL_BYTES. */
    _Atomic size_t refusal_bytes;
    int own_worker; /* 1: a local session, NONE mode, worker below is ours */
    const rdma_domain_t *dom;
    rworker_t own;
    ucp_worker_h worker; /* own.w or the progress thread's shared worker */
    ucp_ep_h ep;
    /* The probe active message (header: the client nonce, payload: a fresh
     * nonce): UCX may read these until the endpoint is closed. */
    uint8_t probe_hdr[RDMA_NONCE_LEN], probe[RDMA_NONCE_LEN];
    pthread_mutex_t mu; /* regions */
    rregion_t *regions;
    unsigned n_regions;
    uint64_t reg_bytes;
    /* The progress thread's list this session is on: own-worker sessions,
     * or closing sessions whose endpoint waits for stalled requests. */
    rsession_t *prog_next;
    rsession_t *hnext; /* hash chain in srv->buckets, under srv->mu */
};

typedef struct rcmd {
    enum { CMD_ADD, CMD_DESTROY } type;
    rsession_t *s;
    struct rcmd *next;
} rcmd_t;

struct rprog {
    struct rdma_server *srv;
    pthread_t th;
    int started;
    int epfd, evfd;
    rworker_t shared; /* net domain (no worker when the net domain is off) */
    ucp_address_t *shared_addr;
    size_t shared_addr_len;
    pthread_mutex_t mu;
    rcmd_t *cmds, **cmds_tail;
    _Atomic int stop;
    rsession_t *own_list; /* only the thread touches it */
    /* Net sessions already closed whose endpoint stays open because RMA
     * requests or replies are stalled on it (session_destroy); only the
     * thread touches it. */
    rsession_t *closing_list;
    /* Native requests this thread runs itself (rdma_native.c): admitted in
     * an AM callback on this thread; only the thread touches the list. */
    struct rdma_native_req *local_head, **local_tail;
    /* The slots of the native requests of this thread's sessions
     * (rdma_native.c): RDMA_NATIVE_SLOTS made with the thread (slots),
     * the free ones on slot_free, under slot_mu (any thread gives one
     * back). */
    pthread_mutex_t slot_mu;
    uint8_t *slots;
    struct rdma_native_req *slot_free;
    /* Replies that executors finished for this thread's sessions while it
     * polls (rdma_native.c): it sends them itself, so that an executor never
     * contends with it for a worker's lock. Under mu. */
    struct nsend *handed, **handed_tail;
    /* Set while the thread may sleep in epoll_wait: an executor then sends
     * its reply itself (no wake-up to pay, and nobody holds the lock). */
    _Atomic int sleeping;
    /* Set while an executor sends a reply itself on this thread's workers
     * (the thread sleeping): a second executor hands its reply over and
     * wakes the thread instead of spinning on the worker's lock behind the
     * first (rdma_native.c, native_send). */
    _Atomic int executor_sending;
    uint64_t active_ns; /* monotonic ns of the last work done (busy-poll window) */
};

/* ==== transfers ========================================================== */

struct rdma_xfer {
    struct rdma_server *srv;
    rsession_t *s;
    rregion_t *r;
    uint64_t addr, len;
    struct rdma_xfer *next_free;
};

/* ==== bootstrap connections ============================================== */

enum conn_state {
    CONN_HELLO, /* waiting for HELLO */
    CONN_AUTH,  /* CHALLENGE sent, waiting for AUTH */
    CONN_PROBE, /* authenticated, probe sent over UCX, waiting for PROVE */
    CONN_LIVE,  /* WELCOME sent: the session's lifeline */
};

/* One connection on a session port (TCP or the Unix socket). Owned by the
 * bootstrap thread. */
struct bconn {
    int fd;
    enum conn_state state;
    uint64_t accepted_ms, deadline_ms; /* the deadline bounds the whole handshake */
    /* input: one frame at a time */
    uint8_t hdr[4];
    size_t hdr_got;
    uint8_t *body;
    size_t body_len, body_got;
    /* output: frames not yet taken by the kernel (bounded: RDMA_CONN_OUTQ_MAX) */
    uint8_t *out;
    size_t out_len, out_off;
    int broken;      /* the output queue overflowed or a send failed: close */
    char peer[80];   /* for logs: "ip:port" or "unix:uid=U,pid=P" */
    char source[64]; /* what per-source caps count: the IP, or "uid:U" */
    int local;       /* bootstrapped over the Unix socket from a trusted uid */
    int refusal;     /* rdma_refusal_t counted when it closes before LIVE; -1: none */
    /* handshake */
    char ak[RDMA_MAX_AK + 1];
    uint8_t cnonce[RDMA_NONCE_LEN], snonce[RDMA_NONCE_LEN];
    uint8_t key[32]; /* the session key, from AUTH until WELCOME's MAC; zeroed by conn_free */
    uint8_t *caddr;
    size_t caddr_len;
    rsession_t *sess; /* from AUTH on (in the hash only once LIVE) */
    struct bconn *next;
};

struct rdma_server {
    rdma_server_config_t cfg;
    int op_timeout_ms;
    int no_map; /* S3R_RDMA_NO_MAP: never map regions (staged path only) */
    /* local: every transport, for trusted Unix-socket peers (NULL when the
     * socket is off); net: network transports only (NULL when none is
     * allowed, then only local sessions exist). */
    rdma_domain_t local, net;
    int listen_fd, port;
    int unix_fd;         /* -1 when the Unix socket is off */
    char unix_name[108]; /* "@abstract" or a path */
    pthread_t boot_th;
    int boot_started;
    int boot_evfd;
    _Atomic int stop;
    bconn_t *conns;
    unsigned n_conns;
    rprog_t *progs;
    int n_progs;
    unsigned next_prog;

    void *staging; /* mmap'd; registered in each domain */
    size_t staging_len;
    size_t chunk_bytes, n_chunks;
    rchunk_t *chunks;
    rchunk_t *free_chunks;
    pthread_mutex_t pool_mu;
    pthread_cond_t pool_cv;

    pthread_mutex_t mu;   /* session hash, counters, transfer slots */
    rsession_t **buckets; /* live sessions by id, chained via hnext */
    unsigned bucket_mask; /* bucket count - 1 (a power of two >= max_sessions) */
    unsigned n_live;      /* in the hash */
    unsigned n_alloc;     /* authenticated sessions: reserved at AUTH until destroyed */
    struct rdma_xfer *xfers, *free_xfers;
    unsigned n_xfers_busy;    /* transfer handles taken from free_xfers */
    ruser_t *users;           /* every access key with a session, under srv->mu */
    _Atomic unsigned n_users; /* entries on users (written under srv->mu) */
    /* Each user's share of the pools (rdma_share.c): native requests in
     * flight, transfer handles, staging chunks, executor threads. */
    unsigned user_native_max, user_xfers_max, user_chunks_max, user_running_max;
    /* ... and what a user alone on the server may hold of them. */
    unsigned lone_native_max, lone_xfers_max, lone_chunks_max, lone_running_max;
    /* A transfer whose RDMA operation makes no progress this long fails. */
    int stall_ms;
    _Atomic unsigned long xfers_stalled; /* transfers failed for no progress */
    /* Bytes transfers moved, by path (rdma_server_stats_t) */
    _Atomic unsigned long long bytes_mapped, bytes_staged;
    _Atomic unsigned n_closing;  /* sessions on the progress threads' closing lists */
    unsigned chunks_quarantined; /* orphaned chunks whose session is gone; under pool_mu */
    /* rdma_server_get_stats: written by the bootstrap thread only. */
    _Atomic unsigned long sessions_opened;
    _Atomic unsigned long refused[RDMA_REFUSED_COUNT];

    /* Native requests (rdma_native.c): the queue the executor threads take
     * from (bounded by cfg.max_native_queued), and replies being sent. */
    /* The handler (rdma_server_set_native), read per request without a
     * lock, and the requests between reading it and returning from it. */
    _Atomic(rdma_native_fn) native_fn;
    _Atomic(void *) native_ctx;
    _Atomic unsigned native_running;
    pthread_mutex_t native_mu;
    pthread_cond_t native_cv;
    struct rdma_native_req *nq_head, **nq_tail;
    /* Executor threads polling the queue instead of sleeping (at most one:
     * native_poll_queue), under native_mu. */
    unsigned native_polling;
    /* Admitted, reply not yet sent: bounded by cfg.max_native_queued. */
    _Atomic unsigned n_jobs;
    _Atomic unsigned native_held; /* rdma_native_held_t not freed yet */
    int native_stop;
    pthread_t *native_th;
    unsigned n_native_th;
    pthread_mutex_t send_mu;
    struct nsend *sends; /* replies UCX is still sending, under send_mu */
    /* Sent replies kept for the next ones (rdma_native.c: spare_take), at
     * most RDMA_NATIVE_SPARES, under send_mu. */
    struct nsend *send_spares;
    unsigned n_send_spares;
    unsigned n_sending;                   /* ... how many, under send_mu */
    size_t sending_bytes;                 /* ... their bytes, under send_mu */
    _Atomic unsigned long native_dropped; /* messages nobody could be answered for */
    _Atomic unsigned long native_bad;     /* malformed requests answered with an error */
};

/* A progress thread that did work keeps polling (no sleep, no wake-up to
 * pay) this long before it arms its workers and sleeps, and so does one
 * executor thread that ran a request: docs/protocol.md §4.5 has the
 * measurement. */
#define RDMA_BUSY_POLL_NS (200 * 1000)

/* Native request slots made with each progress thread (at most
 * cfg.max_native_queued), each with room for a request message of
 * RDMA_NATIVE_SLOT_MSG bytes (a GET's or HEAD's; a longer one gets a slot of
 * its own): about 3.8 KiB a slot, 245 KiB a thread (docs/limits.md). */
#define RDMA_NATIVE_SLOTS    64
#define RDMA_NATIVE_SLOT_MSG 1024
/* Sent native replies kept server-wide for the next ones, with their
 * buffer when it is at most RDMA_NATIVE_SPARE_BUF bytes (a 4 KiB GET's
 * inline reply): at most about 520 KiB (docs/limits.md). */
#define RDMA_NATIVE_SPARES    64
#define RDMA_NATIVE_SPARE_BUF (8 * 1024)

/* Staging defaults: 64 chunks of 1 MiB (a zero in the config means these). */
#define RDMA_DEFAULT_CHUNK   ((size_t)1 << 20)
#define RDMA_DEFAULT_STAGING ((size_t)64 << 20)

/* ==== rdma_session.c ===================================================== */

/* Creates a MULTI-thread-mode worker on dom's context and its event fd.
 * 0, or -1 (logged; rw->w is NULL). */
int rdma_worker_create(const rdma_domain_t *dom, rworker_t *rw);

/* Gives every active-message id (0..65535) of rw's worker a handler that
 * drops the message. UCX 1.13 indexes its handler array with the peer's id
 * before checking it against the array's length (ucp_am_handler_common), so
 * a worker that can receive active messages must have the whole array. The
 * net domain's workers get it (1.5 MiB each); a local session's worker is
 * reachable by its trusted client only. 0, or -1 (logged). */
int rdma_worker_am_guard(rworker_t *rw);

/* Destroys rw's worker if it has one; idempotent. */
void rdma_worker_destroy(rworker_t *rw);

/* Queues a command (CMD_ADD: take over s's own worker; CMD_DESTROY: destroy
 * s) for progress thread p and wakes it. Any thread. */
void rdma_prog_post(rprog_t *p, int type, rsession_t *s);

/* Takes a reference on s. The caller must already hold one, or hold
 * srv->mu with s found live in the hash. */
void rdma_session_get(rsession_t *s);

/* Drops a reference on s; the last one has s's progress thread destroy it. */
void rdma_session_put(rsession_t *s);

/* Drops a reference on r (under its session's mu); returns r when that was
 * the last one, for rdma_region_free once the lock is released: destroying an
 * rkey takes the worker's lock, and a progress thread holding that lock may
 * be waiting (through srv->mu) on this session's mu. */
rregion_t *rdma_region_unref_locked(rregion_t *r);
/* Destroys r's rkey (if still there) and frees it; NULL is a no-op. Never
 * under a session's mu or srv->mu. */
void rdma_region_free(rregion_t *r);

/* The hash chain a session id belongs to. Under srv->mu. */
rsession_t **rdma_session_bucket(struct rdma_server *srv, const uint8_t id[RDMA_SESSION_ID_LEN]);

/* The live session with this id, with a reference taken (drop it with
 * rdma_session_put), or NULL. Any thread. */
rsession_t *rdma_session_find(struct rdma_server *srv, const uint8_t id[RDMA_SESSION_ID_LEN]);

/* Marks s dead and removes it from the hash (takes srv->mu); does not drop
 * a reference. Bootstrap thread. */
void rdma_session_kill(struct rdma_server *srv, rsession_t *s);

/* The PEER-mode endpoint error handler (arg: the session): marks it dead. */
void rdma_session_ep_failed(void *arg, ucp_ep_h ep, ucs_status_t status);

/* Progress thread body; arg is its rprog_t. Runs until p->stop is set and
 * its command queue is empty. */
void *rdma_prog_main(void *arg);

/* ==== rdma_share.c ======================================================= */

/* Computes each user's share of the pools from cfg (srv->user_*_max).
 * Before any session exists. */
void rdma_share_init(struct rdma_server *srv);

/* The user entry of access key ak with a session counted on it (created
 * on first use), or NULL when out of memory. Under srv->mu. */
ruser_t *rdma_user_get(struct rdma_server *srv, const char *ak);

/* Drops a session from u; the last one frees it. Under srv->mu. */
void rdma_user_put(struct rdma_server *srv, ruser_t *u);

/* Sessions of access key ak not yet destroyed: live ones, and closed ones
 * still held by transfers or waiting on stalled requests. Under srv->mu. */
unsigned rdma_user_sessions(struct rdma_server *srv, const char *ak);

/* What one user may hold of a pool whose share is user_max: user_max while
 * another access key has a session too, lone_max (srv->lone_*_max) while one
 * key alone has sessions (a share reserves room for the others; with none
 * there, holding it back would only slow the one tenant, except the reserve
 * a newcomer needs of what a frozen client can hold past its stall). */
unsigned rdma_share_cap(struct rdma_server *srv, unsigned user_max, unsigned lone_max);

/* ==== rdma_domain.c ====================================================== */

/* The UCX_TLS value for the net domain, derived from the operator's UCX_TLS
 * (ucx_tls, NULL when unset): only network transports (tcp and the
 * InfiniBand/RoCE families) of what the operator allows. Writes it to out
 * and returns 0, or returns -1 when the operator's list allows none. */
int rdma_net_tls(const char *ucx_tls, char *out, size_t out_len);

/* The UCX_TLS value for the local domain: the same-host transports (shared
 * memory, CMA, knem) of what the operator allows. 0, or -1 when that leaves
 * no shared-memory transport able to carry UCP's wireup messages. */
int rdma_local_tls(const char *ucx_tls, char *out, size_t out_len);

/* Creates the domains (srv->local when local is set, srv->net unless the
 * operator's UCX_TLS leaves no network transport) and registers the staging
 * memory (srv->staging, srv->staging_len) in each. 0, or -1 (logged). */
int rdma_domains_open(struct rdma_server *srv, int local);
void rdma_domains_close(struct rdma_server *srv);

/* ==== rdma_mapcheck.c ==================================================== */

/* 1 when [p, p+len) lies inside one shared mapping of this process whose
 * last byte is backed (not past the end of the mapped file), else 0. Reads
 * /proc/self/maps. */
int rdma_span_is_shared_mapping(const void *p, uint64_t len);

/* ==== rdma_xfer.c ======================================================== */

/* Allocates the staging pool (cfg sizes, or the defaults above): sets
 * srv->staging/staging_len and fills the free list; rdma_domains_open
 * registers it. 0, or -1 (logged). */
int rdma_staging_init(struct rdma_server *srv);
void rdma_staging_free(struct rdma_server *srv);

/* Opens a transfer of [addr, addr+len) in region region_id of s, which the
 * caller holds a reference on (the transfer takes its own). RDMA_OUT_OF_BOUNDS
 * unless the span lies inside that region; RDMA_BUSY when every transfer
 * slot is taken or s's user holds its share of them. */
rdma_status_t rdma_xfer_bind(struct rdma_server *srv, rsession_t *s, uint32_t region_id,
                             uint64_t addr, uint64_t len, rdma_xfer_t **out_p);

/* Told by rdma_xfer_push_progress that the first done bytes of the span are
 * written. */
typedef void (*xfer_progress_fn)(void *pctx, uint64_t done);
/* The piece a told mapped push fills at a time. */
#define RDMA_PROGRESS_STEP (256u * 1024)
/* rdma_xfer_push, calling progress (when not NULL) after each piece of
 * RDMA_PROGRESS_STEP bytes written in place into a mapped span, but the
 * last; never on the staged path (a put's completion is not the peer's
 * memory holding the bytes). */
rdma_status_t rdma_xfer_push_progress(rdma_xfer_t *x, uint64_t len, rdma_fill_fn fill, void *ctx,
                                      xfer_progress_fn progress, void *pctx);

/* Called by s's teardown: returns every chunk s orphaned to the pool, or,
 * when a request of s can still complete (can_complete: s's endpoint was
 * closed rather than its worker destroyed), quarantines them: out of s's
 * and its user's counts, back in the pool only when their UCX callback
 * runs. Returns how many it quarantined. */
int rdma_chunk_sweep(struct rdma_server *srv, rsession_t *s, int can_complete);

/* ==== rdma_boot.c ======================================================== */

/* Opens the session listeners: TCP on cfg.listen_host:cfg.port (sets
 * srv->listen_fd and srv->port, the bound port when cfg.port is 0) and the
 * Unix socket cfg.unix_socket when set. 0, or -1 (logged). */
int rdma_listen_on(struct rdma_server *srv);

/* Bootstrap thread body; arg is the server. Runs until srv->stop is set,
 * then closes every connection (killing their sessions). */
void *rdma_boot_main(void *arg);

/* Queues a finished frame (freed here) on c's output and tries to send it
 * without blocking; past RDMA_CONN_OUTQ_MAX the connection is marked broken. */
void rdma_conn_send(bconn_t *c, wire_out_t *w);
void rdma_conn_send_error(bconn_t *c, uint32_t code, const char *msg);
/* ==== rdma_handshake.c =================================================== */

/* Frame handlers for the handshake states. Each returns 0 to keep the
 * connection, -1 to close it (after logging why and queueing an ERROR). */
int rdma_on_hello(struct rdma_server *srv, bconn_t *c, const uint8_t *body, size_t len);
int rdma_on_auth(struct rdma_server *srv, bconn_t *c, const uint8_t *body, size_t len);
int rdma_on_prove(struct rdma_server *srv, bconn_t *c, const uint8_t *body, size_t len);

/* ==== rdma_region.c ====================================================== */

/* REGION_ADD / REGION_REMOVE on a live session; same contract as above. */
int rdma_on_region_add(struct rdma_server *srv, bconn_t *c, const uint8_t *body, size_t len);
int rdma_on_region_remove(bconn_t *c, const uint8_t *body, size_t len);

/* ==== rdma_native.c ======================================================= */

/* Sets the native request handler on a worker: a progress thread's shared
 * net worker (shared_of) or a local session's own worker (own). 0, or -1. */
int rdma_native_listen(rworker_t *rw, rprog_t *shared_of, rsession_t *own);
/* Initialises the queue and starts the executor threads. 0, or -1. */
int rdma_native_start(struct rdma_server *srv);
/* Makes progress thread p's pool of native request slots: 0, or -1 when out
 * of memory. rdma_native_prog_free frees it once no request can use it (the
 * executors and p's thread have stopped). */
int rdma_native_prog_init(rprog_t *p);
void rdma_native_prog_free(rprog_t *p);
/* Lets the executors drain the queue and joins them. Before the progress
 * threads stop: queued requests hold session references. */
void rdma_native_stop(struct rdma_server *srv);
/* Marks the calling thread as progress thread p (native requests admitted
 * on it may run on it). */
void rdma_native_thread_is(rprog_t *p);
/* 1 when the calling thread is a progress thread (nothing else progresses
 * its workers while it waits). */
int rdma_native_on_progress_thread(void);
/* Runs the native requests admitted on progress thread p (its own thread)
 * since the last call; returns how many. */
int rdma_native_run_local(rprog_t *p);
/* Sends the replies executors handed to p (taken from p->handed under
 * p->mu); on p's thread. Returns how many. */
int rdma_native_send_handed(rprog_t *p, struct nsend *list);
/* Frees what rdma_native_start made and any reply still on the send list. */
void rdma_native_free(struct rdma_server *srv);
/* Called by s's teardown: gives back the request slots and refusal bytes
 * the replies to s that UCX has not completed still hold, and frees those
 * replies, unless a completion can still come (can_complete: an abandoned
 * endpoint close), which then frees them. */
void rdma_native_sweep_sends(struct rdma_server *srv, const rsession_t *s, int can_complete);

#endif
