/* Refuses inbound software RMA (docs/security.md "UCX's own trust model").
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
 * to the server's own emulated operations (GET_REP, CMPL) are untouched. */
#include "server/ucx_guard.h"

#include <dlfcn.h>
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

int ucx_guard_active(void)
{
    /* Ours must be the definitions the process resolves, and libucp must
     * still have the symbols we replace (else UCX changed and this guard
     * guards nothing). */
    return dlsym(RTLD_DEFAULT, "ucp_put_handler") == (void *)ucp_put_handler &&
           dlsym(RTLD_DEFAULT, "ucp_get_req_handler") == (void *)ucp_get_req_handler &&
           dlsym(RTLD_NEXT, "ucp_put_handler") != NULL &&
           dlsym(RTLD_NEXT, "ucp_get_req_handler") != NULL;
}

unsigned long ucx_guard_dropped(void)
{
    return atomic_load(&dropped);
}
