/* s3rdmad's guard against inbound UCX software RMA (ucx_guard.c). */
#ifndef S3R_SERVER_UCX_GUARD_H
#define S3R_SERVER_UCX_GUARD_H

/* 1 when the process resolves libucp's software-RMA target handlers to the
 * guard's refusing ones, else 0 (then network sessions must not be served). */
int ucx_guard_active(void);
/* Inbound software-RMA messages refused so far. */
unsigned long ucx_guard_dropped(void);

#endif
