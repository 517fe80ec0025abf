/* Listing: the iterator over a bucket's keys in byte order (prefix, after,
 * seek), sorting blocks of hashed long keys in memory. */
#include <lmdb.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/log.h"
#include "storage/local/local_internal.h"

/* ==== Listing ============================================================ */

typedef struct blk_ent {
    const char *key; /* points into the txn's pages */
    size_t klen;
    MDB_val val;
} blk_ent_t;

typedef struct liter liter_t;

struct liter {
    stor_iter_t base; /* first: stor_backend.h */
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
    uint8_t pos[LOCAL_IKEY_MAX]; /* where the cursor goes next when !positioned */
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
static int iter_filter(const liter_t *it, const char *k, size_t klen)
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

static void iter_reposition(liter_t *it, const char *s, size_t slen)
{
    it->pos_len = local_ikey_seek(it->bp, it->blen, s, slen, it->pos);
    it->positioned = it->eof = it->has_pend = 0;
    it->blk_n = it->blk_i = 0;
}

stor_status_t local_iter_open(stor_t *st_, const char *bucket, const char *prefix,
                              const char *after, stor_iter_t **out_p)
{
    lstor_t *st = (lstor_t *)st_;
    liter_t *it = calloc(1, sizeof *it);
    if (!it)
        return STOR_ERR_NOMEM;
    it->base.st = &st->base;
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
    if ((s = local_rd_begin(st, &it->txn)) != STOR_OK)
        goto fail;
    if ((s = local_bucket_exists(st, it->txn, bucket)) != STOR_OK)
        goto fail;
    int rc = mdb_cursor_open(it->txn, st->db_objects, &it->cur);
    if (rc) {
        s = local_mdb_fail("cursor", rc);
        goto fail;
    }
    it->blen = strlen(bucket);
    memcpy(it->bp, bucket, it->blen + 1);
    it->plen = local_ikey_plen(it->blen);
    if (it->has_after && stor_keycmp(it->after, it->after_len, it->prefix, it->prefix_len) > 0)
        iter_reposition(it, it->after, it->after_len);
    else
        iter_reposition(it, it->prefix, it->prefix_len);
    *out_p = &it->base;
    return STOR_OK;
fail:
    local_iter_close(&it->base);
    return s;
}

void local_iter_seek(stor_iter_t *it_, const char *key, size_t key_len)
{
    if (it_->versions) {
        local_viter_seek(it_, key, key_len);
        return;
    }
    liter_t *it = (liter_t *)it_;
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
static int iter_raw(liter_t *it, MDB_val *k, MDB_val *v)
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
            local_mdb_fail("list", rc);
            return -1;
        }
    }
    if (k->mv_size < it->blen + 1 || memcmp(k->mv_data, it->bp, it->blen + 1) != 0) {
        it->eof = 1;
        return 0;
    }
    return 1;
}

static int blk_push(liter_t *it, const MDB_val *v)
{
    if (array_grow(&it->blk, &it->blk_cap, it->blk_n, sizeof *it->blk, 16) != 0)
        return -1;
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
static int iter_load_block(liter_t *it, const MDB_val *k, const MDB_val *v)
{
    const uint8_t *head = (const uint8_t *)k->mv_data + it->blen + 1;
    uint8_t first[LOCAL_IKEY_MAX];
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
        if (!local_ikey_is_long(rest, rlen, it->plen) || memcmp(rest, first, it->plen) != 0) {
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

static int iter_emit(liter_t *it, const char *key, size_t klen, const MDB_val *v,
                     const char **key_p, size_t *key_len_p, stor_meta_t *meta_p)
{
    if (meta_p &&
        stor_rec_decode_object_want(v->mv_data, v->mv_size, it->base.want, meta_p) != STOR_OK) {
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

int local_iter_next(stor_iter_t *it_, const char **key_p, size_t *key_len_p, stor_meta_t *meta_p)
{
    liter_t *it = (liter_t *)it_;
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
        if (local_ikey_is_long((const uint8_t *)rest, rlen, it->plen)) {
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

void local_iter_close(stor_iter_t *it_)
{
    if (it_ && it_->versions) {
        local_viter_close(it_);
        return;
    }
    liter_t *it = (liter_t *)it_;
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
