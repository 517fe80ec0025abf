/* UCX helpers shared by the session server and client (see rdma_ucx.h). */
#include "rdma/rdma_ucx.h"

#include <errno.h>
#include <stdint.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/clock.h"
#include "rdma/rdma_net.h"

long rdma_thread_preemptions(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : 0;
}

/* The kernel's struct sched_attr, first version (48 bytes): its header
 * <linux/sched/types.h> clashes with <sched.h>. */
typedef struct thread_sched_attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
} thread_sched_attr_t;

int rdma_thread_set_slice(unsigned us)
{
    if (us == 0)
        return 0;
    /* glibc has no wrapper. The thread's policy and nice value stay as the
     * operator left them (nice, chrt); a real-time thread has no slice. */
    thread_sched_attr_t a = {0};
    if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) != 0)
        return -1;
    if (a.policy != SCHED_OTHER)
        return 0;
    a.size = sizeof(a);
    a.flags = 0;
    a.runtime = (uint64_t)us * 1000;
    return (int)syscall(SYS_sched_setattr, 0, &a, 0);
}

int rdma_thread_raise_priority(unsigned levels)
{
    if (levels == 0)
        return 0;
    /* PRIO_PROCESS with a thread id sets that thread's nice value alone
     * (Linux); 0 reads the calling thread's. */
    pid_t tid = (pid_t)syscall(SYS_gettid);
    errno = 0;
    int now = getpriority(PRIO_PROCESS, (id_t)tid);
    if (now == -1 && errno != 0)
        return -1;
    int want = now - (int)(levels > 40 ? 40 : levels);
    return setpriority(PRIO_PROCESS, (id_t)tid, want < -20 ? -20 : want);
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
