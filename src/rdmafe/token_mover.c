/* The token path's byte mover over the RDMA session server
 * (s3_token_mover_t): rdma_xfer_* behind the transport-neutral table
 * s3/token.c drives, each failure turned into its S3 reply by
 * rdma_error.c. */
#include "rdmafe/rdma_error.h"
#include "rdmafe/rdmafe.h"

static void *mover_open(void *ctx, const char *token, const char *access_key, s3_token_fail_t *fail)
{
    rdma_xfer_t *x = NULL;
    rdma_status_t st = rdma_xfer_open(ctx, token, access_key, &x);
    if (st != RDMA_OK) {
        rdmafe_token_fail(st, fail);
        return NULL;
    }
    return x;
}

static uint64_t mover_length(void *x)
{
    return rdma_xfer_length(x);
}

static bool mover_pull(void *x, uint64_t len, int (*sink)(void *ctx, const void *data, size_t len),
                       void *sink_ctx, s3_token_fail_t *fail)
{
    rdma_status_t st = rdma_xfer_pull(x, len, sink, sink_ctx);
    if (st != RDMA_OK)
        rdmafe_token_fail(st, fail);
    return st == RDMA_OK;
}

static bool mover_push(void *x, uint64_t len,
                       int (*fill)(void *ctx, void *dst, size_t len, uint64_t off), void *fill_ctx,
                       s3_token_fail_t *fail)
{
    rdma_status_t st = rdma_xfer_push(x, len, fill, fill_ctx);
    if (st != RDMA_OK)
        rdmafe_token_fail(st, fail);
    return st == RDMA_OK;
}

static void mover_close(void *x)
{
    rdma_xfer_close(x);
}

void rdmafe_token_mover_init(s3_token_mover_t *m, rdma_server_t *rdma)
{
    *m = (s3_token_mover_t){.ctx = rdma,
                            .open = mover_open,
                            .length = mover_length,
                            .pull = mover_pull,
                            .push = mover_push,
                            .close = mover_close};
}
