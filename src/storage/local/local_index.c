/* The local engine's index transactions: begin, the writes a group's
 * change makes (recorded in the commit log), commit and durability per the
 * mode, and the checks made inside a transaction (bucket identity, names);
 * the usage counters a commit moves. Below the engine's other files: of
 * them it calls only the commit log and the syncer. */
#include <lmdb.h>
#include <stdatomic.h>
#include <string.h>

#include "common/log.h"
#include "storage/local/local_internal.h"
#include "storage/local/local_map.h"
#include "storage/local/local_syncer.h"
#include "storage/local/local_wal.h"

stor_status_t local_mdb_fail(const char *what, int rc)
{
    log_error("storage: %s: %s", what, mdb_strerror(rc));
    return STOR_ERR_IO;
}

int local_valid_bucket(const char *bucket)
{
    size_t n = strnlen(bucket, STOR_BUCKET_MAX + 1);
    return n > 0 && n <= STOR_BUCKET_MAX;
}

/* STOR_OK if the bucket exists, as seen by txn. */
stor_status_t local_bucket_exists(lstor_t *st, MDB_txn *txn, const char *bucket)
{
    if (!local_valid_bucket(bucket))
        return STOR_ERR_NO_BUCKET;
    MDB_val k = {strlen(bucket), (void *)bucket}, v;
    int rc = mdb_get(txn, st->db_buckets, &k, &v);
    if (rc == MDB_NOTFOUND)
        return STOR_ERR_NO_BUCKET;
    if (rc)
        return local_mdb_fail("bucket lookup", rc);
    return STOR_OK;
}

/* STOR_OK if the bucket named name is, as seen by txn, the bucket whose id
 * the caller saw when it authorized its request. A bucket deleted and
 * re-created under the same name since is another bucket (another id):
 * STOR_ERR_NO_BUCKET, the bucket the request was for no longer exists. Every
 * change to a bucket's contents calls this inside its write transaction, so
 * the check and the change are one atomic step. */
stor_status_t local_bucket_check(lstor_t *st, MDB_txn *txn, const char *name, uint64_t id)
{
    int versioning;
    return local_bucket_check_ver(st, txn, name, id, &versioning);
}

stor_status_t local_bucket_check_ver(lstor_t *st, MDB_txn *txn, const char *name, uint64_t id,
                                     int *versioning_p)
{
    if (!local_valid_bucket(name))
        return STOR_ERR_NO_BUCKET;
    MDB_val k = {strlen(name), (void *)name}, v;
    int rc = mdb_get(txn, st->db_buckets, &k, &v);
    if (rc == MDB_NOTFOUND)
        return STOR_ERR_NO_BUCKET;
    if (rc)
        return local_mdb_fail("bucket lookup", rc);
    stor_bucket_t b;
    if (stor_rec_decode_bucket(v.mv_data, v.mv_size, &b) != STOR_OK) {
        log_error("storage: corrupt bucket record %s", name);
        return STOR_ERR_IO;
    }
    *versioning_p = b.versioning;
    return b.id == id ? STOR_OK : STOR_ERR_NO_BUCKET;
}

stor_status_t local_rd_begin(lstor_t *st, MDB_txn **txn_p)
{
    int rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, txn_p);
    return rc ? local_mdb_fail("read txn", rc) : STOR_OK;
}

stor_status_t local_wr_begin(lstor_t *st, MDB_txn **txn_p)
{
    /* Relaxed mode: the sync points' backlog is bounded; a commit waits for
     * room before it takes the writer lock (local_syncer_throttle). */
    if (st->durability == STOR_DURABILITY_RELAXED && st->syncer &&
        local_syncer_throttle(st->syncer) != 0)
        return STOR_ERR_UNAVAILABLE;
    int rc = mdb_txn_begin(st->env, NULL, 0, txn_p);
    if (rc)
        return local_mdb_fail("write txn", rc);
    st->txn_more = 0;
    if (st->map && local_map_reserve(st->map) != 0) {
        mdb_txn_abort(*txn_p);
        *txn_p = NULL;
        return STOR_ERR_IO; /* logged by local_map_reserve */
    }
    return STOR_OK;
}

size_t local_txn_growth_max(const lstor_t *st)
{
    return STOR_REC_MAX + LOCAL_GROUP_MAX * (st->inline_max + LOCAL_CHANGE_SLACK);
}

stor_status_t local_wr_grow(lstor_t *st, size_t bytes)
{
    if (!st->map)
        return STOR_OK;
    st->txn_more += bytes;
    return local_map_reserve_more(st->map, st->txn_more) == 0 ? STOR_OK : STOR_ERR_IO;
}

/* The operation is recorded before it is made: a key or value may point
 * into a page of the index that the operation itself moves. */
int local_wr_put(lstor_t *st, MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v, unsigned flags)
{
    local_wal_capture_op(st->wal, 0, dbi, k, v);
    int rc = mdb_put(txn, dbi, k, v, flags);
    if (rc)
        local_wal_capture_undo(st->wal);
    return rc;
}

int local_wr_del(lstor_t *st, MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v)
{
    local_wal_capture_op(st->wal, 1, dbi, k, v);
    int rc = mdb_del(txn, dbi, k, v);
    if (rc)
        local_wal_capture_undo(st->wal);
    return rc;
}

/* Raises st->unlogged_last to at least id. */
void local_unlogged(lstor_t *st, uint64_t id)
{
    uint64_t cur = atomic_load(&st->unlogged_last);
    while (cur < id && !atomic_compare_exchange_weak(&st->unlogged_last, &cur, id))
        ;
}

stor_status_t local_wr_commit_only(lstor_t *st, MDB_txn *txn, uint64_t *txnid_p)
{
    *txnid_p = (uint64_t)mdb_txn_id(txn);
    int logged = local_wal_capturing(st->wal);
    /* Fsync mode: a commit outside the log is known, before it can be seen,
     * to every group that commits after it (local_group.c). */
    if (st->wal && !logged)
        local_unlogged(st, *txnid_p);
    int rc = mdb_txn_commit(txn);
    if (rc)
        return local_mdb_fail("commit", rc);
    /* Relaxed: in the page cache is enough; the next sync point owes it.
     * Fsync, logged: durable through the log, but a sync point is owed to
     * bound the log and the index's growth (a restore point pins pages). */
    if (st->durability == STOR_DURABILITY_RELAXED || logged)
        local_syncer_committed(st->syncer);
    local_map_committed(st->map);
    return STOR_OK;
}

stor_status_t local_wr_durable(lstor_t *st, uint64_t txnid)
{
    /* Fsync: durable before it returns, through a sync point that may be
     * shared with the commits of other threads (group commit). */
    if (st->durability == STOR_DURABILITY_RELAXED)
        return STOR_OK;
    return local_syncer_wait_durable(st->syncer, txnid) == 0 ? STOR_OK : STOR_ERR_IO;
}

stor_status_t local_wr_commit(lstor_t *st, MDB_txn *txn)
{
    uint64_t id;
    stor_status_t s = local_wr_commit_only(st, txn, &id);
    return s == STOR_OK ? local_wr_durable(st, id) : s;
}

int local_is_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return s[n] == '\0';
}

void local_usage_change(lstor_t *st, int64_t objects, int64_t bytes)
{
    atomic_fetch_add(&st->n_objects, (uint64_t)objects);
    atomic_fetch_add(&st->n_bytes, (uint64_t)bytes);
}
