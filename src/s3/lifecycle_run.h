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

/* What one pass did. */
typedef struct s3_lc_pass {
    unsigned buckets;         /* buckets with a lifecycle configuration seen */
    unsigned uploads_aborted; /* AbortIncompleteMultipartUpload */
    unsigned expired;         /* objects expired, noncurrent versions and markers removed */
    unsigned locked;          /* versions object lock kept from expiry; tried next pass */
    unsigned errors;          /* actions that failed (logged); retried next pass */
    bool leased;              /* false: another gateway holds the lease, nothing done */
} s3_lc_pass_t;

/* One pass over every bucket at now_s (unix seconds), a day being day_s
 * seconds: at most S3R_LC_PASS_ACTIONS actions, the rest left for the next
 * pass. Takes or renews the lease for lease_ms first. */
void s3_lc_pass(stor_t *st, int64_t now_s, unsigned day_s, uint32_t lease_ms, s3_lc_pass_t *out);

/* Starts the runner thread on st: a pass every day_s / 24 seconds (at
 * least 1, at most 3600), the lease held for three such intervals. NULL
 * when the thread cannot start. */
s3_lc_runner_t *s3_lc_runner_start(stor_t *st, unsigned day_s);
/* Stops the thread (waiting for a pass in progress) and frees r; NULL is a
 * no-op. */
void s3_lc_runner_stop(s3_lc_runner_t *r);

#endif
