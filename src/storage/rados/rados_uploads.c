/* A bucket's multipart uploads as a set, on RADOS: the key-order index of
 * its uploads object (ListMultipartUploads reads it) and the drop of every
 * open upload with the bucket. One upload's life (create, parts, Complete,
 * Abort, recovery) is rados_multipart.c's. */
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
int rs_upkey_entry(const buf_t *raw, const char *id, buf_t *ikey, char ms[24])
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
    if (array_grow(&uv->arr, &uv->cap, uv->n, sizeof *uv->arr, 16) != 0)
        return -ENOMEM;
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
        int unsure = s == STOR_OK && rs_parts_drop(st, uv.arr[i].id, NULL, NULL, 0) != 0;
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
        if ((rc = rs_upkey_entry(&uv.arr[i].raw, uv.arr[i].id, &ikey, ms)) == 0 &&
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
    if (array_grow(arr, cap, *n, sizeof **arr, 16) != 0) {
        free(key);
        return -1;
    }
    stor_upload_t *u = &(*arr)[(*n)++];
    u->key = key;
    memcpy(u->upload_id, id, sizeof id);
    u->initiated_ms = strtoll(ms, NULL, 10);
    u->owner = u->initiator = NULL; /* upload_principals reads them */
    return 0;
}

static int cmp_upload_id(const void *a, const void *b)
{
    const stor_upload_t *x = *(stor_upload_t *const *)a, *y = *(stor_upload_t *const *)b;
    return memcmp(x->upload_id, y->upload_id, STOR_UPLOAD_ID_LEN);
}

/* Fills the owner and initiator of a page's uploads (arr, n) from their
 * records in uploads object oid, all in one read (the values come back in
 * id order, matched against the page sorted by id): an upload ended since
 * its entry was read keeps NULLs (stor_upload_t). */
static stor_status_t upload_principals(rstor_t *st, const char *oid, stor_upload_t *arr, size_t n)
{
    if (!n)
        return STOR_OK;
    stor_upload_t **by_id = calloc(n, sizeof *by_id);
    const char **keys = calloc(n, sizeof *keys);
    size_t *klens = calloc(n, sizeof *klens);
    if (!by_id || !keys || !klens) {
        free(by_id);
        free(keys);
        free(klens);
        return STOR_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        by_id[i] = &arr[i];
    qsort(by_id, n, sizeof *by_id, cmp_upload_id);
    for (size_t i = 0; i < n; i++) {
        keys[i] = by_id[i]->upload_id;
        klens[i] = STOR_UPLOAD_ID_LEN;
    }
    rados_omap_iter_t it;
    int rc = rs_omap_read_vals(st->index, oid, keys, n, klens, &it);
    free(keys);
    free(klens);
    if (rc < 0) {
        free(by_id);
        return rc == -ENOENT ? STOR_ERR_NO_BUCKET : rs_fail("list uploads", oid, rc);
    }
    char *k, *v;
    size_t kl, vl, j = 0;
    while (rados_omap_get_next2(it, &k, &v, &kl, &vl) == 0 && k) {
        if (kl != STOR_UPLOAD_ID_LEN)
            continue; /* none asked for */
        while (j < n && memcmp(by_id[j]->upload_id, k, kl) < 0)
            j++;
        if (j == n)
            break;
        stor_upload_rec_t r;
        if (memcmp(by_id[j]->upload_id, k, kl) != 0 || stor_rec_decode_upload(v, vl, &r) != STOR_OK)
            continue; /* shown with the bucket's owner, as an ended upload */
        stor_upload_take_principals(by_id[j], &r.meta);
        stor_upload_rec_free(&r);
    }
    rados_omap_get_end(it);
    free(by_id);
    return STOR_OK;
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
        rados_omap_iter_t it;
        size_t want = max + 1 - n + 1; /* +1: the marker's entry itself, usually */
        rc = rs_omap_read(st->index, oid, after.data, filter.data,
                          want < RSTOR_OMAP_BATCH ? want : RSTOR_OMAP_BATCH, &it, &more);
        if (rc < 0) {
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
    s = upload_principals(st, oid, arr, n);
    if (s != STOR_OK) {
        stor_uploads_free(arr, n);
        return s;
    }
    *uploads_p = arr;
    *n_p = n;
    return STOR_OK;
}
