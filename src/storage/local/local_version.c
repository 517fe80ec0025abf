/* Versioning in the local backend (docs/storage.md, "Versioning"): the
 * versions table, the versioned commit of a new latest version (an object
 * or a delete marker), the removal of one version, lookups by version id
 * and the iterator ListObjectVersions walks.
 *
 * The latest version of a key, when it is an object, stays where an object
 * of an unversioned bucket is: under its index key in db_objects, so a GET,
 * HEAD or listing of the latest version reads exactly what it read before
 * versioning. Every other version (noncurrent objects, and every delete
 * marker) is in db_versions under `index key ‖ 0x00 ‖ be64(~seq)`: a key's
 * versions together, newest first, right after the index keys they extend
 * (S3 keys hold no NUL). seq orders a key's versions: each new version
 * takes one more than the largest its key has (0: an object written before
 * its bucket had versioning). Invariant, kept by every change here in one
 * write transaction: a key's db_objects entry, when there is one, is newer
 * than all its db_versions entries; when there is none, its newest
 * db_versions entry (if any) is a delete marker, the latest version. */
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"
#include "storage/local/local_internal.h"

#define VKEY_MAX (LOCAL_IKEY_MAX + 9)

/* ==== Version keys ======================================================= */

static size_t vkey_make(const MDB_val *ik, uint64_t seq, uint8_t *out)
{
    size_t n = ik->mv_size;
    memcpy(out, ik->mv_data, n);
    out[n] = 0;
    uint64_t inv = ~seq;
    for (int i = 0; i < 8; i++)
        out[n + 1 + i] = (uint8_t)(inv >> (56 - 8 * i));
    return n + 9;
}

/* 1 when vk is a version key of index key ik. */
static int vkey_of(const MDB_val *vk, const MDB_val *ik)
{
    return vk->mv_size == ik->mv_size + 9 && memcmp(vk->mv_data, ik->mv_data, ik->mv_size) == 0 &&
           ((const uint8_t *)vk->mv_data)[ik->mv_size] == 0;
}

static uint64_t vkey_seq(const MDB_val *vk)
{
    const uint8_t *p = (const uint8_t *)vk->mv_data + vk->mv_size - 8;
    uint64_t inv = 0;
    for (int i = 0; i < 8; i++)
        inv = inv << 8 | p[i];
    return ~inv;
}

/* The first (newest) version of ik at or after the cursor's position:
 * 1 found (k, v), 0 none, -1 error. */
static int ver_first(MDB_cursor *c, const MDB_val *ik, MDB_val *k, MDB_val *v)
{
    uint8_t buf[VKEY_MAX];
    k->mv_size = vkey_make(ik, UINT64_MAX, buf);
    k->mv_data = buf;
    int rc = mdb_cursor_get(c, k, v, MDB_SET_RANGE);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc) {
        local_mdb_fail("version lookup", rc);
        return -1;
    }
    return vkey_of(k, ik);
}

static int meta_is_null(const stor_meta_t *m)
{
    return stor_meta_is_version(m, "null");
}

/* Decodes a version record of key (checked: a hash collision between long
 * keys is an error, as in local_obj_get). */
static stor_status_t ver_decode(const MDB_val *v, const char *key, stor_obj_rec_t *rec)
{
    const char *rkey;
    size_t rklen;
    if (stor_rec_object_key(v->mv_data, v->mv_size, &rkey, &rklen) == STOR_OK &&
        stor_keycmp(rkey, rklen, key, strlen(key)) != 0) {
        log_error("storage: index key collision for version of %s", key);
        return STOR_ERR_IO;
    }
    stor_status_t s = stor_rec_decode_object(v->mv_data, v->mv_size, rec);
    if (s == STOR_ERR_IO)
        log_error("storage: corrupt version record for %s", key);
    return s;
}

/* Finds version vid of key (index key ik) in db_versions: its key into vk
 * (vkbuf holds it) and its record into rec. STOR_ERR_NO_VERSION when
 * absent. "null" is looked for among all the key's versions (there is at
 * most one); an id names its place (its first 16 digits are its seq). */
static stor_status_t ver_find(lstor_t *st, MDB_txn *txn, const MDB_val *ik, const char *key,
                              const char *vid, MDB_val *vk, uint8_t *vkbuf, stor_obj_rec_t *rec)
{
    if (strcmp(vid, "null") != 0) {
        stor_meta_t m = {.version = (char *)vid};
        vk->mv_size = vkey_make(ik, stor_version_seq(&m), vkbuf);
        vk->mv_data = vkbuf;
        MDB_val v;
        int rc = mdb_get(txn, st->db_versions, vk, &v);
        if (rc == MDB_NOTFOUND)
            return STOR_ERR_NO_VERSION;
        if (rc)
            return local_mdb_fail("version lookup", rc);
        stor_status_t s = ver_decode(&v, key, rec);
        if (s == STOR_OK && !stor_meta_is_version(&rec->meta, vid)) {
            stor_obj_rec_free(rec);
            s = STOR_ERR_NO_VERSION;
        }
        return s;
    }
    MDB_cursor *c;
    int rc = mdb_cursor_open(txn, st->db_versions, &c);
    if (rc)
        return local_mdb_fail("cursor", rc);
    MDB_val k, v;
    stor_status_t s = STOR_ERR_NO_VERSION;
    for (int r = ver_first(c, ik, &k, &v); r != 0; r = vkey_of(&k, ik)) {
        if (r < 0) {
            s = STOR_ERR_IO;
            break;
        }
        stor_status_t d = ver_decode(&v, key, rec);
        if (d != STOR_OK) {
            s = d;
            break;
        }
        if (meta_is_null(&rec->meta)) {
            memcpy(vkbuf, k.mv_data, k.mv_size);
            vk->mv_size = k.mv_size;
            vk->mv_data = vkbuf;
            s = STOR_OK;
            break;
        }
        stor_obj_rec_free(rec);
        rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
        if (rc == MDB_NOTFOUND)
            break;
        if (rc) {
            s = local_mdb_fail("version scan", rc);
            break;
        }
    }
    mdb_cursor_close(c);
    return s;
}

/* ==== Lookups ============================================================ */

stor_status_t local_ver_lookup(lstor_t *st, MDB_txn *txn, const MDB_val *ik, const char *key,
                               const char *vid, stor_obj_rec_t *rec)
{
    if (!vid) {
        MDB_cursor *c;
        int rc = mdb_cursor_open(txn, st->db_versions, &c);
        if (rc)
            return local_mdb_fail("cursor", rc);
        MDB_val k, v;
        int r = ver_first(c, ik, &k, &v);
        stor_status_t s = r < 0 ? STOR_ERR_IO : r == 0 ? STOR_ERR_NO_KEY : ver_decode(&v, key, rec);
        mdb_cursor_close(c);
        return s;
    }
    uint8_t vkbuf[VKEY_MAX];
    MDB_val vk;
    return ver_find(st, txn, ik, key, vid, &vk, vkbuf, rec);
}

/* ==== Changes ============================================================ */

/* Copies the value at k in db into b (initialised here; the caller frees
 * it): LMDB's pointer is valid only until the transaction's next write. */
static stor_status_t val_copy(MDB_txn *txn, MDB_dbi db, const MDB_val *k, buf_t *b)
{
    MDB_val v;
    buf_init(b, (size_t)-1 / 2);
    int rc = mdb_get(txn, db, (MDB_val *)k, &v);
    if (rc)
        return local_mdb_fail("record copy", rc);
    return buf_append(b, v.mv_data, v.mv_size) == 0 ? STOR_OK : STOR_ERR_NOMEM;
}

/* Moves the record at k from db `from` to key nk of db `to`. Its copy is
 * new pages past what a change counts for (a multipart object's record is
 * up to STOR_REC_MAX, and a group holds LOCAL_GROUP_MAX changes): asked
 * for first (local_wr_grow). */
static stor_status_t rec_move(lstor_t *st, MDB_txn *txn, MDB_dbi from, const MDB_val *k, MDB_dbi to,
                              const MDB_val *nk)
{
    buf_t b;
    stor_status_t s = val_copy(txn, from, k, &b);
    if (s == STOR_OK)
        s = local_wr_grow(st, b.len);
    if (s == STOR_OK) {
        MDB_val v = {b.len, b.data};
        int rc = local_wr_del(st, txn, from, (MDB_val *)k, NULL);
        if (!rc)
            rc = local_wr_put(st, txn, to, (MDB_val *)nk, &v, 0);
        if (rc)
            s = local_mdb_fail("version move", rc);
    }
    buf_free(&b);
    return s;
}

/* The largest seq among key ik's versions (its current record cur, when
 * had_cur, included); -1 on error. */
static int newest_seq(lstor_t *st, MDB_txn *txn, const MDB_val *ik, const stor_obj_rec_t *cur,
                      int had_cur, uint64_t *seq_p)
{
    *seq_p = had_cur ? stor_version_seq(&cur->meta) : 0;
    MDB_cursor *c;
    if (mdb_cursor_open(txn, st->db_versions, &c))
        return -1;
    MDB_val k, v;
    int r = ver_first(c, ik, &k, &v);
    if (r > 0 && vkey_seq(&k) > *seq_p)
        *seq_p = vkey_seq(&k);
    mdb_cursor_close(c);
    return r < 0 ? -1 : 0;
}

stor_status_t local_ver_push(lstor_t *st, MDB_txn *txn, const MDB_val *ik, const char *key,
                             int state, stor_obj_rec_t *cur, int had_cur, stor_obj_rec_t *nrec,
                             stor_obj_rec_t *old, int *had_old)
{
    *had_old = 0;
    uint64_t seq;
    if (newest_seq(st, txn, ik, cur, had_cur, &seq) != 0)
        return STOR_ERR_IO;
    if (seq == UINT64_MAX)
        return STOR_ERR_IO;
    seq++;
    char ver[STOR_VERSION_ID_LEN + 1];
    snprintf(ver, sizeof ver, "%016llx", (unsigned long long)seq);
    if (state == STOR_VERSIONING_ENABLED) {
        if (hash_random_hex(8, ver + 16) != 0)
            return STOR_ERR_IO;
    }
    char *vdup = strdup(ver);
    if (!vdup)
        return STOR_ERR_NOMEM;
    free(nrec->meta.version);
    nrec->meta.version = vdup;

    stor_status_t s = STOR_OK;
    uint8_t vkbuf[VKEY_MAX];
    MDB_val vk;
    int marker = (nrec->meta.delete_marker != NULL);
    if (had_cur && state == STOR_VERSIONING_SUSPENDED && meta_is_null(&cur->meta)) {
        /* The new null version replaces the current one in place. */
        if (marker) {
            int rc = local_wr_del(st, txn, st->db_objects, (MDB_val *)ik, NULL);
            if (rc)
                return local_mdb_fail("object delete", rc);
        }
        *old = *cur;
        memset(cur, 0, sizeof *cur);
        *had_old = 1;
    } else {
        if (had_cur) {
            vk.mv_size = vkey_make(ik, stor_version_seq(&cur->meta), vkbuf);
            vk.mv_data = vkbuf;
            if ((s = rec_move(st, txn, st->db_objects, ik, st->db_versions, &vk)) != STOR_OK)
                return s;
        }
        if (state == STOR_VERSIONING_SUSPENDED) {
            s = ver_find(st, txn, ik, key, "null", &vk, vkbuf, old);
            if (s == STOR_OK) {
                *had_old = 1;
                int rc = local_wr_del(st, txn, st->db_versions, &vk, NULL);
                if (rc)
                    return local_mdb_fail("version delete", rc);
            } else if (s != STOR_ERR_NO_VERSION) {
                return s;
            }
            s = STOR_OK;
        }
    }
    /* Encoded here, in the transaction, since only now is the version
     * known: a versioned commit pays for its record's encoding inside
     * LMDB's writer lock (microseconds; unversioned commits encode
     * outside it). */
    buf_t b;
    if ((s = stor_encode_object_rec(&b, key, nrec)) == STOR_OK) {
        MDB_val v = {b.len, b.data};
        int rc;
        if (marker) {
            vk.mv_size = vkey_make(ik, seq, vkbuf);
            vk.mv_data = vkbuf;
            rc = local_wr_put(st, txn, st->db_versions, &vk, &v, 0);
        } else {
            rc = local_wr_put(st, txn, st->db_objects, (MDB_val *)ik, &v, 0);
        }
        if (rc)
            s = local_mdb_fail("version put", rc);
    }
    buf_free(&b);
    return s;
}

stor_status_t local_ver_change(lstor_t *st, MDB_txn *txn, const MDB_val *ik, const char *key,
                               const char *vid, const stor_obj_change_t *change)
{
    uint8_t vkbuf[VKEY_MAX];
    MDB_val vk;
    stor_obj_rec_t rec;
    stor_status_t s = ver_find(st, txn, ik, key, vid, &vk, vkbuf, &rec);
    if (s != STOR_OK)
        return s;
    if (rec.meta.delete_marker)
        s = STOR_ERR_DELETE_MARKER;
    if (s == STOR_OK)
        s = stor_meta_apply_change(&rec.meta, change);
    /* Encoded before the put: an inline body points into txn's pages. */
    buf_t b = {0};
    if (s == STOR_OK)
        s = stor_encode_object_rec(&b, key, &rec);
    if (s == STOR_OK) {
        MDB_val v = {b.len, b.data};
        int rc = local_wr_put(st, txn, st->db_versions, &vk, &v, 0);
        if (rc)
            s = local_mdb_fail("version put", rc);
    }
    buf_free(&b);
    stor_obj_rec_free(&rec);
    return s;
}

/* After the latest version went: the newest remaining version of ik, when
 * it is an object, becomes the current one (moves to db_objects). */
static stor_status_t promote(lstor_t *st, MDB_txn *txn, const MDB_val *ik, const char *key)
{
    MDB_cursor *c;
    int rc = mdb_cursor_open(txn, st->db_versions, &c);
    if (rc)
        return local_mdb_fail("cursor", rc);
    MDB_val k, v;
    int r = ver_first(c, ik, &k, &v);
    stor_status_t s = r < 0 ? STOR_ERR_IO : STOR_OK;
    uint8_t vkbuf[VKEY_MAX];
    MDB_val vk = {k.mv_size, vkbuf};
    int is_obj = 0;
    if (r > 0) {
        stor_meta_t m;
        s = stor_rec_decode_object_meta(v.mv_data, v.mv_size, &m);
        if (s == STOR_OK) {
            is_obj = m.delete_marker == NULL;
            memcpy(vkbuf, k.mv_data, k.mv_size);
            stor_meta_free(&m);
        } else {
            log_error("storage: corrupt version record for %s", key);
        }
    }
    mdb_cursor_close(c);
    if (s == STOR_OK && is_obj)
        s = rec_move(st, txn, st->db_versions, &vk, st->db_objects, ik);
    return s;
}

stor_status_t local_ver_remove(lstor_t *st, MDB_txn *txn, const MDB_val *ik, const char *key,
                               const char *vid, stor_obj_rec_t *cur, int had_cur,
                               stor_obj_rec_t *old)
{
    if (had_cur && stor_meta_is_version(&cur->meta, vid)) {
        int rc = local_wr_del(st, txn, st->db_objects, (MDB_val *)ik, NULL);
        if (rc)
            return local_mdb_fail("object delete", rc);
        *old = *cur;
        memset(cur, 0, sizeof *cur);
        stor_status_t s = promote(st, txn, ik, key);
        if (s != STOR_OK)
            stor_obj_rec_free(old);
        return s;
    }
    uint8_t vkbuf[VKEY_MAX];
    MDB_val vk;
    stor_status_t s = ver_find(st, txn, ik, key, vid, &vk, vkbuf, old);
    if (s != STOR_OK)
        return s;
    /* Was it the latest (no current object, and the newest version)? */
    int latest = 0;
    if (!had_cur) {
        MDB_cursor *c;
        int rc = mdb_cursor_open(txn, st->db_versions, &c);
        if (rc)
            s = local_mdb_fail("cursor", rc);
        else {
            MDB_val k, v;
            int r = ver_first(c, ik, &k, &v);
            if (r < 0)
                s = STOR_ERR_IO;
            latest = r > 0 && k.mv_size == vk.mv_size && memcmp(k.mv_data, vkbuf, vk.mv_size) == 0;
            mdb_cursor_close(c);
        }
    }
    if (s == STOR_OK) {
        int rc = local_wr_del(st, txn, st->db_versions, &vk, NULL);
        if (rc)
            s = local_mdb_fail("version delete", rc);
    }
    if (s == STOR_OK && latest)
        s = promote(st, txn, ik, key);
    if (s != STOR_OK)
        stor_obj_rec_free(old);
    return s;
}

/* ==== The versions iterator ============================================== */

typedef struct vside {
    MDB_cursor *cur;
    MDB_val k, v; /* the peeked entry, when has */
    int has, eof, positioned;
} vside_t;

typedef struct viter {
    stor_iter_t base; /* first: stor_backend.h; base.versions set */
    lstor_t *st;
    MDB_txn *txn;
    vside_t obj, ver;
    size_t blen, plen;
    char bp[STOR_BUCKET_MAX + 1]; /* bucket \0 */
    char *prefix;
    size_t prefix_len;
    uint8_t pos[LOCAL_IKEY_MAX]; /* where both cursors go next when !positioned */
    size_t pos_len;
    /* The resume point: skip index keys before mk (and mk itself when
     * mk_whole); inside mk, skip up to and including version mk_vid. */
    uint8_t mk[LOCAL_IKEY_MAX];
    size_t mk_len;
    int has_mk, mk_whole, mk_passed;
    char mk_vid[STOR_VERSION_ID_LEN + 1];
    char *seek; /* skip keys below it (stor_iter_seek) */
    size_t seek_len;
    int has_seek;
    uint8_t last[LOCAL_IKEY_MAX]; /* index key of the last entry visited */
    size_t last_len;
    int has_last, failed;
} viter_t;

static int ikcmp(const void *a, size_t alen, const void *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    return c ? c : (alen > blen) - (alen < blen);
}

static void viter_position(viter_t *it, const uint8_t *pos, size_t len)
{
    memcpy(it->pos, pos, len);
    it->pos_len = len;
    it->obj.has = it->obj.eof = it->obj.positioned = 0;
    it->ver.has = it->ver.eof = it->ver.positioned = 0;
}

/* Peeks side's next entry of the bucket: 1, 0 at its end, -1 error. */
static int side_peek(viter_t *it, vside_t *sd)
{
    if (sd->has)
        return 1;
    if (sd->eof)
        return 0;
    int rc;
    if (!sd->positioned) {
        sd->k.mv_data = it->pos;
        sd->k.mv_size = it->pos_len;
        rc = mdb_cursor_get(sd->cur, &sd->k, &sd->v, MDB_SET_RANGE);
        sd->positioned = 1;
    } else {
        rc = mdb_cursor_get(sd->cur, &sd->k, &sd->v, MDB_NEXT);
    }
    if (rc == MDB_NOTFOUND || (rc == 0 && (sd->k.mv_size < it->blen + 1 ||
                                           memcmp(sd->k.mv_data, it->bp, it->blen + 1) != 0))) {
        sd->eof = 1;
        return 0;
    }
    if (rc) {
        local_mdb_fail("version list", rc);
        return -1;
    }
    sd->has = 1;
    return 1;
}

stor_status_t local_iter_open_versions(stor_t *st_, const char *bucket, const char *prefix,
                                       const char *key_marker, const char *version_marker,
                                       stor_iter_t **out_p)
{
    lstor_t *st = (lstor_t *)st_;
    viter_t *it = calloc(1, sizeof *it);
    if (!it)
        return STOR_ERR_NOMEM;
    it->base.st = &st->base;
    it->base.versions = 1;
    it->st = st;
    prefix = prefix ? prefix : "";
    it->prefix = strdup(prefix);
    it->prefix_len = strlen(prefix);
    stor_status_t s = STOR_ERR_NOMEM;
    if (!it->prefix)
        goto fail;
    if ((s = local_rd_begin(st, &it->txn)) != STOR_OK)
        goto fail;
    if ((s = local_bucket_exists(st, it->txn, bucket)) != STOR_OK)
        goto fail;
    int rc = mdb_cursor_open(it->txn, st->db_objects, &it->obj.cur);
    if (!rc)
        rc = mdb_cursor_open(it->txn, st->db_versions, &it->ver.cur);
    if (rc) {
        s = local_mdb_fail("cursor", rc);
        goto fail;
    }
    it->blen = strlen(bucket);
    memcpy(it->bp, bucket, it->blen + 1);
    it->plen = local_ikey_plen(it->blen);
    uint8_t pos[LOCAL_IKEY_MAX];
    size_t pos_len = local_ikey_seek(bucket, it->blen, prefix, it->prefix_len, pos);
    if (key_marker && *key_marker) {
        it->has_mk = 1;
        it->mk_len = local_ikey_encode(bucket, it->blen, key_marker, strlen(key_marker), it->mk);
        it->mk_whole = !version_marker || !*version_marker;
        if (!it->mk_whole)
            snprintf(it->mk_vid, sizeof it->mk_vid, "%s", version_marker);
        if (ikcmp(it->mk, it->mk_len, pos, pos_len) > 0) {
            memcpy(pos, it->mk, it->mk_len);
            pos_len = it->mk_len;
        }
    }
    viter_position(it, pos, pos_len);
    *out_p = &it->base;
    return STOR_OK;
fail:
    local_viter_close(&it->base);
    return s;
}

void local_viter_seek(stor_iter_t *it_, const char *key, size_t key_len)
{
    viter_t *it = (viter_t *)it_;
    if (it->failed)
        return;
    char *c = realloc(it->seek, key_len + 1);
    if (!c) {
        it->failed = 1;
        return;
    }
    memcpy(c, key, key_len);
    c[key_len] = '\0';
    it->seek = c;
    it->seek_len = key_len;
    it->has_seek = 1;
    uint8_t pos[LOCAL_IKEY_MAX];
    size_t n = local_ikey_seek(it->bp, it->blen, key, key_len, pos);
    /* Never back: the cursors may be past pos already (a long-key block). */
    if (it->has_last && ikcmp(pos, n, it->last, it->last_len) <= 0)
        return;
    viter_position(it, pos, n);
}

/* -1: past every key with the prefix (stop); 0: skip; 1: take. rest is the
 * index key after `bucket \0`, key the full key. */
static int viter_filter(const viter_t *it, const uint8_t *rest, size_t rlen, const char *key,
                        size_t klen)
{
    if (it->prefix_len) {
        /* Stop on the index key's text (a long key's first P bytes), which
         * is in order; skip on the full key. */
        size_t tlen = local_ikey_is_long(rest, rlen, it->plen) ? it->plen : rlen;
        size_t n = tlen < it->prefix_len ? tlen : it->prefix_len;
        if (memcmp(rest, it->prefix, n) > 0)
            return -1;
        if (klen < it->prefix_len || memcmp(key, it->prefix, it->prefix_len) != 0)
            return 0;
    }
    if (it->has_seek && stor_keycmp(key, klen, it->seek, it->seek_len) < 0)
        return 0;
    return 1;
}

int local_viter_next(stor_iter_t *it_, const char **key_p, size_t *key_len_p, stor_meta_t *meta_p,
                     int *is_latest_p)
{
    viter_t *it = (viter_t *)it_;
    if (it->failed)
        return -1;
    for (;;) {
        int ro = side_peek(it, &it->obj), rv = side_peek(it, &it->ver);
        if (ro < 0 || rv < 0) {
            it->failed = 1;
            return -1;
        }
        if (!ro && !rv)
            return 0;
        /* The smaller index key first; on a tie the current object, the
         * newest version. */
        int from_obj = ro && (!rv || ikcmp(it->obj.k.mv_data, it->obj.k.mv_size, it->ver.k.mv_data,
                                           it->ver.k.mv_size - 9) <= 0);
        vside_t *sd = from_obj ? &it->obj : &it->ver;
        sd->has = 0;
        const uint8_t *ik = sd->k.mv_data;
        size_t iklen = from_obj ? sd->k.mv_size : sd->k.mv_size - 9;
        int same = it->has_last && ikcmp(ik, iklen, it->last, it->last_len) == 0;
        int latest = from_obj || !same;
        memcpy(it->last, ik, iklen);
        it->last_len = iklen;
        it->has_last = 1;
        const char *key;
        size_t klen;
        if (stor_rec_object_key(sd->v.mv_data, sd->v.mv_size, &key, &klen) != STOR_OK) {
            log_error("storage: corrupt record in version listing");
            it->failed = 1;
            return -1;
        }
        int f = viter_filter(it, ik + it->blen + 1, iklen - it->blen - 1, key, klen);
        if (f < 0) {
            it->obj.eof = it->ver.eof = 1;
            it->obj.has = it->ver.has = 0;
            return 0;
        }
        if (f == 0)
            continue;
        int c = it->has_mk ? ikcmp(ik, iklen, it->mk, it->mk_len) : 1;
        if (c < 0 || (c == 0 && (it->mk_whole || !it->mk_passed)))
            f = 0; /* at or before the resume point */
        if (f && stor_rec_decode_object_want(sd->v.mv_data, sd->v.mv_size, it->base.want, meta_p) !=
                     STOR_OK) {
            log_error("storage: corrupt record in version listing");
            it->failed = 1;
            return -1;
        }
        if (!f) {
            if (c == 0 && !it->mk_whole && !it->mk_passed) {
                stor_meta_t m;
                if (stor_rec_decode_object_meta(sd->v.mv_data, sd->v.mv_size, &m) == STOR_OK) {
                    it->mk_passed = stor_meta_is_version(&m, it->mk_vid);
                    stor_meta_free(&m);
                }
            }
            continue;
        }
        *key_p = key;
        *key_len_p = klen;
        *is_latest_p = latest;
        return 1;
    }
}

void local_viter_close(stor_iter_t *it_)
{
    viter_t *it = (viter_t *)it_;
    if (!it)
        return;
    if (it->obj.cur)
        mdb_cursor_close(it->obj.cur);
    if (it->ver.cur)
        mdb_cursor_close(it->ver.cur);
    if (it->txn)
        mdb_txn_abort(it->txn);
    free(it->prefix);
    free(it->seek);
    free(it);
}
