/* The RADOS backend's garbage collector, on its own thread:
 *  - the GC log (omap of s3rdma.gc, key "<due ms>.<blob id>", both hex, so
 *    entries sort by due time): blobs a committed change dropped (an
 *    overwrite, a delete, a replaced or unused part, an aborted upload). They
 *    stay readable for grace_ms, so a reader that opened them before the
 *    change keeps its snapshot; then their pieces are removed. Drained about
 *    once a second by every gateway (removing a piece twice is harmless).
 *  - the intent log's tick (rados_intent.c): dead gateways' logs recovered.
 *    This gateway's own lease is renewed by a thread of its own (below), so
 *    that a sweep or a recovery of any length never lets it lapse.
 *  - on a thread of its own, the resumption of reshards whose runner died
 *    (rados_reshard_resume.c).
 *  - the full sweep, at start when the operator asks for it
 *    (storage.rados.full_sweep): pieces that nothing references (no index
 *    record, no parts object, no GC log entry, no gateway's intent) and
 *    whose blob is older than grace_ms (its id starts with its creation
 *    time) are removed: what the intent log cannot cover (data of binaries
 *    from before it). Every write that drops or may leave pieces names them in an
 *    intent first, so an ordinary start only reads dead gateways' logs. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/array.h"
#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"
#include "storage/rados/rados_internal.h"

#define GC_BATCH       256
#define GC_INTERVAL_MS 1000
#define SWEEP_PAGE     1024 /* names the sweep lists between pauses */

/* Waits ms on gc_cond, or less if the store is closing. 1 once it is. */
static int gc_wait(rstor_t *st, uint32_t ms)
{
    pthread_mutex_lock(&st->gc_lock);
    struct timespec ts = clock_after_ms(CLOCK_REALTIME, ms);
    while (!st->gc_stop && pthread_cond_timedwait(&st->gc_cond, &st->gc_lock, &ts) == 0)
        ;
    int stop = st->gc_stop;
    pthread_mutex_unlock(&st->gc_lock);
    return stop;
}

int rs_gc_log(rstor_t *st, const stor_seg_t *segs, size_t n)
{
    if (!n)
        return 0;
    char(*keys)[64] = calloc(n, sizeof *keys);
    char(*vals)[24] = calloc(n, sizeof *vals);
    const char **kp = calloc(n, sizeof *kp), **vp = calloc(n, sizeof *vp);
    size_t *kl = calloc(n, sizeof *kl), *vl = calloc(n, sizeof *vl);
    rados_write_op_t op = NULL;
    int rc = -ENOMEM;
    if (!keys || !vals || !kp || !vp || !kl || !vl || !(op = rados_create_write_op()))
        goto out;
    uint64_t due = (uint64_t)(clock_wall_ms() + st->grace_ms);
    for (size_t i = 0; i < n; i++) {
        char hex[2 * STOR_ID_LEN + 1];
        hash_hex_encode(segs[i].id, STOR_ID_LEN, hex);
        kl[i] = (size_t)snprintf(keys[i], sizeof keys[i], "%016" PRIx64 ".%s", due, hex);
        vl[i] = (size_t)snprintf(vals[i], sizeof vals[i], "%016" PRIx64, segs[i].size);
        kp[i] = keys[i];
        vp[i] = vals[i];
    }
    rados_write_op_omap_set2(op, kp, vp, kl, vl, n);
    rc = rados_write_op_operate(op, st->index, RSTOR_GC_OID, NULL, 0);
out:
    if (op)
        rados_release_write_op(op);
    if (rc < 0)
        log_error("storage: gc log of %zu blob(s): %s", n, strerror(-rc));
    free(keys);
    free(vals);
    free(kp);
    free(vp);
    free(kl);
    free(vl);
    return rc < 0 ? rc : 0;
}

/* Parses a GC log entry. 0, or -1 if malformed. */
static int gc_entry(const char *k, size_t kl, const char *v, size_t vl, uint64_t *due,
                    uint8_t id[STOR_ID_LEN], uint64_t *size)
{
    char tmp[24];
    if (kl != 16 + 1 + 2 * STOR_ID_LEN || k[16] != '.' || vl != 16)
        return -1;
    if (hash_hex_decode(k + 17, 2 * STOR_ID_LEN, id, STOR_ID_LEN) != 0)
        return -1;
    memcpy(tmp, k, 16);
    tmp[16] = '\0';
    *due = strtoull(tmp, NULL, 16);
    memcpy(tmp, v, 16);
    *size = strtoull(tmp, NULL, 16);
    return 0;
}

static void remove_blob(rstor_t *st, const uint8_t id[STOR_ID_LEN], uint64_t size)
{
    /* Unknown size: a dead writer had up to RSTOR_WINDOW pieces in flight,
     * so a missing piece may be followed by written ones. */
    int unknown = size == RSTOR_SIZE_UNKNOWN;
    uint32_t n = unknown ? UINT32_MAX : rs_pieces(size), missing = 0;
    for (uint32_t i = 0; i < n && missing < RSTOR_WINDOW; i++) {
        char oid[RSTOR_OID_MAX];
        rs_piece_oid(id, i, oid);
        int rc = rados_remove(st->data, oid);
        if (rc < 0 && rc != -ENOENT)
            log_warn("storage: gc remove %s: %s", oid, strerror(-rc));
        missing = rc == -ENOENT && unknown ? missing + 1 : 0;
    }
}

/* Removes the blobs whose entries are due. Returns how many, or -1. */
static int gc_drain(rstor_t *st)
{
    rados_omap_iter_t it;
    int rc = rs_omap_read(st->index, RSTOR_GC_OID, "", "", GC_BATCH, &it, NULL);
    if (rc < 0)
        return rc == -ENOENT ? 0 : -1;
    uint64_t now = (uint64_t)clock_wall_ms();
    char *done[GC_BATCH];
    size_t done_len[GC_BATCH], n = 0;
    char *k, *v;
    size_t kl, vl;
    while (n < GC_BATCH && rados_omap_get_next2(it, &k, &v, &kl, &vl) == 0 && k) {
        uint64_t due, size;
        uint8_t id[STOR_ID_LEN];
        int ok = gc_entry(k, kl, v, vl, &due, id, &size) == 0;
        if (ok && due > now)
            break;
        if (ok)
            remove_blob(st, id, size);
        else
            log_warn("storage: malformed gc log entry dropped");
        if (!(done[n] = malloc(kl)))
            break;
        memcpy(done[n], k, kl);
        done_len[n++] = kl;
    }
    rados_omap_get_end(it);
    if (n) {
        rados_write_op_t w = rados_create_write_op();
        if (w) {
            rados_write_op_omap_rm_keys2(w, (const char *const *)done, done_len, n);
            rc = rados_write_op_operate(w, st->index, RSTOR_GC_OID, NULL, 0);
            rados_release_write_op(w);
            if (rc < 0)
                log_warn("storage: gc log trim: %s", strerror(-rc));
        }
    }
    for (size_t i = 0; i < n; i++)
        free(done[i]);
    return (int)n;
}

/* ==== The sweep ========================================================== */

int rs_idset_add(rs_idset_t *s, const uint8_t id[STOR_ID_LEN])
{
    if (array_grow(&s->ids, &s->cap, s->n, sizeof *s->ids, 1024) != 0)
        return -ENOMEM;
    memcpy(s->ids[s->n++], id, STOR_ID_LEN);
    return 0;
}

static int cmp_id(const void *a, const void *b)
{
    return memcmp(a, b, STOR_ID_LEN);
}

void rs_idset_sort(rs_idset_t *s)
{
    if (s->n)
        qsort(s->ids, s->n, STOR_ID_LEN, cmp_id);
}

int rs_idset_has(const rs_idset_t *s, const uint8_t id[STOR_ID_LEN])
{
    return s->n && bsearch(id, s->ids, s->n, STOR_ID_LEN, cmp_id);
}

int rs_mark_record(void *set, const char *k, size_t kl, const char *v, size_t vl)
{
    if (kl && (unsigned char)k[0] == 0xFF)
        return 0; /* the tombstone, a reshard's dirty mark */
    stor_obj_rec_t rec;
    if (stor_rec_decode_object(v, vl, &rec) != STOR_OK)
        return -EIO;
    int rc = 0;
    for (uint32_t i = 0; i < rec.n_segs && rc == 0; i++)
        rc = rs_idset_add(set, rec.segs[i].id);
    stor_obj_rec_free(&rec);
    return rc;
}

static int mark_part(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    (void)k;
    (void)kl;
    stor_part_rec_t p;
    if (stor_rec_decode_part(v, vl, &p) != STOR_OK)
        return -EIO;
    int rc = rs_idset_add(arg, p.id) ? -ENOMEM : 0;
    stor_part_free_fields(&p.part);
    return rc;
}

static int add_upload_id(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    (void)v;
    (void)vl;
    uint8_t id[STOR_ID_LEN];
    if (kl != STOR_UPLOAD_ID_LEN || hash_hex_decode(k, kl, id, STOR_ID_LEN) != 0)
        return 0;
    return rs_idset_add(arg, id) ? -ENOMEM : 0;
}

/* Marks the parts of every parts object in the index pool whose upload is
 * live (its record read first) or that changed within grace_ms: Complete
 * and Abort remove the upload record first and the parts object last. A
 * parts object whose record went longer ago is what a gateway killed in
 * between left: it goes to *orphans (its blobs that an index references are
 * marked by the index). */
static int mark_all_parts(rstor_t *st, const rs_idset_t *completing, rs_idset_t *set,
                          rs_idset_t *orphans)
{
    stor_bucket_t *bs;
    size_t nb;
    if (rs_bucket_list(&st->base, &bs, &nb) != STOR_OK)
        return -EIO;
    rs_idset_t live = {0};
    int rc = 0;
    /* A Complete in an intent log is in progress, or its gateway's
     * recovery settles it. */
    for (size_t i = 0; i < completing->n && rc == 0; i++)
        rc = rs_idset_add(&live, completing->ids[i]);
    for (size_t i = 0; i < nb && rc == 0; i++) {
        char oid[RSTOR_OID_MAX];
        rs_uploads_oid(bs[i].id, oid);
        if ((rc = rs_omap_each(st->index, oid, "", add_upload_id, &live)) == -ENOENT)
            rc = 0;
    }
    free(bs);
    rs_idset_sort(&live);
    rados_list_ctx_t ls;
    if (rc == 0 && (rc = rados_nobjects_list_open(st->index, &ls)) == 0) {
        const char *name;
        size_t plen = strlen("s3rdma.parts.");
        time_t old_before = (time_t)((clock_wall_ms() - st->grace_ms) / 1000);
        while (rc == 0 && (rc = rados_nobjects_list_next(ls, &name, NULL, NULL)) == 0) {
            uint8_t id[STOR_ID_LEN];
            if (strncmp(name, "s3rdma.parts.", plen) != 0 ||
                hash_hex_decode(name + plen, 2 * STOR_ID_LEN, id, STOR_ID_LEN) != 0)
                continue;
            uint64_t size;
            time_t mtime;
            if (!rs_idset_has(&live, id) && rados_stat(st->index, name, &size, &mtime) == 0 &&
                mtime < old_before) {
                rc = rs_idset_add(orphans, id) ? -ENOMEM : 0;
                continue;
            }
            rc = rs_omap_each(st->index, name, "", mark_part, set);
            if (rc == -ENOENT)
                rc = 0; /* gone since listed: its upload ended */
        }
        rados_nobjects_list_close(ls);
        if (rc == -ENOENT)
            rc = 0;
    }
    free(live.ids);
    return rc;
}

static int mark_gc(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    uint64_t due, size;
    uint8_t id[STOR_ID_LEN];
    if (gc_entry(k, kl, v, vl, &due, id, &size) != 0)
        return 0;
    return rs_idset_add(arg, id) ? -ENOMEM : 0;
}

/* Every blob something references. 0, or a librados code (then nothing may
 * be swept). The order matters against changes racing the marking: parts
 * objects before indexes (a Complete moves its parts from the one to the
 * other, removing the parts object last), indexes before the GC log (an
 * overwrite switches the index, then logs the old blob). */
static int sweep_mark(rstor_t *st, const rs_idset_t *completing, rs_idset_t *set,
                      rs_idset_t *orphans)
{
    int rc = mark_all_parts(st, completing, set, orphans);
    if (rc != 0)
        return rc;
    stor_bucket_t *bs;
    size_t nb;
    if (rs_bucket_list(&st->base, &bs, &nb) != STOR_OK)
        return -EIO;
    for (size_t i = 0; i < nb && rc == 0; i++) {
        /* A reshard in progress: the keys are in both generations. */
        rs_index_t ixs[2] = {rs_index_of(&bs[i])};
        ixs[1] = rs_index_next(&ixs[0]);
        for (int g = 0; g < (ixs[0].to ? 2 : 1) && rc == 0; g++)
            for (uint32_t shard = 0; shard < ixs[g].shards && rc == 0; shard++) {
                char oid[RSTOR_OID_MAX];
                rs_index_oid(&ixs[g], shard, oid);
                rc = rs_omap_each(st->index, oid, "", rs_mark_record, set);
                if (rc == -ENOENT)
                    rc = 0;
            }
    }
    free(bs);
    if (rc == 0 && (rc = rs_omap_each(st->index, RSTOR_GC_OID, "", mark_gc, set)) == -ENOENT)
        rc = 0;
    return rc;
}

/* Removes the pieces of blobs that nothing references and no gateway's
 * intent log names. The intents are read first: a blob's entry is written
 * before its first piece and its id made then, so a blob whose pieces the
 * listing finds was named by an intent read here, or is younger than this
 * sweep (spared by its id's time, with grace_ms for clocks between
 * gateways), or was referenced or removed before the marking began. */
static void gc_sweep(rstor_t *st)
{
    rs_idset_t set = {0}, orphans = {0}, writing = {0}, completing = {0};
    uint64_t old_before = (uint64_t)(clock_wall_ms() - st->grace_ms);
    int rc = rs_intent_all(st, &writing, &completing);
    if (rc == 0)
        rc = sweep_mark(st, &completing, &set, &orphans);
    free(completing.ids);
    if (rc != 0) {
        log_warn("storage: sweep skipped: %s", strerror(-rc));
        free(set.ids);
        free(orphans.ids);
        free(writing.ids);
        return;
    }
    /* Parts objects of uploads that ended in a crash: their unreferenced
     * blobs go below with the rest. */
    for (size_t i = 0; i < orphans.n; i++) {
        char hex[2 * STOR_ID_LEN + 1], oid[RSTOR_OID_MAX];
        hash_hex_encode(orphans.ids[i], STOR_ID_LEN, hex);
        rs_parts_oid(hex, oid);
        rados_remove(st->index, oid);
    }
    free(orphans.ids);
    rs_idset_sort(&set);
    rados_list_ctx_t ls;
    if ((rc = rados_nobjects_list_open(st->data, &ls)) < 0) {
        log_warn("storage: sweep: list: %s", strerror(-rc));
        free(set.ids);
        free(writing.ids);
        return;
    }
    size_t removed = 0;
    const char *name;
    /* A long listing gives way to a gateway shutting down. Each page of
     * SWEEP_PAGE names starts with debug.rados_sweep_page_ms's pause. */
    for (size_t seen = 0; !__atomic_load_n(&st->gc_stop, __ATOMIC_RELAXED); seen++) {
        if (seen % SWEEP_PAGE == 0 && st->sweep_page_ms && gc_wait(st, st->sweep_page_ms))
            break;
        if (rados_nobjects_list_next(ls, &name, NULL, NULL) != 0)
            break;
        uint8_t id[STOR_ID_LEN];
        if (strlen(name) != 2 * STOR_ID_LEN + 9 || name[2 * STOR_ID_LEN] != '.' ||
            hash_hex_decode(name, 2 * STOR_ID_LEN, id, STOR_ID_LEN) != 0)
            continue;
        uint64_t born = 0;
        for (int i = 0; i < 8; i++)
            born = born << 8 | id[i];
        if (born >= old_before || rs_idset_has(&set, id) || rs_idset_has(&writing, id))
            continue;
        if (rados_remove(st->data, name) == 0)
            removed++;
    }
    rados_nobjects_list_close(ls);
    free(set.ids);
    free(writing.ids);
    log_info("storage: full sweep done: %zu unreferenced piece(s) removed", removed);
}

/* ==== The threads ======================================================== */

static void *gc_main(void *arg)
{
    rstor_t *st = arg;
    if (st->full_sweep)
        gc_sweep(st);
    int first = 1;
    do {
        rs_intent_tick(st);
        if (first)
            log_info("storage: start sweep done: dead gateways' intent logs read (%s)",
                     st->full_sweep ? "and the data pool listed: storage.rados.full_sweep"
                                    : "the data pool is not listed");
        first = 0;
        while (gc_drain(st) == GC_BATCH)
            ;
        rs_list_parked_trim(st, 0);
    } while (!gc_wait(st, GC_INTERVAL_MS));
    return NULL;
}

/* Renews the lease often enough to stay well within its half (writes
 * commit only while it is that fresh, rs_intent_check). */
static void *lease_main(void *arg)
{
    rstor_t *st = arg;
    uint32_t wait = st->lease_ms / 4 < GC_INTERVAL_MS ? st->lease_ms / 4 : GC_INTERVAL_MS;
    do
        rs_intent_renew(st);
    while (!gc_wait(st, wait));
    return NULL;
}

/* Resumes the reshards whose runner died (rs_reshard_resume), on a thread
 * of its own: a resumed run copies a whole bucket's index, which must not
 * hold up the GC log or the recovery of dead gateways. */
static void *resume_main(void *arg)
{
    rstor_t *st = arg;
    do
        rs_reshard_resume(st);
    while (!gc_wait(st, RSTOR_RESUME_EVERY_MS));
    return NULL;
}

int rs_gc_start(rstor_t *st)
{
    if (pthread_create(&st->lease_thread, NULL, lease_main, st) != 0)
        return -1;
    st->lease_running = 1;
    if (pthread_create(&st->gc_thread, NULL, gc_main, st) != 0)
        return -1;
    st->gc_running = 1;
    if (pthread_create(&st->resume_thread, NULL, resume_main, st) != 0)
        return -1;
    st->resume_running = 1;
    return 0;
}

void rs_gc_stop(rstor_t *st)
{
    pthread_mutex_lock(&st->gc_lock);
    __atomic_store_n(&st->gc_stop, 1, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&st->gc_cond);
    pthread_mutex_unlock(&st->gc_lock);
    if (st->gc_running)
        pthread_join(st->gc_thread, NULL);
    if (st->lease_running)
        pthread_join(st->lease_thread, NULL);
    if (st->resume_running)
        pthread_join(st->resume_thread, NULL);
    st->gc_running = st->lease_running = st->resume_running = 0;
}
