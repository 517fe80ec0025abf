/* Descriptors of object files kept open for reads: a 4 KiB GET otherwise
 * pays a path walk, an open and a close for a few microseconds of reading.
 *
 * An object file's bytes never change once its id is in the index, and ids
 * are never reused, so a descriptor found here always reads what that id
 * names. What must not happen is holding a file the index dropped (its disk
 * space would stay in use): local_drop_file forgets the id (closing the cached
 * descriptor) and bumps an epoch, and a reader that opened a file itself
 * caches it only if no file was dropped since it looked the id up, so a file
 * dropped between a lookup and its open never enters the cache.
 *
 * Direct-mapped (a slot per id hash, the newer entry wins), one mutex; each
 * hit hands out a dup() the reader closes as before. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "storage/local/local_internal.h"

static local_fdslot_t *slot_of(lstor_t *st, const uint8_t id[STOR_ID_LEN])
{
    uint32_t h;
    memcpy(&h, id, sizeof(h)); /* ids are random: any bits are a hash */
    return &st->fd_cache[h % LOCAL_FDCACHE_SLOTS];
}

void local_fdcache_init(lstor_t *st)
{
    pthread_mutex_init(&st->fd_lock, NULL);
    for (size_t i = 0; i < LOCAL_FDCACHE_SLOTS; i++)
        st->fd_cache[i].fd = -1;
}

void local_fdcache_free(lstor_t *st)
{
    for (size_t i = 0; i < LOCAL_FDCACHE_SLOTS; i++) {
        if (st->fd_cache[i].fd >= 0)
            close(st->fd_cache[i].fd);
        st->fd_cache[i].fd = -1;
    }
    pthread_mutex_destroy(&st->fd_lock);
}

uint64_t local_fdcache_epoch(lstor_t *st)
{
    pthread_mutex_lock(&st->fd_lock);
    uint64_t e = st->fd_epoch;
    pthread_mutex_unlock(&st->fd_lock);
    return e;
}

int local_fdcache_get(lstor_t *st, const uint8_t id[STOR_ID_LEN])
{
    int fd = -1;
    pthread_mutex_lock(&st->fd_lock);
    local_fdslot_t *s = slot_of(st, id);
    if (s->fd >= 0 && memcmp(s->id, id, STOR_ID_LEN) == 0)
        fd = dup(s->fd);
    pthread_mutex_unlock(&st->fd_lock);
    return fd;
}

void local_fdcache_put(lstor_t *st, const uint8_t id[STOR_ID_LEN], int fd, uint64_t epoch)
{
    int old = -1, mine = -1;
    pthread_mutex_lock(&st->fd_lock);
    if (st->fd_epoch == epoch && (mine = dup(fd)) >= 0) {
        local_fdslot_t *s = slot_of(st, id);
        old = s->fd;
        memcpy(s->id, id, STOR_ID_LEN);
        s->fd = mine;
    }
    pthread_mutex_unlock(&st->fd_lock);
    if (old >= 0)
        close(old);
}

void local_fdcache_forget(lstor_t *st, const uint8_t id[STOR_ID_LEN])
{
    int old = -1;
    pthread_mutex_lock(&st->fd_lock);
    st->fd_epoch++;
    local_fdslot_t *s = slot_of(st, id);
    if (s->fd >= 0 && memcmp(s->id, id, STOR_ID_LEN) == 0) {
        old = s->fd;
        s->fd = -1;
    }
    pthread_mutex_unlock(&st->fd_lock);
    if (old >= 0)
        close(old);
}
