/* Listing on RADOS: a bucket's index is one object, or N shard objects,
 * whose omap keys are the object keys, which RADOS keeps in byte order
 * (then a versioned bucket's version entries, rados_version.c). The
 * iterator keeps one cursor per shard, each reading its shard in small
 * batches (omap range reads filtered by the prefix on the OSD) refilled when
 * used up, and merges the cursors' heads in key order: memory is bounded by
 * the batches (below), whatever the bucket's size. Batches that must be read at the same time (at
 * open, after a seek) are read in parallel. A listing of versions has two
 * cursors per shard, one over the keys (their latest versions), one over
 * the version entries, and merges all of them by (key, newest first). A
 * listing whose index objects a reshard removes under it goes on from the
 * entry it emitted last on the new ones (iter_place). A plain listing that
 * stops inside the bucket is parked for the next page of its walk, which
 * keeps what the shards did not change since ("Parked listings", below). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "storage/rados/rados_internal.h"
#include "storage/rados/rados_list.h"

/* Entries a listing reads at a time (one shard: a batch of this many plus
 * one, since a page of RS_LIST_KEEP keys looks at the key after its last to
 * know whether it is truncated: with a batch of exactly RS_LIST_KEEP, every
 * page of a walk read a whole second batch for that one key). With
 * N shards a page of RS_LIST_KEEP keys takes about RS_LIST_KEEP / N from
 * each, give or take a few times its square root (the hash spreads keys
 * binomially), so each shard's batch is that share plus a quarter plus 16
 * (at least RS_LIST_MIN_BATCH): a page then rarely has to wait for a shard's
 * second batch, and a listing holds about 1.25 x RS_LIST_KEEP + 16 N
 * entries. The entries a page read but did not return go on to the next
 * page of the same walk (a parked listing, below), which reads only what
 * tops each shard's batch up again (at least RS_LIST_MIN_TOPUP). */
#define RS_LIST_KEEP      1000
#define RS_LIST_MIN_BATCH 32
#define RS_LIST_MIN_TOPUP 16

/* batch_finish's code for a parked cursor's read that found its shard
 * object at another version than the batch's: changed since. (Compared
 * here, from the version the reply carries, rather than asserted in the op
 * with rados_read_op_assert_version: the same guarantee, with no failed op
 * to tell from a failed read.) */
#define RS_CHANGED (-ERANGE)

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

/* Empties c's batch. */
static void batch_clear(cursor_t *c)
{
    buf_reset(&c->ents);
    c->n = c->i = 0;
    c->head = c->tail = 0;
    c->has = 0;
}

/* The key of the entry at offset off of c's batch (NUL-terminated). */
static const char *ent_key(const cursor_t *c, size_t off)
{
    return c->ents.data + off + sizeof(cursor_ent_t);
}

/* Appends the entries of iterator ri to c's batch, and ends ri. 0 or
 * -ENOMEM. */
static int batch_take(cursor_t *c, rados_omap_iter_t ri)
{
    char *k, *v;
    size_t kl, vl;
    int rc = 0;
    while (rc == 0 && rados_omap_get_next2(ri, &k, &v, &kl, &vl) == 0 && k) {
        cursor_ent_t e = {kl, vl};
        size_t off = c->ents.len;
        if (buf_append(&c->ents, &e, sizeof e) != 0 || buf_append(&c->ents, k, kl) != 0 ||
            buf_append(&c->ents, "", 1) != 0 || buf_append(&c->ents, v, vl) != 0) {
            rc = -ENOMEM;
            break;
        }
        c->tail = off;
        c->n++;
    }
    rados_omap_get_end(ri);
    return rc;
}

/* Sends the read of c's batch: from `from` (a stale cursor), or, for a
 * parked one (c->check), the next `max` entries after its batch's last
 * (batch_finish compares the shard's version). 0 or a librados code (then
 * nothing is in flight). */
static int batch_start(riter_t *it, cursor_t *c, size_t max)
{
    if (!(c->op = rados_create_read_op()))
        return -ENOMEM;
    c->first = c->rest = NULL;
    c->pr1 = c->pr2 = 0;
    const char *after = c->from;
    if (c->check) {
        after = ent_key(c, c->tail);
    } else if (c->inclusive) {
        const char *keys[1] = {c->from};
        size_t klen = strlen(c->from);
        rados_read_op_omap_get_vals_by_keys2(c->op, keys, 1, &klen, &c->first, &c->pr1);
    }
    c->more = 0;
    rados_read_op_omap_get_vals2(c->op, after, c->prefix, max ? max : it->batch, &c->rest, &c->more,
                                 &c->pr2);
    int rc = rados_aio_create_completion2(NULL, NULL, &c->c);
    if (rc == 0 && (rc = rados_aio_read_op_operate(c->op, it->st->index, c->c, c->oid, 0)) < 0)
        rados_aio_release(c->c);
    if (rc < 0) {
        /* librados made the iterators with the op: they end unread. */
        if (c->first)
            rados_omap_get_end(c->first);
        if (c->rest)
            rados_omap_get_end(c->rest);
        c->first = c->rest = NULL;
        rados_release_read_op(c->op);
        c->op = NULL;
    }
    return rc;
}

/* Waits for the read batch_start sent and adds what it read to c's batch
 * (a stale cursor's batch is that read alone). 0, or a librados code, or,
 * for a parked cursor whose shard object is not at its batch's version
 * any more (every write to an object changes its version), RS_CHANGED and
 * nothing added. */
static int batch_finish(cursor_t *c)
{
    rados_aio_wait_for_complete(c->c);
    int rc = rados_aio_get_return_value(c->c);
    uint64_t version = rados_aio_get_version(c->c);
    rados_aio_release(c->c);
    rados_release_read_op(c->op);
    c->op = NULL;
    if (rc == 0)
        rc = c->pr1 < 0 ? c->pr1 : c->pr2;
    if (rc == 0 && c->check && version != c->version)
        rc = RS_CHANGED;
    if (rc == 0 && !c->check) {
        batch_clear(c);
        c->version = version;
    }
    /* batch_take ends each iterator; a failed read's are ended unread. */
    if (c->first && rc == 0)
        rc = batch_take(c, c->first);
    else if (c->first)
        rados_omap_get_end(c->first);
    if (c->rest && rc == 0)
        rc = batch_take(c, c->rest);
    else if (c->rest)
        rados_omap_get_end(c->rest);
    c->first = c->rest = NULL;
    if (rc == 0) {
        c->inclusive = 0;
        c->check = 0;
    }
    return rc;
}

/* Makes the entry at c's head its (k, v), or marks it done at the end of
 * its range. 0 or a librados code. */
static int cursor_head(cursor_t *c)
{
    cursor_ent_t e;
    memcpy(&e, c->ents.data + c->head, sizeof e);
    c->k = c->ents.data + c->head + sizeof e;
    c->kl = e.kl;
    c->v = c->k + e.kl + 1;
    c->vl = e.vl;
    /* Only version entries (0xFE) and the tombstone (0xFF) sort there: no
     * object key gets there. The OSD filters by the prefix; the check
     * stands for a shard read without. */
    if ((!c->ver && c->kl && (unsigned char)c->k[0] >= 0xFE) || c->kl < c->prefix_len ||
        memcmp(c->k, c->prefix, c->prefix_len) != 0) {
        c->done = 1;
        return 0;
    }
    if (c->ver && rs_vkey_parse(c->k, c->kl, &c->ukey) != 0) {
        log_error("storage: malformed version entry in %s", c->oid);
        return -EIO;
    }
    c->has = 1;
    return 0;
}

/* Makes c's head the entry at its index i, reading its next batch when the
 * one it has is used up (unless it is stale or parked: then the caller
 * reads it). Marks it done at the end of its range. 0 or a librados code. */
static int cursor_load(riter_t *it, cursor_t *c)
{
    c->has = 0;
    for (;;) {
        if (c->stale || c->check || c->done)
            return 0;
        if (c->i < c->n)
            return cursor_head(c);
        if (!c->more || !c->n) {
            c->done = 1;
            return 0;
        }
        /* The next batch starts after the last key RADOS gave us. */
        if (set_str(&c->from, ent_key(c, c->tail), strlen(ent_key(c, c->tail))) != 0)
            return -ENOMEM;
        c->inclusive = 0;
        rs_crash_point(it->st, "list-batch");
        int rc = batch_start(it, c, 0);
        if (rc == 0)
            rc = batch_finish(c);
        if (rc < 0)
            return rc;
    }
}

/* Consumes c's head entry (without reading). */
static void cursor_skip(cursor_t *c)
{
    if (c->i < c->n) {
        cursor_ent_t e;
        memcpy(&e, c->ents.data + c->head, sizeof e);
        c->head += sizeof e + e.kl + 1 + e.vl;
        c->i++;
    }
    c->has = 0;
}

/* Moves c to its next entry (cursor_load). */
static int cursor_advance(riter_t *it, cursor_t *c)
{
    cursor_skip(c);
    return cursor_load(it, c);
}

/* The object key of c's head entry. */
static const char *head_key(const cursor_t *c, size_t *len_p)
{
    if (c->ver) {
        *len_p = c->ukey.len;
        return c->ukey.data;
    }
    *len_p = c->kl;
    return c->k;
}

/* Whether head a comes before head b: by key, then a key's latest (its
 * record) before its entries, which come newest first (their own order). */
static int head_before(const cursor_t *a, const cursor_t *b)
{
    size_t al, bl;
    const char *ak = head_key(a, &al), *bk = head_key(b, &bl);
    int c = stor_keycmp(ak, al, bk, bl);
    if (c)
        return c < 0;
    if (a->ver != b->ver)
        return !a->ver;
    return stor_keycmp(a->k, a->kl, b->k, b->kl) < 0;
}

/* Points cursor c at its entries after from (inclusive: from itself too),
 * to be read by refill_stale. */
static int cursor_from(cursor_t *c, const char *from, size_t len, int inclusive)
{
    batch_clear(c);
    c->check = 0;
    c->stale = 1;
    c->done = 0;
    c->inclusive = inclusive;
    return set_str(&c->from, from, len);
}

/* Reads the batches of every stale cursor, and the rest of every parked
 * one's, all in flight at once, and moves each to its head entry. A parked
 * cursor whose shard changed since its batch was read is stale then, and
 * read again from the listing's floor (where the page resumes) in a second
 * round: its entries are only used while the shard object's version is the
 * one they were read at, so a listing never shows less than what was
 * written before it asked. 0 or the first librados code (*oid_p: the shard
 * that failed). */
static int refill_stale(riter_t *it, const char **oid_p)
{
    int rc = 0;
    for (int round = 0; round < 2 && rc == 0; round++) {
        uint32_t i, sent;
        for (i = 0; i < it->n && rc == 0; i++) {
            cursor_t *c = &it->cur[i];
            size_t top = 0;
            if (c->check)
                top = c->n - c->i + RS_LIST_MIN_TOPUP > it->batch ? RS_LIST_MIN_TOPUP
                                                                  : it->batch - (c->n - c->i);
            if ((c->stale || c->check) && (rc = batch_start(it, c, top)) < 0)
                *oid_p = c->oid;
        }
        sent = rc < 0 ? i - 1 : it->n;
        int again = 0;
        for (i = 0; i < sent; i++) {
            cursor_t *c = &it->cur[i];
            if (!c->stale && !c->check)
                continue;
            int r = batch_finish(c);
            if (r == RS_CHANGED && c->check) {
                /* Written since: read again from where the page resumes
                 * (not from the head: a key written between the two is
                 * this page's). */
                if (cursor_from(c, it->floor, it->floor_len, it->floor_incl) != 0) {
                    r = -ENOMEM;
                } else {
                    again = 1;
                    continue;
                }
            }
            c->stale = c->check = 0;
            if (r == 0 && rc == 0)
                r = cursor_load(it, c);
            if (r < 0 && rc == 0) {
                rc = r;
                *oid_p = c->oid;
            }
        }
        if (!again)
            break;
    }
    return rc;
}

/* Points cursor c at the entries from key (inclusive: key itself too): a
 * cursor over version entries at key's first entry (after every entry of
 * key, when past). */
static int cursor_reset(cursor_t *c, const char *key, size_t len, int inclusive, int past)
{
    if (!c->ver)
        return cursor_from(c, key, len, inclusive);
    buf_t p;
    int rc = rs_vprefix(key, len, &p);
    if (rc == 0 && len)
        rc = buf_append(&p, past ? "\x02" : "\x01", 1);
    if (rc == 0)
        rc = cursor_from(c, p.data, p.len, 0);
    buf_free(&p);
    return rc;
}

/* Sets up the cursors of ix's shards (two per shard for versions), all
 * stale, where the listing is: after the entry it emitted last (a key's
 * record: its version entries next), or, before any or after a seek past
 * it, from floor. */
static int cursors_make(riter_t *it, const rs_index_t *ix)
{
    uint32_t want = ix->shards * (it->versions ? 2 : 1);
    if (want != it->n) {
        for (uint32_t i = want; i < it->n; i++) {
            free(it->cur[i].from);
            it->cur[i].from = NULL;
            buf_free(&it->cur[i].ukey);
            buf_free(&it->cur[i].ents);
        }
        if (want < it->n)
            it->n = want;
        cursor_t *nc = realloc(it->cur, want * sizeof *nc);
        if (!nc)
            return -1;
        for (uint32_t i = it->n; i < want; i++)
            memset(&nc[i], 0, sizeof nc[i]);
        it->cur = nc;
        it->n = want;
    }
    int past = it->last && stor_keycmp(it->last, it->last_len, it->floor, it->floor_len) >= 0;
    it->batch = ix->shards == 1 ? RS_LIST_KEEP + 1 : RS_LIST_KEEP / ix->shards * 5 / 4 + 16;
    if (it->batch < RS_LIST_MIN_BATCH)
        it->batch = RS_LIST_MIN_BATCH;
    it->gen = ix->gen;
    it->shards = ix->shards;
    for (uint32_t i = 0; i < it->n; i++) {
        cursor_t *c = &it->cur[i];
        rs_index_oid(ix, i % ix->shards, c->oid);
        c->ver = i >= ix->shards;
        c->prefix = c->ver ? it->vprefix.data : it->prefix;
        c->prefix_len = c->ver ? it->vprefix.len : it->prefix_len;
        if (c->ver && !c->ukey.max)
            buf_init(&c->ukey, (size_t)-1 / 2);
        if (!c->ents.max)
            buf_init(&c->ents, (size_t)-1 / 2);
        int rc;
        if (!past)
            rc = cursor_reset(c, it->floor, it->floor_len, it->floor_incl, !it->floor_incl);
        else if (c->ver && it->last_v)
            rc = cursor_from(c, it->last_v, it->last_v_len, 0);
        else
            rc = cursor_reset(c, it->last, it->last_len, 0, 0);
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* Makes the cursors on the bucket's index where the listing is
 * (cursors_make) and reads their first batches: on the index the cache
 * names unless fresh; when its objects are gone, on the one the record
 * names now (a stale cached id: the bucket resharded, or deleted and maybe
 * made again), then, with a reshard under way, on the next generation (its
 * last steps: the old objects removed, the new ones complete, the record
 * about to name them). STOR_OK, or the status to answer: STOR_ERR_NO_BUCKET
 * also when the bucket the listing opened on was deleted under it, even if
 * one of the same name was made since (its keys are not this listing's). */
static stor_status_t iter_place(riter_t *it, int fresh)
{
    rs_index_t ix;
    const char *oid = "";
    stor_status_t s = rs_bucket_id(it->st, it->bucket, fresh, &ix);
    int rc = s != STOR_OK ? 0 : cursors_make(it, &ix) != 0 ? -ENOMEM : refill_stale(it, &oid);
    if (s == STOR_OK && rc == -ENOENT && !fresh &&
        (s = rs_bucket_id(it->st, it->bucket, 1, &ix)) == STOR_OK)
        rc = cursors_make(it, &ix) != 0 ? -ENOMEM : refill_stale(it, &oid);
    if (s == STOR_OK && rc == -ENOENT && ix.to) {
        ix = rs_index_next(&ix);
        rc = cursors_make(it, &ix) != 0 ? -ENOMEM : refill_stale(it, &oid);
    }
    if (s != STOR_OK)
        return s;
    if (rc == -ENOENT || (it->id && ix.id != it->id))
        return STOR_ERR_NO_BUCKET; /* gone, or deleted and made again */
    if (rc < 0)
        return rs_fail("list", oid, rc);
    it->id = ix.id;
    return STOR_OK;
}

/* Opens a listing of bucket: its keys, or (versions) every version, from
 * after (inclusive: after itself too). */
static stor_status_t iter_start(rstor_t *st, const char *bucket, const char *prefix,
                                const char *after, int inclusive, int versions, riter_t **out_p)
{
    riter_t *it = calloc(1, sizeof *it);
    if (!it)
        return STOR_ERR_NOMEM;
    it->base.st = &st->base;
    it->base.versions = versions;
    it->versions = versions;
    it->st = st;
    it->taken = -1;
    prefix = prefix ? prefix : "";
    after = after ? after : "";
    it->prefix_len = strlen(prefix);
    snprintf(it->bucket, sizeof it->bucket, "%s", bucket);
    it->floor_len = strlen(after);
    it->floor_incl = inclusive;
    stor_status_t s = STOR_ERR_NOMEM;
    if (set_str(&it->prefix, prefix, it->prefix_len) == 0 &&
        set_str(&it->floor, after, it->floor_len) == 0 &&
        (!versions || rs_vprefix(prefix, it->prefix_len, &it->vprefix) == 0))
        s = iter_place(it, 0);
    if (s != STOR_OK) {
        rs_iter_close(&it->base);
        return s;
    }
    *out_p = it;
    return STOR_OK;
}

static stor_status_t resume(riter_t *it, const char *after);

stor_status_t rs_iter_open(stor_t *st_, const char *bucket, const char *prefix, const char *after,
                           stor_iter_t **out_p)
{
    rstor_t *st = (rstor_t *)st_;
    prefix = prefix ? prefix : "";
    after = after ? after : "";
    riter_t *it = rs_list_unpark(st, bucket, prefix, after);
    stor_status_t s;
    if (it) {
        if ((s = resume(it, after)) != STOR_OK) {
            rs_list_iter_free(it);
            return s;
        }
    } else if ((s = iter_start(st, bucket, prefix, after, 0, 0, &it)) != STOR_OK) {
        return s;
    }
    *out_p = &it->base;
    return STOR_OK;
}

stor_status_t rs_iter_open_versions(stor_t *st, const char *bucket, const char *prefix,
                                    const char *key_marker, const char *version_marker,
                                    stor_iter_t **out_p)
{
    /* Inside key_marker, where its versions resume is found by reading
     * them from its first (rs_iter_next_version). */
    int whole = !version_marker || !*version_marker;
    riter_t *it;
    stor_status_t s = iter_start((rstor_t *)st, bucket, prefix, key_marker, !whole, 1, &it);
    if (s != STOR_OK)
        return s;
    if (key_marker && *key_marker) {
        it->has_mk = 1;
        it->mk_whole = whole;
        it->mk_len = strlen(key_marker);
        if (set_str(&it->mk, key_marker, it->mk_len) != 0) {
            rs_iter_close(&it->base);
            return STOR_ERR_NOMEM;
        }
        if (!whole)
            snprintf(it->mk_vid, sizeof it->mk_vid, "%s", version_marker);
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
    if (set_str(&it->floor, key, key_len) != 0) {
        it->failed = 1;
        return;
    }
    it->floor_len = key_len;
    it->floor_incl = 1;
    it->seeked = 1;
    /* A cursor whose head is at or past key keeps it; the others read from
     * key on. */
    for (uint32_t i = 0; i < it->n; i++) {
        cursor_t *c = &it->cur[i];
        size_t hl;
        const char *hk = c->has ? head_key(c, &hl) : NULL;
        if (c->done || (hk && (int)i != it->taken && stor_keycmp(hk, hl, key, key_len) >= 0))
            continue;
        if (cursor_reset(c, key, key_len, 1, 0) != 0) {
            it->failed = 1;
            return;
        }
    }
    it->taken = -1;
}

/* The next entry of the merge: its cursor, or NULL at the end (it->eof)
 * or on an error (it->failed). */
static cursor_t *iter_step(riter_t *it)
{
    if (it->failed || it->eof)
        return NULL;
    const char *oid = it->n ? it->cur[0].oid : "";
    int rc = 0;
    if (it->taken >= 0) {
        oid = it->cur[it->taken].oid;
        rc = cursor_advance(it, &it->cur[it->taken]);
        it->taken = -1;
    }
    if (rc == 0)
        rc = refill_stale(it, &oid);
    if (rc == -ENOENT) {
        /* The index objects went under the listing: a reshard removed
         * them. It goes on on the index as it is now. */
        if (iter_place(it, 1) != STOR_OK) {
            it->failed = 1;
            return NULL;
        }
    } else if (rc < 0) {
        rs_fail("list", oid, rc);
        it->failed = 1;
        return NULL;
    }
    /* The least head. */
    cursor_t *min = NULL;
    for (uint32_t i = 0; i < it->n; i++) {
        cursor_t *c = &it->cur[i];
        if (c->has && (!min || head_before(c, min))) {
            min = c;
            it->taken = (int)i;
        }
    }
    if (!min) {
        it->eof = 1;
        return NULL;
    }
    size_t kl;
    const char *k = head_key(min, &kl);
    free(it->prev);
    it->prev = it->last;
    it->prev_len = it->last_len;
    it->last = NULL;
    if (set_str(&it->last, k, kl) != 0 ||
        (min->ver && set_str(&it->last_v, min->k, min->kl) != 0)) {
        it->failed = 1;
        return NULL;
    }
    it->last_len = kl;
    if (!min->ver) {
        free(it->last_v);
        it->last_v = NULL;
    }
    it->last_v_len = min->kl;
    return min;
}

static int decode_head(riter_t *it, const cursor_t *c, stor_meta_t *meta_p)
{
    if (stor_rec_decode_object_want(c->v, c->vl, it->base.want, meta_p) == STOR_OK)
        return 0;
    log_error("storage: corrupt object record for %.*s in %s", (int)it->last_len, it->last, c->oid);
    it->failed = 1;
    return -1;
}

int rs_iter_next(stor_iter_t *it_, const char **key_p, size_t *key_len_p, stor_meta_t *meta_p)
{
    riter_t *it = (riter_t *)it_;
    cursor_t *c;
    while ((c = iter_step(it))) {
        /* A key whose latest version is a delete marker is not listed. */
        stor_meta_t m;
        if (decode_head(it, c, meta_p ? meta_p : &m) != 0)
            return -1;
        stor_meta_t *mp = meta_p ? meta_p : &m;
        int marker = mp->delete_marker != NULL;
        if (marker || !meta_p)
            stor_meta_free(mp);
        if (marker)
            continue;
        *key_p = it->last;
        *key_len_p = it->last_len;
        return 1;
    }
    return it->failed ? -1 : 0;
}

int rs_iter_next_version(stor_iter_t *it_, const char **key_p, size_t *key_len_p,
                         stor_meta_t *meta_p, int *is_latest_p)
{
    riter_t *it = (riter_t *)it_;
    cursor_t *c;
    while ((c = iter_step(it))) {
        if (decode_head(it, c, meta_p) != 0)
            return -1;
        if (it->has_mk && !it->mk_passed) {
            int cmp = stor_keycmp(it->last, it->last_len, it->mk, it->mk_len);
            if (cmp == 0 && !it->mk_whole) {
                /* Inside the marker's key: up to and including its version. */
                it->mk_passed = stor_meta_is_version(meta_p, it->mk_vid);
                stor_meta_free(meta_p);
                continue;
            }
            if (cmp <= 0) {
                stor_meta_free(meta_p);
                continue;
            }
            it->mk_passed = 1;
        }
        *key_p = it->last;
        *key_len_p = it->last_len;
        *is_latest_p = !c->ver;
        return 1;
    }
    return it->failed ? -1 : 0;
}

void rs_list_iter_free(riter_t *it)
{
    for (uint32_t i = 0; i < it->n; i++) {
        free(it->cur[i].from);
        buf_free(&it->cur[i].ukey);
        buf_free(&it->cur[i].ents);
    }
    free(it->cur);
    free(it->prefix);
    free(it->mk);
    buf_free(&it->vprefix);
    free(it->last);
    free(it->prev);
    free(it->last_v);
    free(it->floor);
    free(it);
}

/* ---- Parked listings (the store of them: rados_list_park.c) ----------------
 * A page of a walk (pages of RS_LIST_KEEP keys, each its own listing, as
 * every S3 page is) leaves in its shards' batches about a third of what it
 * read: each shard's share of the next page. rs_iter_close parks such a
 * listing in the store (rstor_t.parked) instead of dropping those entries,
 * and rs_iter_open of the same bucket (same id and index), prefix and
 * resume point takes it back: the next page then reads from each shard only
 * what tops its batch up again, and keeps the entries only if that read
 * finds the shard object at the version they were read at (the version a
 * read returns, batch_finish): otherwise that shard is read afresh from
 * the resume point, as are shards with no entries held. What a page
 * shows is therefore what a listing opened afresh would show. Parked listings are bounded in number
 * (RSTOR_LIST_PARKED), bytes (RSTOR_LIST_PARKED_BYTES) and age
 * (RSTOR_LIST_PARKED_MS), the oldest going first: a client can only make
 * another's next page read what it would have read anyway. Listings of
 * versions, and listings that skipped (delimiters), are not parked. */

/* Goes on with the parked listing it after `after` (unpark's): as a
 * listing opened there, its cursors' entries kept where their shards did
 * not change. */
static stor_status_t resume(riter_t *it, const char *after)
{
    size_t al = strlen(after);
    /* The key it looked past its page at is after's next, unless after is
     * that key. */
    if (it->taken >= 0 && stor_keycmp(after, al, it->last, it->last_len) == 0)
        cursor_skip(&it->cur[it->taken]);
    it->taken = -1;
    it->base.want = 0;
    free(it->last);
    free(it->prev);
    it->last = it->prev = NULL;
    it->last_len = it->prev_len = 0;
    if (set_str(&it->floor, after, al) != 0)
        return STOR_ERR_NOMEM;
    it->floor_len = al;
    it->floor_incl = 0;
    uint64_t id = it->id;
    it->id = 0; /* as a listing opened now: a bucket made again is this one's */
    for (uint32_t i = 0; i < it->n; i++) {
        cursor_t *c = &it->cur[i];
        c->has = 0;
        c->done = 0;
        if (c->i < c->n && c->version) {
            /* The unconsumed entries stay, at the front (version 0: not
             * known: read afresh below). */
            memmove(c->ents.data, c->ents.data + c->head, c->ents.len - c->head);
            c->ents.len -= c->head;
            c->tail -= c->head;
            c->n -= c->i;
            c->i = 0;
            c->head = 0;
            c->check = 1;
        } else {
            /* Afresh from where the page resumes, as a listing opened
             * there: not from its head (a key written since between after
             * and the head would be missed) nor past its last entry (one
             * written since at or before after would be shown again). */
            if (cursor_from(c, it->floor, it->floor_len, 0) != 0)
                return STOR_ERR_NOMEM;
        }
    }
    const char *oid = it->cur[0].oid;
    int rc = refill_stale(it, &oid);
    if (rc == -ENOENT)
        return iter_place(it, 1); /* a reshard removed its index objects */
    if (rc < 0)
        return rs_fail("list", oid, rc);
    it->id = id;
    return STOR_OK;
}

void rs_iter_close(stor_iter_t *it_)
{
    riter_t *it = (riter_t *)it_;
    if (!it)
        return;
    if (!it->versions && !it->seeked && !it->eof && !it->failed && it->last && it->id && it->n)
        rs_list_park(it);
    else
        rs_list_iter_free(it);
}
