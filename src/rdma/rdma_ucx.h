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

#endif
