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

/* ---- the uploads in key order ----------------------------------------------
 * The upload records are keyed by upload id (random): no key order. Beside
 * them, the uploads object's omap holds one key-index entry per upload:
 * UPKEY_MARK, the key with every byte raised by one, UPKEY_SEP, the upload
 * id; its value the initiation time (decimal ms). Raising the bytes keeps
 * key order and frees 0x01 as a separator below every key byte, so the
 * entries sort by (key, upload id) with no NUL in an omap key (keys are
 * UTF-8: no 0xFF to raise), and they sort after every upload id (hex). An
 * upload's record and its entry are set and removed in one write op.
 * ListMultipartUploads reads the entries from its markers on, a page at a
 * time (docs/storage.md). The uploads object of a bucket made before the
 * entries existed gets them the first time its uploads are listed
 * (UPKEY_XATTR marks an uploads object that has them). */
#define UPKEY_MARK  '~'
#define UPKEY_SEP   '\x01'
#define UPKEY_XATTR "s3rdma.upkeys"

/* Appends UPKEY_MARK and s (n bytes) raised to out. -1 for a byte 0xFF. */
static int upkey_text(buf_t *out, const char *s, size_t n)
{
    char mark = UPKEY_MARK;
    if (buf_append(out, &mark, 1) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char up = (char)(c + 1);
        if (c == 0xFF || buf_append(out, &up, 1) != 0)
            return -1;
    }
    return 0;
}

/* The key-index entry of an upload record (raw bytes): its omap key into
 * *ikey (buf_init'ed here) and value into ms. -EINVAL for a record that
 * does not decode. */
static int upkey_entry(const buf_t *raw, const char *id, buf_t *ikey, char ms[24])
{
    buf_init(ikey, 1 + S3R_MAX_KEY_BYTES + 1 + STOR_UPLOAD_ID_LEN);
    stor_upload_rec_t r;
    if (stor_rec_decode_upload(raw->data, raw->len, &r) != STOR_OK)
        return -EINVAL;
    char sep = UPKEY_SEP;
    int rc = upkey_text(ikey, r.key, r.key_len) != 0 || buf_append(ikey, &sep, 1) != 0 ||
                     buf_append(ikey, id, STOR_UPLOAD_ID_LEN) != 0
                 ? -EINVAL
                 : 0;
    snprintf(ms, 24, "%" PRId64, r.initiated_ms);
    stor_upload_rec_free(&r);
    return rc;
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
    int rc = upkey_entry(rec ? rec : expect, id, &ikey, ms);
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
static int parts_drop(rstor_t *st, const char *id, const uint8_t *used, const stor_part_rec_t *recs,
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
    unsure = parts_drop(st, upload_id, used, recs, n_recs) != 0;
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
        rc = parts_drop(st, upload_id, used, recs, n);
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
        unsure = parts_drop(st, upload_id, NULL, NULL, 0) != 0;
    }
    if (logged)
        (unsure ? rs_intent_unsure : rs_intent_clear)(st, in.name);
    return s;
}

/* An upload record with its raw bytes. */
typedef struct upl_raw {
    char id[STOR_UPLOAD_ID_LEN + 1];
    buf_t raw;
} upl_raw_t;

typedef struct upl_raw_vec {
    upl_raw_t *arr;
    size_t n, cap;
} upl_raw_vec_t;

static void upl_raw_vec_free(upl_raw_vec_t *uv)
{
    for (size_t i = 0; i < uv->n; i++)
        buf_free(&uv->arr[i].raw);
    free(uv->arr);
}

/* rs_omap_each's callback: collects the upload records (ids and raw bytes)
 * of an uploads object, skipping its other keys. */
static int add_upload_raw(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    upl_raw_vec_t *uv = arg;
    if (kl != STOR_UPLOAD_ID_LEN)
        return 0; /* a key-index entry */
    if (uv->n == uv->cap) {
        size_t cap = uv->cap ? 2 * uv->cap : 16;
        upl_raw_t *na = realloc(uv->arr, cap * sizeof *na);
        if (!na)
            return -ENOMEM;
        uv->arr = na;
        uv->cap = cap;
    }
    upl_raw_t *u = &uv->arr[uv->n];
    buf_init(&u->raw, STOR_REC_MAX);
    if (buf_append(&u->raw, v, vl) != 0) {
        buf_free(&u->raw);
        return -ENOMEM;
    }
    memcpy(u->id, k, kl);
    u->id[kl] = '\0';
    uv->n++;
    return 0;
}

/* Writes upload u's Complete entry into in (bucket ix): a recovery after
 * the uploads object is gone drops the parts nothing references (the
 * bucket is empty by then: all of them, so a record that does not decode
 * is named with an empty key). */
static stor_status_t upload_intent(rstor_t *st, const rs_index_t *ix, const upl_raw_t *u,
                                   rs_intent_ref_t *in)
{
    stor_upload_rec_t r;
    char *key;
    if (stor_rec_decode_upload(u->raw.data, u->raw.len, &r) == STOR_OK) {
        key = strndup(r.key, r.key_len);
        stor_upload_rec_free(&r);
    } else {
        key = strdup("");
    }
    buf_t desc;
    snprintf(in->name, sizeof in->name, "c%s", u->id);
    stor_status_t s = key && rs_intent_complete(&desc, ix, key) == 0
                          ? rs_intent_put(st, in->name, &desc, &in->epoch)
                          : STOR_ERR_NOMEM;
    buf_free(&desc);
    free(key);
    return s;
}

stor_status_t rs_uploads_drop(rstor_t *st, const rs_index_t *ix)
{
    char oid[RSTOR_OID_MAX];
    rs_uploads_oid(ix->id, oid);
    upl_raw_vec_t uv = {0};
    int rc = rs_omap_each(st->index, oid, "", add_upload_raw, &uv);
    if (rc == -ENOENT) {
        upl_raw_vec_free(&uv);
        return STOR_OK; /* a retried delete: already gone */
    }
    if (rc < 0) {
        upl_raw_vec_free(&uv);
        return rs_fail("list uploads", oid, rc);
    }
    /* Each upload's Complete entry first (one round trip each), so a crash
     * between the object's removal and its parts' leaves them to a
     * recovery; the log holds one entry per open upload meanwhile. */
    rs_intent_ref_t *ins = calloc(uv.n ? uv.n : 1, sizeof *ins);
    stor_status_t s = ins ? STOR_OK : STOR_ERR_NOMEM;
    size_t logged = 0;
    for (; logged < uv.n && s == STOR_OK; logged++) {
        ins[logged].epoch = logged ? ins[0].epoch : 0; /* all of one epoch */
        s = upload_intent(st, ix, &uv.arr[logged], &ins[logged]);
    }
    if (s != STOR_OK && logged)
        logged--; /* the failed one wrote nothing */
    if (s == STOR_OK && uv.n)
        s = rs_intent_check(st, ins[uv.n - 1].epoch);
    /* Removing the object first stops new uploads and parts (they assert it
     * exists); then each upload's parts go. */
    if (s == STOR_OK) {
        rc = rados_remove(st->index, oid);
        if (rc < 0 && rc != -ENOENT)
            s = rs_fail("remove uploads", oid, rc);
    }
    if (s == STOR_OK && uv.n)
        rs_crash_point(st, "bucket-uploads");
    for (size_t i = 0; i < logged; i++) {
        int unsure = s == STOR_OK && parts_drop(st, uv.arr[i].id, NULL, NULL, 0) != 0;
        (unsure ? rs_intent_unsure : rs_intent_clear)(st, ins[i].name);
    }
    free(ins);
    upl_raw_vec_free(&uv);
    return s;
}

/* Makes sure the uploads object oid has its key-index entries: those of a
 * bucket made before they existed are written once (each guarded by its
 * record, so an upload that ends meanwhile is not indexed again), then
 * UPKEY_XATTR says so. The librados code. */
static int upkeys_ready(rstor_t *st, const char *oid)
{
    char x[2];
    int rc = rados_getxattr(st->index, oid, UPKEY_XATTR, x, sizeof x);
    if (rc != -ENODATA)
        return rc < 0 ? rc : 0;
    upl_raw_vec_t uv = {0};
    rc = rs_omap_each(st->index, oid, "", add_upload_raw, &uv);
    size_t built = 0;
    for (size_t i = 0; i < uv.n && rc == 0; i++) {
        buf_t ikey;
        char ms[24];
        rados_write_op_t op = NULL;
        if ((rc = upkey_entry(&uv.arr[i].raw, uv.arr[i].id, &ikey, ms)) == 0 &&
            !(op = rados_create_write_op()))
            rc = -ENOMEM;
        if (op) {
            int cmp = 0;
            const char *keys[1] = {ikey.data}, *vals[1] = {ms};
            size_t klen = ikey.len, vlen = strlen(ms);
            rados_write_op_omap_cmp2(op, uv.arr[i].id, LIBRADOS_CMPXATTR_OP_EQ, uv.arr[i].raw.data,
                                     STOR_UPLOAD_ID_LEN, uv.arr[i].raw.len, &cmp);
            rados_write_op_omap_set2(op, keys, vals, &klen, &vlen, 1);
            rc = rados_write_op_operate(op, st->index, oid, NULL, 0);
            rados_release_write_op(op);
            if (rc == -ECANCELED)
                rc = 0; /* ended meanwhile */
            else if (rc == 0)
                built++;
        }
        buf_free(&ikey);
    }
    upl_raw_vec_free(&uv);
    if (rc == 0)
        rc = rados_setxattr(st->index, oid, UPKEY_XATTR, "1", 1);
    if (rc == 0)
        log_info("storage: indexed %zu multipart uploads of %s by key", built, oid);
    return rc;
}

/* Appends the upload of key-index entry (k, kl; value v, vl) to *arr if the
 * listing wants it. 0, or -1 for a malformed entry or no memory. */
static int list_entry(const char *k, size_t kl, const char *v, size_t vl, const char *prefix,
                      const char *key_marker, const char *id_marker, stor_upload_t **arr, size_t *n,
                      size_t *cap)
{
    if (kl < 2 + STOR_UPLOAD_ID_LEN || k[0] != UPKEY_MARK ||
        k[kl - 1 - STOR_UPLOAD_ID_LEN] != UPKEY_SEP)
        return -1;
    size_t klen = kl - 2 - STOR_UPLOAD_ID_LEN;
    char *key = malloc(klen + 1);
    char id[STOR_UPLOAD_ID_LEN + 1], ms[24];
    if (!key || vl >= sizeof ms) {
        free(key);
        return -1;
    }
    for (size_t i = 0; i < klen; i++)
        key[i] = (char)((unsigned char)k[1 + i] - 1);
    key[klen] = '\0';
    memcpy(id, k + kl - STOR_UPLOAD_ID_LEN, STOR_UPLOAD_ID_LEN);
    id[STOR_UPLOAD_ID_LEN] = '\0';
    memcpy(ms, v, vl);
    ms[vl] = '\0';
    if (!stor_upload_listed(key, id, prefix, key_marker, id_marker)) {
        free(key);
        return 0;
    }
    if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 16;
        stor_upload_t *na = realloc(*arr, nc * sizeof *na);
        if (!na) {
            free(key);
            return -1;
        }
        *arr = na;
        *cap = nc;
    }
    stor_upload_t *u = &(*arr)[(*n)++];
    u->key = key;
    memcpy(u->upload_id, id, sizeof id);
    u->initiated_ms = strtoll(ms, NULL, 10);
    return 0;
}

/* A bounded walk of the key-index entries: from the later of the prefix and
 * the key marker, within the prefix, until max + 1 listed uploads (the
 * entries of the marker's own key at or before the upload-id marker are
 * read and skipped), so a page does not cost the bucket's uploads. */
stor_status_t rs_mpu_list(stor_t *st_, const char *bucket, const char *prefix,
                          const char *key_marker, const char *upload_id_marker, size_t max,
                          stor_upload_t **uploads_p, size_t *n_p, int *more_p)
{
    rstor_t *st = (rstor_t *)st_;
    stor_bucket_t b;
    stor_status_t s = rs_bucket_lookup(st, bucket, &b);
    if (s != STOR_OK)
        return s;
    char oid[RSTOR_OID_MAX];
    rs_uploads_oid(b.id, oid);
    int rc = upkeys_ready(st, oid);
    if (rc < 0)
        return rc == -ENOENT ? STOR_ERR_NO_BUCKET : rs_fail("index uploads", oid, rc);
    const char *pfx = prefix ? prefix : "";
    const char *from = pfx;
    if (key_marker && strcmp(key_marker, pfx) > 0)
        from = key_marker;
    buf_t after, filter;
    buf_init(&after, 3 * S3R_MAX_KEY_BYTES + 2 * STOR_UPLOAD_ID_LEN);
    buf_init(&filter, 3 * S3R_MAX_KEY_BYTES);
    char nul = '\0';
    if (upkey_text(&after, from, strlen(from)) != 0 || buf_append(&after, &nul, 1) != 0 ||
        upkey_text(&filter, pfx, strlen(pfx)) != 0 || buf_append(&filter, &nul, 1) != 0) {
        buf_free(&after);
        buf_free(&filter);
        return STOR_ERR_NOMEM; /* a key of more than S3R_MAX_KEY_BYTES, or no memory */
    }
    stor_upload_t *arr = NULL;
    size_t n = 0, cap = 0;
    unsigned char more = 1;
    while (more && n <= max && s == STOR_OK) {
        rados_read_op_t op = rados_create_read_op();
        if (!op) {
            s = STOR_ERR_NOMEM;
            break;
        }
        rados_omap_iter_t it = NULL;
        int prval = 0;
        more = 0;
        size_t want = max + 1 - n + 1; /* +1: the marker's entry itself, usually */
        rados_read_op_omap_get_vals2(op, after.data, filter.data,
                                     want < RSTOR_OMAP_BATCH ? want : RSTOR_OMAP_BATCH, &it, &more,
                                     &prval);
        rc = rados_read_op_operate(op, st->index, oid, 0);
        rados_release_read_op(op);
        if (rc == 0)
            rc = prval;
        if (rc < 0) {
            if (it)
                rados_omap_get_end(it);
            s = rc == -ENOENT ? STOR_ERR_NO_BUCKET : rs_fail("list uploads", oid, rc);
            break;
        }
        char *k, *v;
        size_t kl, vl;
        while (n <= max && rados_omap_get_next2(it, &k, &v, &kl, &vl) == 0 && k) {
            if (list_entry(k, kl, v, vl, prefix, key_marker, upload_id_marker, &arr, &n, &cap)) {
                log_error("storage: bad upload key-index entry in %s", oid);
                s = STOR_ERR_IO;
                break;
            }
            buf_reset(&after);
            if (buf_append(&after, k, kl) != 0 || buf_append(&after, &nul, 1) != 0) {
                s = STOR_ERR_NOMEM;
                break;
            }
        }
        rados_omap_get_end(it);
    }
    buf_free(&after);
    buf_free(&filter);
    if (s != STOR_OK) {
        stor_uploads_free(arr, n);
        return s;
    }
    n = stor_uploads_page(arr, n, max, more_p);
    *uploads_p = arr;
    *n_p = n;
    return STOR_OK;
}
