/* Private to src/storage/rados: the RADOS backend's store, the names of its
 * RADOS objects and the helpers its files share. docs/storage.md ("The
 * RADOS backend") has the layout and the consistency and crash story.
 *
 * Index pool (storage.rados.index_pool):
 *   s3rdma.buckets          omap: bucket name -> bucket record
 *   s3rdma.index.<id>       omap: object key -> object record, one per bucket
 *                           (<id>: the bucket id, 16 hex); the key RSTOR_TOMB
 *                           marks a bucket being deleted. A bucket whose index
 *                           is sharded over N > 1 objects has instead
 *   s3rdma.index.<id>.<s>   s = 0..N-1 (decimal), key k on shard
 *                           rs_key_shard(N, k), each with its own tombstone.
 *                           A versioned key's other versions are entries
 *                           0xFE ‖ esc(key) ‖ 0x01 ‖ hex(~seq) of its shard
 *                           (rados_version.c)
 *   s3rdma.uploads.<id>     omap: upload id -> upload record, and the uploads'
 *                           key index: '~' raised key 0x01 upload id ->
 *                           initiated ms (rados_uploads.c)
 *   s3rdma.parts.<upload>   omap: 8-hex part number -> part record
 *   s3rdma.gc               omap: <due ms, 16 hex>.<blob id> -> blob size
 *   s3rdma.gateways         omap: gateway id (16 hex) -> started (ms)
 *   s3rdma.reshards         omap: bucket id (16 hex) -> 16 hex (random, per
 *                           write) ‖ bucket name: the reshards under way,
 *                           which the gateways resume when their runner
 *                           died (rados_reshard_resume.c)
 *   s3rdma.lease.gw.<gw>    a gateway's liveness lease (its lock) and
 *                           slot 0 of its intent log (its omap), slots
 *   s3rdma.lease.gw.<gw>.<k>  1..7 (rados_intent.c)
 * Data pool (storage.rados.pool):
 *   <blob id, 32 hex>.<piece, 8 hex>   RSTOR_PIECE bytes each (the last
 *                           shorter); a blob is one PUT's or one part's bytes
 *                           (a stor_seg_t of the record codec). */
#ifndef S3R_STORAGE_RADOS_INTERNAL_H
#define S3R_STORAGE_RADOS_INTERNAL_H

#include <pthread.h>
#include <rados/librados.h>
#include <stdint.h>
#include <string.h>

#include "common/s3r_limits.h"
#include "storage/stor_backend.h"
#include "storage/stor_record.h"

#define RSTOR_PIECE        (4u << 20) /* bytes per data piece */
#define RSTOR_WINDOW       4          /* pieces in flight per writer or read */
#define RSTOR_BUCKETS_OID  "s3rdma.buckets"
#define RSTOR_GC_OID       "s3rdma.gc"
#define RSTOR_RESHARDS_OID "s3rdma.reshards"
/* 0xFF never occurs in UTF-8, so no object key is this or sorts after it. */
#define RSTOR_TOMB                                                                                 \
    "\xff"                                                                                         \
    "deleting"
/* The tombstone's values: "1" a delete in progress; while a reshard runs
 * (rados_reshard.c) RSTOR_TRACKED, every write marks its key dirty, and
 * RSTOR_FENCED, no write lands (the shard's last changes are being
 * copied). The dirty marks: RSTOR_DIRTY ‖ object key -> 8 random bytes. */
#define RSTOR_TRACKED "R"
#define RSTOR_FENCED  "M"
#define RSTOR_DIRTY                                                                                \
    "\xff"                                                                                         \
    "dirty:"
#define RSTOR_OID_MAX 64
#define RSTOR_RETRIES 64 /* compare-and-swap attempts before giving up */

/* Index shards of a new bucket when storage.rados.index_shards is unset:
 * radosgw's rule of thumb is at most ~100k keys per index object, so 16
 * shards hold 1.6 M keys (ImageNet's 1.28 M) before an omap grows past it,
 * while a LIST page reads 16 objects (in parallel). */
#define RSTOR_INDEX_SHARDS_DEFAULT 16

/* Where a bucket's keys are: its id, the generation of its index objects
 * and how many hold them (stor_bucket_t's index_shards: 1 with generation 0
 * is the unsharded name); to: the shard count of generation gen + 1 that an
 * online reshard in progress fills (0: none; rados_reshard.c); bucket: its
 * name ("": not known, as in a recovery, which finds it by id). */
typedef struct rs_index {
    uint64_t id;
    uint32_t shards;
    uint32_t gen;
    uint32_t to;
    char bucket[STOR_BUCKET_MAX + 1];
} rs_index_t;

static inline rs_index_t rs_index_of(const stor_bucket_t *b)
{
    rs_index_t ix = {b->id, b->index_shards ? b->index_shards : 1, b->index_gen, b->reshard_to, ""};
    memcpy(ix.bucket, b->name, sizeof ix.bucket);
    ix.bucket[STOR_BUCKET_MAX] = '\0';
    return ix;
}

/* The index a reshard in progress fills (generation gen + 1, to shards). */
static inline rs_index_t rs_index_next(const rs_index_t *ix)
{
    rs_index_t n = *ix;
    n.gen = ix->gen + 1;
    n.shards = ix->to;
    n.to = 0;
    return n;
}

/* A bucket name -> index cache slot (rs_bucket_id). */
#define RSTOR_IDCACHE 256
typedef struct idslot {
    char name[STOR_BUCKET_MAX + 1];
    rs_index_t ix;
} idslot_t;

/* Listings parked between the pages of a walk (rados_list_park.c): at most
 * this many, holding at most this many bytes, for at most this long. */
#define RSTOR_LIST_PARKED       32
#define RSTOR_LIST_PARKED_BYTES (64u << 20)
#define RSTOR_LIST_PARKED_MS    30000
struct riter;

/* Reshards one process runs at once (rstor_t.runs): the resume thread's,
 * a writer's takeover (one at a time) and the command's own. */
#define RSTOR_RUNS_HERE 4

/* Intent log bounds (rados_intent.c): cleared entries held for a later
 * write, and dropped blobs one entry names (every blob of the record a
 * switch drops: at most one per part of an object). */
#define RSTOR_INTENT_CLEARS 64
/* Objects a gateway's log is spread over (its writes over placement
 * groups), each holding at most RSTOR_INTENT_SLOT_CLEARS cleared entries. */
#define RSTOR_INTENT_SLOTS       8
#define RSTOR_INTENT_SLOT_CLEARS (RSTOR_INTENT_CLEARS / RSTOR_INTENT_SLOTS)
#define RSTOR_INTENT_OLD_MAX     S3R_MAX_PART_NUMBER
#define RSTOR_INTENT_NAME        (2 * STOR_ID_LEN + 2) /* "c" + 32 hex + NUL */
/* The largest entry value: a header, the dropped blobs (48 bytes each) and
 * the key (S3 keys are at most 1024 bytes). */
#define RSTOR_INTENT_VALUE_MAX (64 + 48 * RSTOR_INTENT_OLD_MAX + 1024)
/* A GC log size for a blob whose pieces are removed until RSTOR_WINDOW in a
 * row are missing (a blob whose writer died: its size is not known). */
#define RSTOR_SIZE_UNKNOWN UINT64_MAX

typedef struct rstor {
    stor_t base; /* first: stor_backend.h */
    rados_t cluster;
    rados_ioctx_t data, index;
    int64_t grace_ms;      /* how long dropped blobs stay readable; sweep age */
    uint32_t index_shards; /* of each bucket created from now on */
    /* The collector thread: drains the GC log about once a second, sweeps
     * unreferenced pieces once at start. The lease thread: renews this
     * gateway's lease and nothing else, so no collector work of any length
     * lets it lapse. Both wait on gc_cond and stop on gc_stop. */
    pthread_t gc_thread, lease_thread;
    int gc_running, lease_running;
    pthread_mutex_t gc_lock;
    pthread_cond_t gc_cond;
    int gc_stop;
    uint32_t sweep_page_ms; /* debug.rados_sweep_page_ms: pause per sweep page */
    int full_sweep;         /* storage.rados.full_sweep: the sweep runs at start */
    /* Bucket ids by name for reads by name (GET, HEAD, listings), under
     * id_lock. An entry may be stale (the bucket deleted, maybe re-created):
     * a read through a stale id finds no index object, and the caller looks
     * the name up afresh. */
    pthread_mutex_t id_lock;
    idslot_t ids[RSTOR_IDCACHE];
    /* Listings parked between pages (rados_list_park.c), under park_lock. */
    pthread_mutex_t park_lock;
    struct riter *parked[RSTOR_LIST_PARKED];
    size_t parked_bytes;
    /* A writer held by a reshard's fence whose runner died finishes it
     * (rs_reshard_takeover): one thread at a time, under takeover_lock,
     * which also guards the next try's time (monotonic ms). */
    pthread_mutex_t takeover_lock;
    uint64_t takeover_next_ms;
    /* The buckets (ids) whose reshard a thread of this process runs, under
     * runs_lock: a reshard's lease is this process's (its cookie is the
     * client instance), so it alone cannot keep two threads (a resume and a
     * writer's takeover, or the command's run and a resume) off one
     * bucket. The resume thread (rs_reshard_resume) and where it goes on
     * in s3rdma.reshards (the last bucket id it tried; "" from the first). */
    pthread_mutex_t runs_lock;
    uint64_t runs[RSTOR_RUNS_HERE];
    pthread_t resume_thread;
    int resume_running;
    char resume_after[17];
    /* This gateway's liveness and intent log (rados_intent.c), under
     * intent_lock. epoch grows when the lease lapsed: a write whose intent
     * is of an older epoch may have been recovered and must not commit. */
    char gw_id[17];
    char crash_at[256]; /* debug.rados_crash_at: the steps to die at, or "" */
    uint32_t lease_ms;
    pthread_mutex_t intent_lock;
    uint64_t epoch;
    uint64_t renewed_ms;      /* monotonic: when the last good renewal was sent */
    uint64_t next_recover_ms; /* monotonic: the next look for dead gateways */
    int fenced;               /* another gateway recovered this one's log */
    int intent_ready;         /* intent_lock made */
    char clears[RSTOR_INTENT_SLOTS][RSTOR_INTENT_SLOT_CLEARS][RSTOR_INTENT_NAME];
    size_t n_clears[RSTOR_INTENT_SLOTS];
    char unsure[RSTOR_INTENT_CLEARS][RSTOR_INTENT_NAME];
    size_t n_unsure;
} rstor_t;

/* A set of blob (or upload) ids: added to, then sorted, then searched. */
typedef struct rs_idset {
    uint8_t (*ids)[STOR_ID_LEN];
    size_t n, cap;
} rs_idset_t;

/* ---- rados_lease.c ------------------------------------------------------ */

/* stor_lease: an exclusive RADOS lock with a duration on the index pool's
 * object "s3rdma.lease.<name>", this client instance's id as its cookie. */
stor_status_t rs_lease(stor_t *st, const char *name, uint32_t ttl_ms);
/* Gives up lease name if this client holds it (else nothing happens). */
void rs_lease_release(rstor_t *st, const char *name);

/* A write's intent, for the commit that references its blob: the entry's
 * name and epoch (rs_intent_put). */
typedef struct rs_intent_ref {
    char name[RSTOR_INTENT_NAME];
    uint64_t epoch;
    /* The dropped blobs the entry names already: how many, the first's id. */
    uint32_t n_old;
    uint8_t old0[STOR_ID_LEN];
    /* The switch landed but the blobs it dropped did not reach the GC log:
     * the entry is settled by the collector, not cleared. */
    int unsettled;
} rs_intent_ref_t;

/* An entry write in flight (rs_intent_put_start). */
typedef struct rs_intent_put {
    rados_write_op_t op;
    rados_completion_t c;
    int cmp;
    unsigned slot;
    size_t n_clears;
    char clears[RSTOR_INTENT_SLOT_CLEARS][RSTOR_INTENT_NAME];
    char gw[17];
    uint64_t epoch;
} rs_intent_put_t;

/* ---- rados_intent.c ---------------------------------------------------- */

/* Starts this gateway's liveness (its lease taken, its id registered).
 * crash_at: debug.rados_crash_at. 0, or a librados code. */
int rs_intent_open(rstor_t *st, const char *crash_at, uint32_t lease_ms);
/* A clean stop: flushes the cleared entries; an empty log and its
 * registration go. */
void rs_intent_close(rstor_t *st);
/* The lease thread's tick: renews this gateway's lease; if it lapsed,
 * starts a new epoch under a new id (writes of the old one fail). */
void rs_intent_renew(rstor_t *st);
/* The collector's tick: settles unsure entries, flushes cleared ones, and
 * now and then recovers the logs of gateways whose lease lapsed. */
void rs_intent_tick(rstor_t *st);
/* Entry values: a blob of a PUT to key in ix (key "": commit not started)
 * that will drop old; a part (number) of upload_id (to key in ix) that
 * replaces old (NULL: none); a Complete to key in ix. buf_init'ed here; 0, or -1. */
int rs_intent_object(buf_t *b, const rs_index_t *ix, const char *key, const stor_seg_t *old,
                     uint32_t n_old);
int rs_intent_part(buf_t *b, const char *upload_id, uint32_t number, const rs_index_t *ix,
                   const char *key, const stor_seg_t *old);
int rs_intent_complete(buf_t *b, const rs_index_t *ix, const char *key);
/* The entry name of a blob. */
void rs_intent_name(const uint8_t id[STOR_ID_LEN], char out[RSTOR_INTENT_NAME]);
/* Writes entry name = desc, acknowledged when this returns STOR_OK. *epoch_p:
 * 0 for a write's first entry (set here), else the epoch of its first, which
 * must still be current. Flushes the cleared entries in the same op. */
stor_status_t rs_intent_put(rstor_t *st, const char *name, const buf_t *desc, uint64_t *epoch_p);
/* rs_intent_put in two halves, so a piece can be written meanwhile: start
 * (STOR_OK: finish must be called) and finish (what rs_intent_put returns). */
stor_status_t rs_intent_put_start(rstor_t *st, const char *name, const buf_t *desc, uint64_t epoch,
                                  rs_intent_put_t *p);
stor_status_t rs_intent_put_finish(rstor_t *st, rs_intent_put_t *p, uint64_t *epoch_p);
/* Marks entry name cleared (removed with the next write to the log). */
void rs_intent_clear(rstor_t *st, const char *name);
/* Entry name belongs to a write that ended without knowing whether its
 * commit landed (the cluster did not answer): the collector settles it as
 * a dead gateway's, then clears it. */
void rs_intent_unsure(rstor_t *st, const char *name);
/* STOR_OK when a write whose entries are of epoch may commit: the lease is
 * fresh (renewed within half its length) and has not lapsed since. */
stor_status_t rs_intent_check(rstor_t *st, uint64_t epoch);
/* The last step before a switch's compare-and-set: desc (NULL: nothing
 * more to record) is added to the write's entry in, the lease must be fresh
 * (rs_intent_check), then crash point step. An entry not written yet
 * (in->epoch 0: a delete's) is written by its first desc (setting
 * in->epoch); without one, nothing is recorded or checked. */
stor_status_t rs_intent_before_switch(rstor_t *st, rs_intent_ref_t *in, const buf_t *desc,
                                      const char *step);
/* The entry d of the blobs segs[0..n) that a switch of key in ix is about
 * to drop, written (or rewritten, on a retry) before that switch: an entry
 * of its own, named like a blob that is never written (the name is made
 * by the first call: d zeroed before), so a crash between the switch and
 * the GC log write leaves them to a recovery. Then rs_intent_before_switch
 * (step). */
stor_status_t rs_intent_drop(rstor_t *st, rs_intent_ref_t *d, const rs_index_t *ix, const char *key,
                             const stor_seg_t *segs, uint32_t n, const char *step);
/* Ends entry d, if written: cleared, or handed to the collector to settle
 * as a recovery would when unsure (the switch's outcome is unknown, or the
 * blobs it dropped did not reach the GC log). */
void rs_intent_drop_done(rstor_t *st, const rs_intent_ref_t *d, int unsure);
/* debug.rados_crash_at ("step[=stop]", comma-separated): at a step named,
 * the gateway kills itself (SIGKILL), or stops (SIGSTOP) with "=stop" so a
 * test can act meanwhile and let it go on (SIGCONT). */
void rs_crash_point(const rstor_t *st, const char *step);
/* The blobs key's record and its version entries reference, added to set
 * (unsorted). 0, or a librados code. */
int rs_key_blobs(rstor_t *st, const rs_index_t *ix, const char *key, rs_idset_t *set);
/* Every registered gateway's entries: blob ids into blobs, upload ids of
 * Completes into uploads (both sorted). 0, or a librados code. */
int rs_intent_all(rstor_t *st, rs_idset_t *blobs, rs_idset_t *uploads);

/* ---- rados_batch.c: N requests in flight at once ------------------------ */

/* Starts request i of a batch on completion c (one rados_aio_* call, or
 * rados_aio_write_op_operate and the like): 0 (sent), 1 (nothing to send
 * for i), or a librados code (nothing sent). */
typedef int (*rs_batch_send_fn)(void *arg, uint32_t i, rados_completion_t c);
/* Sends requests 0..n-1 by send, all in flight at once, then waits for
 * every one sent. res (the caller's, n of them): each request's return
 * value, 0 for one not sent. 0, or the failure to send request *stop_p
 * (send's, or -ENOMEM) that stopped the sending there: the ones before it
 * were sent and waited for, the later ones not sent (*stop_p: n when all
 * were; stop_p may be NULL). The callers read res for the requests'
 * failures. */
int rs_batch(uint32_t n, rs_batch_send_fn send, void *arg, int *res, uint32_t *stop_p);

/* ---- rados_omap.c: omap reads and writes ---------------------------------
 * The one synchronous omap read of oid, three shapes: rs_omap_read, up to
 * max entries after key `after` ("": from the first) whose keys start with
 * prefix ("": any), in key order, *more_p (NULL: not wanted) set when
 * entries remain past them; rs_omap_read_keys, the first max keys without
 * their values; rs_omap_read_vals, the entries of the n keys (klens their
 * lengths) that exist. Each returns 0 and *it_p, an iterator the caller
 * walks with rados_omap_get_next2 and ends with rados_omap_get_end, or a
 * negative librados code (-ENOENT: no such object) with *it_p NULL. */
int rs_omap_read(rados_ioctx_t io, const char *oid, const char *after, const char *prefix,
                 size_t max, rados_omap_iter_t *it_p, unsigned char *more_p);
/* rs_omap_read in two halves, so reads of several objects are in flight
 * at once: start sends it (0, or a librados code: then finish must not be
 * called); finish waits for it and returns what rs_omap_read would. */
typedef struct rs_omap_read {
    rados_read_op_t op;
    rados_completion_t c;
    rados_omap_iter_t it;
    unsigned char more;
    int prval;
} rs_omap_read_t;
int rs_omap_read_start(rados_ioctx_t io, const char *oid, const char *after, const char *prefix,
                       size_t max, rs_omap_read_t *r);
int rs_omap_read_finish(rs_omap_read_t *r, rados_omap_iter_t *it_p, unsigned char *more_p);
int rs_omap_read_keys(rados_ioctx_t io, const char *oid, size_t max, rados_omap_iter_t *it_p);
int rs_omap_read_vals(rados_ioctx_t io, const char *oid, const char *const *keys, size_t n,
                      const size_t *klens, rados_omap_iter_t *it_p);
/* Reads one omap value of oid into *val (buf_init'ed here; the caller frees
 * it). Returns 1 found, 0 absent, or a negative librados code (-ENOENT: no
 * such object). */
int rs_omap_get(rados_ioctx_t io, const char *oid, const char *key, size_t klen, buf_t *val);
/* rs_omap_get in two halves, so other I/O can go on meanwhile: start sends
 * the read (0, or a librados code: then finish must not be called); finish
 * waits for it and returns what rs_omap_get would. */
typedef struct rs_omap_get {
    rados_read_op_t op;
    rados_completion_t c;
    rados_omap_iter_t it;
    int prval;
    int peeked, peek_rc; /* rs_omap_get_peek waited: its answer */
    buf_t peek_val;
} rs_omap_get_t;
int rs_omap_get_start(rados_ioctx_t io, const char *oid, const char *key, size_t klen,
                      rs_omap_get_t *g);
int rs_omap_get_finish(rs_omap_get_t *g, buf_t *val);
/* Waits for the read and returns what rs_omap_get_finish will (the value
 * in *val_p, owned by g), which must still be called. */
int rs_omap_get_peek(rs_omap_get_t *g, const buf_t **val_p);

/* One atomic compare-and-set of omap key (klen bytes) on oid: from expect
 * (NULL: absent) to val (NULL: removed). The object must exist unless
 * RS_CAS_CREATE (then it is made if needed). Returns the librados code:
 * -ECANCELED when key does not hold expect, -ENOENT when the object is
 * missing. (Changes of an object key go through rs_route_apply.) */
#define RS_CAS_CREATE 1u
int rs_omap_cas(rados_ioctx_t io, const char *oid, const char *key, size_t klen,
                const buf_t *expect, const buf_t *val, unsigned flags);

/* Calls fn on every omap entry of oid after key `after` ("" for all), in
 * key order, reading RSTOR_OMAP_BATCH at a time; stops at fn's first
 * non-zero return and returns it. 0, or a librados code (-ENOENT: no such
 * object). k and v are valid during the call only. */
#define RSTOR_OMAP_BATCH 1000
typedef int (*rs_omap_fn)(void *arg, const char *k, size_t kl, const char *v, size_t vl);
int rs_omap_each(rados_ioctx_t io, const char *oid, const char *after, rs_omap_fn fn, void *arg);

/* ---- rados_route.c: where a key's changes go ---------------------------- */

/* One atomic change of a key's shard object, built up by the caller:
 * comparisons (each key holds a value; "" for absent), then removals, then
 * sets. The pointers must stay valid until it is applied. */
#define RS_CHG_MAX 4
typedef struct rs_change {
    const char *ck[RS_CHG_MAX], *cv[RS_CHG_MAX];
    size_t ckl[RS_CHG_MAX], cvl[RS_CHG_MAX];
    int ncmp;
    const char *sk[RS_CHG_MAX], *sv[RS_CHG_MAX];
    size_t skl[RS_CHG_MAX], svl[RS_CHG_MAX];
    int nset;
    const char *rk[RS_CHG_MAX];
    size_t rkl[RS_CHG_MAX];
    int nrm;
} rs_change_t;

static inline void rs_chg_cmp(rs_change_t *c, const char *k, size_t kl, const buf_t *expect)
{
    c->ck[c->ncmp] = k;
    c->ckl[c->ncmp] = kl;
    c->cv[c->ncmp] = expect ? expect->data : "";
    c->cvl[c->ncmp++] = expect ? expect->len : 0;
}

static inline void rs_chg_set(rs_change_t *c, const char *k, size_t kl, const buf_t *val)
{
    c->sk[c->nset] = k;
    c->skl[c->nset] = kl;
    c->sv[c->nset] = val->data;
    c->svl[c->nset++] = val->len;
}

static inline void rs_chg_rm(rs_change_t *c, const char *k, size_t kl)
{
    c->rk[c->nrm] = k;
    c->rkl[c->nrm++] = kl;
}

/* How long a change waits for a reshard's last step on its key's shard
 * (rs_route_again) before it answers 503. */
#define RSTOR_RESHARD_WAIT_MS 20000

/* Where the changes of one key go: the index as the writer knows it, the
 * key's shard object in it, and whether that shard is tracked (a reshard
 * is copying it: its tombstone holds RSTOR_TRACKED and every change marks
 * its key dirty in the same op). */
typedef struct rs_route {
    rs_index_t ix;
    char oid[RSTOR_OID_MAX];
    int tracked;
    uint32_t waited_ms;
} rs_route_t;

/* The route of key in ix as the bucket's record (ix) says. */
void rs_route_init(rs_route_t *r, const rs_index_t *ix, const char *key);
/* Applies c to key's shard object in one write op that also asserts the
 * object exists, compares its tombstone with what r expects (absent, or
 * RSTOR_TRACKED) and, tracked, marks key dirty. 0, -ECANCELED (a compared
 * value changed), -ESTALE (the tombstone is not what r expects), -ENOENT
 * (no such object), or another librados code. */
int rs_route_apply(rstor_t *st, const rs_route_t *r, const char *key, const rs_change_t *c);
/* After a change or a read of key on r->oid found the tombstone other than
 * r expected (-ESTALE) or no object (-ENOENT): reads the bucket's record
 * afresh and the shard's tombstone, and sets r to where key's changes go
 * now (STOR_OK: try again), waiting while a reshard fences the shard (up
 * to RSTOR_RESHARD_WAIT_MS, then STOR_ERR_UNAVAILABLE; after
 * RSTOR_TAKEOVER_AFTER_MS it finishes a reshard whose runner died,
 * rs_reshard_takeover). STOR_ERR_NO_BUCKET
 * when the bucket is gone or being deleted. */
stor_status_t rs_route_again(rstor_t *st, rs_route_t *r, const char *key);
/* After rs_route_apply on r failed with rc (not 0): STOR_OK to try the
 * change again (a compared value changed, -ECANCELED, or the key's shard
 * moved and rs_route_again set r to where it went), else the status to
 * answer. */
stor_status_t rs_route_failed(rstor_t *st, rs_route_t *r, const char *key, int rc);

/* ---- rados_reshard_resume.c --------------------------------------------- */

/* A change waiting on a shard that a reshard of ix (ix->to set) fenced
 * calls this after it has waited RSTOR_TAKEOVER_AFTER_MS: if the runner's
 * lease has lapsed (it died), this thread takes the lease and finishes the
 * reshard, with the code a new `s3rdmad reshard` run would (its steps from
 * the fence on), then gives the lease up. One thread of a gateway tries at
 * a time, at most once per RSTOR_TAKEOVER_AFTER_MS. STOR_OK when this call
 * finished it; STOR_ERR_PRECONDITION when it did not try (a live runner
 * holds the lease, another thread tried, or it tried too recently), else
 * the run's failure (logged). */
#define RSTOR_TAKEOVER_AFTER_MS 1000
stor_status_t rs_reshard_takeover(rstor_t *st, const rs_index_t *ix);
/* The resume thread's tick (every RSTOR_RESUME_EVERY_MS): reads up to
 * RSTOR_RESUME_BATCH entries of s3rdma.reshards (the reshards under way,
 * each written by its run under the bucket's lease before it changes the
 * record), going on after the last one tried, and for each whose lease it
 * gets (the runner died: its lease lapsed) finishes that reshard, one at a
 * time, or drops the entry when there is nothing to finish (the reshard
 * ended, the bucket is gone). A run it resumes stops, to be resumed again,
 * if the store closes before the run fenced the old shards. */
#define RSTOR_RESUME_EVERY_MS 2000
#define RSTOR_RESUME_BATCH    64
void rs_reshard_resume(rstor_t *st);

/* ---- rados_names.c ------------------------------------------------------ */

/* Maps a librados return code (negative errno) to a status, logging what
 * failed: cluster unreachable or timed out -> STOR_ERR_UNAVAILABLE. */
stor_status_t rs_fail(const char *what, const char *oid, int rc);

/* The name of shard `shard` of index ix (for ix->shards 1, the one object,
 * named as before shards existed). */
void rs_index_oid(const rs_index_t *ix, uint32_t shard, char out[RSTOR_OID_MAX]);
/* The shard of n that holds the key of klen bytes. */
uint32_t rs_key_shard(uint32_t n, const char *key, size_t klen);
/* The name of the index object of ix that holds key. */
void rs_key_oid(const rs_index_t *ix, const char *key, char out[RSTOR_OID_MAX]);
void rs_uploads_oid(uint64_t bucket_id, char out[RSTOR_OID_MAX]);
void rs_parts_oid(const char *upload_id, char out[RSTOR_OID_MAX]);
void rs_piece_oid(const uint8_t id[STOR_ID_LEN], uint32_t piece, char out[RSTOR_OID_MAX]);
/* Pieces of a blob of size bytes. */
static inline uint32_t rs_pieces(uint64_t size)
{
    return (uint32_t)((size + RSTOR_PIECE - 1) / RSTOR_PIECE);
}
/* A new blob id: 8 bytes of big-endian creation time (ms), 8 random (the
 * sweep tells young blobs from old by it). -1 if no randomness. */
int rs_new_blob_id(uint8_t id[STOR_ID_LEN]);

/* The bucket named name as stored: its record (and id). */
stor_status_t rs_bucket_lookup(rstor_t *st, const char *name, stor_bucket_t *out_p);

/* The index of the bucket whose id is id, found by reading every bucket
 * record (a recovery's look, after the index an intent names is gone).
 * STOR_ERR_NO_BUCKET when there is none. */
stor_status_t rs_index_by_id(rstor_t *st, uint64_t id, rs_index_t *ix_p);

/* The index (id, shards) of bucket name: the cached one unless fresh, else
 * looked up (and cached). STOR_ERR_NO_BUCKET when there is no such bucket. */
stor_status_t rs_bucket_id(rstor_t *st, const char *name, int fresh, rs_index_t *ix_p);

/* ---- rados_object.c ----------------------------------------------------- */

/* Switches bucket/key in the index of a bucket without versioning: to
 * record rec (NULL: removes the key) if cond holds for what the key holds,
 * atomically against racing switches (the write compares the old value) and
 * against the bucket's deletion. The replaced record goes to *old
 * (*had_old). STOR_ERR_NO_KEY when removing an absent key. When the key
 * holds a version (the bucket got versioning since the caller read it),
 * nothing changes and *versioned_p is set (and an error returned).
 * The first look at the key's value is the read pre
 * (rs_omap_get_start'ed on the key's index object; finished here whatever
 * happens), or a fresh one when pre is NULL. With in (NULL: none), the
 * write's intent: before each compare-and-set, the blobs it would drop are
 * added to the entry and the lease must be fresh (rs_intent_check); a
 * removal (rec NULL) writes its entry then, if it drops any blob. */
stor_status_t rs_index_switch_pre(rstor_t *st, const rs_index_t *ix, const char *key,
                                  const buf_t *rec, const stor_precond_t *cond, rs_omap_get_t *pre,
                                  rs_intent_ref_t *in, stor_obj_rec_t *old, int *had_old,
                                  int *versioned_p);

/* ---- rados_version.c ---------------------------------------------------- */

/* The start of key's version entries, "0xFE ‖ esc(key) ‖" (no 0x01 yet),
 * into *out (buf_init'ed here; the caller frees it); and the key of entry k
 * (kl bytes) back into *key. 0, or -1. */
int rs_vprefix(const char *key, size_t klen, buf_t *out);
int rs_vkey_parse(const char *k, size_t kl, buf_t *key);
/* Version vid (NULL: the latest, which may be a delete marker) of
 * bucket/key (bucket by name, its id cached) into *rec. STOR_ERR_NO_KEY when
 * the key has no version (vid NULL), STOR_ERR_NO_VERSION when it has none
 * of that id. */
stor_status_t rs_version_read(rstor_t *st, const char *bucket, const char *key, const char *vid,
                              stor_obj_rec_t *rec);
/* One read op on a key's shard object: the key's record, the entry vkey
 * (NULL: not wanted) and, when newest, the key's newest entry. Started
 * here (0, or a librados code: then nothing is pending); whoever it is
 * handed to finishes it (rs_version_push), or rs_kread_discard. key must
 * stay valid meanwhile. */
typedef struct rs_kread {
    rados_read_op_t op;
    rados_completion_t c;
    rados_omap_iter_t kit, nit;
    int pk, pn, want_v;
    unsigned char more;
    buf_t pfx;
    const char *key;
    size_t klen;
    char oid[RSTOR_OID_MAX];
} rs_kread_t;
int rs_kread_start(rstor_t *st, const char *oid, const char *key, const buf_t *vkey, int newest,
                   rs_kread_t *k);
void rs_kread_discard(rs_kread_t *k);
/* The commit of a write (a PUT, a Complete) to bucket (name, ix, its
 * versioning state as the caller read it): an rs_index_switch_pre while
 * versioning is OFF, else rs_version_push; a switch that finds the key
 * versioned reads the state afresh and pushes. Dropped data goes to the GC
 * log; meta->version is set by a push. pre and vpre (NULL: none): the
 * caller's early reads of the key, for the switch (versioning OFF) and the
 * push (on): whichever is given is finished here. in: the PUT's intent
 * (NULL for a Complete), see rs_index_switch_pre. */
stor_status_t rs_object_commit(rstor_t *st, const char *bucket, const rs_index_t *ix,
                               int versioning, const char *key, stor_meta_t *meta,
                               const stor_seg_t *segs, uint32_t n_segs, const stor_precond_t *cond,
                               rs_omap_get_t *pre, rs_kread_t *vpre, rs_intent_ref_t *in);
/* stor_object_change of the version change->version_id names (not NULL)
 * of key on its route: one compare-and-write of its record, where it is
 * (the key, or its entry). */
stor_status_t rs_version_change(rstor_t *st, rs_route_t *rt, const char *key,
                                const stor_obj_change_t *change);

/* For part commits (rados_multipart.c): which bucket and blob a writer
 * writes; its intent entry written as desc (the blob's id made first if no
 * piece went yet) into *in; sealing it (every piece in the cluster); and
 * freeing it: its pieces referenced now (RS_DONE_KEPT: the entry cleared),
 * maybe referenced (RS_DONE_UNSURE: the entry is settled by the collector)
 * or removed (RS_DONE_REMOVE). */
void rs_writer_identity(const stor_writer_t *w, rs_index_t *ix_p, uint8_t id[STOR_ID_LEN]);
stor_status_t rs_writer_intent(stor_writer_t *w, const buf_t *desc, rs_intent_ref_t *in);
stor_status_t rs_writer_seal(stor_writer_t *w);
enum { RS_DONE_REMOVE, RS_DONE_KEPT, RS_DONE_UNSURE };
void rs_writer_done(stor_writer_t *w, int how);

/* ---- The backend's ops (the table is in rados_store.c) ----------------- */

stor_status_t rs_bucket_create(stor_t *st, const char *name, const char *owner);
stor_status_t rs_bucket_get(stor_t *st, const char *name, stor_bucket_t *out_p);
stor_status_t rs_bucket_read(stor_t *st, const stor_bucket_t *bucket, buf_t *rec);
stor_status_t rs_bucket_change(stor_t *st, const stor_bucket_t *bucket,
                               const stor_bucket_change_t *change);
stor_status_t rs_bucket_delete(stor_t *st, const stor_bucket_t *bucket);
stor_status_t rs_bucket_list(stor_t *st, stor_bucket_t **out_p, size_t *n_p);
stor_status_t rs_bucket_reshard(stor_t *st, const char *name, uint32_t shards);
stor_status_t rs_writer_open(stor_t *st, const stor_bucket_t *bucket, stor_writer_t **out_p);
stor_status_t rs_writer_write(stor_writer_t *w, const void *data, size_t len);
uint64_t rs_writer_size(const stor_writer_t *w);
stor_status_t rs_writer_commit_if(stor_writer_t *w, const char *key, stor_meta_t *meta,
                                  const stor_precond_t *cond);
void rs_writer_abort(stor_writer_t *w);
stor_status_t rs_head(stor_t *st, const char *bucket, const char *key, stor_meta_t *meta_p);
stor_status_t rs_reader_open(stor_t *st, const char *bucket, const char *key,
                             stor_reader_t **out_p);
const stor_meta_t *rs_reader_meta(const stor_reader_t *r);
ssize_t rs_reader_pread(stor_reader_t *r, void *buf, size_t len, uint64_t off);
void rs_reader_close(stor_reader_t *r);
stor_status_t rs_delete(stor_t *st, const stor_bucket_t *bucket, const char *key,
                        const stor_precond_t *cond);
stor_status_t rs_head_version(stor_t *st, const char *bucket, const char *key,
                              const char *version_id, stor_meta_t *meta_p);
stor_status_t rs_reader_open_version(stor_t *st, const char *bucket, const char *key,
                                     const char *version_id, stor_reader_t **out_p);
stor_status_t rs_delete_version(stor_t *st, const stor_bucket_t *bucket, const char *key,
                                const char *version_id, const stor_precond_t *cond,
                                stor_deleted_t *out);
stor_status_t rs_iter_open_versions(stor_t *st, const char *bucket, const char *prefix,
                                    const char *key_marker, const char *version_marker,
                                    stor_iter_t **out_p);
int rs_iter_next_version(stor_iter_t *it, const char **key_p, size_t *key_len_p,
                         stor_meta_t *meta_p, int *is_latest_p);
stor_status_t rs_object_change(stor_t *st, const stor_bucket_t *bucket, const char *key,
                               const stor_obj_change_t *change);
stor_status_t rs_iter_open(stor_t *st, const char *bucket, const char *prefix, const char *after,
                           stor_iter_t **out_p);
void rs_iter_seek(stor_iter_t *it, const char *key, size_t key_len);
int rs_iter_next(stor_iter_t *it, const char **key_p, size_t *key_len_p, stor_meta_t *meta_p);
/* Parks the listing for its next page when it stopped inside the bucket
 * (rados_list.c, "Parked listings"), else frees it. */
void rs_iter_close(stor_iter_t *it);
/* Frees the parked listings older than RSTOR_LIST_PARKED_MS (the GC
 * thread, each round: so an idle gateway holds none for longer), or every
 * one (all: the store closing). */
void rs_list_parked_trim(rstor_t *st, int all);
stor_status_t rs_mpu_create(stor_t *st, const stor_bucket_t *bucket, const char *key,
                            const stor_meta_t *meta, char upload_id[STOR_UPLOAD_ID_LEN + 1]);
stor_status_t rs_mpu_check(stor_t *st, const char *bucket, const char *key, const char *upload_id,
                           stor_meta_t *meta_p);
stor_status_t rs_part_commit(stor_writer_t *w, const char *key, const char *upload_id,
                             stor_part_t *part);
stor_status_t rs_mpu_list_parts(stor_t *st, const char *bucket, const char *key,
                                const char *upload_id, uint32_t part_marker, stor_part_t **parts_p,
                                size_t *n_p);
stor_status_t rs_mpu_complete(stor_t *st, const stor_bucket_t *bucket, const char *key,
                              const char *upload_id, const stor_complete_part_t *parts, size_t n,
                              const stor_precond_t *cond, stor_meta_t *meta_p);
stor_status_t rs_mpu_abort(stor_t *st, const stor_bucket_t *bucket, const char *key,
                           const char *upload_id);
stor_status_t rs_mpu_list(stor_t *st, const char *bucket, const char *prefix,
                          const char *key_marker, const char *upload_id_marker, size_t max,
                          stor_upload_t **uploads_p, size_t *n_p, int *more_p);

/* rados_uploads.c, used by bucket deletion: aborts every upload of the
 * bucket ix (parts to the GC log, each upload in an intent first) and
 * removes its uploads object. */
stor_status_t rs_uploads_drop(rstor_t *st, const rs_index_t *ix);
/* The key-index entry of an upload record (raw bytes): its omap key into
 * *ikey (buf_init'ed here) and value (initiation ms) into ms. -EINVAL for a
 * record that does not decode (rados_uploads.c). */
int rs_upkey_entry(const buf_t *raw, const char *id, buf_t *ikey, char ms[24]);
/* Ends upload id's parts: their blobs to the GC log (all, or those not
 * flagged in used), the parts object removed; after the upload record is
 * gone. 0, or a librados code (rados_multipart.c). */
int rs_parts_drop(rstor_t *st, const char *id, const uint8_t *used, const stor_part_rec_t *recs,
                  size_t n);

/* rados_multipart.c, for the recovery of a dead gateway's Complete of
 * upload_id (key in ix): unless the upload is still open or gone, the
 * parts the key references are kept, the rest logged for collection, and
 * the parts object removed. 0, or a librados code. */
int rs_upload_recover(rstor_t *st, const rs_index_t *ix, const char *key, const char *upload_id);

/* rados_gc.c: the GC log, the collector, and the id sets. */
/* Records blobs that a committed change dropped: the collector deletes their
 * pieces once grace_ms have passed (readers that opened them keep reading
 * until then). 0, or a librados code (logged): the caller's intent entry
 * then stays, for its own collector to settle (rs_intent_drop_done). */
int rs_gc_log(rstor_t *st, const stor_seg_t *segs, size_t n);
/* 0, or -ENOMEM. */
int rs_idset_add(rs_idset_t *s, const uint8_t id[STOR_ID_LEN]);
void rs_idset_sort(rs_idset_t *s);
int rs_idset_has(const rs_idset_t *s, const uint8_t id[STOR_ID_LEN]);
/* An rs_omap_fn adding the blobs of an object record (set: an rs_idset_t);
 * skips the bucket's tombstone. */
int rs_mark_record(void *set, const char *k, size_t kl, const char *v, size_t vl);
int rs_gc_start(rstor_t *st);
void rs_gc_stop(rstor_t *st);

#endif
