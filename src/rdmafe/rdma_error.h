/* The S3 error of a failed RDMA transfer, said once for the token and the
 * native frontends (the table in docs/protocol.md, "RDMA transfer errors"). */
#ifndef S3R_RDMAFE_RDMA_ERROR_H
#define S3R_RDMAFE_RDMA_ERROR_H

#include "rdma/rdma_server.h"
#include "s3/s3_errors.h"
#include "s3/s3_request.h"

/* The client's own mistakes and back-pressure: a session opened by another
 * access key than the signer's is 403 AccessDenied, memory outside the
 * session's registered regions 400 InvalidArgument, the in-flight transfer
 * limit 503 SlowDown; *msg_p gets the message (a static string). Any other
 * status (RDMA_OK, no session, a failed transfer, RDMA_CALLBACK) returns
 * S3E_NONE with *msg_p untouched: what follows is the frontend's choice
 * (the token path declines with 501 so the client falls back to HTTP; the
 * native path, which has no fallback, answers 500). */
s3_error_t rdmafe_s3_error(rdma_status_t st, const char **msg_p);

/* The token path's reply to a failed transfer (st not RDMA_OK), into
 * *fail: RDMA_CALLBACK is the caller's callback's failure; an error of
 * rdmafe_s3_error is replied as such; any other status (no session, a
 * failed transfer) is the 501 decline the client answers by redoing the
 * request over HTTP. */
void rdmafe_token_fail(rdma_status_t st, s3_token_fail_t *fail);

#endif
