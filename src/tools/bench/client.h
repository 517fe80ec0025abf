/* s3rdma-bench's libs3rdma clients: one made from the options (with its
 * RDMA session when the transport wants one), and a failed call's details
 * printed the same way everywhere. */
#ifndef S3R_BENCH_CLIENT_H
#define S3R_BENCH_CLIENT_H

#include <s3rdma.h>

#include "tools/bench/opts.h"

/* Creates *c_p from o. setup: a plain HTTP client (seeding, discovery),
 * never an RDMA session. Otherwise opens the RDMA session when o asks for
 * RDMA; failing that is an error unless --rdma-fallback. 0, or 1 after
 * printing why. */
int bench_client_make(const bench_opts_t *o, int setup, s3r_client_t **c_p);
/* Prints "s3rdma-bench: WHAT: ..." with c's last error when it is st's. */
void bench_client_error(s3r_client_t *c, const char *what, s3r_status_t st);

#endif
