/* Private to src/rdma's native protocol: what rdma_native.c (admission,
 * slots, executors, the handler's calls) and rdma_native_send.c (sending
 * replies) share: a request's states and slot, and the calls between them. */
#ifndef S3R_RDMA_NATIVE_INTERNAL_H
#define S3R_RDMA_NATIVE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "rdma/rdma_native_wire.h"
#include "rdma/rdma_server_internal.h"

/* A native request's life, in r->state:
 *
 *   ADMITTED -> RUNNING -> REPLIED -> RELEASED
 *       |          |                    ^
 *       |          +--------------------+  unanswered (its session died, or
 *       +-------------------------------+  the reply could not be made)
 *       +--> REPLIED                       malformed: answered, never run
 *
 * ADMITTED  native_accept counted it in the in-flight bounds
 *           (s->native_inflight, s->user->native, srv->n_jobs), gave it a
 *           slot and a session reference, and queued it (its progress
 *           thread's local list or the executors' queue).
 * RUNNING   native_run parsed it and hands it to the handler, which may
 *           reply once (rdma_native_reply).
 * REPLIED   its reply went to native_send, which took over its count in the
 *           bounds (the reply holds it until UCX has sent it).
 * RELEASED  out of the bounds (req_release counts it out unless its reply
 *           holds the count); native_run is done with it and its slot goes
 *           back to its pool (slot_give).
 *
 * A request lives in a slot: one of its progress thread's pool
 * (RDMA_NATIVE_SLOTS, allocated with the thread, each with room for a
 * message of RDMA_NATIVE_SLOT_MSG bytes and its parsed strings), so that
 * admitting, parsing and running it allocates nothing; a longer message,
 * or one that finds the pool empty, gets a slot allocated for it alone and
 * freed with it. The pools add no bound: admission counts every request
 * against the same limits whatever its slot, and a pool's size is fixed. */
typedef enum { NREQ_ADMITTED, NREQ_RUNNING, NREQ_REPLIED, NREQ_RELEASED } nreq_state_t;

struct rdma_native_req {
    struct rdma_native_req *next; /* on a queue, or on its pool's free list */
    rprog_t *pool;                /* the thread whose pool holds the slot; NULL: allocated */
    struct rdma_server *srv;
    rsession_t *s;
    nreq_state_t state;
    rdma_native_msg_t m;
    size_t len;
    uint8_t msg[]; /* len bytes; in a pooled slot RDMA_NATIVE_SLOT_MSG, then the strings */
};

/* A reply made and held until its handler says to send it
 * (rdma_native_reply_held). It holds what its request held: the count in
 * the in-flight bounds (state NREQ_ADMITTED until the count passes to the
 * reply sent, or is released) and a reference on the session; the server
 * counts it in srv->native_held until it is freed. */
struct rdma_native_held {
    struct rdma_server *srv;
    rsession_t *s;
    nreq_state_t state;
    rdma_native_head_t head; /* for an error reply instead */
    wire_out_t w;            /* the reply */
};

/* Counts the request whose state is *state (of session s) out of the
 * in-flight bounds unless its reply holds the count (REPLIED), once:
 * -> RELEASED. */
void rdma_native_count_release(struct rdma_server *srv, rsession_t *s, nreq_state_t *state);
/* rdma_native_count_release of an admitted request. */
void rdma_native_req_release(rdma_native_req_t *r);

/* Answers a request with an S3 error: answers is the state of the admitted
 * request (or held reply) whose count the reply takes over, or NULL for a
 * refused request with head h. */
void rdma_native_reply_error(struct rdma_server *srv, rsession_t *s, nreq_state_t *answers,
                             const rdma_native_head_t *h, uint16_t status, uint16_t error,
                             const char *code, const char *msg);

/* The progress thread the calling thread is (rdma_native_thread_is), or NULL. */
rprog_t *rdma_native_prog_here(void);

#endif
