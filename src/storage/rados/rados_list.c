/* Listing on RADOS: a bucket's index is one object, or N shard objects,
 * whose omap keys are the object keys, which RADOS keeps in byte order. The
 * iterator keeps one cursor per shard, each reading its shard in small
 * batches (omap range reads filtered by the prefix on the OSD) refilled when
 * used up, and merges the cursors' heads in key order: memory is bounded by
 * the batches (below), whatever the bucket's size. Batches that must be read at the same time (at
 * open, after a seek) are read in parallel. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "storage/rados/rados_internal.h"

/* Entries a listing reads at a time (one shard: a batch of this many). With
 * N shards a page of RS_LIST_KEEP keys takes about RS_LIST_KEEP / N from
 * each, give or take a few times its square root (the hash spreads keys
 * binomially), so each shard's batch is that share plus a quarter plus 16
 * (at least RS_LIST_MIN_BATCH): a page then rarely has to wait for a shard's
 * second batch, and a listing holds about 1.25 x RS_LIST_KEEP + 16 N
 * entries. */
#define RS_LIST_KEEP      1000
#define RS_LIST_MIN_BATCH 32

/* One shard's position. The head entry (k, v) points into the batch and is
 * valid until the cursor reads its next batch. */
typedef struct cursor {
    char oid[RSTOR_OID_MAX];
    char *from;                    /* where the next batch starts (a key, NUL-terminated) */
    int inclusive;                 /* whether `from` itself is a candidate (after a seek) */
    rados_omap_iter_t first, rest; /* the batch: `from` itself, then after it */
    unsigned char more;            /* the OSD has keys past this batch */
    int stale;                     /* the batch must be (re)read before use */
    int done;                      /* nothing more in range on this shard */
    int has;                       /* (k, v) is this shard's next entry */
    char *k, *v;
    size_t kl, vl;
    /* A batch read in flight. */
    rados_read_op_t op;
    rados_completion_t c;
    int pr1, pr2;
} cursor_t;

typedef struct riter {
    stor_iter_t base; /* first: stor_backend.h */
    rstor_t *st;
    char *prefix;
    size_t prefix_len;
    uint32_t batch; /* entries per shard batch */
    uint32_t n;     /* shards */
    cursor_t *cur;
    int taken; /* the cursor whose head was emitted last must advance, or -1 */
    int eof, failed;
    char *last; /* the last key emitted (its batch may be gone) */
    size_t last_len;
} riter_t;

static int set_str(char **dst, const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (!p)
        return -1;
    memcpy(p, s, n);
    p[n] = '\0';
    free(*dst);
    *dst = p;
    return 0;
}

static void batch_end(cursor_t *c)
{
    if (c->first)
        rados_omap_get_end(c->first);
    if (c->rest)
        rados_omap_get_end(c->rest);
    c->first = c->rest = NULL;
    c->has = 0;
}

/* Sends the read of c's next batch from `from`. 0 or a librados code (then
 * nothing is in flight). */
static int batch_start(riter_t *it, cursor_t *c)
{
    batch_end(c);
    if (!(c->op = rados_create_read_op()))
        return -ENOMEM;
    c->pr1 = c->pr2 = 0;
    if (c->inclusive) {
        const char *keys[1] = {c->from};
        size_t klen = strlen(c->from);
        rados_read_op_omap_get_vals_by_keys2(c->op, keys, 1, &klen, &c->first, &c->pr1);
    }
    c->more = 0;
    rados_read_op_omap_get_vals2(c->op, c->from, it->prefix, it->batch, &c->rest, &c->more,
                                 &c->pr2);
    int rc = rados_aio_create_completion2(NULL, NULL, &c->c);
    if (rc == 0 && (rc = rados_aio_read_op_operate(c->op, it->st->index, c->c, c->oid, 0)) < 0)
        rados_aio_release(c->c);
    if (rc < 0) {
        rados_release_read_op(c->op);
        c->op = NULL;
    }
    return rc;
}

/* Waits for the read batch_start sent. 0 or a librados code. */
static int batch_finish(cursor_t *c)
{
    rados_aio_wait_for_complete(c->c);
    int rc = rados_aio_get_return_value(c->c);
    rados_aio_release(c->c);
    rados_release_read_op(c->op);
    c->op = NULL;
    c->inclusive = 0;
    if (rc == 0)
        rc = c->pr1 < 0 ? c->pr1 : c->pr2;
    return rc;
}

/* Moves c to its next entry, reading its next batch when the one it has is
 * used up (unless it is stale: then the caller reads it). Marks it done at
 * the end of its range. 0 or a librados code. */
static int cursor_advance(riter_t *it, cursor_t *c)
{
    c->has = 0;
    for (;;) {
        if (c->stale || c->done)
            return 0;
        if (c->first && rados_omap_get_next2(c->first, &c->k, &c->v, &c->kl, &c->vl) == 0 && c->k)
            break;
        /* The next batch starts after the last key RADOS gave us. */
        if (c->rest && rados_omap_get_next2(c->rest, &c->k, &c->v, &c->kl, &c->vl) == 0 && c->k) {
            if (set_str(&c->from, c->k, c->kl) != 0)
                return -ENOMEM;
            break;
        }
        if (!c->more) {
            c->done = 1;
            return 0;
        }
        int rc = batch_start(it, c);
        if (rc == 0)
            rc = batch_finish(c);
        if (rc < 0)
            return rc;
    }
    /* Only the tombstone sorts at 0xFF: no object key gets there. The OSD
     * filters by the prefix; the check stands for a shard read without. */
    if ((c->kl && (unsigned char)c->k[0] == 0xFF) || c->kl < it->prefix_len ||
        memcmp(c->k, it->prefix, it->prefix_len) != 0) {
        c->done = 1;
        return 0;
    }
    c->has = 1;
    return 0;
}

/* Reads the batches of every stale cursor, all in flight at once, and
 * moves each to its first entry. 0 or the first librados code (*oid_p:
 * the shard that failed). */
static int refill_stale(riter_t *it, const char **oid_p)
{
    int rc = 0;
    uint32_t i;
    for (i = 0; i < it->n && rc == 0; i++)
        if (it->cur[i].stale && !it->cur[i].done && (rc = batch_start(it, &it->cur[i])) < 0)
            *oid_p = it->cur[i].oid;
    uint32_t sent = rc < 0 ? i - 1 : it->n;
    for (i = 0; i < sent; i++) {
        cursor_t *c = &it->cur[i];
        if (!c->stale || c->done)
            continue;
        int r = batch_finish(c);
        c->stale = 0;
        if (r == 0 && rc == 0)
            r = cursor_advance(it, c);
        if (r < 0 && rc == 0) {
            rc = r;
            *oid_p = c->oid;
        }
    }
    return rc;
}

/* Points every cursor at the entries from (inclusive: from itself too) on,
 * to be read by refill_stale. */
static int cursors_reset(riter_t *it, const char *from, size_t len, int inclusive)
{
    for (uint32_t i = 0; i < it->n; i++) {
        cursor_t *c = &it->cur[i];
        if (set_str(&c->from, from, len) != 0)
            return -1;
        batch_end(c);
        c->inclusive = inclusive;
        c->stale = 1;
        c->done = 0;
    }
    return 0;
}

/* Sets up one cursor per shard of ix, all stale. */
static int cursors_make(riter_t *it, const rs_index_t *ix, const char *after)
{
    for (uint32_t i = 0; i < it->n; i++)
        batch_end(&it->cur[i]);
    if (ix->shards != it->n) {
        for (uint32_t i = ix->shards; i < it->n; i++) {
            free(it->cur[i].from);
            it->cur[i].from = NULL;
        }
        if (ix->shards < it->n)
            it->n = ix->shards;
        cursor_t *nc = realloc(it->cur, ix->shards * sizeof *nc);
        if (!nc)
            return -1;
        for (uint32_t i = it->n; i < ix->shards; i++)
            memset(&nc[i], 0, sizeof nc[i]);
        it->cur = nc;
        it->n = ix->shards;
    }
    it->batch = it->n == 1 ? RS_LIST_KEEP : RS_LIST_KEEP / it->n * 5 / 4 + 16;
    if (it->batch < RS_LIST_MIN_BATCH)
        it->batch = RS_LIST_MIN_BATCH;
    for (uint32_t i = 0; i < it->n; i++)
        rs_index_oid(ix, i, it->cur[i].oid);
    return cursors_reset(it, after, strlen(after), 0);
}

stor_status_t rs_iter_open(stor_t *st_, const char *bucket, const char *prefix, const char *after,
                           stor_iter_t **out_p)
{
    rstor_t *st = (rstor_t *)st_;
    rs_index_t ix;
    stor_status_t s = rs_bucket_id(st, bucket, 0, &ix);
    if (s != STOR_OK)
        return s;
    riter_t *it = calloc(1, sizeof *it);
    if (!it)
        return STOR_ERR_NOMEM;
    it->base.st = st_;
    it->st = st;
    it->taken = -1;
    prefix = prefix ? prefix : "";
    after = after ? after : "";
    it->prefix_len = strlen(prefix);
    if (set_str(&it->prefix, prefix, it->prefix_len) != 0 || cursors_make(it, &ix, after) != 0) {
        rs_iter_close(&it->base);
        return STOR_ERR_NOMEM;
    }
    const char *oid = "";
    int rc = refill_stale(it, &oid);
    if (rc == -ENOENT) {
        /* A stale cached id: look the name up afresh. */
        if ((s = rs_bucket_id(st, bucket, 1, &ix)) != STOR_OK) {
            rs_iter_close(&it->base);
            return s;
        }
        rc = cursors_make(it, &ix, after) != 0 ? -ENOMEM : refill_stale(it, &oid);
    }
    if (rc < 0) {
        s = rc == -ENOENT ? STOR_ERR_NO_BUCKET : rs_fail("list", oid, rc);
        rs_iter_close(&it->base);
        return s;
    }
    *out_p = &it->base;
    return STOR_OK;
}

void rs_iter_seek(stor_iter_t *it_, const char *key, size_t key_len)
{
    riter_t *it = (riter_t *)it_;
    if (it->eof || it->failed)
        return;
    if (it->last && stor_keycmp(key, key_len, it->last, it->last_len) <= 0)
        return;
    /* A cursor whose head is at or past key keeps it; the others read from
     * key on. */
    for (uint32_t i = 0; i < it->n; i++) {
        cursor_t *c = &it->cur[i];
        if (c->done ||
            (c->has && (int)i != it->taken && stor_keycmp(c->k, c->kl, key, key_len) >= 0))
            continue;
        if (set_str(&c->from, key, key_len) != 0) {
            it->failed = 1;
            return;
        }
        batch_end(c);
        c->inclusive = 1;
        c->stale = 1;
    }
    it->taken = -1;
}

int rs_iter_next(stor_iter_t *it_, const char **key_p, size_t *key_len_p, stor_meta_t *meta_p)
{
    riter_t *it = (riter_t *)it_;
    if (it->failed)
        return -1;
    if (it->eof)
        return 0;
    const char *oid = it->n ? it->cur[0].oid : "";
    int rc = 0;
    if (it->taken >= 0) {
        oid = it->cur[it->taken].oid;
        rc = cursor_advance(it, &it->cur[it->taken]);
        it->taken = -1;
    }
    if (rc == 0)
        rc = refill_stale(it, &oid);
    if (rc < 0) {
        rs_fail("list", oid, rc);
        it->failed = 1;
        return -1;
    }
    /* The least head. */
    cursor_t *min = NULL;
    for (uint32_t i = 0; i < it->n; i++) {
        cursor_t *c = &it->cur[i];
        if (c->has && (!min || stor_keycmp(c->k, c->kl, min->k, min->kl) < 0)) {
            min = c;
            it->taken = (int)i;
        }
    }
    if (!min) {
        it->eof = 1;
        return 0;
    }
    if (set_str(&it->last, min->k, min->kl) != 0) {
        it->failed = 1;
        return -1;
    }
    it->last_len = min->kl;
    if (meta_p && stor_rec_decode_object_meta(min->v, min->vl, meta_p) != STOR_OK) {
        log_error("storage: corrupt object record for %.*s in %s", (int)min->kl, min->k, min->oid);
        it->failed = 1;
        return -1;
    }
    *key_p = it->last;
    *key_len_p = min->kl;
    return 1;
}

void rs_iter_close(stor_iter_t *it_)
{
    riter_t *it = (riter_t *)it_;
    if (!it)
        return;
    for (uint32_t i = 0; i < it->n; i++) {
        batch_end(&it->cur[i]);
        free(it->cur[i].from);
    }
    free(it->cur);
    free(it->prefix);
    free(it->last);
    free(it);
}
