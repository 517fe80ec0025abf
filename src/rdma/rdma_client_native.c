/* Native calls on a client RDMA session (see rdma_client.h): the table of
 * calls in flight by request id, submitting a request, the reply handler
 * that finishes its call, and how a caller waits for it (or for any of
 * several, on one or more sessions) -- busy-polling
 * the worker for as long as a call of its kind lately took (a learned
 * estimate per opcode and size step), then sleeping. */
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

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
/* Or'ed into a call's state while its waiter sleeps on the state word (a
 * futex): whoever changes the state then wakes it (call_wake). */
#define CALL_SLEEPER 0x100

/* Wakes the thread sleeping on call's state word, if any (the word may
 * belong to a call already freed: a futex wake reads no memory). */
static void call_wake(_Atomic int *state)
{
    syscall(SYS_futex, (int *)state, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Moves call to state, keeping the sleeper mark unless state is DONE; wakes
 * its sleeper when it becomes DONE. */
static void call_set_state(rdma_native_call_t *c, int state)
{
    if (state == CALL_DONE) {
        if (atomic_exchange_explicit(&c->state, CALL_DONE, memory_order_acq_rel) & CALL_SLEEPER)
            call_wake(&c->state);
        return;
    }
    int old = atomic_load(&c->state);
    while (!atomic_compare_exchange_weak(&c->state, &old, state | (old & CALL_SLEEPER))) {
    }
}

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
            call_set_state(c, CALL_RUNNING);
            return c;
        }
    }
    return NULL;
}

static void call_finish(rdma_native_call_t *c, const rdma_native_reply_t *reply)
{
    c->done(c, reply);
    call_set_state(c, CALL_DONE);
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
                call_set_state(c, CALL_RUNNING);
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
        rdma_wire_free(&w);
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
            call_set_state(call, CALL_DONE);
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

/* The distinct sessions a wait keeps to itself (counted in their waiters,
 * progressed and slept on); calls on further sessions are progressed by
 * those sessions' own progress threads and seen at the next look. */
#define WAIT_SESSIONS 16

/* What one wait (rdma_native_wait, rdma_native_wait_any) watches: calls[i]
 * on sess[i] (NULL calls skipped), and the distinct sessions among them. */
typedef struct waitset {
    rdma_session_t *const *sess;
    rdma_native_call_t *const *calls;
    size_t n;
    rdma_session_t *uniq[WAIT_SESSIONS];
    size_t n_uniq;
    int busy;    /* one of the sessions never sleeps (S3R_RDMA_POLL=busy) */
    int driving; /* this thread holds uniq[0]->driven (waitset_drive) */
} waitset_t;

/* Fills ws and counts this thread among its sessions' waiters (the
 * progress threads stand aside until waitset_end). */
static void waitset_begin(waitset_t *ws, rdma_session_t *const *sess,
                          rdma_native_call_t *const *calls, size_t n)
{
    *ws = (waitset_t){.sess = sess, .calls = calls, .n = n};
    for (size_t i = 0; i < n; i++) {
        size_t u = 0;
        if (!calls[i])
            continue;
        while (u < ws->n_uniq && ws->uniq[u] != sess[i])
            u++;
        if (u < ws->n_uniq || ws->n_uniq == WAIT_SESSIONS)
            continue;
        ws->uniq[ws->n_uniq++] = sess[i];
        ws->busy |= sess[i]->busy_wait;
        atomic_fetch_add(&sess[i]->waiters, 1);
    }
}

/* Whether this thread drives ws's worker: the only thread of the session
 * that progresses, arms and sleeps on it, taking the role when it is free.
 * A wait on several sessions progresses them all, without the role. */
static int waitset_drive(waitset_t *ws)
{
    if (ws->n_uniq != 1 || ws->driving)
        return 1;
    _Atomic int *driven = &ws->uniq[0]->driven;
    ws->driving = !atomic_load(driven) && !atomic_exchange(driven, 1);
    return ws->driving;
}

/* Gives up the driver's role and wakes a waiter sleeping on a call of the
 * session's table to take it (one waiting for an answer being delivered is
 * woken by its answer). */
static void waitset_undrive(waitset_t *ws)
{
    if (!ws->driving)
        return;
    rdma_session_t *s = ws->uniq[0];
    ws->driving = 0;
    atomic_store(&s->driven, 0);
    if (atomic_load(&s->waiters) <= 1)
        return;
    pthread_mutex_lock(&s->calls_mu);
    for (size_t b = 0; b < sizeof(s->calls) / sizeof(s->calls[0]); b++) {
        for (rdma_native_call_t *c = s->calls[b]; c; c = c->next) {
            int st = atomic_load(&c->state);
            if ((st & CALL_SLEEPER) &&
                atomic_compare_exchange_strong(&c->state, &st, st & ~CALL_SLEEPER)) {
                call_wake(&c->state);
                pthread_mutex_unlock(&s->calls_mu);
                return;
            }
        }
    }
    pthread_mutex_unlock(&s->calls_mu);
}

/* A waiter that does not drive its session's worker: sleeps on its first
 * unanswered call's state until that call is answered, the driver hands
 * over its role, or a millisecond passes (another of its calls answered,
 * or the role freed by a driver that saw no sleeper); with busy, yields
 * the core instead. */
static void waitset_stand_by(const waitset_t *ws)
{
    rdma_native_call_t *c = NULL;
    for (size_t i = 0; i < ws->n && !c; i++)
        c = ws->calls[i] && !rdma_native_finished(ws->calls[i]) ? ws->calls[i] : NULL;
    if (!c)
        return;
    if (ws->busy) {
        sched_yield();
        return;
    }
    int st = atomic_load(&c->state);
    if ((st & ~CALL_SLEEPER) == CALL_DONE)
        return;
    if (!(st & CALL_SLEEPER) && !atomic_compare_exchange_strong(&c->state, &st, st | CALL_SLEEPER))
        return;
    st |= CALL_SLEEPER;
    /* The driver leaves after it frees the role and looks for a sleeper,
     * this thread sleeps after it marks its call and looks at the role:
     * one of the two sees the other. */
    if (!atomic_load(&ws->uniq[0]->driven))
        return;
    struct timespec ms = {.tv_nsec = 1000000};
    syscall(SYS_futex, (int *)&c->state, FUTEX_WAIT_PRIVATE, st, &ms, NULL, 0);
}

static void waitset_end(waitset_t *ws)
{
    waitset_undrive(ws);
    for (size_t u = 0; u < ws->n_uniq; u++)
        atomic_fetch_sub(&ws->uniq[u]->waiters, 1);
}

/* The first call of ws that is done, or that can have no answer here (its
 * session inherited across fork: the caller settles it as lost); -1 if
 * none. */
static long waitset_ready(const waitset_t *ws)
{
    for (size_t i = 0; i < ws->n; i++) {
        if (ws->calls[i] &&
            (rdma_native_finished(ws->calls[i]) || rdma_client_inherited(ws->sess[i])))
            return (long)i;
    }
    return -1;
}

/* When the first waiter of ws stops busy-polling: when its earliest call
 * is due by the learned estimates (wait_spin_ns); never with busy. */
static uint64_t waitset_spin_end(const waitset_t *ws)
{
    uint64_t end = UINT64_MAX;
    for (size_t i = 0; i < ws->n && !ws->busy; i++) {
        if (!ws->calls[i])
            continue;
        uint64_t e = ws->calls[i]->sent_ns + wait_spin_ns(ws->sess[i], ws->calls[i]);
        end = e < end ? e : end;
    }
    return end;
}

/* Finishes (as lost) the first call of ws whose session died; its index,
 * or -1. A server gone without an endpoint error (shared memory reports
 * none) shows on the lifeline, looked at when check_alive. */
static long waitset_reap_dead(const waitset_t *ws, int check_alive)
{
    for (size_t u = 0; u < ws->n_uniq && check_alive; u++)
        rdma_session_alive(ws->uniq[u]);
    for (size_t i = 0; i < ws->n; i++) {
        rdma_session_t *s = ws->sess[i];
        if (!ws->calls[i] || !atomic_load(&s->dead))
            continue;
        pthread_mutex_lock(&s->calls_mu);
        rdma_native_call_t *c = call_take_locked(s, ws->calls[i]->id);
        pthread_mutex_unlock(&s->calls_mu);
        if (c) {
            call_finish(c, NULL);
            return (long)i;
        }
        /* A reply is being delivered: it finishes at once. */
    }
    return -1;
}

/* Sleeps until one of ws's sessions has an event, at most a millisecond
 * (another thread progressing a worker meanwhile never strands this one);
 * returns at once if a worker has events pending or a call finished. */
static void waitset_sleep(const waitset_t *ws)
{
    struct pollfd pfd[WAIT_SESSIONS];
    for (size_t u = 0; u < ws->n_uniq; u++) {
        if (ucp_worker_arm(ws->uniq[u]->worker) == UCS_ERR_BUSY)
            return;
        pfd[u] = (struct pollfd){.fd = ws->uniq[u]->efd, .events = POLLIN};
    }
    if (waitset_ready(ws) < 0)
        poll(pfd, ws->n_uniq, 1);
}

/* How often a waiter looks at its sessions' lifelines (after the first
 * such interval): a server gone without an endpoint error (shared memory
 * reports none) shows there. */
#define WAIT_ALIVE_MS 100

/* Whether a waiter is done spinning: its spin ended or the scheduler took
 * its core since the last look (*preemptions: the count then, -1 at
 * first). */
static int waitset_past_spin(uint64_t spin_end, long *preemptions)
{
    long pre = rdma_thread_preemptions();
    int past = (*preemptions >= 0 && pre != *preemptions) || clock_mono_ns() >= spin_end;
    *preemptions = pre;
    return past;
}

/* Waits for any call of ws, progressing its sessions on this thread:
 * busy-polling until waitset_spin_end, yielding the core between polls
 * after the first few (the server may share it), or until the scheduler
 * takes the core from this thread (an oversubscribed host: a preempted
 * spinner waits for its turn, a sleeper is run as soon as it is woken);
 * from then on it sleeps on the workers' event fds whenever a round of
 * progress finds nothing, and spins no more: a write the server takes
 * milliseconds to commit must not cost the client a core, and on a busy
 * host a thread that yields after each wake-up stays runnable and takes
 * turns from the server's own threads (docs/benchmarks.md, 2026-11-26
 * 14:50). The index of a call that is done (waitset_ready), or -1 once
 * timeout_ms passed (no call withdrawn). Only the session's driver
 * (waitset_drive) touches the worker; the other waiters stand by. */
static long waitset_wait(waitset_t *ws, int timeout_ms)
{
    uint64_t start = clock_mono_ms(), deadline = start + (uint64_t)timeout_ms;
    uint64_t next_alive = start + WAIT_ALIVE_MS;
    uint64_t spin_end = waitset_spin_end(ws);
    unsigned idle = 0;
    int sleepy = 0;        /* past the spin: sleep whenever a round finds nothing */
    long preemptions = -1; /* rdma_thread_preemptions at the last look; -1: none yet */
    unsigned looked = 0;   /* the round (i) of the last look */
    for (unsigned i = 0;; i++) {
        long ready = waitset_ready(ws);
        if (ready >= 0)
            return ready;
        if (!waitset_drive(ws)) {
            /* Another thread drives the worker: poll the calls' states
             * (never the worker) for as long as this thread would spin, so
             * that it takes the role at once when the driver leaves, then
             * sleep until answered or handed the role. */
            long lost = waitset_reap_dead(ws, 0);
            if (lost >= 0)
                return lost;
            if (clock_mono_ms() >= deadline)
                return -1;
            int landing = 0;
            for (size_t c = 0; c < ws->n; c++)
                landing |= ws->calls[c] && call_more(ws->calls[c]);
            if (!sleepy && !ws->busy && i - looked >= 64) {
                looked = i;
                sleepy = waitset_past_spin(spin_end, &preemptions);
            }
            if (sleepy && !landing)
                waitset_stand_by(ws);
            else
                sched_yield();
            continue;
        }
        int progressed = 0;
        for (size_t u = 0; u < ws->n_uniq; u++)
            progressed |= ucp_worker_progress(ws->uniq[u]->worker) != 0;
        if (progressed) {
            idle = 0;
            continue;
        }
        /* A body is landing (progress messages): the next piece comes
         * within microseconds, so poll on rather than sleep between them. */
        int landing = 0;
        for (size_t c = 0; c < ws->n; c++)
            landing |= ws->calls[c] && call_more(ws->calls[c]);
        if (landing && !ws->busy) {
            spin_end = clock_mono_ns() + WAIT_SPIN_MIN_NS;
            sleepy = 0;
            idle = 0;
            continue;
        }
        if (sleepy || (i & 1023) == 0) {
            uint64_t now = clock_mono_ms();
            int look_alive = now >= next_alive;
            if (look_alive)
                next_alive = now + WAIT_ALIVE_MS;
            long lost = waitset_reap_dead(ws, look_alive);
            if (lost >= 0)
                return lost;
            if (now >= deadline)
                return -1;
        }
        if (!sleepy && !ws->busy && i - looked >= 64) {
            looked = i;
            sleepy = waitset_past_spin(spin_end, &preemptions);
        }
        if (sleepy)
            waitset_sleep(ws);
        else if (++idle > 16)
            sched_yield(); /* at once when no other thread wants the core */
    }
}

int rdma_native_wait(rdma_session_t *s, rdma_native_call_t *call, int timeout_ms)
{
    /* A call already answered when its wait begins (an asynchronous one
     * waited for late) says nothing of how long such calls take. */
    int pending = !rdma_native_finished(call);
    waitset_t ws;
    waitset_begin(&ws, &s, &call, 1);
    int rc = 0;
    if (rdma_client_inherited(s)) {
        rc = -1; /* its answer goes to the parent */
    } else if (waitset_wait(&ws, timeout_ms) < 0) {
        pthread_mutex_lock(&s->calls_mu);
        rdma_native_call_t *c = call_take_locked(s, call->id);
        pthread_mutex_unlock(&s->calls_mu);
        if (c) {
            call_set_state(c, CALL_DONE); /* withdrawn: done is never called */
            rc = -1;
        } else {
            /* A reply is being delivered: it finishes at once. */
            while (!rdma_native_finished(call))
                sched_yield();
        }
    }
    waitset_end(&ws);
    if (rc == 0 && pending)
        wait_learn(s, call);
    return rc;
}

long rdma_native_wait_any(rdma_session_t *const *sess, rdma_native_call_t *const *calls, size_t n,
                          int timeout_ms)
{
    waitset_t ws;
    waitset_begin(&ws, sess, calls, n);
    if (ws.n_uniq == 0) {
        waitset_end(&ws);
        return -2;
    }
    long ready = waitset_ready(&ws);
    if (ready < 0) {
        ready = waitset_wait(&ws, timeout_ms);
        /* It was waited for from before its answer: it says how long its kind takes. */
        if (ready >= 0 && rdma_native_finished(calls[ready]) && !rdma_client_inherited(sess[ready]))
            wait_learn(sess[ready], calls[ready]);
    }
    waitset_end(&ws);
    return ready;
}

/* Describes the lanes UCX chose for the endpoint (UCX 1.13 has no query for
 * its transports, so from the endpoint's printed description): writes the
 * distinct "transport/device" names, comma-separated, into s->lanes and
 * sets s->tcp_only when every lane is TCP. */