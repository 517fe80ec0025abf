/* The index's writable map: huge pages, pages made ready ahead of the
 * commits, and the reserve a write transaction needs (local_map.h). */
#include "storage/local/local_map.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/log.h"

struct local_map {
    MDB_env *env;
    char *base; /* the map of data.mdb: byte 0 of the file */
    size_t len;
    size_t psize; /* LMDB's page size */
    int fd;       /* data.mdb (LMDB's descriptor): fallocate's, before Linux 5.14 */
    /* The end of the pages made ready so far (bytes from base): raised by
     * the thread and by local_map_reserve, never lowered. */
    _Atomic size_t ready;
    _Atomic size_t reserve; /* local_map_set_reserve: whole huge pages */
    /* local_map_reserve's last try failed: writes are refused (logged once
     * per spell) */
    atomic_bool refused;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int wanted; /* under lock: a committer asked for a refill */
    int stop;   /* under lock */
    pthread_t thread;
};

/* The end of LMDB's last page, in bytes from the start of the file. */
static size_t last_end(const local_map_t *m)
{
    MDB_envinfo info;
    if (mdb_env_info(m->env, &info) != 0)
        return 0;
    return ((size_t)info.me_last_pgno + 1) * m->psize;
}

/* Asks the kernel to back the map with huge pages (MADV_HUGEPAGE: 2 MiB
 * folios, read around a fault 2 MiB at a time). Under the map's default
 * (MADV_NORMAL) a page fault on a page the page cache does not hold -- a
 * hole past LMDB's last page as data.mdb grows, or a page next to one --
 * zero-fills or reads the device's whole readahead window (read_ahead_kb: 8
 * MiB on this project's VM) in the faulting commit, ms of CPU, and a 4 KiB
 * store into a page that the last sync point wrote back faults again; with
 * huge pages the engine's 4 KiB PUTs faulted ~5x less often and spent ~1/3
 * less CPU each (docs/benchmarks.md). A hint: nothing changes what is
 * written or when, and a kernel without transparent huge pages for files
 * ignores it. */
static void advise_hugepages(const local_map_t *m)
{
    if (madvise(m->base, m->len, MADV_HUGEPAGE) != 0)
        log_debug("storage: the index's map takes no huge pages: %s", strerror(errno));
}

/* LMDB's API does not name the map's address, so it is the mapping of
 * data.mdb's inode in /proc/self/maps. 0 when found. */
static int find_map(local_map_t *m)
{
    mdb_filehandle_t fd;
    struct stat sb;
    FILE *maps;
    if (mdb_env_get_fd(m->env, &fd) != 0 || fstat(fd, &sb) != 0 ||
        !(maps = fopen("/proc/self/maps", "re")))
        return -1;
    char line[4352];
    unsigned long lo, hi, ino, off;
    unsigned maj, min;
    int found = -1;
    while (found != 0 && fgets(line, sizeof line, maps)) {
        if (sscanf(line, "%lx-%lx %*s %lx %x:%x %lu", &lo, &hi, &off, &maj, &min, &ino) != 6 ||
            ino != (unsigned long)sb.st_ino || makedev(maj, min) != sb.st_dev || off != 0)
            continue;
        m->base = (char *)lo;
        m->len = hi - lo;
        found = 0;
    }
    fclose(maps);
    return found;
}

size_t local_map_ahead(size_t end)
{
    size_t a = end / 4 / LOCAL_MAP_AHEAD_MIN * LOCAL_MAP_AHEAD_MIN; /* whole huge pages */
    return a < LOCAL_MAP_AHEAD_MIN   ? LOCAL_MAP_AHEAD_MIN
           : a > LOCAL_MAP_AHEAD_MAX ? LOCAL_MAP_AHEAD_MAX
                                     : a;
}

/* The bytes the thread keeps ready past the last page at end: the reserve,
 * which local_map_reserve checks before every write transaction, and
 * local_map_ahead beyond it, which the commits eat into. */
static size_t window(const local_map_t *m, size_t end)
{
    return atomic_load(&m->reserve) + local_map_ahead(end);
}

/* Makes [from, to) of the file resident and writable, its blocks reserved:
 * MADV_POPULATE_WRITE, or on a kernel before 5.14 (EINVAL) fallocate. 0, or
 * -1 with errno (ENOSPC, EFAULT: the filesystem cannot back them). */
static int make_ready(local_map_t *m, size_t from, size_t to)
{
    if (madvise(m->base + from, to - from, MADV_POPULATE_WRITE) == 0)
        return 0;
    if (errno != EINVAL)
        return -1;
    int rc = posix_fallocate(m->fd, (off_t)from, (off_t)(to - from));
    return rc == 0 ? 0 : (errno = rc, -1);
}

/* Makes [ready, to) ready (from the last page's end at least) and raises
 * ready to it. 0, or -1 (errno set) with ready unchanged. */
static int ready_up_to(local_map_t *m, size_t end, size_t to)
{
    size_t from = atomic_load(&m->ready);
    if (to > m->len)
        to = m->len;
    if (from < end)
        from = end;
    if (from >= to)
        return 0;
    if (make_ready(m, from, to) != 0)
        return -1;
    size_t cur = atomic_load(&m->ready);
    while (cur < to && !atomic_compare_exchange_weak(&m->ready, &cur, to))
        ;
    return 0;
}

/* A failure here is not a refusal of writes: the window can be larger than
 * the reserve, which may still fit (local_map_reserve reports those). */
static void refill(local_map_t *m)
{
    size_t end = last_end(m);
    if (ready_up_to(m, end, end + window(m, end)) != 0)
        log_debug("storage: the index's pages cannot be made ready ahead: %s", strerror(errno));
}

static void *map_main(void *arg)
{
    local_map_t *m = arg;
    pthread_setname_np(pthread_self(), "s3r-index-map");
    pthread_mutex_lock(&m->lock);
    for (;;) {
        while (!m->wanted && !m->stop)
            pthread_cond_wait(&m->cond, &m->lock);
        if (m->stop)
            break;
        m->wanted = 0;
        pthread_mutex_unlock(&m->lock);
        refill(m);
        pthread_mutex_lock(&m->lock);
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

local_map_t *local_map_open(MDB_env *env)
{
    local_map_t *m = calloc(1, sizeof *m);
    MDB_stat ms;
    if (!m)
        return NULL;
    m->env = env;
    if (find_map(m) != 0 || mdb_env_stat(env, &ms) != 0 || mdb_env_get_fd(env, &m->fd) != 0) {
        log_debug("storage: the index's map was not found");
        free(m);
        return NULL;
    }
    m->psize = ms.ms_psize;
    m->reserve = LOCAL_MAP_AHEAD_MIN;
    advise_hugepages(m);
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->cond, NULL);
    if (pthread_create(&m->thread, NULL, map_main, m) != 0) {
        log_debug("storage: no thread for the index's map");
        pthread_cond_destroy(&m->cond);
        pthread_mutex_destroy(&m->lock);
        free(m);
        return NULL;
    }
    return m;
}

void local_map_committed(local_map_t *m)
{
    if (!m)
        return;
    size_t end = last_end(m);
    if (end + window(m, end) - local_map_ahead(end) / 2 <= atomic_load(&m->ready))
        return;
    pthread_mutex_lock(&m->lock);
    m->wanted = 1;
    pthread_cond_signal(&m->cond);
    pthread_mutex_unlock(&m->lock);
}

void local_map_set_reserve(local_map_t *m, size_t bytes)
{
    size_t whole = (bytes + LOCAL_MAP_AHEAD_MIN - 1) / LOCAL_MAP_AHEAD_MIN * LOCAL_MAP_AHEAD_MIN;
    atomic_store(&m->reserve, whole);
}

int local_map_reserve(local_map_t *m)
{
    return local_map_reserve_more(m, 0);
}

int local_map_reserve_more(local_map_t *m, size_t more)
{
    size_t end = last_end(m), want = end + atomic_load(&m->reserve) + more;
    if (want > atomic_load(&m->ready) && ready_up_to(m, end, want) != 0) {
        int e = errno;
        if (!atomic_exchange(&m->refused, true))
            log_warn("storage: no room for the index to grow (%s): writes are refused (500) "
                     "until there is",
                     e == EFAULT ? "the filesystem cannot back its pages: full, or an I/O error"
                                 : strerror(e));
        errno = e;
        return -1;
    }
    if (atomic_load_explicit(&m->refused, memory_order_relaxed) &&
        atomic_exchange(&m->refused, false))
        log_info("storage: the index has room to grow again");
    return 0;
}

void local_map_close(local_map_t *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    m->stop = 1;
    pthread_cond_signal(&m->cond);
    pthread_mutex_unlock(&m->lock);
    pthread_join(m->thread, NULL);
    pthread_cond_destroy(&m->cond);
    pthread_mutex_destroy(&m->lock);
    free(m);
}
