/* Native calls on a client RDMA session (see rdma_client.h): the table of
 * calls in flight by request id, submitting a request, the reply handler
 * that finishes its call, and how a caller waits for it -- busy-polling
 * the worker for as long as a call of its kind lately took (a learned
 * estimate per opcode and size step), then sleeping. */
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucp/api/ucp.h>

#include "rdma/rdma_client_internal.h"
#include "rdma/rdma_native_wire.h"
#include "common/clock.h"
#include "rdma/rdma_net.h"
#include "rdma/rdma_ucx.h"

/* A waiter busy-polls at least this long (a reply over shared memory from
 * an awake server takes microseconds) ... */
#define WAIT_SPIN_MIN_NS (50 * 1000)
/* ... and at most this long: a call that normally takes longer (a PUT the
 * server commits with an fsync) sleeps after WAIT_SPIN_MIN_NS instead, so
 * it does not cost the client a core (on a machine with few cores the
 * server needs it). Long enough to cover a server progress thread's
 * wake-up on a virtual machine (~100-300 us here). */
#define WAIT_SPIN_MAX_NS (500 * 1000)

/* The estimate class of request m: opcode x size step. */
static unsigned wait_class_of(const rdma_native_msg_t *m)
{
    uint64_t bytes = m->body_len + (m->has_out ? m->out.len : 0);
    unsigned step = 0;
    for (uint64_t lim = 4096; bytes > lim && step < WAIT_SIZE_STEPS - 1; lim *= 4)
        step++;
    unsigned op = m->head.opcode <= RDMA_OP_MAX ? m->head.opcode : 0;
    return op * WAIT_SIZE_STEPS + step;
}

/* How long a waiter for call busy-polls (from its submission) before it
 * sleeps: twice what calls of its class have lately taken, within
 * [WAIT_SPIN_MIN_NS, WAIT_SPIN_MAX_NS]; a class that normally takes
 * longer than the maximum gets the minimum. */
static uint64_t wait_spin_ns(rdma_session_t *s, const rdma_native_call_t *call)
{
    uint64_t est = atomic_load_explicit(&s->wait_est_ns[call->wait_class], memory_order_relaxed);
    if (est > WAIT_SPIN_MAX_NS)
        return WAIT_SPIN_MIN_NS;
    uint64_t spin = 2 * est;
    return spin < WAIT_SPIN_MIN_NS   ? WAIT_SPIN_MIN_NS
           : spin > WAIT_SPIN_MAX_NS ? WAIT_SPIN_MAX_NS
                                     : spin;
}

/* Folds how long call took into its class's estimate: a quarter of the way
 * up to a longer time, a sixteenth of the way down to a shorter one, so
 * the estimate sits near the slow end of recent calls (a sparse caller's
 * requests are fast when the server is awake and slow when it must wake
 * first; the spin must cover the slow ones to save the client's own
 * wake-up). */
static void wait_learn(rdma_session_t *s, const rdma_native_call_t *call)
{
    uint64_t took = clock_mono_ns() - call->sent_ns;
    if (took > UINT32_MAX)
        took = UINT32_MAX;
    _Atomic uint32_t *e = &s->wait_est_ns[call->wait_class];
    uint64_t est = atomic_load_explicit(e, memory_order_relaxed);
    est = took > est ? est + (took - est) / 4 : est - (est - took) / 16;
    atomic_store_explicit(e, (uint32_t)est, memory_order_relaxed);
}

enum { CALL_PENDING, CALL_RUNNING, CALL_DONE };

static rdma_native_call_t **call_bucket(rdma_session_t *s, uint64_t id)
{
    return &s->calls[id % (sizeof(s->calls) / sizeof(s->calls[0]))];
}

/* Takes the call with this id out of the table (calls_mu held), or NULL. */
static rdma_native_call_t *call_take_locked(rdma_session_t *s, uint64_t id)
{
    for (rdma_native_call_t **pp = call_bucket(s, id); *pp; pp = &(*pp)->next) {
        if ((*pp)->id == id) {
            rdma_native_call_t *c = *pp;
            *pp = c->next;
            atomic_store(&c->state, CALL_RUNNING);
            return c;
        }
    }
    return NULL;
}

static void call_finish(rdma_native_call_t *c, const rdma_native_reply_t *reply)
{
    c->done(c, reply);
    atomic_store_explicit(&c->state, CALL_DONE, memory_order_release);
}

/* The server's reply (an active message on our worker). A reply naming no
 * call in flight (withdrawn after a timeout) is dropped. */
ucs_status_t rdma_native_reply_recv(void *arg, const void *header, size_t header_length, void *data,
                                    size_t length, const ucp_am_recv_param_t *param)
{
    (void)header;
    rdma_session_t *s = arg;
    rdma_native_reply_t *r = malloc(sizeof(*r));
    if (!r)
        return UCS_OK;
    if (header_length == 0 && !(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) &&
        rdma_native_parse_reply(data, length, r) == 0) {
        pthread_mutex_lock(&s->calls_mu);
        rdma_native_call_t *c = call_take_locked(s, r->request_id);
        pthread_mutex_unlock(&s->calls_mu);
        if (c && (c->flags & RDMA_NATIVE_FLAG_PROGRESS) && r->error == RDMA_ERR_BAD_MESSAGE)
            atomic_store(&s->progress_refused, 1);
        if (c)
            call_finish(c, r);
    }
    free(r);
    return UCS_OK;
}

/* A progress message naming a call in flight that asked for them, with a
 * count within its out span and above what it said before, is recorded
 * for the waiter (native_wait); any other is dropped. */
ucs_status_t rdma_native_progress_recv(void *arg, const void *header, size_t header_length,
                                       void *data, size_t length, const ucp_am_recv_param_t *param)
{
    (void)header;
    rdma_session_t *s = arg;
    uint64_t id, bytes;
    if (header_length != 0 || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) ||
        rdma_native_parse_progress(data, length, &id, &bytes) < 0)
        return UCS_OK;
    pthread_mutex_lock(&s->calls_mu);
    for (rdma_native_call_t *c = *call_bucket(s, id); c; c = c->next) {
        if (c->id == id && (c->flags & RDMA_NATIVE_FLAG_PROGRESS) && bytes <= c->out_len &&
            bytes > atomic_load(&c->landed))
            atomic_store(&c->landed, bytes);
    }
    pthread_mutex_unlock(&s->calls_mu);
    return UCS_OK;
}

int rdma_session_progress_ok(rdma_session_t *s)
{
    return !atomic_load(&s->progress_refused);
}

/* Tells call's caller (on the waiting thread) what more of its reply body
 * landed since it was last told; 1 if there was more. */
static int call_more(rdma_native_call_t *call)
{
    uint64_t landed = atomic_load(&call->landed);
    if (!call->more || landed <= call->told)
        return 0;
    call->told = landed;
    call->more(call, landed);
    return 1;
}

/* Fails every call in flight (the session is going away). */
void rdma_native_calls_fail_all(rdma_session_t *s)
{
    for (size_t b = 0; b < sizeof(s->calls) / sizeof(s->calls[0]); b++) {
        for (;;) {
            pthread_mutex_lock(&s->calls_mu);
            rdma_native_call_t *c = s->calls[b];
            if (c) {
                s->calls[b] = c->next;
                atomic_store(&c->state, CALL_RUNNING);
            }
            pthread_mutex_unlock(&s->calls_mu);
            if (!c)
                break;
            call_finish(c, NULL);
        }
    }
}

static void native_sent(void *request, ucs_status_t status, void *user_data)
{
    (void)status;
    free(user_data);
    ucp_request_free(request);
}

int rdma_native_submit(rdma_session_t *s, rdma_native_msg_t *m, rdma_native_call_t *call, char *err,
                       size_t err_len)
{
    if (atomic_load(&s->dead) || rdma_client_inherited(s)) {
        rdma_client_set_err(err, err_len, "the RDMA session is down");
        return -1;
    }
    memcpy(m->head.session_id, s->welcome.session_id, RDMA_SESSION_ID_LEN);
    pthread_mutex_lock(&s->calls_mu);
    m->head.request_id = ++s->next_call_id;
    pthread_mutex_unlock(&s->calls_mu);
    wire_out_t w = {0};
    if (rdma_native_encode_req(&w, m) < 0) {
        wire_free(&w);
        rdma_client_set_err(err, err_len, "the request exceeds a native protocol limit");
        return -1;
    }
    call->id = m->head.request_id;
    call->flags = m->head.flags;
    call->out_len = m->has_out ? m->out.len : 0;
    atomic_store(&call->landed, 0);
    call->told = 0;
    call->wait_class = wait_class_of(m);
    call->sent_ns = clock_mono_ns();
    atomic_store(&call->state, CALL_PENDING);
    pthread_mutex_lock(&s->calls_mu);
    rdma_native_call_t **b = call_bucket(s, call->id);
    call->next = *b;
    *b = call;
    pthread_mutex_unlock(&s->calls_mu);
    /* Eager only, as the server answers: a rendezvous would let the peer
     * read our memory around the message. */
    ucp_request_param_t p = {
        .op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS,
        .cb.send = native_sent,
        .user_data = w.data,
        .flags = UCP_AM_SEND_FLAG_EAGER,
    };
    ucs_status_ptr_t req = ucp_am_send_nbx(s->ep, RDMA_AM_NATIVE_REQ, NULL, 0, w.data, w.len, &p);
    if (req == NULL || UCS_PTR_IS_ERR(req))
        free(w.data);
    if (UCS_PTR_IS_ERR(req)) {
        pthread_mutex_lock(&s->calls_mu);
        rdma_native_call_t *c = call_take_locked(s, call->id);
        pthread_mutex_unlock(&s->calls_mu);
        if (c) {
            rdma_client_set_err(err, err_len, "sending the request: %s",
                                ucs_status_string(UCS_PTR_STATUS(req)));
            atomic_store(&call->state, CALL_DONE);
            return -1;
        }
        /* Answered already (cannot happen for a failed send, but the call
         * is the handler's now): let it finish. */
    }
    return 0;
}

int rdma_native_finished(rdma_native_call_t *call)
{
    return atomic_load_explicit(&call->state, memory_order_acquire) == CALL_DONE;
}

int rdma_native_progress(rdma_session_t *s)
{
    return rdma_client_inherited(s) ? 0 : (int)ucp_worker_progress(s->worker);
}

static int native_wait(rdma_session_t *s, rdma_native_call_t *call, int timeout_ms);

int rdma_native_wait(rdma_session_t *s, rdma_native_call_t *call, int timeout_ms)
{
    /* A call already answered when its wait begins (an asynchronous one
     * waited for late) says nothing of how long such calls take. */
    int pending = !rdma_native_finished(call);
    atomic_fetch_add(&s->waiters, 1);
    int rc = native_wait(s, call, timeout_ms);
    atomic_fetch_sub(&s->waiters, 1);
    if (rc == 0 && pending)
        wait_learn(s, call);
    return rc;
}

static int native_wait(rdma_session_t *s, rdma_native_call_t *call, int timeout_ms)
{
    uint64_t start = clock_mono_ms(), deadline = start + (uint64_t)timeout_ms;
    uint64_t spin_end = s->busy_wait ? UINT64_MAX : call->sent_ns + wait_spin_ns(s, call);
    unsigned idle = 0;
    long preemptions = -1; /* rdma_thread_preemptions at the last look; -1: none yet */
    unsigned looked = 0;   /* the round (i) of the last look */
    for (unsigned i = 0; !rdma_native_finished(call); i++) {
        if (ucp_worker_progress(s->worker)) {
            idle = 0;
            continue;
        }
        /* The body is landing (progress messages): the next piece comes
         * within microseconds, so poll on rather than sleep between them. */
        if (call_more(call) && !s->busy_wait) {
            spin_end = clock_mono_ns() + WAIT_SPIN_MIN_NS;
            idle = 0;
            continue;
        }
        if ((i & 1023) == 0) {
            uint64_t now = clock_mono_ms();
            /* A server gone without an endpoint error (shared memory
             * reports none) shows on the lifeline. */
            if (now - start > 100 && (i & 65535) == 0)
                rdma_session_alive(s);
            if (atomic_load(&s->dead) || now >= deadline) {
                pthread_mutex_lock(&s->calls_mu);
                rdma_native_call_t *c = call_take_locked(s, call->id);
                pthread_mutex_unlock(&s->calls_mu);
                if (c) {
                    if (now < deadline) {
                        call_finish(c, NULL); /* the session died */
                        return 0;
                    }
                    atomic_store(&c->state, CALL_DONE);
                    return -1;
                }
                /* A reply is being delivered: it finishes at once. */
            }
        }
        /* Busy-poll until spin_end (wait_spin_ns: as long as this kind of
         * call normally takes), yielding the core between polls after the
         * first few (the server may share it), or until the scheduler takes the core from this
         * thread (an oversubscribed host: a preempted spinner waits for its turn, a sleeper is run
         * as soon as it is woken); then sleep on the worker's event fd until something arrives: a
         * write the server takes milliseconds to commit must not cost the client a core. Woken at
         * least every millisecond, so another thread progressing the worker meanwhile never strands
         * this one. */
        ++idle;
        int look = i - looked >= 64 && !s->busy_wait;
        int preempted = 0;
        if (look) {
            looked = i;
            long pre = rdma_thread_preemptions();
            preempted = preemptions >= 0 && pre != preemptions;
            preemptions = pre;
        }
        if (look && (preempted || clock_mono_ns() >= spin_end)) {
            if (ucp_worker_arm(s->worker) == UCS_ERR_BUSY || rdma_native_finished(call))
                continue;
            struct pollfd pfd = {.fd = s->efd, .events = POLLIN};
            poll(&pfd, 1, 1);
            idle = 0;
        } else if (idle > 16) {
            sched_yield(); /* at once when no other thread wants the core */
        }
    }
    return 0;
}

/* Describes the lanes UCX chose for the endpoint (UCX 1.13 has no query for
 * its transports, so from the endpoint's printed description): writes the
 * distinct "transport/device" names, comma-separated, into s->lanes and
 * sets s->tcp_only when every lane is TCP. */