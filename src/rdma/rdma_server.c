/* The RDMA session server: bootstrap listener and lifelines, UCX workers and
 * progress threads, sessions and regions, the staging pool and the token
 * data mover. docs/protocol.md has the wire format; src/rdma/README.md the
 * thread model in prose.
 *
 * Threads and ownership, in short:
 *   - The bootstrap thread owns every TCP connection (handshakes and
 *     lifelines) and is the only thread that creates sessions, adds or
 *     removes regions, and marks a session dead when its lifeline drops.
 *   - Progress thread i owns one shared worker (PEER mode, cross-host
 *     sessions) and the per-session workers (NONE mode, same-host sessions)
 *     handed to it. Only it destroys a session, and only once the session's
 *     reference count is zero, so no other thread can be inside the worker.
 *   - HTTP threads (rdma_xfer_*) hold a session reference for the life of a
 *     transfer, post RMA on the session's endpoint and progress the worker
 *     themselves while waiting (workers are UCS_THREAD_MODE_MULTI).
 *   - Staging chunks and their completion state live in memory that outlives
 *     every session, so a request that completes (or is purged) after its
 *     transfer gave up writes only there; see chunk_release.
 */
#include "rdma/rdma_server.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/log.h"
#include "common/s3r_limits.h"
#include "rdma/rdma_net.h"
#include "rdma/rdma_ucx.h"
#include "rdma/rdma_wire.h"

#define HANDSHAKE_TIMEOUT_MS  5000
#define OP_TIMEOUT_MS_DEFAULT 30000
#define EXTRA_PENDING_CONNS   16 /* handshakes in progress beyond max_sessions */

typedef struct rsession rsession_t;
typedef struct rprog rprog_t;

const char *rdma_strerror(rdma_status_t st)
{
    switch (st) {
    case RDMA_OK:
        return "ok";
    case RDMA_DECLINE:
        return "declined (no live session or malformed token)";
    case RDMA_FORBIDDEN:
        return "session belongs to another access key";
    case RDMA_OUT_OF_BOUNDS:
        return "token span outside the session's region";
    case RDMA_BUSY:
        return "too many transfers in flight";
    case RDMA_TRANSPORT:
        return "RDMA transfer failed";
    case RDMA_CALLBACK:
        return "transfer callback failed";
    }
    return "unknown rdma status";
}

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
    struct rdma_server *srv;
    struct rchunk *next_free;
} rchunk_t;

/* ==== sessions =========================================================== */

typedef struct rregion {
    uint32_t id;
    uint64_t addr, len;
    ucp_rkey_h rkey;
    /* The region mapped into this process (ucp_rkey_ptr), when UCX can: a
     * same-host client's UCX-allocated memory over shared memory. Transfers
     * then read and write it in place, one copy instead of two; NULL means
     * every byte goes through staging and an RMA operation (RDMA NICs, CMA). */
    uint8_t *local;
    int refs; /* the session's region list + each open transfer; under session mu */
    struct rregion *next;
} rregion_t;

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

typedef struct rworker {
    ucp_worker_h w;
    int efd;
} rworker_t;

struct rsession {
    uint8_t id[RDMA_SESSION_ID_LEN];
    char access_key[RDMA_MAX_AK + 1];
    struct rdma_server *srv;
    rprog_t *prog;
    _Atomic int refs;
    _Atomic int dead;    /* lifeline dropped or the endpoint failed */
    _Atomic int orphans; /* chunks orphaned with a request on this session */
    int own_worker;      /* 1: same host, NONE mode, worker below is ours */
    rworker_t own;
    ucp_worker_h worker; /* own.w or the progress thread's shared worker */
    ucp_ep_h ep;
    pthread_mutex_t mu; /* regions */
    rregion_t *regions;
    unsigned n_regions;
    uint64_t reg_bytes;
    rsession_t *prog_next; /* progress thread's list of own-worker sessions */
    rsession_t *hnext;     /* hash chain in srv->buckets, under srv->mu */
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
    rworker_t shared;
    ucp_address_t *shared_addr;
    size_t shared_addr_len;
    pthread_mutex_t mu;
    rcmd_t *cmds, **cmds_tail;
    _Atomic int stop;
    rsession_t *own_list; /* only the thread touches it */
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

struct rdma_server {
    rdma_server_config_t cfg;
    int op_timeout_ms;
    int no_map; /* S3R_RDMA_NO_MAP: never map regions (staged path only) */
    ucp_context_h ctx;
    char host_id[RDMA_MAX_HOST_ID + 1];
    int listen_fd, port;
    pthread_t boot_th;
    int boot_started;
    int boot_evfd;
    _Atomic int stop;
    bconn_t *conns;
    unsigned n_conns;
    rprog_t *progs;
    int n_progs;
    unsigned next_prog;

    ucp_mem_h staging_memh;
    void *staging;
    size_t chunk_bytes, n_chunks;
    rchunk_t *chunks;
    rchunk_t *free_chunks;
    pthread_mutex_t pool_mu;
    pthread_cond_t pool_cv;

    pthread_mutex_t mu; /* session hash, counters, transfer slots */
    rsession_t **buckets; /* live sessions by id, chained via hnext */
    unsigned bucket_mask; /* bucket count - 1 (a power of two >= max_sessions) */
    unsigned n_live;      /* in the hash */
    unsigned n_alloc; /* reserved at HELLO until destroyed */
    struct rdma_xfer *xfers, *free_xfers;
};

/* Staging defaults: 64 chunks of 1 MiB (a zero in the config means these). */
#define RDMA_DEFAULT_CHUNK   ((size_t)1 << 20)
#define RDMA_DEFAULT_STAGING ((size_t)64 << 20)

void rdma_server_config_defaults(rdma_server_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->listen_host = "0.0.0.0";
    cfg->port = 9100;
    cfg->n_workers = 0;
    cfg->staging_bytes = RDMA_DEFAULT_STAGING;
    cfg->chunk_bytes = RDMA_DEFAULT_CHUNK;
    cfg->max_sessions = S3R_MAX_SESSIONS;
    cfg->max_regions_per_session = S3R_MAX_REGIONS_PER_SESSION;
    cfg->max_registered_per_session = S3R_MAX_REGISTERED_PER_SESSION;
    cfg->max_inflight = S3R_MAX_INFLIGHT_TRANSFERS;
}

/* ==== chunk pool ========================================================= */

static void pool_put_locked(struct rdma_server *srv, rchunk_t *c)
{
    atomic_store(&c->state, CH_FREE);
    c->next_free = srv->free_chunks;
    srv->free_chunks = c;
    pthread_cond_signal(&srv->pool_cv);
}

/* Takes a chunk, waiting up to deadline_ms (0: do not wait). */
static rchunk_t *pool_get(struct rdma_server *srv, rsession_t *owner, uint64_t deadline_ms)
{
    pthread_mutex_lock(&srv->pool_mu);
    while (!srv->free_chunks && deadline_ms && rdma_now_ms() < deadline_ms) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10 * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&srv->pool_cv, &srv->pool_mu, &ts);
    }
    rchunk_t *c = srv->free_chunks;
    if (c) {
        srv->free_chunks = c->next_free;
        c->owner = owner;
        atomic_store(&c->state, CH_OWNED);
    }
    pthread_mutex_unlock(&srv->pool_mu);
    return c;
}

/* Called by UCX when a request on a chunk completes (or is purged). */
static void chunk_cb(void *request, ucs_status_t status, void *user_data)
{
    rchunk_t *c = user_data;
    int expect = CH_INFLIGHT;
    if (!atomic_compare_exchange_strong(&c->state, &expect,
                                        status == UCS_OK ? CH_DONE : CH_ERROR)) {
        /* The transfer gave up on it: the chunk is ours to return. */
        struct rdma_server *srv = c->srv;
        pthread_mutex_lock(&srv->pool_mu);
        if (atomic_load(&c->state) == CH_ORPHANED) {
            atomic_fetch_sub(&c->owner->orphans, 1);
            pool_put_locked(srv, c);
        }
        pthread_mutex_unlock(&srv->pool_mu);
    }
    ucp_request_free(request);
}

/* Gives a chunk back. A chunk with a request still outstanding is orphaned
 * instead: its completion callback, or the session's teardown after the
 * worker or endpoint is gone, returns it. */
static void chunk_release(struct rdma_server *srv, rchunk_t *c)
{
    if (!c)
        return;
    int expect = CH_INFLIGHT;
    if (atomic_load(&c->state) == CH_INFLIGHT) {
        atomic_fetch_add(&c->owner->orphans, 1);
        if (atomic_compare_exchange_strong(&c->state, &expect, CH_ORPHANED))
            return;
        atomic_fetch_sub(&c->owner->orphans, 1);
    }
    pthread_mutex_lock(&srv->pool_mu);
    pool_put_locked(srv, c);
    pthread_mutex_unlock(&srv->pool_mu);
}

/* Returns every chunk this session orphaned: called once no request of the
 * session can complete any more (its worker destroyed or endpoint closed). */
static void chunk_sweep(struct rdma_server *srv, rsession_t *s)
{
    pthread_mutex_lock(&srv->pool_mu);
    for (size_t i = 0; i < srv->n_chunks; i++) {
        rchunk_t *c = &srv->chunks[i];
        if (c->owner == s && atomic_load(&c->state) == CH_ORPHANED) {
            atomic_fetch_sub(&s->orphans, 1);
            pool_put_locked(srv, c);
        }
    }
    pthread_mutex_unlock(&srv->pool_mu);
}

/* ==== workers ============================================================ */

static int worker_create(struct rdma_server *srv, rworker_t *rw)
{
    ucp_worker_params_t wp = {
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_MULTI,
    };
    ucs_status_t st = ucp_worker_create(srv->ctx, &wp, &rw->w);
    if (st != UCS_OK) {
        log_warn("rdma: ucp_worker_create: %s", ucs_status_string(st));
        rw->w = NULL;
        return -1;
    }
    st = ucp_worker_get_efd(rw->w, &rw->efd);
    if (st != UCS_OK) {
        log_warn("rdma: ucp_worker_get_efd: %s", ucs_status_string(st));
        ucp_worker_destroy(rw->w);
        rw->w = NULL;
        return -1;
    }
    return 0;
}

static void worker_destroy(rworker_t *rw)
{
    if (rw->w)
        ucp_worker_destroy(rw->w);
    rw->w = NULL;
}

/* ==== sessions: references and teardown ================================== */

static void prog_post(rprog_t *p, int type, rsession_t *s)
{
    rcmd_t *c = calloc(1, sizeof(*c));
    if (!c) {
        log_error("rdma: out of memory queueing a session command; session leaked");
        return;
    }
    c->type = type;
    c->s = s;
    pthread_mutex_lock(&p->mu);
    *p->cmds_tail = c;
    p->cmds_tail = &c->next;
    pthread_mutex_unlock(&p->mu);
    uint64_t one = 1;
    if (write(p->evfd, &one, sizeof(one)) < 0) {
        /* The counter cannot overflow in practice; the thread also polls. */
    }
}

static void session_get(rsession_t *s)
{
    atomic_fetch_add(&s->refs, 1);
}

static void session_put(rsession_t *s)
{
    if (atomic_fetch_sub(&s->refs, 1) == 1)
        prog_post(s->prog, CMD_DESTROY, s);
}

static void region_put_locked(rregion_t *r)
{
    if (--r->refs == 0) {
        if (r->rkey)
            ucp_rkey_destroy(r->rkey);
        free(r);
    }
}

static void ep_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    rsession_t *s = arg;
    atomic_store(&s->dead, 1);
    log_info("rdma: session endpoint failed: %s", ucs_status_string(status));
}

/* Runs on the session's progress thread once nobody else holds it. */
static void session_destroy(rsession_t *s)
{
    struct rdma_server *srv = s->srv;
    int orphans = atomic_load(&s->orphans);
    if (s->own_worker) {
        epoll_ctl(s->prog->epfd, EPOLL_CTL_DEL, s->own.efd, NULL);
        if (orphans == 0) {
            for (rregion_t *r = s->regions; r; r = r->next) {
                ucp_rkey_destroy(r->rkey);
                r->rkey = NULL;
            }
        }
        /* In NONE mode a request to a dead peer never completes and a forced
         * close is refused; destroying the worker reclaims the requests, the
         * endpoint and (when requests were stuck) the rkeys' pool. */
        worker_destroy(&s->own);
        chunk_sweep(srv, s);
    } else {
        if (s->ep) {
            ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                     .flags = UCP_EP_CLOSE_FLAG_FORCE};
            if (rdma_ucx_wait(s->worker, ucp_ep_close_nbx(s->ep, &p), 2000) == UCS_INPROGRESS)
                log_warn("rdma: endpoint close still in progress after 2 s; abandoning it");
        }
        /* A forced close purges the endpoint's requests (their callbacks free
         * orphaned chunks); anything left cannot complete any more. */
        chunk_sweep(srv, s);
        for (rregion_t *r = s->regions; r; r = r->next) {
            ucp_rkey_destroy(r->rkey);
            r->rkey = NULL;
        }
    }
    while (s->regions) {
        rregion_t *r = s->regions;
        s->regions = r->next;
        free(r);
    }
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_lock(&srv->mu);
    srv->n_alloc--;
    pthread_mutex_unlock(&srv->mu);
    log_debug("rdma: session destroyed");
    free(s);
}

/* The hash chain a session id belongs to (ids are random, so any 32 bits of
 * one are a uniform hash). Under srv->mu. */
static rsession_t **session_bucket(struct rdma_server *srv, const uint8_t id[RDMA_SESSION_ID_LEN])
{
    uint32_t h;
    memcpy(&h, id, sizeof(h));
    return &srv->buckets[h & srv->bucket_mask];
}

/* Marks a session dead and takes it out of the hash so no new transfer
 * finds it; transfers already running see `dead` and give up. */
static void session_kill(struct rdma_server *srv, rsession_t *s)
{
    atomic_store(&s->dead, 1);
    pthread_mutex_lock(&srv->mu);
    for (rsession_t **pp = session_bucket(srv, s->id); *pp; pp = &(*pp)->hnext) {
        if (*pp == s) {
            *pp = s->hnext;
            srv->n_live--;
            break;
        }
    }
    pthread_mutex_unlock(&srv->mu);
}

/* ==== progress threads =================================================== */

static void prog_progress(ucp_worker_h w)
{
    for (int i = 0; i < 1024 && ucp_worker_progress(w); i++) {
    }
}

static void *prog_main(void *arg)
{
    rprog_t *p = arg;
    struct epoll_event evs[32];
    int busy = 0;
    for (;;) {
        int n = epoll_wait(p->epfd, evs, 32, busy ? 0 : 100);
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == NULL) {
                uint64_t v;
                if (read(p->evfd, &v, sizeof(v)) < 0) {
                    /* EAGAIN: another wake-up consumed it */
                }
            }
        }
        pthread_mutex_lock(&p->mu);
        rcmd_t *cmds = p->cmds;
        p->cmds = NULL;
        p->cmds_tail = &p->cmds;
        pthread_mutex_unlock(&p->mu);
        while (cmds) {
            rcmd_t *c = cmds;
            cmds = c->next;
            if (c->type == CMD_ADD) {
                struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c->s};
                epoll_ctl(p->epfd, EPOLL_CTL_ADD, c->s->own.efd, &ev);
                c->s->prog_next = p->own_list;
                p->own_list = c->s;
            } else {
                if (c->s->own_worker) {
                    for (rsession_t **pp = &p->own_list; *pp; pp = &(*pp)->prog_next) {
                        if (*pp == c->s) {
                            *pp = c->s->prog_next;
                            break;
                        }
                    }
                }
                session_destroy(c->s);
            }
            free(c);
        }
        if (atomic_load(&p->stop)) {
            pthread_mutex_lock(&p->mu);
            int empty = p->cmds == NULL;
            pthread_mutex_unlock(&p->mu);
            if (empty)
                break;
            continue;
        }
        /* Progress everything this thread owns, then arm; a worker with
         * events still pending (arm says BUSY) keeps the loop spinning. */
        busy = 0;
        prog_progress(p->shared.w);
        for (rsession_t *s = p->own_list; s; s = s->prog_next)
            prog_progress(s->own.w);
        if (ucp_worker_arm(p->shared.w) == UCS_ERR_BUSY)
            busy = 1;
        for (rsession_t *s = p->own_list; s; s = s->prog_next) {
            if (ucp_worker_arm(s->own.w) == UCS_ERR_BUSY)
                busy = 1;
        }
    }
    return NULL;
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

static void *boot_main(void *arg)
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

/* ==== start / stop ======================================================= */

static int listen_on(struct rdma_server *srv)
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

static int staging_init(struct rdma_server *srv)
{
    srv->chunk_bytes = srv->cfg.chunk_bytes ? srv->cfg.chunk_bytes : RDMA_DEFAULT_CHUNK;
    size_t total = srv->cfg.staging_bytes ? srv->cfg.staging_bytes : RDMA_DEFAULT_STAGING;
    if (total < 2 * srv->chunk_bytes)
        total = 2 * srv->chunk_bytes;
    srv->n_chunks = total / srv->chunk_bytes;
    total = srv->n_chunks * srv->chunk_bytes;
    ucp_mem_map_params_t mp = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                      UCP_MEM_MAP_PARAM_FIELD_FLAGS,
        .address = NULL,
        .length = total,
        .flags = UCP_MEM_MAP_ALLOCATE,
    };
    ucs_status_t st = ucp_mem_map(srv->ctx, &mp, &srv->staging_memh);
    if (st != UCS_OK) {
        log_error("rdma: mapping %zu bytes of staging memory: %s", total, ucs_status_string(st));
        return -1;
    }
    ucp_mem_attr_t ma = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS};
    ucp_mem_query(srv->staging_memh, &ma);
    srv->staging = ma.address;
    srv->chunks = calloc(srv->n_chunks, sizeof(*srv->chunks));
    if (!srv->chunks)
        return -1;
    for (size_t i = srv->n_chunks; i-- > 0;) {
        rchunk_t *c = &srv->chunks[i];
        c->buf = (uint8_t *)srv->staging + i * srv->chunk_bytes;
        c->srv = srv;
        pool_put_locked(srv, c);
    }
    return 0;
}

int rdma_server_start(const rdma_server_config_t *cfg, rdma_server_t **out_p)
{
    struct rdma_server *srv = calloc(1, sizeof(*srv));
    if (!srv)
        return -1;
    srv->cfg = *cfg;
    srv->listen_fd = -1;
    srv->boot_evfd = -1;
    if (!srv->cfg.max_sessions)
        srv->cfg.max_sessions = S3R_MAX_SESSIONS;
    if (!srv->cfg.max_inflight)
        srv->cfg.max_inflight = S3R_MAX_INFLIGHT_TRANSFERS;
    srv->op_timeout_ms = OP_TIMEOUT_MS_DEFAULT;
    const char *t = getenv("S3R_RDMA_OP_TIMEOUT_MS");
    if (t && atoi(t) > 0)
        srv->op_timeout_ms = atoi(t);
    srv->no_map = getenv("S3R_RDMA_NO_MAP") != NULL;
    pthread_mutex_init(&srv->mu, NULL);
    pthread_mutex_init(&srv->pool_mu, NULL);
    pthread_cond_init(&srv->pool_cv, NULL);
    rdma_host_identity(srv->host_id);

    unsigned nb = 1;
    while (nb < srv->cfg.max_sessions)
        nb *= 2;
    srv->bucket_mask = nb - 1;
    srv->buckets = calloc(nb, sizeof(*srv->buckets));
    srv->xfers = calloc(srv->cfg.max_inflight, sizeof(*srv->xfers));
    if (!srv->buckets || !srv->xfers)
        goto fail;
    for (unsigned i = srv->cfg.max_inflight; i-- > 0;) {
        srv->xfers[i].srv = srv;
        srv->xfers[i].next_free = srv->free_xfers;
        srv->free_xfers = &srv->xfers[i];
    }

    ucp_config_t *uc;
    if (ucp_config_read(NULL, NULL, &uc) != UCS_OK) {
        log_error("rdma: ucp_config_read failed");
        goto fail;
    }
    ucp_params_t up = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
        .features = UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP,
        .mt_workers_shared = 1,
    };
    ucs_status_t st = ucp_init(&up, uc, &srv->ctx);
    ucp_config_release(uc);
    if (st != UCS_OK) {
        log_error("rdma: ucp_init: %s", ucs_status_string(st));
        srv->ctx = NULL;
        goto fail;
    }
    if (staging_init(srv) < 0)
        goto fail;

    srv->n_progs = cfg->n_workers > 0 ? cfg->n_workers : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (srv->n_progs < 1)
        srv->n_progs = 1;
    srv->progs = calloc((size_t)srv->n_progs, sizeof(*srv->progs));
    if (!srv->progs)
        goto fail;
    for (int i = 0; i < srv->n_progs; i++) {
        rprog_t *p = &srv->progs[i];
        p->srv = srv;
        p->epfd = p->evfd = -1;
        pthread_mutex_init(&p->mu, NULL);
        p->cmds_tail = &p->cmds;
        if (worker_create(srv, &p->shared) < 0 ||
            ucp_worker_get_address(p->shared.w, &p->shared_addr, &p->shared_addr_len) != UCS_OK)
            goto fail;
        p->epfd = epoll_create1(EPOLL_CLOEXEC);
        p->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (p->epfd < 0 || p->evfd < 0)
            goto fail;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
        epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->evfd, &ev);
        ev.data.ptr = p;
        epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->shared.efd, &ev);
        if (pthread_create(&p->th, NULL, prog_main, p) != 0)
            goto fail;
        p->started = 1;
    }

    if (listen_on(srv) < 0)
        goto fail;
    srv->boot_evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (srv->boot_evfd < 0 || pthread_create(&srv->boot_th, NULL, boot_main, srv) != 0)
        goto fail;
    srv->boot_started = 1;
    log_info("rdma: session port %d, %d progress thread(s), staging %zu x %zu bytes", srv->port,
             srv->n_progs, srv->n_chunks, srv->chunk_bytes);
    *out_p = srv;
    return 0;
fail:
    log_error("rdma: server start failed");
    rdma_server_stop(srv);
    return -1;
}

void rdma_server_stop(rdma_server_t *srv)
{
    if (!srv)
        return;
    atomic_store(&srv->stop, 1);
    if (srv->boot_started) {
        uint64_t one = 1;
        if (write(srv->boot_evfd, &one, sizeof(one)) < 0) {
            /* the thread polls with a timeout anyway */
        }
        pthread_join(srv->boot_th, NULL);
    }
    for (int i = 0; srv->progs && i < srv->n_progs; i++) {
        rprog_t *p = &srv->progs[i];
        if (p->started) {
            atomic_store(&p->stop, 1);
            uint64_t one = 1;
            if (write(p->evfd, &one, sizeof(one)) < 0) {
                /* polled with a timeout */
            }
            pthread_join(p->th, NULL);
        }
        if (p->own_list)
            log_warn("rdma: stopping with sessions still referenced by open transfers");
        if (p->shared_addr)
            ucp_worker_release_address(p->shared.w, p->shared_addr);
        worker_destroy(&p->shared);
        if (p->epfd >= 0)
            close(p->epfd);
        if (p->evfd >= 0)
            close(p->evfd);
        pthread_mutex_destroy(&p->mu);
    }
    free(srv->progs);
    if (srv->staging_memh)
        ucp_mem_unmap(srv->ctx, srv->staging_memh);
    if (srv->ctx)
        ucp_cleanup(srv->ctx);
    if (srv->listen_fd >= 0)
        close(srv->listen_fd);
    if (srv->boot_evfd >= 0)
        close(srv->boot_evfd);
    free(srv->chunks);
    free(srv->buckets);
    free(srv->xfers);
    pthread_mutex_destroy(&srv->mu);
    pthread_mutex_destroy(&srv->pool_mu);
    pthread_cond_destroy(&srv->pool_cv);
    free(srv);
}

int rdma_server_port(const rdma_server_t *srv)
{
    return srv->port;
}

unsigned rdma_server_session_count(rdma_server_t *srv)
{
    pthread_mutex_lock(&srv->mu);
    unsigned n = srv->n_live;
    pthread_mutex_unlock(&srv->mu);
    return n;
}

unsigned rdma_server_session_resident(rdma_server_t *srv)
{
    pthread_mutex_lock(&srv->mu);
    unsigned n = srv->n_alloc;
    pthread_mutex_unlock(&srv->mu);
    return n;
}

/* ==== token transfers ==================================================== */

rdma_status_t rdma_xfer_open(rdma_server_t *srv, const char *token, const char *access_key,
                             rdma_xfer_t **out_p)
{
    rdma_token_t t;
    if (!srv || rdma_token_decode(token, &t) < 0)
        return RDMA_DECLINE;
    rdma_status_t rc = RDMA_OK;
    rsession_t *s = NULL;
    rregion_t *r = NULL;
    pthread_mutex_lock(&srv->mu);
    for (s = *session_bucket(srv, t.session_id); s; s = s->hnext) {
        if (memcmp(s->id, t.session_id, RDMA_SESSION_ID_LEN) == 0)
            break;
    }
    if (!s || atomic_load(&s->dead)) {
        rc = RDMA_DECLINE;
    } else if (!access_key || strcmp(access_key, s->access_key) != 0) {
        rc = RDMA_FORBIDDEN;
    } else {
        pthread_mutex_lock(&s->mu);
        for (r = s->regions; r && r->id != t.region_id; r = r->next) {
        }
        if (!r || t.addr < r->addr || t.addr - r->addr > r->len ||
            t.len > r->len - (t.addr - r->addr)) {
            rc = RDMA_OUT_OF_BOUNDS;
        } else if (!srv->free_xfers) {
            rc = RDMA_BUSY;
        } else {
            r->refs++;
            session_get(s);
        }
        pthread_mutex_unlock(&s->mu);
    }
    if (rc != RDMA_OK) {
        pthread_mutex_unlock(&srv->mu);
        return rc;
    }
    struct rdma_xfer *x = srv->free_xfers;
    srv->free_xfers = x->next_free;
    pthread_mutex_unlock(&srv->mu);
    x->s = s;
    x->r = r;
    x->addr = t.addr;
    x->len = t.len;
    *out_p = x;
    return RDMA_OK;
}

uint64_t rdma_xfer_length(const rdma_xfer_t *x)
{
    return x->len;
}

void rdma_xfer_close(rdma_xfer_t *x)
{
    if (!x)
        return;
    struct rdma_server *srv = x->srv;
    rsession_t *s = x->s;
    pthread_mutex_lock(&s->mu);
    region_put_locked(x->r);
    pthread_mutex_unlock(&s->mu);
    session_put(s);
    pthread_mutex_lock(&srv->mu);
    x->next_free = srv->free_xfers;
    srv->free_xfers = x;
    pthread_mutex_unlock(&srv->mu);
}

/* Waits for c's request by progressing the session's worker on this thread
 * (bounded spin, then short sleeps so the progress thread and the other
 * threads on 2 cores get a turn). Returns 0 when it completed, -1 when it
 * failed, the session died or the deadline passed (c is then still INFLIGHT
 * or ERROR; chunk_release handles either). */
static int chunk_wait(rdma_xfer_t *x, rchunk_t *c, uint64_t deadline_ms)
{
    unsigned idle = 0;
    for (unsigned i = 0;; i++) {
        int st = atomic_load(&c->state);
        if (st == CH_DONE) {
            atomic_store(&c->state, CH_OWNED);
            return 0;
        }
        if (st == CH_ERROR)
            return -1;
        if (atomic_load(&x->s->dead))
            return -1;
        if ((i & 255) == 0 && rdma_now_ms() > deadline_ms) {
            log_warn("rdma: transfer timed out");
            return -1;
        }
        /* Spin briefly (shared-memory transfers finish within microseconds),
         * then back off: on a slow transport (TCP emulating RMA) spinning
         * threads would starve the peers whose progress the transfer needs. */
        if (ucp_worker_progress(x->s->worker)) {
            idle = 0;
        } else if (++idle > 200) {
            long ns = 10000L << (idle - 200 < 5 ? idle - 200 : 5); /* 10 us .. 320 us */
            struct timespec ts = {0, ns};
            nanosleep(&ts, NULL);
        }
    }
}

/* Records what UCX made of an operation posted on c (c already INFLIGHT):
 * done at once, in flight (chunk_cb finishes it), or failed. 0, or -1 when
 * it failed. */
static int chunk_track(rchunk_t *c, ucs_status_ptr_t req, const char *what)
{
    if (req == NULL) {
        atomic_store(&c->state, CH_DONE);
        return 0;
    }
    if (UCS_PTR_IS_ERR(req)) {
        atomic_store(&c->state, CH_ERROR);
        log_warn("rdma: %s: %s", what, ucs_status_string(UCS_PTR_STATUS(req)));
        return -1;
    }
    return 0;
}

/* Posts one RMA (get when is_get, else put) of len bytes between c->buf and
 * the client address raddr. 0 when posted or already complete, -1 on error. */
static int chunk_post(rdma_xfer_t *x, rchunk_t *c, int is_get, size_t len, uint64_t raddr)
{
    ucp_request_param_t p = {
        .op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH,
        .cb.send = chunk_cb,
        .user_data = c,
        .memh = x->srv->staging_memh,
    };
    /* INFLIGHT before posting: another thread progressing the worker may
     * run the callback before the post returns. */
    atomic_store(&c->state, CH_INFLIGHT);
    if (is_get)
        return chunk_track(c, ucp_get_nbx(x->s->ep, c->buf, len, raddr, x->r->rkey, &p),
                           "ucp_get_nbx");
    return chunk_track(c, ucp_put_nbx(x->s->ep, c->buf, len, raddr, x->r->rkey, &p),
                       "ucp_put_nbx");
}

/* Flushes the session's endpoint, tracked on c: once it completes, every
 * put posted before it is in the client's memory. */
static int chunk_flush(rdma_xfer_t *x, rchunk_t *c)
{
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
        .cb.send = chunk_cb,
        .user_data = c,
    };
    atomic_store(&c->state, CH_INFLIGHT);
    return chunk_track(c, ucp_ep_flush_nbx(x->s->ep, &p), "ucp_ep_flush_nbx");
}

/* How many bytes of a len-byte transfer the chunk starting at off carries. */
static size_t chunk_len(uint64_t len, uint64_t off, size_t cb)
{
    return (size_t)(len - off < cb ? len - off : cb);
}

/* The checks pull and push share. On RDMA_OK *local_p is the client's span
 * mapped into this process, or NULL when it takes the staged path. */
static rdma_status_t xfer_begin(const rdma_xfer_t *x, uint64_t len, uint8_t **local_p)
{
    if (len > x->len)
        return RDMA_OUT_OF_BOUNDS;
    if (atomic_load(&x->s->dead))
        return RDMA_TRANSPORT;
    *local_p = x->r->local ? x->r->local + (x->addr - x->r->addr) : NULL;
    return RDMA_OK;
}

/* Sets the transfer's deadline and takes two staging chunks if it can, one
 * at least (waiting for it until the deadline). -1 when none came. */
static int xfer_chunks(rdma_xfer_t *x, uint64_t len, rchunk_t *ch[2], uint64_t *deadline_p)
{
    *deadline_p = rdma_now_ms() + (uint64_t)x->srv->op_timeout_ms;
    ch[0] = pool_get(x->srv, x->s, *deadline_p);
    ch[1] = ch[0] && len > x->srv->chunk_bytes ? pool_get(x->srv, x->s, 0) : NULL;
    return ch[0] ? 0 : -1;
}

/* Posts the get of the transfer's chunk i into c. */
static int pull_post(rdma_xfer_t *x, rchunk_t *c, uint64_t len, uint64_t i)
{
    size_t cb = x->srv->chunk_bytes;
    return chunk_post(x, c, 1, chunk_len(len, i * cb, cb), x->addr + i * cb);
}

rdma_status_t rdma_xfer_pull(rdma_xfer_t *x, uint64_t len, rdma_sink_fn sink, void *ctx)
{
    uint8_t *src;
    rdma_status_t rc = xfer_begin(x, len, &src);
    if (rc != RDMA_OK || len == 0)
        return rc;
    size_t cb = x->srv->chunk_bytes;
    if (src) {
        /* Mapped: the sink reads the client's buffer in place. */
        for (uint64_t off = 0; off < len; off += cb) {
            if (sink(ctx, src + off, chunk_len(len, off, cb)) != 0)
                return RDMA_CALLBACK;
        }
        return RDMA_OK;
    }
    uint64_t deadline;
    rchunk_t *ch[2];
    if (xfer_chunks(x, len, ch, &deadline) < 0)
        return RDMA_BUSY;
    uint64_t nb = ch[1] ? 2 : 1, n = (len + cb - 1) / cb;
    /* Chunk i lands in ch[i % nb]. With two buffers the get of i+1 is in
     * flight while the sink works on i; with one it follows the sink. */
    if (pull_post(x, ch[0], len, 0) < 0)
        rc = RDMA_TRANSPORT;
    for (uint64_t i = 0; i < n && rc == RDMA_OK; i++) {
        rchunk_t *c = ch[i % nb];
        int more = i + 1 < n;
        if (chunk_wait(x, c, deadline) < 0)
            rc = RDMA_TRANSPORT;
        else if (more && nb == 2 && pull_post(x, ch[(i + 1) % nb], len, i + 1) < 0)
            rc = RDMA_TRANSPORT;
        else if (sink(ctx, c->buf, chunk_len(len, i * cb, cb)) != 0)
            rc = RDMA_CALLBACK;
        else if (more && nb == 1 && pull_post(x, c, len, i + 1) < 0)
            rc = RDMA_TRANSPORT;
    }
    chunk_release(x->srv, ch[0]);
    chunk_release(x->srv, ch[1]);
    return rc;
}

rdma_status_t rdma_xfer_push(rdma_xfer_t *x, uint64_t len, rdma_fill_fn fill, void *ctx)
{
    uint8_t *dst;
    rdma_status_t rc = xfer_begin(x, len, &dst);
    if (rc != RDMA_OK || len == 0)
        return rc;
    size_t cb = x->srv->chunk_bytes;
    if (dst) {
        /* Mapped: the source fills the client's buffer in place; the reply
         * that follows orders these stores before the client's reads. */
        for (uint64_t off = 0; off < len; off += cb) {
            if (fill(ctx, dst + off, chunk_len(len, off, cb), off) != 0)
                return RDMA_CALLBACK;
        }
        return RDMA_OK;
    }
    uint64_t deadline;
    rchunk_t *ch[2];
    if (xfer_chunks(x, len, ch, &deadline) < 0)
        return RDMA_BUSY;
    uint64_t nb = ch[1] ? 2 : 1, n = (len + cb - 1) / cb;
    rchunk_t *last = NULL;
    for (uint64_t i = 0; i < n && rc == RDMA_OK; i++) {
        rchunk_t *c = ch[i % nb];
        uint64_t off = i * cb;
        size_t clen = chunk_len(len, off, cb);
        /* The put that last used this buffer must be done before refilling
         * it; with two buffers the other one's put overlaps this fill. */
        if (atomic_load(&c->state) != CH_OWNED && chunk_wait(x, c, deadline) < 0)
            rc = RDMA_TRANSPORT;
        else if (fill(ctx, c->buf, clen, off) != 0)
            rc = RDMA_CALLBACK;
        else if (chunk_post(x, c, 0, clen, x->addr + off) < 0)
            rc = RDMA_TRANSPORT;
        else
            last = c;
    }
    for (uint64_t b = 0; b < nb && rc == RDMA_OK; b++) {
        if (atomic_load(&ch[b]->state) != CH_OWNED && chunk_wait(x, ch[b], deadline) < 0)
            rc = RDMA_TRANSPORT;
    }
    /* A put's completion only means the local buffer is free again: flush so
     * the bytes are in the client's memory before we answer. */
    if (rc == RDMA_OK && (chunk_flush(x, last) < 0 || chunk_wait(x, last, deadline) < 0))
        rc = RDMA_TRANSPORT;
    chunk_release(x->srv, ch[0]);
    chunk_release(x->srv, ch[1]);
    return rc;
}
