/* Buckets on RADOS: records in the omap of s3rdma.buckets; each bucket's
 * index and uploads objects are named by its id. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

stor_status_t rs_bucket_create(stor_t *st_, const char *name, const char *owner)
{
    rstor_t *st = (rstor_t *)st_;
    size_t n = strnlen(name, STOR_BUCKET_MAX + 1);
    if (n == 0 || n > STOR_BUCKET_MAX)
        return STOR_ERR_IO;
    uint64_t id = 0;
    while (id == 0)
        if (random_bytes(&id, sizeof id) != 0)
            return STOR_ERR_IO;
    /* The bucket's objects exist before its record: a crash in between
     * leaves empty objects nobody names, never a bucket without them. */
    char oid[RSTOR_OID_MAX];
    rs_index_oid(id, oid);
    int rc = rados_write_full(st->index, oid, "", 0);
    if (rc < 0)
        return rs_fail("create index", oid, rc);
    rs_uploads_oid(id, oid);
    if ((rc = rados_write_full(st->index, oid, "", 0)) < 0)
        return rs_fail("create uploads", oid, rc);
    buf_t rec;
    buf_init(&rec, 4096);
    if (stor_rec_encode_bucket(&rec, owner, clock_wall_ms() / 1000, id, STOR_ACL_PRIVATE) != 0) {
        buf_free(&rec);
        return STOR_ERR_NOMEM;
    }
    rc = bucket_cas(st, name, NULL, &rec);
    buf_free(&rec);
    if (rc == 0)
        return STOR_OK;
    /* Ours never got a record: its objects go. */
    rados_remove(st->index, oid);
    rs_index_oid(id, oid);
    rados_remove(st->index, oid);
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

/* Puts (set) or takes away the tombstone that stops every change to the
 * bucket's index; setting fails with -ECANCELED if it is already there. */
static int index_tomb(rstor_t *st, const char *oid, int set)
{
    buf_t one = {.data = "1", .len = 1};
    return rs_omap_cas(st->index, oid, RSTOR_TOMB, strlen(RSTOR_TOMB), set ? NULL : &one,
                       set ? &one : NULL, 0);
}

/* 1 if the index holds an object key, 0 if not, or a librados code. */
static int index_has_keys(rstor_t *st, const char *oid)
{
    rados_read_op_t op = rados_create_read_op();
    if (!op)
        return -ENOMEM;
    rados_omap_iter_t it = NULL;
    unsigned char more = 0;
    int prval = 0;
    rados_read_op_omap_get_keys2(op, "", 1, &it, &more, &prval);
    int rc = rados_read_op_operate(op, st->index, oid, 0);
    rados_release_read_op(op);
    if (rc == 0)
        rc = prval;
    if (rc < 0) {
        if (it)
            rados_omap_get_end(it);
        return rc;
    }
    char *k, *v;
    size_t kl, vl;
    int has = rados_omap_get_next2(it, &k, &v, &kl, &vl) == 0 && k &&
              !(kl == strlen(RSTOR_TOMB) && memcmp(k, RSTOR_TOMB, kl) == 0);
    rados_omap_get_end(it);
    return has;
}

/* Deleting: (1) tombstone the index, so no commit lands in it any more
 * (every index write compares the tombstone absent); (2) the index must be
 * empty, else the tombstone goes and BucketNotEmpty; (3) uploads aborted;
 * (4) the record removed (compared, so a re-created bucket is not touched);
 * (5) the index removed. A crash after (1) leaves a bucket that refuses
 * writes until a delete is retried, which then completes. */
stor_status_t rs_bucket_delete(stor_t *st_, const stor_bucket_t *bucket)
{
    rstor_t *st = (rstor_t *)st_;
    buf_t old;
    stor_bucket_t cur;
    stor_status_t s = bucket_current(st, bucket, &old, &cur);
    char oid[RSTOR_OID_MAX];
    rs_index_oid(bucket->id, oid);
    int rc = 0;
    if (s != STOR_OK)
        goto out;
    rc = index_tomb(st, oid, 1);
    if (rc < 0 && rc != -ECANCELED && rc != -ENOENT) {
        s = rs_fail("tombstone index", oid, rc);
        goto out;
    }
    if (rc == 0 || rc == -ECANCELED) {
        rc = index_has_keys(st, oid);
        if (rc != 0) {
            index_tomb(st, oid, 0);
            s = rc > 0 ? STOR_ERR_BUCKET_NOT_EMPTY : rs_fail("list index", oid, rc);
            goto out;
        }
    }
    if ((s = rs_uploads_drop(st, bucket->id)) != STOR_OK)
        goto out;
    rc = bucket_cas(st, bucket->name, &old, NULL);
    if (rc < 0) {
        s = rc == -ECANCELED ? STOR_ERR_NO_BUCKET : rs_fail("delete bucket", bucket->name, rc);
        goto out;
    }
    rc = rados_remove(st->index, oid);
    if (rc < 0 && rc != -ENOENT)
        log_warn("storage: rados remove %s: %s (left behind, empty)", oid, strerror(-rc));
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
    if (bv->n == bv->cap) {
        size_t cap = bv->cap ? 2 * bv->cap : 16;
        stor_bucket_t *na = realloc(bv->arr, cap * sizeof *na);
        if (!na)
            return -ENOMEM;
        bv->arr = na;
        bv->cap = cap;
    }
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
