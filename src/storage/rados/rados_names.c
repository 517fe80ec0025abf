/* The RADOS backend's names and lookups, below its other files (it calls
 * only rados_omap.c): the mapping of librados errors to statuses, the
 * names of the RADOS objects (index shards, uploads, parts, pieces), new
 * blob ids, and buckets by name (their records, and their index ids through
 * a small cache). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"
#include "storage/rados/rados_internal.h"

/* 1 for the codes that mean "the cluster did not answer in time". */
static int rs_unavailable(int rc)
{
    return rc == -ETIMEDOUT || rc == -ENOTCONN || rc == -ESHUTDOWN || rc == -ECONNREFUSED ||
           rc == -EAGAIN || rc == -EHOSTUNREACH;
}

stor_status_t rs_fail(const char *what, const char *oid, int rc)
{
    log_error("storage: rados %s %s: %s", what, oid ? oid : "", strerror(-rc));
    if (rc == -ENOMEM)
        return STOR_ERR_NOMEM;
    return rs_unavailable(rc) ? STOR_ERR_UNAVAILABLE : STOR_ERR_IO;
}

void rs_index_oid(const rs_index_t *ix, uint32_t shard, char out[RSTOR_OID_MAX])
{
    if (ix->gen)
        snprintf(out, RSTOR_OID_MAX, "s3rdma.index.%016" PRIx64 ".g%" PRIu32 ".%" PRIu32, ix->id,
                 ix->gen, shard);
    else if (ix->shards <= 1)
        snprintf(out, RSTOR_OID_MAX, "s3rdma.index.%016" PRIx64, ix->id);
    else
        snprintf(out, RSTOR_OID_MAX, "s3rdma.index.%016" PRIx64 ".%" PRIu32, ix->id, shard);
}

/* The shard of n that holds key: FNV-1a (64-bit, offset basis
 * 0xcbf29ce484222325, prime 0x100000001b3) of the key's bytes, modulo n. Fixed
 * here, never a library's hash: it places keys in the cluster, so it must
 * give the same answer in every build of every gateway. */
uint32_t rs_key_shard(uint32_t n, const char *key, size_t klen)
{
    if (n <= 1)
        return 0;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < klen; i++)
        h = (h ^ (uint8_t)key[i]) * 0x100000001b3ull;
    return (uint32_t)(h % n);
}

void rs_key_oid(const rs_index_t *ix, const char *key, char out[RSTOR_OID_MAX])
{
    rs_index_oid(ix, rs_key_shard(ix->shards, key, strlen(key)), out);
}

void rs_uploads_oid(uint64_t bucket_id, char out[RSTOR_OID_MAX])
{
    snprintf(out, RSTOR_OID_MAX, "s3rdma.uploads.%016" PRIx64, bucket_id);
}

void rs_parts_oid(const char *upload_id, char out[RSTOR_OID_MAX])
{
    snprintf(out, RSTOR_OID_MAX, "s3rdma.parts.%s", upload_id);
}

void rs_piece_oid(const uint8_t id[STOR_ID_LEN], uint32_t piece, char out[RSTOR_OID_MAX])
{
    char hex[2 * STOR_ID_LEN + 1];
    hash_hex_encode(id, STOR_ID_LEN, hex);
    snprintf(out, RSTOR_OID_MAX, "%s.%08" PRIx32, hex, piece);
}

int rs_new_blob_id(uint8_t id[STOR_ID_LEN])
{
    uint64_t t = (uint64_t)clock_wall_ms();
    for (int i = 0; i < 8; i++)
        id[i] = (uint8_t)(t >> (56 - 8 * i));
    return hash_random_bytes(id + 8, STOR_ID_LEN - 8);
}

stor_status_t rs_bucket_lookup(rstor_t *st, const char *name, stor_bucket_t *out_p)
{
    size_t n = strnlen(name, STOR_BUCKET_MAX + 1);
    if (n == 0 || n > STOR_BUCKET_MAX)
        return STOR_ERR_NO_BUCKET;
    buf_t v;
    int rc = rs_omap_get(st->index, RSTOR_BUCKETS_OID, name, n, &v);
    stor_status_t s = STOR_OK;
    if (rc == 0 || rc == -ENOENT)
        s = STOR_ERR_NO_BUCKET;
    else if (rc < 0)
        s = rs_fail("bucket lookup", name, rc);
    else if (stor_rec_decode_bucket(v.data, v.len, out_p) != STOR_OK) {
        log_error("storage: corrupt bucket record %s", name);
        s = STOR_ERR_IO;
    } else
        snprintf(out_p->name, sizeof out_p->name, "%s", name);
    buf_free(&v);
    return s;
}

static idslot_t *id_slot(rstor_t *st, const char *name)
{
    uint32_t h = 2166136261u;
    for (const char *p = name; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    return &st->ids[h % RSTOR_IDCACHE];
}

stor_status_t rs_bucket_id(rstor_t *st, const char *name, int fresh, rs_index_t *ix_p)
{
    idslot_t *slot = id_slot(st, name);
    if (!fresh) {
        pthread_mutex_lock(&st->id_lock);
        int hit = slot->ix.id && strcmp(slot->name, name) == 0;
        *ix_p = slot->ix;
        pthread_mutex_unlock(&st->id_lock);
        if (hit)
            return STOR_OK;
    }
    stor_bucket_t b;
    stor_status_t s = rs_bucket_lookup(st, name, &b);
    pthread_mutex_lock(&st->id_lock);
    if (s == STOR_OK) {
        snprintf(slot->name, sizeof slot->name, "%s", name);
        slot->ix = rs_index_of(&b);
    } else if (strcmp(slot->name, name) == 0) {
        slot->ix.id = 0;
    }
    pthread_mutex_unlock(&st->id_lock);
    *ix_p = s == STOR_OK ? rs_index_of(&b) : (rs_index_t){0, 1, 0, 0, ""};
    return s;
}

typedef struct by_id {
    uint64_t id;
    rs_index_t *ix_p;
} by_id_t;

static int match_id(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    by_id_t *a = arg;
    stor_bucket_t b;
    if (kl == 0 || kl > STOR_BUCKET_MAX || stor_rec_decode_bucket(v, vl, &b) != STOR_OK ||
        b.id != a->id)
        return 0;
    memcpy(b.name, k, kl);
    b.name[kl] = '\0';
    *a->ix_p = rs_index_of(&b);
    return 1;
}

stor_status_t rs_index_by_id(rstor_t *st, uint64_t id, rs_index_t *ix_p)
{
    by_id_t a = {id, ix_p};
    int rc = rs_omap_each(st->index, RSTOR_BUCKETS_OID, "", match_id, &a);
    if (rc == 1)
        return STOR_OK;
    return rc == 0 || rc == -ENOENT ? STOR_ERR_NO_BUCKET : rs_fail("find bucket", "", rc);
}
