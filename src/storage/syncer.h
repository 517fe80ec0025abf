/* Private to src/storage: the relaxed-mode sync point (syncer.c).
 *
 * In relaxed mode a commit returns without making the object file durable,
 * and LMDB (MDB_NOMETASYNC) makes a commit durable only at the next commit or
 * sync. So nothing the commit dropped may be unlinked yet: after a power loss
 * the index may come back with that commit undone and still point at those
 * files. The syncer collects what the commits since the last sync point owe
 * -- new object files and shard directories to fsync, dropped files to unlink
 * -- and pays it at a sync point, in this order:
 *
 *   1. fdatasync every object file committed since, fsync the directories
 *      holding their entries and those of newly made shard directories;
 *   2. mdb_env_sync(): every commit that returned before the sync point
 *      began is now durable (index data and meta pages);
 *   3. unlink the files those commits dropped.
 *
 * A sync point runs every stor_sync_interval_ms on its own thread (when
 * something is owed), when the backlog grows large, on stor_sync() and at
 * stor_close(). If step 2 fails, the unlinks wait for the next sync point.
 * Nothing here runs in fsync mode, where each commit is durable before it
 * returns and its dropped files are unlinked right after it. */
#ifndef S3R_STORAGE_SYNCER_H
#define S3R_STORAGE_SYNCER_H

#include <lmdb.h>
#include <stdint.h>

#include "storage/stor_internal.h"

typedef struct syncer syncer_t;

/* Milliseconds between relaxed-mode sync points (read by stor_open; 1000
 * unless changed). 0: no timer, only stor_sync(), stor_close() and a large
 * backlog run one (unit tests use this to look between sync points). */
extern unsigned stor_sync_interval_ms;

/* Starts the sync thread for the store whose index is env and whose objects
 * directory is objfd (both stay the caller's). NULL on failure. */
syncer_t *syncer_start(MDB_env *env, int objfd, unsigned interval_ms);
/* A write transaction committed: the next sync point must sync the index. */
void syncer_committed(syncer_t *s);
/* A commit that returned made file id part of the index: fdatasync it, and
 * fsync its shard directory, at the next sync point. */
void syncer_new_file(syncer_t *s, const uint8_t id[STOR_ID_LEN]);
/* A shard directory was created: dir is its parent, as an index into the
 * objects tree (SYNCER_DIR_*); fsync it at the next sync point. */
void syncer_new_dir(syncer_t *s, unsigned dir);
/* A commit that returned dropped file id from the index: unlink it once a
 * sync point has made that commit durable. */
void syncer_drop_file(syncer_t *s, const uint8_t id[STOR_ID_LEN]);
/* Runs a sync point now (after any one under way). 0, or -1 if a sync
 * failed (logged; the unlinks then wait for a later sync point). */
int syncer_sync(syncer_t *s);
/* Runs a last sync point, stops the thread and frees s. NULL is a no-op. */
void syncer_stop(syncer_t *s);

/* Directories of the objects tree, as numbered for syncer_new_dir. */
#define SYNCER_DIR_ROOT     0u                                            /* objects/ */
#define SYNCER_DIR_L1(a)    (1u + (unsigned)(a))                          /* objects/ab */
#define SYNCER_DIR_L2(a, b) (257u + ((unsigned)(a) << 8 | (unsigned)(b))) /* objects/ab/cd */
#define SYNCER_N_DIRS       (257u + 65536u)

#endif
