/* Private to src/storage: the relaxed-mode sync point (local_syncer.c).
 *
 * In relaxed mode a commit returns once it is in the page cache: LMDB runs
 * with MDB_NOSYNC and the object file is not synced. So nothing a commit
 * dropped may be unlinked yet (after a power loss the index may come back
 * without that commit and still point at those files), and the index must
 * have a restore point (local_restore.h) to come back to. The syncer collects what
 * the commits since the last sync point owe -- new object files and shard
 * directories to fsync, dropped files to unlink -- and pays it at a sync
 * point, in this order:
 *
 *   1. the cut: holding LMDB's writer lock for a moment, it opens a read
 *      transaction on the last commit, S (which pins S's pages: LMDB reuses
 *      no page a reader sees), copies data.mdb's two meta pages, and takes
 *      the lists (commits register their new files inside their
 *      transaction, so every commit up to S has);
 *   2. fdatasync every object file committed since the last cut, fsync the
 *      directories holding their entries and those of new shard directories
 *      -- or, for SYNCER_SYNCFS_FILES files or more, one syncfs of the
 *      objects' filesystem, which covers them all with one disk flush;
 *   3. fdatasync data.mdb: S's pages are on disk;
 *   4. save S as the restore point (local_restore_save); let go of the previous
 *      restore point's read transaction;
 *   5. return the files the commits up to S dropped to the pool of free
 *      files (local_pool_return: pooled, or unlinked).
 *
 * If a step fails, the lists go back to the next sync point and the previous
 * restore point stands. A sync point runs every local_sync_interval_ms on its
 * own thread (when something is owed), when the backlog grows large (then
 * back to back while it stays large), on stor_sync(), at stor_close() and
 * once in local_syncer_start(). The backlog is bounded: local_syncer_throttle
 * holds new commits back while it is at its bound.
 *
 * Fsync mode uses the same sync points with empty lists (a writer syncs its
 * own file and directory before its commit, in its own thread, and unlinks
 * what its commit dropped once that commit is durable). A commit that is in
 * the commit log (local_wal.h: the groups of PUTs and DELETEs) is durable once its
 * record is; the sync points then only bound the log and run on the timer
 * and the backlogs, as in relaxed mode. Any other commit waits in
 * local_syncer_wait_durable() for one that covers it, and commits that wait
 * together share one -- one index sync and one restore point save for all
 * of them. */
#ifndef S3R_STORAGE_LOCAL_SYNCER_H
#define S3R_STORAGE_LOCAL_SYNCER_H

#include <lmdb.h>
#include <stdint.h>

#include "storage/local/local_internal.h"

typedef struct local_syncer local_syncer_t;

/* Milliseconds between relaxed-mode sync points (read by stor_open; 1000
 * unless changed). 0: no timer, only stor_sync(), stor_close() and a large
 * backlog run one (unit tests use this to look between sync points). */
extern unsigned local_sync_interval_ms;

/* The backlog's bound (read by stor_open): commits that would make more
 * than local_sync_max_files object files (16384) or local_sync_max_drops
 * dropped files (131072) owed to sync points -- the next one's and the one
 * under way's -- wait in local_syncer_throttle, up to local_sync_throttle_ms
 * (10000); docs/limits.md. */
extern unsigned local_sync_max_files, local_sync_max_drops, local_sync_throttle_ms;

/* Makes the first restore point of the store whose index is env (opened
 * with MDB_NOSYNC, nothing committed since it was synced), its directory
 * indexfd, its objects directory objfd and its pool of free files (which
 * step 5 returns the dropped files to; all stay the caller's), and starts
 * the sync thread. NULL on failure (logged). */
local_syncer_t *local_syncer_start(MDB_env *env, int objfd, local_pool_t *pool, int indexfd,
                                   unsigned interval_ms);
/* Called before a relaxed-mode write transaction begins (local_wr_begin;
 * never inside one: a sync point's cut takes LMDB's writer lock): returns
 * at once while the backlog is under its bound, else wakes the thread and
 * waits for a sync point to shrink it. 0, or -1 if it is still at its bound
 * after local_sync_throttle_ms (sync points failing, or the disk far slower
 * than the writers): the caller refuses the write (STOR_ERR_UNAVAILABLE,
 * 503 SlowDown) and changes nothing. */
int local_syncer_throttle(local_syncer_t *s);
/* A write transaction committed: the next sync point must sync the index. */
void local_syncer_committed(local_syncer_t *s);
/* The write transaction being committed makes file id part of the index
 * (call it inside the transaction): fdatasync it, and fsync its shard
 * directory, at the next sync point. */
void local_syncer_new_file(local_syncer_t *s, const uint8_t id[STOR_ID_LEN]);
/* A shard directory was created: dir is its parent, as an index into the
 * objects tree (SYNCER_DIR_*); fsync it at the next sync point. */
void local_syncer_new_dir(local_syncer_t *s, unsigned dir);
/* A commit that returned dropped file id from the index: pool or unlink it
 * once a sync point has made that commit durable. */
void local_syncer_drop_file(local_syncer_t *s, const uint8_t id[STOR_ID_LEN]);
/* Fsync mode's group commit: returns once a restore point covers snapshot
 * txnid (the id of a write transaction that committed), running a sync point
 * itself unless another thread's, begun after that commit, covers it. 0, or
 * -1 if the sync point this thread ran failed (the commit may or may not
 * survive a power loss). */
int local_syncer_wait_durable(local_syncer_t *s, uint64_t txnid);
/* The snapshot the newest restore point covers. */
uint64_t local_syncer_durable(local_syncer_t *s);
/* Asks the thread for a sync point soon (fsync mode: the commit log is
 * filling), without waiting for it. */
void local_syncer_kick(local_syncer_t *s);
/* Runs a sync point now (after any one under way). 0, or -1 if a sync
 * failed (logged; the unlinks then wait for a later sync point). */
int local_syncer_sync(local_syncer_t *s);
/* Runs a last sync point, stops the thread and frees s. NULL is a no-op. */
void local_syncer_stop(local_syncer_t *s);

/* A sync point with this many object files or more syncs them with one
 * syncfs of the objects' filesystem (one flush of the disk's cache) instead
 * of one fdatasync each (a flush each, ~280 us on this project's VM). */
#define SYNCER_SYNCFS_FILES 64u

/* Directories of the objects tree, as numbered for local_syncer_new_dir. */
#define SYNCER_DIR_ROOT     0u                                            /* objects/ */
#define SYNCER_DIR_L1(a)    (1u + (unsigned)(a))                          /* objects/ab */
#define SYNCER_DIR_L2(a, b) (257u + ((unsigned)(a) << 8 | (unsigned)(b))) /* objects/ab/cd */
#define SYNCER_N_DIRS       (257u + 65536u)

#endif
