/* The RDMA session server: start and stop (contexts, progress threads, the
 * bootstrap thread, the staging pool), config defaults, counters and
 * rdma_strerror. The rest lives in rdma_boot.c, rdma_session.c and
 * rdma_xfer.c; rdma_server_internal.h has the shared types and the threads
 * and ownership rules. docs/protocol.md has the wire format; src/rdma/README.md
 * the thread model in prose. */
#include "rdma/rdma_server.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include "common/log.h"
#include "common/s3r_limits.h"
#include "rdma/rdma_server_internal.h"
#include "rdma/rdma_wire.h"

#define OP_TIMEOUT_MS_DEFAULT 30000

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

void rdma_server_config_defaults(rdma_server_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->listen_host = "0.0.0.0";
    cfg->port = 9100;
    cfg->n_workers = 0;
    cfg->net_sessions = 1;
    cfg->staging_bytes = RDMA_DEFAULT_STAGING;
    cfg->chunk_bytes = RDMA_DEFAULT_CHUNK;
    cfg->max_sessions = S3R_MAX_SESSIONS;
    cfg->max_regions_per_session = S3R_MAX_REGIONS_PER_SESSION;
    cfg->max_registered_per_session = S3R_MAX_REGISTERED_PER_SESSION;
    cfg->max_inflight = S3R_MAX_INFLIGHT_TRANSFERS;
    cfg->native_threads = S3R_NATIVE_THREADS;
    cfg->slice_us = S3R_RDMA_SLICE_US;
    cfg->priority = S3R_RDMA_PRIORITY;
    cfg->max_native_per_session = S3R_NATIVE_PER_SESSION;
    cfg->max_native_queued = S3R_NATIVE_QUEUED;
    cfg->user_share = S3R_RDMA_USER_SHARE;
    cfg->stall_ms = S3R_RDMA_STALL_MS;
}

/* ==== start / stop ======================================================= */

int rdma_server_start(const rdma_server_config_t *cfg, rdma_server_t **out_p)
{
    struct rdma_server *srv = calloc(1, sizeof(*srv));
    if (!srv)
        return -1;
    srv->cfg = *cfg;
    /* The caller's arrays need not outlive the call. */
    srv->cfg.trusted_uids = NULL;
    srv->cfg.n_trusted_uids = 0;
    if (cfg->n_trusted_uids) {
        unsigned *u = calloc(cfg->n_trusted_uids, sizeof(*u));
        if (!u) {
            free(srv);
            return -1;
        }
        memcpy(u, cfg->trusted_uids, cfg->n_trusted_uids * sizeof(*u));
        srv->cfg.trusted_uids = u;
        srv->cfg.n_trusted_uids = cfg->n_trusted_uids;
    }
    srv->listen_fd = -1;
    srv->unix_fd = -1;
    srv->boot_evfd = -1;
    if (!srv->cfg.max_sessions)
        srv->cfg.max_sessions = S3R_MAX_SESSIONS;
    if (!srv->cfg.max_sessions_per_user)
        srv->cfg.max_sessions_per_user = S3R_MAX_SESSIONS_PER_USER;
    if (!srv->cfg.max_pending)
        srv->cfg.max_pending = S3R_RDMA_MAX_PENDING;
    if (!srv->cfg.max_pending_per_source)
        srv->cfg.max_pending_per_source = S3R_RDMA_PENDING_PER_SOURCE;
    if (!srv->cfg.max_inflight)
        srv->cfg.max_inflight = S3R_MAX_INFLIGHT_TRANSFERS;
    if (!srv->cfg.native_threads)
        srv->cfg.native_threads = S3R_NATIVE_THREADS;
    if (!srv->cfg.max_native_per_session)
        srv->cfg.max_native_per_session = S3R_NATIVE_PER_SESSION;
    if (!srv->cfg.max_native_queued)
        srv->cfg.max_native_queued = S3R_NATIVE_QUEUED;
    if (!srv->cfg.user_share || srv->cfg.user_share > 100)
        srv->cfg.user_share = srv->cfg.user_share ? 100 : S3R_RDMA_USER_SHARE;
    srv->stall_ms = srv->cfg.stall_ms ? (int)srv->cfg.stall_ms : S3R_RDMA_STALL_MS;
    srv->op_timeout_ms = OP_TIMEOUT_MS_DEFAULT;
    const char *t = getenv("S3R_RDMA_OP_TIMEOUT_MS");
    if (t && atoi(t) > 0)
        srv->op_timeout_ms = atoi(t);
    srv->no_map = getenv("S3R_RDMA_NO_MAP") != NULL;
    pthread_mutex_init(&srv->mu, NULL);
    pthread_mutex_init(&srv->pool_mu, NULL);
    pthread_cond_init(&srv->pool_cv, NULL);
    if (rdma_native_start(srv) < 0)
        goto fail;

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

    int want_local = !(cfg->unix_socket && !*cfg->unix_socket);
    if (rdma_staging_init(srv) < 0 || rdma_domains_open(srv, want_local) < 0)
        goto fail;
    rdma_share_init(srv);

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
        if (rdma_native_prog_init(p) < 0)
            goto fail;
        p->cmds_tail = &p->cmds;
        p->local_tail = &p->local_head;
        p->handed_tail = &p->handed;
        if (srv->net.ctx &&
            (rdma_worker_create(&srv->net, &p->shared) < 0 ||
             rdma_worker_am_guard(&p->shared) < 0 || rdma_native_listen(&p->shared, p, NULL) < 0 ||
             ucp_worker_get_address(p->shared.w, &p->shared_addr, &p->shared_addr_len) != UCS_OK))
            goto fail;
        p->epfd = epoll_create1(EPOLL_CLOEXEC);
        p->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (p->epfd < 0 || p->evfd < 0)
            goto fail;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
        epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->evfd, &ev);
        ev.data.ptr = p;
        if (p->shared.w)
            epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->shared.efd, &ev);
        if (pthread_create(&p->th, NULL, rdma_prog_main, p) != 0)
            goto fail;
        p->started = 1;
    }

    if (rdma_listen_on(srv) < 0)
        goto fail;
    srv->boot_evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (srv->boot_evfd < 0 || pthread_create(&srv->boot_th, NULL, rdma_boot_main, srv) != 0)
        goto fail;
    srv->boot_started = 1;
    log_info("rdma: session port %d%s%s, %d progress thread(s) (poll %s), staging %zu x %zu bytes",
             srv->port, srv->unix_fd >= 0 ? ", local clients on unix socket " : "",
             srv->unix_fd >= 0 ? srv->unix_name : "", srv->n_progs,
             srv->cfg.poll == RDMA_POLL_BUSY ? "busy" : "adaptive", srv->n_chunks,
             srv->chunk_bytes);
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
    rdma_native_stop(srv);
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
        rdma_worker_destroy(&p->shared);
        if (p->epfd >= 0)
            close(p->epfd);
        if (p->evfd >= 0)
            close(p->evfd);
        pthread_mutex_destroy(&p->mu);
        rdma_native_prog_free(p);
    }
    free(srv->progs);
    rdma_domains_close(srv);
    rdma_staging_free(srv);
    if (srv->listen_fd >= 0)
        close(srv->listen_fd);
    if (srv->unix_fd >= 0) {
        close(srv->unix_fd);
        if (srv->unix_name[0] != '@')
            unlink(srv->unix_name);
    }
    if (srv->boot_evfd >= 0)
        close(srv->boot_evfd);
    free(srv->buckets);
    free((void *)srv->cfg.trusted_uids);
    free(srv->xfers);
    rdma_native_free(srv);
    pthread_mutex_destroy(&srv->mu);
    pthread_mutex_destroy(&srv->pool_mu);
    pthread_cond_destroy(&srv->pool_cv);
    free(srv);
}

int rdma_server_port(const rdma_server_t *srv)
{
    return srv->port;
}

const char *rdma_server_unix_socket(const rdma_server_t *srv)
{
    return srv->unix_fd >= 0 ? srv->unix_name : NULL;
}

unsigned rdma_server_session_count(rdma_server_t *srv)
{
    pthread_mutex_lock(&srv->mu);
    unsigned n = srv->n_live;
    pthread_mutex_unlock(&srv->mu);
    return n;
}

const char *rdma_refusal_name(rdma_refusal_t r)
{
    static const char *const names[RDMA_REFUSED_COUNT] = {
        "auth", "max_sessions", "busy", "protocol", "timeout", "internal",
    };
    return (unsigned)r < RDMA_REFUSED_COUNT ? names[r] : "?";
}

void rdma_server_get_stats(rdma_server_t *srv, rdma_server_stats_t *out_p)
{
    pthread_mutex_lock(&srv->mu);
    out_p->sessions = srv->n_live;
    out_p->transfers_inflight = srv->n_xfers_busy;
    pthread_mutex_unlock(&srv->mu);
    pthread_mutex_lock(&srv->pool_mu);
    unsigned free_n = 0;
    for (rchunk_t *c = srv->free_chunks; c; c = c->next_free)
        free_n++;
    out_p->staging_busy = (unsigned)srv->n_chunks - free_n;
    out_p->staging_quarantined = srv->chunks_quarantined;
    pthread_mutex_unlock(&srv->pool_mu);
    out_p->transfers_stalled = atomic_load(&srv->xfers_stalled);
    out_p->bytes_mapped = atomic_load(&srv->bytes_mapped);
    out_p->bytes_staged = atomic_load(&srv->bytes_staged);
    out_p->sessions_closing = atomic_load(&srv->n_closing);
    out_p->sessions_opened = atomic_load(&srv->sessions_opened);
    for (int i = 0; i < RDMA_REFUSED_COUNT; i++)
        out_p->refused[i] = atomic_load(&srv->refused[i]);
    out_p->native_inflight = atomic_load(&srv->n_jobs);
    pthread_mutex_lock(&srv->send_mu);
    out_p->native_sending = srv->n_sending;
    out_p->native_sending_bytes = srv->sending_bytes;
    pthread_mutex_unlock(&srv->send_mu);
    rdma_server_native_counts(srv, &out_p->native_dropped, &out_p->native_malformed);
}

unsigned rdma_server_session_resident(rdma_server_t *srv)
{
    pthread_mutex_lock(&srv->mu);
    unsigned n = srv->n_alloc;
    pthread_mutex_unlock(&srv->mu);
    return n;
}
