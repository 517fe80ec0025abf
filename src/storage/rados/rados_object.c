/* Objects on RADOS: the writer (pieces of a fresh blob, then the index
 * switch), HEAD, the reader (pieces read straight into the caller's buffer),
 * delete and object ACLs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "storage/rados/rados_internal.h"

/* ==== The index switch =================================================== */

/* One compare-and-set of key on its route: from expect (NULL: absent) to
 * rec (NULL: removed). rs_route_apply's codes. */
static int index_cas(rstor_t *st, const rs_route_t *r, const char *key, const buf_t *expect,
                     const buf_t *rec)
{
    rs_change_t c = {0};
    size_t klen = strlen(key);
    rs_chg_cmp(&c, key, klen, expect);
    if (rec)
        rs_chg_set(&c, key, klen, rec);
    else
        rs_chg_rm(&c, key, klen);
    return rs_route_apply(st, r, key, &c);
}

/* Reads key's record from index object oid: the stored bytes
 * into *raw (buf_init'ed here) and, when found, the decoded record into
 * *rec. Returns STOR_OK (found), STOR_ERR_NO_KEY (absent; *raw empty) or an
 * error. */
static stor_status_t index_read(rstor_t *st, const char *oid, const char *key, buf_t *raw,
                                stor_obj_rec_t *rec, rs_omap_get_t *pre)
{
    int rc =
        pre ? rs_omap_get_finish(pre, raw) : rs_omap_get(st->index, oid, key, strlen(key), raw);
    if (rc == -ENOENT)
        return STOR_ERR_NO_BUCKET;
    if (rc < 0)
        return rs_fail("index lookup", oid, rc);
    if (rc == 0)
        return STOR_ERR_NO_KEY;
    stor_status_t s = stor_rec_decode_object(raw->data, raw->len, rec);
    if (s != STOR_OK)
        log_error("storage: corrupt object record for %s in %s", key, oid);
    return s;
}

/* Before a PUT's or a delete's compare-and-set: the blobs it would drop
 * (the key's record, o, all of them) go into its intent entry unless named
 * already, so a recovery after a crash between the switch and the GC log
 * write finds them; then the lease must be fresh. A retry after losing a
 * race to another writer of the key names the blobs of the record it read
 * afresh: one round trip more, on retries that drop blobs only. */
static stor_status_t switch_intent(rstor_t *st, rs_intent_ref_t *in, const rs_index_t *ix,
                                   const char *key, const stor_obj_rec_t *o, int removing)
{
    const char *step = removing ? "delete-intent" : "put-pieces";
    int named = o && o->n_segs && in->n_old == o->n_segs &&
                memcmp(in->old0, o->segs[0].id, STOR_ID_LEN) == 0;
    if (!o || !o->n_segs || named)
        return rs_intent_before_switch(st, in, NULL, step);
    buf_t desc;
    stor_status_t s = rs_intent_object(&desc, ix, key, o->segs, o->n_segs) == 0
                          ? rs_intent_before_switch(st, in, &desc, step)
                          : STOR_ERR_NOMEM;
    buf_free(&desc);
    if (s == STOR_OK) {
        in->n_old = o->n_segs;
        memcpy(in->old0, o->segs[0].id, STOR_ID_LEN);
    }
    return s;
}

stor_status_t rs_index_switch_pre(rstor_t *st, const rs_index_t *ix, const char *key,
                                  const buf_t *rec, const stor_precond_t *cond, rs_omap_get_t *pre,
                                  rs_intent_ref_t *in, stor_obj_rec_t *old, int *had_old,
                                  int *versioned_p)
{
    rs_route_t rt;
    rs_route_init(&rt, ix, key);
    const char *oid = rt.oid;
    *had_old = 0;
    *versioned_p = 0;
    for (int attempt = 0; attempt < RSTOR_RETRIES; attempt++) {
        buf_t cur;
        stor_obj_rec_t o;
        stor_status_t s = index_read(st, oid, key, &cur, &o, attempt == 0 ? pre : NULL);
        if (s == STOR_ERR_NO_BUCKET) {
            /* The shard is gone: the reshard finished (or the bucket). */
            buf_free(&cur);
            if ((s = rs_route_again(st, &rt, key)) != STOR_OK)
                return s;
            continue;
        }
        int found = s == STOR_OK;
        if (found && (o.meta.version || o.meta.delete_marker)) {
            /* A version: the bucket has versioning now (rados_version.c). */
            buf_free(&cur);
            stor_obj_rec_free(&o);
            *versioned_p = 1;
            return STOR_ERR_PRECONDITION;
        }
        if (s == STOR_OK || s == STOR_ERR_NO_KEY) {
            s = stor_precond_check(cond, found ? &o.meta : NULL, found);
            if (s == STOR_OK && !rec && !found)
                s = STOR_ERR_NO_KEY;
            if (s == STOR_OK && found) /* the version the switch removes */
                s = stor_precond_guard(cond, &o.meta);
            if (s == STOR_OK && in)
                s = switch_intent(st, in, ix, key, found ? &o : NULL, !rec);
        }
        int rc = s == STOR_OK ? index_cas(st, &rt, key, found ? &cur : NULL, rec) : 0;
        buf_free(&cur);
        if (s == STOR_OK && rc == 0) {
            if (found) {
                *old = o;
                *had_old = 1;
            }
            return STOR_OK;
        }
        if (found)
            stor_obj_rec_free(&o);
        if (s != STOR_OK)
            return s;
        if ((s = rs_route_failed(st, &rt, key, rc)) != STOR_OK)
            return s;
        /* Another switch of this key came first (judge again on its result),
         * or the key's shard moved. */
    }
    log_error("storage: index switch of %s in %s kept losing races", key, oid);
    return STOR_ERR_UNAVAILABLE;
}

/* ==== Pieces in flight =================================================== */

/* A window of up to RSTOR_WINDOW librados operations in flight, completed in
 * the order they were issued. */
typedef struct window {
    rados_completion_t c[RSTOR_WINDOW];
    char *owned[RSTOR_WINDOW]; /* a buffer to free when it completes, or NULL */
    size_t want[RSTOR_WINDOW]; /* reads: bytes expected */
    unsigned head, count;
    int rc; /* the first failure, sticky */
} window_t;

/* Waits for the oldest operation; its buffer goes to *buf_p if given (else
 * it is freed). */
static void window_pop(window_t *w, char **buf_p)
{
    unsigned i = w->head;
    rados_aio_wait_for_complete(w->c[i]);
    int rc = rados_aio_get_return_value(w->c[i]);
    rados_aio_release(w->c[i]);
    if (rc >= 0 && w->want[i] && (size_t)rc != w->want[i])
        rc = -ENODATA; /* a piece shorter than its blob's size says */
    if (rc < 0 && w->rc == 0)
        w->rc = rc;
    if (buf_p && !*buf_p)
        *buf_p = w->owned[i];
    else
        free(w->owned[i]);
    w->owned[i] = NULL;
    w->head = (w->head + 1) % RSTOR_WINDOW;
    w->count--;
}

static void window_drain(window_t *w)
{
    while (w->count)
        window_pop(w, NULL);
}

/* A free slot (waiting for the oldest when full) with a new completion. */
static int window_slot(window_t *w, char **spare_p, unsigned *slot_p)
{
    if (w->count == RSTOR_WINDOW)
        window_pop(w, spare_p);
    unsigned i = (w->head + w->count) % RSTOR_WINDOW;
    int rc = rados_aio_create_completion2(NULL, NULL, &w->c[i]);
    if (rc < 0)
        return rc;
    w->owned[i] = NULL;
    w->want[i] = 0;
    *slot_p = i;
    return 0;
}

/* ==== Writing ============================================================ */

typedef struct rwriter {
    stor_writer_t base; /* first: stor_backend.h */
    rstor_t *st;
    char bucket[STOR_BUCKET_MAX + 1];
    rs_index_t ix;           /* the bucket's */
    int versioning;          /* the bucket's, when the writer opened */
    uint8_t id[STOR_ID_LEN]; /* made with its first intent entry */
    int logged;              /* the entry is written: id and in are set */
    rs_intent_ref_t in;
    uint64_t size;
    uint32_t next_piece; /* the piece pend becomes */
    char *pend;          /* bytes of the next piece not yet sent */
    size_t fill, cap;
    char *spare; /* a piece buffer back from the window, reused */
    window_t win;
} rwriter_t;

stor_status_t rs_writer_open(stor_t *st_, const stor_bucket_t *bucket, stor_writer_t **out_p)
{
    rstor_t *st = (rstor_t *)st_;
    rwriter_t *w = calloc(1, sizeof *w);
    if (!w)
        return STOR_ERR_NOMEM;
    w->base.st = st_;
    w->st = st;
    snprintf(w->bucket, sizeof w->bucket, "%s", bucket->name);
    w->ix = rs_index_of(bucket);
    w->versioning = bucket->versioning;
    *out_p = &w->base;
    return STOR_OK;
}

/* Writes the writer's intent entry as desc, first making its blob's id
 * (so the id's time is the entry's: the full sweep relies on it). */
static stor_status_t writer_intent(rwriter_t *w, const buf_t *desc)
{
    if (!w->logged) {
        if (rs_new_blob_id(w->id) != 0)
            return STOR_ERR_IO;
        rs_intent_name(w->id, w->in.name);
        w->in.epoch = 0;
    }
    stor_status_t s = rs_intent_put(w->st, w->in.name, desc, &w->in.epoch);
    if (s == STOR_OK)
        w->logged = 1;
    return s;
}

/* Sends len bytes at data as the next piece; the window frees owned (data
 * itself, or NULL when data is the caller's and must be waited for before
 * the caller gets it back). The first piece of a blob whose commit has not
 * begun is logged first, without a key. */
static int send_piece(rwriter_t *w, const char *data, size_t len, char *owned)
{
    unsigned i;
    char oid[RSTOR_OID_MAX];
    int rc = 0;
    if (!w->logged) {
        buf_t desc;
        rs_intent_object(&desc, &w->ix, "", NULL, 0);
        stor_status_t s = writer_intent(w, &desc);
        buf_free(&desc);
        if (s != STOR_OK)
            rc = s == STOR_ERR_UNAVAILABLE ? -ETIMEDOUT : -EIO;
    }
    if (rc == 0)
        rc = window_slot(&w->win, &w->spare, &i);
    if (rc == 0) {
        rs_piece_oid(w->id, w->next_piece, oid);
        rc = rados_aio_write_full(w->st->data, oid, w->win.c[i], data, len);
        if (rc < 0)
            rados_aio_release(w->win.c[i]);
    }
    if (rc < 0) {
        free(owned);
        if (w->win.rc == 0)
            w->win.rc = rc;
        return rc;
    }
    w->win.owned[i] = owned;
    w->win.count++;
    w->next_piece++;
    return 0;
}

/* Sends the pending partial piece (it owns its buffer from here on). */
static int send_pending(rwriter_t *w)
{
    if (!w->fill)
        return 0;
    char *p = w->pend;
    size_t n = w->fill;
    w->pend = NULL;
    w->fill = w->cap = 0;
    return send_piece(w, p, n, p);
}

stor_status_t rs_writer_write(stor_writer_t *w_, const void *data, size_t len)
{
    rwriter_t *w = (rwriter_t *)w_;
    const char *p = data;
    int borrowed = 0;
    while (len && w->win.rc == 0) {
        if (w->fill == 0 && len >= RSTOR_PIECE) {
            /* A whole piece of the caller's buffer: sent from there. */
            send_piece(w, p, RSTOR_PIECE, NULL);
            borrowed = 1;
            p += RSTOR_PIECE;
            len -= RSTOR_PIECE;
            w->size += RSTOR_PIECE;
            continue;
        }
        size_t n = RSTOR_PIECE - w->fill < len ? RSTOR_PIECE - w->fill : len;
        if (w->fill + n > w->cap) {
            /* The first piece grows geometrically (a small object costs a
             * small buffer); once one piece went, the object is large and
             * the next takes a whole piece buffer (a spare one if any). */
            size_t cap = w->next_piece ? RSTOR_PIECE : w->cap ? w->cap : 64 * 1024;
            while (cap < w->fill + n)
                cap *= 2;
            if (cap > RSTOR_PIECE)
                cap = RSTOR_PIECE;
            char *np;
            if (cap == RSTOR_PIECE && !w->pend && w->spare) {
                np = w->spare;
                w->spare = NULL;
            } else if (!(np = realloc(w->pend, cap))) {
                return STOR_ERR_NOMEM;
            }
            w->pend = np;
            w->cap = cap;
        }
        memcpy(w->pend + w->fill, p, n);
        w->fill += n;
        p += n;
        len -= n;
        w->size += n;
        if (w->fill == RSTOR_PIECE)
            send_pending(w);
    }
    if (borrowed)
        window_drain(&w->win);
    return w->win.rc == 0 ? STOR_OK : rs_fail("write piece", w->bucket, w->win.rc);
}

uint64_t rs_writer_size(const stor_writer_t *w_)
{
    return ((const rwriter_t *)w_)->size;
}

static void writer_free(rwriter_t *w)
{
    window_drain(&w->win);
    free(w->pend);
    free(w->spare);
    free(w);
}

/* The writer's pieces written so far go straight away: nothing names them. */
static void writer_discard(rwriter_t *w)
{
    window_drain(&w->win);
    for (uint32_t i = 0; i < w->next_piece; i++) {
        char oid[RSTOR_OID_MAX];
        rs_piece_oid(w->id, i, oid);
        rados_remove(w->st->data, oid);
    }
    if (w->logged)
        rs_intent_clear(w->st, w->in.name);
    writer_free(w);
}

/* Ends a writer whose blob is referenced (kept: its entry cleared) or may
 * be (unsure: its entry is settled by the collector). */
static void writer_keep(rwriter_t *w, int unsure)
{
    if (w->logged)
        (unsure ? rs_intent_unsure : rs_intent_clear)(w->st, w->in.name);
    writer_free(w);
}

void rs_writer_abort(stor_writer_t *w_)
{
    writer_discard((rwriter_t *)w_);
}

/* Sends what is pending and waits until every piece is in the cluster. */
static stor_status_t writer_seal(rwriter_t *w)
{
    send_pending(w);
    window_drain(&w->win);
    return w->win.rc == 0 ? STOR_OK : rs_fail("write piece", w->bucket, w->win.rc);
}

void rs_writer_identity(const stor_writer_t *w_, rs_index_t *ix_p, uint8_t id[STOR_ID_LEN])
{
    const rwriter_t *w = (const rwriter_t *)w_;
    *ix_p = w->ix;
    memcpy(id, w->id, STOR_ID_LEN);
}

stor_status_t rs_writer_intent(stor_writer_t *w_, const buf_t *desc, rs_intent_ref_t *in)
{
    rwriter_t *w = (rwriter_t *)w_;
    stor_status_t s = writer_intent(w, desc);
    *in = w->in;
    return s;
}

stor_status_t rs_writer_seal(stor_writer_t *w)
{
    return writer_seal((rwriter_t *)w);
}

void rs_writer_done(stor_writer_t *w, int how)
{
    if (how == RS_DONE_REMOVE)
        writer_discard((rwriter_t *)w);
    else
        writer_keep((rwriter_t *)w, how == RS_DONE_UNSURE);
}

/* Starts adding to w's entry the blobs an overwrite of key will drop, as
 * the key's record read by pre says (the read is kept for the switch). 1
 * when started (rs_intent_put_finish is due), 0 when nothing to add. */
static int overwrite_intent(rwriter_t *w, const char *key, rs_omap_get_t *pre, rs_intent_put_t *p)
{
    const buf_t *cur;
    stor_obj_rec_t o;
    if (rs_omap_get_peek(pre, &cur) <= 0 ||
        stor_rec_decode_object(cur->data, cur->len, &o) != STOR_OK)
        return 0;
    int started = 0;
    if (o.n_segs && !o.meta.version && !o.meta.delete_marker) {
        buf_t d;
        if (rs_intent_object(&d, &w->ix, key, o.segs, o.n_segs) == 0 &&
            rs_intent_put_start(w->st, w->in.name, &d, w->in.epoch, p) == STOR_OK) {
            started = 1;
            w->in.n_old = o.n_segs;
            memcpy(w->in.old0, o.segs[0].id, STOR_ID_LEN);
        }
        buf_free(&d);
    }
    stor_obj_rec_free(&o);
    return started;
}

stor_status_t rs_writer_commit_if(stor_writer_t *w_, const char *key, stor_meta_t *meta,
                                  const stor_precond_t *cond)
{
    rwriter_t *w = (rwriter_t *)w_;
    rstor_t *st = w->st;
    /* The version is the commit's to give (a copy's source meta has its
     * own). */
    free(meta->version);
    free(meta->delete_marker);
    meta->version = meta->delete_marker = NULL;
    /* The key's current record (with its newest entry, versioned) is read
     * while the last piece is written: one round trip less. */
    char oid[RSTOR_OID_MAX];
    rs_key_oid(&w->ix, key, oid);
    rs_omap_get_t pre, *prep = NULL;
    rs_kread_t vpre, *vprep = NULL;
    if (w->versioning == STOR_VERSIONING_OFF) {
        if (rs_omap_get_start(st->index, oid, key, strlen(key), &pre) == 0)
            prep = &pre;
    } else if (rs_kread_start(st, oid, key, NULL, 1, &vpre) == 0) {
        vprep = &vpre;
    }
    /* The entry names the key before the switch can reference the blob
     * (and before its first piece, for an object of one piece). */
    buf_t desc;
    stor_status_t s = rs_intent_object(&desc, &w->ix, key, NULL, 0) == 0 ? writer_intent(w, &desc)
                                                                         : STOR_ERR_NOMEM;
    buf_free(&desc);
    if (s == STOR_OK)
        rs_crash_point(st, "put-intent");
    /* An overwrite: the blobs the switch will drop go into the entry while
     * the last piece is written (the look at the key is back by now). */
    rs_intent_put_t olds;
    int olds_sent = 0;
    if (s == STOR_OK && prep)
        olds_sent = overwrite_intent(w, key, prep, &olds);
    if (s == STOR_OK)
        s = writer_seal(w);
    if (olds_sent) {
        uint64_t epoch;
        stor_status_t s2 = rs_intent_put_finish(st, &olds, &epoch);
        if (s2 != STOR_OK)
            w->in.n_old = 0; /* not named: the switch names them */
        if (s2 == STOR_OK && epoch != w->in.epoch)
            s2 = STOR_ERR_UNAVAILABLE;
        if (s == STOR_OK)
            s = s2;
    }
    if (s != STOR_OK) {
        if (prep) {
            buf_t unused;
            rs_omap_get_finish(prep, &unused);
            buf_free(&unused);
        }
        if (vprep)
            rs_kread_discard(vprep);
        writer_discard(w);
        return s;
    }
    meta->size = w->size;
    meta->mtime_ms = clock_wall_ms();
    stor_meta_t m = *meta; /* one blob: no parts */
    m.parts_count = 0;
    m.part_sizes = NULL;
    stor_seg_t seg = {.size = w->size};
    memcpy(seg.id, w->id, STOR_ID_LEN);
    s = rs_object_commit(st, w->bucket, &w->ix, w->versioning, key, &m, &seg, 1, cond, prep, vprep,
                         &w->in);
    meta->version = m.version; /* set by a versioned commit */
    /* An unavailable cluster may have applied the switch: the blob is then
     * settled from its intent entry rather than deleted under a live index
     * entry. */
    if (s == STOR_OK || s == STOR_ERR_UNAVAILABLE)
        writer_keep(w, s != STOR_OK || w->in.unsettled);
    else
        writer_discard(w);
    return s;
}

/* ==== Reading ============================================================ */

stor_status_t rs_head_version(stor_t *st_, const char *bucket, const char *key,
                              const char *version_id, stor_meta_t *meta_p)
{
    stor_obj_rec_t rec;
    stor_status_t s = rs_version_read((rstor_t *)st_, bucket, key, version_id, &rec);
    if (s != STOR_OK)
        return s;
    *meta_p = rec.meta;
    memset(&rec.meta, 0, sizeof rec.meta);
    stor_obj_rec_free(&rec);
    return STOR_OK;
}

stor_status_t rs_head(stor_t *st_, const char *bucket, const char *key, stor_meta_t *meta_p)
{
    stor_status_t s = rs_head_version(st_, bucket, key, NULL, meta_p);
    if (s == STOR_OK && meta_p->delete_marker) {
        stor_meta_free(meta_p);
        s = STOR_ERR_NO_KEY;
    }
    return s;
}

typedef struct rreader {
    stor_reader_t base; /* first: stor_backend.h */
    rstor_t *st;
    stor_obj_rec_t rec; /* the blobs read: a snapshot (they stay for grace_ms) */
} rreader_t;

stor_status_t rs_reader_open_version(stor_t *st_, const char *bucket, const char *key,
                                     const char *version_id, stor_reader_t **out_p)
{
    rreader_t *r = calloc(1, sizeof *r);
    if (!r)
        return STOR_ERR_NOMEM;
    stor_status_t s = rs_version_read((rstor_t *)st_, bucket, key, version_id, &r->rec);
    if (s == STOR_OK && r->rec.meta.delete_marker) {
        stor_obj_rec_free(&r->rec);
        s = STOR_ERR_DELETE_MARKER;
    }
    if (s != STOR_OK) {
        free(r);
        return s;
    }
    r->base.st = st_;
    r->st = (rstor_t *)st_;
    *out_p = &r->base;
    return STOR_OK;
}

stor_status_t rs_reader_open(stor_t *st_, const char *bucket, const char *key,
                             stor_reader_t **out_p)
{
    return rs_reader_open_version(st_, bucket, key, NULL, out_p);
}

const stor_meta_t *rs_reader_meta(const stor_reader_t *r)
{
    return &((const rreader_t *)r)->rec.meta;
}

/* Reads go straight into buf, piece by piece, RSTOR_WINDOW at a time. */
ssize_t rs_reader_pread(stor_reader_t *r_, void *buf, size_t len, uint64_t off)
{
    rreader_t *r = (rreader_t *)r_;
    uint64_t size = r->rec.meta.size;
    if (off >= size)
        return 0;
    if (len > size - off)
        len = (size_t)(size - off);
    window_t win = {0};
    char *dst = buf;
    size_t done = 0;
    uint64_t seg_start = 0;
    for (uint32_t s = 0; s < r->rec.n_segs && done < len && win.rc == 0; s++) {
        const stor_seg_t *seg = &r->rec.segs[s];
        uint64_t seg_end = seg_start + seg->size;
        while (done < len && off + done < seg_end && win.rc == 0) {
            uint64_t in_seg = off + done - seg_start;
            uint32_t piece = (uint32_t)(in_seg / RSTOR_PIECE);
            uint64_t in_piece = in_seg % RSTOR_PIECE;
            uint64_t n = RSTOR_PIECE - in_piece;
            if (n > seg->size - in_seg)
                n = seg->size - in_seg;
            if (n > len - done)
                n = len - done;
            unsigned i;
            char oid[RSTOR_OID_MAX];
            int rc = window_slot(&win, NULL, &i);
            if (rc == 0) {
                rs_piece_oid(seg->id, piece, oid);
                rc = rados_aio_read(r->st->data, oid, win.c[i], dst + done, (size_t)n, in_piece);
                if (rc < 0)
                    rados_aio_release(win.c[i]);
            }
            if (rc < 0) {
                win.rc = rc;
                break;
            }
            win.want[i] = (size_t)n;
            win.count++;
            done += (size_t)n;
        }
        seg_start = seg_end;
    }
    window_drain(&win);
    if (win.rc != 0) {
        if (win.rc == -ENOENT || win.rc == -ENODATA)
            log_error("storage: a piece of an open object is gone (a reader held it longer "
                      "than storage.rados.gc_grace)");
        else
            rs_fail("read piece", NULL, win.rc);
        return -1;
    }
    return (ssize_t)done;
}

void rs_reader_close(stor_reader_t *r_)
{
    rreader_t *r = (rreader_t *)r_;
    stor_obj_rec_free(&r->rec);
    free(r);
}

/* ==== Deleting and ACLs ================================================== */

stor_status_t rs_delete(stor_t *st_, const stor_bucket_t *bucket, const char *key,
                        const stor_precond_t *cond)
{
    stor_deleted_t out;
    return rs_delete_version(st_, bucket, key, NULL, cond, &out);
}

stor_status_t rs_object_change(stor_t *st_, const stor_bucket_t *bucket, const char *key,
                               const stor_obj_change_t *change)
{
    rstor_t *st = (rstor_t *)st_;
    rs_index_t ix = rs_index_of(bucket);
    rs_route_t rt;
    rs_route_init(&rt, &ix, key);
    if (change->version_id)
        return rs_version_change(st, &rt, key, change);
    for (int attempt = 0; attempt < RSTOR_RETRIES; attempt++) {
        buf_t raw, b = {0};
        stor_obj_rec_t rec;
        stor_status_t s = index_read(st, rt.oid, key, &raw, &rec, NULL);
        if (s == STOR_ERR_NO_BUCKET) {
            /* The shard is gone: the reshard finished (or the bucket). */
            buf_free(&raw);
            if ((s = rs_route_again(st, &rt, key)) != STOR_OK)
                return s;
            continue;
        }
        if (s == STOR_OK && rec.meta.delete_marker) {
            stor_obj_rec_free(&rec);
            s = STOR_ERR_NO_KEY;
        }
        if (s != STOR_OK) {
            buf_free(&raw);
            return s;
        }
        s = stor_meta_apply_change(&rec.meta, change);
        if (s == STOR_OK)
            s = stor_encode_object(&b, key, &rec.meta, rec.segs, rec.n_segs);
        stor_obj_rec_free(&rec);
        int rc = s == STOR_OK ? index_cas(st, &rt, key, &raw, &b) : 0;
        buf_free(&raw);
        buf_free(&b);
        if (s != STOR_OK || rc == 0)
            return s;
        if ((s = rs_route_failed(st, &rt, key, rc)) != STOR_OK)
            return s;
    }
    return STOR_ERR_UNAVAILABLE;
}
