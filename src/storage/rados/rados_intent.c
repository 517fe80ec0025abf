/* The intent log: which pieces a gateway is writing, so that what a dead
 * gateway left behind is found by reading its log, not the pool.
 *
 * Each gateway (a random id per start, or per lapse of its lease) registers
 * in s3rdma.gateways and holds the lease "gw.<id>" (rs_lease: the lock of
 * "s3rdma.lease.gw.<id>", renewed by the lease thread, rados_gc.c): its
 * liveness.
 * Its intent log is the omap of RSTOR_INTENT_SLOTS objects, slot 0 the
 * lease's object, slot k "s3rdma.lease.gw.<id>.<k>"; an entry's slot is its
 * name's last hex digit:
 *   <blob id, 32 hex>       a blob being written: 'o' (a PUT's) or 'p' (a
 *                           part's), with where it is to be referenced and
 *                           the blobs the reference will drop
 *   c<upload id, 32 hex>    a Complete of that upload in progress
 *   ~fenced                 set by the gateway that recovers this log: from
 *                           then on every intent write of the owner fails
 * An entry is written (and acknowledged) before the first piece of its blob,
 * and cleared, lazily, once the blob is referenced or removed. The log holds
 * one entry per write in flight plus the cleared entries not yet flushed
 * (at most RSTOR_INTENT_SLOT_CLEARS per slot) and those being settled
 * (RSTOR_INTENT_CLEARS). docs/storage.md, "Crash leftovers: the intent log". */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
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

/* Slot 0 of gateway gw's log is its lease's object; slot k > 0 is
 * "<that>.<k>". */
static void gw_oid(const char *gw, unsigned slot, char out[RSTOR_OID_MAX])
{
    if (slot)
        snprintf(out, RSTOR_OID_MAX, "s3rdma.lease.gw.%s.%u", gw, slot);
    else
        snprintf(out, RSTOR_OID_MAX, "s3rdma.lease.gw.%s", gw);
}

void rs_crash_point(const rstor_t *st, const char *step)
{
    /* crash_at: "step[=stop]" items, comma-separated. */
    size_t n = strlen(step);
    for (const char *p = st->crash_at; *p;) {
        const char *end = p + strcspn(p, ",");
        const char *eq = memchr(p, '=', (size_t)(end - p));
        if ((size_t)((eq ? eq : end) - p) == n && memcmp(p, step, n) == 0) {
            if (eq && end - eq == 5 && memcmp(eq + 1, "stop", 4) == 0) {
                log_error("storage: debug.rados_crash_at %s=stop: stopping this gateway", step);
                raise(SIGSTOP);
                return;
            }
            log_error("storage: debug.rados_crash_at %s: killing this gateway", step);
            raise(SIGKILL);
        }
        p = *end ? end + 1 : end;
    }
}

/* ==== Entries ============================================================ */

static int put_hex_id(buf_t *b, const uint8_t id[STOR_ID_LEN])
{
    char hex[2 * STOR_ID_LEN + 1];
    hash_hex_encode(id, STOR_ID_LEN, hex);
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

/* An entry's index field: the shard count in the low 16 bits and the
 * index generation above them (generation 0: the count alone, as before
 * resharding). A recovery that finds the index of that generation gone
 * looks the bucket's current one up by id (rs_key_blobs). */
static uint32_t ix_field(const rs_index_t *ix)
{
    return ix->shards | ix->gen << 16;
}

static rs_index_t ix_parse(uint64_t id, uint64_t field)
{
    return (rs_index_t){id, (uint32_t)(field & 0xFFFF), (uint32_t)(field >> 16), 0, ""};
}

int rs_intent_object(buf_t *b, const rs_index_t *ix, const char *key, const stor_seg_t *old,
                     uint32_t n_old)
{
    char f[32];
    buf_init(b, RSTOR_INTENT_VALUE_MAX);
    if (n_old > RSTOR_INTENT_OLD_MAX)
        return -1; /* more blobs than an object has parts */
    snprintf(f, sizeof f, "o%016" PRIx64 "%08" PRIx32, ix->id, ix_field(ix));
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
             ix_field(ix));
    return buf_append(b, f, 65) != 0 || put_olds(b, old, old ? 1 : 0) != 0 ||
                   buf_append(b, key, strlen(key)) != 0
               ? -1
               : 0;
}

int rs_intent_complete(buf_t *b, const rs_index_t *ix, const char *key)
{
    char f[32];
    buf_init(b, RSTOR_INTENT_VALUE_MAX);
    snprintf(f, sizeof f, "c%016" PRIx64 "%08" PRIx32, ix->id, ix_field(ix));
    return buf_append(b, f, 25) != 0 || buf_append(b, key, strlen(key)) != 0 ? -1 : 0;
}

/* ==== Writing the log ==================================================== */

/* The slot (object) of entry name: its last hex digit, random in both blob
 * and upload ids, spreads a gateway's writes over RSTOR_INTENT_SLOTS
 * objects (so over placement groups). */
static unsigned name_slot(const char *name)
{
    size_t n = strlen(name);
    return n ? (unsigned char)name[n - 1] % RSTOR_INTENT_SLOTS : 0;
}

/* Takes the cleared entries of slot (intent_lock held) into names; the
 * caller removes them, or gives them back (clears_return) if it could not. */
static size_t clears_take(rstor_t *st, unsigned slot,
                          char names[RSTOR_INTENT_SLOT_CLEARS][RSTOR_INTENT_NAME])
{
    size_t n = st->n_clears[slot];
    memcpy(names, st->clears[slot], n * RSTOR_INTENT_NAME);
    st->n_clears[slot] = 0;
    return n;
}

static void clears_return(rstor_t *st, unsigned slot,
                          char names[RSTOR_INTENT_SLOT_CLEARS][RSTOR_INTENT_NAME], size_t n)
{
    pthread_mutex_lock(&st->intent_lock);
    for (size_t i = 0; i < n && st->n_clears[slot] < RSTOR_INTENT_SLOT_CLEARS; i++)
        memcpy(st->clears[slot][st->n_clears[slot]++], names[i], RSTOR_INTENT_NAME);
    pthread_mutex_unlock(&st->intent_lock);
}

/* One write op on slot's object of gateway gw: the fence compared absent
 * (*cmp: its result, valid until the op completes), the n cleared names
 * removed, name = desc set (name NULL: none). NULL when out of memory. */
static rados_write_op_t slot_op(char clears[][RSTOR_INTENT_NAME], size_t n, const char *name,
                                const buf_t *desc, int *cmp)
{
    const char *keys[RSTOR_INTENT_SLOT_CLEARS];
    size_t lens[RSTOR_INTENT_SLOT_CLEARS];
    rados_write_op_t op = rados_create_write_op();
    if (!op)
        return NULL;
    /* Written by this gateway only until another recovers its log (fenced,
     * then removed). */
    rados_write_op_assert_exists(op);
    rados_write_op_omap_cmp2(op, FENCE_KEY, LIBRADOS_CMPXATTR_OP_EQ, "", strlen(FENCE_KEY), 0, cmp);
    for (size_t i = 0; i < n; i++) {
        keys[i] = clears[i];
        lens[i] = strlen(clears[i]);
    }
    if (n)
        rados_write_op_omap_rm_keys2(op, keys, lens, n);
    if (name) {
        const char *k = name, *v = desc->data;
        size_t kl = strlen(name), vl = desc->len;
        rados_write_op_omap_set2(op, &k, &v, &kl, &vl, 1);
    }
    return op;
}

stor_status_t rs_intent_put_start(rstor_t *st, const char *name, const buf_t *desc, uint64_t epoch,
                                  rs_intent_put_t *p)
{
    memset(p, 0, sizeof *p);
    p->slot = name_slot(name);
    pthread_mutex_lock(&st->intent_lock);
    p->epoch = st->epoch;
    int stale = epoch && epoch != p->epoch;
    p->n_clears = stale ? 0 : clears_take(st, p->slot, p->clears);
    memcpy(p->gw, st->gw_id, sizeof p->gw);
    pthread_mutex_unlock(&st->intent_lock);
    if (stale) {
        log_error("storage: this gateway's lease lapsed during a write; the write fails");
        return STOR_ERR_UNAVAILABLE;
    }
    char oid[RSTOR_OID_MAX];
    gw_oid(p->gw, p->slot, oid);
    int rc = -ENOMEM;
    if ((p->op = slot_op(p->clears, p->n_clears, name, desc, &p->cmp)) &&
        (rc = rados_aio_create_completion2(NULL, NULL, &p->c)) == 0 &&
        (rc = rados_aio_write_op_operate(p->op, st->index, p->c, oid, NULL, 0)) < 0)
        rados_aio_release(p->c);
    if (rc == 0)
        return STOR_OK;
    if (p->op)
        rados_release_write_op(p->op);
    clears_return(st, p->slot, p->clears, p->n_clears);
    return rs_fail("intent", oid, rc);
}

stor_status_t rs_intent_put_finish(rstor_t *st, rs_intent_put_t *p, uint64_t *epoch_p)
{
    rados_aio_wait_for_complete(p->c);
    int rc = rados_aio_get_return_value(p->c);
    rados_aio_release(p->c);
    rados_release_write_op(p->op);
    if (rc < 0)
        clears_return(st, p->slot, p->clears, p->n_clears);
    if (rc == -ECANCELED || rc == -ENOENT) {
        pthread_mutex_lock(&st->intent_lock);
        st->fenced = 1; /* the lease thread starts this gateway afresh */
        pthread_mutex_unlock(&st->intent_lock);
        log_error("storage: this gateway's intent log was recovered by another gateway (its "
                  "lease lapsed): writes in progress fail");
        return STOR_ERR_UNAVAILABLE;
    }
    if (rc < 0)
        return rs_fail("intent", p->gw, rc);
    *epoch_p = p->epoch;
    return STOR_OK;
}

stor_status_t rs_intent_put(rstor_t *st, const char *name, const buf_t *desc, uint64_t *epoch_p)
{
    rs_intent_put_t p;
    stor_status_t s = rs_intent_put_start(st, name, desc, *epoch_p, &p);
    return s == STOR_OK ? rs_intent_put_finish(st, &p, epoch_p) : s;
}

/* Removes the cleared entries of every slot. */
static void clears_flush(rstor_t *st)
{
    char clears[RSTOR_INTENT_SLOT_CLEARS][RSTOR_INTENT_NAME], gw[17];
    for (unsigned slot = 0; slot < RSTOR_INTENT_SLOTS; slot++) {
        pthread_mutex_lock(&st->intent_lock);
        size_t n = clears_take(st, slot, clears);
        memcpy(gw, st->gw_id, sizeof gw);
        pthread_mutex_unlock(&st->intent_lock);
        if (!n)
            continue;
        char oid[RSTOR_OID_MAX];
        int cmp = 0, rc = -ENOMEM;
        gw_oid(gw, slot, oid);
        rados_write_op_t op = slot_op(clears, n, NULL, NULL, &cmp);
        if (op) {
            rc = rados_write_op_operate(op, st->index, oid, NULL, 0);
            rados_release_write_op(op);
        }
        if (rc < 0)
            clears_return(st, slot, clears, n);
    }
}

void rs_intent_clear(rstor_t *st, const char *name)
{
    unsigned slot = name_slot(name);
    pthread_mutex_lock(&st->intent_lock);
    int full = st->n_clears[slot] == RSTOR_INTENT_SLOT_CLEARS;
    pthread_mutex_unlock(&st->intent_lock);
    if (full)
        clears_flush(st);
    pthread_mutex_lock(&st->intent_lock);
    if (st->n_clears[slot] < RSTOR_INTENT_SLOT_CLEARS)
        snprintf(st->clears[slot][st->n_clears[slot]++], RSTOR_INTENT_NAME, "%s", name);
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

stor_status_t rs_intent_before_switch(rstor_t *st, rs_intent_ref_t *in, const buf_t *desc,
                                      const char *step)
{
    if (!in->epoch && !desc)
        return STOR_OK; /* a removal that drops nothing: nothing to recover */
    stor_status_t s = desc ? rs_intent_put(st, in->name, desc, &in->epoch) : STOR_OK;
    if (s == STOR_OK)
        s = rs_intent_check(st, in->epoch);
    if (s == STOR_OK)
        rs_crash_point(st, step);
    return s;
}

stor_status_t rs_intent_drop(rstor_t *st, rs_intent_ref_t *d, const rs_index_t *ix, const char *key,
                             const stor_seg_t *segs, uint32_t n, const char *step)
{
    if (!d->name[0]) {
        uint8_t iid[STOR_ID_LEN];
        if (rs_new_blob_id(iid) != 0)
            return STOR_ERR_IO;
        rs_intent_name(iid, d->name);
    }
    buf_t desc;
    stor_status_t s = rs_intent_object(&desc, ix, key, segs, n) == 0
                          ? rs_intent_before_switch(st, d, &desc, step)
                          : STOR_ERR_NOMEM;
    buf_free(&desc);
    if (s == STOR_OK && n) {
        d->n_old = n;
        memcpy(d->old0, segs[0].id, STOR_ID_LEN);
    }
    return s;
}

void rs_intent_drop_done(rstor_t *st, const rs_intent_ref_t *d, int unsure)
{
    if (d->epoch)
        (unsure || d->unsettled ? rs_intent_unsure : rs_intent_clear)(st, d->name);
}

void rs_intent_name(const uint8_t id[STOR_ID_LEN], char out[RSTOR_INTENT_NAME])
{
    hash_hex_encode(id, STOR_ID_LEN, out);
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

/* Takes a new gateway id's lease and registers it (registered once its
 * lease is held, so a recovery never finds an id without one). Called at
 * start and by the lease thread only (the one writer of gw_id; other
 * threads copy it under intent_lock). */
static int gateway_begin(rstor_t *st)
{
    char gw[17], name[32], ms[24];
    if (hash_random_hex(8, gw) != 0)
        return -EIO;
    gw_lease_name(gw, name);
    uint64_t sent = clock_mono_ms();
    if (rs_lease(&st->base, name, st->lease_ms) != STOR_OK)
        return -EIO;
    /* The other slots exist from the start: an entry write asserts its
     * slot exists, so a log removed by a recovery takes no more. */
    for (unsigned slot = 1; slot < RSTOR_INTENT_SLOTS; slot++) {
        char oid[RSTOR_OID_MAX];
        gw_oid(gw, slot, oid);
        rados_write_op_t op = rados_create_write_op();
        if (!op)
            return -ENOMEM;
        rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
        int rc = rados_write_op_operate(op, st->index, oid, NULL, 0);
        rados_release_write_op(op);
        if (rc < 0)
            return rc;
    }
    snprintf(ms, sizeof ms, "%" PRId64, clock_wall_ms());
    buf_t v;
    buf_init(&v, 24);
    buf_append(&v, ms, strlen(ms));
    int rc = rs_omap_cas(st->index, GATEWAYS_OID, gw, 16, NULL, &v, RS_CAS_CREATE);
    buf_free(&v);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&st->intent_lock);
    memcpy(st->gw_id, gw, sizeof gw);
    st->renewed_ms = sent;
    st->fenced = 0;
    memset(st->n_clears, 0, sizeof st->n_clears); /* the old log's: recovered */
    st->n_unsure = 0;
    pthread_mutex_unlock(&st->intent_lock);
    return 0;
}

/* Renews this gateway's lease. A gateway whose lease lapsed (a renewal
 * after a gap of a whole lease, another gateway holding it, or its log
 * fenced) may have had its log recovered: it starts a new epoch under a new
 * id, so writes that logged their intents before fail instead of
 * committing. */
void rs_intent_renew(rstor_t *st)
{
    char name[32];
    gw_lease_name(st->gw_id, name);
    uint64_t sent = clock_mono_ms();
    stor_status_t s = rs_lease(&st->base, name, st->lease_ms);
    pthread_mutex_lock(&st->intent_lock);
    int lapsed = st->fenced || s == STOR_ERR_PRECONDITION ||
                 (s == STOR_OK && sent - st->renewed_ms >= st->lease_ms);
    if (s == STOR_OK && !lapsed)
        st->renewed_ms = sent;
    if (lapsed)
        st->epoch++;
    pthread_mutex_unlock(&st->intent_lock);
    if (lapsed) {
        log_warn("storage: this gateway's lease lapsed: writes in progress fail; it goes on "
                 "under a new id");
        if (gateway_begin(st) != 0)
            log_error("storage: cannot take a new gateway lease (retried)");
    }
}

int rs_intent_open(rstor_t *st, const char *crash_at, uint32_t lease_ms)
{
    snprintf(st->crash_at, sizeof st->crash_at, "%s", crash_at ? crash_at : "");
    st->lease_ms = lease_ms;
    st->epoch = 1;
    pthread_mutex_init(&st->intent_lock, NULL);
    st->intent_ready = 1;
    return gateway_begin(st);
}

/* 1 when no slot of gateway gw's log holds an entry. */
static int log_empty(rstor_t *st, const char *gw)
{
    for (unsigned slot = 0; slot < RSTOR_INTENT_SLOTS; slot++) {
        char oid[RSTOR_OID_MAX];
        gw_oid(gw, slot, oid);
        rados_omap_iter_t it;
        int rc = rs_omap_read_keys(st->index, oid, 1, &it);
        if (rc < 0 && rc != -ENOENT)
            return 0;
        size_t n = it ? rados_omap_iter_size(it) : 0;
        if (it)
            rados_omap_get_end(it);
        if (n)
            return 0;
    }
    return 1;
}

/* Removes gateway gw's log objects (slot 0, the lease's, last) and its
 * registration. 0, or a librados code. */
static int log_remove(rstor_t *st, const char *gw)
{
    for (unsigned slot = RSTOR_INTENT_SLOTS; slot-- > 0;) {
        char oid[RSTOR_OID_MAX];
        gw_oid(gw, slot, oid);
        int rc = rados_remove(st->index, oid);
        if (rc < 0 && rc != -ENOENT)
            return rc;
    }
    registry_remove(st, gw);
    return 0;
}

void rs_intent_close(rstor_t *st)
{
    if (!st->intent_ready)
        return;
    clears_flush(st);
    /* A clean stop with nothing in flight leaves nothing to recover. */
    if (st->gw_id[0] && log_empty(st, st->gw_id))
        log_remove(st, st->gw_id);
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
    /* Two arrays of one capacity: names may grow and vals fail, which
     * leaves names larger than the capacity, harmlessly. */
    size_t names_cap = e->cap, vals_cap = e->cap;
    if (array_grow(&e->names, &names_cap, e->n, sizeof *e->names, 64) != 0 ||
        array_grow(&e->vals, &vals_cap, e->n, sizeof *e->vals, 64) != 0)
        return -ENOMEM;
    e->cap = vals_cap;
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

/* The dropped blobs of an entry at p (n_old, then id + size each), into
 * *old (malloc'ed, NULL when none). Returns the bytes read, -1 when
 * malformed, -2 when out of memory. */
static long parse_olds(const char *p, size_t len, stor_seg_t **old, uint32_t *n_old)
{
    uint64_t n;
    *old = NULL;
    if (len < 4 || hex_u64(p, 4, &n) != 0 || n > RSTOR_INTENT_OLD_MAX ||
        len - 4 < n * (2 * STOR_ID_LEN + 16))
        return -1;
    if (n && !(*old = calloc(n, sizeof **old)))
        return -2;
    const char *q = p + 4;
    for (uint64_t i = 0; i < n; i++, q += 2 * STOR_ID_LEN + 16)
        if (hash_hex_decode(q, 2 * STOR_ID_LEN, (*old)[i].id, STOR_ID_LEN) != 0 ||
            hex_u64(q + 2 * STOR_ID_LEN, 16, &(*old)[i].size) != 0) {
            free(*old);
            *old = NULL;
            return -1;
        }
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

int rs_key_blobs(rstor_t *st, const rs_index_t *ix_, const char *key, rs_idset_t *set)
{
    char oid[RSTOR_OID_MAX];
    rs_index_t ix = *ix_;
    rs_key_oid(&ix, key, oid);
    size_t klen = strlen(key);
    buf_t raw;
    int rc = rs_omap_get(st->index, oid, key, klen, &raw);
    if (rc == -ENOENT && rs_index_by_id(st, ix.id, &ix) == STOR_OK &&
        (ix.gen != ix_->gen || ix.to)) {
        /* Resharded since the entry was written: the key is in the bucket's
         * index as it is now, or (the last step of a reshard: the old
         * objects gone before the record names the new ones) in the next. */
        if (ix.gen == ix_->gen)
            ix = rs_index_next(&ix);
        rs_key_oid(&ix, key, oid);
        buf_free(&raw);
        rc = rs_omap_get(st->index, oid, key, klen, &raw);
    }
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

/* Logs for collection the blobs among segs[0..n) that set does not hold
 * (segs reordered). 0, or a librados code. */
static int gc_unreferenced(rstor_t *st, const rs_idset_t *set, stor_seg_t *segs, uint32_t n)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!rs_idset_has(set, segs[i].id))
            segs[k++] = segs[i];
    return rs_gc_log(st, segs, k);
}

/* A blob entry (name: its id): its blob goes unless referenced where the
 * entry says; the blobs the write was to drop go unless still referenced.
 * Everything goes through the GC log (due in grace_ms): a blob committed
 * and dropped since stays readable for the readers that opened it. */
static int recover_blob(rstor_t *st, const char *name, const buf_t *v)
{
    stor_seg_t blob = {.size = RSTOR_SIZE_UNKNOWN}, *old = NULL;
    uint32_t n_old = 0;
    if (hash_hex_decode(name, 2 * STOR_ID_LEN, blob.id, STOR_ID_LEN) != 0 || v->len < 1)
        return -EINVAL;
    const char *p = v->data;
    size_t len = v->len;
    rs_idset_t set = {0};
    int rc;
    if (p[0] == 'o') {
        uint64_t id, shards;
        long n = -1;
        if (len < 25 || hex_u64(p + 1, 16, &id) != 0 || hex_u64(p + 17, 8, &shards) != 0 ||
            (n = parse_olds(p + 25, len - 25, &old, &n_old)) < 0)
            return n == -2 ? -ENOMEM : -EINVAL;
        rs_index_t ix = ix_parse(id, shards);
        size_t klen = len - 25 - (size_t)n;
        char *key = strndup(p + 25 + n, klen);
        if (!key) {
            free(old);
            return -ENOMEM;
        }
        /* No key: the commit had not started, nothing references it. */
        rc = klen ? rs_key_blobs(st, &ix, key, &set) : 0;
        free(key);
    } else if (p[0] == 'p') {
        uint64_t number, id, shards;
        long n = -1;
        if (len < 65 || hex_u64(p + 33, 8, &number) != 0 || hex_u64(p + 41, 16, &id) != 0 ||
            hex_u64(p + 57, 8, &shards) != 0 ||
            (n = parse_olds(p + 65, len - 65, &old, &n_old)) < 0)
            return n == -2 ? -ENOMEM : -EINVAL;
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
            rs_index_t ix = ix_parse(id, shards);
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
        rc = gc_unreferenced(st, &set, &blob, 1);
        if (rc == 0)
            rc = gc_unreferenced(st, &set, old, n_old);
    }
    free(set.ids);
    free(old);
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
    rs_index_t ix = ix_parse(id, shards);
    char *key = strndup(p + 25, v->len - 25);
    if (!key)
        return -ENOMEM;
    int rc = rs_upload_recover(st, &ix, key, name + 1);
    free(key);
    return rc;
}

/* Recovers gateway gw's log if its lease lapsed: fences every slot,
 * settles each entry, then removes the log and the registration. */
static void recover_gateway(rstor_t *st, const char *gw)
{
    char name[32];
    gw_lease_name(gw, name);
    if (rs_lease(&st->base, name, st->lease_ms) != STOR_OK)
        return; /* alive, or the cluster did not answer: next time */
    size_t settled = 0;
    int rc = 0;
    for (unsigned slot = 0; slot < RSTOR_INTENT_SLOTS && rc == 0; slot++) {
        char oid[RSTOR_OID_MAX];
        gw_oid(gw, slot, oid);
        const char *fk = FENCE_KEY, *fv = "";
        size_t fkl = strlen(FENCE_KEY), fvl = 0;
        rados_write_op_t op = rados_create_write_op();
        if (!op) {
            rc = -ENOMEM;
            break;
        }
        rados_write_op_omap_set2(op, &fk, &fv, &fkl, &fvl, 1);
        rc = rados_write_op_operate(op, st->index, oid, NULL, 0);
        rados_release_write_op(op);
        entries_t e = {0};
        if (rc == 0)
            rc = rs_omap_each(st->index, oid, "", collect, &e);
        for (size_t i = 0; i < e.n && rc == 0; i++) {
            const char *n = e.names[i];
            if (strcmp(n, FENCE_KEY) == 0)
                continue;
            rc =
                n[0] == 'c' ? recover_complete(st, n, &e.vals[i]) : recover_blob(st, n, &e.vals[i]);
            if (rc == -EINVAL) {
                log_warn("storage: malformed intent %s of gateway %s dropped", n, gw);
                rc = 0;
            }
            settled++;
        }
        entries_free(&e);
    }
    if (rc == 0)
        rc = log_remove(st, gw);
    if (rc != 0) {
        log_warn("storage: recovery of gateway %s stopped: %s (retried later)", gw, strerror(-rc));
        return;
    }
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
    char names[RSTOR_INTENT_CLEARS][RSTOR_INTENT_NAME], oid[RSTOR_OID_MAX], gw[17];
    pthread_mutex_lock(&st->intent_lock);
    memcpy(gw, st->gw_id, sizeof gw);
    size_t n = st->n_unsure;
    memcpy(names, st->unsure, n * sizeof names[0]);
    st->n_unsure = 0;
    pthread_mutex_unlock(&st->intent_lock);
    for (size_t i = 0; i < n; i++) {
        buf_t v;
        gw_oid(gw, name_slot(names[i]), oid);
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
    settle_unsure(st);
    clears_flush(st);
    uint64_t now = clock_mono_ms();
    if (now < st->next_recover_ms)
        return;
    st->next_recover_ms = now + st->lease_ms / 2;
    char self[17];
    pthread_mutex_lock(&st->intent_lock);
    memcpy(self, st->gw_id, sizeof self);
    pthread_mutex_unlock(&st->intent_lock);
    entries_t gws = {0};
    if (rs_omap_each(st->index, GATEWAYS_OID, "", collect_gateway, &gws) == 0)
        for (size_t i = 0; i < gws.n && !__atomic_load_n(&st->gc_stop, __ATOMIC_RELAXED); i++)
            if (strcmp(gws.names[i], self) != 0)
                recover_gateway(st, gws.names[i]);
    entries_free(&gws);
}

static int collect_live(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    (void)v;
    (void)vl;
    rs_idset_t **sets = arg; /* blobs, uploads */
    uint8_t id[STOR_ID_LEN];
    if (kl == 2 * STOR_ID_LEN && hash_hex_decode(k, kl, id, STOR_ID_LEN) == 0)
        return rs_idset_add(sets[0], id);
    if (kl == 1 + 2 * STOR_ID_LEN && k[0] == 'c' &&
        hash_hex_decode(k + 1, kl - 1, id, STOR_ID_LEN) == 0)
        return rs_idset_add(sets[1], id);
    return 0;
}

int rs_intent_all(rstor_t *st, rs_idset_t *blobs, rs_idset_t *uploads)
{
    entries_t gws = {0};
    int rc = rs_omap_each(st->index, GATEWAYS_OID, "", collect_gateway, &gws);
    rs_idset_t *sets[2] = {blobs, uploads};
    for (size_t i = 0; i < gws.n && rc == 0; i++)
        for (unsigned slot = 0; slot < RSTOR_INTENT_SLOTS && rc == 0; slot++) {
            char oid[RSTOR_OID_MAX];
            gw_oid(gws.names[i], slot, oid);
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
