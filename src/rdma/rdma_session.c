/* Sessions, server side: UCX workers, session and region references, session
 * teardown, and the progress threads that own the workers and destroy
 * sessions. Threads and ownership: rdma_server_internal.h. */
#include "rdma/rdma_server_internal.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include "common/log.h"
#include "common/clock.h"
#include "rdma/rdma_net.h"
#include "rdma/rdma_ucx.h"

/* ==== workers ============================================================ */

int rdma_worker_create(const rdma_domain_t *dom, rworker_t *rw)
{
    ucp_worker_params_t wp = {
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_MULTI,
    };
    ucs_status_t st = ucp_worker_create(dom->ctx, &wp, &rw->w);
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

static ucs_status_t am_drop(void *arg, const void *header, size_t header_length, void *data,
                            size_t length, const ucp_am_recv_param_t *param)
{
    (void)arg, (void)header, (void)header_length, (void)data, (void)length, (void)param;
    return UCS_OK;
}

int rdma_worker_am_guard(rworker_t *rw)
{
    for (unsigned id = 0; id <= UINT16_MAX; id++) {
        ucp_am_handler_param_t p = {
            .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB,
            .id = id,
            .cb = am_drop,
        };
        ucs_status_t st = ucp_worker_set_am_recv_handler(rw->w, &p);
        if (st != UCS_OK) {
            log_warn("rdma: ucp_worker_set_am_recv_handler(%u): %s", id, ucs_status_string(st));
            return -1;
        }
    }
    return 0;
}

void rdma_worker_destroy(rworker_t *rw)
{
    if (rw->w)
        ucp_worker_destroy(rw->w);
    rw->w = NULL;
}

/* ==== sessions: references and teardown ================================== */

void rdma_prog_post(rprog_t *p, int type, rsession_t *s)
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

void rdma_session_get(rsession_t *s)
{
    atomic_fetch_add(&s->refs, 1);
}

void rdma_session_put(rsession_t *s)
{
    if (atomic_fetch_sub(&s->refs, 1) == 1)
        rdma_prog_post(s->prog, CMD_DESTROY, s);
}

rregion_t *rdma_region_unref_locked(rregion_t *r)
{
    return --r->refs == 0 ? r : NULL;
}

void rdma_region_free(rregion_t *r)
{
    if (!r)
        return;
    if (r->rkey)
        ucp_rkey_destroy(r->rkey);
    free(r);
}

void rdma_session_ep_failed(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    rsession_t *s = arg;
    atomic_store(&s->ep_failed, 1);
    atomic_store(&s->dead, 1);
    log_info("rdma: session endpoint failed: %s", ucs_status_string(status));
}

/* Whether a net session's endpoint still has requests UCX has not finished:
 * RMA on orphaned staging chunks, or replies not yet sent. */
static int session_stalled(rsession_t *s)
{
    return atomic_load(&s->orphans) > 0 || atomic_load(&s->native_inflight) > 0;
}

/* Frees a session that nobody holds, on its progress thread: closes its
 * endpoint (or destroys its own worker) and gives back what it held. */
static void session_free(rsession_t *s)
{
    struct rdma_server *srv = s->srv;
    if (s->own_worker) {
        epoll_ctl(s->prog->epfd, EPOLL_CTL_DEL, s->own.efd, NULL);
        /* The rkeys go before the worker, even with requests still pending
         * on them (a dead local client's RMA never completes): destroying the
         * worker purges those requests without reading their rkeys, but it
         * only frees the rkeys' pool, so an rkey left to it keeps the
         * client's shared-memory segment attached here (one leak per killed
         * client). */
        for (rregion_t *r = s->regions; r; r = r->next) {
            ucp_rkey_destroy(r->rkey);
            r->rkey = NULL;
        }
        /* In NONE mode a request to a dead peer never completes and a forced
         * close is refused; destroying the worker reclaims the requests and
         * the endpoint. */
        rdma_worker_destroy(&s->own);
        rdma_chunk_sweep(srv, s, 0);
        rdma_native_sweep_sends(srv, s, 0);
    } else {
        int closed = 1;
        if (s->ep) {
            ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                     .flags = UCP_EP_CLOSE_FLAG_FORCE};
            if (rdma_ucx_wait(s->worker, ucp_ep_close_nbx(s->ep, &p), 2000) == UCS_INPROGRESS) {
                log_warn("rdma: endpoint close still in progress after 2 s; abandoning it");
                closed = 0;
            }
        }
        /* A forced close purges most of the endpoint's requests (their
         * callbacks free orphaned chunks and sent replies), but it does not
         * promise all: over TCP an RMA request stalled on a peer that stopped
         * serving it can still be failed later, when the transport gives the
         * connection up (a completion that once marked another client's
         * transfer failed when its chunk had gone back to the pool). So
         * what is left waits for its own completion: orphaned chunks are
         * quarantined, unsent replies left to their callbacks, and the
         * rkeys such a request may still name are kept (a few per session,
         * and only when requests were stuck). */
        int pending = rdma_chunk_sweep(srv, s, 1);
        rdma_native_sweep_sends(srv, s, 1);
        if (closed && pending == 0) {
            for (rregion_t *r = s->regions; r; r = r->next) {
                ucp_rkey_destroy(r->rkey);
                r->rkey = NULL;
            }
        } else {
            log_info("rdma: %s: %d staging chunks wait for RDMA requests the closed endpoint "
                     "may still fail; its rkeys are kept",
                     s->peer, pending);
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
    rdma_user_put(srv, s->user);
    pthread_mutex_unlock(&srv->mu);
    log_debug("rdma: session destroyed");
    free(s);
}

/* Runs on the session's progress thread once nobody else holds it. A net
 * session whose endpoint has requests stalled on a peer that is still
 * connected (it stopped progressing its worker) is not closed yet: a forced
 * close of such an endpoint, with the peer's connection closing later,
 * faulted inside UCX 1.13's TCP transport (docs/security.md). It waits on
 * the thread's closing list, still counted against its access key's
 * sessions and shares, until its requests finish or UCX fails the endpoint
 * (the peer went away: the requests are then purged with it), or the server
 * stops. */
static void session_destroy(rsession_t *s)
{
    rprog_t *p = s->prog;
    if (!s->own_worker && s->ep && !atomic_load(&s->ep_failed) && !atomic_load(&p->stop) &&
        session_stalled(s)) {
        log_info("rdma: %s: session closed with requests stalled on a live connection; its "
                 "endpoint stays open until they finish or the connection fails",
                 s->peer);
        s->prog_next = p->closing_list;
        p->closing_list = s;
        atomic_fetch_add(&s->srv->n_closing, 1);
        return;
    }
    session_free(s);
}

/* Frees the closing sessions whose endpoint has nothing stalled any more or
 * has failed; all of them when the thread stops. */
static void closing_sweep(rprog_t *p, int all)
{
    for (rsession_t **pp = &p->closing_list; *pp;) {
        rsession_t *s = *pp;
        if (all || atomic_load(&s->ep_failed) || !session_stalled(s)) {
            *pp = s->prog_next;
            atomic_fetch_sub(&s->srv->n_closing, 1);
            session_free(s);
        } else {
            pp = &s->prog_next;
        }
    }
}

/* The hash chain a session id belongs to (ids are random, so any 32 bits of
 * one are a uniform hash). Under srv->mu. */
rsession_t **rdma_session_bucket(struct rdma_server *srv, const uint8_t id[RDMA_SESSION_ID_LEN])
{
    uint32_t h;
    memcpy(&h, id, sizeof(h));
    return &srv->buckets[h & srv->bucket_mask];
}

rsession_t *rdma_session_find(struct rdma_server *srv, const uint8_t id[RDMA_SESSION_ID_LEN])
{
    pthread_mutex_lock(&srv->mu);
    rsession_t *s = *rdma_session_bucket(srv, id);
    while (s && memcmp(s->id, id, RDMA_SESSION_ID_LEN) != 0)
        s = s->hnext;
    if (s && !atomic_load(&s->dead))
        rdma_session_get(s);
    else
        s = NULL;
    pthread_mutex_unlock(&srv->mu);
    return s;
}

/* Marks a session dead and takes it out of the hash so no new transfer
 * finds it; transfers already running see `dead` and give up. */
void rdma_session_kill(struct rdma_server *srv, rsession_t *s)
{
    atomic_store(&s->dead, 1);
    pthread_mutex_lock(&srv->mu);
    for (rsession_t **pp = rdma_session_bucket(srv, s->id); *pp; pp = &(*pp)->hnext) {
        if (*pp == s) {
            *pp = s->hnext;
            srv->n_live--;
            break;
        }
    }
    pthread_mutex_unlock(&srv->mu);
}

/* ==== progress threads =================================================== */

/* Progresses w until it has nothing more (at most 1024 rounds); returns
 * whether anything happened. */
static int prog_progress(ucp_worker_h w)
{
    int i = 0;
    while (i < 1024 && ucp_worker_progress(w))
        i++;
    return i > 0;
}

void *rdma_prog_main(void *arg)
{
    rprog_t *p = arg;
    struct epoll_event evs[32];
    int busy = 0;
    unsigned spins = 0;
    unsigned rounds = 0, looked = 0; /* rounds of the loop; the round of the last look */
    unsigned idle = 0;               /* idle rounds in a row */
    long preemptions = 0;            /* rdma_thread_preemptions at the last look */
    rdma_native_thread_is(p);
    if (rdma_thread_set_slice(p->srv->cfg.slice_us) != 0)
        log_info("rdma: progress thread: scheduler slice of %u us not taken: %s",
                 p->srv->cfg.slice_us, strerror(errno));
    if (rdma_thread_raise_priority(p->srv->cfg.priority) != 0)
        log_info("rdma: progress thread: %u nice levels above the server's not taken (%s): "
                 "it shares a core as any thread (rdma.priority, docs/deploy.md)",
                 p->srv->cfg.priority, strerror(errno));
    /* Named for perf, top and the tests (/proc/PID/task/TID/comm), once
     * its slice and priority are set. */
    pthread_setname_np(pthread_self(), "s3r-progress");
    for (;; rounds++) {
        /* While busy-polling, the event fds are only drained now and then:
         * commands are read from the list below anyway, and a system call
         * per round would cost more than the round. */
        int n = 0;
        if (!busy) {
            /* Executors send their own replies from here on (native_send);
             * one handed over just before is sent first. */
            atomic_store(&p->sleeping, 1);
            pthread_mutex_lock(&p->mu);
            int handed = p->handed != NULL;
            pthread_mutex_unlock(&p->mu);
            n = epoll_wait(p->epfd, evs, 32, handed ? 0 : 100);
            atomic_store(&p->sleeping, 0);
        } else if ((++spins & 255) == 0) {
            n = epoll_wait(p->epfd, evs, 32, 0);
        }
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
        struct nsend *handed = p->handed;
        p->handed = NULL;
        p->handed_tail = &p->handed;
        pthread_mutex_unlock(&p->mu);
        /* Before the commands: a reply handed over holds its session. */
        int did = rdma_native_send_handed(p, handed) > 0;
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
            /* Requests admitted here still hold their sessions: answer them
             * (the server is stopping: 503) so the sessions can go. */
            rdma_native_run_local(p);
            pthread_mutex_lock(&p->mu);
            int empty = p->cmds == NULL;
            pthread_mutex_unlock(&p->mu);
            if (empty) {
                closing_sweep(p, 1);
                break;
            }
            continue;
        }
        /* Progress everything this thread owns and run the native requests
         * that arrived on it, then arm; a worker with events still pending
         * (arm says BUSY) keeps the loop spinning, and so does work done
         * within the last RDMA_BUSY_POLL_NS (a request under load finds
         * the thread awake instead of paying for a wake-up), and so does
         * everything with rdma.poll busy: the thread never arms nor sleeps. */
        int was_busy = busy;
        busy = 0;
        if (p->shared.w)
            did |= prog_progress(p->shared.w);
        for (rsession_t *s = p->own_list; s; s = s->prog_next)
            did |= prog_progress(s->own.w);
        did |= rdma_native_run_local(p) > 0;
        if (p->closing_list)
            closing_sweep(p, 0);
        /* The clock is read when work was done and on a look (below): enough
         * to end the window on time, and no clock read per round of an
         * otherwise empty poll. */
        if (did) {
            p->active_ns = clock_mono_ns();
            busy = 1;
            idle = 0;
            continue;
        }
        /* Idle rounds after the first few give the core away to any thread
         * waiting for it (sched_yield returns at once when there is none):
         * a client sharing this core would otherwise wait the whole window
         * for its reply. With rdma.poll busy too: on a shared core a
         * yielding poller answered a sparse request in 35-150 us where one
         * that never yielded took 1-4 ms (bench/gaps, load 13 on 2 cores). */
        if (++idle > 16)
            sched_yield();
        if (p->srv->cfg.poll == RDMA_POLL_BUSY || (was_busy && rounds - looked < 64)) {
            busy = 1;
            continue;
        }
        /* A look at most every 64 rounds, busy or idle ones, and on the
         * first idle round after a sleep. The window also ends when the
         * scheduler took the core from this thread since the last look (a
         * preemption, or a yield that let another thread run): on an
         * oversubscribed host a spinner waits for its turn (back-to-back
         * requests included), a sleeper is run as soon as it is woken. */
        looked = rounds;
        long pre = rdma_thread_preemptions();
        int preempted = pre != preemptions;
        preemptions = pre;
        if (!preempted && clock_mono_ns() - p->active_ns < RDMA_BUSY_POLL_NS) {
            busy = 1;
            continue;
        }
        if (p->shared.w && ucp_worker_arm(p->shared.w) == UCS_ERR_BUSY)
            busy = 1;
        for (rsession_t *s = p->own_list; s; s = s->prog_next) {
            if (ucp_worker_arm(s->own.w) == UCS_ERR_BUSY)
                busy = 1;
        }
    }
    return NULL;
}
