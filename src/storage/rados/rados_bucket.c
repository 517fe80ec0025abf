/* Buckets on RADOS: records in the omap of s3rdma.buckets; each bucket's
 * index and uploads objects are named by its id. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"
#include "storage/rados/rados_internal.h"

/* Writes the bucket record name -> rec (old: the record it must replace,
 * NULL: the name must be free; rec NULL: removes it) in one compare-and-set
 * on s3rdma.buckets. Returns the librados code (-ECANCELED: the compare
 * failed). */
static int bucket_cas(rstor_t *st, const char *name, const buf_t *old, const buf_t *rec)
{
    return rs_omap_cas(st->index, RSTOR_BUCKETS_OID, name, strlen(name), old, rec, RS_CAS_CREATE);
}

/* Removes the index objects of ix and its uploads object (a bucket that
 * never got its record, or one being deleted), logging what stays behind. */
static void bucket_objects_remove(rstor_t *st, const rs_index_t *ix)
{
    char oid[RSTOR_OID_MAX];
    for (uint32_t shard = 0; shard <= ix->shards; shard++) {
        if (shard < ix->shards)
            rs_index_oid(ix, shard, oid);
        else
            rs_uploads_oid(ix->id, oid);
        int rc = rados_remove(st->index, oid);
        if (rc < 0 && rc != -ENOENT)
            log_warn("storage: rados remove %s: %s (left behind, empty)", oid, strerror(-rc));
    }
}

/* The index objects of a new bucket (bucket_objects_make). */
typedef struct bucket_objects {
    rstor_t *st;
    const rs_index_t *ix;
} bucket_objects_t;

/* Object i of a new bucket: its shards, then its uploads object. */
static void bucket_object_oid(const rs_index_t *ix, uint32_t i, char oid[RSTOR_OID_MAX])
{
    if (i < ix->shards)
        rs_index_oid(ix, i, oid);
    else
        rs_uploads_oid(ix->id, oid);
}

/* An rs_batch_send_fn: makes object i empty. */
static int bucket_object_send(void *arg, uint32_t i, rados_completion_t c)
{
    bucket_objects_t *b = arg;
    char oid[RSTOR_OID_MAX];
    bucket_object_oid(b->ix, i, oid);
    return rados_aio_write_full(b->st->index, oid, c, "", 0);
}

/* Makes the (empty) index objects of ix and its uploads object, all writes
 * in flight at once. 0 or the first librados code. */
static int bucket_objects_make(rstor_t *st, const rs_index_t *ix, char failed[RSTOR_OID_MAX])
{
    uint32_t n = ix->shards + 1; /* the shards, then the uploads object */
    int *res = calloc(n, sizeof *res);
    if (!res) {
        failed[0] = '\0';
        return -ENOMEM;
    }
    bucket_objects_t b = {.st = st, .ix = ix};
    uint32_t at;
    int rc = rs_batch(n, bucket_object_send, &b, res, &at);
    for (uint32_t i = 0; i < n && rc == 0; i++)
        if (res[i] < 0) {
            rc = res[i];
            at = i;
        }
    if (rc < 0)
        bucket_object_oid(ix, at, failed);
    free(res);
    return rc;
}

stor_status_t rs_bucket_create(stor_t *st_, const char *name, const char *owner)
{
    rstor_t *st = (rstor_t *)st_;
    size_t n = strnlen(name, STOR_BUCKET_MAX + 1);
    if (n == 0 || n > STOR_BUCKET_MAX)
        return STOR_ERR_IO;
    stor_bucket_rec_t r;
    memset(&r, 0, sizeof r);
    if (snprintf(r.b.owner, sizeof r.b.owner, "%s", owner ? owner : "") >= (int)sizeof r.b.owner)
        return STOR_ERR_TOO_LARGE;
    while (r.b.id == 0)
        if (hash_random_bytes(&r.b.id, sizeof r.b.id) != 0)
            return STOR_ERR_IO;
    r.b.created = clock_wall_ms() / 1000;
    r.b.acl = STOR_ACL_PRIVATE;
    r.b.index_shards = st->index_shards;
    rs_index_t ix = rs_index_of(&r.b);
    /* The bucket's objects (every index shard, the uploads object) exist
     * before its record: a crash in between leaves empty objects nobody
     * names, never a bucket missing one. */
    char oid[RSTOR_OID_MAX];
    int rc = bucket_objects_make(st, &ix, oid);
    if (rc < 0) {
        bucket_objects_remove(st, &ix);
        return rs_fail("create index", oid, rc);
    }
    buf_t rec;
    buf_init(&rec, 4096);
    if (stor_rec_encode_bucket_rec(&rec, &r) != 0) {
        buf_free(&rec);
        bucket_objects_remove(st, &ix);
        return STOR_ERR_NOMEM;
    }
    rc = bucket_cas(st, name, NULL, &rec);
    buf_free(&rec);
    if (rc == 0)
        return STOR_OK;
    /* Ours never got a record: its objects go. */
    bucket_objects_remove(st, &ix);
    return rc == -ECANCELED ? STOR_ERR_BUCKET_EXISTS : rs_fail("create bucket", name, rc);
}

stor_status_t rs_bucket_get(stor_t *st_, const char *name, stor_bucket_t *out_p)
{
    return rs_bucket_lookup((rstor_t *)st_, name, out_p);
}

/* Re-reads bucket's record and checks it is still that bucket (its id):
 * *rec gets the stored bytes for a compare-and-set. */
static stor_status_t bucket_current(rstor_t *st, const stor_bucket_t *bucket, buf_t *rec,
                                    stor_bucket_t *cur)
{
    int rc = rs_omap_get(st->index, RSTOR_BUCKETS_OID, bucket->name, strlen(bucket->name), rec);
    if (rc == 0 || rc == -ENOENT)
        return STOR_ERR_NO_BUCKET;
    if (rc < 0)
        return rs_fail("bucket lookup", bucket->name, rc);
    if (stor_rec_decode_bucket(rec->data, rec->len, cur) != STOR_OK)
        return STOR_ERR_IO;
    return cur->id == bucket->id ? STOR_OK : STOR_ERR_NO_BUCKET;
}

stor_status_t rs_bucket_read(stor_t *st_, const stor_bucket_t *bucket, buf_t *rec)
{
    stor_bucket_t cur;
    stor_status_t s = bucket_current((rstor_t *)st_, bucket, rec, &cur);
    if (s != STOR_OK)
        buf_free(rec);
    return s;
}

stor_status_t rs_bucket_change(stor_t *st_, const stor_bucket_t *bucket,
                               const stor_bucket_change_t *change)
{
    rstor_t *st = (rstor_t *)st_;
    for (int attempt = 0; attempt < RSTOR_RETRIES; attempt++) {
        buf_t old, rec = {0};
        stor_bucket_t cur;
        stor_status_t s = bucket_current(st, bucket, &old, &cur);
        if (s == STOR_OK)
            s = stor_rec_bucket_apply(old.data, old.len, change, &rec);
        int rc = s == STOR_OK ? bucket_cas(st, bucket->name, &old, &rec) : 0;
        buf_free(&old);
        buf_free(&rec);
        if (s != STOR_OK)
            return s;
        if (rc == 0)
            return STOR_OK;
        if (rc != -ECANCELED)
            return rs_fail("change bucket", bucket->name, rc);
    }
    return STOR_ERR_IO;
}

/* Puts (set) or takes away the tombstone that stops every change to an
 * index object; setting fails with -ECANCELED if it is already there. */
static int index_tomb(rstor_t *st, const char *oid, int set)
{
    buf_t one = {.data = "1", .len = 1};
    return rs_omap_cas(st->index, oid, RSTOR_TOMB, strlen(RSTOR_TOMB), set ? NULL : &one,
                       set ? &one : NULL, 0);
}

/* Takes the tombstone off every shard of ix (those without one are left
 * as they are). */
static void index_untomb(rstor_t *st, const rs_index_t *ix)
{
    char oid[RSTOR_OID_MAX];
    for (uint32_t shard = 0; shard < ix->shards; shard++) {
        rs_index_oid(ix, shard, oid);
        index_tomb(st, oid, 0);
    }
}

/* 1 if the index object holds an object key, 0 if not, or a librados code. */
static int index_has_keys(rstor_t *st, const char *oid)
{
    rados_omap_iter_t it;
    int rc = rs_omap_read_keys(st->index, oid, 1, &it);
    if (rc < 0)
        return rc;
    char *k, *v;
    size_t kl, vl;
    /* 0xFF keys (the tombstone, a reshard's dirty marks) sort last. */
    int has = rados_omap_get_next2(it, &k, &v, &kl, &vl) == 0 && k &&
              !(kl && (unsigned char)k[0] == 0xFF);
    rados_omap_get_end(it);
    return has;
}

/* Deleting: (1) tombstone every index shard, so no commit lands in it any
 * more (every index write compares its shard's tombstone absent); (2) every
 * shard must be empty, else the tombstones go and BucketNotEmpty; (3)
 * uploads aborted; (4) the record removed (compared, so a re-created bucket
 * is not touched); (5) the index objects removed. A commit on a shard
 * either came before that shard's tombstone (and (2), which runs after all
 * of them, sees its key) or fails. A crash after (1) leaves a bucket that
 * refuses writes to the shards tombstoned until a delete is retried, which
 * then completes. */
stor_status_t rs_bucket_delete(stor_t *st_, const stor_bucket_t *bucket)
{
    rstor_t *st = (rstor_t *)st_;
    buf_t old;
    stor_bucket_t cur;
    stor_status_t s = bucket_current(st, bucket, &old, &cur);
    rs_index_t ix = rs_index_of(&cur);
    char oid[RSTOR_OID_MAX];
    int rc = 0;
    uint32_t gone = 0;
    if (s != STOR_OK)
        goto out;
    if (cur.reshard_to) {
        log_warn("storage: bucket %s is being resharded: finish the reshard (s3rdmad reshard) "
                 "before deleting it",
                 bucket->name);
        s = STOR_ERR_UNAVAILABLE;
        goto out;
    }
    for (uint32_t shard = 0; shard < ix.shards; shard++) {
        rs_index_oid(&ix, shard, oid);
        rc = index_tomb(st, oid, 1);
        if (rc == -ENOENT)
            gone++;
        else if (rc < 0 && rc != -ECANCELED) {
            index_untomb(st, &ix);
            s = rs_fail("tombstone index", oid, rc);
            goto out;
        }
    }
    /* All shards missing: a delete that got past (5) and crashed before
     * the record went; nothing to check. */
    for (uint32_t shard = 0; shard < ix.shards && gone < ix.shards; shard++) {
        rs_index_oid(&ix, shard, oid);
        rc = index_has_keys(st, oid);
        if (rc == -ENOENT)
            continue;
        if (rc != 0) {
            index_untomb(st, &ix);
            s = rc > 0 ? STOR_ERR_BUCKET_NOT_EMPTY : rs_fail("list index", oid, rc);
            goto out;
        }
    }
    if ((s = rs_uploads_drop(st, &ix)) != STOR_OK)
        goto out;
    rc = bucket_cas(st, bucket->name, &old, NULL);
    if (rc < 0) {
        s = rc == -ECANCELED ? STOR_ERR_NO_BUCKET : rs_fail("delete bucket", bucket->name, rc);
        goto out;
    }
    for (uint32_t shard = 0; shard < ix.shards; shard++) {
        rs_index_oid(&ix, shard, oid);
        rc = rados_remove(st->index, oid);
        if (rc < 0 && rc != -ENOENT)
            log_warn("storage: rados remove %s: %s (left behind, empty)", oid, strerror(-rc));
    }
out:
    buf_free(&old);
    return s;
}

static int cmp_bucket_name(const void *a, const void *b)
{
    return strcmp(((const stor_bucket_t *)a)->name, ((const stor_bucket_t *)b)->name);
}

typedef struct bucket_vec {
    stor_bucket_t *arr;
    size_t n, cap;
} bucket_vec_t;

static int add_bucket(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    bucket_vec_t *bv = arg;
    if (kl == 0 || kl > STOR_BUCKET_MAX)
        return 0;
    if (array_grow(&bv->arr, &bv->cap, bv->n, sizeof *bv->arr, 16) != 0)
        return -ENOMEM;
    if (stor_rec_decode_bucket(v, vl, &bv->arr[bv->n]) != STOR_OK) {
        log_error("storage: corrupt bucket record %.*s", (int)kl, k);
        return -EIO;
    }
    memcpy(bv->arr[bv->n].name, k, kl);
    bv->arr[bv->n++].name[kl] = '\0';
    return 0;
}

stor_status_t rs_bucket_list(stor_t *st_, stor_bucket_t **out_p, size_t *n_p)
{
    rstor_t *st = (rstor_t *)st_;
    bucket_vec_t bv = {0};
    int rc = rs_omap_each(st->index, RSTOR_BUCKETS_OID, "", add_bucket, &bv);
    if (rc < 0 && rc != -ENOENT) {
        free(bv.arr);
        return rc == -EIO ? STOR_ERR_IO : rs_fail("list buckets", RSTOR_BUCKETS_OID, rc);
    }
    if (bv.n)
        qsort(bv.arr, bv.n, sizeof *bv.arr, cmp_bucket_name);
    *out_p = bv.arr;
    *n_p = bv.n;
    return STOR_OK;
}
