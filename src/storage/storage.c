/* The local-disk storage engine: an LMDB index under DIR/.s3rdma/index and
 * object bytes in DIR/.s3rdma/objects/ab/cd/<32 hex id>. docs/storage.md
 * describes the layout, the crash story and the limits. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <lmdb.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/log.h"
#include "common/s3r_limits.h"
#include "storage/stor_internal.h"
#include "storage/syncer.h"

#define MAP_SIZE     (1ULL << 40) /* 1 TiB of address space; the file stays sparse */
#define MAX_READERS  1024
#define OPEN_RETRIES 64

struct stor {
    MDB_env *env;
    MDB_dbi db_buckets; /* name -> bucket record */
    MDB_dbi db_objects; /* index key (stor_internal.h) -> object record */
    MDB_dbi db_uploads; /* bucket \0 upload id -> upload record */
    MDB_dbi db_parts;   /* upload id (32 hex) + be32 part number -> part record */
    stor_durability_t durability;
    int objfd;  /* DIR/.s3rdma/objects */
    int lockfd; /* flock'ed: one process per data directory */
    /* Relaxed mode only: the sync point that makes commits, their files and
     * directories durable and then unlinks what they dropped (syncer.h). */
    syncer_t *syncer;
    /* Shard directories this process has made sure of (bit i: level-1 dir i,
     * bit 256 + (a << 8 | b): level-2 dir a/b): they exist, and their entries
     * are durable (fsync mode) or owed to the next sync point (relaxed), so a
     * write pays for mkdir and the parent fsync only the first time a shard
     * is used. Not seeded from the directories found at open: one an earlier
     * process made (a relaxed one, or one that crashed between its mkdir and
     * the parent's fsync) may not have a durable entry. */
    pthread_mutex_t dir_lock;
    uint8_t dir_known[(256 + 65536) / 8];
};

struct stor_writer {
    stor_t *st;
    char bucket[STOR_BUCKET_MAX + 1];
    uint64_t bucket_id; /* which bucket of that name (stor_bucket_t.id) */
    uint8_t id[STOR_ID_LEN];
    char path[STOR_PATH_LEN];
    int fd;
    uint64_t size;
};

/* ==== Small helpers ====================================================== */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static stor_status_t mdb_fail(const char *what, int rc)
{
    log_error("storage: %s: %s", what, mdb_strerror(rc));
    return STOR_ERR_IO;
}

/* A commit that returned dropped file id from the index (an overwrite, a
 * delete, a replaced or unused part): unlink it once that commit is durable.
 * In fsync mode it already is. In relaxed mode it is not until a sync point,
 * and until then the index on disk may still point at the file. */
static void drop_file(stor_t *st, const uint8_t id[STOR_ID_LEN])
{
    if (st->syncer) {
        syncer_drop_file(st->syncer, id);
        return;
    }
    char path[STOR_PATH_LEN];
    stor_id_path(id, path);
    if (unlinkat(st->objfd, path, 0) != 0 && errno != ENOENT)
        log_warn("storage: unlink %s: %s", path, strerror(errno));
}

/* A commit that returned made file id part of the index. In fsync mode the
 * file and its entry were synced before that commit; relaxed mode owes them
 * to the next sync point. */
static void new_file(stor_t *st, const uint8_t id[STOR_ID_LEN])
{
    if (st->syncer)
        syncer_new_file(st->syncer, id);
}

static int fsync_dirat(int dirfd, const char *path)
{
    int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

static int bit_get(const uint8_t *bits, unsigned i)
{
    return bits[i / 8] >> (i % 8) & 1;
}

static void bit_set(uint8_t *bits, unsigned i)
{
    bits[i / 8] |= (uint8_t)(1u << (i % 8));
}

/* Makes sure objects/ab/cd exists for a file id, and that its entry and
 * objects/ab's are durable (fsync mode: before the first file in it is
 * acknowledged) or owed to the next sync point (relaxed). Done the first time
 * this process uses a shard, whether it makes the directory or finds it. */
static int ensure_shard(stor_t *st, const uint8_t id[STOR_ID_LEN])
{
    unsigned l1 = id[0], l2 = 256 + ((unsigned)id[0] << 8 | id[1]);
    int rc = 0;
    pthread_mutex_lock(&st->dir_lock);
    if (bit_get(st->dir_known, l2))
        goto out;
    char path[STOR_PATH_LEN];
    stor_id_path(id, path);
    if (!bit_get(st->dir_known, l1)) {
        path[2] = '\0';
        if (mkdirat(st->objfd, path, 0755) != 0 && errno != EEXIST)
            goto fail;
        if (st->syncer)
            syncer_new_dir(st->syncer, SYNCER_DIR_ROOT);
        else if (fsync(st->objfd) != 0)
            goto fail;
        bit_set(st->dir_known, l1);
        path[2] = '/';
    }
    path[5] = '\0';
    if (mkdirat(st->objfd, path, 0755) != 0 && errno != EEXIST)
        goto fail;
    path[2] = '\0';
    if (st->syncer)
        syncer_new_dir(st->syncer, SYNCER_DIR_L1(id[0]));
    else if (fsync_dirat(st->objfd, path) != 0)
        goto fail;
    bit_set(st->dir_known, l2);
out:
    pthread_mutex_unlock(&st->dir_lock);
    return rc;
fail:
    log_error("storage: shard directory for %s: %s", path, strerror(errno));
    rc = -1;
    goto out;
}

static int valid_bucket(const char *bucket)
{
    size_t n = strnlen(bucket, STOR_BUCKET_MAX + 1);
    return n > 0 && n <= STOR_BUCKET_MAX;
}

/* STOR_OK if the bucket exists, as seen by txn. */
static stor_status_t bucket_exists(stor_t *st, MDB_txn *txn, const char *bucket)
{
    if (!valid_bucket(bucket))
        return STOR_ERR_NO_BUCKET;
    MDB_val k = {strlen(bucket), (void *)bucket}, v;
    int rc = mdb_get(txn, st->db_buckets, &k, &v);
    if (rc == MDB_NOTFOUND)
        return STOR_ERR_NO_BUCKET;
    if (rc)
        return mdb_fail("bucket lookup", rc);
    return STOR_OK;
}

/* STOR_OK if the bucket named name is, as seen by txn, the bucket whose id
 * the caller saw when it authorized its request. A bucket deleted and
 * re-created under the same name since is another bucket (another id):
 * STOR_ERR_NO_BUCKET, the bucket the request was for no longer exists. Every
 * change to a bucket's contents calls this inside its write transaction, so
 * the check and the change are one atomic step. */
static stor_status_t bucket_check(stor_t *st, MDB_txn *txn, const char *name, uint64_t id)
{
    if (!valid_bucket(name))
        return STOR_ERR_NO_BUCKET;
    MDB_val k = {strlen(name), (void *)name}, v;
    int rc = mdb_get(txn, st->db_buckets, &k, &v);
    if (rc == MDB_NOTFOUND)
        return STOR_ERR_NO_BUCKET;
    if (rc)
        return mdb_fail("bucket lookup", rc);
    stor_bucket_t b;
    if (stor_rec_decode_bucket(v.mv_data, v.mv_size, &b) != STOR_OK) {
        log_error("storage: corrupt bucket record %s", name);
        return STOR_ERR_IO;
    }
    return b.id == id ? STOR_OK : STOR_ERR_NO_BUCKET;
}

static stor_status_t rd_begin(stor_t *st, MDB_txn **txn_p)
{
    int rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, txn_p);
    return rc ? mdb_fail("read txn", rc) : STOR_OK;
}

static stor_status_t wr_begin(stor_t *st, MDB_txn **txn_p)
{
    int rc = mdb_txn_begin(st->env, NULL, 0, txn_p);
    return rc ? mdb_fail("write txn", rc) : STOR_OK;
}

static stor_status_t wr_commit(stor_t *st, MDB_txn *txn)
{
    int rc = mdb_txn_commit(txn);
    if (rc)
        return mdb_fail("commit", rc);
    if (st->syncer)
        syncer_committed(st->syncer);
    return STOR_OK;
}

/* Looks bucket/key up in txn and decodes its record. STOR_ERR_NO_KEY when
 * absent. A long key whose hash slot holds another key (a 64-bit collision)
 * is reported as STOR_ERR_IO rather than silently aliased. */
static stor_status_t obj_get(stor_t *st, MDB_txn *txn, const char *bucket, const char *key,
                             stor_obj_rec_t *rec, MDB_val *ikey_out, uint8_t *ikey_buf)
{
    size_t klen = strlen(key);
    size_t n = stor_ikey_encode(bucket, strlen(bucket), key, klen, ikey_buf);
    MDB_val k = {n, ikey_buf}, v;
    if (ikey_out)
        *ikey_out = k;
    int rc = mdb_get(txn, st->db_objects, &k, &v);
    if (rc == MDB_NOTFOUND)
        return STOR_ERR_NO_KEY;
    if (rc)
        return mdb_fail("object lookup", rc);
    const char *rkey;
    size_t rklen;
    if (stor_rec_object_key(v.mv_data, v.mv_size, &rkey, &rklen) == STOR_OK &&
        stor_keycmp(rkey, rklen, key, klen) != 0) {
        log_error("storage: index key collision for %s/%s", bucket, key);
        return STOR_ERR_IO;
    }
    stor_status_t s = stor_rec_decode_object(v.mv_data, v.mv_size, rec);
    if (s == STOR_ERR_IO)
        log_error("storage: corrupt object record for %s/%s", bucket, key);
    return s;
}

/* obj_get() for a bucket name from a reader: the bucket is looked up only
 * when the key is absent, to tell NoSuchBucket from NoSuchKey. An object
 * seen in txn implies its bucket in txn (stor_bucket_delete refuses a bucket
 * with objects, in the same serialized write transactions). Writers check
 * which bucket, not just that one exists: bucket_check(). */
static stor_status_t obj_lookup(stor_t *st, MDB_txn *txn, const char *bucket, const char *key,
                                stor_obj_rec_t *rec, MDB_val *ikey_out, uint8_t *ikey_buf)
{
    if (!valid_bucket(bucket))
        return STOR_ERR_NO_BUCKET;
    stor_status_t s = obj_get(st, txn, bucket, key, rec, ikey_out, ikey_buf);
    if (s != STOR_ERR_NO_KEY)
        return s;
    s = bucket_exists(st, txn, bucket);
    return s == STOR_OK ? STOR_ERR_NO_KEY : s;
}

/* ==== Open / close and orphan cleanup ==================================== */

static int cmp_id(const void *a, const void *b)
{
    return memcmp(a, b, STOR_ID_LEN);
}

typedef struct idset {
    uint8_t *ids;
    size_t n, cap;
} idset_t;

static int idset_add(idset_t *s, const uint8_t *id)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        uint8_t *p = realloc(s->ids, cap * STOR_ID_LEN);
        if (!p)
            return -1;
        s->ids = p;
        s->cap = cap;
    }
    memcpy(s->ids + s->n++ * STOR_ID_LEN, id, STOR_ID_LEN);
    return 0;
}

/* Collects every file id the index references (objects and parts of live
 * uploads). Fails if any record is unreadable: then we cannot tell garbage
 * from data, and cleanup is skipped. */
static int collect_ids(stor_t *st, idset_t *set)
{
    MDB_txn *txn;
    MDB_cursor *cur = NULL;
    MDB_val k, v;
    int ok = -1, rc;
    if (rd_begin(st, &txn) != STOR_OK)
        return -1;
    if (mdb_cursor_open(txn, st->db_objects, &cur))
        goto out;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        stor_obj_rec_t rec;
        if (stor_rec_decode_object(v.mv_data, v.mv_size, &rec) != STOR_OK)
            goto out;
        for (uint32_t i = 0; i < rec.n_segs; i++)
            if (idset_add(set, rec.segs[i].id) != 0) {
                stor_obj_rec_free(&rec);
                goto out;
            }
        stor_obj_rec_free(&rec);
    }
    if (rc != MDB_NOTFOUND)
        goto out;
    mdb_cursor_close(cur);
    cur = NULL;
    if (mdb_cursor_open(txn, st->db_parts, &cur))
        goto out;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        stor_part_rec_t pr;
        if (stor_rec_decode_part(v.mv_data, v.mv_size, &pr) != STOR_OK)
            goto out;
        stor_part_free_fields(&pr.part);
        if (idset_add(set, pr.id) != 0)
            goto out;
    }
    if (rc != MDB_NOTFOUND)
        goto out;
    ok = 0;
out:
    if (cur)
        mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    return ok;
}

static int is_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return s[n] == '\0';
}

/* Deletes every file under dirfd (one shard) that set does not reference. */
static size_t sweep_shard(int fd, const idset_t *set)
{
    size_t removed = 0;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return 0;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' &&
            (de->d_name[1] == '\0' || (de->d_name[1] == '.' && de->d_name[2] == '\0')))
            continue;
        uint8_t id[STOR_ID_LEN];
        int keep = is_hex(de->d_name, 2 * STOR_ID_LEN) &&
                   hex_decode(de->d_name, 2 * STOR_ID_LEN, id, STOR_ID_LEN) == 0 &&
                   bsearch(id, set->ids, set->n, STOR_ID_LEN, cmp_id) != NULL;
        if (keep)
            continue;
        if (unlinkat(dirfd(d), de->d_name, 0) == 0)
            removed++;
        else if (errno == EISDIR || errno == EPERM)
            log_warn("storage: stray directory in objects shard: %s", de->d_name);
    }
    closedir(d);
    return removed;
}

/* Walks objects/ab/cd/, deleting the files the index does not reference.
 * The index must be durable first (stor_open syncs it): a file dropped by a
 * commit that is not, is still referenced by the index on disk. */
static void sweep_orphans(stor_t *st)
{
    idset_t set = {0};
    if (collect_ids(st, &set) != 0) {
        log_warn("storage: index unreadable; orphan cleanup skipped");
        free(set.ids);
        return;
    }
    if (set.n)
        qsort(set.ids, set.n, STOR_ID_LEN, cmp_id);
    size_t removed = 0;
    int fd1 = dup(st->objfd);
    DIR *d1 = fd1 >= 0 ? fdopendir(fd1) : NULL;
    if (!d1) {
        if (fd1 >= 0)
            close(fd1);
        free(set.ids);
        return;
    }
    rewinddir(d1);
    struct dirent *e1;
    while ((e1 = readdir(d1)) != NULL) {
        uint8_t b[2];
        if (!is_hex(e1->d_name, 2) || hex_decode(e1->d_name, 2, b, 1) != 0)
            continue;
        int fd2 = openat(st->objfd, e1->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd2 < 0)
            continue;
        DIR *d2 = fdopendir(fd2);
        if (!d2) {
            close(fd2);
            continue;
        }
        struct dirent *e2;
        while ((e2 = readdir(d2)) != NULL) {
            if (!is_hex(e2->d_name, 2) || hex_decode(e2->d_name, 2, b + 1, 1) != 0)
                continue;
            int fd3 = openat(fd2, e2->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (fd3 >= 0)
                removed += sweep_shard(fd3, &set);
        }
        closedir(d2);
    }
    closedir(d1);
    free(set.ids);
    if (removed)
        log_info("storage: removed %zu orphaned file(s)", removed);
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
    int rc = fsync_dirat(AT_FDCWD, parent);
    free(p);
    return rc;
}

stor_status_t stor_open(const char *dir, stor_durability_t durability, stor_t **out_p)
{
    stor_t *st = calloc(1, sizeof *st);
    if (!st)
        return STOR_ERR_NOMEM;
    st->objfd = st->lockfd = -1;
    st->durability = durability;
    pthread_mutex_init(&st->dir_lock, NULL);

    size_t n = strlen(dir) + 32;
    char *root = malloc(n), *path = malloc(n);
    stor_status_t s = STOR_ERR_NOMEM;
    MDB_txn *txn = NULL;
    int rc;
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
    snprintf(path, n, "%s/index", root);
    if (mkdir_new(path) < 0) {
        log_error("storage: %s: %s", path, strerror(errno));
        goto fail;
    }
    /* The entries of lock, objects and index (in root), of root (in dir) and,
     * if we made it, of dir (in its parent) are durable before anything
     * relies on them. Both modes, once per open: losing one to a power loss
     * would lose the whole index (and then the sweep the objects). */
    if (fsync_dirat(AT_FDCWD, root) != 0 || fsync_dirat(AT_FDCWD, dir) != 0 ||
        (made_dir && fsync_parent(dir) != 0)) {
        log_error("storage: fsync %s and its parents: %s", root, strerror(errno));
        goto fail;
    }

    if ((rc = mdb_env_create(&st->env)) != 0) {
        s = mdb_fail("env create", rc);
        goto fail;
    }
    mdb_env_set_mapsize(st->env, MAP_SIZE);
    mdb_env_set_maxdbs(st->env, 8);
    mdb_env_set_maxreaders(st->env, MAX_READERS);
    unsigned flags = MDB_NOTLS;
    /* Relaxed: each commit flushes its data pages but not the meta page, which
     * the next commit or sync flushes. A power loss may undo the last commit
     * but never corrupts the index (MDB_NOSYNC, which flushes nothing, can). */
    if (durability == STOR_DURABILITY_RELAXED)
        flags |= MDB_NOMETASYNC;
    if ((rc = mdb_env_open(st->env, path, flags, 0644)) != 0) {
        s = mdb_fail("env open", rc);
        goto fail;
    }
    /* data.mdb and lock.mdb, which mdb_env_open may just have made. */
    if (fsync_dirat(AT_FDCWD, path) != 0) {
        log_error("storage: fsync %s: %s", path, strerror(errno));
        goto fail;
    }
    if (mdb_env_get_maxkeysize(st->env) < STOR_IKEY_MAX) {
        log_error("storage: LMDB max key size %d < %d", mdb_env_get_maxkeysize(st->env),
                  STOR_IKEY_MAX);
        goto fail;
    }
    int dead = 0;
    mdb_reader_check(st->env, &dead);

    int committing = 0;
    if ((rc = mdb_txn_begin(st->env, NULL, 0, &txn)) != 0 ||
        (rc = mdb_dbi_open(txn, "buckets", MDB_CREATE, &st->db_buckets)) != 0 ||
        (rc = mdb_dbi_open(txn, "objects", MDB_CREATE, &st->db_objects)) != 0 ||
        (rc = mdb_dbi_open(txn, "uploads", MDB_CREATE, &st->db_uploads)) != 0 ||
        (rc = mdb_dbi_open(txn, "parts", MDB_CREATE, &st->db_parts)) != 0 ||
        (committing = 1, rc = mdb_txn_commit(txn)) != 0) {
        /* mdb_txn_commit frees the transaction even when it fails. */
        if (txn && !committing)
            mdb_txn_abort(txn);
        s = mdb_fail("open tables", rc);
        goto fail;
    }

    /* What an earlier process committed is made durable before the sweep
     * deletes files on the index's word (a relaxed process that died may have
     * left commits that dropped files not yet on disk), and before this one
     * builds on it. */
    if ((rc = mdb_env_sync(st->env, 1)) != 0) {
        s = mdb_fail("index sync", rc);
        goto fail;
    }
    sweep_orphans(st);
    if (durability == STOR_DURABILITY_RELAXED &&
        !(st->syncer = syncer_start(st->env, st->objfd, stor_sync_interval_ms)))
        goto fail;
    free(root);
    free(path);
    *out_p = st;
    return STOR_OK;
fail:
    free(root);
    free(path);
    stor_close(st);
    return s;
}

void stor_close(stor_t *st)
{
    if (!st)
        return;
    /* Relaxed: a last sync point (everything acknowledged becomes durable and
     * the dropped files go). Fsync mode: every commit already was. */
    syncer_stop(st->syncer);
    if (st->env)
        mdb_env_close(st->env);
    if (st->objfd >= 0)
        close(st->objfd);
    if (st->lockfd >= 0)
        close(st->lockfd);
    pthread_mutex_destroy(&st->dir_lock);
    free(st);
}

stor_status_t stor_sync(stor_t *st)
{
    if (st->syncer)
        return syncer_sync(st->syncer) == 0 ? STOR_OK : STOR_ERR_IO;
    int rc = mdb_env_sync(st->env, 1);
    return rc ? mdb_fail("index sync", rc) : STOR_OK;
}

/* ==== Buckets ============================================================ */

stor_status_t stor_bucket_create(stor_t *st, const char *name, const char *owner)
{
    if (!valid_bucket(name))
        return STOR_ERR_TOO_LARGE;
    if (owner && strlen(owner) >= sizeof((stor_bucket_t *)0)->owner)
        return STOR_ERR_TOO_LARGE;
    /* The id tells this bucket from any other that had or will have its
     * name; 0 is reserved for records written before ids existed. */
    uint64_t id = 0;
    while (id == 0)
        if (random_bytes(&id, sizeof id) != 0)
            return STOR_ERR_IO;
    buf_t b;
    buf_init(&b, 4096);
    if (stor_rec_encode_bucket(&b, owner, now_ms() / 1000, id) != 0) {
        buf_free(&b);
        return STOR_ERR_NOMEM;
    }
    MDB_txn *txn;
    stor_status_t s = wr_begin(st, &txn);
    if (s == STOR_OK) {
        MDB_val k = {strlen(name), (void *)name}, v = {b.len, b.data};
        int rc = mdb_put(txn, st->db_buckets, &k, &v, MDB_NOOVERWRITE);
        if (rc == MDB_KEYEXIST) {
            s = STOR_ERR_BUCKET_EXISTS;
            mdb_txn_abort(txn);
        } else if (rc) {
            s = mdb_fail("bucket put", rc);
            mdb_txn_abort(txn);
        } else {
            s = wr_commit(st, txn);
        }
    }
    buf_free(&b);
    return s;
}

stor_status_t stor_bucket_get(stor_t *st, const char *name, stor_bucket_t *out_p)
{
    if (!valid_bucket(name))
        return STOR_ERR_NO_BUCKET;
    MDB_txn *txn;
    stor_status_t s = rd_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    MDB_val k = {strlen(name), (void *)name}, v;
    int rc = mdb_get(txn, st->db_buckets, &k, &v);
    if (rc == MDB_NOTFOUND) {
        s = STOR_ERR_NO_BUCKET;
    } else if (rc) {
        s = mdb_fail("bucket get", rc);
    } else {
        stor_bucket_t b;
        memset(&b, 0, sizeof b);
        snprintf(b.name, sizeof b.name, "%s", name);
        s = stor_rec_decode_bucket(v.mv_data, v.mv_size, &b);
        if (s == STOR_OK)
            *out_p = b;
    }
    mdb_txn_abort(txn);
    return s;
}

/* 1 if some key of db starts with prefix, 0 if none, -1 on error. */
static int has_prefix(MDB_txn *txn, MDB_dbi db, const void *prefix, size_t plen)
{
    MDB_cursor *cur;
    if (mdb_cursor_open(txn, db, &cur))
        return -1;
    MDB_val k = {plen, (void *)prefix}, v;
    int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    int r = rc == MDB_NOTFOUND ? 0
            : rc               ? -1
                               : (k.mv_size >= plen && memcmp(k.mv_data, prefix, plen) == 0);
    mdb_cursor_close(cur);
    return r;
}

stor_status_t stor_bucket_delete(stor_t *st, const stor_bucket_t *bucket)
{
    const char *name = bucket->name;
    if (!valid_bucket(name))
        return STOR_ERR_NO_BUCKET;
    MDB_txn *txn;
    stor_status_t s = wr_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    size_t blen = strlen(name);
    uint8_t pfx[STOR_BUCKET_MAX + 1];
    memcpy(pfx, name, blen);
    pfx[blen] = 0;
    MDB_val k = {blen, (void *)name};
    if ((s = bucket_check(st, txn, name, bucket->id)) != STOR_OK) {
        mdb_txn_abort(txn);
        return s;
    }
    int rc = mdb_del(txn, st->db_buckets, &k, NULL);
    if (rc == MDB_NOTFOUND) {
        s = STOR_ERR_NO_BUCKET;
    } else if (rc) {
        s = mdb_fail("bucket delete", rc);
    } else {
        int a = has_prefix(txn, st->db_objects, pfx, blen + 1);
        int b = a == 0 ? has_prefix(txn, st->db_uploads, pfx, blen + 1) : 0;
        if (a < 0 || b < 0)
            s = STOR_ERR_IO;
        else if (a || b)
            s = STOR_ERR_BUCKET_NOT_EMPTY;
    }
    if (s != STOR_OK) {
        mdb_txn_abort(txn);
        return s;
    }
    return wr_commit(st, txn);
}

stor_status_t stor_bucket_list(stor_t *st, stor_bucket_t **out_p, size_t *n_p)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    stor_status_t s = rd_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    stor_bucket_t *arr = NULL;
    size_t n = 0, cap = 0;
    int rc = mdb_cursor_open(txn, st->db_buckets, &cur);
    if (rc) {
        mdb_txn_abort(txn);
        return mdb_fail("cursor", rc);
    }
    MDB_val k, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size > STOR_BUCKET_MAX)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            stor_bucket_t *p = realloc(arr, cap * sizeof *arr);
            if (!p) {
                s = STOR_ERR_NOMEM;
                break;
            }
            arr = p;
        }
        memset(&arr[n], 0, sizeof arr[n]);
        memcpy(arr[n].name, k.mv_data, k.mv_size);
        if (stor_rec_decode_bucket(v.mv_data, v.mv_size, &arr[n]) != STOR_OK) {
            log_error("storage: corrupt bucket record %s", arr[n].name);
            s = STOR_ERR_IO;
            break;
        }
        n++;
    }
    if (s == STOR_OK && rc != MDB_NOTFOUND)
        s = mdb_fail("bucket list", rc);
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    if (s != STOR_OK) {
        free(arr);
        return s;
    }
    *out_p = arr;
    *n_p = n;
    return STOR_OK;
}

/* ==== Writing ============================================================ */

stor_status_t stor_writer_open(stor_t *st, const stor_bucket_t *bucket, stor_writer_t **out_p)
{
    MDB_txn *txn;
    stor_status_t s = rd_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    s = bucket_check(st, txn, bucket->name, bucket->id);
    mdb_txn_abort(txn);
    if (s != STOR_OK)
        return s;
    stor_writer_t *w = calloc(1, sizeof *w);
    if (!w)
        return STOR_ERR_NOMEM;
    w->st = st;
    w->fd = -1;
    snprintf(w->bucket, sizeof w->bucket, "%s", bucket->name);
    w->bucket_id = bucket->id;
    if (random_bytes(w->id, STOR_ID_LEN) != 0 || ensure_shard(st, w->id) != 0) {
        free(w);
        return STOR_ERR_IO;
    }
    stor_id_path(w->id, w->path);
    w->fd = openat(st->objfd, w->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        log_error("storage: create %s: %s", w->path, strerror(errno));
        free(w);
        return STOR_ERR_IO;
    }
    *out_p = w;
    return STOR_OK;
}

stor_status_t stor_writer_write(stor_writer_t *w, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t n = write(w->fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            log_error("storage: write %s: %s", w->path, strerror(errno));
            return STOR_ERR_IO;
        }
        p += n;
        len -= (size_t)n;
        w->size += (uint64_t)n;
    }
    return STOR_OK;
}

uint64_t stor_writer_size(const stor_writer_t *w)
{
    return w->size;
}

/* Closes and frees a writer; its file is unlinked unless an index record
 * now points at it (keep). */
static void writer_free(stor_writer_t *w, int keep)
{
    if (w->fd >= 0)
        close(w->fd);
    if (!keep)
        unlinkat(w->st->objfd, w->path, 0);
    free(w);
}

void stor_writer_abort(stor_writer_t *w)
{
    if (w)
        writer_free(w, 0);
}

/* Makes the writer's bytes durable per the mode and closes its fd. */
static stor_status_t writer_seal(stor_writer_t *w)
{
    int rc = 0;
    if (w->st->durability == STOR_DURABILITY_FSYNC) {
        char dir[STOR_PATH_LEN];
        memcpy(dir, w->path, 5);
        dir[5] = '\0';
        rc = fdatasync(w->fd);
        if (rc == 0)
            rc = fsync_dirat(w->st->objfd, dir);
    }
    if (close(w->fd) != 0 && rc == 0)
        rc = -1;
    w->fd = -1;
    if (rc != 0) {
        log_error("storage: sync %s: %s", w->path, strerror(errno));
        return STOR_ERR_IO;
    }
    return STOR_OK;
}

/* Encodes an object record into b (initialised here; the caller frees it). */
static stor_status_t encode_object(buf_t *b, const char *key, const stor_meta_t *m,
                                   const stor_seg_t *segs, uint32_t n_segs)
{
    buf_init(b, (size_t)-1 / 2);
    if (stor_rec_encode_object(b, key, strlen(key), m, segs, n_segs) != 0)
        return STOR_ERR_NOMEM;
    return b->len > STOR_REC_MAX ? STOR_ERR_TOO_LARGE : STOR_OK;
}

/* Points bucket/key at the encoded record rec in txn. The replaced record, if
 * any, goes to *old (*had_old set; the caller unlinks its files after the
 * commit and frees it). STOR_ERR_NO_BUCKET when the bucket (bucket_id) is
 * gone: checked even when the key exists, since an object under this name
 * may belong to a bucket re-created since. */
static stor_status_t put_object(stor_t *st, MDB_txn *txn, const char *bucket, uint64_t bucket_id,
                                const char *key, const buf_t *rec, stor_obj_rec_t *old,
                                int *had_old)
{
    uint8_t ikey[STOR_IKEY_MAX];
    MDB_val k;
    *had_old = 0;
    stor_status_t s = bucket_check(st, txn, bucket, bucket_id);
    if (s != STOR_OK)
        return s;
    s = obj_get(st, txn, bucket, key, old, &k, ikey);
    if (s == STOR_OK)
        *had_old = 1;
    else if (s != STOR_ERR_NO_KEY)
        return s;
    MDB_val v = {rec->len, rec->data};
    int rc = mdb_put(txn, st->db_objects, &k, &v, 0);
    return rc ? mdb_fail("object put", rc) : STOR_OK;
}

stor_status_t stor_writer_commit(stor_writer_t *w, const char *key, stor_meta_t *meta)
{
    stor_t *st = w->st;
    buf_t b = {0};
    stor_status_t s = writer_seal(w);
    if (s != STOR_OK)
        goto out;
    meta->size = w->size;
    meta->mtime_ms = now_ms();
    stor_meta_t m = *meta;
    m.parts_count = 0;
    m.part_sizes = NULL;
    stor_seg_t seg;
    memcpy(seg.id, w->id, STOR_ID_LEN);
    seg.size = w->size;
    /* Encoded before the write transaction: LMDB serializes writers, so
     * nothing that can run outside one should run inside. */
    if ((s = encode_object(&b, key, &m, &seg, 1)) != STOR_OK)
        goto out;

    MDB_txn *txn;
    if ((s = wr_begin(st, &txn)) != STOR_OK)
        goto out;
    stor_obj_rec_t old;
    int had_old = 0;
    s = put_object(st, txn, w->bucket, w->bucket_id, key, &b, &old, &had_old);
    if (s == STOR_OK)
        s = wr_commit(st, txn);
    else
        mdb_txn_abort(txn);
    if (s == STOR_OK)
        new_file(st, w->id);
    if (had_old) {
        if (s == STOR_OK)
            for (uint32_t i = 0; i < old.n_segs; i++)
                drop_file(st, old.segs[i].id);
        stor_obj_rec_free(&old);
    }
out:
    buf_free(&b);
    writer_free(w, s == STOR_OK);
    return s;
}

/* ==== Reading ============================================================ */

stor_status_t stor_head(stor_t *st, const char *bucket, const char *key, stor_meta_t *meta_p)
{
    MDB_txn *txn;
    stor_status_t s = rd_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    stor_obj_rec_t rec;
    uint8_t ikey[STOR_IKEY_MAX];
    s = obj_lookup(st, txn, bucket, key, &rec, NULL, ikey);
    mdb_txn_abort(txn);
    if (s != STOR_OK)
        return s;
    *meta_p = rec.meta;
    memset(&rec.meta, 0, sizeof rec.meta);
    stor_obj_rec_free(&rec);
    return STOR_OK;
}

typedef struct rseg {
    int fd;
    uint64_t start, size; /* object offset of the segment, its length */
} rseg_t;

struct stor_reader {
    stor_meta_t meta;
    rseg_t *segs; /* &one for a single-part object, else malloc'ed */
    uint32_t n_segs;
    rseg_t one;
};

void stor_reader_close(stor_reader_t *r)
{
    if (!r)
        return;
    for (uint32_t i = 0; i < r->n_segs; i++)
        if (r->segs[i].fd >= 0)
            close(r->segs[i].fd);
    if (r->segs != &r->one)
        free(r->segs);
    stor_meta_free(&r->meta);
    free(r);
}

stor_status_t stor_reader_open(stor_t *st, const char *bucket, const char *key,
                               stor_reader_t **out_p)
{
    /* The record is read in a short txn, then the files are opened. A commit
     * in between may unlink a file we are about to open (ENOENT): the index
     * then already points elsewhere, so look again. */
    for (int attempt = 0; attempt < OPEN_RETRIES; attempt++) {
        MDB_txn *txn;
        stor_status_t s = rd_begin(st, &txn);
        if (s != STOR_OK)
            return s;
        stor_obj_rec_t rec;
        uint8_t ikey[STOR_IKEY_MAX];
        s = obj_lookup(st, txn, bucket, key, &rec, NULL, ikey);
        mdb_txn_abort(txn);
        if (s != STOR_OK)
            return s;
        stor_reader_t *r = calloc(1, sizeof *r);
        if (r)
            r->segs = rec.n_segs == 1 ? &r->one : calloc(rec.n_segs, sizeof *r->segs);
        if (!r || !r->segs) {
            free(r);
            stor_obj_rec_free(&rec);
            return STOR_ERR_NOMEM;
        }
        int vanished = 0;
        uint64_t off = 0;
        for (uint32_t i = 0; i < rec.n_segs; i++) {
            char path[STOR_PATH_LEN];
            stor_id_path(rec.segs[i].id, path);
            int fd = openat(st->objfd, path, O_RDONLY | O_CLOEXEC);
            if (fd < 0) {
                if (errno == ENOENT) {
                    vanished = 1;
                } else {
                    log_error("storage: open %s: %s", path, strerror(errno));
                    s = STOR_ERR_IO;
                }
                break;
            }
            r->segs[i] = (rseg_t){fd, off, rec.segs[i].size};
            r->n_segs = i + 1;
            off += rec.segs[i].size;
        }
        r->meta = rec.meta;
        memset(&rec.meta, 0, sizeof rec.meta);
        stor_obj_rec_free(&rec);
        if (s == STOR_OK && !vanished) {
            *out_p = r;
            return STOR_OK;
        }
        stor_reader_close(r);
        if (s != STOR_OK)
            return s;
        sched_yield();
    }
    log_error("storage: %s/%s: object files keep vanishing (missing file?)", bucket, key);
    return STOR_ERR_IO;
}

const stor_meta_t *stor_reader_meta(const stor_reader_t *r)
{
    return &r->meta;
}

/* Index of the segment holding object offset off (off < size). */
static uint32_t seg_find(const stor_reader_t *r, uint64_t off)
{
    uint32_t lo = 0, hi = r->n_segs;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (r->segs[mid].start <= off)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

ssize_t stor_reader_pread(stor_reader_t *r, void *buf, size_t len, uint64_t off)
{
    uint64_t size = r->meta.size;
    if (off >= size || len == 0)
        return 0;
    if (len > size - off)
        len = (size_t)(size - off);
    if (len > (size_t)SSIZE_MAX)
        len = (size_t)SSIZE_MAX;
    size_t done = 0;
    uint32_t i = seg_find(r, off);
    while (done < len && i < r->n_segs) {
        const rseg_t *g = &r->segs[i];
        uint64_t in = off + done - g->start;
        if (in >= g->size) {
            i++;
            continue;
        }
        size_t want = len - done;
        if (want > g->size - in)
            want = (size_t)(g->size - in);
        ssize_t n = pread(g->fd, (char *)buf + done, want, (off_t)in);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            log_error("storage: pread: %s", strerror(errno));
            return -1;
        }
        if (n == 0) {
            log_error("storage: object file shorter than its record");
            return -1;
        }
        done += (size_t)n;
    }
    return (ssize_t)done;
}

int stor_reader_span_fd(stor_reader_t *r, uint64_t off, uint64_t len, int *fd_p,
                        uint64_t *file_off_p)
{
    if (r->n_segs == 0 || off > r->meta.size || len > r->meta.size - off)
        return 0;
    uint32_t i = off == r->meta.size ? r->n_segs - 1 : seg_find(r, off);
    const rseg_t *g = &r->segs[i];
    if (off < g->start || off - g->start + len > g->size)
        return 0;
    *fd_p = g->fd;
    *file_off_p = off - g->start;
    return 1;
}

/* ==== Deleting =========================================================== */

stor_status_t stor_delete(stor_t *st, const stor_bucket_t *bucket, const char *key)
{
    MDB_txn *txn;
    stor_status_t s = wr_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    stor_obj_rec_t rec;
    uint8_t ikey[STOR_IKEY_MAX];
    MDB_val k;
    s = bucket_check(st, txn, bucket->name, bucket->id);
    if (s == STOR_OK)
        s = obj_get(st, txn, bucket->name, key, &rec, &k, ikey);
    if (s != STOR_OK) {
        mdb_txn_abort(txn);
        return s;
    }
    int rc = mdb_del(txn, st->db_objects, &k, NULL);
    if (rc) {
        mdb_txn_abort(txn);
        stor_obj_rec_free(&rec);
        return mdb_fail("object delete", rc);
    }
    s = wr_commit(st, txn);
    if (s == STOR_OK)
        for (uint32_t i = 0; i < rec.n_segs; i++)
            drop_file(st, rec.segs[i].id);
    stor_obj_rec_free(&rec);
    return s;
}

/* ==== Listing ============================================================ */

typedef struct blk_ent {
    const char *key; /* points into the txn's pages */
    size_t klen;
    MDB_val val;
} blk_ent_t;

struct stor_iter {
    MDB_txn *txn;
    MDB_cursor *cur;
    size_t blen, plen;            /* bucket length, P */
    char bp[STOR_BUCKET_MAX + 1]; /* bucket \0: every index key of the bucket starts so */
    char *prefix;
    size_t prefix_len;
    const char *after; /* last emitted key or the caller's marker */
    size_t after_len;
    int has_after;
    char *after_own;
    char *seek; /* the last stor_iter_seek target; reused, grown as needed */
    size_t seek_len, seek_cap;
    int has_seek;
    uint8_t pos[STOR_IKEY_MAX]; /* where the cursor goes next when !positioned */
    size_t pos_len;
    int positioned, eof, failed;
    MDB_val pend_k, pend_v; /* read past the end of a long-key block */
    int has_pend;
    blk_ent_t *blk;
    size_t blk_n, blk_i, blk_cap;
};

static int blk_cmp(const void *a, const void *b)
{
    const blk_ent_t *x = a, *y = b;
    return stor_keycmp(x->key, x->klen, y->key, y->klen);
}

/* -1: past every key with the prefix (stop); 0: skip; 1: emit. */
static int iter_filter(const stor_iter_t *it, const char *k, size_t klen)
{
    if (it->prefix_len) {
        size_t n = klen < it->prefix_len ? klen : it->prefix_len;
        int c = memcmp(k, it->prefix, n);
        if (c > 0)
            return -1;
        if (c < 0 || klen < it->prefix_len)
            return 0;
    }
    if (it->has_after && stor_keycmp(k, klen, it->after, it->after_len) <= 0)
        return 0;
    if (it->has_seek && stor_keycmp(k, klen, it->seek, it->seek_len) < 0)
        return 0;
    return 1;
}

static void iter_reposition(stor_iter_t *it, const char *s, size_t slen)
{
    it->pos_len = stor_ikey_seek(it->bp, it->blen, s, slen, it->pos);
    it->positioned = it->eof = it->has_pend = 0;
    it->blk_n = it->blk_i = 0;
}

stor_status_t stor_iter_open(stor_t *st, const char *bucket, const char *prefix, const char *after,
                             stor_iter_t **out_p)
{
    stor_iter_t *it = calloc(1, sizeof *it);
    if (!it)
        return STOR_ERR_NOMEM;
    stor_status_t s = STOR_ERR_NOMEM;
    prefix = prefix ? prefix : "";
    it->prefix = strdup(prefix);
    it->prefix_len = strlen(prefix);
    if (after && *after) {
        it->after_own = strdup(after);
        it->after = it->after_own;
        it->after_len = strlen(after);
        it->has_after = 1;
        if (!it->after_own)
            goto fail;
    }
    if (!it->prefix)
        goto fail;
    if ((s = rd_begin(st, &it->txn)) != STOR_OK)
        goto fail;
    if ((s = bucket_exists(st, it->txn, bucket)) != STOR_OK)
        goto fail;
    int rc = mdb_cursor_open(it->txn, st->db_objects, &it->cur);
    if (rc) {
        s = mdb_fail("cursor", rc);
        goto fail;
    }
    it->blen = strlen(bucket);
    memcpy(it->bp, bucket, it->blen + 1);
    it->plen = stor_ikey_plen(it->blen);
    if (it->has_after && stor_keycmp(it->after, it->after_len, it->prefix, it->prefix_len) > 0)
        iter_reposition(it, it->after, it->after_len);
    else
        iter_reposition(it, it->prefix, it->prefix_len);
    *out_p = it;
    return STOR_OK;
fail:
    stor_iter_close(it);
    return s;
}

void stor_iter_seek(stor_iter_t *it, const char *key, size_t key_len)
{
    if (it->failed)
        return;
    if (it->has_after && stor_keycmp(key, key_len, it->after, it->after_len) <= 0)
        return; /* already past it */
    /* A delimiter listing seeks once per common prefix: keep one buffer. */
    if (key_len >= it->seek_cap) {
        char *c = realloc(it->seek, key_len + 1);
        if (!c) {
            it->failed = 1;
            return;
        }
        it->seek = c;
        it->seek_cap = key_len + 1;
    }
    memcpy(it->seek, key, key_len);
    it->seek_len = key_len;
    it->has_seek = 1;
    iter_reposition(it, key, key_len);
}

/* Reads the next raw index entry of the bucket: 1, 0 at the end, -1 error. */
static int iter_raw(stor_iter_t *it, MDB_val *k, MDB_val *v)
{
    if (it->has_pend) {
        *k = it->pend_k;
        *v = it->pend_v;
        it->has_pend = 0;
    } else {
        if (it->eof)
            return 0;
        int rc;
        if (!it->positioned) {
            k->mv_data = it->pos;
            k->mv_size = it->pos_len;
            rc = mdb_cursor_get(it->cur, k, v, MDB_SET_RANGE);
            it->positioned = 1;
        } else {
            rc = mdb_cursor_get(it->cur, k, v, MDB_NEXT);
        }
        if (rc == MDB_NOTFOUND) {
            it->eof = 1;
            return 0;
        }
        if (rc) {
            mdb_fail("list", rc);
            return -1;
        }
    }
    if (k->mv_size < it->blen + 1 || memcmp(k->mv_data, it->bp, it->blen + 1) != 0) {
        it->eof = 1;
        return 0;
    }
    return 1;
}

static int blk_push(stor_iter_t *it, const MDB_val *v)
{
    if (it->blk_n == it->blk_cap) {
        size_t cap = it->blk_cap ? it->blk_cap * 2 : 16;
        blk_ent_t *p = realloc(it->blk, cap * sizeof *p);
        if (!p)
            return -1;
        it->blk = p;
        it->blk_cap = cap;
    }
    blk_ent_t *e = &it->blk[it->blk_n];
    if (stor_rec_object_key(v->mv_data, v->mv_size, &e->key, &e->klen) != STOR_OK) {
        log_error("storage: corrupt object record in listing");
        return -1;
    }
    e->val = *v;
    it->blk_n++;
    return 0;
}

/* Loads the block of long keys that starts with k (the cursor is on it):
 * every following entry with the same P-byte prefix, sorted by full key. */
static int iter_load_block(stor_iter_t *it, const MDB_val *k, const MDB_val *v)
{
    const uint8_t *head = (const uint8_t *)k->mv_data + it->blen + 1;
    uint8_t first[STOR_IKEY_MAX];
    memcpy(first, head, it->plen);
    it->blk_n = it->blk_i = 0;
    if (blk_push(it, v) != 0)
        return -1;
    for (;;) {
        MDB_val k2, v2;
        int r = iter_raw(it, &k2, &v2);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        const uint8_t *rest = (const uint8_t *)k2.mv_data + it->blen + 1;
        size_t rlen = k2.mv_size - it->blen - 1;
        if (!stor_ikey_is_long(rest, rlen, it->plen) || memcmp(rest, first, it->plen) != 0) {
            it->pend_k = k2;
            it->pend_v = v2;
            it->has_pend = 1;
            break;
        }
        if (blk_push(it, &v2) != 0)
            return -1;
    }
    qsort(it->blk, it->blk_n, sizeof *it->blk, blk_cmp);
    return 0;
}

static int iter_emit(stor_iter_t *it, const char *key, size_t klen, const MDB_val *v,
                     const char **key_p, size_t *key_len_p, stor_meta_t *meta_p)
{
    if (meta_p && stor_rec_decode_object_meta(v->mv_data, v->mv_size, meta_p) != STOR_OK) {
        log_error("storage: corrupt object record in listing");
        it->failed = 1;
        return -1;
    }
    it->after = key;
    it->after_len = klen;
    it->has_after = 1;
    *key_p = key;
    *key_len_p = klen;
    return 1;
}

int stor_iter_next(stor_iter_t *it, const char **key_p, size_t *key_len_p, stor_meta_t *meta_p)
{
    if (it->failed)
        return -1;
    for (;;) {
        while (it->blk_i < it->blk_n) {
            blk_ent_t *e = &it->blk[it->blk_i++];
            int f = iter_filter(it, e->key, e->klen);
            if (f < 0) {
                it->blk_n = it->blk_i = 0;
                it->eof = 1;
                it->has_pend = 0;
                return 0;
            }
            if (f > 0)
                return iter_emit(it, e->key, e->klen, &e->val, key_p, key_len_p, meta_p);
        }
        MDB_val k, v;
        int r = iter_raw(it, &k, &v);
        if (r <= 0) {
            if (r < 0)
                it->failed = 1;
            return r;
        }
        const char *rest = (const char *)k.mv_data + it->blen + 1;
        size_t rlen = k.mv_size - it->blen - 1;
        if (stor_ikey_is_long((const uint8_t *)rest, rlen, it->plen)) {
            if (iter_load_block(it, &k, &v) != 0) {
                it->failed = 1;
                return -1;
            }
            continue;
        }
        int f = iter_filter(it, rest, rlen);
        if (f < 0) {
            it->eof = 1;
            it->has_pend = 0;
            return 0;
        }
        if (f > 0)
            return iter_emit(it, rest, rlen, &v, key_p, key_len_p, meta_p);
    }
}

void stor_iter_close(stor_iter_t *it)
{
    if (!it)
        return;
    if (it->cur)
        mdb_cursor_close(it->cur);
    if (it->txn)
        mdb_txn_abort(it->txn);
    free(it->prefix);
    free(it->after_own);
    free(it->seek);
    free(it->blk);
    free(it);
}

/* ==== Multipart uploads ================================================== */

#define PART_KEY_LEN (STOR_UPLOAD_ID_LEN + 4)

static int valid_upload_id(const char *id)
{
    return id && strlen(id) == STOR_UPLOAD_ID_LEN && is_hex(id, STOR_UPLOAD_ID_LEN);
}

static size_t upload_key(const char *bucket, const char *upload_id, uint8_t *out)
{
    size_t blen = strlen(bucket);
    memcpy(out, bucket, blen);
    out[blen] = 0;
    memcpy(out + blen + 1, upload_id, STOR_UPLOAD_ID_LEN);
    return blen + 1 + STOR_UPLOAD_ID_LEN;
}

static void part_key(const char *upload_id, uint32_t number, uint8_t out[PART_KEY_LEN])
{
    memcpy(out, upload_id, STOR_UPLOAD_ID_LEN);
    out[STOR_UPLOAD_ID_LEN + 0] = (uint8_t)(number >> 24);
    out[STOR_UPLOAD_ID_LEN + 1] = (uint8_t)(number >> 16);
    out[STOR_UPLOAD_ID_LEN + 2] = (uint8_t)(number >> 8);
    out[STOR_UPLOAD_ID_LEN + 3] = (uint8_t)number;
}

/* Finds the upload in txn and checks it belongs to bucket/key. rec may be
 * NULL when only existence matters. */
static stor_status_t upload_get(stor_t *st, MDB_txn *txn, const char *bucket, const char *key,
                                const char *upload_id, stor_upload_rec_t *rec, MDB_val *k_out,
                                uint8_t *kbuf)
{
    if (!valid_bucket(bucket) || !valid_upload_id(upload_id))
        return STOR_ERR_NO_UPLOAD;
    MDB_val k = {upload_key(bucket, upload_id, kbuf), kbuf}, v;
    if (k_out)
        *k_out = k;
    int rc = mdb_get(txn, st->db_uploads, &k, &v);
    if (rc == MDB_NOTFOUND)
        return STOR_ERR_NO_UPLOAD;
    if (rc)
        return mdb_fail("upload lookup", rc);
    stor_upload_rec_t r;
    stor_status_t s = stor_rec_decode_upload(v.mv_data, v.mv_size, &r);
    if (s != STOR_OK) {
        log_error("storage: corrupt upload record %s", upload_id);
        return s;
    }
    if (stor_keycmp(r.key, r.key_len, key, strlen(key)) != 0) {
        stor_upload_rec_free(&r);
        return STOR_ERR_NO_UPLOAD;
    }
    if (rec)
        *rec = r;
    else
        stor_upload_rec_free(&r);
    return STOR_OK;
}

stor_status_t stor_mpu_create(stor_t *st, const stor_bucket_t *bkt, const char *key,
                              const stor_meta_t *meta, char upload_id[STOR_UPLOAD_ID_LEN + 1])
{
    const char *bucket = bkt->name;
    uint8_t raw[STOR_UPLOAD_ID_LEN / 2];
    char id[STOR_UPLOAD_ID_LEN + 1];
    if (random_bytes(raw, sizeof raw) != 0)
        return STOR_ERR_IO;
    hex_encode(raw, sizeof raw, id);
    stor_meta_t m = {0};
    if (meta) {
        m = *meta;
        m.size = 0;
        m.etag[0] = '\0';
        m.parts_count = 0;
        m.part_sizes = NULL;
    }
    int64_t now = now_ms();
    m.mtime_ms = now;
    buf_t b;
    buf_init(&b, (size_t)-1 / 2);
    if (stor_rec_encode_upload(&b, key, strlen(key), now, &m) != 0 || b.len > STOR_REC_MAX) {
        stor_status_t s = b.len > STOR_REC_MAX ? STOR_ERR_TOO_LARGE : STOR_ERR_NOMEM;
        buf_free(&b);
        return s;
    }
    MDB_txn *txn;
    stor_status_t s = wr_begin(st, &txn);
    if (s == STOR_OK) {
        s = bucket_check(st, txn, bucket, bkt->id);
        if (s == STOR_OK) {
            uint8_t kbuf[STOR_BUCKET_MAX + 2 + STOR_UPLOAD_ID_LEN];
            MDB_val k = {upload_key(bucket, id, kbuf), kbuf}, v = {b.len, b.data};
            int rc = mdb_put(txn, st->db_uploads, &k, &v, MDB_NOOVERWRITE);
            if (rc)
                s = mdb_fail("upload put", rc);
        }
        if (s == STOR_OK)
            s = wr_commit(st, txn);
        else
            mdb_txn_abort(txn);
    }
    buf_free(&b);
    if (s == STOR_OK)
        memcpy(upload_id, id, sizeof id);
    return s;
}

stor_status_t stor_mpu_check(stor_t *st, const char *bucket, const char *key, const char *upload_id)
{
    MDB_txn *txn;
    stor_status_t s = rd_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    uint8_t kbuf[STOR_BUCKET_MAX + 2 + STOR_UPLOAD_ID_LEN];
    s = upload_get(st, txn, bucket, key, upload_id, NULL, NULL, kbuf);
    mdb_txn_abort(txn);
    return s;
}

stor_status_t stor_part_commit(stor_writer_t *w, const char *key, const char *upload_id,
                               stor_part_t *part)
{
    stor_t *st = w->st;
    stor_status_t s = writer_seal(w);
    MDB_txn *txn = NULL;
    uint8_t old_id[STOR_ID_LEN];
    int had_old = 0;
    buf_t b;
    buf_init(&b, STOR_REC_MAX);
    if (s != STOR_OK)
        goto out;
    if (part->number < 1 || part->number > S3R_MAX_PART_NUMBER) {
        s = STOR_ERR_INVALID_PART;
        goto out;
    }
    part->size = w->size;
    part->mtime_ms = now_ms();
    if (stor_rec_encode_part(&b, part, w->id) != 0) {
        s = STOR_ERR_NOMEM;
        goto out;
    }
    if ((s = wr_begin(st, &txn)) != STOR_OK)
        goto out;
    uint8_t kbuf[STOR_BUCKET_MAX + 2 + STOR_UPLOAD_ID_LEN];
    s = upload_get(st, txn, w->bucket, key, upload_id, NULL, NULL, kbuf);
    /* The upload pins its bucket (stor_bucket_delete refuses a bucket with
     * uploads), but the writer's bucket is the one that was authorized. */
    if (s == STOR_OK)
        s = bucket_check(st, txn, w->bucket, w->bucket_id);
    if (s != STOR_OK)
        goto out;
    uint8_t pk[PART_KEY_LEN];
    part_key(upload_id, part->number, pk);
    MDB_val k = {PART_KEY_LEN, pk}, v;
    int rc = mdb_get(txn, st->db_parts, &k, &v);
    if (rc == 0) {
        stor_part_rec_t old;
        if (stor_rec_decode_part(v.mv_data, v.mv_size, &old) == STOR_OK) {
            memcpy(old_id, old.id, STOR_ID_LEN);
            stor_part_free_fields(&old.part);
            had_old = 1;
        } else {
            log_error("storage: corrupt part record %s/%u", upload_id, part->number);
        }
    } else if (rc != MDB_NOTFOUND) {
        s = mdb_fail("part lookup", rc);
        goto out;
    }
    v = (MDB_val){b.len, b.data};
    rc = mdb_put(txn, st->db_parts, &k, &v, 0);
    if (rc) {
        s = mdb_fail("part put", rc);
        goto out;
    }
    s = wr_commit(st, txn);
    txn = NULL;
    if (s == STOR_OK)
        new_file(st, w->id);
    if (s == STOR_OK && had_old)
        drop_file(st, old_id);
out:
    if (txn)
        mdb_txn_abort(txn);
    buf_free(&b);
    writer_free(w, s == STOR_OK);
    return s;
}

static void free_part_recs(stor_part_rec_t *arr, size_t n)
{
    for (size_t i = 0; i < n; i++)
        stor_part_free_fields(&arr[i].part);
    free(arr);
}

/* Loads every part record of an upload in number order. */
static stor_status_t load_parts(stor_t *st, MDB_txn *txn, const char *upload_id, uint32_t after,
                                stor_part_rec_t **out_p, size_t *n_p)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, st->db_parts, &cur);
    if (rc)
        return mdb_fail("cursor", rc);
    stor_part_rec_t *arr = NULL;
    size_t n = 0, cap = 0;
    stor_status_t s = STOR_OK;
    uint8_t pk[PART_KEY_LEN];
    part_key(upload_id, after + 1, pk);
    MDB_val k = {PART_KEY_LEN, pk}, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != PART_KEY_LEN || memcmp(k.mv_data, upload_id, STOR_UPLOAD_ID_LEN) != 0)
            break;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            stor_part_rec_t *p = realloc(arr, cap * sizeof *arr);
            if (!p) {
                s = STOR_ERR_NOMEM;
                break;
            }
            arr = p;
        }
        s = stor_rec_decode_part(v.mv_data, v.mv_size, &arr[n]);
        if (s != STOR_OK) {
            log_error("storage: corrupt part record in upload %s", upload_id);
            break;
        }
        n++;
    }
    if (s == STOR_OK && rc != 0 && rc != MDB_NOTFOUND)
        s = mdb_fail("parts", rc);
    mdb_cursor_close(cur);
    if (s != STOR_OK) {
        free_part_recs(arr, n);
        return s;
    }
    *out_p = arr;
    *n_p = n;
    return STOR_OK;
}

/* Deletes every part record of an upload (in txn). */
static stor_status_t del_parts(stor_t *st, MDB_txn *txn, const char *upload_id)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, st->db_parts, &cur);
    if (rc)
        return mdb_fail("cursor", rc);
    uint8_t pk[PART_KEY_LEN];
    part_key(upload_id, 0, pk);
    for (;;) {
        MDB_val k = {PART_KEY_LEN, pk}, v;
        rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
        if (rc)
            break;
        if (k.mv_size != PART_KEY_LEN || memcmp(k.mv_data, upload_id, STOR_UPLOAD_ID_LEN) != 0)
            break;
        if ((rc = mdb_cursor_del(cur, 0)) != 0)
            break;
    }
    mdb_cursor_close(cur);
    if (rc != 0 && rc != MDB_NOTFOUND)
        return mdb_fail("parts delete", rc);
    return STOR_OK;
}

stor_status_t stor_mpu_list_parts(stor_t *st, const char *bucket, const char *key,
                                  const char *upload_id, uint32_t part_marker,
                                  stor_part_t **parts_p, size_t *n_p)
{
    MDB_txn *txn;
    stor_status_t s = rd_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    uint8_t kbuf[STOR_BUCKET_MAX + 2 + STOR_UPLOAD_ID_LEN];
    stor_part_rec_t *recs = NULL;
    size_t n = 0;
    s = upload_get(st, txn, bucket, key, upload_id, NULL, NULL, kbuf);
    if (s == STOR_OK && part_marker < UINT32_MAX)
        s = load_parts(st, txn, upload_id, part_marker, &recs, &n);
    mdb_txn_abort(txn);
    if (s != STOR_OK)
        return s;
    stor_part_t *parts = NULL;
    if (n) {
        parts = malloc(n * sizeof *parts);
        if (!parts) {
            free_part_recs(recs, n);
            return STOR_ERR_NOMEM;
        }
        for (size_t i = 0; i < n; i++)
            parts[i] = recs[i].part; /* moves the strings */
    }
    free(recs);
    *parts_p = parts;
    *n_p = n;
    return STOR_OK;
}

void stor_parts_free(stor_part_t *parts, size_t n)
{
    if (!parts)
        return;
    for (size_t i = 0; i < n; i++)
        stor_part_free_fields(&parts[i]);
    free(parts);
}

static int cmp_part_num(const void *key, const void *elem)
{
    uint32_t a = *(const uint32_t *)key, b = ((const stor_part_rec_t *)elem)->part.number;
    return a < b ? -1 : a > b;
}

/* Compares a client's ETag (maybe quoted, any case) to a stored one. */
static int etag_eq(const char *given, const char *stored)
{
    if (!given)
        return 0;
    size_t n = strlen(given);
    if (n >= 2 && given[0] == '"' && given[n - 1] == '"') {
        given++;
        n -= 2;
    }
    return strlen(stored) == n && strncasecmp(given, stored, n) == 0;
}

stor_status_t stor_mpu_complete(stor_t *st, const stor_bucket_t *bkt, const char *key,
                                const char *upload_id, const stor_complete_part_t *parts, size_t n,
                                stor_meta_t *meta_p)
{
    const char *bucket = bkt->name;
    if (n == 0 || n > S3R_MAX_PART_NUMBER)
        return STOR_ERR_INVALID_PART;
    for (size_t i = 1; i < n; i++)
        if (parts[i].number <= parts[i - 1].number)
            return STOR_ERR_INVALID_PART_ORDER;

    MDB_txn *txn;
    stor_status_t s = wr_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    uint8_t kbuf[STOR_BUCKET_MAX + 2 + STOR_UPLOAD_ID_LEN];
    stor_upload_rec_t up;
    stor_part_rec_t *recs = NULL;
    size_t n_recs = 0;
    stor_seg_t *segs = NULL;
    uint8_t *md5s = NULL;
    uint8_t *used = NULL;
    stor_obj_rec_t old;
    int had_old = 0, have_up = 0;
    stor_meta_t m;
    memset(&m, 0, sizeof m);
    MDB_val uk;
    buf_t rec = {0};

    s = bucket_check(st, txn, bucket, bkt->id);
    if (s == STOR_OK)
        s = upload_get(st, txn, bucket, key, upload_id, &up, &uk, kbuf);
    if (s != STOR_OK)
        goto out;
    have_up = 1;
    if ((s = load_parts(st, txn, upload_id, 0, &recs, &n_recs)) != STOR_OK)
        goto out;
    segs = calloc(n, sizeof *segs);
    md5s = malloc(n * MD5_LEN);
    used = calloc(n_recs ? n_recs : 1, 1);
    m = up.meta;
    memset(&up.meta, 0, sizeof up.meta);
    m.part_sizes = calloc(n, sizeof *m.part_sizes);
    if (!segs || !md5s || !used || !m.part_sizes) {
        s = STOR_ERR_NOMEM;
        goto out;
    }
    /* Every listed part must exist with its ETag (InvalidPart) before sizes
     * are judged (EntityTooSmall), as S3 reports them. */
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const stor_part_rec_t *r =
            bsearch(&parts[i].number, recs, n_recs, sizeof *recs, cmp_part_num);
        if (!r || !etag_eq(parts[i].etag, r->part.etag) || strlen(r->part.etag) != 2 * MD5_LEN ||
            hex_decode(r->part.etag, 2 * MD5_LEN, md5s + i * MD5_LEN, MD5_LEN) != 0) {
            s = STOR_ERR_INVALID_PART;
            goto out;
        }
        used[r - recs] = 1;
        memcpy(segs[i].id, r->id, STOR_ID_LEN);
        segs[i].size = r->part.size;
        m.part_sizes[i] = r->part.size;
        total += r->part.size;
    }
    for (size_t i = 0; i + 1 < n; i++)
        if (segs[i].size < S3R_MIN_PART_BYTES) {
            s = STOR_ERR_PART_TOO_SMALL;
            goto out;
        }
    uint8_t digest[MD5_LEN];
    char hex[2 * MD5_LEN + 1];
    digest_t *d = digest_md5_new();
    if (!d) {
        s = STOR_ERR_NOMEM;
        goto out;
    }
    digest_update(d, md5s, n * MD5_LEN);
    digest_final(d, digest);
    hex_encode(digest, MD5_LEN, hex);
    snprintf(m.etag, sizeof m.etag, "%s-%zu", hex, n);
    m.size = total;
    m.mtime_ms = now_ms();
    m.parts_count = (uint32_t)n;

    s = encode_object(&rec, key, &m, segs, (uint32_t)n);
    if (s == STOR_OK)
        s = put_object(st, txn, bucket, bkt->id, key, &rec, &old, &had_old);
    if (s == STOR_OK)
        s = del_parts(st, txn, upload_id);
    if (s == STOR_OK) {
        int rc = mdb_del(txn, st->db_uploads, &uk, NULL);
        if (rc)
            s = mdb_fail("upload delete", rc);
    }
    if (s != STOR_OK)
        goto out;
    s = wr_commit(st, txn);
    txn = NULL;
    if (s != STOR_OK)
        goto out;

    if (had_old)
        for (uint32_t i = 0; i < old.n_segs; i++)
            drop_file(st, old.segs[i].id);
    for (size_t i = 0; i < n_recs; i++)
        if (!used[i])
            drop_file(st, recs[i].id);
    *meta_p = m;
    memset(&m, 0, sizeof m);
out:
    if (txn)
        mdb_txn_abort(txn);
    if (had_old)
        stor_obj_rec_free(&old);
    buf_free(&rec);
    free_part_recs(recs, n_recs);
    free(segs);
    free(md5s);
    free(used);
    stor_meta_free(&m);
    if (have_up)
        stor_upload_rec_free(&up);
    return s;
}

stor_status_t stor_mpu_abort(stor_t *st, const stor_bucket_t *bucket, const char *key,
                             const char *upload_id)
{
    MDB_txn *txn;
    stor_status_t s = wr_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    uint8_t kbuf[STOR_BUCKET_MAX + 2 + STOR_UPLOAD_ID_LEN];
    MDB_val uk;
    stor_part_rec_t *recs = NULL;
    size_t n = 0;
    s = bucket_check(st, txn, bucket->name, bucket->id);
    if (s == STOR_OK)
        s = upload_get(st, txn, bucket->name, key, upload_id, NULL, &uk, kbuf);
    if (s == STOR_OK)
        s = load_parts(st, txn, upload_id, 0, &recs, &n);
    if (s == STOR_OK)
        s = del_parts(st, txn, upload_id);
    if (s == STOR_OK) {
        int rc = mdb_del(txn, st->db_uploads, &uk, NULL);
        if (rc)
            s = mdb_fail("upload delete", rc);
    }
    if (s == STOR_OK) {
        s = wr_commit(st, txn);
    } else {
        mdb_txn_abort(txn);
    }
    if (s == STOR_OK)
        for (size_t i = 0; i < n; i++)
            drop_file(st, recs[i].id);
    free_part_recs(recs, n);
    return s;
}

static int cmp_upload(const void *a, const void *b)
{
    const stor_upload_t *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : strcmp(x->upload_id, y->upload_id);
}

stor_status_t stor_mpu_list(stor_t *st, const char *bucket, const char *prefix,
                            const char *key_marker, const char *upload_id_marker, size_t max,
                            stor_upload_t **uploads_p, size_t *n_p, int *more_p)
{
    MDB_txn *txn;
    MDB_cursor *cur = NULL;
    stor_status_t s = rd_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    prefix = prefix ? prefix : "";
    size_t plen = strlen(prefix);
    int has_km = key_marker && *key_marker;
    int has_im = upload_id_marker && *upload_id_marker;
    stor_upload_t *arr = NULL;
    size_t n = 0, cap = 0;
    s = bucket_exists(st, txn, bucket);
    if (s != STOR_OK)
        goto out;
    int rc = mdb_cursor_open(txn, st->db_uploads, &cur);
    if (rc) {
        s = mdb_fail("cursor", rc);
        goto out;
    }
    size_t blen = strlen(bucket);
    uint8_t bp[STOR_BUCKET_MAX + 1];
    memcpy(bp, bucket, blen);
    bp[blen] = 0;
    MDB_val k = {blen + 1, bp}, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != blen + 1 + STOR_UPLOAD_ID_LEN || memcmp(k.mv_data, bp, blen + 1) != 0)
            break;
        stor_upload_rec_t r;
        if ((s = stor_rec_decode_upload(v.mv_data, v.mv_size, &r)) != STOR_OK) {
            log_error("storage: corrupt upload record in %s", bucket);
            goto out;
        }
        const char *id = (const char *)k.mv_data + blen + 1;
        int keep = strncmp(r.key, prefix, plen) == 0;
        if (keep && has_km) {
            int c = strcmp(r.key, key_marker);
            keep = c > 0 || (c == 0 && has_im &&
                             memcmp(id, upload_id_marker,
                                    strnlen(upload_id_marker, STOR_UPLOAD_ID_LEN)) > 0);
        }
        if (!keep) {
            stor_upload_rec_free(&r);
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            stor_upload_t *p = realloc(arr, cap * sizeof *arr);
            if (!p) {
                stor_upload_rec_free(&r);
                s = STOR_ERR_NOMEM;
                goto out;
            }
            arr = p;
        }
        arr[n].key = r.key;
        r.key = NULL;
        memcpy(arr[n].upload_id, id, STOR_UPLOAD_ID_LEN);
        arr[n].upload_id[STOR_UPLOAD_ID_LEN] = '\0';
        arr[n].initiated_ms = r.initiated_ms;
        n++;
        stor_upload_rec_free(&r);
    }
    if (rc != 0 && rc != MDB_NOTFOUND) {
        s = mdb_fail("upload list", rc);
        goto out;
    }
    if (n)
        qsort(arr, n, sizeof *arr, cmp_upload);
    *more_p = n > max;
    if (n > max) {
        for (size_t i = max; i < n; i++)
            free(arr[i].key);
        n = max;
    }
out:
    if (cur)
        mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    if (s != STOR_OK) {
        stor_uploads_free(arr, n);
        return s;
    }
    *uploads_p = arr;
    *n_p = n;
    return STOR_OK;
}

void stor_uploads_free(stor_upload_t *uploads, size_t n)
{
    if (!uploads)
        return;
    for (size_t i = 0; i < n; i++)
        free(uploads[i].key);
    free(uploads);
}
