/* Private to the local engine (src/storage/local/): the index key scheme,
 * the store's structures and the helpers the local_*.c files share. The
 * record codec is the backends' shared one (storage/stor_record.h). Nothing
 * outside this folder includes this header (the storage unit tests may). */
#ifndef S3R_STORAGE_LOCAL_INTERNAL_H
#define S3R_STORAGE_LOCAL_INTERNAL_H

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/buf.h"
#include "common/hash.h"
#include "storage/stor_backend.h"
#include "storage/stor_record.h"
#include "storage/storage.h"

/* ---- Index keys -----------------------------------------------------------
 * An object's index key is `bucket \0 key` when the key is at most P bytes,
 * P = LOCAL_IKEY_MAX - 9 - (len(bucket) + 1). A longer key is stored under
 * `bucket \0 key[0:P] 0xFF hash8(key)` and its full text lives in the record.
 * Because every key longer than P is hashed (never only "those that do not
 * fit"), index order equals true byte order except inside a block of long
 * keys sharing their first P bytes, which the iterator sorts in memory. 0xFF
 * never occurs in UTF-8, so such a block sorts after the short key equal to
 * its P-byte prefix and before anything greater. */
#define LOCAL_IKEY_MAX  480 /* LMDB's Debian build allows 511; keep a margin */
#define LOCAL_IKEY_HASH 8

/* P for a bucket name of blen bytes (blen <= STOR_BUCKET_MAX). */
static inline size_t local_ikey_plen(size_t blen)
{
    return LOCAL_IKEY_MAX - 1 - LOCAL_IKEY_HASH - (blen + 1);
}

/* Writes the index key of bucket/key into out (LOCAL_IKEY_MAX bytes); returns
 * its length. */
size_t local_ikey_encode(const char *bucket, size_t blen, const char *key, size_t klen,
                         uint8_t *out);
/* Writes the smallest index key at or before every key >= s: `bucket \0
 * s[0:min(len,P)]`. Returns its length. */
size_t local_ikey_seek(const char *bucket, size_t blen, const char *s, size_t slen, uint8_t *out);
/* 1 when rest (an index key minus `bucket \0`) is the hashed long form for P. */
static inline int local_ikey_is_long(const uint8_t *rest, size_t rlen, size_t plen)
{
    return rlen == plen + 1 + LOCAL_IKEY_HASH && rest[plen] == 0xFF;
}

/* ---- Object files ----------------------------------------------------------
 * File id -> its path under objects/: "ab/cd/<32 hex>", ab/cd its first two
 * bytes. */
#define LOCAL_PATH_LEN 40 /* "ab/cd/" + 32 hex + NUL */

static inline void local_id_path(const uint8_t id[STOR_ID_LEN], char out[LOCAL_PATH_LEN])
{
    char hex[2 * STOR_ID_LEN + 1];
    hash_hex_encode(id, STOR_ID_LEN, hex);
    snprintf(out, LOCAL_PATH_LEN, "%.2s/%.2s/%s", hex, hex + 2, hex);
}

/* ---- The store ------------------------------------------------------------ */

typedef struct local_syncer local_syncer_t; /* local_syncer.h, which includes this header */
typedef struct local_wal local_wal_t;       /* local_wal.h */
typedef struct local_pool local_pool_t;     /* local_pool.c, below */
typedef struct local_map local_map_t;       /* local_map.h */

/* A cached read descriptor of an object file (local_fdcache.c). */
#define LOCAL_FDCACHE_SLOTS 256
typedef struct local_fdslot {
    uint8_t id[STOR_ID_LEN];
    int fd; /* -1: empty */
} local_fdslot_t;

typedef struct lstor lstor_t;
typedef struct lwriter lwriter_t;

/* ---- local_group.c: concurrent object changes share one write transaction
 *
 * A PUT's, a DELETE's or a multipart part's change to the index is handed to
 * local_group_commit(), which applies it in one LMDB write transaction
 * together with the changes other threads handed over meanwhile (at most
 * LOCAL_GROUP_MAX of them), in the order they arrived, and commits them at
 * once: one commit's pages, one meta page, and in fsync mode one record in
 * the commit log (local_wal.h) for the whole group. Each
 * change's conditions (bucket identity, preconditions, versioning, guards)
 * are evaluated by its apply function inside that transaction, so against
 * the changes before it in the group. A change that fails changes nothing
 * and does not fail the others: one that failed after writing to the
 * transaction (touched) makes the group start its transaction over without
 * it. */
#define LOCAL_GROUP_MAX 32

typedef struct local_change local_change_t;

/* Applies one change in txn. Must be callable again on a fresh transaction
 * (the group may start over): it resets whatever it put in arg before. On
 * failure it sets *touched if it may have written to txn. */
typedef stor_status_t (*local_change_fn)(lstor_t *st, MDB_txn *txn, void *arg, int *touched);

struct local_change {
    local_change_fn apply;
    void *arg;
    /* A file the change makes part of the index (relaxed mode owes it a
     * sync: new_file), or NULL. */
    const uint8_t *new_file;
    /* Set by local_group_commit: the change is in the index (1 also when the
     * result is STOR_ERR_IO because its sync point failed). */
    int applied;
    /* Private to local_group.c. */
    stor_status_t status;
    uint64_t txnid;
    uint64_t lsn; /* the group's record in the commit log, or 0: not logged */
    int state;
    pthread_cond_t cv;
    local_change_t *next;
};

/* Applies c (c->apply(c->arg)) in a write transaction shared with the
 * changes of concurrent callers, commits it and, in fsync mode, returns once
 * the commit is durable: the group's record in the commit log is on disk
 * (local_wal.h), or, for a group that could not be logged, a sync point covers it. Returns what
 * c->apply returned, or the commit's or the sync point's failure.
 * local_group_apply then local_group_durable(ticket_p NULL). */
stor_status_t local_group_commit(lstor_t *st, local_change_t *c);
/* local_group_commit's first step: applies and commits c (visible, in the
 * page cache; fsync mode: its group's record appended to the log). STOR_OK
 * (c->applied) or what failed. */
stor_status_t local_group_apply(lstor_t *st, local_change_t *c);
/* Its second, after local_group_apply returned STOR_OK: makes c durable
 * (relaxed mode: nothing). ticket_p NULL: waits for it. Else a change whose
 * group was logged returns at once with *ticket_p its record's end
 * (stor_ticket_await: local_ticket_await), and one that was not waits for
 * its sync point, *ticket_p untouched. */
stor_status_t local_group_durable(lstor_t *st, const local_change_t *c, uint64_t *ticket_p);
/* stor_ticket_await's local backend: a ticket is a position in the commit
 * log (local_wal_await). */
void local_ticket_await(stor_t *st_, stor_ticket_t ticket, stor_durable_fn done, void *arg);

/* The local backend's store; base first (stor_backend.h). */
struct lstor {
    stor_t base;
    MDB_env *env;
    MDB_dbi db_buckets; /* name -> bucket record */
    MDB_dbi db_objects; /* index key (local_internal.h) -> object record */
    MDB_dbi db_uploads; /* bucket \0 upload id -> upload record */
    /* Index key of bucket/key (the objects' scheme) -> upload ids (sorted
     * duplicates): the uploads in (key, upload id) order, for a bounded
     * ListMultipartUploads (local_multipart.c). */
    MDB_dbi db_upload_keys;
    MDB_dbi db_parts; /* upload id (32 hex) + be32 part number -> part record */
    /* index key ‖ 0x00 ‖ be64(~seq) -> the record of a version that is not
     * the current object: noncurrent objects and delete markers
     * (local_version.c). */
    MDB_dbi db_versions;
    stor_durability_t durability;
    int objfd;  /* DIR/.s3rdma/objects */
    int lockfd; /* flock'ed: one process per data directory */
    /* The sync points that make commits, their files and directories
     * durable and then unlink what they dropped (local_syncer.h): relaxed mode's,
     * and fsync mode's restore points. */
    local_syncer_t *syncer;
    /* Relaxed mode's writable map and the thread that makes its next pages
     * ready ahead of the commits (local_map.h); NULL without the map. */
    local_map_t *map;
    /* Under LMDB's writer lock: what the write transaction under way has
     * asked for past the map's reserve (local_wr_grow); 0 at its begin. */
    size_t txn_more;
    /* Free files for new writers (local_pool.c): what drops feed. */
    local_pool_t *pool;
    /* Fsync mode: the commit log of the groups' changes (local_wal.h), and the
     * transaction id of the last commit that is not in it (the group
     * committer makes a restore point cover it before it appends a record
     * of a later commit). NULL and unused in relaxed mode. */
    local_wal_t *wal;
    _Atomic uint64_t unlogged_last;
    /* Shard directories this process has made sure of (bit i: level-1 dir i,
     * bit 256 + (a << 8 | b): level-2 dir a/b): they exist, and their entries
     * are durable (fsync mode) or owed to the next sync point (relaxed), so a
     * write pays for mkdir and the parent fsync only the first time a shard
     * is used. Not seeded from the directories found at open: one an earlier
     * process made (a relaxed one, or one that crashed between its mkdir and
     * the parent's fsync) may not have a durable entry. Read and set with
     * atomic byte operations, no lock: a bit is set only once its directory
     * is made sure of, and threads that find it clear make sure of it each
     * on their own (mkdir tolerates EEXIST), so no writer waits for another's
     * mkdir or fsync. */
    uint8_t dir_known[(256 + 65536) / 8];
    /* The shard new files go to (bits 31-16: its two id bytes) and how many
     * went there so far (bits 15-0; 0: none yet), for local_file_id_new. */
    _Atomic uint32_t shard_run;
    /* Read descriptors of object files (local_fdcache.c), under fd_lock. */
    pthread_mutex_t fd_lock;
    uint64_t fd_epoch; /* bumped by every drop */
    local_fdslot_t fd_cache[LOCAL_FDCACHE_SLOTS];
    /* stor_usage: counted by the sweep at open, then moved by local_usage_change
     * after every commit that adds, replaces or deletes an object. */
    _Atomic uint64_t n_objects, n_bytes;
    /* Objects of at most this many bytes are kept inline in their index
     * record, with no file (stor_set_inline_max; 0: never). */
    size_t inline_max;
    /* Changes waiting for a group (local_group.c), in arrival order, under
     * group_lock. group_leading: a caller is running a group; while none
     * is, the queue is empty. group_queued: the queue's length. */
    pthread_mutex_t group_lock;
    local_change_t *group_head, *group_tail;
    int group_leading;
    size_t group_queued;
};

/* A writer keeps the bytes in mem while they fit the store's inline_max;
 * the first write past it creates the object's file (id, path, fd) and moves
 * them there. A commit while they are still in mem makes an inline object. */
struct lwriter {
    stor_writer_t base;
    lstor_t *st;
    char bucket[STOR_BUCKET_MAX + 1];
    uint64_t bucket_id; /* which bucket of that name (stor_bucket_t.id) */
    buf_t mem;          /* the bytes, until has_file (at most inline_max) */
    int has_file;       /* the file exists: id, path valid; the bytes are there */
    uint8_t id[STOR_ID_LEN];
    char path[LOCAL_PATH_LEN];
    int fd;       /* -1 before the file exists and once sealed */
    int recycled; /* the file came from the pool: cut it to size when sealed */
    uint64_t size;
};

/* ---- local_fdcache.c: object file descriptors kept open for reads ------- */

void local_fdcache_init(lstor_t *st);
void local_fdcache_free(lstor_t *st);
/* The drop epoch: take it before looking an id up in the index. */
uint64_t local_fdcache_epoch(lstor_t *st);
/* A new descriptor (the caller closes it) of file id, or -1 if not cached. */
int local_fdcache_get(lstor_t *st, const uint8_t id[STOR_ID_LEN]);
/* Keeps a duplicate of fd (file id, open for reading) unless a file was
 * dropped since epoch (local_fdcache_epoch before the lookup that found id). */
void local_fdcache_put(lstor_t *st, const uint8_t id[STOR_ID_LEN], int fd, uint64_t epoch);
/* File id left the index: closes its cached descriptor, bumps the epoch. */
void local_fdcache_forget(lstor_t *st, const uint8_t id[STOR_ID_LEN]);

/* ---- local_pool.c: free object files, reused instead of made -------------
 * A file a durable commit dropped (where it used to be unlinked: local_drop_file
 * in fsync mode, the sync point's last step in relaxed mode) is moved to
 * pool/ (named by its former id) and kept, its bytes too, for a new writer,
 * which moves it to its own new id's path, writes over the old bytes and
 * cuts the rest (local_writer_seal): an overwrite then makes no inode, and frees
 * and allocates no blocks but the difference in size. A file goes to the
 * pool only if no descriptor anywhere still has it open (a reader, the
 * descriptor cache, a sendfile() in flight: the kernel's word, a write
 * lease), else it is unlinked as before and its readers keep its bytes;
 * and only while the pool holds fewer than LOCAL_POOL_MAX files. Past
 * LOCAL_POOL_BYTES of old bytes in the pool, a file is emptied when pooled.
 * Nothing in pool/ is ever an object: the index never names it, and an open
 * empties it. */
#define LOCAL_POOL_DIR   "pool"      /* in DIR/.s3rdma */
#define LOCAL_POOL_MAX   4096        /* files; about one sync interval of overwrites */
#define LOCAL_POOL_BYTES (256 << 20) /* old bytes kept in pool/ */

/* Makes (if absent) and empties directory dir (DIR/.s3rdma/pool, on
 * objects/' filesystem); objfd is objects/ (it stays the caller's). max 0:
 * nothing is ever pooled. NULL on failure (logged). */
local_pool_t *local_pool_open(const char *dir, int objfd, size_t max);
/* Frees p; its files stay in pool/ for the next open to remove. NULL: no-op. */
void local_pool_close(local_pool_t *p);
/* File id (objects/<its path>) is no longer referenced by the index on disk
 * and never will be again: pool it, or unlink it (pool full, or the file
 * still open somewhere). */
void local_pool_return(local_pool_t *p, const uint8_t id[STOR_ID_LEN]);
/* A free file moved to objects/path (which must not exist; its shard
 * directory must), opened for writing at offset 0, holding old bytes the
 * caller writes over and then cuts (ftruncate to its own size); -1 when the
 * pool has none (the caller makes a file). */
int local_pool_take(local_pool_t *p, const char *path);
/* How many free files the pool holds (only the unit tests ask). */
size_t local_pool_count(local_pool_t *p);

/* ---- local_files.c: object files (below every file that uses them) ----- */

/* After a commit dropped file id from the index: unlink it once durable. */
void local_drop_file(lstor_t *st, const uint8_t id[STOR_ID_LEN]);
/* After a commit made file id part of the index: relaxed mode owes it a sync. */
void local_new_file(lstor_t *st, const uint8_t id[STOR_ID_LEN]);
/* fsyncs directory path (relative to dirfd); 0 or -1 with errno. */
int local_fsync_dirat(int dirfd, const char *path);
/* A new object file's id, its shard directory made sure of (ensure_shard);
 * 0, or -1 (no randomness, or the directory could not be made). */
int local_file_id_new(lstor_t *st, uint8_t id[STOR_ID_LEN]);

/* ---- local_index.c: transactions and the checks in them (below every file
 * that uses them) ---------------------------------------------------------- */

/* Logs an LMDB failure (what: the operation) and returns STOR_ERR_IO. */
stor_status_t local_mdb_fail(const char *what, int rc);
/* After a committed change: objects and bytes added (negative: removed).
 * A replacement is one call: 0 objects, new size - old size bytes. */
void local_usage_change(lstor_t *st, int64_t objects, int64_t bytes);
/* 1 if bucket is a name of 1..STOR_BUCKET_MAX bytes. */
int local_valid_bucket(const char *bucket);
/* STOR_OK if the bucket exists, as seen by txn. */
stor_status_t local_bucket_exists(lstor_t *st, MDB_txn *txn, const char *bucket);
/* STOR_OK if bucket name, as seen by txn, is still the bucket with this id. */
stor_status_t local_bucket_check(lstor_t *st, MDB_txn *txn, const char *name, uint64_t id);
/* local_bucket_check, also giving the bucket's stor_versioning_t. */
stor_status_t local_bucket_check_ver(lstor_t *st, MDB_txn *txn, const char *name, uint64_t id,
                                     int *versioning_p);
/* Begins a read-only transaction. */
stor_status_t local_rd_begin(lstor_t *st, MDB_txn **txn_p);
/* Begins a write transaction. In relaxed mode it first waits for room in
 * the sync points' backlog (STOR_ERR_UNAVAILABLE past the throttle's
 * wait), and through the writable map it begins only with the map's
 * reserve ready (STOR_ERR_IO when the filesystem has no room: local_map.h). */
stor_status_t local_wr_begin(lstor_t *st, MDB_txn **txn_p);
/* The most one write transaction can add to data.mdb, for the writable
 * map's reserve: the sum of a record of STOR_REC_MAX (a multipart upload's,
 * alone in its transaction) and a group of LOCAL_GROUP_MAX changes, each a
 * record of at most inline_max bytes of object plus LOCAL_CHANGE_SLACK of
 * metadata, copied-on-write tree pages and free-list pages: more than
 * either can take. */
#define LOCAL_CHANGE_SLACK ((size_t)512 << 10)
size_t local_txn_growth_max(const lstor_t *st);
/* Inside a write transaction through the writable map, before it writes
 * what local_txn_growth_max does not count (a record moved between tables
 * in a versioned bucket, of up to STOR_REC_MAX bytes; a bucket delete's
 * uploads; the open's upload key index): makes bytes more ready past the
 * reserve, on top of what the transaction asked before. STOR_OK (always, without the map), or
 * STOR_ERR_IO when the filesystem has no room: the transaction must then
 * be aborted (logged by local_map_reserve_more). */
stor_status_t local_wr_grow(lstor_t *st, size_t bytes);
/* mdb_put and mdb_del for the writes a group's change makes (local_object.c,
 * local_version.c): they also go to the commit log's record of the group
 * (local_wal.h), which is how a logged commit is replayed. A change applied
 * in a group writes the index only through these. */
int local_wr_put(lstor_t *st, MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v, unsigned flags);
int local_wr_del(lstor_t *st, MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v);
/* Commits a write transaction: relaxed mode tells the syncer and returns;
 * fsync mode returns once a sync point covers the commit (group commit).
 * On failure the change may still have been applied (fsync mode: committed
 * and visible, but its sync point failed): so a caller unlinks nothing the
 * change drops (the next open's sweep does), and one whose change references
 * a new file commits through local_group_commit, whose change's applied says
 * whether to keep it. */
stor_status_t local_wr_commit(lstor_t *st, MDB_txn *txn);
/* local_wr_commit() in two steps: the commit alone (in the page cache; relaxed
 * mode tells the syncer), giving its transaction id, then (fsync mode) the
 * wait for a sync point that covers that id. */
stor_status_t local_wr_commit_only(lstor_t *st, MDB_txn *txn, uint64_t *txnid_p);
stor_status_t local_wr_durable(lstor_t *st, uint64_t txnid);
/* Fsync mode: commit id is not in the commit log (raises unlogged_last). */
void local_unlogged(lstor_t *st, uint64_t id);
/* 1 if s is exactly n lowercase hex digits followed by NUL. */
int local_is_hex(const char *s, size_t n);

/* local_sweep.c: deletes the object files the index does not reference. */
void local_sweep_orphans(lstor_t *st);

/* local_object.c, also used by multipart: */
/* Closes and frees a writer; its file (if it made one) is unlinked unless
 * keep. */
void local_writer_free(lwriter_t *w, int keep);
/* Moves the writer's bytes to a file of their own if they are still in
 * memory, makes them durable per the mode and closes the fd: what a file
 * id needs before an index record may point at it. */
stor_status_t local_writer_seal(lwriter_t *w);
/* Makes nrec (its encoding enc, made for a bucket without versioning) the
 * latest version of bucket/key in txn when cond (NULL: none) holds for the
 * current object. In a bucket with versioning nrec gets its version and is
 * encoded anew (local_ver_push). The record the change removed from the index, if
 * any (the replaced object, or the "null" version a suspended bucket
 * replaced), goes to *old (*had_old set; the caller drops its files after
 * the commit and frees it). On failure *touched (when not NULL) is set if
 * it may have written to txn: checks that fail come before any write. */
stor_status_t local_put_object(lstor_t *st, MDB_txn *txn, const char *bucket, uint64_t bucket_id,
                               const char *key, const buf_t *enc, stor_obj_rec_t *nrec,
                               const stor_precond_t *cond, stor_obj_rec_t *old, int *had_old,
                               int *touched);

/* local_version.c: versions (docs/storage.md, "Versioning"). ik is the
 * key's index key throughout. */
/* Version vid of key (NULL: its newest version in db_versions, the latest
 * when it has no current object) into rec. STOR_ERR_NO_VERSION (vid) or
 * STOR_ERR_NO_KEY (NULL) when there is none. */
stor_status_t local_ver_lookup(lstor_t *st, MDB_txn *txn, const MDB_val *ik, const char *key,
                               const char *vid, stor_obj_rec_t *rec);
/* Makes nrec (an object, or a delete marker: nrec->meta.delete_marker) the
 * latest version of key in a bucket in versioning state `state` (ENABLED
 * or SUSPENDED), cur (when had_cur) being its current object: sets
 * nrec->meta.version, keeps cur as a noncurrent version or (suspended, cur
 * "null") replaces it, and removes the "null" version a suspended bucket
 * replaces; what it removed goes to *old (*had_old). */
stor_status_t local_ver_push(lstor_t *st, MDB_txn *txn, const MDB_val *ik, const char *key,
                             int state, stor_obj_rec_t *cur, int had_cur, stor_obj_rec_t *nrec,
                             stor_obj_rec_t *old, int *had_old);
/* Removes version vid of key (cur: its current object, when had_cur) into
 * *old; the newest remaining version becomes current if it is an object
 * and the removed one was the latest. STOR_ERR_NO_VERSION when absent, found
 * before anything is written to txn. */
stor_status_t local_ver_remove(lstor_t *st, MDB_txn *txn, const MDB_val *ik, const char *key,
                               const char *vid, stor_obj_rec_t *cur, int had_cur,
                               stor_obj_rec_t *old);
/* Applies change (stor_meta_apply_change, its guard first) to version vid
 * of key in db_versions (not the current object): STOR_ERR_NO_VERSION when
 * absent, STOR_ERR_DELETE_MARKER when it is a delete marker. */
stor_status_t local_ver_change(lstor_t *st, MDB_txn *txn, const MDB_val *ik, const char *key,
                               const char *vid, const stor_obj_change_t *change);
void local_viter_seek(stor_iter_t *it, const char *key, size_t key_len);
int local_viter_next(stor_iter_t *it, const char **key_p, size_t *key_len_p, stor_meta_t *meta_p,
                     int *is_latest_p);
void local_viter_close(stor_iter_t *it);

/* local_multipart.c, used by the open and by bucket deletion: */
/* Fills db_upload_keys from db_uploads when it is empty and db_uploads is
 * not (a data directory from before it existed). Once, at open, in the
 * open's write transaction: through the writable map it asks for its pages
 * past the reserve first (local_wr_grow; STOR_ERR_IO without room). */
stor_status_t local_mpu_index_build(lstor_t *st, MDB_txn *txn);
/* Deletes, in txn, every multipart upload of bucket and its part records.
 * *ids_p (malloc'ed, n_p entries) gets the parts' file ids, to local_drop_file()
 * once txn committed. Through the writable map, it first makes room for
 * what it deletes past the reserve (local_wr_grow: STOR_ERR_IO when the
 * filesystem has none). */
stor_status_t local_mpu_drop_bucket(lstor_t *st, MDB_txn *txn, const char *bucket,
                                    stor_seg_t **ids_p, size_t *n_p);

/* ---- The local backend's ops (stor_backend.h; the table is in local_store.c) */

stor_status_t local_bucket_create(stor_t *st_, const char *name, const char *owner);
stor_status_t local_bucket_get(stor_t *st_, const char *name, stor_bucket_t *out_p);
stor_status_t local_bucket_delete(stor_t *st_, const stor_bucket_t *bucket);
stor_status_t local_bucket_read(stor_t *st_, const stor_bucket_t *bucket, buf_t *rec);
stor_status_t local_bucket_change(stor_t *st_, const stor_bucket_t *bucket,
                                  const stor_bucket_change_t *change);
stor_status_t local_bucket_list(stor_t *st_, stor_bucket_t **out_p, size_t *n_p);
stor_status_t local_writer_open(stor_t *st_, const stor_bucket_t *bucket, stor_writer_t **out_p);
stor_status_t local_writer_write(stor_writer_t *w_, const void *data, size_t len);
uint64_t local_writer_size(const stor_writer_t *w_);
void local_writer_abort(stor_writer_t *w_);
stor_status_t local_writer_commit_if(stor_writer_t *w_, const char *key, stor_meta_t *meta,
                                     const stor_precond_t *cond);
stor_status_t local_writer_commit_later(stor_writer_t *w_, const char *key, stor_meta_t *meta,
                                        const stor_precond_t *cond, stor_ticket_t *ticket_p);
stor_status_t local_head(stor_t *st_, const char *bucket, const char *key, stor_meta_t *meta_p);
stor_status_t local_head_version(stor_t *st_, const char *bucket, const char *key,
                                 const char *version_id, stor_meta_t *meta_p);
stor_status_t local_reader_open_version(stor_t *st_, const char *bucket, const char *key,
                                        const char *version_id, stor_reader_t **out_p);
stor_status_t local_delete_version(stor_t *st_, const stor_bucket_t *bucket, const char *key,
                                   const char *version_id, const stor_precond_t *cond,
                                   stor_deleted_t *out);
stor_status_t local_iter_open_versions(stor_t *st_, const char *bucket, const char *prefix,
                                       const char *key_marker, const char *version_marker,
                                       stor_iter_t **out_p);
void local_reader_close(stor_reader_t *r_);
stor_status_t local_reader_open(stor_t *st_, const char *bucket, const char *key,
                                stor_reader_t **out_p);
const stor_meta_t *local_reader_meta(const stor_reader_t *r_);
ssize_t local_reader_pread(stor_reader_t *r_, void *buf, size_t len, uint64_t off);
int local_reader_span_fd(stor_reader_t *r_, uint64_t off, uint64_t len, int *fd_p,
                         uint64_t *file_off_p);
stor_status_t local_delete(stor_t *st_, const stor_bucket_t *bucket, const char *key,
                           const stor_precond_t *cond);
stor_status_t local_object_change(stor_t *st_, const stor_bucket_t *bucket, const char *key,
                                  const stor_obj_change_t *change);
stor_status_t local_iter_open(stor_t *st_, const char *bucket, const char *prefix,
                              const char *after, stor_iter_t **out_p);
void local_iter_seek(stor_iter_t *it_, const char *key, size_t key_len);
int local_iter_next(stor_iter_t *it_, const char **key_p, size_t *key_len_p, stor_meta_t *meta_p);
void local_iter_close(stor_iter_t *it_);
stor_status_t local_mpu_create(stor_t *st_, const stor_bucket_t *bkt, const char *key,
                               const stor_meta_t *meta, char upload_id[STOR_UPLOAD_ID_LEN + 1]);
stor_status_t local_mpu_check(stor_t *st_, const char *bucket, const char *key,
                              const char *upload_id, stor_meta_t *meta_p);
stor_status_t local_part_commit(stor_writer_t *w_, const char *key, const char *upload_id,
                                stor_part_t *part);
stor_status_t local_mpu_list_parts(stor_t *st_, const char *bucket, const char *key,
                                   const char *upload_id, uint32_t part_marker,
                                   stor_part_t **parts_p, size_t *n_p);
stor_status_t local_mpu_complete(stor_t *st_, const stor_bucket_t *bkt, const char *key,
                                 const char *upload_id, const stor_complete_part_t *parts, size_t n,
                                 const stor_precond_t *cond, stor_meta_t *meta_p);
stor_status_t local_mpu_abort(stor_t *st_, const stor_bucket_t *bucket, const char *key,
                              const char *upload_id);
stor_status_t local_mpu_list(stor_t *st_, const char *bucket, const char *prefix,
                             const char *key_marker, const char *upload_id_marker, size_t max,
                             stor_upload_t **uploads_p, size_t *n_p, int *more_p);

#endif
