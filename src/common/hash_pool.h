/* A fixed set of threads that run digest updates beside their caller, so
 * that a request can hash one chunk of its body while it writes the same
 * chunk (or fetches the next one). Bounded: the pool never queues. A caller
 * either gets an idle thread at once or hashes the chunk itself, so at most
 * `threads` digests run on the pool and each caller has at most one job out. */
#ifndef S3R_COMMON_HASH_POOL_H
#define S3R_COMMON_HASH_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/hash.h"

typedef struct hash_pool hash_pool_t;
typedef struct hash_worker hash_worker_t;

/* One digest update handed to the pool. Owned by the caller (on its stack is
 * fine), which must call hash_pool_job_wait before it reads the digest, frees it,
 * reuses the job or lets data go. */
typedef struct hash_job {
    hash_worker_t *worker; /* NULL: ran in the caller (or never started) */
} hash_job_t;

/* Starts `threads` threads (0: none; every job then runs in its caller).
 * NULL on failure, with nothing started. */
hash_pool_t *hash_pool_new(unsigned threads);
/* Stops the threads. No job may be out. NULL is a no-op. */
void hash_pool_free(hash_pool_t *p);

/* hash_digest_update(d, data, len) on an idle pool thread, or at once in the
 * calling thread when none is idle (or p is NULL). Either way the update
 * is done once hash_pool_job_wait(job) returns; data and d must stay untouched
 * until then. */
void hash_pool_job_start(hash_pool_t *p, hash_job_t *job, digest_t *d, const void *data,
                         size_t len);
/* Waits for the job's update to finish; at once if it ran in the caller. */
void hash_pool_job_wait(hash_job_t *job);

#endif
