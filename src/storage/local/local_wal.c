/* Fsync mode's commit log: one record per logged group of object changes,
 * one fdatasync for the records appended meanwhile. See local_wal.h for the
 * contract and the recovery argument.
 *
 * index/wal: a 4 KiB header (magic, generation, CRC32C), then records one
 * after the other from HDR_SIZE. A record is a rec_hdr_t (its length, the
 * generation, the transaction id, a CRC32C of the whole record with the crc
 * field 0, the count of operations), then each operation: an op_hdr_t, the
 * key, the value. The file is written in place: it is grown with zeros a
 * chunk ahead of the records, so a record's flush is the flush of its pages
 * (no size change for the filesystem's journal on the request path), and it
 * starts over at HDR_SIZE under a new generation (records of an older one end
 * the log where they begin). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/log.h"
#include "storage/local/local_wal.h"

size_t local_wal_max_bytes = 32u << 20;

#define HDR_SIZE   4096u
#define GROW       (1u << 20) /* zeros written ahead of the records at a time */
#define FILE_MAGIC "s3rwal1"
#define REC_MAGIC  0x57524c31u /* "WRL1" */

enum { OP_PUT = 1, OP_DEL = 2, OP_DEL_DUP = 3 };

typedef struct file_hdr {
    char magic[8];
    uint64_t gen;
    uint32_t crc; /* CRC32C of this header with crc 0 */
    uint32_t zero;
} file_hdr_t;

typedef struct rec_hdr {
    uint32_t magic;
    uint32_t len; /* of the whole record, this header included */
    uint64_t gen;
    uint64_t txnid;
    uint32_t crc; /* CRC32C of the whole record with crc 0 */
    uint32_t n_ops;
} rec_hdr_t;

typedef struct op_hdr {
    uint8_t kind; /* OP_* */
    uint8_t table;
    uint16_t zero;
    uint32_t klen, vlen;
} op_hdr_t;

/* A local_wal_await: done is called once lsn is flushed (or cannot be). */
typedef struct wal_waiter {
    struct wal_waiter *next;
    uint64_t lsn;
    stor_durable_fn done;
    void *arg;
    stor_status_t st; /* set when settled */
} wal_waiter_t;

struct local_wal {
    int fd;
    MDB_dbi dbis[WAL_MAX_TABLES];
    unsigned n_dbis;

    /* The record being captured: only the thread recording (the group's
     * leader, which holds LMDB's writer lock from the capture's start to its
     * commit and appends before the next group may begin) touches these. */
    uint8_t *buf; /* a rec_hdr_t, then the operations */
    size_t len, cap;
    uint32_t n_ops;
    size_t last_len; /* len before the last operation */
    int failed;

    pthread_mutex_t lock; /* guards what follows */
    pthread_cond_t flushed_cv;
    uint64_t gen;
    off_t pos;        /* where the next record goes */
    off_t alloc;      /* the file's written length (zeros past pos) */
    uint64_t lsn;     /* bytes appended since open */
    uint64_t flushed; /* lsn known on disk */
    int flushing;
    wal_waiter_t *waiters; /* local_wal_await's, not settled yet */
    uint64_t last_txnid;
    /* A restart or a flush failed: no more records, and no flush succeeds
     * any more (after a failed fdatasync, Linux may have dropped the
     * unwritten pages: a later one could pass over a hole in the log). */
    int broken;
};

/* The log the calling thread is recording for, if any. */
static _Thread_local const local_wal_t *capturing;

static uint32_t file_hdr_crc(file_hdr_t h)
{
    h.crc = 0;
    return hash_crc32c_update(0, &h, sizeof h);
}

static uint32_t rec_crc(uint8_t *rec, size_t len)
{
    rec_hdr_t h;
    memcpy(&h, rec, sizeof h);
    uint32_t want = h.crc;
    h.crc = 0;
    memcpy(rec, &h, sizeof h);
    uint32_t crc = hash_crc32c_update(0, rec, len);
    h.crc = want;
    memcpy(rec, &h, sizeof h);
    return crc;
}

/* The generation in fd's header, or 0 if it has none that checks. */
static uint64_t read_gen(int fd)
{
    file_hdr_t h;
    if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h ||
        memcmp(h.magic, FILE_MAGIC, sizeof h.magic) != 0 || h.crc != file_hdr_crc(h))
        return 0;
    return h.gen;
}

/* Applies the operations of one record (len bytes, checked) in txn. */
static int apply_record(MDB_txn *txn, const uint8_t *rec, size_t len, const MDB_dbi *dbis,
                        unsigned n_dbis)
{
    rec_hdr_t h;
    memcpy(&h, rec, sizeof h);
    size_t off = sizeof h;
    for (uint32_t i = 0; i < h.n_ops; i++) {
        op_hdr_t o;
        if (len - off < sizeof o)
            return -1;
        memcpy(&o, rec + off, sizeof o);
        off += sizeof o;
        if (o.table >= n_dbis || o.klen == 0 || len - off < o.klen || len - off - o.klen < o.vlen)
            return -1;
        MDB_val k = {o.klen, (void *)(rec + off)}, v = {o.vlen, (void *)(rec + off + o.klen)};
        off += (size_t)o.klen + o.vlen;
        int rc;
        if (o.kind == OP_PUT)
            rc = mdb_put(txn, dbis[o.table], &k, &v, 0);
        else if (o.kind == OP_DEL || o.kind == OP_DEL_DUP)
            rc = mdb_del(txn, dbis[o.table], &k, o.kind == OP_DEL_DUP ? &v : NULL);
        else
            return -1;
        if (rc == MDB_NOTFOUND)
            rc = 0; /* applied before (a second recovery) */
        if (rc) {
            log_error("storage: replaying the commit log: %s", mdb_strerror(rc));
            return -1;
        }
    }
    return off == len ? 0 : -1;
}

int local_wal_replay(int index_dirfd, MDB_env *env, uint64_t last, const MDB_dbi *dbis,
                     unsigned n_dbis, unsigned *n_p)
{
    *n_p = 0;
    int fd = openat(index_dirfd, WAL_FILE, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        log_error("storage: open index/%s: %s", WAL_FILE, strerror(errno));
        return -1;
    }
    uint64_t gen = read_gen(fd);
    struct stat sb;
    if (gen == 0 || fstat(fd, &sb) != 0) {
        close(fd);
        return 0; /* never started: no record was ever acknowledged */
    }
    int rc = 0;
    MDB_txn *txn = NULL;
    uint8_t *buf = NULL;
    size_t cap = 0;
    for (off_t off = HDR_SIZE; off < sb.st_size;) {
        rec_hdr_t h;
        if (pread(fd, &h, sizeof h, off) != (ssize_t)sizeof h || h.magic != REC_MAGIC ||
            h.gen != gen || h.len < sizeof h || h.len > (uint64_t)(sb.st_size - off))
            break; /* the end: zeros, an older generation, or a torn record */
        if (h.len > cap) {
            uint8_t *p = realloc(buf, h.len);
            if (!p) {
                log_error("storage: out of memory replaying the commit log");
                rc = -1;
                break;
            }
            buf = p;
            cap = h.len;
        }
        if (pread(fd, buf, h.len, off) != (ssize_t)h.len || rec_crc(buf, h.len) != h.crc)
            break;
        off += h.len;
        if (h.txnid <= last)
            continue; /* the index has it */
        int mrc = txn ? 0 : mdb_txn_begin(env, NULL, 0, &txn);
        if (mrc || apply_record(txn, buf, h.len, dbis, n_dbis) != 0) {
            log_error("storage: index/%s: cannot apply the record of transaction %llu", WAL_FILE,
                      (unsigned long long)h.txnid);
            rc = -1;
            break;
        }
        (*n_p)++;
    }
    if (txn && rc == 0) {
        int mrc = mdb_txn_commit(txn);
        if (mrc) {
            log_error("storage: replaying the commit log: %s", mdb_strerror(mrc));
            rc = -1;
        }
    } else if (txn) {
        mdb_txn_abort(txn);
    }
    if (rc == 0 && *n_p)
        log_warn("storage: the index was behind its commit log: %u logged commits applied again",
                 *n_p);
    free(buf);
    close(fd);
    return rc;
}

/* Writes header generation gen and flushes it. Under w->lock or before w is
 * shared. */
static int write_header(local_wal_t *w, uint64_t gen)
{
    uint8_t block[HDR_SIZE] = {0};
    file_hdr_t h = {.gen = gen};
    memcpy(h.magic, FILE_MAGIC, sizeof h.magic);
    h.crc = file_hdr_crc(h);
    memcpy(block, &h, sizeof h);
    if (pwrite(w->fd, block, sizeof block, 0) != (ssize_t)sizeof block || fdatasync(w->fd) != 0) {
        log_error("storage: index/%s: starting the log over: %s", WAL_FILE, strerror(errno));
        return -1;
    }
    w->gen = gen;
    w->pos = HDR_SIZE;
    w->last_txnid = 0;
    w->flushed = w->lsn; /* a restore point covers everything before */
    if (w->alloc < (off_t)HDR_SIZE)
        w->alloc = HDR_SIZE;
    return 0;
}

local_wal_t *local_wal_open(int index_dirfd, const MDB_dbi *dbis, unsigned n_dbis)
{
    local_wal_t *w = calloc(1, sizeof *w);
    if (!w || n_dbis > WAL_MAX_TABLES) {
        free(w);
        log_error("storage: cannot open the commit log");
        return NULL;
    }
    memcpy(w->dbis, dbis, n_dbis * sizeof *dbis);
    w->n_dbis = n_dbis;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->flushed_cv, NULL);
    struct stat sb;
    w->fd = openat(index_dirfd, WAL_FILE, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (w->fd < 0 || fstat(w->fd, &sb) != 0 || fsync(index_dirfd) != 0) {
        log_error("storage: index/%s: %s", WAL_FILE, strerror(errno));
        local_wal_close(w);
        return NULL;
    }
    w->alloc = sb.st_size;
    if (write_header(w, read_gen(w->fd) + 1) != 0) {
        local_wal_close(w);
        return NULL;
    }
    return w;
}

int local_wal_remove(int index_dirfd)
{
    if (unlinkat(index_dirfd, WAL_FILE, 0) != 0) {
        if (errno == ENOENT)
            return 0;
    } else if (fsync(index_dirfd) == 0) {
        return 0;
    }
    log_error("storage: removing index/%s: %s", WAL_FILE, strerror(errno));
    return -1;
}

void local_wal_close(local_wal_t *w)
{
    if (!w)
        return;
    /* No thread uses the store any more, and a waiter never outlives the
     * flushes of the thread that found none under way: none is left. */
    if (w->fd >= 0)
        close(w->fd);
    free(w->buf);
    pthread_cond_destroy(&w->flushed_cv);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

/* ---- Capture ----------------------------------------------------------------- */

void local_wal_capture_begin(local_wal_t *w)
{
    capturing = w;
    w->len = sizeof(rec_hdr_t);
    w->n_ops = 0;
    w->failed = 0;
}

int local_wal_capturing(const local_wal_t *w)
{
    return w && capturing == w;
}

/* Room for n more bytes in the record being captured. */
static int cap_reserve(local_wal_t *w, size_t n)
{
    if (n > local_wal_max_bytes || w->len > local_wal_max_bytes - n)
        return -1; /* never fits the log */
    if (w->len + n <= w->cap)
        return 0;
    size_t cap = w->cap ? w->cap : 16384;
    while (cap < w->len + n)
        cap *= 2;
    uint8_t *p = realloc(w->buf, cap);
    if (!p)
        return -1;
    w->buf = p;
    w->cap = cap;
    return 0;
}

void local_wal_capture_op(local_wal_t *w, int del, MDB_dbi dbi, const MDB_val *k, const MDB_val *v)
{
    if (!local_wal_capturing(w) || w->failed)
        return;
    unsigned t = 0;
    while (t < w->n_dbis && w->dbis[t] != dbi)
        t++;
    size_t vlen = v ? v->mv_size : 0;
    op_hdr_t o = {.kind = (uint8_t)(!del ? OP_PUT
                                    : v  ? OP_DEL_DUP
                                         : OP_DEL),
                  .table = (uint8_t)t,
                  .klen = (uint32_t)k->mv_size,
                  .vlen = (uint32_t)vlen};
    if (t == w->n_dbis || k->mv_size > UINT32_MAX || vlen > UINT32_MAX ||
        cap_reserve(w, sizeof o + k->mv_size + vlen) != 0) {
        w->failed = 1;
        return;
    }
    w->last_len = w->len;
    memcpy(w->buf + w->len, &o, sizeof o);
    memcpy(w->buf + w->len + sizeof o, k->mv_data, k->mv_size);
    if (vlen)
        memcpy(w->buf + w->len + sizeof o + k->mv_size, v->mv_data, vlen);
    w->len += sizeof o + k->mv_size + vlen;
    w->n_ops++;
}

void local_wal_capture_undo(local_wal_t *w)
{
    if (!local_wal_capturing(w) || w->failed || !w->n_ops)
        return;
    w->len = w->last_len;
    w->n_ops--;
}

void local_wal_capture_end(local_wal_t *w)
{
    if (capturing == w)
        capturing = NULL;
}

/* ---- Append and flush ------------------------------------------------------ */

/* Writes zeros from w->alloc up to at least end. Under w->lock. */
static int grow(local_wal_t *w, off_t end)
{
    static const uint8_t zeros[65536];
    off_t to = w->alloc + GROW > end ? w->alloc + GROW : end;
    while (w->alloc < to) {
        size_t n = to - w->alloc < (off_t)sizeof zeros ? (size_t)(to - w->alloc) : sizeof zeros;
        if (pwrite(w->fd, zeros, n, w->alloc) != (ssize_t)n)
            return -1;
        w->alloc += (off_t)n;
    }
    return 0;
}

int local_wal_append(local_wal_t *w, uint64_t txnid, uint64_t *lsn_p)
{
    if (w->failed || !w->buf || w->len > UINT32_MAX)
        return 1;
    pthread_mutex_lock(&w->lock);
    if (w->broken || (size_t)w->pos + w->len > local_wal_max_bytes) {
        pthread_mutex_unlock(&w->lock);
        return 1;
    }
    rec_hdr_t h = {.magic = REC_MAGIC,
                   .len = (uint32_t)w->len,
                   .gen = w->gen,
                   .txnid = txnid,
                   .n_ops = w->n_ops};
    memcpy(w->buf, &h, sizeof h);
    h.crc = rec_crc(w->buf, w->len);
    memcpy(w->buf, &h, sizeof h);
    off_t end = w->pos + (off_t)w->len;
    /* The position moves only past a record written whole: after a failed
     * write, the next record goes over what is there. */
    if ((end > w->alloc && grow(w, end) != 0) ||
        pwrite(w->fd, w->buf, w->len, w->pos) != (ssize_t)w->len) {
        log_error("storage: index/%s: %s", WAL_FILE, strerror(errno));
        pthread_mutex_unlock(&w->lock);
        return -1;
    }
    w->pos = end;
    w->lsn += w->len;
    w->last_txnid = txnid;
    *lsn_p = w->lsn;
    pthread_mutex_unlock(&w->lock);
    return 0;
}

/* Runs one fdatasync for every record appended so far. Under w->lock, no
 * flush under way; the lock is released during the fdatasync. 0, or -1
 * (logged; the log is broken from now on). */
static int flush_locked(local_wal_t *w)
{
    w->flushing = 1;
    uint64_t target = w->lsn;
    pthread_mutex_unlock(&w->lock);
    int frc = fdatasync(w->fd), err = errno;
    pthread_mutex_lock(&w->lock);
    w->flushing = 0;
    if (frc == 0 && target > w->flushed)
        w->flushed = target;
    pthread_cond_broadcast(&w->flushed_cv);
    if (frc != 0) {
        log_error("storage: index/%s: fdatasync: %s: commits wait for sync points from now on",
                  WAL_FILE, strerror(err));
        w->broken = 1;
        return -1;
    }
    return 0;
}

/* Takes the waiters that can be settled now off w->waiters: those on disk,
 * and, once the log is broken, every other one (with STOR_ERR_IO). Under
 * w->lock. */
static wal_waiter_t *waiters_settled_locked(local_wal_t *w)
{
    wal_waiter_t *out = NULL;
    for (wal_waiter_t **pp = &w->waiters; *pp;) {
        wal_waiter_t *x = *pp;
        if (x->lsn > w->flushed && !w->broken) {
            pp = &x->next;
            continue;
        }
        *pp = x->next;
        x->st = x->lsn <= w->flushed ? STOR_OK : STOR_ERR_IO;
        x->next = out;
        out = x;
    }
    return out;
}

/* Calls the done of each settled waiter of list and frees it (not under
 * w->lock). */
static void waiters_call(wal_waiter_t *list)
{
    while (list) {
        wal_waiter_t *x = list;
        list = x->next;
        x->done(x->arg, x->st);
        free(x);
    }
}

/* Serves the waiters: settles those that can be, and flushes while one is
 * pending and no other thread flushes (that thread then serves them). Under
 * w->lock, released while done runs and during the flushes. */
static void waiters_serve_locked(local_wal_t *w)
{
    for (;;) {
        wal_waiter_t *ready = waiters_settled_locked(w);
        if (ready) {
            pthread_mutex_unlock(&w->lock);
            waiters_call(ready);
            pthread_mutex_lock(&w->lock);
            continue;
        }
        if (!w->waiters || w->flushing)
            return;
        flush_locked(w);
    }
}

int local_wal_flush(local_wal_t *w, uint64_t lsn)
{
    int rc = 0, flushed_here = 0;
    pthread_mutex_lock(&w->lock);
    while (w->flushed < lsn) {
        if (w->broken) {
            rc = -1;
            break;
        }
        if (w->flushing) {
            pthread_cond_wait(&w->flushed_cv, &w->lock);
            continue;
        }
        /* No flush under way: this thread runs one for every record
         * appended so far. One under way may have begun before this
         * record's append: then the loop waits for it and runs the next. */
        flushed_here = 1;
        if (flush_locked(w) != 0) {
            rc = -1;
            break;
        }
    }
    if (flushed_here)
        waiters_serve_locked(w);
    pthread_mutex_unlock(&w->lock);
    return rc;
}

void local_wal_await(local_wal_t *w, uint64_t lsn, stor_durable_fn done, void *arg)
{
    wal_waiter_t *x = malloc(sizeof *x);
    if (!x) {
        done(arg, local_wal_flush(w, lsn) == 0 ? STOR_OK : STOR_ERR_IO);
        return;
    }
    *x = (wal_waiter_t){.lsn = lsn, .done = done, .arg = arg};
    pthread_mutex_lock(&w->lock);
    x->next = w->waiters;
    w->waiters = x;
    waiters_serve_locked(w);
    pthread_mutex_unlock(&w->lock);
}

int local_wal_filling(local_wal_t *w)
{
    pthread_mutex_lock(&w->lock);
    int r = (size_t)w->pos >= local_wal_max_bytes / 2;
    pthread_mutex_unlock(&w->lock);
    return r;
}

uint64_t local_wal_last_txnid(local_wal_t *w)
{
    pthread_mutex_lock(&w->lock);
    uint64_t t = w->last_txnid;
    pthread_mutex_unlock(&w->lock);
    return t;
}

int local_wal_restart(local_wal_t *w)
{
    pthread_mutex_lock(&w->lock);
    int rc = write_header(w, w->gen + 1);
    if (rc != 0)
        w->broken = 1;
    pthread_cond_broadcast(&w->flushed_cv);
    /* The restore point covers every record: their waiters are settled. */
    wal_waiter_t *ready = waiters_settled_locked(w);
    pthread_mutex_unlock(&w->lock);
    waiters_call(ready);
    return rc;
}
