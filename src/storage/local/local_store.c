/* The local-disk storage engine: an LMDB index under DIR/.s3rdma/index and
 * object bytes in DIR/.s3rdma/objects/ab/cd/<32 hex id>. docs/storage.md
 * describes the layout, the crash story and the limits.
 *
 * This file owns opening and closing a store (stor_open, stor_close,
 * stor_sync) and the helpers the other local_*.c files share (transactions,
 * bucket checks, dropped/new file bookkeeping, shard directories). */
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
#include "storage/local/local_restore.h"
#include "storage/local/local_internal.h"
#include "storage/local/local_syncer.h"
#include "storage/local/local_wal.h"

#define MAP_SIZE    (1ULL << 40) /* 1 TiB of address space; the file stays sparse */
#define MAX_READERS 1024

/* ==== Small helpers ====================================================== */

stor_status_t local_mdb_fail(const char *what, int rc)
{
    log_error("storage: %s: %s", what, mdb_strerror(rc));
    return STOR_ERR_IO;
}

/* A commit that returned dropped file id from the index (an overwrite, a
 * delete, a replaced or unused part): pool or unlink it (local_pool_return)
 * once that commit is durable. In fsync mode it already is. In relaxed mode
 * it is not until a sync point, and until then the index on disk may still
 * point at the file. */
void local_drop_file(lstor_t *st, const uint8_t id[STOR_ID_LEN])
{
    local_fdcache_forget(st, id);
    if (st->durability == STOR_DURABILITY_RELAXED)
        local_syncer_drop_file(st->syncer, id);
    else
        local_pool_return(st->pool, id);
}

/* A write transaction about to commit makes file id part of the index
 * (called inside it, before the commit, so that a sync point's cut never
 * holds a commit whose file it does not know of). In fsync mode the file and
 * its entry were synced before; relaxed mode owes them to the next sync
 * point. */
void local_new_file(lstor_t *st, const uint8_t id[STOR_ID_LEN])
{
    if (st->durability == STOR_DURABILITY_RELAXED)
        local_syncer_new_file(st->syncer, id);
}

int local_fsync_dirat(int dirfd, const char *path)
{
    int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* Bit i of st->dir_known: 1 once its directory is made sure of. The
 * acquire pairs with dir_known_set's release: a thread that sees the bit
 * sees the directory (and, in fsync mode, its durable entry). */
static int dir_known_get(const lstor_t *st, unsigned i)
{
    return __atomic_load_n(&st->dir_known[i / 8], __ATOMIC_ACQUIRE) >> (i % 8) & 1;
}

static void dir_known_set(lstor_t *st, unsigned i)
{
    __atomic_fetch_or(&st->dir_known[i / 8], (uint8_t)(1u << (i % 8)), __ATOMIC_RELEASE);
}

/* Makes sure objects/ab/cd exists for a file id, and that its entry and
 * objects/ab's are durable (fsync mode: before the first file in it is
 * acknowledged) or owed to the next sync point (relaxed). Done the first time
 * this process uses a shard, whether it makes the directory or finds it.
 *
 * No lock is held across the system calls: with a fresh store nearly every
 * new file needs a shard of its own, and a writer preempted inside mkdir or
 * fsync while holding one would stall every other writer. Two threads that
 * both find a shard unknown both make sure of it (one mkdir gets EEXIST;
 * each fsyncs the parent itself, so neither returns before the entry is
 * durable), and only then is its bit set. */
static int ensure_shard(lstor_t *st, const uint8_t id[STOR_ID_LEN])
{
    unsigned l1 = id[0], l2 = 256 + ((unsigned)id[0] << 8 | id[1]);
    if (dir_known_get(st, l2))
        return 0;
    char path[LOCAL_PATH_LEN];
    local_id_path(id, path);
    if (!dir_known_get(st, l1)) {
        path[2] = '\0';
        if (mkdirat(st->objfd, path, 0755) != 0 && errno != EEXIST)
            goto fail;
        if (st->durability == STOR_DURABILITY_RELAXED)
            local_syncer_new_dir(st->syncer, SYNCER_DIR_ROOT);
        else if (fsync(st->objfd) != 0)
            goto fail;
        dir_known_set(st, l1);
        path[2] = '/';
    }
    path[5] = '\0';
    if (mkdirat(st->objfd, path, 0755) != 0 && errno != EEXIST)
        goto fail;
    path[2] = '\0';
    if (st->durability == STOR_DURABILITY_RELAXED)
        local_syncer_new_dir(st->syncer, SYNCER_DIR_L1(id[0]));
    else if (local_fsync_dirat(st->objfd, path) != 0)
        goto fail;
    dir_known_set(st, l2);
    return 0;
fail:
    log_error("storage: shard directory for %s: %s", path, strerror(errno));
    return -1;
}

/* New files go LOCAL_SHARD_RUN at a time into one shard directory (chosen at
 * random, then the next run's at random again) rather than each into a
 * random one of the 65,536: on a store with fewer files than shards nearly
 * every new file would otherwise make a directory of its own, and making
 * an inode is the dearest part of a small write on ext4 (the mixed load of
 * docs/benchmarks.md spent 19 % of the server's CPU in mkdir). A shard so
 * holds about LOCAL_SHARD_RUN files until the store has 65,536 times that,
 * and then as many as random placement gives. The id's other 14 bytes stay
 * random. */
#define LOCAL_SHARD_RUN 256

int local_file_id_new(lstor_t *st, uint8_t id[STOR_ID_LEN])
{
    if (hash_random_bytes(id, STOR_ID_LEN) != 0)
        return -1;
    uint32_t cur = atomic_load(&st->shard_run), next;
    do {
        uint32_t n = cur & 0xffff;
        next = n == 0 || n >= LOCAL_SHARD_RUN ? (uint32_t)id[0] << 24 | (uint32_t)id[1] << 16 | 1
                                              : cur + 1;
    } while (!atomic_compare_exchange_weak(&st->shard_run, &cur, next));
    id[0] = (uint8_t)(next >> 24);
    id[1] = (uint8_t)(next >> 16);
    return ensure_shard(st, id);
}

int local_valid_bucket(const char *bucket)
{
    size_t n = strnlen(bucket, STOR_BUCKET_MAX + 1);
    return n > 0 && n <= STOR_BUCKET_MAX;
}

/* STOR_OK if the bucket exists, as seen by txn. */
stor_status_t local_bucket_exists(lstor_t *st, MDB_txn *txn, const char *bucket)
{
    if (!local_valid_bucket(bucket))
        return STOR_ERR_NO_BUCKET;
    MDB_val k = {strlen(bucket), (void *)bucket}, v;
    int rc = mdb_get(txn, st->db_buckets, &k, &v);
    if (rc == MDB_NOTFOUND)
        return STOR_ERR_NO_BUCKET;
    if (rc)
        return local_mdb_fail("bucket lookup", rc);
    return STOR_OK;
}

/* STOR_OK if the bucket named name is, as seen by txn, the bucket whose id
 * the caller saw when it authorized its request. A bucket deleted and
 * re-created under the same name since is another bucket (another id):
 * STOR_ERR_NO_BUCKET, the bucket the request was for no longer exists. Every
 * change to a bucket's contents calls this inside its write transaction, so
 * the check and the change are one atomic step. */
stor_status_t local_bucket_check(lstor_t *st, MDB_txn *txn, const char *name, uint64_t id)
{
    int versioning;
    return local_bucket_check_ver(st, txn, name, id, &versioning);
}

stor_status_t local_bucket_check_ver(lstor_t *st, MDB_txn *txn, const char *name, uint64_t id,
                                     int *versioning_p)
{
    if (!local_valid_bucket(name))
        return STOR_ERR_NO_BUCKET;
    MDB_val k = {strlen(name), (void *)name}, v;
    int rc = mdb_get(txn, st->db_buckets, &k, &v);
    if (rc == MDB_NOTFOUND)
        return STOR_ERR_NO_BUCKET;
    if (rc)
        return local_mdb_fail("bucket lookup", rc);
    stor_bucket_t b;
    if (stor_rec_decode_bucket(v.mv_data, v.mv_size, &b) != STOR_OK) {
        log_error("storage: corrupt bucket record %s", name);
        return STOR_ERR_IO;
    }
    *versioning_p = b.versioning;
    return b.id == id ? STOR_OK : STOR_ERR_NO_BUCKET;
}

stor_status_t local_rd_begin(lstor_t *st, MDB_txn **txn_p)
{
    int rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, txn_p);
    return rc ? local_mdb_fail("read txn", rc) : STOR_OK;
}

stor_status_t local_wr_begin(lstor_t *st, MDB_txn **txn_p)
{
    int rc = mdb_txn_begin(st->env, NULL, 0, txn_p);
    return rc ? local_mdb_fail("write txn", rc) : STOR_OK;
}

/* The operation is recorded before it is made: a key or value may point
 * into a page of the index that the operation itself moves. */
int local_wr_put(lstor_t *st, MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v, unsigned flags)
{
    local_wal_capture_op(st->wal, 0, dbi, k, v);
    int rc = mdb_put(txn, dbi, k, v, flags);
    if (rc)
        local_wal_capture_undo(st->wal);
    return rc;
}

int local_wr_del(lstor_t *st, MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v)
{
    local_wal_capture_op(st->wal, 1, dbi, k, v);
    int rc = mdb_del(txn, dbi, k, v);
    if (rc)
        local_wal_capture_undo(st->wal);
    return rc;
}

/* Raises st->unlogged_last to at least id. */
void local_unlogged(lstor_t *st, uint64_t id)
{
    uint64_t cur = atomic_load(&st->unlogged_last);
    while (cur < id && !atomic_compare_exchange_weak(&st->unlogged_last, &cur, id))
        ;
}

stor_status_t local_wr_commit_only(lstor_t *st, MDB_txn *txn, uint64_t *txnid_p)
{
    *txnid_p = (uint64_t)mdb_txn_id(txn);
    int logged = local_wal_capturing(st->wal);
    /* Fsync mode: a commit outside the log is known, before it can be seen,
     * to every group that commits after it (local_group.c). */
    if (st->wal && !logged)
        local_unlogged(st, *txnid_p);
    int rc = mdb_txn_commit(txn);
    if (rc)
        return local_mdb_fail("commit", rc);
    /* Relaxed: in the page cache is enough; the next sync point owes it.
     * Fsync, logged: durable through the log, but a sync point is owed to
     * bound the log and the index's growth (a restore point pins pages). */
    if (st->durability == STOR_DURABILITY_RELAXED || logged)
        local_syncer_committed(st->syncer);
    return STOR_OK;
}

stor_status_t local_wr_durable(lstor_t *st, uint64_t txnid)
{
    /* Fsync: durable before it returns, through a sync point that may be
     * shared with the commits of other threads (group commit). */
    if (st->durability == STOR_DURABILITY_RELAXED)
        return STOR_OK;
    return local_syncer_wait_durable(st->syncer, txnid) == 0 ? STOR_OK : STOR_ERR_IO;
}

stor_status_t local_wr_commit(lstor_t *st, MDB_txn *txn)
{
    uint64_t id;
    stor_status_t s = local_wr_commit_only(st, txn, &id);
    return s == STOR_OK ? local_wr_durable(st, id) : s;
}

int local_is_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return s[n] == '\0';
}

/* ==== Open / close and orphan cleanup ==================================== */

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
        if ((rc = mdb_env_open(st->env, path, flags[i], 0644)) == 0)
            return STOR_OK;
        mdb_env_close(st->env);
        st->env = NULL;
        if (i == 0)
            log_warn("storage: %s: the index cannot be mapped writable (%s): commits copy "
                     "their pages instead",
                     path, mdb_strerror(rc));
    }
    return local_mdb_fail("env open", rc);
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
static int local_ready(stor_t *st_);
static void local_set_inline_max(stor_t *st_, size_t bytes);

/* The local backend (stor_backend.h): this file and the other local_*.c files. */
static const stor_ops_t local_ops = {
    .name = "local",
    .close = local_close,
    .sync = local_sync,
    .usage = local_usage,
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

    if ((rc = mdb_txn_begin(st->env, NULL, 0, &txn)) != 0 ||
        (rc = mdb_dbi_open(txn, "buckets", MDB_CREATE, &st->db_buckets)) != 0 ||
        (rc = mdb_dbi_open(txn, "objects", MDB_CREATE, &st->db_objects)) != 0 ||
        (rc = mdb_dbi_open(txn, "uploads", MDB_CREATE, &st->db_uploads)) != 0 ||
        (rc = mdb_dbi_open(txn, "parts", MDB_CREATE, &st->db_parts)) != 0 ||
        (rc = mdb_dbi_open(txn, "versions", MDB_CREATE, &st->db_versions)) != 0 ||
        (rc = mdb_dbi_open(txn, "upload_keys", MDB_CREATE | MDB_DUPSORT, &st->db_upload_keys)) !=
            0) {
        if (txn)
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

void local_usage_change(lstor_t *st, int64_t objects, int64_t bytes)
{
    atomic_fetch_add(&st->n_objects, (uint64_t)objects);
    atomic_fetch_add(&st->n_bytes, (uint64_t)bytes);
}

static void local_set_inline_max(stor_t *st_, size_t bytes)
{
    lstor_t *st = (lstor_t *)st_;
    st->inline_max = bytes < S3R_INLINE_MAX_LIMIT ? bytes : S3R_INLINE_MAX_LIMIT;
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
