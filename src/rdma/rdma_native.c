/* The native protocol, server side (docs/protocol.md §4): requests arrive as
 * UCX active messages on the session's worker, are admitted against the
 * per-session and server-wide bounds, queued for the executor threads, run
 * by the handler the server composed in (src/s3), and answered with one
 * reply message each, out of order.
 *
 * Threads: native_accept runs in the AM callback, on whichever thread
 * progresses the worker (a progress thread, or a transfer waiting in
 * rdma_xfer.c); it never blocks. Requests that do not wait on the disk for
 * long admitted on the session's own progress thread run on that thread
 * right after the progress call (rdma_native_run_local): reads (GET, HEAD:
 * page-cache reads, no fsync) and, when the server allows it
 * (cfg.local_put_max: relaxed durability), PUTs with a small inline body
 * (one file write into the page cache). No hand-off, no wake-up: the
 * microseconds the native path exists for. Everything else, and what
 * arrives on other threads, goes to the executor threads (srv->native_th).
 * A request holds a session reference until it is answered.
 *
 * A request holds its count in the bounds (s->native_inflight, srv->n_jobs)
 * until UCX has finished sending its reply, or its session dies: a client
 * that submits and never progresses its worker holds at most
 * max_native_per_session replies in this server's memory, not one per
 * request it ever sent (rdma_native_send.c has how a reply takes over its
 * request's count; rdma_native_req_t has a request's states and slots). Refusals
 * (SlowDown at admission) hold no slot; they are sent only while the
 * session's unsent refusals stay under S3R_NATIVE_UNSENT_REFUSAL_BYTES,
 * past which a refused request is dropped unanswered (its client is not
 * reading its replies).
 * Reply messages UCX has not finished sending are on srv->sends (owned by
 * the server, not the session, so a completion arriving late never touches
 * freed memory); a session's leftovers are freed once no completion can
 * come (rdma_native_sweep_sends).
 *
 * Trust: a request names its session by id; on the shared net worker any
 * peer can send one, so the id is checked against the live sessions of that
 * very worker, and the reply always goes to the endpoint the session's
 * handshake made, never to the sender (docs/security.md). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ucp/api/ucp.h>

#include "common/log.h"
#include "common/s3r_limits.h"
#include "rdma/rdma_native_wire.h"
#include "common/clock.h"
#include "rdma/rdma_net.h"
#include "rdma/rdma_server_internal.h"
#include "rdma/rdma_native_internal.h"
#include "rdma/rdma_ucx.h"

/* rdma_native_internal.h */
void rdma_native_count_release(struct rdma_server *srv, rsession_t *s, nreq_state_t *state)
{
    if (*state == NREQ_RELEASED)
        return;
    if (*state != NREQ_REPLIED) {
        atomic_fetch_sub(&s->native_inflight, 1);
        atomic_fetch_sub(&s->user->native, 1);
        atomic_fetch_sub(&srv->n_jobs, 1);
    }
    *state = NREQ_RELEASED;
}

void rdma_native_req_release(rdma_native_req_t *r)
{
    rdma_native_count_release(r->srv, r->s, &r->state);
}

/* ==== request slots ========================================================= */

/* A pooled slot's size: the request, its message and its strings arena. */
#define SLOT_ARENA_LEN RDMA_NATIVE_STRINGS_LEN(RDMA_NATIVE_SLOT_MSG)
#define SLOT_STRIDE                                                                                \
    ((sizeof(rdma_native_req_t) + RDMA_NATIVE_SLOT_MSG + SLOT_ARENA_LEN + 15) & ~(size_t)15)

int rdma_native_prog_init(rprog_t *p)
{
    pthread_mutex_init(&p->slot_mu, NULL);
    p->slot_free = NULL;
    unsigned n = p->srv->cfg.max_native_queued < RDMA_NATIVE_SLOTS ? p->srv->cfg.max_native_queued
                                                                   : RDMA_NATIVE_SLOTS;
    p->slots = n ? calloc(n, SLOT_STRIDE) : NULL;
    if (n && !p->slots)
        return -1;
    for (unsigned i = 0; i < n; i++) {
        rdma_native_req_t *r = (rdma_native_req_t *)(p->slots + (size_t)i * SLOT_STRIDE);
        r->pool = p;
        r->next = p->slot_free;
        p->slot_free = r;
    }
    return 0;
}

void rdma_native_prog_free(rprog_t *p)
{
    free(p->slots);
    p->slots = NULL;
    p->slot_free = NULL;
    pthread_mutex_destroy(&p->slot_mu);
}

/* A slot for a message of len bytes: from p's pool, else allocated; NULL
 * when out of memory. */
static rdma_native_req_t *slot_take(rprog_t *p, size_t len)
{
    rdma_native_req_t *r = NULL;
    if (len <= RDMA_NATIVE_SLOT_MSG) {
        pthread_mutex_lock(&p->slot_mu);
        r = p->slot_free;
        if (r)
            p->slot_free = r->next;
        pthread_mutex_unlock(&p->slot_mu);
    }
    if (!r) {
        r = malloc(sizeof(*r) + len);
        if (r)
            r->pool = NULL;
    }
    return r;
}

/* Gives r's slot back (any thread). */
static void slot_give(rdma_native_req_t *r)
{
    rprog_t *p = r->pool;
    if (!p) {
        free(r);
        return;
    }
    pthread_mutex_lock(&p->slot_mu);
    r->next = p->slot_free;
    p->slot_free = r;
    pthread_mutex_unlock(&p->slot_mu);
}

/* Parses r's message into r->m: the strings in the slot's arena when it is
 * pooled. */
static int slot_parse(rdma_native_req_t *r, const char **why)
{
    char *arena = r->pool ? (char *)r->msg + RDMA_NATIVE_SLOT_MSG : NULL;
    return rdma_native_parse_req_in(r->msg, r->len, &r->m, arena, arena ? SLOT_ARENA_LEN : 0, why);
}

/* ==== admission (AM callback) ============================================== */

/* Operations that only read the index and the page cache: run on the
 * progress thread. */
static int runs_local(unsigned opcode)
{
    return opcode == RDMA_OP_GET_OBJECT || opcode == RDMA_OP_HEAD_OBJECT ||
           opcode == RDMA_OP_HEAD_BUCKET || opcode == RDMA_OP_GET_BUCKET_LOCATION;
}

/* Whether a request of len bytes may be a PUT small enough for the progress
 * thread (rdma_native_run_local checks its body once parsed). */
static int may_put_local(const struct rdma_server *srv, unsigned opcode, size_t len)
{
    return opcode == RDMA_OP_PUT_OBJECT && srv->cfg.local_put_max > 0 &&
           len <= RDMA_NATIVE_MAX_META + srv->cfg.local_put_max;
}

/* Takes a reference unless the session's last one is already gone (its
 * destruction queued): a message can still arrive on a dying worker. */
static int session_tryget(rsession_t *s)
{
    int refs = atomic_load(&s->refs);
    while (refs > 0) {
        if (atomic_compare_exchange_weak(&s->refs, &refs, refs + 1))
            return 1;
    }
    return 0;
}

/* Queues j for the executor threads. */
static void native_enqueue(struct rdma_server *srv, rdma_native_req_t *j)
{
    j->next = NULL;
    pthread_mutex_lock(&srv->native_mu);
    int was_empty = srv->nq_head == NULL;
    *srv->nq_tail = j;
    srv->nq_tail = &j->next;
    /* An executor polling the queue takes the first job without a wake-up
     * (and without this thread's futex call); more jobs wake sleepers. */
    if (!(srv->native_polling && was_empty))
        pthread_cond_signal(&srv->native_cv);
    pthread_mutex_unlock(&srv->native_mu);
}

static void native_accept(struct rdma_server *srv, rsession_t *own, ucp_worker_h worker,
                          const void *data, size_t len, const ucp_am_recv_param_t *param)
{
    rdma_native_head_t h;
    if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) || len > RDMA_NATIVE_MAX_MSG ||
        rdma_native_parse_head(data, len, &h) < 0) {
        atomic_fetch_add(&srv->native_dropped, 1);
        return;
    }
    rsession_t *s;
    if (own) {
        s = own;
        if (memcmp(s->id, h.session_id, RDMA_SESSION_ID_LEN) != 0 || atomic_load(&s->dead) ||
            !session_tryget(s))
            s = NULL;
    } else {
        s = rdma_session_find(srv, h.session_id);
        if (s && s->worker != worker) {
            rdma_session_put(s);
            s = NULL;
        }
    }
    if (!s) {
        /* Nobody to answer: the id names no live session of this worker. */
        atomic_fetch_add(&srv->native_dropped, 1);
        return;
    }
    if (atomic_fetch_add(&s->native_inflight, 1) >= srv->cfg.max_native_per_session) {
        atomic_fetch_sub(&s->native_inflight, 1);
        rdma_native_reply_error(srv, s, NULL, &h, 503, RDMA_ERR_BUSY, "SlowDown",
                                "Too many requests in flight on this session.");
        rdma_session_put(s);
        return;
    }
    if (atomic_fetch_add(&s->user->native, 1) >=
        rdma_share_cap(srv, srv->user_native_max, srv->lone_native_max)) {
        atomic_fetch_sub(&s->user->native, 1);
        atomic_fetch_sub(&s->native_inflight, 1);
        rdma_native_reply_error(srv, s, NULL, &h, 503, RDMA_ERR_BUSY, "SlowDown",
                                "Too many requests in flight for this access key.");
        rdma_session_put(s);
        return;
    }
    rdma_native_req_t *j = NULL;
    if (atomic_fetch_add(&srv->n_jobs, 1) < srv->cfg.max_native_queued)
        j = slot_take(s->prog, len);
    if (!j) {
        atomic_fetch_sub(&srv->n_jobs, 1);
        atomic_fetch_sub(&s->user->native, 1);
        atomic_fetch_sub(&s->native_inflight, 1);
        rdma_native_reply_error(srv, s, NULL, &h, 503, RDMA_ERR_BUSY, "SlowDown",
                                "Too many native requests admitted on this server.");
        rdma_session_put(s);
        return;
    }
    j->next = NULL;
    j->srv = srv;
    j->s = s;
    j->state = NREQ_ADMITTED;
    j->len = len;
    memcpy(j->msg, data, len);
    rprog_t *here = rdma_native_prog_here();
    if (here && here == s->prog && (runs_local(h.opcode) || may_put_local(srv, h.opcode, len))) {
        *here->local_tail = j;
        here->local_tail = &j->next;
        return;
    }
    native_enqueue(srv, j);
}

static ucs_status_t native_recv_shared(void *arg, const void *header, size_t header_length,
                                       void *data, size_t length, const ucp_am_recv_param_t *param)
{
    (void)header;
    rprog_t *p = arg;
    if (header_length == 0)
        native_accept(p->srv, NULL, p->shared.w, data, length, param);
    return UCS_OK;
}

static ucs_status_t native_recv_own(void *arg, const void *header, size_t header_length, void *data,
                                    size_t length, const ucp_am_recv_param_t *param)
{
    (void)header;
    rsession_t *s = arg;
    if (header_length == 0)
        native_accept(s->srv, s, s->own.w, data, length, param);
    return UCS_OK;
}

int rdma_native_listen(rworker_t *rw, rprog_t *shared_of, rsession_t *own)
{
    ucp_am_handler_param_t p = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                      UCP_AM_HANDLER_PARAM_FIELD_ARG,
        .id = RDMA_AM_NATIVE_REQ,
        .cb = own ? native_recv_own : native_recv_shared,
        .arg = own ? (void *)own : (void *)shared_of,
    };
    ucs_status_t st = ucp_worker_set_am_recv_handler(rw->w, &p);
    if (st != UCS_OK) {
        log_warn("rdma: native handler: %s", ucs_status_string(st));
        return -1;
    }
    return 0;
}

/* ==== executor threads ====================================================== */

/* Runs r (ADMITTED) and answers it; r ends RELEASED (its slot is the
 * caller's to give back). parsed: r->m already holds its parsed message,
 * else it is parsed here. */
static void native_run(struct rdma_server *srv, rdma_native_req_t *r, int parsed)
{
    rsession_t *s = r->s;
    const char *why = NULL;
    if (!parsed && slot_parse(r, &why) < 0) {
        rdma_native_head_t h;
        rdma_native_parse_head(r->msg, r->len, &h);
        char msg[160];
        snprintf(msg, sizeof(msg), "Malformed native request: %s.", why);
        rdma_native_reply_error(srv, s, &r->state, &h, 400, RDMA_ERR_BAD_MESSAGE, "InvalidRequest",
                                msg);
        atomic_fetch_add(&srv->native_bad, 1);
        rdma_session_put(s);
        return;
    }
    if (!atomic_load(&s->dead)) {
        r->state = NREQ_RUNNING;
        /* Counted as running before the handler is read, so a
         * rdma_server_set_native(NULL) that saw no one running is sure no
         * one will call the old handler (both are sequentially consistent). */
        atomic_fetch_add(&srv->native_running, 1);
        rdma_native_fn fn = atomic_load(&srv->native_fn);
        void *ctx = atomic_load(&srv->native_ctx);
        if (fn)
            fn(ctx, r);
        atomic_fetch_sub(&srv->native_running, 1);
        if (!fn) {
            rdma_native_reply_error(srv, s, &r->state, &r->m.head, 503, 0, "ServiceUnavailable",
                                    "The server is not serving native requests (starting or "
                                    "stopping).");
        } else if (r->state == NREQ_RUNNING) {
            rdma_native_reply_error(srv, s, &r->state, &r->m.head, 500, RDMA_ERR_INTERNAL,
                                    "InternalError", "The request was not answered.");
        }
    }
    rdma_native_msg_free(&r->m);
    rdma_native_req_release(r);
    rdma_session_put(s);
}

/* The largest reply body m may get inline: what it asked for, within the
 * protocol's limit. */
static uint64_t msg_inline_max(const rdma_native_msg_t *m)
{
    return m->reply_inline_max < RDMA_NATIVE_MAX_INLINE ? m->reply_inline_max
                                                        : RDMA_NATIVE_MAX_INLINE;
}

/* Whether a request admitted on the progress thread (m, parsed) stays
 * there.
 *
 * A PUT stays when its body is inline and within local_put_max: one small
 * file write. A larger one, or one whose body comes by RDMA-READ, goes to an
 * executor.
 *
 * A read goes to an executor when it would move its reply by RDMA into an
 * out span the client's own progress must serve (a network session: TCP
 * emulates RMA with the client's help): there a client that stopped serving
 * its RDMA stalls one thread of its user's share instead of every session
 * of the progress thread. A local session's RMA (shared memory, CMA) needs
 * nothing of the client's. Nor does a read whose out span is no longer than
 * the inline limit it asked for: any body that fits the span goes inline
 * (rdma_native_reply), a larger one is refused without an RMA, and an
 * error's body is always inline; so a small GET into a registered buffer
 * stays on the progress thread, with no hand-off to an executor. */
static int stays_local(const struct rdma_server *srv, const rdma_native_req_t *j,
                       const rdma_native_msg_t *m)
{
    if (m->head.opcode == RDMA_OP_PUT_OBJECT)
        return m->body_kind != RDMA_BODY_REGION && m->body_len <= srv->cfg.local_put_max;
    return j->s->own_worker || !(m->has_out && m->out.len > msg_inline_max(m));
}

int rdma_native_run_local(rprog_t *p)
{
    int n = 0;
    while (p->local_head) {
        rdma_native_req_t *j = p->local_head;
        p->local_head = j->next;
        if (!p->local_head)
            p->local_tail = &p->local_head;
        n++;
        const char *why;
        if (slot_parse(j, &why) < 0) {
            native_run(p->srv, j, 0); /* answers BAD_MESSAGE right here */
        } else if (stays_local(p->srv, j, &j->m)) {
            native_run(p->srv, j, 1);
        } else {
            rdma_native_msg_free(&j->m);
            native_enqueue(p->srv, j);
            continue;
        }
        slot_give(j);
    }
    return n;
}

/* Takes the first queued job whose user runs fewer than its share of the
 * executor threads (counting it as running), or NULL. Under native_mu. */
static rdma_native_req_t *native_take_locked(struct rdma_server *srv)
{
    rdma_native_req_t *prev = NULL;
    for (rdma_native_req_t *j = srv->nq_head; j; prev = j, j = j->next) {
        if (j->s->user->running >=
            rdma_share_cap(srv, srv->user_running_max, srv->lone_running_max))
            continue;
        if (prev)
            prev->next = j->next;
        else
            srv->nq_head = j->next;
        if (srv->nq_tail == &j->next)
            srv->nq_tail = prev ? &prev->next : &srv->nq_head;
        j->s->user->running++;
        return j;
    }
    return NULL;
}

/* Polls the queue for a job this thread may take instead of sleeping, the
 * mutex released and the core yielded between looks, as the progress
 * threads poll their workers: until RDMA_BUSY_POLL_NS after the thread's
 * last job (done_ns, 0: none yet) or until the scheduler takes the core
 * from it (a preemption: a poller that waits for its turn costs more than a
 * wake-up). In both rdma.poll modes: busy gives cores to the progress
 * threads (one each, rdma.workers), and an executor spinning beside them
 * would take one more than the operator sized. One executor polls at a
 * time, the others sleep, so a request that follows another finds a thread
 * awake and pays no wake-up. The job (counted as running), or NULL when the
 * window ended or the server is stopping. Under native_mu. */
static rdma_native_req_t *native_poll_queue(struct rdma_server *srv, uint64_t done_ns)
{
    if (srv->native_polling || done_ns == 0 || clock_mono_ns() - done_ns >= RDMA_BUSY_POLL_NS)
        return NULL;
    srv->native_polling++;
    long preemptions = rdma_thread_preemptions();
    rdma_native_req_t *j = NULL;
    for (unsigned round = 1; !srv->native_stop && !(j = native_take_locked(srv)); round++) {
        /* A look at the clock and the preemptions every 8 rounds. */
        if ((round & 7) == 0 &&
            (rdma_thread_preemptions() != preemptions ||
             clock_mono_ns() - done_ns >= RDMA_BUSY_POLL_NS))
            break;
        pthread_mutex_unlock(&srv->native_mu);
        sched_yield();
        pthread_mutex_lock(&srv->native_mu);
    }
    srv->native_polling--;
    return j;
}

static void *native_main(void *arg)
{
    struct rdma_server *srv = arg;
    uint64_t done_ns = 0; /* when this thread last ran a job */
    pthread_setname_np(pthread_self(), "s3r-native");
    pthread_mutex_lock(&srv->native_mu);
    for (;;) {
        rdma_native_req_t *j = native_take_locked(srv);
        if (!j)
            j = native_poll_queue(srv, done_ns);
        if (!j) {
            if (srv->native_stop && !srv->nq_head)
                break; /* stopping, queue drained */
            pthread_cond_wait(&srv->native_cv, &srv->native_mu);
            continue;
        }
        pthread_mutex_unlock(&srv->native_mu);
        /* native_run drops the job's reference; this one keeps s (and its
         * user) for the count below. */
        rsession_t *s = j->s;
        rdma_session_get(s);
        native_run(srv, j, 0);
        slot_give(j);
        done_ns = clock_mono_ns();
        pthread_mutex_lock(&srv->native_mu);
        s->user->running--;
        if (srv->nq_head)
            pthread_cond_broadcast(&srv->native_cv); /* a job the share held back may go */
        pthread_mutex_unlock(&srv->native_mu);
        rdma_session_put(s);
        pthread_mutex_lock(&srv->native_mu);
    }
    pthread_mutex_unlock(&srv->native_mu);
    return NULL;
}

int rdma_native_start(struct rdma_server *srv)
{
    pthread_mutex_init(&srv->native_mu, NULL);
    pthread_cond_init(&srv->native_cv, NULL);
    pthread_mutex_init(&srv->send_mu, NULL);
    srv->nq_tail = &srv->nq_head;
    srv->native_th = calloc(srv->cfg.native_threads, sizeof(*srv->native_th));
    if (!srv->native_th)
        return -1;
    for (unsigned i = 0; i < srv->cfg.native_threads; i++) {
        if (pthread_create(&srv->native_th[i], NULL, native_main, srv) != 0)
            return -1;
        srv->n_native_th++;
    }
    return 0;
}

void rdma_native_stop(struct rdma_server *srv)
{
    pthread_mutex_lock(&srv->native_mu);
    srv->native_stop = 1;
    pthread_cond_broadcast(&srv->native_cv);
    pthread_mutex_unlock(&srv->native_mu);
    for (unsigned i = 0; i < srv->n_native_th; i++)
        pthread_join(srv->native_th[i], NULL);
    /* Held replies are sent by whoever settles what they wait for (a
     * flush another thread runs): they go while the progress threads can
     * still send them. */
    while (atomic_load(&srv->native_held) > 0) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    free(srv->native_th);
    srv->native_th = NULL;
    srv->n_native_th = 0;
}

/* ==== the handler's calls (rdma_server.h) ===================================== */

void rdma_server_native_counts(rdma_server_t *srv, unsigned long *dropped_p,
                               unsigned long *malformed_p)
{
    *dropped_p = atomic_load(&srv->native_dropped);
    *malformed_p = atomic_load(&srv->native_bad);
}

void rdma_server_set_native(rdma_server_t *srv, rdma_native_fn fn, void *ctx)
{
    if (fn) {
        /* ctx before fn: a request that sees fn sees its ctx. */
        atomic_store(&srv->native_ctx, ctx);
        atomic_store(&srv->native_fn, fn);
        return;
    }
    /* ctx stays: a request that read the old fn just before reads its ctx. */
    atomic_store(&srv->native_fn, NULL);
    while (atomic_load(&srv->native_running) > 0) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

const rdma_native_msg_t *rdma_native_request(const rdma_native_req_t *r)
{
    return &r->m;
}

const char *rdma_native_access_key(const rdma_native_req_t *r)
{
    return r->s->access_key;
}

const char *rdma_native_peer(const rdma_native_req_t *r)
{
    return r->s->peer;
}

rdma_status_t rdma_native_body(rdma_native_req_t *r, rdma_sink_fn sink, void *ctx)
{
    const rdma_native_msg_t *m = &r->m;
    if (m->body_kind == RDMA_BODY_INLINE)
        return sink(ctx, m->body, (size_t)m->body_len) == 0 ? RDMA_OK : RDMA_CALLBACK;
    if (m->body_kind != RDMA_BODY_REGION)
        return RDMA_OK;
    /* The span is checked even when empty: a reference outside the
     * session's regions is an error whatever its length. */
    rdma_xfer_t *x;
    rdma_status_t rc =
        rdma_xfer_bind(r->srv, r->s, m->body_ref.region_id, m->body_ref.addr, m->body_ref.len, &x);
    if (rc != RDMA_OK)
        return rc;
    rc = rdma_xfer_pull(x, m->body_len, sink, ctx);
    rdma_xfer_close(x);
    return rc;
}

uint64_t rdma_native_inline_max(const rdma_native_req_t *r)
{
    return msg_inline_max(&r->m);
}

uint64_t rdma_native_out_len(const rdma_native_req_t *r)
{
    return r->m.has_out ? r->m.out.len : 0;
}
