/* The local-disk storage engine: an LMDB index under DIR/.s3rdma/index and
 * object bytes in DIR/.s3rdma/objects/ab/cd/<32 hex id>. docs/storage.md
 * describes the layout, the crash story and the limits.
 *
 * This file is the engine's spine, on top of the others: the ops table
 * (stor_backend.h) and opening and closing a store (stor_open, stor_close,
 * stor_sync). The helpers the local_*.c files share are below them:
 * local_index.c (transactions, bucket checks) and local_files.c (object
 * file ids, shard directories, dropped and new files). */
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/s3r_limits.h"
#include "storage/local/local_internal.h"
#include "storage/local/local_map.h"
#include "storage/local/local_restore.h"
#include "storage/local/local_syncer.h"
#include "storage/local/local_wal.h"

#define MAP_SIZE    (1ULL << 40) /* 1 TiB of address space; the file stays sparse */
#define MAX_READERS 1024

/* ==== Open / close ======================================================== */

/* Opens the index (LMDB environment in path) into st->env.
 *
 * A commit writes into the page cache and flushes nothing (it survives the
 * process, not the OS). Sync points flush and save restore points, so a
 * power loss loses at most the commits since the last one and never tears
 * the index (local_restore.h): both modes run one about once a second; in fsync
 * mode a PUT's or DELETE's group is durable before it returns through its
 * record in the commit log (local_wal.h), and any other commit waits for a sync
 * point, shared by the commits that wait for it together
 * (local_syncer_wait_durable).
 *
 * Relaxed mode maps the index writable (MDB_WRITEMAP): a commit writes its
 * pages straight into the shared map (the page cache) instead of copying
 * them there with a pwrite/writev per run of pages, which was most of a
 * small commit's cost; the meta page too. LMDB then sizes data.mdb to the
 * whole map (MAP_SIZE, sparse: only pages written take space). A
 * filesystem that refuses a file that large gets the index without it.
 * Fsync mode does not: with a sync point per group of commits (before the
 * commit log) it measured 4-5x fewer PUT/s at 16 threads on disk (ext4)
 * with the map than without;
 * its fdatasyncs then also waited for synchronous writes of the inode
 * (ext4_write_inode) and for pages under writeback (docs/storage.md). */
static stor_status_t index_open(lstor_t *st, const char *path)
{
    int rc = 0;
    unsigned flags[2] = {MDB_NOTLS | MDB_NOSYNC | MDB_WRITEMAP, MDB_NOTLS | MDB_NOSYNC};
    for (int i = st->durability == STOR_DURABILITY_RELAXED ? 0 : 1; i < 2; i++) {
        if ((rc = mdb_env_create(&st->env)) != 0)
            return local_mdb_fail("env create", rc);
        mdb_env_set_mapsize(st->env, MAP_SIZE);
        mdb_env_set_maxdbs(st->env, 8);
        mdb_env_set_maxreaders(st->env, MAX_READERS);
        if ((rc = mdb_env_open(st->env, path, flags[i], 0644)) == 0) {
            if (!(flags[i] & MDB_WRITEMAP))
                return STOR_OK;
            /* Without its reserve (local_map.h) a full disk would kill the
             * process through the map. */
            if ((st->map = local_map_open(st->env)) != NULL) {
                local_map_set_reserve(st->map, local_txn_growth_max(st));
                return STOR_OK;
            }
        }
        mdb_env_close(st->env);
        st->env = NULL;
        if (i == 0)
            log_warn("storage: %s: the index cannot be mapped writable (%s): commits copy "
                     "their pages instead",
                     path, rc ? mdb_strerror(rc) : "its map was not found");
    }
    return local_mdb_fail("env open", rc);
}

/* LMDB maps lock.mdb (its reader table, ~64 KiB for MAX_READERS) shared
 * and writable, sized but sparse: a read transaction taking a slot in a
 * page not written before stores into a hole, which on a full disk kills
 * the process with SIGBUS (both modes; local_map.h is the same story for
 * data.mdb). Its blocks are reserved once, at open: 0, or an errno. */
static int lock_table_reserve(int indexfd)
{
    struct stat sb;
    int fd = openat(indexfd, "lock.mdb", O_RDWR | O_CLOEXEC);
    int rc = fd < 0 || fstat(fd, &sb) != 0 ? errno : posix_fallocate(fd, 0, sb.st_size);
    if (fd >= 0)
        close(fd);
    return rc;
}

/* 1 if it made the directory, 0 if it was there, -1 on error. */
static int mkdir_new(const char *path)
{
    if (mkdir(path, 0755) == 0)
        return 1;
    return errno == EEXIST ? 0 : -1;
}

/* fsyncs the directory holding path's entry. */
static int fsync_parent(const char *path)
{
    char *p = strdup(path);
    if (!p)
        return -1;
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        p[--n] = '\0';
    char *slash = strrchr(p, '/');
    const char *parent = !slash ? "." : slash == p ? "/" : (*slash = '\0', p);
    int rc = local_fsync_dirat(AT_FDCWD, parent);
    free(p);
    return rc;
}

static void local_close(stor_t *st_);
static stor_status_t local_sync(stor_t *st_);
static void local_usage(stor_t *st_, uint64_t *objects_p, uint64_t *bytes_p);
static uint64_t local_index_bytes(stor_t *st_);
static int local_ready(stor_t *st_);
static void local_set_inline_max(stor_t *st_, size_t bytes);

/* The local backend (stor_backend.h): this file and the other local_*.c files. */
static const stor_ops_t local_ops = {
    .name = "local",
    .close = local_close,
    .sync = local_sync,
    .usage = local_usage,
    .index_bytes = local_index_bytes,
    .ready = local_ready,
    .set_inline_max = local_set_inline_max,
    .bucket_create = local_bucket_create,
    .bucket_get = local_bucket_get,
    .bucket_read = local_bucket_read,
    .bucket_change = local_bucket_change,
    .bucket_delete = local_bucket_delete,
    .bucket_list = local_bucket_list,
    .writer_open = local_writer_open,
    .writer_write = local_writer_write,
    .writer_size = local_writer_size,
    .writer_commit_if = local_writer_commit_if,
    .writer_abort = local_writer_abort,
    .writer_commit_later = local_writer_commit_later,
    .ticket_await = local_ticket_await,
    .head = local_head,
    .reader_open = local_reader_open,
    .reader_meta = local_reader_meta,
    .reader_pread = local_reader_pread,
    .reader_span_fd = local_reader_span_fd,
    .reader_close = local_reader_close,
    .delete = local_delete,
    .object_change = local_object_change,
    .iter_open = local_iter_open,
    .iter_seek = local_iter_seek,
    .iter_next = local_iter_next,
    .iter_close = local_iter_close,
    .mpu_create = local_mpu_create,
    .mpu_check = local_mpu_check,
    .part_commit = local_part_commit,
    .mpu_list_parts = local_mpu_list_parts,
    .mpu_complete = local_mpu_complete,
    .mpu_abort = local_mpu_abort,
    .mpu_list = local_mpu_list,
    .head_version = local_head_version,
    .reader_open_version = local_reader_open_version,
    .delete_version = local_delete_version,
    .iter_open_versions = local_iter_open_versions,
    .iter_next_version = local_viter_next,
};

stor_status_t stor_open(const char *dir, stor_durability_t durability, stor_t **out_p)
{
    lstor_t *st = calloc(1, sizeof *st);
    if (!st)
        return STOR_ERR_NOMEM;
    st->base.ops = &local_ops;
    st->objfd = st->lockfd = -1;
    st->durability = durability;
    st->inline_max = S3R_INLINE_MAX_DEFAULT;
    local_fdcache_init(st);
    pthread_mutex_init(&st->group_lock, NULL);

    size_t n = strlen(dir) + 32;
    char *root = malloc(n), *path = malloc(n);
    stor_status_t s = STOR_ERR_NOMEM;
    MDB_txn *txn = NULL;
    int rc, indexfd = -1;
    if (!root || !path)
        goto fail;
    s = STOR_ERR_IO;
    snprintf(root, n, "%s/.s3rdma", dir);
    int made_dir = mkdir_new(dir);
    if (made_dir < 0 || mkdir_new(root) < 0) {
        log_error("storage: cannot create %s: %s", root, strerror(errno));
        goto fail;
    }
    snprintf(path, n, "%s/lock", root);
    st->lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (st->lockfd < 0 || flock(st->lockfd, LOCK_EX | LOCK_NB) != 0) {
        log_error("storage: %s is in use or unwritable: %s", root, strerror(errno));
        goto fail;
    }
    snprintf(path, n, "%s/objects", root);
    if (mkdir_new(path) < 0 || (st->objfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        log_error("storage: %s: %s", path, strerror(errno));
        goto fail;
    }
    snprintf(path, n, "%s/" LOCAL_POOL_DIR, root);
    /* Relaxed mode pools nothing (its sync points refill a pool seconds
     * apart under load, and that measured slower: docs/benchmarks.md). */
    if (!(st->pool = local_pool_open(path, st->objfd,
                                     durability == STOR_DURABILITY_FSYNC ? LOCAL_POOL_MAX : 0)))
        goto fail;
    snprintf(path, n, "%s/index", root);
    if (mkdir_new(path) < 0) {
        log_error("storage: %s: %s", path, strerror(errno));
        goto fail;
    }
    /* The entries of lock, objects and index (in root), of root (in dir) and,
     * if we made it, of dir (in its parent) are durable before anything
     * relies on them. Both modes, once per open: losing one to a power loss
     * would lose the whole index (and then the sweep the objects). */
    if (local_fsync_dirat(AT_FDCWD, root) != 0 || local_fsync_dirat(AT_FDCWD, dir) != 0 ||
        (made_dir && fsync_parent(dir) != 0)) {
        log_error("storage: fsync %s and its parents: %s", root, strerror(errno));
        goto fail;
    }

    /* An index a power loss may have torn (relaxed mode's commits since its
     * last restore point) goes back to that restore point first. */
    if ((indexfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
        local_restore_recover(indexfd) < 0) {
        log_error("storage: %s: cannot check the index against its restore point", path);
        goto fail;
    }
    if ((s = index_open(st, path)) != STOR_OK)
        goto fail;
    s = STOR_ERR_IO;
    /* data.mdb and lock.mdb, which mdb_env_open may just have made. */
    if (local_fsync_dirat(AT_FDCWD, path) != 0) {
        log_error("storage: fsync %s: %s", path, strerror(errno));
        goto fail;
    }
    /* Not fatal: a full disk at open still serves reads (and the slots
     * past the first page are taken only by more than ~60 concurrent
     * readers). */
    if ((rc = lock_table_reserve(indexfd)) != 0)
        log_warn("storage: %s/lock.mdb: cannot reserve its blocks (%s): a full disk may stop "
                 "the server",
                 path, strerror(rc));
    if (mdb_env_get_maxkeysize(st->env) < LOCAL_IKEY_MAX) {
        log_error("storage: LMDB max key size %d < %d", mdb_env_get_maxkeysize(st->env),
                  LOCAL_IKEY_MAX);
        goto fail;
    }
    int dead = 0;
    mdb_reader_check(st->env, &dead);
    /* The last commit the index has (after a rollback, the restore point's):
     * the commit log's records past it are applied again below. */
    MDB_envinfo info;
    mdb_env_info(st->env, &info);
    uint64_t last = (uint64_t)info.me_last_txnid;

    /* Through local_wr_begin, as every write: the map's reserve is checked
     * before the tables and the upload key index below are written. */
    if ((s = local_wr_begin(st, &txn)) != STOR_OK)
        goto fail;
    if ((rc = mdb_dbi_open(txn, "buckets", MDB_CREATE, &st->db_buckets)) != 0 ||
        (rc = mdb_dbi_open(txn, "objects", MDB_CREATE, &st->db_objects)) != 0 ||
        (rc = mdb_dbi_open(txn, "uploads", MDB_CREATE, &st->db_uploads)) != 0 ||
        (rc = mdb_dbi_open(txn, "parts", MDB_CREATE, &st->db_parts)) != 0 ||
        (rc = mdb_dbi_open(txn, "versions", MDB_CREATE, &st->db_versions)) != 0 ||
        (rc = mdb_dbi_open(txn, "upload_keys", MDB_CREATE | MDB_DUPSORT, &st->db_upload_keys)) !=
            0) {
        mdb_txn_abort(txn);
        s = local_mdb_fail("open tables", rc);
        goto fail;
    }
    /* A data directory from before the uploads' key index gets it now. */
    if ((s = local_mpu_index_build(st, txn)) != STOR_OK) {
        mdb_txn_abort(txn);
        goto fail;
    }
    /* mdb_txn_commit frees the transaction even when it fails. */
    if ((rc = mdb_txn_commit(txn)) != 0) {
        s = local_mdb_fail("open tables", rc);
        goto fail;
    }
    /* Fsync mode's logged commits the index lost with the OS (before the
     * sweep, which would delete their files). */
    const MDB_dbi dbis[] = {st->db_buckets, st->db_objects,  st->db_uploads,
                            st->db_parts,   st->db_versions, st->db_upload_keys};
    unsigned replayed;
    s = STOR_ERR_IO; /* every failure from here on (it was STOR_OK) */
    if (local_wal_replay(indexfd, st->env, last, dbis, sizeof dbis / sizeof *dbis, &replayed) != 0)
        goto fail;

    /* What an earlier process committed is made durable before the sweep
     * deletes files on the index's word (a relaxed process that died may have
     * left commits that dropped files not yet on disk), and before this one
     * builds on it. */
    if ((rc = mdb_env_sync(st->env, 1)) != 0) {
        s = local_mdb_fail("index sync", rc);
        goto fail;
    }
    local_sweep_orphans(st);
    /* The object files an earlier process wrote: one that died in relaxed
     * mode (kill -9, same boot) left them to the kernel's writeback, and the
     * index now durably points at them. */
    if (syncfs(st->objfd) != 0) {
        log_error("storage: syncfs %s: %s", dir, strerror(errno));
        goto fail;
    }
    /* Both modes run the timer: fsync mode's logged commits owe a sync
     * point too (it bounds the log). */
    if (!(st->syncer =
              local_syncer_start(st->env, st->objfd, st->pool, indexfd, local_sync_interval_ms)))
        goto fail;
    /* A restore point now covers every record of the log: fsync mode starts
     * it over, relaxed mode removes it (its records must never be applied
     * again over later commits). */
    if (durability == STOR_DURABILITY_FSYNC
            ? !(st->wal = local_wal_open(indexfd, dbis, sizeof dbis / sizeof *dbis))
            : local_wal_remove(indexfd) != 0)
        goto fail;
    close(indexfd);
    free(root);
    free(path);
    *out_p = &st->base;
    return STOR_OK;
fail:
    if (indexfd >= 0)
        close(indexfd);
    free(root);
    free(path);
    local_close(&st->base);
    return s;
}

static void local_usage(stor_t *st_, uint64_t *objects_p, uint64_t *bytes_p)
{
    lstor_t *st = (lstor_t *)st_;
    *objects_p = atomic_load(&st->n_objects);
    *bytes_p = atomic_load(&st->n_bytes);
}

static uint64_t local_index_bytes(stor_t *st_)
{
    lstor_t *st = (lstor_t *)st_;
    MDB_envinfo info;
    MDB_stat stat;
    if (mdb_env_info(st->env, &info) != 0 || mdb_env_stat(st->env, &stat) != 0)
        return 0;
    return ((uint64_t)info.me_last_pgno + 1) * stat.ms_psize;
}

static void local_set_inline_max(stor_t *st_, size_t bytes)
{
    lstor_t *st = (lstor_t *)st_;
    st->inline_max = bytes < S3R_INLINE_MAX_LIMIT ? bytes : S3R_INLINE_MAX_LIMIT;
    if (st->map)
        local_map_set_reserve(st->map, local_txn_growth_max(st));
}

static int local_ready(stor_t *st_)
{
    lstor_t *st = (lstor_t *)st_;
    struct stat sb;
    return fstat(st->objfd, &sb) == 0 && sb.st_nlink > 0 &&
           faccessat(st->objfd, ".", W_OK | X_OK, AT_EACCESS) == 0;
}

static void local_close(stor_t *st_)
{
    lstor_t *st = (lstor_t *)st_;
    if (!st)
        return;
    /* A last sync point: in relaxed mode everything acknowledged becomes
     * durable and the dropped files go (in fsync mode it already was). */
    local_syncer_stop(st->syncer);
    local_pool_close(st->pool);
    local_wal_close(st->wal);
    local_map_close(st->map);
    if (st->env)
        mdb_env_close(st->env);
    if (st->objfd >= 0)
        close(st->objfd);
    if (st->lockfd >= 0)
        close(st->lockfd);
    local_fdcache_free(st);
    pthread_mutex_destroy(&st->group_lock);
    free(st);
}

static stor_status_t local_sync(stor_t *st_)
{
    lstor_t *st = (lstor_t *)st_;
    return local_syncer_sync(st->syncer) == 0 ? STOR_OK : STOR_ERR_IO;
}
