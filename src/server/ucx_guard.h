/* s3rdmad's stop-gaps for UCX 1.13 defects (ucx_guard.c): inbound software
 * RMA, and TCP endpoints failing while being connected. */
#ifndef S3R_SERVER_UCX_GUARD_H
#define S3R_SERVER_UCX_GUARD_H

/* 1 when the process resolves every function the guard replaces to the
 * guard's, and libucp/libuct still define them, else 0 (then network
 * sessions must not be served). */
int ucx_guard_active(void);

#endif
