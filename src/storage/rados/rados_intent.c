/* The intent log: which pieces a gateway is writing, so that what a dead
 * gateway left behind is found by reading its log, not the pool.
 *
 * Each gateway has one object in the index pool, its lease's
 * (rs_lease "gw.<id>": "s3rdma.lease.gw.<16 hex>"), and registers its id in
 * s3rdma.gateways. The object's exclusive lock is the gateway's liveness
 * (renewed by the collector thread); its omap is the gateway's intents:
 *   <blob id, 32 hex>       a blob being written: 'o' (a PUT's) or 'p' (a
 *                           part's), with where it is to be referenced and
 *                           the blobs the reference will drop
 *   c<upload id, 32 hex>    a Complete of that upload in progress
 *   ~fenced                 set by the gateway that recovers this log: from
 *                           then on every intent write of the owner fails
 * An entry is written (and acknowledged) before the first piece of its blob,
 * and cleared, lazily, once the blob is referenced or removed. The log holds
 * one entry per write in flight plus the cleared entries not yet flushed
 * (at most RSTOR_INTENT_CLEARS). docs/storage.md, "Crash leftovers". */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"
#include "storage/rados/rados_internal.h"

#define GATEWAYS_OID "s3rdma.gateways"
#define FENCE_KEY    "~fenced"

static void gw_lease_name(const char *gw, char out[32])
{
    snprintf(out, 32, "gw.%s", gw);
}

static void gw_oid(const char *gw, char out[RSTOR_OID_MAX])
{
    snprintf(out, RSTOR_OID_MAX, "s3rdma.lease.gw.%s", gw);
}

void rs_crash_point(const rstor_t *st, const char *step)
{
    if (st->crash_at[0] && strcmp(st->crash_at, step) == 0) {
        log_error("storage: debug.rados_crash_at %s: killing this gateway", step);
        raise(SIGKILL);
    }
}

/* ==== Entries ============================================================ */

static int put_hex_id(buf_t *b, const uint8_t id[STOR_ID_LEN])
{
    char hex[2 * STOR_ID_LEN + 1];
    hex_encode(id, STOR_ID_LEN, hex);
    return buf_append(b, hex, 2 * STOR_ID_LEN);
}

static int put_olds(buf_t *b, const stor_seg_t *old, uint32_t n_old)
{
    char f[24];
    snprintf(f, sizeof f, "%04" PRIx32, n_old);
    if (buf_append(b, f, 4) != 0)
        return -1;
    for (uint32_t i = 0; i < n_old; i++) {
        snprintf(f, sizeof f, "%016" PRIx64, old[i].size);
        if (put_hex_id(b, old[i].id) != 0 || buf_append(b, f, 16) != 0)
            return -1;
    }
    return 0;
}

int rs_intent_object(buf_t *b, const rs_index_t *ix, const char *key, const stor_seg_t *old,
                     uint32_t n_old)
{
    char f[32];
    if (n_old > RSTOR_INTENT_OLD_MAX)
        n_old = 0; /* beyond the bound: the start sweep's (docs/storage.md) */
    buf_init(b, RSTOR_INTENT_VALUE_MAX);
    snprintf(f, sizeof f, "o%016" PRIx64 "%08" PRIx32, ix->id, ix->shards);
    if (buf_append(b, f, 25) != 0 || put_olds(b, old, n_old) != 0 ||
        buf_append(b, key, strlen(key)) != 0)
        return -1;
    return 0;
}

int rs_intent_part(buf_t *b, const char *upload_id, uint32_t number, const rs_index_t *ix,
                   const char *key, const stor_seg_t *old)
{
    char f[80];
    buf_init(b, RSTOR_INTENT_VALUE_MAX);
    snprintf(f, sizeof f, "p%.32s%08" PRIx32 "%016" PRIx64 "%08" PRIx32, upload_id, number, ix->id,
             ix->shards);
    return buf_append(b, f, 65) != 0 || put_olds(b, old, old ? 1 : 0) != 0 ||
                   buf_append(b, key, strlen(key)) != 0
               ? -1
               : 0;
}

int rs_intent_complete(buf_t *b, const rs_index_t *ix, const char *key)
{
    char f[32];
    buf_init(b, RSTOR_INTENT_VALUE_MAX);
    snprintf(f, sizeof f, "c%016" PRIx64 "%08" PRIx32, ix->id, ix->shards);
    return buf_append(b, f, 25) != 0 || buf_append(b, key, strlen(key)) != 0 ? -1 : 0;
}

/* ==== Writing the log ==================================================== */

/* The cleared entries not yet removed, as omap keys for one write op (the
 * caller holds intent_lock and frees nothing: the keys stay st's until
 * flushed). */
static void clears_take(rstor_t *st, const char **keys, size_t *lens, size_t *n)
{
    *n = st->n_clears;
    for (size_t i = 0; i < *n; i++) {
        keys[i] = st->clears[i];
        lens[i] = strlen(st->clears[i]);
    }
}

stor_status_t rs_intent_put(rstor_t *st, const char *name, const buf_t *desc, uint64_t *epoch_p)
{
    char oid[RSTOR_OID_MAX];
    const char *keys[RSTOR_INTENT_CLEARS + 1];
    size_t lens[RSTOR_INTENT_CLEARS + 1], n;
    pthread_mutex_lock(&st->intent_lock);
    uint64_t epoch = st->epoch;
    if (*epoch_p && *epoch_p != epoch) {
        pthread_mutex_unlock(&st->intent_lock);
        log_error("storage: this gateway's lease lapsed during a write; the write fails");
        return STOR_ERR_UNAVAILABLE;
    }
    gw_oid(st->gw_id, oid);
    clears_take(st, keys, lens, &n);
    rados_write_op_t op = rados_create_write_op();
    int rc = -ENOMEM, cmp = 0;
    if (op) {
        /* Written by this gateway only until another recovers its log. */
        rados_write_op_omap_cmp2(op, FENCE_KEY, LIBRADOS_CMPXATTR_OP_EQ, "", strlen(FENCE_KEY), 0,
                                 &cmp);
        if (n)
            rados_write_op_omap_rm_keys2(op, keys, lens, n);
        const char *k = name, *v = desc->data;
        size_t kl = strlen(name), vl = desc->len;
        rados_write_op_omap_set2(op, &k, &v, &kl, &vl, 1);
        rc = rados_write_op_operate(op, st->index, oid, NULL, 0);
        rados_release_write_op(op);
    }
    if (rc == 0)
        st->n_clears = 0;
    else if (rc == -ECANCELED)
        st->fenced = 1;
    pthread_mutex_unlock(&st->intent_lock);
    if (rc == -ECANCELED) {
        log_error("storage: this gateway's intent log was recovered by another gateway (its "
                  "lease lapsed): restart it");
        return STOR_ERR_UNAVAILABLE;
    }
    if (rc < 0)
        return rs_fail("intent", oid, rc);
    *epoch_p = epoch;
    return STOR_OK;
}

/* Removes the cleared entries (intent_lock held). */
static void clears_flush(rstor_t *st)
{
    if (!st->n_clears)
        return;
    const char *keys[RSTOR_INTENT_CLEARS];
    size_t lens[RSTOR_INTENT_CLEARS], n;
    char oid[RSTOR_OID_MAX];
    gw_oid(st->gw_id, oid);
    clears_take(st, keys, lens, &n);
    rados_write_op_t op = rados_create_write_op();
    if (!op)
        return;
    rados_write_op_assert_exists(op);
    rados_write_op_omap_rm_keys2(op, keys, lens, n);
    int rc = rados_write_op_operate(op, st->index, oid, NULL, 0);
    rados_release_write_op(op);
    if (rc == 0 || rc == -ENOENT)
        st->n_clears = 0;
}

void rs_intent_clear(rstor_t *st, const char *name)
{
    pthread_mutex_lock(&st->intent_lock);
    if (st->n_clears == RSTOR_INTENT_CLEARS)
        clears_flush(st);
    if (st->n_clears < RSTOR_INTENT_CLEARS)
        snprintf(st->clears[st->n_clears++], sizeof st->clears[0], "%s", name);
    /* else: the entry stays; whoever recovers it finds its blob referenced
     * or gone. */
    pthread_mutex_unlock(&st->intent_lock);
}

void rs_intent_unsure(rstor_t *st, const char *name)
{
    pthread_mutex_lock(&st->intent_lock);
    if (st->n_unsure < RSTOR_INTENT_CLEARS)
        snprintf(st->unsure[st->n_unsure++], sizeof st->unsure[0], "%s", name);
    /* else: the entry stays until this gateway's log is recovered. */
    pthread_mutex_unlock(&st->intent_lock);
}

void rs_intent_name(const uint8_t id[STOR_ID_LEN], char out[RSTOR_INTENT_NAME])
{
    hex_encode(id, STOR_ID_LEN, out);
}

stor_status_t rs_intent_check(rstor_t *st, uint64_t epoch)
{
    pthread_mutex_lock(&st->intent_lock);
    int ok = !st->fenced && epoch == st->epoch &&
             clock_mono_ms() - st->renewed_ms < (uint64_t)st->lease_ms / 2;
    pthread_mutex_unlock(&st->intent_lock);
    if (ok)
        return STOR_OK;
    log_error("storage: this gateway's lease is not fresh (the cluster did not answer its "
              "renewal): the write fails rather than race a recovery");
    return STOR_ERR_UNAVAILABLE;
}

/* Takes gateway gw out of the registry. */
static void registry_remove(rstor_t *st, const char *gw)
{
    rados_write_op_t op = rados_create_write_op();
    if (!op)
        return;
    const char *k = gw;
    size_t kl = strlen(gw);
    rados_write_op_omap_rm_keys2(op, &k, &kl, 1);
    rados_write_op_operate(op, st->index, GATEWAYS_OID, NULL, 0);
    rados_release_write_op(op);
}

/* ==== Liveness =========================================================== */

/* Renews this gateway's lease. A renewal after a gap as long as the lease
 * starts a new epoch: another gateway may have recovered the log meanwhile,
 * so writes that logged their intents before it must not commit. */
static void lease_renew(rstor_t *st)
{
    char name[32];
    gw_lease_name(st->gw_id, name);
    uint64_t sent = clock_mono_ms();
    stor_status_t s = rs_lease(&st->base, name, st->lease_ms);
    pthread_mutex_lock(&st->intent_lock);
    if (s == STOR_OK) {
        if (sent - st->renewed_ms >= st->lease_ms) {
            st->epoch++;
            log_warn("storage: this gateway's lease lapsed: writes in progress fail");
        }
        st->renewed_ms = sent;
    } else if (s == STOR_ERR_PRECONDITION) {
        st->fenced = 1; /* another gateway holds it: it is recovering our log */
    }
    pthread_mutex_unlock(&st->intent_lock);
}

int rs_intent_open(rstor_t *st, const char *crash_at, uint32_t lease_ms)
{
    uint8_t id[8];
    if (random_bytes(id, sizeof id) != 0)
        return -EIO;
    hex_encode(id, sizeof id, st->gw_id);
    snprintf(st->crash_at, sizeof st->crash_at, "%s", crash_at ? crash_at : "");
    st->lease_ms = lease_ms;
    st->epoch = 1;
    pthread_mutex_init(&st->intent_lock, NULL);
    char name[32], ms[24];
    gw_lease_name(st->gw_id, name);
    uint64_t sent = clock_mono_ms();
    stor_status_t s = rs_lease(&st->base, name, st->lease_ms);
    if (s != STOR_OK)
        return -EIO;
    st->renewed_ms = sent;
    /* Registered once its lease is held, so a recovery never finds it
     * without one. */
    snprintf(ms, sizeof ms, "%" PRId64, clock_wall_ms());
    buf_t v;
    buf_init(&v, 24);
    buf_append(&v, ms, strlen(ms));
    int rc = rs_omap_cas(st->index, GATEWAYS_OID, st->gw_id, 16, NULL, &v, RS_CAS_CREATE);
    buf_free(&v);
    return rc;
}

void rs_intent_close(rstor_t *st)
{
    if (!st->gw_id[0])
        return;
    pthread_mutex_lock(&st->intent_lock);
    clears_flush(st);
    pthread_mutex_unlock(&st->intent_lock);
    /* A clean stop with nothing in flight leaves nothing to recover. */
    char oid[RSTOR_OID_MAX];
    gw_oid(st->gw_id, oid);
    rados_read_op_t op = rados_create_read_op();
    rados_omap_iter_t it = NULL;
    unsigned char more = 0;
    int prval = 0, empty = 0;
    if (op) {
        rados_read_op_omap_get_keys2(op, "", 1, &it, &more, &prval);
        if (rados_read_op_operate(op, st->index, oid, 0) == 0 && prval == 0)
            empty = rados_omap_iter_size(it) == 0;
        if (it)
            rados_omap_get_end(it);
        rados_release_read_op(op);
    }
    if (empty && rados_remove(st->index, oid) == 0)
        registry_remove(st, st->gw_id);
    pthread_mutex_destroy(&st->intent_lock);
}

/* ==== Recovery =========================================================== */

/* A log's entries, copied out of the omap. */
typedef struct entries {
    char **names;
    buf_t *vals;
    size_t n, cap;
} entries_t;

static int collect(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    entries_t *e = arg;
    if (e->n == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 64;
        char **nn = realloc(e->names, cap * sizeof *nn);
        if (!nn)
            return -ENOMEM;
        e->names = nn;
        buf_t *nv = realloc(e->vals, cap * sizeof *nv);
        if (!nv)
            return -ENOMEM;
        e->vals = nv;
        e->cap = cap;
    }
    if (!(e->names[e->n] = strndup(k, kl)))
        return -ENOMEM;
    buf_init(&e->vals[e->n], vl + 1);
    buf_append(&e->vals[e->n], v, vl);
    e->n++;
    return 0;
}

static void entries_free(entries_t *e)
{
    for (size_t i = 0; i < e->n; i++) {
        free(e->names[i]);
        buf_free(&e->vals[i]);
    }
    free(e->names);
    free(e->vals);
}

static int hex_u64(const char *p, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        int c = p[i], d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return 0;
}

/* The dropped blobs of an entry at p (n_old, then id + size each). Returns
 * the bytes read, or -1. */
static long parse_olds(const char *p, size_t len, stor_seg_t *old, uint32_t *n_old)
{
    uint64_t n;
    if (len < 4 || hex_u64(p, 4, &n) != 0 || n > RSTOR_INTENT_OLD_MAX ||
        len - 4 < n * (2 * STOR_ID_LEN + 16))
        return -1;
    const char *q = p + 4;
    for (uint64_t i = 0; i < n; i++, q += 2 * STOR_ID_LEN + 16)
        if (hex_decode(q, 2 * STOR_ID_LEN, old[i].id, STOR_ID_LEN) != 0 ||
            hex_u64(q + 2 * STOR_ID_LEN, 16, &old[i].size) != 0)
            return -1;
    *n_old = (uint32_t)n;
    return q - p;
}

static int mark_version(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    void **a = arg; /* the set, the prefix buffer */
    const buf_t *pfx = a[1];
    if (kl < pfx->len - 1 || memcmp(k, pfx->data, pfx->len - 1) != 0)
        return 1; /* past the key's entries */
    return rs_mark_record(a[0], k, kl, v, vl);
}

int rs_key_blobs(rstor_t *st, const rs_index_t *ix, const char *key, rs_idset_t *set)
{
    char oid[RSTOR_OID_MAX];
    rs_key_oid(ix, key, oid);
    size_t klen = strlen(key);
    buf_t raw;
    int rc = rs_omap_get(st->index, oid, key, klen, &raw);
    if (rc > 0)
        rc = rs_mark_record(set, key, klen, raw.data, raw.len);
    buf_free(&raw);
    if (rc == -ENOENT)
        return 0; /* no index object: the bucket is gone, and with it its keys */
    if (rc < 0)
        return rc;
    buf_t pfx;
    if (rs_vprefix(key, klen, &pfx) != 0 || buf_append(&pfx, "", 1) != 0) {
        buf_free(&pfx);
        return -ENOMEM;
    }
    void *arg[2] = {set, &pfx};
    rc = rs_omap_each(st->index, oid, pfx.data, mark_version, arg);
    buf_free(&pfx);
    return rc == 1 || rc == -ENOENT ? 0 : rc;
}

/* Logs for collection the blobs among segs[0..n) that set does not hold. */
static void gc_unreferenced(rstor_t *st, const rs_idset_t *set, const stor_seg_t *segs, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (!rs_idset_has(set, segs[i].id))
            rs_gc_log(st, &segs[i], 1);
}

/* A blob entry (name: its id): its blob goes unless referenced where the
 * entry says; the blobs the write was to drop go unless still referenced.
 * Everything goes through the GC log (due in grace_ms): a blob committed
 * and dropped since stays readable for the readers that opened it. */
static int recover_blob(rstor_t *st, const char *name, const buf_t *v)
{
    stor_seg_t blob = {.size = RSTOR_SIZE_UNKNOWN}, old[RSTOR_INTENT_OLD_MAX];
    uint32_t n_old = 0;
    if (hex_decode(name, 2 * STOR_ID_LEN, blob.id, STOR_ID_LEN) != 0 || v->len < 1)
        return -EINVAL;
    const char *p = v->data;
    size_t len = v->len;
    rs_idset_t set = {0};
    int rc;
    if (p[0] == 'o') {
        uint64_t id, shards;
        long n;
        if (len < 25 || hex_u64(p + 1, 16, &id) != 0 || hex_u64(p + 17, 8, &shards) != 0 ||
            (n = parse_olds(p + 25, len - 25, old, &n_old)) < 0)
            return -EINVAL;
        rs_index_t ix = {id, (uint32_t)shards};
        size_t klen = len - 25 - (size_t)n;
        char *key = strndup(p + 25 + n, klen);
        if (!key)
            return -ENOMEM;
        /* No key: the commit had not started, nothing references it. */
        rc = klen ? rs_key_blobs(st, &ix, key, &set) : 0;
        free(key);
    } else if (p[0] == 'p') {
        uint64_t number, id, shards;
        long n;
        if (len < 65 || hex_u64(p + 33, 8, &number) != 0 || hex_u64(p + 41, 16, &id) != 0 ||
            hex_u64(p + 57, 8, &shards) != 0 || (n = parse_olds(p + 65, len - 65, old, &n_old)) < 0)
            return -EINVAL;
        char upload[STOR_UPLOAD_ID_LEN + 1], oid[RSTOR_OID_MAX], pkey[16];
        snprintf(upload, sizeof upload, "%.32s", p + 1);
        rs_parts_oid(upload, oid);
        snprintf(pkey, sizeof pkey, "%08" PRIx64, number);
        buf_t raw;
        rc = rs_omap_get(st->index, oid, pkey, 8, &raw);
        if (rc > 0) {
            stor_part_rec_t part;
            rc = stor_rec_decode_part(raw.data, raw.len, &part) == STOR_OK ? 0 : -EIO;
            if (rc == 0) {
                rc = rs_idset_add(&set, part.id);
                stor_part_free_fields(&part.part);
            }
        }
        buf_free(&raw);
        if (rc == -ENOENT) {
            /* The upload ended: its recorded parts are the key's now, or
             * were logged by the Complete or Abort that ended it. */
            rs_index_t ix = {id, (uint32_t)shards};
            char *key = strndup(p + 65 + n, len - 65 - (size_t)n);
            rc = key ? rs_key_blobs(st, &ix, key, &set) : -ENOMEM;
            free(key);
            n_old = 0; /* a recorded part: the upload's end took care of it */
        }
    } else {
        return -EINVAL;
    }
    if (rc >= 0) {
        rs_idset_sort(&set);
        gc_unreferenced(st, &set, &blob, 1);
        gc_unreferenced(st, &set, old, n_old);
        rc = 0;
    }
    free(set.ids);
    return rc;
}

/* A Complete entry ("c" + upload id). */
static int recover_complete(rstor_t *st, const char *name, const buf_t *v)
{
    const char *p = v->data;
    uint64_t id, shards;
    if (strlen(name) != 1 + STOR_UPLOAD_ID_LEN || v->len < 25 || p[0] != 'c' ||
        hex_u64(p + 1, 16, &id) != 0 || hex_u64(p + 17, 8, &shards) != 0)
        return -EINVAL;
    rs_index_t ix = {id, (uint32_t)shards};
    char *key = strndup(p + 25, v->len - 25);
    if (!key)
        return -ENOMEM;
    int rc = rs_upload_recover(st, &ix, key, name + 1);
    free(key);
    return rc;
}

/* Recovers gateway gw's log if its lease lapsed: fences it, settles each
 * entry, then removes the log and the registration. */
static void recover_gateway(rstor_t *st, const char *gw)
{
    char name[32], oid[RSTOR_OID_MAX];
    gw_lease_name(gw, name);
    gw_oid(gw, oid);
    if (rs_lease(&st->base, name, st->lease_ms) != STOR_OK)
        return; /* alive, or the cluster did not answer: next time */
    const char *fk = FENCE_KEY, *fv = "";
    size_t fkl = strlen(FENCE_KEY), fvl = 0;
    rados_write_op_t op = rados_create_write_op();
    if (!op)
        return;
    rados_write_op_omap_set2(op, &fk, &fv, &fkl, &fvl, 1);
    int rc = rados_write_op_operate(op, st->index, oid, NULL, 0);
    rados_release_write_op(op);
    entries_t e = {0};
    if (rc == 0)
        rc = rs_omap_each(st->index, oid, "", collect, &e);
    size_t settled = 0;
    for (size_t i = 0; i < e.n && rc == 0; i++) {
        const char *n = e.names[i];
        if (strcmp(n, FENCE_KEY) == 0)
            continue;
        rc = n[0] == 'c' ? recover_complete(st, n, &e.vals[i]) : recover_blob(st, n, &e.vals[i]);
        if (rc == -EINVAL) {
            log_warn("storage: malformed intent %s of gateway %s dropped", n, gw);
            rc = 0;
        }
        settled++;
    }
    entries_free(&e);
    if (rc != 0) {
        log_warn("storage: recovery of gateway %s stopped: %s (retried later)", gw, strerror(-rc));
        return;
    }
    if ((rc = rados_remove(st->index, oid)) < 0 && rc != -ENOENT)
        return;
    registry_remove(st, gw);
    log_info("storage: recovered the intent log of dead gateway %s (%zu entr%s)", gw, settled,
             settled == 1 ? "y" : "ies");
}

static int collect_gateway(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    (void)v;
    (void)vl;
    return kl == 16 ? collect(arg, k, kl, "", 0) : 0;
}

/* Settles this gateway's entries of writes that ended unsure whether their
 * commit landed, as a recovery would, and clears them. */
static void settle_unsure(rstor_t *st)
{
    char names[RSTOR_INTENT_CLEARS][RSTOR_INTENT_NAME], oid[RSTOR_OID_MAX];
    pthread_mutex_lock(&st->intent_lock);
    size_t n = st->n_unsure;
    memcpy(names, st->unsure, n * sizeof names[0]);
    st->n_unsure = 0;
    pthread_mutex_unlock(&st->intent_lock);
    gw_oid(st->gw_id, oid);
    for (size_t i = 0; i < n; i++) {
        buf_t v;
        int rc = rs_omap_get(st->index, oid, names[i], strlen(names[i]), &v);
        if (rc > 0)
            rc = names[i][0] == 'c' ? recover_complete(st, names[i], &v)
                                    : recover_blob(st, names[i], &v);
        buf_free(&v);
        if (rc >= 0 || rc == -EINVAL)
            rs_intent_clear(st, names[i]);
        else
            rs_intent_unsure(st, names[i]); /* the cluster is away: later */
    }
}

void rs_intent_tick(rstor_t *st)
{
    lease_renew(st);
    settle_unsure(st);
    pthread_mutex_lock(&st->intent_lock);
    clears_flush(st);
    pthread_mutex_unlock(&st->intent_lock);
    uint64_t now = clock_mono_ms();
    if (now < st->next_recover_ms)
        return;
    st->next_recover_ms = now + st->lease_ms / 2;
    entries_t gws = {0};
    if (rs_omap_each(st->index, GATEWAYS_OID, "", collect_gateway, &gws) == 0)
        for (size_t i = 0; i < gws.n && !__atomic_load_n(&st->gc_stop, __ATOMIC_RELAXED); i++)
            if (strcmp(gws.names[i], st->gw_id) != 0)
                recover_gateway(st, gws.names[i]);
    entries_free(&gws);
}

static int collect_live(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    (void)v;
    (void)vl;
    rs_idset_t **sets = arg; /* blobs, uploads */
    uint8_t id[STOR_ID_LEN];
    if (kl == 2 * STOR_ID_LEN && hex_decode(k, kl, id, STOR_ID_LEN) == 0)
        return rs_idset_add(sets[0], id);
    if (kl == 1 + 2 * STOR_ID_LEN && k[0] == 'c' && hex_decode(k + 1, kl - 1, id, STOR_ID_LEN) == 0)
        return rs_idset_add(sets[1], id);
    return 0;
}

int rs_intent_all(rstor_t *st, rs_idset_t *blobs, rs_idset_t *uploads)
{
    entries_t gws = {0};
    int rc = rs_omap_each(st->index, GATEWAYS_OID, "", collect_gateway, &gws);
    rs_idset_t *sets[2] = {blobs, uploads};
    for (size_t i = 0; i < gws.n && rc == 0; i++) {
        char oid[RSTOR_OID_MAX];
        gw_oid(gws.names[i], oid);
        if ((rc = rs_omap_each(st->index, oid, "", collect_live, sets)) == -ENOENT)
            rc = 0;
    }
    entries_free(&gws);
    if (rc == 0) {
        rs_idset_sort(blobs);
        rs_idset_sort(uploads);
    }
    return rc == -ENOENT ? 0 : rc;
}
