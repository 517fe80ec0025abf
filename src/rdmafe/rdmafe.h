/* S3 over the RDMA session server: what src/server composes to let the
 * RDMA transport drive the S3 layer through its transport-neutral tables.
 * Native requests run as an S3 frontend (native.c), the token path moves
 * its bytes by RDMA (token_mover.c), and the server's own pages get the
 * session server's figures (rdma_report.c); a failed transfer's S3 error
 * is rdma_error.c's, for all of them. */
#ifndef S3R_RDMAFE_RDMAFE_H
#define S3R_RDMAFE_RDMAFE_H

#include "rdma/rdma_server.h"
#include "s3/s3_request.h"
#include "s3/s3_server.h"

/* Runs one native request (rdma_native_fn; ctx is the s3_server_t):
 * give it to rdma_server_set_native once the server is started, and take
 * it back (rdma_server_set_native NULL) before stopping the server. */
void rdmafe_native_handle(void *ctx, rdma_native_req_t *nr);

/* Fills m to move token requests' bytes by rdma (which must outlive the
 * S3 server m is given to): s3_server_config_t.token_mover. */
void rdmafe_token_mover_init(s3_token_mover_t *m, rdma_server_t *rdma);

/* Fills r with rdma's figures (rdma NULL: RDMA is off, the pages say so):
 * s3_server_config_t.rdma_report. */
void rdmafe_report_init(s3_rdma_report_t *r, rdma_server_t *rdma);

#endif
