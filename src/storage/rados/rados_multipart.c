/* Multipart uploads on RADOS: upload records in the omap of the bucket's
 * s3rdma.uploads.<id> (upload id -> record, which holds the key), part
 * records in s3rdma.parts.<upload id>, each part's bytes a blob of its own.
 * Complete claims the upload (removes its record, compared), switches the
 * index to a record listing the parts' blobs (no bytes copied) and hands
 * the unlisted parts to the GC log. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/log.h"
#include "storage/rados/rados_internal.h"

static int valid_upload_id(const char *id)
{
    if (!id || strlen(id) != STOR_UPLOAD_ID_LEN)
        return 0;
    for (size_t i = 0; i < STOR_UPLOAD_ID_LEN; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
            return 0;
    return 1;
}

/* Compare-and-set of upload record id in the uploads object: from expect
 * (NULL: absent) to rec (NULL: removed). The librados code. */
static int upload_cas(rstor_t *st, uint64_t bucket_id, const char *id, const buf_t *expect,
                      const buf_t *rec)
{
    char oid[RSTOR_OID_MAX];
    rs_uploads_oid(bucket_id, oid);
    return rs_omap_cas(st->index, oid, id, STOR_UPLOAD_ID_LEN, expect, rec, 0);
}

/* Marks upload id's parts object as just changed before its record goes:
 * the start sweep spares the parts of a parts object without an upload
 * record while it is younger than the grace (rados_gc.c), which covers a
 * Complete or Abort in progress. The librados code. */
static int parts_touch(rstor_t *st, const char *id)
{
    char oid[RSTOR_OID_MAX];
    rs_parts_oid(id, oid);
    rados_write_op_t op = rados_create_write_op();
    if (!op)
        return -ENOMEM;
    rados_write_op_assert_exists(op);
    rados_write_op_setxattr(op, "s3rdma.ending", "1", 1);
    int rc = rados_write_op_operate(op, st->index, oid, NULL, 0);
    rados_release_write_op(op);
    return rc;
}

/* Reads upload id of bucket bucket_id for key: raw bytes into *raw
 * (buf_init'ed here), decoded into *rec. STOR_ERR_NO_UPLOAD unless it
 * exists for that key. */
static stor_status_t upload_read(rstor_t *st, uint64_t bucket_id, const char *key, const char *id,
                                 buf_t *raw, stor_upload_rec_t *rec)
{
    char oid[RSTOR_OID_MAX];
    rs_uploads_oid(bucket_id, oid);
    buf_init(raw, 1);
    if (!valid_upload_id(id))
        return STOR_ERR_NO_UPLOAD;
    buf_free(raw);
    int rc = rs_omap_get(st->index, oid, id, STOR_UPLOAD_ID_LEN, raw);
    if (rc == -ENOENT)
        return STOR_ERR_NO_BUCKET;
    if (rc < 0)
        return rs_fail("upload lookup", oid, rc);
    if (rc == 0)
        return STOR_ERR_NO_UPLOAD;
    if (stor_rec_decode_upload(raw->data, raw->len, rec) != STOR_OK) {
        log_error("storage: corrupt upload record %s", id);
        return STOR_ERR_IO;
    }
    if (strcmp(rec->key, key) != 0) {
        stor_upload_rec_free(rec);
        return STOR_ERR_NO_UPLOAD;
    }
    return STOR_OK;
}

stor_status_t rs_mpu_create(stor_t *st_, const stor_bucket_t *bucket, const char *key,
                            const stor_meta_t *meta, char upload_id[STOR_UPLOAD_ID_LEN + 1])
{
    rstor_t *st = (rstor_t *)st_;
    uint8_t raw[STOR_UPLOAD_ID_LEN / 2];
    if (random_bytes(raw, sizeof raw) != 0)
        return STOR_ERR_IO;
    hex_encode(raw, sizeof raw, upload_id);
    /* The parts object first: a crash before the record leaves an empty
     * object that no upload names. */
    char oid[RSTOR_OID_MAX];
    rs_parts_oid(upload_id, oid);
    int rc = rados_write_full(st->index, oid, "", 0);
    if (rc < 0)
        return rs_fail("create parts", oid, rc);
    buf_t rec;
    buf_init(&rec, STOR_REC_MAX + 1);
    if (stor_rec_encode_upload(&rec, key, strlen(key), now_ms(), meta) != 0) {
        buf_free(&rec);
        return STOR_ERR_NOMEM;
    }
    if (rec.len > STOR_REC_MAX) {
        buf_free(&rec);
        return STOR_ERR_TOO_LARGE;
    }
    rc = upload_cas(st, bucket->id, upload_id, NULL, &rec);
    buf_free(&rec);
    if (rc == 0)
        return STOR_OK;
    rados_remove(st->index, oid);
    return rc == -ENOENT ? STOR_ERR_NO_BUCKET : rs_fail("create upload", upload_id, rc);
}

stor_status_t rs_mpu_check(stor_t *st_, const char *bucket, const char *key, const char *upload_id)
{
    rstor_t *st = (rstor_t *)st_;
    stor_bucket_t b;
    stor_status_t s = rs_bucket_lookup(st, bucket, &b);
    if (s != STOR_OK)
        return s;
    buf_t raw;
    stor_upload_rec_t rec;
    s = upload_read(st, b.id, key, upload_id, &raw, &rec);
    buf_free(&raw);
    if (s == STOR_OK)
        stor_upload_rec_free(&rec);
    return s;
}

/* ---- Parts -------------------------------------------------------------- */

typedef struct part_vec {
    stor_part_rec_t *arr;
    size_t n, cap;
} part_vec_t;

static int add_part(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    (void)k;
    (void)kl;
    part_vec_t *pv = arg;
    if (pv->n == pv->cap) {
        size_t cap = pv->cap ? 2 * pv->cap : 16;
        stor_part_rec_t *na = realloc(pv->arr, cap * sizeof *na);
        if (!na)
            return -ENOMEM;
        pv->arr = na;
        pv->cap = cap;
    }
    if (stor_rec_decode_part(v, vl, &pv->arr[pv->n]) != STOR_OK) {
        log_error("storage: corrupt part record");
        return -EIO;
    }
    pv->n++;
    return 0;
}

/* Part records of upload id after part number `after`, ascending (the omap
 * keys are 8 hex digits). */
static stor_status_t load_parts(rstor_t *st, const char *id, uint32_t after,
                                stor_part_rec_t **out_p, size_t *n_p)
{
    char oid[RSTOR_OID_MAX], from[16] = "";
    rs_parts_oid(id, oid);
    if (after)
        snprintf(from, sizeof from, "%08" PRIx32, after);
    part_vec_t pv = {0};
    int rc = rs_omap_each(st->index, oid, from, add_part, &pv);
    if (rc < 0) {
        stor_part_recs_free(pv.arr, pv.n);
        return rc == -ENOENT ? STOR_ERR_NO_UPLOAD
               : rc == -EIO  ? STOR_ERR_IO
                             : rs_fail("list parts", oid, rc);
    }
    *out_p = pv.arr;
    *n_p = pv.n;
    return STOR_OK;
}

/* The blobs of part records, for the GC log (n entries, malloc'ed; NULL when
 * out of memory, logged: the sweep gets them then). */
static void gc_parts(rstor_t *st, const stor_part_rec_t *recs, size_t n, const uint8_t *used)
{
    stor_seg_t *segs = calloc(n ? n : 1, sizeof *segs);
    size_t k = 0;
    if (!segs) {
        log_error("storage: out of memory logging dropped parts");
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (!used || !used[i]) {
            memcpy(segs[k].id, recs[i].id, STOR_ID_LEN);
            segs[k++].size = recs[i].part.size;
        }
    if (k)
        rs_gc_log(st, segs, k);
    free(segs);
}

/* Ends upload id's parts: their blobs to the GC log (all, or the unused
 * ones), the parts object removed. After the upload record is gone. */
static void parts_drop(rstor_t *st, const char *id, const uint8_t *used,
                       const stor_part_rec_t *recs, size_t n)
{
    stor_part_rec_t *own = NULL;
    if (!recs) {
        if (load_parts(st, id, 0, &own, &n) != STOR_OK)
            return; /* the sweep collects them */
        recs = own;
    }
    gc_parts(st, recs, n, used);
    stor_part_recs_free(own, own ? n : 0);
    char oid[RSTOR_OID_MAX];
    rs_parts_oid(id, oid);
    rados_remove(st->index, oid);
}

stor_status_t rs_part_commit(stor_writer_t *w, const char *key, const char *upload_id,
                             stor_part_t *part)
{
    rstor_t *st = (rstor_t *)w->st;
    /* The writer's bucket and blob, through its public face. */
    stor_status_t s = STOR_OK;
    buf_t raw, rec, cur;
    stor_upload_rec_t up;
    buf_init(&rec, STOR_REC_MAX + 1);
    buf_init(&cur, 1);
    uint64_t bucket_id;
    uint8_t id[STOR_ID_LEN];
    rs_writer_identity(w, &bucket_id, id);
    s = rs_writer_seal(w);
    if (s == STOR_OK)
        s = upload_read(st, bucket_id, key, upload_id, &raw, &up);
    else
        buf_init(&raw, 1);
    buf_free(&raw);
    if (s != STOR_OK)
        goto out;
    stor_upload_rec_free(&up);
    part->size = rs_writer_size(w);
    part->mtime_ms = now_ms();
    if (stor_rec_encode_part(&rec, part, id) != 0) {
        s = STOR_ERR_NOMEM;
        goto out;
    }
    char oid[RSTOR_OID_MAX], pkey[16];
    rs_parts_oid(upload_id, oid);
    snprintf(pkey, sizeof pkey, "%08" PRIx32, part->number);
    size_t klen = strlen(pkey);
    for (int attempt = 0;; attempt++) {
        buf_free(&cur);
        int rc = rs_omap_get(st->index, oid, pkey, klen, &cur);
        int found = rc > 0;
        if (rc >= 0)
            rc = rs_omap_cas(st->index, oid, pkey, klen, found ? &cur : NULL, &rec, 0);
        if (rc == 0) {
            stor_part_rec_t old;
            if (found && stor_rec_decode_part(cur.data, cur.len, &old) == STOR_OK) {
                gc_parts(st, &old, 1, NULL);
                stor_part_free_fields(&old.part);
            }
            rs_writer_done(w, 1);
            w = NULL;
            goto out;
        }
        if (rc == -ENOENT) {
            s = STOR_ERR_NO_UPLOAD;
            goto out;
        }
        if (rc != -ECANCELED || attempt == RSTOR_RETRIES) {
            s = rs_fail("part commit", oid, rc);
            goto out;
        }
    }
out:
    if (w)
        rs_writer_done(w, s == STOR_ERR_UNAVAILABLE);
    buf_free(&rec);
    buf_free(&cur);
    return s;
}

stor_status_t rs_mpu_list_parts(stor_t *st_, const char *bucket, const char *key,
                                const char *upload_id, uint32_t part_marker, stor_part_t **parts_p,
                                size_t *n_p)
{
    rstor_t *st = (rstor_t *)st_;
    stor_status_t s = rs_mpu_check(st_, bucket, key, upload_id);
    if (s != STOR_OK)
        return s;
    stor_part_rec_t *recs;
    size_t n;
    if ((s = load_parts(st, upload_id, part_marker, &recs, &n)) != STOR_OK)
        return s;
    stor_part_t *parts = calloc(n ? n : 1, sizeof *parts);
    if (!parts) {
        stor_part_recs_free(recs, n);
        return STOR_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        parts[i] = recs[i].part;
    free(recs);
    *parts_p = parts;
    *n_p = n;
    return STOR_OK;
}

stor_status_t rs_mpu_complete(stor_t *st_, const stor_bucket_t *bkt, const char *key,
                              const char *upload_id, const stor_complete_part_t *parts, size_t n,
                              const stor_precond_t *cond, stor_meta_t *meta_p)
{
    rstor_t *st = (rstor_t *)st_;
    stor_status_t s = stor_mpu_check_list(parts, n);
    if (s != STOR_OK)
        return s;
    buf_t raw, rec = {0};
    stor_upload_rec_t up;
    stor_part_rec_t *recs = NULL;
    size_t n_recs = 0;
    stor_seg_t *segs = NULL;
    uint8_t *used = NULL;
    stor_meta_t m;
    memset(&m, 0, sizeof m);
    int have_up = 0;
    s = upload_read(st, bkt->id, key, upload_id, &raw, &up);
    if (s != STOR_OK)
        goto out;
    have_up = 1;
    if ((s = load_parts(st, upload_id, 0, &recs, &n_recs)) != STOR_OK)
        goto out;
    used = calloc(n_recs ? n_recs : 1, 1);
    m = up.meta;
    memset(&up.meta, 0, sizeof up.meta);
    if (!used) {
        s = STOR_ERR_NOMEM;
        goto out;
    }
    if ((s = stor_mpu_assemble(parts, n, recs, n_recs, &m, &segs, used)) != STOR_OK)
        goto out;
    if ((s = encode_object(&rec, key, &m, segs, (uint32_t)n)) != STOR_OK)
        goto out;
    /* Claim the upload: of two racing Completes (or a Complete and an
     * Abort) exactly one removes its record. */
    int rc = parts_touch(st, upload_id);
    if (rc == -ENOENT)
        rc = -ECANCELED; /* ended by another Complete or an Abort meanwhile */
    if (rc == 0)
        rc = upload_cas(st, bkt->id, upload_id, &raw, NULL);
    if (rc < 0) {
        s = rc == -ECANCELED ? STOR_ERR_NO_UPLOAD
            : rc == -ENOENT  ? STOR_ERR_NO_BUCKET
                             : rs_fail("claim upload", upload_id, rc);
        goto out;
    }
    stor_obj_rec_t old;
    int had_old = 0;
    s = rs_index_switch(st, bkt->id, key, &rec, cond, &old, &had_old);
    if (s != STOR_OK) {
        /* The upload stays as it was. */
        if (upload_cas(st, bkt->id, upload_id, NULL, &raw) < 0)
            log_error("storage: upload %s lost after a failed complete", upload_id);
        goto out;
    }
    if (had_old) {
        rs_gc_log(st, old.segs, old.n_segs);
        stor_obj_rec_free(&old);
    }
    parts_drop(st, upload_id, used, recs, n_recs);
    *meta_p = m;
    memset(&m, 0, sizeof m);
out:
    buf_free(&raw);
    buf_free(&rec);
    stor_part_recs_free(recs, n_recs);
    free(segs);
    free(used);
    stor_meta_free(&m);
    if (have_up)
        stor_upload_rec_free(&up);
    return s;
}

stor_status_t rs_mpu_abort(stor_t *st_, const stor_bucket_t *bucket, const char *key,
                           const char *upload_id)
{
    rstor_t *st = (rstor_t *)st_;
    buf_t raw;
    stor_upload_rec_t up;
    stor_status_t s = upload_read(st, bucket->id, key, upload_id, &raw, &up);
    if (s == STOR_OK) {
        stor_upload_rec_free(&up);
        int rc = parts_touch(st, upload_id);
        if (rc == -ENOENT)
            rc = -ECANCELED;
        if (rc == 0)
            rc = upload_cas(st, bucket->id, upload_id, &raw, NULL);
        if (rc < 0)
            s = rc == -ECANCELED ? STOR_ERR_NO_UPLOAD
                : rc == -ENOENT  ? STOR_ERR_NO_BUCKET
                                 : rs_fail("abort upload", upload_id, rc);
    }
    buf_free(&raw);
    if (s == STOR_OK)
        parts_drop(st, upload_id, NULL, NULL, 0);
    return s;
}

/* Every upload record of bucket bucket_id, in id order, into *ups (ids and
 * keys). */
typedef struct upl {
    char id[STOR_UPLOAD_ID_LEN + 1];
    stor_upload_rec_t rec;
} upl_t;

static void upls_free(upl_t *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        stor_upload_rec_free(&a[i].rec);
    free(a);
}

typedef struct upl_vec {
    upl_t *arr;
    size_t n, cap;
} upl_vec_t;

static int add_upload(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    upl_vec_t *uv = arg;
    if (kl != STOR_UPLOAD_ID_LEN)
        return 0;
    if (uv->n == uv->cap) {
        size_t cap = uv->cap ? 2 * uv->cap : 16;
        upl_t *na = realloc(uv->arr, cap * sizeof *na);
        if (!na)
            return -ENOMEM;
        uv->arr = na;
        uv->cap = cap;
    }
    if (stor_rec_decode_upload(v, vl, &uv->arr[uv->n].rec) != STOR_OK) {
        log_error("storage: corrupt upload record %.*s", (int)kl, k);
        return -EIO;
    }
    memcpy(uv->arr[uv->n].id, k, kl);
    uv->arr[uv->n++].id[kl] = '\0';
    return 0;
}

static stor_status_t uploads_load(rstor_t *st, uint64_t bucket_id, upl_t **out_p, size_t *n_p)
{
    char oid[RSTOR_OID_MAX];
    rs_uploads_oid(bucket_id, oid);
    upl_vec_t uv = {0};
    int rc = rs_omap_each(st->index, oid, "", add_upload, &uv);
    if (rc < 0) {
        upls_free(uv.arr, uv.n);
        return rc == -ENOENT ? STOR_ERR_NO_BUCKET
               : rc == -EIO  ? STOR_ERR_IO
                             : rs_fail("list uploads", oid, rc);
    }
    *out_p = uv.arr;
    *n_p = uv.n;
    return STOR_OK;
}

stor_status_t rs_uploads_drop(rstor_t *st, uint64_t bucket_id)
{
    upl_t *ups;
    size_t n;
    stor_status_t s = uploads_load(st, bucket_id, &ups, &n);
    if (s == STOR_ERR_NO_BUCKET)
        return STOR_OK; /* a retried delete: already gone */
    if (s != STOR_OK)
        return s;
    char oid[RSTOR_OID_MAX];
    rs_uploads_oid(bucket_id, oid);
    /* Removing the object first stops new uploads and parts (they assert it
     * exists); then each upload's parts go. */
    int rc = rados_remove(st->index, oid);
    if (rc < 0 && rc != -ENOENT) {
        upls_free(ups, n);
        return rs_fail("remove uploads", oid, rc);
    }
    for (size_t i = 0; i < n; i++)
        parts_drop(st, ups[i].id, NULL, NULL, 0);
    upls_free(ups, n);
    return STOR_OK;
}

stor_status_t rs_mpu_list(stor_t *st_, const char *bucket, const char *prefix,
                          const char *key_marker, const char *upload_id_marker, size_t max,
                          stor_upload_t **uploads_p, size_t *n_p, int *more_p)
{
    rstor_t *st = (rstor_t *)st_;
    stor_bucket_t b;
    stor_status_t s = rs_bucket_lookup(st, bucket, &b);
    if (s != STOR_OK)
        return s;
    upl_t *ups;
    size_t nu;
    if ((s = uploads_load(st, b.id, &ups, &nu)) != STOR_OK)
        return s;
    stor_upload_t *arr = calloc(nu ? nu : 1, sizeof *arr);
    size_t n = 0;
    if (!arr) {
        upls_free(ups, nu);
        return STOR_ERR_NOMEM;
    }
    for (size_t i = 0; i < nu; i++) {
        if (!stor_upload_listed(ups[i].rec.key, ups[i].id, prefix, key_marker, upload_id_marker))
            continue;
        arr[n].key = ups[i].rec.key;
        ups[i].rec.key = NULL;
        memcpy(arr[n].upload_id, ups[i].id, sizeof arr[n].upload_id);
        arr[n].initiated_ms = ups[i].rec.initiated_ms;
        n++;
    }
    upls_free(ups, nu);
    n = stor_uploads_page(arr, n, max, more_p);
    *uploads_p = arr;
    *n_p = n;
    return STOR_OK;
}
