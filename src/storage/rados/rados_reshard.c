/* Online resharding of a bucket's index (stor_bucket_reshard): the keys of
 * generation g's shards are copied into the shards of generation g + 1
 * while the bucket is read and written, then the record names the new
 * ones. docs/storage.md ("Online resharding") has the steps and why each
 * crash between them leaves a bucket that works and a reshard that the
 * next run finishes.
 *
 *   1. The record gets reshard_to (writers read it with every request).
 *   2. Every old shard's tombstone becomes RSTOR_TRACKED: from then on each
 *      change of a key on it also sets the key's dirty mark (rs_route_apply).
 *   3. Every old shard is copied, batch by batch, into the new shards.
 *   4. Passes over the dirty marks copy each marked key again (its record
 *      and version entries, replacing what the new shard holds of it) and
 *      take the mark away if no change set it again meanwhile, until few
 *      keys remain marked or the passes stop shrinking.
 *   5. Every old shard's tombstone becomes RSTOR_FENCED: no change lands on
 *      it any more (writers wait, rs_route_again, and finish the reshard
 *      themselves if its runner died: rs_reshard_takeover); the keys still
 *      marked are copied a last time.
 *   6. The old shard objects are removed; readers that find them gone read
 *      the new generation (complete now).
 *   7. The record names generation g + 1 and drops reshard_to: writers go
 *      on there.
 *
 * Who runs a reshard, under which lease, and how the gateways resume one
 * whose runner died (the registry of reshards under way) is in
 * rados_reshard_resume.c. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"
#include "storage/rados/rados_internal.h"
#include "storage/rados/rados_reshard.h"

/* ==== The bucket record ================================================== */

/* rados_reshard.h */
stor_status_t rs_reshard_record_set(rstor_t *st, const rs_index_t *ix, uint32_t gen,
                                    uint32_t shards, uint32_t to)
{
    stor_bucket_t b = {.id = ix->id};
    snprintf(b.name, sizeof b.name, "%s", ix->bucket);
    for (int attempt = 0; attempt < RSTOR_RETRIES; attempt++) {
        buf_t old = {0}, rec;
        buf_init(&rec, STOR_REC_MAX);
        stor_bucket_rec_t r;
        stor_status_t s = rs_bucket_read(&st->base, &b, &old);
        if (s == STOR_OK)
            s = stor_rec_decode_bucket_rec(old.data, old.len, &r);
        int done = 0;
        if (s == STOR_OK) {
            rs_index_t cur = rs_index_of(&r.b);
            done = cur.gen == gen && cur.shards == shards && cur.to == to;
            if (!done && (cur.gen != ix->gen || cur.shards != ix->shards || cur.to != ix->to))
                s = STOR_ERR_PRECONDITION;
        }
        if (s == STOR_OK && !done) {
            r.b.index_gen = gen;
            r.b.index_shards = shards;
            r.b.reshard_to = to;
            if (stor_rec_encode_bucket_rec(&rec, &r) != 0)
                s = STOR_ERR_NOMEM;
        }
        int rc = s == STOR_OK && !done ? rs_omap_cas(st->index, RSTOR_BUCKETS_OID, b.name,
                                                     strlen(b.name), &old, &rec, 0)
                                       : 0;
        buf_free(&old);
        buf_free(&rec);
        if (s != STOR_OK || rc == 0)
            return s;
        if (rc != -ECANCELED)
            return rs_fail("change bucket", b.name, rc);
    }
    return STOR_ERR_UNAVAILABLE;
}

/* ==== The run's token ==================================================== */

/* rados_reshard.h */
int rs_run_keep(run_t *r)
{
    int rc = 0;
    pthread_mutex_lock(&r->lock);
    uint64_t now = clock_mono_ms();
    if (!r->fenced && __atomic_load_n(&r->st->gc_stop, __ATOMIC_RELAXED))
        rc = -EINTR;
    else if (now - r->renewed_ms >= RESHARD_RENEW_MS) {
        if (rs_lease(&r->st->base, r->lease, RESHARD_LEASE_MS) == STOR_OK)
            r->renewed_ms = now;
        else
            rc = -ETIMEDOUT;
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

void rs_run_guard(rados_write_op_t op, const run_t *r)
{
    rados_write_op_cmpxattr(op, RESHARD_TOKEN_XATTR, LIBRADOS_CMPXATTR_OP_EQ, r->token,
                            RESHARD_TOKEN_LEN);
}

int rs_run_result(int rc)
{
    return rc > 0 ? 0 : rc;
}

/* The write op that makes new shard oid name r: created with r's token when
 * it does not exist (n, the length of the token it holds: -ENOENT), else
 * its token replaced in a compare-and-set of the one it held (old, n bytes;
 * n -ENODATA: none). NULL when out of memory. */
static rados_write_op_t claim_op(const run_t *r, int n, const char *old)
{
    rados_write_op_t op = rados_create_write_op();
    if (!op)
        return NULL;
    if (n == -ENOENT)
        rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
    else
        rados_write_op_assert_exists(op);
    if (n >= 0)
        rados_write_op_cmpxattr(op, RESHARD_TOKEN_XATTR, LIBRADOS_CMPXATTR_OP_EQ, old, (size_t)n);
    rados_write_op_setxattr(op, RESHARD_TOKEN_XATTR, r->token, RESHARD_TOKEN_LEN);
    return op;
}

/* The result of a claim's write: a shard made, or removed, by another run
 * meanwhile is another run's claim (r stops). */
static int claim_result(int rc)
{
    rc = rs_run_result(rc);
    return rc == -EEXIST || rc == -ENOENT ? -ECANCELED : rc;
}

/* One new shard's claim (claim_rest). */
typedef struct claim {
    char oid[RSTOR_OID_MAX];
    char old[RESHARD_TOKEN_LEN + 1];
    int n; /* the token's length, or the read's failure */
} claim_t;

/* New shards 1 to N-1 of r, claimed at once (claim_rest). */
typedef struct claims {
    run_t *r;
    claim_t *cs; /* cs[i]: new shard i + 1's */
} claims_t;

/* An rs_batch_send_fn: reads the token new shard i + 1 holds. */
static int claim_read_send(void *arg, uint32_t i, rados_completion_t c)
{
    claims_t *a = arg;
    claim_t *cl = &a->cs[i];
    return rados_aio_getxattr(a->r->st->index, cl->oid, c, RESHARD_TOKEN_XATTR, cl->old,
                              sizeof cl->old);
}

/* An rs_batch_send_fn: writes new shard i + 1's claim (claim_op). */
static int claim_write_send(void *arg, uint32_t i, rados_completion_t c)
{
    claims_t *a = arg;
    claim_t *cl = &a->cs[i];
    rados_write_op_t op = claim_op(a->r, cl->n, cl->old);
    if (!op)
        return -ENOMEM;
    int rc = rados_aio_write_op_operate(op, a->r->st->index, c, cl->oid, NULL, 0);
    rados_release_write_op(op);
    return rc;
}

/* Claims new shards 1 to N-1 of r (shard 0 is r's already): every token
 * read at once, then every claim written at once: two round trips
 * whatever N. 0, -ECANCELED, or a librados code (oid: the object). */
static int claim_rest(run_t *r, char oid[RSTOR_OID_MAX])
{
    uint32_t n = r->nx->shards - 1;
    claim_t *cs = calloc(n ? n : 1, sizeof *cs);
    int *res = calloc(n ? n : 1, sizeof *res);
    if (!cs || !res) {
        free(cs);
        free(res);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++)
        rs_index_oid(r->nx, i + 1, cs[i].oid);
    claims_t a = {.r = r, .cs = cs};
    uint32_t at;
    int rc = rs_batch(n, claim_read_send, &a, res, &at);
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        cs[i].n = res[i];
        if (res[i] < 0 && res[i] != -ENOENT && res[i] != -ENODATA) {
            rc = res[i];
            at = i;
        }
    }
    if (rc == 0)
        rc = claim_result(rs_batch(n, claim_write_send, &a, res, &at));
    for (uint32_t i = 0; i < n && rc == 0; i++)
        if ((rc = claim_result(res[i])) < 0)
            at = i;
    if (rc < 0)
        snprintf(oid, RSTOR_OID_MAX, "%s", cs[at].oid);
    free(cs);
    free(res);
    return rc;
}

/* Makes every new shard of r name r: shard 0 first (run_check reads it:
 * another run that claimed any shard claimed it), then the others at once
 * (claim_rest). Each is created with r's token, or its token replaced by
 * r's in a compare-and-set (a run that died or stalls held it). 0,
 * -ECANCELED (another run claimed a shard meanwhile: r stops), or a
 * librados code (oid: the object). */
static int run_claim(run_t *r, char oid[RSTOR_OID_MAX])
{
    if (hash_random_hex(RESHARD_TOKEN_LEN / 2, r->token) != 0)
        return -EIO;
    rs_index_oid(r->nx, 0, oid);
    char old[RESHARD_TOKEN_LEN + 1];
    int n = rados_getxattr(r->st->index, oid, RESHARD_TOKEN_XATTR, old, sizeof old);
    if (n < 0 && n != -ENOENT && n != -ENODATA)
        return n;
    rados_write_op_t op = claim_op(r, n, old);
    if (!op)
        return -ENOMEM;
    int rc = claim_result(rados_write_op_operate(op, r->st->index, oid, NULL, 0));
    rados_release_write_op(op);
    return rc < 0 ? rc : claim_rest(r, oid);
}

/* Before each step of r that changes anything but the new shards (the
 * fence, the removal, the record; an abort): the lease renewed when due,
 * and new shard 0 still names r (r claims shard 0 first, so another run
 * that claimed any has claimed it: r's copies until now landed before the
 * other's). 0, -ECANCELED (r was taken over), -ETIMEDOUT, or a librados
 * code. */
static int run_check(run_t *r)
{
    int rc = rs_run_keep(r);
    char oid[RSTOR_OID_MAX];
    rs_index_oid(r->nx, 0, oid);
    rados_read_op_t op = rc == 0 ? rados_create_read_op() : NULL;
    if (rc == 0 && !op)
        rc = -ENOMEM;
    if (rc == 0) {
        rados_read_op_cmpxattr(op, RESHARD_TOKEN_XATTR, LIBRADOS_CMPXATTR_OP_EQ, r->token,
                               RESHARD_TOKEN_LEN);
        rc = rs_run_result(rados_read_op_operate(op, r->st->index, oid, 0));
        rados_release_read_op(op);
        if (rc == -ENOENT)
            rc = -ECANCELED; /* removed by a run that aborted */
    }
    return rc;
}

/* ==== Tombstones ========================================================= */

/* Moves oid's tombstone from `from` ("": absent) to `to`. 0 (done, or it
 * already held `to`), 1 (the object is gone), -ESTALE (it holds something
 * else: a delete's), or a librados code. */
static int tomb_move(rstor_t *st, const char *oid, const char *from, const char *to)
{
    buf_t f = {.data = (char *)from, .len = strlen(from)},
          t = {.data = (char *)to, .len = strlen(to)};
    int rc = rs_omap_cas(st->index, oid, RSTOR_TOMB, strlen(RSTOR_TOMB), f.len ? &f : NULL,
                         t.len ? &t : NULL, 0);
    if (rc == -ENOENT)
        return 1;
    if (rc != -ECANCELED)
        return rc;
    buf_t cur;
    rc = rs_omap_get(st->index, oid, RSTOR_TOMB, strlen(RSTOR_TOMB), &cur);
    int same = rc >= 0 && cur.len == t.len && memcmp(cur.data, to, t.len) == 0;
    buf_free(&cur);
    if (rc == -ENOENT)
        return 1;
    if (rc < 0)
        return rc;
    return same ? 0 : -ESTALE;
}

/* What shards_all does to each shard object. */
enum shards_op {
    SHARDS_FENCE,  /* its tombstone moved from RSTOR_TRACKED to RSTOR_FENCED */
    SHARDS_REMOVE, /* removed */
};

/* The shard objects shards_all changes, and how. */
typedef struct shards {
    rstor_t *st;
    const rs_index_t *ix;
    enum shards_op what;
} shards_t;

/* An rs_batch_send_fn: the op on shard object s. */
static int shards_send(void *arg, uint32_t s, rados_completion_t c)
{
    const shards_t *a = arg;
    char oid[RSTOR_OID_MAX];
    rs_index_oid(a->ix, s, oid);
    if (a->what == SHARDS_REMOVE)
        return rados_aio_remove(a->st->index, oid, c);
    rados_write_op_t op = rados_create_write_op();
    if (!op)
        return -ENOMEM;
    const char *k[1] = {RSTOR_TOMB}, *v[1] = {RSTOR_FENCED};
    size_t kl = strlen(RSTOR_TOMB), vl = strlen(RSTOR_FENCED);
    rados_write_op_assert_exists(op);
    rados_write_op_omap_cmp2(op, RSTOR_TOMB, LIBRADOS_CMPXATTR_OP_EQ, RSTOR_TRACKED, kl,
                             strlen(RSTOR_TRACKED), NULL);
    rados_write_op_omap_set2(op, k, v, &kl, &vl, 1);
    int rc = rados_aio_write_op_operate(op, a->st->index, c, oid, NULL, 0);
    rados_release_write_op(op);
    return rc;
}

/* The same op on every shard object of ix at once (writers are held while
 * the fence's steps run, so they are one round trip each, not one per
 * shard). A shard whose fence fails is then moved alone, tomb_move telling
 * a tombstone already fenced from a delete's. 0, or the first librados code
 * (a shard already gone is not one). */
static int shards_all(rstor_t *st, const rs_index_t *ix, enum shards_op what)
{
    int *res = calloc(ix->shards, sizeof *res);
    if (!res)
        return -ENOMEM;
    shards_t a = {.st = st, .ix = ix, .what = what};
    uint32_t sent;
    int rc = rs_batch(ix->shards, shards_send, &a, res, &sent);
    char oid[RSTOR_OID_MAX];
    for (uint32_t s = 0; s < sent; s++) {
        int r = res[s];
        if (r == -ENOENT)
            continue;
        if (r < 0 && what == SHARDS_FENCE) {
            rs_index_oid(ix, s, oid);
            if ((r = tomb_move(st, oid, RSTOR_TRACKED, RSTOR_FENCED)) == 1)
                r = 0;
        }
        if (r < 0 && rc == 0)
            rc = r;
    }
    free(res);
    return rc;
}

/* ==== The runner ========================================================= */

/* Undoes steps 1-2 of a reshard that found the bucket being deleted
 * (unless r was taken over). */
static void reshard_abort(run_t *r)
{
    rstor_t *st = r->st;
    const rs_index_t *ix = r->ix, *nx = r->nx;
    char oid[RSTOR_OID_MAX];
    if (run_check(r) != 0)
        return;
    rs_reshard_record_set(st, ix, ix->gen, ix->shards, 0);
    for (uint32_t s = 0; s < ix->shards; s++) {
        rs_index_oid(ix, s, oid);
        tomb_move(st, oid, RSTOR_TRACKED, "");
    }
    for (uint32_t s = 0; s < nx->shards; s++) {
        rs_index_oid(nx, s, oid);
        rados_remove(st->index, oid);
    }
}

/* The end of run r at a failure of step `what` (oid: the object): a run
 * that was taken over (its lease lapsed, another run claimed the new
 * shards) stops without changing anything more. */
static stor_status_t run_fail(const run_t *r, const char *what, const char *oid, int rc)
{
    if (rc == -EINTR) {
        log_info("storage: reshard of %s: stopped, this process is closing (a gateway "
                 "resumes it once its lock lapses)",
                 r->ix->bucket);
        return STOR_ERR_UNAVAILABLE;
    }
    if (rc != -ECANCELED && rc != -ETIMEDOUT)
        return rs_fail(what, oid, rc);
    log_error("storage: reshard of %s: another run took this one over (its lock lapsed: "
              "this run was stopped or slow): this run stops and changes nothing more",
              r->ix->bucket);
    return STOR_ERR_PRECONDITION;
}

/* Steps 2-7 of r (reshard_to set in its record), after the new shards are
 * claimed. A shard found fenced or gone in step 2 says a run that died got
 * past step 4 (it fences only then): the copy is complete but for the keys
 * still marked, and this run goes on from step 5. Each step that changes
 * more than the new shards (whose writes check the token) checks first
 * that r still holds them (run_check). */
static stor_status_t reshard_steps(run_t *r)
{
    rstor_t *st = r->st;
    const rs_index_t *ix = r->ix, *nx = r->nx;
    char oid[RSTOR_OID_MAX];
    int rc = 0, resumed = 0;
    uint64_t t0 = clock_mono_ms();
    if ((rc = run_claim(r, oid)) < 0)
        return run_fail(r, "reshard: claim shards", oid, rc);
    for (uint32_t s = 0; s < ix->shards && rc == 0; s++) {
        rs_index_oid(ix, s, oid);
        rc = tomb_move(st, oid, "", RSTOR_TRACKED);
        if (rc == -ESTALE && tomb_move(st, oid, RSTOR_FENCED, RSTOR_FENCED) == 0)
            rc = 1; /* fenced by a run that died */
        if (rc == -ESTALE) {
            log_error("storage: reshard of %s: the bucket is being deleted", ix->bucket);
            reshard_abort(r);
            return STOR_ERR_NO_BUCKET;
        }
        if (rc == 1) {
            resumed = 1; /* fenced, or removed (step 6) */
            rc = 0;
        }
    }
    if (rc < 0)
        return run_fail(r, "reshard: track shard", oid, rc);
    uint64_t copied = 0, again = 0;
    if (!resumed)
        rc = rs_reshard_copy_all(r, &copied, oid);
    uint64_t t1 = clock_mono_ms();
    if (!resumed && rc == 0 && (rc = rs_reshard_copy_passes(r, &again)) < 0)
        snprintf(oid, sizeof oid, "%s", ix->bucket);
    if (rc == 0)
        rs_crash_point(st, "reshard-copied");
    /* 5. The fence, and the last copy. Writers of these shards wait from
     * here to step 7. */
    uint64_t t2 = clock_mono_ms();
    pthread_mutex_lock(&r->lock);
    r->fenced = rc == 0;
    pthread_mutex_unlock(&r->lock);
    if (rc == 0 && (rc = run_check(r)) == 0)
        rc = shards_all(st, ix, SHARDS_FENCE);
    uint64_t last = 0;
    if (rc == 0 && (rc = rs_reshard_dirty_pass(r, 0, &last)) < 0)
        snprintf(oid, sizeof oid, "%s", ix->bucket);
    if (rc < 0)
        return run_fail(r, "reshard: copy", oid, rc);
    rs_crash_point(st, "reshard-fenced");
    /* 6. The old objects go; 7. the record names the new ones. */
    if ((rc = run_check(r)) < 0 || (rc = shards_all(st, ix, SHARDS_REMOVE)) < 0)
        return run_fail(r, "reshard: remove shards", ix->bucket, rc);
    rs_crash_point(st, "reshard-removed");
    if ((rc = run_check(r)) < 0)
        return run_fail(r, "reshard: switch", ix->bucket, rc);
    stor_status_t st_ = rs_reshard_record_set(st, ix, nx->gen, nx->shards, 0);
    uint64_t t3 = clock_mono_ms();
    if (resumed)
        log_info("storage: resharded %s from %" PRIu32 " to %" PRIu32 " shards (generation %" PRIu32
                 "), resumed after a run that died at the fence: writes held %" PRIu64
                 " ms here (%" PRIu64 " keys in the last copy)",
                 ix->bucket, ix->shards, nx->shards, nx->gen, t3 - t2, last);
    else
        log_info("storage: resharded %s from %" PRIu32 " to %" PRIu32 " shards (generation %" PRIu32
                 "): %" PRIu64 " entries copied in %" PRIu64 " ms, %" PRIu64
                 " keys copied again in %" PRIu64 " ms, writes held %" PRIu64 " ms (%" PRIu64
                 " keys in the last copy)",
                 ix->bucket, ix->shards, nx->shards, nx->gen, copied, t1 - t0, again, t2 - t1,
                 t3 - t2, last);
    return st_;
}

/* rados_reshard.h */
stor_status_t rs_reshard_run(rstor_t *st, const rs_index_t *ix, const char *lease)
{
    rs_index_t nx = rs_index_next(ix);
    run_t r = {.st = st, .ix = ix, .nx = &nx, .lease = lease, .renewed_ms = clock_mono_ms()};
    pthread_mutex_init(&r.lock, NULL);
    stor_status_t s = reshard_steps(&r);
    pthread_mutex_destroy(&r.lock);
    return s;
}
