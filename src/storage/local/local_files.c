/* The local engine's object files: their ids and shard directories, and
 * what a commit that adds or drops one owes (docs/storage.md, "On-disk
 * layout", "Write path"). Below the engine's other files: of them it calls
 * only the descriptor cache, the pool and the syncer. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/log.h"
#include "storage/local/local_internal.h"
#include "storage/local/local_syncer.h"

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
