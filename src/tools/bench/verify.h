/* s3rdma-bench verify: checks the host and the endpoints and explains what
 * to fix (docs/bench-tool.md). */
#ifndef S3R_BENCH_VERIFY_H
#define S3R_BENCH_VERIFY_H

#include "tools/bench/opts.h"

/* Prints one PASS/WARN/FAIL line per check (a remedy under each WARN and
 * FAIL). Returns 0 when nothing failed (warnings alone included), 1
 * otherwise. */
int bench_verify(const bench_opts_t *o);

#endif
