/* Multipart uploads: create, check, part commit, list parts, complete,
 * abort and list uploads. */
#include <lmdb.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/array.h"
#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/s3r_limits.h"
#include "storage/local/local_internal.h"

/* ==== Multipart uploads ================================================== */

#define PART_KEY_LEN (STOR_UPLOAD_ID_LEN + 4)

static int valid_upload_id(const char *id)
{
    return id && strlen(id) == STOR_UPLOAD_ID_LEN && local_is_hex(id, STOR_UPLOAD_ID_LEN);
}

static size_t upload_key(const char *bucket, const char *upload_id, uint8_t *out)
{
    size_t blen = strlen(bucket);
    memcpy(out, bucket, blen);
    out[blen] = 0;
    memcpy(out + blen + 1, upload_id, STOR_UPLOAD_ID_LEN);
    return blen + 1 + STOR_UPLOAD_ID_LEN;
}

static void part_key(const char *upload_id, uint32_t number, uint8_t out[PART_KEY_LEN])
{
    memcpy(out, upload_id, STOR_UPLOAD_ID_LEN);
    out[STOR_UPLOAD_ID_LEN + 0] = (uint8_t)(number >> 24);
    out[STOR_UPLOAD_ID_LEN + 1] = (uint8_t)(number >> 16);
    out[STOR_UPLOAD_ID_LEN + 2] = (uint8_t)(number >> 8);
    out[STOR_UPLOAD_ID_LEN + 3] = (uint8_t)number;
}

/* ---- the uploads in key order ---------------------------------------------
 * db_uploads is keyed by (bucket, upload id), random ids: no order of keys.
 * db_upload_keys keeps each upload under its key's index key (local_ikey_*,
 * the objects' scheme) with the upload id as a sorted duplicate value, so a
 * listing from a key marker reads only what it lists. */

/* Adds (add 1) or removes (add 0) the upload id of bucket/key. */
static stor_status_t upload_key_index(lstor_t *st, MDB_txn *txn, const char *bucket,
                                      const char *key, size_t klen, const char *upload_id, int add)
{
    uint8_t ik[LOCAL_IKEY_MAX];
    MDB_val k = {local_ikey_encode(bucket, strlen(bucket), key, klen, ik), ik};
    MDB_val v = {STOR_UPLOAD_ID_LEN, (void *)upload_id};
    int rc = add ? mdb_put(txn, st->db_upload_keys, &k, &v, MDB_NODUPDATA)
                 : mdb_del(txn, st->db_upload_keys, &k, &v);
    if (rc == MDB_NOTFOUND && !add)
        return STOR_OK;
    return rc ? local_mdb_fail("upload key index", rc) : STOR_OK;
}

stor_status_t local_mpu_index_build(lstor_t *st, MDB_txn *txn)
{
    MDB_stat keys, ups;
    int rc = mdb_stat(txn, st->db_upload_keys, &keys);
    if (!rc)
        rc = mdb_stat(txn, st->db_uploads, &ups);
    if (rc)
        return local_mdb_fail("upload key index", rc);
    if (keys.ms_entries || !ups.ms_entries)
        return STOR_OK;
    MDB_cursor *cur;
    if ((rc = mdb_cursor_open(txn, st->db_uploads, &cur)) != 0)
        return local_mdb_fail("cursor", rc);
    stor_status_t s = STOR_OK;
    MDB_val k, v;
    size_t n = 0;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && s == STOR_OK;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        const char *bucket = k.mv_data;
        size_t blen = strnlen(bucket, k.mv_size);
        stor_upload_rec_t r;
        if (blen + 1 + STOR_UPLOAD_ID_LEN != k.mv_size ||
            stor_rec_decode_upload(v.mv_data, v.mv_size, &r) != STOR_OK) {
            log_error("storage: corrupt upload record at open");
            s = STOR_ERR_IO;
            break;
        }
        char id[STOR_UPLOAD_ID_LEN];
        memcpy(id, bucket + blen + 1, STOR_UPLOAD_ID_LEN);
        /* The table starts empty and LMDB keeps at least two entries a
         * page: at most a leaf and a branch page per entry are new. */
        s = local_wr_grow(st, 2 * (size_t)keys.ms_psize);
        if (s == STOR_OK)
            s = upload_key_index(st, txn, bucket, r.key, r.key_len, id, 1);
        stor_upload_rec_free(&r);
        n++;
    }
    mdb_cursor_close(cur);
    if (s == STOR_OK && rc != MDB_NOTFOUND)
        s = local_mdb_fail("upload key index", rc);
    if (s == STOR_OK)
        log_info("storage: indexed %zu multipart uploads by key", n);
    return s;
}

/* Finds the upload in txn and checks it belongs to bucket/key. rec may be
 * NULL when only existence matters. */
static stor_status_t upload_get(lstor_t *st, MDB_txn *txn, const char *bucket, const char *key,
                                const char *upload_id, stor_upload_rec_t *rec, MDB_val *k_out,
                                uint8_t *kbuf)
{
    if (!local_valid_bucket(bucket) || !valid_upload_id(upload_id))
        return STOR_ERR_NO_UPLOAD;
    MDB_val k = {upload_key(bucket, upload_id, kbuf), kbuf}, v;
    if (k_out)
        *k_out = k;
    int rc = mdb_get(txn, st->db_uploads, &k, &v);
    if (rc == MDB_NOTFOUND)
        return STOR_ERR_NO_UPLOAD;
    if (rc)
        return local_mdb_fail("upload lookup", rc);
    stor_upload_rec_t r;
    stor_status_t s = stor_rec_decode_upload(v.mv_data, v.mv_size, &r);
    if (s != STOR_OK) {
        log_error("storage: corrupt upload record %s", upload_id);
        return s;
    }
    if (stor_keycmp(r.key, r.key_len, key, strlen(key)) != 0) {
        stor_upload_rec_free(&r);
        return STOR_ERR_NO_UPLOAD;
    }
    if (rec)
        *rec = r;
    else
        stor_upload_rec_free(&r);
    return STOR_OK;
}

stor_status_t local_mpu_create(stor_t *st_, const stor_bucket_t *bkt, const char *key,
                               const stor_meta_t *meta, char upload_id[STOR_UPLOAD_ID_LEN + 1])
{
    lstor_t *st = (lstor_t *)st_;
    const char *bucket = bkt->name;
    char id[STOR_UPLOAD_ID_LEN + 1];
    if (hash_random_hex(STOR_UPLOAD_ID_LEN / 2, id) != 0)
        return STOR_ERR_IO;
    stor_meta_t m = {0};
    if (meta) {
        m = *meta;
        m.size = 0;
        m.etag[0] = '\0';
        m.parts_count = 0;
        m.part_sizes = NULL;
    }
    int64_t now = clock_wall_ms();
    m.mtime_ms = now;
    buf_t b;
    buf_init(&b, (size_t)-1 / 2);
    if (stor_rec_encode_upload(&b, key, strlen(key), now, &m) != 0 || b.len > STOR_REC_MAX) {
        stor_status_t s = b.len > STOR_REC_MAX ? STOR_ERR_TOO_LARGE : STOR_ERR_NOMEM;
        buf_free(&b);
        return s;
    }
    MDB_txn *txn;
    stor_status_t s = local_wr_begin(st, &txn);
    if (s == STOR_OK) {
        s = local_bucket_check(st, txn, bucket, bkt->id);
        if (s == STOR_OK) {
            uint8_t kbuf[STOR_BUCKET_MAX + 2 + STOR_UPLOAD_ID_LEN];
            MDB_val k = {upload_key(bucket, id, kbuf), kbuf}, v = {b.len, b.data};
            int rc = mdb_put(txn, st->db_uploads, &k, &v, MDB_NOOVERWRITE);
            if (rc)
                s = local_mdb_fail("upload put", rc);
        }
        if (s == STOR_OK)
            s = upload_key_index(st, txn, bucket, key, strlen(key), id, 1);
        if (s == STOR_OK)
            s = local_wr_commit(st, txn);
        else
            mdb_txn_abort(txn);
    }
    buf_free(&b);
    if (s == STOR_OK)
        memcpy(upload_id, id, sizeof id);
    return s;
}

stor_status_t local_mpu_check(stor_t *st_, const char *bucket, const char *key,
                              const char *upload_id, stor_meta_t *meta_p)
{
    lstor_t *st = (lstor_t *)st_;
    MDB_txn *txn;
    stor_status_t s = local_rd_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    uint8_t kbuf[STOR_BUCKET_MAX + 2 + STOR_UPLOAD_ID_LEN];
    stor_upload_rec_t rec;
    s = upload_get(st, txn, bucket, key, upload_id, meta_p ? &rec : NULL, NULL, kbuf);
    mdb_txn_abort(txn);
    if (s == STOR_OK && meta_p) {
        *meta_p = rec.meta;
        memset(&rec.meta, 0, sizeof rec.meta);
        stor_upload_rec_free(&rec);
    }
    return s;
}

/* A part's commit as a change of a group (local_group.c): the upload must
 * still be there, in the writer's bucket; the part's record replaces any
 * earlier one of its number (whose file the caller drops). */
typedef struct part_change {
    lwriter_t *w;
    const char *key, *upload_id;
    uint32_t number;
    const buf_t *enc;
    uint8_t old_id[STOR_ID_LEN]; /* the replaced part's file, when had_old */
    int had_old;
} part_change_t;

static stor_status_t part_apply(lstor_t *st, MDB_txn *txn, void *arg, int *touched)
{
    part_change_t *p = arg;
    p->had_old = 0;
    uint8_t kbuf[STOR_BUCKET_MAX + 2 + STOR_UPLOAD_ID_LEN];
    stor_status_t s = upload_get(st, txn, p->w->bucket, p->key, p->upload_id, NULL, NULL, kbuf);
    /* The upload pins its bucket (stor_bucket_delete refuses a bucket with
     * uploads), but the writer's bucket is the one that was authorized. */
    if (s == STOR_OK)
        s = local_bucket_check(st, txn, p->w->bucket, p->w->bucket_id);
    if (s != STOR_OK)
        return s;
    uint8_t pk[PART_KEY_LEN];
    part_key(p->upload_id, p->number, pk);
    MDB_val k = {PART_KEY_LEN, pk}, v;
    int rc = mdb_get(txn, st->db_parts, &k, &v);
    if (rc == 0) {
        stor_part_rec_t old;
        if (stor_rec_decode_part(v.mv_data, v.mv_size, &old) == STOR_OK) {
            memcpy(p->old_id, old.id, STOR_ID_LEN);
            stor_part_free_fields(&old.part);
            p->had_old = 1;
        } else {
            log_error("storage: corrupt part record %s/%u", p->upload_id, p->number);
        }
    } else if (rc != MDB_NOTFOUND) {
        return local_mdb_fail("part lookup", rc);
    }
    *touched = 1;
    v = (MDB_val){p->enc->len, p->enc->data};
    rc = local_wr_put(st, txn, st->db_parts, &k, &v, 0);
    return rc ? local_mdb_fail("part put", rc) : STOR_OK;
}

stor_status_t local_part_commit(stor_writer_t *w_, const char *key, const char *upload_id,
                                stor_part_t *part)
{
    lwriter_t *w = (lwriter_t *)w_;
    lstor_t *st = w->st;
    stor_status_t s = local_writer_seal(w);
    local_change_t c = {.applied = 0}; /* applied: the index references the file */
    buf_t b;
    buf_init(&b, STOR_REC_MAX);
    if (s != STOR_OK)
        goto out;
    if (part->number < 1 || part->number > S3R_MAX_PART_NUMBER) {
        s = STOR_ERR_INVALID_PART;
        goto out;
    }
    part->size = w->size;
    part->mtime_ms = clock_wall_ms();
    if (stor_rec_encode_part(&b, part, w->id) != 0) {
        s = STOR_ERR_NOMEM;
        goto out;
    }
    part_change_t p = {
        .w = w, .key = key, .upload_id = upload_id, .number = part->number, .enc = &b};
    c.apply = part_apply;
    c.arg = &p;
    c.new_file = w->id;
    s = local_group_commit(st, &c);
    if (s == STOR_OK && p.had_old)
        local_drop_file(st, p.old_id);
out:
    buf_free(&b);
    local_writer_free(w, c.applied);
    return s;
}

/* Loads every part record of an upload in number order. */
static stor_status_t load_parts(lstor_t *st, MDB_txn *txn, const char *upload_id, uint32_t after,
                                stor_part_rec_t **out_p, size_t *n_p)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, st->db_parts, &cur);
    if (rc)
        return local_mdb_fail("cursor", rc);
    stor_part_rec_t *arr = NULL;
    size_t n = 0, cap = 0;
    stor_status_t s = STOR_OK;
    uint8_t pk[PART_KEY_LEN];
    part_key(upload_id, after + 1, pk);
    MDB_val k = {PART_KEY_LEN, pk}, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != PART_KEY_LEN || memcmp(k.mv_data, upload_id, STOR_UPLOAD_ID_LEN) != 0)
            break;
        if (array_grow(&arr, &cap, n, sizeof *arr, 16) != 0) {
            s = STOR_ERR_NOMEM;
            break;
        }
        s = stor_rec_decode_part(v.mv_data, v.mv_size, &arr[n]);
        if (s != STOR_OK) {
            log_error("storage: corrupt part record in upload %s", upload_id);
            break;
        }
        n++;
    }
    if (s == STOR_OK && rc != 0 && rc != MDB_NOTFOUND)
        s = local_mdb_fail("parts", rc);
    mdb_cursor_close(cur);
    if (s != STOR_OK) {
        stor_part_recs_free(arr, n);
        return s;
    }
    *out_p = arr;
    *n_p = n;
    return STOR_OK;
}

/* Deletes every part record of an upload (in txn). */
static stor_status_t del_parts(lstor_t *st, MDB_txn *txn, const char *upload_id)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, st->db_parts, &cur);
    if (rc)
        return local_mdb_fail("cursor", rc);
    uint8_t pk[PART_KEY_LEN];
    part_key(upload_id, 0, pk);
    for (;;) {
        MDB_val k = {PART_KEY_LEN, pk}, v;
        rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
        if (rc)
            break;
        if (k.mv_size != PART_KEY_LEN || memcmp(k.mv_data, upload_id, STOR_UPLOAD_ID_LEN) != 0)
            break;
        if ((rc = mdb_cursor_del(cur, 0)) != 0)
            break;
    }
    mdb_cursor_close(cur);
    if (rc != 0 && rc != MDB_NOTFOUND)
        return local_mdb_fail("parts delete", rc);
    return STOR_OK;
}

/* Positions cur at the first record whose key starts with bucket's name and
 * its NUL (how db_uploads and db_upload_keys keys begin): 0 with *k and *v
 * set, MDB_NOTFOUND when the bucket has none left, or LMDB's error. */
static int bucket_first(MDB_cursor *cur, const char *bucket, MDB_val *k, MDB_val *v)
{
    size_t plen = strlen(bucket) + 1;
    *k = (MDB_val){plen, (void *)bucket};
    int rc = mdb_cursor_get(cur, k, v, MDB_SET_RANGE);
    if (rc == 0 && (k->mv_size < plen || memcmp(k->mv_data, bucket, plen) != 0))
        rc = MDB_NOTFOUND;
    return rc;
}

/* Removes every entry of bucket from db_upload_keys. */
static stor_status_t upload_keys_drop(lstor_t *st, MDB_txn *txn, const char *bucket)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, st->db_upload_keys, &cur);
    if (rc)
        return local_mdb_fail("cursor", rc);
    MDB_val k, v;
    while ((rc = bucket_first(cur, bucket, &k, &v)) == 0)
        if ((rc = mdb_cursor_del(cur, MDB_NODUPDATA)) != 0)
            break;
    mdb_cursor_close(cur);
    if (rc != 0 && rc != MDB_NOTFOUND)
        return local_mdb_fail("upload key index delete", rc);
    return STOR_OK;
}

/* What deleting records of the upload tables can add to data.mdb, for the
 * writable map's check (local_map.h): *per_rec for each record, and *cap
 * for any number. A deletion copies on write its leaf, a sibling a
 * rebalance merges it with, and their branch pages, and can split a branch
 * page whose separator key grows: at most 2 x depth pages. No page is
 * copied twice in one transaction, so at most the tables' pages plus as
 * many splits: twice the tables. */
static int drop_growth(lstor_t *st, MDB_txn *txn, size_t *per_rec, size_t *cap)
{
    const MDB_dbi dbis[] = {st->db_uploads, st->db_parts, st->db_upload_keys};
    size_t depth = 0, pages = 0;
    for (size_t i = 0; i < sizeof dbis / sizeof *dbis; i++) {
        MDB_stat ms;
        int rc = mdb_stat(txn, dbis[i], &ms);
        if (rc)
            return rc;
        depth = ms.ms_depth > depth ? ms.ms_depth : depth;
        pages += ms.ms_branch_pages + ms.ms_leaf_pages;
        *per_rec = ms.ms_psize;
    }
    *cap = 2 * pages * *per_rec;
    *per_rec *= 2 * depth;
    return 0;
}

stor_status_t local_mpu_drop_bucket(lstor_t *st, MDB_txn *txn, const char *bucket,
                                    stor_seg_t **ids_p, size_t *n_p)
{
    *ids_p = NULL;
    *n_p = 0;
    /* The uploads of a bucket have no bound: more than the reserve
     * local_wr_begin checked may be written here. */
    size_t per_rec = 0, cap = 0;
    int rc = st->map ? drop_growth(st, txn, &per_rec, &cap) : 0;
    if (rc)
        return local_mdb_fail("stat", rc);
    MDB_cursor *cur;
    if ((rc = mdb_cursor_open(txn, st->db_uploads, &cur)) != 0)
        return local_mdb_fail("cursor", rc);
    size_t blen = strlen(bucket);
    stor_seg_t *ids = NULL;
    size_t n = 0;
    stor_status_t s = STOR_OK;
    for (;;) {
        MDB_val k, v;
        if ((rc = bucket_first(cur, bucket, &k, &v)) != 0)
            break;
        if (k.mv_size != blen + 1 + STOR_UPLOAD_ID_LEN)
            break;
        char upload_id[STOR_UPLOAD_ID_LEN + 1];
        memcpy(upload_id, (const uint8_t *)k.mv_data + blen + 1, STOR_UPLOAD_ID_LEN);
        upload_id[STOR_UPLOAD_ID_LEN] = '\0';
        stor_part_rec_t *recs = NULL;
        size_t nr = 0;
        if ((s = load_parts(st, txn, upload_id, 0, &recs, &nr)) != STOR_OK)
            break;
        stor_seg_t *grown = nr ? realloc(ids, (n + nr) * sizeof *ids) : ids;
        if (nr && !grown) {
            stor_part_recs_free(recs, nr);
            s = STOR_ERR_NOMEM;
            break;
        }
        ids = grown;
        for (size_t i = 0; i < nr; i++) {
            memcpy(ids[n].id, recs[i].id, STOR_ID_LEN);
            ids[n++].size = recs[i].part.size;
        }
        stor_part_recs_free(recs, nr);
        /* Its parts, its record and its entry in db_upload_keys. */
        size_t more = (nr + 2) * per_rec < cap ? (nr + 2) * per_rec : cap;
        cap -= more;
        if ((s = local_wr_grow(st, more)) != STOR_OK)
            break;
        if ((s = del_parts(st, txn, upload_id)) != STOR_OK)
            break;
        if ((rc = mdb_cursor_del(cur, 0)) != 0)
            break;
    }
    mdb_cursor_close(cur);
    if (s == STOR_OK && rc != 0 && rc != MDB_NOTFOUND)
        s = local_mdb_fail("uploads delete", rc);
    if (s == STOR_OK)
        s = upload_keys_drop(st, txn, bucket);
    if (s != STOR_OK) {
        free(ids);
        return s;
    }
    *ids_p = ids;
    *n_p = n;
    return STOR_OK;
}

stor_status_t local_mpu_list_parts(stor_t *st_, const char *bucket, const char *key,
                                   const char *upload_id, uint32_t part_marker,
                                   stor_part_t **parts_p, size_t *n_p)
{
    lstor_t *st = (lstor_t *)st_;
    MDB_txn *txn;
    stor_status_t s = local_rd_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    uint8_t kbuf[STOR_BUCKET_MAX + 2 + STOR_UPLOAD_ID_LEN];
    stor_part_rec_t *recs = NULL;
    size_t n = 0;
    s = upload_get(st, txn, bucket, key, upload_id, NULL, NULL, kbuf);
    if (s == STOR_OK && part_marker < UINT32_MAX)
        s = load_parts(st, txn, upload_id, part_marker, &recs, &n);
    mdb_txn_abort(txn);
    if (s != STOR_OK)
        return s;
    stor_part_t *parts = NULL;
    if (n) {
        parts = malloc(n * sizeof *parts);
        if (!parts) {
            stor_part_recs_free(recs, n);
            return STOR_ERR_NOMEM;
        }
        for (size_t i = 0; i < n; i++)
            parts[i] = recs[i].part; /* moves the strings */
    }
    free(recs);
    *parts_p = parts;
    *n_p = n;
    return STOR_OK;
}

stor_status_t local_mpu_complete(stor_t *st_, const stor_bucket_t *bkt, const char *key,
                                 const char *upload_id, const stor_complete_part_t *parts, size_t n,
                                 const stor_precond_t *cond, stor_meta_t *meta_p)
{
    lstor_t *st = (lstor_t *)st_;
    const char *bucket = bkt->name;
    stor_status_t s = stor_mpu_check_list(parts, n);
    if (s != STOR_OK)
        return s;
    MDB_txn *txn;
    s = local_wr_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    uint8_t kbuf[STOR_BUCKET_MAX + 2 + STOR_UPLOAD_ID_LEN];
    stor_upload_rec_t up;
    stor_part_rec_t *recs = NULL;
    size_t n_recs = 0;
    stor_seg_t *segs = NULL;
    uint8_t *used = NULL;
    stor_obj_rec_t old;
    int had_old = 0, have_up = 0;
    stor_meta_t m;
    memset(&m, 0, sizeof m);
    MDB_val uk;
    buf_t rec = {0};

    s = local_bucket_check(st, txn, bucket, bkt->id);
    if (s == STOR_OK)
        s = upload_get(st, txn, bucket, key, upload_id, &up, &uk, kbuf);
    if (s != STOR_OK)
        goto out;
    have_up = 1;
    if ((s = load_parts(st, txn, upload_id, 0, &recs, &n_recs)) != STOR_OK)
        goto out;
    used = calloc(n_recs ? n_recs : 1, 1);
    m = up.meta;
    memset(&up.meta, 0, sizeof up.meta);
    if (!used) {
        s = STOR_ERR_NOMEM;
        goto out;
    }
    if ((s = stor_mpu_assemble(parts, n, recs, n_recs, &m, cond, &segs, used)) != STOR_OK)
        goto out;
    free(m.version);
    free(m.delete_marker);
    m.version = m.delete_marker = NULL;
    s = stor_encode_object(&rec, key, &m, segs, (uint32_t)n);
    stor_obj_rec_t nrec = {.meta = m, .segs = segs, .n_segs = (uint32_t)n};
    if (s == STOR_OK)
        s = local_put_object(st, txn, bucket, bkt->id, key, &rec, &nrec, cond, &old, &had_old,
                             NULL);
    m.version = nrec.meta.version; /* set by a versioned commit */
    if (s == STOR_OK)
        s = del_parts(st, txn, upload_id);
    if (s == STOR_OK) {
        int rc = mdb_del(txn, st->db_uploads, &uk, NULL);
        if (rc)
            s = local_mdb_fail("upload delete", rc);
    }
    if (s == STOR_OK)
        s = upload_key_index(st, txn, bucket, key, strlen(key), upload_id, 0);
    if (s != STOR_OK)
        goto out;
    s = local_wr_commit(st, txn);
    txn = NULL;
    if (s != STOR_OK)
        goto out;

    local_usage_change(st, 1 - (had_old && !old.meta.delete_marker),
                       (int64_t)m.size - (had_old ? (int64_t)old.meta.size : 0));
    if (had_old)
        for (uint32_t i = 0; i < old.n_segs; i++)
            local_drop_file(st, old.segs[i].id);
    for (size_t i = 0; i < n_recs; i++)
        if (!used[i])
            local_drop_file(st, recs[i].id);
    *meta_p = m;
    memset(&m, 0, sizeof m);
out:
    if (txn)
        mdb_txn_abort(txn);
    if (had_old)
        stor_obj_rec_free(&old);
    buf_free(&rec);
    stor_part_recs_free(recs, n_recs);
    free(segs);
    free(used);
    stor_meta_free(&m);
    if (have_up)
        stor_upload_rec_free(&up);
    return s;
}

stor_status_t local_mpu_abort(stor_t *st_, const stor_bucket_t *bucket, const char *key,
                              const char *upload_id)
{
    lstor_t *st = (lstor_t *)st_;
    MDB_txn *txn;
    stor_status_t s = local_wr_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    uint8_t kbuf[STOR_BUCKET_MAX + 2 + STOR_UPLOAD_ID_LEN];
    MDB_val uk;
    stor_part_rec_t *recs = NULL;
    size_t n = 0;
    s = local_bucket_check(st, txn, bucket->name, bucket->id);
    if (s == STOR_OK)
        s = upload_get(st, txn, bucket->name, key, upload_id, NULL, &uk, kbuf);
    if (s == STOR_OK)
        s = load_parts(st, txn, upload_id, 0, &recs, &n);
    if (s == STOR_OK)
        s = del_parts(st, txn, upload_id);
    if (s == STOR_OK) {
        int rc = mdb_del(txn, st->db_uploads, &uk, NULL);
        if (rc)
            s = local_mdb_fail("upload delete", rc);
    }
    if (s == STOR_OK)
        s = upload_key_index(st, txn, bucket->name, key, strlen(key), upload_id, 0);
    if (s == STOR_OK) {
        s = local_wr_commit(st, txn);
    } else {
        mdb_txn_abort(txn);
    }
    if (s == STOR_OK)
        for (size_t i = 0; i < n; i++)
            local_drop_file(st, recs[i].id);
    stor_part_recs_free(recs, n);
    return s;
}

/* Appends bucket's upload id to *arr_p (n_p, cap_p) if the listing wants
 * it (stor_upload_listed): its key, initiation time, owner and initiator
 * come from its upload record. */
static stor_status_t list_one(lstor_t *st, MDB_txn *txn, const char *bucket, const char *id,
                              const char *prefix, const char *key_marker, const char *id_marker,
                              stor_upload_t **arr_p, size_t *n_p, size_t *cap_p)
{
    uint8_t kbuf[STOR_BUCKET_MAX + 2 + STOR_UPLOAD_ID_LEN];
    MDB_val k = {upload_key(bucket, id, kbuf), kbuf}, v;
    int rc = mdb_get(txn, st->db_uploads, &k, &v);
    stor_upload_rec_t r;
    if (rc == MDB_NOTFOUND || (rc == 0 && stor_rec_decode_upload(v.mv_data, v.mv_size, &r))) {
        log_error("storage: the key index names upload %s of %s, which has no readable record", id,
                  bucket);
        return STOR_ERR_IO;
    }
    if (rc)
        return local_mdb_fail("upload list", rc);
    if (!stor_upload_listed(r.key, id, prefix, key_marker, id_marker)) {
        stor_upload_rec_free(&r);
        return STOR_OK;
    }
    if (array_grow(arr_p, cap_p, *n_p, sizeof **arr_p, 16) != 0) {
        stor_upload_rec_free(&r);
        return STOR_ERR_NOMEM;
    }
    stor_upload_t *u = &(*arr_p)[(*n_p)++];
    u->key = r.key;
    r.key = NULL;
    memcpy(u->upload_id, id, STOR_UPLOAD_ID_LEN + 1);
    u->initiated_ms = r.initiated_ms;
    stor_upload_take_principals(u, &r.meta);
    stor_upload_rec_free(&r);
    return STOR_OK;
}

/* A bounded walk of db_upload_keys: from the later of the prefix and the key
 * marker, it collects max + 1 listed uploads and stops (past the prefix, or
 * at the end of the bucket, sooner), so its work does not grow with the
 * bucket's uploads. Index order is key order except inside a block of long
 * keys sharing their first P bytes (local_internal.h), so the walk finishes
 * such a block before it stops, and the page is sorted in memory. */
stor_status_t local_mpu_list(stor_t *st_, const char *bucket, const char *prefix,
                             const char *key_marker, const char *upload_id_marker, size_t max,
                             stor_upload_t **uploads_p, size_t *n_p, int *more_p)
{
    lstor_t *st = (lstor_t *)st_;
    MDB_txn *txn;
    MDB_cursor *cur = NULL;
    stor_status_t s = local_rd_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    stor_upload_t *arr = NULL;
    size_t n = 0, cap = 0;
    s = local_bucket_exists(st, txn, bucket);
    if (s != STOR_OK)
        goto out;
    int rc = mdb_cursor_open(txn, st->db_upload_keys, &cur);
    if (rc) {
        s = local_mdb_fail("cursor", rc);
        goto out;
    }
    const char *pfx = prefix ? prefix : "";
    size_t blen = strlen(bucket), plen = local_ikey_plen(blen), pfx_len = strlen(pfx);
    const char *from = pfx;
    if (key_marker && stor_keycmp(key_marker, strlen(key_marker), pfx, pfx_len) > 0)
        from = key_marker;
    uint8_t seek[LOCAL_IKEY_MAX], block[LOCAL_IKEY_MAX];
    int in_block = 0; /* the last entry was a long key; block holds its first P bytes */
    MDB_val k = {local_ikey_seek(bucket, blen, from, strlen(from), seek), seek}, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        const uint8_t *ik = k.mv_data;
        if (k.mv_size <= blen || memcmp(ik, bucket, blen) != 0 || ik[blen] != 0)
            break;
        const uint8_t *rest = ik + blen + 1;
        size_t rlen = k.mv_size - blen - 1;
        int is_long = local_ikey_is_long(rest, rlen, plen);
        size_t tlen = is_long ? plen : rlen; /* the key's bytes in the index key */
        size_t cl = tlen < pfx_len ? tlen : pfx_len;
        if (cl && memcmp(rest, pfx, cl) > 0)
            break; /* past every key with the prefix */
        int same_block = is_long && in_block && memcmp(rest, block, plen) == 0;
        if (n > max && !same_block)
            break;
        in_block = is_long;
        if (is_long)
            memcpy(block, rest, plen);
        if (v.mv_size != STOR_UPLOAD_ID_LEN) {
            log_error("storage: corrupt upload key index in %s", bucket);
            s = STOR_ERR_IO;
            goto out;
        }
        char id[STOR_UPLOAD_ID_LEN + 1];
        memcpy(id, v.mv_data, STOR_UPLOAD_ID_LEN);
        id[STOR_UPLOAD_ID_LEN] = '\0';
        s = list_one(st, txn, bucket, id, prefix, key_marker, upload_id_marker, &arr, &n, &cap);
        if (s != STOR_OK)
            goto out;
    }
    if (rc != 0 && rc != MDB_NOTFOUND) {
        s = local_mdb_fail("upload list", rc);
        goto out;
    }
    n = stor_uploads_page(arr, n, max, more_p);
out:
    if (cur)
        mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    if (s != STOR_OK) {
        stor_uploads_free(arr, n);
        return s;
    }
    *uploads_p = arr;
    *n_p = n;
    return STOR_OK;
}
