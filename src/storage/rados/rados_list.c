/* Listing on RADOS: a bucket's index is one object whose omap keys are the
 * object keys, which RADOS keeps in byte order; the iterator reads it in
 * batches (omap range reads filtered by the prefix on the OSD). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "storage/rados/rados_internal.h"

#define BATCH 1000

typedef struct riter {
    stor_iter_t base; /* first: stor_backend.h */
    rstor_t *st;
    char oid[RSTOR_OID_MAX];
    char *prefix;
    char *from;                    /* where the next batch starts (a key, NUL-terminated) */
    int inclusive;                 /* whether `from` itself is a candidate (after a seek) */
    rados_omap_iter_t first, rest; /* the batch: `from` itself, then after it */
    unsigned char more;            /* the OSD has keys past this batch */
    int eof, failed;
    char *last; /* the last key emitted (the batch is freed under it) */
    size_t last_len;
} riter_t;

static int set_str(char **dst, const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (!p)
        return -1;
    memcpy(p, s, n);
    p[n] = '\0';
    free(*dst);
    *dst = p;
    return 0;
}

static void batch_end(riter_t *it)
{
    if (it->first)
        rados_omap_get_end(it->first);
    if (it->rest)
        rados_omap_get_end(it->rest);
    it->first = it->rest = NULL;
}

/* Reads the next batch from `from`. 0 or a librados code. */
static int batch_fetch(riter_t *it)
{
    batch_end(it);
    rados_read_op_t op = rados_create_read_op();
    if (!op)
        return -ENOMEM;
    int pr1 = 0, pr2 = 0;
    if (it->inclusive) {
        const char *keys[1] = {it->from};
        size_t klen = strlen(it->from);
        rados_read_op_omap_get_vals_by_keys2(op, keys, 1, &klen, &it->first, &pr1);
    }
    it->more = 0;
    rados_read_op_omap_get_vals2(op, it->from, it->prefix, BATCH, &it->rest, &it->more, &pr2);
    int rc = rados_read_op_operate(op, it->st->index, it->oid, 0);
    rados_release_read_op(op);
    it->inclusive = 0;
    if (rc == 0)
        rc = pr1 < 0 ? pr1 : pr2;
    return rc;
}

stor_status_t rs_iter_open(stor_t *st_, const char *bucket, const char *prefix, const char *after,
                           stor_iter_t **out_p)
{
    rstor_t *st = (rstor_t *)st_;
    uint64_t id;
    stor_status_t s = rs_bucket_id(st, bucket, 0, &id);
    if (s != STOR_OK)
        return s;
    riter_t *it = calloc(1, sizeof *it);
    if (!it)
        return STOR_ERR_NOMEM;
    it->base.st = st_;
    it->st = st;
    rs_index_oid(id, it->oid);
    prefix = prefix ? prefix : "";
    after = after ? after : "";
    if (set_str(&it->prefix, prefix, strlen(prefix)) != 0 ||
        set_str(&it->from, after, strlen(after)) != 0) {
        rs_iter_close(&it->base);
        return STOR_ERR_NOMEM;
    }
    int rc = batch_fetch(it);
    if (rc == -ENOENT) {
        /* A stale cached id: look the name up afresh. */
        if ((s = rs_bucket_id(st, bucket, 1, &id)) != STOR_OK) {
            rs_iter_close(&it->base);
            return s;
        }
        rs_index_oid(id, it->oid);
        rc = batch_fetch(it);
    }
    if (rc < 0) {
        s = rc == -ENOENT ? STOR_ERR_NO_BUCKET : rs_fail("list", it->oid, rc);
        rs_iter_close(&it->base);
        return s;
    }
    *out_p = &it->base;
    return STOR_OK;
}

void rs_iter_seek(stor_iter_t *it_, const char *key, size_t key_len)
{
    riter_t *it = (riter_t *)it_;
    if (it->eof || it->failed)
        return;
    if (it->last && stor_keycmp(key, key_len, it->last, it->last_len) <= 0)
        return;
    if (set_str(&it->from, key, key_len) != 0) {
        it->failed = 1;
        return;
    }
    it->inclusive = 1;
    batch_end(it);
    it->more = 1;
}

/* The next entry of the batch, fetching batches as needed. 1, 0 at the end,
 * -1 on error. */
static int next_raw(riter_t *it, char **k, char **v, size_t *kl, size_t *vl)
{
    for (;;) {
        if (it->first && rados_omap_get_next2(it->first, k, v, kl, vl) == 0 && *k)
            return 1;
        /* The next batch starts after the last key RADOS gave us. */
        if (it->rest && rados_omap_get_next2(it->rest, k, v, kl, vl) == 0 && *k)
            return set_str(&it->from, *k, *kl) != 0 ? -1 : 1;
        if (!it->more)
            return 0;
        int rc = batch_fetch(it);
        if (rc < 0) {
            rs_fail("list", it->oid, rc);
            return -1;
        }
    }
}

int rs_iter_next(stor_iter_t *it_, const char **key_p, size_t *key_len_p, stor_meta_t *meta_p)
{
    riter_t *it = (riter_t *)it_;
    if (it->failed)
        return -1;
    if (it->eof)
        return 0;
    char *k, *v;
    size_t kl, vl;
    int r = next_raw(it, &k, &v, &kl, &vl);
    if (r <= 0) {
        it->failed = r < 0;
        it->eof = r == 0;
        return r;
    }
    /* Only the tombstone sorts at 0xFF: no object key gets there. */
    size_t pl = strlen(it->prefix);
    if ((kl && (unsigned char)k[0] == 0xFF) || kl < pl || memcmp(k, it->prefix, pl) != 0) {
        it->eof = 1;
        return 0;
    }
    if (set_str(&it->last, k, kl) != 0) {
        it->failed = 1;
        return -1;
    }
    it->last_len = kl;
    if (meta_p && stor_rec_decode_object_meta(v, vl, meta_p) != STOR_OK) {
        log_error("storage: corrupt object record for %.*s in %s", (int)kl, k, it->oid);
        it->failed = 1;
        return -1;
    }
    *key_p = it->last;
    *key_len_p = kl;
    return 1;
}

void rs_iter_close(stor_iter_t *it_)
{
    riter_t *it = (riter_t *)it_;
    if (!it)
        return;
    batch_end(it);
    free(it->prefix);
    free(it->from);
    free(it->last);
    free(it);
}
