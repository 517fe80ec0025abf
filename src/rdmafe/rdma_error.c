#include <stdio.h>

#include "rdmafe/rdma_error.h"

s3_error_t rdmafe_s3_error(rdma_status_t st, const char **msg_p)
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

void rdmafe_token_fail(rdma_status_t st, s3_token_fail_t *fail)
{
    *fail = (s3_token_fail_t){.callback = st == RDMA_CALLBACK};
    if (fail->callback)
        return;
    const char *why;
    fail->err = rdmafe_s3_error(st, &why);
    if (fail->err != S3E_NONE) {
        snprintf(fail->msg, sizeof(fail->msg), "%s", why);
        return;
    }
    fail->err = S3E_NOT_IMPLEMENTED;
    fail->decline = st == RDMA_DECLINE ? S3_DECLINE_SESSION : S3_DECLINE_TRANSPORT;
    snprintf(fail->msg, sizeof(fail->msg), "RDMA transfer declined: %s.", rdma_strerror(st));
}
