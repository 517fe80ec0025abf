/* Private to src/storage: the index's restore point (local_restore.c), which lets
 * relaxed mode commit to LMDB with MDB_NOSYNC and still never come back from
 * a power loss with a torn index.
 *
 * Why it is needed: with MDB_NOSYNC a commit writes its data pages and then
 * its meta page into the page cache, and the kernel writes them back in any
 * order. After a power loss the newest meta on disk may name pages that
 * never reached the disk; LMDB would open that tree. (LMDB's own docs: a
 * system crash can then corrupt the database, unless the filesystem keeps
 * write order; ext4 does not.)
 *
 * How it is avoided: a restore point is a snapshot S of the index whose pages
 * are all on disk and will stay untouched:
 *   - durable: taken at a sync point, after mdb_env_sync();
 *   - untouched: the syncer holds a read transaction on S until the next
 *     restore point is durable, and LMDB never reuses a page a live reader
 *     can see, so no later commit overwrites a page of S (later commits write
 *     only pages S does not use, or pages past S's end of file);
 *   - findable: the two meta pages of S (the first two pages of data.mdb, as
 *     they were when S was the last commit) are saved, with the boot id, in
 *     index/restore in one of two checksummed slots (the newer valid slot
 *     wins, so a torn write of one leaves the other).
 * At the next open, if the OS has been restarted since the newest restore
 * point was saved (another boot id) the page cache was lost, so every commit
 * after S may be torn: the saved meta pages are written back over data.mdb's,
 * which makes S the newest snapshot again -- exactly S, intact. If the boot is
 * the same (the process died, the OS did not) the page cache holds every
 * commit whole and nothing is rolled back. */
#ifndef S3R_STORAGE_LOCAL_RESTORE_H
#define S3R_STORAGE_LOCAL_RESTORE_H

#include <stddef.h>
#include <stdint.h>

#define RESTORE_FILE      "restore"
#define RESTORE_BOOT_LEN  40 /* room for /proc/sys/kernel/random/boot_id */
#define RESTORE_PSIZE_MAX 65536u

typedef struct local_restore local_restore_t;

/* Where the boot id is read: /proc/sys/kernel/random/boot_id unless changed
 * (unit tests point it at a file of their own to stage a reboot). */
extern const char *local_restore_boot_id_path;

/* Before mdb_env_open: if index_dirfd holds a restore point saved under
 * another boot than this one, writes its meta pages back over data.mdb's
 * (and fdatasyncs) unless they are already there. 0: nothing to do, 1: the
 * index was rolled back to the restore point, -1: error (logged; the store
 * must not open, since its index may be torn). */
int local_restore_recover(int index_dirfd);

/* Opens (creating it if absent) the restore point file in index_dirfd, which
 * stays the caller's. NULL on failure (logged). */
local_restore_t *local_restore_open(int index_dirfd);

/* Saves snapshot txnid, whose meta pages (2 * psize bytes, data.mdb's first
 * two pages) are metas, durably: into the older slot, then fdatasync. Only
 * after it returns 0 may the caller let go of the previous restore point's
 * snapshot. -1 on failure (logged): the previous restore point stands. */
int local_restore_save(local_restore_t *r, uint64_t txnid, const void *metas, size_t psize);

/* Closes r; NULL is a no-op. */
void local_restore_close(local_restore_t *r);

#endif
