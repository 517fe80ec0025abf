/* The lifecycle runner: applies the buckets' lifecycle rules (lifecycle.h)
 * in the background. One thread per server; with many gateways on one
 * cluster, only the holder of the store's "lifecycle" lease runs a pass
 * (stor_lease), so two never act on the same rules at once. */
#ifndef S3R_S3_LIFECYCLE_RUN_H
#define S3R_S3_LIFECYCLE_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "storage/storage.h"

typedef struct s3_lc_runner s3_lc_runner_t;

/* Starts the runner thread on st: a pass every day_s / 24 seconds (at
 * least 1, at most 3600), the lease held for three such intervals. NULL
 * when the thread cannot start. */
s3_lc_runner_t *s3_lc_runner_start(stor_t *st, unsigned day_s);
/* Stops the thread (waiting for a pass in progress) and frees r; NULL is a
 * no-op. */
void s3_lc_runner_stop(s3_lc_runner_t *r);

#endif
