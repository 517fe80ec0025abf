/* A reshard's copying (rados_reshard.h): step 3, every old shard's entries
 * copied batch by batch into the new shards, and steps 4-5's passes over
 * the dirty marks, on up to RESHARD_COPIERS threads. Every write to a new
 * shard carries the run's token check (rs_run_guard), so a run that was
 * taken over changes nothing. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "storage/rados/rados_internal.h"
#include "storage/rados/rados_reshard.h"

/* Marked keys left after which the passes stop and the shards are fenced:
 * the writers' wait is the last copy of at most about this many keys. */
#define RESHARD_FENCE_AT 64
#define RESHARD_PASSES   8

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

/* A batch being written (batch_flush), and room for the entries of one
 * new shard at a time. */
typedef struct flush {
    batch_t *b;
    const char **ks, **vs;
    size_t *kls, *vls;
} flush_t;

/* An rs_batch_send_fn: writes the batch's entries of new shard s (1 when
 * it has none). */
static int flush_send(void *arg, uint32_t s, rados_completion_t c)
{
    flush_t *f = arg;
    const batch_t *b = f->b;
    size_t m = 0;
    for (size_t i = 0; i < b->n; i++)
        if (b->shard[i] == s) {
            f->ks[m] = b->k[i];
            f->vs[m] = b->v[i];
            f->kls[m] = b->kl[i];
            f->vls[m++] = b->vl[i];
        }
    if (!m)
        return 1;
    char oid[RSTOR_OID_MAX];
    rs_index_oid(b->nx, s, oid);
    rados_write_op_t op = rados_create_write_op();
    if (!op)
        return -ENOMEM;
    rados_write_op_assert_exists(op);
    rs_run_guard(op, b->run);
    rados_write_op_omap_set2(op, f->ks, f->vs, f->kls, f->vls, m);
    int rc = rados_aio_write_op_operate(op, b->run->st->index, c, oid, NULL, 0);
    rados_release_write_op(op);
    return rc;
}

/* Writes the batch: one write op per new shard it touches, all in flight
 * at once. 0, or the first librados code. */
static int batch_flush(batch_t *b)
{
    uint32_t ns = b->nx->shards;
    rs_crash_point(b->run->st, "reshard-batch-read");
    int rc = rs_run_keep(b->run);
    int *res = calloc(ns, sizeof *res);
    flush_t f = {.b = b,
                 .ks = malloc((b->n + 1) * sizeof *f.ks),
                 .vs = malloc((b->n + 1) * sizeof *f.vs),
                 .kls = malloc((b->n + 1) * sizeof *f.kls),
                 .vls = malloc((b->n + 1) * sizeof *f.vls)};
    if (!res || !f.ks || !f.vs || !f.kls || !f.vls)
        rc = -ENOMEM;
    if (rc == 0)
        rc = rs_batch(ns, flush_send, &f, res, NULL);
    for (uint32_t s = 0; s < ns && rc == 0; s++)
        rc = rs_run_result(res[s]);
    b->copied += b->n;
    batch_clear(b);
    free(res);
    free(f.ks);
    free(f.vs);
    free(f.kls);
    free(f.vls);
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
    int rc = rs_run_keep(r);
    if (rc == 0)
        rc = key_entries(st, oid, key, klen, &src);
    if (rc == 0)
        rc = key_entries(st, noid, key, klen, &dst);
    rados_write_op_t op = rc == 0 ? rados_create_write_op() : NULL;
    if (rc == 0 && !op)
        rc = -ENOMEM;
    if (rc == 0) {
        rados_write_op_assert_exists(op);
        rs_run_guard(op, r);
        if (dst.n)
            rados_write_op_omap_rm_keys2(op, (const char *const *)dst.k, dst.kl, dst.n);
        if (src.n)
            rados_write_op_omap_set2(op, (const char *const *)src.k, (const char *const *)src.v,
                                     src.kl, src.vl, src.n);
        rc = rs_run_result(rados_write_op_operate(op, st->index, noid, NULL, 0));
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

/* rados_reshard.h */
int rs_reshard_dirty_pass(run_t *r, int tracked, uint64_t *n_p)
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

/* rados_reshard.h */
int rs_reshard_copy_all(run_t *r, uint64_t *copied_p, char oid[RSTOR_OID_MAX])
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

/* rados_reshard.h */
int rs_reshard_copy_passes(run_t *r, uint64_t *again_p)
{
    int rc = 0;
    uint64_t pass_n = UINT64_MAX, prev;
    for (int pass = 0; pass < RESHARD_PASSES && rc == 0; pass++) {
        prev = pass_n;
        pass_n = 0;
        rc = rs_reshard_dirty_pass(r, 1, &pass_n);
        *again_p += pass_n;
        if (pass_n <= RESHARD_FENCE_AT || pass_n >= prev)
            break;
    }
    return rc;
}
