/* Multipart uploads on RADOS: upload records in the omap of the bucket's
 * s3rdma.uploads.<id> (upload id -> record, which holds the key), part
 * records in s3rdma.parts.<upload id>, each part's bytes a blob of its own.
 * Complete claims the upload (removes its record, compared), switches the
 * index to a record listing the parts' blobs (no bytes copied) and hands
 * the unlisted parts to the GC log. A bucket's uploads as a set (their
 * key-order index, listing, the drop with the bucket) are rados_uploads.c's. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/s3r_limits.h"
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
 * (NULL: absent) to rec (NULL: removed), with its key-index entry set or
 * removed in the same op. At least one of expect and rec is given (the
 * entry is derived from it). The librados code. */
static int upload_cas(rstor_t *st, uint64_t bucket_id, const char *id, const buf_t *expect,
                      const buf_t *rec)
{
    char oid[RSTOR_OID_MAX], ms[24];
    rs_uploads_oid(bucket_id, oid);
    buf_t ikey;
    int rc = rs_upkey_entry(rec ? rec : expect, id, &ikey, ms);
    rados_write_op_t op = rc == 0 ? rados_create_write_op() : NULL;
    if (!op) {
        buf_free(&ikey);
        return rc ? rc : -ENOMEM;
    }
    int cmp = 0;
    const char *keys[2] = {id, ikey.data};
    size_t klens[2] = {STOR_UPLOAD_ID_LEN, ikey.len};
    rados_write_op_assert_exists(op);
    rados_write_op_omap_cmp2(op, id, LIBRADOS_CMPXATTR_OP_EQ, expect ? expect->data : "",
                             STOR_UPLOAD_ID_LEN, expect ? expect->len : 0, &cmp);
    if (rec) {
        const char *vals[2] = {rec->data, ms};
        size_t vlens[2] = {rec->len, strlen(ms)};
        rados_write_op_omap_set2(op, keys, vals, klens, vlens, 2);
    } else {
        rados_write_op_omap_rm_keys2(op, keys, klens, 2);
    }
    rc = rados_write_op_operate(op, st->index, oid, NULL, 0);
    rados_release_write_op(op);
    buf_free(&ikey);
    return rc;
}

/* Marks upload id's parts object as just changed before its record goes:
 * the full sweep spares the parts of a parts object without an upload
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
    if (hash_random_hex(STOR_UPLOAD_ID_LEN / 2, upload_id) != 0)
        return STOR_ERR_IO;
    /* The parts object first: a crash before the record leaves an empty
     * object that no upload names. */
    char oid[RSTOR_OID_MAX];
    rs_parts_oid(upload_id, oid);
    int rc = rados_write_full(st->index, oid, "", 0);
    if (rc < 0)
        return rs_fail("create parts", oid, rc);
    buf_t rec;
    buf_init(&rec, STOR_REC_MAX + 1);
    if (stor_rec_encode_upload(&rec, key, strlen(key), clock_wall_ms(), meta) != 0) {
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

stor_status_t rs_mpu_check(stor_t *st_, const char *bucket, const char *key, const char *upload_id,
                           stor_meta_t *meta_p)
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
    if (s != STOR_OK)
        return s;
    if (meta_p) {
        *meta_p = rec.meta;
        memset(&rec.meta, 0, sizeof rec.meta);
    }
    stor_upload_rec_free(&rec);
    return STOR_OK;
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
    if (array_grow(&pv->arr, &pv->cap, pv->n, sizeof *pv->arr, 16) != 0)
        return -ENOMEM;
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

/* The blobs of part records, for the GC log (all, or the unused ones). 0,
 * or a librados code (logged). */
static int gc_parts(rstor_t *st, const stor_part_rec_t *recs, size_t n, const uint8_t *used)
{
    stor_seg_t *segs = calloc(n ? n : 1, sizeof *segs);
    size_t k = 0;
    if (!segs) {
        log_error("storage: out of memory logging dropped parts");
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        if (!used || !used[i]) {
            memcpy(segs[k].id, recs[i].id, STOR_ID_LEN);
            segs[k++].size = recs[i].part.size;
        }
    int rc = rs_gc_log(st, segs, k);
    free(segs);
    return rc;
}

/* Ends upload id's parts: their blobs to the GC log (all, or the unused
 * ones), the parts object removed. After the upload record is gone. 0, or
 * a librados code (the parts object then stays, for a recovery). */
int rs_parts_drop(rstor_t *st, const char *id, const uint8_t *used, const stor_part_rec_t *recs,
                  size_t n)
{
    stor_part_rec_t *own = NULL;
    if (!recs) {
        stor_status_t s = load_parts(st, id, 0, &own, &n);
        if (s == STOR_ERR_NO_UPLOAD)
            return 0; /* ended already */
        if (s != STOR_OK)
            return -EIO;
        recs = own;
    }
    int rc = gc_parts(st, recs, n, used);
    stor_part_recs_free(own, own ? n : 0);
    if (rc == 0) {
        char oid[RSTOR_OID_MAX];
        rs_parts_oid(id, oid);
        rc = rados_remove(st->index, oid);
    }
    return rc == -ENOENT ? 0 : rc;
}

/* Before a part's compare-and-set: the part it replaces (old, NULL: none)
 * goes into its intent entry, then the lease must be fresh. */
static stor_status_t part_intent(rstor_t *st, rs_intent_ref_t *in, const char *upload_id,
                                 uint32_t number, const rs_index_t *ix, const char *key,
                                 const stor_part_rec_t *old)
{
    if (!old)
        return rs_intent_before_switch(st, in, NULL, "part-pieces");
    stor_seg_t seg = {.size = old->part.size};
    memcpy(seg.id, old->id, STOR_ID_LEN);
    buf_t desc;
    stor_status_t s = rs_intent_part(&desc, upload_id, number, ix, key, &seg) == 0
                          ? rs_intent_before_switch(st, in, &desc, "part-pieces")
                          : STOR_ERR_NOMEM;
    buf_free(&desc);
    return s;
}

stor_status_t rs_part_commit(stor_writer_t *w, const char *key, const char *upload_id,
                             stor_part_t *part)
{
    rstor_t *st = (rstor_t *)w->st;
    /* The writer's bucket and blob, through its public face. */
    stor_status_t s = STOR_OK;
    buf_t raw, rec, cur, desc;
    stor_upload_rec_t up;
    rs_intent_ref_t in;
    buf_init(&rec, STOR_REC_MAX + 1);
    buf_init(&cur, 1);
    buf_init(&raw, 1);
    rs_index_t ix;
    uint8_t id[STOR_ID_LEN];
    if (!valid_upload_id(upload_id)) {
        s = STOR_ERR_NO_UPLOAD;
        goto out;
    }
    rs_writer_identity(w, &ix, id);
    s = rs_intent_part(&desc, upload_id, part->number, &ix, key, NULL) == 0
            ? rs_writer_intent(w, &desc, &in)
            : STOR_ERR_NOMEM;
    buf_free(&desc);
    if (s != STOR_OK)
        goto out;
    rs_writer_identity(w, &ix, id); /* the id is made with the first entry */
    buf_free(&raw);
    s = rs_writer_seal(w);
    if (s == STOR_OK)
        s = upload_read(st, ix.id, key, upload_id, &raw, &up);
    else
        buf_init(&raw, 1);
    if (s != STOR_OK)
        goto out;
    stor_upload_rec_free(&up);
    part->size = rs_writer_size(w);
    part->mtime_ms = clock_wall_ms();
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
        stor_part_rec_t old;
        int have_old = found && stor_rec_decode_part(cur.data, cur.len, &old) == STOR_OK;
        if (rc >= 0 && (s = part_intent(st, &in, upload_id, part->number, &ix, key,
                                        have_old ? &old : NULL)) != STOR_OK) {
            if (have_old)
                stor_part_free_fields(&old.part);
            goto out;
        }
        if (rc >= 0)
            rc = rs_omap_cas(st->index, oid, pkey, klen, found ? &cur : NULL, &rec, 0);
        /* The replaced part's blob is named by the entry: settled by the
         * collector if it did not reach the GC log. */
        int unsettled = rc == 0 && have_old && gc_parts(st, &old, 1, NULL) != 0;
        if (have_old)
            stor_part_free_fields(&old.part);
        if (rc == 0) {
            rs_writer_done(w, unsettled ? RS_DONE_UNSURE : RS_DONE_KEPT);
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
        rs_writer_done(w, s == STOR_ERR_UNAVAILABLE ? RS_DONE_UNSURE : RS_DONE_REMOVE);
    buf_free(&raw);
    buf_free(&rec);
    buf_free(&cur);
    return s;
}

stor_status_t rs_mpu_list_parts(stor_t *st_, const char *bucket, const char *key,
                                const char *upload_id, uint32_t part_marker, stor_part_t **parts_p,
                                size_t *n_p)
{
    rstor_t *st = (rstor_t *)st_;
    stor_status_t s = rs_mpu_check(st_, bucket, key, upload_id, NULL);
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
    buf_t raw;
    stor_upload_rec_t up;
    stor_part_rec_t *recs = NULL;
    size_t n_recs = 0;
    stor_seg_t *segs = NULL;
    uint8_t *used = NULL;
    stor_meta_t m;
    memset(&m, 0, sizeof m);
    int have_up = 0, logged = 0, unsure = 0;
    rs_intent_ref_t in, drop = {0};
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
    /* The version is the commit's to give. */
    free(m.version);
    free(m.delete_marker);
    m.version = m.delete_marker = NULL;
    if ((s = stor_mpu_assemble(parts, n, recs, n_recs, &m, cond, &segs, used)) != STOR_OK)
        goto out;
    /* Logged before the claim, so a recovery settles a Complete cut short
     * between its claim and its parts' removal. */
    rs_index_t ix = rs_index_of(bkt);
    buf_t desc;
    snprintf(in.name, sizeof in.name, "c%s", upload_id);
    in.epoch = 0;
    s = rs_intent_complete(&desc, &ix, key) == 0 ? rs_intent_put(st, in.name, &desc, &in.epoch)
                                                 : STOR_ERR_NOMEM;
    buf_free(&desc);
    if (s != STOR_OK)
        goto out;
    logged = 1;
    rs_crash_point(st, "complete-intent");
    if ((s = rs_intent_check(st, in.epoch)) != STOR_OK)
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
    rs_crash_point(st, "complete-claim");
    s = rs_intent_check(st, in.epoch);
    /* The blobs the switch drops (the key's old object) get an entry of
     * their own, of the Complete's epoch. */
    uint8_t iid[STOR_ID_LEN];
    if (s == STOR_OK && rs_new_blob_id(iid) != 0)
        s = STOR_ERR_IO;
    if (s == STOR_OK) {
        rs_intent_name(iid, drop.name);
        drop.epoch = in.epoch;
        s = rs_object_commit(st, bkt->name, &ix, bkt->versioning, key, &m, segs, (uint32_t)n, cond,
                             NULL, NULL, &drop);
    }
    if (s != STOR_OK) {
        /* The upload stays as it was. */
        if (upload_cas(st, bkt->id, upload_id, NULL, &raw) < 0) {
            log_error("storage: upload %s lost after a failed complete", upload_id);
            unsure = 1;
        }
        goto out;
    }
    rs_crash_point(st, "complete-switch");
    unsure = rs_parts_drop(st, upload_id, used, recs, n_recs) != 0;
    *meta_p = m;
    memset(&m, 0, sizeof m);
out:
    rs_intent_drop_done(st, &drop, s == STOR_ERR_UNAVAILABLE);
    if (logged)
        (unsure ? rs_intent_unsure : rs_intent_clear)(st, in.name);
    buf_free(&raw);
    stor_part_recs_free(recs, n_recs);
    free(segs);
    free(used);
    stor_meta_free(&m);
    if (have_up)
        stor_upload_rec_free(&up);
    return s;
}

int rs_upload_recover(rstor_t *st, const rs_index_t *ix, const char *key, const char *upload_id)
{
    char oid[RSTOR_OID_MAX];
    rs_uploads_oid(ix->id, oid);
    buf_t raw;
    int rc = rs_omap_get(st->index, oid, upload_id, STOR_UPLOAD_ID_LEN, &raw);
    buf_free(&raw);
    if (rc > 0)
        return 0; /* open: never claimed, or put back */
    if (rc < 0 && rc != -ENOENT)
        return rc;
    stor_part_rec_t *recs;
    size_t n;
    stor_status_t s = load_parts(st, upload_id, 0, &recs, &n);
    if (s == STOR_ERR_NO_UPLOAD)
        return 0; /* the parts object is gone: the Complete or Abort finished */
    if (s != STOR_OK)
        return -EIO;
    /* Claimed: the parts the key references stay (the switch happened),
     * the rest go with the parts object. */
    rs_idset_t set = {0};
    uint8_t *used = calloc(n ? n : 1, 1);
    rc = used ? rs_key_blobs(st, ix, key, &set) : -ENOMEM;
    if (rc == 0) {
        rs_idset_sort(&set);
        for (size_t i = 0; i < n; i++)
            used[i] = (uint8_t)rs_idset_has(&set, recs[i].id);
        rc = rs_parts_drop(st, upload_id, used, recs, n);
    }
    free(set.ids);
    free(used);
    stor_part_recs_free(recs, n);
    return rc;
}

stor_status_t rs_mpu_abort(stor_t *st_, const stor_bucket_t *bucket, const char *key,
                           const char *upload_id)
{
    rstor_t *st = (rstor_t *)st_;
    buf_t raw;
    stor_upload_rec_t up;
    rs_intent_ref_t in = {0};
    int logged = 0, unsure = 0;
    stor_status_t s = upload_read(st, bucket->id, key, upload_id, &raw, &up);
    if (s == STOR_OK) {
        stor_upload_rec_free(&up);
        /* Logged before the claim, as a Complete's (and settled alike: a
         * claimed upload's parts the key does not reference go), so a
         * crash between the claim and the parts' removal leaves them to a
         * recovery. */
        rs_index_t ix = rs_index_of(bucket);
        buf_t desc;
        snprintf(in.name, sizeof in.name, "c%s", upload_id);
        s = rs_intent_complete(&desc, &ix, key) == 0 ? rs_intent_put(st, in.name, &desc, &in.epoch)
                                                     : STOR_ERR_NOMEM;
        buf_free(&desc);
        logged = s == STOR_OK;
        if (s == STOR_OK)
            s = rs_intent_check(st, in.epoch);
    }
    if (s == STOR_OK) {
        int rc = parts_touch(st, upload_id);
        if (rc == -ENOENT)
            rc = -ECANCELED;
        if (rc == 0)
            rc = upload_cas(st, bucket->id, upload_id, &raw, NULL);
        if (rc < 0)
            s = rc == -ECANCELED ? STOR_ERR_NO_UPLOAD
                : rc == -ENOENT  ? STOR_ERR_NO_BUCKET
                                 : rs_fail("abort upload", upload_id, rc);
        unsure = s == STOR_ERR_UNAVAILABLE;
    }
    buf_free(&raw);
    if (s == STOR_OK) {
        rs_crash_point(st, "abort-claim");
        unsure = rs_parts_drop(st, upload_id, NULL, NULL, 0) != 0;
    }
    if (logged)
        (unsure ? rs_intent_unsure : rs_intent_clear)(st, in.name);
    return s;
}
