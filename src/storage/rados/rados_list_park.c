/* The parked listings of a RADOS store (rstor_t.parked, under park_lock):
 * listings kept between the pages of a walk, bounded in number, bytes and
 * age, the oldest going first ("Parked listings" in rados_list.c says what
 * a listing keeps and when it may be taken back). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "storage/rados/rados_internal.h"
#include "storage/rados/rados_list.h"

/* The memory a parked listing holds. */
static size_t iter_bytes(const riter_t *it)
{
    size_t n = sizeof *it + it->n * sizeof(cursor_t) + it->last_len + it->prev_len +
               it->prefix_len + it->floor_len;
    for (uint32_t i = 0; i < it->n; i++)
        n += it->cur[i].ents.cap + it->cur[i].ukey.cap +
             (it->cur[i].from ? strlen(it->cur[i].from) : 0);
    return n;
}

/* Takes out the parked listings older than RSTOR_LIST_PARKED_MS, then the
 * oldest ones while more than keep are parked or more than keep_bytes are
 * held (under park_lock): into out, their count returned (the caller frees
 * them outside the lock). */
static size_t park_trim(rstor_t *st, uint64_t now, size_t keep, size_t keep_bytes, riter_t **out)
{
    size_t n_out = 0;
    for (;;) {
        size_t oldest = RSTOR_LIST_PARKED, count = 0;
        for (size_t i = 0; i < RSTOR_LIST_PARKED; i++) {
            riter_t *p = st->parked[i];
            if (!p)
                continue;
            count++;
            if (now - p->parked_ms > RSTOR_LIST_PARKED_MS) {
                oldest = i;
                break;
            }
            if (oldest == RSTOR_LIST_PARKED || p->parked_ms < st->parked[oldest]->parked_ms)
                oldest = i;
        }
        riter_t *o = oldest < RSTOR_LIST_PARKED ? st->parked[oldest] : NULL;
        if (!o || (count <= keep && st->parked_bytes <= keep_bytes &&
                   now - o->parked_ms <= RSTOR_LIST_PARKED_MS))
            return n_out;
        st->parked[oldest] = NULL;
        st->parked_bytes -= o->bytes;
        out[n_out++] = o;
    }
}

void rs_list_park(riter_t *it)
{
    rstor_t *st = it->st;
    it->bytes = iter_bytes(it);
    if (it->bytes > RSTOR_LIST_PARKED_BYTES) {
        rs_list_iter_free(it);
        return;
    }
    it->parked_ms = clock_mono_ms();
    riter_t *drop[RSTOR_LIST_PARKED + 1];
    pthread_mutex_lock(&st->park_lock);
    size_t n = park_trim(st, it->parked_ms, RSTOR_LIST_PARKED - 1,
                         RSTOR_LIST_PARKED_BYTES - it->bytes, drop);
    for (size_t i = 0; i < RSTOR_LIST_PARKED; i++)
        if (!st->parked[i]) {
            st->parked[i] = it;
            st->parked_bytes += it->bytes;
            it = NULL;
            break;
        }
    pthread_mutex_unlock(&st->park_lock);
    if (it)
        drop[n++] = it;
    for (size_t i = 0; i < n; i++)
        rs_list_iter_free(drop[i]);
}

riter_t *rs_list_unpark(rstor_t *st, const char *bucket, const char *prefix, const char *after)
{
    rs_index_t ix;
    if (rs_bucket_id(st, bucket, 0, &ix) != STOR_OK)
        return NULL;
    size_t pl = strlen(prefix), al = strlen(after);
    riter_t *found = NULL, *drop[RSTOR_LIST_PARKED + 1];
    pthread_mutex_lock(&st->park_lock);
    size_t n = park_trim(st, clock_mono_ms(), RSTOR_LIST_PARKED, RSTOR_LIST_PARKED_BYTES, drop);
    for (size_t i = 0; i < RSTOR_LIST_PARKED && !found; i++) {
        riter_t *p = st->parked[i];
        if (p && p->id == ix.id && p->gen == ix.gen && p->shards == ix.shards &&
            strcmp(p->bucket, bucket) == 0 && p->prefix_len == pl &&
            memcmp(p->prefix, prefix, pl) == 0 &&
            stor_keycmp(after, al, p->last, p->last_len) <= 0 &&
            (stor_keycmp(after, al, p->last, p->last_len) == 0 ||
             (p->prev && stor_keycmp(after, al, p->prev, p->prev_len) >= 0))) {
            found = p;
            st->parked[i] = NULL;
            st->parked_bytes -= p->bytes;
        }
    }
    pthread_mutex_unlock(&st->park_lock);
    for (size_t i = 0; i < n; i++)
        rs_list_iter_free(drop[i]);
    return found;
}

void rs_list_parked_trim(rstor_t *st, int all)
{
    riter_t *drop[RSTOR_LIST_PARKED + 1];
    pthread_mutex_lock(&st->park_lock);
    size_t n = park_trim(st, clock_mono_ms(), all ? 0 : RSTOR_LIST_PARKED,
                         all ? 0 : RSTOR_LIST_PARKED_BYTES, drop);
    pthread_mutex_unlock(&st->park_lock);
    for (size_t i = 0; i < n; i++)
        rs_list_iter_free(drop[i]);
}
