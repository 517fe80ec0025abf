/* Buckets: create, get, delete (only when empty) and list. */
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/clock.h"
#include "common/log.h"
#include "storage/local/local_internal.h"

/* ==== Buckets ============================================================ */

stor_status_t local_bucket_create(stor_t *st_, const char *name, const char *owner)
{
    lstor_t *st = (lstor_t *)st_;
    if (!local_valid_bucket(name))
        return STOR_ERR_TOO_LARGE;
    if (owner && strlen(owner) >= sizeof((stor_bucket_t *)0)->owner)
        return STOR_ERR_TOO_LARGE;
    /* The id tells this bucket from any other that had or will have its
     * name; 0 is reserved for records written before ids existed. */
    uint64_t id = 0;
    while (id == 0)
        if (hash_random_bytes(&id, sizeof id) != 0)
            return STOR_ERR_IO;
    buf_t b;
    buf_init(&b, 4096);
    if (stor_rec_encode_bucket(&b, owner, clock_wall_ms() / 1000, id, STOR_ACL_PRIVATE) != 0) {
        buf_free(&b);
        return STOR_ERR_NOMEM;
    }
    MDB_txn *txn;
    stor_status_t s = local_wr_begin(st, &txn);
    if (s == STOR_OK) {
        MDB_val k = {strlen(name), (void *)name}, v = {b.len, b.data};
        int rc = mdb_put(txn, st->db_buckets, &k, &v, MDB_NOOVERWRITE);
        if (rc == MDB_KEYEXIST) {
            s = STOR_ERR_BUCKET_EXISTS;
            mdb_txn_abort(txn);
        } else if (rc) {
            s = local_mdb_fail("bucket put", rc);
            mdb_txn_abort(txn);
        } else {
            s = local_wr_commit(st, txn);
        }
    }
    buf_free(&b);
    return s;
}

stor_status_t local_bucket_get(stor_t *st_, const char *name, stor_bucket_t *out_p)
{
    lstor_t *st = (lstor_t *)st_;
    if (!local_valid_bucket(name))
        return STOR_ERR_NO_BUCKET;
    MDB_txn *txn;
    stor_status_t s = local_rd_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    MDB_val k = {strlen(name), (void *)name}, v;
    int rc = mdb_get(txn, st->db_buckets, &k, &v);
    if (rc == MDB_NOTFOUND) {
        s = STOR_ERR_NO_BUCKET;
    } else if (rc) {
        s = local_mdb_fail("bucket get", rc);
    } else {
        stor_bucket_t b;
        memset(&b, 0, sizeof b);
        snprintf(b.name, sizeof b.name, "%s", name);
        s = stor_rec_decode_bucket(v.mv_data, v.mv_size, &b);
        if (s == STOR_OK)
            *out_p = b;
    }
    mdb_txn_abort(txn);
    return s;
}

/* 1 if some key of db starts with prefix, 0 if none, -1 on error. */
static int has_prefix(MDB_txn *txn, MDB_dbi db, const void *prefix, size_t plen)
{
    MDB_cursor *cur;
    if (mdb_cursor_open(txn, db, &cur))
        return -1;
    MDB_val k = {plen, (void *)prefix}, v;
    int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    int r = rc == MDB_NOTFOUND ? 0
            : rc               ? -1
                               : (k.mv_size >= plen && memcmp(k.mv_data, prefix, plen) == 0);
    mdb_cursor_close(cur);
    return r;
}

stor_status_t local_bucket_delete(stor_t *st_, const stor_bucket_t *bucket)
{
    lstor_t *st = (lstor_t *)st_;
    const char *name = bucket->name;
    if (!local_valid_bucket(name))
        return STOR_ERR_NO_BUCKET;
    MDB_txn *txn;
    stor_status_t s = local_wr_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    size_t blen = strlen(name);
    uint8_t pfx[STOR_BUCKET_MAX + 1];
    memcpy(pfx, name, blen);
    pfx[blen] = 0;
    MDB_val k = {blen, (void *)name};
    if ((s = local_bucket_check(st, txn, name, bucket->id)) != STOR_OK) {
        mdb_txn_abort(txn);
        return s;
    }
    stor_seg_t *parts = NULL;
    size_t n_parts = 0;
    int rc = mdb_del(txn, st->db_buckets, &k, NULL);
    if (rc == MDB_NOTFOUND) {
        s = STOR_ERR_NO_BUCKET;
    } else if (rc) {
        s = local_mdb_fail("bucket delete", rc);
    } else {
        int a = has_prefix(txn, st->db_objects, pfx, blen + 1);
        if (a == 0)
            a = has_prefix(txn, st->db_versions, pfx, blen + 1);
        if (a < 0)
            s = STOR_ERR_IO;
        else if (a)
            s = STOR_ERR_BUCKET_NOT_EMPTY;
        else
            s = local_mpu_drop_bucket(st, txn, name, &parts, &n_parts);
    }
    if (s != STOR_OK) {
        mdb_txn_abort(txn);
        return s;
    }
    s = local_wr_commit(st, txn);
    if (s == STOR_OK)
        for (size_t i = 0; i < n_parts; i++)
            local_drop_file(st, parts[i].id);
    free(parts);
    return s;
}

stor_status_t local_bucket_read(stor_t *st_, const stor_bucket_t *bucket, buf_t *rec)
{
    lstor_t *st = (lstor_t *)st_;
    buf_init(rec, STOR_REC_MAX);
    MDB_txn *txn;
    stor_status_t s = local_rd_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    const char *name = bucket->name;
    MDB_val k = {strlen(name), (void *)name}, v;
    if ((s = local_bucket_check(st, txn, name, bucket->id)) == STOR_OK) {
        int rc = mdb_get(txn, st->db_buckets, &k, &v);
        if (rc)
            s = local_mdb_fail("bucket get", rc);
        else if (buf_append(rec, v.mv_data, v.mv_size) != 0)
            s = STOR_ERR_NOMEM;
    }
    mdb_txn_abort(txn);
    return s;
}

stor_status_t local_bucket_change(stor_t *st_, const stor_bucket_t *bucket,
                                  const stor_bucket_change_t *change)
{
    lstor_t *st = (lstor_t *)st_;
    const char *name = bucket->name;
    MDB_txn *txn;
    stor_status_t s = local_wr_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    if ((s = local_bucket_check(st, txn, name, bucket->id)) != STOR_OK) {
        mdb_txn_abort(txn);
        return s;
    }
    /* The record as it is now (local_bucket_check saw it), changed. A version-1
     * record gets an id (a writer opened on it before then fails its
     * commit with STOR_ERR_NO_BUCKET). */
    MDB_val k = {strlen(name), (void *)name}, v;
    buf_t b = {0};
    int rc = mdb_get(txn, st->db_buckets, &k, &v);
    s = rc ? local_mdb_fail("bucket get", rc)
           : stor_rec_bucket_apply(v.mv_data, v.mv_size, change, &b);
    if (s == STOR_OK) {
        MDB_val nv = {b.len, b.data};
        if ((rc = mdb_put(txn, st->db_buckets, &k, &nv, 0)) != 0)
            s = local_mdb_fail("bucket put", rc);
    }
    buf_free(&b);
    if (s != STOR_OK) {
        mdb_txn_abort(txn);
        return s;
    }
    return local_wr_commit(st, txn);
}

stor_status_t local_bucket_list(stor_t *st_, stor_bucket_t **out_p, size_t *n_p)
{
    lstor_t *st = (lstor_t *)st_;
    MDB_txn *txn;
    MDB_cursor *cur;
    stor_status_t s = local_rd_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    stor_bucket_t *arr = NULL;
    size_t n = 0, cap = 0;
    int rc = mdb_cursor_open(txn, st->db_buckets, &cur);
    if (rc) {
        mdb_txn_abort(txn);
        return local_mdb_fail("cursor", rc);
    }
    MDB_val k, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size > STOR_BUCKET_MAX)
            continue;
        if (array_grow(&arr, &cap, n, sizeof *arr, 16) != 0) {
            s = STOR_ERR_NOMEM;
            break;
        }
        memset(&arr[n], 0, sizeof arr[n]);
        memcpy(arr[n].name, k.mv_data, k.mv_size);
        if (stor_rec_decode_bucket(v.mv_data, v.mv_size, &arr[n]) != STOR_OK) {
            log_error("storage: corrupt bucket record %s", arr[n].name);
            s = STOR_ERR_IO;
            break;
        }
        n++;
    }
    if (s == STOR_OK && rc != MDB_NOTFOUND)
        s = local_mdb_fail("bucket list", rc);
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    if (s != STOR_OK) {
        free(arr);
        return s;
    }
    *out_p = arr;
    *n_p = n;
    return STOR_OK;
}
