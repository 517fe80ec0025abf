/* The key space of an s3rdma-bench run: its names (PREFIX obj-NNNNNNNN),
 * the objects written before the timed phase by --threads threads over one
 * HTTP client, or the keys already under the prefix (--seed-objects 0). */
#ifndef S3R_BENCH_SEED_H
#define S3R_BENCH_SEED_H

#include <s3rdma.h>
#include <stdint.h>

#include "tools/bench/opts.h"

typedef struct bench_keys {
    char **keys;      /* n names, or NULL when not asked for */
    uint64_t n;       /* the key space (0: the existing keys, not named) */
    uint64_t written; /* objects written by seeding */
    double seed_secs; /* the seeding's wall time; 0 when nothing was written */
} bench_keys_t;

/* Creates the bucket. With --seed-objects N: names N keys (when names) and,
 * when write, writes each (a self-verifying payload of seed_size bytes),
 * spread over --threads threads sharing setup. With N = 0: the keys under
 * the prefix (listed only when names; at least one must exist then).
 * 0, or 1 after printing why; *k is freed by bench_keys_free either way. */
int bench_keys_prepare(const bench_opts_t *o, s3r_client_t *setup, int write, int names,
                       bench_keys_t *k);
void bench_keys_free(bench_keys_t *k);
/* The name of key i: PREFIX obj-%08llu (allocated; NULL when out of memory). */
char *bench_key_name(const bench_opts_t *o, uint64_t i);
/* The size seeding gives key i: a pseudo-random pick in --object-size. */
uint64_t bench_seed_size(const bench_opts_t *o, uint64_t i);

#endif
