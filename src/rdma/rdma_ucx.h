/* UCX helpers shared by the session server and client. */
#ifndef S3R_RDMA_RDMA_UCX_H
#define S3R_RDMA_RDMA_UCX_H

#include <ucp/api/ucp.h>

/* Waits for req (as returned by a ucp_*_nbx call made on worker w) by
 * progressing w on this thread, for at most timeout_ms, then frees it.
 * Returns its status: UCS_OK for NULL (done at once), the error of an error
 * pointer or a failed request, or UCS_INPROGRESS when it was abandoned. */
ucs_status_t rdma_ucx_wait(ucp_worker_h w, ucs_status_ptr_t req, int timeout_ms);

/* How many times the scheduler has taken the core from the calling thread
 * (its involuntary context switches; 0 when unknown). A busy-poll that sees
 * this move was descheduled while it spun: the host has more runnable
 * threads than cores, and there a thread asleep is woken (and run) sooner
 * than a preempted spinner gets its turn back, so the poll should sleep.
 * One system call: call it between rounds of polling, not per round. */
long rdma_thread_preemptions(void);

/* Asks the scheduler for a slice of us microseconds for the calling thread
 * (sched_setattr's sched_runtime under SCHED_OTHER; 0: leaves it as it
 * is). Under EEVDF (Linux 6.12 and later) a thread's weight, its share of
 * the CPU, does not change; a shorter slice gives it an earlier deadline,
 * so when it wakes it runs before, and may preempt, threads on the default
 * slice (several milliseconds), and it is itself preempted sooner when it
 * runs long. For threads whose work comes in short bursts someone waits
 * for: on a host with more runnable threads than cores, a request's wait
 * for its progress thread to get a core. The kernel clamps us to
 * 100-100,000. 0, or -1 with errno (an older kernel that refuses it). */
int rdma_thread_set_slice(unsigned us);

/* Gives the calling thread `levels` nice levels below the process's (each
 * level is ~1.25x the scheduler weight, its share of a contended core:
 * 10 levels ~9x; the value is clamped at -20; 0 leaves it as it is).
 * Lowering a nice value needs CAP_SYS_NICE or an RLIMIT_NICE that allows
 * it. 0, or -1 with errno (EACCES, EPERM: not permitted; the thread keeps
 * the process's value). */
int rdma_thread_raise_priority(unsigned levels);

#endif
