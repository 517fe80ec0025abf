/* A timed run of s3rdma-bench: seeds the key space, starts --threads
 * threads each keeping --inflight requests in flight, counts what starts
 * after --warmup, stops after --duration more (or --ops), and gathers
 * per-operation results. */
#ifndef S3R_BENCH_RUN_H
#define S3R_BENCH_RUN_H

#include <s3rdma.h>

#include "tools/bench/hist.h"
#include "tools/bench/opts.h"
#include "tools/bench/payload.h"

/* Error kinds: every s3r_status_t (index -status), then the verification
 * failures of payload.h (ERRK_VERIFY + payload_result_t), of a listing and
 * of a HEAD. */
enum {
    ERRK_STATUS_END = 32,
    ERRK_VERIFY = ERRK_STATUS_END, /* + PAYLOAD_BAD_HEADER .. PAYLOAD_BAD_CHECKSUM */
    ERRK_VERIFY_LIST = ERRK_VERIFY + PAYLOAD_BAD_CHECKSUM + 1,
    ERRK_VERIFY_HEAD,
    ERRK_COUNT
};
/* The kind's name: "S3R_ERR_TIMEOUT", "verify_checksum", ...; NULL for an
 * index no kind uses. */
const char *errk_name(int k);

/* What one operation kind did during the timed phase. */
typedef struct op_result {
    hist_t lat;        /* latency of the successful ones */
    uint64_t ops;      /* successful (and, for reads and lists, verified) */
    uint64_t errors;   /* failed or failed verification */
    uint64_t verified; /* reads whose bytes were checked and right */
    uint64_t bytes;    /* object payload moved by the successful ones */
    uint64_t by_kind[ERRK_COUNT];
    s3r_stats_t stats; /* libs3rdma's counters over the phase (this kind's client) */
} op_result_t;

typedef struct run_result {
    op_result_t op[OP_COUNT];
    double secs;              /* the timed phase (after the warm-up) */
    double seed_secs;         /* writing the seed objects; 0 when none were */
    double cpu_user, cpu_sys; /* this process, over the timed phase */
    uint64_t nkeys;           /* the key space */
    char ucx_transports[256]; /* of the first RDMA session, "" if none */
} run_result_t;

/* Runs o's workload. 0 when the run took place (its errors are in *r);
 * 1 after printing why it could not (setup failed). *r is allocated by the
 * caller (it is large) and filled here. */
int bench_run(const bench_opts_t *o, run_result_t *r);

#endif
