/* s3rdma-bench: a load generator and host check over libs3rdma's public API,
 * flag-compatible with the SPT benchmark's S3-RDMA driver
 * (docs/bench-tool.md). Exit status: 0 success; 1 a run with errors (or
 * failed verification), a setup failure, or a FAIL from verify; 2 usage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3rdma.h"

#include "tools/bench/opts.h"
#include "tools/bench/report.h"
#include "tools/bench/run.h"
#include "tools/bench/verify.h"
#include "tools/bench/walk.h"

/* run walk: the walk, its summary and JSON. */
static int walk_main(const bench_opts_t *o)
{
    walk_result_t *w = calloc(1, sizeof *w);
    if (!w) {
        fprintf(stderr, "s3rdma-bench: out of memory\n");
        return 1;
    }
    int rc = bench_walk(o, w);
    if (rc == 0) {
        report_walk_text(stdout, o, w);
        if (o->json_path && report_walk_json(o->json_path, o, w) != 0) {
            fprintf(stderr, "s3rdma-bench: cannot write %s: %s\n", o->json_path, strerror(errno));
            rc = 1;
        }
    }
    free(w);
    return rc;
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    int rc = bench_opts_parse(argc, argv, &o);
    if (rc != 0) {
        bench_opts_free(&o);
        return rc;
    }
    if (o.verb == VERB_HELP) {
        bench_usage(stdout);
        bench_opts_free(&o);
        return 0;
    }
    if (o.verb == VERB_VERSION) {
        printf("s3rdma-bench %s\n", S3RDMA_VERSION_STRING);
        bench_opts_free(&o);
        return 0;
    }
    if (o.verb == VERB_VERIFY) {
        rc = bench_verify(&o);
        bench_opts_free(&o);
        return rc;
    }
    if (o.walk) {
        rc = walk_main(&o);
        bench_opts_free(&o);
        return rc;
    }
    run_result_t *r = calloc(1, sizeof *r);
    if (!r) {
        fprintf(stderr, "s3rdma-bench: out of memory\n");
        return 1;
    }
    rc = bench_run(&o, r);
    if (rc == 0) {
        report_text(stdout, &o, r);
        if (o.json_path && report_json(o.json_path, &o, r) != 0) {
            fprintf(stderr, "s3rdma-bench: cannot write %s: %s\n", o.json_path, strerror(errno));
            rc = 1;
        }
        for (int k = 0; k < OP_COUNT; k++)
            if (r->op[k].errors)
                rc = 1;
    }
    free(r);
    bench_opts_free(&o);
    return rc;
}
