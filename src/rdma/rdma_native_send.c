/* The native protocol's replies, server side (rdma_native.c has the
 * protocol's overview): encoding an answer into a kept or new buffer,
 * sending it on the session's endpoint from the thread that owns its
 * worker (or handing it to that progress thread), the completions, and the
 * teardown of what a dead session left unsent. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ucp/api/ucp.h>

#include "common/log.h"
#include "common/s3r_limits.h"
#include "rdma/rdma_native_internal.h"
#include "rdma/rdma_native_wire.h"
#include "rdma/rdma_net.h"
#include "rdma/rdma_server_internal.h"
#include "rdma/rdma_ucx.h"

/* A reply UCX is still sending. What it holds of its session is given back
 * when it is freed, or by the session's teardown (rdma_native_sweep_sends),
 * whichever comes first; owner is dereferenced only while it holds
 * something, so a completion that arrives after the session is gone (an
 * abandoned endpoint close) never touches it. Fields under srv->send_mu. */
typedef struct nsend {
    struct nsend *prev, *next;
    struct rdma_server *srv;
    rsession_t *owner;
    uint8_t *data;
    size_t len, cap; /* cap: data's size */
    int slot;        /* holds a request's count: owner->native_inflight and srv->n_jobs */
    int refusal;     /* holds len bytes of owner->refusal_bytes */
    int posted;      /* ucp_am_send_nbx returned a request: the callback frees it */
    int done;        /* the callback ran before its sender saw the request: the sender frees it */
    struct nsend *handed_next; /* on owner->prog->handed, not sent yet (holds a reference) */
} nsend_t;

/* ==== sending replies ====================================================== */

/* The progress thread the calling thread is, or NULL. */
static __thread rprog_t *tls_prog;

/* Gives back what ns holds of its session. Under send_mu. */
static void nsend_uncharge_locked(nsend_t *ns)
{
    if (ns->slot) {
        atomic_fetch_sub(&ns->owner->native_inflight, 1);
        atomic_fetch_sub(&ns->owner->user->native, 1);
        atomic_fetch_sub(&ns->srv->n_jobs, 1);
        ns->slot = 0;
    }
    if (ns->refusal) {
        atomic_fetch_sub(&ns->owner->refusal_bytes, ns->len);
        ns->refusal = 0;
    }
}

/* Keeps ns, with its buffer when at most RDMA_NATIVE_SPARE_BUF bytes, for
 * the next reply (spare_take), or frees it when RDMA_NATIVE_SPARES are
 * kept already. Under send_mu. */
static void spare_keep_locked(struct rdma_server *srv, nsend_t *ns)
{
    if (srv->n_send_spares >= RDMA_NATIVE_SPARES) {
        free(ns->data);
        free(ns);
        return;
    }
    if (ns->cap > RDMA_NATIVE_SPARE_BUF) {
        free(ns->data);
        ns->data = NULL;
        ns->cap = 0;
    }
    ns->next = srv->send_spares;
    srv->send_spares = ns;
    srv->n_send_spares++;
}

/* A kept nsend for a reply about to be encoded into w (a fresh wire_out_t
 * {0}), which gets its buffer: a reply that fits is encoded and sent
 * without an allocation. NULL when none is kept. */
static nsend_t *spare_take(struct rdma_server *srv, wire_out_t *w)
{
    pthread_mutex_lock(&srv->send_mu);
    nsend_t *ns = srv->send_spares;
    if (ns) {
        srv->send_spares = ns->next;
        srv->n_send_spares--;
    }
    pthread_mutex_unlock(&srv->send_mu);
    if (ns) {
        w->data = ns->data;
        w->cap = ns->cap;
        ns->data = NULL;
        ns->cap = 0;
    }
    return ns;
}

/* Gives back a spare that carries no reply. */
static void spare_give(struct rdma_server *srv, nsend_t *ns)
{
    if (!ns)
        return;
    pthread_mutex_lock(&srv->send_mu);
    spare_keep_locked(srv, ns);
    pthread_mutex_unlock(&srv->send_mu);
}

static void nsend_free_locked(struct rdma_server *srv, nsend_t *ns)
{
    nsend_uncharge_locked(ns);
    if (ns->prev)
        ns->prev->next = ns->next;
    else
        srv->sends = ns->next;
    if (ns->next)
        ns->next->prev = ns->prev;
    srv->n_sending--;
    srv->sending_bytes -= ns->len;
    spare_keep_locked(srv, ns);
}

static void native_sent(void *request, ucs_status_t status, void *user_data)
{
    (void)status;
    nsend_t *ns = user_data;
    struct rdma_server *srv = ns->srv;
    pthread_mutex_lock(&srv->send_mu);
    if (ns->posted)
        nsend_free_locked(srv, ns);
    else
        ns->done = 1;
    pthread_mutex_unlock(&srv->send_mu);
    ucp_request_free(request);
}

/* Hands ns to the thread that sends it (ucp_am_send_nbx) and settles the
 * slot. answers: ns answers an admitted request, whose slot ns held until
 * now.
 *
 * The slot is released right before the send and taken back if UCX could
 * not finish it at once: a client that sends its next request the moment
 * it has this reply must not find the slot still taken, and when
 * ucp_am_send_nbx completes in place (the usual case: the message is
 * copied into the transport) the client may have it before the call
 * returns. A send UCX queues (the client is not draining its side) reached
 * no client yet, so the slot is held again until the completion, which
 * comes right after the bytes leave for the transport. Only where a send
 * completes when the peer acknowledges it (eager zero-copy on an RDMA NIC)
 * can a client see a reply a moment before its slot is free again; the
 * bound then briefly counts one request more than the client has. */
static void native_post(struct rdma_server *srv, nsend_t *ns, int answers)
{
    rsession_t *s = ns->owner;
    pthread_mutex_lock(&srv->send_mu);
    if (ns->slot) {
        atomic_fetch_sub(&s->native_inflight, 1);
        atomic_fetch_sub(&s->user->native, 1);
        atomic_fetch_sub(&srv->n_jobs, 1);
        ns->slot = 0;
    }
    pthread_mutex_unlock(&srv->send_mu);
    ucp_request_param_t p = {
        .op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS,
        .cb.send = native_sent,
        .user_data = ns,
        .flags = UCP_AM_SEND_FLAG_EAGER,
    };
    ucs_status_ptr_t req =
        ucp_am_send_nbx(s->ep, RDMA_AM_NATIVE_REPLY, NULL, 0, ns->data, ns->len, &p);
    if (UCS_PTR_IS_ERR(req))
        log_info("rdma: native reply: %s", ucs_status_string(UCS_PTR_STATUS(req)));
    pthread_mutex_lock(&srv->send_mu);
    if (req == NULL || UCS_PTR_IS_ERR(req) || ns->done) {
        nsend_free_locked(srv, ns);
    } else {
        ns->posted = 1;
        if (answers) {
            /* s is alive: the caller holds a reference on it. */
            ns->slot = 1;
            atomic_fetch_add(&s->native_inflight, 1);
            atomic_fetch_add(&s->user->native, 1);
            atomic_fetch_add(&srv->n_jobs, 1);
        }
    }
    pthread_mutex_unlock(&srv->send_mu);
}

/* Sends a finished reply (w->data is taken over) on s's endpoint: the
 * answer to the admitted request (or held reply) whose state is *answers,
 * whose count the reply takes over (-> REPLIED, or RELEASED when it cannot
 * be sent), or, answers NULL, a refusal of a request that was never
 * admitted. spare: the nsend whose buffer w has (spare_take), taken
 * over, or NULL. Eager only: a rendezvous would hand the client a key to
 * this process's memory.
 *
 * Who sends: the thread that progresses s's worker sends its own replies.
 * An executor hands its reply to that progress thread while the thread
 * polls (it sends it within its next round, with a reference on s that
 * keeps the session until then): were the executor to send, it would spin
 * on the worker's lock, which the polling thread takes on every round (and
 * keeps while the scheduler has taken its core). While the progress thread
 * may sleep, the executor sends the reply itself, without a wake-up to pay,
 * unless another executor is sending on that thread's workers already: it
 * then hands its reply over and wakes the thread. Executors sending side by
 * side spun on the worker's spin lock, each for its whole time slice when
 * the holder lost its core (41 % of the server's CPU with 32 executors,
 * docs/benchmarks.md, 2026-11-26 15:30).
 * A reply handed over holds r's slot until it is sent (native_post). */
static void native_send(struct rdma_server *srv, rsession_t *s, wire_out_t *w,
                        nreq_state_t *answers, nsend_t *spare)
{
    if (atomic_load(&s->dead)) {
        if (answers)
            rdma_native_count_release(srv, s, answers);
        rdma_wire_free(w);
        spare_give(srv, spare);
        return;
    }
    if (!answers &&
        atomic_fetch_add(&s->refusal_bytes, w->len) >= S3R_NATIVE_UNSENT_REFUSAL_BYTES) {
        /* The session does not read its replies: nothing more is queued
         * for it. */
        atomic_fetch_sub(&s->refusal_bytes, w->len);
        atomic_fetch_add(&srv->native_dropped, 1);
        rdma_wire_free(w);
        spare_give(srv, spare);
        return;
    }
    nsend_t *ns = spare;
    if (ns)
        *ns = (nsend_t){0};
    else
        ns = calloc(1, sizeof(*ns));
    if (!ns) {
        if (answers)
            rdma_native_count_release(srv, s, answers);
        else
            atomic_fetch_sub(&s->refusal_bytes, w->len);
        rdma_wire_free(w);
        return;
    }
    ns->srv = srv;
    ns->owner = s;
    ns->data = w->data;
    ns->len = w->len;
    ns->cap = w->cap;
    ns->refusal = !answers;
    w->data = NULL;
    rprog_t *p = s->prog;
    int hand = tls_prog != p && !atomic_load(&p->sleeping);
    int direct = 0; /* an executor sending itself: holds p->executor_sending */
    if (!hand && tls_prog != p) {
        hand = atomic_exchange(&p->executor_sending, 1);
        direct = !hand;
    }
    pthread_mutex_lock(&srv->send_mu);
    ns->next = srv->sends;
    if (srv->sends)
        srv->sends->prev = ns;
    srv->sends = ns;
    srv->n_sending++;
    srv->sending_bytes += ns->len;
    if (answers) {
        /* The request's count in the bounds passes to ns (native_post
         * gives it back). */
        ns->slot = 1;
        *answers = NREQ_REPLIED;
    }
    pthread_mutex_unlock(&srv->send_mu);
    if (!hand) {
        native_post(srv, ns, answers != NULL);
        if (direct)
            atomic_store(&p->executor_sending, 0);
        return;
    }
    rdma_session_get(s);
    pthread_mutex_lock(&p->mu);
    *p->handed_tail = ns;
    p->handed_tail = &ns->handed_next;
    pthread_mutex_unlock(&p->mu);
    /* The thread may have gone to sleep since: it looks at the list after
     * it says so (rdma_prog_main), so one of the two sees the other. */
    if (atomic_load(&p->sleeping)) {
        uint64_t one = 1;
        if (write(p->evfd, &one, sizeof(one)) < 0) {
            /* The counter cannot overflow in practice; the thread also polls. */
        }
    }
}

int rdma_native_send_handed(rprog_t *p, nsend_t *list)
{
    int n = 0;
    while (list) {
        nsend_t *ns = list;
        list = ns->handed_next;
        rsession_t *s = ns->owner;
        if (atomic_load(&s->dead)) {
            pthread_mutex_lock(&p->srv->send_mu);
            nsend_free_locked(p->srv, ns);
            pthread_mutex_unlock(&p->srv->send_mu);
        } else {
            native_post(p->srv, ns, ns->slot);
        }
        rdma_session_put(s);
        n++;
    }
    return n;
}

void rdma_native_sweep_sends(struct rdma_server *srv, const rsession_t *s, int can_complete)
{
    pthread_mutex_lock(&srv->send_mu);
    for (nsend_t *ns = srv->sends, *next; ns; ns = next) {
        next = ns->next;
        if (ns->owner != s)
            continue;
        if (can_complete) {
            /* Its memory stays for the completion; the session's share
             * goes with the session. */
            nsend_uncharge_locked(ns);
            ns->owner = NULL;
        } else {
            nsend_free_locked(srv, ns);
        }
    }
    pthread_mutex_unlock(&srv->send_mu);
}

/* An error reply for a request that never reached the handler (or whose
 * held reply failed): the S3 status and code, the protocol error, and the
 * S3 XML error body. answers: the state of the admitted request or held
 * reply it answers (its count passes to the reply), or NULL for a refusal
 * at admission. */
void rdma_native_reply_error(struct rdma_server *srv, rsession_t *s, nreq_state_t *answers,
                             const rdma_native_head_t *h, uint16_t status, uint16_t error,
                             const char *code, const char *msg)
{
    char xml[512];
    int n = snprintf(xml, sizeof(xml),
                     "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code>"
                     "<Message>%s</Message></Error>",
                     code, msg);
    wire_out_t w = {0};
    uint8_t *body;
    if (rdma_native_reply_begin(&w, h->opcode, h->request_id, status, error, "", NULL, 0,
                                RDMA_BODY_INLINE, (uint64_t)n, &body) == 0) {
        memcpy(body, xml, (size_t)n);
        native_send(srv, s, &w, answers, NULL);
    }
    if (answers)
        rdma_native_count_release(srv, s, answers); /* when the reply could not be encoded */
    rdma_wire_free(&w);
}

void rdma_native_thread_is(rprog_t *p)
{
    tls_prog = p;
}

int rdma_native_on_progress_thread(void)
{
    return tls_prog != NULL;
}

rprog_t *rdma_native_prog_here(void)
{
    return tls_prog;
}

void rdma_native_free(struct rdma_server *srv)
{
    pthread_mutex_lock(&srv->send_mu);
    while (srv->sends)
        nsend_free_locked(srv, srv->sends);
    while (srv->send_spares) {
        nsend_t *ns = srv->send_spares;
        srv->send_spares = ns->next;
        free(ns->data);
        free(ns);
    }
    srv->n_send_spares = 0;
    pthread_mutex_unlock(&srv->send_mu);
    pthread_mutex_destroy(&srv->native_mu);
    pthread_cond_destroy(&srv->native_cv);
    pthread_mutex_destroy(&srv->send_mu);
}

/* ==== the handler's reply (rdma_server.h) ================================== */

/* Tells r's client how much of its reply body is in its out span
 * (RDMA_NATIVE_FLAG_PROGRESS), best effort: sent only when UCX can send it
 * at once (a short eager message, nothing queued or held for it); one not
 * sent is covered by the next or by the reply. */
static void native_progress(void *pctx, uint64_t done)
{
    rdma_native_req_t *r = pctx;
    uint8_t msg[RDMA_NATIVE_PROGRESS_LEN];
    rdma_native_encode_progress(msg, r->m.head.opcode, r->m.head.request_id, done);
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL,
        .flags = UCP_AM_SEND_FLAG_EAGER,
    };
    ucs_status_ptr_t req =
        ucp_am_send_nbx(r->s->ep, RDMA_AM_NATIVE_PROGRESS, NULL, 0, msg, sizeof(msg), &p);
    if (req != NULL && !UCS_PTR_IS_ERR(req))
        ucp_request_free(req); /* never, with FORCE_IMM_CMPL: complete or refused */
}

/* Makes r's reply into w (a fresh wire_out_t, or one with a spare's
 * buffer): the body inline, or RDMA-written into the out region first.
 * Sends nothing. rdma_native_reply's statuses. */
static rdma_status_t reply_make(rdma_native_req_t *r, int status, const char *s3_request_id,
                                const char *hdrs, size_t hdrs_len, uint64_t body_len,
                                rdma_fill_fn fill, void *ctx, wire_out_t *w)
{
    const rdma_native_msg_t *m = &r->m;
    if (r->state != NREQ_RUNNING)
        return RDMA_DECLINE; /* answered already: one reply per request */
    /* An error's body (any status outside 2xx) goes inline whatever the
     * client asked, so an answer to a request whose reply could not be
     * sent always fits. */
    uint64_t inline_max =
        status >= 200 && status <= 299 ? rdma_native_inline_max(r) : RDMA_NATIVE_MAX_INLINE;
    uint8_t kind = body_len == 0            ? RDMA_BODY_NONE
                   : body_len <= inline_max ? RDMA_BODY_INLINE
                                            : RDMA_BODY_REGION;
    rdma_status_t rc = RDMA_OK;
    if (kind == RDMA_BODY_REGION) {
        if (!m->has_out || body_len > m->out.len)
            return RDMA_OUT_OF_BOUNDS;
        rdma_xfer_t *x;
        rc = rdma_xfer_bind(r->srv, r->s, m->out.region_id, m->out.addr, m->out.len, &x);
        if (rc != RDMA_OK)
            return rc;
        /* Progress messages only from the session's progress thread, which
         * owns its worker (an executor would fight for its lock). */
        int told = (m->head.flags & RDMA_NATIVE_FLAG_PROGRESS) && rdma_native_on_progress_thread();
        rc = rdma_xfer_push_progress(x, body_len, fill, ctx, told ? native_progress : NULL, r);
        rdma_xfer_close(x);
        if (rc != RDMA_OK)
            return rc;
    }
    uint8_t *body = NULL;
    if (rdma_native_reply_begin(w, m->head.opcode, m->head.request_id, (uint16_t)status, 0,
                                s3_request_id, hdrs, hdrs_len, kind, body_len, &body) < 0)
        return RDMA_DECLINE;
    if (kind == RDMA_BODY_INLINE && fill(ctx, body, (size_t)body_len, 0) != 0)
        return RDMA_CALLBACK;
    return RDMA_OK;
}

rdma_status_t rdma_native_reply(rdma_native_req_t *r, int status, const char *s3_request_id,
                                const char *hdrs, size_t hdrs_len, uint64_t body_len,
                                rdma_fill_fn fill, void *ctx)
{
    wire_out_t w = {0};
    nsend_t *spare = spare_take(r->srv, &w);
    rdma_status_t rc =
        reply_make(r, status, s3_request_id, hdrs, hdrs_len, body_len, fill, ctx, &w);
    if (rc == RDMA_OK)
        native_send(r->srv, r->s, &w, &r->state, spare); /* -> REPLIED, or RELEASED */
    else
        spare_give(r->srv, spare);
    rdma_wire_free(&w);
    return rc;
}

rdma_status_t rdma_native_reply_held(rdma_native_req_t *r, int status, const char *s3_request_id,
                                     const char *hdrs, size_t hdrs_len, uint64_t body_len,
                                     rdma_fill_fn fill, void *ctx, rdma_native_held_t **held_p)
{
    rdma_native_held_t *h = calloc(1, sizeof(*h));
    if (!h)
        return RDMA_BUSY;
    rdma_status_t rc =
        reply_make(r, status, s3_request_id, hdrs, hdrs_len, body_len, fill, ctx, &h->w);
    if (rc != RDMA_OK) {
        rdma_wire_free(&h->w);
        free(h);
        return rc;
    }
    h->srv = r->srv;
    h->s = r->s;
    h->head = r->m.head;
    /* The request's count in the bounds passes to h. */
    h->state = NREQ_ADMITTED;
    r->state = NREQ_REPLIED;
    rdma_session_get(h->s);
    atomic_fetch_add(&h->srv->native_held, 1);
    *held_p = h;
    return RDMA_OK;
}

/* Frees h once its reply went (or could not). */
static void held_free(rdma_native_held_t *h)
{
    struct rdma_server *srv = h->srv;
    rdma_native_count_release(srv, h->s, &h->state);
    rdma_wire_free(&h->w);
    rdma_session_put(h->s);
    free(h);
    atomic_fetch_sub(&srv->native_held, 1);
}

void rdma_native_held_send(rdma_native_held_t *h)
{
    native_send(h->srv, h->s, &h->w, &h->state, NULL);
    held_free(h);
}

void rdma_native_held_fail(rdma_native_held_t *h, const char *msg)
{
    rdma_native_reply_error(h->srv, h->s, &h->state, &h->head, 500, RDMA_ERR_INTERNAL,
                            "InternalError", msg);
    held_free(h);
}
