#include "s3/rdma_error.h"

s3_error_t s3_rdma_error(rdma_status_t st, const char **msg_p)
{
    switch (st) {
    case RDMA_FORBIDDEN:
        *msg_p = "The RDMA session was not opened by the access key that signed this request.";
        return S3E_ACCESS_DENIED;
    case RDMA_OUT_OF_BOUNDS:
        *msg_p = "The request names memory outside the RDMA session's registered regions.";
        return S3E_INVALID_ARGUMENT;
    case RDMA_BUSY:
        *msg_p = "Too many RDMA transfers in flight.";
        return S3E_SLOW_DOWN;
    case RDMA_OK:
    case RDMA_DECLINE:
    case RDMA_TRANSPORT:
    case RDMA_CALLBACK:
        break;
    }
    return S3E_NONE;
}
