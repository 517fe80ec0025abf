/* s3rdma-bench's results: the text summary and the JSON document of a run
 * or a walk (docs/bench-tool.md gives their schemas). */
#ifndef S3R_BENCH_REPORT_H
#define S3R_BENCH_REPORT_H

#include <stdio.h>

#include "tools/bench/opts.h"
#include "tools/bench/run.h"
#include "tools/bench/walk.h"

/* Prints the summary of r to f. */
void report_text(FILE *f, const bench_opts_t *o, const run_result_t *r);
/* Writes r as JSON to path. 0, or -1 (errno set) when the file cannot be written. */
int report_json(const char *path, const bench_opts_t *o, const run_result_t *r);
/* The same for a walk (run walk). */
void report_walk_text(FILE *f, const bench_opts_t *o, const walk_result_t *r);
int report_walk_json(const char *path, const bench_opts_t *o, const walk_result_t *r);

#endif
