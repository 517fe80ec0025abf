/* Who runs a bucket's reshard (rados_reshard.c: its steps), and the
 * gateways' resume of reshards whose runner died.
 *
 * A run holds the bucket's reshard lease (reshard_leased), and the bucket
 * in this process's table of runs (rstor_t.runs: the lease is the
 * process's, so it alone cannot keep two threads off one bucket). It is
 * started by the command (rs_bucket_reshard), by a writer that finds the
 * index fenced and its runner dead (rs_reshard_takeover), or by the resume
 * thread.
 *
 * A run registers its bucket in s3rdma.reshards before step 1 and removes
 * the entry after step 7; every gateway's resume thread (rs_reshard_resume)
 * reads that small object and finishes the reshards whose runner died (its
 * lease lapsed), so no operator has to run the command again. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"
#include "storage/rados/rados_internal.h"
#include "storage/rados/rados_reshard.h"

/* The name of bucket id's reshard lease. */
static void lease_name(uint64_t id, char out[40])
{
    snprintf(out, 40, "reshard.%016" PRIx64, id);
}

/* ==== The registry of reshards under way ================================= */

/* An entry's value: 16 hex digits, random per write (so a drop compares
 * the write it saw, not a later run's), then the bucket's name. */
#define ENTRY_NONCE 16
#define ENTRY_MAX   (ENTRY_NONCE + STOR_BUCKET_MAX + 1)

static void entry_key(uint64_t id, char key[17])
{
    snprintf(key, 17, "%016" PRIx64, id);
}

/* Writes bucket ix's entry (under its lease, before its record names the
 * reshard, or again when a run resumes one), a fresh value into entry. 0,
 * or a librados code. */
static int registry_put(rstor_t *st, const rs_index_t *ix, char entry[ENTRY_MAX])
{
    if (hash_random_hex(ENTRY_NONCE / 2, entry) != 0)
        return -EIO;
    snprintf(entry + ENTRY_NONCE, ENTRY_MAX - ENTRY_NONCE, "%s", ix->bucket);
    char key[17];
    entry_key(ix->id, key);
    rados_write_op_t op = rados_create_write_op();
    if (!op)
        return -ENOMEM;
    const char *k[1] = {key}, *v[1] = {entry};
    size_t kl = strlen(key), vl = strlen(entry);
    rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
    rados_write_op_omap_set2(op, k, v, &kl, &vl, 1);
    int rc = rados_write_op_operate(op, st->index, RSTOR_RESHARDS_OID, NULL, 0);
    rados_release_write_op(op);
    return rc;
}

/* Removes bucket id's entry if it still holds entry (a later run's stays). */
static void registry_drop(rstor_t *st, uint64_t id, const char *entry)
{
    char key[17];
    entry_key(id, key);
    buf_t v = {.data = (char *)entry, .len = strlen(entry)};
    int rc = rs_omap_cas(st->index, RSTOR_RESHARDS_OID, key, strlen(key), &v, NULL, 0);
    if (rc < 0 && rc != -ECANCELED && rc != -ENOENT)
        log_warn("storage: reshard registry: drop %s (%s): %s", key, entry + ENTRY_NONCE,
                 strerror(-rc));
}

/* ==== Runs =============================================================== */

/* Under the bucket's reshard lease: reads the record of bucket name (of id
 * id: a record of another id is a bucket made again since, left alone) and
 * finishes the reshard under way, or starts one to shards (0: none, only
 * finish). seen: the registry entry that led here (NULL: none), dropped
 * when there is nothing to finish. The run's own entry is written before
 * it changes anything and dropped when it ends (else it stays, for a
 * gateway to resume the run). */
static stor_status_t reshard_locked(rstor_t *st, const char *name, uint64_t id, uint32_t shards,
                                    const char *lease, const char *seen)
{
    stor_bucket_t b;
    stor_status_t s = rs_bucket_lookup(st, name, &b);
    if (s == STOR_ERR_NO_BUCKET || (s == STOR_OK && b.id != id)) {
        if (seen)
            registry_drop(st, id, seen); /* deleted since: nothing to finish */
        return s;
    }
    if (s != STOR_OK)
        return s;
    rs_index_t ix = rs_index_of(&b);
    char entry[ENTRY_MAX];
    int rc = 0;
    if (!ix.to) {
        if (!shards) {
            if (seen)
                registry_drop(st, ix.id, seen); /* finished meanwhile */
            return STOR_OK;
        }
        if (shards == ix.shards) {
            log_info("storage: %s already has %" PRIu32 " index shards", name, shards);
            return STOR_OK;
        }
        if ((rc = registry_put(st, &ix, entry)) < 0)
            return rs_fail("reshard: register", RSTOR_RESHARDS_OID, rc);
        if ((s = rs_reshard_record_set(st, &ix, ix.gen, ix.shards, shards)) != STOR_OK)
            return s;
        ix.to = shards;
    } else {
        if (shards && ix.to != shards)
            log_warn("storage: %s: finishing the reshard to %" PRIu32
                     " shards that was under way (not %" PRIu32 ")",
                     name, ix.to, shards);
        if (seen)
            log_warn("storage: bucket %s: its reshard to %" PRIu32
                     " shards is unfinished and its lock free (the runner died or "
                     "failed): this gateway resumes it",
                     name, ix.to);
        if ((rc = registry_put(st, &ix, entry)) < 0)
            return rs_fail("reshard: register", RSTOR_RESHARDS_OID, rc);
    }
    s = rs_reshard_run(st, &ix, lease);
    if (s == STOR_OK)
        registry_drop(st, ix.id, entry);
    return s;
}

/* Marks bucket id's reshard as run by this process (rstor_t.runs). 0, or
 * -1 when a thread of this process runs it already (or RSTOR_RUNS_HERE
 * do). */
static int runs_enter(rstor_t *st, uint64_t id)
{
    int rc = -1;
    pthread_mutex_lock(&st->runs_lock);
    size_t free_at = RSTOR_RUNS_HERE;
    for (size_t i = 0; i < RSTOR_RUNS_HERE; i++) {
        if (st->runs[i] == id)
            free_at = RSTOR_RUNS_HERE + 1;
        else if (!st->runs[i] && free_at == RSTOR_RUNS_HERE)
            free_at = i;
    }
    if (free_at < RSTOR_RUNS_HERE) {
        st->runs[free_at] = id;
        rc = 0;
    }
    pthread_mutex_unlock(&st->runs_lock);
    return rc;
}

static void runs_leave(rstor_t *st, uint64_t id)
{
    pthread_mutex_lock(&st->runs_lock);
    for (size_t i = 0; i < RSTOR_RUNS_HERE; i++)
        if (st->runs[i] == id)
            st->runs[i] = 0;
    pthread_mutex_unlock(&st->runs_lock);
}

/* reshard_locked for bucket (name, id) under its reshard lease, taken
 * here: waiting up to wait_ms for it (0: one try), then given up; why (NULL:
 * nothing) is logged once it is taken. STOR_ERR_PRECONDITION when another
 * process holds it (a live runner) or another thread of this one runs the
 * bucket's reshard. */
static stor_status_t reshard_leased(rstor_t *st, const char *name, uint64_t id, uint32_t shards,
                                    const char *seen, uint32_t wait_ms, const char *why)
{
    char lease[40];
    lease_name(id, lease);
    uint64_t until = clock_mono_ms() + wait_ms;
    stor_status_t s = STOR_ERR_PRECONDITION;
    for (;;) {
        if (runs_enter(st, id) == 0) {
            if ((s = rs_lease(&st->base, lease, RESHARD_LEASE_MS)) == STOR_OK)
                break;
            runs_leave(st, id);
        }
        if (s != STOR_ERR_PRECONDITION || clock_mono_ms() >= until)
            return s;
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (why)
        log_warn("storage: bucket %s: %s", name, why);
    /* The record is read again under the lease: a run that ended meanwhile
     * changed it. */
    s = reshard_locked(st, name, id, shards, lease, seen);
    rs_lease_release(st, lease);
    runs_leave(st, id);
    return s;
}

stor_status_t rs_bucket_reshard(stor_t *st_, const char *name, uint32_t shards)
{
    rstor_t *st = (rstor_t *)st_;
    if (shards < 1 || shards > STOR_INDEX_SHARDS_MAX)
        return STOR_ERR_TOO_LARGE;
    stor_bucket_t b;
    stor_status_t s = rs_bucket_lookup(st, name, &b);
    if (s != STOR_OK)
        return s;
    /* Held: by a live runner (it keeps it; this run gives up), or by one
     * that died (it lapses within RESHARD_LEASE_MS; this run goes on). */
    return reshard_leased(st, name, b.id, shards, NULL, RESHARD_LEASE_MS + 2000, NULL);
}

stor_status_t rs_reshard_takeover(rstor_t *st, const rs_index_t *ix)
{
    if (pthread_mutex_trylock(&st->takeover_lock) != 0)
        return STOR_ERR_PRECONDITION;
    stor_status_t s = STOR_ERR_PRECONDITION;
    uint64_t now = clock_mono_ms();
    if (now >= st->takeover_next_ms) {
        st->takeover_next_ms = now + RSTOR_TAKEOVER_AFTER_MS;
        s = reshard_leased(st, ix->bucket, ix->id, 0, NULL, 0,
                           "the reshard's runner died with the index fenced (its lock "
                           "lapsed): this gateway finishes the reshard");
    }
    pthread_mutex_unlock(&st->takeover_lock);
    return s;
}

/* One registry entry read by the resume thread. */
typedef struct seen {
    uint64_t id;
    char key[17];
    char entry[ENTRY_MAX];
} seen_t;

void rs_reshard_resume(rstor_t *st)
{
    seen_t *seen = calloc(RSTOR_RESUME_BATCH, sizeof *seen);
    rados_omap_iter_t it;
    if (!seen)
        return;
    unsigned char more = 0;
    int rc = rs_omap_read(st->index, RSTOR_RESHARDS_OID, st->resume_after, "", RSTOR_RESUME_BATCH,
                          &it, &more);
    size_t n = 0;
    char *k, *v, last[sizeof st->resume_after] = "";
    size_t kl, vl;
    while (rc == 0 && n < RSTOR_RESUME_BATCH && rados_omap_get_next2(it, &k, &v, &kl, &vl) == 0 &&
           k) {
        seen_t *e = &seen[n];
        char *end = NULL;
        if (kl != 16 || vl <= ENTRY_NONCE || vl >= ENTRY_MAX)
            continue; /* not an entry: left alone */
        memcpy(e->key, k, 16);
        e->key[16] = '\0';
        memcpy(last, e->key, sizeof last);
        e->id = strtoull(e->key, &end, 16);
        memcpy(e->entry, v, vl);
        e->entry[vl] = '\0';
        if (end == e->key + 16 && e->id && strlen(e->entry) == vl)
            n++;
    }
    if (rc == 0)
        rados_omap_get_end(it);
    else if (rc != -ENOENT)
        log_warn("storage: reshard registry: read: %s", strerror(-rc));
    /* More entries past this batch: the next tick goes on after it; else
     * from the start. */
    snprintf(st->resume_after, sizeof st->resume_after, "%s", more ? last : "");
    for (size_t i = 0; i < n && !__atomic_load_n(&st->gc_stop, __ATOMIC_RELAXED); i++) {
        stor_status_t s =
            reshard_leased(st, seen[i].entry + ENTRY_NONCE, seen[i].id, 0, seen[i].entry, 0, NULL);
        if (s != STOR_OK && s != STOR_ERR_PRECONDITION)
            log_warn("storage: bucket %s: resuming its reshard: %s (tried again later)",
                     seen[i].entry + ENTRY_NONCE, stor_strerror(s));
    }
    free(seen);
}
