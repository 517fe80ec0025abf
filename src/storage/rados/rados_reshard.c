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
 *      on there. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"
#include "storage/rados/rados_internal.h"

/* How long the runner's lease lasts without a renewal: a runner that dies
 * lets the next one take over after it, which a new run waits for. A live
 * runner renews it at least every RESHARD_RENEW_MS, from every step (the
 * copy's batches, each key of a pass, the fence to the switch). */
#define RESHARD_LEASE_MS 10000
#define RESHARD_RENEW_MS (RESHARD_LEASE_MS / 4)
/* Marked keys left after which the passes stop and the shards are fenced:
 * the writers' wait is the last copy of at most about this many keys. */
#define RESHARD_FENCE_AT 64
#define RESHARD_PASSES   8

/* ==== The bucket record ================================================== */

/* Moves the index state of bucket ix->bucket's record (of id ix->id) from
 * the one ix names (its generation, shards and reshard_to) to gen, shards,
 * to, in one compare-and-set (retried when another change of the record
 * came first). STOR_OK also when the record holds the new state already (a
 * run that took over got there first); STOR_ERR_PRECONDITION when it holds
 * another (another run changed it). */
static stor_status_t record_set(rstor_t *st, const rs_index_t *ix, uint32_t gen, uint32_t shards,
                                uint32_t to)
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

/* The xattr of every new shard that names the run writing into it: each
 * copy write compares it in the same write op, so a run that was taken
 * over (its lease lapsed and another run claimed the shards) has its
 * writes fail with -ECANCELED instead of putting back entries that the
 * other run and the writers after it changed. Writers never read it. */
#define RESHARD_TOKEN_XATTR "s3rdma.reshard.run"
#define RESHARD_TOKEN_LEN   32

/* One run of a reshard of ix into nx. */
typedef struct run {
    rstor_t *st;
    const rs_index_t *ix, *nx;
    const char *lease;
    char token[RESHARD_TOKEN_LEN + 1]; /* this run's, random */
    uint64_t renewed_ms;               /* the lease's last renewal, under lock */
    pthread_mutex_t lock;
} run_t;

/* Renews r's lease when RESHARD_RENEW_MS have passed since it was last
 * (from any thread). 0, or -ETIMEDOUT: the lease is another's now. */
static int run_keep(run_t *r)
{
    int rc = 0;
    pthread_mutex_lock(&r->lock);
    uint64_t now = clock_mono_ms();
    if (now - r->renewed_ms >= RESHARD_RENEW_MS) {
        if (rs_lease(&r->st->base, r->lease, RESHARD_LEASE_MS) == STOR_OK)
            r->renewed_ms = now;
        else
            rc = -ETIMEDOUT;
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

/* Adds to op the check that its object (a new shard) still names run r. */
static void run_guard(rados_write_op_t op, const run_t *r)
{
    rados_write_op_cmpxattr(op, RESHARD_TOKEN_XATTR, LIBRADOS_CMPXATTR_OP_EQ, r->token,
                            RESHARD_TOKEN_LEN);
}

/* The result of an op with a cmpxattr: 0 or a librados code (the OSD
 * answers a cmpxattr that holds with 1, and an op ending with one too). */
static int run_result(int rc)
{
    return rc > 0 ? 0 : rc;
}

/* Makes every new shard of r (in order, from shard 0) name r: created with
 * r's token, or its token replaced by r's in a compare-and-set (a run that
 * died or stalls held it). 0, -ECANCELED (another run claimed a shard
 * meanwhile: r stops), or a librados code (oid: the object). */
static int run_claim(run_t *r, char oid[RSTOR_OID_MAX])
{
    uint8_t raw[RESHARD_TOKEN_LEN / 2];
    if (hash_random_bytes(raw, sizeof raw) != 0)
        return -EIO;
    hash_hex_encode(raw, sizeof raw, r->token);
    int rc = 0;
    for (uint32_t s = 0; s < r->nx->shards && rc == 0; s++) {
        rs_index_oid(r->nx, s, oid);
        char old[RESHARD_TOKEN_LEN + 1];
        int n = rados_getxattr(r->st->index, oid, RESHARD_TOKEN_XATTR, old, sizeof old);
        if (n < 0 && n != -ENOENT && n != -ENODATA)
            return n;
        rados_write_op_t op = rados_create_write_op();
        if (!op)
            return -ENOMEM;
        if (n == -ENOENT)
            rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
        else
            rados_write_op_assert_exists(op);
        if (n >= 0)
            rados_write_op_cmpxattr(op, RESHARD_TOKEN_XATTR, LIBRADOS_CMPXATTR_OP_EQ, old,
                                    (size_t)n);
        rados_write_op_setxattr(op, RESHARD_TOKEN_XATTR, r->token, RESHARD_TOKEN_LEN);
        rc = run_result(rados_write_op_operate(op, r->st->index, oid, NULL, 0));
        rados_release_write_op(op);
        if (rc == -EEXIST || rc == -ENOENT)
            rc = -ECANCELED; /* made, or removed, by another run meanwhile */
    }
    return rc;
}

/* Before each step of r that changes anything but the new shards (the
 * fence, the removal, the record; an abort): the lease renewed when due,
 * and new shard 0 still names r (r claims shard 0 first, so another run
 * that claimed any has claimed it: r's copies until now landed before the
 * other's). 0, -ECANCELED (r was taken over), -ETIMEDOUT, or a librados
 * code. */
static int run_check(run_t *r)
{
    int rc = run_keep(r);
    char oid[RSTOR_OID_MAX];
    rs_index_oid(r->nx, 0, oid);
    rados_read_op_t op = rc == 0 ? rados_create_read_op() : NULL;
    if (rc == 0 && !op)
        rc = -ENOMEM;
    if (rc == 0) {
        rados_read_op_cmpxattr(op, RESHARD_TOKEN_XATTR, LIBRADOS_CMPXATTR_OP_EQ, r->token,
                               RESHARD_TOKEN_LEN);
        rc = run_result(rados_read_op_operate(op, r->st->index, oid, 0));
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

/* The same op on every shard object of ix at once (writers are held while
 * the fence's steps run, so they are one round trip each, not one per
 * shard). A shard whose fence fails is then moved alone, tomb_move telling
 * a tombstone already fenced from a delete's. 0, or the first librados code
 * (a shard already gone is not one). */
static int shards_all(rstor_t *st, const rs_index_t *ix, enum shards_op what)
{
    rados_completion_t *cs = calloc(ix->shards, sizeof *cs);
    if (!cs)
        return -ENOMEM;
    char oid[RSTOR_OID_MAX];
    int rc = 0;
    for (uint32_t s = 0; s < ix->shards && rc == 0; s++) {
        rs_index_oid(ix, s, oid);
        if ((rc = rados_aio_create_completion2(NULL, NULL, &cs[s])) < 0)
            break;
        rados_write_op_t op = NULL;
        if (what == SHARDS_REMOVE)
            rc = rados_aio_remove(st->index, oid, cs[s]);
        else if (!(op = rados_create_write_op()))
            rc = -ENOMEM;
        if (op) {
            const char *k[1] = {RSTOR_TOMB}, *v[1] = {RSTOR_FENCED};
            size_t kl = strlen(RSTOR_TOMB), vl = strlen(RSTOR_FENCED);
            rados_write_op_assert_exists(op);
            rados_write_op_omap_cmp2(op, RSTOR_TOMB, LIBRADOS_CMPXATTR_OP_EQ, RSTOR_TRACKED, kl,
                                     strlen(RSTOR_TRACKED), NULL);
            rados_write_op_omap_set2(op, k, v, &kl, &vl, 1);
        }
        if (op) {
            rc = rados_aio_write_op_operate(op, st->index, cs[s], oid, NULL, 0);
            rados_release_write_op(op);
        }
        if (rc < 0) {
            rados_aio_release(cs[s]);
            cs[s] = NULL;
        }
    }
    for (uint32_t s = 0; s < ix->shards; s++) {
        if (!cs[s])
            continue;
        rados_aio_wait_for_complete(cs[s]);
        int r = rados_aio_get_return_value(cs[s]);
        rados_aio_release(cs[s]);
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
    free(cs);
    return rc;
}

/* ==== Copying ============================================================ */

/* Entries read from an old shard, waiting to be written to the new ones. */
typedef struct batch {
    run_t *run;
    const rs_index_t *nx; /* the new generation */
    char **k, **v;
    size_t *kl, *vl;
    uint32_t *shard;
    size_t n, cap;
    int hold; /* gathers one key's entries: never flushed */
    uint64_t copied;
} batch_t;

/* The shard of nx that holds entry k (an object key, or a version entry). */
static int entry_shard(const rs_index_t *nx, const char *k, size_t kl, uint32_t *shard_p)
{
    if (kl && (unsigned char)k[0] == 0xFE) {
        buf_t key;
        buf_init(&key, (size_t)-1 / 2);
        if (rs_vkey_parse(k, kl, &key) != 0) {
            buf_free(&key);
            return -EIO;
        }
        *shard_p = rs_key_shard(nx->shards, key.data, key.len);
        buf_free(&key);
        return 0;
    }
    *shard_p = rs_key_shard(nx->shards, k, kl);
    return 0;
}

static void batch_clear(batch_t *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->k[i]);
        free(b->v[i]);
    }
    b->n = 0;
}

static void batch_free(batch_t *b)
{
    batch_clear(b);
    free(b->k);
    free(b->v);
    free(b->kl);
    free(b->vl);
    free(b->shard);
}

/* Writes the batch: one write op per new shard it touches, all in flight
 * at once. 0, or the first librados code. */
static int batch_flush(batch_t *b)
{
    uint32_t ns = b->nx->shards;
    rs_crash_point(b->run->st, "reshard-batch-read");
    int rc = run_keep(b->run);
    rados_completion_t *cs = calloc(ns, sizeof *cs);
    const char **ks = malloc((b->n + 1) * sizeof *ks), **vs = malloc((b->n + 1) * sizeof *vs);
    size_t *kls = malloc((b->n + 1) * sizeof *kls), *vls = malloc((b->n + 1) * sizeof *vls);
    if (!cs || !ks || !vs || !kls || !vls)
        rc = -ENOMEM;
    for (uint32_t s = 0; s < ns && rc == 0; s++) {
        size_t m = 0;
        for (size_t i = 0; i < b->n; i++)
            if (b->shard[i] == s) {
                ks[m] = b->k[i];
                vs[m] = b->v[i];
                kls[m] = b->kl[i];
                vls[m++] = b->vl[i];
            }
        if (!m)
            continue;
        char oid[RSTOR_OID_MAX];
        rs_index_oid(b->nx, s, oid);
        rados_write_op_t op = rados_create_write_op();
        if (!op) {
            rc = -ENOMEM;
            break;
        }
        rados_write_op_assert_exists(op);
        run_guard(op, b->run);
        rados_write_op_omap_set2(op, ks, vs, kls, vls, m);
        if ((rc = rados_aio_create_completion2(NULL, NULL, &cs[s])) == 0 &&
            (rc = rados_aio_write_op_operate(op, b->run->st->index, cs[s], oid, NULL, 0)) < 0) {
            rados_aio_release(cs[s]);
            cs[s] = NULL;
        }
        rados_release_write_op(op);
    }
    for (uint32_t s = 0; cs && s < ns; s++) {
        if (!cs[s])
            continue;
        rados_aio_wait_for_complete(cs[s]);
        int r = run_result(rados_aio_get_return_value(cs[s]));
        rados_aio_release(cs[s]);
        if (r < 0 && rc == 0)
            rc = r;
    }
    b->copied += b->n;
    batch_clear(b);
    free(cs);
    free(ks);
    free(vs);
    free(kls);
    free(vls);
    return rc;
}

/* An rs_omap_fn: adds one old shard entry to the batch (the tombstone and
 * the dirty marks stay behind), flushing it when full. */
static int batch_add(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    batch_t *b = arg;
    if (kl && (unsigned char)k[0] == 0xFF)
        return 0;
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 256;
        char **nk = realloc(b->k, cap * sizeof *nk);
        if (nk)
            b->k = nk;
        char **nv = realloc(b->v, cap * sizeof *nv);
        if (nv)
            b->v = nv;
        size_t *nkl = realloc(b->kl, cap * sizeof *nkl);
        if (nkl)
            b->kl = nkl;
        size_t *nvl = realloc(b->vl, cap * sizeof *nvl);
        if (nvl)
            b->vl = nvl;
        uint32_t *nsh = realloc(b->shard, cap * sizeof *nsh);
        if (nsh)
            b->shard = nsh;
        if (!nk || !nv || !nkl || !nvl || !nsh)
            return -ENOMEM;
        b->cap = cap;
    }
    size_t i = b->n;
    int rc = entry_shard(b->nx, k, kl, &b->shard[i]);
    if (rc < 0)
        return rc;
    b->k[i] = malloc(kl + 1);
    b->v[i] = malloc(vl + 1);
    if (!b->k[i] || !b->v[i]) {
        free(b->k[i]);
        free(b->v[i]);
        return -ENOMEM;
    }
    memcpy(b->k[i], k, kl);
    memcpy(b->v[i], v, vl);
    b->kl[i] = kl;
    b->vl[i] = vl;
    b->n++;
    return b->n >= RSTOR_OMAP_BATCH && !b->hold ? batch_flush(b) : 0;
}

/* The entries of key (klen bytes) in oid, its record and its version
 * entries, added to b. 0, or a librados code. */
static int key_entries(rstor_t *st, const char *oid, const char *key, size_t klen, batch_t *b)
{
    buf_t raw, pfx;
    int rc = rs_omap_get(st->index, oid, key, klen, &raw);
    if (rc > 0)
        rc = batch_add(b, key, klen, raw.data, raw.len);
    buf_free(&raw);
    if (rc < 0)
        return rc;
    if (rs_vprefix(key, klen, &pfx) != 0 || buf_append(&pfx, "\x01", 2) != 0) {
        buf_free(&pfx);
        return -ENOMEM;
    }
    buf_t from;
    buf_init(&from, (size_t)-1 / 2);
    rc = buf_append(&from, pfx.data, pfx.len) ? -ENOMEM : 0;
    unsigned char more = 1;
    while (rc == 0 && more) {
        rados_omap_iter_t it;
        if ((rc = rs_omap_read(st->index, oid, from.data, pfx.data, RSTOR_OMAP_BATCH, &it, &more)) <
            0)
            break;
        char *k, *v;
        size_t kl, vl;
        while (rc == 0 && rados_omap_get_next2(it, &k, &v, &kl, &vl) == 0 && k) {
            rc = batch_add(b, k, kl, v, vl);
            buf_reset(&from);
            if (rc == 0 && (buf_append(&from, k, kl) != 0 || buf_append(&from, "", 1) != 0))
                rc = -ENOMEM;
        }
        rados_omap_get_end(it);
    }
    buf_free(&pfx);
    buf_free(&from);
    return rc;
}

/* Copies key from old shard oid into run r's new generation: the new
 * shard's entries of the key are replaced by the old shard's (none: the
 * key is gone there too), in one write op that checks the shard still
 * names r. 0, -ECANCELED (r was taken over), or a librados code. */
static int copy_key(run_t *r, const char *oid, const char *key, size_t klen)
{
    rstor_t *st = r->st;
    char noid[RSTOR_OID_MAX];
    rs_index_oid(r->nx, rs_key_shard(r->nx->shards, key, klen), noid);
    batch_t src = {.run = r, .nx = r->nx, .hold = 1}, dst = {.run = r, .nx = r->nx, .hold = 1};
    int rc = run_keep(r);
    if (rc == 0)
        rc = key_entries(st, oid, key, klen, &src);
    if (rc == 0)
        rc = key_entries(st, noid, key, klen, &dst);
    rados_write_op_t op = rc == 0 ? rados_create_write_op() : NULL;
    if (rc == 0 && !op)
        rc = -ENOMEM;
    if (rc == 0) {
        rados_write_op_assert_exists(op);
        run_guard(op, r);
        if (dst.n)
            rados_write_op_omap_rm_keys2(op, (const char *const *)dst.k, dst.kl, dst.n);
        if (src.n)
            rados_write_op_omap_set2(op, (const char *const *)src.k, (const char *const *)src.v,
                                     src.kl, src.vl, src.n);
        rc = run_result(rados_write_op_operate(op, st->index, noid, NULL, 0));
        rados_release_write_op(op);
    }
    batch_free(&src);
    batch_free(&dst);
    return rc;
}

/* Marked keys of one batch of a pass (from every old shard), copied by
 * RESHARD_COPIERS threads at once: a key's copy is three round trips one
 * after another (its entries read on both sides, then written), so one at
 * a time a pass copies fewer keys a second than a few writers mark. */
#define RESHARD_COPIERS 16
typedef struct mark {
    const char *k, *v; /* the mark's key and value, in its shard's read */
    size_t kl, vl;
    uint32_t shard; /* the old shard it is on */
} mark_t;
typedef struct marks {
    run_t *run;
    int tracked;
    mark_t *all;
    size_t n;
    size_t next; /* the next mark to copy, under lock */
    int rc;      /* the first failure, under lock */
    pthread_mutex_t lock;
} marks_t;

static void *copier(void *arg)
{
    marks_t *m = arg;
    size_t dl = strlen(RSTOR_DIRTY);
    char oid[RSTOR_OID_MAX];
    for (;;) {
        pthread_mutex_lock(&m->lock);
        size_t i = m->rc == 0 && m->next < m->n ? m->next++ : m->n;
        pthread_mutex_unlock(&m->lock);
        if (i >= m->n)
            return NULL;
        const mark_t *mk = &m->all[i];
        rs_index_oid(m->run->ix, mk->shard, oid);
        int rc = copy_key(m->run, oid, mk->k + dl, mk->kl - dl);
        if (rc == 0 && m->tracked) {
            buf_t mark = {.data = (char *)mk->v, .len = mk->vl};
            rc = rs_omap_cas(m->run->st->index, oid, mk->k, mk->kl, &mark, NULL, 0);
            if (rc == -ECANCELED)
                rc = 0; /* changed again: the next pass copies it */
        }
        if (rc == -ENOENT)
            rc = 0; /* the old shard removed (step 6) by a run that took over */
        if (rc < 0) {
            pthread_mutex_lock(&m->lock);
            if (m->rc == 0)
                m->rc = rc;
            pthread_mutex_unlock(&m->lock);
        }
    }
}

/* Copies the m->n marked keys, on up to RESHARD_COPIERS threads (the
 * calling one among them). 0, or the first librados code. */
static int copy_marks(marks_t *m)
{
    pthread_t t[RESHARD_COPIERS - 1];
    size_t started = 0;
    m->next = 0;
    m->rc = 0;
    while (started < RESHARD_COPIERS - 1 && started + 1 < m->n &&
           pthread_create(&t[started], NULL, copier, m) == 0)
        started++;
    copier(m);
    for (size_t i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    return m->rc;
}

/* Marks a pass reads from one shard at a time when many shards have
 * marks: a batch is RSTOR_OMAP_BATCH marks spread over the shards, but at
 * least this many from each. */
#define RESHARD_MARKS_MIN 32

/* An old shard in a pass: where its next read starts, whether it has
 * more, its read in flight and the read whose entries the batch points
 * into. */
typedef struct mark_src {
    buf_t from;
    unsigned char more;
    rs_omap_read_t rd;
    rados_omap_iter_t it;
} mark_src_t;

/* One pass over the dirty marks of every old shard of ix: each marked key
 * is copied again; while the shards are tracked (not fenced) its mark is
 * taken away unless a change set it again meanwhile. A batch reads the
 * marks of all shards at once (up to RSTOR_OMAP_BATCH, at least
 * RESHARD_MARKS_MIN a shard) and the copiers work on every shard's keys
 * together: the pass after the fence, which writers wait for, costs one
 * read and the copies its keys need, not a round of both per shard. *n_p:
 * keys copied. 0, -ECANCELED (r was taken over), or a librados code (a
 * shard gone is skipped: removed by a run that took over). */
static int dirty_pass(run_t *r, int tracked, uint64_t *n_p)
{
    rstor_t *st = r->st;
    const rs_index_t *ix = r->ix;
    size_t dl = strlen(RSTOR_DIRTY);
    uint32_t ns = ix->shards;
    size_t room = (size_t)RESHARD_MARKS_MIN * ns;
    if (room < RSTOR_OMAP_BATCH)
        room = RSTOR_OMAP_BATCH;
    marks_t m = {.run = r, .tracked = tracked};
    m.all = malloc(room * sizeof *m.all);
    mark_src_t *src = calloc(ns, sizeof *src);
    int rc = !m.all || !src ? -ENOMEM : 0;
    uint32_t active = 0;
    for (uint32_t s = 0; s < ns && rc == 0; s++) {
        buf_init(&src[s].from, (size_t)-1 / 2);
        src[s].more = 1;
        active++;
        if (buf_append(&src[s].from, RSTOR_DIRTY, dl + 1) != 0)
            rc = -ENOMEM;
    }
    pthread_mutex_init(&m.lock, NULL);
    char oid[RSTOR_OID_MAX];
    while (rc == 0 && active) {
        size_t cap = RSTOR_OMAP_BATCH / active;
        if (cap < RESHARD_MARKS_MIN)
            cap = RESHARD_MARKS_MIN;
        uint32_t sent = 0;
        for (; sent < ns && rc == 0; sent++) {
            rs_index_oid(ix, sent, oid);
            if (src[sent].more && (rc = rs_omap_read_start(st->index, oid, src[sent].from.data,
                                                           RSTOR_DIRTY, cap, &src[sent].rd)) < 0)
                break;
        }
        m.n = 0;
        active = 0;
        for (uint32_t s = 0; s < sent; s++) {
            mark_src_t *ms = &src[s];
            if (!ms->more)
                continue;
            int r = rs_omap_read_finish(&ms->rd, &ms->it, &ms->more);
            if (r == -ENOENT)
                continue; /* removed: ms->more is 0 */
            if (r < 0 && rc == 0)
                rc = r;
            active += ms->more;
            /* The entries stay valid until the read ends. */
            char *k, *v;
            size_t kl, vl;
            while (r == 0 && rados_omap_get_next2(ms->it, &k, &v, &kl, &vl) == 0 && k) {
                buf_reset(&ms->from);
                if (buf_append(&ms->from, k, kl) != 0 || buf_append(&ms->from, "", 1) != 0)
                    r = rc = -ENOMEM;
                if (kl > dl)
                    m.all[m.n++] = (mark_t){k, v, kl, vl, s};
            }
        }
        if (rc == 0 && m.n) {
            rc = copy_marks(&m);
            *n_p += m.n;
        }
        for (uint32_t s = 0; s < ns; s++) {
            if (src[s].it)
                rados_omap_get_end(src[s].it);
            src[s].it = NULL;
        }
    }
    pthread_mutex_destroy(&m.lock);
    for (uint32_t s = 0; src && s < ns; s++)
        buf_free(&src[s].from);
    free(src);
    free(m.all);
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
    record_set(st, ix, ix->gen, ix->shards, 0);
    for (uint32_t s = 0; s < ix->shards; s++) {
        rs_index_oid(ix, s, oid);
        tomb_move(st, oid, RSTOR_TRACKED, "");
    }
    for (uint32_t s = 0; s < nx->shards; s++) {
        rs_index_oid(nx, s, oid);
        rados_remove(st->index, oid);
    }
}

/* Step 3 of r: every old shard's entries copied, batch by batch (the
 * lease renewed from each). *copied_p: entries copied. 0, -ECANCELED (r was
 * taken over), or a librados code (oid: the object). */
static int copy_all(run_t *r, uint64_t *copied_p, char oid[RSTOR_OID_MAX])
{
    int rc = 0;
    batch_t b = {.run = r, .nx = r->nx};
    for (uint32_t s = 0; s < r->ix->shards && rc == 0; s++) {
        rs_index_oid(r->ix, s, oid);
        rc = rs_omap_each(r->st->index, oid, "", batch_add, &b);
        if (rc == 0)
            rc = batch_flush(&b);
        if (rc == -ENOENT)
            rc = 0; /* removed (step 6) by a run that took over: copied then */
    }
    *copied_p = b.copied;
    batch_free(&b);
    return rc;
}

/* Step 4: passes over the dirty marks until few keys remain marked, or the
 * passes stop shrinking (the writers mark keys as fast as a pass copies
 * them: more passes would not make the last copy smaller). *again_p: keys
 * copied again. 0, -ECANCELED (r was taken over), or a librados code. */
static int copy_passes(run_t *r, uint64_t *again_p)
{
    int rc = 0;
    uint64_t pass_n = UINT64_MAX, prev;
    for (int pass = 0; pass < RESHARD_PASSES && rc == 0; pass++) {
        prev = pass_n;
        pass_n = 0;
        rc = dirty_pass(r, 1, &pass_n);
        *again_p += pass_n;
        if (pass_n <= RESHARD_FENCE_AT || pass_n >= prev)
            break;
    }
    return rc;
}

/* The end of run r at a failure of step `what` (oid: the object): a run
 * that was taken over (its lease lapsed, another run claimed the new
 * shards) stops without changing anything more. */
static stor_status_t run_fail(const run_t *r, const char *what, const char *oid, int rc)
{
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
        rc = copy_all(r, &copied, oid);
    uint64_t t1 = clock_mono_ms();
    if (!resumed && rc == 0 && (rc = copy_passes(r, &again)) < 0)
        snprintf(oid, sizeof oid, "%s", ix->bucket);
    if (rc == 0)
        rs_crash_point(st, "reshard-copied");
    /* 5. The fence, and the last copy. Writers of these shards wait from
     * here to step 7. */
    uint64_t t2 = clock_mono_ms();
    if (rc == 0 && (rc = run_check(r)) == 0)
        rc = shards_all(st, ix, SHARDS_FENCE);
    uint64_t last = 0;
    if (rc == 0 && (rc = dirty_pass(r, 0, &last)) < 0)
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
    stor_status_t st_ = record_set(st, ix, nx->gen, nx->shards, 0);
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

/* Reshards ix (reshard_to set in its record) under lease, just taken. */
static stor_status_t reshard_run(rstor_t *st, const rs_index_t *ix, const char *lease)
{
    rs_index_t nx = rs_index_next(ix);
    run_t r = {.st = st, .ix = ix, .nx = &nx, .lease = lease, .renewed_ms = clock_mono_ms()};
    pthread_mutex_init(&r.lock, NULL);
    stor_status_t s = reshard_steps(&r);
    pthread_mutex_destroy(&r.lock);
    return s;
}

/* The name of bucket id's reshard lease. */
static void lease_name(uint64_t id, char out[40])
{
    snprintf(out, 40, "reshard.%016" PRIx64, id);
}

/* Under the bucket's reshard lease: reads the record of bucket name (of id
 * id; 0: whichever) and finishes the reshard under way, or starts one to
 * shards (0: none, only finish). */
static stor_status_t reshard_locked(rstor_t *st, const char *name, uint64_t id, uint32_t shards,
                                    const char *lease)
{
    stor_bucket_t b;
    stor_status_t s = rs_bucket_lookup(st, name, &b);
    if (s != STOR_OK)
        return s;
    if (id && b.id != id)
        return STOR_OK; /* deleted since: nothing to finish */
    rs_index_t ix = rs_index_of(&b);
    if (!ix.to) {
        if (!shards)
            return STOR_OK; /* finished meanwhile */
        if (shards == ix.shards) {
            log_info("storage: %s already has %" PRIu32 " index shards", name, shards);
            return STOR_OK;
        }
        if ((s = record_set(st, &ix, ix.gen, ix.shards, shards)) != STOR_OK)
            return s;
        ix.to = shards;
    } else if (shards && ix.to != shards) {
        log_warn("storage: %s: finishing the reshard to %" PRIu32 " shards that was under way "
                 "(not %" PRIu32 ")",
                 name, ix.to, shards);
    }
    return reshard_run(st, &ix, lease);
}

stor_status_t rs_bucket_reshard(stor_t *st_, const char *name, uint32_t shards)
{
    rstor_t *st = (rstor_t *)st_;
    if (shards < 1 || shards > STOR_INDEX_SHARDS_MAX)
        return STOR_ERR_TOO_LARGE;
    stor_bucket_t b;
    stor_status_t s = rs_bucket_lookup(st, name, &b);
    if (s != STOR_OK)
        return s;
    char lease[40];
    lease_name(b.id, lease);
    /* Held: by a live runner (it keeps it; this run gives up), or by one
     * that died (it lapses within RESHARD_LEASE_MS; this run goes on). */
    uint64_t until = clock_mono_ms() + RESHARD_LEASE_MS + 2000;
    while ((s = rs_lease(st_, lease, RESHARD_LEASE_MS)) == STOR_ERR_PRECONDITION &&
           clock_mono_ms() < until) {
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (s != STOR_OK)
        return s;
    /* The record is read again under the lease: a run that ended
     * meanwhile changed it. */
    s = reshard_locked(st, name, 0, shards, lease);
    rs_lease_release(st, lease);
    return s;
}

stor_status_t rs_reshard_takeover(rstor_t *st, const rs_index_t *ix)
{
    if (pthread_mutex_trylock(&st->takeover_lock) != 0)
        return STOR_ERR_PRECONDITION;
    stor_status_t s = STOR_ERR_PRECONDITION;
    uint64_t now = clock_mono_ms();
    if (now >= st->takeover_next_ms) {
        st->takeover_next_ms = now + RSTOR_TAKEOVER_AFTER_MS;
        char lease[40];
        lease_name(ix->id, lease);
        if ((s = rs_lease(&st->base, lease, RESHARD_LEASE_MS)) == STOR_OK) {
            log_warn("storage: bucket %s: the reshard's runner died with the index fenced "
                     "(its lock lapsed): this gateway finishes the reshard",
                     ix->bucket);
            s = reshard_locked(st, ix->bucket, ix->id, 0, lease);
            rs_lease_release(st, lease);
        }
    }
    pthread_mutex_unlock(&st->takeover_lock);
    return s;
}
