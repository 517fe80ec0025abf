/* The RADOS backend's spine, on top of its other files: the ops table
 * (stor_backend.h), opening and closing a store on a Ceph cluster, usage
 * and readiness. The helpers the rados_*.c files share are below them:
 * rados_names.c (errors, object names, blob ids, buckets by name) and
 * rados_omap.c (omap reads and writes). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"
#include "storage/rados/rados_internal.h"

/* ==== Usage and readiness =============================================== */

/* The data pool's own statistics (one call to the cluster): its RADOS
 * objects (pieces, parts) and the bytes they hold, not S3 objects; zeros
 * when the cluster does not answer. */
static void rs_usage(stor_t *st_, uint64_t *objects_p, uint64_t *bytes_p)
{
    rstor_t *st = (rstor_t *)st_;
    struct rados_pool_stat_t ps;
    *objects_p = *bytes_p = 0;
    if (rados_ioctx_pool_stat(st->data, &ps) == 0) {
        *objects_p = ps.num_objects;
        *bytes_p = ps.num_bytes;
    }
}

/* Ready while the cluster answers: the index pool's statistics within the
 * client's op timeout. */
static int rs_ready(stor_t *st_)
{
    rstor_t *st = (rstor_t *)st_;
    struct rados_pool_stat_t ps;
    return rados_ioctx_pool_stat(st->index, &ps) == 0;
}

/* ==== Open / close ====================================================== */

static void rs_close(stor_t *st);
static stor_status_t rs_sync(stor_t *st);

static const stor_ops_t rados_ops = {
    .name = "rados",
    .close = rs_close,
    .sync = rs_sync,
    .usage = rs_usage,
    .ready = rs_ready,
    .lease = rs_lease,
    .bucket_create = rs_bucket_create,
    .bucket_get = rs_bucket_get,
    .bucket_read = rs_bucket_read,
    .bucket_change = rs_bucket_change,
    .bucket_delete = rs_bucket_delete,
    .bucket_list = rs_bucket_list,
    .bucket_reshard = rs_bucket_reshard,
    .writer_open = rs_writer_open,
    .writer_write = rs_writer_write,
    .writer_size = rs_writer_size,
    .writer_commit_if = rs_writer_commit_if,
    .writer_abort = rs_writer_abort,
    .head = rs_head,
    .reader_open = rs_reader_open,
    .reader_meta = rs_reader_meta,
    .reader_pread = rs_reader_pread,
    .reader_span_fd = NULL, /* no files: callers pread into their buffer */
    .reader_close = rs_reader_close,
    .delete = rs_delete,
    .object_change = rs_object_change,
    .iter_open = rs_iter_open,
    .iter_seek = rs_iter_seek,
    .iter_next = rs_iter_next,
    .iter_close = rs_iter_close,
    .mpu_create = rs_mpu_create,
    .mpu_check = rs_mpu_check,
    .part_commit = rs_part_commit,
    .mpu_list_parts = rs_mpu_list_parts,
    .mpu_complete = rs_mpu_complete,
    .mpu_abort = rs_mpu_abort,
    .mpu_list = rs_mpu_list,
    .head_version = rs_head_version,
    .reader_open_version = rs_reader_open_version,
    .delete_version = rs_delete_version,
    .iter_open_versions = rs_iter_open_versions,
    .iter_next_version = rs_iter_next_version,
};

stor_status_t stor_open_rados(const stor_rados_conf_t *conf, stor_t **out_p)
{
    if (!conf->pool || !*conf->pool) {
        log_error("storage: the RADOS backend needs a data pool (storage.rados.pool)");
        return STOR_ERR_IO;
    }
    /* A lapsed lease is noticed by its holder only once a cluster call
     * returns: commits are safe while one call (op_timeout) takes less than
     * half a lease (docs/storage.md, the intent log). */
    unsigned lease_s = conf->lease_s ? conf->lease_s : 30;
    unsigned op_timeout_s = conf->op_timeout_s ? conf->op_timeout_s : 10;
    if (lease_s <= 2 * op_timeout_s) {
        log_error("storage: storage.rados.lease (%u s) must be more than twice "
                  "storage.rados.op_timeout (%u s): a gateway whose cluster call takes the "
                  "whole timeout could commit after its intents were recovered",
                  lease_s, op_timeout_s);
        return STOR_ERR_IO;
    }
    rstor_t *st = calloc(1, sizeof *st);
    if (!st)
        return STOR_ERR_NOMEM;
    st->base.ops = &rados_ops;
    st->grace_ms = (int64_t)conf->gc_grace_s * 1000;
    st->sweep_page_ms = conf->sweep_page_ms;
    st->full_sweep = conf->full_sweep;
    st->index_shards = conf->index_shards ? conf->index_shards : RSTOR_INDEX_SHARDS_DEFAULT;
    if (st->index_shards > STOR_INDEX_SHARDS_MAX)
        st->index_shards = STOR_INDEX_SHARDS_MAX;
    pthread_mutex_init(&st->gc_lock, NULL);
    pthread_cond_init(&st->gc_cond, NULL);
    pthread_mutex_init(&st->id_lock, NULL);
    pthread_mutex_init(&st->park_lock, NULL);
    pthread_mutex_init(&st->takeover_lock, NULL);
    pthread_mutex_init(&st->runs_lock, NULL);
    const char *user = conf->user && *conf->user ? conf->user : "admin";
    const char *ipool = conf->index_pool && *conf->index_pool ? conf->index_pool : conf->pool;
    const char *what = "create";
    int rc = rados_create(&st->cluster, user);
    if (rc < 0) {
        st->cluster = NULL;
        goto fail;
    }
    what = "read conf";
    if (conf->conf && *conf->conf && (rc = rados_conf_read_file(st->cluster, conf->conf)) < 0)
        goto fail;
    what = "keyring";
    if (conf->keyring && *conf->keyring &&
        (rc = rados_conf_set(st->cluster, "keyring", conf->keyring)) < 0)
        goto fail;
    /* Calls fail (and requests get a 503) instead of hanging while the
     * cluster is away. */
    what = "set timeouts";
    char timeout[16];
    snprintf(timeout, sizeof timeout, "%u", op_timeout_s);
    if ((rc = rados_conf_set(st->cluster, "rados_osd_op_timeout", timeout)) < 0 ||
        (rc = rados_conf_set(st->cluster, "rados_mon_op_timeout", timeout)) < 0 ||
        (rc = rados_conf_set(st->cluster, "client_mount_timeout", timeout)) < 0)
        goto fail;
    what = "connect";
    if ((rc = rados_connect(st->cluster)) < 0)
        goto fail;
    what = "open pool";
    if ((rc = rados_ioctx_create(st->cluster, conf->pool, &st->data)) < 0) {
        st->data = NULL;
        goto fail;
    }
    if ((rc = rados_ioctx_create(st->cluster, ipool, &st->index)) < 0) {
        st->index = NULL;
        goto fail;
    }
    what = "start the gateway's lease";
    if ((rc = rs_intent_open(st, conf->crash_at, lease_s * 1000u)) < 0)
        goto fail;
    if (rs_gc_start(st) != 0) {
        rc = -EAGAIN;
        what = "start the collector";
        goto fail;
    }
    log_info("storage: RADOS backend on pool %s (index %s) as client.%s", conf->pool, ipool, user);
    *out_p = &st->base;
    return STOR_OK;
fail:;
    stor_status_t s = rs_fail(what, conf->conf, rc);
    rs_close(&st->base);
    return s;
}

static void rs_close(stor_t *st_)
{
    rstor_t *st = (rstor_t *)st_;
    rs_gc_stop(st);
    if (st->index)
        rs_intent_close(st);
    if (st->index)
        rados_ioctx_destroy(st->index);
    if (st->data)
        rados_ioctx_destroy(st->data);
    if (st->cluster)
        rados_shutdown(st->cluster);
    pthread_mutex_destroy(&st->gc_lock);
    pthread_cond_destroy(&st->gc_cond);
    rs_list_parked_trim(st, 1);
    pthread_mutex_destroy(&st->id_lock);
    pthread_mutex_destroy(&st->park_lock);
    pthread_mutex_destroy(&st->takeover_lock);
    pthread_mutex_destroy(&st->runs_lock);
    free(st);
}

/* Every acknowledged change is already durable in the cluster (librados
 * returns once every replica has it). */
static stor_status_t rs_sync(stor_t *st)
{
    (void)st;
    return STOR_OK;
}
