/* Objects: the writer (open, write, commit), HEAD, the reader (open,
 * pread, span fds) and delete. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <lmdb.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"
#include "storage/local/local_internal.h"

#define OPEN_RETRIES 64

/* Looks bucket/key up in txn and decodes its record (the current object);
 * its index key goes to *ikey_out (ikey_buf holds it). STOR_ERR_NO_KEY when
 * absent. A long key whose hash slot holds another key (a 64-bit collision)
 * is reported as STOR_ERR_IO rather than silently aliased. */
static stor_status_t local_obj_get(lstor_t *st, MDB_txn *txn, const char *bucket, const char *key,
                                   stor_obj_rec_t *rec, MDB_val *ikey_out, uint8_t *ikey_buf)
{
    size_t klen = strlen(key);
    size_t n = local_ikey_encode(bucket, strlen(bucket), key, klen, ikey_buf);
    MDB_val k = {n, ikey_buf}, v;
    if (ikey_out)
        *ikey_out = k;
    int rc = mdb_get(txn, st->db_objects, &k, &v);
    if (rc == MDB_NOTFOUND)
        return STOR_ERR_NO_KEY;
    if (rc)
        return local_mdb_fail("object lookup", rc);
    const char *rkey;
    size_t rklen;
    if (stor_rec_object_key(v.mv_data, v.mv_size, &rkey, &rklen) == STOR_OK &&
        stor_keycmp(rkey, rklen, key, klen) != 0) {
        log_error("storage: index key collision for %s/%s", bucket, key);
        return STOR_ERR_IO;
    }
    stor_status_t s = stor_rec_decode_object(v.mv_data, v.mv_size, rec);
    if (s == STOR_ERR_IO)
        log_error("storage: corrupt object record for %s/%s", bucket, key);
    return s;
}

/* Version vid (NULL: the latest) of bucket/key, for a reader: the current
 * object when it is the one asked for (the only lookup a read of the latest
 * version of an existing object makes), else the versions table; a delete
 * marker comes back as a record like any other (meta.delete_marker). The
 * bucket is looked up only when nothing is found, to tell NoSuchBucket from
 * NoSuchKey. An object seen in txn implies its bucket in txn
 * (stor_bucket_delete refuses a bucket with any version, in the same
 * serialized write transactions). Writers check which bucket, not just that
 * one exists: local_bucket_check(). */
static stor_status_t obj_lookup(lstor_t *st, MDB_txn *txn, const char *bucket, const char *key,
                                const char *vid, stor_obj_rec_t *rec)
{
    if (!local_valid_bucket(bucket))
        return STOR_ERR_NO_BUCKET;
    uint8_t ikey[LOCAL_IKEY_MAX];
    MDB_val ik;
    stor_status_t s = local_obj_get(st, txn, bucket, key, rec, &ik, ikey);
    if (s == STOR_OK && vid && !stor_meta_is_version(&rec->meta, vid)) {
        stor_obj_rec_free(rec);
        s = STOR_ERR_NO_KEY;
    }
    if (s != STOR_ERR_NO_KEY)
        return s;
    s = local_ver_lookup(st, txn, &ik, key, vid, rec);
    if (s != STOR_ERR_NO_KEY && s != STOR_ERR_NO_VERSION)
        return s;
    stor_status_t b = local_bucket_exists(st, txn, bucket);
    return b == STOR_OK ? s : b;
}

/* ==== Writing ============================================================ */

/* Makes the writer's file: a fresh id in its shard directory, a free file
 * of the pool moved there, or else a new one. */
static stor_status_t writer_file_open(lwriter_t *w)
{
    if (local_file_id_new(w->st, w->id) != 0)
        return STOR_ERR_IO;
    local_id_path(w->id, w->path);
    w->fd = local_pool_take(w->st->pool, w->path);
    w->recycled = w->fd >= 0;
    if (w->fd < 0)
        w->fd = openat(w->st->objfd, w->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        log_error("storage: create %s: %s", w->path, strerror(errno));
        return STOR_ERR_IO;
    }
    w->has_file = 1;
    return STOR_OK;
}

stor_status_t local_writer_open(stor_t *st_, const stor_bucket_t *bucket, stor_writer_t **out_p)
{
    lstor_t *st = (lstor_t *)st_;
    MDB_txn *txn;
    stor_status_t s = local_rd_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    s = local_bucket_check(st, txn, bucket->name, bucket->id);
    mdb_txn_abort(txn);
    if (s != STOR_OK)
        return s;
    lwriter_t *w = calloc(1, sizeof *w);
    if (!w)
        return STOR_ERR_NOMEM;
    w->base.st = &st->base;
    w->st = st;
    w->fd = -1;
    snprintf(w->bucket, sizeof w->bucket, "%s", bucket->name);
    w->bucket_id = bucket->id;
    buf_init(&w->mem, st->inline_max);
    /* With inlining off, the file is made now, as it always was. */
    if (st->inline_max == 0 && (s = writer_file_open(w)) != STOR_OK) {
        free(w);
        return s;
    }
    *out_p = &w->base;
    return STOR_OK;
}

/* Writes len bytes at p to the writer's file. */
static stor_status_t file_write(lwriter_t *w, const char *p, size_t len)
{
    while (len) {
        ssize_t n = write(w->fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            log_error("storage: write %s: %s", w->path, strerror(errno));
            return STOR_ERR_IO;
        }
        p += n;
        len -= (size_t)n;
    }
    return STOR_OK;
}

/* Moves the bytes kept in memory to a file of their own (made now). */
static stor_status_t writer_spill(lwriter_t *w)
{
    stor_status_t s = writer_file_open(w);
    if (s == STOR_OK && w->mem.len)
        s = file_write(w, w->mem.data, w->mem.len);
    buf_free(&w->mem);
    return s;
}

stor_status_t local_writer_write(stor_writer_t *w_, const void *data, size_t len)
{
    lwriter_t *w = (lwriter_t *)w_;
    if (!w->has_file && len <= w->mem.max - w->mem.len) {
        if (buf_append(&w->mem, data, len) != 0)
            return STOR_ERR_NOMEM;
        w->size += len;
        return STOR_OK;
    }
    stor_status_t s = w->has_file ? STOR_OK : writer_spill(w);
    if (s == STOR_OK)
        s = file_write(w, data, len);
    if (s == STOR_OK)
        w->size += len;
    return s;
}

uint64_t local_writer_size(const stor_writer_t *w_)
{
    const lwriter_t *w = (const lwriter_t *)w_;
    return w->size;
}

/* Closes and frees a writer; its file, if it made one, is unlinked unless an
 * index record now points at it (keep). */
void local_writer_free(lwriter_t *w, int keep)
{
    if (w->fd >= 0)
        close(w->fd);
    if (w->has_file && !keep)
        unlinkat(w->st->objfd, w->path, 0);
    buf_free(&w->mem);
    free(w);
}

void local_writer_abort(stor_writer_t *w_)
{
    lwriter_t *w = (lwriter_t *)w_;
    if (w)
        local_writer_free(w, 0);
}

/* Moves the bytes to a file if still in memory, makes them durable per the
 * mode and closes the fd. */
stor_status_t local_writer_seal(lwriter_t *w)
{
    if (!w->has_file) {
        stor_status_t s = writer_spill(w);
        if (s != STOR_OK)
            return s;
    }
    /* A file from the pool: the old bytes past ours go. */
    int rc = w->recycled ? ftruncate(w->fd, (off_t)w->size) : 0;
    if (rc == 0 && w->st->durability == STOR_DURABILITY_FSYNC) {
        char dir[LOCAL_PATH_LEN];
        memcpy(dir, w->path, 5);
        dir[5] = '\0';
        rc = fdatasync(w->fd);
        if (rc == 0)
            rc = local_fsync_dirat(w->st->objfd, dir);
    }
    if (close(w->fd) != 0 && rc == 0)
        rc = -1;
    w->fd = -1;
    if (rc != 0) {
        log_error("storage: sync %s: %s", w->path, strerror(errno));
        return STOR_ERR_IO;
    }
    return STOR_OK;
}

/* Points bucket/key at the encoded record rec in txn. The replaced record, if
 * any, goes to *old (*had_old set; the caller unlinks its files after the
 * commit and frees it). STOR_ERR_NO_BUCKET when the bucket (bucket_id) is
 * gone: checked even when the key exists, since an object under this name
 * may belong to a bucket re-created since. */
stor_status_t local_put_object(lstor_t *st, MDB_txn *txn, const char *bucket, uint64_t bucket_id,
                               const char *key, const buf_t *enc, stor_obj_rec_t *nrec,
                               const stor_precond_t *cond, stor_obj_rec_t *old, int *had_old,
                               int *touched)
{
    uint8_t ikey[LOCAL_IKEY_MAX];
    MDB_val k;
    int versioning, had_cur = 0, ignored;
    *had_old = 0;
    if (!touched)
        touched = &ignored;
    stor_status_t s = local_bucket_check_ver(st, txn, bucket, bucket_id, &versioning);
    if (s != STOR_OK)
        return s;
    stor_obj_rec_t cur;
    s = local_obj_get(st, txn, bucket, key, &cur, &k, ikey);
    if (s == STOR_OK)
        had_cur = 1;
    else if (s != STOR_ERR_NO_KEY)
        return s;
    if ((s = stor_precond_check(cond, &cur.meta, had_cur)) != STOR_OK)
        goto out;
    *touched = 1; /* the checks passed: the writes follow */
    if (versioning != STOR_VERSIONING_OFF) {
        s = local_ver_push(st, txn, &k, key, versioning, &cur, had_cur, nrec, old, had_old);
        goto out;
    }
    MDB_val v = {enc->len, enc->data};
    int rc = local_wr_put(st, txn, st->db_objects, &k, &v, 0);
    if (rc) {
        s = local_mdb_fail("object put", rc);
        goto out;
    }
    *old = cur;
    *had_old = had_cur;
    return STOR_OK;
out:
    if (had_cur)
        stor_obj_rec_free(&cur);
    return s;
}

/* A writer's commit as a change of a group (local_group.c): local_put_object, its
 * outputs reset first since a group may apply it again. */
typedef struct put_change {
    lwriter_t *w;
    const char *key;
    const buf_t *enc;
    stor_obj_rec_t *nrec;
    const stor_precond_t *cond;
    stor_obj_rec_t old; /* the record it replaced, when had_old */
    int had_old;
} put_change_t;

static stor_status_t put_apply(lstor_t *st, MDB_txn *txn, void *arg, int *touched)
{
    put_change_t *p = arg;
    if (p->had_old)
        stor_obj_rec_free(&p->old);
    return local_put_object(st, txn, p->w->bucket, p->w->bucket_id, p->key, p->enc, p->nrec,
                            p->cond, &p->old, &p->had_old, touched);
}

stor_status_t local_writer_commit_if(stor_writer_t *w_, const char *key, stor_meta_t *meta,
                                     const stor_precond_t *cond)
{
    return local_writer_commit_later(w_, key, meta, cond, NULL);
}

/* ticket_p NULL: returns durable (local_writer_commit_if). */
stor_status_t local_writer_commit_later(stor_writer_t *w_, const char *key, stor_meta_t *meta,
                                        const stor_precond_t *cond, stor_ticket_t *ticket_p)
{
    lwriter_t *w = (lwriter_t *)w_;
    lstor_t *st = w->st;
    buf_t b = {0};
    local_change_t c = {.applied = 0}; /* applied: the index now references the file: keep it */
    /* Still in memory: the record carries the bytes, and the commit (in
     * fsync mode its sync point, shared with other commits) covers both. */
    int inline_obj = !w->has_file;
    stor_status_t s = STOR_OK;
    /* The version is the commit's to give (a copy's source meta has its
     * own). */
    free(meta->version);
    free(meta->delete_marker);
    meta->version = meta->delete_marker = NULL;
    /* Encoded before the write transaction: LMDB serializes writers, so
     * nothing that can run outside one should run inside. */
    if (inline_obj)
        s = stor_encode_put_inline(&b, key, meta, w->mem.data ? w->mem.data : "", w->size);
    else if ((s = local_writer_seal(w)) == STOR_OK)
        s = stor_encode_put(&b, key, meta, w->id, w->size);
    if (s != STOR_OK)
        goto out;
    /* What b encodes, for a versioned bucket's commit to encode again. */
    stor_seg_t seg = {.size = w->size};
    memcpy(seg.id, w->id, STOR_ID_LEN);
    stor_obj_rec_t nrec = {.meta = *meta};
    nrec.meta.parts_count = 0;
    nrec.meta.part_sizes = NULL;
    if (inline_obj)
        nrec.body = w->mem.data ? (const uint8_t *)w->mem.data : (const uint8_t *)"";
    else
        nrec.segs = &seg, nrec.n_segs = 1;

    put_change_t p = {.w = w, .key = key, .enc = &b, .nrec = &nrec, .cond = cond};
    c.apply = put_apply;
    c.arg = &p;
    c.new_file = inline_obj ? NULL : w->id;
    s = local_group_apply(st, &c);
    /* A replaced file may go only once the commit is durable: that one waits. */
    if (s == STOR_OK)
        s = local_group_durable(st, &c, p.had_old && p.old.n_segs ? NULL : ticket_p);
    meta->version = nrec.meta.version; /* set by a versioned commit */
    if (c.applied)
        local_usage_change(st, 1 - (p.had_old && !p.old.meta.delete_marker),
                           (int64_t)w->size - (p.had_old ? (int64_t)p.old.meta.size : 0));
    if (p.had_old) {
        if (s == STOR_OK && c.applied)
            for (uint32_t i = 0; i < p.old.n_segs; i++)
                local_drop_file(st, p.old.segs[i].id);
        stor_obj_rec_free(&p.old);
    }
out:
    buf_free(&b);
    local_writer_free(w, c.applied);
    return s;
}

/* ==== Reading ============================================================ */

/* Version vid (NULL: the latest) of bucket/key's record, read in a short
 * read transaction of its own. An inline object's bytes are copied out of
 * the transaction (malloc'ed) into *body_p when body_p is given; rec->body
 * is never left pointing into it. */
static stor_status_t rec_read(lstor_t *st, const char *bucket, const char *key, const char *vid,
                              stor_obj_rec_t *rec, uint8_t **body_p)
{
    MDB_txn *txn;
    stor_status_t s = local_rd_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    s = obj_lookup(st, txn, bucket, key, vid, rec);
    if (s == STOR_OK && body_p) {
        *body_p = NULL;
        if (rec->body && !(*body_p = malloc(rec->meta.size ? (size_t)rec->meta.size : 1))) {
            stor_obj_rec_free(rec);
            s = STOR_ERR_NOMEM;
        } else if (rec->body) {
            memcpy(*body_p, rec->body, (size_t)rec->meta.size);
        }
    }
    if (s == STOR_OK)
        rec->body = NULL;
    mdb_txn_abort(txn);
    return s;
}

stor_status_t local_head_version(stor_t *st_, const char *bucket, const char *key,
                                 const char *version_id, stor_meta_t *meta_p)
{
    lstor_t *st = (lstor_t *)st_;
    stor_obj_rec_t rec;
    stor_status_t s = rec_read(st, bucket, key, version_id, &rec, NULL);
    if (s != STOR_OK)
        return s;
    *meta_p = rec.meta;
    memset(&rec.meta, 0, sizeof rec.meta);
    stor_obj_rec_free(&rec);
    return STOR_OK;
}

stor_status_t local_head(stor_t *st_, const char *bucket, const char *key, stor_meta_t *meta_p)
{
    stor_status_t s = local_head_version(st_, bucket, key, NULL, meta_p);
    if (s == STOR_OK && meta_p->delete_marker) {
        stor_meta_free(meta_p);
        s = STOR_ERR_NO_KEY;
    }
    return s;
}

typedef struct rseg {
    int fd;
    uint64_t start, size; /* object offset of the segment, its length */
} rseg_t;

typedef struct lreader lreader_t;

struct lreader {
    stor_reader_t base; /* first: stor_backend.h */
    stor_meta_t meta;
    rseg_t *segs; /* &one for a single-part object, else malloc'ed */
    uint32_t n_segs;
    rseg_t one;
    /* An inline object's bytes, copied out of the index (meta.size of
     * them; n_segs 0); NULL for an object in files. */
    uint8_t *body;
};

void local_reader_close(stor_reader_t *r_)
{
    lreader_t *r = (lreader_t *)r_;
    if (!r)
        return;
    for (uint32_t i = 0; i < r->n_segs; i++)
        if (r->segs[i].fd >= 0)
            close(r->segs[i].fd);
    if (r->segs != &r->one)
        free(r->segs);
    free(r->body);
    stor_meta_free(&r->meta);
    free(r);
}

stor_status_t local_reader_open(stor_t *st_, const char *bucket, const char *key,
                                stor_reader_t **out_p)
{
    return local_reader_open_version(st_, bucket, key, NULL, out_p);
}

stor_status_t local_reader_open_version(stor_t *st_, const char *bucket, const char *key,
                                        const char *version_id, stor_reader_t **out_p)
{
    lstor_t *st = (lstor_t *)st_;
    /* The record is read in a short txn, then the files are opened. A commit
     * in between may unlink a file we are about to open (ENOENT): the index
     * then already points elsewhere, so look again. */
    for (int attempt = 0; attempt < OPEN_RETRIES; attempt++) {
        uint64_t epoch = local_fdcache_epoch(st);
        stor_obj_rec_t rec;
        uint8_t *body;
        stor_status_t s = rec_read(st, bucket, key, version_id, &rec, &body);
        if (s != STOR_OK)
            return s;
        if (rec.meta.delete_marker) {
            free(body);
            stor_obj_rec_free(&rec);
            return STOR_ERR_DELETE_MARKER;
        }
        lreader_t *r = calloc(1, sizeof *r);
        if (r) {
            r->base.st = &st->base;
            r->body = body;
            body = NULL;
            r->segs = rec.n_segs <= 1 ? &r->one : calloc(rec.n_segs, sizeof *r->segs);
        }
        if (!r || !r->segs) {
            free(r);
            free(body);
            stor_obj_rec_free(&rec);
            return STOR_ERR_NOMEM;
        }
        int vanished = 0;
        uint64_t off = 0;
        for (uint32_t i = 0; i < rec.n_segs; i++) {
            char path[LOCAL_PATH_LEN];
            int fd = local_fdcache_get(st, rec.segs[i].id);
            if (fd < 0) {
                local_id_path(rec.segs[i].id, path);
                fd = openat(st->objfd, path, O_RDONLY | O_CLOEXEC);
                if (fd >= 0)
                    local_fdcache_put(st, rec.segs[i].id, fd, epoch);
            }
            if (fd < 0) {
                if (errno == ENOENT) {
                    vanished = 1;
                } else {
                    log_error("storage: open %s: %s", path, strerror(errno));
                    s = STOR_ERR_IO;
                }
                break;
            }
            r->segs[i] = (rseg_t){fd, off, rec.segs[i].size};
            r->n_segs = i + 1;
            off += rec.segs[i].size;
        }
        r->meta = rec.meta;
        memset(&rec.meta, 0, sizeof rec.meta);
        stor_obj_rec_free(&rec);
        if (s == STOR_OK && !vanished) {
            *out_p = &r->base;
            return STOR_OK;
        }
        local_reader_close(&r->base);
        if (s != STOR_OK)
            return s;
        sched_yield();
    }
    log_error("storage: %s/%s: object files keep vanishing (missing file?)", bucket, key);
    return STOR_ERR_IO;
}

const stor_meta_t *local_reader_meta(const stor_reader_t *r_)
{
    const lreader_t *r = (const lreader_t *)r_;
    return &r->meta;
}

/* Index of the segment holding object offset off (off < size). */
static uint32_t seg_find(const lreader_t *r, uint64_t off)
{
    uint32_t lo = 0, hi = r->n_segs;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (r->segs[mid].start <= off)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

ssize_t local_reader_pread(stor_reader_t *r_, void *buf, size_t len, uint64_t off)
{
    lreader_t *r = (lreader_t *)r_;
    uint64_t size = r->meta.size;
    if (off >= size || len == 0)
        return 0;
    if (len > size - off)
        len = (size_t)(size - off);
    if (len > (size_t)SSIZE_MAX)
        len = (size_t)SSIZE_MAX;
    if (r->body) {
        memcpy(buf, r->body + off, len);
        return (ssize_t)len;
    }
    size_t done = 0;
    uint32_t i = seg_find(r, off);
    while (done < len && i < r->n_segs) {
        const rseg_t *g = &r->segs[i];
        uint64_t in = off + done - g->start;
        if (in >= g->size) {
            i++;
            continue;
        }
        size_t want = len - done;
        if (want > g->size - in)
            want = (size_t)(g->size - in);
        ssize_t n = pread(g->fd, (char *)buf + done, want, (off_t)in);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            log_error("storage: pread: %s", strerror(errno));
            return -1;
        }
        if (n == 0) {
            log_error("storage: object file shorter than its record");
            return -1;
        }
        done += (size_t)n;
    }
    return (ssize_t)done;
}

int local_reader_span_fd(stor_reader_t *r_, uint64_t off, uint64_t len, int *fd_p,
                         uint64_t *file_off_p)
{
    lreader_t *r = (lreader_t *)r_;
    if (r->n_segs == 0 || off > r->meta.size || len > r->meta.size - off)
        return 0;
    uint32_t i = off == r->meta.size ? r->n_segs - 1 : seg_find(r, off);
    const rseg_t *g = &r->segs[i];
    if (off < g->start || off - g->start + len > g->size)
        return 0;
    *fd_p = g->fd;
    *file_off_p = off - g->start;
    return 1;
}

/* ==== Deleting =========================================================== */

stor_status_t local_delete(stor_t *st_, const stor_bucket_t *bucket, const char *key,
                           const stor_precond_t *cond)
{
    stor_deleted_t out;
    return local_delete_version(st_, bucket, key, NULL, cond, &out);
}

/* A delete marker's record for key (owner NULL: the bucket's owner). */
static stor_status_t marker_new(stor_obj_rec_t *rec)
{
    memset(rec, 0, sizeof *rec);
    rec->meta.mtime_ms = clock_wall_ms();
    rec->body = (const uint8_t *)"";
    rec->meta.delete_marker = strdup("1");
    return rec->meta.delete_marker ? STOR_OK : STOR_ERR_NOMEM;
}

/* A delete as a change of a group (local_group.c); its outputs are reset
 * first since a group may apply it again. */
typedef struct del_change {
    const stor_bucket_t *bucket;
    const char *key, *version_id;
    const stor_precond_t *cond;
    int versioning;
    stor_obj_rec_t cur, old, mk; /* mk: the delete marker put on top */
    int had_cur, had_old;
} del_change_t;

static void del_reset(del_change_t *d)
{
    if (d->had_old)
        stor_obj_rec_free(&d->old);
    if (d->had_cur)
        stor_obj_rec_free(&d->cur);
    stor_meta_free(&d->mk.meta);
    memset(&d->mk, 0, sizeof d->mk);
    d->had_cur = d->had_old = 0;
    d->versioning = STOR_VERSIONING_OFF;
}

static stor_status_t del_apply(lstor_t *st, MDB_txn *txn, void *arg, int *touched)
{
    del_change_t *d = arg;
    const char *key = d->key, *version_id = d->version_id;
    uint8_t ikey[LOCAL_IKEY_MAX];
    MDB_val k;
    del_reset(d);
    stor_status_t s =
        local_bucket_check_ver(st, txn, d->bucket->name, d->bucket->id, &d->versioning);
    if (s == STOR_OK) {
        s = local_obj_get(st, txn, d->bucket->name, key, &d->cur, &k, ikey);
        d->had_cur = s == STOR_OK;
        if (s == STOR_ERR_NO_KEY && (version_id || d->versioning != STOR_VERSIONING_OFF))
            s = STOR_OK;
        if ((s == STOR_OK || s == STOR_ERR_NO_KEY) && d->cond)
            s = stor_precond_check(d->cond, d->had_cur ? &d->cur.meta : NULL, d->had_cur);
    }
    if (s != STOR_OK)
        return s;
    *touched = 1; /* the checks passed: the writes follow */
    if (version_id) {
        /* Exactly that version. */
        s = local_ver_remove(st, txn, &k, key, version_id, &d->cur, d->had_cur, &d->old);
        d->had_old = s == STOR_OK;
        if (s == STOR_ERR_NO_VERSION)
            *touched = 0; /* found absent before anything was written */
    } else if (d->versioning != STOR_VERSIONING_OFF) {
        /* A new delete marker on top. */
        if ((s = marker_new(&d->mk)) == STOR_OK)
            s = local_ver_push(st, txn, &k, key, d->versioning, &d->cur, d->had_cur, &d->mk,
                               &d->old, &d->had_old);
    } else {
        int rc = local_wr_del(st, txn, st->db_objects, &k, NULL);
        if (rc)
            s = local_mdb_fail("object delete", rc);
        d->old = d->cur;
        memset(&d->cur, 0, sizeof d->cur);
        d->had_cur = 0;
        d->had_old = 1;
    }
    /* The guard sees what goes, before anything is committed. */
    if (s == STOR_OK && d->had_old)
        s = stor_precond_guard(d->cond, &d->old.meta);
    return s;
}

stor_status_t local_delete_version(stor_t *st_, const stor_bucket_t *bucket, const char *key,
                                   const char *version_id, const stor_precond_t *cond,
                                   stor_deleted_t *out)
{
    lstor_t *st = (lstor_t *)st_;
    memset(out, 0, sizeof *out);
    if (version_id && !stor_version_id_valid(version_id))
        return STOR_ERR_NO_VERSION;
    del_change_t d = {.bucket = bucket, .key = key, .version_id = version_id, .cond = cond};
    local_change_t c = {.apply = del_apply, .arg = &d};
    stor_status_t s = local_group_commit(st, &c);
    if (s == STOR_OK) {
        if (version_id) {
            stor_version_id(&d.old.meta, out->version_id);
            out->delete_marker = d.old.meta.delete_marker != NULL;
        } else if (d.versioning != STOR_VERSIONING_OFF) {
            stor_version_id(&d.mk.meta, out->version_id);
            out->delete_marker = 1;
        }
        if (d.had_old) {
            if (!d.old.meta.delete_marker)
                local_usage_change(st, -1, -(int64_t)d.old.meta.size);
            for (uint32_t i = 0; i < d.old.n_segs; i++)
                local_drop_file(st, d.old.segs[i].id);
        }
    }
    del_reset(&d);
    return s;
}

stor_status_t local_object_change(stor_t *st_, const stor_bucket_t *bucket, const char *key,
                                  const stor_obj_change_t *change)
{
    lstor_t *st = (lstor_t *)st_;
    MDB_txn *txn;
    stor_status_t s = local_wr_begin(st, &txn);
    if (s != STOR_OK)
        return s;
    stor_obj_rec_t rec;
    uint8_t ikey[LOCAL_IKEY_MAX];
    MDB_val k;
    buf_t b = {0};
    int have = 0;
    const char *vid = change->version_id;
    if (vid && !stor_version_id_valid(vid))
        s = STOR_ERR_NO_VERSION;
    if (s == STOR_OK)
        s = local_bucket_check(st, txn, bucket->name, bucket->id);
    if (s == STOR_OK)
        s = local_obj_get(st, txn, bucket->name, key, &rec, &k, ikey);
    if (vid && (s == STOR_OK || s == STOR_ERR_NO_KEY) &&
        (s == STOR_ERR_NO_KEY || !stor_meta_is_version(&rec.meta, vid))) {
        /* Another version than the current object: in the versions table. */
        if (s == STOR_OK)
            stor_obj_rec_free(&rec);
        s = local_ver_change(st, txn, &k, key, vid, change);
        if (s == STOR_OK)
            s = local_wr_commit(st, txn);
        else
            mdb_txn_abort(txn);
        return s;
    }
    if (s == STOR_OK) {
        /* The same record (same files or inline bytes, same mtime) with
         * the change; rec.body points into txn, which is still open. */
        have = 1;
        s = stor_meta_apply_change(&rec.meta, change);
        if (s == STOR_OK)
            s = stor_encode_object_rec(&b, key, &rec);
    }
    if (s == STOR_OK) {
        MDB_val v = {b.len, b.data};
        int rc = local_wr_put(st, txn, st->db_objects, &k, &v, 0);
        if (rc)
            s = local_mdb_fail("object put", rc);
    }
    if (s == STOR_OK)
        s = local_wr_commit(st, txn);
    else
        mdb_txn_abort(txn);
    buf_free(&b);
    if (have)
        stor_obj_rec_free(&rec);
    return s;
}
