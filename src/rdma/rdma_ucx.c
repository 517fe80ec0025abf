/* UCX helpers shared by the session server and client (see rdma_ucx.h). */
#include "rdma/rdma_ucx.h"

#include <sys/resource.h>

#include "common/clock.h"
#include "rdma/rdma_net.h"

long rdma_thread_preemptions(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : 0;
}

ucs_status_t rdma_ucx_wait(ucp_worker_h w, ucs_status_ptr_t req, int timeout_ms)
{
    if (req == NULL)
        return UCS_OK;
    if (UCS_PTR_IS_ERR(req))
        return UCS_PTR_STATUS(req);
    uint64_t deadline = clock_mono_ms() + (uint64_t)timeout_ms;
    ucs_status_t st;
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS && clock_mono_ms() < deadline)
        ucp_worker_progress(w);
    ucp_request_free(req);
    return st;
}
