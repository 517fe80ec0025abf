/* Private to src/storage: fsync mode's commit log (local_wal.c), which makes a
 * group of object changes durable with one flush instead of two.
 *
 * Without it, a commit in fsync mode is durable once a sync point covers it
 * (local_syncer.h): an fdatasync of data.mdb, then the restore point's save and its
 * fdatasync -- two flushes in a row, in that order (the restore point may
 * only name pages that are on disk). With it, the group committer
 * (local_group.c) records, while it applies a group, every put and delete the
 * group makes to the index's tables; after the commit it appends them as one
 * checksummed record, tagged with the commit's transaction id, to
 * index/wal, and the group is durable once that record is: one fdatasync of
 * a file written in place. Sync points still run (on the timer, on a
 * backlog, at close), and they bound the log: once a restore point covers
 * every record, the log starts over.
 *
 * Recovery (stor_open, before anything else reads the index): the index is
 * first back at a restore point S if the OS went down (local_restore.h); then every
 * record of the log's current generation whose transaction id is above the
 * index's last one is applied again, in order, in one write transaction.
 * The records are exact puts and deletes, so applying again a suffix of the
 * records already applied leaves the index as it was: a crash in the middle
 * of a recovery is recovered by the next. A record that does not check
 * (torn: never acknowledged) ends the log.
 *
 * What the log relies on: a record is appended after its commit (so it never
 * holds a change the index does not have) and before the next group's
 * record; and every commit that is not logged (buckets, multipart, a group
 * that could not be logged) and came before a record is covered by a restore
 * point before that record is appended (local_group.c), so that a replay
 * never builds on a change that was lost. */
#ifndef S3R_STORAGE_LOCAL_WAL_H
#define S3R_STORAGE_LOCAL_WAL_H

#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/storage.h"

#define WAL_FILE "wal"
/* The tables a record can name, by their index in the dbis array given to
 * local_wal_replay and local_wal_open. */
#define WAL_MAX_TABLES 8

typedef struct local_wal local_wal_t;

/* Bytes the log may take before it must start over (default 32 MiB; unit
 * tests lower it to make it wrap). A group whose record does not fit while
 * the log cannot start over yet is made durable by a sync point instead. */
extern size_t local_wal_max_bytes;

/* At open, before the index is read or written: applies, in one write
 * transaction of env, the records of index_dirfd's log whose transaction id
 * is above last (the index's last transaction when it was opened); dbis are
 * the tables by number. *n_p: records applied. 0 (also when there is no
 * log), or -1 (logged): the store must not open. */
int local_wal_replay(int index_dirfd, MDB_env *env, uint64_t last, const MDB_dbi *dbis,
                     unsigned n_dbis, unsigned *n_p);

/* Opens (creating it) the log for writing and starts a new generation,
 * durably, so that no record of an earlier one is applied again: call once a
 * restore point covers the index. index_dirfd stays the caller's. NULL on
 * failure (logged). */
local_wal_t *local_wal_open(int index_dirfd, const MDB_dbi *dbis, unsigned n_dbis);
/* Removes index_dirfd's log, if any, durably (a store opened without one
 * after a replay). 0 or -1 (logged). */
int local_wal_remove(int index_dirfd);
/* Closes w; NULL is a no-op. */
void local_wal_close(local_wal_t *w);

/* Records, in the calling thread, the puts and deletes reported by
 * local_wal_capture_op until local_wal_capture_end: call right after beginning the
 * write transaction (again after starting it over). */
void local_wal_capture_begin(local_wal_t *w);
/* 1 if the calling thread is recording for w. */
int local_wal_capturing(const local_wal_t *w);
/* A put (v: the value) or a delete (v NULL: the key; else that duplicate)
 * the calling thread is making in its write transaction (report it before
 * making it, and local_wal_capture_undo it if it fails); ignored unless it is
 * recording for w. Out of memory makes the record unloggable (local_wal_append
 * then returns 1). */
void local_wal_capture_op(local_wal_t *w, int del, MDB_dbi dbi, const MDB_val *k, const MDB_val *v);
/* Takes back the last local_wal_capture_op (its operation failed). */
void local_wal_capture_undo(local_wal_t *w);
/* Stops recording (the record stays for local_wal_append). */
void local_wal_capture_end(local_wal_t *w);

/* Appends what the calling thread recorded as the record of committed
 * transaction txnid (into the page cache; call in commit order). 0: appended,
 * *lsn_p is what local_wal_flush must reach; 1: not logged (the log is full, or
 * the record could not be made): the caller makes the commit durable another
 * way; -1: I/O error (logged; not logged either). */
int local_wal_append(local_wal_t *w, uint64_t txnid, uint64_t *lsn_p);
/* Returns once everything appended up to lsn is on disk, flushing it itself
 * unless another thread's flush, begun after that append, covers it (one
 * fdatasync for all the records appended meanwhile). 0, or -1 if the flush
 * failed. A thread that ran a flush also serves the waiters of
 * local_wal_await before it returns (flushing again while one is
 * pending). */
int local_wal_flush(local_wal_t *w, uint64_t lsn);
/* Calls done(arg, STOR_OK) once everything appended up to lsn is on disk,
 * or done(arg, STOR_ERR_IO) if a flush failed first (or the log was
 * broken already), exactly once. The flushes are run by whichever thread
 * finds none under way: this one, if none is, flushing until no waiter of
 * any thread is pending (calling done for each, outside the lock); else the
 * thread flushing calls done once its flush covers lsn. Waiters hold a few
 * bytes each (out of memory: this thread flushes and calls done itself);
 * how many wait is the callers' to bound. */
void local_wal_await(local_wal_t *w, uint64_t lsn, stor_durable_fn done, void *arg);
/* Half the log or more is used: a sync point should run soon. */
int local_wal_filling(local_wal_t *w);
/* The transaction id of the last record appended (0: none since the start). */
uint64_t local_wal_last_txnid(local_wal_t *w);
/* Starts the log over (a new generation, durably): call only once a restore
 * point covers local_wal_last_txnid(). 0, or -1 (logged; the log then refuses
 * records: every commit goes through sync points). */
int local_wal_restart(local_wal_t *w);

#endif
