/* Where a change of one key goes while a bucket's index may be resharded
 * (rados_reshard.c moves it): the key's shard object, what that object's
 * tombstone must hold for the change to land, and the one write op that
 * compares it. With no reshard running the op is the one there always was
 * (the tombstone compared absent), so a change costs nothing more; a
 * change that finds the tombstone other than it expected (-ESTALE) or the
 * object gone asks rs_route_again where the key's changes go now. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/hash.h"
#include "common/log.h"
#include "storage/rados/rados_internal.h"

void rs_route_init(rs_route_t *r, const rs_index_t *ix, const char *key)
{
    r->ix = *ix;
    rs_key_oid(ix, key, r->oid);
    r->tracked = ix->to != 0;
    r->waited_ms = 0;
}

int rs_route_apply(rstor_t *st, const rs_route_t *r, const char *key, const rs_change_t *c)
{
    rados_write_op_t op = rados_create_write_op();
    if (!op)
        return -ENOMEM;
    int pt = 0, pc[RS_CHG_MAX] = {0};
    const char *tomb = r->tracked ? RSTOR_TRACKED : "";
    rados_write_op_assert_exists(op);
    rados_write_op_omap_cmp2(op, RSTOR_TOMB, LIBRADOS_CMPXATTR_OP_EQ, tomb, strlen(RSTOR_TOMB),
                             strlen(tomb), &pt);
    for (int i = 0; i < c->ncmp; i++)
        rados_write_op_omap_cmp2(op, c->ck[i], LIBRADOS_CMPXATTR_OP_EQ, c->cv[i], c->ckl[i],
                                 c->cvl[i], &pc[i]);
    if (c->nrm)
        rados_write_op_omap_rm_keys2(op, c->rk, c->rkl, (size_t)c->nrm);
    if (c->nset)
        rados_write_op_omap_set2(op, c->sk, c->sv, c->skl, c->svl, (size_t)c->nset);
    int rc = 0;
    if (r->tracked) {
        /* The copy of this shard's entries may have passed the key: the
         * mark makes the reshard copy it again. A fresh value each time, so
         * the reshard can tell a mark set again from the one it copied. */
        size_t klen = strlen(key), dl = strlen(RSTOR_DIRTY);
        char mk[sizeof RSTOR_DIRTY + S3R_MAX_KEY_BYTES];
        uint8_t nonce[8];
        if (klen > S3R_MAX_KEY_BYTES || hash_random_bytes(nonce, sizeof nonce) != 0) {
            rc = -EIO;
        } else {
            memcpy(mk, RSTOR_DIRTY, dl);
            memcpy(mk + dl, key, klen);
            const char *mks[1] = {mk}, *mvs[1] = {(const char *)nonce};
            size_t mkl = dl + klen, mvl = sizeof nonce;
            rados_write_op_omap_set2(op, mks, mvs, &mkl, &mvl, 1);
        }
    }
    if (rc == 0)
        rc = rados_write_op_operate(op, st->index, r->oid, NULL, 0);
    rados_release_write_op(op);
    if (rc == -ECANCELED && pt < 0)
        rc = -ESTALE;
    return rc;
}

static void sleep_ms(uint32_t ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

stor_status_t rs_route_again(rstor_t *st, rs_route_t *r, const char *key)
{
    for (;;) {
        rs_index_t fresh;
        stor_status_t s =
            r->ix.bucket[0] ? rs_bucket_id(st, r->ix.bucket, 1, &fresh) : STOR_ERR_NO_BUCKET;
        if (s != STOR_OK)
            return s;
        if (fresh.id != r->ix.id)
            return STOR_ERR_NO_BUCKET; /* deleted, maybe taken again */
        if (fresh.gen != r->ix.gen || fresh.shards != r->ix.shards) {
            rs_route_init(r, &fresh, key); /* the reshard finished */
            return STOR_OK;
        }
        buf_t t;
        int rc = rs_omap_get(st->index, r->oid, RSTOR_TOMB, strlen(RSTOR_TOMB), &t);
        int fenced = rc == -ENOENT || (rc == 1 && t.len == 1 && t.data[0] == RSTOR_FENCED[0]);
        int tracked = rc == 1 && t.len == 1 && t.data[0] == RSTOR_TRACKED[0];
        buf_free(&t);
        if (rc < 0 && rc != -ENOENT)
            return rs_fail("index tombstone", r->oid, rc);
        if (rc == 0 || tracked) {
            /* Open, or tracked: the record told this writer otherwise (it
             * was read before the reshard began, or after one whose runner
             * died before tracking every shard). */
            r->ix = fresh;
            r->tracked = tracked;
            return STOR_OK;
        }
        if (!fenced || fresh.to == 0)
            return STOR_ERR_NO_BUCKET; /* a delete's tombstone, or no index at all */
        /* The reshard is copying this shard's last changes, then switches
         * the record: wait for it, a few ms at a time. Held a while, the
         * writer finishes it if its runner died (its lease lapsed). */
        if (r->waited_ms >= RSTOR_RESHARD_WAIT_MS) {
            log_error("storage: bucket %s: a reshard has held writes to %s for %u ms (a gateway "
                      "finishes it once its runner's lease lapses; s3rdmad reshard finishes it now)",
                      r->ix.bucket, r->oid, r->waited_ms);
            return STOR_ERR_UNAVAILABLE;
        }
        if (r->waited_ms >= RSTOR_TAKEOVER_AFTER_MS && rs_reshard_takeover(st, &fresh) == STOR_OK)
            continue;
        uint32_t ms = r->waited_ms < 20 ? 2 : 10;
        sleep_ms(ms);
        r->waited_ms += ms;
    }
}

stor_status_t rs_route_failed(rstor_t *st, rs_route_t *r, const char *key, int rc)
{
    if (rc == -ECANCELED)
        return STOR_OK;
    if (rc == -ESTALE || rc == -ENOENT)
        return rs_route_again(st, r, key);
    return rs_fail("index switch", r->oid, rc);
}
