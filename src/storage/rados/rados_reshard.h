/* Private to src/storage/rados: a reshard's run (rados_reshard.c: the
 * steps, the run's token and lease), its copying (rados_reshard_copy.c:
 * step 3's bulk copy and the passes over the dirty marks), and who runs it
 * (rados_reshard_resume.c: the lease, the registry of reshards under way
 * and the resume). The steps and why each is safe are at the top of
 * rados_reshard.c. */
#ifndef S3R_STORAGE_RADOS_RESHARD_H
#define S3R_STORAGE_RADOS_RESHARD_H

#include <pthread.h>
#include <stdint.h>

#include "storage/rados/rados_internal.h"

/* How long the runner's lease lasts without a renewal: a runner that dies
 * lets the next one take over after it, which a new run waits for. A live
 * runner renews it at least every RESHARD_RENEW_MS, from every step (the
 * copy's batches, each key of a pass, the fence to the switch). */
#define RESHARD_LEASE_MS 10000
#define RESHARD_RENEW_MS (RESHARD_LEASE_MS / 4)

/* The xattr of every new shard that names the run writing into it: each
 * copy write compares it in the same write op, so a run that was taken
 * over (its lease lapsed and another run claimed the shards) has its
 * writes fail with -ECANCELED instead of putting back entries that the
 * other run and the writers after it changed. Writers never read it. */
#define RESHARD_TOKEN_XATTR "s3rdma.reshard.run"
#define RESHARD_TOKEN_LEN   32

/* One run of a reshard of ix into nx. */
typedef struct run {
    rstor_t *st;
    const rs_index_t *ix, *nx;
    const char *lease;
    char token[RESHARD_TOKEN_LEN + 1]; /* this run's, random */
    uint64_t renewed_ms;               /* the lease's last renewal, under lock */
    int fenced;                        /* step 5 begun: the run no longer stops */
    pthread_mutex_t lock;
} run_t;

/* Moves the index state of bucket ix->bucket's record (of id ix->id) from
 * the one ix names (its generation, shards and reshard_to) to gen, shards,
 * to, in one compare-and-set (retried when another change of the record
 * came first). STOR_OK also when the record holds the new state already (a
 * run that took over got there first); STOR_ERR_PRECONDITION when it holds
 * another (another run changed it). */
stor_status_t rs_reshard_record_set(rstor_t *st, const rs_index_t *ix, uint32_t gen,
                                    uint32_t shards, uint32_t to);
/* Reshards ix (reshard_to set in its record) under lease, just taken:
 * steps 2-7, or what remains of them. */
stor_status_t rs_reshard_run(rstor_t *st, const rs_index_t *ix, const char *lease);

/* Renews r's lease when RESHARD_RENEW_MS have passed since it was last
 * (from any thread). 0, -ETIMEDOUT (the lease is another's now) or, before
 * the fence, -EINTR (the store is closing: the run stops, and a gateway
 * resumes it once the lease lapses). */
int rs_run_keep(run_t *r);
/* Adds to op the check that its object (a new shard) still names run r. */
void rs_run_guard(rados_write_op_t op, const run_t *r);
/* The result of an op with a cmpxattr: 0 or a librados code (the OSD
 * answers a cmpxattr that holds with 1, and an op ending with one too). */
int rs_run_result(int rc);

/* Step 3 of r: every old shard's entries copied, batch by batch (the
 * lease renewed from each). *copied_p: entries copied. 0, -ECANCELED (r was
 * taken over), or a librados code (oid: the object). */
int rs_reshard_copy_all(run_t *r, uint64_t *copied_p, char oid[RSTOR_OID_MAX]);
/* Step 4: passes over the dirty marks until few keys remain marked, or the
 * passes stop shrinking (the writers mark keys as fast as a pass copies
 * them: more passes would not make the last copy smaller). *again_p: keys
 * copied again. 0, -ECANCELED (r was taken over), or a librados code. */
int rs_reshard_copy_passes(run_t *r, uint64_t *again_p);
/* One pass over the dirty marks of every old shard of ix: each marked key
 * is copied again; while the shards are tracked (not fenced) its mark is
 * taken away unless a change set it again meanwhile. A batch reads the
 * marks of all shards at once (up to RSTOR_OMAP_BATCH, at least
 * RESHARD_MARKS_MIN a shard) and the copiers work on every shard's keys
 * together: the pass after the fence, which writers wait for, costs one
 * read and the copies its keys need, not a round of both per shard. *n_p:
 * keys copied. 0, -ECANCELED (r was taken over), or a librados code (a
 * shard gone is skipped: removed by a run that took over). */
int rs_reshard_dirty_pass(run_t *r, int tracked, uint64_t *n_p);

#endif
