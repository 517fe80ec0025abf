/* Two stop-gaps for UCX 1.13 defects that let a peer harm s3rdmad, both by
 * replacing libucp/libuct functions that the libraries call through their
 * exported symbols (definitions in the executable win; ucx_guard.list).
 *
 * 1. Inbound software RMA (docs/security.md "UCX's own trust model").
 *
 * UCX emulates one-sided operations with active messages where a transport
 * has no native RMA (TCP, and whenever the initiator's rkey matches no RMA
 * lane). The target's handlers, ucp_put_handler and ucp_get_req_handler in
 * libucp, write and read the target process's memory at the address the
 * peer puts in the message, with no check: any UCP peer that completes a
 * wireup with one of s3rdmad's workers could read or write the whole server.
 *
 * s3rdmad only ever initiates RMA; it is never a legitimate target. libucp
 * calls these two handlers through relocations against its exported
 * symbols, so defining them here (exported from the executable, see
 * ucx_guard.list) takes their place in the server process, and only there:
 * libs3rdma's clients are RMA targets and keep UCX's handlers. The replies
 * to the server's own emulated operations (GET_REP, CMPL) are untouched.
 *
 * 2. A TCP endpoint that fails while it is being connected. When s3rdmad's
 * ucp_ep_create connects to a client on its own host and the client dies at
 * that moment, uct_tcp_ep_connect's error path calls uct_tcp_ep_set_failed
 * before the endpoint is marked as sending; UCX takes it for a receive-only
 * endpoint, schedules its destruction, then hands the same endpoint to UCP
 * as connected, and the next progress aborts on an assertion
 * (tcp_ep.c:478). The guard tracks endpoints from uct_tcp_ep_init with no
 * socket yet (fd -1: being connected) until they gain the send capability
 * or are destroyed, and drops set_failed for them: such an endpoint stays
 * unusable, and the session it belongs to ends when the dead client's
 * lifeline drops. The fix belongs in UCX (uct_tcp_ep_connect should fail). */
#include "server/ucx_guard.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <ucs/type/status.h>

#include "common/log.h"

/* Same signatures as libucp's (ucp_am_callback_t). */
ucs_status_t ucp_put_handler(void *arg, void *data, size_t length, unsigned am_flags);
ucs_status_t ucp_get_req_handler(void *arg, void *data, size_t length, unsigned am_flags);

static _Atomic unsigned long dropped;

static ucs_status_t drop(const char *what, size_t length)
{
    /* The first refusal and then one in 1024: a flood cannot flood the log. */
    if ((atomic_fetch_add(&dropped, 1) & 1023) == 0)
        log_warn("rdma: dropped an inbound UCX software-RMA %s (%zu bytes) from a peer: s3rdmad "
                 "is never an RMA target (%lu dropped so far)",
                 what, length, atomic_load(&dropped));
    return UCS_OK;
}

ucs_status_t ucp_put_handler(void *arg, void *data, size_t length, unsigned am_flags)
{
    (void)arg, (void)data, (void)am_flags;
    return drop("PUT", length);
}

ucs_status_t ucp_get_req_handler(void *arg, void *data, size_t length, unsigned am_flags)
{
    (void)arg, (void)data, (void)am_flags;
    return drop("GET request", length);
}

/* ---- 2. TCP endpoints failing while being connected ------------------------------- */

int uct_tcp_ep_init(void *iface, int fd, const void *dest_addr, void **ep_p);
void uct_tcp_ep_change_ctx_caps(void *ep, uint16_t new_caps);
void uct_tcp_ep_add_ctx_cap(void *ep, uint16_t cap);
void uct_tcp_ep_destroy_internal(void *ep);
void uct_tcp_ep_set_failed(void *ep);

#define TCP_EP_CAP_TX  1u   /* UCT_TCP_EP_FLAG_CTX_TYPE_TX in UCX 1.13 */
#define CONNECTING_MAX 4096 /* endpoints being connected at once; more are not guarded */

static pthread_mutex_t connecting_mu = PTHREAD_MUTEX_INITIALIZER;
static void *connecting[CONNECTING_MAX];
static unsigned n_connecting;

static void connecting_del(void *ep)
{
    pthread_mutex_lock(&connecting_mu);
    for (unsigned i = 0; i < n_connecting; i++) {
        if (connecting[i] == ep) {
            connecting[i] = connecting[--n_connecting];
            break;
        }
    }
    pthread_mutex_unlock(&connecting_mu);
}

static int connecting_has(void *ep)
{
    int found = 0;
    pthread_mutex_lock(&connecting_mu);
    for (unsigned i = 0; i < n_connecting && !found; i++)
        found = connecting[i] == ep;
    pthread_mutex_unlock(&connecting_mu);
    return found;
}

/* The next definition of name after ours (libuct's). */
static void *real(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

int uct_tcp_ep_init(void *iface, int fd, const void *dest_addr, void **ep_p)
{
    static int (*next)(void *, int, const void *, void **);
    if (!next)
        next = (int (*)(void *, int, const void *, void **))real("uct_tcp_ep_init");
    int st = next(iface, fd, dest_addr, ep_p);
    if (st == 0 && fd == -1) {
        pthread_mutex_lock(&connecting_mu);
        if (n_connecting < CONNECTING_MAX)
            connecting[n_connecting++] = *ep_p;
        pthread_mutex_unlock(&connecting_mu);
    }
    return st;
}

void uct_tcp_ep_change_ctx_caps(void *ep, uint16_t new_caps)
{
    static void (*next)(void *, uint16_t);
    if (!next)
        next = (void (*)(void *, uint16_t))real("uct_tcp_ep_change_ctx_caps");
    if (new_caps & TCP_EP_CAP_TX)
        connecting_del(ep);
    next(ep, new_caps);
}

void uct_tcp_ep_add_ctx_cap(void *ep, uint16_t cap)
{
    static void (*next)(void *, uint16_t);
    if (!next)
        next = (void (*)(void *, uint16_t))real("uct_tcp_ep_add_ctx_cap");
    if (cap & TCP_EP_CAP_TX)
        connecting_del(ep);
    next(ep, cap);
}

void uct_tcp_ep_destroy_internal(void *ep)
{
    static void (*next)(void *);
    if (!next)
        next = (void (*)(void *))real("uct_tcp_ep_destroy_internal");
    connecting_del(ep);
    next(ep);
}

void uct_tcp_ep_set_failed(void *ep)
{
    static void (*next)(void *);
    if (!next)
        next = (void (*)(void *))real("uct_tcp_ep_set_failed");
    if (connecting_has(ep)) {
        log_info("rdma: a UCX TCP endpoint failed while being connected (the peer went away); "
                 "left for its session's teardown");
        return;
    }
    next(ep);
}

/* ---- both -------------------------------------------------------------------------- */

int ucx_guard_active(void)
{
    /* Ours must be the definitions the process resolves, and libucp must
     * still have the symbols we replace (else UCX changed and this guard
     * guards nothing). */
    static const struct {
        const char *name;
        void *ours;
    } guarded[] = {
        {"ucp_put_handler", (void *)ucp_put_handler},
        {"ucp_get_req_handler", (void *)ucp_get_req_handler},
        {"uct_tcp_ep_init", (void *)uct_tcp_ep_init},
        {"uct_tcp_ep_change_ctx_caps", (void *)uct_tcp_ep_change_ctx_caps},
        {"uct_tcp_ep_add_ctx_cap", (void *)uct_tcp_ep_add_ctx_cap},
        {"uct_tcp_ep_destroy_internal", (void *)uct_tcp_ep_destroy_internal},
        {"uct_tcp_ep_set_failed", (void *)uct_tcp_ep_set_failed},
    };
    for (size_t i = 0; i < sizeof(guarded) / sizeof(guarded[0]); i++) {
        if (dlsym(RTLD_DEFAULT, guarded[i].name) != guarded[i].ours ||
            dlsym(RTLD_NEXT, guarded[i].name) == NULL)
            return 0;
    }
    return 1;
}
