/* The pool of free object files (DIR/.s3rdma/pool): files a durable commit
 * dropped, kept (with their blocks) for new writers to write over instead of
 * being unlinked, so an overwrite makes no new inode and frees no blocks.
 * See local_internal.h for the contract and docs/storage.md ("The pool of
 * free files") for the crash story. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/log.h"
#include "storage/local/local_internal.h"

struct local_pool {
    int objfd;  /* objects/ (the caller's) */
    int poolfd; /* pool/ (ours) */
    size_t max;
    pthread_mutex_t lock; /* guards what follows */
    uint8_t *ids;         /* n names (the files' former ids) in pool/, max room */
    uint64_t *sizes;      /* their sizes: the old bytes they still hold */
    size_t n;
    size_t incoming; /* slots reserved by local_pool_return calls under way */
    uint64_t bytes;  /* sum of sizes: at most LOCAL_POOL_BYTES */
};

/* Unlinks every entry of pool/ (an earlier process's free files). */
static void pool_empty(int poolfd)
{
    int fd = dup(poolfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    size_t removed = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.' && unlinkat(poolfd, de->d_name, 0) == 0)
            removed++;
    closedir(d);
    if (removed)
        log_info("storage: removed %zu free file(s) left in pool/", removed);
}

local_pool_t *local_pool_open(const char *dir, int objfd, size_t max)
{
    local_pool_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->objfd = objfd;
    p->max = max;
    p->poolfd = -1;
    pthread_mutex_init(&p->lock, NULL);
    if ((mkdir(dir, 0755) != 0 && errno != EEXIST) ||
        (p->poolfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
        (max &&
         (!(p->ids = malloc(max * STOR_ID_LEN)) || !(p->sizes = malloc(max * sizeof *p->sizes))))) {
        log_error("storage: %s: %s", dir, strerror(errno));
        local_pool_close(p);
        return NULL;
    }
    pool_empty(p->poolfd);
    return p;
}

void local_pool_close(local_pool_t *p)
{
    if (!p)
        return;
    if (p->poolfd >= 0)
        close(p->poolfd);
    pthread_mutex_destroy(&p->lock);
    free(p->ids);
    free(p->sizes);
    free(p);
}

size_t local_pool_count(local_pool_t *p)
{
    pthread_mutex_lock(&p->lock);
    size_t n = p->n;
    pthread_mutex_unlock(&p->lock);
    return n;
}

/* 1 if no descriptor anywhere (this process or another, dup()s and
 * sendfile()s included) has the file fd names open, other than fd itself
 * (open for writing only): the kernel grants a write lease only then. The
 * lease is let go at once. Nobody can open the file meanwhile (it is in
 * pool/, which no one opens files in), so the lease is never broken (a
 * break would signal this process). */
static int open_nowhere_else(int fd)
{
    if (fcntl(fd, F_SETLEASE, F_WRLCK) != 0)
        return 0; /* EAGAIN: open elsewhere; any other error: cannot tell */
    fcntl(fd, F_SETLEASE, F_UNLCK);
    return 1;
}

void local_pool_return(local_pool_t *p, const uint8_t id[STOR_ID_LEN])
{
    char path[LOCAL_PATH_LEN], name[2 * STOR_ID_LEN + 1];
    local_id_path(id, path);
    pthread_mutex_lock(&p->lock);
    int room = p->n + p->incoming < p->max;
    if (room)
        p->incoming++;
    pthread_mutex_unlock(&p->lock);
    if (!room) {
        if (unlinkat(p->objfd, path, 0) != 0 && errno != ENOENT)
            log_warn("storage: unlink %s: %s", path, strerror(errno));
        return;
    }
    hash_hex_encode(id, STOR_ID_LEN, name);
    /* Out of objects/ first: from here on nothing can open it anew. */
    int pooled = 0, fd = -1;
    uint64_t size = 0;
    struct stat sb;
    if (renameat(p->objfd, path, p->poolfd, name) != 0) {
        int err = errno;
        if (err != ENOENT) { /* ENOENT: gone already, as unlink allows */
            log_warn("storage: pool %s: %s", path, strerror(err));
            if (unlinkat(p->objfd, path, 0) != 0 && errno != ENOENT)
                log_warn("storage: unlink %s: %s", path, strerror(errno));
        }
    } else if ((fd = openat(p->poolfd, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)) >= 0 &&
               open_nowhere_else(fd) && fstat(fd, &sb) == 0) {
        /* Its blocks are kept for the next writer to write over (no block
         * freed now, none allocated then) while the pool's bytes allow. */
        size = (uint64_t)sb.st_size;
        pthread_mutex_lock(&p->lock);
        int keep = p->bytes + size <= LOCAL_POOL_BYTES;
        if (keep)
            p->bytes += size;
        pthread_mutex_unlock(&p->lock);
        if (!keep)
            size = 0;
        if (!(pooled = keep || ftruncate(fd, 0) == 0))
            unlinkat(p->poolfd, name, 0);
    } else {
        /* A reader still has it (or it cannot be told): it keeps the bytes
         * of an unlinked file, as without the pool. */
        unlinkat(p->poolfd, name, 0);
    }
    if (fd >= 0)
        close(fd);
    pthread_mutex_lock(&p->lock);
    p->incoming--;
    if (pooled) {
        p->sizes[p->n] = size;
        memcpy(p->ids + p->n++ * STOR_ID_LEN, id, STOR_ID_LEN);
    }
    pthread_mutex_unlock(&p->lock);
}

int local_pool_take(local_pool_t *p, const char *path)
{
    uint8_t id[STOR_ID_LEN];
    char name[2 * STOR_ID_LEN + 1];
    pthread_mutex_lock(&p->lock);
    int have = p->n > 0;
    if (have) {
        memcpy(id, p->ids + --p->n * STOR_ID_LEN, STOR_ID_LEN);
        p->bytes -= p->sizes[p->n];
    }
    pthread_mutex_unlock(&p->lock);
    if (!have)
        return -1;
    hash_hex_encode(id, STOR_ID_LEN, name);
    if (renameat2(p->poolfd, name, p->objfd, path, RENAME_NOREPLACE) != 0) {
        log_warn("storage: reuse %s as %s: %s", name, path, strerror(errno));
        unlinkat(p->poolfd, name, 0);
        return -1;
    }
    /* Not truncated: the writer writes over the old bytes and cuts what
     * is left past its own (local_writer_seal). */
    int fd = openat(p->objfd, path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        log_warn("storage: reuse %s: %s", path, strerror(errno));
        unlinkat(p->objfd, path, 0);
    }
    return fd;
}
