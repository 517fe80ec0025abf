/* Fair shares: what each access key (user) may hold of the server-wide
 * pools. A client that stops serving its RDMA (SIGSTOP, a hung process)
 * holds what its transfers took until they fail; without a per-user bound
 * one such tenant could hold every executor thread, transfer handle and
 * staging chunk while every other tenant's native writes and token
 * transfers wait. Each user may hold cfg.user_share percent of each pool
 * (rounded up, at least one): native requests in flight (of
 * max_native_queued), executor threads running its requests (of
 * native_threads), transfer handles (of max_inflight) and staging chunks
 * (of the pool, orphaned chunks included), while another access key has a
 * session too (rdma_share_cap). A tenant alone has every executor thread and the
 * whole native queue (what a frozen client holds there fails at the stall
 * deadline), but not the last eighth of the transfer handles and staging
 * chunks: a frozen client's orphaned chunks stay out of the pool until its
 * connection goes, and a tenant arriving after a lone one froze at the whole
 * pool would find none. The counts live in the user's
 * entry (rdma_server_internal.h says under which lock); the entry lives
 * while a session of the key does. docs/limits.md has the defaults. */
#include "rdma/rdma_server_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* pct percent of total, rounded up, at least 1 and at most total. */
static unsigned share_of(size_t total, unsigned pct)
{
    size_t n = (total * pct + 99) / 100;
    if (n < 1)
        n = 1;
    return (unsigned)(n < total ? n : total);
}

/* What a lone user may take of a pool of total whose share is user_max: all
 * but an eighth of it (rounded up), never less than its share. */
static unsigned lone_of(size_t total, unsigned user_max)
{
    size_t n = total - (total + 7) / 8;
    return n > user_max ? (unsigned)n : user_max;
}

void rdma_share_init(struct rdma_server *srv)
{
    unsigned pct = srv->cfg.user_share;
    srv->user_native_max = share_of(srv->cfg.max_native_queued, pct);
    srv->user_running_max = share_of(srv->cfg.native_threads, pct);
    srv->user_xfers_max = share_of(srv->cfg.max_inflight, pct);
    srv->user_chunks_max = share_of(srv->n_chunks, pct);
    srv->lone_native_max = (unsigned)srv->cfg.max_native_queued;
    srv->lone_running_max = (unsigned)srv->cfg.native_threads;
    srv->lone_xfers_max = lone_of(srv->cfg.max_inflight, srv->user_xfers_max);
    srv->lone_chunks_max = lone_of(srv->n_chunks, srv->user_chunks_max);
}

ruser_t *rdma_user_get(struct rdma_server *srv, const char *ak)
{
    ruser_t *u;
    for (u = srv->users; u && strcmp(u->ak, ak) != 0; u = u->next) {
    }
    if (!u) {
        u = calloc(1, sizeof(*u));
        if (!u)
            return NULL;
        snprintf(u->ak, sizeof(u->ak), "%s", ak);
        u->next = srv->users;
        srv->users = u;
        atomic_fetch_add(&srv->n_users, 1);
    }
    u->sessions++;
    return u;
}

void rdma_user_put(struct rdma_server *srv, ruser_t *u)
{
    if (--u->sessions > 0)
        return;
    for (ruser_t **pp = &srv->users; *pp; pp = &(*pp)->next) {
        if (*pp == u) {
            *pp = u->next;
            atomic_fetch_sub(&srv->n_users, 1);
            break;
        }
    }
    free(u);
}

unsigned rdma_user_sessions(struct rdma_server *srv, const char *ak)
{
    for (ruser_t *u = srv->users; u; u = u->next) {
        if (strcmp(u->ak, ak) == 0)
            return u->sessions;
    }
    return 0;
}

unsigned rdma_share_cap(struct rdma_server *srv, unsigned user_max, unsigned lone_max)
{
    return atomic_load(&srv->n_users) > 1 ? user_max : lone_max;
}
