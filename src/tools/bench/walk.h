/* s3rdma-bench run walk: one client lists every key under the prefix, as
 * `aws s3 ls --recursive` does: ListObjectsV2 pages of 1,000 and their
 * continuation tokens, one call in flight, each call's pages freed once
 * counted; a call takes --walk-pages pages (s3r_object_list_pages).
 * With --seed-objects N the keys are written first (seed.h, in parallel);
 * with 0 the walk takes what is there. */
#ifndef S3R_BENCH_WALK_H
#define S3R_BENCH_WALK_H

#include <s3rdma.h>

#include "tools/bench/hist.h"
#include "tools/bench/opts.h"

typedef struct walk_result {
    uint64_t keys, pages;
    uint64_t calls;           /* listing calls: pages / --walk-pages, rounded up */
    uint64_t seeded;          /* objects written first */
    double secs, seed_secs;   /* the walk; the seeding (0: none) */
    int sorted;               /* every key above the one before it */
    hist_t page_lat;          /* each page: its call's time over the call's pages, ns */
    s3r_stats_t stats;        /* the walking client's counters over the walk */
    char ucx_transports[256]; /* of its RDMA session, "" if none */
} walk_result_t;

/* Seeds (when asked) and walks. 0 when the walk completed; 1 after
 * printing why it could not (setup or a page failed). *r is the caller's
 * (it is large). */
int bench_walk(const bench_opts_t *o, walk_result_t *r);

#endif
