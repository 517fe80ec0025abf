/* The relaxed-mode sync point: lazily fsyncs the object files and shard
 * directories commits made, syncs the index, then unlinks the files that the
 * now durable commits dropped (to the pool of free files, local_pool.c). See local_syncer.h for the
 * contract. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/array.h"
#include "common/clock.h"
#include "common/log.h"
#include "storage/local/local_restore.h"
#include "storage/local/local_syncer.h"

unsigned local_sync_interval_ms = 1000;

/* Backlogs that wake the thread before the interval is up: they bound the
 * memory held and the work one sync point does. */
#define WAKE_FILES   4096
#define WAKE_DROPS   65536
#define WAKE_COMMITS 4096 /* also bounds data.mdb's growth: see sync_point */

unsigned local_sync_max_files = 16384;
unsigned local_sync_max_drops = 131072;
unsigned local_sync_throttle_ms = 10000;

typedef struct idvec {
    uint8_t *ids; /* n * STOR_ID_LEN bytes */
    size_t n, cap;
} idvec_t;

struct local_syncer {
    MDB_env *env;
    int objfd;
    local_pool_t *pool; /* where step 5 puts the dropped files */
    unsigned interval_ms;
    size_t max_files, max_drops; /* the backlog's bound (local_syncer_throttle) */
    unsigned throttle_ms;

    pthread_mutex_t lock; /* guards everything below up to `stop` */
    pthread_cond_t wake;
    idvec_t files;                         /* committed since the last sync point: fdatasync */
    idvec_t drops;                         /* dropped by commits since: unlink after the sync */
    uint8_t dirs[(SYNCER_N_DIRS + 7) / 8]; /* directories to fsync */
    int dirs_owed;
    unsigned committed; /* commits since the last cut */
    /* The sync point under way: its files, until its restore point is
     * saved; its drops, until they are returned. They count in the backlog. */
    size_t cut_files, cut_drops;
    pthread_cond_t room; /* the backlog shrank: throttled writers look again */
    /* over_bound(), as of the last change to the counts above (set under
     * lock): local_syncer_throttle reads it without the lock, so a commit
     * under the bound takes no lock to learn that it is. */
    atomic_bool at_bound;
    int stop;
    /* Group commit: the snapshot of the newest restore point, whether a
     * waiter is running a sync point for the others, and where they wait. */
    uint64_t durable;
    int leading;
    pthread_cond_t durable_cv;

    pthread_mutex_t sync_lock; /* one sync point at a time; guards what follows */
    uint8_t dirs_now[(SYNCER_N_DIRS + 7) / 8];
    local_restore_t *restore; /* index/restore */
    MDB_txn *pin;             /* a read transaction on the restore point's snapshot */
    int datafd;               /* data.mdb (LMDB's descriptor) */
    size_t psize;             /* LMDB's page size */
    uint8_t *metas;           /* 2 * psize: the meta pages at the cut */
    pthread_t thread;
};

static int idvec_push(idvec_t *v, const uint8_t *id)
{
    if (array_grow(&v->ids, &v->cap, v->n, STOR_ID_LEN, 256) != 0)
        return -1;
    memcpy(v->ids + v->n++ * STOR_ID_LEN, id, STOR_ID_LEN);
    return 0;
}

/* The backlog is at its bound: new commits wait (local_syncer_throttle). */
static int over_bound(const local_syncer_t *s)
{
    return s->files.n + s->cut_files >= s->max_files || s->drops.n + s->cut_drops >= s->max_drops;
}

/* The backlog's counts changed (s->lock held): at_bound follows. */
static void bound_changed(local_syncer_t *s)
{
    atomic_store_explicit(&s->at_bound, over_bound(s), memory_order_release);
}

void local_syncer_committed(local_syncer_t *s)
{
    pthread_mutex_lock(&s->lock);
    if (++s->committed == WAKE_COMMITS)
        pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
}

void local_syncer_new_file(local_syncer_t *s, const uint8_t id[STOR_ID_LEN])
{
    pthread_mutex_lock(&s->lock);
    if (idvec_push(&s->files, id) != 0)
        log_warn("storage: out of memory: an object file is left to the kernel's writeback");
    bound_changed(s);
    if (s->files.n >= WAKE_FILES)
        pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
}

void local_syncer_new_dir(local_syncer_t *s, unsigned dir)
{
    pthread_mutex_lock(&s->lock);
    s->dirs[dir / 8] |= (uint8_t)(1u << (dir % 8));
    s->dirs_owed = 1;
    pthread_mutex_unlock(&s->lock);
}

void local_syncer_drop_file(local_syncer_t *s, const uint8_t id[STOR_ID_LEN])
{
    pthread_mutex_lock(&s->lock);
    /* Out of memory: the file stays (never unlinked early); the orphan sweep
     * of the next stor_open() removes it. */
    if (idvec_push(&s->drops, id) != 0)
        log_warn("storage: out of memory: a dropped file is left for the next open's sweep");
    bound_changed(s);
    if (s->drops.n >= WAKE_DROPS)
        pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
}

static int owed(const local_syncer_t *s)
{
    return s->committed || s->files.n || s->drops.n || s->dirs_owed;
}

/* A backlog that wakes the thread: a sync point runs now, not at the timer. */
static int over_wake(const local_syncer_t *s)
{
    return s->files.n >= WAKE_FILES || s->drops.n >= WAKE_DROPS || s->committed >= WAKE_COMMITS;
}

int local_syncer_throttle(local_syncer_t *s)
{
    if (!atomic_load_explicit(&s->at_bound, memory_order_acquire))
        return 0;
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    if (over_bound(s)) {
        struct timespec until = clock_after_ms(CLOCK_MONOTONIC, s->throttle_ms);
        pthread_cond_signal(&s->wake);
        while (!s->stop && over_bound(s) && rc == 0)
            rc = pthread_cond_timedwait(&s->room, &s->lock, &until);
        rc = !s->stop && over_bound(s) ? -1 : 0;
        if (rc)
            log_warn("storage: sync points are %u ms behind the commits (%zu files, %zu dropped "
                     "files not yet durable): a write is refused (SlowDown)",
                     s->throttle_ms, s->files.n + s->cut_files, s->drops.n + s->cut_drops);
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* fsyncs directory number dir of the objects tree. */
static int sync_dir(local_syncer_t *s, unsigned dir)
{
    char path[16]; /* "ab/cd" fits; room for what the compiler cannot bound */
    int fd;
    if (dir == SYNCER_DIR_ROOT)
        return fsync(s->objfd) == 0 ? 0 : -1;
    if (dir < SYNCER_DIR_L2(0, 0))
        snprintf(path, sizeof path, "%02x", dir - SYNCER_DIR_L1(0));
    else
        snprintf(path, sizeof path, "%02x/%02x", (dir - SYNCER_DIR_L2(0, 0)) >> 8,
                 (dir - SYNCER_DIR_L2(0, 0)) & 0xFF);
    fd = openat(s->objfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        log_error("storage: fsync objects/%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

/* fdatasyncs object file id and marks its shard directory owed. Nonzero
 * if the sync failed (logged). */
static int sync_file(local_syncer_t *s, const uint8_t *id)
{
    char path[LOCAL_PATH_LEN];
    local_id_path(id, path);
    unsigned d = SYNCER_DIR_L2(id[0], id[1]);
    s->dirs_now[d / 8] |= (uint8_t)(1u << (d % 8));
    int fd = openat(s->objfd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return 0; /* its commit failed, or dropped and unlinked since */
    int fail = fd < 0 || fdatasync(fd) != 0;
    if (fail)
        log_error("storage: fdatasync objects/%s: %s", path, strerror(errno));
    if (fd >= 0)
        close(fd);
    return fail;
}

/* syncfs of the objects' filesystem: every file and directory of it that
 * was dirty when it began is written, its metadata too, and the disk's cache
 * flushed once -- where each file's fdatasync would flush it once per file.
 * It also writes what else is dirty on that filesystem (later commits' files,
 * other programs' files): docs/storage.md weighs that. Since Linux 5.8 it
 * reports the writeback errors of the whole filesystem since objfd was
 * opened. Nonzero if it failed (logged). */
static int sync_objects_fs(local_syncer_t *s)
{
    if (syncfs(s->objfd) == 0)
        return 0;
    log_error("storage: syncfs of the objects' filesystem: %s", strerror(errno));
    return 1;
}

/* Hands a sync point's lists back to the next one (its sync or its save
 * failed): nothing is unlinked before a restore point covers it. */
static void give_back(local_syncer_t *s, const idvec_t *files, const idvec_t *drops)
{
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < files->n; i++)
        if (idvec_push(&s->files, files->ids + i * STOR_ID_LEN) != 0)
            break; /* left to the kernel's writeback, as in local_syncer_new_file */
    for (size_t i = 0; i < drops->n; i++)
        if (idvec_push(&s->drops, drops->ids + i * STOR_ID_LEN) != 0)
            break; /* left for the next open's sweep */
    for (size_t i = 0; i < sizeof s->dirs; i++)
        s->dirs[i] |= s->dirs_now[i];
    s->dirs_owed = s->committed = 1;
    s->cut_files = s->cut_drops = 0;
    bound_changed(s);
    pthread_cond_broadcast(&s->room);
    pthread_mutex_unlock(&s->lock);
}

static int sync_point(local_syncer_t *s)
{
    pthread_mutex_lock(&s->sync_lock);
    uint64_t t0 = clock_mono_ns();
    /* 1. The cut: with LMDB's writer lock held (a write transaction of our
     * own), no commit is half done, every commit so far has registered its
     * files (they do so inside their transaction), and the snapshot a new
     * read transaction sees, S, is the last commit. data.mdb's first two
     * pages are then S's meta pages. */
    MDB_txn *wtxn = NULL, *pin = NULL;
    int rc = mdb_txn_begin(s->env, NULL, 0, &wtxn);
    if (rc == 0 && (rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &pin)) != 0)
        pin = NULL;
    if (rc) {
        if (wtxn)
            mdb_txn_abort(wtxn);
        log_error("storage: sync point: %s", mdb_strerror(rc));
        pthread_mutex_unlock(&s->sync_lock);
        return -1;
    }
    uint64_t txnid = (uint64_t)mdb_txn_id(pin);
    size_t mlen = 2 * s->psize;
    int fail = pread(s->datafd, s->metas, mlen, 0) != (ssize_t)mlen;
    pthread_mutex_lock(&s->lock);
    idvec_t files = s->files, drops = s->drops;
    memset(&s->files, 0, sizeof s->files);
    memset(&s->drops, 0, sizeof s->drops);
    /* The directory bitmaps are 8 KiB: copied and walked only when a
     * directory or a file is owed (never for inline objects in fsync mode,
     * where a sync point per group of commits made the walk of all 65,793
     * bits the sync point's largest CPU cost). */
    int dirs_owed = s->dirs_owed || files.n;
    if (s->dirs_owed) {
        memcpy(s->dirs_now, s->dirs, sizeof s->dirs);
        memset(s->dirs, 0, sizeof s->dirs);
    } else {
        memset(s->dirs_now, 0, sizeof s->dirs_now);
    }
    s->dirs_owed = s->committed = 0;
    s->cut_files = files.n;
    s->cut_drops = drops.n;
    pthread_mutex_unlock(&s->lock);
    mdb_txn_abort(wtxn);
    if (fail)
        log_error("storage: sync point: reading the index's meta pages: %s", strerror(errno));

    /* 2. The bytes and directory entries of the files S references that are
     * not yet durable: each file's own fdatasync for a few, one syncfs of
     * the objects' filesystem for many (SYNCER_SYNCFS_FILES). */
    if (files.n >= SYNCER_SYNCFS_FILES) {
        fail |= sync_objects_fs(s);
        dirs_owed = 0;
    } else {
        for (size_t i = 0; i < files.n; i++)
            fail |= sync_file(s, files.ids + i * STOR_ID_LEN);
    }
    uint64_t t_files = clock_mono_ns();
    unsigned ndirs = 0;
    /* Deepest first: a file's entry, then its shard's, then the level-1's. */
    for (unsigned d = SYNCER_N_DIRS; dirs_owed && d-- > 0;) {
        if (d % 8 == 7 && !s->dirs_now[d / 8]) {
            d -= 7; /* a byte with no directory owed */
            continue;
        }
        if (s->dirs_now[d / 8] >> (d % 8) & 1) {
            fail |= sync_dir(s, d) != 0;
            ndirs++;
        }
    }
    uint64_t t_dirs = clock_mono_ns();

    /* 3. The index: S's pages (and any later commit's). An fdatasync of
     * data.mdb whether LMDB writes its pages with pwrite or through its
     * writable map (MDB_WRITEMAP, local_store.c): both are the file's page
     * cache; it is what mdb_env_sync does for the former (msync, for the
     * latter, flushes the same pages). */
    if (!fail && fdatasync(s->datafd) != 0) {
        log_error("storage: index sync: %s", strerror(errno));
        fail = 1;
    }
    /* 4. S becomes the restore point; only then may the previous one's pages
     * be reused. */
    if (!fail && local_restore_save(s->restore, txnid, s->metas, s->psize) != 0)
        fail = 1;
    uint64_t t_index = clock_mono_ns();
    if (fail) {
        mdb_txn_abort(pin);
        give_back(s, &files, &drops);
    } else {
        if (s->pin)
            mdb_txn_abort(s->pin);
        s->pin = pin;
        pthread_mutex_lock(&s->lock);
        s->durable = txnid;
        s->cut_files = 0;
        bound_changed(s);
        pthread_cond_broadcast(&s->room);
        pthread_mutex_unlock(&s->lock);
        /* 5. The files that commits up to S dropped: neither S nor anything
         * after it references them. */
        for (size_t i = 0; i < drops.n; i++)
            local_pool_return(s->pool, drops.ids + i * STOR_ID_LEN);
        pthread_mutex_lock(&s->lock);
        s->cut_drops = 0;
        bound_changed(s);
        pthread_cond_broadcast(&s->room);
        pthread_mutex_unlock(&s->lock);
    }
    uint64_t t_end = clock_mono_ns();
    if (files.n || drops.n)
        log_debug("storage: sync point: %zu files in %.1f ms, %u directories in %.1f ms, "
                  "index and restore point in %.1f ms, %zu dropped files in %.1f ms",
                  files.n, (double)(t_files - t0) / 1e6, ndirs, (double)(t_dirs - t_files) / 1e6,
                  (double)(t_index - t_dirs) / 1e6, drops.n, (double)(t_end - t_index) / 1e6);
    free(files.ids);
    free(drops.ids);
    pthread_mutex_unlock(&s->sync_lock);
    return fail ? -1 : 0;
}

static void *syncer_main(void *arg)
{
    local_syncer_t *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->stop) {
        /* Behind (a backlog that would have woken it came during the last
         * sync point): the next one at once, no sleep. */
        if (!over_wake(s) && s->interval_ms) {
            struct timespec ts = clock_after_ms(CLOCK_MONOTONIC, s->interval_ms);
            pthread_cond_timedwait(&s->wake, &s->lock, &ts);
        } else if (!over_wake(s)) {
            pthread_cond_wait(&s->wake, &s->lock);
        }
        if (s->stop || !owed(s))
            continue;
        pthread_mutex_unlock(&s->lock);
        sync_point(s);
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* Frees what local_syncer_start made (not the thread). */
static void syncer_free(local_syncer_t *s)
{
    if (s->pin)
        mdb_txn_abort(s->pin);
    local_restore_close(s->restore);
    free(s->metas);
    free(s->files.ids);
    free(s->drops.ids);
    pthread_cond_destroy(&s->wake);
    pthread_cond_destroy(&s->durable_cv);
    pthread_cond_destroy(&s->room);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->sync_lock);
    free(s);
}

local_syncer_t *local_syncer_start(MDB_env *env, int objfd, local_pool_t *pool, int indexfd,
                                   unsigned interval_ms)
{
    local_syncer_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->env = env;
    s->objfd = objfd;
    s->pool = pool;
    s->interval_ms = interval_ms;
    s->max_files = local_sync_max_files;
    s->max_drops = local_sync_max_drops;
    s->throttle_ms = local_sync_throttle_ms;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->wake, &ca);
    pthread_cond_init(&s->room, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&s->durable_cv, NULL);
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->sync_lock, NULL);
    MDB_stat ms;
    mdb_filehandle_t fd;
    if (mdb_env_stat(env, &ms) != 0 || mdb_env_get_fd(env, &fd) != 0) {
        log_error("storage: cannot read the index's page size and descriptor");
        goto fail;
    }
    s->psize = ms.ms_psize;
    s->datafd = fd;
    if (!(s->metas = malloc(2 * s->psize)) || !(s->restore = local_restore_open(indexfd)))
        goto fail;
    /* The first restore point, before any commit: the index as opened. */
    if (sync_point(s) != 0)
        goto fail;
    if (pthread_create(&s->thread, NULL, syncer_main, s) != 0) {
        log_error("storage: cannot start the sync thread");
        goto fail;
    }
    return s;
fail:
    syncer_free(s);
    return NULL;
}

uint64_t local_syncer_durable(local_syncer_t *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t d = s->durable;
    pthread_mutex_unlock(&s->lock);
    return d;
}

void local_syncer_kick(local_syncer_t *s)
{
    pthread_mutex_lock(&s->lock);
    s->committed = s->committed ? s->committed : 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
}

int local_syncer_sync(local_syncer_t *s)
{
    return sync_point(s);
}

int local_syncer_wait_durable(local_syncer_t *s, uint64_t txnid)
{
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    while (s->durable < txnid) {
        if (s->leading) {
            pthread_cond_wait(&s->durable_cv, &s->lock);
            continue;
        }
        /* No sync point under way: this thread runs one for everyone. Its
         * cut comes after this commit, and after every commit that returned
         * before it began. One under way may have cut before this commit:
         * then the loop waits for it and runs the next. */
        s->leading = 1;
        pthread_mutex_unlock(&s->lock);
        rc = sync_point(s);
        pthread_mutex_lock(&s->lock);
        s->leading = 0;
        pthread_cond_broadcast(&s->durable_cv);
        if (rc != 0)
            break; /* a failed sync point fails its leader's commit */
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

void local_syncer_stop(local_syncer_t *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_cond_signal(&s->wake);
    pthread_cond_broadcast(&s->room);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    sync_point(s);
    syncer_free(s);
}
