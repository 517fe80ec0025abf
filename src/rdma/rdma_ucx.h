/* UCX helpers shared by the session server and client. */
#ifndef S3R_RDMA_RDMA_UCX_H
#define S3R_RDMA_RDMA_UCX_H

#include <ucp/api/ucp.h>

/* Waits for req (as returned by a ucp_*_nbx call made on worker w) by
 * progressing w on this thread, for at most timeout_ms, then frees it.
 * Returns its status: UCS_OK for NULL (done at once), the error of an error
 * pointer or a failed request, or UCS_INPROGRESS when it was abandoned. */
ucs_status_t rdma_ucx_wait(ucp_worker_h w, ucs_status_ptr_t req, int timeout_ms);

#endif
