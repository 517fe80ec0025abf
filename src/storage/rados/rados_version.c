/* Versioning on RADOS (docs/storage.md, "Versioning on RADOS"): the version
 * entries of a key's index shard, the versioned switch of the latest
 * version (a PUT, a Complete or a delete marker), the removal of one version
 * and the lookups by version id.
 *
 * A key's latest version, an object or a delete marker, is its record under
 * the key itself, where an unversioned bucket keeps it: a GET, HEAD or
 * listing of the latest version reads exactly what it read before. Every
 * other version is a "version entry" in the same shard object, under
 *     0xFE ‖ esc(key) ‖ 0x01 ‖ 16 hex digits of ~seq
 * where esc() writes the bytes 0x01 and 0x02 of the key as 0x02 0x01 and
 * 0x02 0x02 (so entries sort in key order, a key's together, and newest
 * first: seq is the version's order among its key's versions, the first 16
 * digits of its id; 0 for an object written before its bucket had
 * versioning). 0xFE never occurs in UTF-8, so entries sort after every
 * object key and before the tombstone (0xFF).
 *
 * Invariant, kept by every change here in one atomic write operation on the
 * key's shard object that compares what it read: a key with any version has
 * a record under the key (its latest), whose seq is larger than any of its
 * entries'. Racing changes of one key, on any gateway, are serialised by
 * those comparisons: the loser reads again and retries. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"
#include "storage/rados/rados_internal.h"

#define VMARK 0xFE
#define VSEP  0x01
#define VESC  0x02

/* ==== Entry keys ========================================================= */

int rs_vprefix(const char *key, size_t klen, buf_t *out)
{
    buf_init(out, 2 * klen + 32);
    char c = (char)VMARK;
    int rc = buf_append(out, &c, 1);
    for (size_t i = 0; i < klen && rc == 0; i++) {
        unsigned char b = (unsigned char)key[i];
        if (b == VSEP || b == VESC) {
            char e[2] = {(char)VESC, (char)b};
            rc = buf_append(out, e, 2);
        } else {
            rc = buf_append(out, &key[i], 1);
        }
    }
    return rc;
}

/* The entry of seq of key's versions, into *out (buf_init'ed here; the
 * caller frees it). 0, or -1. */
static int rs_vkey(const char *key, size_t klen, uint64_t seq, buf_t *out)
{
    if (rs_vprefix(key, klen, out) != 0)
        return -1;
    return buf_printf(out, "%c%016" PRIx64, (char)VSEP, ~seq);
}

int rs_vkey_parse(const char *k, size_t kl, buf_t *key)
{
    buf_reset(key);
    if (kl < 18 || (unsigned char)k[0] != VMARK || (unsigned char)k[kl - 17] != VSEP)
        return -1;
    for (size_t i = 1; i < kl - 17; i++) {
        unsigned char b = (unsigned char)k[i];
        if (b == VESC) {
            if (++i >= kl - 17)
                return -1;
            b = (unsigned char)k[i];
        }
        if (buf_append(key, &b, 1) != 0)
            return -1;
    }
    return 0;
}

/* ==== Reading a key's versions =========================================== */

/* What one read of a key's shard found: the latest version (the record
 * under the key), the entry of one seq (when asked), and the newest entry
 * (when asked). Raw bytes, as a write compares them, and the decoded
 * records. */
typedef struct kread {
    buf_t lraw, vraw, nraw, nkey;
    stor_obj_rec_t l, v, n;
    int has_l, has_v, has_n;
} kread_t;

static void kread_free(kread_t *r)
{
    buf_free(&r->lraw);
    buf_free(&r->vraw);
    buf_free(&r->nraw);
    buf_free(&r->nkey);
    if (r->has_l)
        stor_obj_rec_free(&r->l);
    if (r->has_v)
        stor_obj_rec_free(&r->v);
    if (r->has_n)
        stor_obj_rec_free(&r->n);
    memset(r, 0, sizeof *r);
}

static int copy_to(buf_t *b, const char *v, size_t vl)
{
    buf_init(b, STOR_REC_MAX + 1);
    return buf_append(b, v, vl);
}

int rs_kread_start(rstor_t *st, const char *oid, const char *key, const buf_t *vkey, int newest,
                   rs_kread_t *k)
{
    memset(k, 0, sizeof *k);
    k->key = key;
    k->klen = strlen(key);
    k->want_v = vkey != NULL;
    snprintf(k->oid, sizeof k->oid, "%s", oid);
    if (!(k->op = rados_create_read_op()))
        return -ENOMEM;
    const char *keys[2] = {key, vkey ? vkey->data : NULL};
    size_t klens[2] = {k->klen, vkey ? vkey->len : 0};
    int rc = 0;
    rados_read_op_omap_get_vals_by_keys2(k->op, keys, vkey ? 2 : 1, klens, &k->kit, &k->pk);
    if (newest) {
        if (rs_vprefix(key, k->klen, &k->pfx) != 0 || buf_append(&k->pfx, "\x01", 1) != 0)
            rc = -ENOMEM;
        else
            rados_read_op_omap_get_vals2(k->op, k->pfx.data, k->pfx.data, 1, &k->nit, &k->more,
                                         &k->pn);
    }
    if (rc == 0 && (rc = rados_aio_create_completion2(NULL, NULL, &k->c)) == 0 &&
        (rc = rados_aio_read_op_operate(k->op, st->index, k->c, oid, 0)) < 0)
        rados_aio_release(k->c);
    if (rc < 0) {
        rados_release_read_op(k->op);
        buf_free(&k->pfx);
        k->op = NULL;
    }
    return rc;
}

/* Waits for the read k (rs_kread_start'ed) and fills *r with what it
 * found. 0, or a librados code (-ENOENT: no such shard object). */
static int kread_finish(rs_kread_t *k, kread_t *r)
{
    memset(r, 0, sizeof *r);
    rados_aio_wait_for_complete(k->c);
    int rc = rados_aio_get_return_value(k->c);
    rados_aio_release(k->c);
    rados_release_read_op(k->op);
    if (rc == 0)
        rc = k->pk < 0 ? k->pk : k->pn;
    char *kk, *v;
    size_t kl, vl;
    while (rc == 0 && k->kit && rados_omap_get_next2(k->kit, &kk, &v, &kl, &vl) == 0 && kk) {
        int is_l = kl == k->klen && memcmp(kk, k->key, kl) == 0;
        if (is_l && !r->has_l) {
            rc = copy_to(&r->lraw, v, vl) ? -ENOMEM : 0;
            r->has_l = rc == 0 && stor_rec_decode_object(v, vl, &r->l) == STOR_OK ? 1 : -1;
        } else if (!is_l && k->want_v && !r->has_v) {
            rc = copy_to(&r->vraw, v, vl) ? -ENOMEM : 0;
            r->has_v = rc == 0 && stor_rec_decode_object(v, vl, &r->v) == STOR_OK ? 1 : -1;
        }
    }
    while (rc == 0 && k->nit && !r->has_n && rados_omap_get_next2(k->nit, &kk, &v, &kl, &vl) == 0 &&
           kk) {
        buf_init(&r->nkey, kl + 1);
        rc = copy_to(&r->nraw, v, vl) || buf_append(&r->nkey, kk, kl) ? -ENOMEM : 0;
        r->has_n = rc == 0 && stor_rec_decode_object(v, vl, &r->n) == STOR_OK ? 1 : -1;
    }
    if (k->kit)
        rados_omap_get_end(k->kit);
    if (k->nit)
        rados_omap_get_end(k->nit);
    buf_free(&k->pfx);
    if (rc == 0 && (r->has_l < 0 || r->has_v < 0 || r->has_n < 0)) {
        log_error("storage: corrupt object record for %s in %s", k->key, k->oid);
        /* Only what decoded is freed. */
        r->has_l = r->has_l > 0;
        r->has_v = r->has_v > 0;
        r->has_n = r->has_n > 0;
        rc = -EIO;
    }
    if (rc != 0)
        kread_free(r);
    return rc;
}

void rs_kread_discard(rs_kread_t *k)
{
    kread_t r;
    if (kread_finish(k, &r) == 0)
        kread_free(&r);
}

/* rs_kread_start and kread_finish in one. */
static int kread_do(rstor_t *st, const char *oid, const char *key, const buf_t *vkey, int newest,
                    kread_t *r)
{
    rs_kread_t k;
    int rc = rs_kread_start(st, oid, key, vkey, newest, &k);
    if (rc < 0) {
        memset(r, 0, sizeof *r);
        return rc;
    }
    return kread_finish(&k, r);
}

/* The entry of key's "null" version in oid: its key and raw bytes, and the
 * record decoded into *rec. 1 found, 0 none, or a librados code. Reads the
 * key's entries in batches (at most one of them is the null version). */
static int find_null(rstor_t *st, const char *oid, const char *key, buf_t *ekey, buf_t *eraw,
                     stor_obj_rec_t *rec)
{
    buf_t pfx;
    if (rs_vprefix(key, strlen(key), &pfx) != 0 || buf_append(&pfx, "\x01", 1) != 0) {
        buf_free(&pfx);
        return -ENOMEM;
    }
    buf_t from;
    buf_init(&from, pfx.len + 32);
    int rc = buf_append(&from, pfx.data, pfx.len) ? -ENOMEM : 0;
    unsigned char more = 1;
    int found = 0;
    while (rc == 0 && more && !found) {
        rados_omap_iter_t it;
        rc = rs_omap_read(st->index, oid, from.data, pfx.data, RSTOR_OMAP_BATCH, &it, &more);
        char *k, *v;
        size_t kl, vl;
        while (rc == 0 && !found && it && rados_omap_get_next2(it, &k, &v, &kl, &vl) == 0 && k) {
            stor_meta_t m;
            if (stor_rec_decode_object_meta(v, vl, &m) != STOR_OK) {
                rc = -EIO;
                break;
            }
            int is_null = stor_meta_is_version(&m, "null");
            stor_meta_free(&m);
            if (is_null) {
                buf_init(ekey, kl + 1);
                if (buf_append(ekey, k, kl) != 0 || copy_to(eraw, v, vl) != 0)
                    rc = -ENOMEM;
                else if (stor_rec_decode_object(v, vl, rec) != STOR_OK)
                    rc = -EIO;
                else
                    found = 1;
            }
            buf_reset(&from);
            if (rc == 0 && buf_append(&from, k, kl) != 0)
                rc = -ENOMEM;
        }
        if (it)
            rados_omap_get_end(it);
    }
    buf_free(&pfx);
    buf_free(&from);
    if (rc < 0 && found) {
        stor_obj_rec_free(rec);
        buf_free(ekey);
        buf_free(eraw);
        found = 0;
    }
    if (rc == -EIO)
        log_error("storage: corrupt version entry for %s in %s", key, oid);
    return rc < 0 ? rc : found;
}

static stor_status_t read_status(const char *oid, int rc)
{
    if (rc == -ENOENT)
        return STOR_ERR_NO_BUCKET;
    return rs_fail("version lookup", oid, rc);
}

/* Finds version vid (NULL: the latest) of key in oid: STOR_ERR_NO_KEY when
 * the key has no version at all (vid NULL), STOR_ERR_NO_VERSION when none
 * of that id. */
static stor_status_t version_find(rstor_t *st, const char *oid, const char *key, const char *vid,
                                  stor_obj_rec_t *rec)
{
    if (vid && !stor_version_id_valid(vid))
        return STOR_ERR_NO_VERSION;
    int is_null = vid && strcmp(vid, "null") == 0;
    buf_t vkey = {0};
    if (vid && !is_null) {
        stor_meta_t m = {.version = (char *)vid};
        if (rs_vkey(key, strlen(key), stor_version_seq(&m), &vkey) != 0) {
            buf_free(&vkey);
            return STOR_ERR_NOMEM;
        }
    }
    kread_t r;
    int rc = kread_do(st, oid, key, vkey.data ? &vkey : NULL, 0, &r);
    buf_free(&vkey);
    if (rc < 0)
        return read_status(oid, rc);
    stor_status_t s = vid ? STOR_ERR_NO_VERSION : STOR_ERR_NO_KEY;
    if (r.has_l && (!vid || stor_meta_is_version(&r.l.meta, vid))) {
        *rec = r.l;
        r.has_l = 0;
        s = STOR_OK;
    } else if (r.has_v && stor_meta_is_version(&r.v.meta, vid)) {
        *rec = r.v;
        r.has_v = 0;
        s = STOR_OK;
    } else if (is_null && r.has_l) {
        buf_t ekey, eraw;
        rc = find_null(st, oid, key, &ekey, &eraw, rec);
        if (rc < 0)
            s = read_status(oid, rc);
        else if (rc > 0)
            s = STOR_OK;
        if (rc > 0) {
            buf_free(&ekey);
            buf_free(&eraw);
        }
    }
    kread_free(&r);
    return s;
}

stor_status_t rs_version_read(rstor_t *st, const char *bucket, const char *key, const char *vid,
                              stor_obj_rec_t *rec)
{
    /* A stale cached index finds no object: the name is looked up afresh.
     * A reshard removes the old objects just before its record names the
     * new ones, which are complete by then: a bucket whose record still
     * names the old ones is read in the new. */
    stor_status_t s = STOR_ERR_NO_BUCKET;
    rs_index_t ix;
    for (int fresh = 0; fresh < 3 && s == STOR_ERR_NO_BUCKET; fresh++) {
        if (fresh == 2 && !ix.to)
            break;
        if (fresh == 2)
            ix = rs_index_next(&ix);
        else if ((s = rs_bucket_id(st, bucket, fresh, &ix)) != STOR_OK)
            return s;
        char oid[RSTOR_OID_MAX];
        rs_key_oid(&ix, key, oid);
        s = version_find(st, oid, key, vid, rec);
    }
    return s;
}

/* ==== Changes ============================================================ */

/* The version field of a new version of seq: 16 hex digits (a "null"
 * version, suspended), or a version id (enabled: 16 random digits more). */
static stor_status_t version_field(int state, uint64_t seq, char **out)
{
    char ver[STOR_VERSION_ID_LEN + 1];
    snprintf(ver, sizeof ver, "%016" PRIx64, seq);
    if (state == STOR_VERSIONING_ENABLED) {
        if (hash_random_hex(8, ver + 16) != 0)
            return STOR_ERR_IO;
    }
    free(*out);
    *out = strdup(ver);
    return *out ? STOR_OK : STOR_ERR_NOMEM;
}

/* rs_version_push, with d the entry of the blobs its switch drops (a null
 * version replaced while suspended). */
static stor_status_t version_push(rstor_t *st, const rs_index_t *ix, const char *key, int state,
                                  stor_meta_t *meta, const stor_seg_t *segs, uint32_t n_segs,
                                  const stor_precond_t *cond, rs_kread_t *pre, rs_intent_ref_t *d)
{
    rs_route_t rt;
    rs_route_init(&rt, ix, key);
    const char *oid = rt.oid;
    size_t klen = strlen(key);
    for (int attempt = 0; attempt < RSTOR_RETRIES; attempt++) {
        kread_t r;
        int rc = attempt == 0 && pre ? kread_finish(pre, &r) : kread_do(st, oid, key, NULL, 1, &r);
        if (rc == -ENOENT) {
            /* The shard is gone: the reshard finished (or the bucket). */
            stor_status_t s = rs_route_again(st, &rt, key);
            if (s != STOR_OK)
                return s;
            continue;
        }
        if (rc < 0)
            return read_status(oid, rc);
        int live = r.has_l && !r.l.meta.delete_marker;
        stor_status_t s = stor_precond_check(cond, live ? &r.l.meta : NULL, live);
        uint64_t seq = r.has_l ? stor_version_seq(&r.l.meta) : 0;
        if (r.has_n && stor_version_seq(&r.n.meta) > seq)
            seq = stor_version_seq(&r.n.meta); /* only after an unversioned write raced */
        if (s == STOR_OK && seq == UINT64_MAX)
            s = STOR_ERR_IO;
        if (s == STOR_OK)
            s = version_field(state, seq + 1, &meta->version);
        buf_t rec = {0}, lkey = {0}, ekey = {0}, eraw = {0};
        stor_obj_rec_t null_e;
        int has_null_e = 0, drop_l = 0;
        rs_change_t c = {0};
        if (s == STOR_OK) {
            /* A delete marker is an empty inline record. */
            stor_obj_rec_t nrec = {.meta = *meta,
                                   .segs = (stor_seg_t *)segs,
                                   .n_segs = n_segs,
                                   .body = n_segs ? NULL : (const uint8_t *)""};
            s = stor_encode_object_rec(&rec, key, &nrec);
        }
        if (s == STOR_OK) {
            rs_chg_cmp(&c, key, klen, r.has_l ? &r.lraw : NULL);
            if (state == STOR_VERSIONING_SUSPENDED && r.has_l &&
                stor_meta_is_version(&r.l.meta, "null")) {
                drop_l = 1; /* the new null version replaces it in place */
                s = stor_precond_guard(cond, &r.l.meta);
            } else {
                if (r.has_l) {
                    /* The latest becomes an entry: a slot no other version
                     * has (compared empty). */
                    if (rs_vkey(key, klen, stor_version_seq(&r.l.meta), &lkey) != 0)
                        s = STOR_ERR_NOMEM;
                    rs_chg_cmp(&c, lkey.data, lkey.len, NULL);
                    rs_chg_set(&c, lkey.data, lkey.len, &r.lraw);
                }
                if (s == STOR_OK && state == STOR_VERSIONING_SUSPENDED && r.has_l) {
                    rc = find_null(st, oid, key, &ekey, &eraw, &null_e);
                    if (rc < 0)
                        s = read_status(oid, rc);
                    has_null_e = rc > 0;
                    if (has_null_e) {
                        rs_chg_cmp(&c, ekey.data, ekey.len, &eraw);
                        rs_chg_rm(&c, ekey.data, ekey.len);
                        s = stor_precond_guard(cond, &null_e.meta);
                    }
                }
            }
            rs_chg_set(&c, key, klen, &rec);
        }
        const stor_obj_rec_t *gone = drop_l ? &r.l : has_null_e ? &null_e : NULL;
        if (s == STOR_OK && gone && gone->n_segs)
            s = rs_intent_drop(st, d, ix, key, gone->segs, gone->n_segs, "version-intent");
        if (s == STOR_OK)
            rc = rs_route_apply(st, &rt, key, &c);
        if (s == STOR_OK && rc == 0 && gone && gone->n_segs) {
            rs_crash_point(st, "version-switch");
            d->unsettled = rs_gc_log(st, gone->segs, gone->n_segs) != 0;
        }
        if (has_null_e)
            stor_obj_rec_free(&null_e);
        buf_free(&rec);
        buf_free(&lkey);
        buf_free(&ekey);
        buf_free(&eraw);
        kread_free(&r);
        if (s != STOR_OK)
            return s;
        if (rc == 0)
            return STOR_OK;
        if ((s = rs_route_failed(st, &rt, key, rc)) != STOR_OK)
            return s;
        /* Another change of this key came first: judge again on its result. */
    }
    log_error("storage: version switch of %s in %s kept losing races", key, oid);
    return STOR_ERR_UNAVAILABLE;
}

/* Makes meta (with segs: its data; none for a delete marker) the new
 * latest version of key, in bucket state state (ENABLED: a version of its
 * own; SUSPENDED: the "null" version, replacing the one there was), if
 * cond holds for the latest object; sets meta->version. pre (NULL: none):
 * the first look at the key, rs_kread_start'ed with newest (finished here).
 * Dropped data goes to the GC log. */
static stor_status_t rs_version_push(rstor_t *st, const rs_index_t *ix, const char *key, int state,
                                     stor_meta_t *meta, const stor_seg_t *segs, uint32_t n_segs,
                                     const stor_precond_t *cond, rs_kread_t *pre)
{
    rs_intent_ref_t d = {0};
    stor_status_t s = version_push(st, ix, key, state, meta, segs, n_segs, cond, pre, &d);
    rs_intent_drop_done(st, &d, s == STOR_ERR_UNAVAILABLE);
    return s;
}

/* Removes version vid (never NULL) of key: the entry, or the latest, whose
 * place the newest entry then takes, if cond holds (its guard on that
 * version, the rest on the key's latest object). The removed record goes
 * to *old. */
static stor_status_t version_remove(rstor_t *st, const rs_index_t *ix, rs_route_t *rt,
                                    const char *key, const char *vid, const stor_precond_t *cond,
                                    stor_obj_rec_t *old, rs_intent_ref_t *d)
{
    const char *oid = rt->oid;
    size_t klen = strlen(key);
    int is_null = strcmp(vid, "null") == 0;
    for (int attempt = 0; attempt < RSTOR_RETRIES; attempt++) {
        buf_t vkey = {0}, ekey = {0}, eraw = {0};
        stor_status_t s = STOR_OK;
        if (!is_null) {
            stor_meta_t m = {.version = (char *)vid};
            if (rs_vkey(key, klen, stor_version_seq(&m), &vkey) != 0)
                s = STOR_ERR_NOMEM;
        }
        kread_t r;
        int rc = s == STOR_OK ? kread_do(st, oid, key, vkey.data ? &vkey : NULL, 1, &r) : 0;
        if (s == STOR_OK && rc == -ENOENT) {
            /* The shard is gone: the reshard finished (or the bucket). */
            buf_free(&vkey);
            if ((s = rs_route_again(st, rt, key)) != STOR_OK)
                return s;
            continue;
        }
        if (s == STOR_OK && rc < 0)
            s = read_status(oid, rc);
        if (s != STOR_OK) {
            buf_free(&vkey);
            return s;
        }
        rs_change_t c = {0};
        stor_obj_rec_t e;
        int has_e = 0, took = 0;
        int live = r.has_l && !r.l.meta.delete_marker;
        s = stor_precond_check(cond, live ? &r.l.meta : NULL, live);
        if (s == STOR_OK && r.has_l && stor_meta_is_version(&r.l.meta, vid)) {
            /* The latest: the newest entry, if any, takes its place. */
            rs_chg_cmp(&c, key, klen, &r.lraw);
            if (r.has_n) {
                rs_chg_cmp(&c, r.nkey.data, r.nkey.len, &r.nraw);
                rs_chg_rm(&c, r.nkey.data, r.nkey.len);
                rs_chg_set(&c, key, klen, &r.nraw);
            } else {
                rs_chg_rm(&c, key, klen);
            }
            took = 1;
        } else if (s == STOR_OK && r.has_v && stor_meta_is_version(&r.v.meta, vid)) {
            rs_chg_cmp(&c, vkey.data, vkey.len, &r.vraw);
            rs_chg_rm(&c, vkey.data, vkey.len);
            took = 2;
        } else if (s == STOR_OK && is_null && r.has_l) {
            rc = find_null(st, oid, key, &ekey, &eraw, &e);
            if (rc < 0)
                s = read_status(oid, rc);
            if ((has_e = rc > 0)) {
                rs_chg_cmp(&c, ekey.data, ekey.len, &eraw);
                rs_chg_rm(&c, ekey.data, ekey.len);
                took = 3;
            }
        }
        if (s == STOR_OK && !took)
            s = STOR_ERR_NO_VERSION;
        /* The guard sees what goes, before anything is written. */
        const stor_obj_rec_t *gone = took == 1 ? &r.l : took == 2 ? &r.v : &e;
        if (s == STOR_OK)
            s = stor_precond_guard(cond, &gone->meta);
        /* What it drops is named before the switch (a recovery's, should the
         * gateway die before the GC log write). */
        if (s == STOR_OK && gone->n_segs)
            s = rs_intent_drop(st, d, ix, key, gone->segs, gone->n_segs, "version-intent");
        if (s == STOR_OK)
            rc = rs_route_apply(st, rt, key, &c);
        if (s == STOR_OK && rc == 0) {
            if (took == 1) {
                *old = r.l;
                r.has_l = 0;
            } else if (took == 2) {
                *old = r.v;
                r.has_v = 0;
            } else {
                *old = e;
                has_e = 0;
            }
        }
        if (has_e)
            stor_obj_rec_free(&e);
        buf_free(&vkey);
        buf_free(&ekey);
        buf_free(&eraw);
        kread_free(&r);
        if (s != STOR_OK)
            return s;
        if (rc == 0)
            return STOR_OK;
        if ((s = rs_route_failed(st, rt, key, rc)) != STOR_OK)
            return s;
    }
    log_error("storage: version removal of %s in %s kept losing races", key, oid);
    return STOR_ERR_UNAVAILABLE;
}

/* The versioning state of bucket (of id) as stored now, for a change that
 * found a version where the caller's copy of the bucket said OFF. */
static stor_status_t rs_versioning_now(rstor_t *st, const char *bucket, uint64_t id, int *state_p)
{
    stor_bucket_t fresh;
    stor_status_t s = rs_bucket_lookup(st, bucket, &fresh);
    if (s != STOR_OK)
        return s;
    if (fresh.id != id)
        return STOR_ERR_NO_BUCKET;
    if (fresh.versioning == STOR_VERSIONING_OFF) {
        log_error("storage: %s holds versioned records but has no versioning", bucket);
        return STOR_ERR_IO;
    }
    *state_p = fresh.versioning;
    return STOR_OK;
}

stor_status_t rs_object_commit(rstor_t *st, const char *bucket, const rs_index_t *ix,
                               int versioning, const char *key, stor_meta_t *meta,
                               const stor_seg_t *segs, uint32_t n_segs, const stor_precond_t *cond,
                               rs_omap_get_t *pre, rs_kread_t *vpre, rs_intent_ref_t *in)
{
    if (versioning == STOR_VERSIONING_OFF && vpre) {
        rs_kread_discard(vpre);
        vpre = NULL;
    }
    if (versioning != STOR_VERSIONING_OFF && pre) {
        buf_t unused;
        rs_omap_get_finish(pre, &unused);
        buf_free(&unused);
        pre = NULL;
    }
    if (versioning == STOR_VERSIONING_OFF) {
        buf_t b = {0};
        stor_status_t s = stor_encode_object(&b, key, meta, segs, n_segs);
        if (s != STOR_OK) {
            if (pre) {
                buf_t unused;
                rs_omap_get_finish(pre, &unused);
                buf_free(&unused);
            }
            return s;
        }
        stor_obj_rec_t old;
        int had_old = 0, versioned = 0;
        s = rs_index_switch_pre(st, ix, key, &b, cond, pre, in, &old, &had_old, &versioned);
        buf_free(&b);
        pre = NULL;
        if (s == STOR_OK && in)
            rs_crash_point(st, "put-switch");
        if (s == STOR_OK && had_old) {
            if (rs_gc_log(st, old.segs, old.n_segs) != 0 && in)
                in->unsettled = 1;
            stor_obj_rec_free(&old);
        }
        if (!versioned)
            return s;
        /* Versioning was turned on since the caller read the bucket. */
        if ((s = rs_versioning_now(st, bucket, ix->id, &versioning)) != STOR_OK)
            return s;
    }
    if (in) {
        stor_status_t s = rs_intent_check(st, in->epoch);
        if (s != STOR_OK) {
            if (vpre)
                rs_kread_discard(vpre);
            return s;
        }
    }
    return rs_version_push(st, ix, key, versioning, meta, segs, n_segs, cond, vpre);
}

stor_status_t rs_version_change(rstor_t *st, rs_route_t *rt, const char *key,
                                const stor_obj_change_t *change)
{
    const char *oid = rt->oid;
    const char *vid = change->version_id;
    if (!stor_version_id_valid(vid))
        return STOR_ERR_NO_VERSION;
    size_t klen = strlen(key);
    int is_null = strcmp(vid, "null") == 0;
    for (int attempt = 0; attempt < RSTOR_RETRIES; attempt++) {
        buf_t vkey = {0}, ekey = {0}, eraw = {0}, b = {0};
        stor_status_t s = STOR_OK;
        if (!is_null) {
            stor_meta_t m = {.version = (char *)vid};
            if (rs_vkey(key, klen, stor_version_seq(&m), &vkey) != 0)
                s = STOR_ERR_NOMEM;
        }
        kread_t r;
        int rc = s == STOR_OK ? kread_do(st, oid, key, vkey.data ? &vkey : NULL, 0, &r) : 0;
        if (s == STOR_OK && rc == -ENOENT) {
            /* The shard is gone: the reshard finished (or the bucket). */
            buf_free(&vkey);
            if ((s = rs_route_again(st, rt, key)) != STOR_OK)
                return s;
            continue;
        }
        if (s == STOR_OK && rc < 0)
            s = read_status(oid, rc);
        if (s != STOR_OK) {
            buf_free(&vkey);
            return s;
        }
        /* Where the version's record is: the key, or its entry. */
        const char *where = NULL;
        size_t wlen = 0;
        const buf_t *raw = NULL;
        stor_obj_rec_t *rec = NULL, e;
        int has_e = 0;
        if (r.has_l && stor_meta_is_version(&r.l.meta, vid)) {
            where = key, wlen = klen, raw = &r.lraw, rec = &r.l;
        } else if (r.has_v && stor_meta_is_version(&r.v.meta, vid)) {
            where = vkey.data, wlen = vkey.len, raw = &r.vraw, rec = &r.v;
        } else if (is_null && r.has_l) {
            rc = find_null(st, oid, key, &ekey, &eraw, &e);
            if (rc < 0)
                s = read_status(oid, rc);
            if ((has_e = rc > 0))
                where = ekey.data, wlen = ekey.len, raw = &eraw, rec = &e;
        }
        if (s == STOR_OK && !rec)
            s = STOR_ERR_NO_VERSION;
        if (s == STOR_OK && rec->meta.delete_marker)
            s = STOR_ERR_DELETE_MARKER;
        if (s == STOR_OK)
            s = stor_meta_apply_change(&rec->meta, change);
        if (s == STOR_OK)
            s = stor_encode_object_rec(&b, key, rec);
        rs_change_t c = {0};
        if (s == STOR_OK) {
            rs_chg_cmp(&c, where, wlen, raw);
            rs_chg_set(&c, where, wlen, &b);
            rc = rs_route_apply(st, rt, key, &c);
        }
        if (has_e)
            stor_obj_rec_free(&e);
        buf_free(&vkey);
        buf_free(&ekey);
        buf_free(&eraw);
        buf_free(&b);
        kread_free(&r);
        if (s != STOR_OK)
            return s;
        if (rc == 0)
            return STOR_OK;
        if ((s = rs_route_failed(st, rt, key, rc)) != STOR_OK)
            return s;
    }
    log_error("storage: version change of %s in %s kept losing races", key, oid);
    return STOR_ERR_UNAVAILABLE;
}

stor_status_t rs_delete_version(stor_t *st_, const stor_bucket_t *bucket, const char *key,
                                const char *version_id, const stor_precond_t *cond,
                                stor_deleted_t *out)
{
    rstor_t *st = (rstor_t *)st_;
    memset(out, 0, sizeof *out);
    if (version_id && !stor_version_id_valid(version_id))
        return STOR_ERR_NO_VERSION;
    rs_index_t ix = rs_index_of(bucket);
    int versioning = bucket->versioning;
    if (!version_id && versioning == STOR_VERSIONING_OFF) {
        /* The blobs the removal drops go into an intent entry of their own
         * (named like a blob that is never written) before the switch, so a
         * crash before their GC log write leaves them to a recovery. */
        rs_intent_ref_t in = {0};
        uint8_t iid[STOR_ID_LEN];
        if (rs_new_blob_id(iid) != 0)
            return STOR_ERR_IO;
        rs_intent_name(iid, in.name);
        stor_obj_rec_t old;
        int had_old = 0, versioned = 0;
        stor_status_t s =
            rs_index_switch_pre(st, &ix, key, NULL, cond, NULL, &in, &old, &had_old, &versioned);
        if (s == STOR_OK && had_old) {
            rs_crash_point(st, "delete-switch");
            in.unsettled = rs_gc_log(st, old.segs, old.n_segs) != 0;
            stor_obj_rec_free(&old);
        }
        /* Unsure whether it landed, or what it dropped is not in the GC
         * log: settled as a recovery would. */
        rs_intent_drop_done(st, &in, s != STOR_OK);
        if (!versioned)
            return s;
        /* Versioning was turned on since the caller read the bucket. */
        if ((s = rs_versioning_now(st, bucket->name, bucket->id, &versioning)) != STOR_OK)
            return s;
    }
    if (!version_id) {
        /* A new delete marker on top. */
        stor_meta_t mk = {.mtime_ms = clock_wall_ms()};
        if (!(mk.delete_marker = strdup("1")))
            return STOR_ERR_NOMEM;
        stor_status_t s = rs_version_push(st, &ix, key, versioning, &mk, NULL, 0, cond, NULL);
        if (s == STOR_OK) {
            stor_version_id(&mk, out->version_id);
            out->delete_marker = 1;
        }
        stor_meta_free(&mk);
        return s;
    }
    rs_route_t rt;
    rs_route_init(&rt, &ix, key);
    stor_obj_rec_t old;
    rs_intent_ref_t d = {0};
    stor_status_t s = version_remove(st, &ix, &rt, key, version_id, cond, &old, &d);
    if (s == STOR_OK) {
        stor_version_id(&old.meta, out->version_id);
        out->delete_marker = old.meta.delete_marker != NULL;
        if (old.n_segs)
            rs_crash_point(st, "version-switch");
        d.unsettled = rs_gc_log(st, old.segs, old.n_segs) != 0;
        stor_obj_rec_free(&old);
    }
    rs_intent_drop_done(st, &d, s == STOR_ERR_UNAVAILABLE);
    return s;
}
