/* Private to src/storage: the index's writable map (relaxed mode's
 * MDB_WRITEMAP, local_store.c) and what the engine does to it beyond LMDB.
 *
 * A commit writes its pages straight into the shared map of data.mdb. A
 * page the page cache does not hold yet -- past LMDB's last page as the
 * file grows (while a restore point pins a snapshot, every commit's
 * copy-on-write pages are new ones) -- is faulted in by the store into it:
 * zero-filled (a whole huge page or readahead window at a time), its
 * blocks reserved by the filesystem (ext4's page_mkwrite), inside the
 * commit, under LMDB's writer lock. local_map_open starts a thread that
 * does that ahead of time instead: it keeps the reserve (below) and
 * local_map_ahead(end) bytes beyond it past the last page resident and
 * writable (MADV_POPULATE_WRITE), refilling when half of the latter is
 * used, so commits find their new pages ready. It never writes a byte:
 * the pages are LMDB's free space, dirtied as the fault marks them (a sync
 * point may write them back, zero, before LMDB uses them).
 *
 * The reserve. A store into a page of the map that the filesystem cannot
 * back (a full disk, a full tmpfs) kills the process with SIGBUS; LMDB
 * gives no way to catch it. So a write transaction begins only once at
 * least the most it can add to the file is ready past the last page
 * (local_map_reserve), where a refusal is an error to return instead.
 * docs/storage.md "The writable map". */
#ifndef S3R_STORAGE_LOCAL_MAP_H
#define S3R_STORAGE_LOCAL_MAP_H

#include <lmdb.h>
#include <stddef.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels refuse it (EINVAL) */
#endif

/* How far past LMDB's last page, at end bytes, the thread keeps pages
 * ready: a quarter of the file in whole huge pages, at least one and at
 * most 16 of them (~25 ms of the fastest growth measured: 4 KiB overwrites on a fresh
 * store, ~1.3 GB/s). A small store is not made to take 32 MiB of disk. */
#define LOCAL_MAP_AHEAD_MIN ((size_t)2 << 20)
#define LOCAL_MAP_AHEAD_MAX ((size_t)32 << 20)
size_t local_map_ahead(size_t end);

typedef struct local_map local_map_t;

/* env: an open environment with MDB_WRITEMAP. Finds its map of data.mdb,
 * asks for huge pages on it (a hint), and starts the thread. NULL when the
 * map is not found or the thread cannot start (logged at debug): the store
 * must then not write through the map, having no reserve to check. */
local_map_t *local_map_open(MDB_env *env);

/* After each commit (NULL: nothing): wakes the thread when LMDB's last page
 * has come within the reserve and half of local_map_ahead of the end of the
 * ready pages.
 * Cheap: a read of the meta page and a compare; a lock and a signal only
 * then. */
void local_map_committed(local_map_t *m);

/* The most one write transaction adds to the file, in bytes (rounded up to
 * whole huge pages): the store's to say (local_store.c); the thread keeps
 * this much ready, and local_map_ahead more. LOCAL_MAP_AHEAD_MIN until set. */
void local_map_set_reserve(local_map_t *m, size_t bytes);

/* Inside a write transaction, before it writes (LMDB's writer lock held, so
 * no other transaction grows the file meanwhile): 0 when the reserve past
 * the last page is ready, made so here if the thread has not yet; -1
 * (errno: ENOSPC, EFAULT, ...) when the filesystem refuses those pages: the
 * transaction must be aborted without a write. Logged once per refusal
 * spell (warn), and when room is back (info). Cheap when ready: a read of
 * the meta page and a compare. */
int local_map_reserve(local_map_t *m);

/* As local_map_reserve, for the rare transaction that may add more than the
 * reserve (a bucket delete's uploads): more bytes besides it. */
int local_map_reserve_more(local_map_t *m, size_t more);

/* Stops the thread and frees m (NULL: nothing); before mdb_env_close. */
void local_map_close(local_map_t *m);

#endif
