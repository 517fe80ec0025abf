/* Storage durability: relaxed mode's deferred unlinks and sync points, and
 * the fsyncs each mode owes.
 *
 * Which fsyncs happen is observed, not mocked: this executable defines fsync()
 * and fdatasync() itself. Its definitions take precedence over libc's for the
 * storage library linked into it and for liblmdb (which references them), so
 * every call made under test is recorded -- by the inode it hit -- and then
 * made for real. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "common/hash.h"
#include "common/s3r_limits.h"
#include "stor_test_util.h"
#include "storage/local/local_restore.h"
#include "storage/local/local_internal.h"
#include "storage/local/local_syncer.h"
#include "storage/local/local_wal.h"

/* ---- fsync / fdatasync observed ------------------------------------------ */

typedef struct synced {
    dev_t dev;
    ino_t ino;
} synced_t;

static pthread_mutex_t synced_lock = PTHREAD_MUTEX_INITIALIZER;
static synced_t synced[1 << 16];
static size_t n_synced;

static void note_sync(int fd)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return;
    synced_t one = {sb.st_dev, sb.st_ino};
    pthread_mutex_lock(&synced_lock);
    if (n_synced < sizeof synced / sizeof synced[0])
        synced[n_synced++] = one;
    pthread_mutex_unlock(&synced_lock);
}

int fsync(int fd)
{
    note_sync(fd);
    return (int)syscall(SYS_fsync, fd);
}

/* Nonzero: fdatasync of this inode fails with EIO (a disk error, staged). */
static _Atomic ino_t fail_ino;
/* Nonzero: fdatasync of this inode waits until hold_release (a slow disk,
 * staged); held says a flush is waiting. */
static _Atomic ino_t hold_ino;
static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cv = PTHREAD_COND_INITIALIZER;
static int held;

int fdatasync(int fd)
{
    note_sync(fd);
    struct stat sb;
    if (fail_ino && fstat(fd, &sb) == 0 && sb.st_ino == fail_ino) {
        errno = EIO;
        return -1;
    }
    if (hold_ino && fstat(fd, &sb) == 0 && sb.st_ino == hold_ino) {
        pthread_mutex_lock(&hold_mu);
        held = 1;
        pthread_cond_broadcast(&hold_cv);
        while (hold_ino)
            pthread_cond_wait(&hold_cv, &hold_mu);
        held = 0;
        pthread_mutex_unlock(&hold_mu);
    }
    return (int)syscall(SYS_fdatasync, fd);
}

static void hold_wait_held(void)
{
    pthread_mutex_lock(&hold_mu);
    while (!held)
        pthread_cond_wait(&hold_cv, &hold_mu);
    pthread_mutex_unlock(&hold_mu);
}

static void hold_release(void)
{
    pthread_mutex_lock(&hold_mu);
    hold_ino = 0;
    pthread_cond_broadcast(&hold_cv);
    pthread_mutex_unlock(&hold_mu);
}

/* syncfs calls since the last reset, and the filesystem of the last one. */
static size_t n_syncfs;
static dev_t syncfs_dev;

int syncfs(int fd)
{
    struct stat sb;
    pthread_mutex_lock(&synced_lock);
    if (fstat(fd, &sb) == 0)
        syncfs_dev = sb.st_dev;
    n_syncfs++;
    pthread_mutex_unlock(&synced_lock);
    return (int)syscall(SYS_syncfs, fd);
}

static void synced_reset(void)
{
    pthread_mutex_lock(&synced_lock);
    n_synced = 0;
    n_syncfs = 0;
    pthread_mutex_unlock(&synced_lock);
}

/* How many fsync/fdatasync calls hit path's inode since the last reset. */
static size_t synced_count(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return 0;
    size_t n = 0;
    pthread_mutex_lock(&synced_lock);
    for (size_t i = 0; i < n_synced; i++)
        n += synced[i].dev == sb.st_dev && synced[i].ino == sb.st_ino;
    pthread_mutex_unlock(&synced_lock);
    return n;
}

/* ---- Fixture ------------------------------------------------------------- */

/* What store_open gives every store it opens (the fixture's choice, children
 * included): 0 for objects in files, which the tests of files, their syncs
 * and their unlinks need; the default for the crash tests' inline variants. */
static size_t fx_inline_max;

static stor_status_t store_open(const char *dir, stor_durability_t mode, stor_t **st_p)
{
    stor_status_t s = stor_open(dir, mode, st_p);
    if (s == STOR_OK)
        stor_set_inline_max(*st_p, fx_inline_max);
    return s;
}

typedef struct fx {
    char *tmp;           /* a fresh directory */
    char dir[512];       /* tmp/data: the data dir, made by stor_open */
    char path[PATH_MAX]; /* scratch */
    stor_t *st;
    stor_durability_t mode;
} fx_t;

static int setup_mode(void **state, stor_durability_t mode)
{
    fx_t *f = calloc(1, sizeof *f);
    f->tmp = tu_mkdtemp();
    snprintf(f->dir, sizeof f->dir, "%s/data", f->tmp);
    f->mode = mode;
    fx_inline_max = 0;
    /* No timer: sync points happen only where the tests ask for them. */
    local_sync_interval_ms = 0;
    *state = f;
    return 0;
}

static int setup_relaxed(void **state)
{
    return setup_mode(state, STOR_DURABILITY_RELAXED);
}

static int setup_fsync(void **state)
{
    return setup_mode(state, STOR_DURABILITY_FSYNC);
}

static int setup_relaxed_inline(void **state)
{
    setup_mode(state, STOR_DURABILITY_RELAXED);
    fx_inline_max = S3R_INLINE_MAX_DEFAULT;
    return 0;
}

static int setup_fsync_inline(void **state)
{
    setup_mode(state, STOR_DURABILITY_FSYNC);
    fx_inline_max = S3R_INLINE_MAX_DEFAULT;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    fail_ino = 0; /* a failed assertion may have left it set */
    stor_close(f->st);
    tu_rmrf(f->tmp);
    free(f->tmp);
    free(f);
    local_sync_interval_ms = 1000;
    local_sync_max_files = 16384;
    local_sync_throttle_ms = 10000;
    local_restore_boot_id_path = "/proc/sys/kernel/random/boot_id";
    return 0;
}

static const char *fx_path(fx_t *f, const char *rel)
{
    snprintf(f->path, sizeof f->path, "%s/%s", f->dir, rel);
    return f->path;
}

/* The one file under objects/ (there must be exactly one): its path relative
 * to objects/ ("ab/cd/<id>"). */
static void only_object_file(fx_t *f, char rel[LOCAL_PATH_LEN])
{
    assert_int_equal(tu_count_objects(f->dir), 1);
    DIR *d1 = opendir(fx_path(f, ".s3rdma/objects"));
    assert_non_null(d1);
    struct dirent *e1, *e2, *e3;
    rel[0] = '\0';
    while ((e1 = readdir(d1)) != NULL) {
        if (e1->d_name[0] == '.')
            continue;
        char p2[PATH_MAX / 2];
        snprintf(p2, sizeof p2, "%s/.s3rdma/objects/%s", f->dir, e1->d_name);
        DIR *d2 = opendir(p2);
        while (d2 && (e2 = readdir(d2)) != NULL) {
            if (e2->d_name[0] == '.')
                continue;
            char p3[PATH_MAX];
            snprintf(p3, sizeof p3, "%s/%s", p2, e2->d_name);
            DIR *d3 = opendir(p3);
            while (d3 && (e3 = readdir(d3)) != NULL)
                if (e3->d_name[0] != '.')
                    snprintf(rel, LOCAL_PATH_LEN, "%.2s/%.2s/%.32s", e1->d_name, e2->d_name,
                             e3->d_name);
            if (d3)
                closedir(d3);
        }
        if (d2)
            closedir(d2);
    }
    closedir(d1);
    assert_int_equal(strlen(rel), 6 + 2 * STOR_ID_LEN);
}

/* Every key of bucket opens: no index entry points at a missing file. */
static void assert_index_files_present(stor_t *st, const char *bucket)
{
    stor_iter_t *it;
    const char *k;
    size_t klen;
    assert_int_equal(stor_iter_open(st, bucket, "", NULL, &it), STOR_OK);
    int r;
    while ((r = stor_iter_next(it, &k, &klen, NULL)) == 1) {
        char key[1100];
        snprintf(key, sizeof key, "%.*s", (int)klen, k);
        stor_reader_t *rd;
        assert_int_equal(stor_reader_open(st, bucket, key, &rd), STOR_OK);
        stor_reader_close(rd);
    }
    assert_int_equal(r, 0);
    stor_iter_close(it);
}

static stor_status_t put_part(stor_t *st, const char *key, const char *id, uint32_t num,
                              const char *data, char etag_out[33])
{
    stor_writer_t *w;
    stor_status_t s = stor_writer_open(st, TU_B(st, "b"), &w);
    if (s != STOR_OK)
        return s;
    stor_writer_write(w, data, strlen(data));
    stor_part_t p = {.number = num};
    tu_md5_hex(data, strlen(data), p.etag);
    if (etag_out)
        strcpy(etag_out, p.etag);
    return stor_part_commit(w, key, id, &p);
}

/* ---- Relaxed mode: deferred unlinks --------------------------------------- */

/* A file a commit dropped stays until a sync point has made that commit
 * durable: until then the index on disk may still be the one pointing at it. */
static void test_relaxed_deferred_unlink(void **state)
{
    fx_t *f = *state;
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    assert_int_equal(tu_put(f->st, "b", "k", "v1", 2), STOR_OK);
    assert_int_equal(tu_count_objects(f->dir), 1);

    /* Overwrite: the old file stays until the sync point. */
    assert_int_equal(tu_put(f->st, "b", "k", "v2", 2), STOR_OK);
    assert_int_equal(tu_count_objects(f->dir), 2);
    char *got = tu_get(f->st, "b", "k", NULL);
    assert_string_equal(got, "v2");
    free(got);
    assert_index_files_present(f->st, "b");
    assert_int_equal(stor_sync(f->st), STOR_OK);
    assert_int_equal(tu_count_objects(f->dir), 1);
    assert_index_files_present(f->st, "b");

    /* Delete: the same. */
    assert_int_equal(stor_delete(f->st, TU_B(f->st, "b"), "k"), STOR_OK);
    assert_int_equal(tu_count_objects(f->dir), 1);
    assert_int_equal(stor_sync(f->st), STOR_OK);
    assert_int_equal(tu_count_objects(f->dir), 0);

    /* Multipart: a replaced part, the parts a completion leaves out, an
     * aborted upload's parts. */
    char id[STOR_UPLOAD_ID_LEN + 1], e1[33];
    assert_int_equal(stor_mpu_create(f->st, TU_B(f->st, "b"), "mp", NULL, id), STOR_OK);
    assert_int_equal(put_part(f->st, "mp", id, 1, "first", NULL), STOR_OK);
    assert_int_equal(put_part(f->st, "mp", id, 1, "again", e1), STOR_OK);
    assert_int_equal(put_part(f->st, "mp", id, 2, "unused", NULL), STOR_OK);
    assert_int_equal(tu_count_objects(f->dir), 3);
    assert_int_equal(stor_sync(f->st), STOR_OK);
    assert_int_equal(tu_count_objects(f->dir), 2);
    stor_complete_part_t cp[] = {{1, e1, {0}}};
    stor_meta_t out;
    assert_int_equal(stor_mpu_complete(f->st, TU_B(f->st, "b"), "mp", id, cp, 1, NULL, &out),
                     STOR_OK);
    stor_meta_free(&out);
    assert_int_equal(tu_count_objects(f->dir), 2);
    assert_index_files_present(f->st, "b");
    assert_int_equal(stor_sync(f->st), STOR_OK);
    assert_int_equal(tu_count_objects(f->dir), 1);
    assert_int_equal(stor_mpu_create(f->st, TU_B(f->st, "b"), "ab", NULL, id), STOR_OK);
    assert_int_equal(put_part(f->st, "ab", id, 1, "x", NULL), STOR_OK);
    assert_int_equal(stor_mpu_abort(f->st, TU_B(f->st, "b"), "ab", id), STOR_OK);
    assert_int_equal(tu_count_objects(f->dir), 2);
    assert_int_equal(stor_sync(f->st), STOR_OK);
    assert_int_equal(tu_count_objects(f->dir), 1);

    /* stor_close() is a sync point: counted before a reopen, whose orphan
     * sweep would remove the file anyway. */
    assert_int_equal(tu_put(f->st, "b", "mp", "simple now", 10), STOR_OK);
    assert_int_equal(tu_count_objects(f->dir), 2);
    stor_close(f->st);
    f->st = NULL;
    assert_int_equal(tu_count_objects(f->dir), 1);
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    got = tu_get(f->st, "b", "mp", NULL);
    assert_string_equal(got, "simple now");
    free(got);
}

/* ---- Relaxed mode: what is synced, and when ------------------------------- */

static void test_relaxed_sync_points(void **state)
{
    fx_t *f = *state;
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);

    /* A commit flushes nothing: no fsync or fdatasync on a write's path
     * (MDB_NOSYNC; the restore point keeps the index whole, below). */
    synced_reset();
    assert_int_equal(tu_put(f->st, "b", "k", "v1", 2), STOR_OK);
    pthread_mutex_lock(&synced_lock);
    size_t n = n_synced;
    pthread_mutex_unlock(&synced_lock);
    assert_int_equal(n, 0);

    /* The object file is not synced by the commit, but by the next sync
     * point, with its shard directory and the new shard directories. */
    char rel[LOCAL_PATH_LEN], obj[PATH_MAX], shard[PATH_MAX], l1[PATH_MAX];
    only_object_file(f, rel);
    snprintf(obj, sizeof obj, "%s/.s3rdma/objects/%s", f->dir, rel);
    snprintf(shard, sizeof shard, "%s/.s3rdma/objects/%.5s", f->dir, rel);
    snprintf(l1, sizeof l1, "%s/.s3rdma/objects/%.2s", f->dir, rel);
    assert_int_equal(synced_count(obj), 0);
    synced_reset();
    assert_int_equal(stor_sync(f->st), STOR_OK);
    assert_true(synced_count(obj) >= 1);
    assert_true(synced_count(shard) >= 1);
    assert_true(synced_count(l1) >= 1);
    assert_true(synced_count(fx_path(f, ".s3rdma/objects")) >= 1);
    assert_true(synced_count(fx_path(f, ".s3rdma/index/data.mdb")) >= 1);
    assert_true(synced_count(fx_path(f, ".s3rdma/index/restore")) >= 1);
    assert_int_equal(n_syncfs, 0); /* one file: its own fdatasync */

    /* Nothing owed, nothing synced by the thread (which is not idle-spinning
     * syncs): with a timer, an idle store makes no sync calls either. */
    stor_close(f->st);
    f->st = NULL;
    local_sync_interval_ms = 20;
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    synced_reset();
    usleep(100 * 1000);
    assert_int_equal(synced_count(fx_path(f, ".s3rdma/index/data.mdb")), 0);
    /* With the timer, an overwrite's old file goes by itself. */
    assert_int_equal(tu_put(f->st, "b", "k", "v2", 2), STOR_OK);
    for (int i = 0; i < 200 && tu_count_objects(f->dir) != 1; i++)
        usleep(10 * 1000);
    assert_int_equal(tu_count_objects(f->dir), 1);
    char *got = tu_get(f->st, "b", "k", NULL);
    assert_string_equal(got, "v2");
    free(got);
}

/* Many files owed: one syncfs of the objects' filesystem instead of an
 * fdatasync each; then the index and the restore point, as always. */
static void test_relaxed_many_files_one_syncfs(void **state)
{
    fx_t *f = *state;
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    for (unsigned i = 0; i < SYNCER_SYNCFS_FILES; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%u", i);
        assert_int_equal(tu_put(f->st, "b", key, "v", 1), STOR_OK);
    }
    assert_int_equal(tu_count_objects(f->dir), SYNCER_SYNCFS_FILES);
    assert_int_equal(tu_put(f->st, "b", "k0", "w", 1), STOR_OK); /* drops k0's first file */
    synced_reset();
    assert_int_equal(stor_sync(f->st), STOR_OK);
    struct stat sb;
    assert_int_equal(stat(fx_path(f, ".s3rdma/objects"), &sb), 0);
    pthread_mutex_lock(&synced_lock);
    size_t n = n_syncfs;
    dev_t dev = syncfs_dev;
    pthread_mutex_unlock(&synced_lock);
    assert_int_equal(n, 1);
    assert_int_equal(dev, sb.st_dev);
    assert_true(synced_count(fx_path(f, ".s3rdma/index/data.mdb")) >= 1);
    assert_true(synced_count(fx_path(f, ".s3rdma/index/restore")) >= 1);
    /* The dropped file went once the restore point covered its drop. */
    assert_int_equal(tu_count_objects(f->dir), SYNCER_SYNCFS_FILES);
    assert_index_files_present(f->st, "b");
}

/* The backlog is bounded: past local_sync_max_files owed, a commit waits for
 * a sync point; if none succeeds in local_sync_throttle_ms (here: the index's
 * sync fails), the write is refused (SlowDown) and leaves nothing behind;
 * once sync points succeed again, writes go through. */
static void test_relaxed_backlog_bound(void **state)
{
    fx_t *f = *state;
    local_sync_max_files = 8;
    local_sync_throttle_ms = 50;
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    for (unsigned i = 0; i < 8; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%u", i);
        assert_int_equal(tu_put(f->st, "b", key, "v", 1), STOR_OK);
    }
    struct stat sb;
    assert_int_equal(stat(fx_path(f, ".s3rdma/index/data.mdb"), &sb), 0);
    fail_ino = sb.st_ino;
    assert_int_equal(tu_put(f->st, "b", "late", "x", 1), STOR_ERR_UNAVAILABLE);
    fail_ino = 0;
    assert_int_equal(tu_count_objects(f->dir), 8);
    assert_null(tu_get(f->st, "b", "late", NULL));
    assert_int_equal(stor_sync(f->st), STOR_OK);
    assert_int_equal(tu_put(f->st, "b", "late", "x", 1), STOR_OK);
    char *got = tu_get(f->st, "b", "late", NULL);
    assert_string_equal(got, "x");
    free(got);
    assert_index_files_present(f->st, "b");
}

/* ---- Directory entries (both modes) --------------------------------------- */

/* stor_open makes durable the directory entries it relies on: the data dir it
 * created (in its parent), .s3rdma, lock/objects/index, and the index's own
 * files (data.mdb and lock.mdb, made by mdb_env_open). */
static void test_open_syncs_directories(void **state)
{
    fx_t *f = *state;
    synced_reset();
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_true(synced_count(fx_path(f, ".s3rdma/index")) >= 1);
    assert_true(synced_count(f->tmp) >= 1);
    assert_true(synced_count(f->dir) >= 1);
    assert_true(synced_count(fx_path(f, ".s3rdma")) >= 1);
}

/* fsync mode, before an acknowledged object's file is relied on: the file,
 * the directory holding its entry, and every shard directory on its path
 * (their entries in their parents) are synced -- also for shard directories
 * that already existed at open, which an earlier process (a relaxed one, or
 * one that crashed between its mkdir and the parent's fsync) may have left
 * without a durable entry. */
static void test_fsync_shard_dirs(void **state)
{
    fx_t *f = *state;
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    stor_close(f->st);
    f->st = NULL;
    for (unsigned a = 0; a < 256; a++) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/.s3rdma/objects/%02x", f->dir, a);
        assert_int_equal(mkdir(p, 0755), 0);
    }
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    synced_reset();
    assert_int_equal(tu_put(f->st, "b", "k", "v", 1), STOR_OK);
    char rel[LOCAL_PATH_LEN], obj[PATH_MAX], shard[PATH_MAX], l1[PATH_MAX];
    only_object_file(f, rel);
    snprintf(obj, sizeof obj, "%s/.s3rdma/objects/%s", f->dir, rel);
    snprintf(shard, sizeof shard, "%s/.s3rdma/objects/%.5s", f->dir, rel);
    snprintf(l1, sizeof l1, "%s/.s3rdma/objects/%.2s", f->dir, rel);
    assert_true(synced_count(obj) >= 1);
    assert_true(synced_count(shard) >= 1);
    assert_true(synced_count(l1) >= 1);
    /* objects/ itself: the pre-existing level-1 directory's entry. */
    assert_true(synced_count(fx_path(f, ".s3rdma/objects")) >= 1);
    /* The commit: its record in the commit log. */
    assert_true(synced_count(fx_path(f, ".s3rdma/index/wal")) >= 1);
}

/* ---- Relaxed mode: the restore point ------------------------------------- */

/* Stages a boot: the boot id the store reads is the content of tmp/boot. */
static void set_boot(fx_t *f, const char *id)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/boot", f->tmp);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fprintf(fp, "%s\n", id);
    fclose(fp);
    local_restore_boot_id_path = path;
}

/* In a child that then dies as by kill -9 (no stor_close, no sync point):
 * opens the store and churns keys -- enough commits that LMDB would reuse
 * the restore point's pages were they not pinned -- leaving k = "after" and
 * new = "x". What it wrote is whole in the page cache, not synced. */
static void churn_and_die(fx_t *f)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        stor_t *st;
        if (store_open(f->dir, STOR_DURABILITY_RELAXED, &st) != STOR_OK)
            _exit(1);
        for (int i = 0; i < 200; i++) {
            char key[32], val[32];
            snprintf(key, sizeof key, "churn-%d", i % 20);
            snprintf(val, sizeof val, "value %d", i);
            if (tu_put(st, "b", key, val, strlen(val)) != STOR_OK ||
                (i % 3 == 0 && stor_delete(st, TU_B(st, "b"), key) != STOR_OK))
                _exit(2);
        }
        if (tu_put(st, "b", "k", "after", 5) != STOR_OK ||
            tu_put(st, "b", "new", "x", 1) != STOR_OK)
            _exit(3);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* The state of the last restore point: k = "before", then keep0..keep9. */
static void make_restore_point(fx_t *f)
{
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    assert_int_equal(tu_put(f->st, "b", "k", "before", 6), STOR_OK);
    for (int i = 0; i < 10; i++) {
        char key[16];
        snprintf(key, sizeof key, "keep%d", i);
        assert_int_equal(tu_put(f->st, "b", key, key, strlen(key)), STOR_OK);
    }
    stor_close(f->st); /* a sync point: the restore point */
    f->st = NULL;
}

static void assert_get(stor_t *st, const char *key, const char *want)
{
    char *got = tu_get(st, "b", key, NULL);
    if (!want) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

/* After the OS went down (another boot id), the index is exactly its last
 * restore point: the writes acknowledged after it are gone, whole (their
 * files swept as orphans), and everything before it is intact -- although
 * hundreds of commits ran after it, which reuse freed pages. */
static void test_relaxed_power_loss_rolls_back(void **state)
{
    fx_t *f = *state;
    set_boot(f, "boot-a");
    make_restore_point(f);
    churn_and_die(f);
    set_boot(f, "boot-b");
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_get(f->st, "k", "before");
    assert_get(f->st, "new", NULL);
    assert_get(f->st, "churn-1", NULL);
    stor_iter_t *it;
    assert_int_equal(stor_iter_open(f->st, "b", "", NULL, &it), STOR_OK);
    const char *key;
    size_t klen;
    int n = 0;
    while (stor_iter_next(it, &key, &klen, NULL) == 1) {
        char *name = strndup(key, klen), *got = tu_get(f->st, "b", name, NULL);
        assert_non_null(got);
        assert_true(strcmp(name, "k") == 0 || strcmp(got, name) == 0);
        free(got);
        free(name);
        n++;
    }
    stor_iter_close(it);
    assert_int_equal(n, 11);
    assert_int_equal(tu_count_objects(f->dir), fx_inline_max ? 0 : 11);
    assert_index_files_present(f->st, "b");
    /* The store goes on from there, and a second open (same boot) keeps it. */
    assert_int_equal(tu_put(f->st, "b", "k", "later", 5), STOR_OK);
    stor_close(f->st);
    f->st = NULL;
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_get(f->st, "k", "later");
}

/* A process that died while the OS did not (same boot id) loses nothing it
 * acknowledged: the page cache held every commit whole. */
static void test_relaxed_kill9_keeps_all(void **state)
{
    fx_t *f = *state;
    set_boot(f, "boot-a");
    make_restore_point(f);
    churn_and_die(f);
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_get(f->st, "k", "after");
    assert_get(f->st, "new", "x");
    assert_get(f->st, "keep3", "keep3");
    assert_index_files_present(f->st, "b");
}

/* Fsync mode's commits are each covered by a restore point before they
 * return, also on a data directory a relaxed process left: a reboot does not
 * roll them back. */
static void test_fsync_commit_survives_reboot(void **state)
{
    fx_t *f = *state;
    set_boot(f, "boot-a");
    make_restore_point(f);
    assert_int_equal(store_open(f->dir, STOR_DURABILITY_FSYNC, &f->st), STOR_OK);
    assert_int_equal(tu_put(f->st, "b", "k", "fsynced", 7), STOR_OK);
    stor_close(f->st);
    f->st = NULL;
    set_boot(f, "boot-b");
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_get(f->st, "k", "fsynced");
}

/* ---- Fsync mode: group commit ---------------------------------------------- */

#define GC_THREADS 16
#define GC_PUTS    40

typedef struct gc_arg {
    stor_t *st;
    int t, ackfd;
} gc_arg_t;

/* Appends line to the ack log. */
static void gc_ack(gc_arg_t *a, const char *line)
{
    ssize_t n = (ssize_t)strlen(line);
    if (write(a->ackfd, line, (size_t)n) != n)
        _exit(5);
}

/* One writer: PUTs its keys and DELETEs every fourth one it put, appending
 * each key to the ack log once the PUT returned ("-key" once the DELETE
 * did: an acknowledgement a client would have seen). Concurrent writers'
 * changes share write transactions (local_group.c) and sync points. */
static void *gc_writer(void *arg)
{
    gc_arg_t *a = arg;
    for (int i = 0; i < GC_PUTS; i++) {
        char key[32], line[40];
        snprintf(key, sizeof key, "t%d-%d", a->t, i);
        if (tu_put(a->st, "b", key, key, strlen(key)) != STOR_OK)
            _exit(4);
        snprintf(line, sizeof line, "%s\n", key);
        gc_ack(a, line);
        if (i % 4 == 3) {
            snprintf(key, sizeof key, "t%d-%d", a->t, i - 1);
            if (stor_delete(a->st, TU_B(a->st, "b"), key) != STOR_OK)
                _exit(6);
            snprintf(line, sizeof line, "-%s\n", key);
            gc_ack(a, line);
        }
    }
    return NULL;
}

/* The acknowledgement lines in file path so far. */
static int ack_lines(const char *path)
{
    FILE *fp = fopen(path, "r");
    int n = 0, c;
    while (fp && (c = getc(fp)) != EOF)
        n += c == '\n';
    if (fp)
        fclose(fp);
    return n;
}

/* Concurrent fsync-mode PUTs, the process killed (SIGKILL) among them, then
 * the OS "goes down" (another boot id: everything after the newest restore
 * point is rolled back, as if it never reached the disk): every PUT that had
 * returned is there, whole. Each returned only once a sync point that covers
 * it -- its own or one it shared with the writers that committed alongside
 * it -- had saved its restore point. */
static void test_fsync_group_commit_power_loss(void **state)
{
    fx_t *f = *state;
    set_boot(f, "boot-a");
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    stor_close(f->st);
    f->st = NULL;
    char acks[PATH_MAX];
    snprintf(acks, sizeof acks, "%s/acks", f->tmp);
    int ackfd = open(acks, O_RDWR | O_CREAT | O_APPEND | O_TRUNC, 0644);
    assert_true(ackfd >= 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        stor_t *st;
        if (store_open(f->dir, f->mode, &st) != STOR_OK)
            _exit(1);
        pthread_t th[GC_THREADS];
        gc_arg_t args[GC_THREADS];
        for (int t = 0; t < GC_THREADS; t++) {
            args[t] = (gc_arg_t){st, t, ackfd};
            pthread_create(&th[t], NULL, gc_writer, &args[t]);
        }
        for (int t = 0; t < GC_THREADS; t++)
            pthread_join(th[t], NULL);
        pause(); /* killed here at the latest */
        _exit(0);
    }
    /* Kill it once a quarter of the PUTs were acknowledged: lines counted,
     * not bytes (a line is 5 or 6 bytes: a byte count could stop short). */
    for (int i = 0; i < 6000 && ack_lines(acks) < GC_THREADS * GC_PUTS / 4; i++)
        usleep(5 * 1000);
    kill(pid, SIGKILL);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));

    set_boot(f, "boot-b");
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    FILE *fp = fdopen(ackfd, "r");
    assert_non_null(fp);
    rewind(fp);
    char line[64];
    int acked = 0, deleted = 0;
    /* A key is deleted only after its PUT was acknowledged, so the log has
     * its PUT first: check the PUTs whose DELETE was not acknowledged. */
    char(*puts)[64] = calloc(GC_THREADS * GC_PUTS, sizeof *puts);
    assert_non_null(puts);
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == '-') {
            for (int i = 0; i < acked; i++)
                if (strcmp(puts[i], line + 1) == 0)
                    puts[i][0] = '\0';
            assert_null(tu_get(f->st, "b", line + 1, NULL));
            deleted++;
        } else {
            assert_true(acked < GC_THREADS * GC_PUTS);
            snprintf(puts[acked++], sizeof puts[0], "%s", line);
        }
    }
    for (int i = 0; i < acked; i++) {
        if (!puts[i][0])
            continue;
        /* A key its writer went on to delete (t<t>-<j>, j % 4 == 2) may be
         * gone: the kill can fall between the DELETE's return and its line
         * in the log. If it is there, it is whole. */
        const char *dash = strchr(puts[i], '-');
        char *got = tu_get(f->st, "b", puts[i], NULL);
        if (dash && atoi(dash + 1) % 4 == 2 && !got)
            continue;
        assert_non_null(got);
        assert_string_equal(got, puts[i]);
        free(got);
    }
    free(puts);
    fclose(fp);
    assert_true(deleted > 0);
    assert_true(acked + deleted >= GC_THREADS * GC_PUTS / 4);
    assert_index_files_present(f->st, "b");
}

/* ---- Fsync mode: the commit log -------------------------------------------- */

#define LOG_KEYS  24
#define LOG_PARTS 3

static char log_upload[STOR_UPLOAD_ID_LEN + 1]; /* b/mp's upload */

/* In a child that then dies as by kill -9 (no close, no last sync point):
 * opens the store in fsync mode with a commit log of 8 KiB -- so that it
 * fills, gives way to sync points and starts over several times -- and
 * writes round r: b/k<i> three times each (the last value "r<r>-<i>"),
 * every third key deleted, parts 1-3 of upload b/mp twice each (the last
 * "r<r>-p<n>"), and in versioned bucket v three versions of x and a delete
 * marker. Every call was acknowledged. */
static void log_history_and_die(fx_t *f, int round)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        stor_t *st;
        local_wal_max_bytes = 8192;
        if (store_open(f->dir, STOR_DURABILITY_FSYNC, &st) != STOR_OK)
            _exit(1);
        for (int n = 0; n < 3; n++)
            for (int i = 0; i < LOG_KEYS; i++) {
                char key[16], val[64];
                snprintf(key, sizeof key, "k%d", i);
                snprintf(val, sizeof val, "r%d-%d%s", round, i, n < 2 ? "-early" : "");
                if (tu_put(st, "b", key, val, strlen(val)) != STOR_OK)
                    _exit(2);
            }
        for (int n = 0; n < 2; n++)
            for (uint32_t i = 1; i <= LOG_PARTS; i++) {
                char val[32];
                snprintf(val, sizeof val, "r%d-p%u%s", round, i, n ? "" : "-early");
                if (put_part(st, "mp", log_upload, i, val, NULL) != STOR_OK)
                    _exit(6);
            }
        for (int i = 0; i < LOG_KEYS; i += 3) {
            char key[16];
            snprintf(key, sizeof key, "k%d", i);
            if (stor_delete(st, TU_B(st, "b"), key) != STOR_OK)
                _exit(3);
        }
        for (int n = 0; n < 3; n++)
            if (tu_put(st, "v", "x", "version", 7) != STOR_OK)
                _exit(4);
        if (stor_delete(st, TU_B(st, "v"), "x") != STOR_OK)
            _exit(5);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* What log_history_and_die(round) left: its values, its deletes, its parts,
 * and in v the versions of x (rounds so far) -- latest a delete marker. */
static void assert_history(fx_t *f, int round)
{
    stor_part_t *parts;
    size_t n_parts;
    assert_int_equal(stor_mpu_list_parts(f->st, "b", "mp", log_upload, 0, &parts, &n_parts),
                     STOR_OK);
    assert_int_equal(n_parts, LOG_PARTS);
    for (uint32_t i = 0; i < LOG_PARTS; i++) {
        char val[32], etag[33];
        snprintf(val, sizeof val, "r%d-p%u", round, i + 1);
        tu_md5_hex(val, strlen(val), etag);
        assert_int_equal(parts[i].number, i + 1);
        assert_string_equal(parts[i].etag, etag);
    }
    stor_parts_free(parts, n_parts);
    for (int i = 0; i < LOG_KEYS; i++) {
        char key[16], val[64];
        snprintf(key, sizeof key, "k%d", i);
        snprintf(val, sizeof val, "r%d-%d", round, i);
        assert_get(f->st, key, i % 3 ? val : NULL);
    }
    assert_null(tu_get(f->st, "v", "x", NULL));
    stor_iter_t *it;
    assert_int_equal(stor_iter_open_versions(f->st, "v", "", NULL, NULL, &it), STOR_OK);
    const char *key;
    size_t klen;
    stor_meta_t m;
    int is_latest, n = 0, markers = 0;
    while (stor_iter_next_version(it, &key, &klen, &m, &is_latest) == 1) {
        markers += m.delete_marker != NULL;
        assert_true(!is_latest || m.delete_marker);
        stor_meta_free(&m);
        n++;
    }
    stor_iter_close(it);
    assert_int_equal(n, 4 * (round + 1));
    assert_int_equal(markers, round + 1);
    assert_index_files_present(f->st, "b");
}

/* Fsync mode's groups are durable once their record in the commit log is
 * (local_wal.h), not once a restore point covers them: after the OS "goes down"
 * (another boot id: the index is back at its last restore point, taken long
 * before), stor_open applies the log again, and every acknowledged PUT,
 * overwrite, part, DELETE and versioned change is there. Then the same again, but
 * the store that recovers is itself killed after writing more, and the OS
 * goes down once more: nothing of either round is lost (the recovery is
 * durable before the log starts over). */
static void test_fsync_log_replayed_after_reboot(void **state)
{
    fx_t *f = *state;
    set_boot(f, "boot-a");
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "v", "o"), STOR_OK);
    assert_int_equal(stor_bucket_set_versioning(f->st, TU_B(f->st, "v"), STOR_VERSIONING_ENABLED),
                     STOR_OK);
    assert_int_equal(stor_mpu_create(f->st, TU_B(f->st, "b"), "mp", NULL, log_upload), STOR_OK);
    stor_close(f->st);
    f->st = NULL;

    log_history_and_die(f, 0);
    set_boot(f, "boot-b");
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_history(f, 0);
    stor_close(f->st);
    f->st = NULL;

    log_history_and_die(f, 1);
    set_boot(f, "boot-c");
    log_history_and_die(f, 2); /* recovers round 1, then writes round 2 */
    set_boot(f, "boot-d");
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_history(f, 2);
}

/* A commit log whose record checks (CRC32C) but cannot be applied (it names
 * a table the index does not have) stops the open: the index would be
 * missing acknowledged writes. The store does not open, and says so. */
static void test_unappliable_log_refuses_open(void **state)
{
    fx_t *f = *state;
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    stor_close(f->st);
    f->st = NULL;
    /* local_wal.c's layout: a 4 KiB header, then a record with one operation. */
    uint8_t file[4096 + 45] = {0};
    struct {
        char magic[8];
        uint64_t gen;
        uint32_t crc, zero;
    } fh = {.magic = "s3rwal1", .gen = 7};
    fh.crc = hash_crc32c_update(0, &fh, sizeof fh);
    memcpy(file, &fh, sizeof fh);
    struct {
        uint32_t magic, len;
        uint64_t gen, txnid;
        uint32_t crc, n_ops;
    } rh = {.magic = 0x57524c31u, .len = 45, .gen = 7, .txnid = UINT64_MAX / 2, .n_ops = 1};
    struct {
        uint8_t kind, table;
        uint16_t zero;
        uint32_t klen, vlen;
    } op = {.kind = 1, .table = 99, .klen = 1};
    uint8_t *rec = file + 4096;
    memcpy(rec + sizeof rh, &op, sizeof op);
    rec[sizeof rh + sizeof op] = 'k';
    memcpy(rec, &rh, sizeof rh);
    rh.crc = hash_crc32c_update(0, rec, 45);
    memcpy(rec, &rh, sizeof rh);
    int fd = open(fx_path(f, ".s3rdma/index/wal"), O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, file, sizeof file), (ssize_t)sizeof file);
    close(fd);
    stor_t *st = NULL;
    assert_int_not_equal(store_open(f->dir, f->mode, &st), STOR_OK);
    assert_null(st);
}

/* Fsync mode, the flush that makes a commit durable failing under it (the
 * commit log's, then, with the log given up, the index's at a sync point):
 * the PUT fails, but its change is in the index (visible): its file must
 * stay, or the key would point at nothing. Once the disk recovers, the
 * object reads back whole, and PUTs go on through sync points. */
static void fail_put_keeps_file(fx_t *f, const char *file, const char *val)
{
    struct stat sb;
    assert_int_equal(stat(fx_path(f, file), &sb), 0);
    fail_ino = sb.st_ino;
    stor_status_t s = tu_put(f->st, "b", "k", val, strlen(val));
    fail_ino = 0;
    assert_int_equal(s, STOR_ERR_IO);
    assert_get(f->st, "k", val);
    assert_index_files_present(f->st, "b");
}

static void test_fsync_failed_sync_keeps_file(void **state)
{
    fx_t *f = *state;
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    assert_int_equal(tu_put(f->st, "b", "k", "old", 3), STOR_OK);
    fail_put_keeps_file(f, ".s3rdma/index/wal", "new");
    fail_put_keeps_file(f, ".s3rdma/index/data.mdb", "newer");
    assert_int_equal(stor_sync(f->st), STOR_OK);
    assert_get(f->st, "k", "newer");
    assert_int_equal(tu_put(f->st, "b", "k", "newest", 6), STOR_OK);
    assert_get(f->st, "k", "newest");
}

/* ---- Durable later: stor_writer_commit_later, stor_ticket_await ------------ */

/* tu_put through stor_writer_commit_later: *ticket_p what it left to wait for. */
static stor_status_t put_later(stor_t *st, const char *key, const char *val,
                               stor_ticket_t *ticket_p)
{
    stor_writer_t *w;
    stor_status_t s = stor_writer_open(st, TU_B(st, "b"), &w);
    if (s != STOR_OK)
        return s;
    if ((s = stor_writer_write(w, val, strlen(val))) != STOR_OK) {
        stor_writer_abort(w);
        return s;
    }
    stor_meta_t m;
    memset(&m, 0, sizeof m);
    tu_md5_hex(val, strlen(val), m.etag);
    return stor_writer_commit_later(w, key, &m, NULL, ticket_p);
}

/* One stor_ticket_await's outcome. */
typedef struct settled {
    _Atomic int calls;
    stor_status_t st;
    pthread_t by;     /* the thread that called done */
    size_t log_syncs; /* the commit log's fdatasyncs by then (since the reset) */
    const char *wal;  /* the log's path */
} settled_t;

static void on_settled(void *arg, stor_status_t st)
{
    settled_t *x = arg;
    x->st = st;
    x->by = pthread_self();
    x->log_syncs = synced_count(x->wal);
    atomic_fetch_add(&x->calls, 1);
}

typedef struct awaiter {
    stor_t *st;
    stor_ticket_t ticket;
    settled_t *out;
} awaiter_t;

/* Opens f's store with bucket "b"; walpath gets its commit log's path. */
static void open_with_bucket(fx_t *f, char walpath[PATH_MAX])
{
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    snprintf(walpath, PATH_MAX, "%s", fx_path(f, ".s3rdma/index/wal"));
}

static void *await_main(void *arg)
{
    awaiter_t *a = arg;
    stor_ticket_await(a->st, a->ticket, on_settled, a->out);
    return NULL;
}

/* A logged PUT returns committed and visible before its flush, with a
 * ticket; the ticket settles only after a flush of the log that began
 * after the commit, exactly once. A thread that awaits while another's
 * flush runs returns at once and that thread settles it, flushing again
 * for it. */
static void test_fsync_commit_later(void **state)
{
    fx_t *f = *state;
    char walpath[PATH_MAX];
    open_with_bucket(f, walpath);
    synced_reset();
    stor_ticket_t t1 = 0, t2 = 0;
    assert_int_equal(put_later(f->st, "k1", "one", &t1), STOR_OK);
    assert_true(t1 != 0);
    assert_int_equal(synced_count(walpath), 0); /* returned before any flush */
    assert_get(f->st, "k1", "one");             /* committed: visible */
    settled_t s1 = {.wal = walpath};
    stor_ticket_await(f->st, t1, on_settled, &s1); /* no flush under way: runs it */
    assert_int_equal(atomic_load(&s1.calls), 1);
    assert_int_equal(s1.st, STOR_OK);
    assert_true(pthread_equal(s1.by, pthread_self()));
    assert_true(s1.log_syncs >= 1);

    /* Another thread's flush under way (held in its fdatasync). */
    struct stat sb;
    assert_int_equal(stat(walpath, &sb), 0);
    assert_int_equal(put_later(f->st, "k2", "two", &t1), STOR_OK);
    assert_true(t1 != 0);
    settled_t sa = {.wal = walpath}, sb2 = {.wal = walpath};
    awaiter_t a = {f->st, t1, &sa};
    hold_ino = sb.st_ino;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, await_main, &a), 0);
    hold_wait_held();
    assert_int_equal(put_later(f->st, "k3", "three", &t2), STOR_OK);
    assert_true(t2 > t1);
    stor_ticket_await(f->st, t2, on_settled, &sb2); /* returns: the flush is the thread's */
    assert_int_equal(atomic_load(&sb2.calls), 0);
    assert_int_equal(atomic_load(&sa.calls), 0);
    assert_get(f->st, "k3", "three"); /* visible before durable, as every commit */
    hold_release();
    assert_int_equal(pthread_join(th, NULL), 0); /* it flushed again for k3 before returning */
    assert_int_equal(atomic_load(&sa.calls), 1);
    assert_int_equal(atomic_load(&sb2.calls), 1);
    assert_int_equal(sa.st, STOR_OK);
    assert_int_equal(sb2.st, STOR_OK);
    assert_true(pthread_equal(sb2.by, th));
    assert_true(sb2.log_syncs > sa.log_syncs); /* a flush of its own, after k3's commit */

    /* An overwrite that drops an object file waits here: no ticket. */
    if (!fx_inline_max) {
        size_t before = synced_count(walpath);
        assert_int_equal(put_later(f->st, "k1", "uno", &t1), STOR_OK);
        assert_int_equal(t1, 0);
        assert_true(synced_count(walpath) > before);
    }
}

/* The flush a ticket waits for fails: its await says STOR_ERR_IO (the
 * change stays, visible, as after a failed stor_writer_commit), and the
 * commits after it, no longer logged, return durable with no ticket. */
static void test_fsync_commit_later_flush_fails(void **state)
{
    fx_t *f = *state;
    char walpath[PATH_MAX];
    open_with_bucket(f, walpath);
    struct stat sb;
    assert_int_equal(stat(walpath, &sb), 0);
    stor_ticket_t t = 0;
    assert_int_equal(put_later(f->st, "k", "v1", &t), STOR_OK);
    assert_true(t != 0);
    settled_t x = {.wal = walpath};
    fail_ino = sb.st_ino;
    stor_ticket_await(f->st, t, on_settled, &x);
    fail_ino = 0;
    assert_int_equal(atomic_load(&x.calls), 1);
    assert_int_equal(x.st, STOR_ERR_IO);
    assert_get(f->st, "k", "v1");
    assert_int_equal(put_later(f->st, "k", "v2", &t), STOR_OK);
    assert_int_equal(t, 0);
    assert_get(f->st, "k", "v2");
    settled_t y = {.wal = walpath};
    stor_ticket_await(f->st, 0, on_settled, &y); /* ticket 0: done at once */
    assert_int_equal(atomic_load(&y.calls), 1);
    assert_int_equal(y.st, STOR_OK);
}

/* An inline object's PUT syncs what holds it and nothing else: fsync mode
 * the commit log before the commit returns (no file, no directory to flush:
 * the log's record, which it may share with other commits, holds the bytes),
 * relaxed mode the index, not until the sync point. */
static void test_inline_put_syncs_only_the_index(void **state)
{
    fx_t *f = *state;
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    synced_reset();
    assert_int_equal(tu_put(f->st, "b", "k", "small", 5), STOR_OK);
    size_t index_syncs = synced_count(fx_path(f, ".s3rdma/index/data.mdb"));
    assert_int_equal(tu_count_objects(f->dir), 0);
    assert_int_equal(synced_count(fx_path(f, ".s3rdma/objects")), 0);
    if (f->mode == STOR_DURABILITY_FSYNC) {
        assert_true(synced_count(fx_path(f, ".s3rdma/index/wal")) >= 1);
    } else {
        assert_int_equal(index_syncs, 0);
        assert_int_equal(stor_sync(f->st), STOR_OK);
        assert_true(synced_count(fx_path(f, ".s3rdma/index/data.mdb")) >= 1);
    }
    assert_get(f->st, "k", "small");
}

/* In relaxed mode the index is mapped writable (MDB_WRITEMAP), which makes
 * data.mdb as large as the map, sparse. Where the filesystem (here: RLIMIT_FSIZE, as a
 * filesystem with a smaller file size limit) refuses that, the store opens
 * without it and works, crash story included (a child per case: the limit
 * stays with it). */
static void test_index_without_writable_map(void **state)
{
    fx_t *f = *state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit rl = {1 << 30, 1 << 30};
        signal(SIGXFSZ, SIG_IGN);
        stor_t *st;
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0 || store_open(f->dir, f->mode, &st) != STOR_OK)
            _exit(1);
        if (stor_bucket_create(st, "b", "o") != STOR_OK || tu_put(st, "b", "k", "v1", 2) != STOR_OK)
            _exit(2);
        struct stat sb;
        if (stat(fx_path(f, ".s3rdma/index/data.mdb"), &sb) != 0 || sb.st_size > (1 << 30))
            _exit(3);
        _exit(0); /* as by kill -9: no close */
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* Without the limit, the same index maps writable and keeps the PUT. */
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_get(f->st, "k", "v1");
    assert_int_equal(tu_put(f->st, "b", "k", "v2", 2), STOR_OK);
    assert_get(f->st, "k", "v2");
}

/* ---- The pool of free files (local_pool.c) --------------------------------- */

static size_t pool_count(stor_t *st)
{
    return local_pool_count(((lstor_t *)st)->pool);
}

/* Entries of DIR/.s3rdma/pool. */
static size_t pool_entries(fx_t *f)
{
    DIR *d = opendir(fx_path(f, ".s3rdma/" LOCAL_POOL_DIR));
    assert_non_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static ino_t object_ino(fx_t *f)
{
    char rel[LOCAL_PATH_LEN], p[PATH_MAX];
    only_object_file(f, rel);
    snprintf(p, sizeof p, "%s/.s3rdma/objects/%s", f->dir, rel);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    return sb.st_ino;
}

/* The size of the file holding bucket b's key (an object in one file). */
static off_t object_file_size(stor_t *st, const char *key)
{
    stor_reader_t *r;
    assert_int_equal(stor_reader_open(st, "b", key, &r), STOR_OK);
    int fd;
    uint64_t off;
    assert_int_equal(stor_reader_span_fd(r, 0, 1, &fd, &off), 1);
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    stor_reader_close(r);
    return sb.st_size;
}

/* An overwrite's old file goes to the pool once its commit is durable (a
 * sync point in relaxed mode, the commit itself in fsync mode), and the next
 * new file is that inode under a new name, its old bytes written over and
 * cut: no inode made. */
static void test_pool_reuses_dropped_files(void **state)
{
    fx_t *f = *state;
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    assert_int_equal(tu_put(f->st, "b", "k", "first, the longest", 18), STOR_OK);
    ino_t first = object_ino(f);
    assert_int_equal(tu_put(f->st, "b", "k", "second", 6), STOR_OK);
    if (f->mode == STOR_DURABILITY_RELAXED) {
        assert_int_equal(pool_count(f->st), 0); /* the index on disk may still name it */
        assert_int_equal(stor_sync(f->st), STOR_OK);
    }
    assert_int_equal(pool_count(f->st), 1);
    assert_int_equal(pool_entries(f), 1);
    assert_int_equal(tu_count_objects(f->dir), 1);
    ino_t second = object_ino(f);
    assert_int_not_equal(second, first);

    assert_int_equal(stor_delete(f->st, TU_B(f->st, "b"), "k"), STOR_OK);
    if (f->mode == STOR_DURABILITY_RELAXED)
        assert_int_equal(stor_sync(f->st), STOR_OK);
    assert_int_equal(pool_count(f->st), 2);
    assert_int_equal(tu_count_objects(f->dir), 0);
    /* The last file pooled comes back first, under a new name, empty. */
    assert_int_equal(tu_put(f->st, "b", "k2", "third!", 6), STOR_OK);
    assert_int_equal(pool_count(f->st), 1);
    assert_int_equal(pool_entries(f), 1);
    assert_int_equal(object_ino(f), second);
    assert_get(f->st, "k2", "third!");
    assert_get(f->st, "k", NULL);
    /* first's 18 bytes written over and cut to 6. */
    assert_int_equal(tu_put(f->st, "b", "k3", "fourth", 6), STOR_OK);
    assert_int_equal(pool_count(f->st), 0);
    assert_int_equal(tu_count_objects(f->dir), 2);
    assert_get(f->st, "k3", "fourth");
    assert_int_equal(object_file_size(f->st, "k3"), 6);
    assert_get(f->st, "k2", "third!");
    assert_index_files_present(f->st, "b");
}

/* Relaxed mode pools nothing: a dropped file is unlinked at the sync point. */
static void test_pool_relaxed_unlinks(void **state)
{
    fx_t *f = *state;
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    assert_int_equal(tu_put(f->st, "b", "k", "first", 5), STOR_OK);
    assert_int_equal(tu_put(f->st, "b", "k", "second", 6), STOR_OK);
    assert_int_equal(stor_sync(f->st), STOR_OK);
    assert_int_equal(pool_count(f->st), 0);
    assert_int_equal(pool_entries(f), 0);
    assert_int_equal(tu_count_objects(f->dir), 1);
    assert_get(f->st, "k", "second");
}

/* A dropped file a reader still has open is not pooled (a new object's bytes
 * would go under the reader): it is unlinked, and the reader keeps reading
 * the old bytes while new objects are written. */
static void test_pool_skips_open_files(void **state)
{
    fx_t *f = *state;
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    assert_int_equal(tu_put(f->st, "b", "k", "old bytes", 9), STOR_OK);
    stor_reader_t *r;
    assert_int_equal(stor_reader_open(f->st, "b", "k", &r), STOR_OK);
    /* A descriptor that outlives the reader, as a sendfile() response's. */
    int fd, dupfd;
    uint64_t off;
    assert_int_equal(stor_reader_span_fd(r, 0, 9, &fd, &off), 1);
    assert_true((dupfd = dup(fd)) >= 0);
    stor_reader_close(r);
    assert_int_equal(tu_put(f->st, "b", "k", "new", 3), STOR_OK);
    assert_int_equal(stor_sync(f->st), STOR_OK);
    assert_int_equal(pool_count(f->st), 0);
    assert_int_equal(pool_entries(f), 0);
    assert_int_equal(tu_put(f->st, "b", "other", "XXXXXXXXXXXX", 12), STOR_OK);
    char buf[16] = {0};
    assert_int_equal(pread(dupfd, buf, sizeof buf, (off_t)off), 9);
    assert_string_equal(buf, "old bytes");
    close(dupfd);
    /* Once nobody has it, a dropped file is pooled again. */
    assert_int_equal(tu_put(f->st, "b", "k", "newer", 5), STOR_OK);
    assert_int_equal(stor_sync(f->st), STOR_OK);
    assert_int_equal(pool_count(f->st), 1);
    assert_get(f->st, "k", "newer");
}

/* The pool alone: at most max files, with their bytes; taken LIFO into the
 * path asked for; then none. */
static void test_pool_bound(void **state)
{
    fx_t *f = *state;
    char objs[PATH_MAX], pool[PATH_MAX];
    snprintf(objs, sizeof objs, "%s/objects", f->tmp);
    snprintf(pool, sizeof pool, "%s/pool", f->tmp);
    assert_int_equal(mkdir(objs, 0755), 0);
    int objfd = open(objs, O_RDONLY | O_DIRECTORY);
    assert_true(objfd >= 0);
    assert_int_equal(mkdirat(objfd, "ab", 0755), 0);
    assert_int_equal(mkdirat(objfd, "ab/cd", 0755), 0);
    local_pool_t *p = local_pool_open(pool, objfd, 2);
    assert_non_null(p);
    uint8_t ids[3][STOR_ID_LEN];
    for (int i = 0; i < 3; i++) {
        memset(ids[i], 0x10 * (i + 1), STOR_ID_LEN);
        ids[i][0] = 0xab;
        ids[i][1] = 0xcd;
        char path[LOCAL_PATH_LEN];
        local_id_path(ids[i], path);
        int fd = openat(objfd, path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "some bytes", 10), 10);
        close(fd);
    }
    for (int i = 0; i < 3; i++)
        local_pool_return(p, ids[i]);
    assert_int_equal(local_pool_count(p), 2);
    for (int i = 0; i < 3; i++) {
        char path[LOCAL_PATH_LEN];
        local_id_path(ids[i], path);
        assert_int_equal(faccessat(objfd, path, F_OK, 0), -1); /* pooled or unlinked */
    }
    struct stat sb;
    int taken[3];
    for (int i = 0; i < 3; i++) {
        char path[LOCAL_PATH_LEN];
        uint8_t id[STOR_ID_LEN];
        memset(id, 0x70 + i, STOR_ID_LEN);
        id[0] = 0xab;
        id[1] = 0xcd;
        local_id_path(id, path);
        taken[i] = local_pool_take(p, path);
        if (i < 2) {
            assert_true(taken[i] >= 0);
            assert_int_equal(fstat(taken[i], &sb), 0);
            assert_int_equal(sb.st_size, 10); /* the old bytes, for the writer to write over */
            assert_int_equal(fstatat(objfd, path, &sb, 0), 0);
            assert_int_equal(write(taken[i], "x", 1), 1);
            close(taken[i]);
        } else {
            assert_int_equal(taken[i], -1);
            assert_int_equal(faccessat(objfd, path, F_OK, 0), -1);
        }
    }
    assert_int_equal(local_pool_count(p), 0);
    local_pool_close(p);
    /* max 0: nothing is pooled, the file is unlinked as without a pool. */
    p = local_pool_open(pool, objfd, 0);
    assert_non_null(p);
    char path[LOCAL_PATH_LEN];
    local_id_path(ids[0], path);
    int fd = openat(objfd, path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    assert_true(fd >= 0);
    close(fd);
    local_pool_return(p, ids[0]);
    assert_int_equal(local_pool_count(p), 0);
    assert_int_equal(faccessat(objfd, path, F_OK, 0), -1);
    assert_int_equal(local_pool_take(p, path), -1);
    local_pool_close(p);
    close(objfd);
}

/* What a process left in pool/ (it stopped with free files, or died between
 * a move and its bookkeeping) is removed at the next open; objects stay. */
static void test_pool_leftovers_swept(void **state)
{
    fx_t *f = *state;
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    assert_int_equal(tu_put(f->st, "b", "k", "v1", 2), STOR_OK);
    assert_int_equal(tu_put(f->st, "b", "k", "v2", 2), STOR_OK);
    stor_close(f->st); /* v1's file went to the pool, and stays */
    f->st = NULL;
    assert_int_equal(pool_entries(f), 1);
    FILE *fp =
        fopen(fx_path(f, ".s3rdma/" LOCAL_POOL_DIR "/0123456789abcdef0123456789abcdef"), "w");
    assert_non_null(fp);
    fputs("stale bytes", fp);
    fclose(fp);
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_int_equal(pool_entries(f), 0);
    assert_int_equal(pool_count(f->st), 0);
    assert_get(f->st, "k", "v2");
    assert_int_equal(tu_count_objects(f->dir), 1);
}

/* kill -9 while files are recycled all the time (a sync point every
 * millisecond pools what the overwrites drop; the next writes take them):
 * every acknowledged write is read back whole, nothing reads another
 * object's bytes, no index entry lacks its file, and pool/ is emptied. */
#define RECYCLE_KEYS 4
#define RECYCLE_LEN  6000

static void recycle_value(int key, unsigned seq, char *out)
{
    for (size_t i = 0; i < RECYCLE_LEN; i++)
        out[i] = (char)('a' + (key * 7 + seq + i / 64) % 26);
}

static void test_kill9_while_recycling(void **state)
{
    fx_t *f = *state;
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    stor_close(f->st);
    f->st = NULL;
    char acks[PATH_MAX];
    snprintf(acks, sizeof acks, "%s/acks", f->tmp);
    int ackfd = open(acks, O_RDWR | O_CREAT | O_TRUNC, 0644);
    assert_true(ackfd >= 0);
    assert_int_equal(ftruncate(ackfd, RECYCLE_KEYS * sizeof(unsigned)), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        local_sync_interval_ms = 1;
        stor_t *st;
        if (store_open(f->dir, f->mode, &st) != STOR_OK)
            _exit(1);
        static char val[RECYCLE_LEN];
        for (unsigned seq = 1;; seq++)
            for (int k = 0; k < RECYCLE_KEYS; k++) {
                char key[16];
                snprintf(key, sizeof key, "k%d", k);
                recycle_value(k, seq, val);
                if (tu_put(st, "b", key, val, RECYCLE_LEN) != STOR_OK)
                    _exit(2);
                if (pwrite(ackfd, &seq, sizeof seq, (off_t)(k * sizeof seq)) != sizeof seq)
                    _exit(3);
            }
    }
    /* Killed once every key was overwritten a few times (and so files
     * pooled and taken), at whatever step the child is in. */
    unsigned acked[RECYCLE_KEYS] = {0};
    for (int i = 0; i < 2000 && acked[RECYCLE_KEYS - 1] < 8; i++) {
        usleep(10 * 1000);
        assert_int_equal(pread(ackfd, acked, sizeof acked, 0), (ssize_t)sizeof acked);
    }
    usleep(20 * 1000);
    kill(pid, SIGKILL);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(pread(ackfd, acked, sizeof acked, 0), (ssize_t)sizeof acked);
    close(ackfd);
    assert_int_equal(store_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_int_equal(pool_entries(f), 0);
    static char want[RECYCLE_LEN];
    for (int k = 0; k < RECYCLE_KEYS; k++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", k);
        assert_true(acked[k] > 2); /* it did recycle */
        size_t len;
        char *got = tu_get(f->st, "b", key, &len);
        assert_non_null(got);
        assert_int_equal(len, RECYCLE_LEN);
        /* The last acknowledged value, or the one in flight. */
        recycle_value(k, acked[k], want);
        int ok = memcmp(got, want, RECYCLE_LEN) == 0;
        recycle_value(k, acked[k] + 1, want);
        ok |= memcmp(got, want, RECYCLE_LEN) == 0;
        assert_true(ok);
        free(got);
    }
    assert_int_equal(tu_count_objects(f->dir), RECYCLE_KEYS);
    assert_index_files_present(f->st, "b");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_relaxed_deferred_unlink, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_pool_reuses_dropped_files, setup_fsync, teardown),
        cmocka_unit_test_setup_teardown(test_pool_relaxed_unlinks, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_pool_skips_open_files, setup_fsync, teardown),
        cmocka_unit_test_setup_teardown(test_pool_bound, setup_fsync, teardown),
        cmocka_unit_test_setup_teardown(test_pool_leftovers_swept, setup_fsync, teardown),
        cmocka_unit_test_setup_teardown(test_kill9_while_recycling, setup_fsync, teardown),
        cmocka_unit_test_setup_teardown(test_relaxed_sync_points, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_relaxed_many_files_one_syncfs, setup_relaxed,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_relaxed_backlog_bound, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_relaxed_power_loss_rolls_back, setup_relaxed,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_relaxed_kill9_keeps_all, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_fsync_commit_survives_reboot, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_open_syncs_directories, setup_fsync, teardown),
        cmocka_unit_test_setup_teardown(test_fsync_group_commit_power_loss, setup_fsync, teardown),
        cmocka_unit_test_setup_teardown(test_fsync_failed_sync_keeps_file, setup_fsync, teardown),
        cmocka_unit_test_setup_teardown(test_fsync_log_replayed_after_reboot, setup_fsync,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_unappliable_log_refuses_open, setup_fsync, teardown),
        cmocka_unit_test_setup_teardown(test_open_syncs_directories, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_fsync_shard_dirs, setup_fsync, teardown),
        cmocka_unit_test_setup_teardown(test_index_without_writable_map, setup_relaxed_inline,
                                        teardown),
        /* The crash tests again with small objects kept inline. */
        cmocka_unit_test_setup_teardown(test_relaxed_power_loss_rolls_back, setup_relaxed_inline,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_relaxed_kill9_keeps_all, setup_relaxed_inline,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fsync_commit_survives_reboot, setup_relaxed_inline,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fsync_group_commit_power_loss, setup_fsync_inline,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fsync_failed_sync_keeps_file, setup_fsync_inline,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fsync_log_replayed_after_reboot, setup_fsync_inline,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_inline_put_syncs_only_the_index, setup_relaxed_inline,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_inline_put_syncs_only_the_index, setup_fsync_inline,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fsync_commit_later, setup_fsync, teardown),
        cmocka_unit_test_setup_teardown(test_fsync_commit_later, setup_fsync_inline, teardown),
        cmocka_unit_test_setup_teardown(test_fsync_commit_later_flush_fails, setup_fsync_inline,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
